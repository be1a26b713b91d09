"""The peers of the lifecycle suite: feeders, consumers, and clients that vanish.

Every message is known by its body (``b"<phase>-<n>"``): bodies cross every mapping
unchanged (0-10 body ⇄ 1.0 data section), so arrival and duplicates are counted by
body on whatever side a message ends. Façade clients ask for a short heartbeat and
answer it: the threads here pump their connection all the time (a blocking client
that stops reading for two intervals would be, rightly, dropped by the façade).
"""

from __future__ import annotations

import contextlib
import queue
import socket
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from proton import Message

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from tests.support.bridge import ROOT, collect, legacy_client
from tests.support.rabbitmq import send_messages

HEARTBEAT = 1
"""Seconds: the heartbeat of every 0-10 connection and façade client."""
AMQP10_HEARTBEAT = 2
"""Seconds: the 1.0 connection's heartbeat. Not 1: proton advertises half its idle
timeout, RabbitMQ 3.10 takes the advertised 500 ms as 0 s (no heartbeats at all), and an
idle connection then expires after a second, every second."""

C = TypeVar("C")
"""A client of a :class:`ClientThread`."""
T = TypeVar("T")


def bodies(prefix: str, count: int) -> list[bytes]:
    """``count`` distinct message bodies of one phase."""
    return [f"{prefix}-{i}".encode() for i in range(count)]


def check_arrived(got: Iterable[bytes], sent: Iterable[bytes], max_duplicates: int,
                  what: str) -> int:
    """Every body sent arrived at least once; duplicates (of those) stay within the bound.
    Returns the number of duplicates."""
    sent = set(sent)
    counts = Counter(b for b in got if b in sent)
    missing = sent - set(counts)
    assert not missing, f"{what}: {len(missing)} of {len(sent)} never arrived, " \
                        f"e.g. {sorted(missing)[:5]}"
    duplicates = sum(counts.values()) - len(counts)
    assert duplicates <= max_duplicates, f"{what}: {duplicates} duplicates " \
                                         f"(bound {max_duplicates})"
    return duplicates


def abort(sock: socket.socket) -> None:
    """Close with SO_LINGER 0: the peer gets a TCP reset, not a goodbye."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


# --- the 0-10 side -------------------------------------------------------------------------


def legacy_publish(server: EngineServer, queue: str, items: list[bytes]) -> None:
    """Publish persistent messages (one per body) to ``queue`` and wait for completion."""
    with legacy_client(server) as client:
        client.declare_queue(queue)
        for body in items:
            client.publish(body, routing_key=queue, wait=False,
                           delivery=DeliveryProperties(routing_key=queue, delivery_mode=2),
                           properties=MessageProperties(content_type="text/plain"))
        client.sync()


class Feeder(threading.Thread):
    """A producer thread a phase waits for: ``error`` if it failed; :meth:`finish` waits
    for it and fails naming it (``WHAT``) if it did not end cleanly in time."""

    WHAT, FINISH_TIMEOUT = "the feeder", 60.0

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.error: BaseException | None = None

    def finish(self, timeout: float | None = None) -> None:
        self.join(self.FINISH_TIMEOUT if timeout is None else timeout)
        assert not self.is_alive(), f"{self.WHAT} did not finish"
        assert self.error is None, f"{self.WHAT} failed: {self.error!r}"


class LegacyFeeder(Feeder):
    """Publishes ``items`` to a 0-10 queue evenly over ``seconds``, in a thread."""

    WHAT, FINISH_TIMEOUT = "the 0-10 feeder", 60

    def __init__(self, server: EngineServer, queue: str, items: list[bytes],
                 seconds: float) -> None:
        super().__init__()
        self.server, self.queue, self.items, self.seconds = server, queue, items, seconds

    def run(self) -> None:
        try:
            step = self.seconds / max(1, len(self.items) // 10)
            for i in range(0, len(self.items), 10):
                legacy_publish(self.server, self.queue, self.items[i:i + 10])
                time.sleep(step)
        except BaseException as exc:  # reported by finish()
            self.error = exc



def legacy_drain(server: EngineServer, queue: str, expected: Iterable[bytes], *,
                 timeout: float, linger: float = 1.0) -> list[bytes]:
    """Bodies from a 0-10 queue (accepting each) until every expected one came, plus what
    comes within ``linger`` seconds of quiet after that; gives up after ``timeout``."""
    want = set(expected)
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    with legacy_client(server) as client:
        client.subscribe(queue, messages=None)
        quiet_since: float | None = None
        while True:
            now = time.monotonic()
            if want <= set(got):
                quiet_since = quiet_since or now
                if now - quiet_since >= linger:
                    break
            if now > deadline:
                break
            try:
                message = client.receive(queue, timeout=0.2)
            except TimeoutError:
                continue
            quiet_since = None
            got.append(bytes(message.body))
            client.accept(message, wait=False)
        client.sync()
    return got


# --- the AMQP 1.0 side ---------------------------------------------------------------------


def amqp10_messages(items: list[bytes]) -> list[Message]:
    """Durable 1.0 messages (they survive a broker restart) with these bodies as data."""
    return [Message(body=body, durable=True, inferred=True) for body in items]


def amqp10_send(url: str, address: str, items: list[bytes]) -> None:
    """Send durable messages with these bodies; each must be accepted."""
    outcomes = send_messages(url, address, amqp10_messages(items), timeout=30)
    assert all(o.state == "accepted" for o in outcomes), outcomes


class Amqp10Feeder(Feeder):
    """Sends ``items`` to a 1.0 address in batches of 10 evenly over ``seconds``."""

    WHAT, FINISH_TIMEOUT = "the 1.0 feeder", 60

    def __init__(self, url: str, address: str, items: list[bytes], seconds: float) -> None:
        super().__init__()
        self.url, self.address, self.items, self.seconds = url, address, items, seconds

    def run(self) -> None:
        try:
            step = self.seconds / max(1, len(self.items) // 10)
            for i in range(0, len(self.items), 10):
                amqp10_send(self.url, self.address, self.items[i:i + 10])
                time.sleep(step)
        except BaseException as exc:  # reported by finish()
            self.error = exc



def amqp10_take(url: str, address: str, expected: Iterable[bytes], *, timeout: float,
                linger: float = 1.0) -> list[bytes]:
    """Bodies from a 1.0 address (accepting each) until every expected one came, plus
    duplicates within ``linger`` seconds of quiet."""
    want = set(expected)
    messages = collect(url, address, lambda ms: want <= {bytes(m.body) for m in ms},
                       linger=linger, timeout=timeout)
    return [bytes(m.body) for m in messages]


# --- façade clients ------------------------------------------------------------------------


def facade_client(port: int, *, timeout: float = 30) -> BlockingClient:
    """A 0-10 application connected to the façade, with a short heartbeat."""
    return BlockingClient.connect(f"amqp://127.0.0.1:{port}", heartbeat=HEARTBEAT,
                                  timeout=timeout)


def idle_facade_client(port: int, what: str) -> ClientThread[BlockingClient]:
    """A 0-10 application connected to the façade, answering heartbeats on its own
    thread (use it through :meth:`ClientThread.call`)."""
    return ClientThread(facade_client(port), what, lambda client: client.idle(0.2),
                        lambda client: client.close())


class ClientThread(threading.Thread, Generic[C]):
    """One idle client on a thread of its own: it answers heartbeats (``pump``, again and
    again) whatever the test and the other clients do meanwhile — a slow call of the
    test (``rabbitmqctl`` takes seconds on a loaded machine) or another client's turn
    must not silence it for two intervals, or the façade drops it, rightly. The test uses
    the client only through :meth:`call`, which runs on this thread between two pumps.
    As a context manager it starts the thread, and at the end stops it and ``close``s
    the client."""

    def __init__(self, client: C, what: str, pump: Callable[[C], None],
                 close: Callable[[C], None]) -> None:
        super().__init__(daemon=True, name=what)
        self.client, self.what, self.pump, self.close = client, what, pump, close
        self.error: BaseException | None = None
        """Why pumping failed (the connection ended), if it did."""
        self._calls: queue.SimpleQueue[tuple[Callable[[C], Any], Future[Any]]] = \
            queue.SimpleQueue()
        self._done = threading.Event()

    def __enter__(self) -> ClientThread[C]:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self.join(30)
        self.close(self.client)

    def run(self) -> None:
        while not self._done.is_set() and self.error is None:
            try:
                fn, result = self._calls.get_nowait()
            except queue.Empty:
                try:
                    self.pump(self.client)
                except BaseException as exc:  # reported by call() and check()
                    self.error = exc
                continue
            try:
                result.set_result(fn(self.client))
            except BaseException as exc:
                result.set_exception(exc)
        while not self._calls.empty():  # not run: the client failed
            self._calls.get_nowait()[1].set_exception(self._failed())

    def call(self, fn: Callable[[C], T], timeout: float = 60) -> T:
        """``fn(client)``, run on the client's thread; AssertionError if the client failed."""
        self.check()
        result: Future[T] = Future()
        self._calls.put((fn, result))
        return result.result(timeout)

    def check(self) -> None:
        """AssertionError if the client's connection ended while it answered heartbeats."""
        if self.error is not None:
            raise self._failed() from self.error

    def _failed(self) -> AssertionError:
        return AssertionError(f"{self.what} failed: {self.error!r}")


class Consumer(threading.Thread):
    """A consumer thread the phases wait on: ``bodies`` in arrival order, ``error`` if it
    failed; subclasses consume in :meth:`run` until ``_done`` is set (``WHAT`` names them
    in failures)."""

    WHAT = "the consumer"

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.error: BaseException | None = None
        self.subscribed = threading.Event()
        self._done = threading.Event()

    @property
    def bodies(self) -> list[bytes]:
        raise NotImplementedError

    def wait_for(self, expected: Iterable[bytes], timeout: float, what: str) -> None:
        """Until every expected body came (AssertionError naming what is missing)."""
        want = set(expected)
        deadline = time.monotonic() + timeout
        while not want <= set(self.bodies):
            assert self.error is None, f"{what}: {self.WHAT} failed: {self.error!r}"
            if time.monotonic() > deadline:
                missing = want - set(self.bodies)
                raise AssertionError(f"{what}: {len(missing)} of {len(want)} still missing "
                                     f"after {timeout}s, e.g. {sorted(missing)[:5]}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Disconnect (cleanup after a failure: no checks)."""
        self._done.set()
        self.join(30)

    def finish(self, linger: float = 1.0) -> list[bytes]:
        """Wait ``linger`` seconds more (duplicates), disconnect; the bodies received."""
        time.sleep(linger)
        self._done.set()
        self.join(30)
        assert not self.is_alive(), f"{self.WHAT} did not stop"
        assert self.error is None, f"{self.WHAT} failed: {self.error!r}"
        return list(self.bodies)


class FacadeConsumer(Consumer):
    """A well-behaved subscriber of a façade queue: takes and accepts everything (in
    small batches) until :meth:`finish`; ``bodies`` in arrival order."""

    WHAT = "the façade subscriber"

    def __init__(self, port: int, queue: str) -> None:
        super().__init__()
        self.port, self.queue = port, queue
        self.received: list[bytes] = []

    @property
    def bodies(self) -> list[bytes]:
        return self.received

    def run(self) -> None:
        try:
            with facade_client(self.port, timeout=60) as client:
                client.subscribe(self.queue, messages=None)
                self.subscribed.set()
                batch = []
                while not self._done.is_set():
                    try:
                        message = client.receive(self.queue, timeout=0.2)
                    except TimeoutError:
                        if batch:
                            client.accept(*batch)
                            batch = []
                        continue
                    self.received.append(bytes(message.body))
                    batch.append(message)
                    if len(batch) >= 10:
                        client.accept(*batch)
                        batch = []
                if batch:
                    client.accept(*batch)
        except BaseException as exc:  # reported by finish()
            self.error = exc
            self.subscribed.set()


class FacadePublisher(Feeder):
    """Publishes ``items`` through a façade exchange evenly over ``seconds``, then waits
    until the bridge confirmed every one (execution.sync)."""

    WHAT, FINISH_TIMEOUT = "the façade publisher", 90

    def __init__(self, port: int, exchange: str, items: list[bytes], seconds: float) -> None:
        super().__init__()
        self.port, self.exchange, self.items, self.seconds = port, exchange, items, seconds

    def run(self) -> None:
        try:
            with facade_client(self.port, timeout=90) as client:
                step = self.seconds / max(1, len(self.items) // 10)
                for i, body in enumerate(self.items):
                    client.publish(body, exchange=self.exchange, routing_key="e", wait=False,
                                   delivery=DeliveryProperties(delivery_mode=2))
                    if i % 10 == 9:
                        client.idle(step)  # answers heartbeats meanwhile
                client.sync()
        except BaseException as exc:  # reported by finish()
            self.error = exc



def take_unsettled(client: BlockingClient, queue: str, count: int) -> list[bytes]:
    """Subscribe with credit for ``count`` messages and receive them without accepting."""
    client.subscribe(queue, messages=count)
    return [bytes(client.receive(queue, timeout=20).body) for _ in range(count)]


KILLED_SUBSCRIBER = """
import sys
from amqp010.transport import BlockingClient
url, queue, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = BlockingClient.connect(url, heartbeat=1, timeout=30)
client.subscribe(queue, messages=count)
for _ in range(count):
    client.receive(queue, timeout=30)
print("took", count, flush=True)
client.idle(300)
"""
"""A subscriber process that takes ``count`` messages, says so, and waits to be killed."""


def killed_subscriber(port: int, queue: str, count: int) -> int:
    """Run :data:`KILLED_SUBSCRIBER`, SIGKILL it once it holds its messages; returns its
    exit status (-9)."""
    proc = subprocess.Popen([sys.executable, "-c", KILLED_SUBSCRIBER,
                             f"amqp://127.0.0.1:{port}", queue, str(count)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == f"took {count}".encode(), \
            f"the subscriber process said {line!r}: {proc.stdout.read()!r}"[:3000]
    finally:
        proc.kill()
        proc.wait(10)
    return proc.returncode
