"""Value conversion between AMQP 0-10 typed values and AMQP 1.0 typed values.

The field rules in :mod:`mappings.amqp010` use these functions for application
headers, ``amqp/map`` / ``amqp/list`` bodies and annotations. Conversion is
exact in both directions; where one side has no distinct type for a value, the
caller records the type beside it:

- :func:`header_to_amqp10` / :func:`property_from_amqp10` convert *top-level*
  values (0-10 application headers, 1.0 application properties) and return the
  type name to record when the default mapping would not restore the value's
  type (``"str8"``, ``"symbol"`` ...); the field layer keeps those names in
  ``x-amqp-0-10.header-types`` / ``x-amqp-1.0.property-types``.
  A 1.0 ``char`` property becomes a one-character 0-10 string (what 0-10
  clients decode; qpid-python cannot read ``char-utf32``), recorded as
  ``char``; a top-level 0-10 ``char-utf32`` header is recorded as
  ``char-utf32`` so it comes back as one.
- :func:`nested_to_amqp10` / :func:`nested_from_amqp10` convert values inside
  maps, lists and arrays, where a type name cannot be recorded beside the value:
  a 0-10 value with no distinct 1.0 type becomes the described value
  ``Described(symbol("x-amqp-0-10:<type>"), value)``.

Anything a direction cannot represent exactly raises :class:`Unrepresentable`
(callers fall back to another form) or :class:`~mappings.errors.MappingError`.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from proton import (
    UNDESCRIBED,
    Data,
    Described,
    byte,
    char,
    decimal32,
    decimal64,
    decimal128,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)
from proton import Array as Amqp10Array

from amqp010 import types as t
from amqp010.errors import CodecError
from mappings.errors import MappingError

__all__ = [
    "HEADER_TYPE_NAMES",
    "PROPERTY_TYPE_NAMES",
    "TAG_PREFIX",
    "Unrepresentable",
    "apply_header_type",
    "apply_property_type",
    "header_to_amqp10",
    "nested_from_amqp10",
    "nested_to_amqp10",
    "property_from_amqp10",
]

TAG_PREFIX = "x-amqp-0-10:"
"""Descriptor prefix of a nested 0-10 value whose type 1.0 lacks (``x-amqp-0-10:str8``)."""

_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_U64_MAX = 2**64 - 1
_STR8_MAX, _STR16_MAX = 0xFF, 0xFFFF


class Unrepresentable(Exception):
    """The value has no exact representation in the requested form (caller falls back)."""


# --- AMQP 0-10 -> AMQP 1.0 ---------------------------------------------------------------------


def _timestamp_of_seconds(seconds: int) -> timestamp:
    ms = seconds * 1000
    if not _I64_MIN <= ms <= _I64_MAX:
        raise MappingError(f"datetime {seconds} s is outside the AMQP 1.0 timestamp range")
    return timestamp(ms)


def _datetime_object(value: _dt.datetime) -> timestamp:
    if value.tzinfo is None:
        raise MappingError(f"datetime {value!r} has no time zone")
    return _timestamp_of_seconds(int(value.timestamp()))  # what the 0-10 wire carries


def _int64_or_uint64(value: int) -> Any:
    # a plain int is int64 on the 0-10 wire, or uint64 when only that fits (the codec's choice)
    if _I64_MIN <= value <= _I64_MAX:
        return value
    if 0 <= value <= _U64_MAX:
        return ulong(value)
    raise MappingError(f"integer {value} does not fit an AMQP 0-10 int64 or uint64")


def _struct_bytes(value: Any) -> bytes:
    out = bytearray()
    t.encode_struct32(out, value)
    return bytes(out[4:])  # struct code + packed fields, without the size


# 0-10 types that map to a 1.0 type mapping back to the same 0-10 type: no record needed.
_DEFAULT: dict[type, Callable[[Any], Any]] = {
    str: str,
    bool: bool,
    float: float,
    bytes: bytes,
    uuid.UUID: lambda v: v,
    type(None): lambda v: None,
    int: _int64_or_uint64,
    t.Int8: byte,
    t.UInt8: ubyte,
    t.Int16: short,
    t.UInt16: ushort,
    t.Int32: int32,
    t.UInt32: uint,
    t.SequenceNo: uint,
    t.Int64: int,
    t.UInt64: ulong,
    t.Float32: float32,
    t.Double: float,
    t.Str16: str,
    t.VBin16: bytes,
    t.CharUTF32: char,  # nested; a top-level header records "char-utf32" (header_to_amqp10)
    t.Datetime: _timestamp_of_seconds,
    _dt.datetime: _datetime_object,
}

# 0-10 types with no distinct 1.0 type: (type name, 1.0 representation).
_RECORDED: dict[type, tuple[str, Callable[[Any], Any]]] = {
    t.Char: ("char", char),
    t.Str8: ("str8", str),
    t.Str8Latin: ("str8-latin", str),
    t.Str8UTF16: ("str8-utf16", str),
    t.Str16Latin: ("str16-latin", str),
    t.Str16UTF16: ("str16-utf16", str),
    t.VBin8: ("vbin8", bytes),
    t.VBin32: ("vbin32", bytes),  # only up to 65535 octets; longer is the default (see below)
    t.Dec32: ("dec32", str),
    t.Dec64: ("dec64", str),
}
for _bin in (
    t.Bin8,
    t.Bin16,
    t.Bin32,
    t.Bin64,
    t.Bin128,
    t.Bin256,
    t.Bin512,
    t.Bin1024,
    t.Bin40,
    t.Bin72,
):
    _RECORDED[_bin] = (t.TYPE_NAMES[_bin.CODE], bytes)

_NESTED_TYPES = (dict, list, t.Array)


# canonical class of each default type code, for subclasses of the plain types (IntEnum ...)
_CANONICAL = {
    0x08: bool,
    0x31: int,
    0x32: t.UInt64,
    0x33: float,
    0x95: str,
    0x90: bytes,
    0x48: uuid.UUID,
}


def header_to_amqp10(value: Any) -> tuple[Any, str | None]:
    """A top-level 0-10 header value as a 1.0 simple value, and the 0-10 type name to record.

    The name is ``None`` when the 1.0 value maps back to the same 0-10 type.
    Maps, lists and arrays are not simple: use :func:`nested_to_amqp10`.
    """
    kind = type(value)
    convert = _DEFAULT.get(kind)
    if convert is not None:
        if kind is t.CharUTF32:
            return char(value), "char-utf32"  # a 1.0 char property goes back as a string
        return convert(value), None
    recorded = _RECORDED.get(kind)
    if recorded is not None:
        if kind is t.VBin32 and len(value) > _STR16_MAX:
            return bytes(value), None  # binary this long is vbin32 by default
        return recorded[1](value), recorded[0]
    if getattr(value, "CODE", None) is not None and hasattr(value, "encode_fields"):
        return _struct_bytes(value), "struct32"
    if isinstance(value, Decimal):
        raise MappingError("a Decimal of unknown AMQP 0-10 width (send Dec32 or Dec64)")
    try:
        canonical = _CANONICAL.get(t.type_code_of(value))
    except CodecError:
        canonical = None
    if canonical is None or isinstance(value, _NESTED_TYPES):
        raise MappingError(f"no AMQP 1.0 mapping for a {kind.__name__} value")
    return header_to_amqp10(canonical(value))


# 0-10 array element type code -> proton array type and element constructor
_NATIVE_ARRAYS: dict[int, tuple[int, Callable[[Any], Any]]] = {
    0x01: (Data.BYTE, byte),
    0x02: (Data.UBYTE, ubyte),
    0x08: (Data.BOOL, bool),
    0x11: (Data.SHORT, short),
    0x12: (Data.USHORT, ushort),
    0x21: (Data.INT, int32),
    0x22: (Data.UINT, uint),
    0x23: (Data.FLOAT, float32),
    0x27: (Data.CHAR, char),
    0x31: (Data.LONG, int),
    0x32: (Data.ULONG, ulong),
    0x33: (Data.DOUBLE, float),
    0x38: (Data.TIMESTAMP, _timestamp_of_seconds),
    0x48: (Data.UUID, lambda v: v),
    0x90: (Data.BINARY, bytes),
    0x95: (Data.STRING, str),
}
_NATIVE_ARRAY_CODES = {amqp10_type: code for code, (amqp10_type, _) in _NATIVE_ARRAYS.items()}
# the class proton decodes each array element type to
_ELEMENT_CLASSES: dict[int, type] = {
    Data.BYTE: byte, Data.UBYTE: ubyte, Data.BOOL: bool, Data.SHORT: short, Data.USHORT: ushort,
    Data.INT: int32, Data.UINT: uint, Data.FLOAT: float32, Data.CHAR: char, Data.LONG: int,
    Data.ULONG: ulong, Data.DOUBLE: float, Data.TIMESTAMP: timestamp, Data.UUID: uuid.UUID,
    Data.BINARY: bytes, Data.STRING: str,
}  # fmt: skip


def _tag(name: str) -> symbol:
    return symbol(TAG_PREFIX + name)


_TAGS: dict[str, symbol] = {name: _tag(name) for name in t.TYPE_NAMES.values()}


def nested_to_amqp10(value: Any) -> Any:
    """A 0-10 value inside a map, list or array (or a whole map/list) as a 1.0 value.

    Maps keep string keys; a value with no distinct 1.0 type is tagged as
    ``Described(symbol("x-amqp-0-10:<type>"), <1.0 value>)``; an array whose
    element type 1.0 arrays lack becomes
    ``Described(symbol("x-amqp-0-10:array:<type>"), [<1.0 values>])``.
    """
    kind = type(value)
    if kind is str or kind is bool or kind is float or value is None or kind is uuid.UUID:
        return value
    if kind is dict:
        return {key: nested_to_amqp10(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [nested_to_amqp10(item) for item in value]
    if kind is t.Array:
        return _array_to_amqp10(value)
    if kind is t.CharUTF32:
        return char(value)  # inside maps and lists a char stays a char-utf32 (no tag)
    converted, name = header_to_amqp10(value)
    return converted if name is None else Described(_TAGS.get(name) or _tag(name), converted)


def _array_to_amqp10(value: t.Array) -> Any:
    native = _NATIVE_ARRAYS.get(value.type_code)
    if native is not None:
        amqp10_type, element = native
        return Amqp10Array(UNDESCRIBED, amqp10_type,  # type: ignore[arg-type]  # proton's stub
                           *[element(item) for item in value])
    if value.type_code in (0xA8, 0xA9):
        return Amqp10Array(
            UNDESCRIBED,  # type: ignore[arg-type]  # proton's stub types the descriptor narrowly
            Data.MAP if value.type_code == 0xA8 else Data.LIST,
            *[nested_to_amqp10(item) for item in value],
        )
    name = t.TYPE_NAMES.get(value.type_code)
    if name is None:
        raise MappingError(f"unknown AMQP 0-10 array element type {value.type_code:#04x}")
    items = [_array_item_to_amqp10(item) for item in value]
    return Described(symbol(f"{TAG_PREFIX}array:{name}"), items)


def _array_item_to_amqp10(item: Any) -> Any:
    # the element type is in the array's tag, so items go untagged (nested ones converted)
    if isinstance(item, _NESTED_TYPES):
        return nested_to_amqp10(item)
    return header_to_amqp10(item)[0]


# --- AMQP 1.0 -> AMQP 0-10 ---------------------------------------------------------------------


def _utf8_longer(value: str, limit: int) -> bool:
    # a character takes at most 4 UTF-8 octets: only long strings need encoding to check
    return len(value) * 4 > limit and len(value.encode("utf-8")) > limit


def _checked_str(value: str) -> str:
    if _utf8_longer(value, _STR16_MAX):
        raise Unrepresentable(
            "a string longer than 65535 UTF-8 octets does not fit an AMQP 0-10 str16"
        )
    return str(value)


def _binary(value: bytes) -> bytes:
    return bytes(value) if len(value) <= _STR16_MAX else t.VBin32(value)


def _long(value: int) -> int:
    if not _I64_MIN <= value <= _I64_MAX:
        raise Unrepresentable(f"integer {value} does not fit an AMQP 1.0 long")
    return int(value)


def _whole_seconds(value: int) -> t.Datetime:
    if value % 1000:
        raise Unrepresentable(f"timestamp {int(value)} ms is not a whole second")
    return t.Datetime(value // 1000)


# 1.0 types with an exact 0-10 type (both directions restore the type)
_EXACT: dict[type, Callable[[Any], Any]] = {
    str: _checked_str,
    bool: bool,
    float: float,
    bytes: _binary,
    uuid.UUID: lambda v: v,
    type(None): lambda v: None,
    int: _long,
    byte: t.Int8,
    ubyte: t.UInt8,
    short: t.Int16,
    ushort: t.UInt16,
    int32: t.Int32,
    uint: t.UInt32,
    ulong: t.UInt64,
    float32: t.Float32,
    char: t.CharUTF32,
    timestamp: _whole_seconds,
}


def _symbol_value(value: symbol) -> str:
    return _checked_str(value)


def _timestamp_ms(value: timestamp) -> int:
    return int(value)


# 1.0 simple types 0-10 lacks: (type name, 0-10 representation)
_TYPED: dict[type, tuple[str, Callable[[Any], Any]]] = {
    symbol: ("symbol", _symbol_value),
    decimal32: ("decimal32", lambda v: t.Bin32(int(v).to_bytes(4, "big"))),
    decimal64: ("decimal64", lambda v: t.Bin64(int(v).to_bytes(8, "big"))),
    decimal128: ("decimal128", lambda v: t.Bin128(bytes(v))),
}

PROPERTY_TYPE_NAMES = frozenset(
    {"symbol", "timestamp", "decimal32", "decimal64", "decimal128", "char", "binary"}
)
"""Names :func:`property_from_amqp10` records (``binary``: the app-id, see the field rules)."""


def property_from_amqp10(value: Any) -> tuple[Any, str | None]:
    """A 1.0 application-property value as a 0-10 header value, and the 1.0 type name to record.

    The name is ``None`` when the 0-10 value maps back to the same 1.0 type.
    Raises :class:`MappingError` for values that are not AMQP 1.0 simple values
    or do not fit 0-10 (strings over 65535 UTF-8 octets).
    """
    kind = type(value)
    if kind is char:
        # a one-character string: 0-10 clients cannot decode char-utf32 (qpid-python's
        # session stalls on it, qpidd closes the connection)
        return str(value), "char"
    try:
        convert = _EXACT.get(kind)
        if convert is not None:
            if kind is timestamp and value % 1000:
                return int(value), "timestamp"
            return convert(value), None
        typed = _TYPED.get(kind)
        if typed is not None:
            name, convert = typed
            return convert(value), name
    except Unrepresentable as exc:
        raise MappingError(str(exc)) from None
    if kind in (list, dict, tuple, Described, Amqp10Array):
        raise MappingError(
            f"AMQP 1.0 application-properties hold simple values, not {kind.__name__} (1.0 §3.2.5)"
        )
    raise MappingError(f"no AMQP 0-10 mapping for a {kind.__name__} value")


def nested_from_amqp10(value: Any) -> Any:
    """Exact inverse of :func:`nested_to_amqp10` (strict).

    Raises :class:`Unrepresentable` for anything :func:`nested_to_amqp10` never
    produces (symbols, decimals, sub-second timestamps, non-string map keys,
    unknown descriptors ...), so the caller can fall back to another form.
    """
    kind = type(value)
    convert = _EXACT.get(kind)
    if convert is not None:
        return convert(value)
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise Unrepresentable(f"map key {key!r} is not a string")
            if _utf8_longer(key, _STR8_MAX):
                raise Unrepresentable("map key longer than 255 UTF-8 octets")
            out[key] = nested_from_amqp10(item)
        return out
    if kind is list:
        return [nested_from_amqp10(item) for item in value]
    if kind is Amqp10Array:
        return _array_from_amqp10(value)
    if kind is Described:
        return _described_from_amqp10(value)
    raise Unrepresentable(f"a {kind.__name__} value has no exact AMQP 0-10 form")


def _array_from_amqp10(value: Amqp10Array) -> t.Array:
    if value.descriptor is not UNDESCRIBED:
        raise Unrepresentable("described arrays have no AMQP 0-10 form")
    kind = value.type
    if kind == Data.MAP or kind == Data.LIST:
        wanted = dict if kind == Data.MAP else list
        items = [nested_from_amqp10(item) for item in value.elements]
        if any(type(item) is not wanted for item in items):
            raise Unrepresentable("array element of the wrong type")
        return t.Array(0xA8 if kind == Data.MAP else 0xA9, items)
    code = _NATIVE_ARRAY_CODES.get(kind)
    if code is None:
        raise Unrepresentable(f"AMQP 1.0 arrays of type {kind} have no AMQP 0-10 form")
    element_class = _ELEMENT_CLASSES[kind]
    convert = _EXACT[element_class]
    items = []
    for item in value.elements:
        if type(item) is not element_class:
            raise Unrepresentable(f"array element {item!r} does not match the array type")
        items.append(convert(item))
    if code == 0x90 and any(type(item) is not bytes for item in items):
        raise Unrepresentable("a vbin16 array element is longer than 65535 octets")
    return t.Array(code, items)


def _described_from_amqp10(value: Described) -> Any:
    descriptor = value.descriptor
    if type(descriptor) is not symbol or not descriptor.startswith(TAG_PREFIX):
        raise Unrepresentable("described values other than x-amqp-0-10 tags have no AMQP 0-10 form")
    name = descriptor[len(TAG_PREFIX) :]
    if name.startswith("array:"):
        return _tagged_array(name[6:], value.value)
    if name not in HEADER_TYPE_NAMES or name == "char-utf32":  # never a tag: see nested_to_amqp10
        raise Unrepresentable(f"unknown tag {descriptor}")
    return apply_header_type(name, value.value)


def _tagged_array(name: str, items: Any) -> t.Array:
    code = _CODE_OF_NAME.get(name)
    if code is None or code in _NATIVE_ARRAYS or code in (0xA8, 0xA9) or type(items) is not list:
        raise Unrepresentable(f"not an x-amqp-0-10 array of {name}")
    if code == 0xAA:
        converted = [nested_from_amqp10(item) for item in items]
        if any(type(item) is not t.Array for item in converted):
            raise Unrepresentable("array of arrays holds a non-array")
        return t.Array(code, converted)
    return t.Array(code, [_array_item_from_amqp10(code, name, item) for item in items])


def _array_item_from_amqp10(code: int, name: str, item: Any) -> Any:
    if code == 0xA0 and type(item) is bytes:  # the array says vbin32: any length
        return t.VBin32(item)
    if name in HEADER_TYPE_NAMES:
        return apply_header_type(name, item)
    # remaining element types: void, boolean-like 'bit', struct32
    if code in (0xF0, 0xF1):
        if item is not (None if code == 0xF0 else True):
            raise Unrepresentable(f"{name} array element {item!r}")
        return item
    raise Unrepresentable(f"arrays of {name} have no exact form")


_CODE_OF_NAME = {name: code for code, name in t.TYPE_NAMES.items()}


# --- recorded types -----------------------------------------------------------------------------


def _text(kind: type[str], codec: str, limit: int) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        if type(value) is not str:
            raise Unrepresentable("not a string")
        try:
            size = len(value.encode(codec))
        except UnicodeEncodeError:
            raise Unrepresentable(f"not encodable as {codec}") from None
        if size > limit:
            raise Unrepresentable(f"{size} octets exceed {limit}")
        return kind(value)

    return apply


def _vbin(kind: type[bytes], low: int, limit: int) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        if type(value) is not bytes or not low <= len(value) <= limit:
            raise Unrepresentable("binary of the wrong size")
        return kind(value)

    return apply


def _fixed(kind: type[t.FixedBinary]) -> Callable[[Any], Any]:
    return _vbin(kind, kind.WIDTH, kind.WIDTH)


def _latin_char(value: Any) -> t.Char:
    if type(value) is not char:
        raise Unrepresentable("not a char")
    try:
        if len(value.encode("iso-8859-15")) != 1:
            raise Unrepresentable("not one ISO-8859-15 character")
    except UnicodeEncodeError:
        raise Unrepresentable("not an ISO-8859-15 character") from None
    return t.Char(value)


def _utf32_char(value: Any) -> t.CharUTF32:
    if type(value) is not char:
        raise Unrepresentable("not a char")
    return t.CharUTF32(value)


def _decimal(kind: type[Decimal], mantissa_bits: int) -> Callable[[Any], Any]:
    limit = 2 ** (mantissa_bits - 1)

    def apply(value: Any) -> Any:
        if type(value) is not str:
            raise Unrepresentable("not a decimal string")
        try:
            number = Decimal(value)
        except InvalidOperation:
            raise Unrepresentable("not a decimal") from None
        sign, digits, exponent = number.as_tuple()
        mantissa = int("".join(map(str, digits)) or "0")
        if (
            str(number) != value
            or not isinstance(exponent, int)
            or not -255 <= exponent <= 0
            or not -limit <= (-mantissa if sign else mantissa) < limit
        ):
            raise Unrepresentable(f"{value!r} is not a canonical {kind.__name__}")
        return kind(number)

    return apply


def _struct32(value: Any) -> Any:
    if type(value) is not bytes:
        raise Unrepresentable("not binary")
    try:
        struct = t.decode_struct_body(value, 0)
    except CodecError:
        raise Unrepresentable("not an AMQP 0-10 struct") from None
    if _struct_bytes(struct) != value:
        raise Unrepresentable("not a canonical AMQP 0-10 struct")
    return struct


_APPLY_HEADER_TYPE: dict[str, Callable[[Any], Any]] = {
    "char": _latin_char,
    "char-utf32": _utf32_char,
    "str8": _text(t.Str8, "utf-8", _STR8_MAX),
    "str8-latin": _text(t.Str8Latin, "iso-8859-15", _STR8_MAX),
    "str8-utf16": _text(t.Str8UTF16, "utf-16-be", _STR8_MAX),
    "str16-latin": _text(t.Str16Latin, "iso-8859-15", _STR16_MAX),
    "str16-utf16": _text(t.Str16UTF16, "utf-16-be", _STR16_MAX),
    "vbin8": _vbin(t.VBin8, 0, _STR8_MAX),
    "vbin32": _vbin(t.VBin32, 0, _STR16_MAX),
    "dec32": _decimal(t.Dec32, 32),
    "dec64": _decimal(t.Dec64, 64),
    "struct32": _struct32,
}
for _bin in (
    t.Bin8,
    t.Bin16,
    t.Bin32,
    t.Bin64,
    t.Bin128,
    t.Bin256,
    t.Bin512,
    t.Bin1024,
    t.Bin40,
    t.Bin72,
):
    _APPLY_HEADER_TYPE[t.TYPE_NAMES[_bin.CODE]] = _fixed(_bin)

HEADER_TYPE_NAMES = frozenset(_APPLY_HEADER_TYPE)
"""The 0-10 type names :func:`header_to_amqp10` records."""


def apply_header_type(name: str, value: Any) -> Any:
    """The 0-10 value of recorded type ``name`` whose 1.0 form is ``value``.

    Raises :class:`Unrepresentable` unless ``value`` is exactly what
    :func:`header_to_amqp10` produces for a value of that type.
    """
    apply = _APPLY_HEADER_TYPE.get(name)
    if apply is None:
        raise Unrepresentable(f"unknown AMQP 0-10 type name {name!r}")
    return apply(value)


def _symbol_of(value: Any) -> symbol:
    if type(value) is not str or not value.isascii():
        raise Unrepresentable("not an ASCII string")
    return symbol(value)


def _timestamp_of(value: Any) -> timestamp:
    if type(value) is not int or not value % 1000 or not _I64_MIN <= value <= _I64_MAX:
        raise Unrepresentable("not a sub-second millisecond count")
    return timestamp(value)


def _char_of(value: Any) -> char:
    if type(value) is not str or len(value) != 1:
        raise Unrepresentable("not a one-character string")
    return char(value)


def _decimal_of(kind: Callable[[int], Any], bin_type: type[bytes]) -> Callable[[Any], Any]:
    def apply(value: Any) -> Any:
        if type(value) is not bin_type:
            raise Unrepresentable(f"not a {bin_type.__name__}")
        return kind(int.from_bytes(value, "big"))

    return apply


def _decimal128_of(value: Any) -> decimal128:
    if type(value) is not t.Bin128:
        raise Unrepresentable("not a Bin128")
    return decimal128(bytes(value))


_APPLY_PROPERTY_TYPE: dict[str, Callable[[Any], Any]] = {
    "symbol": _symbol_of,
    "timestamp": _timestamp_of,
    "decimal32": _decimal_of(decimal32, t.Bin32),
    "decimal64": _decimal_of(decimal64, t.Bin64),
    "decimal128": _decimal128_of,
    "char": _char_of,
}


def apply_property_type(name: str, value: Any) -> Any:
    """The 1.0 value of recorded type ``name`` whose 0-10 form is ``value``.

    Raises :class:`Unrepresentable` unless ``value`` is exactly what
    :func:`property_from_amqp10` produces for a value of that type.
    """
    apply = _APPLY_PROPERTY_TYPE.get(name)
    if apply is None:
        raise Unrepresentable(f"unknown AMQP 1.0 type name {name!r}")
    return apply(value)
