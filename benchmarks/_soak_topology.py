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
``amqp_bridge_facade_sessions``, ``..._subscriptions``, ``..._sockets_in_memory``; the
façade ones per listener too) and the queues and exchanges on the broker
(``rabbitmqctl``), so that a temporary queue left behind or a link never closed shows as
a column that only grows; and the broker's consumers by application
(:data:`CONSUMER_KINDS`: each façade subscription is one consumer at the node, its queue's
name tells whose), so that a gauge one lower (or higher) names the application whose
consumer is missing (or extra). After each restart of the node (``--restart-at``,
``--restart-every``) the report says which applications' usual consumer count changed.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
from collections import Counter
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


CONSUMER_KINDS: tuple[tuple[str, str], ...] = (
    (r"celery", "tasks"),
    (r"soak@{tag}\.celery\.pidbox", "pidbox"),
    (r"celeryev\..+", "gossip"),
    (r"{uuid}\.reply\.celery\.pidbox", "ping"),
    (r"{uuid}", "rpc://"),
    (r"soak\.rpc\.exclusive\.{tag}", "pika-x srv"),
    (r"soak\.rpc\.direct\.{tag}", "pika-d srv"),
    (r"amqp-bridge\.gen-.+", "pika cli"),
    (r"soak\.rpc\.qpid\.{tag}", "qpid srv"),
    (r"{uuid}#", "qpid cli"),
    (r"soak\.churn\..+", "churn"),
)
"""Which application consumes a queue, by the queue's name (``{tag}``: the run's tag):
Celery's worker (its ``celery`` task queue, its pidbox — remote control — and its gossip
``celeryev.<id>`` queue), a ``celery inspect ping``'s reply queue, the Celery caller's
``rpc://`` reply queue, the two pika RPC servers' request queues, the pika clients'
reply queues (server-named exclusive, or the direct reply-to queue the façade makes:
both ``amqp-bridge.gen-…``), the qpid server's request queue and client's ``'#'`` queue,
and the churn's queues. Anything else counts as ``other``."""


def consumer_kind(queue: str, tag: str) -> str:
    """The column of :data:`CONSUMER_KINDS` a consumer of ``queue`` counts in."""
    uuid = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    for pattern, kind in CONSUMER_KINDS:
        if re.fullmatch(pattern.format(tag=re.escape(tag), uuid=uuid), queue):
            return kind
    return "other"


@dataclass
class CensusRow:
    """One census: when (seconds into the load), the bridge's gauges (summed over their
    labels, and the façade ones per listener), the node's queue and exchange counts and
    its consumers by application (:func:`consumer_kind`)."""

    t: float
    gauges: dict[str, float]
    per_listener: dict[str, dict[str, float]]
    queues: int
    exchanges: int
    consumers: Counter[str]


@dataclass
class Census:
    """The gauges, the broker's queues and exchanges and its consumers over time: a gauge
    one lower after a restart shows here as the application whose consumer is missing
    (each façade subscription is one consumer at the node)."""

    tag: str
    rows: list[CensusRow] = field(default_factory=list)
    restarts: list[float] = field(default_factory=list)
    """When the node was restarted (seconds into the load)."""
    last_queues: list[str] = field(default_factory=list)

    def take(self, t: float, metrics_port: int, broker_url: str) -> None:
        samples = scrape(metrics_port).samples
        gauges = {name: sum(v for (n, _labels), v in samples.items() if n == name)
                  for name in GAUGES}
        per_listener: dict[str, dict[str, float]] = {}
        for (name, labels), value in samples.items():
            if name in GAUGES[1:3]:
                listener = dict(labels).get("listener", "")
                per_listener.setdefault(listener, {})[name] = value
        self.last_queues = broker_names(broker_url, "list_queues")
        exchanges = broker_names(broker_url, "list_exchanges")
        consumers = Counter(consumer_kind(queue, self.tag) for queue in broker_names(
            broker_url, "list_consumers", "queue_name"))
        self.rows.append(CensusRow(t, gauges, per_listener, len(self.last_queues),
                                   len(exchanges), consumers))

    def line(self) -> str:
        row = self.rows[-1]
        gauges = row.gauges
        listeners = " ".join(
            f"{name} {v.get(GAUGES[1], 0):.0f}/{v.get(GAUGES[2], 0):.0f}"
            for name, v in sorted(row.per_listener.items()))
        return (f"links {gauges[GAUGES[0]]:.0f} façade sessions {gauges[GAUGES[1]]:.0f} "
                f"subscriptions {gauges[GAUGES[2]]:.0f} ({listeners}) sockets "
                f"{gauges[GAUGES[3]]:.0f} queues {row.queues} exchanges {row.exchanges} "
                f"consumers {sum(row.consumers.values())}")

    def kinds(self) -> list[str]:
        """The consumer columns seen, in :data:`CONSUMER_KINDS` order."""
        seen = {kind for row in self.rows for kind in row.consumers}
        return [kind for _p, kind in (*CONSUMER_KINDS, ("", "other")) if kind in seen]

    def report(self) -> None:
        """The table of every census, and for each restart of the node the applications
        whose usual consumer count differs after it (from a minute after, when the clients
        are back) from before it."""
        kinds = self.kinds()
        print(f"{'min':>6} {'links':>6} {'sessions':>9} {'subs':>5} {'sockets':>8} "
              f"{'queues':>7} {'exchanges':>10}  consumers: "
              + " ".join(f"{kind:>{len(kind)}}" for kind in kinds))
        for row in self.rows:
            g = row.gauges
            print(f"{row.t / 60:6.1f} {g[GAUGES[0]]:6.0f} {g[GAUGES[1]]:9.0f} "
                  f"{g[GAUGES[2]]:5.0f} {g[GAUGES[3]]:8.0f} {row.queues:7} "
                  f"{row.exchanges:10}             "
                  + " ".join(f"{row.consumers.get(kind, 0):>{len(kind)}}" for kind in kinds))
        load = self.rows[1:-1]  # not the first (the apps starting) nor the one at rest
        bounds = [0.0, *self.restarts, float("inf")]
        for i, restart in enumerate(self.restarts):
            before = [r for r in load if bounds[i] + (60 if i else 0) < r.t < restart]
            after = [r for r in load if restart + 60 < r.t < bounds[i + 2]]
            if not before or not after:
                continue
            changed = []
            for kind in kinds:
                was = statistics.median_low(r.consumers.get(kind, 0) for r in before)
                now = statistics.median_low(r.consumers.get(kind, 0) for r in after)
                if was != now:
                    changed.append(f"{kind} {was} -> {now}")
            print(f"restart at {restart / 60:.1f} min: consumers by application (usual count "
                  "before -> after): " + (", ".join(changed) if changed else "all the same"))


def broker_names(broker_url: str, what: str, column: str = "name") -> list[str]:
    """The ``column`` ``rabbitmqctl list_queues|list_exchanges|list_consumers`` prints,
    one row each."""
    out = rabbitmqctl(broker_url, what, column, "--no-table-headers")
    return [line for line in out.splitlines() if line.strip()]
