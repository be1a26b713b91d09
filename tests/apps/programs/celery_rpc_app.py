"""A Celery application with ALL of Celery's defaults and the ``rpc://`` result backend:
only the broker URL (``BROKER_URL``), ``result_backend = "rpc://"`` and, if given, the
task queue's name (``CELERY_QUEUE``: other Celery workers on a shared broker consume
``celery``) are set. Its one task records each run as a line in ``RECORD_FILE`` and
returns ``n * n``."""

import os
import time

from celery import Celery

app = Celery("celery_rpc_app", broker=os.environ["BROKER_URL"], backend="rpc://")
if "CELERY_QUEUE" in os.environ:
    app.conf.task_default_queue = os.environ["CELERY_QUEUE"]


@app.task
def square(token: str, n: int) -> int:
    """Append ``token n worker time`` to the record file (one short write: atomic with
    O_APPEND); the result is ``n * n``."""
    with open(os.environ["RECORD_FILE"], "a") as out:
        out.write(f"{token} {n} {square.request.hostname} {time.time():.6f}\n")
    return n * n
