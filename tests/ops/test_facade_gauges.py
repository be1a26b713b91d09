"""The façade-consume route's gauges tell the truth: a subscriber holding messages it has
not accepted shows as in flight (so the documented "window full" and "stuck" alerts can
fire), and the credit gauge is the subscribers' 0-10 credit."""

from __future__ import annotations

from pathlib import Path

from proton import Message

from amqp010.transport import BlockingClient
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.metrics import poll, scrape
from tests.support.rabbitmq import queue_address, send_messages, unique_queue

HELD = 120


def test_unaccepted_messages_of_a_subscriber_are_in_flight(rabbitmq_url: str,
                                                           tmp_path: Path) -> None:
    port, metrics = free_port(), free_port()
    jobs = unique_queue("gauges")
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
metrics: {{bind: "127.0.0.1:{metrics}"}}
routes:
  - name: jobs
    from: {{connection: cloud, address: {queue_address(jobs)}}}
    to:   {{listener: app, queue: jobs}}
    max_in_flight: {{messages: 500}}
"""
    send_messages(rabbitmq_url, queue_address(jobs), [Message(body=f"j{i}") for i in range(HELD)])
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)
        with BlockingClient.connect(f"amqp://127.0.0.1:{port}") as client:
            client.subscribe("jobs", messages=200)
            taken = [client.receive("jobs", timeout=30) for _ in range(HELD)]
            held = poll(lambda: scrape(metrics), lambda s: s.value(
                "amqp_bridge_in_flight", route="jobs") == HELD, 20, "the held messages")
            assert held.value("amqp_bridge_in_flight_bytes", route="jobs") == sum(
                len(m.body) for m in taken)
            assert held.value("amqp_bridge_credit", route="jobs") == 200 - HELD
            client.accept(*taken)
            done = poll(lambda: scrape(metrics), lambda s: s.value(
                "amqp_bridge_in_flight", route="jobs") == 0, 20, "the accepts")
            assert done.value("amqp_bridge_delivered_total", route="jobs") == HELD
        assert bridge.stop() == 0, bridge.log()
