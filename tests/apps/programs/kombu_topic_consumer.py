"""A kombu consumer of a queue bound to a topic exchange by a pattern: takes COUNT
messages, acknowledging each, then keeps listening for IDLE seconds for one too many.
Usage: URL EXCHANGE QUEUE PATTERN COUNT IDLE."""

import contextlib
import sys
import time

from kombu import Connection, Exchange, Queue

url, exchange_name, queue_name, pattern = sys.argv[1:5]
count, idle = int(sys.argv[5]), float(sys.argv[6])
queue = Queue(queue_name, Exchange(exchange_name, type="topic", durable=True),
              routing_key=pattern, durable=True)
got = []


def on_message(body, message):
    got.append(body)
    print(f"got {body['key']} n={body['n']} routing_key={message.delivery_info['routing_key']}"
          f" redelivered={message.delivery_info['redelivered']}", flush=True)
    message.ack()


with Connection(url, connect_timeout=10) as connection, \
        connection.Consumer(queue, callbacks=[on_message], accept=["json"]):
    print("consuming", flush=True)
    deadline = time.monotonic() + 30
    while len(got) < count and time.monotonic() < deadline:
        with contextlib.suppress(TimeoutError):
            connection.drain_events(timeout=1)
    quiet_until = time.monotonic() + idle
    while time.monotonic() < quiet_until:
        try:
            connection.drain_events(timeout=quiet_until - time.monotonic())
        except TimeoutError:
            break
print(f"done {len(got)}", flush=True)
