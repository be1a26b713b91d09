"""RPC round trips per second through a topology-mode 0-9-1 façade, against the same
programs straight to RabbitMQ 4 (or 3.10), in the same run; and Celery tasks per second
with the ``rpc://`` result backend the same way.

Run: ``.venv/bin/python benchmarks/rpc.py [--calls N] [--tasks T] [--rounds R]
[--rabbitmq 3|4]`` (needs the project's RabbitMQ 4.0 node, or with ``--rabbitmq 3`` its
3.10 node and ``examples/topology-rabbitmq3.yaml``: started like the tests start them).

Set-up: the unchanged programs of the real-application tests — the RabbitMQ tutorial's
RPC server and client in pika (``tests/apps/programs/pika_rpc_*.py``: one call at a
time, replies to an exclusive server-named queue or by direct reply-to), aio-pika's
RPC pattern, and Celery with all defaults and ``rpc://`` (a producer sends T tasks and
``.get()``s every result; and one that waits for each result before the next task,
``benchmarks/rpc_apps/``, whose reply queue has a consumer while it is redeclared) — and the façade configured by ``examples/topology.yaml`` (no
per-name configuration) in front of RabbitMQ 4's AMQP 1.0. Each round runs every
contender once, the two sides interleaved (best round kept); the ratio façade/direct is
the figure to compare across machines.

``--relay`` adds a third side: the same programs straight to RabbitMQ through a TCP relay
that only copies bytes (``tests/support/relay.py``, a thread per direction) — what one
more hop costs before any protocol work. An RPC through the façade crosses it four
times (request in and out, reply in and out) where the direct programs cross the broker
twice; the relay side crosses a hop four times too (each program's connection goes
through it), so it is the floor a proxy of any kind starts from.

``--accelerated`` adds a fourth side: a second façade, the same configuration, run with
this checkout's accelerated build (``scripts/accelerate build`` first; docs/operations.md
"Accelerated build"), so the pure and the compiled bridge are compared in the same rounds.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import tempfile
import uuid
from pathlib import Path

from _timing import ROOT

from bridge.accelerated import DEFAULT_DIR as DEFAULT_ACCELERATED
from bridge.accelerated import ENV as ACCELERATED_ENV
from bridge.accelerated import check as check_accelerated
from tests.support.apps import AppProcess, run_program
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import delete_queue, ensure_rabbitmq, ensure_rabbitmq4, unique_queue
from tests.support.relay import Relay

PASSWORD = "bench-s3cret"


def rpc_rate(url: str, kind: str, calls: int, workdir: Path) -> float:
    """Calls/s of one RPC client against one server on ``url`` (``kind``: exclusive,
    direct — the pika tutorial's reply styles — or aio-pika)."""
    name = f"test.bench.rpc.{uuid.uuid4().hex[:8]}"
    if kind == "aio-pika":
        server_cmd = ["aio_pika_rpc.py", url, name, "server"]
        client_cmd = ["aio_pika_rpc.py", url, name, "client", str(calls)]
    else:
        server_cmd = ["pika_rpc_server.py", url, name]
        client_cmd = ["pika_rpc_client.py", url, name, kind, str(calls)]
    server = AppProcess(server_cmd, workdir / f"server-{name}.log", {})
    try:
        server.wait_for("ready")
        out = run_program(client_cmd, workdir / f"client-{name}.log", {}, timeout=600)
    finally:
        server.kill()
    if f"right {calls}/{calls}" not in out:
        raise RuntimeError(out)
    return float(re.search(r"rate ([\d.]+)", out).group(1))  # type: ignore[union-attr]


ONE_BY_ONE = ROOT / "benchmarks" / "rpc_apps" / "celery_rpc_one_by_one.py"
"""The Celery producer that ``.get()``s each result before the next ``.delay()``."""


def celery_rate(url: str, task_queue: str, tasks: int, workdir: Path, *,
                one_by_one: bool = False) -> float:
    """Tasks/s of Celery with ``rpc://``, one worker: T ``.delay()`` then every
    ``.get()`` (``one_by_one``: each ``.delay().get()`` in turn); its task queue is
    ``task_queue`` (other Celery workers on the shared node consume ``celery``)."""
    env = {"BROKER_URL": url, "RECORD_FILE": str(workdir / "records.txt"),
           "CELERY_QUEUE": task_queue}
    name = f"bench@{uuid.uuid4().hex[:8]}"
    worker = AppProcess(["celery", "-A", "celery_rpc_app", "worker", "-n", name,
                         "--loglevel=INFO", "--concurrency=2"], workdir / f"{name}.log", env)
    try:
        worker.wait_for(re.escape(name) + r" ready\.", timeout=60)
        producer = str(ONE_BY_ONE) if one_by_one else "celery_rpc_producer.py"
        out = run_program([producer, uuid.uuid4().hex, str(tasks)],
                          workdir / f"producer-{name}.log", env, timeout=600)
    finally:
        worker.stop(signal.SIGTERM)
    if f"right {tasks}/{tasks}" not in out:
        raise RuntimeError(out)
    return float(re.search(r"rate ([\d.]+)", out).group(1))  # type: ignore[union-attr]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rabbitmq", type=int, choices=(3, 4), default=4)
    parser.add_argument("--relay", action="store_true",
                        help="also run every program through a byte-copying TCP relay")
    parser.add_argument("--accelerated", action="store_true",
                        help="also run every program through a second façade running the "
                             "accelerated build (scripts/accelerate build first)")
    args = parser.parse_args()
    if args.accelerated:
        check_accelerated(DEFAULT_ACCELERATED)  # before the first round, not in it

    rabbitmq_url = ensure_rabbitmq4() if args.rabbitmq == 4 else ensure_rabbitmq()
    recipe = "topology.yaml" if args.rabbitmq == 4 else "topology-rabbitmq3.yaml"
    task_queue = unique_queue("bench-celery-tasks")
    workdir = Path(tempfile.mkdtemp(prefix="bench-rpc-"))
    sides = {"direct": rabbitmq_url + "/%2F"}
    bridges: list[tuple[BridgeRun, int]] = []
    for side, accelerated in (("façade", False), ("façade+acc", True)):
        if accelerated and not args.accelerated:
            continue
        port = free_port()
        env = {"CLOUD_URL": rabbitmq_url, "RABBIT_URL": rabbitmq_url,
               "APP_BIND": f"127.0.0.1:{port}", "APP_PASSWORD": PASSWORD,
               ACCELERATED_ENV: "1" if accelerated else ""}
        bridges.append((BridgeRun((ROOT / "examples" / recipe).read_text(), workdir,
                                  side.replace("+", "-"), log_level="warning", env=env).start(),
                        port))
        sides[side] = f"amqp://app:{PASSWORD}@127.0.0.1:{port}/%2F"
    if args.relay:
        relay = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])), nodelay=True)
        sides["relay"] = relay.url(rabbitmq_url) + "/%2F"
    best: dict[tuple[str, str], float] = {}
    try:
        for bridge, port in bridges:
            wait_listening(port, bridge)
        for round_no in range(1, args.rounds + 1):
            for kind in ("exclusive", "direct", "aio-pika", "celery", "celery-1by1"):
                for side, url in sides.items():
                    if kind.startswith("celery"):
                        rate = celery_rate(url.removesuffix("%2F") + "/", task_queue,
                                           args.tasks, workdir,
                                           one_by_one=kind == "celery-1by1")
                    else:
                        rate = rpc_rate(url, kind, args.calls, workdir)
                    best[kind, side] = max(best.get((kind, side), 0.0), rate)
                    print(f"round {round_no}: {kind:11s} {side:10s} {rate:8.0f}/s", flush=True)
    finally:
        for bridge, _ in bridges:
            bridge.stop()
        delete_queue(rabbitmq_url, task_queue)
    for kind, what in (("exclusive", "pika RPC, exclusive reply queue"),
                       ("direct", "pika RPC, direct reply-to"),
                       ("aio-pika", "aio-pika RPC pattern"),
                       ("celery", "Celery tasks with rpc:// results"),
                       ("celery-1by1", "Celery, each result awaited before the next task")):
        direct, facade = best[kind, "direct"], best[kind, "façade"]
        line = f"{what}: direct {direct:.0f}/s, façade {facade:.0f}/s, ratio {facade / direct:.2f}"
        if args.accelerated:
            compiled = best[kind, "façade+acc"]
            line += f"; accelerated façade {compiled:.0f}/s, ratio {compiled / direct:.2f}"
        if args.relay:
            relayed = best[kind, "relay"]
            line += f"; relay {relayed:.0f}/s, ratio {relayed / direct:.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
