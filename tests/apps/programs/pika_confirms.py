"""RabbitMQ tutorial 7's publisher: publisher confirms, persistent messages, each
``basic_publish`` waiting for its confirm. Usage: URL EXCHANGE KEY COUNT."""

import sys

import pika

url, exchange, key, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
channel.confirm_delivery()
for i in range(count):
    channel.basic_publish(exchange, key, f"message {i}".encode(), mandatory=True,
                          properties=pika.BasicProperties(delivery_mode=2,
                                                          message_id=f"m-{i}"))
print(f"confirmed {count}", flush=True)
try:
    channel.basic_publish(exchange, "no.route.for.this", b"lost?", mandatory=True)
except pika.exceptions.UnroutableError as returned:
    message = returned.messages[0].method
    print(f"returned {message.reply_code} {message.reply_text}", flush=True)
connection.close()
