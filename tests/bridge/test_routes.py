"""The bridge process end to end: a 0-10 broker (our engine's server role hosting the
in-memory broker model) on one side, the real RabbitMQ on the other, and
``amqp-bridge run`` as a subprocess in between."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from proton import Message, symbol

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from tests.support.bridge import BridgeRun, bridge_config, legacy_client
from tests.support.rabbitmq import queue_address, receive_messages, send_messages, unique_queue

# RabbitMQ 3.10 coverage: every test here runs against both nodes (docs/testing.md)
pytestmark = pytest.mark.rabbitmq(3, 4)


def test_legacy_queue_to_amqp10_address_with_cloudevents(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    target = unique_queue("orders")
    count = 200
    with legacy_client(server) as client:
        client.declare_queue("orders")
        for i in range(count):
            client.publish(
                f'{{"n": {i}}}'.encode(), routing_key="orders",
                delivery=DeliveryProperties(priority=5, delivery_mode=2, routing_key="orders"),
                properties=MessageProperties(
                    message_id=uuid.UUID(int=i + 1), content_type="application/json",
                    application_headers={"seq": i, "region": "emea"}),
                wait=(i == count - 1))
    route = f"""
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    cloudevents: {{mode: binary, type: com.example.order, source: /legacy/orders}}
    max_in_flight: {{messages: 50}}
"""
    proc = BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path).start()
    try:
        received = receive_messages(rabbitmq_url, queue_address(target), count, timeout=30)
    finally:
        exit_status = proc.stop()
    assert len(received) == count, proc.log()
    assert exit_status == 0, proc.log()
    for i, r in enumerate(received):  # order preserved, every field mapped
        m = r.message
        assert m.body == f'{{"n": {i}}}'.encode() or bytes(m.body) == f'{{"n": {i}}}'.encode()
        assert m.id == uuid.UUID(int=i + 1)
        assert m.priority == 5 and m.durable is True
        assert m.subject == "orders"
        assert m.properties["seq"] == i and m.properties["region"] == "emea"
        assert m.properties["cloudEvents_specversion"] == "1.0"
        assert m.properties["cloudEvents_type"] == "com.example.order"
        assert m.properties["cloudEvents_source"] == "/legacy/orders"
        assert m.properties["cloudEvents_id"] == str(uuid.UUID(int=i + 1))
        assert m.annotations[symbol("x-amqp-0-10.routing-key")] == "orders"
    # every source message was accepted only after RabbitMQ took it: the queue is empty
    assert broker.queue("orders").messages == type(broker.queue("orders").messages)()


def test_amqp10_address_to_legacy_exchange(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    _, server = legacy
    source = unique_queue("replies")
    count = 100
    with legacy_client(server) as client:
        client.declare_queue("replies-q")
        client.bind("replies-q", "amq.direct", "replies")
        send_messages(rabbitmq_url, queue_address(source), [
            Message(body=f"reply {i}", id=f"r-{i}", correlation_id=f"c-{i}",
                    properties={"n": i}, subject="ignored") for i in range(count)])
        route = f"""
  - name: replies-in
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: replies}}
"""
        proc = BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path).start()
        try:
            client.subscribe("replies-q", messages=count)
            got = []
            deadline = time.monotonic() + 30
            while len(got) < count and time.monotonic() < deadline:
                got.append(client.receive("replies-q", timeout=30))
            client.accept(*got)
        finally:
            exit_status = proc.stop()
    assert len(got) == count, proc.log()
    assert exit_status == 0, proc.log()
    for i, ev in enumerate(got):
        assert ev.body == f"reply {i}".encode()
        assert ev.delivery_properties.routing_key == "replies"
        assert ev.message_properties.correlation_id == f"c-{i}".encode()
        assert ev.message_properties.application_headers["n"] == i
    # the 1.0 source was settled (accepted) only after the 0-10 broker completed: empty now
    from tests.support.rabbitmq import assert_no_message

    assert_no_message(rabbitmq_url, queue_address(source))
