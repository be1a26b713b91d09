"""A FastStream (RabbitMQ, aio-pika) application: a subscriber that publishes what it
returns to a second one, ``broker.request`` (RPC over ``amq.rabbitmq.reply-to``: FastStream
declares that name passively first), a topic exchange with ``*.error`` and ``#`` queues,
a quorum queue's subscriber that nacks each message with requeue twice (``NackMessage``).

Usage: faststream_app.py URL TAG; prints ``result {json}`` then ``done``."""
import asyncio
import json
import sys
from contextlib import closing

import pika
from faststream.exceptions import NackMessage
from faststream.rabbit import ExchangeType, QueueType, RabbitBroker, RabbitExchange, RabbitQueue

url, tag = sys.argv[1], sys.argv[2]
broker = RabbitBroker(url)
got: dict = {"in": [], "out": [], "topic": [], "nacked": []}
tries: dict = {}
ex = RabbitExchange(f"fw_fs_{tag}.logs", type=ExchangeType.TOPIC, auto_delete=True)

@broker.subscriber(f"fw_fs_{tag}.in")
@broker.publisher(f"fw_fs_{tag}.out")
async def handle(body: dict) -> dict:
    got["in"].append(body["n"])
    return {"n": body["n"] * 10}

@broker.subscriber(f"fw_fs_{tag}.out")
async def out(body: dict) -> None:
    got["out"].append(body["n"])

@broker.subscriber(f"fw_fs_{tag}.rpc")
async def rpc(body: str) -> str:
    return body.upper()

@broker.subscriber(RabbitQueue(f"fw_fs_{tag}.errors", auto_delete=True, routing_key="*.error"), ex)
async def errors(body: str) -> None:
    got["topic"].append(["errors", body])

@broker.subscriber(RabbitQueue(f"fw_fs_{tag}.all", auto_delete=True, routing_key="#"), ex)
async def everything(body: str) -> None:
    got["topic"].append(["all", body])

@broker.subscriber(RabbitQueue(f"fw_fs_{tag}.quorum", durable=True,
                              queue_type=QueueType.QUORUM))
async def twice_nacked(body: str) -> None:
    tries[body] = tries.get(body, 0) + 1
    if tries[body] < 3:
        raise NackMessage(requeue=True)
    got["nacked"].append([body, tries[body]])

async def main() -> None:
    async with broker:
        await broker.start()
        for n in range(5):
            await broker.publish({"n": n}, f"fw_fs_{tag}.in")
        replies = []
        for word in ("alpha", "beta"):
            msg = await broker.request(word, f"fw_fs_{tag}.rpc", timeout=10)
            replies.append(await msg.decode())
        for key in ("db.error", "web.info", "a.b.error"):
            await broker.publish(key, exchange=ex, routing_key=key)
        for body in ("q1", "q2"):
            await broker.publish(body, f"fw_fs_{tag}.quorum")
        for _ in range(100):
            if len(got["out"]) == 5 and len(got["topic"]) == 4 \
                    and len(got["nacked"]) == 2:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.5)
        print("result", json.dumps({"in": sorted(got["in"]), "out": sorted(got["out"]),
              "rpc": replies, "topic": sorted(got["topic"]),
              "nacked": sorted(got["nacked"])}))
    with closing(pika.BlockingConnection(pika.URLParameters(url))) as c:
        for name in ("in", "out", "rpc", "quorum"):
            c.channel().queue_delete(f"fw_fs_{tag}.{name}")
    print("done")

asyncio.run(main())
