"""One archive row from one AMQP 1.0 message (pure Python, no pyarrow).

:func:`archive_row` extracts every column of the archive format
(docs/archive.md) from an :class:`~mappings.message.AmqpMessage`, in the order
of :data:`COLUMNS`. The text forms used for ids and application properties are
the ones the CloudEvents templates use, so ``{message_id}`` in a template and
the ``message_id`` column agree.
"""

from __future__ import annotations

import uuid
from base64 import b64encode
from datetime import datetime
from typing import Any

import orjson
from proton import symbol, timestamp

from mappings.cloudevents import CloudEvent, detect_mode, from_message
from mappings.cloudevents.content import is_json
from mappings.cloudevents.typesystem import format_time, millis_to_datetime
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind
from pipeline.sections import split_message

SIDES = ("received", "delivered")
"""``received``: as the bridge took it from the source; ``delivered``: as the target accepted it."""

COLUMNS = (
    "route",
    "side",
    "time",
    "message_id",
    "message_id_type",
    "correlation_id",
    "correlation_id_type",
    "subject",
    "content_type",
    "creation_time_ms",
    "application_properties",
    "ce_mode",
    "ce_error",
    "ce_specversion",
    "ce_id",
    "ce_source",
    "ce_type",
    "ce_datacontenttype",
    "ce_dataschema",
    "ce_subject",
    "ce_time",
    "ce_extensions",
    "body_kind",
    "body_type",
    "body_size",
    "body_json",
    "head",
    "bare",
)
"""Archive columns, in file order."""

_NO_EVENT = (None,) * 9  # ce_specversion ... ce_extensions


def id_text(value: Any) -> tuple[str | None, str | None]:
    """A message-id / correlation-id as ``(text, AMQP type)``: ``(None, None)`` when absent.

    ``ulong`` → decimal, ``uuid`` → canonical form, ``binary`` → UTF-8 text when
    it decodes, else lower-case hex, ``string`` → itself.
    """
    if value is None:
        return None, None
    if isinstance(value, str):
        return str(value), "string"
    if isinstance(value, uuid.UUID):
        return str(value), "uuid"
    if isinstance(value, bytes | bytearray | memoryview):
        return _bytes_text(bytes(value)), "binary"
    return str(int(value)), "ulong"


def value_text(value: Any) -> str | None:
    """The text form of an application-property value (``None`` stays ``None``).

    Strings as they are; booleans ``true``/``false``; numbers in decimal; AMQP
    timestamps as RFC 3339 (UTC); UUIDs canonical; binary as UTF-8 text when it
    decodes, else hex; lists and maps as JSON.
    """
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if type(value) is timestamp:
        try:
            return format_time(millis_to_datetime(value, "timestamp"))
        except MappingError:
            return str(int(value))
    if isinstance(value, int | float | uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return _bytes_text(bytes(value))
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return repr(value)


def _bytes_text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.hex()


def extensions_json(event: CloudEvent) -> str | None:
    """The event's extension attributes as the JSON object members the JSON event
    format writes (Binary as base64, Timestamp as RFC 3339), or ``None`` if it has none."""
    if not event.extensions:
        return None
    members: dict[str, Any] = {}
    for name, value in event.extensions.items():
        if isinstance(value, bytes):
            value = b64encode(value).decode("ascii")
        elif isinstance(value, datetime):
            value = format_time(value)
        members[name] = value
    return orjson.dumps(members).decode()


def event_columns(event: CloudEvent) -> tuple[Any, ...]:
    """``ce_specversion`` … ``ce_extensions`` of an event (the archive's text forms)."""
    return (
        event.specversion,
        event.id,
        event.source,
        event.type,
        event.datacontenttype,
        event.dataschema,
        event.subject,
        None if event.time is None else format_time(event.time),
        extensions_json(event),
    )


def body_columns(message: AmqpMessage) -> tuple[str, str | None, int | None, bool | None]:
    """``(body_kind, body_type, body_size, body_json)`` (see docs/archive.md)."""
    kind = message.body_kind
    body = message.body
    payload: bytes | None = None
    body_type = None
    if kind is BodyKind.DATA:
        if len(body) == 1:
            payload = bytes(body[0])
    elif kind is BodyKind.VALUE:
        body_type = _value_type(body)
        if body is None:
            payload = b""
        elif isinstance(body, bytes):
            payload = body
        elif isinstance(body, str):
            payload = body.encode("utf-8")
    if payload is None:
        return kind.value, body_type, None, None
    body_json = None
    content_type = message.properties.content_type
    if payload and is_json(None if content_type is None else str(content_type)):
        body_json = is_valid_json(payload)
    return kind.value, body_type, len(payload), body_json


def is_valid_json(data: bytes) -> bool:
    """Whether ``data`` is a JSON document (as the mapping's JSON event format decides)."""
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def _value_type(value: Any) -> str:
    if value is None:
        return "null"
    kind = type(value)
    if kind is symbol:
        return "symbol"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "binary"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    if kind is int:
        return "long"
    if kind is float:
        return "double"
    if isinstance(value, uuid.UUID):
        return "uuid"
    return kind.__name__.lower()


def archive_row(
    route: str,
    side: str,
    time_us: int,
    message: AmqpMessage,
    *,
    encoded: bytes | None = None,
) -> tuple[Any, ...]:
    """The archive row of ``message``, as a tuple in :data:`COLUMNS` order.

    ``time_us`` is the time in microseconds since the Unix epoch (UTC).
    ``encoded`` is the message's AMQP encoding when the caller already has it
    (``message.encode()``, or the bytes as received from an AMQP 1.0 peer);
    ``head`` and ``bare`` are cut from it, else the message is encoded here.
    Raises :class:`~mappings.errors.MappingError` if the message cannot be
    encoded, :class:`~pipeline.sections.SectionError` if ``encoded`` is not a
    message; a message that claims to be a CloudEvent but is not a valid one
    is archived with ``ce_error`` set.
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, not {side!r}")
    head, bare = split_message(message.encode() if encoded is None else encoded)
    properties = message.properties
    message_id, message_id_type = id_text(properties.message_id)
    correlation_id, correlation_id_type = id_text(properties.correlation_id)
    content_type = properties.content_type
    creation_time = properties.creation_time
    application_properties = {
        key: value_text(value) for key, value in message.application_properties.items()
    }
    ce_mode = ce_error = None
    event_values = _NO_EVENT
    try:
        mode = detect_mode(message)
        if mode is not None:
            ce_mode = mode.value
            event = from_message(message)
            if event is not None:
                event_values = event_columns(event)
    except MappingError as exc:
        ce_error = str(exc)
    return (
        route,
        side,
        time_us,
        message_id,
        message_id_type,
        correlation_id,
        correlation_id_type,
        properties.subject,
        None if content_type is None else str(content_type),
        None if creation_time is None else int(creation_time),
        application_properties,
        ce_mode,
        ce_error,
        *event_values,
        *body_columns(message),
        head,
        bare,
    )



def with_context(
    row: tuple[Any, ...], route: str, side: str, time_us: int, encoded: bytes | None = None
) -> tuple[Any, ...]:
    """The row of the same, unchanged message for another route, side or time.

    ``encoded`` (another encoding of it, e.g. as sent rather than as received)
    replaces ``head`` and ``bare``; without it they are kept.
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, not {side!r}")
    head, bare = row[-2:] if encoded is None else split_message(encoded)
    return (route, side, time_us, *row[3:-2], head, bare)
