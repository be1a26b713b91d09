"""Metrics of 0-9-1 routes in a real run: RabbitMQ on both sides (0-9-1 and 1.0), known
numbers of good, unmappable and unroutable messages each way; ``/metrics`` scraped over
HTTP must count exactly those, show the 0-9-1 connection up with its protocol, and one
open channel per route."""

from __future__ import annotations

from pathlib import Path

import pika
from proton import Message

from tests.bridge.test_routes091 import (
    amq_queue,
    declare,
    depth,
    pika_channel,
    pika_get_all,
)
from tests.support.bridge import BridgeRun, config091
from tests.support.metrics import metrics_port, poll, scrape
from tests.support.rabbitmq import send_messages, unique_queue

GOOD_OUT, UNMAPPABLE_OUT = 20, 2
GOOD_IN, UNROUTABLE_IN = 15, 3


def test_091_route_counters_connection_and_channels(rabbitmq_url: str,
                                                    tmp_path: Path) -> None:
    out_src, out_dlx, out_dst = (unique_queue("m091-out"), unique_queue("m091-out-dlx"),
                                 unique_queue("m091-out-dst"))
    in_src, in_bound = unique_queue("m091-in"), unique_queue("m091-in-bound")
    for queue in (out_dlx, out_dst, in_bound):
        declare(rabbitmq_url, queue)
    declare(rabbitmq_url, out_src, **{"x-dead-letter-exchange": "",
                                      "x-dead-letter-routing-key": out_dlx})
    key, nowhere = f"m091.{in_bound}", f"m091.nowhere.{in_bound}"
    with pika_channel(rabbitmq_url) as ch:
        ch.queue_bind(in_bound, "amq.direct", key)
        for i in range(GOOD_OUT + UNMAPPABLE_OUT):  # a non-ASCII content-type: unmappable
            ch.basic_publish("", out_src, f"m {i}".encode(), pika.BasicProperties(
                message_id=f"m-{i}", content_type="tëxt/plain" if i < UNMAPPABLE_OUT else None))
    send_messages(rabbitmq_url, f"/queue/{in_src}", [
        Message(body=f"r {i}".encode(), inferred=True, id=f"r-{i}",
                subject=nowhere if i < UNROUTABLE_IN else key)
        for i in range(GOOD_IN + UNROUTABLE_IN)])
    routes = f"""
  - name: m091-out
    from: {{connection: rabbit, queue: {out_src}}}
    to:   {{connection: cloud, address: {amq_queue(out_dst)}}}
  - name: m091-in
    from: {{connection: cloud, address: /queue/{in_src}}}
    to:   {{connection: rabbit, exchange: amq.direct}}
metrics: {{bind: "127.0.0.1:0"}}
"""
    expected = {
        "m091-out": {"received": GOOD_OUT + UNMAPPABLE_OUT, "delivered": GOOD_OUT,
                     "rejected": UNMAPPABLE_OUT, "mapping_errors": UNMAPPABLE_OUT,
                     "dead_lettered": 0},
        "m091-in": {"received": GOOD_IN + UNROUTABLE_IN, "delivered": GOOD_IN,
                    "rejected": UNROUTABLE_IN, "mapping_errors": 0, "dead_lettered": 0},
    }
    with BridgeRun(config091(rabbitmq_url, routes), tmp_path) as bridge:
        port = metrics_port(bridge.log)
        pika_get_all(rabbitmq_url, out_dlx, UNMAPPABLE_OUT)
        pika_get_all(rabbitmq_url, in_bound, GOOD_IN)

        def settled(s: object) -> bool:
            return all(s.route(f"amqp_bridge_{k}_total", r) == v  # type: ignore[attr-defined]
                       for r, counts in expected.items() for k, v in counts.items()) \
                and all(s.route("amqp_bridge_in_flight", r) == 0  # type: ignore[attr-defined]
                        for r in expected)

        final = poll(lambda: scrape(port), settled, 20, "the counters")
        assert depth(rabbitmq_url, out_src) == 0
    assert final.value("amqp_bridge_connection_up", connection="rabbit",
                       protocol="amqp0-9-1") == 1
    assert final.value("amqp_bridge_reconnects_total", connection="rabbit",
                       protocol="amqp0-9-1") == 0
    assert final.value("amqp_bridge_legacy_sessions", connection="rabbit") == 2  # a channel each
    for route, counts in expected.items():
        assert final.route("amqp_bridge_latency_seconds_count", route) == counts["delivered"]
        assert final.route("amqp_bridge_route_ready", route) == 1
        assert final.route("amqp_bridge_in_flight_bytes", route) == 0
