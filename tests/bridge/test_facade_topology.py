"""The 0-10 façade's topology mode against RabbitMQ 4 (docs/topology.md, "0-10 façade"),
driven by the engine's :class:`BlockingClient`: what a 0-10 client declares, binds,
purges and deletes is RabbitMQ's (checked on RabbitMQ itself over 0-9-1), queries of
absent names are normal results, refusals carry qpidd's codes, a session's pipelined
commands run in order, transfers are routed by RabbitMQ (unroutable: completed; no such
exchange: not-found), permissions apply, and a configured route keeps its name.

One ``amqp-bridge run`` serves the module (a topology-mode 0-10 listener with one route).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from proton import Message

from amqp010.events import ExecutionExceptionReceived
from amqp010.spec import (
    AcquireMode,
    CreditUnit,
    DeliveryProperties,
    ErrorCode,
    MessageProperties,
    ReplyTo,
)
from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.logs import records
from tests.support.metrics import counted, metrics_port
from tests.support.rabbitmq import (
    declare_queue,
    delete_queue,
    queue_address,
    queue_depth_if_any,
    receive_messages,
    send_messages,
    unique_queue,
)
from tests.support.relay import Relay

pytestmark = pytest.mark.rabbitmq(4)

USERS = {"app": "app-pw", "reader": "reader-pw"}
UNROUTABLE = "amqp_bridge_facade_publishes_unroutable_total"


@dataclass
class Running:
    rabbitmq_url: str
    port: int
    configured: str
    """The RabbitMQ queue behind the configured exchange ``test.configured``."""
    proc: BridgeRun

    @property
    def metrics(self) -> int:
        """The bridge's ``/metrics`` port (from its start-up log line)."""
        return metrics_port(self.proc.log)

    def client(self, user: str = "app") -> BlockingClient:
        return BlockingClient.connect(f"amqp://{user}:{USERS[user]}@127.0.0.1:{self.port}")

    def depth(self, queue: str) -> int | None:
        """The queue's depth at RabbitMQ (over 0-9-1), None if it does not exist."""
        return queue_depth_if_any(self.rabbitmq_url, queue)

    def delete(self, queue: str) -> None:
        """Delete the queue at RabbitMQ (the 4.0 node is shared: tests leave nothing)."""
        delete_queue(self.rabbitmq_url, queue)


@pytest.fixture(scope="module")
def bridge(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    configured = unique_queue("topology010-configured")
    declare_queue(rabbitmq_url, configured)
    port = free_port()
    users = ", ".join(f"{u}: {p}" for u, p in USERS.items())
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  legacy:
    protocol: amqp0-10
    bind: "127.0.0.1:{port}"
    users: {{{users}}}
    topology: {{connection: cloud, broker: rabbitmq4}}
    permissions:
      app: {{configure: ".*", write: ".*", read: ".*"}}
      reader: {{read: ".*"}}
routes:
  - {{name: configured, from: {{listener: legacy, exchange: test.configured}},
      to: {{connection: cloud, address: {queue_address(configured)}}}}}
metrics: {{bind: "127.0.0.1:0"}}
"""
    proc = BridgeRun(config, tmp_path_factory.mktemp("topology010")).start()
    running = Running(rabbitmq_url, port, configured, proc)
    try:
        wait_listening(port, proc)
        yield running
    finally:
        rc = proc.stop()
        running.delete(configured)
    assert rc == 0, proc.log()
    assert "level=error" not in proc.log(), proc.log()


def name(kind: str) -> str:
    return f"test.topology010.{kind}.{uuid.uuid4().hex[:8]}"


def refused(client: BlockingClient, action: Callable[[BlockingClient], object]
            ) -> ExecutionExceptionReceived:
    """The execution.exception ``action`` ends with."""
    with pytest.raises(ClientError) as info:
        action(client)
    event = info.value.event
    assert isinstance(event, ExecutionExceptionReceived), info.value
    return event


def test_declares_binds_purges_and_deletes_are_rabbitmqs(bridge: Running) -> None:
    exchange, queue = name("x"), name("q")
    with bridge.client() as client:
        client.declare_exchange(exchange, "topic")
        client.declare_queue(queue)
        client.bind(queue, exchange, "a.*")
        for key in ("a.b", "a.c", "b.a"):  # b.a matches nothing: completed all the same
            client.publish(key.encode(), key, exchange)
        assert bridge.depth(queue) == 2  # RabbitMQ routed them
        found = client.query_queue(queue)  # the broker's counts
        assert (found.queue, found.message_count, found.subscriber_count) == (queue, 2, 0)
        assert not client._result(client._s().exchange_query(exchange)).not_found
        client.purge_queue(queue)
        assert bridge.depth(queue) == 0
        client.unbind(queue, exchange, "a.*")
        client.publish(b"unbound", "a.b", exchange)
        assert bridge.depth(queue) == 0
        client.delete_queue(queue)
        assert bridge.depth(queue) is None
        client._call(client._s().exchange_delete(exchange, sync=True))
        assert client._result(client._s().exchange_query(exchange)).not_found


def test_unroutable_transfers_are_completed_counted_and_warned_of(bridge: Running) -> None:
    """A transfer no queue takes is completed and dropped (qpidd tells the publisher
    nothing), counted in /metrics and warned of (a WARNING line per client address every
    10 s: an earlier test's may have been this one's) with its exchange and routing key —
    the routing key also when qpid.messaging's ``qpid.subject`` gave the 1.0 message
    another subject."""
    exchange = name("x")
    before = counted(bridge.metrics, UNROUTABLE, listener="legacy")
    with bridge.client() as client:
        client.declare_exchange(exchange, "direct")
        client.publish(b"to nobody", "nobody", exchange)
        client.publish(b"to nobody either", "nobody", exchange, properties=MessageProperties(
            application_headers={"qpid.subject": "a subject"}))
        client._call(client._s().exchange_delete(exchange, sync=True))
    assert counted(bridge.metrics, UNROUTABLE, listener="legacy") == before + 2
    lines = [r for r in records(bridge.proc.log()) if r.get("event") == "publish_unroutable"]
    assert any(r["level"] == "warning" for r in lines), bridge.proc.log()
    assert all(re.search(r"publish unroutable: no queue at the AMQP 1.0 broker of exchange "
                         r"'test\.topology010\.x\.\w+' takes routing key '[\w.]+' \(dropped\)",
                         r["msg"]) for r in lines), lines


def test_queries_of_absent_names_are_results_not_errors(bridge: Running) -> None:
    with bridge.client() as client:
        assert client.query_queue(name("absent")).queue == ""  # as qpidd answers
        assert client._result(client._s().exchange_query(name("absent"))).not_found
        topic = client._result(client._s().exchange_query("amq.topic"))
        assert (topic.not_found, topic.type) == (False, "topic")
        client.sync()  # the session is still usable


def test_a_sessions_pipelined_commands_run_in_order(bridge: Running) -> None:
    """declare, bind and publish sent without waiting (as qpid.messaging sends them):
    each waits for the one before at the broker, so the message finds its queue."""
    exchange, queue = name("x"), name("q")
    with bridge.client() as client:
        session = client._s()
        session.exchange_declare(exchange, "direct")
        session.queue_declare(queue)
        session.exchange_bind(queue, exchange, "k")
        client.publish(b"first", "k", exchange, wait=False)
        client.publish(b"second", "", "", delivery=DeliveryProperties(routing_key=queue),
                       wait=False)
        client.sync()
        assert bridge.depth(queue) == 2
        dest = client.subscribe(queue)
        assert [client.receive(dest, timeout=10).body for _ in range(2)] == [b"first",
                                                                            b"second"]
        client.delete_queue(queue)
        client._call(session.exchange_delete(exchange, sync=True))


@pytest.mark.parametrize(("action", "code"), [
    (lambda c: c.declare_queue(name("absent"), passive=True), ErrorCode.NOT_FOUND),
    (lambda c: c.declare_exchange(name("absent"), passive=True), ErrorCode.NOT_FOUND),
    (lambda c: c.subscribe(name("absent")), ErrorCode.NOT_FOUND),
    (lambda c: c.publish(b"x", "k", name("absent")), ErrorCode.NOT_FOUND),
    (lambda c: c.bind(name("absent"), "amq.direct", "k"), ErrorCode.NOT_FOUND),
    (lambda c: (c.declare_queue(q := name("q"), durable=True, exclusive=True),
                c.declare_queue(q, durable=False, exclusive=True)),
     ErrorCode.PRECONDITION_FAILED),
    (lambda c: c.declare_exchange(name("x"), "no-such-type"), ErrorCode.NOT_IMPLEMENTED),
    (lambda c: c.declare_queue(f"amq.{name('reserved')}"), ErrorCode.UNAUTHORIZED_ACCESS),
    (lambda c: c.subscribe("amq.topic", acquire_mode=AcquireMode.NOT_ACQUIRED),
     ErrorCode.NOT_IMPLEMENTED),
], ids=["passive-queue", "passive-exchange", "subscribe", "transfer-to-absent-exchange",
        "bind-absent-queue", "inequivalent-redeclare", "unknown-exchange-type",
        "reserved-name", "browse"])
def test_refusals_carry_qpidds_codes(bridge: Running, action: Callable[[BlockingClient],
                                                                      object], code: int
                                     ) -> None:
    with bridge.client() as client:
        error = refused(client, action)
    assert error.error_code == code, error
    assert error.description


def test_another_sessions_exclusive_queue_is_locked_but_takes_publishes(
        bridge: Running) -> None:
    queue = name("exclusive")
    with bridge.client() as owner:
        owner.declare_queue(queue, exclusive=True, auto_delete=True)
        with bridge.client() as other:
            other.publish(b"reply", "", "", delivery=DeliveryProperties(routing_key=queue))
            assert other.query_queue(queue).queue == queue  # found: a reply can go to it
        for action in (lambda c: c.declare_queue(queue, exclusive=True),
                       lambda c: c.subscribe(queue), lambda c: c.purge_queue(queue),
                       lambda c: c.delete_queue(queue),
                       lambda c: c.bind(queue, "amq.direct", "k")):
            with bridge.client() as other:  # (each refusal ends its session)
                assert refused(other, action).error_code == ErrorCode.RESOURCE_LOCKED
        dest = owner.subscribe(queue)
        assert owner.receive(dest, timeout=10).body == b"reply"
    assert bridge.depth(queue) is None  # gone with its session


def test_permissions_apply_to_the_brokers_names(bridge: Running) -> None:
    with bridge.client("reader") as client:
        error = refused(client, lambda c: c.declare_queue(name("q")))
        assert error.error_code == ErrorCode.UNAUTHORIZED_ACCESS
        assert "ACL denied queue create request from reader" in error.description
    with bridge.client("reader") as client:
        error = refused(client, lambda c: c.publish(b"x", "k", "amq.direct"))
        assert error.error_code == ErrorCode.UNAUTHORIZED_ACCESS


def test_a_configured_route_keeps_its_exchange(bridge: Running) -> None:
    """test.configured is a route's (to a RabbitMQ queue), not an exchange of RabbitMQ's."""
    with bridge.client() as client:
        client.declare_exchange("test.configured", "direct")  # the route's: not RabbitMQ's
        client.publish(b"through the route", "any", "test.configured")
    got = receive_messages(bridge.rabbitmq_url, queue_address(bridge.configured), 1,
                           timeout=10)
    assert [r.message.body for r in got] == [b"through the route"]


def test_a_native_requesters_reply_to_reaches_a_0_10_responder_as_a_queue_name(
        bridge: Running) -> None:
    """A 1.0 client straight on RabbitMQ asks with reply-to /queues/R; the 0-10 responder
    sees reply-to R (default exchange) and answers there; the façade's own ``to`` is not
    among the headers its subscribers see."""
    requests, replies = name("requests"), name("replies")
    declare_queue(bridge.rabbitmq_url, replies)
    with bridge.client() as client:
        client.declare_queue(requests)
        send_messages(bridge.rabbitmq_url, queue_address(requests),
                      [Message(body="ping", reply_to=queue_address(replies))])
        dest = client.subscribe(requests)
        request = client.receive(dest, timeout=10)
        mp = request.message_properties
        assert mp is not None and mp.reply_to == ReplyTo(None, replies)
        client.publish(b"pong", "", "", delivery=DeliveryProperties(routing_key=replies))
        client.publish(b"own", "", "", delivery=DeliveryProperties(routing_key=requests))
        own = client.receive(dest, timeout=10).message_properties
        assert "x-amqp-1.0.to" not in ((own.application_headers or {}) if own else {})
        client.delete_queue(requests)
    got = receive_messages(bridge.rabbitmq_url, queue_address(replies), 1, timeout=10)
    bridge.delete(replies)
    assert [bytes(r.message.body) for r in got] == [b"pong"]


def test_a_broker_that_does_not_answer_is_resource_limit_exceeded(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """The 1.0 broker silent past ``request_timeout``: the declare is refused
    resource-limit-exceeded (506), and once the broker answers again a new session
    declares as before."""
    host, port = rabbitmq_url.rpartition("@")[2].split(":")
    relay = Relay((host, int(port)))
    listen = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{relay.url(rabbitmq_url)}", heartbeat: 0}}
listeners:
  legacy:
    protocol: amqp0-10
    bind: "127.0.0.1:{listen}"
    users: {{app: app-pw}}
    topology: {{connection: cloud, broker: rabbitmq4, request_timeout: 1}}
"""
    proc = BridgeRun(config, tmp_path).start()
    try:
        wait_listening(listen, proc)
        queue = name("silent")
        with BlockingClient.connect(f"amqp://app:app-pw@127.0.0.1:{listen}") as client:
            client.declare_queue(name("before"), exclusive=True)  # (the link pair is up)
            relay.pause()
            error = refused(client, lambda c: c.declare_queue(queue))
            assert error.error_code == ErrorCode.RESOURCE_LIMIT_EXCEEDED, error
            relay.resume()
        with BlockingClient.connect(f"amqp://app:app-pw@127.0.0.1:{listen}") as client:
            after = name("after")
            client.declare_queue(after, auto_delete=True, exclusive=True)
            assert client.query_queue(after).queue == after
            client.delete_queue(queue)  # (the request that timed out may have run late)
    finally:
        relay.resume()
        rc = proc.stop()
        relay.close()
    assert rc == 0, proc.log()


def test_nothing_after_a_refused_command_is_executed(bridge: Running) -> None:
    """A transfer sent right behind a declare the broker refuses never reaches the
    broker: the session's exception ends it there, as qpidd executes nothing after."""
    queue = name("target")
    with bridge.client() as client:
        client.declare_queue(queue, auto_delete=False)
    with bridge.client() as client:
        session = client._s()
        session.queue_declare(name("absent"), passive=True)  # refused: not-found
        client.publish(b"after", "", "", delivery=DeliveryProperties(routing_key=queue),
                       wait=False)
        with pytest.raises(ClientError):
            client.sync()
    assert bridge.depth(queue) == 0
    with bridge.client() as client:
        client.delete_queue(queue)


def test_a_message_released_before_new_credit_comes_again_first(bridge: Running) -> None:
    """message.release of a message and new credit in one write (what qpid.messaging
    sends when an application releases what it fetched): the released message comes
    again, redelivered, before the next one, as from qpidd, which handles the release
    before the credit. Proton writes a session's credit before its dispositions, so the
    link's new credit waits a loop round after a give-back (the next message had
    overtaken the released one at RabbitMQ)."""
    queue = name("release")
    with bridge.client() as client:
        client.declare_queue(queue)
        try:
            for i in range(3):
                client.publish(f"m{i}".encode(), queue)
            dest = client.subscribe(queue, messages=1)
            seen = []
            for _ in range(3):
                got = client.receive(dest, timeout=20)
                seen.append((got.body, bool(got.delivery_properties
                                            and got.delivery_properties.redelivered)))
                session = client._room()
                session.message_release([got.command_id], set_redelivered=True)
                session.message_flow(dest, CreditUnit.MESSAGE, 1)
                client.transport.flush()
            assert seen == [(b"m0", False), (b"m0", True), (b"m0", True)]
        finally:
            client.delete_queue(queue)


def test_a_login_is_logged_with_what_the_client_says_of_itself(bridge: Running) -> None:
    """qpid.messaging's connection properties (product, version, process and pid) in the
    login's log line; the connection serves on (naming a log field ``process`` had
    faulted every qpid.messaging client at login: a LogRecord attribute)."""
    with BlockingClient.connect(
            f"amqp://app:{USERS['app']}@127.0.0.1:{bridge.port}",
            properties={"product": "qpid python client", "qpid.client_version": "1.40",
                        "qpid.client_process": "identity-check", "qpid.client_pid": 4242}
    ) as client:
        queue = name("identity")
        client.declare_queue(queue)
        client.delete_queue(queue)
    opened = [r for r in records(bridge.proc.log()) if r.get("event") == "client_open"
              and r.get("client_process") == "identity-check (pid 4242)"]
    assert len(opened) == 1 and opened[0]["client"] == "qpid python client 1.40"
