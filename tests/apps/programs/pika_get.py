"""A polling consumer: a first ``basic_get`` that finds the queue empty, then gets until
COUNT messages came, acknowledging each, then one more get that finds the queue empty.
Usage: URL QUEUE COUNT."""

import sys
import time

import pika

url, queue, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
method, _, _ = channel.basic_get(queue)
print(f"first get: {'empty' if method is None else 'a message'}", flush=True)
time.sleep(1)  # the polling interval: nothing asks meanwhile
got = []
deadline = time.monotonic() + 60
while len(got) < count and time.monotonic() < deadline:
    method, properties, body = channel.basic_get(queue)
    if method is None:
        time.sleep(1)
        continue
    got.append(body.decode())
    print(f"got {body.decode()} redelivered={method.redelivered}", flush=True)
    channel.basic_ack(method.delivery_tag)
method, _, _ = channel.basic_get(queue)
print(f"got {len(got)}; then {'empty' if method is None else 'another'}", flush=True)
connection.close()
