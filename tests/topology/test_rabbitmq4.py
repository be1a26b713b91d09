"""RabbitMQ 4's management over AMQP 1.0 as the topology backend
(bridge/topology/rabbitmq4.py, management.py), driven on the bridge's own proton
container against the 4.0 node; every declare's effect is checked independently over
AMQP 0-9-1 (pika) on the same node."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest
from proton import Message

from bridge.topology import BindingSpec, ExchangeSpec, QueueInfo, QueueSpec
from bridge.topology.management import WINDOW
from bridge.topology.rabbitmq4 import SERVER_NAMED_PREFIX, RabbitMQ4Topology
from tests.support.bridge import ROOT
from tests.support.rabbitmq import AmqpError, rabbitmqctl, receive_messages, send_messages
from tests.support.relay import Relay
from tests.topology.loop import Loop, error_kind


def unique(prefix: str) -> str:
    return f"test.topo.{prefix}.{uuid.uuid4().hex[:10]}"


class Pika:
    """An independent look at the node over 0-9-1: passive declares on a fresh channel
    each (a failed passive declare closes the channel)."""

    def __init__(self, url: str) -> None:
        self.connection = pika.BlockingConnection(pika.URLParameters(url))

    def _passive(self, kind: str, name: str) -> Any:
        """The declare-ok of a passive declare of ``kind`` ``name``, else the reply code
        that closed the channel (404 none, 405 another connection's exclusive queue)."""
        channel = self.connection.channel()
        try:
            declare = channel.queue_declare if kind == "queue" else channel.exchange_declare
            return declare(name, passive=True).method
        except pika.exceptions.ChannelClosedByBroker as exc:
            assert exc.reply_code in (404, 405), exc
            return exc.reply_code
        finally:
            if channel.is_open:
                channel.close()

    def queue(self, name: str) -> Any | None:
        """The queue's declare-ok, or None when it does not exist."""
        found = self._passive("queue", name)
        assert not isinstance(found, int) or found == 404, f"{name}: {found}"
        return None if isinstance(found, int) else found

    def queue_exists(self, name: str) -> bool:
        """Whether the queue exists (another connection's exclusive one too: 405)."""
        found = self._passive("queue", name)
        return not isinstance(found, int) or found == 405

    def exchange_exists(self, name: str) -> bool:
        return not isinstance(self._passive("exchange", name), int)

    def routes(self, exchange: str, key: str, queue: str, **properties: Any) -> bool:
        """Whether a message published to ``exchange`` with ``key`` lands in ``queue``."""
        channel = self.connection.channel()
        try:
            channel.confirm_delivery()
            body = uuid.uuid4().hex.encode()
            channel.basic_publish(exchange, key, body,
                                  pika.BasicProperties(**properties))
            found = False
            while (method := channel.basic_get(queue, auto_ack=True)[0]) is not None:
                found = True
            del method
            return found
        finally:
            channel.close()

    def publish(self, exchange: str, key: str, count: int) -> None:
        channel = self.connection.channel()
        channel.confirm_delivery()
        for i in range(count):
            channel.basic_publish(exchange, key, f"m{i}".encode())
        channel.close()

    def delete(self, queues: list[str], exchanges: list[str]) -> None:
        channel = self.connection.channel()
        for q in queues:
            channel.queue_delete(q)
        for x in exchanges:
            channel.exchange_delete(x)
        channel.close()

    def close(self) -> None:
        self.connection.close()


@contextlib.contextmanager
def backend(url: str, name: str, **options: Any) -> Iterator[tuple[Loop, RabbitMQ4Topology]]:
    """A loop with a 1.0 connection to ``url`` and a backend named ``name`` on it."""
    loop = Loop(url)
    topology = RabbitMQ4Topology(loop.container, loop.connection, name=name, **options)
    try:
        yield loop, topology
    finally:
        topology.close()
        loop.close()


@pytest.fixture(scope="module", autouse=True)
def _leave_nothing(rabbitmq4_url: str) -> Iterator[None]:
    """Delete what this module's tests declared (``test.topo.*``), failed ones included."""
    yield
    look = Pika(rabbitmq4_url)
    try:
        queues, exchanges = (
            [n for n in rabbitmqctl(rabbitmq4_url, what, "-q", "name").split()
             if n.startswith("test.topo.")] for what in ("list_queues", "list_exchanges"))
        look.delete(queues, exchanges)
    finally:
        look.close()


@pytest.fixture
def node(rabbitmq4_url: str) -> Iterator[Pika]:
    look = Pika(rabbitmq4_url)
    yield look
    look.close()


@pytest.fixture
def running(rabbitmq4_url: str) -> Iterator[tuple[Loop, RabbitMQ4Topology]]:
    with backend(rabbitmq4_url, "test") as pair:
        yield pair


@pytest.fixture
def loop(running: tuple[Loop, RabbitMQ4Topology]) -> Loop:
    return running[0]


@pytest.fixture
def topology(running: tuple[Loop, RabbitMQ4Topology]) -> RabbitMQ4Topology:
    return running[1]


def test_a_queue_declared_with_arguments_exists_with_them(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    name = unique("q")
    spec = QueueSpec(name, durable=False, arguments={"x-message-ttl": 60000,
                                                     "x-max-length": 7})
    info = loop.call(topology.declare_queue, spec, False)
    assert info == QueueInfo(name, 0, 0)
    node.publish("", name, 9)
    assert node.queue(name).message_count == 7  # x-max-length took effect
    again = loop.call(topology.declare_queue, spec, False)
    assert again == QueueInfo(name, 7, 0)  # redeclared with the same: the counts
    other = QueueSpec(name, durable=False, arguments={"x-message-ttl": 1000})
    assert error_kind(loop.call(topology.declare_queue, other, False)) == "precondition-failed"
    node.delete([name], [])


def test_a_passive_queue_declare_tells_the_counts_or_not_found(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    name = unique("passive")
    missing = loop.call(topology.declare_queue, QueueSpec(name), True)
    assert error_kind(missing) == "not-found"
    assert name in missing.text
    loop.call(topology.declare_queue, QueueSpec(name), False)
    node.publish("", name, 3)
    assert loop.call(topology.declare_queue, QueueSpec(name), True) == QueueInfo(name, 3, 0)
    node.delete([name], [])


def test_exchanges_and_bindings_route_as_declared(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    topic, fanout, queue = unique("topic"), unique("fanout"), unique("bound")
    assert loop.call(topology.declare_exchange, ExchangeSpec(topic, "topic"), False) \
        == ExchangeSpec(topic, "topic")
    loop.call(topology.declare_exchange, ExchangeSpec(fanout, "fanout"), False)
    assert node.exchange_exists(topic) and node.exchange_exists(fanout)
    loop.call(topology.declare_queue, QueueSpec(queue), False)
    assert loop.call(topology.bind, BindingSpec(topic, queue, "news.#")) is None
    assert loop.call(topology.bind, BindingSpec(fanout, topic, "news.sport",
                                                to_exchange=True)) is None
    assert node.routes(topic, "news.sport", queue)
    assert not node.routes(topic, "weather.today", queue)
    assert node.routes(fanout, "news.flash", queue)  # fanout → topic → queue (news.#)
    assert loop.call(topology.unbind, BindingSpec(fanout, topic, "news.sport",
                                                  to_exchange=True)) is None
    assert not node.routes(fanout, "news.flash", queue)
    assert loop.call(topology.unbind, BindingSpec(topic, queue, "news.#")) is None
    assert not node.routes(topic, "news.sport", queue)
    node.delete([queue], [topic, fanout])


def test_passive_exchange_declares_and_what_rabbitmq_refuses(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    name = unique("x")
    missing = loop.call(topology.declare_exchange, ExchangeSpec(name), True)
    assert error_kind(missing) == "not-found" and name in missing.text
    assert loop.call(topology.declare_exchange, ExchangeSpec(""), True) == ExchangeSpec("")
    assert loop.call(topology.declare_exchange, ExchangeSpec("amq.topic", "topic"), True) \
        == ExchangeSpec("amq.topic", "topic")
    loop.call(topology.declare_exchange, ExchangeSpec(name, "direct", durable=True), False)
    assert loop.call(topology.declare_exchange, ExchangeSpec(name), True) == ExchangeSpec(name)
    other = loop.call(topology.declare_exchange, ExchangeSpec(name, "fanout", durable=True),
                      False)
    assert error_kind(other) == "precondition-failed" and "type" in other.text
    assert error_kind(loop.call(topology.declare_exchange,
                                ExchangeSpec(unique("odd"), "no-such-type"), False)) \
        == "not-implemented"
    assert error_kind(loop.call(topology.declare_exchange, ExchangeSpec("amq.mine"), False)) \
        == "access-refused"
    assert error_kind(loop.call(topology.declare_exchange, ExchangeSpec(""), False)) \
        == "access-refused"
    assert error_kind(loop.call(topology.delete_exchange, name, True)) == "not-implemented"
    assert node.exchange_exists(name)
    assert loop.call(topology.delete_exchange, name, False) is None
    assert not node.exchange_exists(name)
    assert loop.call(topology.delete_exchange, name, False) is None  # gone: succeeds


def test_names_that_need_percent_encoding(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    suffix = uuid.uuid4().hex[:8]
    queue, exchange = f"test.topo/a b#?%+;ü.{suffix}", f"test.topo x/y&z=ß.{suffix}"
    key = "k/ey #1;args=+ä"
    assert loop.call(topology.declare_queue, QueueSpec(queue), False).name == queue
    loop.call(topology.declare_exchange, ExchangeSpec(exchange, "direct"), False)
    loop.call(topology.bind, BindingSpec(exchange, queue, key))
    assert node.routes(exchange, key, queue)
    node.publish(exchange, key, 2)
    assert loop.call(topology.declare_queue, QueueSpec(queue), True) == QueueInfo(queue, 2, 0)
    assert loop.call(topology.purge_queue, queue) == 2
    loop.call(topology.unbind, BindingSpec(exchange, queue, key))
    assert not node.routes(exchange, key, queue)
    assert loop.call(topology.delete_queue, queue, False, False) == 0
    assert node.queue(queue) is None
    loop.call(topology.delete_exchange, exchange, False)
    assert not node.exchange_exists(exchange)


def test_delete_and_purge_with_their_conditions(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    name = unique("del")
    loop.call(topology.declare_queue, QueueSpec(name), False)
    node.publish("", name, 4)
    not_empty = loop.call(topology.delete_queue, name, False, True)
    assert error_kind(not_empty) == "precondition-failed" and "not empty" in not_empty.text
    receiver = loop.receiver(topology.queue_address(name), credit=0)
    loop.run_until(lambda: receiver.attached, "the consumer to attach")
    in_use = loop.call(topology.delete_queue, name, True, False)
    assert error_kind(in_use) == "precondition-failed" and "in use" in in_use.text
    assert loop.call(topology.purge_queue, name) == 4
    assert node.queue(name).message_count == 0
    node.publish("", name, 1)
    assert loop.call(topology.delete_queue, name, False, False) == 1
    assert node.queue(name) is None
    assert loop.call(topology.delete_queue, name, True, True) == 0  # gone: succeeds
    assert error_kind(loop.call(topology.purge_queue, name)) == "not-found"


def test_bindings_to_what_does_not_exist_and_with_arguments(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    headers, queue = unique("headers"), unique("hq")
    loop.call(topology.declare_exchange, ExchangeSpec(headers, "headers"), False)
    assert error_kind(loop.call(topology.bind, BindingSpec(headers, queue))) == "not-found"
    assert error_kind(loop.call(topology.bind, BindingSpec(unique("nox"), "x"))) == "not-found"
    assert error_kind(loop.call(topology.bind, BindingSpec("", queue, queue))) \
        == "access-refused"  # the default exchange takes no bindings, as over 0-9-1
    loop.call(topology.declare_queue, QueueSpec(queue), False)
    match = {"x-match": "all", "kind": "report", "year": 2026}
    loop.call(topology.bind, BindingSpec(headers, queue, "", match))
    assert node.routes(headers, "", queue, headers={"kind": "report", "year": 2026})
    assert not node.routes(headers, "", queue, headers={"kind": "report"})
    loop.call(topology.unbind, BindingSpec(headers, queue, "", {"x-match": "all"}))
    assert node.routes(headers, "", queue, headers={"kind": "report", "year": 2026})
    loop.call(topology.unbind, BindingSpec(headers, queue, "", match))
    assert not node.routes(headers, "", queue, headers={"kind": "report", "year": 2026})
    node.delete([queue], [headers])


def test_server_named_exclusive_queues_belong_to_their_owner(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika, rabbitmq4_url: str) -> None:
    info = loop.call(topology.declare_queue,
                     QueueSpec("", exclusive=True, auto_delete=True, owner="client-1"), False)
    name = info.name
    assert name.startswith(SERVER_NAMED_PREFIX) and len(name) > len(SERVER_NAMED_PREFIX) + 16
    assert info == QueueInfo(name, 0, 0)
    other = loop.call(topology.declare_queue, QueueSpec("", exclusive=True, owner="client-1"),
                      False)
    assert other.name != name  # every server-named declare: a new queue
    # the owner may declare it again, passively or not; another client may not
    assert loop.call(topology.declare_queue, QueueSpec(name, exclusive=True,
                                                       auto_delete=True, owner="client-1"),
                     False) == QueueInfo(name, 0, 0)
    assert loop.call(topology.declare_queue, QueueSpec(name, owner="client-1"), True) \
        == QueueInfo(name, 0, 0)
    for passive in (True, False):
        locked = loop.call(topology.declare_queue,
                           QueueSpec(name, exclusive=True, owner="client-2"), passive)
        assert error_kind(locked) == "resource-locked"
    # another connection may publish to it (an RPC reply), over 1.0 and 0-9-1 ...
    send_messages(rabbitmq4_url, topology.publish_address("", name), [Message(body="reply")])
    node.publish("", name, 1)
    # ... and the façade's consumer links on the bridge's connection may consume from it
    receiver = loop.receiver(topology.queue_address(name))
    loop.run_until(lambda: len(receiver.bodies) == 2, "the replies to arrive")
    assert receiver.bodies == ["reply", b"m0"]
    # another connection may not consume from it
    with pytest.raises(AmqpError, match="amqp:resource-locked"):
        receive_messages(rabbitmq4_url, topology.queue_address(other.name), 1, timeout=5)
    assert node.queue_exists(other.name)
    topology.forget_owner("client-1")
    loop.run_until(lambda: not node.queue_exists(other.name), "the owner's queues to go")
    assert not node.queue_exists(name)
    assert topology.exclusive == {}


def test_an_exclusive_queue_whose_owner_left_during_its_declare_is_not_kept(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    """A client that leaves while the declare of its exclusive queue is on its way (or
    while the queue is declared again after the 1.0 connection came back) leaves no owner
    behind: the name is free for its successor, and the queue is deleted at RabbitMQ. Kept,
    it locked the name: the topology soak's Celery worker, closed at a RabbitMQ restart,
    came back to its pidbox queue refused resource-locked and exited."""
    name = unique("left")
    results: list[Any] = []
    topology.declare_queue(QueueSpec(name, exclusive=True, owner="leaving"), False,
                           results.append)
    topology.forget_owner("leaving")  # the client goes before RabbitMQ answers
    loop.run_until(lambda: bool(results), "the declare to be answered")
    assert name not in topology.exclusive
    loop.run_until(lambda: not node.queue_exists(name), "the queue to be deleted")
    successor = loop.call(topology.declare_queue,
                          QueueSpec(name, exclusive=True, owner="successor"), False)
    assert successor == QueueInfo(name, 0, 0)
    assert topology.exclusive[name].owner == "successor"
    topology.forget_owner("successor")
    loop.run_until(lambda: not node.queue_exists(name), "the successor's queue to go")


def test_another_connections_exclusive_queue_is_locked(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    channel = node.connection.channel()
    name = unique("theirs")
    channel.queue_declare(name, exclusive=True)  # pika's connection owns it
    passive = loop.call(topology.declare_queue, QueueSpec(name, owner="c"), True)
    assert error_kind(passive) == "resource-locked"
    for result in (loop.call(topology.declare_queue, QueueSpec(name, exclusive=True), False),
                   loop.call(topology.purge_queue, name),
                   loop.call(topology.delete_queue, name, False, False),
                   loop.call(topology.bind, BindingSpec("amq.fanout", name))):
        assert error_kind(result) == "resource-locked", result
    assert node.queue(name) is not None  # still there (and pika's own)
    channel.close()


def test_publish_and_queue_addresses_reach_what_was_declared(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika, rabbitmq4_url: str) -> None:
    direct, fanout, queue = unique("pd"), unique("pf"), unique("pq")
    loop.call(topology.declare_exchange, ExchangeSpec(direct, "direct"), False)
    loop.call(topology.declare_exchange, ExchangeSpec(fanout, "fanout"), False)
    loop.call(topology.declare_queue, QueueSpec(queue), False)
    loop.call(topology.bind, BindingSpec(direct, queue, "a/b c"))
    loop.call(topology.bind, BindingSpec(fanout, queue, ""))
    assert topology.publish_address("", queue) == topology.queue_address(queue) \
        == f"/queues/{queue}"
    assert topology.publish_address(direct, "a/b c") == f"/exchanges/{direct}/a%2Fb%20c"
    for exchange, key in ((direct, "a/b c"), (fanout, ""), ("", queue)):
        outcomes = send_messages(rabbitmq4_url, topology.publish_address(exchange, key),
                                 [Message(body=f"via {exchange!r}")])
        assert [o.state for o in outcomes] == ["accepted"]
    bodies = [r.message.body for r in receive_messages(rabbitmq4_url,
                                                       topology.queue_address(queue), 3)]
    assert sorted(bodies) == sorted(["via ''", f"via {direct!r}", f"via {fanout!r}"])
    node.delete([queue], [direct, fanout])


def test_an_existing_amq_queue_may_be_declared_again(
        loop: Loop, topology: RabbitMQ4Topology, node: Pika) -> None:
    """RabbitMQ 4's management refuses every declare of an ``amq.`` queue; 0-9-1 lets
    one that exists be declared again (a server-named queue of a 0-9-1 client)."""
    channel = node.connection.channel()
    name = channel.queue_declare("", auto_delete=False).method.queue
    assert name.startswith("amq.gen-")
    node.publish("", name, 2)
    assert loop.call(topology.declare_queue, QueueSpec(name), False) == QueueInfo(name, 2, 0)
    refused = loop.call(topology.declare_queue, QueueSpec(f"amq.gen-{uuid.uuid4().hex}"), False)
    assert error_kind(refused) == "access-refused" and "reserved prefix" in refused.text
    channel.queue_delete(name)
    channel.close()


@pytest.fixture
def limited_url(rabbitmq4_url: str) -> Iterator[str]:
    """A user of the 4.0 node who may configure only ``test.topo.ok.*`` names."""
    user = f"test.topo.{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    rabbitmqctl(rabbitmq4_url, "add_user", user, password)
    try:
        rabbitmqctl(rabbitmq4_url, "set_permissions", "-p", "/", user,
                    r"^test\.topo\.ok\..*", ".*", ".*")
        yield rabbitmq4_url.replace("guest:guest", f"{user}:{password}")
    finally:
        rabbitmqctl(rabbitmq4_url, "delete_user", user)


def test_a_request_refused_for_want_of_permission_fails_alone(
        limited_url: str, node: Pika) -> None:
    """RabbitMQ refuses a request the login may not make by ending the link pair's
    session: that request fails access-refused, those in flight with it are sent again
    on a fresh pair and succeed."""
    with backend(limited_url, "limited") as (loop, topology):
        allowed = [unique("ok") for _ in range(3)]
        refused = unique("not-ok")
        results: dict[str, Any] = {}
        for name in [allowed[0], refused, *allowed[1:]]:  # all in flight at once
            topology.declare_queue(QueueSpec(name), False,
                                   lambda result, name=name: results.__setitem__(name, result))
        loop.run_until(lambda: len(results) == 4, "every declare to be answered")
        assert error_kind(results[refused]) == "access-refused"
        assert "configure access to queue" in results[refused].text
        assert all(results[name] == QueueInfo(name, 0, 0) for name in allowed), results
        assert all(node.queue_exists(name) for name in allowed)
        assert not node.queue_exists(refused)
        loop.settle()
        assert len(results) == 4
        passive = loop.call(topology.declare_queue, QueueSpec(allowed[0]), True)
        assert passive == QueueInfo(allowed[0], 0, 0)  # the fresh pair serves
        node.delete(allowed, [])


def test_probes_refused_by_ending_their_session_leave_proton_consistent(
        rabbitmq4_url: str) -> None:
    """RabbitMQ 4 refuses a probe (a sender to ``/exchanges/X`` that does not exist) by
    ending its session, the attach unanswered; the session was freed with the probe's
    link still open on our side, and the link object, freed with it, was released again
    by the next garbage collection: glibc aborted the bridge ("double free or
    corruption", seconds into a qpid.messaging ``'#'`` RPC through a topology-mode 0-10
    façade). Run in a subprocess (:mod:`tests.support.probe_churn`): the crash fails the
    test, not the test run."""
    count = 40
    proc = subprocess.run([sys.executable, "-m", "tests.support.probe_churn", rabbitmq4_url,
                           unique("never-declared"), str(count)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]  # -6 (SIGABRT) before the fix
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary == {"probes": count, "kinds": {"not-found": count}}, summary


@pytest.fixture
def relay(rabbitmq4_url: str) -> Iterator[Relay]:
    port = int(rabbitmq4_url.rsplit(":", 1)[1])
    running = Relay(("127.0.0.1", port))
    yield running
    running.close()


def test_an_unanswered_request_fails_unavailable_and_the_pair_serves_on(
        rabbitmq4_url: str, relay: Relay, node: Pika) -> None:
    with backend(relay.url(rabbitmq4_url), "slow", request_timeout=1.0) as (loop, topology):
        first, second = unique("first"), unique("second")
        assert loop.call(topology.declare_queue, QueueSpec(first), False).name == first
        relay.pause()
        late = loop.call(topology.declare_queue, QueueSpec(second), False)
        assert error_kind(late) == "unavailable" and "did not answer" in late.text
        probe = loop.call(topology.declare_exchange, ExchangeSpec("amq.direct"), True)
        assert error_kind(probe) == "unavailable"
        relay.resume()
        loop.settle(0.5)  # the late answers come, and are dropped
        assert node.queue_exists(second)  # RabbitMQ did it, late
        for _ in range(3 * WINDOW):  # late answers do not use up the window
            assert loop.call(topology.declare_queue, QueueSpec(first), True).name == first
        node.delete([first, second], [])


def test_a_lost_connection_fails_what_is_in_flight_and_the_pair_comes_back(
        rabbitmq4_url: str, relay: Relay, node: Pika) -> None:
    with backend(relay.url(rabbitmq4_url), "lost", request_timeout=30.0) as (loop, topology):
        name = unique("back")
        loop.call(topology.declare_queue, QueueSpec(name), False)
        relay.pause()
        results: list[Any] = []
        topology.declare_queue(QueueSpec(name), True, results.append)
        topology.declare_exchange(ExchangeSpec("amq.fanout"), True, results.append)
        loop.settle()
        relay.cut()
        loop.run_until(lambda: len(results) == 2, "the requests in flight to fail")
        assert [error_kind(r) for r in results] == ["unavailable", "unavailable"]
        assert all("lost" in r.text for r in results), results
        waiting: list[Any] = []
        topology.declare_queue(QueueSpec(name), True, waiting.append)  # while it is down
        loop.settle(0.5)
        assert waiting == []
        relay.restore()
        relay.resume()
        loop.run_until(lambda: bool(waiting), "the waiting request to be answered")
        assert waiting == [QueueInfo(name, 0, 0)]
        assert loop.call(topology.declare_exchange, ExchangeSpec("amq.fanout"), True) \
            == ExchangeSpec("amq.fanout")
        loop.settle()
        assert len(results) == 2 and len(waiting) == 1  # each answered once
        node.delete([name], [])


def test_a_failing_callback_is_its_owners_fault_and_the_pair_serves_on(
        loop: Loop, topology: RabbitMQ4Topology, caplog: pytest.LogCaptureFixture) -> None:
    name = unique("cb")
    called: list[Any] = []

    def broken(result: Any) -> None:
        called.append(result)
        raise RuntimeError("a façade bug")

    topology.declare_queue(QueueSpec(name), False, broken)
    loop.run_until(lambda: bool(called), "the callback")
    assert called == [QueueInfo(name, 0, 0)]
    assert any("a façade bug" in r.getMessage() for r in caplog.records
               if r.levelname == "ERROR")
    assert topology.management.up
    assert loop.call(topology.delete_queue, name, False, False) == 0


def test_exclusive_queues_are_declared_again_when_the_connection_comes_back(
        rabbitmq4_url: str, relay: Relay, node: Pika) -> None:
    """RabbitMQ deletes a connection's exclusive queues with it; the backend declares
    its owners' queues again, with their bindings, once the 1.0 connection is back."""
    with backend(relay.url(rabbitmq4_url), "again") as (loop, topology):
        key = uuid.uuid4().hex
        spec = QueueSpec("", exclusive=True, owner="rpc-client")
        name = loop.call(topology.declare_queue, spec, False).name
        loop.call(topology.bind, BindingSpec("amq.direct", name, key))
        relay.cut()
        loop.run_until(lambda: not node.queue_exists(name), "RabbitMQ to delete the queue")
        relay.restore()
        loop.run_until(lambda: node.queue_exists(name), "the queue to be declared again",
                       limit=60)
        loop.run_until(lambda: key in rabbitmqctl(rabbitmq4_url, "list_bindings", "-q",
                                                  "destination_name", "routing_key"),
                       "the binding to be made again", limit=60)
        node.publish("amq.direct", key, 1)
        assert loop.call(topology.declare_queue, QueueSpec(name, owner="rpc-client"), True) \
            == QueueInfo(name, 1, 0)
        locked = loop.call(topology.declare_queue, QueueSpec(name, owner="other"), True)
        assert error_kind(locked) == "resource-locked"
        topology.forget_owner("rpc-client")
        loop.run_until(lambda: not node.queue_exists(name), "the owner's queue to go")


def test_arguments_rabbitmq_cannot_take_and_a_closed_backend(
        rabbitmq4_url: str, node: Pika) -> None:
    with backend(rabbitmq4_url, "closing") as (loop, topology):
        odd = loop.call(topology.declare_queue,
                        QueueSpec(unique("odd"), arguments={"x-odd": {1, 2}}), False)
        assert error_kind(odd) == "precondition-failed" and "x-odd" in odd.text
        invalid = loop.call(topology.declare_queue,
                            QueueSpec(unique("bad"), arguments={"x-max-length": "many"}), False)
        assert error_kind(invalid) == "precondition-failed"  # RabbitMQ's 400
        name = unique("late")
        results: list[Any] = []
        topology.declare_queue(QueueSpec(name), False, results.append)
        topology.declare_exchange(ExchangeSpec("amq.direct"), True, results.append)
        topology.close()
        assert [error_kind(r) for r in results] == ["unavailable", "unavailable"]
        topology.declare_queue(QueueSpec(name), True, results.append)
        assert len(results) == 2  # answered later, never within the call
        loop.run_until(lambda: len(results) == 3, "the closed backend to answer")
        assert error_kind(results[2]) == "unavailable"
        loop.settle()
        assert len(results) == 3
