"""The Python path of ``convert``: archive rows → event rows through the shared mapping.

Rows the native Spark SQL path cannot express (structured-mode CloudEvents,
multi-section bodies, templates with placeholders Spark has no column for, ...)
go through :class:`EventMapper` with ``mapInArrow``: it decodes the archived
message and applies :mod:`mappings.cloudevents` exactly as the bridge does.
Both paths produce rows of :data:`EVENT_DDL`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mappings.cloudevents import EventTemplate, from_message
from mappings.cloudevents.content import is_json
from mappings.errors import MappingError
from mappings.message import AmqpMessage
from pipeline.rows import event_columns, is_valid_json

if TYPE_CHECKING:
    import pyarrow as pa

EVENT_DDL = (
    "route string, side string, archived timestamp, message_id string, "
    "status string, error string, "
    "specversion string, id string, source string, type string, datacontenttype string, "
    "dataschema string, subject string, time string, extensions string, "
    "data binary, data_inline boolean"
)
"""One converted row: provenance, ``status`` (``event`` / ``skipped`` / ``invalid``),
the ``error`` of an invalid row, the event's attributes in their JSON text forms
(``time`` RFC 3339, ``extensions`` a JSON object), its ``data`` and whether the
JSON event format writes that data inline (``data``) rather than as ``data_base64``."""
MAPPER_INPUT = ("route", "side", "time", "message_id", "head", "bare")
"""The archive columns :class:`EventMapper` reads."""
_NO_EVENT = (None,) * 11  # specversion ... data_inline
_COMPUTED = 13  # status, error and _NO_EVENT's columns


def row_id(route: str, time_us: int, bare: bytes) -> str:
    """The event id of a templated row whose message has no message-id.

    Derived from the row (MD5 of route, time and bare message, hex), so
    converting the same archive twice gives the same ids.
    """
    return hashlib.md5(
        b"%s\0%d\0%s" % (route.encode("utf-8"), time_us, bare), usedforsecurity=False
    ).hexdigest()


class EventMapper:
    """A ``mapInArrow`` function: record batches of :data:`MAPPER_INPUT` → :data:`EVENT_DDL`.

    ``template`` (an :class:`EventTemplate`'s fields) turns plain messages into
    events; without it they are ``skipped``. ``now`` is the time templates use
    for ``now`` (one instant for the whole job, so results are reproducible).
    Picklable, for Spark's workers.
    """

    def __init__(self, template: dict[str, Any] | None, now: datetime) -> None:
        self.template = template
        self.now = now
        self._template = None if template is None else EventTemplate(**template)

    def __getstate__(self) -> dict[str, Any]:
        return {"template": self.template, "now": self.now}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["template"], state["now"])  # type: ignore[misc]

    def event_row(self, route: str, time_us: int, head: bytes | None, bare: bytes) -> tuple[Any, ...]:
        """``status`` … ``data_inline`` of :data:`EVENT_DDL` for one archived message."""
        try:
            message = AmqpMessage.decode(head + bare) if head else AmqpMessage.decode_bare(bare)
            event = from_message(message)
            if event is None:
                if self._template is None:
                    return ("skipped", None, *_NO_EVENT)
                event = self._template.build(
                    message, now=self.now, new_id=lambda: row_id(route, time_us, bare)
                )
        except MappingError as exc:
            return ("invalid", str(exc), *_NO_EVENT)
        data = event.data
        inline = data is not None and is_json(event.datacontenttype) and is_valid_json(data)
        return ("event", None, *event_columns(event), data, inline)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = _event_schema()
        for batch in batches:
            routes = batch.column("route").to_pylist()
            times = batch.column("time").cast(pa.int64()).to_pylist()
            heads = batch.column("head").to_pylist()
            bares = batch.column("bare").to_pylist()
            rows = [self.event_row(*row) for row in zip(routes, times, heads, bares, strict=True)]
            computed = list(zip(*rows, strict=True)) if rows else [()] * _COMPUTED
            arrays = [batch.column(name) for name in ("route", "side", "time", "message_id")]
            arrays += [
                pa.array(values, type=field.type)
                for values, field in zip(computed, list(schema)[4:], strict=True)
            ]
            yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def _event_schema() -> pa.Schema:
    import pyarrow as pa

    string = pa.string()
    names = [part.split(" ")[0] for part in EVENT_DDL.split(", ")]
    types = {
        "archived": pa.timestamp("us", tz="UTC"),
        "data": pa.binary(),
        "data_inline": pa.bool_(),
    }
    return pa.schema([pa.field(name, types.get(name, string)) for name in names])
