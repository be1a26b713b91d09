"""Faults mid-stream, with ``amqp-bridge run`` as a subprocess: the bridge killed and
restarted, RabbitMQ restarted, the 0-10 broker dropping every connection, a peer
detaching the bridge's link, RabbitMQ ending the bridge's session. Every message id
arrives at least once; duplicates stay within ``max_in_flight`` (none where the
bridge can avoid them: a graceful stop, a resumed 0-10 session, duplicate
suppression).

The RabbitMQ restart uses a node of its own (``private_rabbitmq``: free ports, its
state in the module's temporary directory), so the shared broker other tests use is
never disturbed; it is stopped again at the end of the module.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from tests.support.bridge import (
    BridgeRun,
    bridge_config,
    collect,
    free_port,
    legacy_backlog,
    legacy_client,
    legacy_ids,
    preload,
    wait_for,
)
from tests.support.logs import route_stats
from tests.support.rabbitmq import (
    PrivateNode,
    assert_no_message,
    private_rabbitmq,
    queue_address,
    rabbitmqctl,
    send_messages,
    unique_queue,
)

MAX_IN_FLIGHT = 200


def routes(out_queue: str, out_address: str, in_address: str, *, dedupe: bool = False) -> str:
    """0-10 queue ``out_queue`` → ``out_address``; ``in_address`` → 0-10 queue ``in-q``."""
    extra = "\n    dedupe: {window: 20000}" if dedupe else ""
    return f"""
  - name: out
    from: {{connection: legacy, queue: {out_queue}}}
    to:   {{connection: cloud, address: {out_address}}}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: in
    from: {{connection: cloud, address: {in_address}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: in}}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}{extra}
"""


def prepare_in_queue(server: EngineServer) -> None:
    with legacy_client(server) as client:
        client.declare_queue("in-q")
        client.bind("in-q", "amq.direct", "in")


def arrived_in(broker: Broker) -> int:
    return len(broker.queues["in-q"].messages)


def drain_in_queue(server: EngineServer) -> list[str]:
    """Every message the bridge put into the 0-10 queue ``in-q``, as 1.0 message-ids."""
    with legacy_client(server) as client:
        client.subscribe("in-q", messages=None)
        got = []
        while True:
            try:
                got.append(client.receive("in-q", timeout=1.0))
            except TimeoutError:
                break
            if len(got) % 500 == 0:
                client.accept(*got[-500:], wait=False)
        client.accept(*got[len(got) - len(got) % 500:])
    return [(ev.message_properties.application_headers or {}).get(
        "x-amqp-1.0.message-id", ev.message_properties.message_id) for ev in got]


def in_messages(count: int, prefix: str) -> list[Message]:
    return [Message(id=f"{prefix}-{i}", durable=True, body=f"in {i}".encode(), inferred=True)
            for i in range(count)]


def lines_with(log: str, text: str) -> int:
    """Log lines containing ``text`` (a structured line may repeat it in a field)."""
    return sum(text in line for line in log.splitlines())


def check(received: list[Any], expected: list[Any], max_duplicates: int) -> int:
    """Every expected id arrived; returns the number of duplicates (asserted bounded)."""
    counts = Counter(received)
    missing = set(expected) - set(counts)
    assert not missing, f"{len(missing)} message ids never arrived, e.g. {sorted(missing)[:5]}"
    duplicates = len(received) - len(counts)
    assert duplicates <= max_duplicates, f"{duplicates} duplicates (bound {max_duplicates})"
    return duplicates


# --- the bridge process ---------------------------------------------------------------------

COUNT = 5000


def test_kill_9_mid_stream_then_restart_loses_nothing(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    out_q, in_q = unique_queue("kill-out"), unique_queue("kill-in")
    ids_out = preload(broker, "kill", COUNT)
    send_messages(rabbitmq_url, queue_address(in_q), in_messages(COUNT, "kill"), timeout=60)
    prepare_in_queue(server)
    # session_timeout 1: the dead bridge's 0-10 sessions (and what they hold) end quickly
    config = bridge_config(server.url, rabbitmq_url,
                           routes("kill", queue_address(out_q), queue_address(in_q)),
                           session_timeout=1)
    first = BridgeRun(config, tmp_path, "first").start()
    wait_for(lambda: legacy_backlog(broker, "kill") < COUNT - 1500 and arrived_in(broker) > 1500,
             60, "the bridge to be mid-stream", first)
    first.kill()
    with BridgeRun(config, tmp_path, "second") as second:
        wait_for(lambda: legacy_backlog(broker, "kill") == 0 and arrived_in(broker) >= COUNT,
                 60, "the restarted bridge to finish", second)
        got_out = collect(rabbitmq_url, queue_address(out_q),
                          lambda ms: set(legacy_ids(ms)) >= set(ids_out))
        assert_no_message(rabbitmq_url, queue_address(in_q))
    check(legacy_ids(got_out), ids_out, MAX_IN_FLIGHT)
    check(drain_in_queue(server), [f"kill-{i}" for i in range(COUNT)], MAX_IN_FLIGHT)


def test_sigterm_mid_stream_drains_so_a_restart_duplicates_nothing(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    count = 3000
    out_q, in_q = unique_queue("term-out"), unique_queue("term-in")
    ids_out = preload(broker, "term", count)
    send_messages(rabbitmq_url, queue_address(in_q), in_messages(count, "term"), timeout=60)
    prepare_in_queue(server)
    config = bridge_config(server.url, rabbitmq_url,
                           routes("term", queue_address(out_q), queue_address(in_q)))
    first = BridgeRun(config, tmp_path, "first").start()
    wait_for(lambda: legacy_backlog(broker, "term") < count - 800 and arrived_in(broker) > 800,
             60, "the bridge to be mid-stream", first)
    assert first.stop() == 0, first.log()
    assert "stopping with" not in first.log()  # drained within the timeout
    with BridgeRun(config, tmp_path, "second") as second:
        wait_for(lambda: legacy_backlog(broker, "term") == 0 and arrived_in(broker) >= count,
                 60, "the restarted bridge to finish", second)
        got_out = collect(rabbitmq_url, queue_address(out_q),
                          lambda ms: set(legacy_ids(ms)) >= set(ids_out))
    assert check(legacy_ids(got_out), ids_out, 0) == 0
    assert check(drain_in_queue(server), [f"term-{i}" for i in range(count)], 0) == 0


# --- the 0-10 broker drops every connection ---------------------------------------------------


@pytest.mark.parametrize("session_timeout", [30, 0], ids=["resume", "no-resume"])
def test_legacy_broker_dropping_connections_mid_stream(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path,
        session_timeout: int) -> None:
    """With a session timeout the broker keeps the bridge's sessions and the bridge resumes
    them: nothing is redelivered, so nothing is duplicated. Without, the broker requeues
    what was in flight: duplicates, within the bound."""
    broker, server = legacy
    count = 3000
    out_q, in_q = unique_queue("drop-out"), unique_queue("drop-in")
    ids_out = preload(broker, "drop", count)
    send_messages(rabbitmq_url, queue_address(in_q), in_messages(count, "drop"), timeout=60)
    prepare_in_queue(server)
    config = bridge_config(server.url, rabbitmq_url,
                           routes("drop", queue_address(out_q), queue_address(in_q)),
                           session_timeout=session_timeout)
    with BridgeRun(config, tmp_path) as bridge:
        for moved in (700, 1800):
            wait_for(lambda m=moved: legacy_backlog(broker, "drop") < count - m
                     and arrived_in(broker) > m, 60, "the bridge to be mid-stream", bridge)
            server.drop_all()
        wait_for(lambda: legacy_backlog(broker, "drop") == 0 and arrived_in(broker) >= count,
                 60, "the bridge to finish", bridge)
        got_out = collect(rabbitmq_url, queue_address(out_q),
                          lambda ms: set(legacy_ids(ms)) >= set(ids_out))
        assert_no_message(rabbitmq_url, queue_address(in_q))
    log = bridge.log()
    assert lines_with(log, "amqp0-10 legacy: open") >= 3, log[-3000:]
    bound = 0 if session_timeout else 2 * MAX_IN_FLIGHT
    dup_out = check(legacy_ids(got_out), ids_out, bound)
    dup_in = check(drain_in_queue(server), [f"drop-{i}" for i in range(count)], bound)
    if session_timeout:
        assert lines_with(log, "session resumed") >= 4 and dup_out == dup_in == 0
    else:
        assert "session resumed" not in log


# --- RabbitMQ restarted ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def own_rabbitmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateNode]:
    """A RabbitMQ node for this module alone (it gets restarted)."""
    with private_rabbitmq(tmp_path_factory.mktemp("rabbitmq-faults")) as node:
        yield node


def declare_durable(url: str, queue: str) -> str:
    """A durable queue (``/queue/NAME`` declares transient ones); returns its address."""
    rabbitmqctl(url, "eval", f'rabbit_amqqueue:declare(rabbit_misc:r(<<"/">>, queue, '
                             f'<<"{queue}">>), true, false, [], none, <<"guest">>).')
    return f"/amq/queue/{queue}"


def test_rabbitmq_restart_mid_stream_reconnects_by_itself(
        legacy: tuple[Broker, EngineServer], own_rabbitmq: PrivateNode, tmp_path: Path) -> None:
    """RabbitMQ stops (closing every connection) and starts again while messages flow
    0-10 → RabbitMQ → 0-10 through both routes (the 0-10 queue is fed all along); the
    bridge reconnects by itself. What the first route delivers twice, the second
    route's duplicate suppression settles, so each id arrives exactly once."""
    broker, server = legacy
    url = own_rabbitmq.url
    middle = declare_durable(url, unique_queue("restart"))
    prepare_in_queue(server)
    ids = [uuid.UUID(int=i + 1) for i in range(COUNT)]
    # half the messages, the rest once RabbitMQ is down, so the restart comes mid-stream
    # (more than 300 moved before it, the rest after) however long stopping the node takes
    # on a loaded machine (it once took longer than the whole feed)
    feeder = Feeder(server, "restart", COUNT, 12.0, hold_at=COUNT // 2)
    config = bridge_config(server.url, url, routes("restart", middle, middle, dedupe=True))
    with BridgeRun(config, tmp_path) as bridge:
        feeder.start()
        wait_for(lambda: arrived_in(broker) > 300, 60, "the bridge to be mid-stream", bridge)
        own_rabbitmq.stop()
        feeder.release()
        own_rabbitmq.start()
        feeder.join(30)
        wait_for(lambda: legacy_backlog(broker, "restart") == 0 and arrived_in(broker) >= COUNT,
                 120, "the bridge to finish", bridge)
        assert_no_message(url, middle)
    log = bridge.log()
    assert lines_with(log, "amqp1.0 cloud: open") >= 2, log[-3000:]
    assert check(drain_in_queue(server), ids, 0) == 0
    out, in_ = route_stats(log, "out"), route_stats(log, "in")
    assert in_["delivered"] == COUNT and out["delivered"] >= COUNT
    assert in_["duplicates_suppressed"] <= 2 * MAX_IN_FLIGHT  # redelivered by either route


class Feeder(threading.Thread):
    """Publishes ``count`` persistent messages (ids 1..count) to a 0-10 queue over
    ``seconds``, in a thread; after ``hold_at`` of them it waits for :meth:`release`."""

    def __init__(self, server: EngineServer, queue: str, count: int, seconds: float,
                 hold_at: int) -> None:
        super().__init__(daemon=True)
        self.server, self.queue, self.count, self.seconds = server, queue, count, seconds
        self.hold_at = hold_at
        self.released = threading.Event()
        self.published = 0

    def release(self) -> None:
        self.released.set()

    def run(self) -> None:
        queue = self.queue
        with legacy_client(self.server) as client:
            client.declare_queue(queue)
            start = time.monotonic()
            for i in range(self.count):
                if i == self.hold_at:
                    client.sync()
                    self.released.wait(120)
                client.publish(b"x" * 1024, routing_key=queue, wait=False,
                               delivery=DeliveryProperties(routing_key=queue, delivery_mode=2),
                               properties=MessageProperties(message_id=uuid.UUID(int=i + 1)))
                self.published += 1
                ahead = start + self.seconds * (i + 1) / self.count - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            client.sync()

    def taken(self, broker: Broker) -> int:
        """Messages the bridge has taken from the queue so far."""
        return self.published - legacy_backlog(broker, self.queue) if self.published else 0


# --- peers ending links and sessions --------------------------------------------------------




class DetachingPeer(MessagingHandler):  # type: ignore[misc]
    """A minimal AMQP 1.0 receiving peer (proton) that detaches the link it receives on,
    without closing it, after the given numbers of messages (the non-closing detach of
    rabbitmq-server #2594)."""

    def __init__(self, port: int, detach_after: list[int]) -> None:
        super().__init__(prefetch=0, auto_accept=False)
        self.port = port
        self.detach_after = list(detach_after)
        self.ids: list[Any] = []
        self.links = 0
        self.listening = threading.Event()
        self.container: Container | None = None

    def on_start(self, event: Any) -> None:
        self.acceptor = event.container.listen(f"127.0.0.1:{self.port}")
        self.listening.set()

    def on_link_opening(self, event: Any) -> None:
        link = event.link
        if link.is_receiver:
            self.links += 1
            link.target.copy(link.remote_target)
            link.open()
            link.flow(100)

    def on_message(self, event: Any) -> None:
        self.ids.append(event.message.id)
        self.accept(event.delivery)
        link = event.link
        if link.credit < 50:
            link.flow(100 - link.credit)
        if self.detach_after and len(self.ids) >= self.detach_after[0]:
            self.detach_after.pop(0)
            link.detach()

    def run(self) -> None:
        self.container = Container(self)
        self.container.run()

    def stop(self) -> None:
        if self.container is not None:
            self.acceptor.close()
            self.container.stop()


def test_a_link_detached_without_closing_is_reattached(
        legacy: tuple[Broker, EngineServer], tmp_path: Path) -> None:
    broker, server = legacy
    count = 600
    ids = preload(broker, "detach", count)
    peer = DetachingPeer(free_port(), [100, 300])
    thread = threading.Thread(target=peer.run, daemon=True)
    thread.start()
    assert peer.listening.wait(10)
    route = """
  - name: detached
    from: {connection: legacy, queue: detach}
    to:   {connection: cloud, address: somewhere}
    max_in_flight: {messages: 50}
"""
    try:
        with BridgeRun(bridge_config(server.url, f"amqp://127.0.0.1:{peer.port}", route),
                       tmp_path) as bridge:
            wait_for(lambda: legacy_backlog(broker, "detach") == 0, 60, "the backlog moved",
                     bridge)
    finally:
        peer.stop()
        thread.join(10)
    assert lines_with(bridge.log(), "link detached by the peer") == 2
    assert peer.links == 3
    check(peer.ids, ids, 2 * 50)


def test_rabbitmq_ending_the_session_is_retried_until_the_queue_exists(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    """RabbitMQ 3.10 refuses a link to a missing ``/amq/queue/`` by ending the session
    (amqp:not-found): the bridge re-attaches on a fresh session, backing off, until the
    queue appears."""
    _, server = legacy
    queue = unique_queue("later")
    prepare_in_queue(server)
    route = f"""
  - name: in
    from: {{connection: cloud, address: /amq/queue/{queue}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: in}}
"""
    with BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path) as bridge:
        wait_for(lambda: lines_with(bridge.log(), "amqp:not-found") >= 2, 30,
                 "the bridge to retry the missing queue", bridge)
        send_messages(rabbitmq_url, queue_address(queue), in_messages(20, "later"))
        wait_for(lambda: arrived_in(legacy[0]) == 20, 60, "the messages to flow", bridge)
    assert sorted(drain_in_queue(server)) == sorted(f"later-{i}" for i in range(20))

