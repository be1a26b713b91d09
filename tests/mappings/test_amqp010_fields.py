"""The field rules of the AMQP 0-10 <-> 1.0 mapping, one table per rule (see docs/mapping.md)."""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest
from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Described,
    byte,
    char,
    decimal32,
    float32,
    int32,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
)

from amqp010 import types as t
from amqp010.spec import DeliveryProperties, MessageProperties, ReplyTo
from mappings.amqp010 import (
    BODY_CONTENT_TYPE,
    from_amqp10,
    message_id_uuid,
    to_amqp10,
)
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind, Header, Properties
from tests.codec.captures import scan_entries
from tests.mappings.test_amqp010_values import typed1, typed10, typed_message

ROUTING_KEY = symbol("x-amqp-0-10.routing-key")
EXCHANGE = symbol("x-amqp-0-10.exchange")


def amqp10(
    dp: DeliveryProperties | None = None, mp: MessageProperties | None = None, body: bytes = b""
) -> AmqpMessage:
    """to_amqp10, checked to be a canonical 1.0 message (it survives the 1.0 codec unchanged)."""
    message = to_amqp10(dp, mp, body)
    assert typed_message(AmqpMessage.decode(message.encode())) == typed_message(message)
    return message


def amqp010(message: AmqpMessage) -> tuple[DeliveryProperties, MessageProperties, bytes]:
    """from_amqp10, checked to round-trip (through both codecs) to the same 1.0 message."""
    canonical = AmqpMessage.decode(message.encode())
    dp, mp, body = from_amqp10(canonical)
    wire = (t.decode_struct_body(dp.encode()[4:], 0), t.decode_struct_body(mp.encode()[4:], 0))
    assert typed_message(to_amqp10(*wire, body)) == typed_message(canonical)
    return dp, mp, body


def headers_of(message: AmqpMessage) -> dict[str, Any]:
    return amqp010(message)[1].application_headers or {}


# --- delivery-properties <-> header ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("dp", "header"),
    [
        (DeliveryProperties(), Header()),
        (DeliveryProperties(delivery_mode=2), Header(durable=True)),
        (DeliveryProperties(delivery_mode=1), Header(durable=False)),
        (DeliveryProperties(priority=9), Header(priority=ubyte(9))),
        (DeliveryProperties(priority=0), Header(priority=ubyte(0))),
        (DeliveryProperties(ttl=2**32 - 1), Header(ttl=uint(2**32 - 1))),
        (DeliveryProperties(redelivered=True), Header(delivery_count=uint(1))),
    ],
)
def test_delivery_properties_to_header(dp: DeliveryProperties, header: Header) -> None:
    message = amqp10(dp)
    assert typed_message(message)[0] == typed_message(AmqpMessage(header=header))[0]
    assert typed10(amqp010(message)[0]) == typed10(dp)


@pytest.mark.parametrize(
    ("count", "redelivered", "side"),
    [
        (None, False, None),
        (0, False, 0),
        (1, True, None),
        (2, True, 2),
        (2**32 - 1, True, 2**32 - 1),
    ],
)
def test_delivery_count(count: int | None, redelivered: bool, side: int | None) -> None:
    dp, mp, _ = amqp010(AmqpMessage(header=Header(delivery_count=count)))
    assert dp.redelivered is redelivered
    assert (mp.application_headers or {}).get("x-amqp-1.0.delivery-count") == side


def test_stale_delivery_count_yields_to_the_redelivered_flag() -> None:
    """A 0-10 broker redelivering a message that left 1.0 with delivery-count 0."""
    dp, mp, body = from_amqp10(AmqpMessage(header=Header(delivery_count=uint(0))))
    dp.redelivered = True
    assert to_amqp10(dp, mp, body).header.delivery_count == 1


def test_first_acquirer_rides_in_a_header() -> None:
    assert headers_of(AmqpMessage(header=Header(first_acquirer=True))) == {
        "x-amqp-1.0.first-acquirer": True
    }


@pytest.mark.parametrize(
    ("count", "side"),
    [
        (None, None),  # void: no delivery-count (the flag alone would read back as 1)
        (0, 0),  # what RabbitMQ 3.10 sends for a requeued message
        (1, "absent"),
        (3, 3),
    ],
)
def test_first_acquirer_false_is_redelivered(count: int | None, side: Any) -> None:
    """0-10's redelivered means "may have been delivered before": first-acquirer false says so."""
    header = Header(first_acquirer=False, delivery_count=None if count is None else uint(count))
    dp, mp, body = amqp010(AmqpMessage(header=header))  # and back: the same count, first-acquirer
    assert dp.redelivered is True
    headers = mp.application_headers or {}
    assert headers["x-amqp-1.0.first-acquirer"] is False
    assert headers.get("x-amqp-1.0.delivery-count", "absent") == side
    wire = (t.decode_struct_body(dp.encode()[4:], 0), t.decode_struct_body(mp.encode()[4:], 0))
    restored = to_amqp10(*wire, body).header
    assert (restored.first_acquirer, typed1(restored.delivery_count)) == (
        False,
        typed1(header.delivery_count),
    )


def test_first_acquirer_true_with_count_0_is_not_redelivered() -> None:
    dp, _, _ = amqp010(AmqpMessage(header=Header(first_acquirer=True, delivery_count=uint(0))))
    assert not dp.redelivered


@pytest.mark.parametrize("count", [None, 0])
def test_a_count_0_or_void_without_first_acquirer_false_is_stale(count: int | None) -> None:
    """Written only beside first-acquirer false: without it the redelivered flag wins."""
    dp = DeliveryProperties(redelivered=True)
    mp = MessageProperties(
        application_headers={"x-amqp-1.0.delivery-count": None if count is None else t.UInt32(0)}
    )
    assert to_amqp10(dp, mp, b"").header.delivery_count == 1


@pytest.mark.parametrize(("seconds", "ms"), [(0, 0), (1795302455, 1795302455000), (-1, -1000)])
def test_datetimes_are_seconds_timestamps_are_ms(seconds: int, ms: int) -> None:
    message = amqp10(DeliveryProperties(timestamp=seconds, expiration=seconds + 1))
    assert message.properties.creation_time == ms
    assert message.properties.absolute_expiry_time == ms + 1000
    assert type(message.properties.creation_time) is timestamp


@pytest.mark.parametrize(("ms", "seconds"), [(1795302455688, 1795302455), (-1, -1), (1500, 1)])
def test_sub_second_timestamps_keep_their_milliseconds(ms: int, seconds: int) -> None:
    dp, mp, _ = amqp010(
        AmqpMessage(properties=Properties(creation_time=ms, absolute_expiry_time=ms))
    )
    assert (dp.timestamp, dp.expiration) == (seconds, seconds)
    assert mp.application_headers == {
        "x-amqp-1.0.creation-time": ms,
        "x-amqp-1.0.absolute-expiry-time": ms,
    }


def test_stale_milliseconds_are_dropped() -> None:
    """A 0-10 application moved the timestamp: the 0-10 field wins."""
    dp, mp, body = from_amqp10(AmqpMessage(properties=Properties(creation_time=1500)))
    dp.timestamp = 7
    assert to_amqp10(dp, mp, body).properties.creation_time == 7000


@pytest.mark.parametrize(
    ("dp", "annotations"),
    [
        (DeliveryProperties(exchange=""), {EXCHANGE: ""}),
        (DeliveryProperties(exchange="amq.direct"), {EXCHANGE: "amq.direct"}),
        (
            DeliveryProperties(discard_unroutable=True, immediate=True),
            {symbol("x-amqp-0-10.discard-unroutable"): True, symbol("x-amqp-0-10.immediate"): True},
        ),
        (
            DeliveryProperties(resume_id="r", resume_ttl=5),
            {symbol("x-amqp-0-10.resume-id"): "r", symbol("x-amqp-0-10.resume-ttl"): ulong(5)},
        ),
    ],
)
def test_0_10_only_delivery_fields_ride_in_annotations(
    dp: DeliveryProperties, annotations: dict[Any, Any]
) -> None:
    message = amqp10(dp)
    assert typed1(message.message_annotations) == typed1(annotations)
    assert typed10(amqp010(message)[0]) == typed10(dp)


# --- routing key and subject ----------------------------------------------------------------------

LONG_SUBJECT = "é" * 200  # 400 UTF-8 octets
LONG_CUT = "é" * 127  # at most 255 octets, on a character boundary


@pytest.mark.parametrize(
    ("routing_key", "headers", "subject", "annotation"),
    [
        ("rk", None, "rk", "rk"),  # issue: routing-key <-> subject and the annotation
        (None, None, None, None),
        (
            "rk",
            {"qpid.subject": "rk"},
            "rk",
            None,
        ),  # qpid.messaging to a topic: implied by the subject
        (
            "orders",
            {"qpid.subject": "order.created"},
            "order.created",
            "orders",
        ),  # qpid.messaging to a queue
        ("rk", {"qpid.subject": None}, None, "rk"),
        (None, {"qpid.subject": "s"}, "s", ...),  # ...: the annotation is present and null
        (
            LONG_CUT,
            {"qpid.subject": LONG_SUBJECT},
            LONG_SUBJECT,
            None,
        ),  # as the bridge writes long subjects
    ],
)
def test_subject_and_routing_key_from_0_10(
    routing_key: str | None, headers: dict[str, Any] | None, subject: str | None, annotation: Any
) -> None:
    dp = DeliveryProperties(routing_key=routing_key)
    mp = MessageProperties(application_headers=headers)
    message = amqp10(dp, mp)
    assert message.properties.subject == subject
    assert "qpid.subject" not in message.application_properties
    if annotation is None:
        assert ROUTING_KEY not in message.message_annotations
    else:
        assert message.message_annotations[ROUTING_KEY] == (
            None if annotation is ... else annotation
        )
    dp2, mp2, _ = amqp010(message)
    assert (typed10(dp2), typed10(mp2)) == (typed10(dp), typed10(mp))


def test_a_typed_qpid_subject_header_is_an_ordinary_property() -> None:
    message = amqp10(
        DeliveryProperties(routing_key="rk"),
        MessageProperties(application_headers={"qpid.subject": t.Str8("s")}),
    )
    assert message.properties.subject == "rk"
    assert message.application_properties == {"qpid.subject": "s"}


@pytest.mark.parametrize(
    ("annotations", "subject", "routing_key", "carrier"),
    [
        ({}, "order.created", "order.created", "order.created"),  # what qpidd writes too
        ({}, None, None, ...),
        ({}, LONG_SUBJECT, LONG_CUT, LONG_SUBJECT),
        ({ROUTING_KEY: "rk"}, "rk", "rk", ...),
        ({ROUTING_KEY: "rk"}, None, "rk", None),
        ({ROUTING_KEY: "rk"}, "other", "rk", "other"),
        ({ROUTING_KEY: None}, None, None, None),
        ({ROUTING_KEY: None}, "s", None, "s"),
    ],
)
def test_subject_and_routing_key_from_1_0(
    annotations: dict[Any, Any], subject: str | None, routing_key: str | None, carrier: Any
) -> None:
    dp, mp, _ = amqp010(
        AmqpMessage(message_annotations=annotations, properties=Properties(subject=subject))
    )
    assert dp.routing_key == routing_key
    headers = mp.application_headers or {}
    if carrier is ...:
        assert "qpid.subject" not in headers
    else:
        assert headers["qpid.subject"] == carrier


def test_qpid_subject_property_equal_to_the_subject_travels_once() -> None:
    """qpidd's 1.0 output repeats the subject as this property: one value, one header."""
    message = AmqpMessage(
        properties=Properties(subject="s"), application_properties={"qpid.subject": "s"}
    )
    dp, mp, body = from_amqp10(message)
    assert (dp.routing_key, mp.application_headers) == ("s", {"qpid.subject": "s"})
    back = to_amqp10(dp, mp, body)
    assert (back.properties.subject, back.application_properties) == ("s", {})


@pytest.mark.parametrize(
    "message",
    [
        AmqpMessage(
            properties=Properties(subject="s"), application_properties={"qpid.subject": "t"}
        ),
        AmqpMessage(properties=Properties(subject="s"), application_properties={"qpid.subject": 5}),
        AmqpMessage(application_properties={"qpid.subject": "t"}),
        AmqpMessage(application_properties={"qpid.subject": None}),
    ],
)
def test_conflicting_qpid_subject_property_is_rejected(message: AmqpMessage) -> None:
    with pytest.raises(MappingError) as error:
        from_amqp10(message)
    assert error.value.field == "application_properties['qpid.subject']"


def test_non_string_qpid_subject_property_without_subject_is_ordinary() -> None:
    assert headers_of(AmqpMessage(application_properties={"qpid.subject": 5})) == {
        "qpid.subject": 5
    }


# --- message-properties <-> properties ------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply_to", "address", "annotation"),
    [
        (ReplyTo("amq.direct", "replies"), "amq.direct/replies", None),
        (ReplyTo(None, "q"), "q", None),
        (ReplyTo("amq.topic", None), "amq.topic", {"exchange": "amq.topic"}),
        (ReplyTo("amq.topic", "a/b"), "amq.topic/a/b", None),
        (ReplyTo("", "q"), "q", {"exchange": "", "routing-key": "q"}),  # empty exchange
        (ReplyTo(None, "a/b"), "a/b", {"routing-key": "a/b"}),  # '/' in a key without exchange
        (ReplyTo(), "", {}),  # what qpidd made of an unknown 1.0 reply-to (capture)
        (ReplyTo("e", ""), "e/", None),
    ],
)
def test_reply_to(reply_to: ReplyTo, address: str, annotation: dict[str, str] | None) -> None:
    message = amqp10(mp=MessageProperties(reply_to=reply_to))
    assert message.properties.reply_to == address
    assert message.message_annotations.get(symbol("x-amqp-0-10.reply-to")) == annotation
    assert amqp010(message)[1].reply_to == reply_to


@pytest.mark.parametrize(
    ("address", "reply_to", "side"),
    [
        ("amq.direct/replies", ReplyTo("amq.direct", "replies"), False),
        ("queue", ReplyTo(None, "queue"), False),
        ("", ReplyTo(None, ""), False),
        ("/queues/replies", ReplyTo("", "queues/replies"), True),  # RabbitMQ 4 style address
        ("amqps://host:5671/q", ReplyTo("amqps:", "/host:5671/q"), False),
        ("x" * 300, None, True),  # longer than a 0-10 routing key: travels only in the header
    ],
)
def test_reply_to_from_1_0(address: str, reply_to: ReplyTo | None, side: bool) -> None:
    _, mp, _ = amqp010(AmqpMessage(properties=Properties(reply_to=address)))
    assert mp.reply_to == reply_to
    assert ("x-amqp-1.0.reply-to" in (mp.application_headers or {})) is side


def test_stale_reply_to_annotation_travels_as_it_is() -> None:
    """A 1.0 application changed reply-to after the annotation was written: the string wins."""
    message = AmqpMessage(
        properties=Properties(reply_to="other"),
        message_annotations={symbol("x-amqp-0-10.reply-to"): {"exchange": ""}},
    )
    assert amqp010(message)[1].reply_to == ReplyTo(None, "other")


@pytest.mark.parametrize(
    ("message_id", "side"),
    [
        (uuid.UUID(int=7), None),
        ("8e57ea7a-5e2a-4ad8-ab75-e4cfe858ea25", "8e57ea7a-5e2a-4ad8-ab75-e4cfe858ea25"),
        ("ce-1", "ce-1"),
        (b"\x01" * 16, b"\x01" * 16),
        (b"short", b"short"),
        (ulong(42), t.UInt64(42)),
    ],
)
def test_message_id(message_id: Any, side: Any) -> None:
    _, mp, _ = amqp010(AmqpMessage(properties=Properties(message_id=message_id)))
    assert mp.message_id == message_id_uuid(message_id)
    assert typed10((mp.application_headers or {}).get("x-amqp-1.0.message-id")) == typed10(side)


def test_message_id_uuids() -> None:
    assert message_id_uuid("8E57EA7A-5E2A-4AD8-AB75-E4CFE858EA25") == uuid.UUID(
        "8e57ea7a-5e2a-4ad8-ab75-e4cfe858ea25"
    )
    assert message_id_uuid(b"\x01" * 16) == uuid.UUID(bytes=b"\x01" * 16)
    derived = [message_id_uuid(v) for v in ("42", b"42", ulong(42), "ce-1")]
    assert len(set(derived)) == 4, "each 1.0 id type has its own namespace"
    assert all(u.version == 5 for u in derived)
    assert message_id_uuid("ce-1") == message_id_uuid("ce-1")


def test_stale_original_message_id_is_dropped() -> None:
    """A 0-10 reply copied the request's headers but has its own message-id."""
    _, request, _ = from_amqp10(AmqpMessage(properties=Properties(message_id="req-1")))
    reply = MessageProperties(
        message_id=uuid.UUID(int=9), application_headers=request.application_headers
    )
    assert to_amqp10(None, reply, b"").properties.message_id == uuid.UUID(int=9)


@pytest.mark.parametrize(
    ("correlation_id", "wire", "side"),
    [
        ("corr-0", b"corr-0", None),
        (b"\xff\x00", b"\xff\x00", None),
        (b"bytes", b"bytes", b"bytes"),  # valid UTF-8 would read back as a string
        (uuid.UUID(int=1), b"00000000-0000-0000-0000-000000000001", uuid.UUID(int=1)),  # as qpidd
        (ulong(7), b"7", t.UInt64(7)),  # as qpidd
    ],
)
def test_correlation_id(correlation_id: Any, wire: bytes, side: Any) -> None:
    _, mp, _ = amqp010(AmqpMessage(properties=Properties(correlation_id=correlation_id)))
    assert mp.correlation_id == wire
    assert typed10((mp.application_headers or {}).get("x-amqp-1.0.correlation-id")) == typed10(side)


def test_correlation_id_from_0_10_is_a_string_when_it_is_utf8() -> None:
    assert amqp10(mp=MessageProperties(correlation_id=b"corr")).properties.correlation_id == "corr"
    assert amqp10(mp=MessageProperties(correlation_id=b"\xff")).properties.correlation_id == b"\xff"


@pytest.mark.parametrize(
    ("app_id", "value", "side"),
    [
        (b"capture-app", "capture-app", None),
        (b"\xff", b"\xff", None),
    ],
)
def test_app_id(app_id: bytes, value: Any, side: Any) -> None:
    message = amqp10(mp=MessageProperties(app_id=app_id))
    assert typed1(message.application_properties) == typed1({"x-amqp-0-10.app-id": value})
    assert amqp010(message)[1].app_id == app_id


@pytest.mark.parametrize(
    ("value", "wire", "recorded"),
    [
        ("app", b"app", None),
        (b"app", b"app", "binary"),
        (symbol("app"), b"app", "symbol"),
        (b"\xff", b"\xff", None),
    ],
)
def test_app_id_from_1_0(value: Any, wire: bytes, recorded: str | None) -> None:
    _, mp, _ = amqp010(AmqpMessage(application_properties={"x-amqp-0-10.app-id": value}))
    assert mp.app_id == wire
    assert (mp.application_headers or {}).get("x-amqp-1.0.property-types", {}).get(
        "x-amqp-0-10.app-id"
    ) == recorded


def test_app_id_header_repeating_the_app_id_is_kept_once() -> None:
    """qpidd and qpid.messaging write the app-id both as the field and as this header."""
    mp = MessageProperties(app_id=b"app", application_headers={"x-amqp-0-10.app-id": "app"})
    message = to_amqp10(None, mp, b"")
    assert message.application_properties == {"x-amqp-0-10.app-id": "app"}
    assert from_amqp10(message)[1] == MessageProperties(app_id=b"app")


def test_app_id_header_that_differs_from_the_app_id_is_rejected() -> None:
    mp = MessageProperties(app_id=b"app", application_headers={"x-amqp-0-10.app-id": "other"})
    with pytest.raises(MappingError) as error:
        to_amqp10(None, mp, b"")
    assert error.value.field == "message_properties.application_headers['x-amqp-0-10.app-id']"


@pytest.mark.parametrize(
    "properties",
    [
        Properties(to="/queues/q"),
        Properties(group_id="g", group_sequence=uint(3), reply_to_group_id="r"),
    ],
)
def test_1_0_only_properties_ride_in_headers(properties: Properties) -> None:
    headers = headers_of(AmqpMessage(properties=properties))
    assert set(headers) <= {
        "x-amqp-1.0.to",
        "x-amqp-1.0.group-id",
        "x-amqp-1.0.group-sequence",
        "x-amqp-1.0.reply-to-group-id",
    }
    assert headers.get("x-amqp-1.0.group-sequence") in (None, t.UInt32(3))


def test_content_type_encoding_and_user_id() -> None:
    mp = MessageProperties(
        content_type="application/json", content_encoding="gzip", user_id=b"guest", content_length=3
    )
    message = amqp10(mp=mp, body=b"abc")
    assert (message.properties.content_type, message.properties.content_encoding) == (
        "application/json",
        "gzip",
    )
    assert type(message.properties.content_type) is symbol
    assert message.properties.user_id == b"guest"
    assert message.message_annotations[symbol("x-amqp-0-10.content-length")] == 3
    assert typed10(amqp010(message)[1]) == typed10(mp)


# --- application headers <-> application properties -----------------------------------------------


def test_simple_headers_keep_their_type_nested_ones_ride_in_an_annotation() -> None:
    headers = {
        "i8": t.Int8(-1),
        "u64": t.UInt64(5),
        "f": t.Float32(0.5),
        "when": t.Datetime(60),
        "void": None,
        "s8": t.Str8("s"),
        "bin": t.Bin32(b"abcd"),
        "map": {"a": t.Str8("x")},
        "list": [1],
        "array": t.Array(0x21, [t.Int32(2)]),
    }
    message = amqp10(mp=MessageProperties(application_headers=headers))
    assert typed1(message.application_properties) == typed1(
        {
            "i8": byte(-1),
            "u64": ulong(5),
            "f": float32(0.5),
            "when": timestamp(60000),
            "void": None,
            "s8": "s",
            "bin": b"abcd",
        }
    )
    assert typed1(message.message_annotations) == typed1(
        {
            symbol("x-amqp-0-10.header-types"): {"s8": "str8", "bin": "bin32"},
            symbol("x-amqp-0-10.app-headers"): {
                "map": {"a": Described(symbol("x-amqp-0-10:str8"), "x")},
                "list": [1],
                "array": Array(UNDESCRIBED, Data.INT, int32(2)),
            },
        }
    )
    assert typed10(amqp010(message)[1].application_headers) == typed10(headers)


def test_an_empty_header_map_is_not_an_absent_one() -> None:
    message = amqp10(mp=MessageProperties(application_headers={}))
    assert message.message_annotations == {symbol("x-amqp-0-10.app-headers"): {}}
    assert amqp010(message)[1].application_headers == {}
    assert amqp010(amqp10(mp=MessageProperties()))[1].application_headers is None


def test_1_0_types_0_10_lacks_are_recorded() -> None:
    properties = {
        "sym": symbol("s"),
        "ts": timestamp(1500),
        "whole": timestamp(2000),
        "d32": decimal32(7),
    }
    headers = headers_of(AmqpMessage(application_properties=properties))
    assert typed10(headers) == typed10(
        {
            "sym": "s",
            "ts": 1500,
            "whole": t.Datetime(2),
            "d32": t.Bin32(bytes.fromhex("00000007")),
            "x-amqp-1.0.property-types": {"sym": "symbol", "ts": "timestamp", "d32": "decimal32"},
        }
    )


STRING_CODES = {0x85, 0x95}  # str8, str16 (UTF-8): what 0-10 clients decode as a string


@pytest.mark.parametrize("character", ["x", "é", "☃", "😀"])
def test_a_char_property_is_a_one_character_string_in_0_10(character: str) -> None:
    """qpid-python cannot decode char-utf32 (its session stalls; qpidd closes the connection)."""
    message = AmqpMessage(application_properties={"c": char(character), "s": "text"})
    _, mp, body = from_amqp10(message)
    encoded = mp.encode()
    decoded = t.decode_struct_body(encoded[4:], 0)  # what a 0-10 peer reads
    headers = decoded.application_headers
    assert headers["c"] == character
    # the wire type code our codec wrote, read by the independent scanner of the capture tests
    out = bytearray()
    t.encode_map(out, headers)
    assert out in encoded
    codes = {entry.key: entry.code for entry in scan_entries(bytes(out), 0, is_map=True)}
    assert codes["c"] in STRING_CODES
    assert headers["x-amqp-1.0.property-types"] == {"c": "char"}
    # and back: a proton char
    back = to_amqp10(None, decoded, body).application_properties
    assert type(back["c"]) is char and back["c"] == character
    assert typed1(back) == typed1(message.application_properties)


def test_a_char_utf32_header_from_0_10_comes_back_as_one() -> None:
    message = amqp10(mp=MessageProperties(application_headers={"c": t.CharUTF32("☃")}))
    assert typed1(message.application_properties) == typed1({"c": char("☃")})
    assert message.message_annotations[symbol("x-amqp-0-10.header-types")] == {"c": "char-utf32"}
    assert typed10(from_amqp10(message)[1].application_headers) == typed10({"c": t.CharUTF32("☃")})


def test_a_string_in_place_of_a_recorded_char_is_a_string() -> None:
    """A 0-10 application changed the value: the recorded type no longer applies."""
    mp = MessageProperties(
        application_headers={"c": "ab", "x-amqp-1.0.property-types": {"c": "char"}}
    )
    assert typed1(to_amqp10(None, mp, b"").application_properties) == typed1({"c": "ab"})


def test_stale_header_types_travel_as_they_are() -> None:
    """A 1.0 application changed a property the 0-10 side typed: the type no longer applies."""
    message = AmqpMessage(
        application_properties={"s": 5},
        message_annotations={symbol("x-amqp-0-10.header-types"): {"s": "str8"}},
    )
    headers = headers_of(message)
    assert headers["s"] == 5 and type(headers["s"]) is int
    assert headers["x-amqp-1.0.message-annotations"] == {"x-amqp-0-10.header-types": {"s": "str8"}}


# --- bodies ---------------------------------------------------------------------------------------

QPIDD_MAP_BODY = bytes.fromhex(
    "0000001500000002016b95000176016e310000000000000002"
)  # translate capture


@pytest.mark.parametrize(
    ("kind", "body", "content_type", "wire", "marker"),
    [
        (BodyKind.DATA, [b"\x00\x01"], None, b"\x00\x01", None),
        (BodyKind.VALUE, {"k": "v", "n": 2}, "amqp/map", QPIDD_MAP_BODY, None),
        (BodyKind.VALUE, [1, "two"], "amqp/list", None, None),
        (BodyKind.VALUE, "just text", "text/plain", b"just text", "amqp-value"),
        (BodyKind.VALUE, None, BODY_CONTENT_TYPE, None, None),
        (BodyKind.VALUE, 5, BODY_CONTENT_TYPE, None, None),
        (
            BodyKind.VALUE,
            {symbol("k"): 1},
            BODY_CONTENT_TYPE,
            None,
            None,
        ),  # symbol keys: no 0-10 map
        (BodyKind.VALUE, {"t": timestamp(1)}, BODY_CONTENT_TYPE, None, None),
        (BodyKind.DATA, [b"a", b"b"], BODY_CONTENT_TYPE, None, None),
        (BodyKind.SEQUENCE, [[1], ["x"]], BODY_CONTENT_TYPE, None, None),
    ],
)
def test_bodies_from_1_0(
    kind: BodyKind, body: Any, content_type: str | None, wire: bytes | None, marker: str | None
) -> None:
    _, mp, data = amqp010(AmqpMessage(body_kind=kind, body=body))
    assert mp.content_type == content_type
    if wire is not None:
        assert data == wire
    assert (mp.application_headers or {}).get("x-amqp-1.0.body") == marker


@pytest.mark.parametrize(
    "content_type", [None, "application/octet-stream", "text/plain", "amqp/map", BODY_CONTENT_TYPE]
)
def test_amqp_value_binary_is_the_bytes_themselves(content_type: str | None) -> None:
    """proton's Message(body=b"job 0"): the 0-10 body is b"job 0", with the 1.0 content-type
    (as qpidd delivers it), and the marker brings the amqp-value back (amqp010 checks)."""
    message = AmqpMessage(body=b"job 0", properties=Properties(content_type=content_type))
    _, mp, data = amqp010(message)
    assert data == b"job 0"
    assert mp.content_type == content_type
    assert mp.application_headers == {"x-amqp-1.0.body": "amqp-value-binary"}


def test_a_large_amqp_value_binary_does_not_grow() -> None:
    body = bytes(range(256)) * 4096  # 1 MiB
    _, mp, data = amqp010(AmqpMessage(body=body))
    assert data == body  # not 1 MiB plus a 1.0 encoding
    assert len(mp.encode()) < 64


def test_amqp_value_binary_with_a_content_type_0_10_cannot_hold() -> None:
    """Over 255 octets: the 1.0 encoding of the body, the content-type in a header."""
    content_type = "application/x-" + "a" * 250
    message = AmqpMessage(body=b"job", properties=Properties(content_type=content_type))
    _, mp, data = amqp010(message)
    assert mp.content_type == BODY_CONTENT_TYPE
    assert mp.application_headers == {"x-amqp-1.0.content-type": content_type}
    assert data == bytes.fromhex("005377a0036a6f62")


def test_an_encoded_amqp_value_binary_is_data_without_a_long_content_type() -> None:
    """The 1.0 encoding of an amqp-value binary is only what from_amqp10 writes for a long
    content-type: from a 0-10 peer it is data."""
    body = bytes.fromhex("005377a0036a6f62")
    message = amqp10(mp=MessageProperties(content_type=BODY_CONTENT_TYPE), body=body)
    assert (message.body_kind, message.body) == (BodyKind.DATA, [body])


def test_body_encoding_is_the_1_0_encoding_of_the_sections() -> None:
    _, _, data = from_amqp10(AmqpMessage(body_kind=BodyKind.DATA, body=[b"a", b"b"]))
    assert data == bytes.fromhex("005375a00161") + bytes.fromhex("005375a00162")


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("amqp/map", QPIDD_MAP_BODY),  # looks like what a map body becomes
        ("text/plain", b"text"),
        (BODY_CONTENT_TYPE, bytes.fromhex("0053770a")),  # ... an encoded 1.0 body
    ],
)
def test_data_that_would_read_back_as_something_else_is_marked(
    content_type: str, body: bytes
) -> None:
    message = AmqpMessage(
        body_kind=BodyKind.DATA, body=[body], properties=Properties(content_type=content_type)
    )
    _, mp, data = amqp010(message)
    assert (data, mp.content_type) == (body, content_type)


def test_amqp_value_content_type_travels_in_a_header() -> None:
    message = AmqpMessage(body="x", properties=Properties(content_type="text/plain"))
    _, mp, _ = amqp010(message)
    assert (mp.content_type, mp.application_headers) == (
        "text/plain",
        {"x-amqp-1.0.body": "amqp-value", "x-amqp-1.0.content-type": "text/plain"},
    )


@pytest.mark.parametrize(
    ("content_type", "body", "kind", "value"),
    [
        ("amqp/map", QPIDD_MAP_BODY, BodyKind.VALUE, {"k": "v", "n": 2}),
        (
            "amqp/list",
            bytes.fromhex("0000000f000000023100000000000000010800"),
            BodyKind.VALUE,
            [1, False],
        ),
        ("amqp/map", b"not a map", BodyKind.DATA, [b"not a map"]),
        (
            "amqp/map",
            bytes.fromhex("000000080000000101620802"),
            BodyKind.DATA,  # boolean 2: not canonical
            [bytes.fromhex("000000080000000101620802")],
        ),
        ("amqp/map", QPIDD_MAP_BODY + b"\x00", BodyKind.DATA, [QPIDD_MAP_BODY + b"\x00"]),
        ("text/plain", b"caf\xc3\xa9", BodyKind.DATA, [b"caf\xc3\xa9"]),
        (None, b"", BodyKind.DATA, [b""]),  # qpidd writes no body section at all here
        (BODY_CONTENT_TYPE, bytes.fromhex("0053775505"), BodyKind.VALUE, 5),
        (
            BODY_CONTENT_TYPE,
            bytes.fromhex("005377810000000000000005"),
            BodyKind.DATA,  # not the canonical form
            [bytes.fromhex("005377810000000000000005")],
        ),
        (
            BODY_CONTENT_TYPE,
            bytes.fromhex("005377a105686f6c6c61"),
            BodyKind.DATA,  # strings travel as text/plain
            [bytes.fromhex("005377a105686f6c6c61")],
        ),
    ],
)
def test_bodies_from_0_10(
    content_type: str | None, body: bytes, kind: BodyKind, value: Any
) -> None:
    message = amqp10(mp=MessageProperties(content_type=content_type), body=body)
    if kind is BodyKind.DATA:
        assert (message.body_kind, message.body) == (BodyKind.DATA, value)
    else:
        assert (message.body_kind, typed1(message.body)) == (kind, typed1(value))
        assert message.properties.content_type is None
    assert amqp010(message)[2] == body


# --- annotations and footer -----------------------------------------------------------------------


def test_annotation_sections_as_0_10_maps_when_exact() -> None:
    message = AmqpMessage(
        delivery_annotations={symbol("x-opt-trace"): "abc"},
        message_annotations={symbol("x-opt-n"): 5},
        footer={symbol("sig"): b"\x01"},
    )
    assert headers_of(message) == {
        "x-amqp-1.0.delivery-annotations": {"x-opt-trace": "abc"},
        "x-amqp-1.0.message-annotations": {"x-opt-n": 5},
        "x-amqp-1.0.footer": {"sig": b"\x01"},
    }


@pytest.mark.parametrize(
    "annotations",
    [
        {symbol("x-opt-time"): timestamp(1795302455688)},
        {symbol("x-opt-dest"): symbol("queue")},
        {ulong(7): "numeric key"},
    ],
)
def test_annotation_sections_as_1_0_encoding_otherwise(annotations: dict[Any, Any]) -> None:
    carried = headers_of(AmqpMessage(message_annotations=annotations))[
        "x-amqp-1.0.message-annotations"
    ]
    assert type(carried) is bytes
    assert typed1(AmqpMessage.decode_bare(carried).body) == typed1(annotations)


# --- limits and malformed input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dp", "mp", "field"),
    [
        (DeliveryProperties(ttl=2**32), None, "delivery_properties.ttl"),
        (DeliveryProperties(delivery_mode=3), None, "delivery_properties.delivery_mode"),
        (DeliveryProperties(timestamp=2**62), None, "delivery_properties.timestamp"),
        (None, MessageProperties(content_type="tëxt/plain"), "message_properties.content_type"),
        (None, MessageProperties(content_encoding="ütf-8"), "message_properties.content_encoding"),
        (
            None,
            MessageProperties(application_headers={"k": Decimal("1.5")}),
            "message_properties.application_headers['k']",
        ),
        (
            None,
            MessageProperties(application_headers={"x-amqp-1.0.to": 5}),
            "message_properties.application_headers['x-amqp-1.0.to']",
        ),
        (
            None,
            MessageProperties(application_headers={"x-amqp-1.0.body": "json"}),
            "message_properties.application_headers['x-amqp-1.0.body']",
        ),
        (
            None,
            MessageProperties(application_headers={"x-amqp-1.0.property-types": {"k": "int"}}),
            "message_properties.application_headers['x-amqp-1.0.property-types']",
        ),
        (
            None,
            MessageProperties(application_headers={"x-amqp-1.0.message-id": 5}),
            "message_properties.application_headers['x-amqp-1.0.message-id']",
        ),
        (
            None,
            MessageProperties(application_headers={"x-amqp-1.0.footer": "x"}),
            "message_properties.application_headers['x-amqp-1.0.footer']",
        ),
        (
            None,
            MessageProperties(application_headers={"x-amqp-1.0.message-annotations": b"\x00"}),
            "message_properties.application_headers['x-amqp-1.0.message-annotations']",
        ),
        # malformed even where the field it annotates is absent
        (
            None,
            MessageProperties(application_headers={"x-amqp-1.0.creation-time": "x"}),
            "message_properties.application_headers['x-amqp-1.0.creation-time']",
        ),
        (
            None,
            MessageProperties(application_headers={"x-amqp-1.0.content-type": 5}),
            "message_properties.application_headers['x-amqp-1.0.content-type']",
        ),
    ],
)
def test_what_1_0_cannot_hold_is_rejected(
    dp: DeliveryProperties | None, mp: MessageProperties | None, field: str
) -> None:
    with pytest.raises(MappingError) as error:
        to_amqp10(dp, mp, b"")
    assert error.value.field == field


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (
            AmqpMessage(application_properties={"k" * 256: 1}),
            "application_properties['" + "k" * 256 + "']",
        ),
        (
            AmqpMessage(application_properties={"x-amqp-1.0.to": "q"}),
            "application_properties['x-amqp-1.0.to']",
        ),
        (AmqpMessage(application_properties={"s": "☃" * 30000}), "application_properties['s']"),
        (AmqpMessage(application_properties={"l": [1]}), "application_properties['l']"),
        (AmqpMessage(properties=Properties(user_id=b"u" * 65536)), "properties.user_id"),
        (
            AmqpMessage(
                body_kind=BodyKind.DATA,
                body=[b""],
                properties=Properties(content_type=symbol("t" * 256)),
            ),
            "properties.content_type",
        ),
        (
            AmqpMessage(properties=Properties(correlation_id="c" * 65536)),
            "properties.correlation_id",
        ),
        (AmqpMessage(properties=Properties(to="t" * 65536)), "properties.to"),
        (
            AmqpMessage(message_annotations={ROUTING_KEY: "k" * 256}),
            "message_annotations['x-amqp-0-10.routing-key']",
        ),
        (
            AmqpMessage(message_annotations={ROUTING_KEY: 5}),
            "message_annotations['x-amqp-0-10.routing-key']",
        ),
        (
            AmqpMessage(message_annotations={EXCHANGE: b"x"}),
            "message_annotations['x-amqp-0-10.exchange']",
        ),
        (
            AmqpMessage(message_annotations={symbol("x-amqp-0-10.immediate"): "yes"}),
            "message_annotations['x-amqp-0-10.immediate']",
        ),
        (
            AmqpMessage(message_annotations={symbol("x-amqp-0-10.resume-ttl"): -1}),
            "message_annotations['x-amqp-0-10.resume-ttl']",
        ),
        (
            AmqpMessage(
                message_annotations={ROUTING_KEY: LONG_CUT},
                properties=Properties(subject=LONG_SUBJECT),
            ),
            "message_annotations['x-amqp-0-10.routing-key']",
        ),
    ],
)
def test_what_0_10_cannot_hold_is_rejected(message: AmqpMessage, field: str) -> None:
    with pytest.raises(MappingError) as error:
        from_amqp10(message)
    assert error.value.field == field


def test_absent_structs_are_empty_ones() -> None:
    assert typed_message(to_amqp10(None, None, b"x")) == typed_message(
        to_amqp10(DeliveryProperties(), MessageProperties(), b"x")
    )
