"""The fast paths of amqp091.fast_frames against the general ones (pamqp), on many shapes.

Each fast decoder must either return exactly what the general path returns for the same
payload, or None (then the general path decodes it and reports its errors); it must take
every well-formed frame pamqp writes. The fast encoder must write pamqp's octets.
"""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pamqp import body as pbody
from pamqp import commands as C
from pamqp import frame as pframe
from pamqp import header as pheader

from amqp091 import tables as T
from amqp091.fast_frames import (
    decode_ack,
    decode_content_header,
    decode_deliver,
    decode_fast_method,
    decode_publish,
    encode_deliver,
    encode_deliver_fields,
    encode_properties,
)
from amqp091.framing import (
    FrameError,
    FrameReader,
    decode_header,
    decode_method,
    encode_content,
    encode_method,
)

SHORT_TEXT = st.text(max_size=40).filter(lambda s: len(s.encode()) <= 255)
LONG_SHORT_TEXT = st.text(min_size=60, max_size=255).filter(lambda s: len(s.encode()) <= 255)
OCTETS = st.integers(0, 255)
TIMESTAMPS = st.integers(0, 2 ** 32 - 1).map(
    lambda s: datetime.datetime.fromtimestamp(s, tz=datetime.UTC))


def sorted_tables(size: int) -> Any:
    """Tables with their keys in order (pamqp's table codec writes them sorted)."""
    return lambda values: st.dictionaries(st.text(max_size=8), values, max_size=size).map(
        lambda table: dict(sorted(table.items())))


HEADER_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.one_of(st.booleans(), st.text(max_size=20)), sorted_tables(3), max_leaves=6)
"""Values pamqp's table codec writes as ours does (t, S, F), so pamqp can be the reference."""
PROPERTY_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "content_type": SHORT_TEXT, "content_encoding": SHORT_TEXT,
    "headers": sorted_tables(5)(HEADER_VALUES),
    "delivery_mode": st.sampled_from([1, 2]), "priority": OCTETS,
    "correlation_id": st.one_of(SHORT_TEXT, LONG_SHORT_TEXT), "reply_to": SHORT_TEXT,
    "expiration": SHORT_TEXT, "message_id": st.one_of(SHORT_TEXT, LONG_SHORT_TEXT),
    "timestamp": TIMESTAMPS, "message_type": SHORT_TEXT, "user_id": SHORT_TEXT,
    "app_id": SHORT_TEXT,
}
PROPERTIES = st.fixed_dictionaries({}, optional=PROPERTY_VALUES).map(
    lambda fields: C.Basic.Properties(**fields))
EXCHANGES = st.text(alphabet="abcXYZ019-_.:", max_size=127)


@st.composite
def mutated(draw: st.DrawFn, payload: bytes) -> bytes:
    """``payload`` as it is, cut short, with octets appended, or with some octets changed."""
    how = draw(st.sampled_from(["same", "cut", "extend", "flip"]))
    if how == "cut" and payload:
        return payload[:draw(st.integers(0, len(payload) - 1))]
    if how == "extend":
        return payload + draw(st.binary(min_size=1, max_size=4))
    if how == "flip" and payload:
        data = bytearray(payload)
        for _ in range(draw(st.integers(1, 3))):
            data[draw(st.integers(0, len(data) - 1))] = draw(OCTETS)
        return bytes(data)
    return payload


def general(decode: Any, *args: Any) -> Any:
    """What the general path gives: the decoded frame or the FrameError."""
    try:
        return decode(*args)
    except FrameError as exc:
        return exc


def same_header(fast: pheader.ContentHeader, slow: Any) -> None:
    assert isinstance(slow, pheader.ContentHeader), slow
    assert (fast.class_id, fast.weight, fast.body_size) == \
        (slow.class_id, slow.weight, slow.body_size)
    for name in C.Basic.Properties.__slots__:
        mine, theirs = getattr(fast.properties, name), getattr(slow.properties, name)
        assert mine == theirs and type(mine) is type(theirs), name
    assert _typed(fast.properties.headers) == _typed(slow.properties.headers)


def _typed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    return type(value), value


@given(PROPERTIES, st.integers(0, 2 ** 64 - 1))
def test_the_fast_header_decoder_takes_every_header_pamqp_writes(
        properties: C.Basic.Properties, size: int) -> None:
    payload = pheader.ContentHeader(0, size, properties).marshal()
    fast = decode_content_header(payload, T.DEFAULT_FIELD_TYPES)
    assert fast is not None
    same_header(fast, decode_header(payload))


@given(st.data(), PROPERTIES)
def test_the_fast_header_decoder_gives_the_general_result_or_leaves_it_to_it(
        data: st.DataObject, properties: C.Basic.Properties) -> None:
    payload = data.draw(mutated(pheader.ContentHeader(0, 1024, properties).marshal()))
    fast = decode_content_header(payload, T.DEFAULT_FIELD_TYPES)
    if fast is not None:
        same_header(fast, general(decode_header, payload))


@given(st.data(), SHORT_TEXT, st.integers(0, 2 ** 63 - 1), st.booleans(), EXCHANGES,
       st.one_of(SHORT_TEXT, LONG_SHORT_TEXT))
def test_the_fast_deliver_decoder_gives_the_general_result_or_leaves_it_to_it(
        data: st.DataObject, tag: str, number: int, redelivered: bool, exchange: str,
        key: str) -> None:
    method = C.Basic.Deliver(consumer_tag=tag, delivery_tag=number, redelivered=redelivered,
                             exchange=exchange, routing_key=key)
    payload = pframe.marshal(method, 1)[7:-1]
    assert decode_deliver(payload) is not None  # pamqp's own frames are all taken
    mutant = data.draw(mutated(payload))
    fast = decode_deliver(mutant)
    if fast is not None:
        slow = general(decode_method, mutant)
        assert isinstance(slow, C.Basic.Deliver), slow
        for name in C.Basic.Deliver.__slots__:
            assert getattr(fast, name) == getattr(slow, name), name
            assert type(getattr(fast, name)) is type(getattr(slow, name)), name


@given(PROPERTIES)
def test_the_fast_property_encoder_writes_pamqps_octets(properties: C.Basic.Properties) -> None:
    headers = properties.headers
    table = None if headers is None else T.encode_table(headers)
    mine = encode_properties(properties, None if table is None else
                             len(table).to_bytes(4, "big") + table)
    assert mine == properties.marshal()  # pamqp, its own table codec included


@given(PROPERTIES, st.binary(max_size=300))
def test_content_encoded_on_the_fast_path_decodes_to_the_same_message(
        properties: C.Basic.Properties, body: bytes) -> None:
    frames = encode_content(3, properties, body, 4096)
    reader = FrameReader(4096, expect_protocol_header=False)
    reader.feed(b"".join(frames))
    decoded = list(reader.frames())
    channel, header = decoded[0]
    assert channel == 3 and isinstance(header, pheader.ContentHeader)
    assert header.body_size == len(body)
    bodies = [frame for _, frame in decoded[1:] if isinstance(frame, pbody.ContentBody)]
    assert len(bodies) == len(decoded) - 1
    assert b"".join(frame.value for frame in bodies) == body
    expected = pheader.ContentHeader(0, len(body), properties).marshal()
    same_header(header, decode_header(expected))


def test_the_fast_deliver_decoder_reads_only_the_redelivered_bit_of_its_octet() -> None:
    payload = bytearray(pframe.marshal(C.Basic.Deliver(consumer_tag="c", delivery_tag=7,
                                                       routing_key="k"), 1)[7:-1])
    at = 4 + 2 + 8  # index, consumer tag "c", delivery tag
    for octet in (0x00, 0x01, 0x02, 0xFE, 0xFF):
        payload[at] = octet
        fast, slow = decode_deliver(bytes(payload)), decode_method(bytes(payload))
        assert fast is not None and isinstance(slow, C.Basic.Deliver)
        assert fast.redelivered is slow.redelivered is bool(octet & 1)


def same_method(fast: Any, slow: Any) -> None:
    assert type(slow) is type(fast), slow
    for name in type(fast).__slots__:
        assert getattr(fast, name) == getattr(slow, name), name
        assert type(getattr(fast, name)) is type(getattr(slow, name)), name


@given(st.data(), st.integers(0, 2 ** 16 - 1), EXCHANGES, st.one_of(SHORT_TEXT, LONG_SHORT_TEXT),
       st.booleans(), st.booleans())
def test_the_fast_publish_decoder_gives_the_general_result_or_leaves_it_to_it(
        data: st.DataObject, ticket: int, exchange: str, key: str, mandatory: bool,
        immediate: bool) -> None:
    payload = pframe.marshal(C.Basic.Publish(exchange=exchange, routing_key=key,
                                             mandatory=mandatory, immediate=immediate), 1)[7:-1]
    # (pamqp validates a ticket of 0 on making the method, not on reading it)
    payload = payload[:4] + ticket.to_bytes(2, "big") + payload[6:]
    taken = decode_publish(payload)
    assert taken is not None  # pamqp's own frames are all taken
    same_method(taken, decode_method(payload))
    mutant = data.draw(mutated(payload))
    fast = decode_fast_method(mutant)
    if fast is not None:
        same_method(fast, general(decode_method, mutant))


@given(st.data(), st.integers(-(2 ** 63), 2 ** 63 - 1), st.booleans())
def test_the_fast_ack_decoder_gives_the_general_result_or_leaves_it_to_it(
        data: st.DataObject, tag: int, multiple: bool) -> None:
    payload = pframe.marshal(C.Basic.Ack(delivery_tag=tag, multiple=multiple), 1)[7:-1]
    taken = decode_ack(payload)
    assert taken is not None
    same_method(taken, decode_method(payload))
    mutant = data.draw(mutated(payload))
    fast = decode_fast_method(mutant)
    if fast is not None:
        same_method(fast, general(decode_method, mutant))


def test_the_fast_method_decoder_reads_each_bit_of_the_octet_as_pamqp_does() -> None:
    publish = bytearray(pframe.marshal(C.Basic.Publish(exchange="x", routing_key="k"), 1)[7:-1])
    ack = bytearray(pframe.marshal(C.Basic.Ack(delivery_tag=3), 1)[7:-1])
    for octet in (0x00, 0x01, 0x02, 0x03, 0xFC, 0xFF):
        publish[-1] = ack[-1] = octet
        for payload in (bytes(publish), bytes(ack)):
            fast = decode_fast_method(payload)
            assert fast is not None
            same_method(fast, decode_method(payload))


ANY_NAME = st.one_of(EXCHANGES, st.text(max_size=140), LONG_SHORT_TEXT)


@given(st.integers(0, 2 ** 16 - 1), st.one_of(SHORT_TEXT, st.text(min_size=200, max_size=300)),
       st.one_of(st.integers(-(2 ** 64), 2 ** 64), st.booleans()), st.booleans(), ANY_NAME,
       st.one_of(SHORT_TEXT, st.text(min_size=200, max_size=300)))
def test_the_fast_deliver_encoder_writes_pamqps_octets_or_leaves_it_to_pamqp(
        channel: int, consumer_tag: str, tag: Any, redelivered: bool, exchange: str,
        key: str) -> None:
    """Every basic.deliver pamqp writes is written the same; one it refuses (an exchange
    name its validation refuses, a string over 255 octets, a tag out of range) is left to
    it, so the error is pamqp's."""
    method = C.Basic.Deliver.__new__(C.Basic.Deliver)
    method.consumer_tag, method.delivery_tag, method.redelivered = consumer_tag, tag, redelivered
    method.exchange, method.routing_key = exchange, key
    try:
        expected: Any = pframe.marshal(method, channel)
    except (ValueError, TypeError) as exc:
        expected = type(exc)
    fast = encode_deliver(channel, method)
    assert encode_deliver_fields(channel, consumer_tag, tag, redelivered, exchange, key) == fast
    if fast is not None:  # (the server's deliver writes it without making the method: one
        # pamqp would refuse at construction must not get through)
        assert pframe.marshal(C.Basic.Deliver(
            consumer_tag=consumer_tag, delivery_tag=tag, redelivered=redelivered,
            exchange=exchange, routing_key=key), channel) == fast
    if isinstance(expected, bytes):
        if type(tag) is int:  # (a bool tag pamqp writes as an int: left to it)
            assert fast == expected
        assert encode_method(channel, method) == expected
    else:
        assert fast is None
        try:
            encode_method(channel, method)
        except (ValueError, TypeError) as exc:
            assert type(exc) is expected
        else:
            raise AssertionError("encode_method wrote what pamqp refuses")
