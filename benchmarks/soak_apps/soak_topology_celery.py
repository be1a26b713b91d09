"""The topology soak's Celery application: ALL of Celery's defaults (the ``celery`` task
queue, pidbox, events, gossip and mingle) and the ``rpc://`` result backend; only the
broker URL (BROKER_URL) is given. Its one task returns ``n * n``."""

import os

from celery import Celery

app = Celery("soak_topology_celery", broker=os.environ["BROKER_URL"], backend="rpc://")


@app.task
def square(n: int) -> int:
    """``n * n``."""
    return n * n
