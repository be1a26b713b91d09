"""The 0-9-1 façade end to end: unchanged pika applications log in to ``amqp-bridge
run`` as to RabbitMQ, and publish to / consume from a real RabbitMQ's AMQP 1.0 behind it.

One bridge process serves the whole module (one listener, several routes).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pika
import pika.exceptions
import pytest
from pamqp import commands as C
from proton import Message

from amqp091.framing import encode_method
from amqp091.methods import ReplyCode
from tests.support.bridge import wait_for
from tests.support.facade091 import USER, RawClient, content_header, facade091
from tests.support.facade091 import Facade091 as Facade
from tests.support.rabbitmq import (
    assert_no_message,
    rabbitmq_routing,
    rabbitmqctl,
    receive_messages,
    send_messages,
)

# RabbitMQ 3.10 coverage: every test here runs against both nodes (docs/testing.md)
pytestmark = pytest.mark.rabbitmq(3, 4)


MAX_MESSAGE = 1 << 20
"""The listener's max_message_size (and max_buffered_per_connection)."""
ROLES = ("orders", "urgent", "audit", "jobs", "fetch", "outcomes", "outcomes_dlq", "leave")


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    def routes(q: dict[str, str], _: dict[str, str]) -> str:
        return f"""
  - name: orders-out
    from: {{listener: legacy, exchange: orders}}
    to:   {{connection: cloud, address: {q["orders"]}}}
    max_in_flight: {{messages: 50}}
  - name: urgent-out
    from: {{listener: legacy, exchange: orders, routing_key: urgent}}
    to:   {{connection: cloud, address: {q["urgent"]}}}
  - name: audit-out
    from: {{listener: legacy, exchange: audit, routing_key: audit.log}}
    to:   {{connection: cloud, address: {q["audit"]}}}
    cloudevents: {{mode: binary, type: com.example.audit, source: /legacy/audit}}
  - name: jobs-in
    from: {{connection: cloud, address: {q["jobs"]}}}
    to:   {{listener: legacy, queue: jobs}}
  - name: fetch-in
    from: {{connection: cloud, address: {q["fetch"]}}}
    to:   {{listener: legacy, queue: fetch}}
  - name: outcomes-in
    from: {{connection: cloud, address: {q["outcomes"]}}}
    to:   {{listener: legacy, queue: outcomes}}
  - name: leave-in
    from: {{connection: cloud, address: {q["leave"]}}}
    to:   {{listener: legacy, queue: leave}}
"""
    with facade091(rabbitmq_url, tmp_path_factory.mktemp("facade091"), ROLES, routes,
                   listener=f", max_message_size: {MAX_MESSAGE}, "
                            f"max_buffered_per_connection: {MAX_MESSAGE}") as running:
        # a consumer's reject (requeue false) shows on the 1.0 side through RabbitMQ's DLX
        queues = running.queues
        policy = f"amqp-bridge-test-{queues['outcomes']}"
        rabbitmqctl(rabbitmq_url, "set_policy", "--apply-to", "queues", "--priority", "10",
                    policy, "^" + queues["outcomes"].replace(".", r"\.") + "$",
                    '{"expires": 600000, "dead-letter-exchange": "", '
                    f'"dead-letter-routing-key": "{queues["outcomes_dlq"]}"}}')
        try:
            yield running
        finally:
            rabbitmqctl(rabbitmq_url, "clear_policy", policy)


def _deliveries(channel: Any, count: int, timeout: float = 20.0) -> list[tuple[Any, Any, bytes]]:
    """``count`` deliveries of ``channel``'s consumers (method, properties, body)."""
    got: list[tuple[Any, Any, bytes]] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} deliveries arrived"
        channel.connection.process_data_events(time_limit=0.1)
        while channel._pending and len(got) < count:  # filled by on_message below
            got.append(channel._pending.pop(0))
    return got


def _consumer(channel: Any, queue: str, **kwargs: Any) -> str:
    channel._pending = []
    return channel.basic_consume(queue, lambda ch, m, p, b: ch._pending.append((m, p, b)),
                                 **kwargs)


# --- publish -----------------------------------------------------------------------------


def test_confirmed_publishes_reach_the_1_0_side_with_properties_mapped(facade: Facade) -> None:
    stamp = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    with facade.connect() as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare("orders", "topic", passive=True)
        ch.exchange_declare("orders", "topic", durable=True)  # as the app's own setup does
        for i in range(20):
            # confirm mode: basic_publish returns once the bridge basic.ack'ed it, which it
            # does only after RabbitMQ accepted the 1.0 transfer
            ch.basic_publish("orders", f"order.{i % 3}", f'{{"n": {i}}}'.encode(),
                             pika.BasicProperties(
                                 content_type="application/json", delivery_mode=2,
                                 priority=i % 10, correlation_id=f"corr-{i}",
                                 message_id=f"id-{i}", timestamp=int(stamp.timestamp()),
                                 app_id="shop", type="order.created", user_id=USER,
                                 headers={"seq": i, "region": "emea", "neg": -5,
                                          "nested": {"a": 1}, "list": [1, "x"]}))
        ch.basic_publish("orders", "urgent", b"now!")  # the keyed route of the exchange
    received = receive_messages(facade.rabbitmq_url, facade.address("orders"), 20, timeout=20)
    broker_routing = rabbitmq_routing(facade.rabbitmq_url, facade.address("orders"),
                                      ("orders", None))
    for i, r in enumerate(received):
        m = r.message
        assert bytes(m.body) == f'{{"n": {i}}}'.encode()
        assert m.content_type == "application/json" and m.durable and m.priority == i % 10
        assert m.correlation_id == f"corr-{i}" and m.id == f"id-{i}"
        assert m.creation_time == stamp.timestamp()  # seconds in 0-9-1, ms in 1.0
        # RabbitMQ takes only its login user as user-id: "app" rides in an annotation
        assert bytes(m.annotations["x-amqp-0-9-1.user-id"]) == USER.encode() and m.group_id == "shop"
        assert m.properties["seq"] == i and m.properties["region"] == "emea"
        assert m.properties["neg"] == -5
        # the key is the subject, the exchange in the bridge's annotation (and RabbitMQ's
        # x-exchange, which RabbitMQ 4 replaces with the routing it did itself)
        assert m.subject == f"order.{i % 3}" and "x-amqp-0-9-1.routing-key" not in m.annotations
        assert m.annotations["x-amqp-0-9-1.exchange"] == "orders"
        assert (m.annotations.get("x-exchange"), m.annotations.get("x-routing-key")) == broker_routing
    urgent = receive_messages(facade.rabbitmq_url, facade.address("urgent"), 1, timeout=20)
    assert bytes(urgent[0].message.body) == b"now!"


def test_publishes_without_confirms_arrive_and_cloudevents_render(facade: Facade) -> None:
    with facade.connect() as conn:
        ch = conn.channel()
        for i in range(30):
            ch.basic_publish("audit", "audit.log", f"entry {i}".encode())
        conn.process_data_events(time_limit=0.2)
    received = receive_messages(facade.rabbitmq_url, facade.address("audit"), 30, timeout=20)
    assert [bytes(r.message.body) for r in received] == [f"entry {i}".encode()
                                                         for i in range(30)]
    props = received[0].message.properties
    assert props["cloudEvents_type"] == "com.example.audit"
    assert props["cloudEvents_source"] == "/legacy/audit"


def test_mandatory_publish_no_route_takes_is_returned_with_312(facade: Facade) -> None:
    with facade.connect() as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        with pytest.raises(pika.exceptions.UnroutableError) as info:
            ch.basic_publish("audit", "not.a.key", b"lost?", mandatory=True)
        returned = info.value.messages[0]
        assert returned.method.reply_code == ReplyCode.NO_ROUTE
        assert returned.body == b"lost?"
        ch.basic_publish("audit", "audit.log", b"still fine")  # the channel goes on
    assert bytes(receive_messages(facade.rabbitmq_url, facade.address("audit"), 1,
                                  timeout=20)[0].message.body) == b"still fine"


def test_unknown_names_get_rabbitmqs_answers(facade: Facade) -> None:
    with facade.connect() as conn:
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.exchange_declare("no-such-exchange", passive=True)
        assert info.value.reply_code == ReplyCode.NOT_FOUND
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare("no-such-queue", passive=True)
        assert info.value.reply_code == ReplyCode.NOT_FOUND
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare("made-up", durable=True)
        assert info.value.reply_code == ReplyCode.ACCESS_REFUSED
        assert "not configured on the amqp-bridge" in info.value.reply_text
        ch = conn.channel()
        ok = ch.queue_declare("jobs", durable=True)
        assert ok.method.queue == "jobs" and ok.method.consumer_count == 0
        ch.queue_bind("jobs", "orders", "jobs.#")
        ch.basic_publish("no-such-exchange", "k", b"x")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare("jobs", passive=True)
        assert info.value.reply_code == ReplyCode.NOT_FOUND
        assert "no-such-exchange" in info.value.reply_text
        assert conn.is_open  # channel errors close the channel only


# --- consume -----------------------------------------------------------------------------


def test_consume_with_prefetch_and_manual_ack(facade: Facade) -> None:
    send_messages(facade.rabbitmq_url, facade.address("jobs"),
                  [Message(body=f"job {i}".encode(), inferred=True) for i in range(12)])
    with facade.connect() as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=4)
        _consumer(ch, "jobs")
        first = _deliveries(ch, 4)
        conn.process_data_events(time_limit=0.5)
        assert ch._pending == []  # the prefetch holds the rest back (1.0 credit)
        got = first
        for method, _, _ in first:
            ch.basic_ack(method.delivery_tag)
        while len(got) < 12:  # acknowledged one by one: never more than 4 unacknowledged
            more = _deliveries(ch, 1)
            assert len(ch._pending) <= 3
            ch.basic_ack(more[0][0].delivery_tag)
            got += more
        bodies = [body for _, _, body in got]
        assert bodies == [f"job {i}".encode() for i in range(12)]
        assert [m.delivery_tag for m, _, _ in got] == list(range(1, 13))
        conn.process_data_events(time_limit=0.2)
    assert_no_message(facade.rabbitmq_url, facade.address("jobs"))  # all accepted


def test_basic_get_answers_one_message_or_get_empty(facade: Facade) -> None:
    send_messages(facade.rabbitmq_url, facade.address("fetch"), [Message(body=b"one", inferred=True), Message(body=b"two", inferred=True)])
    with facade.connect() as conn:
        ch = conn.channel()
        method, _, body = ch.basic_get("fetch")
        assert body == b"one" and method is not None
        ch.basic_ack(method.delivery_tag)
        method, _, body = ch.basic_get("fetch", auto_ack=True)
        assert body == b"two"
        assert ch.basic_get("fetch") == (None, None, None)
    assert_no_message(facade.rabbitmq_url, facade.address("fetch"))


def test_reject_nack_and_recover_settle_on_the_1_0_side(facade: Facade) -> None:
    send_messages(facade.rabbitmq_url, facade.address("outcomes"), [Message(body=b, inferred=True) for b in (b"bad", b"again", b"lost")])
    with facade.connect() as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=10)
        _consumer(ch, "outcomes")
        got = {body: m for m, _, body in _deliveries(ch, 3)}
        ch.basic_reject(got[b"bad"].delivery_tag, requeue=False)  # → RabbitMQ's DLX
        ch.basic_nack(got[b"again"].delivery_tag, requeue=True)
        again = _deliveries(ch, 1)[0]
        assert again[2] == b"again" and again[0].redelivered
        ch.basic_ack(again[0].delivery_tag)
        ch.basic_recover(requeue=True)  # "lost" comes back
        lost = _deliveries(ch, 1)[0]
        assert lost[2] == b"lost" and lost[0].redelivered
        ch.basic_ack(lost[0].delivery_tag)
        conn.process_data_events(time_limit=0.2)
    dead = receive_messages(facade.rabbitmq_url, facade.address("outcomes_dlq"), 1, timeout=20)
    assert bytes(dead[0].message.body) == b"bad"
    assert_no_message(facade.rabbitmq_url, facade.address("outcomes"))


def test_a_consumer_that_leaves_gives_its_unacked_messages_to_the_next(facade: Facade) -> None:
    send_messages(facade.rabbitmq_url, facade.address("leave"),
                  [Message(body=f"m{i}".encode(), inferred=True) for i in range(10)])
    first = facade.connect()
    ch = first.channel()
    ch.basic_qos(prefetch_count=10)
    _consumer(ch, "leave")
    assert len(_deliveries(ch, 10)) == 10
    first.close()  # nothing acknowledged
    with facade.connect() as conn:
        ch = conn.channel()
        _consumer(ch, "leave")
        again = _deliveries(ch, 10, timeout=20)
        assert sorted(body for _, _, body in again) == sorted(f"m{i}".encode()
                                                              for i in range(10))
        assert all(m.redelivered for m, _, _ in again)
        for m, _, _ in again:
            ch.basic_ack(m.delivery_tag)
        conn.process_data_events(time_limit=0.2)


# --- logins and bad input ----------------------------------------------------------------


def test_wrong_password_is_refused_with_403(facade: Facade) -> None:
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as info:
        facade.connect(password="wrong")
    assert "403" in str(info.value)


@pytest.mark.parametrize("bad", ["garbage", "over_frame_max", "unknown_method",
                                 "over_buffered"])
def test_bad_input_closes_that_client_only(facade: Facade, bad: str) -> None:
    with facade.connect() as bystander:
        bch = bystander.channel()
        bch.confirm_delivery()
        raw = RawClient(facade.port)
        raw.login()
        if bad == "garbage":
            raw.sock.sendall(b"\x09\x00\x01\x00\x00\x00\x00\xce")
            expected = ReplyCode.FRAME_ERROR
        elif bad == "over_frame_max":
            raw.open_channel(1)
            raw.sock.sendall(struct.pack(">BHI", 3, 1, raw.frame_max + 64))
            expected = ReplyCode.FRAME_ERROR
        elif bad == "over_buffered":  # two unfinished messages, each within the size bound
            for ch in (1, 2):
                raw.open_channel(ch)
            chunk = raw.frame_max - 8
            for ch in (1, 2):
                raw.sock.sendall(encode_method(ch, C.Basic.Publish(exchange="audit",
                                                                    routing_key="audit.log"))
                                 + content_header(ch, MAX_MESSAGE))
            held = 0
            while held <= MAX_MESSAGE:  # the last frame takes it past the bound
                ch = 1 + (held // chunk) % 2
                raw.sock.sendall(struct.pack(">BHI", 3, ch, chunk) + b"x" * chunk + b"\xce")
                held += chunk
            expected = ReplyCode.RESOURCE_ERROR
        else:
            raw.sock.sendall(struct.pack(">BHIHH", 1, 0, 4, 10, 999) + b"\xce")
            expected = ReplyCode.NOT_IMPLEMENTED
        assert raw.closed_with() == expected
        bch.basic_publish("audit", "audit.log", f"after {bad}".encode())  # unaffected
    got = receive_messages(facade.rabbitmq_url, facade.address("audit"), 1, timeout=20)
    assert bytes(got[0].message.body) == f"after {bad}".encode()
    wait_for(lambda: f"closed with {expected}" in facade.proc.log(), 10,
             "the client error logged", facade.proc)


def test_a_message_over_max_message_size_closes_the_channel_with_406(facade: Facade) -> None:
    with facade.connect() as bystander, facade.connect() as conn:
        bch = bystander.channel()
        bch.confirm_delivery()
        ch = conn.channel()
        ch.confirm_delivery()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_publish("audit", "audit.log", b"x" * (64 << 20))
        assert info.value.reply_code == ReplyCode.PRECONDITION_FAILED
        assert conn.is_open
        conn.channel().basic_publish("audit", "audit.log", b"same connection")
        bch.basic_publish("audit", "audit.log", b"other client")
    got = receive_messages(facade.rabbitmq_url, facade.address("audit"), 2, timeout=20)
    assert sorted(bytes(r.message.body) for r in got) == [b"other client", b"same connection"]
