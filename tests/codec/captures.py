"""Helpers for the recorded AMQP 0-10 conversations in ``tests/data/captures/amqp-0-10/``.

The capture files are read here with the standard library only (not with
``amqp010.capture``), and wire type codes are read from the spec XML, so
the expectations the tests derive from them do not depend on the code under test.
"""

from __future__ import annotations

import json
import struct
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from amqp010.framing import Assembler, Assembly, Frame, FrameDecoder, ProtocolHeader
from tests.data import CAPTURES_010 as CAPTURE_DIR
from tests.data import SPEC_XML

XML_NS = "{http://www.amqp.org/schema/amqp.xsd}"

SCENARIOS: tuple[str, ...] = tuple(sorted(p.stem for p in CAPTURE_DIR.glob("*.jsonl")))
DIRECTIONS = ("c2s", "s2c")
PROTOCOL_HEADER_0_10 = b"AMQP\x01\x01\x00\x0a"
MAX_FRAME = 0xFFFF


# --- reading captures ------------------------------------------------------------


@cache
def chunks(scenario: str) -> tuple[tuple[str, bytes], ...]:
    """``(direction, bytes)`` of every recorded TCP read, in arrival order."""
    out = []
    with open(CAPTURE_DIR / f"{scenario}.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                rec = json.loads(line)
                out.append((rec["dir"], bytes.fromhex(rec["hex"])))
    return tuple(out)


@cache
def stream(scenario: str, direction: str) -> bytes:
    """One direction's whole byte stream (its chunks concatenated)."""
    return b"".join(data for d, data in chunks(scenario) if d == direction)


def tcp_reads(scenario: str, direction: str) -> list[bytes]:
    """One direction's chunks as they were read from the socket."""
    return [data for d, data in chunks(scenario) if d == direction]


@cache
def scenario_json(scenario: str) -> dict[str, Any]:
    """The scenario's ``.json`` description (what was sent and received)."""
    with open(CAPTURE_DIR / f"{scenario}.json", encoding="utf-8") as fh:
        return json.load(fh)  # type: ignore[no-any-return]


# --- decoding a stream -------------------------------------------------------------


@dataclass
class Decoded:
    """Everything one direction of a capture decodes to."""

    protocol_header: ProtocolHeader
    frames: list[Frame] = field(default_factory=list)
    assemblies: list[Assembly] = field(default_factory=list)
    frames_of: list[list[Frame]] = field(default_factory=list)
    """The frames each assembly arrived in (same order as ``assemblies``)."""


def decode_chunks(pieces: Iterable[bytes], max_frame_size: int = MAX_FRAME) -> Decoded:
    """Feed ``pieces`` to a FrameDecoder + Assembler, checking the decoder's buffering.

    After every feed and drain, the decoder must hold exactly the octets it has not
    yet returned as frames, and never a whole frame's worth or more.
    """
    decoder = FrameDecoder(max_frame_size)
    assembler = Assembler()
    header: ProtocolHeader | None = None
    frames: list[Frame] = []
    assemblies: list[Assembly] = []
    frames_of: list[list[Frame]] = []
    pending: dict[tuple[int, int], list[Frame]] = {}
    fed = consumed = 0
    for piece in pieces:
        decoder.feed(piece)
        fed += len(piece)
        for item in decoder.frames():
            if isinstance(item, ProtocolHeader):
                assert header is None, "a second protocol header was yielded"
                header = item
                consumed += 8
                continue
            assert item.offset == consumed, f"frame offset {item.offset}, expected {consumed}"
            consumed += 12 + len(item.payload)
            frames.append(item)
            key = (item.channel, item.track)
            pending.setdefault(key, []).append(item)
            done = assembler.add(item)
            if done is not None:
                assemblies.append(done)
                frames_of.append(pending.pop(key))
        assert decoder.buffered == fed - consumed, (
            f"buffered={decoder.buffered} but {fed - consumed} octets are fed and not yet framed")
        assert decoder.buffered < max_frame_size, (
            f"decoder buffers {decoder.buffered} octets: more than one partial frame")
        assert decoder.stream_offset == consumed
    assert header is not None, "no protocol header was decoded"
    assert assembler.pending == 0, "stream ends inside an assembly"
    assert decoder.buffered == 0, f"{decoder.buffered} trailing octets were not framed"
    return Decoded(header, frames, assemblies, frames_of)


@cache
def decoded(scenario: str, direction: str) -> Decoded:
    """The capture direction decoded in one piece (cached: captures are immutable)."""
    return decode_chunks([stream(scenario, direction)])


# --- expected values from the scenario JSON ---------------------------------------


def from_json(value: Any) -> Any:
    """A JSON value from a scenario file as the Python value the codec decodes to.

    ``{"bytes_hex": ...}`` → bytes, ``{"uuid": ...}`` → UUID, recursively.
    """
    if isinstance(value, dict):
        if set(value) == {"bytes_hex"}:
            return bytes.fromhex(value["bytes_hex"])
        if set(value) == {"uuid"}:
            return uuid.UUID(value["uuid"])
        return {k: from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_json(v) for v in value]
    return value


def default_type_code(json_value: Any) -> int:
    """The wire type qpid-python picks for a JSON-described value (its defaults)."""
    if json_value is None:
        return 0xF0
    if isinstance(json_value, bool):
        return 0x08
    if isinstance(json_value, int):
        return 0x31 if -(1 << 63) <= json_value < 1 << 63 else 0x32
    if isinstance(json_value, float):
        return 0x33
    if isinstance(json_value, str):
        return 0x95
    if isinstance(json_value, list):
        return 0xA9
    if isinstance(json_value, dict):
        if set(json_value) == {"bytes_hex"}:
            return 0x90
        if set(json_value) == {"uuid"}:
            return 0x48
        return 0xA8
    raise AssertionError(f"no default wire type for {json_value!r}")


def struct_as_dict(value: Any) -> dict[str, Any]:
    """A decoded struct's present fields as a dict, nested structs as dicts too."""
    return {k: struct_as_dict(v) if hasattr(v, "FIELDS") else v for k, v in value.items()}


# --- an independent scanner of typed entries (type codes from the spec XML) -------


@cache
def xml_type_widths() -> dict[int, tuple[str, int]]:
    """``code -> ("fixed" | "variable", width)`` for every coded type in the spec XML."""
    root = ET.parse(SPEC_XML).getroot()
    out = {}
    for t in root.findall(XML_NS + "type"):
        code = t.get("code")
        if code is None:
            continue
        if t.get("fixed-width") is not None:
            out[int(code, 16)] = ("fixed", int(t.get("fixed-width", "0")))
        else:
            out[int(code, 16)] = ("variable", int(t.get("variable-width", "0")))
    return out


@dataclass
class ScannedEntry:
    """One map entry or list item as laid out on the wire."""

    key: str | None
    code: int
    start: int
    """Offset of the value's first octet (after its type code)."""
    end: int
    children: list[ScannedEntry] | None = None
    """Entries of a nested map or list."""


def _value_end(buf: bytes, code: int, pos: int) -> int:
    kind, width = xml_type_widths()[code]
    if kind == "fixed":
        return pos + width
    size = int.from_bytes(buf[pos:pos + width], "big")
    return pos + width + size


def scan_entries(buf: bytes, pos: int, *, is_map: bool) -> list[ScannedEntry]:
    """The typed entries of the map (or list) whose size field is at ``buf[pos]``."""
    size, count = struct.unpack_from(">II", buf, pos)
    end = pos + 4 + size
    p = pos + 8
    out = []
    for _ in range(count):
        key = None
        if is_map:
            n = buf[p]
            key = buf[p + 1:p + 1 + n].decode("utf-8")
            p += 1 + n
        code = buf[p]
        start = p + 1
        stop = _value_end(buf, code, start)
        children = None
        if code in (0xA8, 0xA9):
            children = scan_entries(buf, start, is_map=code == 0xA8)
        out.append(ScannedEntry(key, code, start, stop, children))
        p = stop
    assert p == end, f"scanned entries end at {p}, the size says {end}"
    return out
