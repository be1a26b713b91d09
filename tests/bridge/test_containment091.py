"""Fault containment for the AMQP 0-9-1 parts: an unexpected exception in a 0-9-1 client
connection, a 0-9-1 route or a client of the 0-9-1 façade is logged, counted and recovered
locally; the process stays up and the other routes keep moving messages.

As ``test_containment.py`` does for 0-10: the bridge runs with
``AMQP_BRIDGE_FAULT_INJECTION=KIND:NAME`` (``bridge/faultinject.py``) and each ``SIGUSR1``
makes the next call of that part raise. The legacy side is RabbitMQ's AMQP 0-9-1, written
and read with pika.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pika
import pytest
from proton import Message

from bridge.faultinject import ENV
from tests.support.bridge import BridgeRun, collect, free_port, wait_for, wait_listening
from tests.support.faults import FaultyBridge
from tests.support.logs import records
from tests.support.rabbitmq import queue_address, receive_messages, send_messages, unique_queue

COUNT = 200


def config(rabbitmq_url: str, metrics: int, q: dict[str, str], facade_port: int) -> str:
    """Two 0-9-1 connections to RabbitMQ: route ``a`` on ``rabbit``, route ``b`` on
    ``rabbit2`` (both 0-9-1 queue → 1.0 address), and the 0-9-1 façade listener ``apps``
    serving RabbitMQ queue ``q["jobs"]`` as its queue ``jobs``."""
    def legacy(name: str) -> str:
        return f"""
  {name}:
    protocol: amqp0-9-1
    url: "{rabbitmq_url}"
    heartbeat: 0
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}"""

    return f"""
metrics: {{bind: "127.0.0.1:{metrics}"}}
logging: {{format: json}}
connections:{legacy("rabbit")}{legacy("rabbit2")}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_url}"
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
listeners:
  apps: {{protocol: amqp0-9-1, bind: "127.0.0.1:{facade_port}", users: {{guest: guest}}}}
routes:
  - name: a
    from: {{connection: rabbit, queue: {q["qa"]}}}
    to:   {{connection: cloud, address: {queue_address(q["a"])}}}
    max_in_flight: {{messages: 50}}
  - name: b
    from: {{connection: rabbit2, queue: {q["qb"]}}}
    to:   {{connection: cloud, address: {queue_address(q["b"])}}}
    max_in_flight: {{messages: 50}}
  - name: jobs
    from: {{connection: cloud, address: {queue_address(q["jobs"])}}}
    to:   {{listener: apps, queue: jobs}}
"""


class Faulty(FaultyBridge):
    """A running bridge with one injection target, and what the tests need around it."""

    def __init__(self, proc: BridgeRun, url: str, metrics: int, queues: dict[str, str],
                 facade_port: int) -> None:
        super().__init__(proc, metrics)
        self.url, self.queues, self.facade_port = url, queues, facade_port

    def publish(self, route: str, count: int = COUNT) -> list[str]:
        """Publish ``count`` messages (pika) to route ``route``'s 0-9-1 queue; their ids."""
        ids = [str(uuid.uuid4()) for _ in range(count)]
        with pika.BlockingConnection(pika.URLParameters(self.url)) as conn:
            channel = conn.channel()
            channel.confirm_delivery()
            for i in ids:
                channel.basic_publish("", self.queues["q" + route], b"x" * 100,
                                      pika.BasicProperties(message_id=i, delivery_mode=2))
        return ids

    def arrived(self, route: str, ids: list[str]) -> None:
        """Every one of ``ids`` arrives at route ``route``'s 1.0 queue (at least once)."""
        expected = set(ids)

        def got_ids(messages: list[Any]) -> set[str]:
            return {str(m.id) for m in messages}

        got = collect(self.url, queue_address(self.queues[route]),
                      lambda ms: expected <= got_ids(ms), linger=0.5, timeout=60)
        missing = expected - got_ids(got)
        assert not missing, f"route {route}: {len(missing)} never arrived\n{self.proc.log()[-4000:]}"


@contextmanager
def faulty_bridge(target: str, rabbitmq_url: str, tmp_path: Path) -> Iterator[Faulty]:
    """The bridge of :func:`config` with ``target`` injectable; stopped gracefully (exit 0)."""
    queues = {name: unique_queue(f"containment091-{name}")
              for name in ("a", "b", "jobs", "qa", "qb")}
    with pika.BlockingConnection(pika.URLParameters(rabbitmq_url)) as conn:
        channel = conn.channel()
        for name in ("qa", "qb"):
            channel.queue_declare(queues[name])
    metrics, facade_port = free_port(), free_port()
    with pytest.MonkeyPatch.context() as env:
        env.setenv(ENV, target)
        proc = BridgeRun(config(rabbitmq_url, metrics, queues, facade_port), tmp_path).start()
    try:
        bridge = Faulty(proc, rabbitmq_url, metrics, queues, facade_port)
        wait_for(lambda: "metrics_listening" in proc.log(), 20, "the metrics server", proc)
        wait_for(bridge.ready, 30, "the routes to be ready", proc)
        yield bridge
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()[-4000:]


def test_091_connection_fault_closes_it_and_it_reconnects(
        rabbitmq_url: str, tmp_path: Path) -> None:
    with faulty_bridge("legacy_connection:rabbit", rabbitmq_url, tmp_path) as bridge:
        bridge.inject()
        a, b = bridge.publish("a"), bridge.publish("b")
        fault = bridge.fault()
        assert (fault["kind"], fault["connection"]) == ("legacy_connection", "rabbit")
        assert fault["action"] == "connection closed, reconnecting"
        bridge.arrived("a", a)  # what met the fault was requeued by RabbitMQ and came again
        bridge.arrived("b", b)
        assert bridge.alive()
        assert bridge.counted("legacy_connection") == 1
        assert bridge.opens("rabbit") == 2  # closed and reconnected
        assert bridge.opens("rabbit2") == 1  # the other connection never noticed
        wait_for(bridge.ready, 30, "ready again", bridge.proc)
        bridge.arrived("a", bridge.publish("a", 20))  # and it works on the new connection


def test_091_route_fault_restarts_the_route_only(rabbitmq_url: str, tmp_path: Path) -> None:
    with faulty_bridge("route:a", rabbitmq_url, tmp_path) as bridge:
        bridge.inject()
        a, b = bridge.publish("a"), bridge.publish("b")
        fault = bridge.fault()
        assert (fault["kind"], fault["route"], fault["entry"]) == ("route", "a", "end_of_burst")
        bridge.arrived("a", a)
        bridge.arrived("b", b)
        assert bridge.alive()
        assert bridge.counted("route") == 1
        wait_for(lambda: any(r.get("event") == "fault_recovered" and r.get("part") == "route a"
                             for r in records(bridge.proc.log())), 30, "the route's recovery",
                 bridge.proc)
        wait_for(bridge.ready, 30, "ready again", bridge.proc)
        assert bridge.opens("rabbit") == 1  # only the route's channel was restarted


def test_091_facade_client_fault_closes_it_and_gives_its_messages_back(
        rabbitmq_url: str, tmp_path: Path) -> None:
    with faulty_bridge("facade_client:apps", rabbitmq_url, tmp_path) as bridge:
        wait_listening(bridge.facade_port, bridge.proc)
        jobs = queue_address(bridge.queues["jobs"])
        send_messages(rabbitmq_url, jobs, [Message(body=f"j{i}".encode(), inferred=True)
                                              for i in range(5)])
        params = pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{bridge.facade_port}/")
        client = pika.BlockingConnection(params)
        channel = client.channel()
        channel.basic_qos(prefetch_count=3)
        taken = []
        for method, _, body in channel.consume("jobs", inactivity_timeout=30):
            assert method is not None, "the façade delivered nothing"
            taken.append(body)
            if len(taken) == 3:
                break
        assert taken == [b"j0", b"j1", b"j2"]
        bridge.inject()
        with pytest.raises(pika.exceptions.AMQPError):  # the bridge closes the connection
            channel.queue_declare("jobs", passive=True)  # the client's next method meets it
        fault = bridge.fault()
        assert (fault["kind"], fault["listener"]) == ("facade_client", "apps")
        assert fault["action"] == "client connection closed"
        # the unacknowledged messages went back to RabbitMQ, the others stayed there
        back = receive_messages(rabbitmq_url, jobs, 5, timeout=15)
        bodies = sorted(bytes(r.message.body) for r in back)  # type: ignore[arg-type]
        assert bodies == [b"j0", b"j1", b"j2", b"j3", b"j4"]
        bridge.arrived("a", bridge.publish("a", 20))  # the other routes move messages
        assert bridge.alive()
        assert bridge.counted("facade_client") == 1
        # the listener still serves new clients
        with pika.BlockingConnection(params) as again:
            assert again.channel().queue_declare("jobs", passive=True).method.queue == "jobs"
