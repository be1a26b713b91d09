"""AMQP 0-9-1 routes end to end: RabbitMQ as the 0-9-1 broker (pika as the independent
0-9-1 client around the bridge), RabbitMQ's AMQP 1.0 side (proton) on the other, and
``amqp-bridge run`` as a subprocess in between."""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pika
from pamqp.commands import Basic
from proton import Message, int32, symbol

from mappings.amqp091 import A_HEADERS, Delivery091, to_amqp10
from mappings.message import AmqpMessage
from tests.engine091.driver import EngineClient
from tests.engine091.test_tables_rabbitmq import HEADERS as TYPED_HEADERS
from tests.engine091.test_tables_rabbitmq import PROTON_TYPES
from tests.support.bridge import BridgeRun, wait_for
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    receive_messages,
    send_messages,
    unique_queue,
)

WHEN = dt.datetime(2021, 5, 6, 7, 8, 9, tzinfo=dt.UTC)


def config091(rabbitmq_url: str, routes: str) -> str:
    """The 0-9-1 connection ``rabbit`` and the 1.0 connection ``cloud``, both to RabbitMQ."""
    return f"""
connections:
  rabbit:
    protocol: amqp0-9-1
    url: "{rabbitmq_url}/%2F"
    heartbeat: 10
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_url}"
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
routes:
{routes}
"""


@contextlib.contextmanager
def pika_channel(url: str) -> Iterator[Any]:
    """A pika channel on its own blocking connection."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield connection.channel()
    finally:
        with contextlib.suppress(Exception):
            connection.close()


def declare(url: str, queue: str, **arguments: Any) -> None:
    with pika_channel(url) as ch:
        ch.queue_declare(queue, arguments={"x-expires": 600_000, **arguments})


def depth(url: str, queue: str) -> int:
    with pika_channel(url) as ch:
        return int(ch.queue_declare(queue, passive=True).method.message_count)


def pika_get_all(url: str, queue: str, count: int, timeout: float = 20) -> list[tuple[Any, Any, bytes]]:
    """Take ``count`` messages from ``queue`` with pika (acking them)."""
    got: list[tuple[Any, Any, bytes]] = []
    with pika_channel(url) as ch:
        def more() -> bool:
            while len(got) < count:
                method, props, body = ch.basic_get(queue, auto_ack=True)
                if method is None:
                    return False
                got.append((method, props, body))
            return True
        wait_for(more, timeout, f"{count} messages on {queue} (got {len(got)})")
    return got


def pika_headers(i: int) -> dict[str, Any]:
    return {"seq": i, "neg": -i - 1, "big": -(2**40) - i, "dec": Decimal("-1.25"),
            "when": WHEN, "bytes": b"\x00\xff", "flag": i % 2 == 0, "none": None,
            "table": {"a": {"b": [1, "x", {"c": -3}]}}, "array": [i, "y"],
            "text": "välue"}


def pika_properties(i: int) -> dict[str, Any]:
    return dict(content_type="text/plain", content_encoding="utf-8", delivery_mode=2,
                priority=i % 10, correlation_id=f"c-{i}", reply_to="replies",
                expiration="600000", message_id=f"m-{i}", user_id="guest", app_id="shop")


def as_pika_sends(value: Any) -> Any:
    """The typed value pika puts on the wire (ints: I when they fit 32 bits, else l)."""
    if type(value) is int:
        return int32(value) if -(2**31) <= value < 2**31 else value
    if isinstance(value, dict):
        return {key: as_pika_sends(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_pika_sends(item) for item in value]
    return value


def test_091_queue_to_amqp10_keeps_every_property_and_header_type_in_order(
        rabbitmq_url: str, tmp_path: Path) -> None:
    source, target = unique_queue("r091-src"), unique_queue("r091-dst")
    declare(rabbitmq_url, source)
    count = 300
    with pika_channel(rabbitmq_url) as ch:
        for i in range(count):
            ch.basic_publish("", source, f"body {i}".encode(), pika.BasicProperties(
                timestamp=1_600_000_000 + i, type="order", headers=pika_headers(i),
                **pika_properties(i)))
    # a last message with the header types pika cannot write (floats, every width)
    client = EngineClient(rabbitmq_url, field_types=PROTON_TYPES)
    try:
        ch_number = client.conn.open_channel()
        client.wait_for(lambda e: getattr(e, "channel", None) == ch_number)
        client.conn.publish(ch_number, "", source, b"typed",
                            Basic.Properties(headers=TYPED_HEADERS, message_id="typed"))
        client.pump(0.2)
    finally:
        client.close()
    route = f"""
  - name: r091-out
    from: {{connection: rabbit, queue: {source}}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    max_in_flight: {{messages: 40}}
"""
    with BridgeRun(config091(rabbitmq_url, route), tmp_path) as bridge:
        received = receive_messages(rabbitmq_url, queue_address(target), count + 1, timeout=60)
        wait_for(lambda: depth(rabbitmq_url, source) == 0, 10, "the source acked", bridge)
    for i, r in enumerate(received[:count]):  # order kept, the mapping applied
        m = r.message
        expected = to_amqp10(
            Basic.Properties(timestamp=dt.datetime.fromtimestamp(1_600_000_000 + i, dt.UTC),
                             message_type="order", headers=as_pika_sends(pika_headers(i)),
                             **pika_properties(i)),
            Delivery091("", source, False), f"body {i}".encode(), login_user="guest")
        assert bytes(m.body) == f"body {i}".encode()
        assert m.id == f"m-{i}" and m.correlation_id == f"c-{i}"
        assert (m.durable, m.priority, m.ttl) == (True, i % 10, 600.0)
        assert m.content_type == "text/plain" and m.content_encoding == "utf-8"
        assert m.creation_time == 1_600_000_000 + i and m.reply_to == "replies"
        assert m.user_id == b"guest" and m.group_id == "shop"
        assert m.properties == expected.application_properties
        assert m.properties["neg"] == -i - 1 and m.properties["big"] == -(2**40) - i
        assert m.annotations[symbol("x-routing-key")] == source
        assert m.annotations[symbol("x-basic-type")] == "order"
        assert m.annotations[A_HEADERS] == expected.message_annotations[A_HEADERS]
    typed = AmqpMessage.decode(received[count].raw)
    expected = to_amqp10(Basic.Properties(headers=TYPED_HEADERS, message_id="typed"),
                         Delivery091("", source, False), b"typed")
    assert typed.application_properties == expected.application_properties
    for key, value in expected.application_properties.items():  # the types too
        assert type(typed.application_properties[key]) is type(value), key
    assert typed.message_annotations[A_HEADERS] == expected.message_annotations[A_HEADERS]


def test_amqp10_to_091_exchange_with_publisher_confirms(rabbitmq_url: str,
                                                        tmp_path: Path) -> None:
    source, bound = unique_queue("r091-in"), unique_queue("r091-bound")
    key = f"routes091.{uuid.uuid4()}"
    declare(rabbitmq_url, bound)
    with pika_channel(rabbitmq_url) as ch:
        ch.queue_bind(bound, "amq.direct", key)
    count = 200
    send_messages(rabbitmq_url, queue_address(source), [
        Message(body=f"reply {i}".encode(), inferred=True, id=f"r-{i}", correlation_id=f"c-{i}",
                content_type="text/plain", durable=True, priority=7, subject="ignored",
                properties={"n": i, "neg": int32(-5), "text": "välue"})
        for i in range(count)])
    route = f"""
  - name: r091-in
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: rabbit, exchange: amq.direct, routing_key: "{key}"}}
    max_in_flight: {{messages: 30}}
"""
    with BridgeRun(config091(rabbitmq_url, route), tmp_path):
        got = pika_get_all(rabbitmq_url, bound, count)
        # accepted at the 1.0 source only after RabbitMQ confirmed: nothing left there
        assert_no_message(rabbitmq_url, queue_address(source))
    for i, (method, props, body) in enumerate(got):
        assert body == f"reply {i}".encode()
        assert method.exchange == "amq.direct" and method.routing_key == key
        assert props.message_id == f"r-{i}" and props.correlation_id == f"c-{i}"
        assert props.content_type == "text/plain"
        assert props.delivery_mode == 2 and props.priority == 7
        assert props.headers["n"] == i and props.headers["neg"] == -5
        assert props.headers["text"] == "välue"
        assert props.headers["x-amqp-1.0.subject"] == "ignored"
