"""kombu's SimpleQueue: put COUNT messages with headers, then get them one by one,
acknowledging each, and one more get that finds the queue empty. Usage: URL QUEUE COUNT."""

import sys

from kombu import Connection

url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Connection(url, connect_timeout=10) as connection:
    queue = connection.SimpleQueue(name)
    for i in range(count):
        queue.put({"n": i}, headers={"seq": i, "kind": "order"}, serializer="json")
    print(f"put {count}", flush=True)
    for _ in range(count):
        message = queue.get(block=True, timeout=30)
        print(f"got {message.payload['n']} headers={sorted(message.headers.items())} "
              f"redelivered={message.delivery_info['redelivered']}", flush=True)
        message.ack()
    try:
        queue.get(block=True, timeout=1)
        print("then another", flush=True)
    except queue.Empty:
        print("then empty", flush=True)
    queue.close()
