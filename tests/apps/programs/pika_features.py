"""RabbitMQ features an application commonly leans on, each a small pika program:
``pika_features.py URL SCENARIO``. Prints ``result <json>`` — what the application saw,
with the run's names as ``<T>`` and times as ``<time>`` — so that the same run straight
to RabbitMQ and through a façade can be compared line by line.

Scenarios: ``stream_offsets`` (a stream read from ``first``, an offset and ``last``, with
``basic.qos`` as RabbitMQ requires), ``stream_refusals`` (a stream consumer without its
own prefetch, and ``basic.get`` of a stream, which RabbitMQ refuses), ``consumer_priorities`` (``x-priority``: the higher
consumer takes everything while it has room), ``dead_letters`` (``x-dead-letter-exchange``:
rejected, nacked and expired messages consumed from the dead-letter queue, with their
``x-death`` and ``x-first-death-*`` headers and the exchange and key they come with),
``get_counts`` (``basic.get``'s ``message_count``, and a loop draining a queue by it),
``requeue`` (``basic.reject`` / ``basic.nack`` with requeue, then ``basic.get`` again: on a
classic queue the message given back comes again before the next one; on a quorum queue
with its ``x-delivery-count``), ``queue_shortcuts`` (an empty queue name standing for the
channel's last declared queue).
"""

from __future__ import annotations

import datetime
import json
import sys
import time
import uuid
from typing import Any

import pika

URL, SCENARIO = sys.argv[1], sys.argv[2]
TAG = uuid.uuid4().hex[:8]
WAIT = 20.0  # seconds at most for what is awaited (a bound, not a measurement)


def plain(value: Any) -> Any:
    """``value`` for the output: the run's names as <T>, times as <time>."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return plain(value.decode())
    if isinstance(value, str):
        return value.replace(TAG, "<T>")
    if isinstance(value, datetime.datetime):
        return "<time>"
    return value


def result(**what: Any) -> None:
    print("result", json.dumps(plain(what), sort_keys=True), flush=True)


def connect() -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(URL))


def wait_until(conn: pika.BlockingConnection, done: Any) -> None:
    deadline = time.monotonic() + WAIT
    while not done() and time.monotonic() < deadline:
        conn.process_data_events(0.05)


def stream_offsets() -> None:
    stream = f"test.features.stream.{TAG}"
    conn = connect()
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare(stream, durable=True, arguments={"x-queue-type": "stream"})
    try:
        for i in range(5):
            ch.basic_publish("", stream, f"m{i}".encode())
        for offset, expected in (("first", 5), (2, 3), ("last", 1)):
            reader = conn.channel()
            reader.basic_qos(prefetch_count=10)  # RabbitMQ requires it on a stream
            got: list[tuple[str, Any]] = []

            def take(c: Any, m: Any, p: Any, body: bytes, got: list[Any] = got) -> None:
                got.append((body.decode(), (p.headers or {}).get("x-stream-offset")))
                c.basic_ack(m.delivery_tag)

            tag = reader.basic_consume(stream, take,
                                       arguments={"x-stream-offset": offset})
            wait_until(conn, lambda got=got, n=expected: len(got) >= n)
            conn.process_data_events(0.2)  # (nothing more may come)
            reader.basic_cancel(tag)
            reader.close()
            result(offset=offset, got=got)
    finally:
        ch.queue_delete(stream)
        conn.close()


def consumer_priorities() -> None:
    queue = f"test.features.cprio.{TAG}"
    conn = connect()
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare(queue)
    try:
        counts = {"low": 0, "high": 0}
        for name, priority in (("low", 1), ("high", 10)):
            consumer = conn.channel()
            consumer.basic_qos(prefetch_count=100)

            def take(c: Any, m: Any, p: Any, body: bytes, name: str = name) -> None:
                counts[name] += 1
                c.basic_ack(m.delivery_tag)

            consumer.basic_consume(queue, take, arguments={"x-priority": priority})
        wait_until(conn, lambda: ch.queue_declare(queue, passive=True)
                   .method.consumer_count == 2)
        for i in range(20):
            ch.basic_publish("", queue, f"m{i}".encode())
        wait_until(conn, lambda: sum(counts.values()) >= 20)
        result(counts=counts)
    finally:
        ch.queue_delete(queue)
        conn.close()


def dead_letters() -> None:
    source, dlx, dead = (f"test.features.dl.{what}.{TAG}" for what in ("src", "x", "dead"))
    conn = connect()
    ch = conn.channel()
    ch.confirm_delivery()
    ch.exchange_declare(dlx, "fanout")
    ch.queue_declare(dead)
    ch.queue_bind(dead, dlx)
    ch.queue_declare(source, arguments={"x-dead-letter-exchange": dlx})
    try:
        ch.basic_publish("", source, b"rejected", pika.BasicProperties(headers={"app": 1}))
        ch.basic_publish("", source, b"nacked")
        ch.basic_publish("", source, b"expired", pika.BasicProperties(expiration="1"))
        method, _, _ = ch.basic_get(source)
        ch.basic_reject(method.delivery_tag, requeue=False)
        method, _, _ = ch.basic_get(source)
        ch.basic_nack(method.delivery_tag, requeue=False)
        got: list[dict[str, Any]] = []
        deadline = time.monotonic() + WAIT
        while len(got) < 3 and time.monotonic() < deadline:
            ch.queue_declare(source, passive=True)  # (the expired one dies at the head)
            method, props, body = ch.basic_get(dead, auto_ack=True)
            if method is None:
                conn.process_data_events(0.1)
                continue
            got.append({"body": body, "exchange": method.exchange,
                        "routing_key": method.routing_key, "headers": props.headers})
        for message in sorted(got, key=lambda m: m["body"]):
            result(**message)
    finally:
        for queue in (source, dead):
            ch.queue_delete(queue)
        ch.exchange_delete(dlx)
        conn.close()


def requeue() -> None:
    conn = connect()
    ch = conn.channel()
    ch.confirm_delivery()
    for kind, count in (("classic", 3), ("quorum", 1)):
        queue = f"test.features.requeue.{kind}.{TAG}"
        ch.queue_declare(queue, durable=True, arguments={"x-queue-type": kind})
        try:
            for i in range(count):
                ch.basic_publish("", queue, f"m{i}".encode())
            seen = []
            for i in range(3 * count):  # each message given back twice, then acked
                method, props, body = ch.basic_get(queue)
                seen.append([body, method.redelivered, (props.headers or {}).get(
                    "x-delivery-count")])
                if i % 3 == 0:
                    ch.basic_reject(method.delivery_tag, requeue=True)
                elif i % 3 == 1:
                    ch.basic_nack(method.delivery_tag, requeue=True)
                else:
                    ch.basic_ack(method.delivery_tag)
            result(queue=kind, seen=seen)
        finally:
            ch.queue_delete(queue)
    conn.close()


def stream_refusals() -> None:
    """What a stream does not serve over 0-9-1: basic.get, a consumer without prefetch."""
    stream = f"test.features.refusals.{TAG}"
    conn = connect()
    ch = conn.channel()
    ch.confirm_delivery()
    ch.queue_declare(stream, durable=True, arguments={"x-queue-type": "stream"})
    ch.basic_publish("", stream, b"m0")
    try:
        for qos in (None, 0, "global"):
            ch = conn.channel()
            if qos is not None:
                ch.basic_qos(prefetch_count=5 if qos == "global" else 0,
                             global_qos=qos == "global")
            try:
                ch.basic_consume(stream, lambda *a: None)
                conn.process_data_events(0.2)
                result(consume=qos, refused=None)
            except pika.exceptions.ChannelClosedByBroker as exc:
                result(consume=qos, refused=[exc.reply_code, exc.reply_text])
        try:
            result(get=conn.channel().basic_get(stream)[2])
        except pika.exceptions.ConnectionClosedByBroker as exc:
            result(get=[exc.reply_code, exc.reply_text])
    finally:
        conn = connect()
        conn.channel().queue_delete(stream)
        conn.close()


def get_counts() -> None:
    """basic.get's message_count: how many are left; a drain loop trusting it."""
    conn = connect()
    ch = conn.channel()
    ch.confirm_delivery()
    for kind in ("classic", "quorum"):
        queue = f"test.features.get.{kind}.{TAG}"
        ch.queue_declare(queue, durable=True, arguments={"x-queue-type": kind})
        try:
            for i in range(4):
                ch.basic_publish("", queue, f"m{i}".encode())
            seen = []
            method, _, body = ch.basic_get(queue)
            seen.append([body, method.message_count])
            ch.basic_reject(method.delivery_tag, requeue=True)
            while True:  # drain by the count, as applications do
                method, _, body = ch.basic_get(queue, auto_ack=True)
                if method is None:
                    seen.append(None)
                    break
                seen.append([body, method.message_count])
                if method.message_count == 0:
                    break
            result(queue=kind, seen=seen, empty=ch.basic_get(queue)[0] is None)
        finally:
            ch.queue_delete(queue)
    conn.close()


def queue_shortcuts() -> None:
    """An empty queue name in bind, get, consume, purge and delete: the channel's last
    declared queue (a server-named one here); before any declare, 404."""
    conn = connect()
    try:
        conn.channel().basic_get("")
    except pika.exceptions.ChannelClosedByBroker as exc:
        result(before_declare=[exc.reply_code, exc.reply_text])
    ch = conn.channel()
    ch.confirm_delivery()
    queue = ch.queue_declare("", exclusive=True).method.queue
    ch.queue_bind("", "amq.direct")  # routing key empty too: the queue's name
    for i in range(2):
        ch.basic_publish("amq.direct", queue, f"m{i}".encode(), mandatory=True)
    method, _, body = ch.basic_get("")
    ch.basic_ack(method.delivery_tag)
    got = [[body, method.message_count]]
    tag = ch.basic_consume("", lambda c, m, p, b: (got.append([b, None]),
                                                   c.basic_ack(m.delivery_tag)))
    wait_until(conn, lambda: len(got) == 2)
    ch.basic_cancel(tag)
    ch.basic_publish("amq.direct", queue, b"m2", mandatory=True)
    purged = ch.queue_purge("").method.message_count
    ch.queue_unbind("", "amq.direct")
    try:
        ch.basic_publish("amq.direct", queue, b"m3", mandatory=True)
        unbound = "routed"
    except pika.exceptions.UnroutableError:
        unbound = "unroutable"
    deleted = ch.queue_delete("").method.message_count
    result(got=got, purged=purged, after_unbind=unbound, deleted=deleted)
    conn.close()


{"stream_offsets": stream_offsets, "queue_shortcuts": queue_shortcuts, "stream_refusals": stream_refusals,
 "get_counts": get_counts,
 "requeue": requeue, "consumer_priorities": consumer_priorities,
 "dead_letters": dead_letters}[SCENARIO]()
print("done", flush=True)
