"""The 0-9-1 declaring backend (bridge/topology/rabbitmq091.py) against a real RabbitMQ:
each operation's effect checked independently with pika, every refusal as the error
kind RabbitMQ's reply code means, and a request that outlives the connection answered."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pika
import pytest
from proton import Message
from proton.reactor import Container

from bridge.config import Connection
from bridge.legacy.amqp091 import Amqp091Connection
from bridge.topology import BindingSpec, ExchangeSpec, QueueInfo, QueueSpec, TopologyError
from bridge.topology.rabbitmq091 import ORPHAN_EXPIRES, AddressStyle, RabbitMQ091Topology
from tests.support.rabbitmq import receive_messages, send_messages, version_of
from tests.topology.loop import Loop

pytestmark = pytest.mark.rabbitmq(3, 4)


class Backend:
    """The backend on the bridge's event loop (:class:`~tests.topology.loop.Loop`, run in
    the test's thread), with the 0-9-1 connection it declares over."""

    def __init__(self, url: str, *, request_timeout: float = 10.0) -> None:
        self.loop = Loop(url)
        self.connection = Amqp091Connection(
            self.loop.container, "rabbit", Connection(protocol="amqp0-9-1", url=url))
        style: AddressStyle = "v2" if version_of(url) == 4 else "v1"
        self.topology = RabbitMQ091Topology(self.loop.container, self.connection, name="t",
                                            request_timeout=request_timeout,
                                            address_style=style)
        self.connection.start()

    def call(self, operation: Callable[..., None], *args: Any) -> Any:
        """Run ``operation(*args, done)`` on the loop; the result given to ``done``."""
        return self.loop.call(operation, *args)

    def on_loop(self, fn: Callable[[], None]) -> None:
        fn()  # the loop runs in this thread: the next call() carries it out

    def stop(self) -> None:
        self.connection.stop()
        self.loop.close()


@pytest.fixture
def backend(rabbitmq_url: str) -> Iterator[Backend]:
    running = Backend(rabbitmq_url)
    yield running
    running.stop()


def pika_channel(url: str) -> Any:
    return pika.BlockingConnection(pika.URLParameters(url)).channel()


def exists(url: str, kind: str, name: str) -> bool:
    """Whether RabbitMQ has the exchange or queue (a passive declare on its own channel)."""
    channel = pika_channel(url)
    try:
        if kind == "queue":
            channel.queue_declare(name, passive=True)
        else:
            channel.exchange_declare(name, passive=True)
        return True
    except pika.exceptions.ChannelClosedByBroker as exc:
        assert exc.reply_code == 404
        return False
    finally:
        channel.connection.close()


def test_declares_binds_and_deletes_take_effect_at_rabbitmq(backend: Backend,
                                                            rabbitmq_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    t = backend.topology
    exchange, queue = f"test.tx.{tag}", f"test.tq.{tag}"
    assert backend.call(t.declare_exchange, ExchangeSpec(exchange, "topic",
                                                         auto_delete=True), False) \
        == ExchangeSpec(exchange, "topic", auto_delete=True)
    info = backend.call(t.declare_queue, QueueSpec(queue, arguments={"x-max-length": 10}),
                        False)
    assert info == QueueInfo(queue, 0, 0)
    assert exists(rabbitmq_url, "exchange", exchange) and exists(rabbitmq_url, "queue", queue)
    assert backend.call(t.bind, BindingSpec(exchange, queue, "news.#")) is None

    channel = pika_channel(rabbitmq_url)
    channel.basic_publish(exchange, "news.uk", b"1")
    channel.basic_publish(exchange, "sport.uk", b"2")
    channel.connection.close()
    info = backend.call(t.declare_queue, QueueSpec(queue), True)  # passive: the depth
    assert info == QueueInfo(queue, 1, 0)

    assert backend.call(t.unbind, BindingSpec(exchange, queue, "news.#")) is None
    channel = pika_channel(rabbitmq_url)
    channel.basic_publish(exchange, "news.fr", b"3")
    channel.connection.close()
    assert backend.call(t.purge_queue, queue) == 1
    assert backend.call(t.delete_queue, queue, False, False) == 0
    assert backend.call(t.delete_exchange, exchange, False) is None
    assert not exists(rabbitmq_url, "queue", queue)
    assert not exists(rabbitmq_url, "exchange", exchange)


def test_a_server_named_queue_gets_rabbitmqs_name(backend: Backend) -> None:
    info = backend.call(backend.topology.declare_queue, QueueSpec("", auto_delete=True,
                                                                  exclusive=True, owner="c1"),
                        False)
    assert info.name.startswith("amq.gen-")
    backend.on_loop(lambda: backend.topology.forget_owner("c1"))
    gone = backend.call(backend.topology.declare_queue, QueueSpec(info.name), True)
    assert isinstance(gone, TopologyError) and gone.kind == "not-found"


def test_refusals_are_the_kind_rabbitmq_means_and_the_next_request_is_served(
        backend: Backend) -> None:
    tag = uuid.uuid4().hex[:8]
    t = backend.topology
    missing = backend.call(t.declare_queue, QueueSpec(f"test.none.{tag}"), True)
    assert isinstance(missing, TopologyError) and missing.kind == "not-found"
    assert f"test.none.{tag}" in missing.text
    queue = f"test.tq.{tag}"
    backend.call(t.declare_queue, QueueSpec(queue, auto_delete=True, arguments={
        "x-expires": 60_000}), False)
    other = backend.call(t.declare_queue, QueueSpec(queue, durable=True), False)
    assert isinstance(other, TopologyError) and other.kind == "precondition-failed"
    bad_bind = backend.call(t.bind, BindingSpec(f"test.nox.{tag}", queue, "k"))
    assert isinstance(bad_bind, TopologyError) and bad_bind.kind == "not-found"
    refused = backend.call(t.declare_exchange, ExchangeSpec("amq.mine", "direct"), False)
    assert isinstance(refused, TopologyError) and refused.kind == "access-refused"
    # the channel each refusal closed is replaced: the next request is served
    assert backend.call(t.declare_queue, QueueSpec(queue), True) == QueueInfo(queue, 0, 0)


def test_an_exclusive_queue_is_the_owners_and_goes_with_it(backend: Backend,
                                                           rabbitmq_url: str) -> None:
    """Declared non-exclusive (the façade's 1.0 consumers are another connection) with
    an x-expires for a bridge that dies; deleted when its owner leaves."""
    queue = f"test.excl.{uuid.uuid4().hex[:8]}"
    t = backend.topology
    backend.call(t.declare_queue, QueueSpec(queue, exclusive=True, owner="c1"), False)
    channel = pika_channel(rabbitmq_url)
    # another connection may consume (RabbitMQ would say 405 for an exclusive queue)
    channel.basic_consume(queue, lambda *a: None)
    redeclared = channel.queue_declare(queue, arguments={"x-expires": ORPHAN_EXPIRES})
    assert redeclared.method.consumer_count == 1
    channel.connection.close()
    backend.on_loop(lambda: t.forget_owner("c2"))
    assert isinstance(backend.call(t.declare_queue, QueueSpec(queue), True), QueueInfo)
    backend.on_loop(lambda: t.forget_owner("c1"))
    # queued behind the delete: answered after it
    assert isinstance(backend.call(t.declare_queue, QueueSpec(queue), True), TopologyError)
    assert not exists(rabbitmq_url, "queue", queue)


def test_addresses_are_the_nodes_form(backend: Backend, rabbitmq_url: str) -> None:
    t = backend.topology
    if version_of(rabbitmq_url) == 4:
        assert t.publish_address("x y", "a/b") == "/exchanges/x%20y/a%2Fb"
        assert t.publish_address("", "q") == "/queues/q"
        assert t.queue_address("amq.gen-1") == "/queues/amq.gen-1"
    else:  # the key travels as the subject (RabbitMQ 3.x routes by it), unless keyed
        assert t.publish_address("x", "a.b") == "/exchange/x"
        assert t.publish_address("", "q") == "/queue"
        assert t.keyed_publish_address("x", "a.b") == "/exchange/x/a.b"
        assert t.keyed_publish_address("", "q") == "/amq/queue/q"
        assert t.keyed_publish_address("x", "a/b") is None
        assert t.keyed_publish_address("x", "") is None
        assert t.queue_address("q") == "/amq/queue/q"


@pytest.mark.rabbitmq(3)
def test_rabbitmq3_routes_a_publish_address_by_the_subject(rabbitmq_url: str) -> None:
    """What is sent to publish_address(X, K) with subject K (as the mapping writes it)
    reaches the queues X routes K to, also a key holding '/'; the keyed address
    routes by its own key, whatever the subject."""
    t = RabbitMQ091Topology(Container(), Amqp091Connection(  # (addresses only: not started)
        Container(), "rabbit", Connection(protocol="amqp0-9-1", url=rabbitmq_url)), name="t")
    token = uuid.uuid4().hex[:8]
    exchange, queue = f"test.t3.{token}", f"test.t3q.{token}"
    ch = pika_channel(rabbitmq_url)
    try:
        ch.exchange_declare(exchange, "topic")
        ch.queue_declare(queue)
        ch.queue_bind(queue, exchange, "a.*")
        for key in ["a.b", "a.b/c", "z.z"]:
            send_messages(rabbitmq_url, t.publish_address(exchange, key),
                          [Message(body=key, subject=key)])
        send_messages(rabbitmq_url, t.publish_address("", queue),
                      [Message(body="default", subject=queue)])
        keyed = t.keyed_publish_address(exchange, "a.c")
        assert keyed is not None
        send_messages(rabbitmq_url, keyed, [Message(body="keyed", subject="not.the.key")])
        got = [r.message.body for r in receive_messages(rabbitmq_url, t.queue_address(queue), 4)]
        assert got == ["a.b", "a.b/c", "default", "keyed"]  # z.z: unroutable
    finally:
        ch.queue_delete(queue)
        ch.exchange_delete(exchange)
        ch.connection.close()


def test_a_request_while_rabbitmq_is_unreachable_fails_unavailable() -> None:
    """A connection that cannot open: the request waits its timeout, then is answered
    unavailable (exactly once)."""
    down = Backend("amqp://guest:guest@127.0.0.1:1/", request_timeout=0.5)
    try:
        result = down.call(down.topology.declare_queue, QueueSpec("q"), False)
        assert isinstance(result, TopologyError) and result.kind == "unavailable"
        assert "did not answer Queue.Declare within 0.5s" in result.text
    finally:
        down.stop()


def test_exchange_to_exchange_bindings(backend: Backend, rabbitmq_url: str) -> None:
    tag = uuid.uuid4().hex[:8]
    t = backend.topology
    upstream, downstream, queue = f"test.up.{tag}", f"test.down.{tag}", f"test.eq.{tag}"
    for name, kind in ((upstream, "topic"), (downstream, "fanout")):
        backend.call(t.declare_exchange, ExchangeSpec(name, kind, auto_delete=True), False)
    backend.call(t.declare_queue, QueueSpec(queue, auto_delete=True,
                                            arguments={"x-expires": 60_000}), False)
    backend.call(t.bind, BindingSpec(downstream, queue))
    e2e = BindingSpec(upstream, downstream, "a.*", to_exchange=True)
    assert backend.call(t.bind, e2e) is None
    channel = pika_channel(rabbitmq_url)
    channel.basic_publish(upstream, "a.b", b"routed")
    channel.basic_publish(upstream, "b.b", b"not routed")
    channel.connection.close()
    assert backend.call(t.declare_queue, QueueSpec(queue), True).message_count == 1
    assert backend.call(t.unbind, e2e) is None
    channel = pika_channel(rabbitmq_url)
    channel.basic_publish(upstream, "a.c", b"unbound")
    channel.connection.close()
    assert backend.call(t.declare_queue, QueueSpec(queue), True).message_count == 1
