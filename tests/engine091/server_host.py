"""A test-only host for the AMQP 0-9-1 engine in the server role.

A listening socket on 127.0.0.1, a thread per accepted socket driving one
``Connection(Role.SERVER)`` with select() and a clock, and a toy in-memory
broker (queues, direct bindings, consumers, get) just large enough for the tests
that point pika at it.  It is test scaffolding, not a broker: no persistence,
no exchange types, no flow control.

Test hooks: ``events`` (every engine event, in order, with the connection
number), ``errors`` (exceptions the engine or the host raised — the tests
assert there are none), ``sent_frame_sizes`` (the size of every frame the
engine wrote), ``nack_queues`` (publishes routed there are nacked).
"""

from __future__ import annotations

import itertools
import select
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any

from pamqp import commands as C

from amqp091.connection import Connection
from amqp091.events import (
    ChannelClosed,
    CredentialsReceived,
    DeliveriesSettled,
    Event,
    MessageReceived,
    MethodReceived,
)
from amqp091.methods import ReplyCode, Role
from amqp091.server_handshake import ServerConfig


@dataclass
class Message:
    exchange: str
    routing_key: str
    properties: C.Basic.Properties
    body: bytes
    redelivered: bool = False


@dataclass
class Broker:
    """Queues and direct bindings shared by every connection (under ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    queues: dict[str, deque[Message]] = field(default_factory=dict)
    bindings: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    exchanges: set[str] = field(default_factory=lambda: {""})

    def route(self, exchange: str, routing_key: str) -> list[str]:
        if exchange == "":
            return [routing_key] if routing_key in self.queues else []
        return sorted(self.bindings.get((exchange, routing_key), ()))


class ServerHost:
    """Accepts connections on an ephemeral port; ``stop()`` ends everything."""

    def __init__(self, config: ServerConfig | None = None,
                 users: dict[str, str] | None = None) -> None:
        self.config = config or ServerConfig()
        self.users = users if users is not None else {"guest": "guest"}
        self.broker = Broker()
        self.nack_queues: set[str] = set()
        self.events: list[tuple[int, Event]] = []
        self.errors: list[BaseException] = []
        self.sent_frame_sizes: list[int] = []
        self.connections: list[Connection] = []
        self._ids = itertools.count(1)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept, daemon=True)
        self._acceptor.start()

    def url(self, user: str = "guest", password: str = "guest", vhost: str = "%2F") -> str:
        return f"amqp://{user}:{password}@127.0.0.1:{self.port}/{vhost}"

    def stop(self) -> None:
        self._stop.set()
        self._acceptor.join(5)
        for t in self._threads:
            t.join(5)
        self._listener.close()

    def events_of(self, kind: type) -> list[Any]:
        return [e for _, e in list(self.events) if isinstance(e, kind)]

    def wait_for(self, kind: type, timeout: float = 10.0) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = self.events_of(kind)
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no {kind.__name__} within {timeout}s: {self.events[-5:]}")

    # ---------------------------------------------------------------- threads

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(sock, next(self._ids)), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, sock: socket.socket, number: int) -> None:
        try:
            _Session(self, sock, number).run()
        except BaseException as exc:  # reported to the tests
            self.errors.append(exc)
        finally:
            sock.close()


class _Session:
    """One accepted socket: the engine, its consumers and the toy broker's answers."""

    def __init__(self, host: ServerHost, sock: socket.socket, number: int) -> None:
        self.host = host
        self.sock = sock
        self.number = number
        self.conn = Connection(Role.SERVER, replace(host.config))
        host.connections.append(self.conn)
        self.consumers: dict[tuple[int, str], tuple[str, bool]] = {}
        """(channel, consumer tag) -> (queue, no_ack)."""
        self.unacked: dict[tuple[int, int], tuple[str, Message]] = {}
        self.prefetch: dict[int, int] = {}
        self.tags = itertools.count(1)

    def run(self) -> None:
        conn, sock = self.conn, self.sock
        sock.setblocking(False)
        while not conn.closed and not self.host._stop.is_set():
            conn.tick(time.monotonic())
            self.handle_events()
            self.pump_consumers()
            self.flush()
            deadline = conn.next_deadline()
            wait = 0.05 if deadline is None else max(0.0, min(0.05, deadline - time.monotonic()))
            readable, _, _ = select.select([sock], [], [], wait)
            if readable:
                try:
                    data = sock.recv(1 << 20)
                except (ConnectionError, OSError):
                    data = b""
                conn.receive_data(data)
                self.handle_events()
                self.flush()
        self.flush()
        self.linger()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if not data:
            return
        pos = 0
        while pos + 7 <= len(data) and data[pos:pos + 4] != b"AMQP":
            size = struct.unpack_from(">I", data, pos + 3)[0]
            self.host.sent_frame_sizes.append(size + 8)
            pos += size + 8
        self.sock.setblocking(True)
        try:
            self.sock.sendall(data)
        except OSError:
            pass
        finally:
            self.sock.setblocking(False)

    def linger(self) -> None:
        """Half-close and read what the client still sends for a moment, so that our
        last frames are not lost to a reset (closing with unread input sends RST)."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                readable, _, _ = select.select([self.sock], [], [], 0.05)
                if readable and not self.sock.recv(65536):
                    return
        except OSError:
            return

    # ----------------------------------------------------------------- events

    def handle_events(self) -> None:
        for event in self.conn.events():
            self.host.events.append((self.number, event))
            if isinstance(event, CredentialsReceived):
                ok = self.host.users.get(event.user) == event.password
                self.conn.finish_authentication(event.user if ok else None,
                                                "" if ok else f"bad password for {event.user}")
            elif isinstance(event, MethodReceived):
                self.on_method(event.channel, event.method)
            elif isinstance(event, MessageReceived):
                self.on_publish(event)
            elif isinstance(event, DeliveriesSettled):
                for tag in event.delivery_tags:
                    queue, msg = self.unacked.pop((event.channel, tag))
                    if not event.ack and event.requeue:
                        with self.host.broker.lock:
                            self.host.broker.queues[queue].appendleft(
                                replace(msg, redelivered=True))
            elif isinstance(event, ChannelClosed):
                self.release_channel(event.channel)

    def release_channel(self, channel: int) -> None:
        for consumer in [k for k in self.consumers if k[0] == channel]:
            del self.consumers[consumer]
        for delivery in [k for k in self.unacked if k[0] == channel]:
            queue, msg = self.unacked.pop(delivery)
            with self.host.broker.lock:
                self.host.broker.queues[queue].appendleft(replace(msg, redelivered=True))

    def on_method(self, ch: int, m: Any) -> None:
        conn, broker = self.conn, self.host.broker
        if isinstance(m, C.Exchange.Declare):
            with broker.lock:
                broker.exchanges.add(m.exchange)
            if not m.nowait:
                conn.send_method(ch, C.Exchange.DeclareOk())
        elif isinstance(m, C.Queue.Declare):
            name = m.queue or f"amq.gen-{next(self.tags)}"
            with broker.lock:
                if m.passive and name not in broker.queues:
                    conn.close_channel(ch, ReplyCode.NOT_FOUND, f"no queue '{name}'",
                                       class_id=50, method_id=10)
                    return
                q = broker.queues.setdefault(name, deque())
                count = len(q)
            if not m.nowait:
                conn.send_method(ch, C.Queue.DeclareOk(queue=name, message_count=count,
                                                       consumer_count=0))
        elif isinstance(m, C.Queue.Bind):
            with broker.lock:
                broker.bindings.setdefault((m.exchange, m.routing_key), set()).add(m.queue)
            if not m.nowait:
                conn.send_method(ch, C.Queue.BindOk())
        elif isinstance(m, C.Basic.Qos):
            self.prefetch[ch] = m.prefetch_count or 0
            conn.send_method(ch, C.Basic.QosOk())
        elif isinstance(m, C.Basic.Consume):
            ctag = m.consumer_tag or f"ctag-{next(self.tags)}"
            self.consumers[(ch, ctag)] = (m.queue, bool(m.no_ack))
            if not m.nowait:
                conn.send_method(ch, C.Basic.ConsumeOk(consumer_tag=ctag))
        elif isinstance(m, C.Basic.Cancel):
            self.consumers.pop((ch, m.consumer_tag or ""), None)
            if not m.nowait:
                conn.send_method(ch, C.Basic.CancelOk(consumer_tag=m.consumer_tag))
        elif isinstance(m, C.Basic.Get):
            with broker.lock:
                q = broker.queues.get(m.queue, deque())
                msg = q.popleft() if q else None
                left = len(q)
            if msg is None:
                conn.get_empty(ch)
                return
            tag = conn.get_ok(ch, msg.exchange, msg.routing_key, msg.body, msg.properties,
                              message_count=left, redelivered=msg.redelivered,
                              no_ack=bool(m.no_ack))
            if not m.no_ack:
                self.unacked[(ch, tag)] = (m.queue, msg)
        elif isinstance(m, C.Basic.Recover):
            conn.send_method(ch, C.Basic.RecoverOk())
        else:
            conn.close_channel(ch, ReplyCode.NOT_IMPLEMENTED, f"{m.name} is not in the toy")

    def on_publish(self, event: MessageReceived) -> None:
        m = event.method
        assert isinstance(m, C.Basic.Publish)
        broker, conn = self.host.broker, self.conn
        msg = Message(m.exchange or "", m.routing_key or "", event.properties, event.body)
        with broker.lock:
            queues = broker.route(msg.exchange, msg.routing_key)
            for name in queues:
                broker.queues[name].append(msg)
        if not queues and m.mandatory:
            conn.return_message(event.channel, ReplyCode.NO_ROUTE, "NO_ROUTE", msg.exchange,
                                msg.routing_key, msg.body, msg.properties)
        if event.publish_tag is not None:
            nack = any(q in self.host.nack_queues for q in queues)
            conn.confirm_publish(event.channel, event.publish_tag, ack=not nack)

    def pump_consumers(self) -> None:
        if not self.conn.is_open:
            return
        broker = self.host.broker
        for (ch, ctag), (queue, no_ack) in list(self.consumers.items()):
            while True:
                limit = self.prefetch.get(ch, 0)
                if not no_ack and limit and len(self.conn.unacked(ch)) >= limit:
                    break
                with broker.lock:
                    q = broker.queues.get(queue)
                    msg = q.popleft() if q else None
                if msg is None:
                    break
                tag = self.conn.deliver(ch, ctag, msg.exchange, msg.routing_key, msg.body,
                                        msg.properties, redelivered=msg.redelivered,
                                        no_ack=no_ack)
                if not no_ack:
                    self.unacked[(ch, tag)] = (queue, msg)
