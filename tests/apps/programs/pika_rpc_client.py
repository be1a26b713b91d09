"""The RabbitMQ tutorial's RPC client (tutorial 6, pika): ``URL QUEUE STYLE COUNT``.
STYLE ``exclusive``: replies come to an exclusive server-named queue (``queue_declare('',
exclusive=True)``); ``direct``: to RabbitMQ's direct reply-to (``amq.rabbitmq.reply-to``).
Makes COUNT calls one after another (each waits for its answer, at most 10 s) and
prints ``right R/COUNT`` and ``rate X calls/s``."""

import sys
import time
import uuid

import pika

url, queue, style, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
if style == "direct":
    reply_to = "amq.rabbitmq.reply-to"
else:
    reply_to = channel.queue_declare(queue="", exclusive=True).method.queue
answers: dict[str, bytes] = {}


def on_response(ch, method, props, body):  # type: ignore[no-untyped-def]
    answers[props.correlation_id] = body


channel.basic_consume(queue=reply_to, on_message_callback=on_response, auto_ack=True)
right = 0
started = time.monotonic()
for n in range(count):
    corr = str(uuid.uuid4())
    channel.basic_publish(exchange="", routing_key=queue, body=str(n),
                          properties=pika.BasicProperties(reply_to=reply_to,
                                                          correlation_id=corr))
    deadline = time.monotonic() + 10
    while corr not in answers and time.monotonic() < deadline:
        connection.process_data_events(time_limit=0.5)
    if answers.pop(corr, None) == str(n * 2).encode():
        right += 1
elapsed = time.monotonic() - started
print(f"right {right}/{count}", flush=True)
print(f"rate {count / elapsed:.1f} calls/s", flush=True)
connection.close()
