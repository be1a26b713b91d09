"""Celery through the 0-9-1 façade, configured as ``examples/celery.yaml`` (the recipe of
docs/migrating.md) in front of RabbitMQ's AMQP 1.0: an unchanged Celery application with
Celery's default settings (no result backend), its workers, producer, ``inspect ping`` and
``events`` as subprocesses of their own, exactly as a user runs them.

One ``amqp-bridge run`` serves the module.
"""

from __future__ import annotations

import re
import signal
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pika
import pytest

from tests.support.apps import AppProcess, run_program
from tests.support.bridge import BridgeRun, free_port, recipe_bridge
from tests.support.rabbitmq import delete_queue, unique_queue

PASSWORD = "celery-s3cret"
TASKS = 200


@dataclass
class CeleryBridge:
    bridge: BridgeRun
    env: dict[str, str]
    tmp: Path
    app: str = "celery_app"
    """The Celery application module (``tests/apps/programs``)."""

    def worker(self, name: str) -> AppProcess:
        """``celery -A APP worker`` named ``name``, once it says it is ready."""
        worker = AppProcess(["celery", "-A", self.app, "worker", "-n", name,
                             "--loglevel=INFO", "--concurrency=2"],
                            self.tmp / f"{name.split('@')[0]}.log", self.env)
        worker.wait_for(re.escape(name) + r" ready\.")
        return worker

    def produce(self, token: str, count: int) -> None:
        run_program(["celery_producer.py", token, str(count)],
                    self.tmp / f"producer-{token}.log", self.env)

    def records(self, token: str) -> list[tuple[int, str]]:
        """``(n, worker)`` of every run of the task with ``token``."""
        path = Path(self.env["RECORD_FILE"])
        lines = path.read_text().splitlines() if path.exists() else []
        return [(int(n), worker) for t, n, worker, _ in (line.split() for line in lines)
                if t == token]

    def wait_records(self, token: str, count: int, app: AppProcess) -> list[tuple[int, str]]:
        deadline = time.monotonic() + 60
        while len(self.records(token)) < count:
            assert app.proc.poll() is None, app.log()
            assert time.monotonic() < deadline, \
                f"{len(self.records(token))} of {count} tasks ran:\n{app.log()}"
            time.sleep(0.2)
        return self.records(token)


def declare_celery_topology(rabbitmq_url: str, task_queue: str) -> None:
    """What docs/migrating.md has the operator declare once on RabbitMQ, the task queue
    named ``task_queue`` (the recipe's ``TASK_QUEUE``: other Celery workers on the shared
    node, other tests' or benchmarks', consume ``celery`` and would take these tasks)."""
    conn = pika.BlockingConnection(pika.URLParameters(rabbitmq_url + "/%2F"))
    try:
        ch = conn.channel()
        ch.queue_declare(task_queue, durable=True)
        ch.exchange_declare("celery.pidbox", "fanout")
        ch.exchange_declare("reply.celery.pidbox", "direct")
        ch.exchange_declare("celeryev", "topic", durable=True)
    finally:
        conn.close()


@pytest.fixture(scope="module")
def celery_bridge(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[CeleryBridge]:
    task_queue = unique_queue("celery-tasks")
    declare_celery_topology(rabbitmq_url, task_queue)
    tmp = tmp_path_factory.mktemp("celery")
    port = free_port()
    try:
        with recipe_bridge("celery.yaml", tmp, {
                "CLOUD_URL": rabbitmq_url, "CELERY_BIND": f"127.0.0.1:{port}",
                "CELERY_PASSWORD": PASSWORD, "PORT": str(port),
                "TASK_QUEUE": task_queue}) as bridge:
            yield CeleryBridge(bridge, {
                "BROKER_URL": f"amqp://celery:{PASSWORD}@127.0.0.1:{port}//",
                "RECORD_FILE": str(tmp / "records.txt")}, tmp)
    finally:
        delete_queue(rabbitmq_url, task_queue)


def assert_clean(log: str) -> None:
    """No ERROR or CRITICAL line in a Celery process's log."""
    bad = [line for line in log.splitlines() if re.search(r"\b(ERROR|CRITICAL)/", line)]
    assert not bad, log


def test_tasks_run_exactly_once_with_ping_events_and_warm_shutdown(
        celery_bridge: CeleryBridge) -> None:
    name = f"w1@{uuid.uuid4().hex[:8]}"
    worker = celery_bridge.worker(name)
    try:
        token = uuid.uuid4().hex
        celery_bridge.produce(token, TASKS)
        runs = celery_bridge.wait_records(token, TASKS, worker)
        assert sorted(n for n, _ in runs) == list(range(TASKS))  # each exactly once
        # remote control: the broadcast reaches the worker, its reply comes back by key
        ping = run_program(["celery", "-A", "celery_app", "inspect", "ping", "-d", name,
                            "--timeout", "10"], celery_bridge.tmp / "ping.log",
                           celery_bridge.env)
        assert re.search(re.escape(name) + r": OK\s+pong", ping), ping
        # events: the worker's heartbeats reach a monitor bound to celeryev
        events = AppProcess(["celery", "-A", "celery_app", "events", "--dump"],
                            celery_bridge.tmp / "events.log", celery_bridge.env)
        try:
            events.wait_for(re.escape(name) + r".*heartbeat")  # "NAME [time] heartbeat: …"
        finally:
            events.stop(signal.SIGINT)
    finally:
        rc = worker.stop(signal.SIGTERM)  # warm shutdown
    assert rc == 0, worker.log()
    assert "Warm shutdown" in worker.log(), worker.log()
    assert_clean(worker.log())
    # nothing is left for a later worker: every task was acknowledged
    assert celery_bridge.records(token) == runs


def test_two_workers_share_the_tasks_without_duplicates(celery_bridge: CeleryBridge) -> None:
    names = [f"w{i}@{uuid.uuid4().hex[:8]}" for i in (1, 2)]
    workers = [celery_bridge.worker(name) for name in names]
    try:
        token = uuid.uuid4().hex
        celery_bridge.produce(token, TASKS)
        runs = celery_bridge.wait_records(token, TASKS, workers[0])
    finally:
        codes = [w.stop(signal.SIGTERM) for w in workers]
    assert codes == [0, 0], [w.log() for w in workers]
    assert sorted(n for n, _ in runs) == list(range(TASKS))
    shares = Counter(worker for _, worker in runs)
    assert set(shares) == set(names), shares  # both took tasks
    for w in workers:
        assert_clean(w.log())
