"""A façade client that sends its SASL PLAIN credentials and then waits for the answer
or goes away without it, from a chosen loopback address (the login tests and the login
flood benchmark)."""

from __future__ import annotations

import time

from amqp010.connection import Connection, ConnectionState, Role
from amqp010.events import ConnectionClosed, ConnectionOpened
from amqp010.transport import SocketTransport, client_config

from .hostile import connect_from


class RawLogin:
    """A 0-10 client from a chosen loopback address that sends its PLAIN credentials and
    then either waits for the answer or goes away without it."""

    def __init__(self, source: str, port: int, user: str) -> None:
        sock = connect_from(source, port, timeout=30)
        self.conn = Connection(Role.CLIENT, client_config(f"amqp://{user}:guess@127.0.0.1"))
        self.transport = SocketTransport(sock, self.conn)
        deadline = time.monotonic() + 30
        while self.conn.state in (ConnectionState.AWAIT_HEADER, ConnectionState.AWAIT_START):
            assert time.monotonic() < deadline, "no connection.start"
            self.transport.read_once(0.5)
        self.transport.flush()  # start-ok with the credentials

    def answer(self) -> ConnectionClosed | ConnectionOpened:
        """Wait for the bridge's answer to the login."""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for ev in self.conn.events():
                if isinstance(ev, ConnectionClosed | ConnectionOpened):
                    return ev
            self.transport.read_once(0.5)
        raise AssertionError("no answer to the login")

    def close(self) -> None:
        self.transport.sock.close()
