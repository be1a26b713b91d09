"""AMQP 0-10 <-> 1.0 value conversion (mappings.amqp010_values).

Also home of the typed comparisons and 0-10 value strategies the other
``test_amqp010_*`` modules import: ``==`` alone cannot catch a lost type
(``Int8(5) == 5``, ``ubyte(5) == 5``), so every comparison goes through
:func:`typed10` / :func:`typed1`, which pair each value with its wire type.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import fields
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from proton import (
    UNDESCRIBED,
    Array,
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

from amqp010 import types as t
from amqp010.spec import DeliveryProperties
from mappings.amqp010_values import (
    Unrepresentable,
    apply_header_type,
    apply_property_type,
    header_to_amqp10,
    nested_from_amqp10,
    nested_to_amqp10,
    property_from_amqp10,
)
from mappings.errors import MappingError
from mappings.message import AmqpMessage, Header, Properties

# --- typed comparisons ----------------------------------------------------------------------------


def wire_code(value: Any) -> int:
    """The type code the 0-10 encoder writes for ``value`` (plain values by size)."""
    if type(value) is int and not -(2**63) <= value < 2**63:
        return 0x32
    if type(value) is bytes and len(value) > 0xFFFF:
        return 0xA0
    return t.type_code_of(value)


def typed10(value: Any) -> Any:
    """A hashable form of a 0-10 value that differs whenever wire type or value differs."""
    if hasattr(value, "FIELDS"):  # a struct
        return (
            type(value).__name__,
            tuple((f.attr, typed10(getattr(value, f.attr))) for f in value.FIELDS),
        )
    if isinstance(value, t.Array):
        return ("array", value.type_code, tuple(typed10(item) for item in value))
    if isinstance(value, dict):
        return ("map", frozenset((key, typed10(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return ("list", tuple(typed10(item) for item in value))
    if isinstance(value, float):
        return (wire_code(value), struct.pack(">d", value))
    if isinstance(value, Decimal):
        return (wire_code(value), str(value))
    return (wire_code(value), value)


def typed1(value: Any) -> Any:
    """A hashable form of an AMQP 1.0 value that differs whenever type or value differs."""
    kind = type(value)
    if kind is dict:
        return ("map", frozenset((typed1(key), typed1(item)) for key, item in value.items()))
    if kind is list or kind is tuple:
        return ("list", tuple(typed1(item) for item in value))
    if kind is Array:
        descriptor = None if value.descriptor is UNDESCRIBED else typed1(value.descriptor)
        return ("array", descriptor, value.type, tuple(typed1(item) for item in value.elements))
    if kind is Described:
        return ("described", typed1(value.descriptor), typed1(value.value))
    if kind is float or kind is float32:
        return (kind.__name__, struct.pack(">d", value))
    return (kind.__name__, value)


def typed_message(message: AmqpMessage) -> Any:
    """Every section of an AmqpMessage in typed form."""
    return (
        tuple(typed1(getattr(message.header, f.name)) for f in fields(Header)),
        typed1(message.delivery_annotations),
        typed1(message.message_annotations),
        tuple(typed1(getattr(message.properties, f.name)) for f in fields(Properties)),
        typed1(message.application_properties),
        message.body_kind,
        typed1(message.body),
        typed1(message.footer),
    )


# --- 0-10 value strategies ------------------------------------------------------------------------

LATIN15 = [
    c for c in map(chr, range(0x20, 0x100)) if len(c.encode("iso-8859-15", "ignore")) == 1
] + ["€", "Š"]
latin15_text = st.text(st.sampled_from(LATIN15), max_size=10)
text = st.text(max_size=10)
int64s = st.integers(-(2**63), 2**63 - 1)
datetimes = st.integers(-(2**63) // 1000 + 1, (2**63 - 1) // 1000).map(t.Datetime)


def _ranged(kind: type, bits: int, signed: bool) -> st.SearchStrategy:
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    return st.integers(low, high).map(kind)


def _decimals(kind: type, bits: int) -> st.SearchStrategy:
    return st.builds(
        lambda mantissa, exponent: kind(Decimal(mantissa).scaleb(-exponent)),
        st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1),
        st.integers(0, 255),
    )


BINS = [
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
]

ELEMENTS: dict[int, st.SearchStrategy] = {
    0x01: _ranged(t.Int8, 8, True),
    0x02: _ranged(t.UInt8, 8, False),
    0x08: st.booleans(),
    0x11: _ranged(t.Int16, 16, True),
    0x12: _ranged(t.UInt16, 16, False),
    0x21: _ranged(t.Int32, 32, True),
    0x22: _ranged(t.UInt32, 32, False),
    0x23: st.floats(width=32, allow_nan=False).map(t.Float32),
    0x27: st.characters(exclude_categories=("Cs",)).map(t.CharUTF32),
    0x31: int64s,
    0x32: _ranged(t.UInt64, 64, False),
    0x33: st.floats(allow_nan=False),
    0x38: datetimes,
    0x48: st.uuids(),
    0x90: st.binary(max_size=12),
    0x95: text,
    0x04: st.sampled_from(LATIN15).map(t.Char),
    0x80: st.binary(max_size=12).map(t.VBin8),
    0x84: latin15_text.map(t.Str8Latin),
    0x85: text.map(t.Str8),
    0x86: text.map(t.Str8UTF16),
    0x94: latin15_text.map(t.Str16Latin),
    0x96: text.map(t.Str16UTF16),
    0xA0: st.binary(max_size=12).map(t.VBin32),
    0xF0: st.none(),
    0xAB: st.builds(
        DeliveryProperties,
        priority=st.none() | st.integers(0, 9),
        routing_key=st.none() | st.text(max_size=8),
    ),
    **{kind.CODE: st.binary(min_size=kind.WIDTH, max_size=kind.WIDTH).map(kind) for kind in BINS},
}
DECIMAL_ELEMENTS = {0xC8: _decimals(t.Dec32, 32), 0xD8: _decimals(t.Dec64, 64)}


def scalars010(*, decimals: bool = True) -> st.SearchStrategy:
    """Every 0-10 scalar type (decimals optional: the codec decodes them untyped, see docs)."""
    elements = {**ELEMENTS, **(DECIMAL_ELEMENTS if decimals else {})}
    return st.one_of(*elements.values())


def values010(*, decimals: bool = True) -> st.SearchStrategy:
    """Any 0-10 value: scalars, maps, lists and arrays of every element type, nested."""
    codes = sorted({**ELEMENTS, **(DECIMAL_ELEMENTS if decimals else {})})
    leaves = scalars010(decimals=decimals)

    def arrays(code: int) -> st.SearchStrategy:
        elements = {**ELEMENTS, **DECIMAL_ELEMENTS}[code]
        return st.lists(elements, max_size=3).map(lambda items: t.Array(code, items))

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        return st.one_of(
            st.dictionaries(text, children, max_size=3),
            st.lists(children, max_size=3),
            st.lists(st.dictionaries(text, children, max_size=2), max_size=2).map(
                lambda m: t.Array(0xA8, m)
            ),
            st.lists(st.lists(children, max_size=2), max_size=2).map(lambda m: t.Array(0xA9, m)),
        )

    array_leaves = st.sampled_from(codes).flatmap(arrays)
    nested_arrays = st.lists(array_leaves, max_size=2).map(lambda items: t.Array(0xAA, items))
    return st.recursive(st.one_of(leaves, array_leaves, nested_arrays), extend, max_leaves=10)


def wire_map(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` after a trip through the 0-10 map encoding (the codec's own value types)."""
    out = bytearray()
    t.encode_map(out, value)
    decoded, _ = t.decode_map(bytes(out))
    return decoded


# --- tests: 0-10 -> 1.0 -> 0-10 -------------------------------------------------------------------


@given(values010())
def test_nested_round_trip_is_exact(value: Any) -> None:
    converted = nested_to_amqp10({"k": value})
    assert typed10(nested_from_amqp10(converted)) == typed10({"k": value})


@given(st.dictionaries(text, values010(decimals=False), max_size=4))
def test_nested_values_are_valid_amqp10(value: dict[str, Any]) -> None:
    """What nested_to_amqp10 makes survives the 1.0 codec unchanged (no lossy proton coercions)."""
    converted = nested_to_amqp10(wire_map(value))
    message = AmqpMessage(message_annotations={symbol("x"): converted})
    decoded = AmqpMessage.decode(message.encode()).message_annotations[symbol("x")]
    assert typed1(decoded) == typed1(converted)
    assert typed10(nested_from_amqp10(decoded)) == typed10(wire_map(value))


@given(scalars010())
def test_header_round_trip_through_the_recorded_type(value: Any) -> None:
    converted, name = header_to_amqp10(value)
    back = (
        property_from_amqp10(converted)[0] if name is None else apply_header_type(name, converted)
    )
    assert typed10(back) == typed10(value)


# (0-10 value, 1.0 value, recorded type name)
HEADER_CASES = [
    (t.Int8(-5), byte(-5), None),
    (t.UInt8(250), ubyte(250), None),
    (t.Int16(-300), short(-300), None),
    (t.UInt16(65535), ushort(65535), None),
    (t.Int32(-(2**31)), int32(-(2**31)), None),
    (t.UInt32(2**32 - 1), uint(2**32 - 1), None),
    (-(2**63), -(2**63), None),
    (2**64 - 1, ulong(2**64 - 1), None),
    (t.UInt64(7), ulong(7), None),
    (t.Float32(1.5), float32(1.5), None),
    (2.25, 2.25, None),
    (True, True, None),
    (None, None, None),
    (uuid.UUID(int=5), uuid.UUID(int=5), None),
    (t.Datetime(1795302455), timestamp(1795302455000), None),
    ("snow ☃", "snow ☃", None),
    (b"\x00\xff", b"\x00\xff", None),
    (t.VBin32(b"x" * 70000), b"x" * 70000, None),
    (t.CharUTF32("☃"), char("☃"), "char-utf32"),  # a 1.0 char goes to 0-10 as a string
    (t.Char("é"), char("é"), "char"),
    (t.Str8("s"), "s", "str8"),
    (t.Str8Latin("é"), "é", "str8-latin"),
    (t.Str8UTF16("s"), "s", "str8-utf16"),
    (t.Str16Latin("é"), "é", "str16-latin"),
    (t.Str16UTF16("s"), "s", "str16-utf16"),
    (t.VBin8(b"v"), b"v", "vbin8"),
    (t.VBin32(b"v"), b"v", "vbin32"),
    (t.Bin32(b"abcd"), b"abcd", "bin32"),
    (t.Bin72(bytes(9)), bytes(9), "bin72"),
    (t.Dec32(Decimal("-1.50")), "-1.50", "dec32"),
    (t.Dec64(Decimal("1E-200")), "1E-200", "dec64"),
    (DeliveryProperties(priority=5), bytes.fromhex("04010800") + b"\x05", "struct32"),
]


@pytest.mark.parametrize(("value", "expected", "name"), HEADER_CASES, ids=lambda v: repr(v)[:20])
def test_header_to_amqp10(value: Any, expected: Any, name: str | None) -> None:
    assert header_to_amqp10(value) == (expected, name)
    assert typed1(header_to_amqp10(value)[0]) == typed1(expected)


def test_header_values_without_amqp10_form() -> None:
    with pytest.raises(MappingError, match="unknown AMQP 0-10 width"):
        header_to_amqp10(Decimal("1.5"))  # what the codec decodes dec32/dec64 to today
    with pytest.raises(MappingError, match="timestamp range"):
        header_to_amqp10(t.Datetime(2**62))
    with pytest.raises(MappingError, match=r"no AMQP 1\.0 mapping for a object"):
        header_to_amqp10(object())


def test_nested_char_utf32_is_an_untagged_char() -> None:
    """Only a top-level header records char-utf32; inside maps a 1.0 char is char-utf32."""
    value = {"c": t.CharUTF32("☃"), "l": [t.CharUTF32("x")]}
    assert typed1(nested_to_amqp10(value)) == typed1({"c": char("☃"), "l": [char("x")]})
    assert typed10(nested_from_amqp10(nested_to_amqp10(value))) == typed10(value)
    with pytest.raises(Unrepresentable):
        nested_from_amqp10(Described(symbol("x-amqp-0-10:char-utf32"), char("☃")))


@pytest.mark.parametrize("value", ["", "ab", t.Str8("a"), char("a")])
def test_recorded_char_needs_a_one_character_string(value: Any) -> None:
    with pytest.raises(Unrepresentable):
        apply_property_type("char", value)


def test_nested_tags_name_the_0_10_type() -> None:
    value = {"s": t.Str8("x"), "a": t.Array(0x85, [t.Str8("y")]), "n": t.Array(0x21, [t.Int32(1)])}
    assert typed1(nested_to_amqp10(value)) == typed1(
        {
            "s": Described(symbol("x-amqp-0-10:str8"), "x"),
            "a": Described(symbol("x-amqp-0-10:array:str8"), ["y"]),
            "n": Array(UNDESCRIBED, Data.INT, int32(1)),
        }
    )


# --- tests: 1.0 -> 0-10 ---------------------------------------------------------------------------

# (1.0 value, 0-10 value, recorded type name)
PROPERTY_CASES = [
    (symbol("sym"), "sym", "symbol"),
    (timestamp(1795302455688), 1795302455688, "timestamp"),
    (timestamp(1795302455000), t.Datetime(1795302455), None),
    (timestamp(-1), -1, "timestamp"),
    (decimal32(0x3050_0001), t.Bin32(bytes.fromhex("30500001")), "decimal32"),
    (decimal64(1), t.Bin64(bytes.fromhex("0000000000000001")), "decimal64"),
    (decimal128(bytes(range(16))), t.Bin128(bytes(range(16))), "decimal128"),
    (char("☃"), "☃", "char"),  # a str16: 0-10 clients cannot decode char-utf32
    (b"x" * 70000, t.VBin32(b"x" * 70000), None),
    (ulong(3), t.UInt64(3), None),
    (byte(-1), t.Int8(-1), None),
]


@pytest.mark.parametrize(("value", "expected", "name"), PROPERTY_CASES, ids=lambda v: repr(v)[:20])
def test_property_from_amqp10(value: Any, expected: Any, name: str | None) -> None:
    converted, recorded = property_from_amqp10(value)
    assert (typed10(converted), recorded) == (typed10(expected), name)
    restored = (
        header_to_amqp10(converted)[0] if name is None else apply_property_type(name, converted)
    )
    assert typed1(restored) == typed1(value)


@pytest.mark.parametrize(
    "value", [[1], {"a": 1}, Described(symbol("d"), 1), Array(UNDESCRIBED, Data.INT)]
)
def test_properties_must_be_simple(value: Any) -> None:
    with pytest.raises(MappingError, match="simple values"):
        property_from_amqp10(value)


def test_property_limits() -> None:
    with pytest.raises(MappingError, match="65535"):
        property_from_amqp10("☃" * 30000)
    with pytest.raises(MappingError, match="long"):
        property_from_amqp10(2**63)


@pytest.mark.parametrize(
    "value",
    [
        symbol("s"),
        decimal32(1),
        timestamp(1500),
        {symbol("k"): 1},
        {1: 2},
        {"k" * 256: 1},
        Described(symbol("other"), 1),
        Described(symbol("x-amqp-0-10:nope"), 1),
        Described(symbol("x-amqp-0-10:str8"), "☃" * 100),
        Described(symbol("x-amqp-0-10:char"), char("☃")),
        Described(symbol("x-amqp-0-10:dec32"), "1.5000000000000"),
        Described(symbol("x-amqp-0-10:dec32"), " 1.5"),
        Described(symbol("x-amqp-0-10:bin32"), b"abc"),
        Described(symbol("x-amqp-0-10:struct32"), b"\x99\x99\x00\x00"),
        Described(symbol("x-amqp-0-10:array:int32"), [int32(1)]),
        Described(symbol("x-amqp-0-10:array:str8"), "not a list"),
        Array(UNDESCRIBED, Data.SYMBOL, symbol("a")),
        Array(symbol("d"), Data.INT, int32(1)),
        Array(UNDESCRIBED, Data.INT, 1),
        Array(UNDESCRIBED, Data.TIMESTAMP, timestamp(1)),
        "☃" * 30000,
    ],
)
def test_nested_from_amqp10_is_strict(value: Any) -> None:
    """Anything nested_to_amqp10 never produces has no exact 0-10 form (callers fall back)."""
    with pytest.raises(Unrepresentable):
        nested_from_amqp10(value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("symbol", "☃"),
        ("symbol", t.Str8("s")),
        ("timestamp", 2000),
        ("timestamp", t.Int32(1500)),
        ("decimal32", t.Bin64(bytes(8))),
        ("decimal128", b"x" * 16),
        ("binary", b"x"),
    ],
)
def test_stale_property_types_do_not_apply(name: str, value: Any) -> None:
    with pytest.raises(Unrepresentable):
        apply_property_type(name, value)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("str8", symbol("s")),
        ("str8-latin", "☃"),
        ("vbin8", b"x" * 256),
        ("vbin32", b"x" * 70000),
        ("bin8", b""),
        ("dec64", "NaN"),
        ("nope", "x"),
    ],
)
def test_stale_header_types_do_not_apply(name: str, value: Any) -> None:
    with pytest.raises(Unrepresentable):
        apply_header_type(name, value)
