"""A test-only host for the AMQP 0-9-1 engine: one blocking socket, select() and a clock.

The bridge's runtime hosts the engine in its own loop; this is the smallest host
that lets the tests drive the engine against a real RabbitMQ.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable
from urllib.parse import unquote, urlsplit

from amqp091.connection import Connection, ConnectionConfig
from amqp091.events import ConnectionClosed, ConnectionOpened, Event
from amqp091.methods import Role
from amqp091.sasl import ClientCredentials


class EngineClient:
    """The engine in the client role on a TCP socket to ``url``."""

    def __init__(self, url: str, **config: object) -> None:
        parts = urlsplit(url)
        creds = ClientCredentials(unquote(parts.username or "guest"),
                                  unquote(parts.password or "guest"))
        self.conn = Connection(Role.CLIENT, ConnectionConfig(credentials=creds, **config))  # type: ignore[arg-type]
        self.sock = socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 5672),
                                             timeout=10)
        self.sock.setblocking(False)
        self.backlog: list[Event] = []
        self.opened = self.wait_for(lambda e: isinstance(e, ConnectionOpened))

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.setblocking(True)
            self.sock.sendall(data)
            self.sock.setblocking(False)

    def pump(self, seconds: float) -> None:
        """Exchange bytes and tick the clock for ``seconds`` (events go to the backlog)."""
        end = time.monotonic() + seconds
        while True:
            now = time.monotonic()
            self.conn.tick(now)
            self.flush()
            self.backlog.extend(self.conn.events())
            if now >= end or self.conn.closed:
                return
            deadline = self.conn.next_deadline()
            wait = min(end, deadline if deadline is not None else end) - now
            readable, _, _ = select.select([self.sock], [], [], max(wait, 0))
            if readable:
                try:
                    data = self.sock.recv(1 << 20)
                except ConnectionError:
                    data = b""
                self.conn.receive_data(data)
                self.flush()
                self.backlog.extend(self.conn.events())

    def wait_for(self, match: Callable[[Event], bool], timeout: float = 15.0) -> Event:
        """The first event (backlog included) that ``match``es; the ones before it stay
        in the backlog. Fails on timeout or when the connection closes first."""
        end = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.backlog):
                if match(event):
                    del self.backlog[i]
                    return event
            closed = [e for e in self.backlog if isinstance(e, ConnectionClosed)]
            assert not closed, f"connection closed: {closed[0]}"
            left = end - time.monotonic()
            assert left > 0, f"no matching event within {timeout}s; backlog {self.backlog[-5:]}"
            self.pump(min(left, 0.05))

    def take(self, kind: type[Event]) -> list[Event]:
        """Remove and return the backlog's events of type ``kind``."""
        out = [e for e in self.backlog if isinstance(e, kind)]
        self.backlog = [e for e in self.backlog if not isinstance(e, kind)]
        return out

    def close(self) -> None:
        if not self.conn.closed:
            self.conn.close()
            self.wait_for(lambda e: isinstance(e, ConnectionClosed))
        self.sock.close()
