"""The RabbitMQ tutorial's RPC server (tutorial 6, pika): ``URL QUEUE``. Declares QUEUE,
takes one request at a time (prefetch 1) and answers each with ``n*2`` to its
``reply_to`` through the default exchange, with the request's ``correlation_id``; acks
after answering. Prints ``ready`` once consuming; runs until killed."""

import sys

import pika

url, queue = sys.argv[1], sys.argv[2]
connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
channel.queue_declare(queue=queue)
channel.basic_qos(prefetch_count=1)


def on_request(ch, method, props, body):  # type: ignore[no-untyped-def]
    n = int(body)
    ch.basic_publish(exchange="", routing_key=props.reply_to,
                     properties=pika.BasicProperties(correlation_id=props.correlation_id),
                     body=str(n * 2))
    ch.basic_ack(delivery_tag=method.delivery_tag)


channel.basic_consume(queue=queue, on_message_callback=on_request)
print("ready", flush=True)
channel.start_consuming()
