"""RabbitMQ 4.0 (``scripts/rabbitmq4``), the release users run today, beside the 3.10 node.

The node is the project's own private one (``rabbitmq4_url``, installed and started if
needed, never skipped). These tests prove it is 4.0 and not the 3.10 node, that AMQP 1.0
is native there (no plugin is enabled) with the v2 addresses ``/queues/NAME``, and that a
real ``amqp-bridge run`` moves messages between its 0-9-1 queues and its 1.0 side, both ways.
"""

from __future__ import annotations

from pathlib import Path

import pika
import pytest
from proton import Message

from tests.bridge.test_routes091 import declare, depth, pika_channel, pika_get_all
from tests.support.bridge import BridgeRun, config091, wait_for
from tests.support.rabbitmq import (
    existing_queue_address,
    queue_address,
    receive_messages,
    send_messages,
    unique_queue,
    version_in_use,
    version_of,
)


def server_properties(url: str) -> dict[str, object]:
    """What the broker says of itself in connection.start (0-9-1), as text."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        props = connection._impl.server_properties  # pika keeps them on the connection
    finally:
        connection.close()
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in props.items()}


def queues_address(name: str) -> str:
    """RabbitMQ 4's v2 address of the existing queue ``name``."""
    return f"/queues/{name}"


@pytest.mark.rabbitmq(3)  # rabbitmq_url: the 3.10 node, whatever the default
def test_the_node_is_rabbitmq_4_0_beside_3_10(rabbitmq4_url: str, rabbitmq_url: str) -> None:
    """The 4.0 node says so over 0-9-1, on a port of its own; the 3.10 node is still 3.10."""
    mine = server_properties(rabbitmq4_url)
    assert mine["product"] == "RabbitMQ"
    assert str(mine["version"]).startswith("4.0."), mine
    assert rabbitmq4_url != rabbitmq_url
    assert str(server_properties(rabbitmq_url)["version"]).startswith("3.10."), rabbitmq_url


@pytest.mark.rabbitmq(3, 4)
def test_a_test_marked_for_both_versions_runs_against_each_with_its_addresses(
        rabbitmq_url: str, request: pytest.FixtureRequest) -> None:
    """``rabbitmq(3, 4)`` runs a test once per node (tests/conftest.py): the URL is that
    version's node and the address helpers give its forms, which work there."""
    version = request.node.callspec.params["rabbitmq_url"]
    assert version_of(rabbitmq_url) == version_in_use() == version
    assert str(server_properties(rabbitmq_url)["version"]).startswith(f"{version}.")
    queue = unique_queue("both")
    address = queue_address(queue)
    assert address == {3: f"/queue/{queue}", 4: f"/queues/{queue}"}[version]
    assert existing_queue_address(queue) == {3: f"/amq/queue/{queue}", 4: address}[version]
    assert [o.state for o in send_messages(rabbitmq_url, address, [Message(body=b"x")])] == \
        ["accepted"]
    assert depth(rabbitmq_url, queue) == 1


def test_amqp10_sends_to_and_receives_from_queues_addresses(rabbitmq4_url: str) -> None:
    """A proton client sends to and receives from ``/queues/NAME`` of a queue declared
    with pika (no AMQP 1.0 plugin: it is native in 4.0), taking exactly the credit it
    granted; a 0-9-1 consumer gets the rest, a data section's bytes as the body."""
    queue = unique_queue("rmq4-amqp10")
    declare(rabbitmq4_url, queue)
    sent = [Message(id=f"m-{i}", body=f"body {i}".encode(), properties={"n": i}, inferred=True)
            for i in range(6)]
    outcomes = send_messages(rabbitmq4_url, queues_address(queue), sent)
    assert [o.state for o in outcomes] == ["accepted"] * 6
    got = receive_messages(rabbitmq4_url, queues_address(queue), 3)
    assert [(r.message.id, r.message.body, r.message.properties) for r in got] == [
        (f"m-{i}", f"body {i}".encode(), {"n": i}) for i in range(3)]
    rest = pika_get_all(rabbitmq4_url, queue, 3)
    assert [(props.message_id, body) for _, props, body in rest] == [
        (f"m-{i}", f"body {i}".encode()) for i in range(3, 6)]
    assert depth(rabbitmq4_url, queue) == 0


def test_bridge_routes_a_091_queue_to_a_queues_address(rabbitmq4_url: str, tmp_path: Path) -> None:
    """``amqp-bridge run`` with a 0-9-1 source on a RabbitMQ 4.0 queue and the 1.0 target
    ``/queues/DST`` on the same node: every message arrives once, in order, with its id,
    content type, headers and body, and the source queue ends empty (acknowledged)."""
    source, target = unique_queue("rmq4-src"), unique_queue("rmq4-dst")
    declare(rabbitmq4_url, source)
    declare(rabbitmq4_url, target)
    count = 20
    with pika_channel(rabbitmq4_url) as ch:
        for i in range(count):
            ch.basic_publish("", source, f"payload {i}".encode(), pika.BasicProperties(
                message_id=f"r4-{i}", content_type="text/plain", delivery_mode=2,
                headers={"seq": i, "origin": "pika"}))
    routes = f"""
  - name: rmq4-091-to-10
    from: {{connection: rabbit, queue: {source}}}
    to:   {{connection: cloud, address: {queues_address(target)}}}
"""
    with BridgeRun(config091(rabbitmq4_url, routes), tmp_path) as bridge:
        got = receive_messages(rabbitmq4_url, queues_address(target), count, timeout=30)
        wait_for(lambda: depth(rabbitmq4_url, source) == 0, 20, "the source acknowledged",
                 bridge)
    assert [r.message.id for r in got] == [f"r4-{i}" for i in range(count)]
    assert [r.message.body for r in got] == [f"payload {i}".encode() for i in range(count)]
    assert {r.message.content_type for r in got} == {"text/plain"}
    assert [(r.message.properties["seq"], r.message.properties["origin"]) for r in got] == [
        (i, "pika") for i in range(count)]


def test_bridge_routes_a_queues_address_to_a_091_queue(rabbitmq4_url: str, tmp_path: Path) -> None:
    """The other way on the same node: the bridge's 1.0 receiver on ``/queues/SRC`` (a
    credit window of 5) feeds a 0-9-1 target through the default exchange. Every message
    arrives once, in order, with its id and body, and SRC ends empty: each was accepted
    after RabbitMQ confirmed the publish."""
    source, target = unique_queue("rmq4-in"), unique_queue("rmq4-in-dst")
    declare(rabbitmq4_url, source)
    declare(rabbitmq4_url, target)
    count = 40
    outcomes = send_messages(rabbitmq4_url, queues_address(source), [
        Message(id=f"in-{i}", body=f"in {i}".encode(), inferred=True, properties={"n": i})
        for i in range(count)])
    assert {o.state for o in outcomes} == {"accepted"}
    routes = f"""
  - name: rmq4-10-to-091
    from: {{connection: cloud, address: {queues_address(source)}}}
    to:   {{connection: rabbit, exchange: "", routing_key: {target}}}
    max_in_flight: {{messages: 5}}
"""
    with BridgeRun(config091(rabbitmq4_url, routes), tmp_path) as bridge:
        got = pika_get_all(rabbitmq4_url, target, count, timeout=30)
        wait_for(lambda: depth(rabbitmq4_url, source) == 0, 20, "the source accepted", bridge)
    assert [(props.message_id, body) for _, props, body in got] == [
        (f"in-{i}", f"in {i}".encode()) for i in range(count)]
    assert [props.headers["n"] for _, props, _ in got] == list(range(count))
