"""Value conversion between AMQP 0-9-1 field-table values and AMQP 1.0 typed values.

The field rules in :mod:`mappings.amqp091` use these functions for the 0-9-1
``headers`` field table. A field-table value on the 0-9-1 side is a Python value
whose type names its 0-9-1 field type:

=====================================  ===========  ============================
Python value                           0-9-1 type   AMQP 1.0 type
=====================================  ===========  ============================
``bool``                               ``t``        boolean
``proton.byte`` / ``ubyte``            ``b`` / B    byte / ubyte
``proton.short`` / ``ushort``          ``s`` / u    short / ushort
``proton.int32`` / ``uint``            ``I`` / i    int / uint
``int`` (plain)                        ``l``        long
``proton.float32`` / ``float``         ``f`` / d    float / double
``decimal.Decimal``                    ``D``        string (recorded)
``str``                                ``S``        string
:class:`LongString` (non-UTF-8 bytes)  ``S``        binary (recorded)
``bytes`` / ``bytearray``              ``x``        binary
``datetime.datetime`` (UTC seconds)    ``T``        timestamp (ms)
``None``                               ``V``        null
``dict`` / ``list``                    ``F`` / A    map / list
=====================================  ===========  ============================

pamqp's own table codec decodes every integer width to ``int`` and encodes
every ``float`` as a 32-bit ``f`` (and pika cannot send floats at all), so a
plain ``int`` / ``float`` here is what pamqp gives: a long / double.

- :func:`header_to_amqp10` / :func:`property_from_amqp10` convert *top-level*
  values and return the type name to record when the default mapping would not
  restore the value's type (``"decimal"``, ``"symbol"`` ...).
- :func:`nested_to_amqp10` / :func:`nested_from_amqp10` convert values inside
  tables and arrays, where nothing can be recorded beside a value: a 0-9-1 value
  with no 1.0 type becomes ``Described(symbol("x-amqp-0-9-1:<type>"), value)``.

What a direction cannot represent raises :class:`Unrepresentable` (callers fall
back to another form) or :class:`~mappings.errors.MappingError`.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from proton import (
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

from mappings.errors import MappingError

__all__ = [
    "HEADER_TYPE_NAMES",
    "PROPERTY_TYPE_NAMES",
    "LongString",
    "Unrepresentable",
    "apply_header_type",
    "apply_property_type",
    "header_to_amqp10",
    "nested_from_amqp10",
    "nested_to_amqp10",
    "property_from_amqp10",
    "seconds_to_datetime",
]


class Unrepresentable(ValueError):
    """A value has no exact form on the other side (the caller picks another form)."""


class LongString(bytes):
    """A 0-9-1 long string (``S``) whose octets are not UTF-8 (pamqp decodes it as bytes)."""


HEADER_TYPE_NAMES = frozenset({"decimal", "longstr"})
"""Types of 0-9-1 headers recorded in ``x-amqp-0-9-1.header-types``."""
PROPERTY_TYPE_NAMES = frozenset(
    {"symbol", "ulong", "uuid", "char", "timestamp", "decimal32", "decimal64", "decimal128"}
)
"""Types of 1.0 application properties recorded in ``x-amqp-1.0.property-types``."""

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MAX_SECONDS = int(
    (_dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=_dt.UTC) - _EPOCH).total_seconds()
)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_INTS = (byte, ubyte, short, ushort, int32, uint)
_AS_THEY_ARE = frozenset((bool, str, float, float32, bytes, *_INTS))
"""1.0 application-property types a 0-9-1 header holds as they are (a set: one hash
lookup per property, where a tuple compared the type with each)."""
_DECIMAL = symbol("x-amqp-0-9-1:decimal")
_LONGSTR = symbol("x-amqp-0-9-1:longstr")
_DECIMAL_SIZES = {decimal32: 4, decimal64: 8, decimal128: 16}


def seconds_to_datetime(seconds: int) -> _dt.datetime:
    """A 0-9-1 timestamp (seconds since the epoch) as the UTC datetime pamqp uses."""
    if not 0 <= seconds <= _MAX_SECONDS:
        raise Unrepresentable(f"{seconds} s is outside the 0-9-1 timestamp range")
    return _EPOCH + _dt.timedelta(seconds=seconds)


def datetime_seconds(value: _dt.datetime) -> int:
    """Whole seconds since the epoch of a datetime (naive means UTC, as pamqp and pika read it)."""
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        value = value.replace(tzinfo=_dt.UTC)
    if value.microsecond:
        raise MappingError(
            f"{value.isoformat()} is not a whole second (0-9-1 timestamps are seconds)"
        )
    return int((value - _EPOCH).total_seconds())


def _decimal_fits(value: Decimal) -> bool:
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        return False
    mantissa = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    scale = -exponent
    if scale < 0:
        mantissa, scale = mantissa * 10**-scale, 0
    return scale <= 255 and -(2**31) <= mantissa < 2**31


def _simple_to_amqp10(value: Any) -> Any:
    """A 0-9-1 value that has the same 1.0 type, converted; ``NotImplemented`` otherwise."""
    kind = type(value)
    if value is None or kind is bool or kind is str or kind is float or kind is float32:
        return value
    if kind in _INTS:
        return value
    if kind is int:
        if not _I64_MIN <= value <= _I64_MAX:
            raise MappingError(f"{value} does not fit a 0-9-1 long-long (l)")
        return value
    if kind is bytes or kind is bytearray:
        return bytes(value)
    if isinstance(value, _dt.datetime):
        return timestamp(datetime_seconds(value) * 1000)
    return NotImplemented


def header_to_amqp10(value: Any) -> tuple[Any, str | None]:
    """(1.0 application-property value, type name to record or None) for a simple header.

    Tables and arrays raise :class:`Unrepresentable` (they cannot be application properties).
    """
    simple = _simple_to_amqp10(value)
    if simple is not NotImplemented:
        return simple, None
    if type(value) is Decimal:
        if not _decimal_fits(value):
            raise MappingError(f"{value} does not fit a 0-9-1 decimal (scale octet, int32)")
        return str(value), "decimal"
    if type(value) is LongString:
        return bytes(value), "longstr"
    if type(value) in (dict, list):
        raise Unrepresentable("nested")
    raise MappingError(f"{type(value).__name__} is not a 0-9-1 field-table value")


def nested_to_amqp10(value: Any) -> Any:
    """The 1.0 value for a 0-9-1 value inside a table or array (or a table/array itself)."""
    kind = type(value)
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:
                raise MappingError(f"table key {key!r:.40} is not a string")
            out[key] = nested_to_amqp10(item)
        return out
    if kind is list:
        return [nested_to_amqp10(item) for item in value]
    simple = _simple_to_amqp10(value)
    if simple is not NotImplemented:
        return simple
    if kind is Decimal:
        converted, _ = header_to_amqp10(value)
        return Described(_DECIMAL, converted)
    if kind is LongString:
        return Described(_LONGSTR, bytes(value))
    raise MappingError(f"{kind.__name__} is not a 0-9-1 field-table value")


def apply_header_type(name: str, value: Any) -> Any:
    """The 0-9-1 header a recorded ``x-amqp-0-9-1.header-types`` entry restores."""
    if name == "decimal" and type(value) is str:
        try:
            restored = Decimal(value)
        except InvalidOperation:
            raise Unrepresentable("not a decimal") from None
        if str(restored) == value and _decimal_fits(restored):
            return restored
    elif name == "longstr" and type(value) is bytes:
        return LongString(value)
    raise Unrepresentable(f"{type(value).__name__} is not a recorded {name}")


def _timestamp_from_amqp10(ms: int) -> _dt.datetime:
    if ms % 1000:
        raise Unrepresentable("not a whole second")
    return seconds_to_datetime(ms // 1000)


def _is_a_datetime(ms: int) -> bool:
    """Whether a 1.0 timestamp travels as a 0-9-1 timestamp (a whole second in its range), so
    that a recorded ``timestamp`` entry holds only the others: a fraction of a second, a time
    before the epoch or beyond the year 9999."""
    try:
        _timestamp_from_amqp10(ms)
    except Unrepresentable:
        return False
    return True


def nested_from_amqp10(value: Any) -> Any:
    """The 0-9-1 value for a 1.0 value inside a map or list (what :func:`nested_to_amqp10` writes)."""
    kind = type(value)
    if value is None or kind in (bool, str, float, float32, bytes, int) or kind in _INTS:
        if kind is int and not _I64_MIN <= value <= _I64_MAX:
            raise Unrepresentable("long out of range")
        return value
    if kind is timestamp:
        return _timestamp_from_amqp10(int(value))
    if kind is dict:
        if not all(type(key) is str for key in value):
            raise Unrepresentable("map key")
        return {key: nested_from_amqp10(item) for key, item in value.items()}
    if kind is list:
        return [nested_from_amqp10(item) for item in value]
    if kind is Described and value.descriptor == _DECIMAL:
        return apply_header_type("decimal", value.value)
    if kind is Described and value.descriptor == _LONGSTR and type(value.value) is bytes:
        return LongString(value.value)
    raise Unrepresentable(f"{kind.__name__} has no 0-9-1 form")


def property_from_amqp10(value: Any) -> tuple[Any, str | None]:
    """(0-9-1 header, type name to record or None) for a 1.0 application-property value."""
    kind = type(value)
    if value is None or kind in _AS_THEY_ARE:
        return value, None
    if kind is int:
        if not _I64_MIN <= value <= _I64_MAX:
            raise MappingError(f"{value} does not fit an AMQP 1.0 long")
        return value, None
    if kind is timestamp:
        try:
            return _timestamp_from_amqp10(int(value)), None
        except Unrepresentable:
            return int(value), "timestamp"
    if kind is symbol:
        return str(value), "symbol"
    if kind is char:
        return str(value), "char"
    if kind is uuid.UUID:
        return str(value), "uuid"
    if kind is ulong:
        return str(int(value)), "ulong"
    if kind is decimal128:
        return bytes(value), "decimal128"
    if kind in _DECIMAL_SIZES:
        return int(value).to_bytes(_DECIMAL_SIZES[kind], "big"), kind.__name__
    raise MappingError(
        f"{kind.__name__} is not a simple AMQP 1.0 value (application properties hold simple values)"
    )


def apply_property_type(name: str, value: Any) -> Any:
    """The 1.0 application property a recorded ``x-amqp-1.0.property-types`` entry restores."""
    kind = type(value)
    if kind is str:
        if name == "symbol" and value.isascii():
            return symbol(value)
        if name == "char" and len(value) == 1:
            return char(value)
        if name == "uuid":
            try:
                restored = uuid.UUID(value)
            except ValueError:
                raise Unrepresentable("not a uuid") from None
            if str(restored) == value:
                return restored
        if (
            name == "ulong"
            and value.isascii()
            and value.isdigit()
            and str(int(value)) == value
            and int(value) < 2**64
        ):
            return ulong(int(value))
    elif kind is int and name == "timestamp" and not _is_a_datetime(value):
        return timestamp(value)
    elif kind is bytes:
        for decimal_type, size in _DECIMAL_SIZES.items():
            if name == decimal_type.__name__ and len(value) == size:
                if decimal_type is decimal128:
                    return decimal128(value)
                return decimal_type(int.from_bytes(value, "big"))
    raise Unrepresentable(f"{kind.__name__} {value!r:.40} is not a recorded {name}")
