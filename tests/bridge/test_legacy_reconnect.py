"""A lost legacy connection (0-10 or 0-9-1) is always retried, however its end comes.

The first test drives a connection's hosted socket (:class:`~bridge.runtime.EngineSocket`
over a socket pair, the real engine, the real :class:`~bridge.legacy.client.LegacyClient`)
with a fake clock at the one instant that matters: its heartbeat deadline. The fault and
stop tests drive a lost connection the same way, with the loop's timers on a fake clock,
and count the real connection attempts it starts. The others run the real
``amqp-bridge run`` process against the in-memory 0-10 broker behind a relay that goes
silent.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pamqp import commands as C
from pamqp import heartbeat as pheartbeat
from proton.reactor import Container

import bridge.runtime.sockets as sockets
from amqp010.framing import encode_assembly
from amqp010.spec import ConnectionHeartbeat
from bridge.config import parse_config
from bridge.legacy import client
from bridge.legacy.amqp010 import LegacyConnection
from bridge.legacy.amqp091 import Amqp091Connection
from bridge.legacy.client import LegacyClient
from bridge.runtime import EngineSocket
from bridge.runtime.containment import ContainedContainer, contain
from tests.engine.pump import client_conn, open_pair, server_conn
from tests.engine091.peer import open_client
from tests.support.bridge import (
    BridgeRun,
    collect,
    legacy_broker,
    legacy_client,
    legacy_ids,
    legacy_message,
    publish_legacy,
    wait_for,
)
from tests.support.logs import records
from tests.support.metrics import metrics_port, scrape
from tests.support.rabbitmq import queue_address, unique_queue
from tests.support.relay import Relay

CONFIG = """
connections:
  legacy: {protocol: amqp0-10, url: "amqp://guest:guest@127.0.0.1:1", heartbeat: 1}
  rabbit: {protocol: amqp0-9-1, url: "amqp://guest:guest@127.0.0.1:1/", heartbeat: 1}
  cloud: {protocol: amqp1.0, url: "amqp://127.0.0.1:2"}
routes:
  - name: out
    from: {connection: legacy, queue: out}
    to:   {connection: cloud, address: /queue/out}
  - name: out091
    from: {connection: rabbit, queue: out}
    to:   {connection: cloud, address: /queue/out091}
"""


def open_010() -> tuple[Any, bytes]:
    """A 0-10 client engine through the handshake, heartbeat 1 s; a broker heartbeat."""
    engine = open_pair(client=client_conn(heartbeat=1), server=server_conn(heartbeat_min=1)).client
    return engine, encode_assembly(0, ConnectionHeartbeat())


def open_091() -> tuple[Any, bytes]:
    """A 0-9-1 client engine through the handshake, heartbeat 1 s; a broker heartbeat."""
    engine = open_client(C.Connection.Tune(channel_max=2047, frame_max=131072, heartbeat=1),
                         heartbeat=1)
    return engine, pheartbeat.Heartbeat.marshal()


PROTOCOLS: dict[str, tuple[Callable[..., LegacyClient], str, Callable[[], tuple[Any, bytes]]]] = {
    "amqp0-10": (LegacyConnection, "legacy", open_010),
    "amqp0-9-1": (Amqp091Connection, "rabbit", open_091),
}


@pytest.fixture
def socket_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    ours, broker = socket.socketpair()
    try:
        yield ours, broker
    finally:
        ours.close()
        broker.close()


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_silence_found_while_writing_ends_the_connection_and_reconnects(
        protocol: str, socket_pair: tuple[socket.socket, socket.socket],
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The socket ticks the engine's clock twice when its deadline expires: in the tick
    itself, and again when it collects what to write. At the heartbeat *send* deadline
    (just before the silence limit) the first tick only sends a heartbeat; the second, a
    moment later, finds the broker silent for more than two intervals and ends the
    connection. The connection must hear of that end and reconnect (it used to be left
    believing itself open, its transport closed, never retried: the lifecycle suite's
    0-10 connection that never came back after a silent network)."""
    kind, name, open_engine = PROTOCOLS[protocol]
    settings = parse_config(CONFIG, env={}).connections[name]
    conn = kind(Container(), name, settings)
    engine, broker_heartbeat = open_engine()
    engine.tick(100.0)
    engine.receive_data(broker_heartbeat)  # the broker's last word
    engine.tick(100.0002)
    for now in (100.5, 101.0, 101.5):  # our heartbeats (0-10 every 1 s, 0-9-1 every 0.5 s)
        engine.tick(now)
        engine.data_to_send()  # written as the socket does, after each tick
    assert list(engine.events()) == []
    # next: our heartbeat at 102.0; the broker is dead from 102.0002 (silent > 2 s)
    assert engine.next_deadline() == 102.0

    ours, _broker = socket_pair
    conn.socket = EngineSocket(conn.container, ours, engine, conn._on_event, peer="broker")
    conn.open = True
    clock = itertools.count(102.0001, 0.0002)  # each reading of the clock a moment later
    monkeypatch.setattr(sockets, "time", SimpleNamespace(time=lambda: next(clock)))
    caplog.set_level("INFO", logger="bridge")
    conn.socket.on_selectable_expired(None)  # proton: now (102.0001) > the deadline

    lost = [r for r in caplog.records if getattr(r, "event", None) == "lost"]
    assert lost and "no traffic from the peer" in lost[0].getMessage(), caplog.text
    assert (conn.open, conn.socket, conn.reconnects) == (False, None, 1)
    assert [getattr(r, "event", None) for r in caplog.records][-1] == "reconnect_scheduled"


def test_an_attempt_the_silent_network_holds_is_abandoned_and_retried(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """The network to the 0-10 broker goes silent: the heartbeat gives the connection up,
    and every attempt after it connects (the relay takes the TCP connection) but hears
    nothing. Each is abandoned after ``connect_timeout`` with a WARNING and counted as a
    reconnect; once the network is back, the next attempt opens and messages flow (an
    attempt used to wait for an answer for good)."""
    out = unique_queue("relink")
    with legacy_broker() as (_broker, server):
        with legacy_client(server) as admin:
            admin.declare_queue("out")
        relay = Relay(server.address)
        config = f"""
connections:
  legacy:
    protocol: amqp0-10
    url: "{relay.url(server.url)}"
    heartbeat: 1
    connect_timeout: 1
    reconnect: {{initial_delay: 0.2, max_delay: 0.5}}
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: json}}
routes:
  - name: out
    from: {{connection: legacy, queue: out}}
    to:   {{connection: cloud, address: "{queue_address(out)}"}}
"""
        bridge = BridgeRun(config, tmp_path)
        try:
            bridge.start()
            port = metrics_port(bridge.log)

            def events(name: str) -> list[dict[str, Any]]:
                return [r for r in records(bridge.log())
                        if r.get("event") == name and r.get("connection") == "legacy"]

            def reconnects() -> float:
                return scrape(port).value("amqp_bridge_reconnects_total", connection="legacy",
                                          protocol="amqp0-10")

            wait_for(lambda: len(events("session_attached")) == 1, 30, "the session", bridge)
            before = reconnects()
            relay.pause()
            try:
                wait_for(lambda: len(events("lost")) == 1, 20, "the heartbeat to give up",
                         bridge)
                wait_for(lambda: len(events("connect_timeout")) >= 2, 30,
                         "two attempts abandoned", bridge)
                abandoned = events("connect_timeout")
                assert all(r["level"] == "warning" and "connect_timeout" in r["error"]
                           for r in abandoned), abandoned
                assert reconnects() >= before + 1 + len(abandoned)
            finally:
                relay.resume()
            wait_for(lambda: len(events("session_resumed")) == 1, 30, "the session resumed",
                     bridge)
            message = legacy_message(1)
            publish_legacy(server, "out", [message])
            got = collect(rabbitmq_url, queue_address(out), lambda ms: len(ms) >= 1)
            assert legacy_ids(got) == [message[1].message_id]
        finally:
            bridge.stop()
            relay.close()


class FakeTimers:
    """``container.schedule`` on a fake clock: :meth:`advance` fires the tasks that fall
    due, in deadline order (a task scheduled while firing waits for the next advance)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.tasks: list[FakeTask] = []

    def schedule(self, delay: float, handler: Any) -> FakeTask:
        task = FakeTask(self.now + delay, handler)
        self.tasks.append(task)
        return task

    def advance(self, seconds: float) -> None:
        self.now += seconds
        due = sorted((t for t in self.tasks if t.deadline <= self.now), key=lambda t: t.deadline)
        self.tasks = [t for t in self.tasks if t.deadline > self.now]
        for task in due:
            if not task.cancelled:
                task.handler.on_timer_task(None)


@dataclass
class FakeTask:
    deadline: float
    handler: Any
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EngineSocket[Any]]]:
    """The sockets of the connection attempts legacy connections start (real ones)."""
    started: list[EngineSocket[Any]] = []

    def connect(*args: Any, **kwargs: Any) -> EngineSocket[Any]:
        sock = sockets.connect(*args, **kwargs)
        started.append(sock)
        return sock

    monkeypatch.setattr(client, "connect", connect)
    yield started
    for sock in started:
        sock.close_transport()


@pytest.fixture
def broker_port() -> Iterator[int]:
    """A listening socket the attempts connect to (never accepted: nothing answers)."""
    with socket.create_server(("127.0.0.1", 0), backlog=8) as listener:
        yield listener.getsockname()[1]


def lost_connection(protocol: str, port: int, ours: socket.socket, broker: socket.socket,
                    timers: FakeTimers) -> tuple[LegacyClient, EngineSocket[Any]]:
    """A connection whose broker went away: its reconnect is scheduled, not yet due."""
    kind, name, open_engine = PROTOCOLS[protocol]
    settings = parse_config(CONFIG.replace("127.0.0.1:1", f"127.0.0.1:{port}"),
                            env={}).connections[name]
    container = ContainedContainer()
    container.schedule = timers.schedule  # type: ignore[method-assign,assignment]
    conn = kind(container, name, settings)
    engine, _ = open_engine()
    old = EngineSocket(container, ours, engine, conn._on_event, peer="broker")
    conn.socket, conn.open = old, True
    broker.close()
    old.on_selectable_readable(None)  # EOF: the connection is lost
    assert (conn.socket, conn.open, old.closed) == (None, False, True)
    assert len(timers.tasks) == 1  # the reconnect
    return conn, old


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_fault_while_a_reconnect_waits_starts_one_attempt(
        protocol: str, socket_pair: tuple[socket.socket, socket.socket], broker_port: int,
        attempts: list[EngineSocket[Any]], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """An internal fault blamed on a legacy connection whose reconnect is already
    scheduled (here: a bug in its lost socket's last event, which proton dispatches after
    the loss) is recovered by resetting the connection, which schedules a reconnect. The
    connection still makes one attempt at a time: two used to start, and the second took
    the connection's place while the first one's socket stayed open, logged in at the
    broker with nobody listening to it."""
    timers = FakeTimers()
    conn, old = lost_connection(protocol, broker_port, *socket_pair, timers)

    def last_event_fails(self: EngineSocket[Any], event: Any) -> None:
        raise RuntimeError("a bug in the socket's last event")

    monkeypatch.setattr(EngineSocket, "on_selectable_final", last_event_fails)
    try:
        old.on_selectable_final(None)
    except RuntimeError as exc:
        contain(conn.container, exc, entry="event")
    faults = [r for r in caplog.records if getattr(r, "event", None) == "handler_fault"]
    assert [getattr(r, "kind", None) for r in faults] == ["legacy_connection"], caplog.text

    timers.advance(3600.0)
    assert len(attempts) == 1, attempts
    assert conn.socket is attempts[0] and not attempts[0].closed


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_connection_stopped_while_a_reconnect_waits_makes_no_attempt(
        protocol: str, socket_pair: tuple[socket.socket, socket.socket], broker_port: int,
        attempts: list[EngineSocket[Any]]) -> None:
    """The bridge stops while a legacy connection waits to reconnect: the attempt is
    not made (it used to connect when its time came, during the bridge's close grace)."""
    timers = FakeTimers()
    conn, _old = lost_connection(protocol, broker_port, *socket_pair, timers)
    assert isinstance(conn, LegacyConnection | Amqp091Connection)
    conn.stop()
    timers.advance(3600.0)
    assert attempts == []
