"""Hosting sans-IO AMQP 0-10 connections inside python-qpid-proton's event loop.

The bridge runs one thread: proton's :class:`~proton.reactor.Container` owns the
AMQP 1.0 connections, and every AMQP 0-10 socket is registered with the same
container as a *selectable* (the mechanism proton uses for its own acceptors).
The container's ``select`` loop then tells us when a 0-10 socket is readable,
writable or its deadline (heartbeat) expired, and we drive the engine:

    readable  -> sock.recv -> engine.receive_data -> events -> application
    writable  -> engine.data_to_send -> sock.send (partial sends kept)
    deadline  -> engine.tick(now) -> heartbeats / dead-peer detection

No threads, no locks: the engine, the proton links and the route logic are all
touched from the container's thread only.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

from proton.reactor import Container

from .amqp010.connection import Connection, ConnectionConfig, Role
from .amqp010.events import Event

log = logging.getLogger(__name__)

EventHandler = Callable[["Amqp010Socket", Event], None]
"""Called with each engine event, on the container's thread."""

_RECV_SIZE = 256 * 1024
_WRITE_HIGH_WATER = 4 << 20
"""Unsent octets above which :attr:`Amqp010Socket.backpressured` turns true."""


class Amqp010Socket:
    """One AMQP 0-10 connection (engine + non-blocking socket) in a proton Container.

    Call :meth:`flush` after issuing engine commands outside of an event callback
    (inside ``on_event`` the socket flushes by itself afterwards).
    """

    def __init__(self, container: Container, sock: socket.socket, engine: Connection,
                 on_event: EventHandler, *, connecting: bool = False, peer: str = "",
                 trace: Any = None) -> None:
        self.container = container
        self.sock = sock
        self.engine = engine
        self.on_event = on_event
        self.peer = peer
        self.trace = trace
        self.closed = False
        self.error = ""
        """The socket error that ended the connection, if one did (owners log it)."""
        self._connecting = connecting
        self._out = bytearray()
        self._in_callback = False
        sock.setblocking(False)
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.selectable = _selectable(container, self, sock)

    # -- proton selectable handler -----------------------------------------------------

    def on_selectable_init(self, event: Any) -> None:
        self._update()

    def on_selectable_readable(self, event: Any) -> None:
        try:
            data = self.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            log.debug("amqp0-10 %s: receive failed: %s", self.peer, exc)
            self.error = f"receive failed: {exc}"
            data = b""
        if self.trace is not None and data:
            self.trace.received(data)
        self._run(self.engine.receive_data, data)

    def on_selectable_writable(self, event: Any) -> None:
        if self._connecting:
            err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self.error = f"connect failed: {errno.errorcode.get(err, err)}"
                log.debug("amqp0-10 %s: %s", self.peer, self.error)
                self._run(self.engine.receive_data, b"")
                return
            self._connecting = False
        self._drain_engine()  # sends too
        self._update()

    def on_selectable_expired(self, event: Any) -> None:
        self._run(self.engine.tick, time.time())

    def on_selectable_final(self, event: Any) -> None:
        self.selectable.release()
        with contextlib.suppress(OSError):
            self.sock.close()

    # -- application side ----------------------------------------------------------------

    @property
    def backpressured(self) -> bool:
        """True while more than a few MiB wait to be written: stop producing."""
        return len(self._out) > _WRITE_HIGH_WATER

    def flush(self) -> None:
        """Write what the engine produced and re-arm the selectable."""
        if not self._in_callback:
            self._drain_engine()
            self._update()

    def close_transport(self) -> None:
        """Drop the transport now (after writing what can be written without blocking)."""
        if self.closed:
            return
        self.closed = True
        self._drain_engine()
        self._send()
        self.selectable.terminate()
        self.selectable.update()

    # -- internals -----------------------------------------------------------------------

    def _run(self, fn: Callable[..., None], arg: Any) -> None:
        self._in_callback = True
        try:
            fn(arg)
            for ev in self.engine.events():
                self.on_event(self, ev)
        finally:
            self._in_callback = False
        self._drain_engine()
        if self.engine.closed:
            self.close_transport()
        else:
            self._update()

    def _drain_engine(self) -> None:
        data = self.engine.data_to_send()
        if data:
            if self.trace is not None:
                self.trace.sent(data)
            self._out += data
        if self._out and not self._connecting:
            self._send()

    def _send(self) -> None:
        while self._out:
            try:
                n = self.sock.send(self._out)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.debug("amqp0-10 %s: send failed: %s", self.peer, exc)
                self.error = f"send failed: {exc}"
                self._out.clear()
                if not self.closed:
                    self._run(self.engine.receive_data, b"")
                return
            del self._out[:n]

    def _update(self) -> None:
        if self.closed:
            return
        sel = self.selectable
        sel.reading = not self._connecting
        sel.writing = self._connecting or bool(self._out)
        deadline = self.engine.next_deadline()
        sel.deadline = deadline if deadline is not None else 0
        sel.update()


def _selectable(container: Container, handler: Any, sock: socket.socket) -> Any:
    """Register ``sock`` with the container's select loop, events going to ``handler``."""
    sel = container.selectable(handler=handler, delegate=sock)
    # proton's global IO handler also sees selectable events and serves those that
    # carry an AMQP 1.0 transport; None tells it this one is ours (as its Acceptor does)
    sel._transport = None  # type: ignore[attr-defined]
    return sel


def connect(container: Container, host: str, port: int, config: ConnectionConfig,
            on_event: EventHandler, *, trace: Any = None) -> Amqp010Socket:
    """Start a non-blocking client connection to an AMQP 0-10 peer."""
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(info[0], socket.SOCK_STREAM)
    sock.setblocking(False)
    err = sock.connect_ex(info[4])
    if err not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
        sock.close()
        raise OSError(err, f"connect to {host}:{port}: {errno.errorcode.get(err, err)}")
    engine = Connection(Role.CLIENT, config)
    engine.tick(time.time())
    return Amqp010Socket(container, sock, engine, on_event, connecting=True,
                         peer=f"{host}:{port}", trace=trace)


class Amqp010Listener:
    """A listening socket whose accepted connections get a server-role engine."""

    def __init__(self, container: Container, host: str, port: int,
                 make_config: Callable[[], ConnectionConfig], on_event: EventHandler,
                 on_accept: Callable[[Amqp010Socket], None] | None = None) -> None:
        self.container = container
        self.make_config = make_config
        self.on_event = on_event
        self.on_accept = on_accept
        self.sock = socket.create_server((host, port), reuse_port=False)
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()[:2]
        self.selectable = _selectable(container, self, self.sock)

    def on_selectable_init(self, event: Any) -> None:
        self.selectable.reading = True
        self.selectable.update()

    def on_selectable_readable(self, event: Any) -> None:
        while True:
            try:
                sock, addr = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            engine = Connection(Role.SERVER, self.make_config())
            engine.tick(time.time())
            hosted = Amqp010Socket(self.container, sock, engine, self.on_event,
                                   peer=f"{addr[0]}:{addr[1]}")
            if self.on_accept is not None:
                self.on_accept(hosted)

    def on_selectable_final(self, event: Any) -> None:
        self.selectable.release()
        self.sock.close()

    def close(self) -> None:
        """Stop listening."""
        self.selectable.terminate()
        self.selectable.update()
