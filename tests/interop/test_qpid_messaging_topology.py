"""qpid.messaging through the 0-10 façade's topology mode, nothing configured per name
(docs/topology.md, "0-10 façade"), with RabbitMQ 4 and with qpidd's AMQP 1.0 side as the
1.0 broker: qpid's own request/response pattern over ``'#'`` (server and client as
subprocesses, separate connections), ``{create: always}`` senders and receivers,
``amq.topic/news.#`` topic receivers, browsing (qpidd; RabbitMQ 4 refuses it with the
reason), declares, queries and deletes. What reached the broker is checked straight on
the broker over AMQP 1.0, not through the façade.

Two ``amqp-bridge run`` per broker kind serve the module (a topology-mode listener and
no route; the second for replies through another instance). Each test deletes what it
declared (the RabbitMQ 4 node is shared; the qpidd is the module's own)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pika
import pytest
from proton import Message, Timeout
from proton.utils import BlockingConnection

from tests.interop.peers import Qpidd, import_qpid_messaging
from tests.interop.test_qpid_messaging_apps import PASSWORD, USER, start_program
from tests.interop.test_qpid_messaging_apps import Facade as Programs
from tests.support.bridge import BridgeRun, free_port, serving

import_qpid_messaging()
from qpid.messaging import Connection  # noqa: E402
from qpid.messaging import Message as QpidMessage  # noqa: E402
from qpid.messaging.exceptions import Empty, NotFound, ReceiverError, SessionError  # noqa: E402

BROKERS = ("rabbitmq4", "qpidd")


@dataclass
class Topology:
    """The running bridge (a topology-mode 0-10 listener on ``port``) and its 1.0 broker."""

    broker: str
    broker_url: str
    port: int
    proc: BridgeRun
    second_port: int
    """A second ``amqp-bridge run`` with the same configuration (another instance)."""

    def connect(self) -> Any:
        connection = Connection(f"127.0.0.1:{self.port}", username=USER, password=PASSWORD,
                                reconnect=False)
        connection.open()
        return connection

    def queue_address(self, queue: str) -> str:
        """The queue's AMQP 1.0 address at the broker."""
        return f"/queues/{queue}" if self.broker == "rabbitmq4" else queue

    def drain_at_broker(self, queue: str, timeout: float = 1.0) -> list[Any]:
        """The bodies of what ``queue`` holds (as text), taken straight from the broker
        (1.0)."""
        connection = BlockingConnection(self.broker_url.replace("guest:guest@", ""),
                                        user="guest", password="guest")
        try:
            receiver = connection.create_receiver(self.queue_address(queue), credit=100)
            found = []
            while True:
                try:
                    message = receiver.receive(timeout=timeout)
                except Timeout:  # nothing more
                    return found
                body = message.body  # (a view into the message: read while it is kept)
                found.append(body if isinstance(body, str) else bytes(body).decode())
                receiver.accept()
        finally:
            connection.close()

    def send_at_broker(self, queue: str, bodies: list[str]) -> None:
        connection = BlockingConnection(self.broker_url.replace("guest:guest@", ""),
                                        user="guest", password="guest")
        try:
            sender = connection.create_sender(self.queue_address(queue))
            for body in bodies:
                sender.send(Message(body=body))
        finally:
            connection.close()

    def program(self, name: str, address: str, *options: Any, port: int | None = None
                ) -> subprocess.Popen[str]:
        return start_program(port or self.port, name, address, *options)


def unique(kind: str) -> str:
    return f"test.qtopology.{kind}.{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module", params=BROKERS)
def topology(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Topology]:
    broker = request.param
    qpidd = None
    if broker == "qpidd":
        qpidd = Qpidd(tmp_path_factory.mktemp("qpidd-facade-topology")).start()
        url = qpidd.url
    else:
        url = request.getfixturevalue("rabbitmq4_url")
    port, second_port = free_port(), free_port()

    def config(port: int) -> str:
        return f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{url}"}}
listeners:
  legacy: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", users: {{{USER}: "{PASSWORD}"}},
            topology: {{connection: cloud, broker: {broker}}}}}
"""
    try:
        with serving(config(port), tmp_path_factory.mktemp(f"facade-topology-{broker}"),
                     port) as proc, \
                serving(config(second_port), tmp_path_factory.mktemp(
                    f"facade-topology-{broker}-2"), second_port) as second:
            yield Topology(broker, url, port, proc, second_port)
        for log in (proc.log(), second.log()):
            assert "level=error" not in log, log
    finally:
        if qpidd is not None:
            qpidd.stop()


@pytest.mark.parametrize("instance", ["same", "second"])
def test_request_response_over_a_temporary_queue(topology: Topology, instance: str) -> None:
    """qpid's own pattern: the client's receiver on '#', reply_to=receiver.source, the
    server (another connection; of the same bridge process, or of a second one)
    answering with session.sender(msg.reply_to): 50/50; the temporary queue goes with
    the client's session."""
    requests = unique("requests")
    server = topology.program("qpid_rpc_server", f"{requests}; {{create: always}}",
                              "--count", 50,
                              port=topology.second_port if instance == "second" else None)
    assert server.stdout is not None
    assert server.stdout.readline().strip() == "listening", server.communicate(timeout=30)
    client = topology.program("qpid_rpc_client", requests, "--count", 50)
    out, err = client.communicate(timeout=120)
    report = Programs.report("qpid_rpc_client", out, err, client.returncode)
    out, err = server.communicate(timeout=60)
    served = Programs.report("qpid_rpc_server", out, err, server.returncode)
    assert (report["matched"], served["answered"]) == (50, 50), report
    temporary = report["source"].split(";")[0].strip()
    assert temporary.endswith("#") and served["reply_to"] == [temporary]
    connection = topology.connect()
    try:
        with pytest.raises(NotFound):  # its session ended: gone from the broker
            connection.session().sender(
                f"{temporary}; {{assert: always, node: {{type: queue}}}}")
        connection.session().sender(f"{requests}; {{delete: always}}").close()
    finally:
        connection.close()


def test_create_always_sender_and_receiver(topology: Topology) -> None:
    """{create: always} declares the queue at the broker (a sender's) and a receiver's
    address that creates finds it there; what the sender sent is the broker's."""
    queue, other = unique("created"), unique("created-by-receiver")
    connection = topology.connect()
    try:
        session = connection.session()
        sender = session.sender(f"{queue}; {{create: always}}")
        for i in range(3):
            sender.send(QpidMessage(f"m{i}"))
        assert topology.drain_at_broker(queue) == ["m0", "m1", "m2"]
        receiver = session.receiver(f"{other}; {{create: always, node: {{x-declare: "
                                    f"{{auto-delete: False}}}}}}")
        topology.send_at_broker(other, ["from 1.0"])
        assert receiver.fetch(timeout=10).content == "from 1.0"
        session.acknowledge()
        receiver.close()
        assert topology.drain_at_broker(other) == []
        session.sender(f"{other}; {{delete: always}}").close()
        session.sender(f"{queue}; {{delete: always}}").close()  # deletes it at the broker
        with pytest.raises(NotFound):
            session.sender(queue)
    finally:
        connection.close()


def test_topic_receiver_gets_its_pattern_only(topology: Topology) -> None:
    """amq.topic/news.#: a subscription queue bound to amq.topic with news.#; the
    subjects of the messages sent to amq.topic are their routing keys."""
    connection = topology.connect()
    try:
        session = connection.session()
        news = session.receiver("amq.topic/news.#")
        sender = session.sender("amq.topic")
        for subject in ("news.uk", "sport.football", "news.uk.weather", "sport"):
            sender.send(QpidMessage(subject, subject=subject))
        got = []
        for _ in range(2):
            message = news.fetch(timeout=20)
            got.append((message.content, message.subject))
        with pytest.raises(Empty):  # (the sport ones, sent between and after, would have come)
            news.fetch(timeout=1)
        session.acknowledge()
        assert got == [("news.uk", "news.uk"), ("news.uk.weather", "news.uk.weather")]
    finally:
        connection.close()


def test_browse_sees_messages_without_consuming_them(topology: Topology) -> None:
    """{mode: browse}: qpidd gives a distribution-mode copy source (the 5 messages stay
    on the queue); RabbitMQ 4 has none: refused not-implemented, the reason said."""
    queue = unique("browsed")
    connection = topology.connect()
    try:
        session = connection.session()
        sender = session.sender(f"{queue}; {{create: always}}")
        for i in range(5):
            sender.send(QpidMessage(f"m{i}"))
        if topology.broker == "rabbitmq4":
            with pytest.raises(SessionError) as info:
                session.receiver(f"{queue}; {{mode: browse}}").fetch(timeout=10)
            assert "(540)" in str(info.value) and "RabbitMQ 4 has no" in str(info.value)
            session = connection.session()
        else:
            browser = session.receiver(f"{queue}; {{mode: browse}}")
            seen = [browser.fetch(timeout=10).content for _ in range(5)]
            with pytest.raises(Empty):
                browser.fetch(timeout=1)
            session.acknowledge()
            browser.close()
            assert seen == [f"m{i}" for i in range(5)]
        assert topology.drain_at_broker(queue) == [f"m{i}" for i in range(5)]
        session.sender(f"{queue}; {{delete: always}}").close()
    finally:
        connection.close()


def test_absent_names_and_exclusive_queues(topology: Topology) -> None:
    """A queue-query of an absent name is "not found" (qpid.messaging's NotFound for the
    address, the session still usable); another session's exclusive queue is found (a
    reply can go to it) but not subscribed to: resource-locked (405), as qpidd answers."""
    connection = topology.connect()
    try:
        session = connection.session()
        with pytest.raises(NotFound):
            session.receiver(unique("absent"))
        mine = unique("exclusive")
        session.receiver(f"{mine}; {{create: always, node: {{x-declare: "
                         f"{{exclusive: True}}}}}}")
        other = topology.connect()
        try:
            other_session = other.session()
            other_session.sender(mine).send(QpidMessage("to an exclusive queue"))
            with pytest.raises(ReceiverError) as info:
                other_session.receiver(mine).fetch(timeout=10)
            assert "(405)" in str(info.value), info.value
        finally:
            other.close()
    finally:
        connection.close()


def test_an_exchange_declared_elsewhere(topology: Topology) -> None:
    """A topic exchange another client declared straight on the broker: qpidd tells its
    type, so a receiver on it with no subject binds qpid.messaging's default '#' and gets
    every message; RabbitMQ 4 does not tell an exchange's type (docs/topology.md), so
    qpid.messaging binds with an empty key and a keyed message does not reach it."""
    exchange = unique("elsewhere")
    if topology.broker == "qpidd":
        direct = Connection(topology.broker_url.rpartition("@")[2])
        direct.open()
        try:
            direct.session().sender(f"{exchange}; {{create: always, node: {{type: topic}}}}")
        finally:
            direct.close()
    else:
        conn = pika.BlockingConnection(pika.URLParameters(topology.broker_url + "/%2F"))
        try:
            conn.channel().exchange_declare(exchange, "topic", auto_delete=True)
        finally:
            conn.close()
    connection = topology.connect()
    try:
        session = connection.session()
        receiver = session.receiver(exchange)
        session.sender(f"{exchange}/a.b").send(QpidMessage("keyed"))
        if topology.broker == "qpidd":
            assert receiver.fetch(timeout=10).content == "keyed"
            session.acknowledge()
        else:
            with pytest.raises(Empty):
                receiver.fetch(timeout=1)
        receiver.close()
        session.sender(f"{exchange}; {{delete: always}}").close()
    finally:
        connection.close()


def test_create_always_topic_node(topology: Topology) -> None:
    """{create: always, node: {type: topic}}: an exchange (topic) declared at the broker;
    a receiver with a pattern on it gets what matches; {delete: always} removes it."""
    exchange = unique("topic")
    connection = topology.connect()
    try:
        session = connection.session()
        sender = session.sender(f"{exchange}; {{create: always, node: {{type: topic}}}}")
        receiver = session.receiver(f"{exchange}/orders.#")
        for subject in ("orders.new", "invoices.new", "orders.eu.paid"):
            sender.send(QpidMessage(subject, subject=subject))
        got = [receiver.fetch(timeout=20).content for _ in range(2)]
        with pytest.raises(Empty):  # (invoices.new, sent between them, would have come)
            receiver.fetch(timeout=1)
        session.acknowledge()
        assert got == ["orders.new", "orders.eu.paid"]
        receiver.close()
        sender.close()
        session.sender(f"{exchange}; {{delete: always, node: {{type: topic}}}}").close()
        with pytest.raises(NotFound):
            session.sender(exchange)
    finally:
        connection.close()
