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
- *0-9-1 → 1.0* and *1.0 → 0-9-1*: the bridge between RabbitMQ's AMQP 0-9-1 and its 1.0,
  against the proton baselines, against pika doing the 0-9-1 half alone, and against
  **RabbitMQ's Shovel** doing the same move (with the bridge's route also run with plain
  messages, as the Shovel moves them; ``--check`` wants the plain rows at 0.8x the
  Shovel's rate, by the pure build or, with ``--accelerated``, by the accelerated one) (``benchmarks/_amqp091_rows.py``). ``--only-091`` runs just these and their baselines.
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

``--baseline DIR`` (another commit's checkout: ``git worktree add DIR COMMIT``) runs the
0-9-1 plain rows, the 0-10 rows and the façade rows a second time with that checkout's
bridge, in the same rounds: rate and CPU per message against the baseline (``--check``
wants half its CPU per message in the 0-9-1 plain rows, issue 23's goal, from the pure
build or, with ``--accelerated``, the accelerated one: the optional build is how the
bridge is run where CPU per message matters).

``--accelerated`` runs the 0-9-1 plain rows, the 0-10 rows and the façade rows a second
time with this checkout's accelerated build (``scripts/accelerate build``;
docs/operations.md "Accelerated build"), in the same rounds: rate and CPU per message
against the pure build (and the baseline's, with ``--baseline``).

``--only-010`` runs just the 0-10 rows and the façade rows (and those variants), without
the tap, the proton baselines and the latency runs. Each round's line gives the bridge's
CPU per message and RabbitMQ's (the 0-10 broker of the 0-10 rows runs in this process).

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
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import _timing  # noqa: F401  (first: the project root ahead of this folder)
from _amqp091_rows import (
    ACCELERATED_ROWS,
    AMQP091_ROWS,
    BASELINE_ROWS,
    CPU_TARGET,
    PLAIN_ROWS,
    SHOVEL_ROWS,
    Amqp091Rows,
    enable_shovel,
    report_accelerated,
    report_baseline,
    report_shovel,
)
from _amqp091_rows import BASELINES as AMQP091_BASELINES
from _amqp091_rows import report as report_amqp091
from _harness import (
    BODY,
    CE,
    TARGET_RATIO,
    WINDOW,
    Bridge,
    BrokerMeter,
    TapRun,
    child,
    finish,
    percentiles,
    raw_receiver,
    raw_sender,
    start_child,
    timed,
)

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.broker import Message as StoredMessage
from amqp010.testing.broker import Queue as BrokerQueue
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from bridge.accelerated import DEFAULT_DIR as DEFAULT_ACCELERATED
from bridge.accelerated import check as check_accelerated
from tests.support.bridge import free_port
from tests.support.rabbitmq import ensure_rabbitmq, rabbitmqctl, unique_queue

LEGACY_010_ROWS = ("bridge 0-10 -> 1.0", "bridge 1.0 -> 0-10")
"""The 0-10 route rows (CloudEvents, the in-memory 0-10 broker)."""


# --- the bridge -------------------------------------------------------------------------------


def unsettled(broker: Broker) -> int:
    while True:
        try:
            return sum(len(m.unacked) for m in list(broker.sessions.values()))
        except RuntimeError:  # changed size during iteration (the server thread)
            continue


def legacy_to_amqp10(broker: Broker, server: EngineServer, url: str, n: int,
                     workdir: Path, tap: TapRun | None = None,
                     accelerated: bool = False, code: Path | None = None) -> tuple[float, float]:
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
    {tap.option() if tap else ""}""", workdir, accelerated=accelerated, code=code)
    try:
        return timed(lambda: n - len(queue.messages) - unsettled(broker), n, bridge,
                     extra=tap.writer_cpu if tap else None)
    finally:
        finish(bridge, tap, url, target)


def amqp10_to_legacy(broker: Broker, server: EngineServer, url: str, n: int,
                     workdir: Path, tap: TapRun | None = None,
                     accelerated: bool = False, code: Path | None = None) -> tuple[float, float]:
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
    {tap.option() if tap else ""}""", workdir, accelerated=accelerated, code=code)
    try:
        return timed(lambda: len(arrived), n, bridge, extra=tap.writer_cpu if tap else None)
    finally:
        finish(bridge, tap, url, source)
        arrived.clear()


def facade_publish(url: str, n: int, workdir: Path, accelerated: bool = False,
                   code: Path | None = None) -> tuple[float, float]:
    """A 0-10 client (a child process) publishes n messages through the façade listener;
    the rate is how fast the façade completes them (= RabbitMQ accepted them)."""
    target = unique_queue("bench-facade-out")
    return _through_facade(url, n, workdir, "publish", "bench-out", target, accelerated, code,
                           f"""
  - name: facade-out
    from: {{{{listener: facade, exchange: bench-out}}}}
    to:   {{{{connection: cloud, address: /queue/{target}}}}}""")


def facade_consume(url: str, n: int, workdir: Path, accelerated: bool = False,
                   code: Path | None = None) -> tuple[float, float]:
    """n messages waiting in a RabbitMQ queue; the rate is how fast a 0-10 client (a child
    process, window credit 1000, accepting in batches of 100) receives them from the façade."""
    source = unique_queue("bench-facade-in")
    child("fill", url, f"/queue/{source}", n)
    return _through_facade(url, n, workdir, "consume", "bench-in", source, accelerated, code,
                           f"""
  - name: facade-in
    from: {{{{connection: cloud, address: /queue/{source}}}}}
    to:   {{{{listener: facade, queue: bench-in}}}}""")


def _through_facade(url: str, n: int, workdir: Path, mode: str, node: str, queue: str,
                    accelerated: bool, code: Path | None, route: str) -> tuple[float, float]:
    """One façade route (``route``, its ``to``/``from`` lines) and a 0-10 client child that
    publishes to or consumes from ``node`` on the façade; the queue is deleted after. The
    bridge runs from ``code`` (a baseline checkout) if given, compiled if ``accelerated``."""
    port = free_port()
    bridge = Bridge(None, url, route.format() + f"""
    {CE}
    max_in_flight: {{messages: {WINDOW}}}""", workdir, facade_port=port,
                    accelerated=accelerated, code=code)
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


# --- a 0-10 client of the façade (child process) ---------------------------------------------


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
    latencies: list[float] = []
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
                assert ev.message_properties is not None
                sent = (ev.message_properties.application_headers or {})["sent"]
                latencies.append((time.time_ns() - sent) / 1e6)
                client.accept(ev, wait=False)
            proc.join()
        finally:
            bridge.stop()
            rabbitmqctl(url, "delete_queue", source)
    return latencies


# --- main ------------------------------------------------------------------------------------


FACADE_ROWS = ("façade 0-10 -> 1.0", "façade 1.0 -> 0-10")


BROKER_CPU: dict[str, float] = {}
"""RabbitMQ's CPU µs per message in the kept (best) run of each row (nan: not measured)."""


def report_rates(best: dict[str, tuple[float, float]], rows: tuple[str, ...], n: int,
                 rounds: int) -> None:
    """The throughput table: ``rows`` after the proton baselines, each with both ratios."""
    sender, receiver = best["proton sender"][0], best["proton receiver"][0]
    print(f"\n1 KiB messages, CloudEvents binary, window {WINDOW}, {n} messages, "
          f"best of {rounds} rounds")
    print(f"{'':22} {'msg/s':>8} {'CPU µs/msg':>11} {'vs sender':>10} {'vs receiver':>12} "
          f"{'RabbitMQ µs/msg':>16}")
    for name in ("proton sender", "proton receiver", *rows):
        rate, cpu = best[name]
        broker = BROKER_CPU.get(name, float("nan"))
        print(f"{name:22} {rate:8,.0f} {cpu:11,.0f} {rate / sender:9.2f}x {rate / receiver:11.2f}x "
              f"{broker:16,.0f}")
    if "façade 0-10 -> 1.0" in rows:
        print(f"façade: publish vs sender {best['façade 0-10 -> 1.0'][0] / sender:.2f}x, "
              f"consume vs receiver {best['façade 1.0 -> 0-10'][0] / receiver:.2f}x "
              "(CPU: the bridge process's; for the proton rows, the client's)")
    print("(RabbitMQ: the broker node's CPU over the same span; it serves both sides of the "
          "bridge rows, and shares the machine's cores with the bridge)")


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


def report_variants(best: dict[str, tuple[float, float]], rows: tuple[str, ...]) -> None:
    """``rows`` (the 0-10 and façade rows, CloudEvents) with the accelerated build and the
    baseline checkout's bridge, where they ran: rate, bridge + RabbitMQ CPU per message,
    and the bridge's CPU against the baseline's."""
    print("\nthe 0-10 and façade rows: pure, accelerated (--accelerated), baseline (--baseline);"
          " best rounds, CPU µs/msg bridge + RabbitMQ:")
    for row in rows:
        base = best.get(f"{row} @baseline")
        for name in (row, f"{row} @accelerated", f"{row} @baseline"):
            if name not in best:
                continue
            rate, cpu = best[name]
            line = (f"  {name:36} {rate:8,.0f} msg/s   CPU {cpu:5,.0f} + "
                    f"{BROKER_CPU.get(name, float('nan')):5,.0f}")
            if base is not None and name != f"{row} @baseline":
                line += f"   bridge CPU vs baseline {cpu / base[1]:.2f}x"
            print(line)


def report_cpu(best: dict[str, tuple[float, float]], baseline: bool, accelerated: bool) -> bool:
    """The plain rows' CPU per message against the baseline's (``--baseline``) and the
    accelerated build's (``--accelerated``); True if the goal is met by the pure build or
    the accelerated one (or there is no baseline to judge by)."""
    met = report_baseline(best) if baseline else True
    if accelerated:
        fast_met = report_accelerated(best, baseline)
        met = met or (baseline and fast_met)
    if baseline:
        print(f"CPU per message <= {CPU_TARGET}x the baseline's, by either build: "
              f"{'met' if met else 'NOT met'}")
    return met


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
    parser.add_argument("--only-091", action="store_true",
                        help="only the AMQP 0-9-1 rows and their proton and pika baselines")
    parser.add_argument("--only-010", action="store_true",
                        help="only the 0-10 route rows and the façade rows (with their "
                             "--accelerated and --baseline variants), no proton baselines")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="another commit's checkout (git worktree add DIR COMMIT): the "
                             "0-9-1 plain rows, the 0-10 rows and the façade rows also run "
                             "with its bridge, and --check wants half its CPU per message "
                             "(0-9-1 plain rows)")
    parser.add_argument("--accelerated", action="store_true",
                        help="the 0-9-1 plain rows, the 0-10 and the façade rows also run with the "
                             "compiled modules of scripts/accelerate build (refused if "
                             "missing or stale)")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="run the bridges under cProfile, writing DIR/<route>.prof "
                             "(rates then measure the profiler too)")
    args = parser.parse_args()
    if args.accelerated:
        check_accelerated(DEFAULT_ACCELERATED)  # before the first round, not in it
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        Bridge.profile_dir = args.profile.resolve()
    url = ensure_rabbitmq()
    n = args.messages
    best: dict[str, tuple[float, float]] = {}
    BrokerMeter.start(url)

    def keep(name: str, result: tuple[float, float]) -> None:
        print(f"  {name:40} {result[0]:8,.0f} msg/s   CPU {result[1]:5,.0f} µs/msg "
              f"(+ RabbitMQ {BrokerMeter.last:5,.0f})", flush=True)
        if result[0] > best.get(name, (0.0, 0.0))[0]:
            best[name] = result
            BROKER_CPU[name] = BrokerMeter.last

    taps: dict[str, list[TapRun]] = {"bridge 0-10 -> 1.0 + tap": [],
                                     "bridge 1.0 -> 0-10 + tap": []}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        broker = Broker(users={"guest": "guest"})
        server = broker.serve()

        def out(tap: TapRun | None = None, accelerated: bool = False,
                code: Path | None = None) -> tuple[float, float]:
            return legacy_to_amqp10(broker, server, url, n, workdir, tap, accelerated, code)

        def into(tap: TapRun | None = None, accelerated: bool = False,
                 code: Path | None = None) -> tuple[float, float]:
            return amqp10_to_legacy(broker, server, url, n, workdir, tap, accelerated, code)

        only = ("tap" if args.only_tap else "facade" if args.only_facade
                else "091" if args.only_091 else "010" if args.only_010 else None)

        def variants(name: str, run: Any) -> None:
            """Row ``name`` (``run()``), then with the accelerated build and the baseline's
            bridge if asked for (not in the tap comparison)."""
            keep(name, run())
            if args.accelerated:
                keep(f"{name} @accelerated", run(accelerated=True))
            if args.baseline is not None and only != "tap":
                keep(f"{name} @baseline", run(code=args.baseline))

        def publish(**kw: Any) -> tuple[float, float]:
            return facade_publish(url, n, workdir, **kw)

        def consume(**kw: Any) -> tuple[float, float]:
            return facade_consume(url, n, workdir, **kw)

        rows091 = Amqp091Rows(url, n, workdir, args.baseline)
        baseline_rows = BASELINE_ROWS if args.baseline is not None else ()
        accelerated_rows = ACCELERATED_ROWS if args.accelerated else ()
        if only in (None, "091"):
            enable_shovel(url)
        legacy010 = only in (None, "tap", "010")
        facade = only in (None, "facade", "010")
        proton = only not in ("tap", "010")
        try:
            for r in range(args.rounds):
                print(f"round {r + 1}/{args.rounds} ...", flush=True)
                if proton:
                    keep("proton sender", raw_sender(url, n))
                if facade:
                    variants("façade 0-10 -> 1.0", publish)
                if only in (None, "091"):
                    keep("pika consumer", rows091.pika_consumer())
                    keep("proton -> RabbitMQ -> pika", rows091.broker_alone_out())
                    keep("bridge 0-9-1 -> 1.0", rows091.to_amqp10())
                    keep("bridge 0-9-1 -> 1.0 plain", rows091.to_amqp10(cloudevents=False))
                    keep("Shovel 0-9-1 -> 1.0", rows091.shovel_to_amqp10())
                    if baseline_rows:
                        keep(baseline_rows[0], rows091.on_baseline(rows091.to_amqp10, False))
                    if accelerated_rows:
                        keep(accelerated_rows[0],
                             rows091.on_accelerated(rows091.to_amqp10, False))
                if legacy010:
                    variants("bridge 0-10 -> 1.0", out)
                    if only != "010":
                        keep("bridge 0-10 -> 1.0 + tap",
                             tapped(out, n, workdir, taps["bridge 0-10 -> 1.0 + tap"]))
                if proton:
                    keep("proton receiver", raw_receiver(url, n))
                if facade:
                    variants("façade 1.0 -> 0-10", consume)
                if only in (None, "091"):
                    keep("pika publisher", rows091.pika_publisher())
                    keep("pika -> RabbitMQ -> proton", rows091.broker_alone_in())
                    keep("bridge 1.0 -> 0-9-1", rows091.from_amqp10())
                    keep("bridge 1.0 -> 0-9-1 plain", rows091.from_amqp10(cloudevents=False))
                    keep("Shovel 1.0 -> 0-9-1", rows091.shovel_from_amqp10())
                    if baseline_rows:
                        keep(baseline_rows[1], rows091.on_baseline(rows091.from_amqp10, False))
                    if accelerated_rows:
                        keep(accelerated_rows[1],
                             rows091.on_accelerated(rows091.from_amqp10, False))
                if legacy010:
                    variants("bridge 1.0 -> 0-10", into)
                    if only != "010":
                        keep("bridge 1.0 -> 0-10 + tap",
                             tapped(into, n, workdir, taps["bridge 1.0 -> 0-10 + tap"]))
            if only == "facade":
                report_rates(best, FACADE_ROWS, n, args.rounds)
                report_variants(best, FACADE_ROWS)
                return 0
            if only == "010":
                report_variants(best, (*LEGACY_010_ROWS, *FACADE_ROWS))
                return 0
            if only == "091":
                report_rates(best, (*AMQP091_BASELINES, *AMQP091_ROWS, *PLAIN_ROWS,
                                    *SHOVEL_ROWS, *baseline_rows, *accelerated_rows), n,
                             args.rounds)
                report_amqp091(best)
                met = report_target(best, AMQP091_ROWS)
                met = report_shovel(best, BROKER_CPU) and met
                met = report_cpu(best, bool(baseline_rows), bool(accelerated_rows)) and met
                return 1 if args.check and not met else 0
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
                report_variants(best, LEGACY_010_ROWS)
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

    report_rates(best, ("bridge 0-10 -> 1.0", "bridge 1.0 -> 0-10", *FACADE_ROWS,
                        *AMQP091_BASELINES, *AMQP091_ROWS, *PLAIN_ROWS, *SHOVEL_ROWS,
                        *baseline_rows, *accelerated_rows), n, args.rounds)
    report_amqp091(best)
    shovel_met = report_shovel(best, BROKER_CPU)
    shovel_met = report_cpu(best, bool(baseline_rows), bool(accelerated_rows)) and shovel_met
    print(f"\nlatency at {args.latency_rate:.0f} msg/s ({args.latency_messages} messages), ms:")
    for name, values in (("proton -> proton", lat_raw), ("0-10 -> 1.0", lat_out),
                         ("1.0 -> 0-10", lat_in)):
        p50, p99 = percentiles(values)
        print(f"  {name:16}  p50 {p50:6.2f}   p99 {p99:6.2f}   max {max(values):6.2f}")
    report_tap(best, taps, n, args.rounds)
    report_tap_latency(lat_plain, lat_tapped, args)
    report_variants(best, (*LEGACY_010_ROWS, *FACADE_ROWS))
    met = report_target(best, ("bridge 0-10 -> 1.0", "bridge 1.0 -> 0-10", *AMQP091_ROWS))
    return 1 if args.check and not (met and shovel_met) else 0


def report_target(best: dict[str, tuple[float, float]], rows: tuple[str, ...]) -> bool:
    """Print whether each bridge row is at least TARGET_RATIO x its proton baseline (the
    sender for rows into 1.0, the receiver for rows out of it); True if all are."""
    ratios = []
    for row in rows:
        baseline = "proton sender" if row.endswith("-> 1.0") else "proton receiver"
        ratios.append((row, baseline, best[row][0] / best[baseline][0]))
    met = all(ratio >= TARGET_RATIO for _, _, ratio in ratios)
    print(f"\ntarget: bridge >= {TARGET_RATIO}x its proton baseline ("
          + "; ".join(f"{row.removeprefix('bridge ')} vs {baseline.removeprefix('proton ')}: "
                      f"{ratio:.2f}x" for row, baseline, ratio in ratios)
          + f"): {'met' if met else 'NOT met'}")
    return met


if __name__ == "__main__":
    sys.exit(main())
