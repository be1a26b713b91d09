"""AMQP 0-10 primitive types: typed values and their wire encodings.

Decoding is lossless: a value whose wire type is not the default for its Python
type comes back wrapped in a small subclass that remembers the wire type
(``Int8(5)``, ``Str8("x")``, ``Float32(1.5)``...), so decode → encode gives the
same bytes.  Plain Python values encode with the defaults qpid uses:

=================  ===========================
Python value        wire type (code)
=================  ===========================
``bool``            boolean (0x08)
``int``             int64 (0x31); uint64 (0x32) above 2**63-1
``float``           double (0x33)
``str``             str16 (0x95)
``bytes``           vbin16 (0x90); vbin32 (0xa0) above 65535 octets
``dict``            map (0xa8)
``list``            list (0xa9)
``Array``           array (0xaa)
``uuid.UUID``       uuid (0x48)
``datetime``        datetime (0x38), whole seconds since the epoch
``None``            void (0xf0)
generated structs   struct32 (0xab)
=================  ===========================

Every decoder has the signature ``dec(buf, pos) -> (value, new_pos)`` over a
``bytes`` buffer; every encoder ``enc(out: bytearray, value) -> None``.  Bounds are
checked: a short buffer raises :class:`~amqp010.errors.DecodeError` with the
offset, never ``IndexError`` or ``struct.error``.
"""

from __future__ import annotations

import datetime as _dt
import struct
import uuid
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any

from .errors import DecodeError, EncodeError

MAX_NESTING = 32
"""Deepest map/list/array/struct nesting accepted when decoding."""
MAX_EMPTY_ARRAY = 64
"""Most elements an array of void or bit (zero-octet elements) may declare: such
elements cost no input, so an unbounded count would let a few octets expand into
millions of objects."""

# --- struct helpers ---------------------------------------------------------

_S_U16 = struct.Struct(">H")
_S_U32 = struct.Struct(">I")
_S_U64 = struct.Struct(">Q")
_S_I8 = struct.Struct(">b")
_S_I16 = struct.Struct(">h")
_S_I32 = struct.Struct(">i")
_S_I64 = struct.Struct(">q")
_S_F32 = struct.Struct(">f")
_S_F64 = struct.Struct(">d")

u16_unpack = _S_U16.unpack_from
u32_unpack = _S_U32.unpack_from
u64_unpack = _S_U64.unpack_from
_I64 = _S_I64.unpack_from
_S_II = struct.Struct(">II").unpack_from
_S_II_PACK = struct.Struct(">II").pack
u16_pack = _S_U16.pack
u32_pack = _S_U32.pack
u64_pack = _S_U64.pack
u32_pack_into = _S_U32.pack_into
u16_pack_into = _S_U16.pack_into


# --- typed wrappers -----------------------------------------------------------


class Int8(int):
    """An int sent as int8 (0x01)."""

    __slots__ = ()


class UInt8(int):
    """An int sent as uint8 (0x02)."""

    __slots__ = ()


class Int16(int):
    """An int sent as int16 (0x11)."""

    __slots__ = ()


class UInt16(int):
    """An int sent as uint16 (0x12)."""

    __slots__ = ()


class Int32(int):
    """An int sent as int32 (0x21)."""

    __slots__ = ()


class UInt32(int):
    """An int sent as uint32 (0x22)."""

    __slots__ = ()


class Int64(int):
    """An int sent explicitly as int64 (0x31); plain ``int`` is the same on the wire."""

    __slots__ = ()


class UInt64(int):
    """An int sent as uint64 (0x32)."""

    __slots__ = ()


class SequenceNo(int):
    """An RFC 1982 serial number (sequence-no, no type code)."""

    __slots__ = ()


class Datetime(int):
    """A datetime (0x38): whole seconds since the Unix epoch, kept as an int."""

    __slots__ = ()

    def to_datetime(self) -> _dt.datetime:
        """This instant as an aware UTC :class:`datetime.datetime`."""
        return _dt.datetime.fromtimestamp(int(self), tz=_dt.UTC)


class Float32(float):
    """A float sent as IEEE single precision (0x23)."""

    __slots__ = ()


class Double(float):
    """A float sent explicitly as double (0x33); plain ``float`` is the same."""

    __slots__ = ()


class Char(str):
    """One ISO-8859-15 character (0x04)."""

    __slots__ = ()


class CharUTF32(str):
    """One Unicode character sent as UTF-32 (0x27)."""

    __slots__ = ()


class Str8(str):
    """A string sent as str8 (UTF-8, 0x85)."""

    __slots__ = ()


class Str8Latin(str):
    """A string sent as str8-latin (ISO-8859-15, 0x84)."""

    __slots__ = ()


class Str8UTF16(str):
    """A string sent as str8-utf16 (0x86)."""

    __slots__ = ()


class Str16(str):
    """A string sent explicitly as str16 (0x95); plain ``str`` is the same."""

    __slots__ = ()


class Str16Latin(str):
    """A string sent as str16-latin (0x94)."""

    __slots__ = ()


class Str16UTF16(str):
    """A string sent as str16-utf16 (0x96)."""

    __slots__ = ()


class VBin8(bytes):
    """Bytes sent as vbin8 (0x80)."""

    __slots__ = ()


class VBin16(bytes):
    """Bytes sent explicitly as vbin16 (0x90)."""

    __slots__ = ()


class VBin32(bytes):
    """Bytes sent as vbin32 (0xa0)."""

    __slots__ = ()


class FixedBinary(bytes):
    """Opaque fixed-width binary (bin8 … bin1024, bin40, bin72); WIDTH is the octet count."""

    __slots__ = ()
    WIDTH = 0
    CODE = 0


def _fixed(name: str, code: int, width: int) -> type[FixedBinary]:
    cls = type(name, (FixedBinary,), {"__slots__": (), "WIDTH": width, "CODE": code,
                                       "__doc__": f"{width}-octet opaque binary ({code:#04x})."})
    return cls


Bin8 = _fixed("Bin8", 0x00, 1)
Bin16 = _fixed("Bin16", 0x10, 2)
Bin32 = _fixed("Bin32", 0x20, 4)
Bin64 = _fixed("Bin64", 0x30, 8)
Bin128 = _fixed("Bin128", 0x40, 16)
Bin256 = _fixed("Bin256", 0x50, 32)
Bin512 = _fixed("Bin512", 0x60, 64)
Bin1024 = _fixed("Bin1024", 0x70, 128)
Bin40 = _fixed("Bin40", 0xC0, 5)
Bin72 = _fixed("Bin72", 0xD0, 9)


class Dec32(Decimal):
    """A decimal sent as dec32 (0xc8): uint8 exponent, int32 mantissa."""

    __slots__ = ()


class Dec64(Decimal):
    """A decimal sent as dec64 (0xd8): uint8 exponent, int64 mantissa."""

    __slots__ = ()


class Bit:
    """A bit (0xf1) entry of a map or list: a present flag that carries no octets."""

    __slots__ = ()

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Bit) or other is True

    def __hash__(self) -> int:
        return hash(True)

    def __repr__(self) -> str:
        return "Bit()"


class Array(list[Any]):
    """An AMQP array (0xaa): a list whose elements all have one wire type."""

    __slots__ = ("type_code",)

    def __init__(self, type_code: int, items: Iterable[Any] = ()) -> None:
        super().__init__(items)
        self.type_code = type_code

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Array):
            return self.type_code == other.type_code and list.__eq__(self, other)
        return list.__eq__(self, other)  # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Array({self.type_code:#04x}, {list.__repr__(self)})"


class SequenceSet:
    """An RFC 1982 sequence-set: closed ranges ``[(lo, hi), ...]`` in wire order."""

    __slots__ = ("ranges",)

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        self.ranges: list[tuple[int, int]] = list(ranges)

    @classmethod
    def of(cls, *ids: int) -> SequenceSet:
        """A set holding the given ids, merged into minimal ranges."""
        out = cls()
        for i in ids:
            out.add(i)
        return out

    def add(self, lo: int, hi: int | None = None) -> None:
        """Add the closed range ``lo..hi`` (serial arithmetic), merging touching ranges."""
        from .serial import serial_add_range

        self.ranges = serial_add_range(self.ranges, lo, lo if hi is None else hi)

    def __contains__(self, item: int) -> bool:
        from .serial import serial_le

        return any(serial_le(lo, item) and serial_le(item, hi) for lo, hi in self.ranges)

    def __iter__(self) -> Iterator[int]:
        for lo, hi in self.ranges:
            i = lo
            while True:
                yield i
                if i == hi:
                    break
                i = (i + 1) & 0xFFFFFFFF

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SequenceSet) and self.ranges == other.ranges

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SequenceSet({self.ranges!r})"


class ByteRanges:
    """A byte-ranges value: closed ranges of uint64 byte offsets."""

    __slots__ = ("ranges",)

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        self.ranges: list[tuple[int, int]] = list(ranges)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByteRanges) and self.ranges == other.ranges

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ByteRanges({self.ranges!r})"


# --- bounds-checked readers ---------------------------------------------------


def _need(buf: bytes, pos: int, n: int, what: str) -> int:
    end = pos + n
    if end > len(buf):
        raise DecodeError(pos, f"truncated {what}: need {n} octets, {len(buf) - pos} left")
    return end


def _utf8(raw: bytes, pos: int, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(pos + exc.start, f"invalid UTF-8 in {what}") from None


def _utf16(raw: bytes, pos: int, what: str) -> str:
    try:
        return raw.decode("utf-16-be")
    except UnicodeDecodeError as exc:
        raise DecodeError(pos + exc.start, f"invalid UTF-16 in {what}") from None


def dec_str8(buf: bytes, pos: int) -> tuple[str, int]:
    """str8 as a plain ``str`` (used for struct fields, whose type is fixed)."""
    if pos >= len(buf):
        raise DecodeError(pos, "truncated str8 size")
    n = buf[pos]
    start = pos + 1
    end = _need(buf, start, n, "str8")
    return _utf8(buf[start:end], start, "str8"), end


def dec_str16(buf: bytes, pos: int) -> tuple[str, int]:
    """str16 as a plain ``str``."""
    start = _need(buf, pos, 2, "str16 size")
    end = _need(buf, start, u16_unpack(buf, pos)[0], "str16")
    return _utf8(buf[start:end], start, "str16"), end


def dec_vbin8(buf: bytes, pos: int) -> tuple[bytes, int]:
    """vbin8 as plain ``bytes``."""
    if pos >= len(buf):
        raise DecodeError(pos, "truncated vbin8 size")
    end = _need(buf, pos + 1, buf[pos], "vbin8")
    return buf[pos + 1 : end], end


def dec_vbin16(buf: bytes, pos: int) -> tuple[bytes, int]:
    """vbin16 as plain ``bytes``."""
    start = _need(buf, pos, 2, "vbin16 size")
    end = _need(buf, start, u16_unpack(buf, pos)[0], "vbin16")
    return buf[start:end], end


def dec_vbin32(buf: bytes, pos: int) -> tuple[bytes, int]:
    """vbin32 as plain ``bytes``."""
    start = _need(buf, pos, 4, "vbin32 size")
    end = _need(buf, start, u32_unpack(buf, pos)[0], "vbin32")
    return buf[start:end], end


_new_uuid = uuid.UUID.__new__
_set = object.__setattr__
_SAFE_UNKNOWN = uuid.SafeUUID.unknown


def make_uuid(value: int) -> uuid.UUID:
    """A UUID from its 128-bit integer, without UUID.__init__'s argument parsing (hot path)."""
    u = _new_uuid(uuid.UUID)
    _set(u, "int", value)
    _set(u, "is_safe", _SAFE_UNKNOWN)
    return u


def dec_uuid(buf: bytes, pos: int) -> tuple[uuid.UUID, int]:
    """A 16-octet RFC 4122 uuid."""
    end = _need(buf, pos, 16, "uuid")
    return make_uuid(int.from_bytes(buf[pos:end], "big")), end


def dec_sequence_set(buf: bytes, pos: int) -> tuple[SequenceSet, int]:
    """sequence-set: uint16 size, then (lower, upper) uint32 pairs."""
    start = _need(buf, pos, 2, "sequence-set size")
    size = u16_unpack(buf, pos)[0]
    if size % 8:
        raise DecodeError(pos, f"sequence-set size {size} is not a multiple of 8")
    end = _need(buf, start, size, "sequence-set")
    words = struct.unpack_from(f">{size // 4}I", buf, start)
    return SequenceSet(zip(words[0::2], words[1::2], strict=True)), end


def dec_byte_ranges(buf: bytes, pos: int) -> tuple[ByteRanges, int]:
    """byte-ranges: uint16 size, then (lower, upper) uint64 pairs."""
    start = _need(buf, pos, 2, "byte-ranges size")
    size = u16_unpack(buf, pos)[0]
    if size % 16:
        raise DecodeError(pos, f"byte-ranges size {size} is not a multiple of 16")
    end = _need(buf, start, size, "byte-ranges")
    words = struct.unpack_from(f">{size // 8}Q", buf, start)
    return ByteRanges(zip(words[0::2], words[1::2], strict=True)), end


# --- writers -------------------------------------------------------------------


def enc_str8(out: bytearray, value: str) -> None:
    """str8 (UTF-8, at most 255 octets)."""
    raw = value.encode("utf-8")
    if len(raw) > 0xFF:
        raise EncodeError(f"str8 holds at most 255 octets, got {len(raw)}: {value[:40]!r}...")
    out.append(len(raw))
    out += raw


def enc_str16(out: bytearray, value: str) -> None:
    """str16 (UTF-8, at most 65535 octets)."""
    raw = value.encode("utf-8")
    if len(raw) > 0xFFFF:
        raise EncodeError(f"str16 holds at most 65535 octets, got {len(raw)}")
    out += u16_pack(len(raw))
    out += raw


def enc_vbin8(out: bytearray, value: bytes) -> None:
    """vbin8 (at most 255 octets)."""
    if len(value) > 0xFF:
        raise EncodeError(f"vbin8 holds at most 255 octets, got {len(value)}")
    out.append(len(value))
    out += value


def enc_vbin16(out: bytearray, value: bytes) -> None:
    """vbin16 (at most 65535 octets)."""
    if len(value) > 0xFFFF:
        raise EncodeError(f"vbin16 holds at most 65535 octets, got {len(value)}")
    out += u16_pack(len(value))
    out += value


def enc_vbin32(out: bytearray, value: bytes) -> None:
    """vbin32."""
    if len(value) > 0xFFFFFFFF:
        raise EncodeError(f"vbin32 holds at most 4294967295 octets, got {len(value)}")
    out += u32_pack(len(value))
    out += value


def enc_uuid(out: bytearray, value: uuid.UUID) -> None:
    """uuid (16 octets)."""
    out += value.bytes


def enc_sequence_set(out: bytearray, value: SequenceSet | Iterable[tuple[int, int]]) -> None:
    """sequence-set."""
    ranges = value.ranges if isinstance(value, SequenceSet) else list(value)
    if len(ranges) * 8 > 0xFFFF:
        raise EncodeError(f"sequence-set has too many ranges ({len(ranges)})")
    out += u16_pack(len(ranges) * 8)
    for lo, hi in ranges:
        out += u32_pack(lo)
        out += u32_pack(hi)


def enc_byte_ranges(out: bytearray, value: ByteRanges | Iterable[tuple[int, int]]) -> None:
    """byte-ranges."""
    ranges = value.ranges if isinstance(value, ByteRanges) else list(value)
    if len(ranges) * 16 > 0xFFFF:
        raise EncodeError(f"byte-ranges has too many ranges ({len(ranges)})")
    out += u16_pack(len(ranges) * 16)
    for lo, hi in ranges:
        out += u64_pack(lo)
        out += u64_pack(hi)


# --- self-describing values (map, list, array entries) -------------------------

Decoder = Callable[[bytes, int, int], tuple[Any, int]]
"""Decoder of a typed value: ``(buf, pos, depth) -> (value, new_pos)``."""
Encoder = Callable[[bytearray, Any, int], None]
"""Encoder of a typed value: ``(out, value, depth) -> None``."""


def _fixed_int(s: struct.Struct, cls: type, what: str) -> Decoder:
    unpack = s.unpack_from
    size = s.size

    def dec(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
        end = pos + size
        if end > len(buf):
            raise DecodeError(pos, f"truncated {what}")
        return cls(unpack(buf, pos)[0]), end

    return dec


def _fixed_bin(cls: type[FixedBinary]) -> Decoder:
    width = cls.WIDTH

    def dec(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
        end = _need(buf, pos, width, cls.__name__)
        return cls(buf[pos:end]), end

    return dec


def _var(size_struct: struct.Struct, make: Callable[[bytes, int], Any], what: str) -> Decoder:
    width = size_struct.size
    unpack = size_struct.unpack_from

    def dec(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
        start = _need(buf, pos, width, what + " size")
        end = _need(buf, start, unpack(buf, pos)[0], what)
        return make(buf[start:end], start), end

    return dec


def _dec_uint8(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise DecodeError(pos, "truncated uint8")
    return UInt8(buf[pos]), pos + 1


def _dec_boolean(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise DecodeError(pos, "truncated boolean")
    return buf[pos] != 0, pos + 1


def _dec_char(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if pos >= len(buf):
        raise DecodeError(pos, "truncated char")
    return Char(bytes(buf[pos : pos + 1]).decode("iso-8859-15")), pos + 1


def _dec_char_utf32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = _need(buf, pos, 4, "char-utf32")
    try:
        return CharUTF32(bytes(buf[pos:end]).decode("utf-32-be")), end
    except UnicodeDecodeError:
        raise DecodeError(pos, "invalid char-utf32") from None


def _dec_int64(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 8
    if end > len(buf):
        raise DecodeError(pos, "truncated int64")
    return _S_I64.unpack_from(buf, pos)[0], end


def _dec_double(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 8
    if end > len(buf):
        raise DecodeError(pos, "truncated double")
    return _S_F64.unpack_from(buf, pos)[0], end


def _dec_uuid_v(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return dec_uuid(buf, pos)


def _dec_decimal(cls: type[Decimal], s: struct.Struct, what: str) -> Decoder:
    size = 1 + s.size

    def dec(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
        end = _need(buf, pos, size, what)
        exponent = buf[pos]
        mantissa = s.unpack_from(buf, pos + 1)[0]
        return cls(Decimal(mantissa).scaleb(-exponent)), end

    return dec


def _dec_void(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return None, pos


_BIT = Bit()


def _dec_bit(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _BIT, pos


def _dec_map(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if depth >= MAX_NESTING:
        raise DecodeError(pos, f"map nested deeper than {MAX_NESTING} levels")
    if pos + 8 > len(buf):
        raise DecodeError(pos, "truncated map header")
    size, count = _S_II(buf, pos)
    end = pos + 4 + size
    if end > len(buf):
        raise DecodeError(pos, f"map size {size} overruns its container ({len(buf) - pos - 4} left)")
    if count > size:  # each entry takes at least two octets
        raise DecodeError(pos, f"map claims {count} entries in {size} octets")
    sub = buf[:end] if end < len(buf) else buf
    result: dict[str, Any] = {}
    p = pos + 8
    depth += 1
    entry = p
    try:
        for _ in range(count):
            entry = p
            kend = p + 1 + sub[p]
            key = sub[p + 1:kend].decode()
            code = sub[kend]
            p = kend + 1
            # inline the common value types; the rest go through DECODERS
            if code == 0x95:  # str16
                e = p + 2 + (sub[p] << 8 | sub[p + 1])
                if e > end:
                    raise IndexError
                result[key] = sub[p + 2:e].decode()
                p = e
            elif code == 0x31:  # int64
                result[key] = _I64(sub, p)[0]
                p += 8
            elif code == 0x08:  # boolean
                result[key] = sub[p] != 0
                p += 1
            else:
                dec = DECODERS.get(code)
                if dec is None:
                    raise DecodeError(kend, f"unknown type code {code:#04x} in map entry {key!r}")
                result[key], p = dec(sub, p, depth)
    except (IndexError, struct.error):
        raise DecodeError(entry, "truncated map entry (entries overrun the map size)") from None
    except UnicodeDecodeError:
        raise DecodeError(entry, "invalid UTF-8 in map entry") from None
    if p != end:
        raise DecodeError(p, f"map size {size} does not match its {count} entries")
    return result, end


def _dec_list(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if depth >= MAX_NESTING:
        raise DecodeError(pos, f"list nested deeper than {MAX_NESTING} levels")
    start = _need(buf, pos, 8, "list header")
    size, count = struct.unpack_from(">II", buf, pos)
    end = _need(buf, pos + 4, size, "list")
    if count > size:
        raise DecodeError(pos, f"list claims {count} entries in {size} octets")
    sub = buf[:end] if end < len(buf) else buf
    result: list[Any] = []
    append = result.append
    p = start
    depth += 1
    for _ in range(count):
        if p >= end:
            raise DecodeError(p, "list entries overrun the list size")
        code = sub[p]
        dec = DECODERS.get(code)
        if dec is None:
            raise DecodeError(p, f"unknown type code {code:#04x} in list")
        value, p = dec(sub, p + 1, depth)
        append(value)
    if p != end:
        raise DecodeError(p, f"list size {size} does not match its {count} entries")
    return result, end


def _dec_array(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if depth >= MAX_NESTING:
        raise DecodeError(pos, f"array nested deeper than {MAX_NESTING} levels")
    start = _need(buf, pos, 9, "array header")
    size = u32_unpack(buf, pos)[0]
    end = _need(buf, pos + 4, size, "array")
    if size < 5:
        raise DecodeError(pos, f"array size {size} is too small for its header")
    code = buf[pos + 4]
    count = u32_unpack(buf, pos + 5)[0]
    dec = DECODERS.get(code)
    if dec is None:
        raise DecodeError(pos + 4, f"unknown array element type code {code:#04x}")
    width = FIXED_WIDTHS.get(code)
    if width is not None and width * count != size - 5:
        raise DecodeError(pos, f"array of {count} x {width}-octet elements in {size - 5} octets")
    if width == 0 and count > MAX_EMPTY_ARRAY:  # void/bit elements carry no octets
        raise DecodeError(pos, f"array of {count} void/bit elements exceeds {MAX_EMPTY_ARRAY}")
    if width is None and count > size:
        raise DecodeError(pos, f"array claims {count} elements in {size} octets")
    sub = buf[:end] if end < len(buf) else buf
    items: list[Any] = []
    append = items.append
    p = start
    depth += 1
    for _ in range(count):
        value, p = dec(sub, p, depth)
        append(value)
    if p != end:
        raise DecodeError(p, f"array size {size} does not match its {count} elements")
    return Array(code, items), end


def _dec_struct32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if depth >= MAX_NESTING:
        raise DecodeError(pos, f"struct32 nested deeper than {MAX_NESTING} levels")
    _need(buf, pos, 6, "struct32 header")
    start = pos + 4
    end = _need(buf, start, u32_unpack(buf, pos)[0], "struct32")
    return decode_struct_body(buf[start:end], start, depth + 1), end


_STRUCTS_BY_CODE: dict[int, Any] = {}


def register_structs(structs: dict[int, Any]) -> None:
    """Make ``code -> struct class`` known to struct32 decoding.

    The generated :mod:`amqp010.spec` registers its coded structs when it is imported
    (it imports this module, so this module cannot import it); every decoder of whole
    segments (:mod:`amqp010.codec`) imports the spec first.
    """
    _STRUCTS_BY_CODE.update(structs)


def decode_struct_body(body: bytes, base: int, depth: int = 0) -> Any:
    """Decode ``code(uint16) + packed fields`` (a struct32 body) to a struct instance.

    ``base`` is the offset of ``body`` in the enclosing buffer, used in errors.
    """
    if len(body) < 2:
        raise DecodeError(base, "truncated struct code")
    code = u16_unpack(body, 0)[0]
    cls = _STRUCTS_BY_CODE.get(code)
    if cls is None:
        raise DecodeError(base, f"unknown struct code {code:#06x}")
    try:
        value, end = cls.decode_fields(body, 2, depth)
    except DecodeError as exc:
        raise exc.shifted(base) from None
    if end != len(body):
        raise DecodeError(base + end, f"{cls.NAME}: {len(body) - end} octets left after its fields")
    return value


def _str_dec(cls: type[str], decode: Callable[[bytes, int, str], str], what: str):
    return lambda raw, start: cls(decode(raw, start, what))


def _latin(raw: bytes, pos: int, what: str) -> str:
    return raw.decode("iso-8859-15")


DECODERS: dict[int, Decoder] = {
    0x00: _fixed_bin(Bin8),
    0x01: _fixed_int(_S_I8, Int8, "int8"),
    0x02: _dec_uint8,
    0x04: _dec_char,
    0x08: _dec_boolean,
    0x10: _fixed_bin(Bin16),
    0x11: _fixed_int(_S_I16, Int16, "int16"),
    0x12: _fixed_int(_S_U16, UInt16, "uint16"),
    0x20: _fixed_bin(Bin32),
    0x21: _fixed_int(_S_I32, Int32, "int32"),
    0x22: _fixed_int(_S_U32, UInt32, "uint32"),
    0x23: _fixed_int(_S_F32, Float32, "float"),
    0x27: _dec_char_utf32,
    0x30: _fixed_bin(Bin64),
    0x31: _dec_int64,
    0x32: _fixed_int(_S_U64, UInt64, "uint64"),
    0x33: _dec_double,
    0x38: _fixed_int(_S_I64, Datetime, "datetime"),
    0x40: _fixed_bin(Bin128),
    0x48: _dec_uuid_v,
    0x50: _fixed_bin(Bin256),
    0x60: _fixed_bin(Bin512),
    0x70: _fixed_bin(Bin1024),
    0x80: _var(struct.Struct(">B"), lambda raw, start: VBin8(raw), "vbin8"),
    0x84: _var(struct.Struct(">B"), _str_dec(Str8Latin, _latin, "str8-latin"), "str8-latin"),
    0x85: _var(struct.Struct(">B"), _str_dec(Str8, _utf8, "str8"), "str8"),
    0x86: _var(struct.Struct(">B"), _str_dec(Str8UTF16, _utf16, "str8-utf16"), "str8-utf16"),
    0x90: _var(_S_U16, lambda raw, start: bytes(raw), "vbin16"),
    0x94: _var(_S_U16, _str_dec(Str16Latin, _latin, "str16-latin"), "str16-latin"),
    0x95: _var(_S_U16, lambda raw, start: _utf8(raw, start, "str16"), "str16"),
    0x96: _var(_S_U16, _str_dec(Str16UTF16, _utf16, "str16-utf16"), "str16-utf16"),
    0xA0: _var(_S_U32, lambda raw, start: VBin32(raw), "vbin32"),
    0xA8: _dec_map,
    0xA9: _dec_list,
    0xAA: _dec_array,
    0xAB: _dec_struct32,
    0xC0: _fixed_bin(Bin40),
    0xC8: _dec_decimal(Dec32, _S_I32, "dec32"),
    0xD0: _fixed_bin(Bin72),
    0xD8: _dec_decimal(Dec64, _S_I64, "dec64"),
    0xF0: _dec_void,
    0xF1: _dec_bit,
}
"""Decoder for each type code that may appear in a map, list or array."""

FIXED_WIDTHS: dict[int, int] = {
    0x00: 1, 0x01: 1, 0x02: 1, 0x04: 1, 0x08: 1,
    0x10: 2, 0x11: 2, 0x12: 2,
    0x20: 4, 0x21: 4, 0x22: 4, 0x23: 4, 0x27: 4,
    0x30: 8, 0x31: 8, 0x32: 8, 0x33: 8, 0x38: 8,
    0x40: 16, 0x48: 16, 0x50: 32, 0x60: 64, 0x70: 128,
    0xC0: 5, 0xC8: 5, 0xD0: 9, 0xD8: 9, 0xF0: 0, 0xF1: 0,
}  # fmt: skip
"""Octet width of each fixed-width type code."""

TYPE_NAMES: dict[int, str] = {
    0x00: "bin8", 0x01: "int8", 0x02: "uint8", 0x04: "char", 0x08: "boolean",
    0x10: "bin16", 0x11: "int16", 0x12: "uint16", 0x20: "bin32", 0x21: "int32",
    0x22: "uint32", 0x23: "float", 0x27: "char-utf32", 0x30: "bin64", 0x31: "int64",
    0x32: "uint64", 0x33: "double", 0x38: "datetime", 0x40: "bin128", 0x48: "uuid",
    0x50: "bin256", 0x60: "bin512", 0x70: "bin1024", 0x80: "vbin8", 0x84: "str8-latin",
    0x85: "str8", 0x86: "str8-utf16", 0x90: "vbin16", 0x94: "str16-latin", 0x95: "str16",
    0x96: "str16-utf16", 0xA0: "vbin32", 0xA8: "map", 0xA9: "list", 0xAA: "array",
    0xAB: "struct32", 0xC0: "bin40", 0xC8: "dec32", 0xD0: "bin72", 0xD8: "dec64",
    0xF0: "void", 0xF1: "bit",
}  # fmt: skip
"""The spec's name of each type code."""


def decode_value(code: int, buf: bytes, pos: int = 0, depth: int = 0) -> tuple[Any, int]:
    """Decode one value of wire type ``code`` at ``buf[pos:]``."""
    dec = DECODERS.get(code)
    if dec is None:
        raise DecodeError(pos, f"unknown type code {code:#04x}")
    return dec(buf, pos, depth)


def decode_map(buf: bytes, pos: int = 0) -> tuple[dict[str, Any], int]:
    """Decode a map (size, count, entries) at ``buf[pos:]``."""
    return _dec_map(buf, pos, 0)  # type: ignore[no-any-return]


# Encoders ---------------------------------------------------------------------


def _range_checked(s: struct.Struct, what: str) -> Encoder:
    pack = s.pack

    def enc(out: bytearray, value: Any, depth: int) -> None:
        try:
            out += pack(value)
        except (struct.error, OverflowError, TypeError):
            raise EncodeError(f"{value!r} does not fit {what}") from None

    return enc


def _enc_int(out: bytearray, value: int, depth: int) -> None:
    # plain int: int64, or uint64 when only that fits (qpid's choice too)
    if -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        out[-1] = 0x31
        out += _S_I64.pack(value)
    elif 0 <= value <= 0xFFFFFFFFFFFFFFFF:
        out[-1] = 0x32
        out += _S_U64.pack(value)
    else:
        raise EncodeError(f"integer {value} does not fit int64 or uint64")


def _enc_bool(out: bytearray, value: bool, depth: int) -> None:
    out.append(1 if value else 0)


def _enc_uint8(out: bytearray, value: int, depth: int) -> None:
    if not 0 <= value <= 0xFF:
        raise EncodeError(f"{value!r} does not fit uint8")
    out.append(value)


def _enc_char(out: bytearray, value: str, depth: int) -> None:
    try:
        raw = value.encode("iso-8859-15")
    except UnicodeEncodeError:
        raise EncodeError(f"{value!r} is not an ISO-8859-15 character") from None
    if len(raw) != 1:
        raise EncodeError(f"char holds exactly one character, got {value!r}")
    out += raw


def _enc_char_utf32(out: bytearray, value: str, depth: int) -> None:
    if len(value) != 1:
        raise EncodeError(f"char-utf32 holds exactly one character, got {value!r}")
    out += value.encode("utf-32-be")


def _enc_fixed_bin(out: bytearray, value: bytes, depth: int) -> None:
    width = getattr(value, "WIDTH", None)
    if width is None or len(value) != width:
        raise EncodeError(f"fixed binary of width {width} got {len(value)} octets")
    out += value


def _enc_bytes(out: bytearray, value: bytes, depth: int) -> None:
    if len(value) <= 0xFFFF:
        out += u16_pack(len(value))
    else:
        out[-1] = 0xA0
        out += u32_pack(len(value))
    out += value


def _enc_with(func: Callable[[bytearray, Any], None]) -> Encoder:
    return lambda out, value, depth: func(out, value)


def _enc_text(size_fmt: struct.Struct, codec: str, what: str) -> Encoder:
    limit = (1 << (8 * size_fmt.size)) - 1
    pack = size_fmt.pack

    def enc(out: bytearray, value: str, depth: int) -> None:
        try:
            raw = value.encode(codec)
        except UnicodeEncodeError:
            raise EncodeError(f"{value[:40]!r} cannot be encoded as {what}") from None
        if len(raw) > limit:
            raise EncodeError(f"{what} holds at most {limit} octets, got {len(raw)}")
        out += pack(len(raw))
        out += raw

    return enc


def _enc_vbin(size_fmt: struct.Struct, what: str) -> Encoder:
    limit = (1 << (8 * size_fmt.size)) - 1
    pack = size_fmt.pack

    def enc(out: bytearray, value: bytes, depth: int) -> None:
        if len(value) > limit:
            raise EncodeError(f"{what} holds at most {limit} octets, got {len(value)}")
        out += pack(len(value))
        out += value

    return enc


def _enc_decimal(s: struct.Struct, what: str) -> Encoder:
    def enc(out: bytearray, value: Decimal, depth: int) -> None:
        sign, digits, exponent = value.as_tuple()
        if not isinstance(exponent, int) or not -255 <= exponent <= 0:
            raise EncodeError(f"{value!r}: {what} needs an exponent between 0 and -255")
        mantissa = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
        try:
            out.append(-exponent)
            out += s.pack(mantissa)
        except struct.error:
            raise EncodeError(f"{value!r} mantissa does not fit {what}") from None

    return enc


def _enc_datetime(out: bytearray, value: Any, depth: int) -> None:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise EncodeError(f"datetime {value!r} has no time zone")
        value = int(value.timestamp())
    try:
        out += _S_I64.pack(value)
    except struct.error:
        raise EncodeError(f"{value!r} does not fit datetime") from None


def _enc_void(out: bytearray, value: Any, depth: int) -> None:
    return None


def _enc_map(out: bytearray, value: dict[str, Any], depth: int) -> None:
    if depth >= MAX_NESTING:
        raise EncodeError(f"map nested deeper than {MAX_NESTING} levels")
    start = len(out)
    out += _S_II_PACK(0, len(value))
    depth += 1
    for key, item in value.items():
        if type(key) is not str and not isinstance(key, str):
            raise EncodeError(f"map keys are str8 strings, got {key!r}")
        raw = key.encode("utf-8")
        if len(raw) > 0xFF:
            raise EncodeError(f"map key of {len(raw)} octets does not fit str8: {key[:40]!r}...")
        out.append(len(raw))
        out += raw
        t = type(item)  # inline the common value types
        if t is str:
            raw = item.encode("utf-8")
            if len(raw) > 0xFFFF:
                raise EncodeError(f"map value {key!r}: str16 holds at most 65535 octets")
            out.append(0x95)
            out += u16_pack(len(raw))
            out += raw
        elif t is int and -0x8000000000000000 <= item <= 0x7FFFFFFFFFFFFFFF:
            out.append(0x31)
            out += _S_I64.pack(item)
        elif t is bool:
            out.append(0x08)
            out.append(1 if item else 0)
        else:
            encode_typed(out, item, depth)
    u32_pack_into(out, start, len(out) - start - 4)


def _enc_list(out: bytearray, value: list[Any], depth: int) -> None:
    if depth >= MAX_NESTING:
        raise EncodeError(f"list nested deeper than {MAX_NESTING} levels")
    start = len(out)
    out += b"\x00\x00\x00\x00"
    out += u32_pack(len(value))
    depth += 1
    for item in value:
        encode_typed(out, item, depth)
    u32_pack_into(out, start, len(out) - start - 4)


def _enc_array(out: bytearray, value: Array, depth: int) -> None:
    if depth >= MAX_NESTING:
        raise EncodeError(f"array nested deeper than {MAX_NESTING} levels")
    code = value.type_code
    enc = ENCODERS_BY_CODE.get(code)
    if enc is None:
        raise EncodeError(f"array element type code {code:#04x} is unknown")
    start = len(out)
    out += b"\x00\x00\x00\x00"
    out.append(code)
    out += u32_pack(len(value))
    depth += 1
    for i, item in enumerate(value):
        try:
            enc(out, item, depth)
        except EncodeError:
            raise
        except Exception as exc:
            name = TYPE_NAMES.get(code, hex(code))
            raise EncodeError(f"array element {i} ({item!r}) is not a valid {name}: {exc}") from None
    u32_pack_into(out, start, len(out) - start - 4)


def _enc_struct32(out: bytearray, value: Any, depth: int) -> None:
    if depth >= MAX_NESTING:
        raise EncodeError(f"struct32 nested deeper than {MAX_NESTING} levels")
    code = getattr(value, "CODE", None)
    if code is None:
        raise EncodeError(f"{type(value).__name__} has no struct code and cannot be a struct32")
    start = len(out)
    out += b"\x00\x00\x00\x00"
    out += u16_pack(code)
    value.encode_fields(out, depth + 1)
    u32_pack_into(out, start, len(out) - start - 4)


ENCODERS_BY_CODE: dict[int, Encoder] = {
    0x00: _enc_fixed_bin, 0x10: _enc_fixed_bin, 0x20: _enc_fixed_bin, 0x30: _enc_fixed_bin,
    0x40: _enc_fixed_bin, 0x50: _enc_fixed_bin, 0x60: _enc_fixed_bin, 0x70: _enc_fixed_bin,
    0xC0: _enc_fixed_bin, 0xD0: _enc_fixed_bin,
    0x01: _range_checked(_S_I8, "int8"),
    0x02: _enc_uint8,
    0x04: _enc_char,
    0x08: _enc_bool,
    0x11: _range_checked(_S_I16, "int16"),
    0x12: _range_checked(_S_U16, "uint16"),
    0x21: _range_checked(_S_I32, "int32"),
    0x22: _range_checked(_S_U32, "uint32"),
    0x23: _range_checked(_S_F32, "float"),
    0x27: _enc_char_utf32,
    0x31: _range_checked(_S_I64, "int64"),
    0x32: _range_checked(_S_U64, "uint64"),
    0x33: _range_checked(_S_F64, "double"),
    0x38: _enc_datetime,
    0x48: _enc_with(enc_uuid),
    0x80: _enc_vbin(struct.Struct(">B"), "vbin8"),
    0x84: _enc_text(struct.Struct(">B"), "iso-8859-15", "str8-latin"),
    0x85: _enc_text(struct.Struct(">B"), "utf-8", "str8"),
    0x86: _enc_text(struct.Struct(">B"), "utf-16-be", "str8-utf16"),
    0x90: _enc_vbin(_S_U16, "vbin16"),
    0x94: _enc_text(_S_U16, "iso-8859-15", "str16-latin"),
    0x95: _enc_text(_S_U16, "utf-8", "str16"),
    0x96: _enc_text(_S_U16, "utf-16-be", "str16-utf16"),
    0xA0: _enc_vbin(_S_U32, "vbin32"),
    0xA8: _enc_map,
    0xA9: _enc_list,
    0xAA: _enc_array,
    0xAB: _enc_struct32,
    0xC8: _enc_decimal(_S_I32, "dec32"),
    0xD8: _enc_decimal(_S_I64, "dec64"),
    0xF0: _enc_void,
    0xF1: _enc_void,
}  # fmt: skip
"""Encoder of a value's bytes (without its type code) for each type code."""

_CODE_OF_TYPE: dict[type, int] = {
    bool: 0x08, int: 0x31, float: 0x33, str: 0x95, bytes: 0x90, bytearray: 0x90,
    dict: 0xA8, list: 0xA9, tuple: 0xA9, Array: 0xAA, uuid.UUID: 0x48, type(None): 0xF0,
    _dt.datetime: 0x38,
    Int8: 0x01, UInt8: 0x02, Int16: 0x11, UInt16: 0x12, Int32: 0x21, UInt32: 0x22,
    Int64: 0x31, UInt64: 0x32, Datetime: 0x38, Float32: 0x23, Double: 0x33,
    Char: 0x04, CharUTF32: 0x27, Str8: 0x85, Str8Latin: 0x84, Str8UTF16: 0x86,
    Str16: 0x95, Str16Latin: 0x94, Str16UTF16: 0x96, VBin8: 0x80, VBin16: 0x90,
    VBin32: 0xA0, Dec32: 0xC8, Dec64: 0xD8, SequenceNo: 0x22, Bit: 0xF1,
    Bin8: 0x00, Bin16: 0x10, Bin32: 0x20, Bin64: 0x30, Bin128: 0x40, Bin256: 0x50,
    Bin512: 0x60, Bin1024: 0x70, Bin40: 0xC0, Bin72: 0xD0,
}  # fmt: skip

_PLAIN_ENCODERS: dict[int, Encoder] = {0x31: _enc_int, 0x90: _enc_bytes}


def type_code_of(value: Any) -> int:
    """The wire type code ``value`` encodes as inside a map, list or array."""
    t = type(value)
    code = _CODE_OF_TYPE.get(t)
    if code is not None:
        if t is int and value > 0x7FFFFFFFFFFFFFFF:
            return 0x32
        if (t is bytes or t is bytearray) and len(value) > 0xFFFF:
            return 0xA0
        return code
    if getattr(value, "CODE", None) is not None and hasattr(value, "encode_fields"):
        return 0xAB
    for cls, code in _CODE_OF_TYPE.items():  # subclasses of the plain types
        if isinstance(value, cls) and cls not in (int, bool):
            return code
    if isinstance(value, int):
        return 0x31
    raise EncodeError(f"no AMQP 0-10 type for a {type(value).__name__} value: {value!r}")


def encode_typed(out: bytearray, value: Any, depth: int = 0) -> None:
    """Append ``value``'s type code and bytes (a map/list entry value)."""
    t = type(value)
    code = _CODE_OF_TYPE.get(t)
    if code is None:
        code = type_code_of(value)
    out.append(code)
    if t is int or t is bytes:
        _PLAIN_ENCODERS[code](out, value, depth)
    else:
        ENCODERS_BY_CODE[code](out, value, depth)


def encode_map(out: bytearray, value: dict[str, Any], depth: int = 0) -> None:
    """Append ``value`` as a map (size, count, typed entries)."""
    _enc_map(out, value, depth)


def encode_array(out: bytearray, value: Array | list[Any], depth: int = 0) -> None:
    """Append an array; a plain list must be empty or hold values of one default type."""
    if not isinstance(value, Array):
        if not isinstance(value, list):
            raise EncodeError(f"an array must be a list or Array, got {type(value).__name__}")
        code = type_code_of(value[0]) if value else 0xF0
        value = Array(code, value)
    _enc_array(out, value, depth)


def encode_list(out: bytearray, value: list[Any], depth: int = 0) -> None:
    """Append a list (size, count, typed entries)."""
    _enc_list(out, value, depth)


def encode_struct32(out: bytearray, value: Any, depth: int = 0) -> None:
    """Append a struct32 (size, struct code, packed fields)."""
    _enc_struct32(out, value, depth)


def dec_map_field(buf: bytes, pos: int) -> tuple[dict[str, Any], int]:
    """Decode a map-typed struct field."""
    return _dec_map(buf, pos, 1)  # type: ignore[no-any-return]


def dec_list_field(buf: bytes, pos: int) -> tuple[list[Any], int]:
    """Decode a list-typed struct field."""
    return _dec_list(buf, pos, 1)  # type: ignore[no-any-return]


def dec_array_field(buf: bytes, pos: int) -> tuple[Array, int]:
    """Decode an array-typed struct field."""
    return _dec_array(buf, pos, 1)  # type: ignore[no-any-return]


def dec_struct32_field(buf: bytes, pos: int) -> tuple[Any, int]:
    """Decode a struct32-typed struct field."""
    return _dec_struct32(buf, pos, 1)
