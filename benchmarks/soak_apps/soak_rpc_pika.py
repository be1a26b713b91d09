"""The RabbitMQ tutorial's RPC (tutorial 6, pika) in the topology soak. ``--mode server``
declares the request queue NAME and answers each request (``n*2``, to its ``reply_to``
through the default exchange, with its ``correlation_id``) until stopped. ``--mode
client`` calls at a pace on a NEW connection every ``--per-connection`` calls, its
replies (``--style``) to an exclusive server-named queue of that connection
(``exclusive``: one more temporary queue each time) or RabbitMQ's direct reply-to
(``direct``). The id of each call goes to RECORD, of each right answer to
RECORD.answered; a call without its answer within 10 s is printed ``unanswered: ID``."""

import time
import uuid

import pika
from soak_common import Pace, Stop, arguments, call_records, disconnect

args = arguments(__doc__, ("--mode", str, "client"), ("--style", str, "exclusive"),
                 ("--per-connection", int, 10))


def serve():
    stop = Stop()
    while not stop.requested:
        try:
            connection = pika.BlockingConnection(pika.URLParameters(args.url))
            channel = connection.channel()
            channel.queue_declare(queue=args.name)
            channel.basic_qos(prefetch_count=1)

            def on_request(ch, method, props, body):
                ch.basic_publish(exchange="", routing_key=props.reply_to, body=str(int(body) * 2),
                                 properties=pika.BasicProperties(correlation_id=props.correlation_id))
                ch.basic_ack(delivery_tag=method.delivery_tag)

            channel.basic_consume(queue=args.name, on_message_callback=on_request)
            print("ready", flush=True)
            while not stop.requested:
                connection.process_data_events(time_limit=0.5)
            connection.close()
        except Exception as exc:
            disconnect(exc)


def call():
    calls, answered = call_records(args.record)
    pace = iter(Pace(args.tag, args.rate, args.seconds))
    n = 0
    more = True
    while more:
        try:
            connection = pika.BlockingConnection(pika.URLParameters(args.url))
            channel = connection.channel()
            if args.style == "direct":
                reply_to = "amq.rabbitmq.reply-to"
            else:
                reply_to = channel.queue_declare(queue="", exclusive=True).method.queue
            answers = {}

            def on_reply(ch, method, props, body, answers=answers):
                answers[props.correlation_id] = body

            channel.basic_consume(queue=reply_to, auto_ack=True, on_message_callback=on_reply)
            for _ in range(args.per_connection):
                one = next(pace, None)
                if one is None:
                    more = False
                    break
                n += 1
                calls.add(one)
                corr = str(uuid.uuid4())
                channel.basic_publish(exchange="", routing_key=args.name, body=str(n),
                                      properties=pika.BasicProperties(reply_to=reply_to,
                                                                      correlation_id=corr))
                deadline = time.monotonic() + 10
                while corr not in answers and time.monotonic() < deadline:
                    connection.process_data_events(time_limit=0.2)
                if answers.pop(corr, None) == str(n * 2).encode():
                    answered.add(one)
                else:
                    print(f"unanswered: {one}", flush=True)
            connection.close()
        except Exception as exc:  # the call in progress is lost with its reply queue
            disconnect(exc)


if args.mode == "server":
    serve()
else:
    call()
print("done", flush=True)
