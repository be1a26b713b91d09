"""Redeclares a topology-mode 0-9-1 listener answers itself (bridge/facade/amqp091/declare_cache.py,
docs/topology.md "Redeclares answered by the bridge"), against RabbitMQ 4 and 3.10: a
queue the listener's consumers prove unchanged is redeclared without a broker round trip
(Celery's ``rpc://`` reply queue before every task), and what RabbitMQ would answer
otherwise is still what the client gets — a queue deleted elsewhere is made again, one
made again elsewhere with other arguments refuses the old redeclare (406), one deleted
through the listener is made again at once, and a consumer without credit leaves the
count of ready messages to the broker. On RabbitMQ 3.10 a queue deleted elsewhere under
the bridge's consumer fails the bridge's whole 1.0 connection (its AMQP 1.0 plugin's
doing), and the listener closes its clients so that they declare again (docs/topology.md):
the tests reconnect there, and the redeclare is then RabbitMQ's answer as well.

One ``amqp-bridge run`` per RabbitMQ version serves the module.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pika
import pytest

from bridge.facade.core.base import BROKER_LOST_TEXT
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.facade091 import PASSWORD, USER
from tests.support.metrics import counted, metrics_port, poll
from tests.support.rabbitmq import (
    delete_queue,
    queue_consumers_if_any,
    queue_depth_if_any,
    version_of,
)

pytestmark = pytest.mark.rabbitmq(3, 4)

CELERY_REPLY_QUEUE = {"durable": True, "auto_delete": True,
                      "arguments": {"x-expires": 86400000}}
"""How Celery's ``rpc://`` backend declares its reply queue (before every task)."""


@dataclass
class Running:
    bridge: BridgeRun
    port: int
    metrics: int
    rabbitmq_url: str

    def connect(self) -> pika.BlockingConnection:
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", self.port, credentials=pika.PlainCredentials(USER, PASSWORD),
            connection_attempts=1, heartbeat=0))

    def broker(self) -> pika.BlockingConnection:
        """A connection straight to RabbitMQ."""
        return pika.BlockingConnection(pika.URLParameters(self.rabbitmq_url + "/%2F"))

    def delete(self, queue: str) -> None:
        """Delete ``queue`` straight on RabbitMQ."""
        delete_queue(self.rabbitmq_url, queue)

    def clean_up(self, queue: str) -> None:
        """Delete a test's ``queue`` straight on RabbitMQ once no consumer of the bridge is
        on it: a delete under one fails RabbitMQ 3.10's whole 1.0 connection (and closes
        the next test's clients)."""
        poll(lambda: queue_consumers_if_any(self.rabbitmq_url, queue), lambda n: not n, 15,
             f"the bridge's consumers of {queue} gone")
        self.delete(queue)

    def after_delete_elsewhere(self, client: pika.BlockingConnection) -> pika.BlockingConnection:
        """The connection to go on with once a queue ``client`` consumes was deleted straight
        on RabbitMQ: ``client`` itself on RabbitMQ 4; on 3.10, whose AMQP 1.0 plugin fails
        the bridge's whole 1.0 connection for it, ``client`` is first seen closed with
        connection-forced (the listener's broker-lost close), then a new connection."""
        if version_of(self.rabbitmq_url) == 4:
            return client
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            poll(lambda: client.process_data_events(0.05), lambda _: False, 15,
                 "the client closed after its broker connection failed")
        assert (closed.value.reply_code, closed.value.reply_text) == (320, BROKER_LOST_TEXT)
        return self.connect()

    def broker_lost(self) -> float:
        """Clients closed because the bridge's 1.0 connection dropped."""
        return counted(self.metrics, "amqp_bridge_facade_ended_total", listener="legacy",
                       reason="broker_lost")

    def answered_by(self, whom: str) -> float:
        return counted(self.metrics, "amqp_bridge_facade_queue_declares_total",
                       listener="legacy", answered_by=whom)


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    port = free_port()
    topology = "{connection: cloud, broker: rabbitmq4}" if version_of(rabbitmq_url) == 4 \
        else "{connection: cloud, broker: rabbitmq3, declare_via: rabbit}"
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
  rabbit: {{protocol: amqp0-9-1, url: "{rabbitmq_url}"}}
listeners:
  legacy:
    protocol: amqp0-9-1
    bind: "127.0.0.1:{port}"
    users: {{{USER}: "{PASSWORD}"}}
    topology: {topology}
metrics: {{bind: "127.0.0.1:0"}}
"""
    bridge = BridgeRun(config, tmp_path_factory.mktemp("redeclare")).start()
    try:
        wait_listening(port, bridge)
        yield Running(bridge, port, metrics_port(bridge.log), rabbitmq_url)
    finally:
        rc = bridge.stop()
    assert rc == 0, bridge.log()


def name(kind: str) -> str:
    return f"test.redeclare.{kind}.{uuid.uuid4().hex[:8]}"


def consumed(conn: pika.BlockingConnection, queue: str, arguments: dict[str, Any] | None = None,
             *, ack: bool = False, **declare: Any) -> tuple[Any, list[bytes]]:
    """``queue`` declared through the façade, consumed on a channel of ``conn`` (prefetch
    1; what comes after the probe acknowledged if ``ack``), a probe message received and
    acknowledged (so its 1.0 link is attached), then declared again: an answer of the
    broker the consumer's link witnesses (what the bridge may reuse). Returns the channel
    and the bodies received after the probe."""
    ch = conn.channel()
    ch.queue_declare(queue, arguments=arguments, **declare)
    ch.basic_qos(prefetch_count=1)
    got: list[bytes] = []

    def received(c: Any, m: Any, p: Any, body: bytes) -> None:
        if body == b"probe" or ack:
            c.basic_ack(m.delivery_tag)
        if body != b"probe":
            got.append(body)
    ch.basic_consume(queue, received)
    ch.basic_publish("", queue, b"probe")
    poll(lambda: conn.process_data_events(0.05) or ch.queue_declare(
        queue, arguments=arguments, **declare).method.message_count,
        lambda ready: ready == 0, 10, "the probe consumed")
    return ch, got


def broker_depth(facade: Running, queue: str) -> int | None:
    """The queue's ready messages at RabbitMQ, None if it does not exist."""
    return queue_depth_if_any(facade.rabbitmq_url, queue)


def test_a_consumed_queue_is_redeclared_without_the_broker(facade: Running) -> None:
    queue = name("celery")
    client, worker = facade.connect(), facade.connect()
    try:
        ch, _ = consumed(client, queue, **CELERY_REPLY_QUEUE)
        before = facade.answered_by("bridge"), facade.answered_by("broker")
        for _ in range(20):
            ok = ch.queue_declare(queue, **CELERY_REPLY_QUEUE).method  # type: ignore[arg-type]
            assert (ok.queue, ok.message_count, ok.consumer_count) == (queue, 0, 1)
        # another connection's redeclare of the shared queue, and a passive one
        ok = worker.channel().queue_declare(queue, **CELERY_REPLY_QUEUE).method  # type: ignore[arg-type]
        assert (ok.message_count, ok.consumer_count) == (0, 1)
        assert worker.channel().queue_declare(queue, passive=True).method.consumer_count == 1
        after = facade.answered_by("bridge"), facade.answered_by("broker")
        # a broker answer serves the redeclares of the next MAX_AGE (5) seconds: most of
        # the 22 are the bridge's however slow the machine is
        assert after[0] - before[0] >= 11, (before, after)
        assert after[0] - before[0] + after[1] - before[1] == 22, (before, after)
    finally:
        client.close()
        worker.close()


def test_a_queue_deleted_elsewhere_is_made_again_by_a_redeclare(facade: Running) -> None:
    queue = name("deleted")
    client = facade.connect()
    try:
        consumed(client, queue, {"x-expires": 600000})
        facade.delete(queue)
        client = facade.after_delete_elsewhere(client)

        def redeclared() -> int | None:
            client.channel().queue_declare(queue, arguments={"x-expires": 600000})
            return broker_depth(facade, queue)

        # the bridge learns of the delete from its consumer's detach; from then on a
        # redeclare is RabbitMQ's again, which makes the queue
        poll(redeclared, lambda depth: depth == 0, 10, f"{queue} made again")
    finally:
        client.close()
        facade.clean_up(queue)


def test_a_queue_made_again_elsewhere_refuses_the_old_redeclare(facade: Running) -> None:
    queue = name("remade")
    client = facade.connect()
    try:
        _, got = consumed(client, queue, {"x-message-ttl": 5000}, ack=True)
        native = facade.broker()
        nch = native.channel()
        nch.queue_delete(queue)
        nch.queue_declare(queue, arguments={"x-message-ttl": 6000})
        nch.basic_publish("", queue, b"to the new queue")
        native.close()
        if (same := facade.after_delete_elsewhere(client)) is client:
            # the consumer's link comes back to the new queue (a message of it arrives, and
            # is acknowledged: the link has credit again): it attached after the old
            # queue's declare-ok, and witnesses nothing about that queue
            poll(lambda: client.process_data_events(0.05) or got, bool, 15,
                 "the consumer on the new queue")
        client = same
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            client.channel().queue_declare(queue, arguments={"x-message-ttl": 5000})
        assert info.value.reply_code == 406
    finally:
        client.close()
        facade.clean_up(queue)


def test_a_queue_deleted_through_the_listener_is_made_again_at_once(facade: Running) -> None:
    """... and its consumer is cancelled (basic.cancel), as RabbitMQ cancels the consumers
    of a queue it deletes: the bridge detaches the consumer's link before the delete, so
    that it does not follow a queue of the same name made again (RabbitMQ 4), and so
    that RabbitMQ 3.10's plugin, which fails the bridge's whole 1.0 connection for a
    queue deleted under its consumer, never sees that: no client is closed."""
    queue = name("own-delete")
    client, other = facade.connect(), facade.connect()
    lost_before = facade.broker_lost()
    try:
        ch, _ = consumed(client, queue)
        och = other.channel()
        och.queue_delete(queue)
        assert broker_depth(facade, queue) is None
        poll(lambda: client.process_data_events(0.05) or ch.consumer_tags, lambda tags: not tags,
             10, "the consumer cancelled by the bridge")
        och.queue_declare(queue)
        assert broker_depth(facade, queue) == 0
        och.queue_delete(queue)
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            other.channel().queue_declare(queue, passive=True)
        assert info.value.reply_code == 404
        client.process_data_events(0.2)  # (a close would come now)
        assert client.is_open and other.is_open
        assert facade.broker_lost() == lost_before
    finally:
        client.close()
        other.close()


def test_without_credit_the_count_of_ready_messages_is_the_brokers(facade: Running) -> None:
    queue = name("full")
    client = facade.connect()
    try:
        ch, got = consumed(client, queue)  # (prefetch 1, never acks from now on)
        publisher = client.channel()
        publisher.confirm_delivery()  # (each enqueued at RabbitMQ once confirmed)
        for n in range(3):
            publisher.basic_publish("", queue, str(n).encode())
        poll(lambda: client.process_data_events(0.05) or len(got), lambda n: n == 1, 10,
             "the first delivery")
        # the consumer holds one, its link has no credit: two are ready at RabbitMQ
        assert ch.queue_declare(queue).method.message_count == 2
    finally:
        client.close()
        facade.clean_up(queue)


def test_an_unconsumed_queue_redeclared_again_and_again_is_answered_by_the_bridge_too(
        facade: Running) -> None:
    """Celery's producer redeclares its reply queue before every task, before its first
    ``.get()`` consumes it: no witness, and a young answer of the broker serves."""
    queue = name("unconsumed")
    client = facade.connect()
    try:
        ch = client.channel()
        before = facade.answered_by("bridge"), facade.answered_by("broker")
        for _ in range(20):
            ok = ch.queue_declare(queue, **CELERY_REPLY_QUEUE).method  # type: ignore[arg-type]
            assert (ok.queue, ok.message_count, ok.consumer_count) == (queue, 0, 0)
        after = facade.answered_by("bridge"), facade.answered_by("broker")
        # a broker answer serves the redeclares of the next YOUNG_AGE (0.25) seconds: one
        # at least follows another that soon, however slow the machine is
        assert after[0] > before[0], (before, after)
        assert after[0] - before[0] + after[1] - before[1] == 20, (before, after)
        assert broker_depth(facade, queue) == 0
    finally:
        client.close()
        facade.clean_up(queue)


def test_a_redeclare_counts_the_declaring_connections_own_publishes(facade: Running) -> None:
    """A young answer serves no connection that published to the queue by name since: it
    reads its own writes."""
    queue = name("own-writes")
    client = facade.connect()
    try:
        ch = client.channel()
        ch.queue_declare(queue, **CELERY_REPLY_QUEUE)  # type: ignore[arg-type]
        ch.confirm_delivery()  # (each enqueued at RabbitMQ once confirmed)
        for n in range(3):
            ch.basic_publish("", queue, str(n).encode())
        ok = ch.queue_declare(queue, **CELERY_REPLY_QUEUE).method  # type: ignore[arg-type]
        assert ok.message_count == 3
    finally:
        client.close()
        facade.clean_up(queue)


def test_an_auto_delete_queue_whose_consumer_went_is_made_again_by_a_redeclare(
        facade: Running) -> None:
    """The queue went with its last consumer: the next redeclare is the broker's, which
    makes it again (a young answer would say it exists)."""
    queue = name("auto-delete")
    client = facade.connect()
    try:
        ch = client.channel()
        ch.queue_declare(queue, auto_delete=True)
        tag = ch.basic_consume(queue, lambda *_: None)
        ch.basic_cancel(tag)
        poll(lambda: broker_depth(facade, queue), lambda depth: depth is None, 10,
             f"{queue} deleted with its consumer")
        ch.queue_declare(queue, auto_delete=True)
        assert broker_depth(facade, queue) == 0
    finally:
        client.close()
        facade.clean_up(queue)
