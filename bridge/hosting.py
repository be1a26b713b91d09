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

A listener faces whoever can reach its port, so :class:`Amqp010Listener` bounds what
clients can take (:class:`AcceptLimits`, ``docs/operations.md#limits``):

- *handshake timeout*: each accepted socket carries a deadline (folded into its
  selectable's deadline with the engine's heartbeat one, so the loop's ``select``
  serves every connection's timer at no extra cost); a connection not open (login
  done) by then is closed;
- *connections in all and per peer address*: over either bound a new connection is
  refused — it gets the protocol header, connection.start and at once a
  connection.close (connection-forced, saying which limit) when its header arrives,
  or is just closed if it sends nothing within a second (a few dozen such refusals
  are kept at a time; past that, refused sockets are closed at once);
- *octets buffered*: every connection's engine bounds its own unfinished input, and
  the listener keeps the sum (updated after each read, from
  :attr:`Connection.buffered <amqp010.connection.Connection.buffered>`); past
  ``max_buffered`` the connection holding the most is closed.  Pausing it instead
  would never bring the sum down: unfinished messages only finish by reading more;
- *accept() failing* for lack of descriptors or memory: the listener stops asking
  (its selectable not readable) and retries on its deadline, 0.1 s doubling to 2 s,
  instead of spinning on a socket that stays readable.

Descriptors from 1024 on cannot be served at all (proton's loop uses ``select``), so
an accepted socket past that is closed at once.  Every event is counted in
:class:`ListenerStats` (read by the metrics thread) and logged through
:class:`~bridge.logs.RateLimited`.
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
from dataclasses import dataclass, field
from typing import Any

from proton import Handler
from proton.reactor import Container

from amqp010.connection import Connection, ConnectionConfig, ConnectionState, Role
from amqp010.events import Event
from amqp010.spec import CloseCode

from .logs import RateLimited

log = logging.getLogger(__name__)

EventHandler = Callable[["Amqp010Socket", Event], None]
"""Called with each engine event, on the container's thread."""

_RECV_SIZE = 256 * 1024
_WRITE_HIGH_WATER = 4 << 20
"""Unsent octets above which :attr:`Amqp010Socket.backpressured` turns true."""


FD_SETSIZE = 1024
"""Descriptors from this number on cannot be watched: proton's loop uses ``select``."""
ACCEPT_BACKOFF = (0.1, 2.0)
"""First and longest pause (seconds) of a listener whose ``accept()`` fails (EMFILE …)."""
REFUSAL_GRACE = 1.0
"""Seconds a refused connection has to send its protocol header (to be told why)."""
MAX_REFUSING = 32
"""Refused connections waiting for their header at once; past it, closed at once."""
REFUSED_REASONS = ("max_connections", "max_connections_per_peer", "descriptors",
                   "max_buffered")
"""``ListenerStats.refused`` keys: connections refused (or, for max_buffered, closed)."""


@dataclass(frozen=True, slots=True)
class AcceptLimits:
    """What a listener's clients may take (None: unbounded)."""

    handshake_timeout: float | None = None
    """Seconds from accept to connection.open-ok."""
    max_connections: int | None = None
    max_connections_per_peer: int | None = None
    """Connections from one IP address."""
    max_buffered: int | None = None
    """Octets of unfinished input over all connections (each engine bounds its own)."""


@dataclass(slots=True)
class ListenerStats:
    """A listener's counters (written on the loop's thread, read by the metrics thread)."""

    refused: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REFUSED_REASONS, 0))
    """Connections refused (or closed for max_buffered) by reason: fixed keys."""
    handshake_timeouts: int = 0
    accept_failures: int = 0


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

    handshake_deadline = 0.0
    """When (``time.time()``) the connection must be open (0: no deadline)."""
    listener: Amqp010Listener | None = None
    """The listener that accepted it (counts its buffered input and its end)."""
    counted = 0
    """Its engine's buffered octets as its listener last counted them."""

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
        now = time.time()
        if (self.handshake_deadline and now >= self.handshake_deadline
                and self.listener is not None and not self.closed):
            self.handshake_deadline = 0.0
            self.listener.handshake_expired(self)
            return
        self._run(self.engine.tick, now)

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
        if self.listener is not None:
            self.listener.released(self)

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
        if self.listener is not None:
            self.listener.count_buffered(self)
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
        if self.handshake_deadline:
            if self.engine.is_open:
                self.handshake_deadline = 0.0
            elif deadline is None or self.handshake_deadline < deadline:
                deadline = self.handshake_deadline
        sel.deadline = deadline if deadline is not None else 0
        sel.update()


class Timer(Handler):  # type: ignore[misc]
    """The handler of a proton timer task: calls ``fn`` when it fires, on the loop's
    thread (``container.schedule(delay, Timer(fn))``). The one timer of the bridge."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn

    def on_timer_task(self, event: Any) -> None:
        self.fn()


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


class _Refused(Amqp010Socket):
    """A connection over a listener's limit: told why (connection.close) once its
    protocol header arrived, then closed."""

    refusal = ""

    def _deliver(self, data: bytes) -> None:
        super()._deliver(data)
        if not self.closed and self.engine.state is not ConnectionState.AWAIT_HEADER:
            self.abort(self.refusal)


def _ignore(sock: Amqp010Socket, ev: Event) -> None:
    pass


class Amqp010Listener:
    """A listening socket whose accepted connections get a server-role engine
    (behind a TLS handshake with ``ssl_context``), within ``limits`` (see the module's
    docstring); accepted sockets are ``socket_class`` instances.  ``name`` labels its
    log lines."""

    def __init__(self, container: Container, host: str, port: int,
                 make_config: Callable[[], ConnectionConfig], on_event: EventHandler,
                 on_accept: Callable[[Amqp010Socket], None] | None = None, *,
                 ssl_context: ssl.SSLContext | None = None,
                 on_handshake: Callable[[Amqp010Socket], None] | None = None,
                 limits: AcceptLimits | None = None, name: str = "",
                 socket_class: type[Amqp010Socket] = Amqp010Socket) -> None:
        self.container = container
        self.ssl_context = ssl_context
        self.on_handshake = on_handshake
        self.make_config = make_config
        self.on_event = on_event
        self.on_accept = on_accept
        self.limits = limits or AcceptLimits()
        self.name = name
        self.socket_class = socket_class
        self.stats = ListenerStats()
        self.connections: set[Amqp010Socket] = set()
        """Accepted connections not closed yet (refused ones not included)."""
        self.per_peer: dict[str, int] = {}
        self.refusing: set[Amqp010Socket] = set()
        self.buffered = 0
        """Octets of unfinished input its connections hold (as last counted)."""
        self._backoff = 0.0
        self._shedding = False
        self._warn = RateLimited(log)
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
            except OSError as exc:
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                    continue  # that client gave up before we took it: the next one
                self._accept_failed(exc)
                return
            self._backoff = 0.0
            self._admit(sock, addr)

    def on_selectable_expired(self, event: Any) -> None:
        """The pause after a failed accept() is over: listen again."""
        self.selectable.deadline = 0
        self.selectable.reading = True
        self.selectable.update()

    def on_selectable_final(self, event: Any) -> None:
        self.selectable.release()
        self.sock.close()

    def close(self) -> None:
        """Stop listening."""
        self.selectable.terminate()
        self.selectable.update()

    # -- limits ----------------------------------------------------------------------------

    def _fields(self, event: str, **more: Any) -> dict[str, Any]:
        return {"event": event, "listener": self.name, **more}

    def _accept_failed(self, exc: OSError) -> None:
        """Out of descriptors (or buffers, memory): stop accepting for a while."""
        self.stats.accept_failures += 1
        low, high = ACCEPT_BACKOFF
        self._backoff = min(high, self._backoff * 2) if self._backoff else low
        self.selectable.reading = False
        self.selectable.deadline = time.time() + self._backoff
        self.selectable.update()
        self._warn.warning("accept_failed", "listener %s: accept failed: %s; not accepting "
                           "for %.1fs (%d failures so far)", self.name, exc, self._backoff,
                           self.stats.accept_failures,
                           extra=self._fields("accept_failed", error=str(exc),
                                              delay=self._backoff,
                                              failures=self.stats.accept_failures))

    def _admit(self, sock: socket.socket, addr: Any) -> None:
        host = str(addr[0])
        peer = f"{host}:{addr[1]}"
        limits = self.limits
        if sock.fileno() >= FD_SETSIZE:
            sock.close()
            self._refused("descriptors", peer, f"descriptor {FD_SETSIZE} or more "
                          "(the bridge cannot watch it): closed at once")
            return
        if limits.max_connections is not None and len(self.connections) >= limits.max_connections:
            self._refuse(sock, peer, "max_connections", f"amqp-bridge: too many connections "
                         f"(listener {self.name}: max_connections {limits.max_connections})")
            return
        if (limits.max_connections_per_peer is not None
                and self.per_peer.get(host, 0) >= limits.max_connections_per_peer):
            self._refuse(sock, peer, "max_connections_per_peer",
                         f"amqp-bridge: too many connections from {host} (listener "
                         f"{self.name}: max_connections_per_peer "
                         f"{limits.max_connections_per_peer})")
            return
        now = time.time()
        engine = Connection(Role.SERVER, self.make_config())
        engine.tick(now)
        hosted = self.socket_class(self.container, sock, engine, self.on_event, peer=peer,
                                   tls=self.ssl_context, server_side=True,
                                   on_handshake=self.on_handshake)
        hosted.listener = self
        if limits.handshake_timeout is not None:
            hosted.handshake_deadline = now + limits.handshake_timeout
        self.connections.add(hosted)
        self.per_peer[host] = self.per_peer.get(host, 0) + 1
        if self.on_accept is not None:
            self.on_accept(hosted)

    def _refuse(self, sock: socket.socket, peer: str, reason: str, text: str) -> None:
        if len(self.refusing) >= MAX_REFUSING:
            with contextlib.suppress(OSError):
                sock.close()
            self._refused(reason, peer, f"{text}: closed at once")
            return
        now = time.time()
        engine = Connection(Role.SERVER, self.make_config())
        engine.tick(now)
        hosted = _Refused(self.container, sock, engine, _ignore, peer=peer,
                          tls=self.ssl_context, server_side=True)
        hosted.refusal = text
        hosted.listener = self
        hosted.handshake_deadline = now + min(REFUSAL_GRACE, self.limits.handshake_timeout
                                              or REFUSAL_GRACE)
        self.refusing.add(hosted)
        self._refused(reason, peer, text)

    def _refused(self, reason: str, peer: str, text: str) -> None:
        self.stats.refused[reason] += 1
        verb = "closed" if reason == "max_buffered" else "refused"
        self._warn.warning(f"refused:{reason}", "listener %s: %s %s: %s", self.name, verb,
                           peer, text, extra=self._fields("connection_refused", peer=peer,
                                                          reason=reason, error=text))

    def handshake_expired(self, sock: Amqp010Socket) -> None:
        """``sock`` was not open in time: close it (a refused one quietly)."""
        if sock in self.refusing:
            sock.abort(getattr(sock, "refusal", "refused"))
            return
        self.stats.handshake_timeouts += 1
        timeout = self.limits.handshake_timeout
        state = sock.engine.state.value
        self._warn.warning("handshake_timeout", "listener %s: %s did not log in within %gs "
                           "(%s): closed", self.name, sock.peer, timeout, state,
                           extra=self._fields("handshake_timeout", peer=sock.peer,
                                              state=state))
        sock.abort(f"amqp-bridge: handshake not completed within {timeout:g}s")

    def count_buffered(self, sock: Amqp010Socket) -> None:
        """After ``sock``'s engine ran: update the listener's total, close the largest
        holder while it is over ``max_buffered``."""
        now = sock.engine.buffered
        if now == sock.counted:
            return
        self.buffered += now - sock.counted
        sock.counted = now
        limit = self.limits.max_buffered
        if limit is None or self.buffered <= limit or self._shedding:
            return
        self._shedding = True
        try:
            while self.buffered > limit and self.connections:
                largest = max(self.connections, key=lambda c: c.counted)
                if not largest.counted:
                    break
                held = largest.counted
                self._refused("max_buffered", largest.peer,
                              f"{held} octets of unfinished messages while the listener "
                              f"holds {self.buffered} (max_buffered {limit})")
                largest.abort(f"amqp-bridge: listener {self.name} is holding too much "
                              f"unfinished input (max_buffered {limit}); this connection "
                              f"held {held} octets")
                if largest.counted:  # not released by the abort: count it out here
                    self.released(largest)
        finally:
            self._shedding = False

    def released(self, sock: Amqp010Socket) -> None:
        """``sock``'s transport is gone: it no longer counts against the limits."""
        self.buffered -= sock.counted
        sock.counted = 0
        if sock in self.refusing:
            self.refusing.discard(sock)
            return
        if sock in self.connections:
            self.connections.discard(sock)
            host = sock.peer.rpartition(":")[0]
            left = self.per_peer.get(host, 1) - 1
            if left > 0:
                self.per_peer[host] = left
            else:
                self.per_peer.pop(host, None)
