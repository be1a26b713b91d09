"""The soak's Celery producer: ``record.delay(id)`` at a pace; an id is recorded once
``delay()`` returned (Celery publishes with confirms off: the broker took it)."""

from soak_celery import record
from soak_common import Pace, Record, arguments, disconnect

args = arguments(__doc__)
sent = Record(args.record)
for one in Pace(args.tag, args.rate, args.seconds):
    while True:
        try:
            record.delay(one)
            break
        except Exception as exc:  # kombu gave up its retries: again
            disconnect(exc)
    sent.add(one)
print("done", flush=True)
