"""Segment payloads: controls, commands and header segments to and from bytes."""

from __future__ import annotations

import struct

from .base import Command, Control, Struct
from .errors import DecodeError, EncodeError
from .spec import COMMANDS, CONTROLS, STRUCTS_BY_CODE
from .types import u32_pack_into

_SIZE_CODE = struct.Struct(">IH").unpack_from
_SYNC = b"\x01\x01"
_NO_SYNC = b"\x01\x00"
# bound decode_fields by code: one lookup, no tuple key, no classmethod binding per call
_COMMAND_DECODERS = {c << 8 | o: cls.decode_fields for (c, o), cls in COMMANDS.items()}
_HEADER_DECODERS = {code: cls.decode_fields for code, cls in STRUCTS_BY_CODE.items()}


def encode_control(control: Control) -> bytes:
    """A control segment payload: class code, control code, packed fields."""
    out = bytearray((control.CLASS_CODE, control.OP_CODE))
    control.encode_fields(out)
    return bytes(out)


def encode_command(command: Command) -> bytes:
    """A command segment payload: class code, command code, session header, fields."""
    out = bytearray((command.CLASS_CODE, command.OP_CODE))
    out += _SYNC if command.sync else _NO_SYNC
    command.encode_fields(out)
    return bytes(out)


def decode_control(payload: bytes) -> Control:
    """Decode a whole control segment payload."""
    if len(payload) < 2:
        raise DecodeError(0, f"control segment of {len(payload)} octets has no class/control code")
    cls = CONTROLS.get((payload[0], payload[1]))
    if cls is None:
        raise DecodeError(0, f"unknown control: class {payload[0]:#04x} code {payload[1]:#04x}")
    value, end = cls.decode_fields(payload, 2)
    if end != len(payload):
        raise DecodeError(end, f"{cls.NAME}: {len(payload) - end} octets after its fields")
    return value


def decode_command(payload: bytes) -> Command:
    """Decode a whole command segment payload (including its session header)."""
    size = len(payload)
    if size < 3:
        raise DecodeError(0, f"command segment of {size} octets is too short")
    decode = _COMMAND_DECODERS.get(payload[0] << 8 | payload[1])
    if decode is None:
        raise DecodeError(0, f"unknown command: class {payload[0]:#04x} code {payload[1]:#04x}")
    hsize = payload[2]
    if hsize > 1:
        raise DecodeError(2, f"session header of {hsize} octets (at most 1 expected)")
    if 3 + hsize > size:
        raise DecodeError(2, "truncated session header")
    hflags = payload[3] if hsize else 0
    if hflags & 0xFE:
        raise DecodeError(3, f"session header flags {hflags:#04x} set undefined bits")
    value, end = decode(payload, 3 + hsize)  # sync is False
    if end != size:
        raise DecodeError(end, f"{value.NAME}: {size - end} octets after its fields")
    if hflags:
        value.sync = True
    return value


def encode_header(structs: tuple[Struct, ...] | list[Struct]) -> bytes:
    """A header segment payload: each struct as size(uint32), code(uint16), fields."""
    out = bytearray()
    for s in structs:
        if s.CODE is None:
            raise EncodeError(f"{s.NAME} has no struct code and cannot be in a header segment")
        start = len(out)
        out += b"\x00\x00\x00\x00"
        out += s.CODE.to_bytes(2, "big")
        s.encode_fields(out)
        u32_pack_into(out, start, len(out) - start - 4)
    return bytes(out)


def decode_header(payload: bytes) -> tuple[Struct, ...]:
    """Decode a header segment payload into its structs, in wire order."""
    out: list[Struct] = []
    pos = 0
    end = len(payload)
    while pos < end:
        if pos + 6 > end:
            raise DecodeError(pos, "truncated struct in header segment")
        size, code = _SIZE_CODE(payload, pos)
        stop = pos + 4 + size
        if size < 2 or stop > end:
            raise DecodeError(pos, f"header struct size {size} overruns the segment")
        decode = _HEADER_DECODERS.get(code)
        if decode is None:
            raise DecodeError(pos + 4, f"unknown struct code {code:#06x} in header segment")
        value, p = decode(payload, pos + 6)  # overruns show as p != stop
        if p != stop:
            raise DecodeError(p, f"{value.NAME}: size {size} does not match its fields")
        out.append(value)
        pos = stop
    return tuple(out)
