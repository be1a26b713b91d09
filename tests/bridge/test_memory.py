"""Memory bounds: a 100,000-message backlog behind a slow consumer; clients that come and go.

The 0-10 queue holds 100,000 messages of 1 KiB; the bridge moves them to RabbitMQ
through a link throttled to a trickle (a TCP relay that forwards the bridge's bytes
at ``SLOW_RATE`` octets/s: the target accepts, and so settles, slowly), then at
full speed. Throughout, the 0-10 broker never has more than ``max_in_flight``
messages out to the bridge (credit bridging: the rest of the backlog stays in the
source), and the bridge process's resident memory stays under ``RSS_BOUND``
(docs/semantics.md, "Memory bounds").
"""

from __future__ import annotations

import time
from pathlib import Path

import pika

from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from bridge.runtime.reactor import GC_INTERVAL
from tests.support.bridge import (
    BridgeRun,
    bridge_config,
    free_port,
    preload,
    wait_for,
    wait_listening,
)
from tests.support.logs import route_stats
from tests.support.metrics import http_get, metrics_port, poll, scrape
from tests.support.rabbitmq import queue_address, rabbitmqctl, unique_queue
from tests.support.relay import Relay

BACKLOG = 100_000
MAX_IN_FLIGHT = 1000
RSS_BOUND = 80 * 1024  # KiB: ~55 MiB idle + ~4 KiB per in-flight 1 KiB message + margin
SLOW_RATE = 256 * 1024  # octets/s towards RabbitMQ while throttled
FAST_PHASE_MESSAGES = 30_000  # the fast phase ends here (or after 8 s), with the rest still waiting


def test_100000_message_backlog_behind_a_slow_consumer_stays_bounded(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    preload(broker, "backlog", BACKLOG)
    target = unique_queue("memory")
    port = int(rabbitmq_url.rsplit(":", 1)[1])
    relay = Relay(("127.0.0.1", port), SLOW_RATE)
    route = f"""
  - name: backlog-out
    from: {{connection: legacy, queue: backlog}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    cloudevents: {{mode: binary, type: com.example.backlog, source: /legacy/backlog}}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
"""
    url = rabbitmq_url.replace(f":{port}", f":{relay.port}")
    out_to_bridge: list[int] = []  # the broker's messages delivered and not yet accepted
    rss: list[int] = []
    queue = broker.queues["backlog"]

    def sample() -> None:
        out_to_bridge.append(BACKLOG - moved() - len(queue.messages))
        rss.append(bridge.status("VmRSS"))

    def moved() -> int:
        return BACKLOG - len(queue.messages) - unaccepted()

    def unaccepted() -> int:
        while True:
            try:
                return sum(len(m.unacked) for m in list(broker.sessions.values()))
            except RuntimeError:  # changed size during iteration: retry
                continue

    bridge = BridgeRun(bridge_config(server.url, url, route), tmp_path).start()
    try:
        wait_for(lambda: moved() > 0, 30, "the bridge to start", bridge)
        slow_until = time.monotonic() + 8
        while time.monotonic() < slow_until:  # the consumer trickles
            sample()
            time.sleep(0.1)
        slow_moved = moved()
        relay.rate = None
        fast_until = time.monotonic() + 8
        # the consumer keeps up: long enough to show the speed-up, short enough that most
        # of the backlog still waits in the source while memory is sampled
        while time.monotonic() < fast_until and moved() - slow_moved < FAST_PHASE_MESSAGES:
            sample()
            time.sleep(0.1)
        fast_moved = moved() - slow_moved
        peak_rss = bridge.status("VmHWM")
    finally:
        bridge.stop()
        relay.close()
        rabbitmqctl(rabbitmq_url, "delete_queue", target)
    stats = route_stats(bridge.log(), "backlog-out")
    print(f"\nslow phase: {slow_moved} messages in 8 s, fast phase: {fast_moved} in 8 s; "
          f"bridge RSS max {max(rss) / 1024:.1f} MiB (VmHWM {peak_rss / 1024:.1f} MiB); "
          f"at most {max(out_to_bridge)} messages out to the bridge")
    assert 0 < slow_moved < fast_moved  # the trickle did hold it back
    assert BACKLOG - slow_moved - fast_moved > BACKLOG // 2  # most of the backlog still waits
    assert max(out_to_bridge) <= MAX_IN_FLIGHT  # the rest of the backlog stayed in the source
    assert stats["peak_in_flight"] <= MAX_IN_FLIGHT
    assert peak_rss < RSS_BOUND, f"bridge VmHWM {peak_rss} KiB"


CLIENTS = 10
"""Façade clients of each protocol that connect, publish, subscribe and leave."""


def test_clients_that_come_and_go_leave_no_connection_in_memory(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """0-10 and 0-9-1 façade clients that publish, subscribe (a 1.0 link each) and leave
    leave no connection object behind: ``amqp_bridge_sockets_in_memory`` (objects counted,
    not bytes) comes back to 0 — this bridge has no legacy connection — once the bridge's
    periodic full collection has run (``GC_INTERVAL``). Each closed connection is held in
    reference cycles (socket, selectable, engine, handlers) that only the garbage
    collector frees, and with the loop's thresholds (:func:`bridge.runtime.reactor.tune_gc`)
    it did not run for hours under steady load: the soak's RSS grew with every client
    that came and went (``benchmarks/soak.py``)."""
    queues = {name: unique_queue(f"memory-{name}") for name in ("pub", "sub", "pub091", "sub091")}
    port, port091 = free_port(), free_port()
    while port091 == port:
        port091 = free_port()

    def route(name: str, source: str, target: str) -> str:
        return f"""
  - name: {name}
    from: {source}
    to:   {target}"""

    def cloud(name: str) -> str:
        return f"{{connection: cloud, address: {queue_address(queues[name])}}}"

    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
  app091: {{protocol: amqp0-9-1, bind: "127.0.0.1:{port091}", users: {{app: s3cret}}}}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: json}}
routes:{route("pub", "{listener: app, exchange: events}", cloud("pub"))}\
{route("sub", cloud("sub"), "{listener: app, queue: jobs}")}\
{route("pub091", "{listener: app091, exchange: events091}", cloud("pub091"))}\
{route("sub091", cloud("sub091"), "{listener: app091, queue: jobs091}")}
"""
    bridge = BridgeRun(config, tmp_path).start()
    try:
        metrics = metrics_port(bridge.log)
        wait_listening(port, bridge)
        wait_listening(port091, bridge)
        wait_for(lambda: http_get(metrics, "/readyz")[0] == 200, 30, "routes ready", bridge)
        for _ in range(CLIENTS):
            with BlockingClient.connect(f"amqp://127.0.0.1:{port}") as client:
                client.subscribe("jobs")
                client.publish(b"x", exchange="events", routing_key="e")
            conn = pika.BlockingConnection(pika.ConnectionParameters(
                "127.0.0.1", port091, credentials=pika.PlainCredentials("app", "s3cret")))
            channel = conn.channel()
            channel.confirm_delivery()
            channel.basic_publish("events091", "e", b"x")
            channel.basic_consume("jobs091", lambda *_: None)
            conn.close()
        poll(lambda: [scrape(metrics).value("amqp_bridge_facade_clients", listener=name)
                      for name in ("app", "app091")], lambda v: v == [0, 0], 20,
             "every façade client gone")
        poll(lambda: scrape(metrics).value("amqp_bridge_sockets_in_memory"), lambda v: v == 0,
             3 * GC_INTERVAL + 10, "no façade connection left in memory")
    finally:
        bridge.stop()
        for name in queues.values():
            rabbitmqctl(rabbitmq_url, "delete_queue", name)
