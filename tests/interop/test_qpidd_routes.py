"""A real qpidd 1.40 as the bridge's legacy AMQP 0-10 broker, RabbitMQ's AMQP 1.0 on the
other side: routes both ways with qpid.messaging (the reference 0-10 client) publishing
and receiving at qpidd, heartbeats over idle periods, a TCP reset mid-stream (the bridge
reaches qpidd through a relay), a qpidd restart, and what qpidd itself does to messages.

qpidd and qpid-python come from ``../shared/peers/`` (the tests fail, naming what is
missing, without them). One qpidd and one ``amqp-bridge run`` serve the module.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from proton import Message

from tests.interop.peers import Qpidd, import_qpid_messaging
from tests.support.bridge import BridgeRun, wait_for
from tests.support.logs import records
from tests.support.rabbitmq import (
    declare_queue,
    queue_address,
    queue_depth,
    receive_messages,
    send_messages,
    unique_queue,
)
from tests.support.relay import Relay

import_qpid_messaging()
from qpid.messaging import Connection  # noqa: E402
from qpid.messaging import Message as QpidMessage  # noqa: E402


@dataclass
class Interop:
    qpidd: Qpidd
    relay: Relay
    bridge: BridgeRun
    rabbitmq_url: str
    out_queue: str    # at qpidd: the route "out" drains it into out_address
    out_address: str  # at RabbitMQ
    in_address: str   # at RabbitMQ: the route "in" moves it to qpidd's amq.direct
    in_key: str       # ... with this key; in_queue is bound with it
    in_queue: str

    def declare_qpidd_queues(self) -> None:
        """The two queues at qpidd (again after a restart: qpidd keeps no queues)."""
        with qpid_session(self.qpidd) as session:
            session.sender(f"{self.out_queue}; {{create: always}}").close()
            session.receiver(
                f"{self.in_queue}; {{create: always, node: {{x-bindings: [{{exchange: "
                f"'amq.direct', queue: '{self.in_queue}', key: '{self.in_key}'}}]}}}}").close()

    def opens(self) -> int:
        """How often the bridge opened its 0-10 connection to qpidd."""
        return sum(1 for r in records(self.bridge.log())
                   if r.get("event") == "open" and r.get("connection") == "legacy")


class qpid_session:
    """A qpid.messaging connection and session to qpidd (closed at the end)."""

    def __init__(self, qpidd: Qpidd) -> None:
        self.connection = Connection(qpidd.address)

    def __enter__(self) -> Any:
        self.connection.open()
        return self.connection.session()

    def __exit__(self, *exc: object) -> None:
        self.connection.close()


@pytest.fixture(scope="module")
def interop(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Interop]:
    tmp = tmp_path_factory.mktemp("interop-qpidd")
    qpidd = Qpidd(tmp / "qpidd").start()
    relay = Relay(("127.0.0.1", qpidd.port))
    token = uuid.uuid4().hex[:12]
    out_rq, in_rq = unique_queue("interop-out"), unique_queue("interop-in")
    for name in (out_rq, in_rq):
        declare_queue(rabbitmq_url, name)
    config = f"""
connections:
  legacy:
    protocol: amqp0-10
    url: "amqp://guest:guest@127.0.0.1:{relay.port}"
    heartbeat: 1
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_url}"
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
routes:
  - name: out
    from: {{connection: legacy, queue: interop.out.{token}}}
    to:   {{connection: cloud, address: {queue_address(out_rq)}}}
    max_in_flight: {{messages: 200}}
  - name: in
    from: {{connection: cloud, address: {queue_address(in_rq)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: interop.in.{token}}}
    max_in_flight: {{messages: 200}}
"""
    setup = Interop(qpidd, relay, BridgeRun(config, tmp), rabbitmq_url,
                    f"interop.out.{token}", queue_address(out_rq), queue_address(in_rq),
                    f"interop.in.{token}", f"interop.in.q.{token}")
    setup.declare_qpidd_queues()
    setup.bridge.start()
    try:
        wait_for(lambda: setup.opens() >= 1, 30, "the bridge's connection to qpidd",
                 setup.bridge)
        yield setup
    finally:
        rc = setup.bridge.stop()
        relay.close()
        qpidd.stop()
    assert rc == 0, setup.bridge.log()


def publish_at_qpidd(setup: Interop, count: int, first: int = 0) -> None:
    with qpid_session(setup.qpidd) as session:
        sender = session.sender(setup.out_queue)
        for i in range(first, first + count):
            sender.send(QpidMessage(content=f"order {i}", id=uuid.UUID(int=i + 1),
                                    subject="orders.created", content_type="text/plain",
                                    properties={"seq": i, "region": "eu"}, durable=True),
                        sync=False)
        session.sync()


def receive_at_qpidd(setup: Interop, count: int, timeout: float = 30) -> list[Any]:
    got: list[Any] = []
    with qpid_session(setup.qpidd) as session:
        receiver = session.receiver(setup.in_queue)
        receiver.capacity = 100
        deadline = time.monotonic() + timeout
        while len(got) < count:
            assert time.monotonic() < deadline, f"{len(got)} of {count} reached qpidd"
            try:
                got.append(receiver.fetch(timeout=1))
            except Exception as error:  # qpid.messaging.Empty: keep waiting
                if type(error).__name__ != "Empty":
                    raise
                continue
            session.acknowledge(sync=False)
        session.acknowledge()
    return got


def test_qpid_messaging_publishes_reach_the_1_0_side_mapped(interop: Interop) -> None:
    publish_at_qpidd(interop, 300)
    received = receive_messages(interop.rabbitmq_url, interop.out_address, 300, timeout=60)
    messages = [r.message for r in received]
    assert [bytes(m.body) for m in messages] == [f"order {i}".encode() for i in range(300)]
    assert [m.id for m in messages] == [uuid.UUID(int=i + 1) for i in range(300)]
    assert {m.subject for m in messages} == {"orders.created"}
    assert {m.content_type for m in messages} == {"text/plain"}
    assert [m.properties["seq"] for m in messages] == list(range(300))
    assert all(m.durable for m in messages)


def test_1_0_messages_reach_a_qpid_messaging_receiver_mapped(interop: Interop) -> None:
    send_messages(interop.rabbitmq_url, interop.in_address,
                  [Message(body=f"reply {i}", id=f"r-{i}", correlation_id=f"c-{i}",
                           content_type="text/plain", properties={"n": i}, durable=True)
                   for i in range(300)], timeout=30)
    got = receive_at_qpidd(interop, 300)
    assert [m.content for m in got] == [f"reply {i}" for i in range(300)]
    assert [m.correlation_id for m in got] == [f"c-{i}".encode() for i in range(300)]  # vbin16
    assert [m.properties["n"] for m in got] == list(range(300))


def test_idle_with_heartbeats_keeps_the_connection(interop: Interop) -> None:
    opens = interop.opens()
    time.sleep(4.5)  # more than three 1 s heartbeat intervals with no traffic
    assert interop.opens() == opens, interop.bridge.log()  # neither side timed out
    publish_at_qpidd(interop, 10, first=1000)
    got = receive_messages(interop.rabbitmq_url, interop.out_address, 10, timeout=30)
    assert [bytes(r.message.body) for r in got] == [f"order {i}".encode()
                                                     for i in range(1000, 1010)]


def test_a_tcp_reset_mid_stream_loses_nothing(interop: Interop) -> None:
    count = 2000
    publish_at_qpidd(interop, count, first=10_000)
    opens = interop.opens()
    wait_for(lambda: receive_count(interop) > 0, 30, "the stream", interop.bridge)
    interop.relay.reset()  # every relayed connection aborted with a TCP reset
    received = receive_messages(interop.rabbitmq_url, interop.out_address, count,
                                timeout=90)
    wait_for(lambda: interop.opens() > opens, 30, "a reconnect to qpidd", interop.bridge)
    bodies = [bytes(r.message.body).decode() for r in received]
    # at-least-once: every message; a re-sent one at most once per message in flight
    extra = receive_until_quiet(interop)
    assert len(bodies) + len(extra) - count <= 200
    assert set(bodies) | set(extra) == {f"order {i}" for i in range(10_000, 10_000 + count)}


def receive_count(interop: Interop) -> int:
    """Messages waiting at RabbitMQ for the out route's address."""
    return queue_depth(interop.rabbitmq_url + "/%2F", interop.out_address.rsplit("/", 1)[1])


def receive_until_quiet(interop: Interop) -> list[str]:
    """What else is at RabbitMQ (duplicates of a resumed stream), one by one."""
    extra: list[str] = []
    while True:
        try:
            got = receive_messages(interop.rabbitmq_url, interop.out_address, 1, timeout=2)
        except TimeoutError:
            return extra
        extra.append(bytes(got[0].message.body).decode())


def test_a_qpidd_restart_is_survived(interop: Interop) -> None:
    interop.qpidd.restart()  # queues and sessions gone: qpidd has no store here
    interop.declare_qpidd_queues()  # the applications' own declares, as after any restart
    publish_at_qpidd(interop, 50, first=50_000)
    received = receive_messages(interop.rabbitmq_url, interop.out_address, 50, timeout=60)
    assert [bytes(r.message.body) for r in received] == [f"order {i}".encode()
                                                         for i in range(50_000, 50_050)]
    send_messages(interop.rabbitmq_url, interop.in_address,
                  [Message(body=f"after {i}") for i in range(20)], timeout=30)
    assert [m.content for m in receive_at_qpidd(interop, 20)] == [f"after {i}"
                                                                 for i in range(20)]


def test_messages_that_entered_qpidd_over_1_0_cross_with_qpidds_user_id(
        interop: Interop) -> None:
    """What a 1.0 client sends to qpidd reaches the 0-10 route as qpidd translated it."""
    send_messages(interop.qpidd.url.replace("guest:guest@", ""), interop.out_queue,
                  [Message(body=f"via 1.0 {i}", id=f"v-{i}") for i in range(5)], timeout=30)
    received = receive_messages(interop.rabbitmq_url, interop.out_address, 5, timeout=60)
    messages = [r.message for r in received]
    # qpidd turned the 1.0 string body into 0-10 content of type text/plain (its own
    # translation, docs/mapping.md "What qpidd does instead"); the bridge carries that
    assert [bytes(m.body) for m in messages] == [f"via 1.0 {i}".encode() for i in range(5)]
    assert {m.content_type for m in messages} == {"text/plain"}
    # a 0-10 message-id is a UUID: qpidd drops a string one on the way in (not the bridge)
    assert [m.id for m in messages] == [None] * 5
    # the user-id qpidd stamped (its anonymous 1.0 login: empty) crossed, and RabbitMQ
    # took it (an empty user-id is no claim to be another user)
    assert {bytes(m.user_id) for m in messages} == {b""}
