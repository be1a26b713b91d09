"""Celery tasks per second through the 0-9-1 façade, against the same application straight
to RabbitMQ, in the same run.

Run: ``.venv/bin/python benchmarks/celery.py [--tasks N] [--rounds R] [--concurrency C]``
(needs the project's RabbitMQ: it is started like the tests start it).

Set-up: the unchanged Celery application of the real-application tests
(``tests/apps/programs/celery_app.py``: Celery's defaults, no result backend, a task that
appends a line to a file) and the façade configured by ``examples/celery.yaml`` (the
migration recipe) in front of RabbitMQ's AMQP 1.0. Each round, for each contender: one
worker (prefork, ``--concurrency`` processes) is started and ready, a producer process
sends N ``.delay()`` calls, and the rate is how fast the tasks run, from the 10 % to
the 100 % mark of the task records' own timestamps. Rounds interleave the two contenders
(best round kept); the ratio façade/direct is the figure to compare across machines.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _timing import ROOT

from tests.apps.test_celery import PASSWORD, declare_celery_topology
from tests.support.apps import AppProcess, run_program
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import ensure_rabbitmq


def task_rate(broker_url: str, record_file: Path, tasks: int, concurrency: int,
              workdir: Path) -> float:
    """Tasks/s of one worker on ``broker_url`` between 10 % and 100 % of ``tasks``."""
    env = {"BROKER_URL": broker_url, "RECORD_FILE": str(record_file)}
    name = f"bench@{uuid.uuid4().hex[:8]}"
    worker = AppProcess(["celery", "-A", "celery_app", "worker", "-n", name,
                         "--loglevel=INFO", f"--concurrency={concurrency}"],
                        workdir / f"{name}.log", env)
    try:
        worker.wait_for(re.escape(name) + r" ready\.")
        token = uuid.uuid4().hex
        run_program(["celery_producer.py", token, str(tasks)], workdir / "producer.log",
                    env, timeout=600)
        times = wait_for_records(record_file, token, tasks, worker)
    finally:
        worker.stop(signal.SIGTERM)
    times.sort()
    first = times[tasks // 10]
    return (tasks - tasks // 10 - 1) / (times[-1] - first)


def wait_for_records(record_file: Path, token: str, tasks: int,
                     worker: AppProcess) -> list[float]:
    """The run times of the ``tasks`` tasks with ``token``, once all ran."""
    deadline = time.monotonic() + 600
    while True:
        lines = record_file.read_text().splitlines() if record_file.exists() else []
        times = [float(parts[3]) for parts in (line.split() for line in lines)
                 if parts[0] == token]
        if len(times) >= tasks:
            return times
        if worker.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{len(times)} of {tasks} tasks ran:\n{worker.log()}")
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()

    rabbitmq_url = ensure_rabbitmq()
    declare_celery_topology(rabbitmq_url)
    workdir = Path(tempfile.mkdtemp(prefix="bench-celery-"))
    port = free_port()
    bridge = BridgeRun((ROOT / "examples" / "celery.yaml").read_text(), workdir,
                       log_level="warning",
                       env={"CLOUD_URL": rabbitmq_url, "CELERY_BIND": f"127.0.0.1:{port}",
                            "CELERY_PASSWORD": PASSWORD}).start()
    contenders = {
        "direct to RabbitMQ": rabbitmq_url.rstrip("/") + "//",
        "through the façade": f"amqp://celery:{PASSWORD}@127.0.0.1:{port}//",
    }
    best: dict[str, float] = {}
    try:
        wait_listening(port, bridge)
        for round_no in range(1, args.rounds + 1):
            for label, url in contenders.items():
                rate = task_rate(url, workdir / "records.txt", args.tasks, args.concurrency,
                                 workdir)
                best[label] = max(best.get(label, 0.0), rate)
                print(f"round {round_no}: {label:20s} {rate:8.0f} tasks/s", flush=True)
    finally:
        bridge.stop()
    direct, facade = best["direct to RabbitMQ"], best["through the façade"]
    print(f"Celery, {args.tasks} tasks, concurrency {args.concurrency}, best of "
          f"{args.rounds}: direct {direct:.0f} tasks/s, façade {facade:.0f} tasks/s, "
          f"ratio {facade / direct:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
