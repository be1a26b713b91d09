"""The 0-9-1 peers of the lifecycle suite: pika on RabbitMQ's 0-9-1 side and on the
bridge's 0-9-1 façade, and pika clients that vanish.

pika is the independent 0-9-1 client here (what the applications and the RabbitMQ
estate around a 0-9-1 route run). Every client asks for the suite's short heartbeat
(:data:`~tests.lifecycle.peers.HEARTBEAT`) and answers it: a pika
``BlockingConnection`` sends and checks heartbeats only while it is pumped
(``process_data_events``, or a blocking call such as a confirmed ``basic_publish``),
so the threads here never sleep without pumping.

Messages are known by their bodies, as in :mod:`tests.lifecycle.peers`: bodies cross
the 0-9-1 ⇄ 1.0 mapping unchanged. Publishes are persistent (``delivery_mode`` 2)
and the queues durable, so they outlive a RabbitMQ restart.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import pika
import pika.exceptions
from pamqp import commands as C
from pamqp import frame as pamqp_frame
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

from tests.support.bridge import ROOT

from .peers import HEARTBEAT, ClientThread, Consumer, Feeder

USER, PASSWORD = "app", "s3cret"
"""The login the 0-9-1 façade listener knows."""
PERSISTENT = pika.BasicProperties(delivery_mode=2)
CONNECTION_LOST = (pika.exceptions.AMQPError, OSError)
"""What a pika call raises when its connection or channel went away."""


def facade_parameters(port: int) -> pika.ConnectionParameters:
    """A pika application's parameters for the 0-9-1 façade, with the short heartbeat."""
    return pika.ConnectionParameters("127.0.0.1", port,
                                     credentials=pika.PlainCredentials(USER, PASSWORD),
                                     heartbeat=HEARTBEAT, connection_attempts=1,
                                     blocked_connection_timeout=None)


def facade091(port: int) -> pika.BlockingConnection:
    """A pika application connected to the 0-9-1 façade."""
    return pika.BlockingConnection(facade_parameters(port))


def idle_facade091(port: int, what: str) -> ClientThread[pika.BlockingConnection]:
    """A pika application connected to the 0-9-1 façade, answering heartbeats on its own
    thread (use it through :meth:`~tests.lifecycle.peers.ClientThread.call`)."""
    return ClientThread(facade091(port), what,
                        lambda conn: conn.process_data_events(time_limit=0.1), close_quietly)


def rabbit091(url: str) -> pika.BlockingConnection:
    """A pika client of RabbitMQ's own 0-9-1 side (``url``: the suite's amqp:// URL)."""
    params = pika.URLParameters(url)
    params.heartbeat = HEARTBEAT
    params.connection_attempts = 1
    return pika.BlockingConnection(params)


def pump(*connections: pika.BlockingConnection, seconds: float) -> None:
    """Let ``connections`` answer heartbeats (and nothing else) for ``seconds``."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        for conn in connections:
            conn.process_data_events(time_limit=min(0.1, left))


def pika_socket(conn: pika.BlockingConnection) -> socket.socket:
    """The TCP socket under a pika ``BlockingConnection`` (to cut it like a network)."""
    sock = conn._impl._transport._sock  # pika 1.x: connection → transport → socket
    assert isinstance(sock, socket.socket), sock
    return sock


def close_quietly(conn: pika.BlockingConnection) -> None:
    """Close ``conn`` if pika still has it open (cleanup: a connection whose socket a test
    cut from under pika makes pika fail in many ways)."""
    with contextlib.suppress(*CONNECTION_LOST, ValueError):
        if conn.is_open:
            conn.close()


# --- RabbitMQ's 0-9-1 side ---------------------------------------------------------------


class RabbitFeeder(Feeder):
    """Publishes ``items`` persistently to a RabbitMQ queue (default exchange) with
    publisher confirms, one by one, evenly over ``seconds``.

    At-least-once across a broker restart: when the connection is lost the feeder
    reconnects (for up to ``reconnect_for`` seconds) and publishes again from the first
    message RabbitMQ did not confirm. That one message may then be in the queue twice:
    :attr:`in_doubt` counts them, so that a test can tell the bridge's duplicates from
    the feeder's."""

    WHAT, FINISH_TIMEOUT = "the RabbitMQ 0-9-1 feeder", 120

    def __init__(self, url: str, queue: str, items: list[bytes], seconds: float, *,
                 reconnect_for: float = 90) -> None:
        super().__init__()
        self.url, self.queue, self.items, self.seconds = url, queue, items, seconds
        self.reconnect_for = reconnect_for
        self.confirmed = 0
        self.in_doubt = 0
        self.reconnects = 0

    def run(self) -> None:
        try:
            step = self.seconds / max(1, len(self.items) // 10)
            lost_at: float | None = None
            while self.confirmed < len(self.items):
                try:
                    conn = rabbit091(self.url)
                except CONNECTION_LOST:
                    if lost_at is None or time.monotonic() - lost_at > self.reconnect_for:
                        raise
                    time.sleep(0.5)
                    continue
                publishing = False
                try:
                    ch = conn.channel()
                    ch.confirm_delivery()
                    while self.confirmed < len(self.items):
                        lost_at = None
                        publishing = True
                        ch.basic_publish("", self.queue, self.items[self.confirmed],
                                         PERSISTENT)
                        publishing = False
                        self.confirmed += 1
                        if self.confirmed % 10 == 0:
                            pump(conn, seconds=step)
                except CONNECTION_LOST:
                    lost_at = time.monotonic()
                    self.in_doubt += publishing
                    self.reconnects += 1
                finally:
                    close_quietly(conn)
        except BaseException as exc:  # reported by finish()
            self.error = exc



def rabbit_publish(url: str, queue: str, items: list[bytes]) -> None:
    """Publish ``items`` persistently to ``queue`` through RabbitMQ's 0-9-1 side."""
    feeder = RabbitFeeder(url, queue, items, 0)
    feeder.run()
    assert feeder.error is None and feeder.in_doubt == 0, repr(feeder.error)


def _consume_until(conn: pika.BlockingConnection, queue: str, expected: Iterable[bytes], *,
                   timeout: float, linger: float, prefetch: int = 100
                   ) -> list[tuple[bytes, bool]]:
    """``(body, redelivered)`` from ``queue`` (acking each) until every expected body
    came, plus what comes within ``linger`` seconds of quiet; gives up after
    ``timeout``."""
    want = set(expected)
    got: list[tuple[bytes, bool]] = []
    ch = conn.channel()
    ch.basic_qos(prefetch_count=prefetch)

    def on_message(channel: Any, method: Any, _props: Any, body: bytes) -> None:
        got.append((body, bool(method.redelivered)))
        channel.basic_ack(method.delivery_tag)

    tag = ch.basic_consume(queue, on_message)
    deadline = time.monotonic() + timeout
    quiet_since: float | None = None
    while time.monotonic() < deadline:
        seen = len(got)
        conn.process_data_events(time_limit=0.1)
        if len(got) > seen:
            quiet_since = None
        elif want <= {body for body, _ in got}:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= linger:
                break
    ch.basic_cancel(tag)
    return got


def rabbit_drain(url: str, queue: str, expected: Iterable[bytes], *, timeout: float,
                 linger: float = 1.0) -> list[bytes]:
    """Bodies from a RabbitMQ queue over 0-9-1 (acking each) until every expected one
    came, plus duplicates within ``linger`` seconds of quiet."""
    conn = rabbit091(url)
    try:
        return [body for body, _ in _consume_until(conn, queue, expected, timeout=timeout,
                                                   linger=linger)]
    finally:
        close_quietly(conn)


def rabbit_depth(url: str, queue: str) -> int:
    """Messages ready in ``queue`` (queue.declare passive)."""
    conn = rabbit091(url)
    try:
        return int(conn.channel().queue_declare(queue, passive=True).method.message_count)
    finally:
        close_quietly(conn)


# --- 0-9-1 façade clients ---------------------------------------------------------------------


class FacadeConsumer091(Consumer):
    """A well-behaved pika consumer of a 0-9-1 façade queue: acks everything until
    :meth:`finish`; ``received`` holds ``(body, redelivered)`` in arrival order."""

    WHAT = "the 0-9-1 façade consumer"

    def __init__(self, port: int, queue: str, prefetch: int = 50) -> None:
        super().__init__()
        self.port, self.queue, self.prefetch = port, queue, prefetch
        self.received: list[tuple[bytes, bool]] = []

    @property
    def bodies(self) -> list[bytes]:
        return [body for body, _ in self.received]

    def run(self) -> None:
        try:
            conn = facade091(self.port)
            try:
                ch = conn.channel()
                ch.basic_qos(prefetch_count=self.prefetch)

                def on_message(channel: Any, method: Any, _props: Any, body: bytes) -> None:
                    self.received.append((body, bool(method.redelivered)))
                    channel.basic_ack(method.delivery_tag)

                ch.basic_consume(self.queue, on_message)
                self.subscribed.set()
                while not self._done.is_set():
                    conn.process_data_events(time_limit=0.1)
            finally:
                close_quietly(conn)
        except BaseException as exc:  # reported by finish()
            self.error = exc
            self.subscribed.set()


class FacadePublisher091(Feeder):
    """Publishes ``items`` persistently to a 0-9-1 façade exchange in confirm mode, one by
    one (each ``basic_publish`` returns once the bridge confirmed it, which it does only
    after the 1.0 broker accepted the message), evenly over ``seconds``."""

    WHAT, FINISH_TIMEOUT = "the 0-9-1 façade publisher", 90

    def __init__(self, port: int, exchange: str, items: list[bytes], seconds: float) -> None:
        super().__init__()
        self.port, self.exchange, self.items, self.seconds = port, exchange, items, seconds

    def run(self) -> None:
        try:
            conn = facade091(self.port)
            try:
                ch = conn.channel()
                ch.confirm_delivery()
                step = self.seconds / max(1, len(self.items) // 10)
                for i, body in enumerate(self.items):
                    ch.basic_publish(self.exchange, "e", body, PERSISTENT)
                    if i % 10 == 9:
                        pump(conn, seconds=step)  # answers heartbeats meanwhile
            finally:
                close_quietly(conn)
        except BaseException as exc:  # reported by finish()
            self.error = exc



def take_unacked(conn: pika.BlockingConnection, queue: str, count: int,
                 timeout: float = 20) -> tuple[Any, list[bytes]]:
    """Consume ``queue`` on a new channel with a prefetch of ``count`` and receive that
    many messages without acking them; the channel and the bodies."""
    ch = conn.channel()
    ch.basic_qos(prefetch_count=count)
    got: list[bytes] = []
    ch.basic_consume(queue, lambda _ch, _m, _p, body: got.append(body))
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"took {len(got)} of {count} from {queue}"
        conn.process_data_events(time_limit=0.1)
    return ch, got


def cut_mid_body(conn: pika.BlockingConnection, exchange: str, body_size: int) -> None:
    """Start a ``basic.publish`` of ``body_size`` bytes on a new channel of ``conn`` and
    write only half the body to the wire (what a publisher killed mid-send leaves)."""
    ch = conn.channel()
    number = ch.channel_number
    frame_max = conn._impl.params.frame_max  # the negotiated frame-max
    chunk = frame_max - 8  # a frame's header and end octet
    wire = pamqp_frame.marshal(C.Basic.Publish(exchange=exchange, routing_key="e"), number)
    wire += pamqp_frame.marshal(ContentHeader(0, body_size, C.Basic.Properties(
        delivery_mode=2)), number)
    half = b"H" * (body_size // 2)
    for i in range(0, len(half), chunk):
        wire += pamqp_frame.marshal(ContentBody(half[i:i + chunk]), number)
    pika_socket(conn).sendall(wire)


# --- pika processes that are killed ----------------------------------------------------------

_PARAMETERS = f"""
import sys, pika
params = pika.ConnectionParameters("127.0.0.1", int(sys.argv[1]),
    credentials=pika.PlainCredentials({USER!r}, {PASSWORD!r}), heartbeat={HEARTBEAT},
    connection_attempts=1)
conn = pika.BlockingConnection(params)
ch = conn.channel()
"""

KILLED_CONSUMER = _PARAMETERS + """
queue, count = sys.argv[2], int(sys.argv[3])
ch.basic_qos(prefetch_count=count)
got = []
ch.basic_consume(queue, lambda c, m, p, body: got.append(body))
while len(got) < count:
    conn.process_data_events(time_limit=0.1)
print("took", count, flush=True)
while True:
    conn.process_data_events(time_limit=1)
"""
"""A pika consumer process that takes ``count`` messages unacked, says so, and waits to be
killed (answering heartbeats)."""

KILLED_PUBLISHER = _PARAMETERS + """
exchange, prefix = sys.argv[2], sys.argv[3]
ch.confirm_delivery()
i = 0
while True:
    body = f"{prefix}-{i}".encode()
    ch.basic_publish(exchange, "e", body, pika.BasicProperties(delivery_mode=2))
    print(body.decode(), flush=True)  # confirmed
    i += 1
"""
"""A pika publisher process that publishes ``PREFIX-0``, ``PREFIX-1``, … in confirm mode
without end, printing each body once the bridge confirmed it."""


def _pika_process(script: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", script, *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _read_until(proc: subprocess.Popen[bytes], until: Callable[[bytes], bool]
                ) -> list[bytes]:
    """Read ``proc``'s lines until ``until(line)``; the lines read (SIGKILLs ``proc`` if
    that fails)."""
    lines: list[bytes] = []
    try:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            assert line, f"the pika process ended: {b''.join(lines)!r}"[:3000]
            lines.append(line.strip())
            if until(lines[-1]):
                return lines
    except BaseException:
        kill(proc)
        raise


def kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL ``proc`` and reap it."""
    proc.kill()
    proc.wait(10)
    assert proc.returncode == -9, proc.returncode


def _killed(proc: subprocess.Popen[bytes], until: Callable[[bytes], bool]) -> list[bytes]:
    """Read ``proc``'s lines until ``until(line)``, then SIGKILL it; the lines read."""
    lines = _read_until(proc, until)
    kill(proc)
    return lines


def holding_consumer(port: int, queue: str, count: int) -> subprocess.Popen[bytes]:
    """A pika process that holds ``count`` unacked messages of ``queue`` (answering
    heartbeats until it is stopped or killed)."""
    proc = _pika_process(KILLED_CONSUMER, str(port), queue, str(count))
    lines = _read_until(proc, lambda line: line.startswith(b"took") or b"Error" in line)
    if lines[-1] != f"took {count}".encode():
        kill(proc)
        raise AssertionError(lines)
    return proc


def killed_consumer(port: int, queue: str, count: int) -> None:
    """A pika process that holds ``count`` unacked messages of ``queue``, SIGKILLed."""
    kill(holding_consumer(port, queue, count))


def killed_publisher(port: int, exchange: str, prefix: str, confirmed: int) -> list[bytes]:
    """A pika process publishing ``PREFIX-n`` in confirm mode, SIGKILLed mid-stream once
    ``confirmed`` messages were confirmed; the bodies confirmed before the kill."""
    lines = _killed(_pika_process(KILLED_PUBLISHER, str(port), exchange, prefix),
                    lambda line: (len(line) > 0 and not line.startswith(prefix.encode()))
                    or line == f"{prefix}-{confirmed - 1}".encode())
    assert all(line.startswith(prefix.encode()) for line in lines), lines[-3:]
    return lines


def heartbeats_received(conn: pika.BlockingConnection) -> int:
    """Heartbeat frames ``conn`` received from its peer so far."""
    return int(conn._impl._heartbeat_checker._heartbeat_frames_received)
