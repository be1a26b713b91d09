"""A message over a route's size limit is refused at once — never retried, never blocking
the route (docs/semantics.md, route option ``max_message_size``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from amqp010.spec import DeliveryProperties, ErrorCode, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import (
    BridgeRun,
    bridge_config,
    collect,
    free_port,
    legacy_backlog,
    publish_legacy,
    wait_for,
    wait_listening,
)
from tests.support.logs import route_stats
from tests.support.rabbitmq import queue_address, unique_queue

LIMIT = 10_000


def test_oversized_messages_are_refused_and_the_rest_move_on(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    out_q, facade_q = unique_queue("size-out"), unique_queue("size-facade")
    port = free_port()
    publish_legacy(server, "size-src", [
        (DeliveryProperties(), MessageProperties(message_id=uuid.UUID(int=i + 1)),
         (b"x" * 20_000) if i == 2 else f"small {i}".encode()) for i in range(5)])
    routes = f"""
  - name: size-out
    from: {{connection: legacy, queue: size-src}}
    to:   {{connection: cloud, address: {queue_address(out_q)}}}
    max_message_size: {LIMIT}
  - name: size-facade
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(facade_q)}}}
    max_message_size: {LIMIT}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
"""
    with BridgeRun(bridge_config(server.url, rabbitmq_url, routes), tmp_path) as bridge:
        wait_listening(port, bridge)
        # the 0-10 -> 1.0 route: the big one is rejected at the source, the others arrive
        got = collect(rabbitmq_url, queue_address(out_q), lambda got: len(got) >= 4,
                      timeout=30, linger=0.5)
        assert sorted(bytes(m.body) for m in got) == [f"small {i}".encode() for i in (0, 1, 3, 4)]
        wait_for(lambda: legacy_backlog(broker, "size-src") == 0, 20, "the source settled", bridge)
        assert [len(m.body) for m in broker.dead_letters] == [20_000]
        # the façade: the publisher hears why, at once
        with BlockingClient.connect(f"amqp://127.0.0.1:{port}") as client:
            client.publish(b"fits", exchange="events", wait=True)
            with pytest.raises(ClientError) as refused:
                client.publish(b"y" * 20_000, exchange="events", wait=True)
        error = refused.value.event
        assert error.error_code == ErrorCode.RESOURCE_LIMIT_EXCEEDED
        assert "exceeds the route's max_message_size (10000 octets)" in error.description
        [fits] = collect(rabbitmq_url, queue_address(facade_q), lambda got: len(got) >= 1,
                         timeout=30, linger=0.5)
        assert bytes(fits.body) == b"fits"
        assert bridge.stop() == 0, bridge.log()
    for route in ("size-out", "size-facade"):
        stats = route_stats(bridge.log(), route)
        assert stats["oversized"] == 1 and stats["rejected"] == 1, stats
