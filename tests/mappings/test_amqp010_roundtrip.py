"""Round trips 0-10 -> 1.0 -> 0-10 and 1.0 -> 0-10 -> 1.0 give back equal messages.

Each trip crosses both wire encodings (the 0-10 struct codec and AmqpMessage's
1.0 codec), so the mapping's outputs are also checked to be encodable and to
decode to exactly what the mapping produced. Equality is typed (see
``typed10`` / ``typed1``): a value that comes back with another wire type fails.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from amqp010 import types as t
from amqp010.spec import DeliveryProperties, MessageProperties, ReplyTo
from mappings.amqp010 import (
    APP_ID_PROPERTY,
    BODY_CONTENT_TYPE,
    LIST_CONTENT_TYPE,
    MAP_CONTENT_TYPE,
    SIDE_HEADERS,
    SUBJECT_HEADER,
    TEXT_CONTENT_TYPE,
    from_amqp10,
    to_amqp10,
)
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind, Properties
from tests.mappings.strategies import amqp_values, messages
from tests.mappings.test_amqp010_values import text, typed10, typed_message, values010

# --- 0-10 messages --------------------------------------------------------------------------------

str8s = st.text(max_size=12)
ascii_text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=16)
u64s = st.integers(0, 2**64 - 1)
seconds = st.integers(-(2**63) // 1000 + 1, (2**63 - 1) // 1000)
header_keys = (text | st.just(SUBJECT_HEADER)).filter(
    lambda key: key not in SIDE_HEADERS and key != APP_ID_PROPERTY
)


def _optional(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


def _encoded(kind: int, value: Any) -> bytes:
    out = bytearray()
    (t.encode_map if kind == 0xA8 else t.encode_list)(out, value)
    return bytes(out)


@st.composite
def bodies010(draw: st.DrawFn, *, decimals: bool) -> tuple[str | None, bytes]:
    """(content-type, body): plain data, 0-10 maps/lists, encoded 1.0 bodies, and impostors."""
    choice = draw(st.sampled_from(["data", "map", "list", "amqp10", "impostor"]))
    if choice == "map":
        return MAP_CONTENT_TYPE, _encoded(
            0xA8, draw(st.dictionaries(text, values010(decimals=decimals), max_size=3))
        )
    if choice == "list":
        return LIST_CONTENT_TYPE, _encoded(
            0xA9, draw(st.lists(values010(decimals=decimals), max_size=3))
        )
    if choice == "amqp10":
        return BODY_CONTENT_TYPE, AmqpMessage(body=draw(amqp_values)).encode_bare()
    if choice == "impostor":  # a reinterpreted content-type on bytes that are not what it says
        content_type = draw(
            st.sampled_from([MAP_CONTENT_TYPE, LIST_CONTENT_TYPE, BODY_CONTENT_TYPE])
        )
        return content_type, draw(st.binary(max_size=24))
    content_type = draw(
        _optional(st.sampled_from([TEXT_CONTENT_TYPE, "application/json"]) | ascii_text)
    )
    return content_type, draw(st.binary(max_size=24))


@st.composite
def routing010(draw: st.DrawFn) -> tuple[str | None, dict[str, Any]]:
    """(routing-key, headers): every shape of routing key and qpid.subject header."""
    routing_key = draw(_optional(str8s))
    shape = draw(st.sampled_from(["none", "same", "other", "void", "long", "typed"]))
    if shape == "same" and routing_key is not None:
        return routing_key, {SUBJECT_HEADER: routing_key}
    if shape == "other":
        return routing_key, {SUBJECT_HEADER: draw(text)}
    if shape == "void":
        return routing_key, {SUBJECT_HEADER: None}
    if shape == "long":  # a subject longer than a routing key can be, and its truncation
        subject = draw(st.text(min_size=100, max_size=120))
        cut = subject.encode("utf-8")[:255].decode("utf-8", "ignore")
        return draw(st.sampled_from([cut, routing_key])), {SUBJECT_HEADER: subject}
    if shape == "typed":
        return routing_key, {SUBJECT_HEADER: draw(st.sampled_from([t.Str8("s"), 5, {"a": 1}]))}
    return routing_key, {}


@st.composite
def messages010(
    draw: st.DrawFn, *, decimals: bool = False
) -> tuple[DeliveryProperties, MessageProperties, bytes]:
    """Any 0-10 message the bridge may receive from a 0-10 peer."""
    routing_key, subject_headers = draw(routing010())
    headers = draw(
        _optional(st.dictionaries(header_keys, values010(decimals=decimals), max_size=5))
    )
    if subject_headers:
        headers = {**(headers or {}), **subject_headers}
    content_type, body = draw(bodies010(decimals=decimals))
    dp = DeliveryProperties(
        discard_unroutable=draw(st.booleans()),
        immediate=draw(st.booleans()),
        redelivered=draw(st.booleans()),
        priority=draw(_optional(st.integers(0, 255))),
        delivery_mode=draw(_optional(st.sampled_from([1, 2]))),
        ttl=draw(_optional(st.integers(0, 2**32 - 1))),
        timestamp=draw(_optional(seconds)),
        expiration=draw(_optional(seconds)),
        exchange=draw(_optional(str8s)),
        routing_key=routing_key,
        resume_id=draw(_optional(text)),
        resume_ttl=draw(_optional(u64s)),
    )
    mp = MessageProperties(
        content_length=draw(_optional(u64s)),
        message_id=draw(_optional(st.uuids())),
        correlation_id=draw(_optional(st.binary(max_size=12) | text.map(str.encode))),
        reply_to=draw(
            _optional(
                st.builds(
                    ReplyTo,
                    _optional(st.sampled_from(["", "amq.direct", "a/b"]) | str8s),
                    _optional(st.sampled_from(["", "q", "x/y"]) | str8s),
                )
            )
        ),
        content_type=content_type,
        content_encoding=draw(_optional(ascii_text)),
        user_id=draw(_optional(st.binary(min_size=1, max_size=8))),  # empty: no user-id
        app_id=draw(_optional(st.binary(max_size=8) | text.map(str.encode))),
        application_headers=headers,
    )
    return dp, mp, body


def through_0_10_wire(struct: Any) -> Any:
    """``struct`` encoded and decoded by the 0-10 codec."""
    return t.decode_struct_body(struct.encode()[4:], 0)


def through_1_0_wire(message: AmqpMessage) -> AmqpMessage:
    return AmqpMessage.decode(message.encode())


# --- properties -----------------------------------------------------------------------------------

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(messages010())
def test_0_10_to_1_0_to_0_10(message: tuple[DeliveryProperties, MessageProperties, bytes]) -> None:
    dp, mp, body = (through_0_10_wire(message[0]), through_0_10_wire(message[1]), message[2])
    mapped = to_amqp10(dp, mp, body)
    received = through_1_0_wire(mapped)
    assert typed_message(received) == typed_message(mapped), (
        "to_amqp10 made a non-canonical message"
    )
    dp2, mp2, body2 = from_amqp10(received)
    assert typed10(through_0_10_wire(dp2)) == typed10(dp2), (
        "from_amqp10 made a non-canonical struct"
    )
    assert typed10(through_0_10_wire(mp2)) == typed10(mp2), (
        "from_amqp10 made a non-canonical struct"
    )
    assert (typed10(dp2), typed10(mp2), body2) == (typed10(dp), typed10(mp), body)


@SETTINGS
@given(messages010(decimals=True))
def test_0_10_to_1_0_to_0_10_with_decimals(
    message: tuple[DeliveryProperties, MessageProperties, bytes],
) -> None:
    """Same with dec32/dec64 header values, through both wires."""
    dp, mp, body = (through_0_10_wire(message[0]), through_0_10_wire(message[1]), message[2])
    dp2, mp2, body2 = from_amqp10(through_1_0_wire(to_amqp10(dp, mp, body)))
    assert (typed10(dp2), typed10(mp2), body2) == (typed10(dp), typed10(mp), body)


@SETTINGS
@given(messages().filter(lambda m: SUBJECT_HEADER not in m.application_properties))
def test_1_0_to_0_10_to_1_0(message: AmqpMessage) -> None:
    original = through_1_0_wire(message)
    dp, mp, body = from_amqp10(original)
    dp, mp = through_0_10_wire(dp), through_0_10_wire(mp)
    assert typed_message(to_amqp10(dp, mp, body)) == typed_message(original)


@SETTINGS
@given(messages010())
def test_1_0_messages_made_from_0_10_map_back_exactly(
    message: tuple[DeliveryProperties, MessageProperties, bytes],
) -> None:
    """1.0 messages carrying the bridge's own annotations (x-amqp-0-10.*) come back too."""
    original = through_1_0_wire(to_amqp10(*message))
    dp, mp, body = from_amqp10(original)
    assert typed_message(
        to_amqp10(through_0_10_wire(dp), through_0_10_wire(mp), body)
    ) == typed_message(original)


@pytest.mark.parametrize(("subject", "value", "reason"), [
    ("orders", "other", "differs from properties.subject, which travels in this 0-10 header"),
    (None, "orders", "would be read back as properties.subject (it is the 0-10 subject header)"),
    (None, None, "would be read back as properties.subject (it is the 0-10 subject header)"),
])
def test_an_application_property_named_like_the_subject_header_is_refused_not_lost(
    subject: str | None, value: str | None, reason: str
) -> None:
    """A 1.0 application property ``qpid.subject`` would come back as the subject (or
    clash with it): the mapping refuses the message, naming the property, instead of
    changing it silently (hypothesis found these; the round trip above leaves them out)."""
    message = AmqpMessage(properties=Properties(subject=subject),
                          application_properties={SUBJECT_HEADER: value},
                          body_kind=BodyKind.DATA, body=[b"x"])
    with pytest.raises(MappingError) as refused:
        from_amqp10(message)
    assert refused.value.field == f"application_properties[{SUBJECT_HEADER!r}]"
    assert reason in str(refused.value)
