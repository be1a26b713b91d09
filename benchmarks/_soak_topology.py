"""The soak's topology mode (``benchmarks/soak.py --topology``): the façades with NO
per-name configuration (docs/topology.md) in front of a private RabbitMQ 4.0 node, with
real applications whose declares, temporary and reply queues take effect at the broker.

One ``amqp-bridge run`` configured as ``examples/topology.yaml`` (a 0-9-1 topology
listener) plus a 0-10 topology listener on the same 1.0 connection, and these programs
(``benchmarks/soak_apps/``) through it, each at ``--app-rate`` calls/s:

- ``celery``: a worker with ALL of Celery's defaults and the ``rpc://`` result backend,
  and a caller doing ``square.delay(n).get()``; every ``--ping-every`` seconds a
  ``celery inspect ping`` (a new process: its pidbox reply queue comes and goes);
- ``pika-exclusive`` / ``pika-direct``: the tutorial's RPC server, and clients on a new
  connection every 10 calls with an exclusive server-named reply queue or direct
  reply-to;
- ``churn``: a new connection each turn declaring an exclusive and an auto-delete queue,
  publishing, reading back, leaving;
- ``qpid``: qpid.messaging's ``'#'`` request/response on the 0-10 listener, a new
  connection (and temporary queue) every 10 calls.

Every ``--census`` seconds: the bridge's resource gauges (``amqp_bridge_amqp10_links``,
``amqp_bridge_facade_sessions``, ``..._subscriptions``, ``..._sockets_in_memory``) and the
queues and exchanges on the broker (``rabbitmqctl``), so that a temporary queue left
behind or a link never closed shows as a column that only grows.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from _soak_apps import PROGRAMS, App, Apps

from tests.support.bridge import ROOT
from tests.support.metrics import scrape
from tests.support.rabbitmq import rabbitmqctl

USER, PASSWORD = "app", "soak-topology-s3cret"
TOPOLOGY_APPS = ("celery", "pika-exclusive", "pika-direct", "churn", "qpid")
GAUGES = ("amqp_bridge_amqp10_links", "amqp_bridge_facade_sessions",
          "amqp_bridge_facade_subscriptions", "amqp_bridge_sockets_in_memory")


def config(port091: int, port010: int) -> tuple[str, dict[str, str]]:
    """``examples/topology.yaml`` with a 0-10 topology listener, metrics and JSON logs
    added; and the environment its variables take (the 1.0 URL is CLOUD_URL)."""
    recipe = yaml.safe_load((ROOT / "examples" / "topology.yaml").read_text())
    recipe["listeners"]["legacy"] = {
        "protocol": "amqp0-10", "bind": f"127.0.0.1:{port010}", "users": {USER: PASSWORD},
        "topology": {"connection": "cloud", "broker": "rabbitmq4"}}
    recipe["metrics"] = {"bind": "127.0.0.1:0"}
    recipe["logging"] = {"format": "json"}
    return yaml.safe_dump(recipe), {"APP_BIND": f"127.0.0.1:{port091}",
                                    "APP_PASSWORD": PASSWORD}


@dataclass
class RpcApp(App):
    """An application whose producer makes calls: what it got is what was answered."""

    def got(self) -> list[str]:
        answered = Path(f"{self.producer.record}.answered")
        return answered.read_text().split() if answered.exists() else []


class TopologyApps(Apps):
    """The topology soak's programs (see the module docstring)."""

    def __init__(self, which: list[str], tag: str, workdir: Path, rate: float,
                 seconds: float, port091: int, port010: int) -> None:
        super().__init__(which, {}, workdir, rate, seconds, port091, port010, USER, PASSWORD)
        self.tag = tag
        self.pings: list[bool] = []

    def start(self) -> None:
        """Servers first (each until it says it is ready), then the callers."""
        tag = self.tag
        if "celery" in self.which:
            worker = self.program("celery-worker", [
                str(Path(sys.executable).parent / "celery"), "-A", "soak_topology_celery",
                "worker", "-n", f"soak@{tag}", "--loglevel=INFO", "--concurrency=1"])
            self.wait_ready(worker, " ready.")
            self.apps["celery"] = RpcApp("celery", self.script(
                "celery-caller", "soak_topology_celery_caller.py", self.url091, "-"), worker)
        for style in ("exclusive", "direct"):
            if f"pika-{style}" not in self.which:
                continue
            queue = f"soak.rpc.{style}.{tag}"
            server = self.script(f"pika-{style}-server", "soak_rpc_pika.py", self.url091,
                                 queue, "--mode", "server")
            self.wait_ready(server, "ready")
            self.apps[f"pika-{style}"] = RpcApp(f"pika-{style}", self.script(
                f"pika-{style}-client", "soak_rpc_pika.py", self.url091, queue,
                "--mode", "client", "--style", style), server)
        if "churn" in self.which:
            self.apps["churn"] = RpcApp("churn", self.script(
                "churn", "soak_churn.py", self.url091, f"soak.churn.{tag}"), None)
        if "qpid" in self.which:
            queue = f"soak.rpc.qpid.{tag}"
            server = self.script("qpid-server", "soak_rpc_qpid.py", self.broker010, queue,
                                 "--mode", "server")
            self.wait_ready(server, "ready")
            self.apps["qpid"] = RpcApp("qpid", self.script(
                "qpid-client", "soak_rpc_qpid.py", self.broker010, queue, "--mode", "client"),
                server)

    def ping(self) -> None:
        """``celery inspect ping`` of the worker (a client process with its own pidbox
        reply queue); its answer counted in ``pings``."""
        if "celery" not in self.apps:
            return
        done = subprocess.run(
            [str(Path(sys.executable).parent / "celery"), "-A", "soak_topology_celery",
             "inspect", "ping", "-d", f"soak@{self.tag}", "--timeout", "10"],
            cwd=PROGRAMS, env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1"},
            capture_output=True, text=True, timeout=120, check=False)
        self.pings.append("pong" in done.stdout)


@dataclass
class Census:
    """The gauges and the broker's queues and exchanges over time."""

    rows: list[tuple[float, dict[str, float], int, int]] = field(default_factory=list)
    """(seconds, gauge -> value summed over labels, queues, exchanges)."""
    last_queues: list[str] = field(default_factory=list)

    def take(self, t: float, metrics_port: int, broker_url: str) -> None:
        samples = scrape(metrics_port).samples
        gauges = {name: sum(v for (n, _labels), v in samples.items() if n == name)
                  for name in GAUGES}
        self.last_queues = broker_names(broker_url, "list_queues")
        exchanges = broker_names(broker_url, "list_exchanges")
        self.rows.append((t, gauges, len(self.last_queues), len(exchanges)))

    def line(self) -> str:
        _t, gauges, queues, exchanges = self.rows[-1]
        return (f"links {gauges[GAUGES[0]]:.0f} façade sessions {gauges[GAUGES[1]]:.0f} "
                f"subscriptions {gauges[GAUGES[2]]:.0f} sockets {gauges[GAUGES[3]]:.0f} "
                f"queues {queues} exchanges {exchanges}")

    def report(self) -> None:
        print(f"{'min':>6} {'links':>6} {'sessions':>9} {'subs':>5} {'sockets':>8} "
              f"{'queues':>7} {'exchanges':>10}")
        for t, gauges, queues, exchanges in self.rows:
            print(f"{t / 60:6.1f} {gauges[GAUGES[0]]:6.0f} {gauges[GAUGES[1]]:9.0f} "
                  f"{gauges[GAUGES[2]]:5.0f} {gauges[GAUGES[3]]:8.0f} {queues:7} {exchanges:10}")


def broker_names(broker_url: str, what: str) -> list[str]:
    """The names ``rabbitmqctl list_queues|list_exchanges name`` prints."""
    out = rabbitmqctl(broker_url, what, "name", "--no-table-headers")
    return [line for line in out.splitlines() if line.strip()]
