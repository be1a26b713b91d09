"""Issue 5's acceptance, end to end: ``amqp-bridge run`` as a subprocess between the
in-memory 0-10 broker (the engine's server role, over TCP) and the real RabbitMQ.

- 10,000 messages each way, every mapped field and CloudEvents attribute checked,
  order kept;
- rejected and unmappable messages land on the dead-letter address with the
  reason (or are rejected at the source), nothing lost;
- what RabbitMQ 3.10 does with a publish its queue refuses (``x-overflow:
  reject-publish``): it crashes the session instead of rejecting; the bridge
  reconnects and redelivers, nothing is lost.

The helpers here are shared with ``test_faults.py`` and ``test_memory.py``.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from proton import (
    Message,
    byte,
    char,
    decimal32,
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

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from bridge.config import parse_config
from bridge.routes.translate import Translator
from mappings.amqp010 import message_id_uuid
from mappings.errors import MappingError
from mappings.message import (
    AmqpMessage,
    BodyKind,
    Header,
    Properties,
    decode_reference,
    encode_reference,
)
from tests.support.bridge import (
    CREATED,
    BridgeRun,
    bridge_config,
    collect,
    legacy_backlog,
    legacy_client,
    legacy_ids,
    legacy_message,
    preload,
    publish_legacy,
    wait_for,
)
from tests.support.logs import route_stats
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    rabbitmqctl,
    receive_messages,
    send_messages,
    unique_queue,
    version_of,
)
from tests.support.typed import typed_sections

REASON = symbol("x-amqp-bridge-dead-letter-reason")
ROUTE = symbol("x-amqp-bridge-route")


# --- 10,000 messages each way ---------------------------------------------------------------

COUNT = 10_000
def test_10000_messages_legacy_to_amqp10_every_field_and_cloudevents_attribute(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    target = unique_queue("acceptance-out")
    route = f"""
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    cloudevents:
      mode: binary
      type: "com.example.{{routing_key}}"
      source: /legacy/orders
      subject: "order-{{property:seq}}"
      extensions: {{seq: seq, region: region}}
    max_in_flight: {{messages: 500}}
"""
    with BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path) as bridge:
        publish_legacy(server, "orders", [legacy_message(i) for i in range(COUNT)])
        received = receive_messages(rabbitmq_url, queue_address(target), COUNT, timeout=120)
        wait_for(lambda: legacy_backlog(broker, "orders") == 0, 30, "the source to be settled",
                 bridge)
    assert len(received) == COUNT
    for i, r in enumerate(received):  # in order, every field mapped
        dp, _, body = legacy_message(i)
        m = r.message
        assert bytes(m.body) == body
        assert m.priority == dp.priority and m.durable is (dp.delivery_mode == 2)
        assert m.ttl == 3600.0
        assert m.id == uuid.UUID(int=i + 1)
        assert m.correlation_id == f"corr-{i}"
        assert m.reply_to == f"amq.direct/reply-{i % 7}"
        assert m.content_type == "application/json" and m.content_encoding == "identity"
        assert m.user_id == b"guest"
        assert m.creation_time == CREATED + i
        assert m.subject == "orders"
        assert m.annotations[symbol("x-amqp-0-10.routing-key")] == "orders"
        assert m.annotations[symbol("x-amqp-0-10.exchange")] == ""
        props = m.properties
        assert props["seq"] == i and props["ratio"] == i / 4
        assert props["region"] == ("emea" if i % 3 else "apac")
        assert props["urgent"] is (i % 5 == 0)
        assert props["x-amqp-0-10.app-id"] == "legacy-app"
        # CloudEvents binary mode: attributes as cloudEvents_* application properties
        assert props["cloudEvents_specversion"] == "1.0"
        assert props["cloudEvents_id"] == str(uuid.UUID(int=i + 1))
        assert props["cloudEvents_source"] == "/legacy/orders"
        assert props["cloudEvents_type"] == "com.example.orders"
        assert props["cloudEvents_subject"] == f"order-{i}"
        assert props["cloudEvents_time"] == timestamp((CREATED + i) * 1000)
        assert props["cloudEvents_seq"] == i
        assert props["cloudEvents_region"] == props["region"]
        assert "cloudEvents_datacontenttype" not in props  # it is properties.content-type
    stats = route_stats(bridge.log(), "orders-out")
    assert stats["delivered"] == COUNT and stats["received"] == COUNT
    assert stats["peak_in_flight"] <= 500


def test_10000_messages_amqp10_to_legacy_every_field_and_cloudevents_attribute(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    _, server = legacy
    source = unique_queue("acceptance-in")
    route = f"""
  - name: replies-in
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: replies}}
    cloudevents: {{mode: binary, type: com.example.reply, source: /cloud/replies}}
    max_in_flight: {{messages: 500}}
"""
    sent = [Message(
        id=f"r-{i}", correlation_id=uuid.UUID(int=i), subject=f"reply {i}", durable=i % 2 == 0,
        priority=i % 10, content_type="text/plain", creation_time=CREATED + i,
        reply_to="/queue/elsewhere", group_id="g", group_sequence=i,
        properties={"n": i, "tag": symbol("s"), "big": ulong(2**40 + i), "flag": i % 2 == 1},
        annotations={symbol("x-origin"): "cloud"}, body=f"reply {i}".encode())
        for i in range(COUNT)]
    outcomes = send_messages(rabbitmq_url, queue_address(source), sent, timeout=120)
    assert {o.state for o in outcomes} == {"accepted"}
    with legacy_client(server) as client:
        client.declare_queue("replies-q")
        client.bind("replies-q", "amq.direct", "replies")
        with BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path) as bridge:
            client.subscribe("replies-q", messages=None)
            got = []
            while len(got) < COUNT:
                batch = [client.receive("replies-q", timeout=60)]
                while client.pending("replies-q") and len(batch) < 1000:
                    batch.append(client.receive("replies-q"))
                client.accept(*batch, wait=False)
                got += batch
            client.sync()
            assert_no_message(rabbitmq_url, queue_address(source))  # every source settled
    rabbitmq4 = version_of(rabbitmq_url) == 4
    for i, ev in enumerate(got):  # in order, every field mapped
        dp, mp = ev.delivery_properties, ev.message_properties
        headers = mp.application_headers
        assert ev.body == f"reply {i}".encode()
        assert dp.routing_key == "replies" and dp.exchange == "amq.direct"
        # priority 4 is AMQP 1.0's default, which proton leaves out
        assert dp.priority == (None if i % 10 == 4 else i % 10)
        # proton leaves durable=false out, which RabbitMQ 4 reads as durable (3.10: not)
        assert dp.delivery_mode == (2 if i % 2 == 0 or rabbitmq4 else 1)
        assert dp.timestamp == CREATED + i
        assert headers["x-amqp-1.0.message-id"] == f"r-{i}"
        assert mp.message_id == message_id_uuid(f"r-{i}")  # the same id always: uuid5
        assert mp.correlation_id == str(uuid.UUID(int=i)).encode()
        assert mp.content_type == "text/plain"
        assert headers["qpid.subject"] == f"reply {i}"
        assert headers["n"] == i and headers["flag"] is (i % 2 == 1)
        assert headers["tag"] == "s" and headers["big"] == 2**40 + i
        assert headers["x-amqp-1.0.group-id"] == "g"
        assert headers["x-amqp-1.0.group-sequence"] == i
        assert headers["x-amqp-1.0.reply-to"] == "/queue/elsewhere"
        # CloudEvents binary mode: the attributes travel as application headers
        assert headers["cloudEvents_specversion"] == "1.0"
        assert headers["cloudEvents_id"] == f"r-{i}"
        assert headers["cloudEvents_source"] == "/cloud/replies"
        assert headers["cloudEvents_type"] == "com.example.reply"
        assert headers["cloudEvents_time"] == CREATED + i  # a 0-10 datetime (seconds)
    stats = route_stats(bridge.log(), "replies-in")
    assert stats["delivered"] == COUNT and stats["received"] == COUNT
    assert stats["peak_in_flight"] <= 500 + stats["overdrawn"]  # RabbitMQ 3.x under load


# --- dead letters ---------------------------------------------------------------------------


def _structured_event(i: int) -> tuple[DeliveryProperties, MessageProperties, bytes]:
    doc = {"specversion": "1.0", "id": f"ev-{i}", "source": "/legacy/events", "type": "t",
           "data": {"n": i}}
    return (DeliveryProperties(routing_key="events", delivery_mode=2),
            MessageProperties(message_id=uuid.UUID(int=100 + i),
                              content_type="application/cloudevents+json"),
            json.dumps(doc).encode())


def _plain(i: int, **dp: Any) -> tuple[DeliveryProperties, MessageProperties, bytes]:
    return (DeliveryProperties(routing_key="events", **dp),
            MessageProperties(message_id=uuid.UUID(int=200 + i)), f"plain {i}".encode())


def test_rejected_and_unmappable_messages_are_dead_lettered_with_the_reason(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    out, out_dlq = unique_queue("dl-out"), unique_queue("dl-out-dlq")
    inq, in_dlq, missing = unique_queue("dl-in"), unique_queue("dl-in-dlq"), unique_queue("dl-x")
    routes = f"""
  - name: events-out      # structured CloudEvents only: plain messages cannot be rendered
    from: {{connection: legacy, queue: events}}
    to:   {{connection: cloud, address: {queue_address(out)}}}
    cloudevents: {{mode: structured}}
    dead_letter: {{connection: cloud, address: {queue_address(out_dlq)}}}
  - name: strict-out      # no dead-letter address: unmappable messages are rejected at the source
    from: {{connection: legacy, queue: strict}}
    to:   {{connection: cloud, address: {queue_address(out)}}}
  - name: events-in
    from: {{connection: cloud, address: {queue_address(inq)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: events-in}}
    dead_letter: {{connection: cloud, address: {queue_address(in_dlq)}}}
  - name: nowhere-in      # the target exchange does not exist: the 0-10 broker raises not-found
    from: {{connection: cloud, address: {queue_address(missing)}}}
    to:   {{connection: legacy, exchange: no-such-exchange, routing_key: x}}
    dead_letter: {{connection: cloud, address: {queue_address(in_dlq)}}}
"""
    long_key = "k" * 300
    send_messages(rabbitmq_url, queue_address(inq), [
        Message(id="ok-1", body=b"fine", inferred=True),  # a data section
        Message(id="bad-key", properties={long_key: 1}, body=b"oversized header key"),
        Message(id="ok-2", body=b"fine too", inferred=True)])
    send_messages(rabbitmq_url, queue_address(missing),
                  [Message(id=f"lost-{i}", body=b"x") for i in range(3)])
    with legacy_client(server) as client:
        client.declare_queue("events-in-q")
        client.bind("events-in-q", "amq.direct", "events-in")
        with BridgeRun(bridge_config(server.url, rabbitmq_url, routes), tmp_path) as bridge:
            publish_legacy(server, "events", [
                _structured_event(0), _plain(0), _structured_event(1),
                _plain(1, delivery_mode=3),  # not a 0-10 delivery mode: unmappable
                _structured_event(2)])
            publish_legacy(server, "strict", [_plain(2, delivery_mode=7), _plain(3)])
            # 0-10 -> 1.0: three events delivered, two dead-lettered, the strict route's
            # unmappable message rejected at the source (the broker keeps it), one delivered
            delivered = receive_messages(rabbitmq_url, queue_address(out), 4, timeout=30)
            dead = receive_messages(rabbitmq_url, queue_address(out_dlq), 2, timeout=30)
            # 1.0 -> 0-10: two delivered, the oversized key and the three unroutable
            # messages dead-lettered
            client.subscribe("events-in-q", messages=10)
            arrived = [client.receive("events-in-q", timeout=30) for _ in range(2)]
            client.accept(*arrived)
            dead_in = receive_messages(rabbitmq_url, queue_address(in_dlq), 4, timeout=30)
            wait_for(lambda: legacy_backlog(broker, "events") == 0
                     and legacy_backlog(broker, "strict") == 0, 10, "the sources settled", bridge)
    ids = sorted(str(m.message.id) for m in delivered)
    assert ids == sorted([str(uuid.UUID(int=100 + i)) for i in range(3)]
                         + [str(uuid.UUID(int=203))])
    reasons = {m.message.id: m.message.annotations[REASON] for m in dead}
    assert set(reasons) == {uuid.UUID(int=200), uuid.UUID(int=201)}
    assert "not a CloudEvent" in reasons[uuid.UUID(int=200)]
    assert "cannot translate" in reasons[uuid.UUID(int=201)]
    assert "delivery_mode" in reasons[uuid.UUID(int=201)] or "3" in reasons[uuid.UUID(int=201)]
    for m in dead:  # the dead-lettered copy keeps the message itself
        assert m.message.annotations[ROUTE] == "events-out"
        assert bytes(m.message.body).startswith(b"plain")
    [rejected] = broker.dead_letters  # 0-10 message.reject: the broker's own dead letters
    assert rejected.body == b"plain 2"
    assert sorted(ev.body for ev in arrived) == [b"fine", b"fine too"]
    reasons_in = {str(m.message.id): m.message.annotations[REASON] for m in dead_in}
    assert set(reasons_in) == {"bad-key", "lost-0", "lost-1", "lost-2"}
    assert "255" in reasons_in["bad-key"] and "cannot translate" in reasons_in["bad-key"]
    for i in range(3):
        assert "404" in reasons_in[f"lost-{i}"] and "no-such-exchange" in reasons_in[f"lost-{i}"]
    by_id = {str(m.message.id): m.message for m in dead_in}
    assert by_id["bad-key"].properties[long_key] == 1
    assert by_id["lost-0"].annotations[ROUTE] == "nowhere-in"
    for queue in (inq, missing):
        assert_no_message(rabbitmq_url, queue_address(queue))


# --- RabbitMQ refusing a publish ------------------------------------------------------------


FULL_AT = 20  # messages a test.maxlen.* queue holds


def into_full_queue(broker: Broker, rabbitmq_url: str, source: str, count: int,
                    dead_letter: str | None = None) -> tuple[str, list[str], str]:
    """A route ``into-full`` from the 0-10 queue ``source`` (``count`` messages preloaded)
    to a fresh 1.0 queue that holds :data:`FULL_AT` and refuses more publishes (the
    node's ``test.maxlen.*`` policy): the queue, the message ids and the route."""
    rabbitmqctl(rabbitmq_url, "set_policy", "--apply-to", "queues", "--priority", "1",
                "amqp-bridge-test-maxlen", r"^test\.maxlen\.",
                f'{{"max-length": {FULL_AT}, "overflow": "reject-publish", "expires": 600000}}')
    target = unique_queue("maxlen")
    ids = preload(broker, source, count, body=b"m")
    dlq = "" if dead_letter is None else \
        f"\n    dead_letter: {{connection: cloud, address: {queue_address(dead_letter)}}}"
    route = f"""
  - name: into-full
    from: {{connection: legacy, queue: {source}}}
    to:   {{connection: cloud, address: {queue_address(target)}}}{dlq}
    max_in_flight: {{messages: 10}}
"""
    return target, ids, route


@pytest.mark.rabbitmq(3)
def test_rabbitmq_reject_publish_crashes_its_session_and_nothing_is_lost(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    """RabbitMQ 3.10's 1.0 plugin has no answer to the queue's basic.nack: instead of a
    ``rejected`` outcome the session process crashes and the connection drops (~3 s
    later). The bridge cannot dead-letter what it is never told about; it gives the
    unsettled messages back to the source and reconnects, and they go through once
    the queue has room."""
    broker, server = legacy
    count = 60
    target, ids, route = into_full_queue(broker, rabbitmq_url, "full", count)
    got: list[Message] = []
    with BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path) as bridge:
        # let the queue fill up, then consume slowly while the bridge retries
        wait_for(lambda: "disconnected" in bridge.log(), 30, "the plugin to drop the connection",
                 bridge)
        got = collect(rabbitmq_url, queue_address(target),
                      lambda ms: set(legacy_ids(ms)) >= set(ids), timeout=90)
        wait_for(lambda: legacy_backlog(broker, "full") == 0, 10, "the source settled", bridge)
    assert set(legacy_ids(got)) >= set(ids), bridge.log()[-4000:]
    stats = route_stats(bridge.log(), "into-full")
    assert stats["delivered"] == len(got) and stats["rejected"] == stats["dead_lettered"] == 0
    assert len(got) - count <= stats["released"]  # only what was given back came twice


@pytest.mark.rabbitmq(4)
def test_rabbitmq_4_rejects_publishes_to_a_full_queue_and_they_are_dead_lettered(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    """RabbitMQ 4 answers a publish to a full ``reject-publish`` queue with a ``rejected``
    outcome (3.10 crashed its session instead, above): the bridge dead-letters exactly the
    refused messages with that reason, and every message is in one queue or the other."""
    broker, server = legacy
    count, dlq = 60, unique_queue("maxlen-dlq")
    target, ids, route = into_full_queue(broker, rabbitmq_url, "full4", count, dead_letter=dlq)
    with BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path) as bridge:
        dead = receive_messages(rabbitmq_url, queue_address(dlq), count - FULL_AT, timeout=60)
        wait_for(lambda: legacy_backlog(broker, "full4") == 0, 10, "the source settled", bridge)
        kept = receive_messages(rabbitmq_url, queue_address(target), FULL_AT, timeout=30)
    assert sorted(legacy_ids([r.message for r in kept + dead])) == sorted(ids)
    assert {r.message.annotations[ROUTE] for r in dead} == {"into-full"}
    assert all("rejected" in r.message.annotations[REASON] for r in dead)
    stats = route_stats(bridge.log(), "into-full")
    assert (stats["delivered"], stats["dead_lettered"]) == (FULL_AT, count - FULL_AT)


def test_structured_mode_renders_whole_events(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    """A plain 0-10 message on a structured route with a template: one JSON document."""
    _, server = legacy
    target = unique_queue("structured")
    route = f"""
  - name: structured-out
    from: {{connection: legacy, queue: s}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    cloudevents: {{mode: structured, type: com.example.s, source: /s, time: none}}
"""
    with BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path):
        publish_legacy(server, "s", [(
            DeliveryProperties(routing_key="s"),
            MessageProperties(message_id=uuid.UUID(int=7), content_type="application/json"),
            b'{"a": 1}')])
        [r] = receive_messages(rabbitmq_url, queue_address(target), 1, timeout=30)
    doc = json.loads(bytes(r.message.body))
    assert r.message.content_type.startswith("application/cloudevents+json")
    assert doc == {"specversion": "1.0", "id": str(uuid.UUID(int=7)), "source": "/s",
                   "type": "com.example.s", "datacontenttype": "application/json",
                   "data": {"a": 1}}


# --- the bridge's own AMQP 1.0 codec ---------------------------------------------------------


def test_the_bridge_codec_gives_exactly_what_the_mapping_layer_gives() -> None:
    """``AmqpMessage.encode``/``decode`` (the fast codec, what routes and façade use) against
    the reference (proton) codec: the same bytes, the same typed values."""
    route = parse_config(bridge_config("amqp://h:1", "amqp://h:2", """
  - name: r
    from: {connection: legacy, queue: q}
    to:   {connection: cloud, address: a}
    cloudevents: {mode: binary, type: t, source: /s, extensions: {seq: seq}}
""")).routes[0]
    translator = Translator(route)
    messages = [translator.legacy_to_amqp10(*legacy_message(i)) for i in range(100)]
    edge = [None, True, False, 0, 127, 128, -128, -129, 2**40, -(2**63), 2**63 - 1,
            ulong(0), ulong(255), ulong(256), uint(0), uint(255), uint(256), ubyte(7), 1.5, "",
            "x" * 255, "y" * 256, "é", b"", b"\0" * 255, b"\1" * 256, symbol("s"),
            symbol("z" * 300), timestamp(-5), uuid.UUID(int=9), [], [1, "a"], {},
            {"a": 1, "b": [1, {"c": None}]}, byte(-3), short(5), int32(-7), ushort(9),
            float32(1.5), char("c"), decimal32(3)]
    kinds = [BodyKind.DATA, BodyKind.VALUE, BodyKind.SEQUENCE]
    for i, value in enumerate(edge):
        messages.append(AmqpMessage(
            header=Header(durable=i % 2 == 0, priority=i % 10, ttl=i * 1000 or None),
            properties=Properties(message_id=[None, "s", uuid.UUID(int=i), ulong(5), b"b"][i % 5],
                                  subject="s", creation_time=timestamp(i), group_sequence=i,
                                  content_type="text/plain"),
            message_annotations={symbol("x-k"): value, "plain": 1},
            application_properties={"k": value, "n": i}, body_kind=kinds[i % 3],
            body=[[b"d" * i], value, [[1, 2], [value]]][i % 3],
            footer={symbol("f"): value} if i % 4 == 0 else {}))
    for m in messages:
        raw = encode_reference(m)
        assert m.encode() == raw
        assert typed_sections(AmqpMessage.decode(raw)) == typed_sections(decode_reference(raw))
    for i in range(50):  # as proton (and RabbitMQ) write them
        raw = Message(id=f"r-{i}", correlation_id=uuid.UUID(int=i), durable=i % 2 == 0,
                      priority=i % 10, creation_time=CREATED + i, body=f"r{i}".encode(),
                      properties={"n": i, "big": ulong(2**40 + i), "f": float32(2.5)},
                      annotations={symbol("x-origin"): "cloud"}, inferred=i % 2 == 0).encode()
        assert typed_sections(AmqpMessage.decode(raw)) == typed_sections(decode_reference(raw))
    bad = AmqpMessage(application_properties={"k": object()})
    with pytest.raises(MappingError):  # refused alike: the mapping layer's own error
        bad.encode()
    with pytest.raises(MappingError):
        AmqpMessage.decode(b"\x00\x53\x77\xa1\x05ab")  # truncated
