"""A Celery client of ``celery_rpc_app``: ``square.delay(TOKEN, i)`` for i in
range(COUNT), then ``AsyncResult.get()`` of each (through the ``rpc://`` backend); prints
``right R/COUNT`` (results equal to i * i) and ``rate X tasks/s`` (sending to the last
result)."""

import sys
import time

from celery_rpc_app import square

token, count = sys.argv[1], int(sys.argv[2])
started = time.monotonic()
results = [square.delay(token, i) for i in range(count)]
right = sum(1 for i, result in enumerate(results) if result.get(timeout=60) == i * i)
elapsed = time.monotonic() - started
print(f"right {right}/{count}", flush=True)
print(f"rate {count / elapsed:.1f} tasks/s", flush=True)
