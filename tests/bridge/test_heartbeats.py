"""Heartbeats on a running bridge: legacy connections and façade clients that stay idle
for several heartbeat intervals keep the process (and every route) alive.

Regression for "Real peers, real time" item 1: the first expired heartbeat deadline of
a hosted 0-10 socket reached proton's IO handler, which crashed the whole bridge.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from proton import Message

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import (
    BridgeRun,
    free_port,
    legacy_client,
    publish_legacy,
    wait_listening,
)
from tests.support.logs import records
from tests.support.metrics import metrics_port, poll, scrape
from tests.support.rabbitmq import queue_address, receive_messages, send_messages, unique_queue

HEARTBEAT = 1
IDLE = 3.5 * HEARTBEAT
"""More than three heartbeat intervals."""


def test_idle_heartbeating_connections_keep_the_bridge_and_its_routes_alive(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    _, server = legacy
    out_q, in_q, facade_q = (unique_queue(n) for n in ("hb-out", "hb-in", "hb-facade"))
    port = free_port()
    with legacy_client(server) as admin:
        admin.declare_queue("hb-replies")
        admin.bind("hb-replies", "amq.direct", "hb")
    config = f"""
connections:
  legacy:
    protocol: amqp0-10
    url: "{server.url}"
    heartbeat: {HEARTBEAT}
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}", heartbeat: 2}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
routes:
  - name: out
    from: {{connection: legacy, queue: hb-orders}}
    to:   {{connection: cloud, address: {queue_address(out_q)}}}
  - name: in
    from: {{connection: cloud, address: {queue_address(in_q)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: hb}}
  - name: facade-out
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(facade_q)}}}
"""
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)
        # a façade client that asks for heartbeats and then says nothing for a while
        client = BlockingClient.connect(f"amqp://127.0.0.1:{port}", heartbeat=HEARTBEAT)
        try:
            client.idle(IDLE)
            assert bridge.proc is not None and bridge.proc.poll() is None, bridge.log()
            # every connection is still up and every route still moves messages
            client.publish(b"after idle", exchange="events", wait=True)
            publish_legacy(server, "hb-orders", [(DeliveryProperties(), MessageProperties(
                message_id=uuid.uuid4()), b"legacy after idle")])
            send_messages(rabbitmq_url, queue_address(in_q), [Message(body="1.0 after idle")])
            got = receive_messages(rabbitmq_url, queue_address(facade_q), 1, timeout=20)
            assert [bytes(r.message.body) for r in got] == [b"after idle"]
            got = receive_messages(rabbitmq_url, queue_address(out_q), 1, timeout=20)
            assert [bytes(r.message.body) for r in got] == [b"legacy after idle"]
            with legacy_client(server) as reader:
                reader.subscribe("hb-replies")
                assert reader.receive("hb-replies", timeout=20).body == b"1.0 after idle"
        finally:
            client.close()
        assert bridge.proc.poll() is None, bridge.log()
        assert "crashed" not in bridge.log()
        assert bridge.stop() == 0, bridge.log()


def test_a_silent_facade_client_is_closed_with_a_warning_and_counted(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """A façade client that stops sending (its process stalled: no heartbeat for more
    than two intervals) is closed by the bridge — which says so at WARNING with the
    reason and counts it in ``amqp_bridge_facade_ended_total`` (issue 20: a connection or
    session the bridge ends must never go unexplained)."""
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
metrics: {{bind: "127.0.0.1:0"}}
routes:
  - name: facade-out
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(unique_queue("hb-silent"))}}}
"""
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)
        mport = metrics_port(bridge.log)
        client = BlockingClient.connect(f"amqp://127.0.0.1:{port}", heartbeat=HEARTBEAT)
        try:
            time.sleep(IDLE)  # not pumping: no heartbeat goes out
            with pytest.raises(ClientError):
                client.idle(1.0)  # the bridge closed the connection meanwhile
        finally:
            client.close()
        ended = poll(lambda: scrape(mport).value("amqp_bridge_facade_ended_total",
                                                 listener="app", reason="heartbeat_timeout"),
                     lambda n: n == 1, 10, "the silent client counted")
        assert ended == 1
        warnings = [r for r in records(bridge.log()) if r.get("event") == "client_silent"]
        assert [(r["level"], r["reason"]) for r in warnings] == [("warning", "heartbeat_timeout")]
        assert "more than twice the heartbeat of 1s" in warnings[0]["error"]
        assert bridge.stop() == 0, bridge.log()
