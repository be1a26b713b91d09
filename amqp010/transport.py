"""Running the sans-IO engine over real sockets: TCP and TLS.

- :class:`SocketTransport` drives one connection (anything with the engine's
  ``receive_data`` / ``data_to_send`` / ``events`` / ``tick`` surface) over a
  connected socket, with optional protocol tracing.
- :class:`BlockingClient` is a small blocking client for tools and tests:
  connect, declare, publish, subscribe with credit, receive, accept, reject,
  release, close.

The bridge's own event loop hosts :class:`~amqp010.connection.Connection`
directly and does not need this module. The threaded test server is
:class:`amqp010.testing.server.EngineServer`.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from .base import Struct
from .connection import Connection, Role
from .events import (
    ConnectionClosed,
    ConnectionOpened,
    ConnectionRedirected,
    Event,
    ExecutionExceptionReceived,
    HeartbeatTimeout,
    MessageReceived,
    ResultReceived,
    SessionDetached,
)
from .flow import UNLIMITED
from .session import Session
from .spec import AcceptMode, CreditUnit, DeliveryProperties, FlowMode, MessageProperties
from .trace import Tracer
from .urls import Address, client_config, parse_url

READ_SIZE = 65536


class Endpoint(Protocol):
    """The sans-IO surface a transport drives (Connection, or a wrapper of one)."""

    def receive_data(self, data: bytes) -> None: ...
    def data_to_send(self) -> bytes: ...
    def tick(self, now: float) -> None: ...

    @property
    def closed(self) -> bool: ...


class ClientError(Exception):
    """The blocking client could not do what was asked (names the reason)."""

    def __init__(self, message: str, event: Event | None = None) -> None:
        super().__init__(message)
        self.event = event


class SocketTransport:
    """Moves bytes between a socket and an :class:`Endpoint`; time from ``clock``."""

    def __init__(self, sock: socket.socket, endpoint: Endpoint, *, tracer: Tracer | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sock = sock
        self.endpoint = endpoint
        self.tracer = tracer
        self.clock = clock
        self.eof = False

    def flush(self) -> None:
        """Write whatever the endpoint has to send."""
        data = self.endpoint.data_to_send()
        if data and not self.eof:
            if self.tracer:
                self.tracer.outgoing(data)
            try:
                self.sock.sendall(data)
            except OSError:
                self._eof()

    def read_once(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` for bytes (and tick); True if any arrived."""
        self.flush()
        if self.eof:
            return False
        pending = isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()
        if not pending:
            sel = selectors.DefaultSelector()
            try:
                sel.register(self.sock, selectors.EVENT_READ)
                ready = sel.select(timeout)
            finally:
                sel.close()
            if not ready:
                self.tick()
                return False
        try:
            data = self.sock.recv(READ_SIZE)
        except (TimeoutError, ssl.SSLWantReadError, BlockingIOError):
            self.tick()
            return False
        except OSError:
            data = b""
        if not data:
            self._eof()
            return False
        if self.tracer:
            self.tracer.incoming(data)
        self.endpoint.receive_data(data)
        self.tick()
        return True

    def receive(self, data: bytes) -> None:
        """Hand bytes read elsewhere (e.g. by a selector loop) to the endpoint."""
        if not data:
            self._eof()
            return
        if self.tracer:
            self.tracer.incoming(data)
        self.endpoint.receive_data(data)

    def tick(self) -> None:
        self.endpoint.tick(self.clock())
        self.flush()

    def _eof(self) -> None:
        if not self.eof:
            self.eof = True
            self.endpoint.receive_data(b"")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.flush()
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.tracer:
            self.tracer.close()


class BlockingClient:
    """A blocking AMQP 0-10 client over one connection and one session.

    Every call waits for the broker (completion, result) up to ``timeout``
    seconds and raises :class:`ClientError` on an execution exception or a
    closed connection.  Received messages wait in a per-destination inbox whose
    size is bounded by the credit the client grants.
    """

    def __init__(self, transport: SocketTransport, conn: Connection, timeout: float) -> None:
        self.transport = transport
        self.conn = conn
        self.timeout = timeout
        self.session: Session | None = None
        self.inbox: dict[str, deque[MessageReceived]] = {}
        self.results: dict[int, Struct | None] = {}
        self.error: Event | None = None
        self.opened: ConnectionOpened | None = None
        self.redirect: ConnectionRedirected | None = None
        self._reconnect_args: tuple[str, ssl.SSLContext | None, bool, int | None, dict[str, Any]] = (
            "", None, False, None, {})

    # --------------------------------------------------------------- setup

    @classmethod
    def connect(cls, url: str = "amqp://guest:guest@127.0.0.1:5672", *,
                ssl_context: ssl.SSLContext | None = None, external: bool = False,
                heartbeat: int | None = None, timeout: float = 10.0,
                trace: str | Path | None = None, session_name: str | None = None,
                session_timeout: int = 0, **config: Any) -> BlockingClient:
        """Open a connection and attach a session (``external``: SASL EXTERNAL
        with the client certificate of ``ssl_context``)."""
        addr = parse_url(url)
        sock = socket.create_connection((addr.host, addr.port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if addr.tls:
            ctx = ssl_context or ssl.create_default_context()
            sock = ctx.wrap_socket(sock, server_hostname=addr.host)
        conn = Connection(Role.CLIENT, client_config(url, external=external, heartbeat=heartbeat,
                                                     **config))
        tracer = Tracer(trace, Role.CLIENT) if trace else None
        client = cls(SocketTransport(sock, conn, tracer=tracer), conn, timeout)
        client._reconnect_args = (url, ssl_context, external, heartbeat, config)
        try:
            client._wait(lambda: client.opened is not None, "connection.open-ok")
            client.attach(session_name, timeout=session_timeout)
        except BaseException:
            client.transport.close()
            raise
        return client

    def reconnect(self, url: str | None = None) -> Session:
        """Open a new connection (after a transport failure) and resume the session
        on it: commands the broker had not completed are replayed, nothing twice."""
        old_url, ssl_context, external, heartbeat, config = self._reconnect_args
        session = self.session
        if session is None or session.state.value != "detached":
            raise ClientError(f"no detached session to resume ({session})")
        addr = parse_url(url or old_url)
        sock = socket.create_connection((addr.host, addr.port), timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if addr.tls:
            sock = (ssl_context or ssl.create_default_context()).wrap_socket(
                sock, server_hostname=addr.host)
        self.transport.close()
        self.conn = Connection(Role.CLIENT, client_config(url or old_url, external=external,
                                                          heartbeat=heartbeat, **config))
        self.transport = SocketTransport(sock, self.conn, tracer=None)
        self.error = None
        self.opened = None
        self._wait(lambda: self.opened is not None, "connection.open-ok")
        self.conn.resume(session)
        self._wait(lambda: session.attached, "session.attached")
        return session

    def attach(self, name: str | None = None, *, timeout: int = 0) -> Session:
        session = self.conn.attach(name, timeout=timeout, auto_complete=True)
        self.session = session
        self._wait(lambda: session.attached, "session.attached")
        return session

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------- pumping

    def _handle(self, ev: Event) -> None:
        if isinstance(ev, MessageReceived):
            self.inbox.setdefault(ev.destination, deque()).append(ev)
        elif isinstance(ev, ResultReceived):
            self.results[ev.command_id] = ev.value
        elif isinstance(ev, ConnectionOpened):
            self.opened = ev
        elif isinstance(ev, ConnectionRedirected):
            self.redirect = ev
            self.error = ev
        elif isinstance(ev, (ExecutionExceptionReceived, ConnectionClosed, HeartbeatTimeout)) or (
                isinstance(ev, SessionDetached) and ev.session is self.session and ev.by_peer):
            # (a heartbeat timeout is ours and comes first: the session detached "by the
            # peer" and the connection closed that follow it are its consequences)
            self.error = self.error or ev

    def _pump(self, timeout: float | None) -> None:
        self.transport.read_once(timeout)
        for ev in self.conn.events():
            self._handle(ev)

    def _wait(self, done: Callable[[], bool], what: str, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            for ev in self.conn.events():
                self._handle(ev)
            if done():
                return
            if self.error is not None:
                raise ClientError(f"waiting for {what}: {self.error}", self.error)
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {what} within {self.timeout}s")
            self._pump(min(left, 0.5))

    def _s(self) -> Session:
        if self.session is None or not self.session.attached:
            raise ClientError("no attached session", self.error)
        return self.session

    def _room(self) -> Session:
        """The session, once its replay buffer has room for one more command: every
        command goes through here (the session refuses one past ``max_outstanding``
        with SessionBusy, so a sync after publishes that filled it would fail)."""
        s = self._s()
        self._wait(lambda: s.can_send, "room in the replay buffer")
        return s

    def wait_completed(self, command_id: int) -> None:
        s = self._s()
        self._wait(lambda: s.is_completed(command_id), f"completion of command {command_id}")

    def _call(self, cid: int) -> None:
        self.wait_completed(cid)

    def _result(self, cid: int) -> Any:
        self._wait(lambda: cid in self.results, f"result of command {cid}")
        return self.results.pop(cid)

    # ------------------------------------------------------------------ API

    def declare_queue(self, queue: str, **fields: Any) -> None:
        self._call(self._room().queue_declare(queue, sync=True, **fields))

    def delete_queue(self, queue: str, **fields: Any) -> None:
        self._call(self._room().queue_delete(queue, sync=True, **fields))

    def purge_queue(self, queue: str) -> None:
        self._call(self._room().queue_purge(queue, sync=True))

    def query_queue(self, queue: str) -> Any:
        """queue.query → QueueQueryResult."""
        return self._result(self._room().queue_query(queue))

    def declare_exchange(self, exchange: str, type: str = "direct", **fields: Any) -> None:
        self._call(self._room().exchange_declare(exchange, type, sync=True, **fields))

    def bind(self, queue: str, exchange: str, binding_key: str = "",
             arguments: dict[str, Any] | None = None) -> None:
        self._call(self._room().exchange_bind(queue, exchange, binding_key,
                                              arguments=arguments, sync=True))

    def unbind(self, queue: str, exchange: str, binding_key: str = "") -> None:
        self._call(self._room().exchange_unbind(queue, exchange, binding_key, sync=True))

    def publish(self, body: bytes, routing_key: str = "", exchange: str = "", *,
                properties: MessageProperties | None = None,
                delivery: DeliveryProperties | None = None, wait: bool = True) -> int:
        """message.transfer; with ``wait`` returns once the broker completed it."""
        dp = delivery or DeliveryProperties()
        if dp.routing_key is None:
            dp.routing_key = routing_key
        header: list[Struct] = [dp] + ([properties] if properties is not None else [])
        cid = self._room().message_transfer(exchange, header, body)
        if wait:
            self.wait_completed(cid)
        else:
            self.transport.flush()
        return cid

    def sync(self) -> None:
        """execution.sync: wait until the broker completed everything sent so far."""
        self._call(self._room().execution_sync())

    def subscribe(self, queue: str, destination: str | None = None, *,
                  messages: int | None = 100, bytes: int | None = None, window: bool = False,
                  accept_mode: int = AcceptMode.EXPLICIT, **fields: Any) -> str:
        """message.subscribe plus flow mode and credit (None = unlimited)."""
        dest = destination or queue
        self._room().message_subscribe(queue, dest, accept_mode=accept_mode, **fields)
        self._room().message_set_flow_mode(dest, FlowMode.WINDOW if window else FlowMode.CREDIT)
        self._room().message_flow(dest, CreditUnit.MESSAGE, messages)
        self._room().message_flow(dest, CreditUnit.BYTE, bytes)
        self.sync()
        return dest

    def flow(self, destination: str, messages: int | None = 0, bytes: int | None = 0) -> None:
        """Add credit (0 adds none; None = unlimited)."""
        if messages != 0:
            self._room().message_flow(destination, CreditUnit.MESSAGE, messages)
        if bytes != 0:
            self._room().message_flow(destination, CreditUnit.BYTE,
                                      UNLIMITED if bytes is None else bytes)
        self.transport.flush()

    def cancel(self, destination: str) -> None:
        self._call(self._room().message_cancel(destination, sync=True))

    def receive(self, destination: str, timeout: float | None = None) -> MessageReceived:
        """The next message for ``destination`` (TimeoutError if none arrives)."""
        box = self.inbox.setdefault(destination, deque())
        self._wait(lambda: bool(box), f"a message for {destination!r}", timeout)
        return box.popleft()

    def pending(self, destination: str) -> int:
        return len(self.inbox.get(destination, ()))

    def idle(self, seconds: float) -> None:
        """Stay connected without sending commands for ``seconds``, answering heartbeats
        (and collecting deliveries); raises if the connection ends meanwhile."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self._pump(min(left, 0.2))
            if self.error is not None:
                raise ClientError(f"while idle: {self.error}", self.error)

    @staticmethod
    def _ids(messages: Iterable[MessageReceived | int]) -> list[int]:
        return [m if isinstance(m, int) else m.command_id for m in messages]

    def accept(self, *messages: MessageReceived | int, wait: bool = True) -> None:
        cid = self._room().message_accept(self._ids(messages), sync=wait)
        if wait:
            self._call(cid)
        else:
            self.transport.flush()

    def reject(self, *messages: MessageReceived | int, code: int = 0, text: str = "") -> None:
        self._call(self._room().message_reject(self._ids(messages), code, text, sync=True))

    def release(self, *messages: MessageReceived | int, set_redelivered: bool = False) -> None:
        self._call(self._room().message_release(self._ids(messages),
                                             set_redelivered=set_redelivered, sync=True))

    def events(self) -> Iterator[Event]:
        """Not used by the blocking API (events are consumed internally)."""
        return iter(())

    def close(self) -> None:
        """Detach, close the connection (negotiated) and the socket."""
        try:
            if self.session is not None and self.session.attached:
                self.session.detach()
                session = self.session
                with contextlib.suppress(ClientError, TimeoutError):
                    self._wait(lambda: not session.attached and session.connection is None,
                               "session.detached", timeout=min(self.timeout, 5))
            if self.conn.is_open:
                self.conn.close()
                self.error = None
                with contextlib.suppress(ClientError, TimeoutError):
                    self._wait(lambda: self.conn.closed, "connection.close-ok",
                               timeout=min(self.timeout, 5))
        finally:
            self.transport.close()


__all__ = ["Address", "BlockingClient", "ClientError", "Endpoint",
           "SocketTransport", "client_config", "parse_url"]
