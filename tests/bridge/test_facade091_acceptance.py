"""Issue 14's acceptance for the 0-9-1 façade, end to end: unchanged pika applications
against ``amqp-bridge run``, RabbitMQ's AMQP 1.0 behind it.

- 10,000 messages published by pika in confirm mode to a façade exchange, with every
  basic property and every header field type pika can write, checked on the 1.0
  side, order kept; the route renders CloudEvents binary, read back with the
  cloudevents SDK;
- 10,000 messages of every 1.0 property and application-property type consumed by
  pika from a façade queue (prefetch, ``basic.ack`` multiple), order kept;
- a pika consumer that disconnects with unacknowledged messages: they reach the
  consumer waiting next to it, redelivered (the time it took is printed, not
  asserted).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pika
import pytest
from cloudevents.core.bindings import amqp as ce_amqp
from cloudevents.core.formats.json import JSONFormat
from proton import Message, byte, float32, int32, symbol, ulong

from mappings.message import AmqpMessage, BodyKind
from tests.mappings.sdk import to_sdk
from tests.support.facade091 import USER, facade091
from tests.support.facade091 import Facade091 as Facade
from tests.support.rabbitmq import (
    assert_no_message,
    rabbitmq_routing,
    receive_messages,
    send_messages,
    version_of,
)
from tests.support.typed import typed_value

COUNT = 10_000
WINDOW = 500
CREATED = 1_764_000_000  # seconds
NESTED = symbol("x-amqp-0-9-1.headers")
HEADER_TYPES = symbol("x-amqp-0-9-1.header-types")


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    def routes(q: dict[str, str], _: dict[str, str]) -> str:
        return f"""
  - name: orders-out
    from: {{listener: legacy, exchange: orders}}
    to:   {{connection: cloud, address: {q["out"]}}}
    cloudevents:
      mode: binary
      type: "com.example.{{routing_key}}"
      source: /legacy/orders
      subject: "order-{{property:seq}}"
    max_in_flight: {{messages: {WINDOW}}}
  - name: replies-in
    from: {{connection: cloud, address: {q["in"]}}}
    to:   {{listener: legacy, queue: replies}}
    max_in_flight: {{messages: {WINDOW}}}
  - name: leave-in
    from: {{connection: cloud, address: {q["leave"]}}}
    to:   {{listener: legacy, queue: leave}}
"""

    with facade091(rabbitmq_url, tmp_path_factory.mktemp("facade091-acceptance"),
                   ("out", "in", "leave"), routes) as running:
        yield running


# --- pika → façade → 1.0 -------------------------------------------------------------------


def pika_headers(i: int) -> dict[str, Any]:
    """Every field type pika writes: S, x, t, I, l, D, T, F, A, V (it has no float; an int
    is I when it fits 32 bits, else l)."""
    return {
        "seq": i, "neg": -i, "big": -(2 ** 40) - i, "flag": i % 5 == 0, "text": f"héllo {i}",
        "bin": i.to_bytes(4, "big"), "dec": Decimal(f"{i}.25"),
        "when": datetime.fromtimestamp(CREATED + i, UTC), "none": None,
        "table": {"i": i, "deep": [1, {"x": "y"}]}, "array": [i, "a", None, True],
    }


def pika_properties(i: int) -> pika.BasicProperties:
    return pika.BasicProperties(
        content_type="application/json", content_encoding="identity",
        headers=pika_headers(i), delivery_mode=2 if i % 2 == 0 else 1, priority=i % 10,
        correlation_id=f"corr-{i}", reply_to=f"reply-{i % 7}", expiration="3600000",
        message_id=f"urn:uuid:{uuid.UUID(int=i + 1)}", timestamp=CREATED + i,
        type="order.created", user_id=USER, app_id="legacy-app")


def test_10000_pika_publishes_reach_the_1_0_side_with_every_type(facade: Facade) -> None:
    started = time.monotonic()
    with facade.connect() as conn:
        ch = conn.channel()
        ch.exchange_declare("orders", "topic", durable=True)
        ch.confirm_delivery()  # each publish returns once RabbitMQ accepted its 1.0 copy
        for i in range(COUNT):
            ch.basic_publish("orders", f"order.{i % 3}", f'{{"order": {i}}}'.encode(),
                             pika_properties(i))
    published = time.monotonic() - started
    received = receive_messages(facade.rabbitmq_url, facade.address("out"), COUNT, timeout=120)
    print(f"\n{COUNT} confirmed pika publishes through the façade in {published:.1f}s")
    assert len(received) == COUNT
    fmt = JSONFormat()
    rabbitmq3 = version_of(facade.rabbitmq_url) == 3
    broker_routing = rabbitmq_routing(facade.rabbitmq_url, facade.address("out"),
                                      ("orders", None))
    for i, r in enumerate(received):  # in order, every field mapped
        m = AmqpMessage.decode(r.raw)
        assert m.body_kind is BodyKind.DATA and m.body == [f'{{"order": {i}}}'.encode()]
        h, p = m.header, m.properties
        assert h.durable is (i % 2 == 0) and h.priority == i % 10 and h.ttl == 3_600_000
        assert p.message_id == uuid.UUID(int=i + 1)
        assert p.correlation_id == f"corr-{i}" and p.reply_to == f"reply-{i % 7}"
        assert p.content_type == "application/json" and p.content_encoding == "identity"
        assert p.creation_time == (CREATED + i) * 1000  # seconds become milliseconds
        assert p.group_id == "legacy-app"
        ann = m.message_annotations
        # RabbitMQ's 1.0 side takes only its own login as user-id: the app's rides along
        assert bytes(ann[symbol("x-amqp-0-9-1.user-id")]) == USER.encode()
        # the key is the subject, the exchange in the bridge's annotation (and RabbitMQ's
        # x-exchange, which RabbitMQ 4 replaces with the routing it did itself)
        assert p.subject == f"order.{i % 3}" and symbol("x-amqp-0-9-1.routing-key") not in ann
        assert ann[symbol("x-amqp-0-9-1.exchange")] == "orders"
        assert (ann.get(symbol("x-exchange")), ann.get(symbol("x-routing-key"))) == broker_routing
        assert ann[symbol("x-basic-type")] == "order.created"
        assert ann[HEADER_TYPES] == {"dec": "decimal"}
        # pika's I is a 1.0 int; RabbitMQ 4 re-encodes annotation maps, not always in their
        # order (3.10 keeps it)
        assert typed_value(ann[NESTED], ordered=rabbitmq3) == typed_value(
            {"table": {"i": int32(i), "deep": [int32(1), {"x": "y"}]},
             "array": [int32(i), "a", None, True]}, ordered=rabbitmq3)
        props = m.application_properties
        expected = {k: v for k, v in pika_headers(i).items() if k not in ("table", "array")}
        expected.update(seq=int32(i), neg=int32(-i), dec=f"{i}.25")
        expected["when"] = props["when"]
        assert props["when"] == (CREATED + i) * 1000  # a 1.0 timestamp, milliseconds
        assert typed_value({k: props[k] for k in expected}) == typed_value(expected)
        # CloudEvents binary, as an SDK application reads it
        event = ce_amqp.from_amqp(to_sdk(m), fmt)
        assert event.get_type() == f"com.example.order.{i % 3}"
        assert event.get_source() == "/legacy/orders"
        assert event.get_id() == str(uuid.UUID(int=i + 1))
        assert event.get_subject() == f"order-{i}"
        assert event.get_time() == datetime.fromtimestamp(CREATED + i, UTC)
        assert event.get_data() == {"order": i}
    assert_no_message(facade.rabbitmq_url, facade.address("out"))  # nothing twice


# --- 1.0 → façade → pika -------------------------------------------------------------------


def cloud_message(i: int) -> Message:
    return Message(
        id=f"r-{i}", correlation_id=uuid.UUID(int=i), subject=f"reply {i}", durable=i % 2 == 0,
        priority=i % 10, content_type="text/plain", content_encoding="identity",
        creation_time=CREATED + i, expiry_time=0, reply_to="/queue/elsewhere", group_id="g",
        group_sequence=i, user_id=b"guest", ttl=3_600,
        properties={"n": i, "tag": symbol("s"), "big": ulong(2**40 + i), "flag": i % 2 == 1,
                    "b": byte(-1), "f": float32(1.5), "d": i / 4, "bin": b"\x00\x01",
                    "neg": -(2**40), "none": None, "text": f"ü{i}"},
        annotations={symbol("x-origin"): "cloud"}, body=f"reply {i}".encode(), inferred=True)


def test_10000_messages_of_every_1_0_type_consumed_by_pika(facade: Facade) -> None:
    outcomes = send_messages(facade.rabbitmq_url, facade.address("in"),
                             [cloud_message(i) for i in range(COUNT)], timeout=120)
    assert {o.state for o in outcomes} == {"accepted"}
    got: list[tuple[Any, Any, bytes]] = []
    started = time.monotonic()
    with facade.connect() as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=200)
        ch.queue_declare("replies", durable=True)

        def on_message(ch: Any, method: Any, props: Any, body: bytes) -> None:
            got.append((method, props, body))
            if len(got) % 100 == 0:
                ch.basic_ack(method.delivery_tag, multiple=True)

        ch.basic_consume("replies", on_message)
        deadline = time.monotonic() + 120
        while len(got) < COUNT:
            assert time.monotonic() < deadline, f"{len(got)} of {COUNT} arrived"
            conn.process_data_events(time_limit=0.1)
        consumed = time.monotonic() - started
        conn.process_data_events(time_limit=0.3)
        assert len(got) == COUNT  # nothing more
    print(f"\n{COUNT} messages consumed by pika through the façade in {consumed:.1f}s")
    rabbitmq3 = version_of(facade.rabbitmq_url) == 3
    for i, (method, props, body) in enumerate(got):  # in order, every field mapped
        headers = props.headers
        assert body == f"reply {i}".encode() and method.delivery_tag == i + 1
        assert method.routing_key == f"reply {i}"  # the 1.0 subject, as RabbitMQ maps it
        assert method.exchange == "" and not method.redelivered
        assert props.message_id == f"r-{i}"
        assert props.correlation_id == f"urn:uuid:{uuid.UUID(int=i)}"
        # proton leaves durable=false out, which RabbitMQ 4 reads as durable (3.10: not)
        assert props.delivery_mode == (2 if i % 2 == 0 or not rabbitmq3 else 1)
        assert props.priority == (None if i % 10 == 4 else i % 10)  # 4: 1.0's default
        assert props.content_type == "text/plain" and props.content_encoding == "identity"
        assert props.timestamp == CREATED + i  # milliseconds become seconds
        assert props.expiration == "3600000"  # the 1.0 ttl in ms (proton sets seconds)
        assert props.user_id == "guest"
        assert props.reply_to == "/queue/elsewhere" and props.app_id == "g"
        assert "x-amqp-1.0.subject" not in headers  # the routing key says it
        assert headers["x-amqp-1.0.group-sequence"] == i
        assert headers["n"] == i and headers["flag"] is (i % 2 == 1)
        assert headers["tag"] == "s" and headers["big"] == str(2**40 + i)
        assert headers["b"] == -1 and headers["f"] == 1 and headers["d"] == int(i / 4)  # pika
        assert headers["bin"] == b"\x00\x01" and headers["neg"] == -(2**40)
        assert headers["none"] is None and headers["text"] == f"ü{i}"
        assert headers["x-amqp-1.0.property-types"] == {"tag": "symbol", "big": "ulong"}
        assert isinstance(headers["x-amqp-1.0.message-annotations"], bytes)
    assert_no_message(facade.rabbitmq_url, facade.address("in"))  # every one accepted


# --- a consumer that leaves ------------------------------------------------------------------


def test_unacked_messages_of_a_leaving_consumer_reach_the_next_one_redelivered(
        facade: Facade) -> None:
    send_messages(facade.rabbitmq_url, facade.address("leave"),
                  [Message(body=f"m{i}".encode(), inferred=True) for i in range(20)])
    first, second = facade.connect(), facade.connect()
    try:
        ch1 = first.channel()
        ch1.basic_qos(prefetch_count=20)
        held: list[bytes] = []
        ch1.basic_consume("leave", lambda c, m, p, b: held.append(b))
        deadline = time.monotonic() + 20
        while len(held) < 20:
            assert time.monotonic() < deadline, f"{len(held)} of 20 reached the first consumer"
            first.process_data_events(time_limit=0.05)
        ch2 = second.channel()
        ch2.basic_qos(prefetch_count=20)
        again: list[tuple[Any, bytes]] = []
        ch2.basic_consume("leave", lambda c, m, p, b: again.append((m, b)))
        second.process_data_events(time_limit=0.3)  # its 1.0 link attached, nothing for it
        assert again == []
        left = time.monotonic()
        first.close()  # without acknowledging anything
        deadline = left + 10
        while len(again) < 20:
            assert time.monotonic() < deadline, f"{len(again)} of 20 reached the next consumer"
            second.process_data_events(time_limit=0.01)
        took = time.monotonic() - left
        print(f"\nthe next consumer had the 20 unacknowledged messages {took * 1000:.0f} ms "
              f"after the first closed")
        assert sorted(b for _, b in again) == sorted(held)
        assert all(m.redelivered for m, _ in again)
        ch2.basic_ack(again[-1][0].delivery_tag, multiple=True)
        second.process_data_events(time_limit=0.2)
    finally:
        for conn in (first, second):
            if conn.is_open:
                conn.close()
    assert_no_message(facade.rabbitmq_url, facade.address("leave"))

