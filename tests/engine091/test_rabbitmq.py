"""The 0-9-1 engine against the real RabbitMQ (independent truth), cross-checked with pika."""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Callable

import pika
from pamqp import commands as C

from amqp091.events import (
    ChannelClosed,
    ChannelOpened,
    ConnectionClosed,
    Event,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)

from .driver import EngineClient

FRAME_MAX = 8192
COUNT = 1000


def reply(kind: type) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, MethodReceived) and isinstance(e.method, kind)


def props_for(i: int, *, floats: bool = True) -> C.Basic.Properties:
    """Every basic property set; headers of every field type. ``floats=False`` for pika,
    which cannot encode a float and decodes one as an integer."""
    headers: dict = {"f": 0.5} if floats else {}
    return C.Basic.Properties(
        content_type="application/octet-stream", content_encoding="identity",
        headers=headers | {"i": i, "neg": -i - 1, "big": -(2 ** 40) - i, "ok": i % 2 == 0,
                 "s": f"héllo {i}", "nested": {"a": [1, "x", {"deep": True}], "d":
                                                decimal.Decimal("1.25")},
                 "bin": bytearray(b"\x00\xff" * 3), "none": None},
        delivery_mode=1 + i % 2, priority=i % 10, correlation_id=f"corr-{i}",
        reply_to="replies", expiration="600000", message_id=f"id-{i}",
        timestamp=datetime.datetime(2024, 5, 6, 7, 8, i % 60, tzinfo=datetime.UTC),
        message_type="t", user_id="guest", app_id="engine091")


def body_for(i: int) -> bytes:
    size = 3 * FRAME_MAX + 17 * i if i % 10 == 0 else i  # every tenth splits into frames
    return bytes((i + k) % 256 for k in range(size))


def open_channel(client: EngineClient) -> int:
    ch = client.conn.open_channel()
    client.wait_for(lambda e: isinstance(e, ChannelOpened) and e.channel == ch)
    return ch


def declare(client: EngineClient, ch: int, queue: str) -> None:
    client.conn.queue_declare(ch, queue)
    client.wait_for(reply(C.Queue.DeclareOk))


def delete(client: EngineClient, ch: int, queue: str) -> None:
    client.conn.send_method(ch, C.Queue.Delete(queue=queue))
    client.wait_for(reply(C.Queue.DeleteOk))


def publish_confirmed(client: EngineClient, ch: int, queue: str, count: int, *,
                      floats: bool = True) -> None:
    client.conn.confirm_select(ch)
    client.wait_for(reply(C.Confirm.SelectOk))
    tags = [client.conn.publish(ch, "", queue, body_for(i), props_for(i, floats=floats))
            for i in range(count)]
    assert tags == list(range(1, count + 1))
    acked: list[int] = []
    while len(acked) < count:
        event = client.wait_for(lambda e: isinstance(e, PublishConfirmed))
        assert isinstance(event, PublishConfirmed) and event.ack
        acked += event.delivery_tags
    assert acked == tags
    assert client.conn.unconfirmed(ch) == ()


def test_engine_round_trip_through_rabbitmq(rabbitmq_url: str) -> None:
    client = EngineClient(rabbitmq_url, frame_max=FRAME_MAX)
    assert client.opened.frame_max == FRAME_MAX  # type: ignore[attr-defined]
    assert client.opened.peer_properties["product"] == "RabbitMQ"  # type: ignore[attr-defined]
    queue = f"engine091-{uuid.uuid4()}"
    ch = open_channel(client)
    declare(client, ch, queue)
    publish_confirmed(client, ch, queue, COUNT)

    client.conn.qos(ch, prefetch_count=50)
    client.wait_for(reply(C.Basic.QosOk))
    client.conn.consume(ch, queue, "engine-consumer")
    ok = client.wait_for(reply(C.Basic.ConsumeOk))
    assert ok.method.consumer_tag == "engine-consumer"  # type: ignore[attr-defined]
    for i in range(COUNT):
        msg = client.wait_for(lambda e: isinstance(e, MessageReceived))
        assert isinstance(msg, MessageReceived) and isinstance(msg.method, C.Basic.Deliver)
        assert msg.body == body_for(i), f"message {i}"
        assert msg.properties == props_for(i), f"message {i}"
        assert msg.delivery_tag == i + 1 and not msg.method.redelivered
        if i % 25 == 24:
            client.conn.ack(ch, i + 1, multiple=True)
    client.conn.cancel(ch, "engine-consumer")
    client.wait_for(reply(C.Basic.CancelOk))
    client.conn.close_channel(ch)  # the broker would requeue anything left unacked
    closed = client.wait_for(lambda e: isinstance(e, ChannelClosed))
    assert closed == ChannelClosed(ch, 200, "", by_peer=False)
    ch = open_channel(client)
    client.conn.send_method(ch, C.Queue.Declare(queue=queue, passive=True))
    declared = client.wait_for(reply(C.Queue.DeclareOk))
    assert declared.method.message_count == 0  # type: ignore[attr-defined]  # all acked
    delete(client, ch, queue)
    client.close()
    assert client.conn.closed and client.conn.close_code == 200


def test_broker_channel_close_reports_reply_code(rabbitmq_url: str) -> None:
    client = EngineClient(rabbitmq_url)
    ch = open_channel(client)
    client.conn.send_method(ch, C.Queue.Declare(queue=f"missing-{uuid.uuid4()}", passive=True))
    closed = client.wait_for(lambda e: isinstance(e, ChannelClosed))
    assert isinstance(closed, ChannelClosed)
    assert (closed.channel, closed.code, closed.by_peer) == (ch, 404, True)
    assert "NOT_FOUND" in closed.text
    assert (closed.class_id, closed.method_id) == (50, 10)
    assert ch not in client.conn.channels
    ch2 = open_channel(client)  # the connection goes on
    assert ch2 == ch
    client.close()


def test_unroutable_mandatory_publish_is_returned_then_confirmed(rabbitmq_url: str) -> None:
    client = EngineClient(rabbitmq_url)
    ch = open_channel(client)
    client.conn.confirm_select(ch)
    client.wait_for(reply(C.Confirm.SelectOk))
    tag = client.conn.publish(ch, "amq.direct", f"nobody-{uuid.uuid4()}", b"lost?",
                              C.Basic.Properties(message_id="m1"), mandatory=True)
    returned = client.wait_for(lambda e: isinstance(e, MessageReceived))
    assert isinstance(returned, MessageReceived) and isinstance(returned.method, C.Basic.Return)
    assert (returned.method.reply_code, returned.method.reply_text) == (312, "NO_ROUTE")
    assert returned.body == b"lost?" and returned.properties.message_id == "m1"
    assert returned.delivery_tag is None
    confirmed = client.wait_for(lambda e: isinstance(e, PublishConfirmed))
    assert confirmed == PublishConfirmed(ch, [tag], ack=True)  # type: ignore[list-item]
    client.close()


def test_basic_get_and_get_empty(rabbitmq_url: str) -> None:
    client = EngineClient(rabbitmq_url)
    ch = open_channel(client)
    queue = f"engine091-get-{uuid.uuid4()}"
    declare(client, ch, queue)
    client.conn.publish(ch, "", queue, b"", C.Basic.Properties(content_type="text/plain"))
    client.conn.get(ch, queue)
    got = client.wait_for(lambda e: isinstance(e, MessageReceived))
    assert isinstance(got, MessageReceived) and isinstance(got.method, C.Basic.GetOk)
    assert got.body == b"" and got.properties.content_type == "text/plain"
    client.conn.reject(ch, got.delivery_tag or 0, requeue=False)
    client.conn.get(ch, queue)
    client.wait_for(reply(C.Basic.GetEmpty))
    delete(client, ch, queue)
    client.close()


def test_consumer_cancel_notification_when_queue_is_deleted(rabbitmq_url: str) -> None:
    client = EngineClient(rabbitmq_url)
    ch = open_channel(client)
    queue = f"engine091-cancel-{uuid.uuid4()}"
    declare(client, ch, queue)
    client.conn.consume(ch, queue, "doomed")
    client.wait_for(reply(C.Basic.ConsumeOk))
    other = open_channel(client)
    delete(client, other, queue)
    cancel = client.wait_for(reply(C.Basic.Cancel))
    assert cancel.method.consumer_tag == "doomed"  # type: ignore[attr-defined]
    client.close()


def test_heartbeats_keep_an_idle_connection_open(rabbitmq_url: str) -> None:
    client = EngineClient(rabbitmq_url, heartbeat=1)
    assert client.opened.heartbeat == 1  # type: ignore[attr-defined]
    client.pump(3.5)  # RabbitMQ drops a client silent for two intervals
    assert not [e for e in client.backlog if isinstance(e, ConnectionClosed)]
    assert client.conn.is_open
    ch = open_channel(client)  # and the broker still answers
    declare(client, ch, "")
    client.close()


def pika_channel(url: str) -> tuple[pika.BlockingConnection, object]:
    conn = pika.BlockingConnection(pika.URLParameters(url))
    return conn, conn.channel()


def pika_props(i: int) -> pika.BasicProperties:
    p = props_for(i, floats=False)
    return pika.BasicProperties(
        content_type=p.content_type, content_encoding=p.content_encoding,
        headers=p.headers | {"bin": bytes(p.headers["bin"])},  # type: ignore[operator,index,arg-type]  # pika: bytes, not bytearray
        delivery_mode=p.delivery_mode, priority=p.priority, correlation_id=p.correlation_id,
        reply_to=p.reply_to, expiration=p.expiration, message_id=p.message_id,
        timestamp=int(p.timestamp.timestamp()), type=p.message_type,  # type: ignore[union-attr]
        user_id=p.user_id, app_id=p.app_id)


def same_headers(ours: object, theirs: object) -> bool:
    """pika reads byte arrays as bytes and large integers as its own ``long``: compare
    by value (and type otherwise)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(same_headers(ours[k], theirs[k])
                                                    for k in ours)
    if isinstance(ours, list) and isinstance(theirs, list):
        return len(ours) == len(theirs) and all(map(same_headers, ours, theirs))
    if isinstance(ours, bytearray | bytes) and isinstance(theirs, bytearray | bytes):
        return bytes(ours) == bytes(theirs)
    if isinstance(ours, int) and not isinstance(ours, bool):
        return isinstance(theirs, int) and not isinstance(theirs, bool) and ours == theirs
    return type(ours) is type(theirs) and ours == theirs


def assert_same(ours: C.Basic.Properties, theirs: pika.BasicProperties) -> None:
    for name in ("content_type", "content_encoding", "delivery_mode", "priority",
                 "correlation_id", "reply_to", "expiration", "message_id", "user_id",
                 "app_id"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.message_type == theirs.type
    assert ours.timestamp is not None and int(ours.timestamp.timestamp()) == theirs.timestamp
    assert same_headers(ours.headers, theirs.headers), (ours.headers, theirs.headers)


def test_pika_reads_what_the_engine_published(rabbitmq_url: str) -> None:
    client = EngineClient(rabbitmq_url, frame_max=FRAME_MAX)
    ch = open_channel(client)
    queue = f"engine091-to-pika-{uuid.uuid4()}"
    declare(client, ch, queue)
    publish_confirmed(client, ch, queue, 60, floats=False)
    conn, pch = pika_channel(rabbitmq_url)
    try:
        for i in range(60):
            method, props, body = pch.basic_get(queue, auto_ack=True)  # type: ignore[attr-defined]
            assert method is not None, f"message {i} missing"
            assert body == body_for(i), f"message {i}"
            assert_same(props_for(i, floats=False), props)
        pch.queue_delete(queue)  # type: ignore[attr-defined]
    finally:
        conn.close()
    client.close()


def test_engine_reads_what_pika_published(rabbitmq_url: str) -> None:
    queue = f"engine091-from-pika-{uuid.uuid4()}"
    conn, pch = pika_channel(rabbitmq_url)
    try:
        pch.queue_declare(queue)  # type: ignore[attr-defined]
        pch.confirm_delivery()  # type: ignore[attr-defined]
        for i in range(60):
            pch.basic_publish("", queue, body_for(i), pika_props(i))  # type: ignore[attr-defined]
    finally:
        conn.close()
    client = EngineClient(rabbitmq_url, frame_max=FRAME_MAX)
    ch = open_channel(client)
    client.conn.consume(ch, queue, no_ack=True)
    received: list[Event] = []
    for _ in range(60):
        received.append(client.wait_for(lambda e: isinstance(e, MessageReceived)))
    for i, msg in enumerate(received):
        assert isinstance(msg, MessageReceived)
        assert msg.body == body_for(i), f"message {i}"
        assert_same(msg.properties, pika_props(i))
    delete(client, ch, queue)
    client.close()


def test_message_over_the_size_bound_closes_the_channel_and_is_not_lost(rabbitmq_url: str) -> None:
    queue = f"engine091-big-{uuid.uuid4()}"
    big = bytes(range(256)) * 1000  # 256,000 octets
    small = EngineClient(rabbitmq_url, max_message_size=100_000)
    ch = open_channel(small)
    declare(small, ch, queue)
    small.conn.publish(ch, "", queue, big, C.Basic.Properties(message_id="big"))
    small.conn.consume(ch, queue)
    closed = small.wait_for(lambda e: isinstance(e, ChannelClosed))
    assert isinstance(closed, ChannelClosed) and closed.code == 311 and not closed.by_peer
    assert "message size 256000 is larger than configured max size 100000" in closed.text
    assert not [e for e in small.backlog if isinstance(e, MessageReceived)]
    assert small.conn.is_open and small.conn.buffered == 0
    large = EngineClient(rabbitmq_url)  # the broker requeued it: a roomier client gets it
    lch = open_channel(large)
    large.conn.get(lch, queue)
    got = large.wait_for(lambda e: isinstance(e, MessageReceived))
    assert isinstance(got, MessageReceived) and got.body == big
    assert got.properties.message_id == "big" and got.method.redelivered
    delete(large, lch, queue)
    large.close()
    small.close()
