"""The bridge end to end: messages/s and latency, against a plain proton client.

Run: ``.venv/bin/python benchmarks/bridge.py [--messages N] [--rounds R]``
(needs the project's RabbitMQ: it is started like the tests start it).

Set-up: ``amqp-bridge run`` as a subprocess between the in-memory 0-10 broker
(the engine's server role over TCP, in this process) and RabbitMQ; 1 KiB
messages with a UUID message-id, content-type and two application headers;
CloudEvents binary mode from a template on both routes; ``max_in_flight`` 1000.

- *0-10 → 1.0*: a backlog of N messages in the 0-10 queue; the rate is how fast
  they are accepted by RabbitMQ (and so settled at the source), from 10 % to 100 %
  of them. Baseline: a plain proton sender (a child process, the same window of
  1000 unsettled messages) sending the equivalent 1.0 message (same body and
  properties, built per message) into a RabbitMQ queue.
- *1.0 → 0-10*: a backlog of N messages in a RabbitMQ queue; the rate is how fast
  they reach the 0-10 queue. Baseline: a plain proton receiver (credit 1000,
  accepting each) draining the same kind of backlog; also compared with the
  sender's rate.
- *façade 0-10 → 1.0*: a 0-10 client (:class:`amqp010.transport.BlockingClient`, a child
  process) publishes N messages like the 0-10 ones above (at most 1000 not yet completed)
  to an exchange of the bridge's façade listener, routed to a RabbitMQ queue; the rate is
  how fast the façade completes them (it does once RabbitMQ accepted), from 10 % to
  100 %. Baseline: the proton sender of the same round.
- *façade 1.0 → 0-10*: a backlog of N messages in a RabbitMQ queue behind a façade queue;
  the rate is how fast a 0-10 client (a child process, window credit 1000, accepting in
  batches of 100) receives them. Baseline: the proton receiver of the same round.
  ``--only-facade`` runs just these two and their baselines.
- *latency*: messages paced at ``--latency-rate`` per second carry their send
  time; the consumer on the other side (proton in a child process, or the 0-10
  client here) records arrival - send. p50 / p99 over ``--latency-messages``;
  baseline: a paced proton sender to a proton receiver through RabbitMQ.

- *tap*: the same two throughput runs with the route option ``tap: {side: both}``
  on (an archive of every message as received and as delivered, docs/archive.md),
  interleaved with the runs without it: both rates, their ratio, the bridge's and
  the archive writer process's CPU per message, and how long the stop (drain,
  then the last archive file written) took, and how long the route withheld
  credit because the writer was behind. The archive is checked afterwards
  (2 rows per message). Below saturation: the 0-10 → 1.0 latency run (next
  item) with and without the tap. ``--only-tap`` runs just these comparisons.

``--profile DIR`` runs each bridge under cProfile (``DIR/<route>.prof``; read
with ``python -m pstats``).

Rounds interleave the bridge and its baseline (best round kept); the bridge's CPU
time per message comes from /proc. The machine's other load shows in every
figure: compare ratios, not absolute rates.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import multiprocessing as mp
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # ahead of this folder, where this very file is "bridge"

from proton import Message, symbol  # noqa: E402
from proton.handlers import MessagingHandler  # noqa: E402
from proton.reactor import Container  # noqa: E402

from amqp010.spec import DeliveryProperties, MessageProperties  # noqa: E402
from amqp010.testing.broker import Broker  # noqa: E402
from amqp010.testing.broker import Message as StoredMessage  # noqa: E402
from amqp010.testing.broker import Queue as BrokerQueue  # noqa: E402
from amqp010.testing.server import EngineServer  # noqa: E402
from amqp010.transport import BlockingClient  # noqa: E402
from tests.support.bridge import free_port  # noqa: E402
from tests.support.rabbitmq import ensure_rabbitmq, rabbitmqctl, unique_queue  # noqa: E402

BODY = bytes(range(256)) * 4
WINDOW = 1000
TARGET_RATIO = 0.9
CE = "cloudevents: {mode: binary, type: com.example.bench, source: /bench}"
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


# --- the bridge -------------------------------------------------------------------------------


class Bridge:
    """``amqp-bridge run`` in a subprocess, with its CPU time (and its children's: the tap's
    archive writer)."""

    profile_dir: Path | None = None
    """Set (``--profile DIR``): each bridge runs under cProfile, writing DIR/NAME.prof."""

    def __init__(self, legacy_url: str | None, cloud_url: str, route: str, workdir: Path, *,
                 facade_port: int | None = None) -> None:
        """A bridge with the ``cloud`` 1.0 connection, the ``legacy`` 0-10 one if
        ``legacy_url`` is given, and the ``facade`` listener on ``facade_port`` if given
        (user ``guest``/``guest``)."""
        name = route.split("name:", 1)[1].split()[0]
        config = workdir / f"bridge-{name}-{time.time_ns()}.yaml"
        self.metrics_port = free_port()
        legacy = "" if legacy_url is None else \
            f'  legacy: {{protocol: amqp0-10, url: "{legacy_url}", heartbeat: 0}}'
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
             "--log-level", "warning"], cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)

    def cpu(self) -> float:
        return _cpu(self.proc.pid)

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
                    total += _cpu(int(pid))
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


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def unsettled(broker: Broker) -> int:
    while True:
        try:
            return sum(len(m.unacked) for m in list(broker.sessions.values()))
        except RuntimeError:  # changed size during iteration (the server thread)
            continue


def timed(progress: Any, n: int, bridge: Bridge, timeout: float = 600,
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
    while progress() < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the bridge moved {progress()} of {n}")
        time.sleep(0.002)
    t1, c1, w1 = time.perf_counter(), bridge.cpu(), bridge.children_cpu()
    counted = n - n // 10
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


def legacy_to_amqp10(broker: Broker, server: EngineServer, url: str, n: int,
                     workdir: Path, tap: TapRun | None = None) -> tuple[float, float]:
    queue = broker.queues.setdefault("bench-out", BrokerQueue("bench-out"))
    for i in range(n):
        queue.messages.append(StoredMessage(
            DeliveryProperties(routing_key="bench-out", delivery_mode=2),
            MessageProperties(message_id=uuid.uuid4(), content_type="application/octet-stream",
                              application_headers={"seq": i, "region": "emea"}),
            (), BODY, ""))
    target = unique_queue("bench-out")
    bridge = Bridge(server.url, url, f"""
  - name: out
    from: {{connection: legacy, queue: bench-out}}
    to:   {{connection: cloud, address: /queue/{target}}}
    {CE}
    max_in_flight: {{messages: {WINDOW}}}
    {tap.option() if tap else ""}""", workdir)
    try:
        return timed(lambda: n - len(queue.messages) - unsettled(broker), n, bridge,
                     extra=tap.writer_cpu if tap else None)
    finally:
        finish(bridge, tap, url, target)


def finish(bridge: Bridge, tap: TapRun | None, url: str, queue: str) -> None:
    """Stop a measured bridge (checking its archive when tapped) and delete its queue."""
    stopped = bridge.stop()
    if tap:
        tap.stopped(bridge, stopped)
    rabbitmqctl(url, "delete_queue", queue)


def amqp10_to_legacy(broker: Broker, server: EngineServer, url: str, n: int,
                     workdir: Path, tap: TapRun | None = None) -> tuple[float, float]:
    source = unique_queue("bench-in")
    child("fill", url, f"/queue/{source}", n)
    with BlockingClient.connect(f"amqp://guest:guest@{server.address[0]}:{server.address[1]}") \
            as client:
        client.declare_queue("bench-in-q")
        client.bind("bench-in-q", "amq.direct", "bench-in")
    arrived = broker.queues["bench-in-q"].messages
    arrived.clear()
    bridge = Bridge(server.url, url, f"""
  - name: in
    from: {{connection: cloud, address: /queue/{source}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: bench-in}}
    {CE}
    max_in_flight: {{messages: {WINDOW}}}
    {tap.option() if tap else ""}""", workdir)
    try:
        return timed(lambda: len(arrived), n, bridge, extra=tap.writer_cpu if tap else None)
    finally:
        finish(bridge, tap, url, source)
        arrived.clear()


def facade_publish(url: str, n: int, workdir: Path) -> tuple[float, float]:
    """A 0-10 client (a child process) publishes n messages through the façade listener;
    the rate is how fast the façade completes them (= RabbitMQ accepted them)."""
    target = unique_queue("bench-facade-out")
    return _through_facade(url, n, workdir, "publish", "bench-out", target, f"""
  - name: facade-out
    from: {{{{listener: facade, exchange: bench-out}}}}
    to:   {{{{connection: cloud, address: /queue/{target}}}}}""")


def facade_consume(url: str, n: int, workdir: Path) -> tuple[float, float]:
    """n messages waiting in a RabbitMQ queue; the rate is how fast a 0-10 client (a child
    process, window credit 1000, accepting in batches of 100) receives them from the façade."""
    source = unique_queue("bench-facade-in")
    child("fill", url, f"/queue/{source}", n)
    return _through_facade(url, n, workdir, "consume", "bench-in", source, f"""
  - name: facade-in
    from: {{{{connection: cloud, address: /queue/{source}}}}}
    to:   {{{{listener: facade, queue: bench-in}}}}""")


def _through_facade(url: str, n: int, workdir: Path, mode: str, node: str, queue: str,
                    route: str) -> tuple[float, float]:
    """One façade route (``route``, its ``to``/``from`` lines) and a 0-10 client child that
    publishes to or consumes from ``node`` on the façade; the queue is deleted after."""
    port = free_port()
    bridge = Bridge(None, url, route.format() + f"""
    {CE}
    max_in_flight: {{messages: {WINDOW}}}""", workdir, facade_port=port)
    try:
        bridge.wait_ready()
        with legacy_client_child(mode, port, node, n) as progress:
            return timed(progress, n, bridge)
    finally:
        finish(bridge, None, url, queue)


def tapped(run: Any, n: int, workdir: Path, taps: list[TapRun]) -> tuple[float, float]:
    """``run`` (a throughput run) with a tap on its route; the archive must hold 2n rows."""
    tap = TapRun(workdir)
    result = run(tap=tap)
    rows = tap.rows()
    if rows != 2 * n:
        raise AssertionError(f"the tap archived {rows} rows, not {2 * n}")
    taps.append(tap)
    return result


# --- plain proton clients (child processes) --------------------------------------------------


def bench_message(i: int, sent: int = 0) -> Message:
    """What the bridge sends for a 0-10 benchmark message, built the plain proton way."""
    mid = uuid.uuid4()
    return Message(
        id=mid, body=BODY, durable=True, content_type="application/octet-stream",
        subject="bench-out", inferred=True,
        annotations={symbol("x-amqp-0-10.routing-key"): "bench-out",
                     symbol("x-amqp-0-10.exchange"): ""},
        properties={"seq": i, "region": "emea", "sent": sent, "cloudEvents_specversion": "1.0",
                    "cloudEvents_id": str(mid), "cloudEvents_source": "/bench",
                    "cloudEvents_type": "com.example.bench"})


class _Sender(MessagingHandler):  # type: ignore[misc]
    def __init__(self, url: str, address: str, n: int, pace: float = 0.0) -> None:
        super().__init__(prefetch=0, auto_settle=True)
        self.url, self.address, self.n, self.pace = url, address, n, pace
        self.sent = self.settled = 0
        self.t0 = self.t1 = 0.0
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
            sender.send(bench_message(self.sent, time.time_ns()))
            self.sent += 1

    def on_settled(self, event: Any) -> None:
        self.settled += 1
        if self.settled == self.n // 10:
            self.t0, self.c0 = time.perf_counter(), time.process_time()
        if self.settled == self.n:
            self.t1 = time.perf_counter()
            self.c1 = time.process_time()
            self.conn.close()
        elif not self.pace:
            self.send()


class _Receiver(MessagingHandler):  # type: ignore[misc]
    def __init__(self, url: str, address: str, n: int, latency: bool) -> None:
        super().__init__(prefetch=WINDOW, auto_accept=True)
        self.url, self.address, self.n, self.latency = url, address, n, latency
        self.received = 0
        self.t0 = self.t1 = self.c0 = self.c1 = 0.0
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
        if self.received == self.n:
            self.t1, self.c1 = time.perf_counter(), time.process_time()
            self.conn.close()


def _child(kind: str, url: str, address: str, n: int, pace: float, out: Any) -> None:
    if kind in ("send", "fill", "pace"):
        handler: Any = _Sender(url, address, n, pace)
        Container(handler).run()
        counted = n - n // 10
        out.send((counted / (handler.t1 - handler.t0), (handler.c1 - handler.c0) / counted * 1e6))
    else:
        receiver = _Receiver(url, address, n, kind == "latency")
        Container(receiver).run()
        counted = n - n // 10
        out.send((counted / (receiver.t1 - receiver.t0),
                  (receiver.c1 - receiver.c0) / counted * 1e6, receiver.latencies))


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


def _legacy_client(kind: str, port: int, name: str, n: int, progress: Any) -> None:
    """A 0-10 client of the façade: publish n messages to exchange ``name`` (at most
    WINDOW uncompleted), or consume n from queue ``name``; ``progress`` counts the
    messages completed by the façade / received."""
    with BlockingClient.connect(f"amqp://guest:guest@127.0.0.1:{port}", timeout=60) as client:
        session = client.session
        assert session is not None
        if kind == "publish":
            session.max_outstanding = WINDOW
            for i in range(n):
                client.publish(BODY, routing_key=name, exchange=name, wait=False,
                               delivery=DeliveryProperties(routing_key=name, delivery_mode=2),
                               properties=MessageProperties(
                                   message_id=uuid.uuid4(), content_type="application/octet-stream",
                                   application_headers={"seq": i, "region": "emea"}))
                progress.value = i + 1 - session.outstanding
            client.sync()
            progress.value = n
        else:
            client.subscribe(name, messages=WINDOW, window=True)
            batch = []
            for i in range(n):
                batch.append(client.receive(name, timeout=60))
                if len(batch) == 100 or i == n - 1:
                    client.accept(*batch, wait=False)
                    batch.clear()
                progress.value = i + 1
            client.sync()


@contextlib.contextmanager
def legacy_client_child(kind: str, port: int, name: str, n: int) -> Any:
    """Run :func:`_legacy_client` in a fresh process; yields a function returning its
    progress, and checks on exit that the client finished cleanly."""
    ctx = mp.get_context("spawn")
    progress = ctx.Value("q", 0, lock=False)
    proc = ctx.Process(target=_legacy_client, args=(kind, port, name, n, progress))
    proc.start()
    try:
        yield lambda: progress.value
        proc.join(60)
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(f"the 0-10 {kind} client failed (exit {proc.exitcode})")


def raw_sender(url: str, n: int) -> tuple[float, float]:
    queue = unique_queue("bench-raw")
    try:
        return tuple(child("send", url, f"/queue/{queue}", n))  # type: ignore[return-value]
    finally:
        rabbitmqctl(url, "delete_queue", queue)


def raw_receiver(url: str, n: int) -> tuple[float, float]:
    queue = unique_queue("bench-raw")
    child("fill", url, f"/queue/{queue}", n)
    try:
        rate, cpu, _ = child("receive", url, f"/queue/{queue}", n)
        return rate, cpu
    finally:
        rabbitmqctl(url, "delete_queue", queue)


# --- latency ---------------------------------------------------------------------------------


def quiet_gc() -> None:
    """Keep this process's garbage collector out of a latency run.

    This process hosts the in-memory 0-10 broker every message passes through, and after
    the throughput runs a full collection here took 80-130 ms: one of them in a latency
    run was its p99. What is alive now is moved out of the collector's sight.
    """
    gc.collect()
    gc.freeze()


def latency_proton(url: str, n: int, pace: float) -> list[float]:
    """Baseline: a paced proton sender to a proton receiver through a RabbitMQ queue."""
    quiet_gc()
    queue = unique_queue("bench-lat")
    proc, result = start_child("latency", url, f"/queue/{queue}", n)
    try:
        time.sleep(1.0)
        child("pace", url, f"/queue/{queue}", n, pace)
        latencies: list[float] = result.recv()[2]
        proc.join()
        return latencies
    finally:
        rabbitmqctl(url, "delete_queue", queue)


def latency_legacy_to_amqp10(server: EngineServer, url: str, n: int, pace: float,
                             workdir: Path, tap: TapRun | None = None) -> list[float]:
    quiet_gc()
    target = unique_queue("bench-lat-out")
    bridge = Bridge(server.url, url, f"""
  - name: lat-out
    from: {{connection: legacy, queue: bench-lat}}
    to:   {{connection: cloud, address: /queue/{target}}}
    {CE}
    {tap.option() if tap else ""}""", workdir)
    proc, result = start_child("latency", url, f"/queue/{target}", n)
    try:
        with BlockingClient.connect(
                f"amqp://guest:guest@{server.address[0]}:{server.address[1]}") as client:
            client.declare_queue("bench-lat")
            bridge.wait_ready()
            time.sleep(1.0)  # the consumer (a fresh process) attaches
            start = time.monotonic()
            for i in range(n):
                while start + i / pace > time.monotonic():
                    time.sleep(0.0005)
                client.publish(BODY, routing_key="bench-lat", wait=False,
                               delivery=DeliveryProperties(routing_key="bench-lat"),
                               properties=MessageProperties(
                                   message_id=uuid.uuid4(), application_headers={
                                       "sent": time.time_ns(), "seq": i}))
            latencies: list[float] = result.recv()[2]
        proc.join()
        return latencies
    finally:
        finish(bridge, tap, url, target)


def latency_amqp10_to_legacy(broker: Broker, server: EngineServer, url: str, n: int,
                             pace: float, workdir: Path) -> list[float]:
    quiet_gc()
    source = unique_queue("bench-lat-in")
    latencies = []
    with BlockingClient.connect(f"amqp://guest:guest@{server.address[0]}:{server.address[1]}",
                                timeout=60) as client:
        client.declare_queue("bench-lat-in-q")
        client.bind("bench-lat-in-q", "amq.direct", "bench-lat-in")
        client.subscribe("bench-lat-in-q", messages=None)
        bridge = Bridge(server.url, url, f"""
  - name: lat-in
    from: {{connection: cloud, address: /queue/{source}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: bench-lat-in}}
    {CE}""", workdir)
        try:
            bridge.wait_ready()
            proc, _ = start_child("pace", url, f"/queue/{source}", n, pace)
            while len(latencies) < n:
                ev = client.receive("bench-lat-in-q", timeout=60)
                sent = ev.message_properties.application_headers["sent"]
                latencies.append((time.time_ns() - sent) / 1e6)
                client.accept(ev, wait=False)
            proc.join()
        finally:
            bridge.stop()
            rabbitmqctl(url, "delete_queue", source)
    return latencies


def percentiles(values: list[float]) -> tuple[float, float]:
    q = statistics.quantiles(values, n=100)
    return q[49], q[98]


# --- main ------------------------------------------------------------------------------------


FACADE_ROWS = ("façade 0-10 -> 1.0", "façade 1.0 -> 0-10")


def report_rates(best: dict[str, tuple[float, float]], rows: tuple[str, ...], n: int,
                 rounds: int) -> None:
    """The throughput table: ``rows`` after the proton baselines, each with both ratios."""
    sender, receiver = best["proton sender"][0], best["proton receiver"][0]
    print(f"\n1 KiB messages, CloudEvents binary, window {WINDOW}, {n} messages, "
          f"best of {rounds} rounds")
    print(f"{'':22} {'msg/s':>8} {'CPU µs/msg':>11} {'vs sender':>10} {'vs receiver':>12}")
    for name in ("proton sender", "proton receiver", *rows):
        rate, cpu = best[name]
        print(f"{name:22} {rate:8,.0f} {cpu:11,.0f} {rate / sender:9.2f}x {rate / receiver:11.2f}x")
    if "façade 0-10 -> 1.0" in rows:
        print(f"façade: publish vs sender {best['façade 0-10 -> 1.0'][0] / sender:.2f}x, "
              f"consume vs receiver {best['façade 1.0 -> 0-10'][0] / receiver:.2f}x "
              "(CPU: the bridge process's; for the proton rows, the client's)")


def report_tap(best: dict[str, tuple[float, float]], taps: dict[str, list[TapRun]], n: int,
               rounds: int) -> None:
    """The tap's cost: each direction with and without ``tap: {side: both}``."""
    print(f"\nroute option tap (side: both, {2 * n:,} archive rows per run, verified), "
          f"best of {rounds} rounds:")
    print(f"{'':26} {'msg/s':>8} {'with tap':>9} {'ratio':>6} {'CPU µs/msg':>11} "
          f"{'+ tap':>6} {'writer µs/msg':>14} {'held s':>7} {'stop s':>7}")
    for plain in ("bridge 0-10 -> 1.0", "bridge 1.0 -> 0-10"):
        rate, cpu = best[plain]
        tap_rate, tap_cpu = best[plain + " + tap"]
        runs = taps[plain + " + tap"]
        writer = statistics.mean(w for t in runs for w in t.writer_cpu)
        stop = statistics.mean(t.stop_seconds for t in runs)
        held = statistics.mean(t.backpressure_seconds for t in runs)
        print(f"{plain:26} {rate:8,.0f} {tap_rate:9,.0f} {tap_rate / rate:5.2f}x {cpu:11,.0f} "
              f"{tap_cpu:6,.0f} {writer:14,.0f} {held:7.2f} {stop:7.2f}")
    print("(CPU: the bridge process's, with and without tap; writer: its archive writer "
          "process's; held: seconds the route withheld credit because the writer was behind; "
          "stop: SIGTERM to exit, the last archive file included)")


def report_tap_latency(plain: list[float], tapped: list[float], args: Any) -> None:
    """Latency of a paced 0-10 -> 1.0 bridge with and without the tap (below saturation)."""
    print(f"\n0-10 -> 1.0 latency at {args.latency_rate:.0f} msg/s "
          f"({args.latency_messages} messages), ms:")
    for name, values in (("without tap", plain), ("with tap", tapped)):
        p50, p99 = percentiles(values)
        print(f"  {name:16}  p50 {p50:6.2f}   p99 {p99:6.2f}   max {max(values):6.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000, help="messages per throughput run")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (best is kept)")
    parser.add_argument("--latency-messages", type=int, default=3000)
    parser.add_argument("--latency-rate", type=float, default=500.0, help="messages/s")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if a bridge/baseline ratio is below {TARGET_RATIO}")
    parser.add_argument("--only-tap", action="store_true",
                        help="only the bridge with and without the route option tap")
    parser.add_argument("--only-facade", action="store_true",
                        help="only the façade (both directions) and its proton baselines")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="run the bridges under cProfile, writing DIR/<route>.prof "
                             "(rates then measure the profiler too)")
    args = parser.parse_args()
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        Bridge.profile_dir = args.profile.resolve()
    url = ensure_rabbitmq()
    n = args.messages
    best: dict[str, tuple[float, float]] = {}

    def keep(name: str, result: tuple[float, float]) -> None:
        print(f"  {name:26} {result[0]:8,.0f} msg/s", flush=True)
        if result[0] > best.get(name, (0.0, 0.0))[0]:
            best[name] = result

    taps: dict[str, list[TapRun]] = {"bridge 0-10 -> 1.0 + tap": [],
                                     "bridge 1.0 -> 0-10 + tap": []}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        broker = Broker(users={"guest": "guest"})
        server = broker.serve()

        def out(tap: TapRun | None = None) -> tuple[float, float]:
            return legacy_to_amqp10(broker, server, url, n, workdir, tap)

        def into(tap: TapRun | None = None) -> tuple[float, float]:
            return amqp10_to_legacy(broker, server, url, n, workdir, tap)

        try:
            for r in range(args.rounds):
                print(f"round {r + 1}/{args.rounds} ...", flush=True)
                if not args.only_tap:
                    keep("proton sender", raw_sender(url, n))
                    keep("façade 0-10 -> 1.0", facade_publish(url, n, workdir))
                if not args.only_facade:
                    keep("bridge 0-10 -> 1.0", out())
                    keep("bridge 0-10 -> 1.0 + tap",
                         tapped(out, n, workdir, taps["bridge 0-10 -> 1.0 + tap"]))
                if not args.only_tap:
                    keep("proton receiver", raw_receiver(url, n))
                    keep("façade 1.0 -> 0-10", facade_consume(url, n, workdir))
                if args.only_facade:
                    continue
                keep("bridge 1.0 -> 0-10", into())
                keep("bridge 1.0 -> 0-10 + tap",
                     tapped(into, n, workdir, taps["bridge 1.0 -> 0-10 + tap"]))
            if args.only_facade:
                report_rates(best, FACADE_ROWS, n, args.rounds)
                return 0
            print("latency with and without tap ...", flush=True)
            lat_tap = TapRun(workdir)
            lat_plain = latency_legacy_to_amqp10(server, url, args.latency_messages,
                                                 args.latency_rate, workdir)
            lat_tapped = latency_legacy_to_amqp10(server, url, args.latency_messages,
                                                  args.latency_rate, workdir, lat_tap)
            if lat_tap.rows() != 2 * args.latency_messages:
                raise AssertionError(f"the tap archived {lat_tap.rows()} rows")
            if args.only_tap:
                report_tap(best, taps, n, args.rounds)
                report_tap_latency(lat_plain, lat_tapped, args)
                return 0
            print("latency ...", flush=True)
            lat_raw = latency_proton(url, args.latency_messages, args.latency_rate)
            lat_out = latency_legacy_to_amqp10(server, url, args.latency_messages,
                                               args.latency_rate, workdir)
            lat_in = latency_amqp10_to_legacy(broker, server, url, args.latency_messages,
                                              args.latency_rate, workdir)
        finally:
            server.stop()

    sender, receiver = best["proton sender"][0], best["proton receiver"][0]
    report_rates(best, ("bridge 0-10 -> 1.0", "bridge 1.0 -> 0-10", *FACADE_ROWS), n, args.rounds)
    print(f"\nlatency at {args.latency_rate:.0f} msg/s ({args.latency_messages} messages), ms:")
    for name, values in (("proton -> proton", lat_raw), ("0-10 -> 1.0", lat_out),
                         ("1.0 -> 0-10", lat_in)):
        p50, p99 = percentiles(values)
        print(f"  {name:16}  p50 {p50:6.2f}   p99 {p99:6.2f}   max {max(values):6.2f}")
    report_tap(best, taps, n, args.rounds)
    report_tap_latency(lat_plain, lat_tapped, args)
    ratio_out = best["bridge 0-10 -> 1.0"][0] / sender
    ratio_in = best["bridge 1.0 -> 0-10"][0] / receiver
    met = ratio_out >= TARGET_RATIO and ratio_in >= TARGET_RATIO
    print(f"\ntarget: bridge >= {TARGET_RATIO}x its proton baseline "
          f"(0-10 -> 1.0 vs sender: {ratio_out:.2f}x; 1.0 -> 0-10 vs receiver: {ratio_in:.2f}x): "
          f"{'met' if met else 'NOT met'}")
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
