"""AMQP 0-9-1 ⇄ 1.0 mapping: round trips both ways, and the rules with explicit cases.

0-9-1 → 1.0 → 0-9-1 is identity for every property and header type (widths,
signs, float vs double, decimals, nested tables and arrays); 1.0 → 0-9-1 → 1.0
is identity for every message the 0-9-1 side can carry. The 1.0 leg crosses
AmqpMessage's wire codec, and equality is typed (a value that comes back with
another type fails).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pamqp.commands import Basic
from proton import byte, float32, int32, short, symbol, timestamp, ubyte, uint, ushort

from mappings.amqp091 import (
    A_EXCHANGE,
    A_HEADERS,
    A_PUBLISHED_EXCHANGE,
    A_PUBLISHED_ROUTING_KEY,
    A_ROUTING_KEY,
    A_TYPE,
    AMQP10_BODY_TYPE,
    SIDE_HEADERS,
    Delivery091,
    from_amqp10,
    to_amqp10,
)
from mappings.amqp091_values import LongString
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind, Header, Properties
from tests.mappings.strategies import messages
from tests.mappings.test_amqp010_values import typed1, typed_message

FIELDS = [
    "content_type", "content_encoding", "headers", "delivery_mode", "priority", "correlation_id",
    "reply_to", "expiration", "message_id", "timestamp", "message_type", "user_id", "app_id",
    "cluster_id",
]  # fmt: skip


def typed091(value: Any) -> Any:
    """A hashable form of a 0-9-1 value that differs whenever its field type or value differs."""
    kind = type(value)
    if kind is dict:
        return ("F", frozenset((key, typed091(item)) for key, item in value.items()))
    if kind is list:
        return ("A", tuple(typed091(item) for item in value))
    if kind is bytearray:
        return ("x", bytes(value))
    if kind is Decimal:
        return ("D", str(value))
    return typed1(value)


def typed_properties(p: Basic.Properties) -> Any:
    return tuple((name, typed091(getattr(p, name))) for name in FIELDS)


# --- 0-9-1 strategies ----------------------------------------------------------------------------

shortstr = st.text(max_size=12).filter(lambda s: len(s.encode()) <= 255)
ascii_short = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=16)
datetimes = st.integers(0, 253402300799).map(
    lambda s: dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=s)
)
decimals = st.builds(
    lambda scale, mantissa: Decimal(mantissa).scaleb(-scale),
    st.integers(0, 20),
    st.integers(-(2**31), 2**31 - 1),
)
field_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**7), 2**7 - 1).map(byte),
    st.integers(0, 255).map(ubyte),
    st.integers(-(2**15), 2**15 - 1).map(short),
    st.integers(0, 2**16 - 1).map(ushort),
    st.integers(-(2**31), 2**31 - 1).map(int32),
    st.integers(0, 2**32 - 1).map(uint),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(width=32, allow_nan=False).map(float32),
    st.floats(allow_nan=False),
    decimals,
    st.text(max_size=12),
    st.binary(max_size=8).filter(lambda b: not _utf8(b)).map(LongString),
    st.binary(max_size=8),
    datetimes,
)
field_values = st.recursive(
    field_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(shortstr, children, max_size=3)
    ),
    max_leaves=10,
)
header_names = shortstr.filter(lambda name: name not in SIDE_HEADERS)


def _utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _opt(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


properties091 = st.builds(
    Basic.Properties,
    content_type=_opt(ascii_short),
    content_encoding=_opt(ascii_short),
    headers=_opt(st.dictionaries(header_names, field_values, max_size=5)),
    delivery_mode=_opt(st.sampled_from([1, 2])),  # pamqp refuses others
    priority=_opt(st.integers(0, 255)),
    correlation_id=_opt(shortstr | st.uuids().map(lambda u: u.urn)),
    reply_to=_opt(shortstr),
    expiration=_opt(st.integers(0, 2**33).map(str) | shortstr),
    message_id=_opt(shortstr | st.uuids().map(lambda u: u.urn)),
    timestamp=_opt(datetimes),
    message_type=_opt(shortstr | st.just(AMQP10_BODY_TYPE)),
    user_id=_opt(shortstr.filter(bool)),  # an empty user-id is no user-id
    app_id=_opt(shortstr),
    # pamqp refuses a cluster-id (deprecated in 0-9-1); its default "" is the absent one
)
deliveries = st.builds(Delivery091, _opt(shortstr), _opt(shortstr), st.booleans())


def _wire(message: AmqpMessage) -> AmqpMessage:
    return AmqpMessage.decode(message.encode())


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(properties091, deliveries, st.binary(max_size=32))
def test_091_to_10_and_back_is_identity(p: Basic.Properties, d: Delivery091, body: bytes) -> None:
    message = _wire(to_amqp10(p, d, body))
    back, delivery, body_back = from_amqp10(message)
    assert typed_properties(back) == typed_properties(p)
    assert (delivery, body_back) == (d, body)


def _carriable(message: AmqpMessage) -> bool:
    created = message.properties.creation_time
    return created is None or 0 <= created <= 253402300799999


@settings(
    max_examples=400, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(messages().filter(_carriable))
def test_10_to_091_and_back_is_identity(message: AmqpMessage) -> None:
    message = _wire(message)
    p, d, body = from_amqp10(message)
    assert typed_message(_wire(to_amqp10(p, d, body))) == typed_message(_normalised(message))


def _normalised(message: AmqpMessage) -> AmqpMessage:
    """``message`` with the first-acquirer and delivery-count the redelivered flag implies
    (docs/mapping.md: only what the flag does not say is carried)."""
    header = message.header
    count = header.delivery_count
    if header.first_acquirer is False or (count or 0) > 0:
        header.first_acquirer = bool(header.first_acquirer and count)
        header.delivery_count = count or None
    else:
        header.first_acquirer = header.delivery_count = None
    return message


# --- the rules, case by case ---------------------------------------------------------------------


def test_timestamp_seconds_become_milliseconds_and_back() -> None:
    when = dt.datetime(2020, 9, 13, 12, 26, 40, tzinfo=dt.UTC)
    message = to_amqp10(Basic.Properties(timestamp=when), None, b"")
    assert message.properties.creation_time == timestamp(1_600_000_000_000)
    assert from_amqp10(message)[0].timestamp == when
    # a 1.0 creation-time that is not a whole second: floor in the field, exact ms in a header
    message.properties.creation_time = timestamp(1_600_000_000_250)
    p, d, body = from_amqp10(message)
    assert p.timestamp == when and p.headers == {"x-amqp-1.0.creation-time": 1_600_000_000_250}
    assert to_amqp10(p, d, body).properties.creation_time == timestamp(1_600_000_000_250)


@pytest.mark.parametrize("ms", [1_500, -1, -1_000, 253_402_300_800_000])
def test_property_timestamps_a_0_9_1_timestamp_cannot_hold_come_back(ms: int) -> None:
    """A fraction of a second, a whole second before the epoch or after the year 9999: the
    header holds the milliseconds and the recorded type restores the timestamp."""
    message = AmqpMessage(application_properties={"t": timestamp(ms)})
    p, d, body = from_amqp10(message)
    assert p.headers == {"t": ms, "x-amqp-1.0.property-types": {"t": "timestamp"}}
    assert typed1(to_amqp10(p, d, body).application_properties["t"]) == typed1(timestamp(ms))


def test_header_timestamps_keep_seconds() -> None:
    when = dt.datetime(2001, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    message = to_amqp10(Basic.Properties(headers={"at": when, "nested": [when]}), None, b"")
    assert message.application_properties == {"at": timestamp(981_173_106_000)}
    assert message.message_annotations[A_HEADERS] == {"nested": [timestamp(981_173_106_000)]}


def test_user_id_is_binary_in_10() -> None:
    message = to_amqp10(Basic.Properties(user_id="alice"), None, b"")
    assert message.properties.user_id == b"alice" and type(message.properties.user_id) is bytes
    assert from_amqp10(message)[0].user_id == "alice"
    # a binary user-id that is not UTF-8 travels in a header, and comes back
    message.properties.user_id = b"\xff\x00"
    p, d, body = from_amqp10(message)
    assert p.user_id is None and p.headers == {"x-amqp-1.0.user-id": b"\xff\x00"}
    assert to_amqp10(p, d, body).properties.user_id == b"\xff\x00"


def test_user_id_rules_carry_it_in_an_annotation() -> None:
    message = to_amqp10(Basic.Properties(user_id="alice"), None, b"", user_id="authenticated",
                        login_user="bridge")  # fmt: skip
    assert message.properties.user_id is None
    assert message.message_annotations[symbol("x-amqp-0-9-1.user-id")] == b"alice"
    assert from_amqp10(message)[0].user_id == "alice"
    with pytest.raises(ValueError, match="unknown user-id rule"):
        to_amqp10(Basic.Properties(user_id="alice"), None, b"", user_id="nope")


@pytest.mark.parametrize(("mode", "durable"), [(1, False), (2, True), (None, None)])
def test_delivery_mode_is_durable(mode: int | None, durable: bool | None) -> None:
    message = to_amqp10(Basic.Properties(delivery_mode=mode), None, b"")
    assert message.header.durable is durable and not message.message_annotations
    assert from_amqp10(message)[0].delivery_mode == mode


def test_other_delivery_modes_are_kept() -> None:
    properties = Basic.Properties()
    properties.delivery_mode = 0  # a peer may send it, though pamqp's constructor refuses it
    message = to_amqp10(properties, None, b"")
    assert message.header.durable is False
    assert message.message_annotations == {symbol("x-amqp-0-9-1.delivery-mode"): ubyte(0)}
    assert from_amqp10(message)[0].delivery_mode == 0


@pytest.mark.parametrize(
    ("expiration", "ttl", "annotated"),
    [("60000", 60000, False), ("0", 0, False), ("007", None, True), ("4294967296", None, True),
     ("soon", None, True)],
)  # fmt: skip
def test_expiration_is_ttl_when_it_is_a_number(
    expiration: str, ttl: int | None, annotated: bool
) -> None:
    message = to_amqp10(Basic.Properties(expiration=expiration), None, b"")
    assert message.header.ttl == ttl
    assert (symbol("x-amqp-0-9-1.expiration") in message.message_annotations) is annotated
    assert from_amqp10(message)[0].expiration == expiration


def test_ttl_becomes_expiration_text() -> None:
    p, _, _ = from_amqp10(AmqpMessage(header=Header(ttl=uint(1500)), body_kind=BodyKind.DATA,
                                      body=[b""]))  # fmt: skip
    assert p.expiration == "1500"


def test_header_types_keep_width_sign_and_precision() -> None:
    headers = {
        "b": byte(-5), "B": ubyte(250), "s": short(-300), "u": ushort(60000), "I": int32(-70000),
        "i": uint(4_000_000_000), "l": -(2**40), "f": float32(1.5), "d": 0.1, "D": Decimal("1.50"),
        "S": "text", "x": b"\x00\xff", "t": True, "V": None,
    }  # fmt: skip
    message = to_amqp10(Basic.Properties(headers=headers), None, b"")
    props = message.application_properties
    assert [type(props[k]) for k in ("b", "B", "s", "u", "I", "i", "l", "f", "d")] == [
        byte, ubyte, short, ushort, int32, uint, int, float32, float,
    ]  # fmt: skip
    assert props["D"] == "1.50" and props["x"] == b"\x00\xff"
    assert message.message_annotations[symbol("x-amqp-0-9-1.header-types")] == {"D": "decimal"}
    back = from_amqp10(_wire(message))[0].headers
    assert typed091(back) == typed091(headers)


def test_nested_tables_and_arrays_are_maps_and_lists() -> None:
    headers = {"t": {"n": short(-1), "a": [Decimal("2.5"), {"deep": float32(2.0)}]}}
    message = to_amqp10(Basic.Properties(headers=headers), None, b"")
    assert "t" not in message.application_properties
    nested = message.message_annotations[A_HEADERS]["t"]
    assert type(nested["n"]) is short and type(nested["a"][1]["deep"]) is float32
    assert typed091(from_amqp10(_wire(message))[0].headers) == typed091(headers)


def test_exchange_routing_key_and_redelivered() -> None:
    message = to_amqp10(None, Delivery091("orders", "eu.new", True), b"x")
    annotations = message.message_annotations
    assert annotations[A_PUBLISHED_EXCHANGE] == annotations[A_EXCHANGE] == "orders"
    assert message.properties.subject == "eu.new"  # RabbitMQ's /exchange/X routes by it
    assert A_ROUTING_KEY not in annotations and A_PUBLISHED_ROUTING_KEY not in annotations
    assert message.header.first_acquirer is False
    p, delivery, _ = from_amqp10(message)
    assert delivery == Delivery091("orders", "eu.new", True) and p.headers is None


LONG = "é" * 200  # 400 octets: no routing key can hold it
# (0-9-1 routing key, header x-amqp-1.0.subject) ⇄ (1.0 subject, annotations
# x-amqp-0-9-1.routing-key and x-routing-key, written with the same value); _ is absent
_ = object()
SUBJECT_RULES = [
    (("k", _), ("k", _)),
    ((None, _), (None, _)),
    (("k", "s"), ("s", "k")),
    (("k", "k"), ("k", "k")),
    ((None, "s"), ("s", None)),
    (("k", None), (None, "k")),
    ((None, None), (None, None)),
    ((LONG.encode()[:255].decode("utf-8", "ignore"), LONG), (LONG, _)),
]


@pytest.mark.parametrize(("legacy", "amqp10"), SUBJECT_RULES)
def test_routing_key_is_the_subject_both_ways(legacy: Any, amqp10: Any) -> None:
    key, carried = legacy
    headers = None if carried is _ else {"x-amqp-1.0.subject": carried}
    message = to_amqp10(Basic.Properties(headers=headers), Delivery091("x", key), b"")
    annotations = message.message_annotations
    annotation = annotations.get(A_PUBLISHED_ROUTING_KEY, _)
    assert annotations.get(A_ROUTING_KEY, _) == annotation
    assert (message.properties.subject, annotation) == amqp10
    subject, annotated = amqp10
    # read back from our annotation alone (RabbitMQ 4 replaced its x-routing-key) ...
    message = AmqpMessage(properties=Properties(subject=subject))
    if annotated is not _:
        message.message_annotations[A_PUBLISHED_ROUTING_KEY] = annotated
    p, delivery, _body = from_amqp10(_wire(message))
    assert (delivery.routing_key, p.headers) == (key, headers)
    # ... and beside the routing RabbitMQ 4 writes on every delivery (/queues/Q: '' and Q),
    # which is the key only of a message that says none (neither subject nor annotation)
    message.message_annotations.update({A_EXCHANGE: "", A_ROUTING_KEY: "Q"})
    p, delivery, _body = from_amqp10(_wire(message))
    if amqp10 == (None, _):
        assert (delivery.routing_key, p.headers) == ("Q", None)
    else:
        assert (delivery.routing_key, p.headers) == (key, headers)


def test_a_routing_key_that_is_the_subject_cut_short_is_refused() -> None:
    message = AmqpMessage(properties=Properties(subject=LONG))
    message.message_annotations[A_PUBLISHED_ROUTING_KEY] = LONG.encode()[:255].decode(
        "utf-8", "ignore"
    )
    with pytest.raises(MappingError) as caught:
        from_amqp10(message)
    assert caught.value.field == "message_annotations['x-amqp-0-9-1.routing-key']"


@pytest.mark.parametrize(
    ("published", "header"),
    [(("orders", "eu.new"), None), (("orders", "eu.new"), "a subject"), ((None, "k"), None),
     (("", None), "a subject")],
)  # fmt: skip
def test_rabbitmq_4s_routing_does_not_replace_the_published_exchange_and_key(
    published: tuple[Any, Any], header: str | None
) -> None:
    """RabbitMQ 4 replaces x-exchange / x-routing-key with its own routing on every delivery
    (a message sent to /queues/Q: '' and Q) and keeps ours: the 0-9-1 delivery is the
    published one, with nothing added."""
    exchange, key = published
    headers = None if header is None else {"x-amqp-1.0.subject": header}
    message = _wire(to_amqp10(Basic.Properties(headers=headers), Delivery091(exchange, key), b""))
    message.message_annotations.update({A_EXCHANGE: "", A_ROUTING_KEY: "test.backing-queue"})
    p, delivery, _body = from_amqp10(message)
    assert (delivery.exchange, delivery.routing_key, p.headers) == (
        exchange if exchange is not None else "", key, headers)


def test_a_10_messages_subject_comes_before_the_brokers_routing_key() -> None:
    """A 1.0 producer's message delivered by RabbitMQ 4 from /queues/Q: the routing key is
    its subject, not the queue's name the broker wrote in x-routing-key."""
    message = AmqpMessage(properties=Properties(subject="eu.new"))
    message.message_annotations.update({A_EXCHANGE: "", A_ROUTING_KEY: "test.q"})
    p, delivery, _body = from_amqp10(_wire(message))
    assert (delivery.exchange, delivery.routing_key, p.headers) == ("", "eu.new", None)


def test_rabbitmqs_own_annotations_alone_are_read_and_come_back_as_ours() -> None:
    """RabbitMQ 4's conversion of a 0-9-1 publish, or any 1.0 message without a subject
    that RabbitMQ 4 delivers (x-exchange, x-routing-key), or a bridge before the
    x-amqp-0-9-1 names: read as the exchange and routing key, with no header added (a
    0-9-1 consumer sees only what was sent); the way back writes the key as the subject,
    the exchange under both names."""
    message = AmqpMessage()
    message.message_annotations.update({A_EXCHANGE: "orders", A_ROUTING_KEY: "eu.new"})
    p, delivery, body = from_amqp10(_wire(message))
    assert (delivery.exchange, delivery.routing_key) == ("orders", "eu.new")
    assert p.headers is None
    back = to_amqp10(p, delivery, body)
    assert back.properties.subject == "eu.new"
    assert back.message_annotations == {A_EXCHANGE: "orders", A_PUBLISHED_EXCHANGE: "orders"}


@pytest.mark.parametrize("name", [A_PUBLISHED_EXCHANGE, A_PUBLISHED_ROUTING_KEY])
def test_our_exchange_and_routing_key_annotations_must_be_short_strings(name: Any) -> None:
    message = AmqpMessage(properties=Properties(subject="s"))
    message.message_annotations.update({name: 7, A_EXCHANGE: "", A_ROUTING_KEY: "q"})
    with pytest.raises(MappingError) as caught:
        from_amqp10(message)
    assert caught.value.field == f"message_annotations[{str(name)!r}]"


@pytest.mark.parametrize(
    ("first_acquirer", "delivery_count", "redelivered", "headers"),
    [
        (True, None, False, None),  # RabbitMQ's first delivery
        (True, uint(0), False, None),
        (None, None, False, None),
        (False, uint(0), True, None),  # RabbitMQ's requeued message
        (False, uint(3), True, {"x-amqp-1.0.delivery-count": uint(3)}),
        (True, uint(2), True, {"x-amqp-1.0.delivery-count": uint(2),
                               "x-amqp-1.0.first-acquirer": True}),
    ],
)  # fmt: skip
def test_header_fields_cross_only_when_the_flag_does_not_say_them(
    first_acquirer: bool | None, delivery_count: Any, redelivered: bool, headers: Any
) -> None:
    header = Header(first_acquirer=first_acquirer, delivery_count=delivery_count)
    p, delivery, _body = from_amqp10(_wire(AmqpMessage(header=header)))
    assert (delivery.redelivered, p.headers) == (redelivered, headers)
    back = to_amqp10(p, delivery, b"").header
    assert (back.first_acquirer, back.delivery_count) == (
        (bool(first_acquirer and delivery_count), delivery_count or None)
        if redelivered else (None, None)
    )


def test_type_and_app_id_follow_rabbitmq() -> None:
    message = to_amqp10(Basic.Properties(message_type="order", app_id="shop"), None, b"")
    assert message.message_annotations[A_TYPE] == "order"
    assert message.properties.group_id == "shop"


def test_uuid_urn_ids_are_uuids() -> None:
    urn = "urn:uuid:6ba7b810-9dad-11d1-80b4-00c04fd430c8"
    message = to_amqp10(Basic.Properties(message_id=urn, correlation_id="plain"), None, b"")
    assert str(message.properties.message_id) == urn[9:]
    assert message.properties.correlation_id == "plain"


def test_other_10_bodies_travel_encoded_with_rabbitmqs_type() -> None:
    message = AmqpMessage(body_kind=BodyKind.VALUE, body={"k": [1, 2]})
    p, d, body = from_amqp10(message)
    assert p.message_type == AMQP10_BODY_TYPE
    assert typed_message(to_amqp10(p, d, body)) == typed_message(message)


def test_reserved_names_and_bad_values_name_the_field() -> None:
    with pytest.raises(MappingError) as caught:
        from_amqp10(AmqpMessage(application_properties={"x-amqp-1.0.to": "a"}))
    assert caught.value.field == "application_properties['x-amqp-1.0.to']"
    with pytest.raises(MappingError) as caught:
        to_amqp10(Basic.Properties(headers={"x-amqp-1.0.to": 5}), None, b"")
    assert caught.value.field == "properties.headers['x-amqp-1.0.to']"
    with pytest.raises(MappingError) as caught:
        to_amqp10(Basic.Properties(content_type="tëxt/plain"), None, b"")
    assert caught.value.field == "properties.content_type"
    with pytest.raises(MappingError) as caught:
        from_amqp10(AmqpMessage(properties=Properties(creation_time=timestamp(-1000))))
    assert caught.value.field == "properties.creation_time"
