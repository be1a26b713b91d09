"""A Celery client of ``celery_rpc_app`` (tests/apps/programs) that waits for each result
before it sends the next task: ``square.delay(TOKEN, i).get()`` for i in range(COUNT);
prints ``right R/COUNT`` and ``rate X tasks/s``. From the first ``.get()`` on, the
``rpc://`` reply queue has a consumer while the next task's redeclare of it is sent."""

import sys
import time

from celery_rpc_app import square

token, count = sys.argv[1], int(sys.argv[2])
started = time.monotonic()
right = sum(1 for i in range(count) if square.delay(token, i).get(timeout=60) == i * i)
elapsed = time.monotonic() - started
print(f"right {right}/{count}", flush=True)
print(f"rate {count / elapsed:.1f} tasks/s", flush=True)
