"""Local delivery on a topology-mode 0-9-1 listener (bridge/facade/amqp091/local_delivery.py,
docs/topology.md "Local delivery"): a publish to a queue whose one consumer is a no-ack
client of the listener owning it is handed to it without the broker trip, and arrives
exactly as it would have through RabbitMQ 4; any other consumer gets it from the broker.

One ``amqp-bridge run`` with two topology-mode listeners on the same RabbitMQ: ``local``
(the default) and ``broker`` (``local_delivery: false``), the same publishes through each.
"""

from __future__ import annotations

import datetime
import decimal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
import pytest

from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.metrics import counted, metrics_port

pytestmark = pytest.mark.rabbitmq(4)

LOCAL = "amqp_bridge_facade_local_deliveries_total"
USER, PASSWORD = "app", "local-s3cret"


class Bridge:
    def __init__(self, proc: BridgeRun, ports: dict[str, int]) -> None:
        self.proc, self.ports = proc, ports
        self.metrics = metrics_port(proc.log)

    def connect(self, listener: str) -> pika.BlockingConnection:
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", self.ports[listener], "/",
            pika.PlainCredentials(USER, PASSWORD), heartbeat=0))

    def local(self, listener: str) -> float:
        return counted(self.metrics, LOCAL, listener=listener)


@pytest.fixture(scope="module")
def bridge(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bridge]:
    ports = {"local": free_port(), "broker": free_port()}
    topology = "topology: {connection: cloud, broker: rabbitmq4"
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  local: {{protocol: amqp0-9-1, bind: "127.0.0.1:{ports['local']}",
          users: {{{USER}: "{PASSWORD}"}}, {topology}}}}}
  broker: {{protocol: amqp0-9-1, bind: "127.0.0.1:{ports['broker']}",
           users: {{{USER}: "{PASSWORD}"}}, {topology}, local_delivery: false}}}}
metrics: {{bind: "127.0.0.1:0"}}
"""
    proc = BridgeRun(config, Path(tmp_path_factory.mktemp("local"))).start()
    try:
        for port in ports.values():
            wait_listening(port, proc)
        yield Bridge(proc, ports)
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()
    assert "level=error" not in proc.log(), proc.log()


def rich_properties() -> pika.BasicProperties:
    return pika.BasicProperties(
        content_type="application/json", content_encoding="utf-8",
        headers={"str": "s", "int": 7, "neg": -3, "big": 2**40,
                 "decimal": decimal.Decimal("1.5"), "bool": True, "bytes": b"\x00\x01",
                 "list": [1, "two"], "table": {"k": "v"}, "none": None,
                 "time": datetime.datetime(2026, 11, 28, 6, 0, tzinfo=datetime.UTC)},
        delivery_mode=2, priority=4, correlation_id="corr-1", reply_to="somewhere",
        expiration="60000", message_id="m-1",
        timestamp=1_790_000_000, type="kind", user_id=USER, app_id="app-1")


def receive_one(conn: pika.BlockingConnection, received: list[Any]) -> Any:
    deadline = time.monotonic() + 15
    while not received:
        assert time.monotonic() < deadline, "nothing delivered"
        conn.process_data_events(0.05)
    return received.pop(0)


def exchange_once(bridge: Bridge, listener: str, *, exclusive_queue: bool = True,
                  exclusive_consumer: bool = False, auto_ack: bool = True) -> tuple[Any, ...]:
    """A consumer on ``listener`` (a server-named exclusive queue, or a named one), a
    publisher on another connection of the same listener publishing one rich message to
    the default exchange with the queue's name; what the consumer got: (exchange,
    routing key — the queue's name —, properties, body)."""
    consumer_conn, publisher_conn = bridge.connect(listener), bridge.connect(listener)
    try:
        ch = consumer_conn.channel()
        if exclusive_queue:
            queue = ch.queue_declare("", exclusive=True).method.queue
        else:
            queue = ch.queue_declare(f"test.local.{uuid.uuid4().hex[:8]}",
                                     auto_delete=True).method.queue
        received: list[Any] = []

        def on_message(c: Any, method: Any, props: Any, body: bytes) -> None:
            received.append((method.exchange, method.routing_key, props, body))
            if not auto_ack:
                c.basic_ack(method.delivery_tag)

        ch.basic_consume(queue, on_message, auto_ack=auto_ack, exclusive=exclusive_consumer)
        pch = publisher_conn.channel()
        pch.confirm_delivery()
        pch.basic_publish("", queue, b"the answer", rich_properties())
        exchange, key, props, body = receive_one(consumer_conn, received)
        assert key == queue
        return exchange, key, props, body
    finally:
        publisher_conn.close()
        consumer_conn.close()


@dataclass
class ReplyPair:
    """A no-ack consumer of a server-named exclusive queue on one connection of the
    ``local`` listener, and a confirm-mode publisher channel on another."""

    consumer_conn: pika.BlockingConnection
    ch: Any
    queue: str
    received: list[bytes]
    pch: Any


@contextmanager
def reply_pair(bridge: Bridge) -> Iterator[ReplyPair]:
    consumer_conn, publisher_conn = bridge.connect("local"), bridge.connect("local")
    try:
        ch = consumer_conn.channel()
        queue = ch.queue_declare("", exclusive=True).method.queue
        received: list[bytes] = []
        ch.basic_consume(queue, lambda c, m, p, body: received.append(body), auto_ack=True)
        pch = publisher_conn.channel()
        pch.confirm_delivery()
        yield ReplyPair(consumer_conn, ch, queue, received, pch)
    finally:
        publisher_conn.close()
        consumer_conn.close()


def test_a_reply_to_an_exclusive_queue_is_delivered_here_exactly_as_through_the_broker(
        bridge: Bridge) -> None:
    local_before, broker_before = bridge.local("local"), bridge.local("broker")
    exchange, _, props, body = exchange_once(bridge, "local")
    assert bridge.local("local") == local_before + 1
    b_exchange, _, b_props, b_body = exchange_once(bridge, "broker")
    assert bridge.local("broker") == broker_before  # switched off: through RabbitMQ
    assert (exchange, body) == (b_exchange, b_body) == ("", b"the answer")
    assert props.headers == b_props.headers == rich_properties().headers
    fields = ("content_type", "content_encoding", "delivery_mode", "priority",
              "correlation_id", "reply_to", "expiration", "message_id", "timestamp", "type",
              "user_id", "app_id", "cluster_id")
    assert {f: getattr(props, f) for f in fields} == {f: getattr(b_props, f) for f in fields}


@pytest.mark.parametrize("case", ["exclusive consumer", "ack mode", "shared queue"])
def test_only_a_no_ack_consumer_owning_the_queue_gets_it_here(bridge: Bridge, case: str) -> None:
    before = bridge.local("local")
    got = exchange_once(bridge, "local",
                        exclusive_queue=case == "ack mode",
                        exclusive_consumer=case == "exclusive consumer",
                        auto_ack=case != "ack mode")
    assert got[3] == b"the answer"  # delivered either way
    assert bridge.local("local") == before + (1 if case == "exclusive consumer" else 0)


def test_a_channels_messages_stay_in_order_from_the_broker_to_local_delivery(
        bridge: Bridge) -> None:
    """The consumer's channel stopped (channel.flow): the first two replies go through
    RabbitMQ and wait at the bridge; once it flows again they are delivered, then the
    next is delivered locally — after them."""
    with reply_pair(bridge) as pair:
        received = pair.received
        assert pair.ch.flow(False) is False
        before = bridge.local("local")
        pair.pch.basic_publish("", pair.queue, b"1")
        pair.pch.basic_publish("", pair.queue, b"2")
        pair.consumer_conn.process_data_events(0.5)
        assert received == []  # (stopped)
        assert pair.ch.flow(True) is True
        deadline = time.monotonic() + 15
        while len(received) < 2:
            assert time.monotonic() < deadline, received
            pair.consumer_conn.process_data_events(0.05)
        pair.pch.basic_publish("", pair.queue, b"3")
        while len(received) < 3:
            assert time.monotonic() < deadline, received
            pair.consumer_conn.process_data_events(0.05)
        assert received == [b"1", b"2", b"3"]
        assert bridge.local("local") == before + 1  # only the third


def test_a_queue_with_publishes_on_their_way_through_the_broker_waits_for_them() -> None:
    """The fence, alone: a publish to Q that went to the broker holds local delivery to Q
    back until Q's consumer has received as many from the broker."""
    from types import SimpleNamespace

    from pamqp import commands

    from amqp091.events import MessageReceived
    from bridge.facade.amqp091.local_delivery import LocalDelivery

    taken: list[bytes] = []
    ready: list[Any] = [None]  # what consumer_for finds: none at first
    route = SimpleNamespace(stats=SimpleNamespace(received=0, delivered=0),
                            to_legacy091=lambda message: (message, None, message))
    consumer = SimpleNamespace(route=route, take_local=lambda p, w, body: taken.append(body))
    mode = SimpleNamespace(queues={"q": route}, exclusive={})
    local = LocalDelivery(SimpleNamespace(), mode)  # type: ignore[arg-type]
    local.consumer_for = lambda queue: ready[0]  # type: ignore[method-assign]
    publisher = SimpleNamespace(to_amqp10=lambda ev, where: ev.body, route=SimpleNamespace(
        max_message_size=None), sender=SimpleNamespace(message_size_limit=lambda c: None))

    def publish(body: bytes) -> bool:
        """Taken here (True), or fenced and sent the broker's way, as the listener does."""
        ev = MessageReceived(channel=1, method=commands.Basic.Publish(routing_key="q"),
                             properties=None, body=body, publish_tag=0)
        if local.take(None, ev, publisher):  # type: ignore[arg-type]
            return True
        assert local.fence("q") == "q"
        return False

    assert not publish(b"1")  # no consumer ready: through the broker
    ready[0] = consumer
    assert not publish(b"2")  # ready now, but "1" is still on its way: "2" follows it
    local.arrived("q")
    assert local.in_transit == {"q": 1}  # "2" still is
    local.arrived("q")
    assert publish(b"3")
    ready[0] = None
    assert not publish(b"4")  # no consumer ready again: through the broker
    ready[0] = consumer
    assert not publish(b"5")  # "4" is on its way
    local.lift("q")  # "4" refused by the broker: it never comes back
    assert local.in_transit == {"q": 1}
    local.arrived("q")
    assert publish(b"6")
    assert taken == [b"3", b"6"] and local.delivered == 2 and local.in_transit == {}


def test_a_reply_over_the_brokers_size_limit_is_refused_as_the_broker_way_refuses_it(
        bridge: Bridge) -> None:
    """RabbitMQ 4 announces its max_message_size (16 MiB by default) on the publish link:
    a reply over it is refused (basic.nack under confirms), not handed to the consumer
    because it skipped the broker."""
    with reply_pair(bridge) as pair:
        before = bridge.local("local")
        with pytest.raises(pika.exceptions.NackError):
            pair.pch.basic_publish("", pair.queue, b"x" * (17 << 20))
        pair.pch.basic_publish("", pair.queue, b"small")  # (then the next is delivered here)
        assert receive_one(pair.consumer_conn, pair.received) == b"small"
        assert not pair.received
        assert bridge.local("local") == before + 1
