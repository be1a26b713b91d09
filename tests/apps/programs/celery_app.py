"""A Celery application with Celery's default settings: only the broker URL
(``BROKER_URL``) is given. Its one task records each run as a line in ``RECORD_FILE``."""

import os
import time

from celery import Celery

app = Celery("celery_app", broker=os.environ["BROKER_URL"])


@app.task
def record(token: str, n: int) -> int:
    """Append ``token n worker time`` to the record file (one short write: atomic with O_APPEND)."""
    with open(os.environ["RECORD_FILE"], "a") as out:
        out.write(f"{token} {n} {record.request.hostname} {time.time():.6f}\n")
    return n
