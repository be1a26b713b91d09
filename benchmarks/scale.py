"""Many clients held at once: what each costs the bridge, and what it does to the others.

Run: ``.venv/bin/python benchmarks/scale.py [--idle N,N…] [--consumers N] [--calls C]
[--baseline DIR]`` (needs the project's RabbitMQ 4.0 node, started as the tests start it).

A topology-mode 0-9-1 façade (``examples/topology.yaml``, its connection limits raised) in
front of RabbitMQ 4. For each count N of ``--idle``, N pika connections are opened and
left idle (a channel each, heartbeats off), then the RabbitMQ tutorial's RPC client makes
C calls to its server through the façade; the row gives the calls per second, the bridge's
CPU per call and its resident size with the N held (and per held connection). Then
``--consumers`` pika connections each consume a server-named auto-delete queue of their
own, and the bridge's CPU over 10 s of quiet is measured: what the clients cost it when
nothing happens (timers, housekeeping, the loop's bookkeeping).

``--baseline DIR`` runs the same rows with the bridge from another source tree (e.g. a
``git archive`` of an older commit) in the same run, alternating, so that the ratio
new/baseline is the figure to compare across machines. Before the loop moved to ``epoll``
(bridge/runtime/selector.py) a call's CPU grew with the connections held, and a client
past descriptor 1023 could not be served at all (docs/operations.md#limits).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _harness import cpu_seconds
from _timing import ROOT

import tests.support.bridge as bridge_support
from tests.support.apps import AppProcess, run_program
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import ensure_rabbitmq4

PASSWORD = "scale-s3cret"
QUIET = 10.0
"""Seconds of quiet over which the idle CPU is measured."""

HOLDER = """
import sys, time, pika, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
url, n, consume = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "consume"
params = pika.URLParameters(url)
params.heartbeat = 0
held = []
for _ in range(n):
    conn = pika.BlockingConnection(params)
    channel = conn.channel()
    if consume:
        queue = channel.queue_declare("", auto_delete=True).method.queue
        channel.basic_consume(queue, lambda *a: None, auto_ack=True)
    held.append(conn)
print("held", len(held), flush=True)
time.sleep(3600)
"""
"""Holds N pika connections (consuming or not) until killed."""


def _config() -> str:
    topology = "topology: {connection: cloud, broker: rabbitmq4}"
    return (ROOT / "examples" / "topology.yaml").read_text().replace(
        topology, f"{topology}\n    max_connections: 20000\n    max_connections_per_peer: 20000"
                  "\n    handshake_timeout: 120")


class NotServed(Exception):
    """The bridge did not serve every connection asked for (the message says how far)."""


class Run:
    """One bridge (from ``code``) and what the rows measure on it."""

    def __init__(self, code: Path, url: str, workdir: Path) -> None:
        bridge_support.ROOT = code  # its working directory comes first on its sys.path
        workdir.mkdir(parents=True)
        self.port = free_port()
        self.bridge = BridgeRun(_config(), workdir, log_level="warning", env={
            "CLOUD_URL": url, "APP_BIND": f"127.0.0.1:{self.port}", "APP_PASSWORD": PASSWORD})
        self.bridge.start()
        wait_listening(self.port, self.bridge)
        self.url = f"amqp://app:{PASSWORD}@127.0.0.1:{self.port}/%2F"
        self.workdir = workdir

    def hold(self, n: int, consume: bool) -> subprocess.Popen[str] | None:
        if n == 0:
            return None
        errors = self.workdir / "holder.err"
        with errors.open("w") as err:
            holder = subprocess.Popen([sys.executable, "-c", HOLDER, self.url, str(n),
                                       "consume" if consume else "idle"],
                                      stdout=subprocess.PIPE, stderr=err, text=True)
        assert holder.stdout is not None
        line = holder.stdout.readline().strip()
        if line != f"held {n}":
            holder.kill()
            last = (errors.read_text().strip().splitlines() or ["(nothing)"])[-1]
            raise NotServed(f"{n} connections not all served: {last[:160]}")
        return holder

    def rpc(self, calls: int) -> tuple[float, float]:
        """(calls/s, bridge CPU µs per call) of the tutorial's RPC client."""
        name = f"test.bench.scale.{uuid.uuid4().hex[:8]}"
        server = AppProcess(["pika_rpc_server.py", self.url, name],
                            self.workdir / f"server-{name}.log", {})
        try:
            server.wait_for("ready")
            before = cpu_seconds(self.bridge.pid)
            start = time.monotonic()
            out = run_program(["pika_rpc_client.py", self.url, name, "exclusive", str(calls)],
                              self.workdir / f"client-{name}.log", {}, timeout=600)
            elapsed = time.monotonic() - start
            used = cpu_seconds(self.bridge.pid) - before
        finally:
            server.proc.terminate()
        if f"right {calls}/{calls}" not in out:
            raise SystemExit(f"RPC calls went wrong: {out[-300:]}")
        return calls / elapsed, 1e6 * used / calls

    def quiet_cpu(self) -> float:
        """Percent of a core the bridge used over :data:`QUIET` seconds of no traffic."""
        time.sleep(3)
        before = cpu_seconds(self.bridge.pid)
        time.sleep(QUIET)
        return 100 * (cpu_seconds(self.bridge.pid) - before) / QUIET

    def stop(self) -> None:
        self.bridge.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle", default="0,600,1500",
                        help="counts of idle connections held, comma-separated")
    parser.add_argument("--consumers", type=int, default=400,
                        help="consuming connections held for the quiet-CPU row (0: none)")
    parser.add_argument("--calls", type=int, default=2000, help="RPC calls per row")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another source tree to run the same rows with, alternating")
    args = parser.parse_args()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    url = ensure_rabbitmq4()
    workdir = Path(tempfile.mkdtemp(prefix="scale-"))
    sides = [("bridge", ROOT)] + ([("baseline", args.baseline.resolve())]
                                  if args.baseline is not None else [])
    print(f"{'side':9s} {'held':>6s} {'calls/s':>8s} {'CPU us/call':>12s} {'RSS MiB':>8s} "
          f"{'KiB/held':>9s}")
    for count in [int(n) for n in args.idle.split(",")]:
        for side, code in sides:
            run = Run(code, url, workdir / f"{side}-{count}")
            try:
                rest = run.bridge.status("VmRSS") / 1024
                try:
                    holder = run.hold(count, consume=False)
                except NotServed as exc:
                    print(f"{side:9s} {count:6d} {exc}", flush=True)
                    continue
                try:
                    held_rss = run.bridge.status("VmRSS") / 1024
                    rate, cpu = run.rpc(args.calls)
                finally:
                    if holder is not None:
                        holder.kill()
                per = 1024 * (held_rss - rest) / count if count else 0.0
                print(f"{side:9s} {count:6d} {rate:8.0f} {cpu:12.0f} {held_rss:8.1f} {per:9.1f}",
                      flush=True)
            finally:
                run.stop()
    if args.consumers:
        for side, code in sides:
            run = Run(code, url, workdir / f"{side}-consumers")
            try:
                alone = run.quiet_cpu()
                holder = run.hold(args.consumers, consume=True)
                try:
                    busy = run.quiet_cpu()
                finally:
                    if holder is not None:
                        holder.kill()
                print(f"{side:9s} quiet CPU: {alone:.2f} % of a core alone, {busy:.2f} % with "
                      f"{args.consumers} consumers held", flush=True)
            finally:
                run.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
