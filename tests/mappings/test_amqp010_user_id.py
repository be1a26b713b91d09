"""The user-id rules of the AMQP 0-10 <-> 1.0 mapping (docs/mapping.md, "User-id").

A broker ends the session of a publisher whose message carries a user-id other than
the user it logged in as, so a route's rule decides what the target's user-id field
may hold; the rest travels in a carrier (1.0 annotation ``x-amqp-0-10.user-id``, 0-10
header ``x-amqp-1.0.user-id``) and is restored on the way back where that route's
rule allows. An empty user-id is no user-id.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from proton import symbol

from amqp010 import types as t
from amqp010.spec import DeliveryProperties, MessageProperties
from bridge.config import parse_config
from bridge.routes.translate import Translator
from mappings.amqp010 import USER_ID_RULES, from_amqp10, to_amqp10
from mappings.errors import MappingError
from mappings.message import AmqpMessage, Properties
from tests.mappings.strategies import messages
from tests.mappings.test_amqp010_roundtrip import SETTINGS, messages010
from tests.mappings.test_amqp010_values import typed10, typed_message

ANNOTATION = symbol("x-amqp-0-10.user-id")
HEADER = "x-amqp-1.0.user-id"


def wire010(mp: MessageProperties) -> MessageProperties:
    """``mp`` through the 0-10 codec."""
    return t.decode_struct_body(mp.encode()[4:], 0)  # type: ignore[no-any-return]


def wire1(message: AmqpMessage) -> AmqpMessage:
    return AmqpMessage.decode(message.encode())


def legacy(user_id: bytes | None, **headers: Any) -> MessageProperties:
    return MessageProperties(user_id=user_id, application_headers=headers or None)


def sent_1_0(message: AmqpMessage) -> tuple[bytes | None, Any]:
    """(1.0 user-id field, x-amqp-0-10.user-id annotation or None)."""
    return message.properties.user_id, message.message_annotations.get(ANNOTATION)


def sent_0_10(mp: MessageProperties) -> tuple[bytes | None, Any]:
    """(0-10 user-id field, x-amqp-1.0.user-id header or None)."""
    return mp.user_id, (mp.application_headers or {}).get(HEADER)


# --- 0-10 -> 1.0 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "login", "expected"),
    [
        ("keep", None, (b"alice", None)),
        ("keep", "bridge", (b"alice", None)),
        ("authenticated", "alice", (b"alice", None)),
        ("authenticated", "bridge", (None, b"alice")),  # RabbitMQ would end the session
        ("authenticated", None, (None, b"alice")),  # login user unknown (ANONYMOUS, EXTERNAL)
        ("carry", "alice", (None, b"alice")),
        ("drop", "alice", (None, None)),
        ("drop", None, (None, None)),
    ],
)
def test_0_10_user_id_to_1_0(rule: str, login: str | None, expected: tuple[Any, Any]) -> None:
    message = wire1(to_amqp10(None, legacy(b"alice"), b"x", user_id=rule, login_user=login))
    assert sent_1_0(message) == expected


@pytest.mark.parametrize(
    ("rule", "login", "expected"),
    [
        ("keep", None, (b"alice", None)),
        ("authenticated", "alice", (b"alice", None)),
        ("authenticated", "bridge", (None, b"alice")),
        ("authenticated", None, (None, b"alice")),
        ("carry", "alice", (None, b"alice")),
        ("drop", "alice", (None, None)),
    ],
)
def test_1_0_user_id_to_0_10(rule: str, login: str | None, expected: tuple[Any, Any]) -> None:
    message = AmqpMessage(properties=Properties(user_id=b"alice"), body=b"x")
    _, mp, _ = from_amqp10(wire1(message), user_id=rule, login_user=login)
    assert sent_0_10(wire010(mp)) == expected


def test_a_non_ascii_login_user_is_compared_as_utf8() -> None:
    message = to_amqp10(
        None, legacy("zoë".encode()), b"", user_id="authenticated", login_user="zoë"
    )
    assert sent_1_0(message) == ("zoë".encode(), None)


@pytest.mark.parametrize("rule", USER_ID_RULES)
def test_an_empty_user_id_is_no_user_id(rule: str) -> None:
    """qpidd gives 0-10 consumers user-id b'' for messages that came in over 1.0."""
    message = wire1(to_amqp10(None, legacy(b""), b"", user_id=rule, login_user="bridge"))
    assert sent_1_0(message) == (None, None)
    assert message.message_annotations == {}
    _, mp, _ = from_amqp10(
        AmqpMessage(properties=Properties(user_id=b"")), user_id=rule, login_user="bridge"
    )
    assert sent_0_10(mp) == (None, None)
    assert mp.application_headers is None


def test_empty_user_ids_with_the_default_rule() -> None:
    assert to_amqp10(None, legacy(b""), b"").properties.user_id is None
    assert from_amqp10(AmqpMessage(properties=Properties(user_id=b"")))[1].user_id is None


def test_empty_carriers_are_no_user_id() -> None:
    assert sent_1_0(to_amqp10(None, legacy(None, **{HEADER: b""}), b"")) == (None, None)
    message = AmqpMessage(message_annotations={ANNOTATION: b""})
    assert sent_0_10(from_amqp10(message)[1]) == (None, None)


# --- carriers restored on the way back ----------------------------------------------------------


def test_0_10_user_id_carried_through_rabbitmq_comes_back() -> None:
    """A 0-10 app publishing as alice through a bridge logged into RabbitMQ as bridge."""
    carried = wire1(
        to_amqp10(None, legacy(b"alice"), b"x", user_id="authenticated", login_user="bridge")
    )
    assert sent_1_0(carried) == (None, b"alice")
    _, mp, _ = from_amqp10(carried, user_id="keep")  # to a façade subscriber
    assert sent_0_10(wire010(mp)) == (b"alice", None)
    _, mp, _ = from_amqp10(carried, user_id="authenticated", login_user="alice")
    assert sent_0_10(wire010(mp)) == (b"alice", None)
    _, mp, _ = from_amqp10(carried, user_id="authenticated", login_user="bridge")
    assert sent_0_10(wire010(mp)) == (None, b"alice")  # still carried: qpidd would refuse it too
    _, mp, _ = from_amqp10(carried, user_id="drop")
    assert sent_0_10(wire010(mp)) == (None, None)
    assert mp.application_headers is None  # the annotation is consumed, not carried on


def test_1_0_user_id_carried_through_qpidd_comes_back() -> None:
    original = wire1(AmqpMessage(properties=Properties(user_id=b"alice"), body=b"x"))
    dp, mp, body = from_amqp10(original, user_id="carry")
    mp = wire010(mp)
    assert sent_0_10(mp) == (None, b"alice")
    back = to_amqp10(dp, mp, body, user_id="authenticated", login_user="alice")
    assert typed_message(wire1(back)) == typed_message(original)
    back = to_amqp10(dp, mp, body, user_id="authenticated", login_user="guest")
    assert sent_1_0(back) == (None, b"alice")


def test_a_stale_carrier_beside_a_user_id_is_data_or_dropped() -> None:
    """A carrier is only read when the field it stands for is absent."""
    # 1.0: the annotation is the 1.0 message's data and travels on as it is
    original = wire1(
        AmqpMessage(
            properties=Properties(user_id=b"bob"), message_annotations={ANNOTATION: b"alice"}
        )
    )
    dp, mp, body = from_amqp10(original)
    assert sent_0_10(mp) == (b"bob", None)
    assert typed_message(wire1(to_amqp10(dp, wire010(mp), body))) == typed_message(original)
    # ... unless the route back carries the user-id itself: the stale one gives way
    assert sent_1_0(to_amqp10(dp, wire010(mp), body, user_id="carry")) == (None, b"bob")
    # 0-10: a stale x-amqp-1.0.* header is dropped (a 0-10 reply copying the request's headers)
    message = to_amqp10(None, legacy(b"bob", **{HEADER: b"alice"}), b"")
    assert sent_1_0(message) == (b"bob", None)
    assert message.application_properties == {}


def test_carriers_hold_binaries() -> None:
    with pytest.raises(MappingError) as info:
        from_amqp10(AmqpMessage(message_annotations={ANNOTATION: "alice"}))
    assert info.value.field == "message_annotations['x-amqp-0-10.user-id']"
    with pytest.raises(MappingError) as info:
        to_amqp10(None, legacy(None, **{HEADER: "alice"}), b"")
    assert info.value.field == "message_properties.application_headers['x-amqp-1.0.user-id']"


def test_the_carrier_header_name_is_reserved() -> None:
    with pytest.raises(MappingError) as info:
        from_amqp10(AmqpMessage(application_properties={HEADER: b"alice"}))
    assert info.value.field == "application_properties['x-amqp-1.0.user-id']"


def test_a_user_id_too_long_for_0_10_is_an_error_in_either_place() -> None:
    message = AmqpMessage(properties=Properties(user_id=b"u" * 65536))
    for rule in ("keep", "carry"):
        with pytest.raises(MappingError) as info:
            from_amqp10(message, user_id=rule)
        assert info.value.field == "properties.user_id"


def test_unknown_rule() -> None:
    with pytest.raises(ValueError, match="unknown user-id rule 'trust'"):
        to_amqp10(None, legacy(b"alice"), b"", user_id="trust")


# --- properties ---------------------------------------------------------------------------------

rules = st.sampled_from(USER_ID_RULES)


def _placed(rule: str, user_id: bytes, login: str | None) -> str:
    if rule == "drop":
        return "nowhere"
    if rule == "keep" or (rule == "authenticated" and login == user_id.decode("latin-1")):
        return "field"
    return "carrier"


@SETTINGS
@given(messages(), rules, rules, st.sampled_from([None, "u", "other"]), st.data())
def test_1_0_user_id_through_two_routes(
    message: AmqpMessage, first: str, second: str, login: str | None, data: st.DataObject
) -> None:
    """1.0 -> 0-10 under one rule, back under another: everything but the user-id comes back,
    and the user-id is where the second rule puts it (nowhere once a rule dropped it)."""
    message.message_annotations.pop(ANNOTATION, None)
    user_id = data.draw(st.sampled_from([None, b"u", b"other", b"\xff"]))
    message.properties.user_id = user_id
    original = wire1(message)
    dp, mp, body = from_amqp10(
        original, user_id=first, login_user=data.draw(st.sampled_from([None, "u"]))
    )
    back = wire1(to_amqp10(dp, wire010(mp), body, user_id=second, login_user=login))
    expected = wire1(message)
    expected.properties.user_id = None
    if user_id is not None and first != "drop":
        place = _placed(second, user_id, login)
        if place == "field":
            expected.properties.user_id = user_id
        elif place == "carrier":
            expected.message_annotations[ANNOTATION] = user_id
    assert typed_message(back) == typed_message(expected)


@SETTINGS
@given(messages010(), rules, rules, st.sampled_from([None, "u", "other"]), st.data())
def test_0_10_user_id_through_two_routes(
    message: tuple[DeliveryProperties, MessageProperties, bytes],
    first: str,
    second: str,
    login: str | None,
    data: st.DataObject,
) -> None:
    dp, mp, body = message
    user_id = data.draw(st.sampled_from([None, b"u", b"other", b"\xff"]))
    mp.user_id = user_id
    if mp.application_headers == {}:
        mp.application_headers = None  # an empty map beside a carrier header is another story
    dp, mp = t.decode_struct_body(dp.encode()[4:], 0), wire010(mp)
    carried = wire1(
        to_amqp10(dp, mp, body, user_id=first, login_user=data.draw(st.sampled_from([None, "u"])))
    )
    dp2, mp2, body2 = from_amqp10(carried, user_id=second, login_user=login)
    expected = wire010(mp)
    expected.user_id = None
    if user_id is not None and first != "drop":
        place = _placed(second, user_id, login)
        if place == "field":
            expected.user_id = user_id
        elif place == "carrier":
            expected.application_headers = {**(expected.application_headers or {}), HEADER: user_id}
    assert (typed10(dp2), typed10(wire010(mp2)), body2) == (typed10(dp), typed10(expected), body)


# --- the route option, through the Translator ---------------------------------------------------

CONFIG = """
connections:
  legacy: {{protocol: amqp0-10, url: "amqp://{legacy_user}127.0.0.1:5680"}}
  cloud:  {{protocol: amqp1.0,  url: "amqp://{cloud_user}127.0.0.1:5672"}}
listeners:
  facade: {{protocol: amqp0-10, allow_anonymous: true, bind: "127.0.0.1:5682"}}
routes:
  - name: out
    from: {{connection: legacy, queue: q}}
    to:   {{connection: cloud, address: /queue/q}}
    {option}
  - name: in
    from: {{connection: cloud, address: /queue/r}}
    to:   {{connection: legacy, queue: r}}
    {option}
  - name: facade-consume
    from: {{connection: cloud, address: /queue/q}}
    to:   {{listener: facade, queue: q}}
    {option}
"""


def translators(option: str = "", legacy_user: str = "", cloud_user: str = "") -> list[Translator]:
    cfg = parse_config(CONFIG.format(option=option, legacy_user=legacy_user, cloud_user=cloud_user))
    return [Translator(route) for route in cfg.routes]


def test_translators_apply_the_route_rule_with_the_target_login_user() -> None:
    out, into, facade = translators(cloud_user="bridge:pw@", legacy_user="alice:pw@")
    assert sent_1_0(out.legacy_to_amqp10(None, legacy(b"alice"), b"")) == (None, b"alice")
    assert sent_1_0(out.legacy_to_amqp10(None, legacy(b"bridge"), b"")) == (b"bridge", None)
    from_bob = AmqpMessage(properties=Properties(user_id=b"bob"))
    from_alice = AmqpMessage(properties=Properties(user_id=b"alice"))
    assert sent_0_10(into.amqp10_to_legacy(from_bob)[1]) == (None, b"bob")
    assert sent_0_10(into.amqp10_to_legacy(from_alice)[1]) == (b"alice", None)
    # a façade subscriber: no broker checks the user-id, so authenticated is keep
    assert sent_0_10(facade.amqp10_to_legacy(from_bob)[1]) == (b"bob", None)


def test_translators_without_a_known_login_user_carry() -> None:
    out, into, _ = translators()  # ANONYMOUS logins
    assert sent_1_0(out.legacy_to_amqp10(None, legacy(b"alice"), b"")) == (None, b"alice")
    from_bob = AmqpMessage(properties=Properties(user_id=b"bob"))
    assert sent_0_10(into.amqp10_to_legacy(from_bob)[1]) == (None, b"bob")


@pytest.mark.parametrize(
    ("rule", "expected"),
    [("keep", (b"alice", None)), ("carry", (None, b"alice")), ("drop", (None, None))],
)
def test_translators_apply_other_rules(rule: str, expected: tuple[Any, Any]) -> None:
    out, _, facade = translators(f"user_id: {rule}", cloud_user="alice:pw@")
    assert sent_1_0(out.legacy_to_amqp10(None, legacy(b"alice"), b"")) == expected
    from_alice = AmqpMessage(properties=Properties(user_id=b"alice"))
    assert sent_0_10(facade.amqp10_to_legacy(from_alice)[1]) == expected
