"""Metrics of a real run: ``amqp-bridge run`` (JSON logs, metrics on a free loopback port)
between the in-memory 0-10 broker and RabbitMQ, with all four route kinds. The test
sends known numbers of good, redelivered, unmappable and duplicate messages each way,
then scrapes ``/metrics`` over HTTP and checks that every counter equals what it sent,
that the latency histograms counted every delivered message and that nothing is left
in flight; then that every log line is JSON, that state changes carry their route,
connection and peer, and that no INFO line is written per message.
"""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.broker import Message as StoredMessage
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from tests.support.bridge import (
    BridgeRun,
    free_port,
    legacy_backlog,
    legacy_client,
    preload,
    wait_for,
)
from tests.support.metrics import Scrape, http_get, metrics_port, poll, scrape
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    receive_messages,
    send_messages,
    unique_queue,
)

N = 200
"""Good messages per direction on the bridge's own routes."""
REDELIVERED_OUT, UNMAPPABLE_OUT = 5, 3
REDELIVERED_IN, UNMAPPABLE_IN = 4, 2
FACADE_N = 50
LONG_KEY = "k" * 300  # a 0-10 header key holds at most 255 octets: unmappable 1.0 -> 0-10




class TakeAndDrop(MessagingHandler):  # type: ignore[misc]
    """Receives ``count`` messages without settling them, then closes the connection: the
    broker requeues them and redelivers them flagged as redelivered."""

    def __init__(self, url: str, address: str, count: int) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        self.url, self.address, self.count = url, address, count
        self.got = 0
        self.conn: Any = None

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url, reconnect=False)
        event.container.create_receiver(self.conn, self.address)
        self.timer = event.container.schedule(30, self)

    def on_link_opened(self, event: Any) -> None:
        # credit once the broker attached: RabbitMQ 4 reads an earlier flow's N as N + 5
        if event.receiver is not None:
            event.receiver.flow(self.count)

    def on_message(self, event: Any) -> None:
        self.got += 1
        if self.got == self.count:
            self.timer.cancel()
            self.conn.close()

    def on_timer_task(self, event: Any) -> None:
        self.conn.close()  # safety net; the test checks ``got``


def unmappable_legacy(queue: str, i: int, mode: int) -> StoredMessage:
    """A stored 0-10 message whose delivery-mode (not 1 or 2) cannot be mapped."""
    return StoredMessage(DeliveryProperties(routing_key=queue, delivery_mode=mode),
                         MessageProperties(message_id=uuid.UUID(int=10_000 + i)), (),
                         f"bad {i}".encode(), "")


def config(legacy_url: str, rabbitmq_url: str, facade_port: int, q: dict[str, str]) -> str:
    return f"""
connections:
  legacy:
    protocol: amqp0-10
    url: "{legacy_url.replace("amqp://", "amqp://guest:guest@")}"
    heartbeat: 0
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_url}"
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
listeners:
  facade: {{protocol: amqp0-10, bind: "127.0.0.1:{facade_port}", allow_anonymous: true}}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: json}}
routes:
  - name: out
    from: {{connection: legacy, queue: out}}
    to:   {{connection: cloud, address: {q["out"]}}}
    dead_letter: {{connection: cloud, address: {q["out_dlq"]}}}
    max_in_flight: {{messages: 50}}
  - name: strict-out
    from: {{connection: legacy, queue: strict}}
    to:   {{connection: cloud, address: {q["strict"]}}}
  - name: in
    from: {{connection: cloud, address: {q["in"]}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: in}}
    dead_letter: {{connection: cloud, address: {q["in_dlq"]}}}
    dedupe: {{window: 1000}}
    max_in_flight: {{messages: 50}}
  - name: pub
    from: {{listener: facade, exchange: events}}
    to:   {{connection: cloud, address: {q["pub"]}}}
  - name: sub
    from: {{connection: cloud, address: {q["sub"]}}}
    to:   {{listener: facade, queue: jobs}}
"""


def test_scraped_counters_match_what_was_sent(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    q = {role: queue_address(unique_queue(f"ops-{role.replace('_', '-')}"))
         for role in ("out", "out_dlq", "strict", "in", "in_dlq", "pub", "sub")}
    # 0-10 -> 1.0: good messages (some flagged redelivered by the broker), unmappable ones
    preload(broker, "out", N)
    stored = broker.queues["out"].messages
    for message in list(stored)[:REDELIVERED_OUT]:
        message.redelivered = True
    stored.extend(unmappable_legacy("out", i, 3) for i in range(UNMAPPABLE_OUT))
    preload(broker, "strict", 2, first=N)
    broker.queues["strict"].messages.append(unmappable_legacy("strict", 99, 7))
    with legacy_client(server) as client:
        client.declare_queue("in-q")
        client.bind("in-q", "amq.direct", "in")
    # 1.0 -> 0-10: good messages, a few of them taken and dropped by another consumer first
    # (RabbitMQ redelivers those flagged), unmappable ones
    send_messages(rabbitmq_url, q["in"],
                  [Message(id=f"in-{i}", body=f"in {i}".encode(), inferred=True)
                   for i in range(N)]
                  + [Message(id=f"bad-{i}", properties={LONG_KEY: i}, body=b"x")
                     for i in range(UNMAPPABLE_IN)], timeout=60)
    taker = TakeAndDrop(rabbitmq_url, q["in"], REDELIVERED_IN)
    Container(taker).run()
    assert taker.got == REDELIVERED_IN
    send_messages(rabbitmq_url, q["sub"], [Message(id=f"sub-{i}", body=f"job {i}".encode())
                                           for i in range(FACADE_N)])
    facade_port = free_port()
    bridge = BridgeRun(config(server.url, rabbitmq_url, facade_port, q), tmp_path)
    with bridge:
        port = metrics_port(bridge.log)
        poll(lambda: http_get(port, "/readyz"), lambda r: r[0] == 200, 30, "/readyz 200")
        assert http_get(port, "/healthz") == (200, {"alive": True})
        # the bridge's own routes move everything
        delivered_out = receive_messages(rabbitmq_url, q["out"], N, timeout=60)
        dead_out = receive_messages(rabbitmq_url, q["out_dlq"], UNMAPPABLE_OUT, timeout=30)
        receive_messages(rabbitmq_url, q["strict"], 2, timeout=30)
        dead_in = receive_messages(rabbitmq_url, q["in_dlq"], UNMAPPABLE_IN, timeout=30)
        wait_for(lambda: len(broker.queues["in-q"].messages) == N, 60, "N messages in in-q",
                 bridge)
        # a message-id the route delivered already: suppressed
        send_messages(rabbitmq_url, q["in"], [Message(id="in-0", body=b"again", inferred=True)])
        # façade: a 0-10 publisher, then a 0-10 subscriber
        with BlockingClient.connect(f"amqp://127.0.0.1:{facade_port}", timeout=30) as app:
            for i in range(FACADE_N):
                app.publish(f"event {i}".encode(), exchange="events", routing_key="e",
                            properties=MessageProperties(message_id=uuid.UUID(int=50_000 + i)),
                            wait=False)
            app.sync()
        published = receive_messages(rabbitmq_url, q["pub"], FACADE_N, timeout=30)
        with BlockingClient.connect(f"amqp://127.0.0.1:{facade_port}", timeout=30) as app:
            app.subscribe("jobs", messages=None)
            jobs = [app.receive("jobs", timeout=30) for _ in range(FACADE_N)]
            app.accept(*jobs)
            connected = poll(lambda: scrape(port), lambda s: s.value(
                "amqp_bridge_facade_clients", listener="facade") == 1, 10, "1 façade client")
        wait_for(lambda: legacy_backlog(broker, "out") == 0
                 and legacy_backlog(broker, "strict") == 0, 30, "the 0-10 sources settled",
                 bridge)
        assert_no_message(rabbitmq_url, q["in"])
        assert_no_message(rabbitmq_url, q["sub"])
        expected: dict[str, dict[str, int]] = {
            "out": dict(received=N + UNMAPPABLE_OUT, delivered=N, dead_lettered=UNMAPPABLE_OUT,
                        mapping_errors=UNMAPPABLE_OUT, redelivered=REDELIVERED_OUT, rejected=0,
                        released=0, duplicates_suppressed=0),
            "strict-out": dict(received=3, delivered=2, rejected=1, mapping_errors=1,
                               dead_lettered=0, redelivered=0),
            "in": dict(received=N + UNMAPPABLE_IN + 1, delivered=N, dead_lettered=UNMAPPABLE_IN,
                       mapping_errors=UNMAPPABLE_IN, redelivered=REDELIVERED_IN,
                       duplicates_suppressed=1, rejected=0, released=0),
            "pub": dict(received=FACADE_N, delivered=FACADE_N, rejected=0, dead_lettered=0,
                        mapping_errors=0),
            "sub": dict(received=FACADE_N, delivered=FACADE_N, rejected=0, released=0,
                        mapping_errors=0),
        }

        def settled(s: Scrape) -> bool:
            return all(s.route(f"amqp_bridge_{k}_total", r) == v
                       for r, counts in expected.items() for k, v in counts.items()) \
                and all(s.route("amqp_bridge_in_flight", r) == 0 for r in expected)

        final = poll(lambda: scrape(port), settled, 30, "the expected counters")
        sent_total = (N + UNMAPPABLE_OUT + 3 + N + UNMAPPABLE_IN + 1 + 2 * FACADE_N)
    assert len(delivered_out) == N and len(dead_out) == UNMAPPABLE_OUT
    assert len(dead_in) == UNMAPPABLE_IN and len(published) == FACADE_N
    assert len(broker.queues["in-q"].messages) == N  # the duplicate was not forwarded
    assert len(broker.dead_letters) == 1  # strict-out's unmappable message, rejected
    for route, counts in expected.items():
        for counter, value in counts.items():
            assert final.route(f"amqp_bridge_{counter}_total", route) == value, (route, counter)
        assert final.route("amqp_bridge_latency_seconds_count", route) == counts["delivered"]
        assert final.value("amqp_bridge_latency_seconds_bucket", route=route, le="+Inf") \
            == counts["delivered"]
        assert final.route("amqp_bridge_latency_seconds_sum", route) > 0
        assert final.route("amqp_bridge_in_flight_bytes", route) == 0
        assert final.route("amqp_bridge_route_ready", route) == 1
    assert final.route("amqp_bridge_max_in_flight", "out") == 50
    assert final.route("amqp_bridge_credit", "out") > 0  # RabbitMQ's link credit
    assert final.route("amqp_bridge_credit", "in") > 0  # room in the 0-10 replay buffer
    for name, protocol in (("legacy", "amqp0-10"), ("cloud", "amqp1.0")):
        assert final.value("amqp_bridge_connection_up", connection=name, protocol=protocol) == 1
        assert final.value("amqp_bridge_reconnects_total", connection=name,
                           protocol=protocol) == 0
    for what in ("attach", "end"):  # exported before anything goes unanswered
        assert final.value("amqp_bridge_amqp10_unanswered_total", connection="cloud",
                           what=what) == 0
    assert connected.value("amqp_bridge_facade_clients", listener="facade") == 1
    assert final.value("amqp_bridge_facade_clients", listener="facade") == 0

    # the log: JSON lines only, state changes with their context, nothing per message
    lines = [line for line in bridge.log().splitlines() if line.strip()]
    docs = [orjson.loads(line) for line in lines]  # raises on any line that is not JSON
    by_event: dict[str, list[dict[str, Any]]] = {}
    for doc in docs:
        by_event.setdefault(doc.get("event", ""), []).append(doc)
    legacy_peer = f"{server.address[0]}:{server.address[1]}"
    [legacy_open] = [d for d in by_event["open"] if d["connection"] == "legacy"]
    [cloud_open] = [d for d in by_event["open"] if d["connection"] == "cloud"]
    assert legacy_open["peer"] == legacy_peer
    assert cloud_open["peer"] == rabbitmq_url.rsplit("@", 1)[-1]
    attached = {d["route"] for d in by_event["session_attached"]
                if d["connection"] == "legacy" and d["peer"] == legacy_peer}
    assert attached == {"out", "strict-out", "in"}
    links = {(d["route"], d["link"]) for d in by_event["link_attached"]
             if d["connection"] == "cloud" and d["peer"] == cloud_open["peer"]}
    assert {("out", "out.target"), ("out", "out.dead-letter"), ("in", "in.source"),
            ("pub", "pub.target")} <= links
    assert any(route == "sub" for route, _ in links)  # the subscriber's own link
    assert {d["route"] for d in by_event["route_ready"]} == set(expected)
    assert {d["peer"] for d in by_event["client_connected"]} and all(
        d["listener"] == "facade" for d in by_event["client_connected"])
    stats = {d["route"]: d for d in by_event["stats"]}
    assert stats["out"]["delivered"] == N and stats["in"]["duplicates_suppressed"] == 1
    # INFO is for state changes: each kind of line appears a handful of times, whatever the
    # number of messages (a per-message line would appear hundreds of times)
    info = Counter(d.get("event") for d in docs if d["level"] == "info")
    assert None not in info, "an INFO line without an event field"
    assert max(info.values()) < sent_total // 25, f"INFO lines by event for {sent_total} " \
                                                   f"messages: {info.most_common(5)}"
    assert not [d for d in docs if d["level"] == "debug"]
    text = "\n".join(lines)
    # the configuration's passwords (here "guest") are registered secrets: never in a line;
    # user names are shown, even one equal to a password (feccf12)
    assert ":guest@" not in text and f"guest:***@{legacy_peer}" in text
