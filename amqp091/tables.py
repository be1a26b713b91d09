"""A typed AMQP 0-9-1 field-table codec: every value keeps its field type both ways.

pamqp's own table codec is lossy for a relay: it decodes every integer width to
``int`` (and re-encodes by magnitude), every float to ``float`` (re-encoded as a
32-bit ``f``), reads a timestamp above 2^32-1 as milliseconds and a decimal's
mantissa as unsigned.  This codec decodes a field table / field array into
values whose Python *type* names the field type, and encodes such values back
byte for byte:

=====  =====================================  =====  ==============================
type   Python value                           type   Python value
=====  =====================================  =====  ==============================
``t``  ``bool``                               ``f``  ``FieldTypes.float32``
``b``  ``FieldTypes.byte``                    ``d``  ``float``
``B``  ``FieldTypes.ubyte``                   ``D``  ``decimal.Decimal`` (signed mantissa)
``s``  ``FieldTypes.short``                   ``S``  ``str``; ``FieldTypes.long_string``
``u``  ``FieldTypes.ushort``                         when its octets are not UTF-8
``I``  ``FieldTypes.int32``                   ``x``  ``bytes`` (``bytearray`` encodes too)
``i``  ``FieldTypes.uint``                    ``T``  UTC ``datetime`` (whole seconds)
``l``  ``int`` (plain)                        ``V``  ``None``
``L``  ``FieldTypes.ulong``                   ``F``  ``dict`` (str keys) / ``A`` ``list``
=====  =====================================  =====  ==============================

The scalar octets are read and written by pamqp's per-type primitives
(``pamqp.decode.short_int``, ``pamqp.encode.long_long_int`` ...); this module
does the type-letter dispatch, the typing, the nesting and the bounds.  It
reads the decimal's mantissa (signed, as pamqp, pika and RabbitMQ write it),
the ``T`` and ``L`` 64-bit unsigned values and the length-prefixed strings
itself, since pamqp's readers of those guess or do not check lengths.

The width classes are a parameter (:class:`FieldTypes`): ``amqp091`` imports
no one else's types, so its defaults are its own ``int`` / ``float`` / ``bytes``
subclasses; a host that maps to AMQP 1.0 passes python-qpid-proton's
``byte`` / ``ubyte`` / ``short`` / ``ushort`` / ``int32`` / ``uint`` / ``ulong``
/ ``float32`` and its ``LongString`` (``ConnectionConfig.field_types``).

Bounds: nesting deeper than :data:`MAX_DEPTH`, a length running past its
enclosing table, an unknown type letter, a key that is not UTF-8 or a value
out of range is a :class:`TableError` (a ``ValueError``); the engine turns one
in received bytes into a 501 frame-error and one in a publish into the
``ValueError`` of that call.  Sizes are bounded by the frame that carries the
table (frame-max is checked before the frame is buffered).

Where it plugs in (:mod:`amqp091.framing`): the ``headers`` property is cut out
of a received content-header payload before pamqp decodes the rest, and is
decoded here; a published header frame is marshalled by pamqp without
``headers`` and the table encoded here is spliced in (its property flag set).
So pamqp's table codec never touches message headers, while method arguments
(queue.declare arguments, server properties) keep pamqp's codec.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pamqp import decode as pdecode
from pamqp import encode as pencode

from .field_types import (
    Byte,
    Float32,
    Int32,
    LongString,
    Short,
    UByte,
    UInt32,
    ULongLong,
    UShort,
)

MAX_DEPTH = 32
"""Tables and arrays nested deeper than this are refused (both directions)."""


class TableError(ValueError):
    """A field table that cannot be decoded or encoded (the message says where)."""


@dataclass(frozen=True, slots=True)
class FieldTypes:
    """The classes that stand for the field types plain Python has no type for."""

    byte: type[int] = Byte
    ubyte: type[int] = UByte
    short: type[int] = Short
    ushort: type[int] = UShort
    int32: type[int] = Int32
    uint: type[int] = UInt32
    ulong: type[int] = ULongLong
    float32: type[float] = Float32
    long_string: type[bytes] = LongString


DEFAULT_FIELD_TYPES = FieldTypes()
"""amqp091's own width classes."""

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_DECIMAL = struct.Struct(">Bi")
_SBYTE = struct.Struct(">b")

Decoder = Callable[[bytes], tuple[int, Any]]

_FIXED: dict[str, tuple[int, Decoder, str | None]] = {
    # letter: (width, pamqp primitive, FieldTypes attribute or None for the plain type)
    "t": (1, pdecode.boolean, None),
    "b": (1, pdecode.short_short_int, "byte"),
    "B": (1, pdecode.short_short_uint, "ubyte"),
    "s": (2, pdecode.short_int, "short"),
    "u": (2, pdecode.short_uint, "ushort"),
    "I": (4, pdecode.long_int, "int32"),
    "i": (4, pdecode.long_uint, "uint"),
    "l": (8, pdecode.long_long_int, None),
    "f": (4, pdecode.floating_point, "float32"),
    "d": (8, pdecode.double, None),
}


# ------------------------------------------------------------------ decoding

class _Reader:
    def __init__(self, data: bytes, types: FieldTypes) -> None:
        self.data = data
        # Any: the classes are called untyped, so the compiled build keeps what they make
        # (a value it holds as int is a plain int: the int subclass would be lost)
        self.types: Any = types

    def need(self, pos: int, size: int, end: int, what: str) -> int:
        if size < 0 or pos + size > end:
            raise TableError(f"{what} of {size} octets at offset {pos} runs past its "
                             f"table (ends at {end})")
        return pos + size

    def length(self, pos: int, end: int, what: str) -> tuple[int, int]:
        stop = self.need(pos, 4, end, f"{what} length")
        (size,) = _U32.unpack_from(self.data, pos)
        return stop, self.need(stop, size, end, what)

    def table(self, pos: int, end: int, depth: int) -> dict[str, Any]:
        if depth > MAX_DEPTH:
            raise TableError(f"field tables nested deeper than {MAX_DEPTH}")
        out: dict[str, Any] = {}
        data = self.data
        while pos < end:
            klen = data[pos]
            kend = self.need(pos + 1, klen, end, "table key")
            try:
                key = data[pos + 1:kend].decode("utf-8")
            except UnicodeDecodeError:
                raise TableError(f"table key at offset {pos} is not UTF-8") from None
            # the usual header values read here (as value() reads them), the rest there
            letter = data[kend] if kend < end else 0
            if letter == 0x53 and kend + 5 <= end:  # S: a long string
                start = kend + 5
                stop = start + _U32.unpack_from(data, kend + 1)[0]
                if stop <= end:
                    octets = data[start:stop]
                    try:
                        out[key] = octets.decode("utf-8")
                    except UnicodeDecodeError:
                        out[key] = self.types.long_string(octets)
                    pos = stop
                    continue
            elif letter == 0x49 and kend + 5 <= end:  # I: a signed 32-bit integer
                out[key] = self.types.int32(_I32.unpack_from(data, kend + 1)[0])
                pos = kend + 5
                continue
            pos, out[key] = self.value(kend, end, depth)
        return out

    def array(self, pos: int, end: int, depth: int) -> list[Any]:
        if depth > MAX_DEPTH:
            raise TableError(f"field arrays nested deeper than {MAX_DEPTH}")
        out: list[Any] = []
        while pos < end:
            pos, item = self.value(pos, end, depth)
            out.append(item)
        return out

    def value(self, pos: int, end: int, depth: int) -> tuple[int, Any]:
        data = self.data
        self.need(pos, 1, end, "field type")
        letter = chr(data[pos])
        pos += 1
        fixed = _FIXED.get(letter)
        if fixed is not None:
            width, primitive, kind = fixed
            stop = pos + width
            if stop > end:
                self.need(pos, width, end, f"field of type {letter!r}")  # raises
            _, raw = primitive(data[pos:stop])
            return stop, (raw if kind is None else getattr(self.types, kind)(raw))
        if letter == "S":
            start, stop = self.length(pos, end, "long string")
            octets = data[start:stop]
            try:
                return stop, octets.decode("utf-8")
            except UnicodeDecodeError:
                return stop, self.types.long_string(octets)
        if letter == "x":
            start, stop = self.length(pos, end, "byte array")
            return stop, bytes(data[start:stop])
        if letter == "F":
            start, stop = self.length(pos, end, "field table")
            return stop, self.table(start, stop, depth + 1)
        if letter == "A":
            start, stop = self.length(pos, end, "field array")
            return stop, self.array(start, stop, depth + 1)
        if letter == "V":
            return pos, None
        if letter == "D":
            stop = self.need(pos, 5, end, "decimal")
            scale, mantissa = _DECIMAL.unpack_from(data, pos)
            return stop, Decimal(mantissa).scaleb(-scale)
        if letter in "TL":
            stop = self.need(pos, 8, end, "timestamp" if letter == "T" else "long-long-uint")
            (number,) = _U64.unpack_from(data, pos)
            if letter == "L":
                return stop, self.types.ulong(number)
            try:
                return stop, _EPOCH + _dt.timedelta(seconds=number)
            except OverflowError:
                raise TableError(f"timestamp {number} s is past year 9999") from None
        raise TableError(f"unknown field type {letter!r} at offset {pos - 1}")


def decode_table(data: bytes, types: FieldTypes = DEFAULT_FIELD_TYPES) -> dict[str, Any]:
    """The typed values of a field table's entries (``data`` without its length prefix)."""
    return _Reader(bytes(data), types).table(0, len(data), 1)


def decode_array(data: bytes, types: FieldTypes = DEFAULT_FIELD_TYPES) -> list[Any]:
    """The typed values of a field array (``data`` without its length prefix)."""
    return _Reader(bytes(data), types).array(0, len(data), 1)


def read_table(data: bytes, types: FieldTypes = DEFAULT_FIELD_TYPES) -> tuple[int, dict[str, Any]]:
    """(octets consumed, table) for a length-prefixed field table at the start of ``data``."""
    reader = _Reader(bytes(data), types)
    start, stop = reader.length(0, len(data), "field table")
    return stop, reader.table(start, stop, 1)


# ------------------------------------------------------------------ encoding

def _signed_byte(value: int) -> bytes:
    return _SBYTE.pack(value)


def _timestamp(value: _dt.datetime) -> bytes:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        value = value.replace(tzinfo=_dt.UTC)
    delta = value - _EPOCH
    if delta.microseconds or delta.days < 0:
        raise TableError(f"timestamp {value.isoformat()} is not whole seconds since 1970")
    return _U64.pack(delta.days * 86400 + delta.seconds)


Path = tuple[Any, ...]
"""Where a value sits in what is being encoded, as (parent path, key or index) pairs;
formatted only for an error message."""


def _path_text(path: Path) -> str:
    parts: list[str] = []
    while len(path) == 2:
        path, step = path
        parts.append(f"[{step!r}]" if isinstance(step, str) else f"[{step}]")
    return str(path[0]) + "".join(reversed(parts))


def _long_string(value: str) -> bytes:
    data = value.encode("utf-8")
    return _U32.pack(len(data)) + data


class _Writer:
    """Encodes tables and arrays for one :class:`FieldTypes` (made once per types:
    :func:`_writer`)."""

    def __init__(self, types: FieldTypes) -> None:
        t = types
        self.types = types
        self.by_type: dict[type, tuple[bytes, Callable[[Any], bytes]]] = {
            bool: (b"t", pencode.boolean),
            t.byte: (b"b", _signed_byte),
            t.ubyte: (b"B", pencode.octet),
            t.short: (b"s", pencode.short_int),
            t.ushort: (b"u", pencode.short_uint),
            t.int32: (b"I", pencode.long_int),
            t.uint: (b"i", pencode.long_uint),
            int: (b"l", pencode.long_long_int),
            t.ulong: (b"L", lambda v: _U64.pack(v)),
            t.float32: (b"f", lambda v: pencode.floating_point(float(v))),
            float: (b"d", pencode.double),
            Decimal: (b"D", pencode.decimal),
            str: (b"S", _long_string),
            t.long_string: (b"S", lambda v: _U32.pack(len(v)) + bytes(v)),
            bytes: (b"x", lambda v: _U32.pack(len(v)) + v),
            bytearray: (b"x", lambda v: _U32.pack(len(v)) + bytes(v)),
            type(None): (b"V", lambda _: b""),
        }

    def table(self, value: dict[Any, Any], depth: int, path: Path) -> bytes:
        # dict[Any, ...]: keys are checked here (the compiled build would refuse a non-str
        # key before the check, with a TypeError instead of the TableError naming it)
        if depth > MAX_DEPTH:
            raise TableError(f"{_path_text(path)}: field tables nested deeper than {MAX_DEPTH}")
        parts: list[bytes] = []
        append = parts.append
        by_type = self.by_type
        for key, item in value.items():
            if type(key) is not str:
                raise TableError(f"{_path_text(path)}: table key {key!r:.40} is not a str")
            encoded = key.encode("utf-8")
            if len(encoded) > 255:
                raise TableError(f"{_path_text(path)}: table key {key[:40]!r}... is over "
                                 f"255 octets")
            kind = type(item)
            if kind is str:  # the usual header values, written here (same octets)
                try:
                    text = item.encode("utf-8")
                except UnicodeEncodeError:
                    pass  # (the general way below says why)
                else:
                    append(b"%c%sS%s%s" % (len(encoded), encoded, _U32.pack(len(text)), text))
                    continue
            elif kind is int and _I64_MIN <= item <= _I64_MAX:
                append(b"%c%sl%s" % (len(encoded), encoded, _I64.pack(item)))
                continue
            append(bytes((len(encoded),)))
            append(encoded)
            found = by_type.get(kind)
            if found is None:  # a table, an array, a timestamp or no field type
                append(self.value(item, depth, (path, key)))
                continue
            letter, primitive = found  # the usual simple value, written here (no call)
            try:
                append(letter + primitive(item))
            except (TypeError, ValueError, OverflowError, struct.error) as exc:
                raise TableError(f"{_path_text((path, key))}: {item!r:.60} does not fit "
                                 f"field type {letter.decode()!r}: {exc}") from None
        return b"".join(parts)

    def array(self, value: list[Any], depth: int, path: Path) -> bytes:
        if depth > MAX_DEPTH:
            raise TableError(f"{_path_text(path)}: field arrays nested deeper than {MAX_DEPTH}")
        return b"".join(self.value(item, depth, (path, i)) for i, item in enumerate(value))

    def value(self, value: Any, depth: int, path: Path) -> bytes:
        kind = type(value)
        found = self.by_type.get(kind)
        if found is not None:
            letter, primitive = found
            try:
                return letter + primitive(value)
            except (TypeError, ValueError, OverflowError, struct.error) as exc:
                raise TableError(f"{_path_text(path)}: {value!r:.60} does not fit field type "
                                 f"{letter.decode()!r}: {exc}") from None
        if kind is dict:
            inner = self.table(value, depth + 1, path)
            return b"F" + _U32.pack(len(inner)) + inner
        if kind is list:
            inner = self.array(value, depth + 1, path)
            return b"A" + _U32.pack(len(inner)) + inner
        if isinstance(value, _dt.datetime):
            return b"T" + _timestamp(value)
        raise TableError(f"{_path_text(path)}: {kind.__name__} is not a 0-9-1 field-table value")


_WRITERS: dict[FieldTypes, _Writer] = {}


def _writer(types: FieldTypes) -> _Writer:
    """The writer for ``types`` (kept: a connection encodes every message with the same)."""
    writer = _WRITERS.get(types)
    if writer is None:
        writer = _WRITERS[types] = _Writer(types)
    return writer


def encode_table(value: dict[str, Any], types: FieldTypes = DEFAULT_FIELD_TYPES) -> bytes:
    """A field table's entries (without the length prefix); :class:`TableError` if a value
    has no field type."""
    return _writer(types).table(value, 1, ("table",))


def encode_array(value: list[Any], types: FieldTypes = DEFAULT_FIELD_TYPES) -> bytes:
    """A field array's values (without the length prefix)."""
    return _writer(types).array(value, 1, ("array",))


def write_table(value: dict[str, Any], types: FieldTypes = DEFAULT_FIELD_TYPES) -> bytes:
    """A length-prefixed field table."""
    inner = encode_table(value, types)
    return _U32.pack(len(inner)) + inner


__all__ = [
    "DEFAULT_FIELD_TYPES",
    "MAX_DEPTH",
    "Byte",
    "FieldTypes",
    "Float32",
    "Int32",
    "LongString",
    "Short",
    "TableError",
    "UByte",
    "UInt32",
    "ULongLong",
    "UShort",
    "decode_array",
    "decode_table",
    "encode_array",
    "encode_table",
    "read_table",
    "write_table",
]
