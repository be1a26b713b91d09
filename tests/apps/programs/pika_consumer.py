"""A consumer (tutorial 2's worker) that also listens for the broker cancelling it
(``consumer_cancel_notify``): prints each message and ``cancelled by the broker`` when
its queue goes away, then exits. Usage: URL QUEUE."""

import sys

import pika

url, queue = sys.argv[1], sys.argv[2]
connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
channel.basic_qos(prefetch_count=1)


def on_message(ch, method, properties, body):  # type: ignore[no-untyped-def]
    print(f"received {body.decode()}", flush=True)
    ch.basic_ack(method.delivery_tag)


def on_cancel(frame):  # type: ignore[no-untyped-def]
    print("cancelled by the broker", flush=True)
    channel.stop_consuming()


channel.add_on_cancel_callback(on_cancel)
channel.basic_consume(queue, on_message)
print("consuming", flush=True)
channel.start_consuming()
connection.close()
