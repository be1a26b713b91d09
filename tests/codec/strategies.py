"""Hypothesis strategies for AMQP 0-10 values: one per wire type and per type code.

* :data:`TYPE_CODE_VALUES` -- for each self-describing type code, Python values that
  encode with exactly that code inside a map, list or array;
* :func:`typed_values` -- nested maps/lists/arrays/struct32 of all of them;
* :func:`field_values` -- values for a struct/control/command field, chosen by the
  field's resolved wire type (``FieldSpec.type``);
* :func:`instances` -- instances of any generated class with random fields.
"""

from __future__ import annotations

import inspect
from decimal import Decimal
from functools import cache
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from amqp010 import spec
from amqp010 import types as T
from amqp010.base import Command, Control, Struct

# Deterministic runs (CI must not flake), no deadline (first calls warm caches).
FAST = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def examples(n: int) -> settings:
    return settings(FAST, max_examples=n)


# --- every generated class -------------------------------------------------------------------


def _generated() -> list[type[Struct]]:
    found = [c for _, c in inspect.getmembers(spec, inspect.isclass)
             if issubclass(c, Struct) and c.__module__ == spec.__name__]
    return sorted(found, key=lambda c: c.NAME)


ALL_CLASSES: list[type[Struct]] = _generated()
STRUCTS = [c for c in ALL_CLASSES if not issubclass(c, (Control, Command))]
CONTROLS = [c for c in ALL_CLASSES if issubclass(c, Control)]
COMMANDS = [c for c in ALL_CLASSES if issubclass(c, Command)]
CODED_STRUCTS = [c for c in STRUCTS if c.CODE is not None]
SIZED_STRUCTS = [c for c in STRUCTS if c.SIZE_WIDTH]
HEADER_STRUCTS = [spec.DeliveryProperties, spec.FragmentProperties, spec.MessageProperties]


# --- scalars -------------------------------------------------------------------------------------

LATIN = bytes(range(256)).decode("iso-8859-15")
UNICODE = st.characters(codec="utf-8")  # every code point except surrogates


def ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    # bias towards the edges of the range, where encodings break
    return st.one_of(st.integers(lo, hi), st.sampled_from(sorted({lo, lo + 1, 0 if lo <= 0 <= hi
                                                                 else lo, hi - 1, hi})))


U8, U16, U32, U64 = ints(0, 0xFF), ints(0, 0xFFFF), ints(0, 0xFFFF_FFFF), ints(0, 2**64 - 1)
I64 = ints(-(2**63), 2**63 - 1)


def utf8_text(max_octets: int) -> st.SearchStrategy[str]:
    """Text whose UTF-8 encoding fits ``max_octets``, sometimes right at the limit."""
    short = st.text(UNICODE, max_size=min(max_octets // 4, 40))
    if max_octets > 300:
        return short
    at_limit = st.text(st.characters(max_codepoint=0x7F), min_size=max_octets - 2,
                       max_size=max_octets)
    multibyte = st.text(st.sampled_from("\u00e9\u20ac\U0001F600"), max_size=max_octets // 4)
    return st.one_of(short, at_limit, multibyte)


def utf16_text(max_octets: int) -> st.SearchStrategy[str]:
    return st.text(UNICODE, max_size=min(max_octets // 4, 40))


def latin_text(max_octets: int) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(LATIN), max_size=min(max_octets, 300))


def fixed_binary(cls: type[T.FixedBinary]) -> st.SearchStrategy[Any]:
    return st.binary(min_size=cls.WIDTH, max_size=cls.WIDTH).map(cls)


def decimals(cls: type[Decimal], mantissa_bits: int) -> st.SearchStrategy[Decimal]:
    lo, hi = -(2 ** (mantissa_bits - 1)), 2 ** (mantissa_bits - 1) - 1
    return st.builds(lambda m, e: cls(Decimal(m).scaleb(-e)), ints(lo, hi), ints(0, 255))


BINARY = st.binary(max_size=300)

TYPE_CODE_VALUES: dict[int, st.SearchStrategy[Any]] = {
    0x00: fixed_binary(T.Bin8),
    0x01: ints(-128, 127).map(T.Int8),
    0x02: U8.map(T.UInt8),
    0x04: st.sampled_from(LATIN).map(T.Char),
    0x08: st.booleans(),
    0x10: fixed_binary(T.Bin16),
    0x11: ints(-(2**15), 2**15 - 1).map(T.Int16),
    0x12: U16.map(T.UInt16),
    0x20: fixed_binary(T.Bin32),
    0x21: ints(-(2**31), 2**31 - 1).map(T.Int32),
    0x22: U32.map(T.UInt32),
    0x23: st.floats(width=32, allow_nan=False).map(T.Float32),
    0x27: UNICODE.map(T.CharUTF32),
    0x30: fixed_binary(T.Bin64),
    0x31: st.one_of(I64, I64.map(T.Int64)),
    0x32: U64.map(T.UInt64),
    0x33: st.one_of(st.floats(allow_nan=False), st.floats(allow_nan=False).map(T.Double)),
    0x38: I64.map(T.Datetime),
    0x40: fixed_binary(T.Bin128),
    0x48: st.uuids(),
    0x50: fixed_binary(T.Bin256),
    0x60: fixed_binary(T.Bin512),
    0x70: fixed_binary(T.Bin1024),
    0x80: st.binary(max_size=255).map(T.VBin8),
    0x84: latin_text(255).map(T.Str8Latin),
    0x85: utf8_text(255).map(T.Str8),
    0x86: utf16_text(255).map(T.Str8UTF16),
    0x90: st.one_of(BINARY, BINARY.map(T.VBin16)),
    0x94: latin_text(65535).map(T.Str16Latin),
    0x95: st.one_of(utf8_text(65535), utf8_text(65535).map(T.Str16)),
    0x96: utf16_text(65535).map(T.Str16UTF16),
    0xA0: BINARY.map(T.VBin32),
    0xC0: fixed_binary(T.Bin40),
    0xC8: decimals(T.Dec32, 32),
    0xD0: fixed_binary(T.Bin72),
    0xD8: decimals(T.Dec64, 64),
    0xF0: st.none(),
}
"""Scalar values by the type code they encode as (containers: see :func:`typed_values`)."""

DECIMAL_CODES = (0xC8, 0xD8)
"""Decimals decode to plain Decimal (a bug, see test_properties); kept out of nested values
so that one bug does not hide others."""

SCALAR_CODES = sorted(TYPE_CODE_VALUES)
NESTABLE_SCALARS = st.one_of([s for c, s in TYPE_CODE_VALUES.items() if c not in DECIMAL_CODES])

MAP_KEYS = st.one_of(st.text(UNICODE, max_size=12), utf8_text(255))


def array_of(code: int, elements: st.SearchStrategy[Any]) -> st.SearchStrategy[T.Array]:
    return st.lists(elements, max_size=4).map(lambda xs: T.Array(code, xs))


def arrays(children: st.SearchStrategy[Any] | None = None) -> st.SearchStrategy[T.Array]:
    """Arrays of any scalar element type, or (given ``children``) of maps/lists/arrays."""
    options = [array_of(c, s) for c, s in TYPE_CODE_VALUES.items() if c not in DECIMAL_CODES]
    options.append(array_of(0xF1, st.just(True)))  # bit elements decode as True
    if children is not None:
        options += [array_of(0xA8, st.dictionaries(MAP_KEYS, children, max_size=3)),
                    array_of(0xA9, st.lists(children, max_size=3)),
                    array_of(0xAB, flat_coded_structs())]
    return st.one_of(options)


@cache
def flat_coded_structs() -> st.SearchStrategy[Struct]:
    """Coded structs (struct32 values) whose own maps hold scalars only."""
    return st.one_of([instances(c, nested=False) for c in CODED_STRUCTS])


@cache
def typed_values() -> st.SearchStrategy[Any]:
    """Any value a map, list or array may hold, nested a few levels deep."""
    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(st.dictionaries(MAP_KEYS, children, max_size=4),
                         st.lists(children, max_size=4),
                         arrays(children),
                         flat_coded_structs())
    return st.recursive(NESTABLE_SCALARS | arrays(), extend, max_leaves=8)


def maps(nested: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    values = typed_values() if nested else NESTABLE_SCALARS
    return st.dictionaries(MAP_KEYS, values, max_size=5)


# --- struct fields by wire type ----------------------------------------------------------------


def sequence_sets() -> st.SearchStrategy[T.SequenceSet]:
    return st.lists(st.tuples(U32, U32), max_size=5).map(T.SequenceSet)


def byte_ranges() -> st.SearchStrategy[T.ByteRanges]:
    return st.lists(st.tuples(U64, U64), max_size=5).map(T.ByteRanges)


def field_values(wire_type: str, *, nested: bool = True) -> st.SearchStrategy[Any]:
    """Values for a field whose resolved wire type is ``wire_type`` (``FieldSpec.type``)."""
    simple: dict[str, st.SearchStrategy[Any]] = {
        "bit": st.booleans(),
        "uint8": U8,
        "uint16": U16,
        "uint32": U32,
        "sequence-no": U32,
        "uint64": U64,
        "datetime": I64,
        "uuid": st.uuids(),
        "str8": utf8_text(255),
        "str16": st.one_of(utf8_text(400), st.text(st.sampled_from("ab\u00e9"), min_size=300,
                                                   max_size=400)),
        "vbin8": st.binary(max_size=255),
        "vbin16": st.binary(max_size=400),
        "vbin32": st.binary(max_size=400),
        "sequence-set": sequence_sets(),
        "byte-ranges": byte_ranges(),
    }
    if wire_type in simple:
        return simple[wire_type]
    if wire_type == "map":
        return maps(nested)
    if wire_type == "array":
        return arrays(typed_values() if nested else None)
    if wire_type == "struct32":
        return flat_coded_structs()
    cls = getattr(spec, wire_type, None)
    if isinstance(cls, type) and issubclass(cls, Struct):
        return instances(cls, nested=nested)
    raise AssertionError(f"no strategy for wire type {wire_type!r}: add one")


@cache
def instances(cls: type[Struct], *, nested: bool = True) -> st.SearchStrategy[Any]:
    """Instances of a generated class with random fields (absent or present)."""
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for f in cls.FIELDS:
        values = field_values(f.type, nested=nested)
        if f.type != "bit" and cls.PACK_WIDTH:  # packed fields may be absent
            values = st.none() | values
        kwargs[f.attr] = values
    if issubclass(cls, Command):
        kwargs["sync"] = st.booleans()
    return st.builds(cls, **kwargs)


def any_op() -> st.SearchStrategy[Any]:
    """Any control or command."""
    return st.sampled_from(CONTROLS + COMMANDS).flatmap(instances)


def fields_of(value: Struct) -> list[Any]:
    return [getattr(value, f.attr) for f in value.FIELDS]
