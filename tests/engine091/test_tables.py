"""The typed field-table codec (amqp091.tables) and its use for message headers."""

from __future__ import annotations

import datetime
import decimal
import struct
from typing import Any

import pika.data
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pamqp import commands as C
from pamqp import frame as pframe
from pamqp import header as pheader

from amqp091 import tables as T
from amqp091.events import MessageReceived
from amqp091.framing import FrameReader, encode_content
from amqp091.methods import ReplyCode

from . import peer

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def ints(kind: type[int], bits: int, signed: bool) -> st.SearchStrategy[int]:
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2 ** bits - 1)
    return st.integers(low, high).map(kind)


SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.booleans(),
    ints(T.Byte, 8, True), ints(T.UByte, 8, False), ints(T.Short, 16, True),
    ints(T.UShort, 16, False), ints(T.Int32, 32, True), ints(T.UInt32, 32, False),
    st.integers(-(2 ** 63), 2 ** 63 - 1), ints(T.ULongLong, 64, False),
    st.floats(width=32, allow_nan=False).map(T.Float32), st.floats(allow_nan=False),
    st.builds(lambda m, s: decimal.Decimal(m).scaleb(-s),
              st.integers(-(2 ** 31), 2 ** 31 - 1), st.integers(0, 255)),
    st.text(), st.binary().filter(lambda b: not _utf8(b)).map(T.LongString), st.binary(),
    st.integers(0, 253402300799).map(lambda s: EPOCH + datetime.timedelta(seconds=s)),
    st.none(),
)
KEYS = st.text(max_size=20).filter(lambda k: len(k.encode()) <= 255)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=20)
TABLES = st.dictionaries(KEYS, VALUES, max_size=6)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def same(a: Any, b: Any) -> bool:
    """Equal values of identical types, all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, decimal.Decimal):
        return a.as_tuple() == b.as_tuple()
    if isinstance(a, float) and a == 0:
        return str(a) == str(b)  # -0.0 stays -0.0
    return bool(a == b)


@given(TABLES)
def test_decode_of_encode_keeps_every_value_and_type(table: dict[str, Any]) -> None:
    encoded = T.encode_table(table)
    back = T.decode_table(encoded)
    assert same(table, back), (table, back)
    assert T.encode_table(back) == encoded


@given(st.lists(VALUES, max_size=5))
def test_arrays_round_trip(array: list[Any]) -> None:
    assert same(array, T.decode_array(T.encode_array(array)))


PIKA_SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.booleans(), st.integers(-(2 ** 63), 2 ** 63 - 1), st.text(), st.binary(), st.none(),
    st.builds(lambda m, s: decimal.Decimal(m).scaleb(-s),
              st.integers(-(2 ** 31), 2 ** 31 - 1), st.integers(1, 255)),
    st.integers(0, 253402300799).map(lambda s: EPOCH + datetime.timedelta(seconds=s)),
)
PIKA_TABLES = st.dictionaries(KEYS, st.recursive(PIKA_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)), max_leaves=20),
    max_size=6)


@given(PIKA_TABLES)
def test_tables_pika_writes_re_encode_byte_for_byte(table: dict[str, Any]) -> None:
    pieces: list[bytes] = []
    pika.data.encode_table(pieces, table)
    wire = b"".join(pieces)
    consumed, decoded = T.read_table(wire)
    assert consumed == len(wire)
    assert T.write_table(decoded) == wire


def test_widths_pika_picks_are_kept() -> None:
    pieces: list[bytes] = []
    pika.data.encode_table(pieces, {"small": 5, "big": 2 ** 40})
    decoded = T.read_table(b"".join(pieces))[1]
    assert type(decoded["small"]) is T.Int32 and type(decoded["big"]) is int


def test_what_pamqp_gets_wrong_is_right() -> None:
    wire = (b"\x01T" + b"T" + struct.pack(">Q", 2 ** 33)       # seconds past 2106, not ms
            + b"\x01D" + b"D" + struct.pack(">Bi", 2, -150)    # signed mantissa
            + b"\x01d" + b"d" + struct.pack(">d", 0.1))        # a double stays a double
    decoded = T.decode_table(wire)
    assert decoded == {"T": EPOCH + datetime.timedelta(seconds=2 ** 33),
                       "D": decimal.Decimal("-1.50"), "d": 0.1}
    assert type(decoded["d"]) is float
    assert T.encode_table(decoded) == wire


def nested(depth: int) -> bytes:
    inner = b""
    for _ in range(depth):
        inner = b"\x01kF" + struct.pack(">I", len(inner)) + inner
    return inner


@pytest.mark.parametrize("wire, message", [
    (b"\x01kZ", "unknown field type 'Z'"),
    (b"\x01kS" + struct.pack(">I", 10) + b"abc", "runs past"),
    (b"\x05ab", "runs past"),
    (b"\x01ks\x00", "runs past"),
    (b"\x01\xffV", "not UTF-8"),
    (b"\x01kT" + struct.pack(">Q", 2 ** 63), "past year 9999"),
    (b"\x01kF" + struct.pack(">I", 9) + b"\x01jV", "runs past"),
    (nested(T.MAX_DEPTH + 1), "nested deeper"),
])
def test_malformed_tables_are_table_errors(wire: bytes, message: str) -> None:
    with pytest.raises(T.TableError, match=message):
        T.decode_table(wire)


def test_depth_at_the_bound_decodes() -> None:
    assert T.encode_table(T.decode_table(nested(T.MAX_DEPTH - 1))) == nested(T.MAX_DEPTH - 1)


@pytest.mark.parametrize("value, message", [
    ({"a": object()}, "object is not a 0-9-1 field-table value"),
    ({"a": T.Byte(200)}, "does not fit field type 'b'"),
    ({"a": [{"b": T.UShort(-1)}]}, r"table\['a'\]\[0\]\['b'\]"),
    ({"a": EPOCH + datetime.timedelta(microseconds=5)}, "whole seconds"),
    ({"a": decimal.Decimal("1e-300")}, "does not fit field type 'D'"),
    ({1: None}, "is not a str"),
])
def test_values_without_a_field_type_are_table_errors(value: Any, message: str) -> None:
    with pytest.raises(T.TableError, match=message):
        T.encode_table(value)


def test_encoding_refuses_cycles_by_depth() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(T.TableError, match="nested deeper"):
        T.encode_table(loop)


# ---------------------------------------------------------------- in the engine

HEADERS = {"b": T.Byte(-1), "f": T.Float32(0.5), "d": 0.5, "l": -3,
           "n": {"a": [T.UShort(7), None]}, "x": b"\x00"}


def test_content_header_carries_typed_headers_both_ways() -> None:
    props = C.Basic.Properties(content_type="text/plain", headers=HEADERS, priority=3)
    frames = encode_content(1, props, b"hi", 4096)
    reader = FrameReader(expect_protocol_header=False)
    reader.feed(frames[0])
    [(channel, header)] = list(reader.frames())
    assert channel == 1 and isinstance(header, pheader.ContentHeader)
    assert same(header.properties.headers, HEADERS)
    assert header.properties.content_type == "text/plain" and header.properties.priority == 3
    assert props.headers is HEADERS  # the caller's properties are not changed
    # pamqp reads the same frame (its own lossy way): the layout is standard
    _, _, theirs = pframe.unmarshal(frames[0])
    assert isinstance(theirs, pheader.ContentHeader)
    assert theirs.properties.headers == {**HEADERS, "x": bytearray(b"\x00")}
    assert theirs.properties.priority == 3 and theirs.body_size == 2


def test_publish_with_an_untyped_header_value_raises_value_error() -> None:
    with pytest.raises(ValueError, match="not a 0-9-1 field-table value"):
        encode_content(1, C.Basic.Properties(headers={"a": {1, 2}}), b"", 4096)


def test_a_malformed_headers_table_closes_the_connection_with_501() -> None:
    conn = peer.open_client()
    ch = peer.open_channel(conn)
    good = peer.wire(ch, C.Basic.Deliver("ctag", 1, False, "", "q"),
                     pheader.ContentHeader(0, 0, C.Basic.Properties(headers={"k": "v"})))
    conn.receive_data(good.replace(b"\x01kS", b"\x01kZ"))  # unknown field type
    closed = peer.closed_with(conn, ReplyCode.FRAME_ERROR)
    assert "unknown field type 'Z'" in closed.text


def test_received_headers_keep_the_widths_the_peer_sent() -> None:
    conn = peer.open_client()
    ch = peer.open_channel(conn)
    props = C.Basic.Properties(headers=HEADERS)
    conn.receive_data(peer.wire(ch, C.Basic.Deliver("ctag", 1, False, "", "q"))
                      + b"".join(encode_content(ch, props, b"", 4096)))
    (msg,) = list(conn.events())
    assert isinstance(msg, MessageReceived) and same(msg.properties.headers, HEADERS)
