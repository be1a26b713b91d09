"""Clients that connect, declare and leave, in the topology soak (pika): each turn a new
connection declares the topic exchange NAME (durable), an exclusive server-named queue and
an auto-delete named queue, binds both (``churn.#``), publishes one message with
publisher confirms, reads it back from the exclusive queue (basic_get) and from the
auto-delete one (a consumer, cancelled once it has it) and leaves WITHOUT deleting anything (the broker must: exclusive — the connection gone; auto-delete — its
consumer gone). The id of each turn goes to RECORD, of each turn whose message came back
on both queues to RECORD.answered."""

import time
import uuid

import pika
from soak_common import Pace, arguments, call_records, disconnect

args = arguments(__doc__)
turns, answered = call_records(args.record)


def got_back(channel, queue, body):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        method, _props, found = channel.basic_get(queue, auto_ack=True)
        if method is not None:
            return found == body
        time.sleep(0.05)
    return False


def consumed(connection, channel, queue, body):
    """A consumer on ``queue`` until it has ``body``, then cancelled (an auto-delete
    queue goes with its last consumer)."""
    got = []
    tag = channel.basic_consume(queue, lambda ch, m, p, b: got.append(b), auto_ack=True)
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        connection.process_data_events(time_limit=0.2)
    channel.basic_cancel(tag)
    return got == [body]


for one in Pace(args.tag, args.rate, args.seconds):
    turns.add(one)
    try:
        connection = pika.BlockingConnection(pika.URLParameters(args.url))
        try:
            channel = connection.channel()
            channel.confirm_delivery()
            channel.exchange_declare(args.name, "topic", durable=True)
            exclusive = channel.queue_declare("", exclusive=True).method.queue
            auto = f"{args.name}.ad.{uuid.uuid4().hex[:8]}"
            channel.queue_declare(auto, auto_delete=True)
            for queue in (exclusive, auto):
                channel.queue_bind(queue, args.name, "churn.#")
            body = one.encode()
            channel.basic_publish(args.name, f"churn.{one}", body)
            if got_back(channel, exclusive, body) and consumed(connection, channel, auto, body):
                answered.add(one)
            else:
                print(f"unanswered: {one}", flush=True)
        finally:
            if connection.is_open:
                connection.close()
    except Exception as exc:
        disconnect(exc)
print("done", flush=True)
