"""The 0-9-1 façade with further independent clients: aio-pika and kombu, with their
default behaviour (they declare exchanges and queues and bind them), and the reply
queues Celery / kombu / pika applications make: server-named or exclusive temporary
queues bound to a façade exchange (docs/semantics.md, "Temporary queues").

One ``amqp-bridge run`` serves the module, RabbitMQ's AMQP 1.0 behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import aio_pika
import kombu
import pika
import pika.exceptions
import pytest
from proton import Message

from amqp091.methods import ReplyCode
from tests.support.facade091 import Facade091 as Facade
from tests.support.facade091 import facade091
from tests.support.rabbitmq import assert_no_message, send_messages

TOPIC = "/exchange/amq.topic"


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    def routes(q: dict[str, str], _: dict[str, str]) -> str:
        return f"""
  - name: kombu-out
    from: {{listener: legacy, exchange: tasks}}
    to:   {{connection: cloud, address: {q["kombu"]}}}
  - name: kombu-in
    from: {{connection: cloud, address: {q["kombu"]}}}
    to:   {{listener: legacy, queue: celery}}
  - name: aio-out
    from: {{listener: legacy, exchange: events}}
    to:   {{connection: cloud, address: {q["aio"]}}}
  - name: aio-in
    from: {{connection: cloud, address: {q["aio"]}}}
    to:   {{listener: legacy, queue: events.q}}
  - name: replies
    from: {{connection: cloud, address: "{TOPIC}/{{binding_key}}"}}
    to:   {{listener: legacy, exchange: replies}}
"""

    with facade091(rabbitmq_url, tmp_path_factory.mktemp("facade091-clients"),
                   ("kombu", "aio"), routes) as running:
        yield running


def reply_key() -> str:
    """A binding key no other test (or helper) on the shared amq.topic uses."""
    return f"facade2.{uuid.uuid4().hex}"


# --- kombu ---------------------------------------------------------------------------------


def test_kombu_round_trip_with_its_default_declares(facade: Facade) -> None:
    exchange = kombu.Exchange("tasks", type="direct", durable=True)
    queue = kombu.Queue("celery", exchange, routing_key="celery", durable=True)
    with kombu.Connection(facade.url, connect_timeout=10) as conn:
        # Producer.publish(declare=[queue]): exchange.declare, queue.declare, queue.bind
        with conn.Producer() as producer:
            for i in range(5):
                producer.publish({"task": "add", "args": [i, i]}, exchange=exchange,
                                 routing_key="celery", declare=[queue], serializer="json",
                                 headers={"id": f"task-{i}"}, retry=False)
        got: list[tuple[Any, Any]] = []
        with conn.Consumer(queue, callbacks=[lambda body, msg: (got.append((body, msg)),
                                                                msg.ack())],
                           accept=["json"], prefetch_count=2):
            deadline = time.monotonic() + 20
            while len(got) < 5:
                assert time.monotonic() < deadline, f"{len(got)} of 5 reached kombu"
                with contextlib.suppress(TimeoutError):
                    conn.drain_events(timeout=0.5)
    assert [body for body, _ in got] == [{"task": "add", "args": [i, i]} for i in range(5)]
    assert [msg.headers["id"] for _, msg in got] == [f"task-{i}" for i in range(5)]
    assert {msg.delivery_info["routing_key"] for _, msg in got} == {"celery"}
    assert_no_message(facade.rabbitmq_url, facade.address("kombu"))  # all acknowledged


def test_kombu_reply_queue_bound_to_a_facade_exchange(facade: Facade) -> None:
    """Celery's and kombu's reply queue: exclusive, auto-delete, named by the client,
    bound to an exchange; the replies come from the 1.0 side."""
    key = reply_key()
    replies = kombu.Queue(f"reply-{uuid.uuid4().hex}", kombu.Exchange("replies", "topic"),
                          routing_key=key, exclusive=True, auto_delete=True, durable=False)
    got: list[Any] = []
    with kombu.Connection(facade.url, connect_timeout=10) as conn, \
            conn.Consumer(replies, callbacks=[lambda body, msg: (got.append(body), msg.ack())],
                          accept=["json"]):
        # bound (its bind-ok came once the 1.0 link was attached): RabbitMQ keeps replies
        send_messages(facade.rabbitmq_url, f"{TOPIC}/{key}",
                      [Message(body=f'{{"result": {i}}}'.encode(), inferred=True,
                               content_type="application/json") for i in range(3)])
        deadline = time.monotonic() + 20
        while len(got) < 3:
            assert time.monotonic() < deadline, f"{len(got)} of 3 replies reached kombu"
            with contextlib.suppress(TimeoutError):
                conn.drain_events(timeout=0.5)
    assert got == [{"result": i} for i in range(3)]


# --- aio-pika ------------------------------------------------------------------------------


def test_aio_pika_round_trip(facade: Facade) -> None:
    async def run() -> list[tuple[bytes, Any]]:
        conn = await aio_pika.connect_robust(facade.url)
        async with conn:
            channel = await conn.channel(publisher_confirms=True)
            await channel.set_qos(prefetch_count=3)
            exchange = await channel.declare_exchange("events", aio_pika.ExchangeType.TOPIC,
                                                      durable=True)
            queue = await channel.declare_queue("events.q", durable=True)
            await queue.bind(exchange, "events.#")
            for i in range(6):  # confirmed: each await returns once RabbitMQ's 1.0 took it
                await exchange.publish(aio_pika.Message(
                    f"event {i}".encode(), message_id=f"e-{i}", headers={"n": i},
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT), routing_key=f"events.{i}")
            got: list[tuple[bytes, Any]] = []
            async with queue.iterator() as messages:
                async for message in messages:
                    async with message.process():  # acknowledged at the end of the block
                        got.append((message.body, message))
                    if len(got) == 6:
                        break
            return got

    got = asyncio.run(asyncio.wait_for(run(), 30))
    assert [body for body, _ in got] == [f"event {i}".encode() for i in range(6)]
    assert [m.message_id for _, m in got] == [f"e-{i}" for i in range(6)]
    assert [m.headers["n"] for _, m in got] == list(range(6))
    assert_no_message(facade.rabbitmq_url, facade.address("aio"))


def test_aio_pika_server_named_exclusive_queue(facade: Facade) -> None:
    key = reply_key()

    async def run() -> tuple[str, list[bytes]]:
        conn = await aio_pika.connect(facade.url)
        async with conn:
            channel = await conn.channel()
            queue = await channel.declare_queue(exclusive=True)  # server-named
            await queue.bind("replies", key)
            await asyncio.to_thread(send_messages, facade.rabbitmq_url, f"{TOPIC}/{key}",
                                    [Message(body=f"r{i}".encode(), inferred=True)
                                     for i in range(4)])
            got: list[bytes] = []
            async with queue.iterator() as messages:
                async for message in messages:
                    await message.ack()
                    got.append(message.body)
                    if len(got) == 4:
                        break
            return queue.name, got

    name, got = asyncio.run(asyncio.wait_for(run(), 30))
    assert name.startswith("amq.gen-")
    assert got == [f"r{i}".encode() for i in range(4)]


# --- pika: the temporary queue's life ------------------------------------------------------


def test_pika_server_named_queue_bound_consumed_and_gone_with_the_connection(
        facade: Facade) -> None:
    key = reply_key()
    with facade.connect() as conn:
        ch = conn.channel()
        ch.exchange_declare("replies", "topic", passive=True)
        name = ch.queue_declare("", exclusive=True).method.queue
        assert name.startswith("amq.gen-")
        ch.queue_bind(name, "replies", f"{key}.#")  # bind-ok: the 1.0 link is attached
        # published before anyone consumes: the 1.0 broker keeps it for the bound queue
        send_messages(facade.rabbitmq_url, f"{TOPIC}/{key}.early",
                      [Message(body=b"early", inferred=True, subject=f"{key}.early")])
        ch.basic_qos(prefetch_count=5)
        got: list[tuple[Any, bytes]] = []
        tag = ch.basic_consume(name, lambda c, m, p, b: got.append((m, b)))
        assert ch.queue_declare(name, passive=True).method.consumer_count == 1
        send_messages(facade.rabbitmq_url, f"{TOPIC}/{key}.late",
                      [Message(body=b"late", inferred=True, subject=f"{key}.late")])
        deadline = time.monotonic() + 20
        while len(got) < 2:
            assert time.monotonic() < deadline, f"{len(got)} of 2 arrived"
            conn.process_data_events(time_limit=0.1)
        assert [b for _, b in got] == [b"early", b"late"]
        assert [m.exchange for m, _ in got] == ["replies", "replies"]
        assert [m.routing_key for m, _ in got] == [f"{key}.early", f"{key}.late"]
        ch.basic_ack(got[-1][0].delivery_tag, multiple=True)
        # one binding per temporary queue; a second consumer of it is refused
        other = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            other.basic_consume(name, lambda *a: None)
        assert info.value.reply_code == ReplyCode.ACCESS_REFUSED
        ch.basic_cancel(tag)  # its only consumer: the queue goes (auto-delete)
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare(name, passive=True)
        assert info.value.reply_code == ReplyCode.NOT_FOUND
    with facade.connect() as conn:  # another connection never sees it
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            conn.channel().queue_declare(name, passive=True)
        assert info.value.reply_code == ReplyCode.NOT_FOUND


def test_temporary_queue_refusals(facade: Facade) -> None:
    with facade.connect() as conn:
        ch = conn.channel()
        name = ch.queue_declare("", exclusive=True).method.queue
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_bind(name, "no-such-exchange", "k")
        assert info.value.reply_code == ReplyCode.NOT_FOUND
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_bind(name, "tasks", "k")  # a publish exchange: no subscription route
        assert info.value.reply_code == ReplyCode.ACCESS_REFUSED
        assert "'replies'" in info.value.reply_text
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_consume(name, lambda *a: None)  # bound to nothing yet
        assert info.value.reply_code == ReplyCode.NOT_FOUND
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare("durable-and-unknown", durable=True)  # not temporary: refused
        assert info.value.reply_code == ReplyCode.ACCESS_REFUSED
        ch = conn.channel()
        key = reply_key()
        ch.queue_bind(name, "replies", key)
        ch.queue_delete(name)  # bound, never consumed: its link goes
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare(name, passive=True)
        assert info.value.reply_code == ReplyCode.NOT_FOUND
        assert conn.is_open


def test_temporary_queues_of_one_exchange_share_the_route_without_starving(
        facade: Facade) -> None:
    """Consumers without prefetch (no-ack: Celery's event and remote-control queues) on
    two connections, each with a temporary queue bound to the same façade exchange: the
    first does not take the route's whole window of link credit from the second."""
    keys = [reply_key(), reply_key()]
    conns = [facade.connect(), facade.connect()]
    got: list[list[bytes]] = [[], []]
    try:
        for i, (conn, key) in enumerate(zip(conns, keys, strict=True)):
            ch = conn.channel()
            name = ch.queue_declare("", exclusive=True).method.queue
            ch.queue_bind(name, "replies", key)
            ch.basic_consume(name, lambda c, m, p, b, i=i: got[i].append(b), auto_ack=True)
            conn.process_data_events(time_limit=0.2)
        for i, key in enumerate(keys):
            send_messages(facade.rabbitmq_url, f"{TOPIC}/{key}",
                          [Message(body=f"to {i}: {n}".encode(), inferred=True)
                           for n in range(5)])
        deadline = time.monotonic() + 20
        while len(got[0]) < 5 or len(got[1]) < 5:
            assert time.monotonic() < deadline, f"{len(got[0])} and {len(got[1])} of 5"
            for conn in conns:
                conn.process_data_events(time_limit=0.05)
    finally:
        for conn in conns:
            conn.close()
    assert got == [[f"to {i}: {n}".encode() for n in range(5)] for i in (0, 1)]
