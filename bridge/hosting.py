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

TLS (``ssl_context``) stays sans-IO too: an :class:`ssl.SSLObject` over a pair of
:class:`ssl.MemoryBIO` sits between the socket and the engine, so the handshake and
every record move with the same non-blocking reads and writes.  What the engine
writes before the handshake is done waits in plaintext; a failed handshake is kept
in :attr:`Amqp010Socket.tls_error` and ends the connection like a transport loss.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import queue
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

from proton.reactor import Container

from .amqp010.connection import Connection, ConnectionConfig, Role
from .amqp010.events import Event
from .amqp010.spec import CloseCode

log = logging.getLogger(__name__)

EventHandler = Callable[["Amqp010Socket", Event], None]
"""Called with each engine event, on the container's thread."""

_RECV_SIZE = 256 * 1024
_WRITE_HIGH_WATER = 4 << 20
"""Unsent octets above which :attr:`Amqp010Socket.backpressured` turns true."""


class _TlsLayer:
    """A TLS session over memory buffers: ciphertext in/out, plaintext to/from the engine."""

    def __init__(self, context: ssl.SSLContext, server_side: bool,
                 server_hostname: str | None) -> None:
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.obj = context.wrap_bio(self.incoming, self.outgoing, server_side=server_side,
                                    server_hostname=None if server_side else server_hostname)
        self.done = False
        self.plain_out = bytearray()


class Amqp010Socket:
    """One AMQP 0-10 connection (engine + non-blocking socket) in a proton Container.

    Call :meth:`flush` after issuing engine commands outside of an event callback
    (inside ``on_event`` the socket flushes by itself afterwards).  With ``tls`` the
    connection starts with a TLS handshake (client or ``server_side``);
    ``on_handshake`` runs once it completed, before the engine sees any byte.
    """

    def __init__(self, container: Container, sock: socket.socket, engine: Connection,
                 on_event: EventHandler, *, connecting: bool = False, peer: str = "",
                 trace: Any = None, tls: ssl.SSLContext | None = None,
                 server_side: bool = False, server_hostname: str | None = None,
                 on_handshake: Callable[[Amqp010Socket], None] | None = None) -> None:
        self.container = container
        self.tls = _TlsLayer(tls, server_side, server_hostname) if tls is not None else None
        self.tls_error: ssl.SSLError | None = None
        """Why the TLS handshake (or a later record) failed, if it did."""
        self.on_handshake = on_handshake
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
        if self.tls is not None:
            plain, eof = self._tls_receive(data)
            if plain:
                self._deliver(plain)
            if eof and not self.engine.closed:
                self._run(self.engine.receive_data, b"")
            elif not plain:
                self._drain_engine()
                self._update()
            return
        self._deliver(data)

    def _deliver(self, data: bytes) -> None:
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
        self._out = bytearray()  # unsent output of a closed connection goes now

    # -- application side ----------------------------------------------------------------

    @property
    def backpressured(self) -> bool:
        """True while more than a few MiB wait to be written: stop producing."""
        return len(self._out) > _WRITE_HIGH_WATER

    def call(self, fn: Callable[[Connection], None]) -> None:
        """Run ``fn(engine)`` outside an event callback (a timer, another thread's answer):
        its events go to ``on_event`` and its output is written."""
        if not self.closed:
            self._run(fn, self.engine)

    def flush(self) -> None:
        """Write what the engine produced and re-arm the selectable."""
        if not self._in_callback:
            self._drain_engine()
            self._update()

    def abort(self, text: str) -> None:
        """Close the connection at once (connection.close with connection-forced, its
        close-ok not awaited, sessions discarded: :meth:`Connection.abort`) and drop the
        transport; ``on_event`` still gets the engine's SessionDetached and ConnectionClosed
        events, so the owner cleans up as usual."""
        if not self.closed:
            self._run(lambda engine: engine.abort(CloseCode.CONNECTION_FORCED, text), self.engine)

    def close_transport(self) -> None:
        """Drop the transport now (after writing what can be written without blocking)."""
        if self.closed:
            return
        self.closed = True
        self._drain_engine()
        if self.tls is not None and self.tls.done and self.tls_error is None:
            with contextlib.suppress(ssl.SSLError):
                self.tls.obj.unwrap()  # close_notify; the peer's answer is not awaited
            self._tls_collect()
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
        engine = self.engine
        if engine.heartbeat:
            # stamp what was received and is about to be sent now, so that the next
            # heartbeat is due one interval after it (not after the previous deadline)
            engine.tick(time.time())
        data = engine.data_to_send()
        if data:
            if self.trace is not None:
                self.trace.sent(data)
            if self.tls is not None:
                self.tls.plain_out += data
            else:
                self._out += data
        if self.tls is not None and not self._connecting:
            self._tls_send()
        if self._out and not self._connecting:
            self._send()

    # -- TLS ---------------------------------------------------------------------------

    def _tls_step(self) -> None:
        """Advance the handshake; raises ssl.SSLError if it failed."""
        tls = self.tls
        assert tls is not None
        if tls.done:
            return
        try:
            tls.obj.do_handshake()
        except ssl.SSLWantReadError:
            return
        tls.done = True
        if self.on_handshake is not None:
            self.on_handshake(self)

    def _tls_receive(self, data: bytes) -> tuple[bytes, bool]:
        """Ciphertext from the socket -> (plaintext for the engine, transport ended)."""
        tls = self.tls
        assert tls is not None
        if data:
            tls.incoming.write(data)
        else:
            tls.incoming.write_eof()
        chunks: list[bytes] = []
        eof = not data
        try:
            self._tls_step()
            while tls.done:
                chunk = tls.obj.read(_RECV_SIZE)
                if not chunk:
                    eof = True
                    break
                chunks.append(chunk)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except ssl.SSLZeroReturnError:
            eof = True  # close_notify
        except ssl.SSLError as exc:
            eof = True
            if self.tls_error is None and not isinstance(exc, ssl.SSLEOFError):
                self.tls_error = exc
                log.info("amqp0-10 %s: TLS failed: %s", self.peer, exc)
        self._tls_collect()
        return b"".join(chunks), eof

    def _tls_send(self) -> None:
        """Start/advance the handshake, encrypt waiting plaintext, queue the records."""
        tls = self.tls
        assert tls is not None
        try:
            self._tls_step()
            if tls.done and tls.plain_out:
                view = memoryview(tls.plain_out)
                sent = 0
                while sent < len(view):
                    sent += tls.obj.write(view[sent:])
                view.release()
                tls.plain_out.clear()
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except ssl.SSLError as exc:
            if self.tls_error is None:
                self.tls_error = exc
            tls.plain_out.clear()
        self._tls_collect()

    def _tls_collect(self) -> None:
        assert self.tls is not None
        records = self.tls.outgoing.read()
        if records:
            self._out += records

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


class LoopCalls:
    """Callables handed in from other threads, run on the container's thread.

    A worker thread calls :meth:`call_soon`; a byte on a socket pair wakes the
    container's ``select``, and the loop runs the callables in the order they came.
    This is how work too slow for the loop (a password hash) reports back to it.
    """

    def __init__(self, container: Container) -> None:
        self.container = container
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._wake, self._waker = socket.socketpair()
        self._wake.setblocking(False)
        self._waker.setblocking(False)
        self.selectable = _selectable(container, self, self._wake)
        self._closed = False

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` on the container's thread (from any thread)."""
        self._calls.put(fn)
        with contextlib.suppress(BlockingIOError, OSError):  # already awake, or closed
            self._waker.send(b"!")

    def close(self) -> None:
        """Stop (on the container's thread); calls still queued are dropped."""
        if not self._closed:
            self._closed = True
            self.selectable.terminate()
            self.selectable.update()

    def on_selectable_init(self, event: Any) -> None:
        self.selectable.reading = True
        self.selectable.update()

    def on_selectable_readable(self, event: Any) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            self._wake.recv(4096)
        while not self._closed:
            try:
                fn = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                fn()
            except Exception as exc:  # one caller's fault: the calls queued after it still run
                from .containment import contain
                contain(self.container, exc, entry="loop_call")

    def on_selectable_final(self, event: Any) -> None:
        self.selectable.release()
        self._wake.close()
        self._waker.close()


def _selectable(container: Container, handler: Any, sock: socket.socket) -> Any:
    """Register ``sock`` with the container's select loop, events going to ``handler``."""
    sel = container.selectable(handler=handler, delegate=sock)
    # proton's global IO handler also sees selectable events and serves those that
    # carry an AMQP 1.0 transport; None tells it this one is ours (as its Acceptor does)
    sel._transport = None  # type: ignore[attr-defined]
    return sel


def connect(container: Container, host: str, port: int, config: ConnectionConfig,
            on_event: EventHandler, *, trace: Any = None, ssl_context: ssl.SSLContext | None = None,
            server_hostname: str | None = None) -> Amqp010Socket:
    """Start a non-blocking client connection to an AMQP 0-10 peer (TLS with
    ``ssl_context``, verifying ``server_hostname`` or ``host``)."""
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
                         peer=f"{host}:{port}", trace=trace, tls=ssl_context,
                         server_hostname=server_hostname or host)


class Amqp010Listener:
    """A listening socket whose accepted connections get a server-role engine
    (behind a TLS handshake with ``ssl_context``)."""

    def __init__(self, container: Container, host: str, port: int,
                 make_config: Callable[[], ConnectionConfig], on_event: EventHandler,
                 on_accept: Callable[[Amqp010Socket], None] | None = None, *,
                 ssl_context: ssl.SSLContext | None = None,
                 on_handshake: Callable[[Amqp010Socket], None] | None = None) -> None:
        self.container = container
        self.ssl_context = ssl_context
        self.on_handshake = on_handshake
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
                                   peer=f"{addr[0]}:{addr[1]}", tls=self.ssl_context,
                                   server_side=True, on_handshake=self.on_handshake)
            if self.on_accept is not None:
                self.on_accept(hosted)

    def on_selectable_final(self, event: Any) -> None:
        self.selectable.release()
        self.sock.close()

    def close(self) -> None:
        """Stop listening."""
        self.selectable.terminate()
        self.selectable.update()
