"""AMQP 0-10 engine throughput: client→server message transfers per second.

Run: ``.venv/bin/python benchmarks/engine.py [--messages N] [--window W]``.

Each transfer carries delivery- and message-properties and a 1 KiB body with
accept-mode explicit.  The server application completes every transfer and
accepts it explicitly (one message.accept per batch of received transfers,
like a consumer acknowledging), the client counts a message done when the
server's session.completed covers it.  At most ``window`` transfers are
outstanding.  Three set-ups:

- *memory*: client and server engines in one thread, bytes handed over directly;
- *tcp*: the same over loopback TCP (server engine in a background thread of
  :class:`~amqp010.transport.EngineServer`, client on the main thread);
- *broker round trip (memory)*: publish to the test broker's queue, consume it
  through a credit-mode subscription and accept each message explicitly.
"""

from __future__ import annotations

import argparse
import socket
import time

import _timing  # noqa: F401  (first: the project root ahead of this folder)

from amqp010.connection import Connection, ConnectionConfig, Role
from amqp010.events import (
    CommandsCompleted,
    MessageReceived,
    SessionAttached,
)
from amqp010.sasl import ClientCredentials
from amqp010.session import Session
from amqp010.spec import (
    AcceptMode,
    DeliveryProperties,
    FlowMode,
    MessageProperties,
)
from amqp010.testing.server import EngineServer
from amqp010.transport import SocketTransport

BODY = bytes(range(256)) * 4
HEADER = (DeliveryProperties(routing_key="bench", priority=4, delivery_mode=2),
          MessageProperties(content_type="application/octet-stream",
                            application_headers={"n": 1, "src": "bench"}))


class Sink:
    """Server side: completes each transfer and accepts them explicitly in batches."""

    def __init__(self) -> None:
        self.conn = Connection(Role.SERVER)
        self.received = 0
        self._pending: dict[Session, list[int]] = {}

    def receive_data(self, data: bytes) -> None:
        self.conn.receive_data(data)
        for ev in self.conn.events():
            if isinstance(ev, MessageReceived):
                ev.session.complete(ev.command_id)
                self._pending.setdefault(ev.session, []).append(ev.command_id)
                self.received += 1

    def data_to_send(self) -> bytes:
        for session, ids in self._pending.items():
            if ids and session.attached:
                session.message_accept(ids)
        self._pending.clear()
        return self.conn.data_to_send()

    def tick(self, now: float) -> None:
        self.conn.tick(now)

    @property
    def closed(self) -> bool:
        return self.conn.closed


def client() -> Connection:
    return Connection(Role.CLIENT, ConnectionConfig(credentials=ClientCredentials("guest", "g")))


def run_memory(n: int, window: int) -> float:
    c, sink = client(), Sink()

    def pump() -> None:
        while True:
            data = c.data_to_send()
            if data:
                sink.receive_data(data)
            back = sink.data_to_send()
            if back:
                c.receive_data(back)
            if not data and not back:
                return

    pump()
    s = c.attach("bench", auto_complete=True)
    pump()
    list(c.events())
    done = sent = 0
    start = time.perf_counter()
    while done < n:
        while sent < n and sent - done < window:
            s.message_transfer("amq.direct", HEADER, BODY, accept_mode=AcceptMode.EXPLICIT)
            sent += 1
        pump()
        for ev in c.events():
            if isinstance(ev, CommandsCompleted):
                done += len(ev.commands)
    elapsed = time.perf_counter() - start
    assert sink.received == n
    return n / elapsed


def run_tcp(n: int, window: int) -> float:
    with EngineServer(lambda sock: Sink(), tick_interval=0.2) as srv:
        sock = socket.create_connection(srv.address)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c = client()
        t = SocketTransport(sock, c)
        while not c.is_open:
            t.read_once(1.0)
        s = c.attach("bench", auto_complete=True)
        while not any(isinstance(e, SessionAttached) for e in c.events()):
            t.read_once(1.0)
        done = sent = 0
        start = time.perf_counter()
        while done < n:
            while sent < n and sent - done < window:
                s.message_transfer("amq.direct", HEADER, BODY, accept_mode=AcceptMode.EXPLICIT)
                sent += 1
            t.read_once(1.0)
            for ev in c.events():
                if isinstance(ev, CommandsCompleted):
                    done += len(ev.commands)
        elapsed = time.perf_counter() - start
        t.close()
    return n / elapsed


def run_broker_roundtrip(n: int, window: int) -> float:
    from amqp010.testing.broker import Broker

    broker = Broker(users={"guest": "g"})
    server = broker.connection()
    c = client()

    def pump() -> None:
        while True:
            data = c.data_to_send()
            if data:
                server.receive_data(data)
            back = server.data_to_send()
            if back:
                c.receive_data(back)
            if not data and not back:
                return

    pump()
    s = c.attach("bench", auto_complete=True)
    pump()
    s.queue_declare("bench")
    s.message_subscribe("bench", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", window, None)
    pump()
    list(c.events())
    got = sent = 0
    start = time.perf_counter()
    while got < n:
        while sent < n and sent - got < window:
            s.message_transfer("", HEADER, BODY)
            sent += 1
        pump()
        ids = [ev.command_id for ev in c.events() if isinstance(ev, MessageReceived)]
        if ids:
            got += len(ids)
            s.message_accept(ids)
            s.grant("sub", len(ids), 0)
    elapsed = time.perf_counter() - start
    return n / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--window", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rows = [("memory", run_memory), ("tcp", run_tcp),
            ("broker round trip (memory)", run_broker_roundtrip)]
    print(f"{args.messages} transfers of 1 KiB, window {args.window}, best of {args.repeats}")
    for name, fn in rows:
        best = max(fn(args.messages, args.window) for _ in range(args.repeats))
        print(f"  {name:28} {best:10,.0f} msg/s")


if __name__ == "__main__":
    main()
