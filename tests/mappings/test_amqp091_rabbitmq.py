"""The 0-9-1 → 1.0 mapping against RabbitMQ's own conversion (an independent truth).

pika publishes a message with every basic property and every header type pika
can encode to a RabbitMQ queue; proton reads it back over AMQP 1.0. Where
RabbitMQ 3.10's ``rabbitmq_amqp1_0`` plugin converts losslessly, our
``to_amqp10`` of what pika sent must agree with what RabbitMQ delivered. Where
the plugin differs, the test records what it does (so a change of RabbitMQ's
behaviour shows up here) and docs/mapping.md says which rule we follow and why.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pika
import pytest
from pamqp.commands import Basic
from proton import int32, symbol, timestamp, ubyte, uint

from mappings.amqp091 import A_EXCHANGE, A_HEADERS, A_ROUTING_KEY, A_TYPE, Delivery091, to_amqp10
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue

WHEN = dt.datetime(2020, 9, 13, 12, 26, 40, tzinfo=dt.UTC)
HEADERS: dict[str, Any] = {
    "int": 5, "negative": -7, "long": -(2**40), "decimal": Decimal("1.25"), "text": "välue",
    "bytes": b"\x00\xff", "bool": True, "time": WHEN, "void": None, "table": {"a": 1},
    "array": [1, "x"], "x-custom": "xv", "cloudEvents_id": "e-1",
}  # fmt: skip
PROPERTIES = dict(
    content_type="application/json", content_encoding="gzip", delivery_mode=2, priority=3,
    correlation_id="corr-1", reply_to="replies", expiration="60000", message_id="m-1",
    user_id="guest", app_id="shop",
)  # fmt: skip


def _as_pika_sends(value: Any) -> Any:
    """The typed 0-9-1 value pika puts on the wire (ints: I when they fit 32 bits, else l)."""
    if type(value) is int:
        return int32(value) if -(2**31) <= value < 2**31 else value
    if isinstance(value, dict):
        return {key: _as_pika_sends(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_pika_sends(item) for item in value]
    return value


# About 3.10's conversion. RabbitMQ 4.0.5 cannot deliver this message over 1.0 at all: a
# decimal header ends the session (function_clause in mc_amqpl:from_091).
@pytest.mark.rabbitmq(3)
def test_to_amqp10_agrees_with_rabbitmqs_own_conversion(rabbitmq_url: str) -> None:
    queue = unique_queue("map091")
    connection = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    try:
        channel = connection.channel()
        channel.queue_declare(queue)
        channel.basic_publish(
            "", queue, b'{"n": 1}',
            pika.BasicProperties(
                headers=HEADERS, timestamp=1_600_000_000, type="order", **PROPERTIES
            ),
        )  # fmt: skip
    finally:
        connection.close()
    delivered = receive_messages(rabbitmq_url, queue_address(queue), 1)[0]
    sections = dict(delivered.sections)

    ours = to_amqp10(
        Basic.Properties(
            headers=_as_pika_sends(HEADERS), timestamp=WHEN, message_type="order", **PROPERTIES
        ),
        Delivery091("", queue, False),
        b'{"n": 1}',
    )

    # Agreement: header, ids, content type/encoding and the body as one data section.
    durable, priority, ttl, first_acquirer = sections["header"][:4]
    assert (ours.header.durable, ours.header.priority, ours.header.ttl) == (durable, priority, ttl)
    assert (durable, priority, ttl) == (True, ubyte(3), uint(60000))
    rabbit = sections["properties"]
    assert rabbit[0] == ours.properties.message_id == "m-1"
    assert rabbit[5] == ours.properties.correlation_id == "corr-1"
    assert rabbit[6] == ours.properties.content_type == symbol("application/json")
    assert rabbit[7] == ours.properties.content_encoding == symbol("gzip")
    assert sections["data"] == ours.body[0] == b'{"n": 1}'

    # Differences (RabbitMQ 3.10 plugin), each a decision documented in docs/mapping.md:
    # user-id: RabbitMQ sends a string; 1.0 user-id is binary (rabbitmq-server #7508).
    assert rabbit[1] == "guest" and ours.properties.user_id == b"guest"
    # creation-time: RabbitMQ copies the seconds as if they were milliseconds (#7508).
    assert rabbit[9] == timestamp(1_600_000_000)
    assert ours.properties.creation_time == timestamp(1_600_000_000_000)
    # reply-to: RabbitMQ 3.10 prefixes its own address syntax; we keep the 0-9-1 value.
    assert rabbit[4] == "/queue/replies" and ours.properties.reply_to == "replies"
    # routing key: the subject, as RabbitMQ 3.10 does (its /exchange/X addresses route by
    # the subject); the exchange in RabbitMQ 4's x-exchange annotation, which 3.10 drops.
    assert rabbit[3] == ours.properties.subject == queue
    assert A_ROUTING_KEY not in ours.message_annotations
    assert ours.message_annotations[A_EXCHANGE] == ""
    # first-acquirer: RabbitMQ writes true for a first delivery; absent means the same.
    assert first_acquirer is True and ours.header.first_acquirer is None
    # headers, type and app-id: RabbitMQ 3.10 drops them (convert_amqp091_headers_to_app_props
    # is off by default); we carry them all, as RabbitMQ 4 does for simple headers.
    assert "application-properties" not in sections and "message-annotations" not in sections
    assert rabbit[10] is None  # no group-id (RabbitMQ 4 puts app-id there, as we do)
    assert ours.properties.group_id == "shop"
    assert ours.message_annotations[A_TYPE] == "order"
    app = ours.application_properties
    assert app["int"] == int32(5) and type(app["int"]) is int32
    assert app["negative"] == int32(-7) and app["long"] == -(2**40)
    assert app["time"] == timestamp(1_600_000_000_000) and app["bytes"] == b"\x00\xff"
    assert app["cloudEvents_id"] == "e-1" and app["x-custom"] == "xv"
    assert ours.message_annotations[A_HEADERS] == {
        "table": {"a": int32(1)},
        "array": [int32(1), "x"],
    }
