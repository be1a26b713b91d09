"""Archive rows from an AMQP 0-10 trace (the capture JSON-lines format).

A legacy link's trace (``{"dir": "c2s"|"s2c", "t": seconds, "hex": ...}`` per
TCP read, as the 0-10 engine's protocol tracing writes it) is decoded with the
project's codec; every message.transfer becomes one archive row, its message
converted to AMQP 1.0 by the project's mapping (:mod:`mappings.amqp010`). A
published transfer's destination is the exchange, as the broker would record
it on delivery. Which side a transfer lands on depends on the role the bridge
played on that link:

=========  ===============================  ===============================
role       c2s transfers (client → broker)  s2c transfers (broker → client)
=========  ===============================  ===============================
client     delivered (the bridge published) received (the bridge consumed)
server     received (a legacy app published) delivered (the bridge delivered)
=========  ===============================  ===============================
"""

from __future__ import annotations

import copy
import logging
import os
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from amqp010.capture import DIRECTIONS, read_chunks, sniff_format
from amqp010.framing import Assembler, Assembly, FrameDecoder
from amqp010.spec import DeliveryProperties, MessageProperties, MessageTransfer
from mappings.amqp010 import to_amqp10
from mappings.errors import MappingError
from pipeline.rows import archive_row

log = logging.getLogger(__name__)

Role = Literal["client", "server"]
_SIDES: dict[str, dict[str, str]] = {
    "client": {"c2s": "delivered", "s2c": "received"},
    "server": {"c2s": "received", "s2c": "delivered"},
}


def trace_rows(
    path: str | os.PathLike[str],
    *,
    route: str | None = None,
    role: Role = "client",
    start: datetime | None = None,
) -> list[tuple[Any, ...]]:
    """The archive rows of every message.transfer in the trace at ``path``, in arrival order.

    ``route`` defaults to the file's stem. A row's time is ``start`` plus the
    trace's relative time of the read that completed the transfer; ``start``
    (an aware datetime) defaults to the file's modification time minus the
    trace's last relative time, i.e. when the recording began. A message the
    mapping cannot express in AMQP 1.0 is logged and left out. Raises
    :class:`~amqp010.capture.CaptureFormatError` or the codec's
    ``DecodeError`` for an undecodable trace.
    """
    if role not in _SIDES:
        raise ValueError(f"role must be 'client' or 'server', not {role!r}")
    path = Path(path)
    transfers = list(_transfers(path))
    if start is None:
        last = max((t for _, t, _ in transfers), default=0.0)
        start_us = int(path.stat().st_mtime * 1_000_000) - int(last * 1_000_000)
    else:
        if start.utcoffset() is None:
            raise ValueError("start must be timezone-aware")
        start_us = int(start.timestamp() * 1_000_000)
    sides = _SIDES[role]
    name = path.stem if route is None else route
    rows = []
    for direction, offset, assembly in transfers:
        delivery = assembly.header_struct(DeliveryProperties)
        destination = getattr(assembly.op, "destination", None)
        if direction == "c2s" and destination is not None:
            delivery = copy.copy(delivery) if delivery is not None else DeliveryProperties()
            if delivery.exchange is None:
                delivery.exchange = destination
        try:
            message = to_amqp10(delivery, assembly.header_struct(MessageProperties), assembly.body)
        except MappingError as exc:
            log.warning("%s: transfer at stream offset %d (%s) not archived: %s",
                        path, assembly.offset, direction, exc)
            continue
        rows.append(archive_row(name, sides[direction], start_us + int(offset * 1_000_000), message))
    return rows


def _transfers(path: Path) -> Iterator[tuple[str, float, Assembly]]:
    """``(direction, relative time, assembly)`` of each message.transfer, in arrival order."""
    decoders = {direction: FrameDecoder() for direction in DIRECTIONS}
    assemblers = {direction: Assembler() for direction in DIRECTIONS}
    for chunk in read_chunks(path):
        decoder = decoders[chunk.direction]
        decoder.feed(chunk.data)
        for item in decoder.assemblies(assemblers[chunk.direction]):
            if isinstance(item, Assembly) and type(item.op) is MessageTransfer:
                yield chunk.direction, chunk.time, item


def is_trace(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a capture JSON-lines file (rather than an archive)."""
    path = Path(path)
    return path.is_file() and sniff_format(path) == "jsonl"
