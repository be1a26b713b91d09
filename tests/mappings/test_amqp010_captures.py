"""The mapping on real qpid-python <-> qpidd traffic (``tests/data/captures/amqp-0-10/``).

- every recorded message.transfer maps to 1.0 and back unchanged;
- session_basic's fully populated message maps to the 1.0 message docs/mapping.md describes;
- translate_1_0_to_0_10 shows what qpidd makes of four 1.0 messages: our mapping of
  the same messages agrees field by field, except where docs/mapping.md says we differ;
- translate_bodies_and_char (``tests/data/captures/amqp-0-10-qpid-messaging/``): the 0-10
  body and content-type qpidd delivers for proton's body kinds are ours too, and the
  char property qpidd could not deliver is a string header with us.
"""

from __future__ import annotations

import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import proton
import pytest
from proton import char, symbol, timestamp, ubyte

from amqp010 import types as t
from amqp010.capture import read_streams
from amqp010.framing import Assembler, Assembly, FrameDecoder, ProtocolHeader
from amqp010.spec import (
    ConnectionClose,
    DeliveryProperties,
    MessageProperties,
    MessageTransfer,
)
from mappings.amqp010 import assembly_to_amqp10, from_amqp10, message_id_uuid, to_amqp10
from mappings.message import AmqpMessage, BodyKind, Header, Properties
from tests.data import CAPTURES_010 as CAPTURES
from tests.data import CAPTURES_QPID_MESSAGING as MESSAGING_CAPTURES
from tests.mappings.test_amqp010_values import typed1, typed10, typed_message

SCENARIOS = sorted(path.stem for path in CAPTURES.glob("*.jsonl"))


@cache
def assemblies(path: Path, direction: str) -> tuple[Assembly, ...]:
    """Every assembly (controls and commands) of one direction of a capture."""
    decoder = FrameDecoder()
    decoder.feed(read_streams(path)[direction])
    return tuple(
        item for item in decoder.assemblies(Assembler()) if not isinstance(item, ProtocolHeader)
    )


def transfers(scenario: str, direction: str) -> tuple[Assembly, ...]:
    """The message.transfer assemblies of one direction of a capture."""
    return tuple(
        item
        for item in assemblies(CAPTURES / f"{scenario}.jsonl", direction)
        if isinstance(item.op, MessageTransfer)
    )


def scenario(name: str) -> dict[str, Any]:
    return json.loads((CAPTURES / f"{name}.json").read_text(encoding="utf-8"))


def test_the_captures_hold_transfers() -> None:
    assert SCENARIOS == [
        "large_message",
        "reject_release",
        "session_basic",
        "translate_1_0_to_0_10",
    ]
    assert [len(transfers(name, "c2s")) + len(transfers(name, "s2c")) for name in SCENARIOS] == [
        2,
        7,
        6,
        4,
    ]


@pytest.mark.parametrize("direction", ["c2s", "s2c"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_every_recorded_transfer_maps_back_unchanged(name: str, direction: str) -> None:
    for assembly in transfers(name, direction):
        message = AmqpMessage.decode(assembly_to_amqp10(assembly).encode())
        dp, mp, body = from_amqp10(message)
        original_dp = assembly.header_struct(DeliveryProperties) or DeliveryProperties()
        original_mp = assembly.header_struct(MessageProperties) or MessageProperties()
        if original_mp.user_id == b"":  # an empty user-id is no user-id (qpidd's from 1.0)
            original_mp = MessageProperties(
                **{k: v for k, v in original_mp.items() if k != "user_id"}
            )
        assert (typed10(dp), typed10(mp), body) == (
            typed10(original_dp),
            typed10(original_mp),
            assembly.body,
        )


def test_session_basic_message_with_every_property() -> None:
    assembly = transfers("session_basic", "s2c")[0]
    sent = scenario("session_basic")["sent"][0]
    expected = AmqpMessage(
        header=Header(durable=False, priority=ubyte(4)),
        message_annotations={
            symbol("x-amqp-0-10.exchange"): "",
            symbol("x-amqp-0-10.routing-key"): "cap.basic",
            # nested values may not be application-properties in 1.0 (qpidd puts them there anyway)
            symbol("x-amqp-0-10.app-headers"): {
                "nested": {"a": 1, "b": "x"},
                "list": [1, "two", 3.0],
            },
        },
        properties=Properties(
            message_id=uuid.UUID(sent["message-properties"]["message_id"]["uuid"]),
            user_id=b"guest",
            subject="cap.basic",
            reply_to="amq.direct/replies",
            correlation_id="corr-0",
            content_type=symbol("application/json"),
        ),
        application_properties={
            "int": 42,
            "neg": -7,
            "big": 1099511627776,
            "flag": True,
            "ratio": 1.5,
            "text": "hello",
            "bin": b"\x00\xff",
            "uid": uuid.UUID("b0f46913-3b6b-41bc-a61c-4b8be6b1d81a"),
            "none": None,
            "x-amqp-0-10.app-id": "capture-app",
        },
        body_kind=BodyKind.DATA,
        body=[bytes.fromhex(sent["body_hex"])],
    )
    assert typed_message(assembly_to_amqp10(assembly)) == typed_message(expected)


# --- what qpidd does with 1.0 messages, and what we do ------------------------------------------

CE_TIME = scenario("translate_1_0_to_0_10")["cloudEvents_time_ms"]

# The four 1.0 messages of the scenario. Header fields the .json does not list are
# read off qpidd's output (priority 6 and durable on the first one).
SENT_1_0 = [
    AmqpMessage(
        header=Header(durable=True, priority=ubyte(6)),
        properties=Properties(
            message_id="ce-1", subject="order.created", content_type=symbol("application/json")
        ),
        application_properties={
            "cloudEvents_specversion": "1.0",
            "cloudEvents_type": "com.example.order.created",
            "cloudEvents_source": "/orders",
            "cloudEvents_id": "ce-1",
            "cloudEvents_time": timestamp(CE_TIME),
            "cloudEvents_count": 7,
        },
        body_kind=BodyKind.DATA,
        body=[b'{"order": 1}'],
    ),
    AmqpMessage(
        properties=Properties(
            message_id=uuid.UUID("8e57ea7a-5e2a-4ad8-ab75-e4cfe858ea25"),
            content_type=symbol("application/cloudevents+json; charset=utf-8"),
        ),
        body_kind=BodyKind.DATA,
        body=[
            bytes.fromhex(scenario("translate_1_0_to_0_10")["sent_amqp10"][1]["body"]["bytes_hex"])
        ],
    ),
    AmqpMessage(body={"k": "v", "n": 2}),
    AmqpMessage(
        properties=Properties(
            user_id=b"guest", correlation_id="ddacacd4-aebd-4af0-a447-b8fd3d6e871c"
        ),
        body="just text",
    ),
]

# Where our 0-10 message differs from qpidd's: {field: (ours, qpidd's)}. Everything else is equal.
DIFFERENCES: list[dict[str, tuple[Any, Any]]] = [
    {
        "message_id": (message_id_uuid("ce-1"), None),  # qpidd drops non-UUID ids
        "user_id": (None, b""),  # qpidd writes an empty user-id when there is none
        "content_length": (None, 12),  # qpidd fills it in
        "x-amqp-1.0.message-id": ("ce-1", None),
        "x-amqp-1.0.property-types": (
            {"cloudEvents_time": "timestamp"},
            None,
        ),  # qpidd loses the type
    },
    {
        "priority": (None, 4),
        "user_id": (None, b""),
        "content_length": (None, 83),
    },  # qpidd writes 1.0's default
    {"priority": (None, 4), "user_id": (None, b""), "content_length": (None, 25)},
    {
        "priority": (None, 4),
        "content_length": (None, 9),
        "x-amqp-1.0.body": ("amqp-value", None),  # so the body reads back as a string, not data
        "reply_to": (
            None,
            ...,
        ),  # the sent reply-to is not in the .json; qpidd made ReplyTo() of it
    },
]


def _fields(dp: DeliveryProperties, mp: MessageProperties) -> dict[str, Any]:
    values = {**dict(dp.items()), **dict(mp.items())}
    values.pop("application_headers", None)
    for name, value in (mp.application_headers or {}).items():
        values[name if name.startswith("x-amqp-1.0.") else f"header:{name}"] = value
    return values


@pytest.mark.parametrize("index", range(4))
def test_1_0_messages_compared_with_qpidd(index: int) -> None:
    received = transfers("translate_1_0_to_0_10", "s2c")[index]
    ours = _fields(*from_amqp10(SENT_1_0[index])[:2])
    qpidd = _fields(
        received.header_struct(DeliveryProperties), received.header_struct(MessageProperties)
    )
    for name, (our_value, qpidd_value) in DIFFERENCES[index].items():
        assert ours.pop(name, None) == our_value, name
        if qpidd_value is ...:
            qpidd.pop(name)
        else:
            assert qpidd.pop(name, None) == qpidd_value, name
    assert {k: typed10(v) for k, v in ours.items()} == {k: typed10(v) for k, v in qpidd.items()}
    assert (
        from_amqp10(SENT_1_0[index])[2] == received.body
    )  # identical bodies, the 0-10 map included


def test_qpidd_output_maps_to_1_0_as_well_as_it_can() -> None:
    """What qpidd lost (the id, the timestamp type) cannot come back; the rest does."""
    message = assembly_to_amqp10(transfers("translate_1_0_to_0_10", "s2c")[0])
    assert (
        message.properties.subject == "order.created"
    )  # from qpid.subject, equal to the routing key
    assert symbol("x-amqp-0-10.routing-key") not in message.message_annotations
    assert message.properties.message_id is None
    assert typed1(message.application_properties["cloudEvents_time"]) == typed1(CE_TIME)
    map_body = assembly_to_amqp10(transfers("translate_1_0_to_0_10", "s2c")[2])
    assert (map_body.body_kind, map_body.body) == (BodyKind.VALUE, {"k": "v", "n": 2})


def test_large_message_body_is_one_data_section() -> None:
    message = assembly_to_amqp10(transfers("large_message", "s2c")[0])
    assert message.body_kind is BodyKind.DATA
    assert [len(section) for section in message.body] == [307200]
    assert message.body[0][:4] == bytes(range(4))


def test_redelivered_capture_message_has_delivery_count_one() -> None:
    redelivered = [
        assembly_to_amqp10(a).header.delivery_count for a in transfers("reject_release", "s2c")
    ]
    assert redelivered == [None, None, None, 1]
    dp, mp, _ = from_amqp10(assembly_to_amqp10(transfers("reject_release", "s2c")[3]))
    assert dp.redelivered is True
    assert mp.application_headers == {"i": 0}  # a count of 1 is the flag itself: no side channel


# --- translate_bodies_and_char: proton's body kinds and a char property through qpidd -----------

BODIES = json.loads((MESSAGING_CAPTURES / "translate_bodies_and_char.json").read_text("utf-8"))


def bodies_sent() -> list[AmqpMessage]:
    """The scenario's four 1.0 messages, built with proton as its .json describes."""
    out = []
    for index, sent in enumerate(BODIES["sent"]):
        body = sent["body"]
        message = proton.Message(
            body=bytes.fromhex(body["bytes_hex"]) if isinstance(body, dict) else body,
            inferred=sent["inferred"],
        )
        message.properties = {"i": index}
        if "char" in sent["what"]:
            message.properties["c"] = char("é")
        out.append(AmqpMessage.from_proton(message))
    return out


def test_the_bodies_capture_sends_what_its_json_says() -> None:
    kinds = [(m.body_kind, type(m.body)) for m in bodies_sent()]
    assert kinds == [
        (BodyKind.VALUE, bytes),  # proton's default for Message(body=b"...")
        (BodyKind.DATA, list),
        (BodyKind.VALUE, str),
        (BodyKind.DATA, list),
    ]


@pytest.mark.parametrize("index", range(3))
def test_bodies_delivered_as_qpidd_delivers_them(index: int) -> None:
    """qpidd's 0-10 body and content-type for each 1.0 body kind are ours too."""
    received = [
        a
        for a in assemblies(MESSAGING_CAPTURES / "translate_bodies_and_char.jsonl", "s2c")
        if isinstance(a.op, MessageTransfer)
    ]
    assert len(received) == 3  # the fourth (the char property) qpidd never delivered
    qpidd_mp = received[index].header_struct(MessageProperties)
    _, mp, body = from_amqp10(bodies_sent()[index])
    assert body == received[index].body
    assert mp.content_type == qpidd_mp.content_type
    assert mp.application_headers["i"] == qpidd_mp.application_headers["i"] == index
    if index == 0:
        assert body == bytes.fromhex(BODIES["received_010"][0]["body_hex"])


def test_a_char_property_qpidd_cannot_deliver_is_a_string_header() -> None:
    """qpidd closed the 0-10 connection instead of delivering message 4 (a char property);
    we deliver the character as a string, and the type comes back on the way to 1.0."""
    last = assemblies(MESSAGING_CAPTURES / "translate_bodies_and_char.jsonl", "s2c")[-1]
    assert isinstance(last.op, ConnectionClose)
    sent = bodies_sent()[3]
    dp, mp, body = from_amqp10(sent)
    decoded = t.decode_struct_body(mp.encode()[4:], 0)  # what a 0-10 client reads
    assert decoded.application_headers["c"] == "é"
    assert t.type_code_of(decoded.application_headers["c"]) == 0x95  # str16
    back = to_amqp10(t.decode_struct_body(dp.encode()[4:], 0), decoded, body)
    assert typed_message(back) == typed_message(sent)
