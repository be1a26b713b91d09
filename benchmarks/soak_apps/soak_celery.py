"""A Celery application for the soak: Celery's defaults except the task queue's name
(SOAK_CELERY_QUEUE, so that the soak's tasks stay apart from any other Celery on the
node); its one task records the id it ran in RECORD_FILE."""

import os

from celery import Celery

app = Celery("soak_celery", broker=os.environ["BROKER_URL"])
app.conf.task_default_queue = os.environ["SOAK_CELERY_QUEUE"]


@app.task
def record(one: str) -> None:
    """Append ``one`` to the record file (a short write: atomic with O_APPEND)."""
    with open(os.environ["RECORD_FILE"], "a") as out:
        out.write(f"{one}\n")
