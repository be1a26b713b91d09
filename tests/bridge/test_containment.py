"""Fault containment (``bridge/containment.py``): an unexpected exception in one legacy
connection, façade client, 1.0 link, route or timer of a running bridge is logged (one
ERROR line with the traceback), counted (``amqp_bridge_faults_total{kind}``) and
recovered locally; the process stays up and the other routes keep moving messages.

The faults are injected with the test-only hook of ``bridge/faultinject.py``: the
bridge runs with ``AMQP_BRIDGE_FAULT_INJECTION=KIND:NAME`` and each ``SIGUSR1`` makes the
next call of that part raise, in the place a real bug would.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from proton import Message

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from bridge.faultinject import ENV
from tests.support.bridge import (
    BridgeRun,
    collect,
    free_port,
    legacy_ids,
    publish_legacy,
    wait_for,
    wait_listening,
)
from tests.support.faults import FaultyBridge
from tests.support.logs import records
from tests.support.rabbitmq import queue_address, receive_messages, send_messages, unique_queue

COUNT = 300


def config(legacy_url: str, rabbitmq_url: str, metrics: int, q: dict[str, str],
           facade_port: int | None = None) -> str:
    """Two 0-10 connections to the same broker: route ``a`` on ``legacy``, route ``b`` on
    ``legacy2`` (both 0-10 queue → 1.0 address); with ``facade_port`` a façade listener
    ``apps`` serving RabbitMQ queue ``q["jobs"]`` as its queue ``jobs``."""
    facade = ""
    if facade_port is not None:
        facade = f"""
listeners:
  apps: {{protocol: amqp0-10, bind: "127.0.0.1:{facade_port}", allow_anonymous: true}}
"""
    text = f"""
metrics: {{bind: "127.0.0.1:{metrics}"}}
connections:
  legacy:
    protocol: amqp0-10
    url: "{legacy_url}"
    heartbeat: 0
    session_timeout: 30
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
  legacy2:
    protocol: amqp0-10
    url: "{legacy_url}"
    heartbeat: 0
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_url}"
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
{facade}
routes:
  - name: a
    from: {{connection: legacy, queue: {q["qa"]}}}
    to:   {{connection: cloud, address: {queue_address(q["a"])}}}
    max_in_flight: {{messages: 50}}
  - name: b
    from: {{connection: legacy2, queue: {q["qb"]}}}
    to:   {{connection: cloud, address: {queue_address(q["b"])}}}
    max_in_flight: {{messages: 50}}
"""
    if facade_port is not None:
        text += f"""
  - name: jobs
    from: {{connection: cloud, address: {queue_address(q["jobs"])}}}
    to:   {{listener: apps, queue: jobs}}
"""
    return text


class Faulty(FaultyBridge):
    """A running bridge with one injection target, and what the tests need around it."""

    def __init__(self, proc: BridgeRun, server: EngineServer, rabbitmq_url: str,
                 metrics: int, queues: dict[str, str], facade_port: int | None) -> None:
        super().__init__(proc, metrics)
        self.server = server
        self.rabbitmq_url = rabbitmq_url
        self.queues = queues
        self.facade_port = facade_port

    def publish(self, route: str, count: int = COUNT) -> list[uuid.UUID]:
        """Publish ``count`` messages to route ``route``'s 0-10 queue; their ids."""
        ids = [uuid.uuid4() for _ in range(count)]
        queue = self.queues["q" + route]
        publish_legacy(self.server, queue, [
            (DeliveryProperties(delivery_mode=2), MessageProperties(message_id=i), b"x" * 100)
            for i in ids])
        return ids

    def arrived(self, route: str, ids: list[uuid.UUID]) -> None:
        """Every one of ``ids`` arrives at route ``route``'s 1.0 queue (at least once)."""
        expected = set(ids)
        got = collect(self.rabbitmq_url, queue_address(self.queues[route]),
                      lambda ms: expected <= set(legacy_ids(ms)), linger=0.5, timeout=60)
        missing = expected - set(legacy_ids(got))
        assert not missing, f"route {route}: {len(missing)} never arrived\n{self.proc.log()[-4000:]}"


@contextmanager
def faulty_bridge(target: str, legacy: tuple[Broker, EngineServer], rabbitmq_url: str,
                  tmp_path: Path, *, facade: bool = False) -> Iterator[Faulty]:
    """The bridge of :func:`config`, with ``target`` injectable; stopped gracefully (exit 0)
    at the end, which also shows the housekeeping still runs."""
    _, server = legacy
    queues = {name: unique_queue(f"containment-{name}") for name in ("a", "b", "jobs")}
    queues["qa"], queues["qb"] = f"qa-{uuid.uuid4().hex[:8]}", f"qb-{uuid.uuid4().hex[:8]}"
    with BlockingClient.connect(
            f"amqp://guest:guest@{server.address[0]}:{server.address[1]}") as client:
        client.declare_queue(queues["qa"])
        client.declare_queue(queues["qb"])
    metrics = free_port()
    facade_port = free_port() if facade else None
    with pytest.MonkeyPatch.context() as env:
        env.setenv(ENV, target)
        legacy_url = f"amqp://guest:guest@{server.address[0]}:{server.address[1]}"
        proc = BridgeRun(config(legacy_url, rabbitmq_url, metrics, queues, facade_port),
                         tmp_path).start()
    try:
        bridge = Faulty(proc, server, rabbitmq_url, metrics, queues, facade_port)
        wait_for(lambda: "metrics_listening" in proc.log(), 20, "the metrics server", proc)
        wait_for(bridge.ready, 30, "the routes to be ready", proc)
        assert bridge.counted("legacy_connection") == 0  # exported before any fault
        yield bridge
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()[-4000:]


def test_legacy_connection_fault_closes_it_and_it_reconnects(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    with faulty_bridge("legacy_connection:legacy", legacy, rabbitmq_url, tmp_path) as bridge:
        bridge.inject()
        a, b = bridge.publish("a"), bridge.publish("b")
        fault = bridge.fault()
        assert (fault["kind"], fault["connection"]) == ("legacy_connection", "legacy")
        assert fault["action"] == "connection closed, reconnecting"
        bridge.arrived("a", a)  # the message that met the fault is requeued and redelivered
        bridge.arrived("b", b)
        assert bridge.alive()
        assert bridge.counted("legacy_connection") == 1
        assert bridge.opens("legacy") == 2  # closed and reconnected
        assert bridge.opens("legacy2") == 1  # the other connection never noticed
        wait_for(bridge.ready, 30, "ready again", bridge.proc)
        # it keeps working on the new connection
        bridge.arrived("a", bridge.publish("a", 20))


def test_amqp10_link_fault_reattaches_the_link(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    with faulty_bridge("amqp10_link:a.target", legacy, rabbitmq_url, tmp_path) as bridge:
        bridge.inject()
        a, b = bridge.publish("a"), bridge.publish("b")
        fault = bridge.fault()
        assert (fault["kind"], fault["link"], fault["route"]) == ("amqp10_link", "a.target", "a")
        bridge.arrived("a", a)
        bridge.arrived("b", b)
        assert bridge.alive()
        assert bridge.counted("amqp10_link") == 1
        attached = [r for r in records(bridge.proc.log())
                    if r.get("event") == "link_attached" and r.get("link") == "a.target"]
        assert len(attached) == 2  # lost and attached again
        assert bridge.opens("legacy") == 1 and bridge.opens("legacy2") == 1
        wait_for(bridge.ready, 30, "ready again", bridge.proc)


def test_route_end_of_burst_fault_restarts_the_route(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    with faulty_bridge("route:a", legacy, rabbitmq_url, tmp_path) as bridge:
        bridge.inject()
        a, b = bridge.publish("a"), bridge.publish("b")
        fault = bridge.fault()
        assert (fault["kind"], fault["route"], fault["entry"]) == ("route", "a", "end_of_burst")
        bridge.arrived("a", a)  # what the route held unsettled was requeued and came again
        bridge.arrived("b", b)
        assert bridge.alive()
        assert bridge.counted("route") == 1
        wait_for(lambda: any(r.get("event") == "fault_recovered" and r.get("part") == "route a"
                             for r in records(bridge.proc.log())), 30, "the route's recovery",
                 bridge.proc)
        wait_for(bridge.ready, 30, "ready again", bridge.proc)
        assert bridge.opens("legacy") == 1  # only the route's session was restarted


def test_timer_fault_housekeeping_goes_on(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    with faulty_bridge("timer:_housekeeping", legacy, rabbitmq_url, tmp_path) as bridge:
        bridge.inject()
        fault = bridge.fault()
        assert (fault["kind"], fault["part"]) == ("timer", "bridge")
        assert fault["action"] == "housekeeping rescheduled"
        bridge.arrived("a", bridge.publish("a"))
        assert bridge.alive()
        assert bridge.counted("timer") == 1
    # faulty_bridge's exit: SIGTERM drains and exits 0, which needs the housekeeping


def test_facade_client_fault_closes_it_and_gives_its_messages_back(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    with faulty_bridge("facade_client:apps", legacy, rabbitmq_url, tmp_path,
                       facade=True) as bridge:
        assert bridge.facade_port is not None
        wait_listening(bridge.facade_port, bridge.proc)
        jobs = queue_address(bridge.queues["jobs"])
        send_messages(rabbitmq_url, jobs, [Message(body=f"j{i}") for i in range(5)])
        client = BlockingClient.connect(f"amqp://127.0.0.1:{bridge.facade_port}")
        client.subscribe("jobs", messages=3)
        taken = [client.receive("jobs", timeout=30) for _ in range(3)]
        assert [m.body for m in taken] == [b"j0", b"j1", b"j2"]
        bridge.inject()
        with pytest.raises(Exception):  # noqa: B017 - the bridge closes the connection
            client.query_queue("jobs")  # the client's next command meets the fault
        client.transport.sock.close()
        fault = bridge.fault()
        assert (fault["kind"], fault["listener"]) == ("facade_client", "apps")
        assert fault["action"] == "client connection closed"
        # the unaccepted messages went back to RabbitMQ, the others stayed there
        back = receive_messages(rabbitmq_url, jobs, 5, timeout=15)
        assert sorted(str(r.message.body) for r in back) == ["j0", "j1", "j2", "j3", "j4"]
        bridge.arrived("a", bridge.publish("a"))  # the other routes move messages
        assert bridge.alive()
        assert bridge.counted("facade_client") == 1
        closed = [r for r in records(bridge.proc.log()) if r.get("event") == "client_closed"]
        assert any("amqp-bridge internal error" in r["error"] for r in closed)
        # the listener still serves new clients
        with BlockingClient.connect(f"amqp://127.0.0.1:{bridge.facade_port}") as again:
            assert again.query_queue("jobs").queue == "jobs"
