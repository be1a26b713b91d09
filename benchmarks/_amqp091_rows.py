"""The AMQP 0-9-1 rows of ``benchmarks/bridge.py``: the bridge between RabbitMQ's 0-9-1 and 1.0.

Both sides are the project's RabbitMQ node (0-9-1 and 1.0 on the same port); messages are
1 KiB with a UUID message-id, content-type, delivery-mode 2 and two headers, CloudEvents
binary mode from a template, ``max_in_flight`` 1000 — as the 0-10 rows.

- *0-9-1 → 1.0*: a backlog of N messages in a classic queue (published with pika); the
  rate is how fast they arrive in a RabbitMQ queue over 1.0 (each 1.0 accept then acked
  at the source), counted by RabbitMQ (the bridge is not asked: reading its metrics
  would cost it CPU).
  Baselines: the proton sender of the round, and a **pika consumer** (prefetch 1000,
  acking each message) draining the same kind of backlog — the 0-9-1 half of the
  bridge's work without the bridge.
- *1.0 → 0-9-1*: a backlog of N messages in a RabbitMQ queue (filled by the proton
  sender with what a 0-9-1 route sends: the routing key as the subject and the
  annotation ``x-exchange``, where the 0-10 rows' messages carry the 0-10 mapping's, which a
  0-9-1 target would have to keep in a header); the rate is how fast they arrive in the queue behind the default exchange the
  route publishes to (RabbitMQ confirms each publish to the bridge). Baselines: the proton receiver of the
  round, and a **pika publisher** in confirm mode (at most 1000 unconfirmed) publishing
  the same messages — again the 0-9-1 half alone.

Both bridge rows make the one RabbitMQ node serve both of their sides, where a proton
baseline has it serve one. So each row also has a baseline with the **same broker work
and no bridge**: ``proton -> RabbitMQ -> pika`` (the proton sender sends into a queue
that a pika consumer drains at the same time: RabbitMQ takes each message over 1.0 and
delivers it over 0-9-1) and ``pika -> RabbitMQ -> proton`` (a pika publisher in confirm
mode into a queue that the proton receiver drains).

The pika clients run in child processes (``SelectConnection``, pika's fastest), measured
from 10 % to 100 % of N like every other row.

**RabbitMQ's Shovel** is what a RabbitMQ user would pick instead of the bridge (issue 23's
anchor): the ``rabbitmq_shovel`` plugin (enabled on the node by ``scripts/rabbitmq
plugins enable``), a dynamic shovel with ``ack-mode: on-confirm`` and prefetch
:data:`WINDOW` doing each row's work — the same backlog of the same messages, moved from
a classic queue over 0-9-1 to a queue over 1.0 (``/amq/queue/``: the Shovel's 1.0 link asks
for a durable terminus, which 3.x's ``/queue/`` refuses for a non-durable queue) and
back. The Shovel runs inside the node, so its CPU is the node's: the table's RabbitMQ
column is the whole cost of a Shovel row, and the bridge's CPU plus RabbitMQ's of a bridge
row. Beside each CloudEvents bridge row is the same route with **plain** messages (no
CloudEvents rendering), which is what the Shovel does.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pika
from _harness import BODY, CE, WINDOW, Bridge, BrokerMeter, child, finish, start_child, timed

from tests.support.rabbitmq import REPO_ROOT, rabbitmqctl, unique_queue

AMQP091_ROWS = ("bridge 0-9-1 -> 1.0", "bridge 1.0 -> 0-9-1")
PLAIN_ROWS = ("bridge 0-9-1 -> 1.0 plain", "bridge 1.0 -> 0-9-1 plain")
SHOVEL_ROWS = ("Shovel 0-9-1 -> 1.0", "Shovel 1.0 -> 0-9-1")
BASELINE_ROWS = tuple(f"{row} @baseline" for row in PLAIN_ROWS)
"""The plain rows with the bridge of ``--baseline DIR`` (another commit's checkout)."""
ACCELERATED_ROWS = tuple(f"{row} @accelerated" for row in PLAIN_ROWS)
"""The plain rows with this checkout's accelerated build (``--accelerated``)."""
CPU_TARGET = 0.5
"""Issue 23's goal: the bridge's CPU per message at most this fraction of the baseline's."""
SHOVEL_TARGET = 0.8
"""Issue 23's goal: the bridge (plain messages) at least this fraction of the Shovel's rate."""
BASELINES = ("pika consumer", "pika publisher", "proton -> RabbitMQ -> pika",
             "pika -> RabbitMQ -> proton")
"""pika alone, and the broker's whole work of each bridge row without the bridge."""


def properties(i: int) -> pika.BasicProperties:
    """The 0-9-1 properties of benchmark message ``i``."""
    return pika.BasicProperties(message_id=str(uuid.uuid4()), delivery_mode=2,
                                content_type="application/octet-stream",
                                headers={"seq": i, "region": "emea"})


def fill(url: str, queue: str, n: int) -> None:
    """Declare ``queue`` and put n benchmark messages in it (publish, then wait until
    RabbitMQ counts them all)."""
    with pika.BlockingConnection(pika.URLParameters(url)) as conn:
        channel = conn.channel()
        channel.queue_declare(queue)
        for i in range(n):
            channel.basic_publish("", queue, BODY, properties(i))
        deadline = time.monotonic() + 120
        while queued(channel, queue) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"RabbitMQ did not count {n} messages in {queue}")
            time.sleep(0.05)


def delete(url: str, queue: str) -> None:
    rabbitmqctl(url, "delete_queue", queue)


class Arrived:
    """A measured route's progress: the messages in its target queue, as RabbitMQ counts
    them (a passive ``queue.declare`` at most every 20 ms) — the bridge itself is not
    asked, so measuring costs it nothing (reading its ``/metrics`` would)."""

    def __init__(self, url: str, queue: str) -> None:
        self.conn = pika.BlockingConnection(pika.URLParameters(url))
        self.channel = self.conn.channel()
        self.queue = queue
        self.value = 0
        self.read_at = 0.0

    def __call__(self) -> int:
        now = time.monotonic()
        if now - self.read_at >= 0.02:
            self.read_at = now
            try:
                self.value = queued(self.channel, self.queue)
            except pika.exceptions.ChannelClosedByBroker:  # 404: not declared yet
                self.channel = self.conn.channel()
        return self.value

    def close(self) -> None:
        self.conn.close()


def queued(channel: Any, queue: str) -> int:
    """Messages ready in ``queue``."""
    return int(channel.queue_declare(queue, passive=True).method.message_count)


# --- pika baselines (child processes) --------------------------------------------------------


class _PikaRun:
    """One pika client on a SelectConnection: consume n messages from ``queue`` (prefetch
    WINDOW, ack each) or publish n to it in confirm mode (at most WINDOW unconfirmed)."""

    def __init__(self, kind: str, url: str, queue: str, n: int) -> None:
        self.kind, self.queue, self.n = kind, queue, n
        self.done = self.sent = 0
        self.unconfirmed: set[int] = set()
        """Publish tags (1, 2, …) not confirmed yet."""
        self.t0 = self.t1 = self.c0 = self.c1 = self.b0 = self.b1 = 0.0
        self.channel: Any = None
        self.conn = pika.SelectConnection(pika.URLParameters(url),
                                          on_open_callback=self._opened)

    def run(self) -> tuple[float, float, float]:
        self.conn.ioloop.start()
        counted = self.n - self.n // 10
        return (counted / (self.t1 - self.t0), (self.c1 - self.c0) / counted * 1e6,
                (self.b1 - self.b0) / counted * 1e6)

    def _opened(self, conn: Any) -> None:
        conn.channel(on_open_callback=self._channel)

    def _channel(self, channel: Any) -> None:
        self.channel = channel
        if self.kind == "consume":
            channel.basic_qos(prefetch_count=WINDOW,
                              callback=lambda _: channel.basic_consume(self.queue, self._message))
        else:
            channel.confirm_delivery(self._confirmed, callback=lambda _: self._publish())

    def _count(self, k: int) -> None:
        before, self.done = self.done, self.done + k
        if before < self.n // 10 <= self.done:
            self.t0, self.c0 = time.perf_counter(), time.process_time()
            self.b0 = BrokerMeter.cpu()
        if self.done >= self.n:
            self.t1, self.c1 = time.perf_counter(), time.process_time()
            self.b1 = BrokerMeter.cpu()
            self.conn.close()
            self.conn.ioloop.call_later(0, self.conn.ioloop.stop)

    def _message(self, channel: Any, deliver: Any, props: Any, body: bytes) -> None:
        channel.basic_ack(deliver.delivery_tag)
        self._count(1)

    def _publish(self) -> None:
        while self.sent < self.n and len(self.unconfirmed) < WINDOW:
            self.channel.basic_publish("", self.queue, BODY, properties(self.sent))
            self.sent += 1
            self.unconfirmed.add(self.sent)

    def _confirmed(self, frame: Any) -> None:
        method = frame.method
        if not isinstance(method, pika.spec.Basic.Ack):
            raise RuntimeError(f"RabbitMQ refused a publish: {method}")
        tag = method.delivery_tag
        confirmed = {t for t in self.unconfirmed if t <= tag} if method.multiple else {tag}
        self.unconfirmed -= confirmed
        self._count(len(confirmed))
        self._publish()


def _pika_child(kind: str, url: str, queue: str, n: int, out: Any) -> None:
    out.send(_PikaRun(kind, url, queue, n).run())


def start_pika_child(kind: str, url: str, queue: str, n: int) -> tuple[Any, Any]:
    """Start a pika consumer or publisher in a fresh process: (process, the end it reports
    ``(msg/s, CPU µs/msg, broker CPU µs/msg)`` to)."""
    ctx = mp.get_context("spawn")
    parent_end, child_end = ctx.Pipe()
    proc = ctx.Process(target=_pika_child, args=(kind, url, queue, n, child_end))
    proc.start()
    child_end.close()
    return proc, parent_end


def pika_result(kind: str, proc: Any, end: Any) -> tuple[float, float, float]:
    """What a pika child measured (RuntimeError if it failed)."""
    try:
        result: tuple[float, float, float] = end.recv()
        return result
    except EOFError:
        raise RuntimeError(f"the pika {kind} failed (see its traceback above)") from None
    finally:
        proc.join()


def pika_child(kind: str, url: str, queue: str, n: int) -> tuple[float, float]:
    """Run a pika consumer or publisher in a fresh process; returns (msg/s, CPU µs/msg)."""
    rate, cpu, BrokerMeter.last = pika_result(kind, *start_pika_child(kind, url, queue, n))
    return rate, cpu


# --- the rows ----------------------------------------------------------------------------------


class Amqp091Rows:
    """The 0-9-1 rows and their pika baselines, against the RabbitMQ at ``url``."""

    def __init__(self, url: str, n: int, workdir: Path, baseline: Path | None = None) -> None:
        self.url, self.n, self.workdir = url, n, workdir
        self.baseline = baseline
        """Another commit's checkout: the ``@baseline`` rows run their bridge from it."""
        self.code: Path | None = None
        self.accelerated = False

    def pika_consumer(self) -> tuple[float, float]:
        queue = unique_queue("bench-pika-in")
        fill(self.url, queue, self.n)
        try:
            return pika_child("consume", self.url, queue, self.n)
        finally:
            delete(self.url, queue)

    def pika_publisher(self) -> tuple[float, float]:
        queue = unique_queue("bench-pika-out")
        with pika.BlockingConnection(pika.URLParameters(self.url)) as conn:
            conn.channel().queue_declare(queue)
        try:
            return pika_child("publish", self.url, queue, self.n)
        finally:
            delete(self.url, queue)

    def broker_alone_out(self) -> tuple[float, float]:
        """The 0-9-1 → 1.0 row's broker work without the bridge: the proton sender sends
        into a queue a pika consumer drains at the same time (RabbitMQ takes each message
        over 1.0 and delivers it over 0-9-1, as for the bridge row in reverse order); the
        sender's rate and CPU."""
        queue = self._declared("bench-alone-out")
        proc, end = start_pika_child("consume", self.url, queue, self.n)
        try:
            rate, cpu, BrokerMeter.last = child("send", self.url, f"/queue/{queue}", self.n)
            pika_result("consumer", proc, end)
            return rate, cpu
        finally:
            delete(self.url, queue)

    def broker_alone_in(self) -> tuple[float, float]:
        """The 1.0 → 0-9-1 row's broker work without the bridge: a pika publisher in
        confirm mode publishes into a queue a proton receiver drains at the same time;
        the receiver's rate and CPU."""
        queue = self._declared("bench-alone-in")
        proc, result = start_child("receive", self.url, f"/queue/{queue}", self.n)
        try:
            pika_result("publisher", *start_pika_child("publish", self.url, queue, self.n))
            rate, cpu, _, BrokerMeter.last = result.recv()
            proc.join()
            return rate, cpu
        finally:
            delete(self.url, queue)

    def _declared(self, prefix: str) -> str:
        """A fresh queue, declared as the 1.0 address ``/queue/NAME`` declares it."""
        queue = unique_queue(prefix)
        with pika.BlockingConnection(pika.URLParameters(self.url)) as conn:
            conn.channel().queue_declare(queue)
        return queue

    def on_baseline(self, row: Any, *args: Any) -> tuple[float, float]:
        """``row(*args)`` with the bridge run from the baseline checkout."""
        self.code = self.baseline
        try:
            result: tuple[float, float] = row(*args)
            return result
        finally:
            self.code = None

    def on_accelerated(self, row: Any, *args: Any) -> tuple[float, float]:
        """``row(*args)`` with the bridge run with the compiled modules (scripts/accelerate)."""
        self.accelerated = True
        try:
            result: tuple[float, float] = row(*args)
            return result
        finally:
            self.accelerated = False

    def to_amqp10(self, cloudevents: bool = True) -> tuple[float, float]:
        """0-9-1 → 1.0: a classic-queue backlog drained into a 1.0 queue."""
        source, target = unique_queue("bench-091-out"), unique_queue("bench-091-out-t")
        fill(self.url, source, self.n)
        return self._through_bridge(f"""
  - name: out091
    from: {{connection: legacy, queue: {source}}}
    to:   {{connection: cloud, address: /queue/{target}}}""", source, target, cloudevents)

    def from_amqp10(self, cloudevents: bool = True) -> tuple[float, float]:
        """1.0 → 0-9-1: a 1.0 backlog published to a classic queue, confirmed."""
        source, target = unique_queue("bench-091-in"), self._declared("bench-091-in-t")
        child("fill-091", self.url, f"/queue/{source}", self.n)
        return self._through_bridge(f"""
  - name: in091
    from: {{connection: cloud, address: /queue/{source}}}
    to:   {{connection: legacy, exchange: "", routing_key: {target}}}""", source, target,
                                    cloudevents)

    def shovel_to_amqp10(self) -> tuple[float, float]:
        """The Shovel doing :meth:`to_amqp10`'s work: (rate, RabbitMQ's CPU µs/msg)."""
        source, target = unique_queue("bench-shovel-out"), self._declared("bench-shovel-out-t")
        fill(self.url, source, self.n)
        return self._through_shovel({
            "src-protocol": "amqp091", "src-queue": source,
            "dest-protocol": "amqp10", "dest-address": f"/amq/queue/{target}"}, source, target)

    def shovel_from_amqp10(self) -> tuple[float, float]:
        """The Shovel doing :meth:`from_amqp10`'s work: (rate, RabbitMQ's CPU µs/msg)."""
        source, target = unique_queue("bench-shovel-in"), self._declared("bench-shovel-in-t")
        child("fill-091", self.url, f"/queue/{source}", self.n)
        return self._through_shovel({
            "src-protocol": "amqp10", "src-address": f"/amq/queue/{source}",
            "dest-protocol": "amqp091", "dest-queue": target}, source, target)

    def _through_shovel(self, ends: dict[str, str], source: str,
                        target: str) -> tuple[float, float]:
        """A dynamic shovel with ``ends``, timed by what arrives in ``target``; removed and
        both queues deleted after."""
        name = f"bench-{uuid.uuid4().hex[:8]}"
        definition = {"src-uri": self.url, "dest-uri": self.url, "ack-mode": "on-confirm",
                      "src-prefetch-count": WINDOW, **ends}
        arrived = Arrived(self.url, target)
        rabbitmqctl(self.url, "set_parameter", "shovel", name, json.dumps(definition))
        try:
            return timed(arrived, self.n, BrokerOnly())
        finally:
            rabbitmqctl(self.url, "clear_parameter", "shovel", name)
            arrived.close()
            delete(self.url, source)
            delete(self.url, target)

    def _through_bridge(self, route: str, source: str, target: str,
                        cloudevents: bool) -> tuple[float, float]:
        """``route`` (its name, from and to lines; CloudEvents binary if ``cloudevents``,
        and the window added) in a bridge, timed by what arrives in ``target``; both queues
        deleted after."""
        rendering = f"\n    {CE}" if cloudevents else ""
        bridge = Bridge(self.url, self.url, f"""{route}{rendering}
    max_in_flight: {{messages: {WINDOW}}}""", self.workdir, legacy_protocol="amqp0-9-1",
                        code=self.code, accelerated=self.accelerated)
        arrived = Arrived(self.url, target)
        try:
            return timed(arrived, self.n, bridge)
        finally:
            arrived.close()
            finish(bridge, None, self.url, source)
            delete(self.url, target)


class BrokerOnly:
    """What :func:`~_harness.timed` measures of a Shovel row: no bridge, so its "bridge
    CPU" is the node's (the Shovel runs inside it)."""

    def cpu(self) -> float:
        return BrokerMeter.cpu()

    def children_cpu(self) -> float:
        return 0.0


def enable_shovel(url: str) -> None:
    """Enable the ``rabbitmq_shovel`` plugin on the node at ``url`` (idempotent; a node
    started from another checkout refuses ``enable`` from this one, so it is asked first)."""
    script = str(REPO_ROOT / "scripts" /
                 ("rabbitmq4" if url.rsplit(":", 1)[-1].startswith("5681") else "rabbitmq"))
    enabled = subprocess.run([script, "plugins", "list", "--enabled", "--minimal",
                              "rabbitmq_shovel"], capture_output=True, text=True, check=False)
    if "rabbitmq_shovel" in enabled.stdout.split():
        return
    proc = subprocess.run([script, "plugins", "enable", "rabbitmq_shovel"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"could not enable rabbitmq_shovel: {proc.stdout}{proc.stderr}")


def report_shovel(best: dict[str, tuple[float, float]], broker_cpu: dict[str, float]) -> bool:
    """The bridge (plain and CloudEvents; and plain with the accelerated build where it
    ran) against the Shovel, with the CPU split; True if in both directions a plain row —
    the pure build's or the accelerated build's, the fastest the bridge can be run —
    reaches :data:`SHOVEL_TARGET` of the Shovel's rate."""
    print("\nagainst RabbitMQ's Shovel (on-confirm, prefetch "
          f"{WINDOW}); CPU µs/msg: bridge + RabbitMQ = total")
    met, by = True, set()
    for shovel, plain, ce, fast in zip(SHOVEL_ROWS, PLAIN_ROWS, AMQP091_ROWS,
                                       ACCELERATED_ROWS, strict=True):
        base = best[shovel][0]
        print(f"  {shovel:38} {base:8,.0f} msg/s   CPU {0:5,.0f} + "
              f"{broker_cpu.get(shovel, float('nan')):5,.0f}")
        for row in (plain, ce, fast):
            if row not in best:
                continue
            rate, cpu = best[row]
            broker = broker_cpu.get(row, float("nan"))
            print(f"  {row:38} {rate:8,.0f} msg/s   CPU {cpu:5,.0f} + {broker:5,.0f} = "
                  f"{cpu + broker:6,.0f}   {rate / base:.2f}x the Shovel")
        reached = [row for row in (plain, fast)
                   if row in best and best[row][0] / base >= SHOVEL_TARGET]
        met = met and bool(reached)
        by.update("accelerated" if row == fast else "pure" for row in reached[-1:])
    builds = f" ({' and '.join(sorted(by))} build)" if met else ""
    print(f"target: bridge (plain) >= {SHOVEL_TARGET}x the Shovel: "
          f"{'met' if met else 'NOT met'}{builds}")
    return met


def report_baseline(best: dict[str, tuple[float, float]]) -> bool:
    """The plain rows against the same rows with the baseline's bridge; True if the CPU
    per message is at most :data:`CPU_TARGET` of the baseline's in both."""
    print("\nagainst the baseline checkout (--baseline), plain messages:")
    met = True
    for row, base in zip(PLAIN_ROWS, BASELINE_ROWS, strict=True):
        (rate, cpu), (base_rate, base_cpu) = best[row], best[base]
        print(f"  {row:26} {rate:8,.0f} msg/s ({rate / base_rate:.2f}x)   CPU µs/msg "
              f"{cpu:5,.0f} vs {base_cpu:5,.0f} ({cpu / base_cpu:.2f}x)")
        met = met and cpu / base_cpu <= CPU_TARGET
    print(f"target: CPU per message <= {CPU_TARGET}x the baseline's: "
          f"{'met' if met else 'NOT met'}")
    return met


def report_accelerated(best: dict[str, tuple[float, float]], baseline: bool) -> bool:
    """The plain rows with the accelerated build against the pure-Python ones (and the
    baseline checkout's if ``baseline``); True if its CPU per message is at most
    :data:`CPU_TARGET` of the baseline's in both (or there is no baseline)."""
    print("\nthe accelerated build (--accelerated), plain messages:")
    met = True
    for row, fast, base in zip(PLAIN_ROWS, ACCELERATED_ROWS, BASELINE_ROWS, strict=True):
        (rate, cpu), (fast_rate, fast_cpu) = best[row], best[fast]
        line = (f"  {row:26} {fast_rate:8,.0f} msg/s ({fast_rate / rate:.2f}x pure)   "
                f"CPU µs/msg {fast_cpu:5,.0f} vs pure {cpu:5,.0f} ({fast_cpu / cpu:.2f}x)")
        if baseline:
            base_cpu = best[base][1]
            line += f" vs baseline {base_cpu:5,.0f} ({fast_cpu / base_cpu:.2f}x)"
            met = met and fast_cpu / base_cpu <= CPU_TARGET
        print(line)
    if baseline:
        print(f"target: accelerated CPU per message <= {CPU_TARGET}x the baseline's: "
              f"{'met' if met else 'NOT met'}")
    return met


def report(best: dict[str, tuple[float, float]]) -> None:
    """The 0-9-1 rows against their baselines."""
    def ratio(row: str, baseline: str) -> str:
        return f"{best[row][0] / best[baseline][0]:.2f}x"

    out, into = AMQP091_ROWS
    print(f"0-9-1 -> 1.0: vs proton sender {ratio(out, 'proton sender')}, vs pika consumer "
          f"{ratio(out, 'pika consumer')}, vs the same broker work without the bridge "
          f"(proton -> RabbitMQ -> pika) {ratio(out, 'proton -> RabbitMQ -> pika')}")
    print(f"1.0 -> 0-9-1: vs proton receiver {ratio(into, 'proton receiver')}, vs pika "
          f"publisher (confirms) {ratio(into, 'pika publisher')}, vs the same broker work "
          f"without the bridge (pika -> RabbitMQ -> proton) "
          f"{ratio(into, 'pika -> RabbitMQ -> proton')}")


__all__ = ["ACCELERATED_ROWS", "AMQP091_ROWS", "BASELINES", "BASELINE_ROWS", "PLAIN_ROWS",
           "SHOVEL_ROWS",
           "Amqp091Rows", "enable_shovel", "report", "report_accelerated", "report_baseline",
           "report_shovel"]
