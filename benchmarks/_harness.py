"""What the end-to-end benchmarks share: the bridge in a subprocess, plain proton clients.

- :class:`Bridge`: ``amqp-bridge run`` as a subprocess with a 1.0 connection ``cloud``
  and whatever legacy connections and listeners a benchmark adds, its CPU time from
  /proc, ready when ``/readyz`` says so;
- :func:`timed`: a run's rate and the bridge's CPU per message between 10 % and 100 %;
- plain proton senders and receivers in child processes (the baselines, and the
  fillers of RabbitMQ queues): :func:`child`, :func:`start_child`, :func:`raw_sender`,
  :func:`raw_receiver`;
- :class:`TapRun` (the route option ``tap`` of a measured route) and :func:`finish`.

Imported by ``benchmarks/bridge.py`` (after ``_timing``, which puts the project root first
on ``sys.path``).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Protocol

from _timing import ROOT
from proton import Message, symbol
from proton.handlers import MessagingHandler
from proton.reactor import Container

from bridge.accelerated import ENV as ACCELERATED_ENV
from tests.support.bridge import free_port
from tests.support.rabbitmq import rabbitmqctl, unique_queue

BODY = bytes(range(256)) * 4
WINDOW = 1000
TARGET_RATIO = 0.9
CE = "cloudevents: {mode: binary, type: com.example.bench, source: /bench}"
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


# --- the broker's CPU ------------------------------------------------------------------------


class BrokerMeter:
    """The RabbitMQ node's CPU per message over a run's measured span (both sides of every
    route are that node here, so its work counts as much as the bridge's on a small machine).

    :func:`timed` and the proton children (which read the node's ``/proc`` entry at their
    own 10 % and 100 % marks) leave the figure of the last run in :attr:`last`."""

    ENV = "AMQP_BRIDGE_BENCH_BROKER_PID"
    last = float("nan")

    @staticmethod
    def pid() -> int | None:
        value = os.environ.get(BrokerMeter.ENV)
        return int(value) if value else None

    @staticmethod
    def start(url: str) -> None:
        """Find the node's OS process (children inherit it through the environment)."""
        os.environ[BrokerMeter.ENV] = rabbitmqctl(
            url, "eval", "list_to_integer(os:getpid()).").strip()

    @staticmethod
    def cpu() -> float:
        pid = BrokerMeter.pid()
        return cpu_seconds(pid) if pid is not None else float("nan")


# --- the bridge -------------------------------------------------------------------------------


def bridge_environment(accelerated: bool) -> dict[str, str]:
    """This process's environment for a bridge, asking for the accelerated build
    (bridge/accelerated.py) exactly if ``accelerated``."""
    env = {k: v for k, v in os.environ.items() if k != ACCELERATED_ENV}
    if accelerated:
        env[ACCELERATED_ENV] = "1"
    return env


class Bridge:
    """``amqp-bridge run`` in a subprocess, with its CPU time (and its children's: the tap's
    archive writer)."""

    profile_dir: Path | None = None
    """Set (``--profile DIR``): each bridge runs under cProfile, writing DIR/NAME.prof."""

    def __init__(self, legacy_url: str | None, cloud_url: str, route: str, workdir: Path, *,
                 facade_port: int | None = None, legacy_protocol: str = "amqp0-10",
                 code: Path | None = None, accelerated: bool = False) -> None:
        """A bridge with the ``cloud`` 1.0 connection, the ``legacy`` one (``legacy_protocol``)
        if ``legacy_url`` is given, and the ``facade`` 0-10 listener on ``facade_port`` if
        given (user ``guest``/``guest``); run from the checkout ``code`` (another commit's
        worktree: a baseline in the same run) instead of this one if given; with the
        compiled modules of ``scripts/accelerate build`` if ``accelerated`` (else never)."""
        self.route_name = name = route.split("name:", 1)[1].split()[0]
        config = workdir / f"bridge-{name}-{time.time_ns()}.yaml"
        self.metrics_port = free_port()
        legacy = "" if legacy_url is None else \
            f'  legacy: {{protocol: {legacy_protocol}, url: "{legacy_url}", heartbeat: 0}}'
        listeners = "" if facade_port is None else f"""listeners:
  facade: {{protocol: amqp0-10, bind: "127.0.0.1:{facade_port}", users: {{guest: guest}}}}"""
        config.write_text(f"""
metrics: {{bind: "127.0.0.1:{self.metrics_port}"}}
connections:
{legacy}
  cloud:  {{protocol: amqp1.0, url: "{cloud_url}"}}
{listeners}
routes:
{route}
""")
        self.log_path = config.with_suffix(".log")
        self.log = open(self.log_path, "wb")  # noqa: SIM115
        profile = []
        if self.profile_dir is not None:
            profile = ["-m", "cProfile", "-o", str(self.profile_dir / f"{name}.prof")]
        self.proc = subprocess.Popen(
            [sys.executable, *profile, "-m", "bridge.cli", "run", "-c", str(config),
             "--log-level", "warning"], cwd=code or ROOT, stdout=self.log,
            stderr=subprocess.STDOUT, env=bridge_environment(accelerated))

    def cpu(self) -> float:
        return cpu_seconds(self.proc.pid)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Until the bridge's ``/readyz`` says every route is ready (links attached)."""
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.metrics_port}/readyz"
        while True:
            # not listening yet, or 503: not ready yet
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise TimeoutError(f"the bridge was not ready in {timeout:.0f}s "
                                   f"(see {self.log_path})")
            time.sleep(0.05)

    def children_cpu(self) -> float:
        """CPU seconds of the bridge's child processes (the archive writer)."""
        total = 0.0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            for pid in (task / "children").read_text().split():
                with contextlib.suppress(FileNotFoundError):  # it just ended
                    total += cpu_seconds(int(pid))
        return total

    def stop(self) -> float:
        """SIGTERM and wait; returns the seconds it took to exit (drain, taps closed)."""
        started = time.perf_counter()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        return time.perf_counter() - started


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


class Measured(Protocol):
    """What :func:`timed` reads of the mover it times (a :class:`Bridge`, or the node
    itself for RabbitMQ's Shovel)."""

    def cpu(self) -> float:
        """CPU seconds used so far."""

    def children_cpu(self) -> float:
        """CPU seconds of its child processes so far."""


def timed(progress: Any, n: int, bridge: Measured, timeout: float = 600,
          extra: list[float] | None = None) -> tuple[float, float]:
    """(messages/s, bridge CPU µs per message) between 10 % and 100 % of ``n``.

    ``extra``, if given, gets the CPU µs per message of the bridge's children (the
    tap's writer process) over the same span."""
    deadline = time.monotonic() + timeout
    while progress() < n // 10:
        if time.monotonic() > deadline:
            raise TimeoutError("the bridge did not start moving messages")
        time.sleep(0.002)
    t0, c0, w0 = time.perf_counter(), bridge.cpu(), bridge.children_cpu()
    b0 = BrokerMeter.cpu()
    while progress() < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the bridge moved {progress()} of {n}")
        time.sleep(0.002)
    t1, c1, w1 = time.perf_counter(), bridge.cpu(), bridge.children_cpu()
    counted = n - n // 10
    BrokerMeter.last = (BrokerMeter.cpu() - b0) / counted * 1e6
    if extra is not None:
        extra.append((w1 - w0) / counted * 1e6)
    return counted / (t1 - t0), (c1 - c0) / counted * 1e6


class TapRun:
    """The ``tap`` line of a benchmark route and what the tapped run measured."""

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / f"archive-{time.time_ns()}"
        self.writer_cpu: list[float] = []
        self.stop_seconds = 0.0
        self.backpressure_seconds = 0.0

    def stopped(self, bridge: Bridge, seconds: float) -> None:
        """Note how the tapped bridge stopped, and how long it withheld credit (its log)."""
        self.stop_seconds = seconds
        for line in bridge.log_path.read_text().splitlines():
            if ": tap: recorded=" in line:
                self.backpressure_seconds = float(
                    line.split("backpressure_seconds=")[1].split()[0])

    def option(self) -> str:
        return f"tap: {{path: '{self.path}', side: both}}"

    def rows(self) -> int:
        import pyarrow.parquet as pq

        return int(pq.read_table(self.path, columns=["side"]).num_rows)


def finish(bridge: Bridge, tap: TapRun | None, url: str, queue: str) -> None:
    """Stop a measured bridge (checking its archive when tapped) and delete its queue."""
    stopped = bridge.stop()
    if tap:
        tap.stopped(bridge, stopped)
    rabbitmqctl(url, "delete_queue", queue)



# --- plain proton clients (child processes) --------------------------------------------------


LEGACY_ANNOTATIONS = {
    "0-10": {symbol("x-amqp-0-10.routing-key"): "bench-out", symbol("x-amqp-0-10.exchange"): ""},
    "0-9-1": {symbol("x-exchange"): ""},
}
"""The annotations a bridge route from each legacy protocol gives its 1.0 messages."""


def bench_message(i: int, sent: int = 0, legacy: str = "0-10") -> Message:
    """What the bridge sends for a benchmark message from ``legacy`` (0-10 or 0-9-1; both
    mappings name the routing key the subject), built the plain proton way."""
    mid = uuid.uuid4()
    return Message(
        id=mid, body=BODY, durable=True, content_type="application/octet-stream",
        subject="bench-out", inferred=True,
        annotations=LEGACY_ANNOTATIONS[legacy],
        properties={"seq": i, "region": "emea", "sent": sent, "cloudEvents_specversion": "1.0",
                    "cloudEvents_id": str(mid), "cloudEvents_source": "/bench",
                    "cloudEvents_type": "com.example.bench"})


class _Sender(MessagingHandler):  # type: ignore[misc]
    def __init__(self, url: str, address: str, n: int, pace: float = 0.0,
                 legacy: str = "0-10") -> None:
        super().__init__(prefetch=0, auto_settle=True)
        self.url, self.address, self.n, self.pace = url, address, n, pace
        self.legacy = legacy
        self.sent = self.settled = 0
        self.t0 = self.t1 = 0.0
        self.b0 = self.b1 = 0.0
        self.c0 = 0.0
        self.start = 0.0

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url, reconnect=False)
        self.sender = event.container.create_sender(self.conn, self.address)
        self.start = time.monotonic()
        if self.pace:
            event.container.schedule(0, self)

    def on_timer_task(self, event: Any) -> None:
        self.send()
        if self.sent < self.n:
            event.container.schedule(0.001, self)

    def on_sendable(self, event: Any) -> None:
        if not self.pace:
            self.send()

    def send(self) -> None:
        sender = self.sender
        while sender.credit and self.sent < self.n and self.sent - self.settled < WINDOW:
            if self.pace and self.start + self.sent / self.pace > time.monotonic():
                return
            sender.send(bench_message(self.sent, time.time_ns(), self.legacy))
            self.sent += 1

    def on_settled(self, event: Any) -> None:
        self.settled += 1
        if self.settled == self.n // 10:
            self.t0, self.c0 = time.perf_counter(), time.process_time()
            self.b0 = BrokerMeter.cpu()
        if self.settled == self.n:
            self.t1 = time.perf_counter()
            self.c1 = time.process_time()
            self.b1 = BrokerMeter.cpu()
            self.conn.close()
        elif not self.pace:
            self.send()


class _Receiver(MessagingHandler):  # type: ignore[misc]
    def __init__(self, url: str, address: str, n: int, latency: bool) -> None:
        super().__init__(prefetch=WINDOW, auto_accept=True)
        self.url, self.address, self.n, self.latency = url, address, n, latency
        self.received = 0
        self.t0 = self.t1 = self.c0 = self.c1 = self.b0 = self.b1 = 0.0
        self.latencies: list[float] = []

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url, reconnect=False)
        event.container.create_receiver(self.conn, self.address)

    def on_message(self, event: Any) -> None:
        if self.latency:
            self.latencies.append((time.time_ns() - event.message.properties["sent"]) / 1e6)
        self.received += 1
        if self.received == self.n // 10:
            self.t0, self.c0 = time.perf_counter(), time.process_time()
            self.b0 = BrokerMeter.cpu()
        if self.received == self.n:
            self.t1, self.c1 = time.perf_counter(), time.process_time()
            self.b1 = BrokerMeter.cpu()
            self.conn.close()


def _child(kind: str, url: str, address: str, n: int, pace: float, out: Any) -> None:
    if kind in ("send", "fill", "fill-091", "pace"):
        handler: Any = _Sender(url, address, n, pace, "0-9-1" if kind == "fill-091" else "0-10")
        Container(handler).run()
        counted = n - n // 10
        out.send((counted / (handler.t1 - handler.t0), (handler.c1 - handler.c0) / counted * 1e6,
                  (handler.b1 - handler.b0) / counted * 1e6))
    else:
        receiver = _Receiver(url, address, n, kind == "latency")
        Container(receiver).run()
        counted = n - n // 10
        out.send((counted / (receiver.t1 - receiver.t0),
                  (receiver.c1 - receiver.c0) / counted * 1e6, receiver.latencies,
                  (receiver.b1 - receiver.b0) / counted * 1e6))


def child(kind: str, url: str, address: str, n: int, pace: float = 0.0) -> Any:
    """Run a plain proton client in a fresh process; returns what it measured."""
    proc, result = start_child(kind, url, address, n, pace)
    try:
        return result.recv()
    except EOFError:
        raise RuntimeError(f"the proton {kind} client failed (see its traceback above)") from None
    finally:
        proc.join()


def start_child(kind: str, url: str, address: str, n: int, pace: float = 0.0) -> Any:
    """Start a plain proton client in a fresh process: (process, the end it reports to).

    Only the child holds the other end, so a child that dies makes ``recv`` raise EOFError."""
    ctx = mp.get_context("spawn")
    parent_end, child_end = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(kind, url, address, n, pace, child_end))
    proc.start()
    child_end.close()
    return proc, parent_end


def raw_sender(url: str, n: int) -> tuple[float, float]:
    queue = unique_queue("bench-raw")
    try:
        rate, cpu, BrokerMeter.last = child("send", url, f"/queue/{queue}", n)
        return rate, cpu
    finally:
        rabbitmqctl(url, "delete_queue", queue)


def raw_receiver(url: str, n: int) -> tuple[float, float]:
    queue = unique_queue("bench-raw")
    child("fill", url, f"/queue/{queue}", n)
    try:
        rate, cpu, _, BrokerMeter.last = child("receive", url, f"/queue/{queue}", n)
        return rate, cpu
    finally:
        rabbitmqctl(url, "delete_queue", queue)


def percentiles(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=100)
    return q[49], q[98]


