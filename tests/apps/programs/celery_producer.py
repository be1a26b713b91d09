"""A Celery producer: ``record.delay(TOKEN, i)`` for i in range(COUNT), then exits."""

import sys

from celery_app import record

token, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    record.delay(token, i)
print(f"sent {count}", flush=True)
