"""qpidd's AMQP 1.0 side as the topology backend (bridge/topology/qpidd.py, qmf.py on
request_response.py), driven on the bridge's own proton container against a real
qpidd 1.40; every operation's effect is checked independently over AMQP 0-10
(qpid.messaging) on the same qpidd, or by a 1.0 client of its own."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proton import Message
from proton.utils import BlockingConnection

from bridge.topology import BindingSpec, ExchangeSpec, QueueInfo, QueueSpec, TopologyError
from bridge.topology.model import SERVER_NAMED_PREFIX
from bridge.topology.qmf import QmfException
from bridge.topology.qpidd import QpiddTopology, error_of
from tests.interop.peers import STOPPED, Qpidd, import_qpid_messaging
from tests.support.relay import Relay
from tests.topology.loop import Loop, error_kind

import_qpid_messaging()
from qpid.messaging import Connection  # noqa: E402
from qpid.messaging import Message as QpidMessage  # noqa: E402
from qpid.messaging.exceptions import Empty, NotFound  # noqa: E402


def unique(prefix: str) -> str:
    return f"test.qtopo.{prefix}.{uuid.uuid4().hex[:10]}"


class Look:
    """An independent look at qpidd over AMQP 0-10 (qpid.messaging)."""

    def __init__(self, qpidd: Qpidd) -> None:
        self.connection = Connection(qpidd.address)
        self.connection.open()
        self.session = self.connection.session()

    def exists(self, name: str, kind: str = "queue") -> bool:
        """Whether the node exists (``kind`` queue or topic: an exchange)."""
        try:
            self.session.sender(f"{name}; {{assert: always, node: {{type: {kind}}}}}").close()
            return True
        except NotFound:
            self.session = self.connection.session()  # NotFound ends the session
            return False

    def send(self, address: str, count: int, subject: str | None = None) -> None:
        sender = self.session.sender(address)
        for i in range(count):
            sender.send(QpidMessage(f"m{i}", subject=subject))
        sender.close()

    def drain(self, queue: str) -> list[str]:
        """The messages in ``queue`` (taken and acknowledged)."""
        receiver = self.session.receiver(queue)
        found = []
        try:
            while True:
                found.append(receiver.fetch(timeout=0.5).content)
        except Empty:
            pass
        self.session.acknowledge()
        receiver.close()
        return found

    def close(self) -> None:
        self.connection.close()


def send_1_0(qpidd: Qpidd, address: str, body: str, subject: str | None = None) -> None:
    """Send one message over AMQP 1.0 on a connection of its own (another client)."""
    connection = BlockingConnection(f"127.0.0.1:{qpidd.port}")
    try:
        connection.create_sender(address).send(Message(body=body, subject=subject))
    finally:
        connection.close()


@contextlib.contextmanager
def backend(qpidd: Qpidd, relay: Relay | None = None, **options: Any
            ) -> Iterator[tuple[Loop, QpiddTopology]]:
    url = f"amqp://127.0.0.1:{qpidd.port}"
    loop = Loop(relay.url(url) if relay is not None else url)
    topology = QpiddTopology(loop.container, loop.connection, name="test", **options)
    try:
        yield loop, topology
    finally:
        topology.close()
        loop.close()


@pytest.fixture(scope="module")
def qpidd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Qpidd]:
    broker = Qpidd(tmp_path_factory.mktemp("qpidd-topology")).start()
    yield broker
    broker.stop()


@pytest.fixture
def look(qpidd: Qpidd) -> Iterator[Look]:
    seen = Look(qpidd)
    yield seen
    seen.close()


@pytest.fixture
def running(qpidd: Qpidd) -> Iterator[tuple[Loop, QpiddTopology]]:
    with backend(qpidd) as pair:
        yield pair


@pytest.fixture
def loop(running: tuple[Loop, QpiddTopology]) -> Loop:
    return running[0]


@pytest.fixture
def topology(running: tuple[Loop, QpiddTopology]) -> QpiddTopology:
    return running[1]


def test_a_queue_declare_creates_it_and_a_redeclare_tells_the_counts(
        loop: Loop, topology: QpiddTopology, look: Look) -> None:
    name = unique("q")
    assert loop.call(topology.declare_queue, QueueSpec(name), False) == QueueInfo(name, 0, 0)
    assert look.exists(name)
    look.send(name, 3)
    consumer = look.session.receiver(name)
    consumer.capacity = 0
    # redeclared (qpidd: 'object already exists'): the counts, from QMF
    assert loop.call(topology.declare_queue, QueueSpec(name), False) == QueueInfo(name, 3, 1)
    assert loop.call(topology.declare_queue, QueueSpec(name), True) == QueueInfo(name, 3, 1)
    consumer.close()
    other = loop.call(topology.declare_queue, QueueSpec(name, durable=True), False)
    assert error_kind(other) == "precondition-failed" and "durable" in other.text
    missing = loop.call(topology.declare_queue, QueueSpec(unique("none")), True)
    assert error_kind(missing) == "not-found" and "no queue" in missing.text


def test_queue_arguments_reach_qpidd(loop: Loop, topology: QpiddTopology, look: Look) -> None:
    name = unique("limited")
    spec = QueueSpec(name, arguments={"qpid.max_count": 2, "qpid.policy_type": "ring"})
    loop.call(topology.declare_queue, spec, False)
    look.send(name, 5)
    assert look.drain(name) == ["m3", "m4"]  # a ring of two kept the last two
    bad = QueueSpec(unique("bad"), arguments={"x": object()})
    assert error_kind(loop.call(topology.declare_queue, bad, False)) == "precondition-failed"


def test_exchanges_and_bindings_route_1_0_messages_by_subject(
        loop: Loop, topology: QpiddTopology, look: Look, qpidd: Qpidd) -> None:
    topic, direct, queue = unique("topic"), unique("direct"), unique("bound")
    spec = ExchangeSpec(topic, "topic")
    assert loop.call(topology.declare_exchange, spec, False) == spec
    assert loop.call(topology.declare_exchange, ExchangeSpec(direct, "direct"), False) \
        == ExchangeSpec(direct, "direct")
    assert look.exists(topic, "topic") and look.exists(direct, "topic")
    loop.call(topology.declare_queue, QueueSpec(queue), False)
    assert loop.call(topology.bind, BindingSpec(topic, queue, "news.#")) is None
    assert loop.call(topology.bind, BindingSpec(direct, queue, "k1")) is None
    # a 1.0 message to the exchange's address, the routing key as its subject
    send_1_0(qpidd, topology.publish_address(topic, "news.sport"), "sport", "news.sport")
    send_1_0(qpidd, topology.publish_address(topic, "weather"), "weather", "weather")
    send_1_0(qpidd, topology.publish_address(direct, "k1"), "direct-k1", "k1")
    send_1_0(qpidd, topology.publish_address(direct, "k2"), "direct-k2", "k2")
    # the default exchange: the queue named by the key
    send_1_0(qpidd, topology.publish_address("", queue), "default", queue)
    send_1_0(qpidd, topology.publish_address(topic, "news"), "zero-words", "news")
    assert look.drain(queue) == ["sport", "direct-k1", "default", "zero-words"]
    assert loop.call(topology.unbind, BindingSpec(topic, queue, "news.#")) is None
    assert loop.call(topology.unbind, BindingSpec(topic, queue, "news.#")) is None  # none: ok
    send_1_0(qpidd, topology.publish_address(topic, "news.sport"), "sport", "news.sport")
    assert look.drain(queue) == []
    assert topology.queue_address(queue) == queue


def test_headers_bindings_match_application_properties(
        loop: Loop, topology: QpiddTopology, look: Look, qpidd: Qpidd) -> None:
    headers, queue = unique("headers"), unique("hq")
    loop.call(topology.declare_exchange, ExchangeSpec(headers, "headers"), False)
    loop.call(topology.declare_queue, QueueSpec(queue), False)
    a = BindingSpec(headers, queue, "a", {"x-match": "all", "a": 1})
    assert loop.call(topology.bind, a) is None
    assert loop.call(topology.bind, a) is None  # the same again: as 0-9-1, nothing new
    assert loop.call(topology.bind, BindingSpec(headers, queue, "b", {"b": 2})) is None
    # qpidd keys a queue's headers bindings by the binding key alone
    twice = loop.call(topology.bind, BindingSpec(headers, queue, "a", {"c": 3}))
    assert error_kind(twice) == "not-implemented" and "Duplicate binding key" in twice.text
    connection = BlockingConnection(f"127.0.0.1:{qpidd.port}")
    try:
        sender = connection.create_sender(topology.publish_address(headers, ""))
        for body, properties in (("a", {"a": 1}), ("b", {"b": 2}), ("c", {"c": 3})):
            sender.send(Message(body=body, properties=properties))
        assert look.drain(queue) == ["a", "b"]
        assert loop.call(topology.unbind, a) is None
        sender.send(Message(body="a-again", properties={"a": 1}))
        assert look.drain(queue) == []
    finally:
        connection.close()


def test_auto_delete_queues_go_with_their_last_consumer(
        loop: Loop, topology: QpiddTopology, look: Look) -> None:
    name = unique("auto")
    loop.call(topology.declare_queue, QueueSpec(name, auto_delete=True), False)
    loop.settle(0.5)
    assert look.exists(name)  # one that never had a consumer stays
    consumer = loop.receiver(topology.queue_address(name))
    loop.run_until(lambda: consumer.attached, "the consumer to attach")
    consumer.link.close()
    loop.run_until(lambda: not look.exists(name), "qpidd to delete the queue")


def test_another_connections_exclusive_queue_is_locked(
        loop: Loop, topology: QpiddTopology, look: Look) -> None:
    receiver = look.session.receiver("#")  # qpid.messaging's temporary queue: exclusive
    name = receiver.source.split(";")[0]
    for passive in (True, False):
        locked = loop.call(topology.declare_queue, QueueSpec(name, auto_delete=True), passive)
        assert error_kind(locked) == "resource-locked", passive
    receiver.close()


def test_exchange_redeclares_passive_declares_and_deletes(
        loop: Loop, topology: QpiddTopology, look: Look) -> None:
    name, queue = unique("x"), unique("xq")
    loop.call(topology.declare_exchange, ExchangeSpec(name, "fanout"), False)
    assert loop.call(topology.declare_exchange, ExchangeSpec(name, "fanout"), False) \
        == ExchangeSpec(name, "fanout")  # qpidd: 'object already exists'; the same type
    other = loop.call(topology.declare_exchange, ExchangeSpec(name, "topic"), False)
    assert error_kind(other) == "precondition-failed" and "fanout" in other.text
    assert loop.call(topology.declare_exchange, ExchangeSpec(name, "topic"), True) \
        == ExchangeSpec(name, "fanout")  # passive: exists, whatever the type; qpidd's type
    assert loop.call(topology.declare_exchange, ExchangeSpec("", "direct"), True) \
        == ExchangeSpec("", "direct")
    missing = loop.call(topology.declare_exchange, ExchangeSpec(unique("none")), True)
    assert error_kind(missing) == "not-found"
    loop.call(topology.declare_queue, QueueSpec(queue), False)
    loop.call(topology.bind, BindingSpec(name, queue))
    assert error_kind(loop.call(topology.delete_exchange, name, True)) == "precondition-failed"
    assert look.exists(name, "topic")
    assert loop.call(topology.delete_exchange, name, False) is None
    assert not look.exists(name, "topic")
    assert loop.call(topology.delete_exchange, name, False) is None  # none: ok, as 0-9-1


def test_queue_delete_conditions_and_purge_as_qpidd_checks_them(
        loop: Loop, topology: QpiddTopology, look: Look) -> None:
    name = unique("del")
    loop.call(topology.declare_queue, QueueSpec(name), False)
    look.send(name, 4)
    full = loop.call(topology.delete_queue, name, False, True)
    assert error_kind(full) == "precondition-failed" and "not empty" in full.text
    assert loop.call(topology.purge_queue, name) == 4
    assert look.drain(name) == []
    consumer = look.session.receiver(name)
    used = loop.call(topology.delete_queue, name, True, False)
    assert error_kind(used) == "precondition-failed" and "in use" in used.text
    consumer.close()
    assert loop.call(topology.delete_queue, name, True, True) is None
    assert not look.exists(name)
    assert loop.call(topology.delete_queue, name, False, False) == 0  # none: ok
    assert error_kind(loop.call(topology.purge_queue, name)) == "not-found"


def test_what_qpidd_cannot_express_is_refused_saying_why(
        loop: Loop, topology: QpiddTopology) -> None:
    x, q = unique("x"), unique("q")
    loop.call(topology.declare_exchange, ExchangeSpec(x, "direct"), False)
    loop.call(topology.declare_queue, QueueSpec(q), False)
    cases = [
        (topology.declare_exchange, (ExchangeSpec(unique("y"), "x-nosuch"), False),
         "not-implemented"),
        (topology.declare_exchange, (ExchangeSpec(unique("i"), internal=True), False),
         "not-implemented"),
        (topology.bind, (BindingSpec(x, x, "k", to_exchange=True),), "not-implemented"),
        (topology.bind, (BindingSpec(x, q, "a/b"),), "not-implemented"),
        (topology.bind, (BindingSpec("", q, q),), "access-refused"),
        (topology.bind, (BindingSpec(x, unique("none"), "k"),), "not-found"),
        (topology.bind, (BindingSpec(unique("none"), q, "k"),), "not-found"),
    ]
    for operation, args, kind in cases:
        result = loop.call(operation, *args)
        assert error_kind(result) == kind, (args, result)
        assert "(/" not in result.text  # qpidd's source location is cut off


def test_qpidds_texts_as_error_kinds() -> None:
    """The texts this qpidd build sends without an ACL module, and those of an ACL."""
    texts = {
        "not-found: Delete failed. No such queue: q": "not-found",
        "No object found with ID=0-0-0--0(org.apache.qpid.broker:queue:q)": "not-found",
        "unauthorized-access: ACL denied queue create request from u@QPID": "access-refused",
        "ACL denied queue query request from u": "access-refused",
        "Cannot delete queue q; queue in use": "precondition-failed",
        "Invalid exchange type: nosuch": "not-implemented",
        "Cannot delete queue not-found: q; queue in use": "precondition-failed",
        "internal-error: Exchange: h, binding key: a Duplicate binding key not allowed.":
            "not-implemented",
    }
    for text, kind in texts.items():
        assert error_of(QmfException(7, text)) == TopologyError(kind, text)


def test_server_named_exclusive_queues_take_replies_and_go_with_their_owner(
        loop: Loop, topology: QpiddTopology, look: Look, qpidd: Qpidd) -> None:
    info = loop.call(topology.declare_queue,
                     QueueSpec("", exclusive=True, auto_delete=True, owner="client-a"), False)
    name = info.name
    assert name.startswith(SERVER_NAMED_PREFIX) and info == QueueInfo(name, 0, 0)
    assert look.exists(name)
    locked = loop.call(topology.declare_queue, QueueSpec(name, exclusive=True, owner="b"), True)
    assert error_kind(locked) == "resource-locked"
    assert loop.call(topology.declare_queue,  # its owner may declare it again
                     QueueSpec(name, exclusive=True, auto_delete=True, owner="client-a"),
                     False) == QueueInfo(name, 0, 0)
    # the façade consumes on the bridge's connection; replies come from other clients
    replies = loop.receiver(topology.queue_address(name))
    loop.run_until(lambda: replies.attached, "the consumer to attach")
    look.send(name, 1)  # 0-10, the default exchange
    send_1_0(qpidd, topology.publish_address("", name), "reply-1.0")
    loop.run_until(lambda: len(replies.bodies) == 2, "both replies")
    assert replies.bodies == [b"m0", "reply-1.0"]  # 0-10 content arrives as data
    topology.forget_owner("client-a")
    loop.run_until(lambda: not look.exists(name), "the queue to go with its owner")
    topology.forget_owner("client-a")  # nothing left: nothing happens
    loop.settle()


@pytest.fixture
def own_qpidd(tmp_path: Path) -> Iterator[Qpidd]:
    """A qpidd of the test's own (it is paused and stopped)."""
    broker = Qpidd(tmp_path / "qpidd").start()
    yield broker
    with contextlib.suppress(ProcessLookupError):
        broker.resume()
    broker.stop()


def test_a_paused_qpidd_runs_none_of_its_threads(own_qpidd: Qpidd) -> None:
    """``pause`` returns once no thread of qpidd runs. SIGSTOP's ``kill`` returns before
    that, and qpidd's other I/O threads answer meanwhile: a passive declare sent right
    after the ``kill`` was answered (3 ms later, its own correlation id) in 1 of 30 tries,
    in 19 of 40 with qpidd's main thread, the one the signal wakes, at idle priority; the
    next test's first assertion failed so in a loaded run."""
    assert len(own_qpidd.thread_states()) > 1  # the case at stake: several threads
    for _ in range(20):
        own_qpidd.pause()
        assert set(own_qpidd.thread_states()) <= STOPPED, own_qpidd.thread_states()
        own_qpidd.resume()
        assert not set(own_qpidd.thread_states()) & STOPPED  # SIGCONT wakes them at once


def test_no_answer_in_time_or_qpidd_stopped_mid_request_is_unavailable(
        own_qpidd: Qpidd) -> None:
    with backend(own_qpidd, request_timeout=30.0) as (loop, topology):
        name = unique("q")
        assert loop.call(topology.declare_queue, QueueSpec(name), False) == \
            QueueInfo(name, 0, 0)
        # a short wait for the paused qpidd only (each request reads request_timeout when
        # it is made); the others have 30 s, for a loaded machine attaching the pair
        topology.qmf.request_timeout = 1.0
        own_qpidd.pause()  # it hears, it does not answer
        late = loop.call(topology.declare_queue, QueueSpec(name), True)
        assert error_kind(late) == "unavailable" and "did not answer" in late.text
        topology.qmf.request_timeout = 30.0
        own_qpidd.resume()
        loop.settle(0.5)  # the late answer is dropped: each request answered once
        assert loop.call(topology.declare_queue, QueueSpec(name), True) == \
            QueueInfo(name, 0, 0)
        results: list[Any] = []
        # sent when the loop next runs: after qpidd is gone (stop() waits for its end)
        topology.declare_queue(QueueSpec(unique("mid")), False, results.append)
        own_qpidd.stop()
        loop.run_until(lambda: bool(results), "the request in flight to fail")
        assert error_kind(results[0]) == "unavailable" and "lost" in results[0].text
        own_qpidd.start()  # same port, nothing kept; the pair comes back
        loop.run_until(lambda: topology.qmf.up, "the pair to come back")
        again = unique("again")
        assert loop.call(topology.declare_queue, QueueSpec(again), False) == \
            QueueInfo(again, 0, 0)


def test_a_dropped_connection_fails_what_is_in_flight_and_keeps_exclusive_queues(
        qpidd: Qpidd, look: Look) -> None:
    relay = Relay(("127.0.0.1", qpidd.port))
    try:
        with backend(qpidd, relay, request_timeout=30.0) as (loop, topology):
            info = loop.call(topology.declare_queue,
                             QueueSpec("", exclusive=True, owner="client-a"), False)
            first_reply_to = topology.qmf.reply_to
            relay.pause()
            results: list[Any] = []
            topology.declare_queue(QueueSpec(info.name, owner="client-a"), True, results.append)
            loop.settle()
            relay.cut()
            loop.run_until(lambda: bool(results), "the request in flight to fail")
            assert error_kind(results[0]) == "unavailable" and "lost" in results[0].text
            waiting: list[Any] = []
            topology.declare_queue(QueueSpec(info.name, owner="client-a"), True, waiting.append)
            loop.settle(0.5)
            assert waiting == []  # it waits for the pair
            relay.restore()
            relay.resume()
            loop.run_until(lambda: bool(waiting), "the waiting request to be answered")
            # qpidd does not tie a QMF-created queue to the connection: it is still there
            assert waiting == [QueueInfo(info.name, 0, 0)] and look.exists(info.name)
            assert topology.qmf.reply_to != first_reply_to  # a fresh dynamic node
            loop.settle()
            assert len(results) == 1 and len(waiting) == 1  # each answered once
            topology.forget_owner("client-a")
            loop.run_until(lambda: not look.exists(info.name), "the queue to go")
    finally:
        relay.close()
