"""The legacy façade end to end: unchanged AMQP 0-10 applications (the engine's
:class:`BlockingClient`) log in to ``amqp-bridge run`` and publish to / subscribe
from a real RabbitMQ behind it.

One bridge process serves the whole module (two listeners, six routes), so the
file runs in well under a minute.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from proton import Message, symbol

from amqp010.codec import decode_header, encode_header
from amqp010.connection import Connection, ConnectionConfig, Role
from amqp010.events import ConnectionClosed, ExecutionExceptionReceived, MessageReceived
from amqp010.sasl import ClientCredentials
from amqp010.spec import (
    AcceptMode,
    CloseCode,
    DeliveryProperties,
    ErrorCode,
    MessageProperties,
    QueueDelete,
    ReplyTo,
    TxSelect,
)
from amqp010.transport import BlockingClient, ClientError, SocketTransport
from bridge.routes.refusals import LEGACY_HEADER_ANNOTATION, REASON_ANNOTATION, ROUTE_ANNOTATION
from tests.support.bridge import BridgeRun, free_port, wait_for, wait_listening
from tests.support.rabbitmq import (
    assert_no_message,
    declare_queue,
    queue_address,
    rabbitmqctl,
    receive_messages,
    send_messages,
    unique_queue,
)

# RabbitMQ 3.10 coverage: every test here runs against both nodes (docs/testing.md)
pytestmark = pytest.mark.rabbitmq(3, 4)


COUNT = 10_000
"""Messages per direction in the bulk tests (the issue's acceptance figure)."""
USER, PASSWORD = "app", "s3cret"


@dataclass
class Facade:
    """The running bridge and the names the tests use."""

    rabbitmq_url: str
    strict: int
    """Port of the listener with PLAIN users only."""
    open: int
    """Port of the listener that allows ANONYMOUS."""
    queues: dict[str, str]
    """RabbitMQ queue behind each role (events, lenient, lenient_dlq, jobs, outcomes, ...)."""
    proc: BridgeRun

    def client(self, user: str | None = USER, password: str = PASSWORD, *,
               port: int | None = None) -> BlockingClient:
        auth = f"{user}:{password}@" if user is not None else ""
        return BlockingClient.connect(f"amqp://{auth}127.0.0.1:{port or self.strict}")

    def address(self, role: str) -> str:
        return queue_address(self.queues[role])


MAX_SUBSCRIPTIONS = 6
"""The strict listener's ``max_consumers_per_connection`` (no other test here needs more)."""


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    roles = ["events", "lenient", "lenient_dlq", "jobs", "outcomes", "outcomes_dlq", "gone",
             "fetch", "leave"]
    queues = {role: unique_queue(f"facade-{role.replace('_', '-')}") for role in roles}
    # rejected messages of the "outcomes" queue are dead-lettered by RabbitMQ, so a
    # subscriber's message.reject is visible on the 1.0 side
    policy = f"amqp-bridge-test-{queues['outcomes']}"
    rabbitmqctl(rabbitmq_url, "set_policy", "--apply-to", "queues", "--priority", "10", policy,
                 "^" + queues["outcomes"].replace(".", r"\.") + "$",
                 '{"expires": 600000, "dead-letter-exchange": "", '
                 f'"dead-letter-routing-key": "{queues["outcomes_dlq"]}"}}')
    declare_queue(rabbitmq_url, queues["outcomes_dlq"])  # dead letters need a queue to land in
    strict, anonymous = free_port(), free_port()
    q = {role: queue_address(name) for role, name in queues.items()}
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  strict: {{protocol: amqp0-10, bind: "127.0.0.1:{strict}", users: {{{USER}: "${{FACADE_PASSWORD}}"}},
            max_consumers_per_connection: {MAX_SUBSCRIPTIONS}}}
  open:   {{protocol: amqp0-10, bind: "127.0.0.1:{anonymous}", allow_anonymous: true}}
routes:
  - name: events-out
    from: {{listener: strict, exchange: events}}
    to:   {{connection: cloud, address: {q["events"]}}}
    cloudevents: {{mode: binary, type: com.example.event, source: /legacy/events}}
    max_in_flight: {{messages: 100}}
  - name: lenient-out
    from: {{listener: strict, exchange: lenient}}
    to:   {{connection: cloud, address: {q["lenient"]}}}
    dead_letter: {{connection: cloud, address: {q["lenient_dlq"]}}}
  - name: jobs-in
    from: {{connection: cloud, address: {q["jobs"]}}}
    to:   {{listener: strict, queue: jobs}}
    max_in_flight: {{messages: 300}}
  - name: outcomes-in
    from: {{connection: cloud, address: {q["outcomes"]}}}
    to:   {{listener: strict, queue: outcomes}}
  - name: gone-in
    from: {{connection: cloud, address: {q["gone"]}}}
    to:   {{listener: strict, queue: gone}}
  - name: fetch-in
    from: {{connection: cloud, address: {q["fetch"]}}}
    to:   {{listener: strict, queue: fetch}}
  - name: leave-in
    from: {{connection: cloud, address: {q["leave"]}}}
    to:   {{listener: strict, queue: leave}}
"""
    tmp = tmp_path_factory.mktemp("facade")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("FACADE_PASSWORD", PASSWORD)  # the password comes from the environment
        proc = BridgeRun(config, tmp).start()
    try:
        wait_listening(strict, proc)
        wait_listening(anonymous, proc)
        yield Facade(rabbitmq_url, strict, anonymous, queues, proc)
    finally:
        rc = proc.stop()
        rabbitmqctl(rabbitmq_url, "clear_policy", policy)
    assert rc == 0, proc.log()


def _receive(client: BlockingClient, destination: str, count: int,
             timeout: float = 30.0) -> list[MessageReceived]:
    deadline = time.monotonic() + timeout
    return [client.receive(destination, timeout=max(0.1, deadline - time.monotonic()))
            for _ in range(count)]


def _nothing_more(client: BlockingClient, destination: str, wait: float = 0.5) -> bool:
    """True if no further message arrives for ``destination`` within ``wait`` seconds."""
    with pytest.raises(TimeoutError):
        client.receive(destination, timeout=wait)
    return True


def _refused(facade: Facade, action: Callable[[BlockingClient], object]
             ) -> ExecutionExceptionReceived:
    """Run ``action`` on a fresh client; the execution.exception it must end with."""
    with facade.client() as client, pytest.raises(ClientError) as info:
        action(client)
    event = info.value.event
    assert isinstance(event, ExecutionExceptionReceived), info.value
    return event


# --- façade-publish --------------------------------------------------------------------------


def test_published_messages_reach_rabbitmq_with_every_field_mapped(facade: Facade) -> None:
    with facade.client() as client:
        session = client.session
        assert session is not None
        for i in range(COUNT):
            dp = DeliveryProperties(priority=i % 10, delivery_mode=2 if i % 2 else 1,
                                    ttl=3_600_000, routing_key=f"key.{i % 7}")
            mp = MessageProperties(
                message_id=uuid.UUID(int=i + 1), correlation_id=f"corr-{i}".encode(),
                content_type="application/json",
                reply_to=ReplyTo(exchange="amq.direct", routing_key="replies"),
                application_headers={"seq": i, "region": "emea"})
            body = f'{{"n": {i}}}'.encode()
            # explicit accept-mode (the client's default) and accept-mode none, interleaved
            accept = AcceptMode.EXPLICIT if i % 2 else AcceptMode.NONE
            client._wait(lambda: session.can_send, "room in the replay buffer")
            session.message_transfer("events", (dp, mp), body, accept_mode=accept)
            if i % 500 == 0:
                client.transport.flush()
        # completion comes only after RabbitMQ accepted: every message is there now
        client.sync()
        assert not session.incomplete and session.outstanding == 0
    received = receive_messages(facade.rabbitmq_url, facade.address("events"), COUNT, timeout=60)
    assert len(received) == COUNT, facade.proc.log()
    for i, r in enumerate(received):  # one publisher: order preserved
        m = r.message
        assert bytes(m.body) == f'{{"n": {i}}}'.encode()
        assert m.id == uuid.UUID(int=i + 1)
        assert m.correlation_id == f"corr-{i}"
        assert m.content_type == "application/json"
        assert m.reply_to == "amq.direct/replies"
        assert m.priority == i % 10 and m.durable is bool(i % 2)
        assert m.ttl == 3600.0
        assert m.subject == f"key.{i % 7}"
        assert m.properties["seq"] == i and m.properties["region"] == "emea"
        assert m.properties["cloudEvents_specversion"] == "1.0"
        assert m.properties["cloudEvents_type"] == "com.example.event"
        assert m.properties["cloudEvents_source"] == "/legacy/events"
        assert m.properties["cloudEvents_id"] == str(uuid.UUID(int=i + 1))
        assert m.annotations[symbol("x-amqp-0-10.routing-key")] == f"key.{i % 7}"
        assert m.annotations[symbol("x-amqp-0-10.exchange")] == "events"  # set on receipt
    assert_no_message(facade.rabbitmq_url, facade.address("events"))


def test_unmappable_publish_is_dead_lettered_or_raises(facade: Facade) -> None:
    bad = DeliveryProperties(delivery_mode=3)  # neither 1 nor 2: no AMQP 1.0 equivalent
    with facade.client() as client:  # with a dead-letter address: completed once it is there
        client.publish(b"good", "k", "lenient")
        client.publish(b"bad", "k", "lenient", delivery=bad)
    [good] = receive_messages(facade.rabbitmq_url, facade.address("lenient"), 1)
    assert bytes(good.message.body) == b"good"
    [dead] = receive_messages(facade.rabbitmq_url, facade.address("lenient_dlq"), 1)
    assert bytes(dead.message.body) == b"bad"
    assert dead.message.annotations[ROUTE_ANNOTATION] == "lenient-out"
    assert "delivery_mode" in dead.message.annotations[REASON_ANNOTATION]
    header = bytes(dead.message.annotations[LEGACY_HEADER_ANNOTATION])  # nothing is lost
    assert decode_header(header)[0].delivery_mode == 3
    # without one: the publisher's session ends with invalid-argument, naming the field
    error = _refused(facade, lambda c: c.publish(b"bad", "k", "events", delivery=bad))
    assert error.error_code == ErrorCode.INVALID_ARGUMENT
    assert "delivery_mode" in error.description
    assert_no_message(facade.rabbitmq_url, facade.address("events"))


# --- façade-consume --------------------------------------------------------------------------


def test_window_subscriber_gets_every_message_with_every_field_mapped(facade: Facade) -> None:
    send_messages(facade.rabbitmq_url, facade.address("jobs"), [
        Message(body=f"job {i}".encode(), inferred=True,  # a data section
                id=f"job-{i}", correlation_id=f"c-{i}",
                content_type="text/plain", priority=i % 10, durable=True, subject="ignored",
                reply_to="amq.direct/done", properties={"n": i, "kind": "job"})
        for i in range(COUNT)], timeout=60)
    with facade.client() as client:
        client.subscribe("jobs", messages=100, window=True)
        got: list[MessageReceived] = []
        while len(got) < COUNT:
            batch = _receive(client, "jobs", min(100, COUNT - len(got)))
            client.accept(*batch, wait=False)
            got += batch
        client.sync()
    for i, ev in enumerate(got):
        dp, mp = ev.delivery_properties, ev.message_properties
        assert ev.body == f"job {i}".encode()
        assert dp.routing_key == "jobs"  # the façade queue's name, as a 0-10 broker sets it
        # 4 is AMQP 1.0's default priority: proton leaves it off the wire
        assert dp.priority == (None if i % 10 == 4 else i % 10) and dp.delivery_mode == 2
        assert mp.content_type == "text/plain"
        assert mp.correlation_id == f"c-{i}".encode()
        assert mp.reply_to == ReplyTo(exchange="amq.direct", routing_key="done")
        assert mp.application_headers["n"] == i and mp.application_headers["kind"] == "job"
        assert mp.application_headers["x-amqp-1.0.message-id"] == f"job-{i}"
    # every 1.0 delivery was accepted when the subscriber accepted: nothing is left
    assert_no_message(facade.rabbitmq_url, facade.address("jobs"))


def test_credit_is_honoured_and_outcomes_reach_rabbitmq(facade: Facade) -> None:
    url, outcomes = facade.rabbitmq_url, facade.address("outcomes")
    send_messages(url, outcomes, [Message(body=f"m{i}", id=f"id-{i}") for i in range(8)])
    with facade.client() as client:
        client.subscribe("outcomes", messages=2)
        m0, m1 = _receive(client, "outcomes", 2)
        assert _nothing_more(client, "outcomes")  # never more than the credit granted
        client.accept(m0)
        client.reject(m1, code=1, text="bad")
        client.flow("outcomes", messages=2)
        m2, m3 = _receive(client, "outcomes", 2)
        assert [m.body for m in (m0, m1, m2, m3)] == [b"m0", b"m1", b"m2", b"m3"]
        client.release(m2)
        client.release(m3, set_redelivered=True)
        client.flow("outcomes", messages=2)  # released ones come back first, in order
        again = _receive(client, "outcomes", 2)
        assert [m.body for m in again] == [b"m2", b"m3"]
        client.accept(*again)
        assert _nothing_more(client, "outcomes")
        client.cancel("outcomes")
        # byte credit: exactly one message's octets lets exactly one message through
        cost = len(encode_header(m0.header)) + len(m0.body)
        client.subscribe("outcomes", "by-bytes", messages=None, bytes=cost + cost // 2)
        [m4] = _receive(client, "by-bytes", 1)
        assert _nothing_more(client, "by-bytes")
        client.flow("by-bytes", bytes=cost)
        [m5] = _receive(client, "by-bytes", 1)
        client.accept(m4, m5)
        client.cancel("by-bytes")
        # accept-mode none: settled (accepted) as soon as the client completes the transfer
        client.subscribe("outcomes", "no-accept", messages=2, accept_mode=AcceptMode.NONE)
        m6, m7 = _receive(client, "no-accept", 2)
        assert [m.body for m in (m4, m5)] == [b"m4", b"m5"]
        # m6 was promised to "by-bytes" (credit sized by the byte credit, at least one) and
        # released at its cancel: RabbitMQ may send m7 to the new link before m6 is back
        assert {m6.body, m7.body} == {b"m6", b"m7"}
        client.sync()
    # on the 1.0 side: the rejected one was dead-lettered by RabbitMQ, the rest accepted
    [dead] = receive_messages(url, facade.address("outcomes_dlq"), 1)
    assert dead.message.body == "m1"
    assert_no_message(url, outcomes)


def test_subscriber_disconnect_gives_unaccepted_messages_back(facade: Facade) -> None:
    url, gone = facade.rabbitmq_url, facade.address("gone")
    send_messages(url, gone, [Message(body=f"g{i}") for i in range(5)])
    client = facade.client()
    client.subscribe("gone", messages=3)
    taken = _receive(client, "gone", 3)
    assert [m.body for m in taken] == [b"g0", b"g1", b"g2"]
    client.transport.sock.close()  # the application dies without accepting
    back = receive_messages(url, gone, 5, timeout=15)
    assert sorted(r.message.body for r in back) == ["g0", "g1", "g2", "g3", "g4"]
    redelivered = {r.message.body for r in back if r.message.first_acquirer is False}
    assert {"g0", "g1", "g2"} <= redelivered


def _consumers(facade: Facade, role: str) -> int:
    """RabbitMQ's count of consumers (1.0 links) on the queue behind ``role``."""
    out = rabbitmqctl(facade.rabbitmq_url, "list_queues", "name", "consumers")
    for line in out.splitlines():
        name, _, count = line.partition("\t")
        if name == facade.queues[role]:
            return int(count)
    raise AssertionError(f"queue {facade.queues[role]} not listed:\n{out}")


def test_subscriber_that_cancels_and_closes_gives_unaccepted_messages_back(
        facade: Facade) -> None:
    """qpid.messaging's receiver close: accept what was acknowledged, message.cancel,
    session.detach, connection.close (recording messaging_close_unacked_1). The messages
    it did not accept come back at once, flagged redelivered, and its 1.0 link goes."""
    url = facade.rabbitmq_url
    send_messages(url, facade.address("leave"), [Message(body=f"l{i}") for i in range(3)])
    with facade.client() as first:
        first.subscribe("leave", messages=10)
        taken = _receive(first, "leave", 3)
        assert [m.body for m in taken] == [b"l0", b"l1", b"l2"]
        first.accept(taken[0])
        first.cancel("leave")
    wait_for(lambda: _consumers(facade, "leave") == 0, 15,
             "the first subscriber's 1.0 link to detach", facade.proc)
    with facade.client() as second:
        second.subscribe("leave", messages=10)
        again = _receive(second, "leave", 2)
        assert [m.body for m in again] == [b"l1", b"l2"]
        assert all(m.delivery_properties.redelivered for m in again)
        second.accept(*again)
    assert_no_message(url, facade.address("leave"))
    wait_for(lambda: _consumers(facade, "leave") == 0, 15,
             "the second subscriber's 1.0 link to detach", facade.proc)


def test_fetch_with_flush(facade: Facade) -> None:
    """The qpid clients' fetch: one message of credit (and bytes), then message.flush; the
    flush completes with what the 1.0 broker had, and leaves no credit behind."""
    send_messages(facade.rabbitmq_url, facade.address("fetch"),
                  [Message(body=f"f{i}") for i in range(2)])

    def fetch(client: BlockingClient) -> MessageReceived | None:
        session = client.session
        assert session is not None
        client.flow("fetch", messages=1, bytes=None)
        client.wait_completed(session.message_flush("fetch"))
        credit = session.incoming_credit["fetch"]
        assert credit.messages == 0 and credit.bytes == 0  # a completed flush zeroes credit
        return client.receive("fetch", timeout=0.1) if client.pending("fetch") else None

    with facade.client() as client:
        client.subscribe("fetch", messages=0)
        fetched: list[MessageReceived] = []
        for _ in range(10):  # a fetch comes back empty if RabbitMQ is slower than the grace
            if (m := fetch(client)) is not None:
                fetched.append(m)
            if len(fetched) == 2:
                break
        assert [m.body for m in fetched] == [b"f0", b"f1"]
        assert fetch(client) is None  # the queue is empty: the flush completes all the same
        client.accept(*fetched)
    assert_no_message(facade.rabbitmq_url, facade.address("fetch"))


# --- logins and model commands ---------------------------------------------------------------


class _AnonymousAnyway(ClientCredentials):
    """Client credentials that insist on ANONYMOUS, offered or not."""

    def choose(self, offered: list[str]) -> str:
        return "ANONYMOUS"


def test_plain_logins_and_anonymous_only_where_enabled(facade: Facade) -> None:
    with facade.client() as client:
        assert client.opened is not None and client.opened.user == USER
    with pytest.raises(ClientError) as wrong:
        facade.client(password="wrong")
    closed = wrong.value.event
    assert isinstance(closed, ConnectionClosed) and closed.code == CloseCode.CONNECTION_FORCED
    assert "authentication failed" in closed.text
    with pytest.raises(ClientError, match="no usable SASL mechanism"):
        facade.client(None)  # the strict listener does not offer ANONYMOUS ...
    sock = socket.create_connection(("127.0.0.1", facade.strict), timeout=5)
    conn = Connection(Role.CLIENT, ConnectionConfig(credentials=_AnonymousAnyway()))
    transport = SocketTransport(sock, conn)
    deadline = time.monotonic() + 10
    events = []
    while not conn.closed and time.monotonic() < deadline:  # ... and refuses it when forced
        transport.read_once(0.5)
        events += list(conn.events())
    transport.close()
    [closed] = [e for e in events if isinstance(e, ConnectionClosed)]
    assert closed.code == CloseCode.CONNECTION_FORCED and "ANONYMOUS" in closed.text
    with facade.client(None, port=facade.open) as client:  # the open listener allows it
        assert client.opened is not None
        assert client.query_queue("jobs").queue == ""  # a listener without routes


def test_declares_and_queries_of_configured_names(facade: Facade) -> None:
    with facade.client() as client:
        client.declare_queue("jobs")
        client.declare_queue("jobs", passive=True)
        client.declare_exchange("events", "topic")
        client.declare_exchange("events", passive=True)
        client.bind("jobs", "events", "any.key")
        jobs = client.query_queue("jobs")
        assert jobs.queue == "jobs" and jobs.subscriber_count == 0
        assert client.query_queue("nowhere").queue == ""  # as qpidd answers
        session = client.session
        assert session is not None
        events = client._result(session.exchange_query("events"))
        assert events.type == "fanout" and not events.not_found
        assert client._result(session.exchange_query("nowhere")).not_found


@pytest.mark.parametrize(("action", "code"), [
    (lambda c: c.declare_queue("unconfigured"), ErrorCode.NOT_ALLOWED),
    (lambda c: c.declare_queue("unconfigured", passive=True), ErrorCode.NOT_FOUND),
    (lambda c: c.declare_exchange("unconfigured"), ErrorCode.NOT_ALLOWED),
    (lambda c: c.declare_exchange("unconfigured", passive=True), ErrorCode.NOT_FOUND),
    (lambda c: c.bind("jobs", "unconfigured"), ErrorCode.NOT_FOUND),
    (lambda c: c.bind("unconfigured", "events"), ErrorCode.NOT_FOUND),
    (lambda c: c.publish(b"x", "k", "unconfigured"), ErrorCode.NOT_FOUND),
    (lambda c: c.subscribe("unconfigured"), ErrorCode.NOT_FOUND),
    (lambda c: (c.subscribe("jobs", "d"), c.subscribe("jobs", "d")), ErrorCode.NOT_ALLOWED),
    (lambda c: c.publish(b"x", "k", "events", properties=MessageProperties(user_id=b"mallory")),
     ErrorCode.UNAUTHORIZED_ACCESS),
    (lambda c: c.wait_completed(c.session.send(QueueDelete(queue="jobs", sync=True))),
     ErrorCode.NOT_IMPLEMENTED),
    (lambda c: c.wait_completed(c.session.send(TxSelect(sync=True))), ErrorCode.NOT_IMPLEMENTED),
], ids=["declare-queue", "passive-queue", "declare-exchange", "passive-exchange",
        "bind-unknown-exchange", "bind-unknown-queue", "publish-unknown-exchange",
        "subscribe-unknown-queue", "subscribe-destination-in-use", "foreign-user-id", "queue-delete", "tx-select"])
def test_everything_else_is_refused_with_an_exception(
        facade: Facade, action: Callable[[BlockingClient], object], code: int) -> None:
    error = _refused(facade, action)
    assert error.error_code == code, error
    assert error.description


def test_subscriptions_past_the_listeners_limit_are_refused_for_that_connection_only(
        facade: Facade) -> None:
    subscribed: list[str] = []
    with facade.client() as client, pytest.raises(ClientError) as info:
        for i in range(MAX_SUBSCRIPTIONS + 1):  # credit 0: they take no message from others
            subscribed.append(client.subscribe("jobs", f"limit-{i}", messages=0))
            client.sync()
    event = info.value.event
    assert isinstance(event, ExecutionExceptionReceived), info.value
    assert event.error_code == ErrorCode.RESOURCE_LIMIT_EXCEEDED
    assert f"reached maximum ({MAX_SUBSCRIPTIONS}) of subscriptions per connection" in \
        event.description
    assert len(subscribed) == MAX_SUBSCRIPTIONS
    assert "command refused with 506: message.subscribe: reached maximum" in facade.proc.log()

    with facade.client() as other:  # the bound is per connection
        other.subscribe("jobs", "limit-other", messages=0)
        other.sync()
