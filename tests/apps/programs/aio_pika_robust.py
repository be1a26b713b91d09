"""An aio-pika application on a robust connection: publisher confirms on one channel,
a consumer with prefetch 10 on another, each publish retried until it is confirmed (as an
application that must not lose a message does). Prints ``confirmed ID`` for each
confirm and ``received ID`` for each message consumed; exits 0 once every confirmed
message was received, 1 if not within the time limit. Usage: URL EXCHANGE KEY QUEUE COUNT.
"""

import asyncio
import sys

import aio_pika


async def main(url: str, exchange_name: str, key: str, queue_name: str, count: int) -> int:
    connection = await aio_pika.connect_robust(url, reconnect_interval=0.5)
    received: set[str] = set()

    async def on_message(message: aio_pika.abc.AbstractIncomingMessage) -> None:
        async with message.process():
            received.add(str(message.message_id))
            print(f"received {message.message_id}", flush=True)

    consumer = await connection.channel()
    await consumer.set_qos(prefetch_count=10)
    queue = await consumer.declare_queue(queue_name, durable=True)
    await queue.consume(on_message)
    publisher = await connection.channel(publisher_confirms=True)
    exchange = await publisher.declare_exchange(exchange_name, aio_pika.ExchangeType.DIRECT,
                                                durable=True)
    confirmed: list[str] = []
    for i in range(count):
        message_id = f"m-{i}"
        while True:
            try:
                await exchange.publish(aio_pika.Message(f"payload {i}".encode(),
                                                        message_id=message_id,
                                                        delivery_mode=2),
                                       routing_key=key, timeout=5)
                break
            except Exception as error:
                print(f"retrying {message_id}: {type(error).__name__}", flush=True)
                await asyncio.sleep(0.2)
        confirmed.append(message_id)
        print(f"confirmed {message_id}", flush=True)
        await asyncio.sleep(0.005)  # a steady producer, not a burst
    for _ in range(600):
        if received.issuperset(confirmed):
            print(f"all {len(confirmed)} confirmed received", flush=True)
            await connection.close()
            return 0
        await asyncio.sleep(0.1)
    print(f"missing: {sorted(set(confirmed) - received)}", flush=True)
    return 1


sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
                          int(sys.argv[5]))))
