"""In-memory plumbing for engine tests: move bytes between two connections."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from amqp010.connection import Connection, ConnectionConfig, Role
from amqp010.events import Event
from amqp010.sasl import ClientCredentials, SimpleAuthenticator
from amqp010.session import SessionRegistry


class Pair:
    """A client and a server connection joined by an in-memory 'wire'.

    ``pump()`` moves bytes both ways until neither side has anything to send,
    collecting each side's events (``client_events`` / ``server_events``).  An
    optional ``on_server_event`` hook lets a test play the server application.
    """

    def __init__(self, client: Connection | None = None, server: Connection | None = None, *,
                 chunk: int | None = None) -> None:
        self.client = client or Connection(Role.CLIENT, ConnectionConfig(
            credentials=ClientCredentials("guest", "guest")))
        self.server = server or Connection(Role.SERVER, ConnectionConfig(
            authenticator=SimpleAuthenticator({"guest": "guest"})))
        self.client_events: list[Event] = []
        self.server_events: list[Event] = []
        self.on_server_event: Callable[[Event], None] | None = None
        self.on_client_event: Callable[[Event], None] | None = None
        self.chunk = chunk
        self.c2s = bytearray()
        self.s2c = bytearray()

    def _feed(self, conn: Connection, data: bytes) -> None:
        if self.chunk:
            for i in range(0, len(data), self.chunk):
                conn.receive_data(data[i:i + self.chunk])
        else:
            conn.receive_data(data)

    def pump(self, rounds: int = 1000) -> None:
        for _ in range(rounds):
            moved = False
            data = self.client.data_to_send()
            if data:
                moved = True
                self.c2s += data
                self._feed(self.server, data)
            for ev in self.server.events():
                self.server_events.append(ev)
                if self.on_server_event:
                    self.on_server_event(ev)
            data = self.server.data_to_send()
            if data:
                moved = True
                self.s2c += data
                self._feed(self.client, data)
            for ev in self.client.events():
                self.client_events.append(ev)
                if self.on_client_event:
                    self.on_client_event(ev)
            if not moved and not self.client.bytes_to_send and not self.server.bytes_to_send:
                return
        raise AssertionError("pump did not settle")

    def of(self, kind: type, side: str = "client") -> list[Any]:
        evs = self.client_events if side == "client" else self.server_events
        return [e for e in evs if isinstance(e, kind)]


def open_pair(**kw: Any) -> Pair:
    """A pair pumped through the handshake (both sides open)."""
    pair = Pair(**kw)
    pair.pump()
    assert pair.client.is_open and pair.server.is_open, (pair.client.state, pair.server.state)
    return pair


def server_conn(registry: SessionRegistry | None = None, **cfg: Any) -> Connection:
    cfg.setdefault("authenticator", SimpleAuthenticator({"guest": "guest"}))
    return Connection(Role.SERVER, ConnectionConfig(**cfg), registry=registry)


def client_conn(**cfg: Any) -> Connection:
    cfg.setdefault("credentials", ClientCredentials("guest", "guest"))
    return Connection(Role.CLIENT, ConnectionConfig(**cfg))
