"""One hosted legacy-protocol connection: a sans-IO engine, its non-blocking socket, TLS in memory.

The engine is any :class:`Engine` — our AMQP 0-10 (:mod:`amqp010.connection`) or AMQP
0-9-1 (:mod:`amqp091.connection`) connection, client or server role: both take bytes
and time in and give bytes and events out through the same few calls.

An :class:`EngineSocket` is registered with the proton container as a *selectable*
(:func:`register_selectable`, the mechanism proton uses for its own acceptors); the
container's ``select`` loop tells it when the socket is readable, writable or its
deadline (heartbeat, handshake timeout) expired, and it drives the engine:

    readable  -> sock.recv -> engine.receive_data -> events -> application
    writable  -> engine.data_to_send -> sock.send (partial sends kept)
    deadline  -> engine.tick(now) -> heartbeats / dead-peer detection

Writing ticks the engine's clock too (what goes out is stamped with the time it leaves),
so a write may be what finds the peer silent too long: every event the engine has, after
whatever step, goes to the application before the transport closes
(:meth:`EngineSocket._write_out`). A client connection (:func:`connect`) not open by its
handshake deadline is aborted, so that its owner retries.

TLS (``tls``) stays sans-IO too: an :class:`ssl.SSLObject` over a pair of
:class:`ssl.MemoryBIO` sits between the socket and the engine, so the handshake and
every record move with the same non-blocking reads and writes.  What the engine
writes before the handshake is done waits in plaintext; a failed handshake is kept
in :attr:`EngineSocket.tls_error` and ends the connection like a transport loss.

A socket accepted by a listener reports to it through the narrow :class:`SocketOwner`
interface (its buffered input, its handshake deadline, its end);
:func:`connect` starts a client connection.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import socket
import ssl
import struct
import termios
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from proton.reactor import Container

from .containment import Part

log = logging.getLogger(__package__)  # the package's one logger: "bridge.runtime"

CONNECTION_FORCED = 320
"""The close code of a connection the host ends (connection-forced: 320 in 0-10 and 0-9-1)."""


class Engine(Protocol):
    """What a hosted sans-IO protocol engine offers its socket."""

    heartbeat: Any
    """The negotiated heartbeat interval (seconds; 0 or None: none)."""
    state: Any
    """Where its handshake or life is (an enum: its ``value`` is logged)."""

    @property
    def is_open(self) -> bool:
        """The handshake is done (login included)."""
        ...

    @property
    def closed(self) -> bool:
        """Nothing more will be exchanged (close the transport after the last output)."""
        ...

    @property
    def buffered(self) -> int:
        """Received octets held in unfinished frames and messages."""
        ...

    @property
    def awaiting_header(self) -> bool:
        """Server role: the peer's protocol header has not arrived yet."""
        ...

    def receive_data(self, data: bytes) -> None: ...
    def data_to_send(self) -> bytes: ...
    def events(self) -> Iterator[Any]: ...
    def tick(self, now: float) -> None: ...
    def next_deadline(self) -> float | None: ...
    def note_peer_alive(self) -> None: ...
    def abort(self, code: int, text: str) -> None: ...
    def expire_handshake(self, text: str) -> None:
        """The handshake deadline passed: end as the protocol's broker does."""
        ...


E = TypeVar("E", bound=Engine)
"""The engine type a socket hosts."""

EventHandler = Callable[["EngineSocket[Any]", Any], None]
"""Called with each engine event, on the container's thread."""

_RECV_SIZE = 256 * 1024
_WRITE_HIGH_WATER = 4 << 20
"""Unsent octets above which :attr:`EngineSocket.backpressured` turns true."""


class SocketOwner(Protocol):
    """What a hosted socket tells the listener that accepted it."""

    def handshake_expired(self, sock: EngineSocket[Any]) -> None:
        """``sock`` was not open by its handshake deadline."""

    def count_buffered(self, sock: EngineSocket[Any]) -> None:
        """``sock``'s engine ran: its buffered input may have changed."""

    def released(self, sock: EngineSocket[Any]) -> None:
        """``sock``'s transport is gone."""

    def not_reading(self, sock: EngineSocket[Any]) -> None:
        """``sock`` holds more unsent output than its ``max_unsent``: its peer does not
        read what it asked for."""


class TlsLayer:
    """A TLS session over memory buffers: ciphertext in/out, plaintext to/from the engine."""

    def __init__(self, context: ssl.SSLContext, server_side: bool,
                 server_hostname: str | None) -> None:
        self.incoming = ssl.MemoryBIO()
        self.outgoing = ssl.MemoryBIO()
        self.obj = context.wrap_bio(self.incoming, self.outgoing, server_side=server_side,
                                    server_hostname=None if server_side else server_hostname)
        self.done = False
        self.plain_out = bytearray()


class EngineSocket(Generic[E]):
    """One protocol connection (engine + non-blocking socket) in a proton Container.

    Call :meth:`flush` after issuing engine commands outside of an event callback
    (inside ``on_event`` the socket flushes by itself afterwards).  With ``tls`` the
    connection starts with a TLS handshake (client or ``server_side``);
    ``on_handshake`` runs once it completed, before the engine sees any byte.
    """

    handshake_deadline = 0.0
    """When (``time.time()``) the connection must be open (0: no deadline)."""
    handshake_timeout = 0.0
    """A client connection's time to open (:func:`connect`), for the reason it gives."""
    handshake_expired = False
    """A client connection was abandoned because it was not open by its deadline."""
    listener: SocketOwner | None = None
    """The listener that accepted it (counts its buffered input and its end)."""
    counted = 0
    """Its engine's buffered octets as its listener last counted them."""
    reading_paused = False
    """Reading stopped by its owner (:meth:`pause_reading`: a throttled publisher)."""
    max_unsent: int | None = None
    """Octets of output the peer may leave unread before its listener is told
    (:meth:`SocketOwner.not_reading`); None: no bound (client connections)."""
    in_memory: ClassVar[weakref.WeakSet[EngineSocket[Any]]] = weakref.WeakSet()
    """Every EngineSocket not freed yet, open or closed (a closed one is held in reference
    cycles until the garbage collector frees it): the gauge
    ``amqp_bridge_sockets_in_memory``."""

    def __init__(self, container: Container, sock: socket.socket, engine: E,
                 on_event: EventHandler, *, connecting: bool = False, peer: str = "",
                 trace: Any = None, tls: ssl.SSLContext | None = None,
                 server_side: bool = False, server_hostname: str | None = None,
                 on_handshake: Callable[[EngineSocket[E]], None] | None = None) -> None:
        self.container = container
        self.tls = TlsLayer(tls, server_side, server_hostname) if tls is not None else None
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
        self.selectable = register_selectable(container, self, sock)
        EngineSocket.in_memory.add(self)

    # -- proton selectable handler -----------------------------------------------------

    def on_selectable_init(self, event: Any) -> None:
        self._update()

    def on_selectable_readable(self, event: Any) -> None:
        try:
            data = self.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            log.debug("%s: receive failed: %s", self.peer, exc)
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
                log.debug("%s: %s", self.peer, self.error)
                self._run(self.engine.receive_data, b"")
                return
            self._connecting = False
        self._write_out()
        self._close_or_rearm()

    def on_selectable_expired(self, event: Any) -> None:
        if self.reading_paused:
            # we do not read, so we cannot hear its heartbeats: its silence is ours
            self.engine.note_peer_alive()
        now = time.time()
        if self.handshake_deadline and now >= self.handshake_deadline and not self.closed:
            if self.listener is not None:
                self.handshake_deadline = 0.0
                self.listener.handshake_expired(self)
                return
            if not self.engine.is_open:  # a client connection: abandon it (its owner retries)
                self.handshake_deadline = 0.0
                self.handshake_expired = True
                self.abort(f"not open within {self.handshake_timeout:g}s of connecting "
                           f"(connect_timeout)")
                return
        self._run(self.engine.tick, now)

    def on_selectable_final(self, event: Any) -> None:
        self.selectable.release()
        with contextlib.suppress(OSError):
            self.sock.close()
        self._out = bytearray()  # unsent output of a closed connection goes now

    # -- application side ----------------------------------------------------------------

    @property
    def unread(self) -> int:
        """Octets the peer sent that the kernel holds and we have not read (0 once the
        socket is closed)."""
        if self.closed:
            return 0
        try:
            return struct.unpack("i", fcntl.ioctl(self.sock.fileno(), termios.FIONREAD,
                                                  b"\0\0\0\0"))[0]
        except OSError:
            return 0

    @property
    def unsent(self) -> int:
        """Octets written by the engine and not yet taken by the peer's socket."""
        return len(self._out) + (len(self.tls.plain_out) if self.tls is not None else 0)

    @property
    def backpressured(self) -> bool:
        """True while more than a few MiB wait to be written: stop producing."""
        return len(self._out) > _WRITE_HIGH_WATER

    def pause_reading(self, paused: bool) -> None:
        """Stop (or resume) reading from the peer; heartbeats it cannot be heard sending
        meanwhile do not count against it."""
        if paused != self.reading_paused:
            self.reading_paused = paused
            self._update()

    def call(self, fn: Callable[[Any], None]) -> None:
        """Run ``fn(engine)`` outside an event callback (a timer, another thread's answer):
        its events go to ``on_event`` and its output is written."""
        if not self.closed:
            self._run(fn, self.engine)

    def flush(self) -> None:
        """Write what the engine produced and re-arm the selectable (or close the
        transport, if writing found the connection ended: :meth:`_write_out`)."""
        if not self._in_callback:
            self._write_out()
            self._close_or_rearm()

    def abort(self, text: str) -> None:
        """Close the connection at once (connection.close with connection-forced, its
        close-ok not awaited, sessions discarded: :meth:`Connection.abort`) and drop the
        transport; ``on_event`` still gets the engine's SessionDetached and ConnectionClosed
        events, so the owner cleans up as usual."""
        if not self.closed:
            self._run(lambda engine: engine.abort(CONNECTION_FORCED, text), self.engine)

    def expire_handshake(self, text: str) -> None:
        """The client did not log in in time: the engine ends the connection as its
        protocol's broker does (0-10: connection.close after the protocol header;
        0-9-1: nothing, as RabbitMQ), then the transport is dropped."""
        if not self.closed:
            self._run(lambda engine: engine.expire_handshake(text), self.engine)

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
        self._dispatch(fn, arg)
        self._write_out()
        if self.listener is not None:
            self.listener.count_buffered(self)
            if (self.max_unsent is not None and self.unsent > self.max_unsent
                    and not self.engine.closed):
                self.listener.not_reading(self)
        self._close_or_rearm()

    def _dispatch(self, fn: Callable[..., None] | None, arg: Any = None) -> bool:
        """Run ``fn(arg)`` (if given), then hand every event the engine has to ``on_event``;
        returns whether there was one."""
        told = False
        self._in_callback = True
        try:
            if fn is not None:
                fn(arg)
            for ev in self.engine.events():
                told = True
                self.on_event(self, ev)
        finally:
            self._in_callback = False
        return told

    def _write_out(self) -> None:
        """Write what the engine produced, and hand ``on_event`` what writing raised.

        Collecting the output ticks the engine's clock (:meth:`_drain_engine`), and that
        tick may be the one that finds the peer silent past the heartbeat limit: the
        deadline that woke the loop was the heartbeat *send* deadline, a moment before
        the silence limit, and the clock passed the limit while the burst ran. The engine
        then ends the connection (HeartbeatTimeout, every session or channel detached,
        ConnectionClosed), and those events must reach the owner like any other end, or
        it would never learn that its connection is gone, nor reconnect."""
        self._drain_engine()
        while self._dispatch(None):
            self._drain_engine()

    def _close_or_rearm(self) -> None:
        """Close the transport if the engine is closed, else re-arm the selectable."""
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
                log.info("%s: TLS failed: %s", self.peer, exc)
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
                log.debug("%s: send failed: %s", self.peer, exc)
                self.error = f"send failed: {exc}"
                self._out.clear()
                if not self.closed:
                    self._run(self.engine.receive_data, b"")
                return
            del self._out[:n]

    def _update(self) -> None:
        if self.closed:
            return
        deadline = self.engine.next_deadline()
        if self.handshake_deadline:
            if self.engine.is_open:
                self.handshake_deadline = 0.0
            elif deadline is None or self.handshake_deadline < deadline:
                deadline = self.handshake_deadline
        set_interest(self.selectable, not self._connecting and not self.reading_paused,
                     self._connecting or bool(self._out), deadline)

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault here is its owner's (a legacy connection, a façade client), else
        this connection's alone: it is closed."""
        owner = getattr(self.on_event, "__self__", None)
        describe = getattr(owner, "socket_fault_part", None)
        if callable(describe):
            part: Part = describe(self)
            return part
        return Part("handler", f"connection {self.peer}", {"peer": self.peer},
                    "connection closed", lambda reason: self.abort(reason))


def set_interest(sel: Any, reading: bool, writing: bool, deadline: float | None, *,
                 tell: Callable[[Any], None] | None = None) -> bool:
    """Set what the loop's ``select`` watches ``sel`` for (readable, writable, a deadline:
    None or 0 for none), and tell the container's selector only when it must know.

    Telling it is an event (``selectable_updated``) dispatched through every handler of
    the container, and most calls change nothing it watches: a hosted socket after each
    read and write, an AMQP 1.0 transport after each of its events. So it is told when
    reading or writing changed (or ``sel`` is ending) or the deadline came earlier; a
    deadline moved later or dropped is not told, as the selector reads every deadline
    afresh after each ``select`` (what it still holds is earlier: at worst one early
    wake-up, which changes nothing). ``tell`` tells it without the event (the IO
    handler's own selector, for a selectable it already watches). Returns True if it
    was told."""
    before = sel.deadline  # (None: none)
    sel.reading, sel.writing, sel.deadline = reading, writing, deadline or 0
    watched = (reading, writing)
    if getattr(sel, "told", None) == watched and not sel.is_terminal \
            and (not deadline or (before is not None and deadline >= before)):
        return False
    sel.told = watched
    if tell is None or sel.is_terminal:
        sel.update()
    else:
        tell(sel)
    return True


def register_selectable(container: Container, handler: Any, sock: socket.socket) -> Any:
    """Register ``sock`` with the container's select loop, events going to ``handler``."""
    sel = container.selectable(handler=handler, delegate=sock)
    # proton's global IO handler also sees selectable events and serves those that
    # carry an AMQP 1.0 transport; None tells it this one is ours (as its Acceptor does)
    sel._transport = None  # type: ignore[attr-defined]
    return sel


def host_port(host: str, port: int | str) -> str:
    """``host:port`` as written in a URL: an IPv6 address in brackets (``[::1]:5672``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def connect(container: Container, host: str, port: int, engine: E,
            on_event: EventHandler, *, trace: Any = None, ssl_context: ssl.SSLContext | None = None,
            server_hostname: str | None = None,
            handshake_timeout: float | None = None) -> EngineSocket[E]:
    """Start a non-blocking client connection to a peer, spoken to by ``engine`` (a
    client-role engine; TLS with ``ssl_context``, verifying ``server_hostname`` or ``host``).

    With ``handshake_timeout`` (seconds), a connection not open that long after this call
    (TCP connect, TLS, the protocol's handshake and login) is aborted: ``on_event`` gets
    ConnectionClosed, and :attr:`EngineSocket.handshake_expired` tells why."""
    info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(info[0], socket.SOCK_STREAM)
    sock.setblocking(False)
    err = sock.connect_ex(info[4])
    if err not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
        sock.close()
        raise OSError(err, f"connect to {host}:{port}: {errno.errorcode.get(err, err)}")
    engine.tick(time.time())
    hosted = EngineSocket(container, sock, engine, on_event, connecting=True,
                          peer=host_port(host, port), trace=trace, tls=ssl_context,
                          server_hostname=server_hostname or host)
    if handshake_timeout:
        hosted.handshake_timeout = handshake_timeout
        hosted.handshake_deadline = time.time() + handshake_timeout
    return hosted


__all__ = ["CONNECTION_FORCED", "Engine", "EngineSocket", "EventHandler", "SocketOwner",
           "TlsLayer", "connect", "host_port", "register_selectable", "set_interest"]
