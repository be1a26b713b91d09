"""Issue 14's acceptance for the 0-9-1 routes, end to end: ``amqp-bridge run`` as a
subprocess between RabbitMQ's AMQP 0-9-1 and its AMQP 1.0 (the same node).

- 10,000 messages 0-9-1 → 1.0 with every basic property and every header field type
  (published by our engine, which can write every width; RabbitMQ stores them as
  sent), checked on the 1.0 side, order kept, CloudEvents binary attributes added;
- 10,000 messages 1.0 → 0-9-1 with every 1.0 property and application-property type,
  read by pika (an independent 0-9-1 client), order kept;
- at-least-once across ``kill -9`` of the bridge mid-stream, both directions: every
  message arrives, duplicates at most ``max_in_flight``.
"""

from __future__ import annotations

import datetime
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pika
import pytest
from pamqp import commands as C
from proton import (
    Message,
    byte,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)

from amqp091.events import MessageReceived, MethodReceived, PublishConfirmed
from mappings.message import AmqpMessage, BodyKind
from tests.engine091.driver import EngineClient
from tests.engine091.test_tables_rabbitmq import PROTON_TYPES
from tests.support.bridge import BridgeRun, config091
from tests.support.logs import route_stats
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    rabbitmq_routing,
    receive_messages,
    send_messages,
    unique_queue,
    version_of,
)
from tests.support.typed import typed_value

COUNT = 10_000
WINDOW = 500
CREATED = 1_764_000_000  # seconds
HEADER_TYPES = symbol("x-amqp-0-9-1.header-types")
NESTED = symbol("x-amqp-0-9-1.headers")


@pytest.fixture
def pika_channel(rabbitmq_url: str) -> Iterator[Any]:
    with pika.BlockingConnection(pika.URLParameters(rabbitmq_url)) as conn:
        yield conn.channel()


def queued(channel: Any, queue: str) -> int:
    """Messages ready in ``queue`` (not counting those delivered and unacknowledged)."""
    return int(channel.queue_declare(queue, passive=True).method.message_count)


def wait_until(condition: Callable[[], bool], timeout: float, what: str,
               bridge: BridgeRun | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            tail = "" if bridge is None else "\n" + bridge.log()[-3000:]
            raise AssertionError(f"timed out after {timeout}s waiting for {what}{tail}")
        time.sleep(0.1)


# --- 0-9-1 -> 1.0 ---------------------------------------------------------------------------


def legacy_headers(i: int) -> dict[str, Any]:
    """Every 0-9-1 field type, the values varying with ``i``."""
    return {
        "seq": i, "neg": -(2 ** 40) - i, "short": short(-(i % 300)), "ushort": ushort(i % 65536),
        "byte": byte(-(i % 128)), "ubyte": ubyte(i % 256), "int32": int32(-i), "uint": uint(i),
        "f32": float32(0.5), "double": i / 4, "dec": Decimal(f"{i}.25"),
        "when": datetime.datetime.fromtimestamp(CREATED + i, datetime.UTC),
        "flag": i % 5 == 0, "text": f"héllo {i}", "bin": i.to_bytes(4, "big"), "none": None,
        "table": {"i": i, "deep": [short(1), {"x": "y"}]}, "array": [i, "a", None],
    }


def legacy_properties(i: int) -> C.Basic.Properties:
    return C.Basic.Properties(
        content_type="application/json", content_encoding="identity",
        headers=legacy_headers(i), delivery_mode=2 if i % 2 == 0 else 1, priority=i % 10,
        correlation_id=f"corr-{i}", reply_to=f"reply-{i % 7}", expiration="3600000",
        message_id=f"urn:uuid:{uuid.UUID(int=i + 1)}",
        timestamp=datetime.datetime.fromtimestamp(CREATED + i, datetime.UTC),
        message_type="order.created", user_id="guest", app_id="legacy-app")


def publish_091(url: str, queue: str, count: int,
                properties: Callable[[int], C.Basic.Properties]) -> None:
    """Declare ``queue`` and publish ``count`` messages to it in confirm mode (our engine:
    pika cannot write every field type)."""
    client = EngineClient(url, field_types=PROTON_TYPES)
    ch = client.conn.open_channel()
    client.wait_for(lambda e: getattr(e, "channel", None) == ch)
    client.conn.queue_declare(ch, queue)
    client.wait_for(lambda e: isinstance(e, MethodReceived)
                    and isinstance(e.method, C.Queue.DeclareOk))
    client.conn.confirm_select(ch)
    client.wait_for(lambda e: isinstance(e, MethodReceived)
                    and isinstance(e.method, C.Confirm.SelectOk))
    for i in range(count):
        client.conn.publish(ch, "", queue, f'{{"order": {i}}}'.encode(), properties(i))
        if i % 500 == 499:
            client.flush()
    client.flush()
    deadline = time.monotonic() + 60
    while client.conn.unconfirmed(ch):
        assert time.monotonic() < deadline, "RabbitMQ did not confirm every publish"
        client.pump(0.05)
        nacked = [e for e in client.take(PublishConfirmed)
                  if isinstance(e, PublishConfirmed) and not e.ack]
        assert not nacked, nacked
    client.close()


def test_10000_messages_091_to_amqp10_every_property_and_header_type(
        rabbitmq_url: str, tmp_path: Path) -> None:
    source, target = unique_queue("acc091-out"), unique_queue("acc091-out-t")
    publish_091(rabbitmq_url, source, COUNT, legacy_properties)
    route = f"""
  - name: orders-out
    from: {{connection: rabbit091, queue: {source}}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    cloudevents:
      mode: binary
      type: "com.example.{{routing_key}}"
      source: /legacy/orders
      subject: "order-{{property:seq}}"
      extensions: {{seq: seq, region: text}}
    max_in_flight: {{messages: {WINDOW}}}
"""
    with BridgeRun(config091(rabbitmq_url, route, legacy="rabbit091"), tmp_path) as bridge:
        received = receive_messages(rabbitmq_url, queue_address(target), COUNT, timeout=180)
    assert len(received) == COUNT
    rabbitmq3 = version_of(rabbitmq_url) == 3
    broker_routing = rabbitmq_routing(rabbitmq_url, queue_address(target), ("", None))
    for i, r in enumerate(received):  # in order, every field mapped
        m = AmqpMessage.decode(r.raw)
        assert m.body_kind is BodyKind.DATA and m.body == [f'{{"order": {i}}}'.encode()]
        h, p = m.header, m.properties
        assert h.durable is (i % 2 == 0) and h.priority == i % 10 and h.ttl == 3_600_000
        assert p.message_id == uuid.UUID(int=i + 1)
        assert p.correlation_id == f"corr-{i}" and p.reply_to == f"reply-{i % 7}"
        assert p.content_type == "application/json" and p.content_encoding == "identity"
        assert p.creation_time == (CREATED + i) * 1000  # seconds become milliseconds
        assert p.user_id == b"guest"  # binary in 1.0
        assert p.group_id == "legacy-app"
        ann = m.message_annotations
        # the key is the subject, the exchange in the bridge's annotation (and RabbitMQ's
        # x-exchange, which RabbitMQ 4 replaces with the routing it did itself)
        assert p.subject == source and ann[symbol("x-amqp-0-9-1.exchange")] == ""
        assert symbol("x-amqp-0-9-1.routing-key") not in ann
        assert (ann.get(symbol("x-exchange")), ann.get(symbol("x-routing-key"))) == broker_routing
        assert ann[symbol("x-basic-type")] == "order.created"
        assert ann[HEADER_TYPES] == {"dec": "decimal"}
        # RabbitMQ 4 re-encodes annotation maps, not always in their order (3.10 keeps it)
        assert typed_value(ann[NESTED], ordered=rabbitmq3) == typed_value(
            {"table": {"i": i, "deep": [short(1), {"x": "y"}]}, "array": [i, "a", None]},
            ordered=rabbitmq3)
        props = m.application_properties
        expected = {k: v for k, v in legacy_headers(i).items() if k not in ("table", "array")}
        expected["dec"] = f"{i}.25"
        expected["when"] = timestamp((CREATED + i) * 1000)
        assert typed_value({k: props[k] for k in expected}) == typed_value(expected)
        # CloudEvents binary mode: attributes as cloudEvents_* application properties
        assert props["cloudEvents_specversion"] == "1.0"
        assert props["cloudEvents_id"] == str(uuid.UUID(int=i + 1))  # the message-id
        assert props["cloudEvents_source"] == "/legacy/orders"
        assert props["cloudEvents_type"] == f"com.example.{source}"
        assert props["cloudEvents_subject"] == f"order-{i}"
        assert props["cloudEvents_time"] == timestamp((CREATED + i) * 1000)
        assert props["cloudEvents_seq"] == i and props["cloudEvents_region"] == f"héllo {i}"
    stats = route_stats(bridge.log(), "orders-out")
    assert stats["delivered"] == COUNT and stats["received"] == COUNT
    assert stats["peak_in_flight"] <= WINDOW


# --- 1.0 -> 0-9-1 ---------------------------------------------------------------------------


def cloud_message(i: int) -> Message:
    return Message(
        id=f"r-{i}", correlation_id=uuid.UUID(int=i), subject=f"reply {i}", durable=i % 2 == 0,
        priority=i % 10, content_type="text/plain", creation_time=CREATED + i,
        reply_to="/queue/elsewhere", group_id="g", group_sequence=i,
        properties={"n": i, "tag": symbol("s"), "big": ulong(2**40 + i), "flag": i % 2 == 1,
                    "b": byte(-1), "f": float32(1.5), "d": i / 4, "bin": b"\x00\x01",
                    "neg": -(2**40), "none": None},
        annotations={symbol("x-origin"): "cloud"}, body=f"reply {i}".encode())


def test_10000_messages_amqp10_to_091_every_property_type_read_by_pika(
        rabbitmq_url: str, pika_channel: Any, tmp_path: Path) -> None:
    source, target = unique_queue("acc091-in"), unique_queue("acc091-in-t")
    outcomes = send_messages(rabbitmq_url, queue_address(source),
                             [cloud_message(i) for i in range(COUNT)], timeout=180)
    assert {o.state for o in outcomes} == {"accepted"}
    pika_channel.queue_declare(target)
    route = f"""
  - name: replies-in
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: rabbit091, exchange: "", routing_key: {target}}}
    cloudevents: {{mode: binary, type: com.example.reply, source: /cloud/replies}}
    max_in_flight: {{messages: {WINDOW}}}
"""
    with BridgeRun(config091(rabbitmq_url, route, legacy="rabbit091"), tmp_path) as bridge:
        wait_until(lambda: queued(pika_channel, target) >= COUNT, 180, "every message", bridge)
    # the first message through our engine, which keeps every field type (pika reads
    # floats through int(): pika/data.py decodes 'f' and 'd' with long())
    client = EngineClient(rabbitmq_url, field_types=PROTON_TYPES)
    ch = client.conn.open_channel()
    client.wait_for(lambda e: getattr(e, "channel", None) == ch)
    client.conn.get(ch, target, no_ack=True)
    first = client.wait_for(lambda e: isinstance(e, MessageReceived))
    client.close()
    assert isinstance(first, MessageReceived) and first.body == b"reply 0"
    typed = {k: first.properties.headers[k] for k in ("b", "f", "d", "bin", "neg", "none", "n")}
    assert typed_value(typed) == typed_value({"b": byte(-1), "f": float32(1.5), "d": 0.0,
                                              "bin": b"\x00\x01", "neg": -(2**40),
                                              "none": None, "n": 0})
    got: list[tuple[Any, Any, bytes]] = [(None, None, b"")]  # the rest, read by pika
    for method, props, body in pika_channel.consume(target, inactivity_timeout=10):
        assert method is not None, f"only {len(got)} messages in {target}"
        got.append((method, props, body))
        pika_channel.basic_ack(method.delivery_tag)
        if len(got) == COUNT:
            break
    pika_channel.cancel()
    assert queued(pika_channel, target) == 0  # nothing twice
    rabbitmq3 = version_of(rabbitmq_url) == 3
    for i, (method, props, body) in enumerate(got):  # in order, every field mapped
        if i == 0:
            continue  # read above
        headers = props.headers
        assert body == f"reply {i}".encode()
        assert method.routing_key == target and not method.redelivered
        assert props.message_id == f"r-{i}"
        assert props.correlation_id == f"urn:uuid:{uuid.UUID(int=i)}"
        # proton leaves durable=false out, which RabbitMQ 4 reads as durable (3.10: not)
        assert props.delivery_mode == (2 if i % 2 == 0 or not rabbitmq3 else 1)
        assert props.priority == (None if i % 10 == 4 else i % 10)  # 4: 1.0's default, left out
        assert props.content_type == "text/plain"
        assert props.timestamp == CREATED + i  # seconds (proton's creation_time is seconds)
        assert props.reply_to == "/queue/elsewhere" and props.app_id == "g"
        assert headers["x-amqp-1.0.subject"] == f"reply {i}"
        assert headers["x-amqp-1.0.group-sequence"] == i
        assert headers["n"] == i and headers["flag"] is (i % 2 == 1)
        assert headers["tag"] == "s" and headers["big"] == str(2**40 + i)
        assert headers["b"] == -1 and headers["f"] == 1 and headers["d"] == int(i / 4)  # pika
        assert headers["bin"] == b"\x00\x01" and headers["neg"] == -(2**40)
        assert headers["none"] is None
        assert headers["x-amqp-1.0.property-types"] == {"tag": "symbol", "big": "ulong"}
        assert isinstance(headers["x-amqp-1.0.message-annotations"], bytes)
        assert headers["cloudEvents_specversion"] == "1.0"
        assert headers["cloudEvents_id"] == f"r-{i}"
        assert headers["cloudEvents_source"] == "/cloud/replies"
        assert headers["cloudEvents_type"] == "com.example.reply"
    stats = route_stats(bridge.log(), "replies-in")
    assert stats["delivered"] == COUNT and stats["received"] == COUNT
    assert stats["peak_in_flight"] <= WINDOW + stats["overdrawn"]  # RabbitMQ 3.x under load


# --- at-least-once across kill -9 -----------------------------------------------------------


KILLED = 4_000
KILL_WINDOW = 200


def ids_arrived(ids: list[str], count: int) -> None:
    """Every id 0..count-1 at least once; duplicates (a restart's redeliveries) at most the
    route's window."""
    seen = Counter(ids)
    missing = [i for i in range(count) if seen[str(i)] == 0]
    assert not missing, f"{len(missing)} messages lost, e.g. {missing[:10]}"
    duplicates = sum(n - 1 for n in seen.values())
    assert duplicates <= KILL_WINDOW, f"{duplicates} duplicates (window {KILL_WINDOW})"


def test_kill_9_mid_stream_091_to_amqp10_loses_nothing(
        rabbitmq_url: str, pika_channel: Any, tmp_path: Path) -> None:
    source, target = unique_queue("kill091-out"), unique_queue("kill091-out-t")
    publish_091(rabbitmq_url, source, KILLED, lambda i: C.Basic.Properties(message_id=str(i)))
    pika_channel.queue_declare(target)
    route = f"""
  - name: kill-out
    from: {{connection: rabbit091, queue: {source}}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    max_in_flight: {{messages: {KILL_WINDOW}}}
"""
    first = BridgeRun(config091(rabbitmq_url, route, legacy="rabbit091"), tmp_path, "first").start()
    try:
        wait_until(lambda: queued(pika_channel, target) >= KILLED // 3, 120, "a third moved",
                   first)
    finally:
        first.kill()
    moved_before = queued(pika_channel, target)
    assert moved_before < KILLED, "the bridge finished before it was killed"
    with BridgeRun(config091(rabbitmq_url, route, legacy="rabbit091"), tmp_path, "second") as second:
        # the target count includes the redeliveries of the killed bridge's window: wait
        # for the source to be empty too
        wait_until(lambda: queued(pika_channel, target) >= KILLED
                   and queued(pika_channel, source) == 0, 120, "every message", second)
    # stopped gracefully (in-flight messages settled): nothing is left at the source
    assert queued(pika_channel, source) == 0
    received = receive_messages(rabbitmq_url, queue_address(target),
                                queued(pika_channel, target), timeout=60)
    ids_arrived([str(AmqpMessage.decode(r.raw).properties.message_id) for r in received], KILLED)


def test_kill_9_mid_stream_amqp10_to_091_loses_nothing(
        rabbitmq_url: str, pika_channel: Any, tmp_path: Path) -> None:
    source, target = unique_queue("kill091-in"), unique_queue("kill091-in-t")
    outcomes = send_messages(rabbitmq_url, queue_address(source),
                             [Message(id=str(i), body=b"x" * 100) for i in range(KILLED)],
                             timeout=120)
    assert {o.state for o in outcomes} == {"accepted"}
    pika_channel.queue_declare(target)
    route = f"""
  - name: kill-in
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: rabbit091, exchange: "", routing_key: {target}}}
    max_in_flight: {{messages: {KILL_WINDOW}}}
"""
    first = BridgeRun(config091(rabbitmq_url, route, legacy="rabbit091"), tmp_path, "first").start()
    try:
        wait_until(lambda: queued(pika_channel, target) >= KILLED // 3, 120, "a third moved",
                   first)
    finally:
        first.kill()
    assert queued(pika_channel, target) < KILLED, "the bridge finished before it was killed"
    with BridgeRun(config091(rabbitmq_url, route, legacy="rabbit091"), tmp_path, "second") as second:
        wait_until(lambda: queued(pika_channel, target) >= KILLED
                   and queued(pika_channel, source) == 0, 120, "every message", second)
    # stopped gracefully (in-flight messages settled): nothing is left at the source
    assert_no_message(rabbitmq_url, queue_address(source))
    ids: list[str] = []
    for method, props, _ in pika_channel.consume(target, inactivity_timeout=5):
        if method is None:
            break
        ids.append(props.message_id)
        pika_channel.basic_ack(method.delivery_tag)
    pika_channel.cancel()
    ids_arrived(ids, KILLED)

