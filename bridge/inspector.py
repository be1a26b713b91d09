"""``amqp-bridge inspect``: decode a recorded AMQP 0-10 conversation to JSON lines.

One line per frame (default) or per assembly (``--assemble``), in arrival order.
Decoding stops at the first error in a direction; what decoded before is still
printed and the error is reported with its stream offset.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson

from amqp010 import types as T
from amqp010.base import Struct
from amqp010.capture import Chunk, read_chunks, sniff_format
from amqp010.codec import decode_command, decode_control, decode_header
from amqp010.errors import CodecError
from amqp010.framing import (
    Assembler,
    Assembly,
    Frame,
    FrameDecoder,
    ProtocolHeader,
    SegmentType,
)

_SEGMENT_NAMES = {s.value: s.name.lower() for s in SegmentType}
BODY_PREFIX = 64
"""Body octets shown (as hex) in ``--assemble`` output."""


def to_json_value(value: Any) -> Any:
    """A JSON-friendly rendering of a decoded AMQP 0-10 value.

    Plain values stay plain; bytes become ``{"bytes_hex"}``, UUIDs ``{"uuid"}``
    (the capture metadata's conventions); a value whose wire type is not the
    default for its Python type becomes ``{"type": "int8", "value": 5}``.
    """
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is bytes:
        return {"bytes_hex": value.hex()}
    if t is dict:
        return {k: to_json_value(v) for k, v in value.items()}
    if t in (list, tuple):
        return [to_json_value(v) for v in value]
    if isinstance(value, uuid.UUID):
        return {"uuid": str(value)}
    if isinstance(value, Struct):
        return struct_to_json(value)
    if isinstance(value, T.Array):
        return {"type": "array", "element_type": T.TYPE_NAMES.get(value.type_code, "?"),
                "value": [to_json_value(v) for v in value]}
    if isinstance(value, T.SequenceSet | T.ByteRanges):
        return [list(r) for r in value.ranges]
    if isinstance(value, _dt.datetime):
        return value.isoformat()
    code = T.type_code_of(value)
    name = T.TYPE_NAMES.get(code, type(value).__name__)
    if isinstance(value, bytes):
        return {"type": name, "bytes_hex": value.hex()}
    if isinstance(value, Decimal):
        return {"type": name, "value": str(value)}
    base = next(b for b in (bool, int, float, str) if isinstance(value, b))
    return {"type": name, "value": base(value)}


def struct_to_json(value: Struct) -> dict[str, Any]:
    """A struct's present fields, by spec name, plus its ``type``."""
    out: dict[str, Any] = {"type": value.NAME}
    for f in value.FIELDS:
        v = getattr(value, f.attr)
        if v is None or (f.type == "bit" and v is False):
            continue
        out[f.name] = to_json_value(v)
    return out


def _op_json(op: Struct) -> dict[str, Any]:
    args = struct_to_json(op)
    name = args.pop("type")
    result: dict[str, Any] = {"op": name, "args": args}
    if getattr(op, "sync", False):
        result["sync"] = True
    return result


@dataclass
class _Direction:
    """Decoding state of one direction of the conversation."""

    name: str
    decoder: FrameDecoder
    assembler: Assembler = field(default_factory=Assembler)
    segment_parts: dict[tuple[int, int], list[bytes]] = field(default_factory=dict)
    error: CodecError | None = None


class Inspector:
    """Turns chunks of a conversation into JSON-able records, frame by frame or by assembly."""

    def __init__(self, assemble: bool = False, expect_protocol_header: bool = True) -> None:
        self.assemble = assemble
        self._expect_header = expect_protocol_header
        self.directions: dict[str, _Direction] = {}

    def feed(self, direction: str, data: bytes) -> Iterator[dict[str, Any]]:
        """Decode ``data`` received in ``direction``; yield a record per complete unit."""
        d = self.directions.get(direction)
        if d is None:
            d = _Direction(direction, FrameDecoder(expect_protocol_header=self._expect_header))
            self.directions[direction] = d
        if d.error is not None:
            return
        d.decoder.feed(data)
        try:
            for item in d.decoder.frames():
                if isinstance(item, ProtocolHeader):
                    yield {"dir": direction, "protocol_header": item.version,
                           "supported": item.supported}
                elif self.assemble:
                    assembly = d.assembler.add(item)
                    if assembly is not None:
                        yield self._assembly_record(direction, assembly)
                else:
                    yield self._frame_record(d, item)
        except CodecError as exc:
            d.error = exc

    def finish(self) -> list[str]:
        """Problems found: decode errors and input that ended mid-frame or mid-assembly."""
        problems = []
        for d in self.directions.values():
            if d.error is not None:
                problems.append(f"{d.name}: {d.error}")
            elif d.decoder.buffered:
                problems.append(f"{d.name}: stream ends inside a frame "
                                f"({d.decoder.buffered} octets left at offset {d.decoder.stream_offset})")
            elif self.assemble and d.assembler.pending:
                problems.append(f"{d.name}: stream ends inside an assembly")
        return problems

    def _frame_record(self, d: _Direction, frame: Frame) -> dict[str, Any]:
        flags = "".join(c if frame.flags & bit else "-" for c, bit in
                        (("B", 8), ("E", 4), ("b", 2), ("e", 1)))
        rec: dict[str, Any] = {
            "dir": d.name, "offset": frame.offset, "channel": frame.channel, "track": frame.track,
            "segment": _SEGMENT_NAMES[frame.segment_type], "flags": flags,
            "size": len(frame.payload) + 12,
        }
        if frame.segment_type == SegmentType.BODY:
            rec["length"] = len(frame.payload)
            return rec
        key = (frame.channel, frame.track)
        parts = d.segment_parts.setdefault(key, [])
        parts.append(frame.payload)
        if not frame.last_frame:
            rec["partial"] = True
            return rec
        data = b"".join(parts)
        del d.segment_parts[key]
        decode: Callable[[bytes], Any]
        if frame.segment_type == SegmentType.HEADER:
            rec["structs"] = [struct_to_json(s) for s in _decoded(decode_header, data, frame)]
        else:
            decode = decode_control if frame.segment_type == SegmentType.CONTROL else decode_command
            rec.update(_op_json(_decoded(decode, data, frame)))
        return rec

    def _assembly_record(self, direction: str, a: Assembly) -> dict[str, Any]:
        rec: dict[str, Any] = {"dir": direction, "offset": a.offset, "channel": a.channel}
        rec.update(_op_json(a.op))
        if a.has_header:
            rec["header"] = [struct_to_json(s) for s in a.header]
        if a.segments > 1 + a.has_header:
            rec["body_length"] = len(a.body)
            rec["body_prefix_hex"] = a.body[:BODY_PREFIX].hex()
        return rec


def _decoded(decode: Callable[[bytes], Any], data: bytes, frame: Frame) -> Any:
    from amqp010.errors import DecodeError

    try:
        return decode(data)
    except DecodeError as exc:
        raise exc.shifted(frame.offset + 12) from None


def inspect_file(path: str | Path, *, assemble: bool = False, fmt: str = "auto",
                 direction: str = "c2s") -> tuple[Iterator[dict[str, Any]], Inspector]:
    """Records for a capture file (JSON lines) or a raw one-direction stream.

    Returns the record iterator and the :class:`Inspector`, whose ``finish()``
    lists the problems once the iterator is exhausted.
    """
    if fmt == "auto":
        fmt = sniff_format(path)
    if fmt == "jsonl":
        chunks: Iterator[Chunk] = read_chunks(path)
        inspector = Inspector(assemble)
    else:
        data = Path(path).read_bytes()
        inspector = Inspector(assemble, expect_protocol_header=data.startswith(b"AMQP"))
        chunks = iter([Chunk(direction, 0.0, data)])

    def records() -> Iterator[dict[str, Any]]:
        for chunk in chunks:
            yield from inspector.feed(chunk.direction, chunk.data)

    return records(), inspector


def dumps(record: dict[str, Any]) -> str:
    """One JSON line."""
    return orjson.dumps(record).decode()
