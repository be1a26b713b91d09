"""AMQP 0-9-1 routes end to end: RabbitMQ as the 0-9-1 broker (pika as the independent
0-9-1 client around the bridge), RabbitMQ's AMQP 1.0 side (proton) on the other, and
``amqp-bridge run`` as a subprocess in between."""

from __future__ import annotations

import contextlib
import datetime as dt
import uuid
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pika
import pytest
from pamqp.commands import Basic
from proton import Message, int32, symbol

from mappings.amqp091 import A_HEADERS, Delivery091, to_amqp10
from mappings.message import AmqpMessage
from tests.engine091.driver import EngineClient
from tests.engine091.test_tables_rabbitmq import HEADERS as TYPED_HEADERS
from tests.engine091.test_tables_rabbitmq import PROTON_TYPES
from tests.support.bridge import BridgeRun, collect, config091, wait_for
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    rabbitmq_routing,
    receive_messages,
    send_messages,
    unique_queue,
)

# RabbitMQ 3.10 coverage: every test here runs against both nodes (docs/testing.md)
pytestmark = pytest.mark.rabbitmq(3, 4)


WHEN = dt.datetime(2021, 5, 6, 7, 8, 9, tzinfo=dt.UTC)


@contextlib.contextmanager
def pika_channel(url: str) -> Iterator[Any]:
    """A pika channel on its own blocking connection."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        yield connection.channel()
    finally:
        with contextlib.suppress(Exception):
            connection.close()


def declare(url: str, queue: str, **arguments: Any) -> None:
    with pika_channel(url) as ch:
        ch.queue_declare(queue, arguments={"x-expires": 600_000, **arguments})


def depth(url: str, queue: str) -> int:
    with pika_channel(url) as ch:
        return int(ch.queue_declare(queue, passive=True).method.message_count)


def pika_get_all(url: str, queue: str, count: int, timeout: float = 20) -> list[tuple[Any, Any, bytes]]:
    """Take ``count`` messages from ``queue`` with pika (acking them)."""
    got: list[tuple[Any, Any, bytes]] = []
    with pika_channel(url) as ch:
        def more() -> bool:
            while len(got) < count:
                method, props, body = ch.basic_get(queue, auto_ack=True)
                if method is None:
                    return False
                got.append((method, props, body))
            return True
        wait_for(more, timeout, f"{count} messages on {queue} (got {len(got)})")
    return got


def pika_headers(i: int) -> dict[str, Any]:
    return {"seq": i, "neg": -i - 1, "big": -(2**40) - i, "dec": Decimal("-1.25"),
            "when": WHEN, "bytes": b"\x00\xff", "flag": i % 2 == 0, "none": None,
            "table": {"a": {"b": [1, "x", {"c": -3}]}}, "array": [i, "y"],
            "text": "välue"}


def pika_properties(i: int) -> dict[str, Any]:
    return dict(content_type="text/plain", content_encoding="utf-8", delivery_mode=2,
                priority=i % 10, correlation_id=f"c-{i}", reply_to="replies",
                expiration="600000", message_id=f"m-{i}", user_id="guest", app_id="shop")


def as_pika_sends(value: Any) -> Any:
    """The typed value pika puts on the wire (ints: I when they fit 32 bits, else l)."""
    if type(value) is int:
        return int32(value) if -(2**31) <= value < 2**31 else value
    if isinstance(value, dict):
        return {key: as_pika_sends(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_pika_sends(item) for item in value]
    return value


def test_091_queue_to_amqp10_keeps_every_property_and_header_type_in_order(
        rabbitmq_url: str, tmp_path: Path) -> None:
    source, target = unique_queue("r091-src"), unique_queue("r091-dst")
    declare(rabbitmq_url, source)
    count = 300
    with pika_channel(rabbitmq_url) as ch:
        for i in range(count):
            ch.basic_publish("", source, f"body {i}".encode(), pika.BasicProperties(
                timestamp=1_600_000_000 + i, type="order", headers=pika_headers(i),
                **pika_properties(i)))
    # a last message with the header types pika cannot write (floats, every width)
    client = EngineClient(rabbitmq_url, field_types=PROTON_TYPES)
    try:
        ch_number = client.conn.open_channel()
        client.wait_for(lambda e: getattr(e, "channel", None) == ch_number)
        client.conn.publish(ch_number, "", source, b"typed",
                            Basic.Properties(headers=TYPED_HEADERS, message_id="typed"))
        client.pump(0.2)
    finally:
        client.close()
    route = f"""
  - name: r091-out
    from: {{connection: rabbit, queue: {source}}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    max_in_flight: {{messages: 40}}
"""
    with BridgeRun(config091(rabbitmq_url, route), tmp_path) as bridge:
        received = receive_messages(rabbitmq_url, queue_address(target), count + 1, timeout=60)
        wait_for(lambda: depth(rabbitmq_url, source) == 0, 10, "the source acked", bridge)
    broker_routing = rabbitmq_routing(rabbitmq_url, queue_address(target), ("", None))
    for i, r in enumerate(received[:count]):  # order kept, the mapping applied
        m = r.message
        expected = to_amqp10(
            Basic.Properties(timestamp=dt.datetime.fromtimestamp(1_600_000_000 + i, dt.UTC),
                             message_type="order", headers=as_pika_sends(pika_headers(i)),
                             **pika_properties(i)),
            Delivery091("", source, False), f"body {i}".encode(), login_user="guest")
        assert bytes(m.body) == f"body {i}".encode()
        assert m.id == f"m-{i}" and m.correlation_id == f"c-{i}"
        assert (m.durable, m.priority, m.ttl) == (True, i % 10, 600.0)
        assert m.content_type == "text/plain" and m.content_encoding == "utf-8"
        assert m.creation_time == 1_600_000_000 + i and m.reply_to == "replies"
        assert m.user_id == b"guest" and m.group_id == "shop"
        assert m.properties == expected.application_properties
        assert m.properties["neg"] == -i - 1 and m.properties["big"] == -(2**40) - i
        assert m.subject == source and "x-amqp-0-9-1.routing-key" not in m.annotations
        assert m.annotations["x-amqp-0-9-1.exchange"] == ""
        assert (m.annotations.get("x-exchange"), m.annotations.get("x-routing-key")) == broker_routing
        assert m.annotations[symbol("x-basic-type")] == "order"
        assert m.annotations[A_HEADERS] == expected.message_annotations[A_HEADERS]
    typed = AmqpMessage.decode(received[count].raw)
    expected = to_amqp10(Basic.Properties(headers=TYPED_HEADERS, message_id="typed"),
                         Delivery091("", source, False), b"typed")
    assert typed.application_properties == expected.application_properties
    for key, value in expected.application_properties.items():  # the types too
        assert type(typed.application_properties[key]) is type(value), key
    assert typed.message_annotations[A_HEADERS] == expected.message_annotations[A_HEADERS]


def test_amqp10_to_091_exchange_with_publisher_confirms(rabbitmq_url: str,
                                                        tmp_path: Path) -> None:
    source, bound = unique_queue("r091-in"), unique_queue("r091-bound")
    key = f"routes091.{uuid.uuid4()}"
    declare(rabbitmq_url, bound)
    with pika_channel(rabbitmq_url) as ch:
        ch.queue_bind(bound, "amq.direct", key)
    count = 200
    send_messages(rabbitmq_url, queue_address(source), [
        Message(body=f"reply {i}".encode(), inferred=True, id=f"r-{i}", correlation_id=f"c-{i}",
                content_type="text/plain", durable=True, priority=7, subject="ignored",
                properties={"n": i, "neg": int32(-5), "text": "välue"})
        for i in range(count)])
    route = f"""
  - name: r091-in
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: rabbit, exchange: amq.direct, routing_key: "{key}"}}
    max_in_flight: {{messages: 30}}
"""
    with BridgeRun(config091(rabbitmq_url, route), tmp_path):
        got = pika_get_all(rabbitmq_url, bound, count)
        # accepted at the 1.0 source only after RabbitMQ confirmed: nothing left there
        assert_no_message(rabbitmq_url, queue_address(source))
    for i, (method, props, body) in enumerate(got):
        assert body == f"reply {i}".encode()
        assert method.exchange == "amq.direct" and method.routing_key == key
        assert props.message_id == f"r-{i}" and props.correlation_id == f"c-{i}"
        assert props.content_type == "text/plain"
        assert props.delivery_mode == 2 and props.priority == 7
        assert props.headers["n"] == i and props.headers["neg"] == -5
        assert props.headers["text"] == "välue"
        assert props.headers["x-amqp-1.0.subject"] == "ignored"


# --- refusals ---------------------------------------------------------------------------


def amq_queue(name: str) -> str:
    """The 1.0 address of an existing queue (declared with pika, arguments and all)."""
    return f"/amq/queue/{name}"


def test_unroutable_and_nacked_publishes_are_rejected_or_dead_lettered(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """basic.return (no binding) and basic.nack (a full queue refusing publishes) reject
    the 1.0 delivery: RabbitMQ's own DLX of the 1.0 source queue shows the rejection; with
    the route's dead_letter the copy goes there and the source is accepted."""
    unroutable_src, unroutable_dlx = unique_queue("r091-unr"), unique_queue("r091-unr-dlx")
    dead_src, dead_letters = unique_queue("r091-dl"), unique_queue("r091-dl-copies")
    full_src, full_dlx, full = (unique_queue("r091-full-src"), unique_queue("r091-full-dlx"),
                                unique_queue("r091-full"))
    for queue in (unroutable_dlx, dead_letters, full_dlx):
        declare(rabbitmq_url, queue)
    declare(rabbitmq_url, unroutable_src, **{"x-dead-letter-exchange": "",
                                              "x-dead-letter-routing-key": unroutable_dlx})
    declare(rabbitmq_url, full_src, **{"x-dead-letter-exchange": "",
                                        "x-dead-letter-routing-key": full_dlx})
    declare(rabbitmq_url, dead_src)
    declare(rabbitmq_url, full, **{"x-max-length": 1, "x-overflow": "reject-publish"})
    nowhere = f"routes091.nowhere.{uuid.uuid4()}"
    for queue in (unroutable_src, dead_src):
        send_messages(rabbitmq_url, amq_queue(queue), [
            Message(body=f"lost {i}".encode(), inferred=True, id=f"u-{i}") for i in range(3)])
    send_messages(rabbitmq_url, amq_queue(full_src), [
        Message(body=f"full {i}".encode(), inferred=True, id=f"f-{i}") for i in range(3)])
    routes = f"""
  - name: r091-unroutable
    from: {{connection: cloud, address: {amq_queue(unroutable_src)}}}
    to:   {{connection: rabbit, exchange: amq.direct, routing_key: "{nowhere}"}}
  - name: r091-dead-letter
    from: {{connection: cloud, address: {amq_queue(dead_src)}}}
    to:   {{connection: rabbit, exchange: amq.direct, routing_key: "{nowhere}"}}
    dead_letter: {{connection: cloud, address: {amq_queue(dead_letters)}}}
  - name: r091-full
    from: {{connection: cloud, address: {amq_queue(full_src)}}}
    to:   {{connection: rabbit, queue: {full}}}
    max_in_flight: {{messages: 1}}
"""
    with BridgeRun(config091(rabbitmq_url, routes), tmp_path) as bridge:
        rejected = pika_get_all(rabbitmq_url, unroutable_dlx, 3)
        copies = receive_messages(rabbitmq_url, amq_queue(dead_letters), 3, timeout=20)
        nacked = pika_get_all(rabbitmq_url, full_dlx, 2)
        wait_for(lambda: depth(rabbitmq_url, dead_src) == 0, 10, "the dead-lettered accepted",
                 bridge)
        log = bridge.log()
    assert sorted(body for _, _, body in rejected) == [b"lost 0", b"lost 1", b"lost 2"]
    for _, props, _ in rejected:  # RabbitMQ dead-lettered them as rejected by the bridge
        assert props.headers["x-death"][0]["reason"] == "rejected"
    assert "312 NO_ROUTE" in log and "basic.nack" in log, log
    assert sorted(bytes(c.message.body) for c in copies) == [b"lost 0", b"lost 1", b"lost 2"]
    for c in copies:
        reason = c.message.annotations[symbol("x-amqp-bridge-dead-letter-reason")]
        assert "unroutable" in reason and "312 NO_ROUTE" in reason, reason
    assert depth(rabbitmq_url, full) == 1
    assert len({body for _, _, body in nacked}) == 2
    assert depth(rabbitmq_url, full_src) == 0 and depth(rabbitmq_url, unroutable_src) == 0


def test_091_messages_the_route_refuses_are_rejected_to_the_queues_dlx_or_dead_lettered(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """A message the route refuses (here: one it cannot map — a content-type that is not
    ASCII cannot be a 1.0 symbol — the same path as a 1.0 ``rejected`` outcome) is
    basic.reject(requeue=false): RabbitMQ's DLX of the source queue takes it. With
    dead_letter, a plain copy goes there and the source is acked."""
    plain_src, plain_dlx, plain_dst = (unique_queue("r091-rej"), unique_queue("r091-rej-dlx"),
                                       unique_queue("r091-rej-dst"))
    dl_src, dl_copies, dl_dst = (unique_queue("r091-dls"), unique_queue("r091-dls-copies"),
                                 unique_queue("r091-dls-dst"))
    for queue in (plain_dlx, dl_copies, plain_dst, dl_dst):
        declare(rabbitmq_url, queue)
    declare(rabbitmq_url, plain_src, **{"x-dead-letter-exchange": "",
                                         "x-dead-letter-routing-key": plain_dlx})
    declare(rabbitmq_url, dl_src)
    with pika_channel(rabbitmq_url) as ch:
        for queue in (plain_src, dl_src):
            for i in range(6):
                ch.basic_publish("", queue, f"m {i}".encode(), pika.BasicProperties(
                    message_id=f"s-{i}", content_type="tëxt/plain" if i % 3 == 1 else None))
    routes = f"""
  - name: r091-rejects
    from: {{connection: rabbit, queue: {plain_src}}}
    to:   {{connection: cloud, address: {amq_queue(plain_dst)}}}
  - name: r091-dead-letters
    from: {{connection: rabbit, queue: {dl_src}}}
    to:   {{connection: cloud, address: {amq_queue(dl_dst)}}}
    dead_letter: {{connection: cloud, address: {amq_queue(dl_copies)}}}
"""
    with BridgeRun(config091(rabbitmq_url, routes), tmp_path) as bridge:
        rejected = pika_get_all(rabbitmq_url, plain_dlx, 2)
        copies = receive_messages(rabbitmq_url, amq_queue(dl_copies), 2, timeout=20)
        passed = receive_messages(rabbitmq_url, amq_queue(plain_dst), 4, timeout=20)
        passed += receive_messages(rabbitmq_url, amq_queue(dl_dst), 4, timeout=20)
        wait_for(lambda: depth(rabbitmq_url, plain_src) + depth(rabbitmq_url, dl_src) == 0,
                 10, "both sources settled", bridge)
    assert sorted(props.message_id for _, props, _ in rejected) == ["s-1", "s-4"]
    assert all(props.headers["x-death"][0]["reason"] == "rejected" for _, props, _ in rejected)
    assert sorted(c.message.id for c in copies) == ["s-1", "s-4"]
    for c in copies:  # the copy keeps what the mapping could not: body and properties
        assert bytes(c.message.body) in (b"m 1", b"m 4")
        assert "tëxt/plain" in c.message.annotations[symbol("x-amqp-bridge-0-9-1-properties")]
        assert "cannot translate" in c.message.annotations[
            symbol("x-amqp-bridge-dead-letter-reason")]
    assert sorted(r.message.id for r in passed) == sorted(["s-0", "s-2", "s-3", "s-5"] * 2)


# --- CloudEvents ------------------------------------------------------------------------


def test_cloudevents_binary_and_structured_on_091_routes(rabbitmq_url: str,
                                                         tmp_path: Path) -> None:
    from cloudevents.core.bindings import amqp as ce_amqp
    from cloudevents.core.formats.json import JSONFormat

    from tests.mappings.sdk import to_sdk

    out_src, out_binary = unique_queue("r091-ce-src"), unique_queue("r091-ce-bin")
    in_src, in_structured = unique_queue("r091-ce-in"), unique_queue("r091-ce-struct")
    for queue in (out_src, out_binary, in_structured):
        declare(rabbitmq_url, queue)
    with pika_channel(rabbitmq_url) as ch:
        for i in range(3):
            ch.basic_publish("", out_src, f'{{"n": {i}}}'.encode(), pika.BasicProperties(
                message_id=f"ce-{i}", content_type="application/json",
                headers={"region": "emea"}))
    send_messages(rabbitmq_url, queue_address(in_src), [
        Message(body=f'{{"n": {i}}}'.encode(), inferred=True, id=f"ce-in-{i}",
                content_type="application/json", subject=f"order.{i}") for i in range(3)])
    routes = f"""
  - name: r091-ce-out
    from: {{connection: rabbit, queue: {out_src}}}
    to:   {{connection: cloud, address: {amq_queue(out_binary)}}}
    cloudevents: {{mode: binary, type: com.example.order, source: /rabbit/orders}}
  - name: r091-ce-in
    from: {{connection: cloud, address: {queue_address(in_src)}}}
    to:   {{connection: rabbit, queue: {in_structured}}}
    cloudevents: {{mode: structured, type: com.example.reply, source: /cloud/replies,
                   subject: "{{subject}}"}}
"""
    with BridgeRun(config091(rabbitmq_url, routes), tmp_path):
        binary = receive_messages(rabbitmq_url, amq_queue(out_binary), 3, timeout=20)
        structured = pika_get_all(rabbitmq_url, in_structured, 3)
    fmt = JSONFormat()
    for i, r in enumerate(binary):
        event = ce_amqp.from_amqp(to_sdk(AmqpMessage.decode(r.raw)), fmt)
        assert event.get_type() == "com.example.order"
        assert event.get_source() == "/rabbit/orders"
        assert event.get_id() == f"ce-{i}"
        assert r.message.properties["cloudEvents_type"] == "com.example.order"
        assert r.message.properties["region"] == "emea"
    for i, (_, props, body) in enumerate(structured):
        assert props.content_type.startswith("application/cloudevents+json")
        event = fmt.read(None, body)
        assert event.get_type() == "com.example.reply"
        assert event.get_source() == "/cloud/replies"
        assert event.get_id() == f"ce-in-{i}" and event.get_subject() == f"order.{i}"
        assert event.get_data() == {"n": i}


# --- recovery ---------------------------------------------------------------------------


def close_connections_named(url: str, name: str) -> int:
    """Force-close (rabbitmqctl close_connection) this test's bridge connections only."""
    from tests.support.rabbitmq import rabbitmqctl

    closed = 0
    for line in rabbitmqctl(url, "list_connections", "pid", "client_properties").splitlines():
        if f'"connection_name","{name}"' in line or f"connection_name,longstr,{name}" in line \
                or f'<<"connection_name">>,longstr,<<"{name}">>' in line:
            rabbitmqctl(url, "close_connection", line.split()[0], "routes091 test")
            closed += 1
    return closed


def test_091_source_survives_queue_deletion_and_a_forced_connection_close(
        rabbitmq_url: str, tmp_path: Path) -> None:
    source, target = unique_queue("r091-rec"), unique_queue("r091-rec-dst")
    declare(rabbitmq_url, source)
    declare(rabbitmq_url, target)
    name = f"rabbit-{uuid.uuid4().hex[:12]}"
    routes = f"""
  - name: r091-recover
    from: {{connection: {name}, queue: {source}}}
    to:   {{connection: cloud, address: {amq_queue(target)}}}
    max_in_flight: {{messages: 20}}
"""
    text = config091(rabbitmq_url, routes, legacy=name)

    def publish(first: int, count: int) -> None:
        with pika_channel(rabbitmq_url) as ch:
            for i in range(first, first + count):
                ch.basic_publish("", source, f"n {i}".encode(),
                                 pika.BasicProperties(message_id=f"n-{i}", delivery_mode=2))

    got: list[str] = []
    with BridgeRun(text, tmp_path) as bridge:
        publish(0, 50)
        got += [r.message.id for r in receive_messages(rabbitmq_url, amq_queue(target), 50,
                                                         timeout=20)]
        with pika_channel(rabbitmq_url) as ch:  # the broker cancels the bridge's consumer
            ch.queue_delete(source)
        wait_for(lambda: "consumer_cancelled" in bridge.log(), 10, "the cancel logged", bridge)
        declare(rabbitmq_url, source)
        publish(50, 50)
        got += [r.message.id for r in receive_messages(rabbitmq_url, amq_queue(target), 50,
                                                         timeout=30)]
        # the 0-9-1 connection force-closed mid-stream: reconnect, nothing lost
        publish(100, 200)
        wait_for(lambda: close_connections_named(rabbitmq_url, name) > 0, 10,
                 "the bridge's 0-9-1 connection closed", bridge)
        wait_for(lambda: bridge.log().count("event=open connection=" + name) >= 2, 20,
                 "a reconnect", bridge)
        wanted = {f"n-{i}" for i in range(300)}
        got += [m.id for m in collect(rabbitmq_url, amq_queue(target),
                                      lambda ms: set(got) | {m.id for m in ms} >= wanted,
                                      linger=0.5, timeout=40)]
        wait_for(lambda: depth(rabbitmq_url, source) == 0, 10, "the source acked", bridge)
    assert set(got) == {f"n-{i}" for i in range(300)}  # at least once: every id
