"""A kombu producer to a topic exchange: one message per routing key, in order.
Usage: URL EXCHANGE KEY..."""

import sys

from kombu import Connection, Exchange

url, name, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
exchange = Exchange(name, type="topic", durable=True)
with Connection(url, connect_timeout=10) as connection, connection.Producer() as producer:
    for i, key in enumerate(keys):
        producer.publish({"n": i, "key": key}, exchange=exchange, routing_key=key,
                         declare=[exchange], serializer="json", retry=False)
    print(f"published {len(keys)}", flush=True)
