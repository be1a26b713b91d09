"""What RabbitMQ 3.10's AMQP 1.0 plugin preserves end to end, and what it changes.

The bridge hands AMQP 1.0 messages to RabbitMQ and takes them back, so it
relies on exactly these behaviours. Each test sends real messages through the
project's broker (``scripts/rabbitmq``) and asserts, on the raw sections the
broker delivers, exactly what comes back, types included. Where RabbitMQ
changes something the test asserts what it actually does; docs/testing.md
summarises the findings in a table.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from typing import Any

import pytest
from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Described,
    Message,
    byte,
    char,
    decimal32,
    decimal64,
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

from tests.support.rabbitmq import (
    RABBITMQ_SCRIPT,
    REPO_ROOT,
    AmqpError,
    Outcome,
    Received,
    assert_no_message,
    declare_queue,
    decode_sections,
    encode_section,
    ensure_rabbitmq,
    queue_address,
    rabbitmqctl,
    receive_messages,
    send_messages,
    unique_queue,
)

#: The module is about 3.10's plugin: it runs against the 3.10 node whatever the default.
pytestmark = pytest.mark.rabbitmq(3)

ACCEPTED = Outcome("accepted")

#: The header RabbitMQ delivers for a message sent without any header field:
#: durable=false written out, priority and ttl absent, first-acquirer=true,
#: delivery-count absent (null).
DEFAULT_HEADER = [False, None, None, True, None]


def typed(value: Any) -> Any:
    """``value`` with the AMQP type of every item made explicit, for ``==``.

    Proton's subclasses compare equal to plain values (``ubyte(7) == 7``,
    ``symbol("a") == "a"``); tagging each value with its type name makes an
    assertion fail when the broker changes a type but not the value.
    """
    if isinstance(value, list):
        return ("list", [typed(item) for item in value])
    if isinstance(value, dict):
        return ("map", {typed(key): typed(item) for key, item in value.items()})
    if isinstance(value, Described):
        return ("described", typed(value.descriptor), typed(value.value))
    if isinstance(value, Array):
        return ("array", value.type, [typed(item) for item in value.elements])
    if isinstance(value, memoryview):
        value = bytes(value)
    return (type(value).__name__, value)


def sections_of(message: Message) -> list[tuple[str, Any]]:
    """The sections proton puts on the wire for ``message``."""
    return decode_sections(message.encode())


def sent(message: Message, name: str) -> Any:
    """The value of section ``name`` as sent for ``message``."""
    return dict(sections_of(message))[name]


def roundtrip(url: str, *messages: Message | bytes) -> list[Received]:
    """Send ``messages`` to a fresh queue (each must be accepted), receive them back.

    A ``bytes`` item is an already encoded message (see ``send_messages``).
    """
    address = queue_address(unique_queue("roundtrip"))
    assert send_messages(url, address, messages) == [ACCEPTED] * len(messages)
    return receive_messages(url, address, len(messages))


# --- the broker itself ------------------------------------------------------


def test_ensure_rabbitmq_is_idempotent(rabbitmq_url: str) -> None:
    assert rabbitmq_url.startswith("amqp://guest:guest@127.0.0.1:")
    # A running broker is reused, not restarted: the node's OS process stays the same.
    node_pid = rabbitmqctl(rabbitmq_url, "eval", "os:getpid().").strip()
    assert ensure_rabbitmq() == rabbitmq_url
    assert ensure_rabbitmq() == rabbitmq_url
    assert rabbitmqctl(rabbitmq_url, "eval", "os:getpid().").strip() == node_pid
    status = subprocess.run(
        [str(RABBITMQ_SCRIPT), "status"], cwd=REPO_ROOT, capture_output=True, text=True,
        env={**os.environ, "AMQP_BRIDGE_RABBITMQ_VERSION": "3"},  # the 3.10 node's status
    )
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip() == rabbitmq_url
    # The broker still works after the repeated starts.
    assert [r.message.body for r in roundtrip(rabbitmq_url, Message(body="still up"))] == [
        "still up"
    ]


def test_sasl_plain_and_anonymous_both_log_in_as_guest(rabbitmq_url: str) -> None:
    # guest:guest in the URL makes proton use SASL PLAIN; no credentials make it
    # use ANONYMOUS, which the plugin maps to amqp1_0.default_user (guest).
    anonymous_url = rabbitmq_url.replace("guest:guest@", "")
    address = queue_address(unique_queue("sasl"))
    assert send_messages(rabbitmq_url, address, [Message(body="plain")]) == [ACCEPTED]
    assert send_messages(anonymous_url, address, [Message(body="anonymous")]) == [ACCEPTED]
    got = receive_messages(anonymous_url, address, 2)
    assert [r.message.body for r in got] == ["plain", "anonymous"]


def test_wrong_password_is_refused(rabbitmq_url: str) -> None:
    bad_url = rabbitmq_url.replace("guest:guest@", "guest:wrong@")
    with pytest.raises(AmqpError) as refused:
        send_messages(bad_url, queue_address(unique_queue("sasl")), [Message(body="x")])
    assert refused.value.condition is not None
    assert refused.value.condition.name == "amqp:unauthorized-access"


# --- header -----------------------------------------------------------------


def test_header_fields_are_preserved(rabbitmq_url: str) -> None:
    message = Message(body="x", durable=True, priority=7, ttl=60.0)
    assert typed(sent(message, "header")) == typed([True, ubyte(7), uint(60000)])
    (got,) = roundtrip(rabbitmq_url, message)
    # RabbitMQ adds first-acquirer=true and an absent delivery-count.
    assert typed(got.section("header")) == typed([True, ubyte(7), uint(60000), True, None])
    assert (got.message.durable, got.message.priority, got.message.ttl) == (True, 7, 60.0)


def test_priority_above_nine_is_preserved(rabbitmq_url: str) -> None:
    (got,) = roundtrip(rabbitmq_url, Message(body="x", priority=200))
    assert typed(got.section("header")) == typed([False, ubyte(200), None, True, None])


def test_absent_header_fields_come_back_as_rabbitmq_defaults(rabbitmq_url: str) -> None:
    message = Message(body="x")
    assert sent(message, "header") == []
    (got,) = roundtrip(rabbitmq_url, message)
    assert typed(got.section("header")) == typed(DEFAULT_HEADER)


def test_ttl_expires_the_message_in_the_queue(rabbitmq_url: str) -> None:
    address = queue_address(unique_queue("ttl"))
    messages = [Message(body="expires", ttl=0.1), Message(body="stays")]
    assert send_messages(rabbitmq_url, address, messages) == [ACCEPTED, ACCEPTED]
    time.sleep(0.4)
    (got,) = receive_messages(rabbitmq_url, address, 1)
    assert got.message.body == "stays"
    assert_no_message(rabbitmq_url, address, wait=0.3)


# --- properties -------------------------------------------------------------


def test_all_properties_are_preserved(rabbitmq_url: str) -> None:
    message = Message(
        body="x",
        id="message-id-1",
        user_id=b"guest",
        address="/queue/somewhere",
        subject="the subject",
        reply_to="/queue/replies",
        correlation_id="correlation-1",
        content_type="application/json",
        content_encoding="gzip",
        expiry_time=1_900_000_000.5,
        creation_time=1_700_000_000.123,
        group_id="group-1",
        group_sequence=3,
        reply_to_group_id="reply-group-1",
    )
    expected = [
        "message-id-1",
        b"guest",
        "/queue/somewhere",
        "the subject",
        "/queue/replies",
        "correlation-1",
        symbol("application/json"),
        symbol("gzip"),
        timestamp(1_900_000_000_500),
        timestamp(1_700_000_000_123),
        "group-1",
        uint(3),
        "reply-group-1",
    ]
    assert typed(sent(message, "properties")) == typed(expected)
    (got,) = roundtrip(rabbitmq_url, message)
    assert typed(got.section("properties")) == typed(expected)
    assert got.message.creation_time == 1_700_000_000.123
    assert got.message.expiry_time == 1_900_000_000.5


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("string-id", id="string"),
        pytest.param(uuid.UUID("6f1d2c5e-9a47-4b8e-8f0a-3c2b1d0e9f87"), id="uuid"),
        pytest.param(ulong(2**64 - 1), id="ulong"),
        pytest.param(b"\x00\x01\xfe\xff", id="binary"),
    ],
)
def test_message_id_and_correlation_id_keep_their_type(rabbitmq_url: str, value: Any) -> None:
    (got,) = roundtrip(rabbitmq_url, Message(body="x", id=value, correlation_id=value))
    properties = got.section("properties")
    assert typed(properties[0]) == typed(value)  # message-id
    assert typed(properties[5]) == typed(value)  # correlation-id


def test_user_id_other_than_the_login_ends_the_session(rabbitmq_url: str) -> None:
    # As in AMQP 0-9-1, RabbitMQ checks user-id against the authenticated user.
    address = queue_address(unique_queue("user-id"))
    with pytest.raises(AmqpError) as refused:
        send_messages(rabbitmq_url, address, [Message(body="x", user_id=b"someone")])
    assert refused.value.where == "session"
    assert refused.value.condition is not None
    assert refused.value.condition.name == "amqp:precondition-failed"
    assert "user_id property set to 'someone'" in refused.value.condition.description


def test_absolute_expiry_time_is_not_enforced(rabbitmq_url: str) -> None:
    (got,) = roundtrip(rabbitmq_url, Message(body="x", expiry_time=1000.0))
    assert got.message.body == "x"
    assert typed(got.section("properties")[8]) == typed(timestamp(1_000_000))


# --- application-properties and annotations ----------------------------------

TYPED_APPLICATION_PROPERTIES = {
    "byte": byte(-5),
    "short": short(-300),
    "int": int32(-70_000),
    "long": -(2**40),
    "ubyte": ubyte(200),
    "ushort": ushort(60_000),
    "uint": uint(4_000_000_000),
    "ulong": ulong(2**63 + 5),
    "float": float32(1.5),
    "double": 2.25,
    "decimal32": decimal32(7),
    "decimal64": decimal64(8),
    "true": True,
    "false": False,
    "string": "héllo wörld",
    "symbol": symbol("a-symbol"),
    "char": char("é"),
    "binary": b"\x00\xff",
    "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
    "timestamp": timestamp(1_700_000_000_123),
    "null": None,
}


def test_application_properties_keep_values_and_types(rabbitmq_url: str) -> None:
    message = Message(body="x", properties=TYPED_APPLICATION_PROPERTIES)
    (got,) = roundtrip(rabbitmq_url, message)
    assert typed(got.section("application-properties")) == typed(TYPED_APPLICATION_PROPERTIES)


def test_message_annotations_are_preserved(rabbitmq_url: str) -> None:
    annotations = {
        symbol("x-opt-string"): "value",
        symbol("x-opt-long"): 42,
        symbol("x-opt-timestamp"): timestamp(1_700_000_000_000),
        symbol("x-opt-binary"): b"\x01\x02",
    }
    (got,) = roundtrip(rabbitmq_url, Message(body="x", annotations=annotations))
    assert typed(got.section("message-annotations")) == typed(annotations)


def test_rabbitmq_adds_no_section_and_keeps_section_order(rabbitmq_url: str) -> None:
    message = Message(
        body=b"payload",
        inferred=True,
        durable=True,
        id="id",
        properties={"key": "value"},
        annotations={symbol("x-opt-key"): "value"},
    )
    names = ["header", "message-annotations", "properties", "application-properties", "data"]
    assert [name for name, _ in sections_of(message)] == names
    (got,) = roundtrip(rabbitmq_url, message)
    assert [name for name, _ in got.sections] == names
    assert [(n, typed(v)) for n, v in got.sections[1:]] == [
        (n, typed(v)) for n, v in sections_of(message)[1:]
    ]


def test_footer_is_preserved(rabbitmq_url: str) -> None:
    # proton's Message has no footer: append the encoded section by hand.
    footer = {symbol("x-opt-checksum"): "abc", symbol("x-opt-length"): uint(1)}
    raw = Message(body="x").encode() + encode_section("footer", footer)
    (got,) = roundtrip(rabbitmq_url, raw)
    assert [name for name, _ in got.sections] == ["header", "properties", "amqp-value", "footer"]
    assert typed(got.section("footer")) == typed(footer)


def test_delivery_annotations_make_the_broker_drop_the_connection(rabbitmq_url: str) -> None:
    # RabbitMQ 3.10's session process crashes on the section
    # (unexpected_trailing_sections) and closes the socket ~3 s later,
    # without an AMQP close frame: the bridge must never send them.
    message = Message(body="x")
    message.instructions = {symbol("x-opt-hint"): "value"}
    with pytest.raises(AmqpError) as dropped:
        send_messages(rabbitmq_url, queue_address(unique_queue("da")), [message])
    assert dropped.value.condition is not None
    assert dropped.value.condition.name == "amqp:connection:framing-error"
    assert "aborted" in dropped.value.condition.description


# --- bodies -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "inferred", "section"),
    [
        pytest.param(b"\x00\x01 binary \xff", True, "data", id="data"),
        pytest.param(b"", True, "data", id="data-empty"),
        pytest.param("a string", False, "amqp-value", id="value-string"),
        pytest.param(b"\x00\x01", False, "amqp-value", id="value-binary"),
        pytest.param(42, False, "amqp-value", id="value-long"),
        pytest.param(
            {"key": 1, "nested": {"list": [1, "two"]}, symbol("sym"): None},
            False,
            "amqp-value",
            id="value-map",
        ),
        pytest.param([], False, "amqp-value", id="value-list-empty"),
        pytest.param(["only"], False, "amqp-value", id="value-list-one-item"),
        pytest.param(
            Described(symbol("com.example:thing"), "v"), False, "amqp-value", id="value-described"
        ),
        pytest.param(
            Array(UNDESCRIBED, Data.INT, int32(1), int32(2)), False, "amqp-value", id="value-array"
        ),
        pytest.param([1, "two", [3.0], {"k": "v"}], True, "amqp-sequence", id="sequence"),
    ],
)
def test_body_is_preserved(rabbitmq_url: str, body: Any, inferred: bool, section: str) -> None:
    message = Message(body=body, inferred=inferred)
    assert [name for name, _ in sections_of(message)][-1] == section
    (got,) = roundtrip(rabbitmq_url, message)
    assert got.sections[-1][0] == section
    assert typed(got.sections[-1][1]) == typed(sent(message, section))


@pytest.mark.parametrize(
    ("section", "values"),
    [
        pytest.param("data", [b"one", b"two", b"three"], id="data"),
        pytest.param("amqp-sequence", [[1], ["two", 2], [3.0]], id="amqp-sequence"),
    ],
)
def test_repeated_body_sections_come_back_in_reverse_order(
    rabbitmq_url: str, section: str, values: list[Any]
) -> None:
    # The spec allows several data or amqp-sequence sections, in order; 3.10
    # delivers them reversed. (proton's Message reads only one of them.)
    raw = Message().encode() + b"".join(encode_section(section, value) for value in values)
    assert [v for n, v in decode_sections(raw) if n == section] == values
    (got,) = roundtrip(rabbitmq_url, raw)
    assert [n for n, _ in got.sections] == ["header", "properties"] + [section] * len(values)
    assert typed([v for n, v in got.sections if n == section]) == typed(values[::-1])


def test_message_without_body_gets_an_empty_data_section(rabbitmq_url: str) -> None:
    message = Message()
    assert [name for name, _ in sections_of(message)] == ["header", "properties"]
    (got,) = roundtrip(rabbitmq_url, message)
    assert got.sections == [("header", DEFAULT_HEADER), ("properties", []), ("data", b"")]


def test_amqp_value_list_of_two_or_more_items_makes_the_broker_drop_the_connection(
    rabbitmq_url: str,
) -> None:
    # 3.10's decoder reads amqp-value:list as a composite and fails (badarg in
    # amqp10_framing:fill_from_list); the socket closes ~3 s later. An empty or
    # one-item list is fine, and so is the same list as an amqp-sequence.
    with pytest.raises(AmqpError) as dropped:
        send_messages(rabbitmq_url, queue_address(unique_queue("list")), [Message(body=[1, "two"])])
    assert dropped.value.condition is not None
    assert dropped.value.condition.name == "amqp:connection:framing-error"


def test_one_mebibyte_body_is_preserved(rabbitmq_url: str) -> None:
    payload = bytes(range(256)) * 4096
    assert len(payload) == 1 << 20
    (got,) = roundtrip(rabbitmq_url, Message(body=payload, inferred=True))
    assert got.section("data") == payload


# --- addresses and send outcomes ----------------------------------------------


def test_queue_address_declares_the_queue_and_accepts(rabbitmq_url: str) -> None:
    name = unique_queue("declare")
    assert send_messages(rabbitmq_url, queue_address(name), [Message(body="x")]) == [ACCEPTED]
    (got,) = receive_messages(rabbitmq_url, f"/amq/queue/{name}", 1)
    assert got.message.body == "x"


def test_amq_queue_address_of_an_existing_queue(rabbitmq_url: str) -> None:
    name = unique_queue("existing")
    declare_queue(rabbitmq_url, name)
    address = f"/amq/queue/{name}"
    assert send_messages(rabbitmq_url, address, [Message(body="x")]) == [ACCEPTED]
    assert [r.message.body for r in receive_messages(rabbitmq_url, address, 1)] == ["x"]


def test_missing_amq_queue_accepts_and_silently_drops_the_message(rabbitmq_url: str) -> None:
    # The plugin publishes to the default exchange; an unroutable message is
    # still confirmed, so the sender sees "accepted" and the message is lost.
    name = unique_queue("missing")
    address = f"/amq/queue/{name}"
    assert send_messages(rabbitmq_url, address, [Message(body="lost")]) == [ACCEPTED]
    # The queue was not created: receiving from it is refused.
    with pytest.raises(AmqpError) as refused:
        receive_messages(rabbitmq_url, address, 1, timeout=5)
    assert refused.value.where == "session"
    assert refused.value.condition is not None
    assert refused.value.condition.name == "amqp:not-found"
    # And declaring it now shows nothing was kept.
    assert_no_message(rabbitmq_url, queue_address(name), wait=0.3)


def test_missing_exchange_ends_the_session(rabbitmq_url: str) -> None:
    address = f"/exchange/{unique_queue('no-exchange')}/key"
    with pytest.raises(AmqpError) as refused:
        send_messages(rabbitmq_url, address, [Message(body="x")])
    assert refused.value.where == "session"
    assert refused.value.condition is not None
    assert refused.value.condition.name == "amqp:not-found"
