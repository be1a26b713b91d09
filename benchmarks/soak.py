"""The bridge under steady load for a long time: does its memory level off?

Run: ``.venv/bin/python benchmarks/soak.py --minutes 60 [--rate 25] [--check]``
(needs the project's RabbitMQ, started like the tests start it; loopback only).

One real ``amqp-bridge run`` process with every path kind (the lifecycle suite's set-up,
``tests/lifecycle``): the in-memory 0-10 broker (in this process, behind a cuttable
relay) and RabbitMQ (1.0 and 0-9-1) as its peers, a 0-10 façade listener and a 0-9-1
one. Eight routes, each fed ``--rate`` messages/s in rounds of ``--round`` seconds:

- ``out``  0-10 queue → 1.0 and ``in`` 1.0 → 0-10 exchange;
- ``out091`` RabbitMQ 0-9-1 queue → 1.0 and ``in091`` 1.0 → RabbitMQ default exchange;
- ``pub`` 0-10 façade publish → 1.0 and ``sub`` 1.0 → 0-10 façade subscribe;
- ``pub091`` 0-9-1 façade publish (pika, confirms) → 1.0 and ``sub091`` 1.0 → 0-9-1
  façade consume (pika).

Disturbances, all the time: each round the façade publishers (0-10 and pika) connect
anew, publish their share and close; every ``--churn`` rounds the façade consumers are
replaced (a new one subscribes, the old one leaves holding what it had not accepted,
which goes to the new one); every ``--cut-every`` seconds the bridge's 0-10 connection
is cut (the relay resets it: the bridge reconnects).

Every ``--sample`` seconds: the bridge's RSS (``/proc/PID/status`` VmRSS) and open file
descriptors. At the end: every message sent arrived (by body; duplicates within the
routes' ``max_in_flight`` are allowed and counted), then a quiet minute (``--rest``),
then the report: RSS at start / end of load / at rest, the slope of every stretch of
``--stretch`` minutes in MiB/h (least squares over its samples), the slope over the
second half of the load, messages delivered and bytes of growth per message. The RSS
*levels off* when the second half's slope is under ``--max-slope`` MiB/h; ``--check``
makes the exit status say so (1: it does not, or a message was lost).

``--probe`` runs the bridge with ``benchmarks/_soak_probe`` on its ``PYTHONPATH``: a
thread in the bridge process that writes, every ``--sample`` seconds, glibc's in-use and
free heap (mallinfo2) and the count of live objects of the types that grew most into
``probe.log`` next to the bridge's log (an investigation aid: it costs a gc walk).

``--topology`` soaks the façades' topology mode instead (``benchmarks/_soak_topology.py``:
a private RabbitMQ 4.0 node, Celery ``rpc://``, pika and qpid.messaging RPC, churning
clients; the calls answered and lost, the bridge's links and the broker's queues over
time, and the node's consumers by application); ``--restart-at MIN`` restarts that private
node MIN minutes in, and ``--restart-every MIN`` again every MIN minutes after that.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import cast

import _soak_apps
import _soak_topology
import _timing  # noqa: F401  (first: the project root ahead of this folder)
import pika
from _harness import cpu_seconds
from proton import Message, Timeout
from proton.utils import BlockingConnection

from amqp010.spec import DeliveryProperties
from amqp010.testing.broker import Broker
from tests.lifecycle.peers import FacadeConsumer, facade_client, legacy_publish
from tests.lifecycle.peers091 import (
    PASSWORD,
    PERSISTENT,
    USER,
    FacadeConsumer091,
    close_quietly,
    facade091,
    rabbit091,
)
from tests.support import bridge as bridge_support
from tests.support.bridge import (
    BridgeRun,
    free_port,
    legacy_client,
    process_status,
    wait_listening,
)
from tests.support.metrics import metrics_port, scrape
from tests.support.rabbitmq import ensure_rabbitmq, private_rabbitmq, send_messages
from tests.support.relay import Relay

PROBE = Path(__file__).resolve().parent / "_soak_probe"
MAX_IN_FLIGHT = 50
PEER_AWAY = 300.0
"""Seconds a peer step is retried while a peer is away (see :meth:`Soak.again`)."""
ROUTES = ("out", "in", "pub", "sub", "out091", "in091", "pub091", "sub091")


def config(queues: dict[str, str], legacy_url: str, rabbitmq_url: str, port: int,
           port091: int, app_names: dict[str, str] | None = None) -> str:
    def to_rabbit(route: str) -> str:
        return f"{{connection: cloud, address: /amq/queue/{queues[route]}}}"

    def route(name: str, source: str, target: str) -> str:
        return f"""
  - name: {name}
    from: {source}
    to:   {target}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}"""

    apps = "" if app_names is None else _soak_apps.routes(app_names, "app091", "app", route)
    return f"""
connections:
  legacy:
    protocol: amqp0-10
    url: "{legacy_url}"
    heartbeat: 2
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_url}"
    heartbeat: 4
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
  rabbit091:
    protocol: amqp0-9-1
    url: "{rabbitmq_url}"
    heartbeat: 2
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true,
         users: {{{USER}: "{PASSWORD}"}}}}
  app091: {{protocol: amqp0-9-1, bind: "127.0.0.1:{port091}", users: {{{USER}: "{PASSWORD}"}}}}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: json}}
routes:{route("out", "{connection: legacy, queue: out}", to_rabbit("out"))}\
{route("in", to_rabbit("in"), "{connection: legacy, exchange: amq.direct, routing_key: in}")}\
{route("pub", "{listener: app, exchange: events}", to_rabbit("pub"))}\
{route("sub", to_rabbit("sub"), "{listener: app, queue: jobs}")}\
{route("out091", f"{{connection: rabbit091, queue: {queues['out091-src']}}}", to_rabbit("out091"))}\
{route("in091", to_rabbit("in091"),
       f"{{connection: rabbit091, exchange: '', routing_key: {queues['in091-dst']}}}")}\
{route("pub091", "{listener: app091, exchange: events091}", to_rabbit("pub091"))}\
{route("sub091", to_rabbit("sub091"), "{listener: app091, queue: jobs091}")}{apps}
"""


# --- samples and the report ----------------------------------------------------------------


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def slope_mib_per_hour(samples: list[tuple[float, int, int]]) -> float:
    """Least-squares slope of RSS (KiB) over time (s), in MiB per hour."""
    if len(samples) < 2:
        return float("nan")
    ts = [s[0] for s in samples]
    rs = [s[1] for s in samples]
    return statistics.linear_regression(ts, rs).slope * 3600 / 1024


class Sampler(threading.Thread):
    """RSS and fds of the bridge every ``every`` seconds: ``samples`` of (t, KiB, fds)."""

    def __init__(self, pid: int, every: float, t0: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.t0 = pid, every, t0
        self.samples: list[tuple[float, int, int]] = []
        self.done = threading.Event()

    def sample(self) -> None:
        with contextlib.suppress(OSError):
            self.samples.append((time.monotonic() - self.t0, process_status(self.pid, "VmRSS"),
                                 open_fds(self.pid)))

    def run(self) -> None:
        while not self.done.wait(self.every):
            self.sample()


def report(samples: list[tuple[float, int, int]], load_end: float, stretch: float,
           delivered: int, max_slope: float) -> bool:
    """Print the RSS/fd report; True when the RSS levels off."""
    load = [s for s in samples if s[0] <= load_end]
    rest = [s for s in samples if s[0] > load_end]
    mib = 1 / 1024
    print(f"\nRSS at start {load[0][1] * mib:.1f} MiB, end of load {load[-1][1] * mib:.1f} MiB, "
          f"at rest {(rest or load)[-1][1] * mib:.1f} MiB; fds {load[0][2]} → {load[-1][2]} "
          f"(max {max(s[2] for s in samples)}), at rest {(rest or load)[-1][2]}")
    print(f"{'stretch':>14} {'RSS MiB':>16} {'slope MiB/h':>12} {'fds':>10}")
    start = 0.0
    while start < load_end - 1:
        part = [s for s in load if start <= s[0] <= start + stretch]
        if len(part) >= 2:
            print(f"{start / 60:6.1f}-{min(start + stretch, load_end) / 60:5.1f} min "
                  f"{part[0][1] * mib:7.1f} → {part[-1][1] * mib:6.1f} "
                  f"{slope_mib_per_hour(part):12.1f} {part[0][2]:4} → {part[-1][2]:3}")
        start += stretch
    whole = slope_mib_per_hour(load)
    first = slope_mib_per_hour([s for s in load if s[0] < load_end / 2])
    second = slope_mib_per_hour([s for s in load if s[0] >= load_end / 2])
    growth = (load[-1][1] - load[0][1]) * 1024
    print(f"slope over the whole load {whole:.1f} MiB/h, over its first half {first:.1f} "
          f"MiB/h, over its second half {second:.1f} MiB/h; {delivered} messages delivered, "
          f"{growth / max(1, delivered):.1f} bytes of RSS growth per message")
    levels_off = second <= max_slope
    print(f"RSS {'levels off' if levels_off else 'does NOT level off'} "
          f"(second-half slope {'≤' if levels_off else '>'} {max_slope} MiB/h)")
    return levels_off


# --- the peers -----------------------------------------------------------------------------


class Amqp10Drain:
    """A RabbitMQ queue read over 1.0 (accepting each message): ``got`` bodies."""

    def __init__(self, url: str, queue: str) -> None:
        self.url, self.address = url, f"/amq/queue/{queue}"
        self.got: list[bytes] = []

    def drain(self, quiet: float = 0.2) -> None:
        conn = BlockingConnection(self.url, timeout=30)
        try:
            receiver = conn.create_receiver(self.address, credit=200)
            while True:
                try:
                    message = receiver.receive(timeout=quiet)
                except Timeout:
                    break
                self.got.append(bytes(cast(memoryview, message.body)))  # a data section
                receiver.accept()
        finally:
            conn.close()


class Rabbit091Drain:
    """A RabbitMQ queue read over 0-9-1 (basic.get, acked): ``got`` bodies."""

    def __init__(self, url: str, queue: str) -> None:
        self.url, self.queue = url, queue
        self.got: list[bytes] = []

    def drain(self) -> None:
        conn = rabbit091(self.url)
        try:
            ch = conn.channel()
            while True:
                method, _props, body = ch.basic_get(self.queue, auto_ack=True)
                if method is None:
                    break
                self.got.append(body)
        finally:
            close_quietly(conn)


def confirmed_publish(conn: pika.BlockingConnection, exchange: str, routing_key: str,
                      bodies: list[bytes]) -> None:
    """Publish persistently in confirm mode on a new channel of ``conn``, then close it."""
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        for body in bodies:
            ch.basic_publish(exchange, routing_key, body, PERSISTENT)
    finally:
        close_quietly(conn)


class Soak:
    """The bridge, its peers, what was sent and what arrived, by route."""

    def __init__(self, args: argparse.Namespace, url: str, workdir: Path) -> None:
        self.args, self.url = args, url
        self.broker = Broker(users={"guest": "guest"})
        self.server = self.broker.serve()
        self.relay = Relay(self.server.address)
        tag = uuid.uuid4().hex[:8]
        self.queues = {name: f"bench.soak-{name}.{tag}" for name in (
            *ROUTES, "out091-src", "in091-dst")}
        self.app_names = _soak_apps.queue_names(tag) if args.apps else None
        conn = rabbit091(url)
        try:
            ch = conn.channel()
            for name in [*self.queues.values(), *(self.app_names or {}).values()]:
                ch.queue_declare(name, durable=True)
            if args.apps:
                _soak_apps.declare_celery_exchanges(ch)
        finally:
            close_quietly(conn)
        with legacy_client(self.server) as admin:
            admin.declare_queue("out")
            admin.declare_queue("in-q")
            admin.bind("in-q", "amq.direct", "in")
        self.port, self.port091 = free_port(), free_port()
        while self.port091 == self.port:
            self.port091 = free_port()
        self.bridge = BridgeRun(config(self.queues, self.relay.url(self.server.url), url,
                                       self.port, self.port091, self.app_names), workdir,
                                "soak", log_level="info")
        self.apps = _soak_apps.Apps(args.apps, self.app_names or {}, workdir, args.app_rate,
                                    args.minutes * 60, self.port091, self.port, USER, PASSWORD)
        self.pika_drain = Amqp10Drain(url, self.app_names["pika"]) \
            if "pika" in args.apps and self.app_names else None
        self.sent: dict[str, list[bytes]] = {r: [] for r in ROUTES}
        self.drains = {r: Amqp10Drain(url, self.queues[r])
                       for r in ("out", "pub", "out091", "pub091")}
        self.in091 = Rabbit091Drain(url, self.queues["in091-dst"])
        self.in_got: list[bytes] = []
        self.consumers: dict[str, FacadeConsumer | FacadeConsumer091] = {}
        self.retired: dict[str, list[bytes]] = {"sub": [], "sub091": []}
        self.reconnects = 0
        self.consumer_errors: list[str] = []
        self.retries = 0

    # the producers, one round's share each

    def bodies(self, route: str, n: int) -> list[bytes]:
        start = len(self.sent[route])
        items = [f"{route}-{i}".encode() for i in range(start, start + n)]
        self.sent[route].extend(items)
        return items

    def send_round(self, n: int) -> None:
        """One round's share of every driven route (the façade publishers connect anew)."""
        steps: dict[str, Callable[[list[bytes]], None]] = {
            "out": lambda items: legacy_publish(self.server, "out", items),
            "out091": lambda items: confirmed_publish(
                rabbit091(self.url), "", self.queues["out091-src"], items),
            "pub": lambda items: self.facade_publish(items),
            "pub091": lambda items: confirmed_publish(
                facade091(self.port091), "events091", "e", items)}
        for route in ("in", "sub", "in091", "sub091"):
            steps[route] = functools.partial(self.amqp10_send, route)
        for route in self.args.paths:
            items = self.bodies(route, n)
            self.again(functools.partial(steps[route], items), f"sending to {route}")

    def amqp10_send(self, route: str, items: list[bytes]) -> None:
        send_messages(self.url, f"/amq/queue/{self.queues[route]}",
                      [Message(body=b, durable=True, inferred=True) for b in items], timeout=60)

    def facade_publish(self, items: list[bytes]) -> None:
        with facade_client(self.port, timeout=60) as client:
            for body in items:
                client.publish(body, exchange="events", routing_key="e", wait=False,
                               delivery=DeliveryProperties(delivery_mode=2))
            client.sync()

    def again(self, step: Callable[[], None], what: str) -> None:
        """Run ``step`` (the same messages) until it succeeds while a peer is away — the
        shared RabbitMQ node restarted by another test run, the bridge reconnecting —
        for up to :data:`PEER_AWAY` seconds; each retry is counted in the report."""
        deadline = time.monotonic() + PEER_AWAY
        while True:
            try:
                step()
                return
            except AssertionError:
                raise
            except Exception as exc:  # a peer gone: any client's error
                if time.monotonic() > deadline:
                    raise
                self.retries += 1
                print(f"{what}: {exc!r:.200}; again in 1 s", flush=True)
                time.sleep(1)

    # the consumers

    def drain_round(self) -> None:
        for route, drain in self.drains.items():
            if route in self.args.paths:
                self.again(drain.drain, f"draining {route}")
        if "in091" in self.args.paths:
            self.again(self.in091.drain, "draining in091")
        if self.pika_drain is not None:
            self.again(self.pika_drain.drain, "draining pika")
            self.apps.apps["pika"].drained = [b.decode() for b in self.pika_drain.got]
        queue = self.broker.queues["in-q"].messages
        while queue:
            self.in_got.append(bytes(queue.popleft().body))

    def replace_consumers(self) -> None:
        """New façade consumers subscribe; the old ones leave (what they held goes back)."""
        for route, make in (("sub", lambda: FacadeConsumer(self.port, "jobs")),
                            ("sub091", lambda: FacadeConsumer091(self.port091, "jobs091"))):
            if route not in self.args.paths:
                continue
            new = make()
            new.start()
            new.subscribed.wait(60)
            old = self.consumers.get(route)
            self.consumers[route] = new
            if old is not None:
                old.stop()
                self.retired[route].extend(old.bodies)
                if old.error is not None:  # its messages go to the next one: not lost
                    self.consumer_errors.append(f"{route}: {old.error!r}")

    def got(self, route: str) -> list[bytes]:
        if route in self.drains:
            return self.drains[route].got
        if route == "in091":
            return self.in091.got
        if route == "in":
            return self.in_got
        return self.retired[route] + list(self.consumers[route].bodies)

    def missing(self) -> dict[str, int]:
        return {r: len(set(self.sent[r]) - set(self.got(r))) for r in self.args.paths}

    def bridge_ended(self) -> dict[str, float]:
        """``amqp_bridge_facade_ended_total`` by listener and reason: the façade clients'
        connections and sessions the bridge ended on its own."""
        found = scrape(metrics_port(self.bridge.log)).samples
        return {f"{dict(labels)['listener']}/{dict(labels)['reason']}": value
                for (name, labels), value in found.items()
                if name == "amqp_bridge_facade_ended_total"}

    def close(self) -> None:
        for consumer in self.consumers.values():
            consumer.stop()
        self.apps.stop()
        self.bridge.stop()
        self.relay.close()
        self.server.stop()
        self.again(self.delete_queues, "deleting the queues")

    def delete_queues(self) -> None:
        conn = rabbit091(self.url)
        try:
            ch = conn.channel()
            for name in [*self.queues.values(), *(self.app_names or {}).values()]:
                ch.queue_delete(name)
        finally:
            close_quietly(conn)


# --- the run -------------------------------------------------------------------------------


def topology_main(args: argparse.Namespace, workdir: Path) -> int:
    """The topology-mode soak (``--topology``, see :mod:`_soak_topology`); its exit status."""
    with private_rabbitmq(workdir / "rabbitmq4", version=4) as node:
        port091, port010 = free_port(), free_port()
        while port010 == port091:
            port010 = free_port()
        text, env = _soak_topology.config(port091, port010)
        bridge = BridgeRun(text, workdir, "soak", log_level="info",
                           env={**env, "CLOUD_URL": node.url})
        which = [a for a in args.apps if a in _soak_topology.TOPOLOGY_APPS] \
            if args.apps != list(_soak_apps.APPS) else list(_soak_topology.TOPOLOGY_APPS)
        apps = _soak_topology.TopologyApps(which, uuid.uuid4().hex[:8], workdir, args.app_rate,
                                           args.minutes * 60, port091, port010)
        census = _soak_topology.Census(apps.tag)
        print(f"soak --topology: {args.minutes} min, {args.app_rate} calls/s for each of "
              f"{', '.join(which)}; broker {node.url}; log {bridge.log_path}", flush=True)
        try:
            bridge.start()
            wait_listening(port091, bridge, timeout=60)
            wait_listening(port010, bridge, timeout=60)
            mport = metrics_port(bridge.log)
            apps.start()
            t0 = time.monotonic()
            sampler = Sampler(bridge.pid, args.sample, t0)
            sampler.sample()
            sampler.start()
            cpu0 = cpu_seconds(bridge.pid)
            census.take(0, mport, node.url)
            next_census, next_ping = args.census, args.ping_every
            restart = args.restart_at * 60 if args.restart_at else None
            while (now := time.monotonic() - t0) < args.minutes * 60:
                if proc_gone(bridge):
                    print("the bridge exited:\n" + bridge.log()[-3000:])
                    return 2
                for broken in apps.broken():
                    print(f"an application ended: {broken}")
                    return 2
                if restart is not None and now >= restart:
                    print(f"{now / 60:5.1f} min: restarting the private RabbitMQ node", flush=True)
                    census.restarts.append(now)
                    node.stop()
                    node.start()
                    restart = now + args.restart_every * 60 if args.restart_every else None
                if now >= next_ping:
                    apps.ping()
                    next_ping += args.ping_every
                if now >= next_census:
                    census.take(now, mport, node.url)
                    last = sampler.samples[-1]
                    print(f"{now / 60:5.1f} min RSS {last[1] / 1024:6.1f} MiB fds {last[2]} "
                          f"{census.line()}", flush=True)
                    next_census += args.census
                time.sleep(1)
            load_end = time.monotonic() - t0
            cpu = (cpu_seconds(bridge.pid) - cpu0) / load_end
            deadline = time.monotonic() + 90
            while not apps.producers_done() and time.monotonic() < deadline:
                time.sleep(1)
            apps.stop()
            time.sleep(args.rest)
            sampler.done.set()
            sampler.join()
            sampler.sample()
            census.take(time.monotonic() - t0, mport, node.url)
            lost, duplicates = apps.report()
            pings = apps.pings
            print(f"celery inspect ping: {sum(pings)}/{len(pings)} answered")
            print(f"the bridge's CPU over the load: {cpu * 100:.1f} % of one core")
            census.report()
            print(f"queues left at rest: {census.last_queues}")
            delivered = sum(len(app.got()) for app in apps.apps.values())
            ok = report(sampler.samples, load_end, args.stretch * 60, delivered, args.max_slope)
            lost += len(pings) - sum(pings)
            print(f"lost: {lost}, duplicates: {duplicates}")
            return 0 if (ok and not lost) or not args.check else 1
        finally:
            apps.stop()
            bridge.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60, help="minutes of load")
    parser.add_argument("--rate", type=float, default=25, help="messages/s per route")
    parser.add_argument("--round", type=float, default=5.0, help="seconds per round")
    parser.add_argument("--paths", type=lambda v: v.split(","), default=ROUTES,
                        help=f"the routes to drive, comma-separated (default all: {','.join(ROUTES)})")
    parser.add_argument("--churn", type=int, default=6,
                        help="rounds between façade consumer replacements")
    parser.add_argument("--cut-every", type=float, default=300,
                        help="seconds between cuts of the bridge's 0-10 connection (0: none)")
    parser.add_argument("--sample", type=float, default=15, help="seconds between samples")
    parser.add_argument("--stretch", type=float, default=5, help="minutes per stretch")
    parser.add_argument("--rest", type=float, default=60, help="seconds of rest after load")
    parser.add_argument("--max-slope", type=float, default=5.0,
                        help="MiB/h: the second half's slope under which RSS levels off")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless RSS levels off and nothing was lost")
    parser.add_argument("--probe", nargs="?", const="count", choices=("count", "collect", "trace"),
                        help="run the bridge with the memory probe (benchmarks/_soak_probe); "
                             "collect: a full garbage collection before each sample; "
                             "trace: the bridge under tracemalloc too")
    parser.add_argument("--code", type=Path, default=None,
                        help="run the bridge from this source tree instead (e.g. another "
                             "commit's `git archive`, to compare before and after)")
    parser.add_argument("--apps", type=lambda v: [] if v == "none" else v.split(","),
                        default=list(_soak_apps.APPS),
                        help="the real applications to run beside (comma-separated, default "
                             f"all: {','.join(_soak_apps.APPS)}; none: no applications)")
    parser.add_argument("--app-rate", type=float, default=5,
                        help="messages/s each application's producer sends")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--topology", action="store_true",
                        help="soak the façades' topology mode instead (a private RabbitMQ 4.0 "
                             "node; --apps from: " + ",".join(_soak_topology.TOPOLOGY_APPS) + ")")
    parser.add_argument("--census", type=float, default=60,
                        help="--topology: seconds between gauge and broker queue counts")
    parser.add_argument("--ping-every", type=float, default=60,
                        help="--topology: seconds between 'celery inspect ping' runs")
    parser.add_argument("--restart-at", type=float, default=None,
                        help="--topology: restart the private RabbitMQ node once, at this minute")
    parser.add_argument("--restart-every", type=float, default=None,
                        help="--topology, with --restart-at: restart the node again every this "
                             "many minutes after the first")
    args = parser.parse_args()

    if args.code is not None:  # the bridge's working directory comes first on its sys.path
        bridge_support.ROOT = args.code.resolve()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    if args.probe:
        os.environ["PYTHONPATH"] = f"{PROBE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
        os.environ["AMQP_BRIDGE_SOAK_PROBE"] = f"{workdir / 'probe.log'}:{args.sample}" + (
            ":collect" if args.probe == "collect" else "")
        if args.probe == "trace":
            os.environ["PYTHONTRACEMALLOC"] = "1"  # the bridge's, not this process's
    if args.topology:
        return topology_main(args, workdir)
    url = ensure_rabbitmq()
    soak = Soak(args, url, workdir)
    print(f"soak: {args.minutes} min, {args.rate} msg/s on each of {len(args.paths)} routes, "
          f"log {soak.bridge.log_path}", flush=True)
    try:
        soak.bridge.start()
        wait_listening(soak.port, soak.bridge, timeout=60)
        wait_listening(soak.port091, soak.bridge, timeout=60)
        soak.replace_consumers()
        soak.apps.start()
        time.sleep(2)
        t0 = time.monotonic()
        sampler = Sampler(soak.bridge.pid, args.sample, t0)
        sampler.sample()
        sampler.start()
        per_round = max(1, round(args.rate * args.round))
        load_seconds = args.minutes * 60
        rounds = 0
        next_cut = args.cut_every
        while (now := time.monotonic() - t0) < load_seconds:
            soak.send_round(per_round)
            soak.drain_round()
            rounds += 1
            if args.churn and rounds % args.churn == 0:
                soak.replace_consumers()
            if args.cut_every and now >= next_cut:
                soak.relay.reset()
                soak.reconnects += 1
                next_cut += args.cut_every
            if proc_gone(soak.bridge):
                print("the bridge exited:\n" + soak.bridge.log()[-3000:])
                return 2
            for broken in soak.apps.broken():
                print(f"an application ended: {broken}")
                return 2
            pause = rounds * args.round - (time.monotonic() - t0)
            if pause > 0:
                time.sleep(pause)
            if rounds % max(1, int(60 / args.round)) == 0:
                last = sampler.samples[-1]
                print(f"{last[0] / 60:5.1f} min RSS {last[1] / 1024:6.1f} MiB fds {last[2]}",
                      flush=True)
        load_end = time.monotonic() - t0
        deadline = time.monotonic() + 90
        while (any(soak.missing().values()) or not soak.apps.producers_done()
               or any(soak.apps.missing().values())) and time.monotonic() < deadline:
            soak.drain_round()
            time.sleep(1)
        missing = soak.missing()
        soak.apps.stop()
        delivered = sum(len(soak.got(r)) for r in args.paths)
        time.sleep(args.rest)
        sampler.done.set()
        sampler.join()
        sampler.sample()
        for route in args.paths:
            got = soak.got(route)
            print(f"{route:>7}: sent {len(soak.sent[route]):7}, missing {missing[route]}, "
                  f"duplicates {len(got) - len(set(got))}")
        for error in soak.consumer_errors:
            print(f"a façade consumer failed: {error}")
        print(f"{len(soak.consumer_errors)} façade consumers failed (detached); the bridge "
              f"ended on its own: {soak.bridge_ended() or 'none'}")
        app_lost, app_duplicates = soak.apps.report()
        delivered += sum(len(app.got()) for app in soak.apps.apps.values())
        publishers = rounds * len({"pub", "pub091"} & set(args.paths))
        print(f"{rounds} rounds, {publishers} façade publisher connections, "
              f"{(rounds // args.churn if args.churn else 0) + 1} façade consumer generations, "
              f"{soak.reconnects} cuts of the 0-10 connection, {soak.retries} peer steps retried")
        ok = report(sampler.samples, load_end, args.stretch * 60, delivered, args.max_slope)
        lost = sum(missing.values()) + app_lost
        print(f"lost: {lost}, applications' duplicates: {app_duplicates}")
        return 0 if (ok and not lost and not app_duplicates) or not args.check else 1
    finally:
        soak.close()


def proc_gone(bridge: BridgeRun) -> bool:
    return bridge.proc is None or bridge.proc.poll() is not None


if __name__ == "__main__":
    sys.exit(main())
