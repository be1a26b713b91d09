"""The listening socket of legacy-protocol clients: accept, hand over, and bound what they take.

Each accepted socket gets a server-role engine from the listener's ``make_engine`` (an
AMQP 0-10 or 0-9-1 connection: :class:`~bridge.runtime.sockets.Engine`).
A listener faces whoever can reach its port, so :class:`EngineListener` bounds what
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
- *octets unread*: a connection that leaves more than ``max_unsent`` octets of output
  unread (it keeps sending requests and does not read the answers) is closed;
- *octets buffered*: every connection's engine bounds its own unfinished input, and
  the listener keeps the sum (updated after each read, from
  :attr:`Connection.buffered <amqp010.connection.Connection.buffered>`); past
  ``max_buffered`` the connection holding the most is closed.  Pausing it instead
  would never bring the sum down: unfinished messages only finish by reading more;
- *accept() failing* for lack of descriptors or memory: the listener stops asking
  (its selectable not readable) and retries on its deadline, 0.1 s doubling to 2 s,
  instead of spinning on a socket that stays readable.

Where the loop has no ``epoll`` (:mod:`~bridge.runtime.selector`: not Linux) it watches
sockets with ``select()``, which cannot take descriptors from 1024 on; there an
accepted socket past that is closed at once.  Every event is counted in
:class:`ListenerStats` (read by the metrics thread) and logged through
:class:`~bridge.ops.logs.RateLimited`.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic

from proton.reactor import Container

from ..ops.logs import RateLimited
from .containment import Part
from .selector import SERVES_ANY_DESCRIPTOR
from .sockets import E, EngineSocket, EventHandler, host_port, register_selectable

log = logging.getLogger(__package__)  # the package's one logger: "bridge.runtime"

FD_SETSIZE = 1024
"""Descriptors from this number on cannot be watched where the loop has no ``epoll``
(:data:`~bridge.runtime.selector.SERVES_ANY_DESCRIPTOR`): proton's ``select()``."""
ACCEPT_BACKOFF = (0.1, 2.0)
"""First and longest pause (seconds) of a listener whose ``accept()`` fails (EMFILE …)."""
REFUSAL_GRACE = 1.0
"""Seconds a refused connection has to send its protocol header (to be told why)."""
MAX_REFUSING = 32
"""Refused connections waiting for their header at once; past it, closed at once."""
REFUSED_REASONS = ("max_connections", "max_connections_per_peer", "descriptors",
                   "max_buffered", "max_unsent")
"""``ListenerStats.refused`` keys: connections refused (or, for max_buffered and
max_unsent, closed)."""


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
    max_unsent: int | None = None
    """Octets of output one connection may leave unread (replies it asked for and does
    not read); past it the connection is closed."""


@dataclass(slots=True)
class ListenerStats:
    """A listener's counters (written on the loop's thread, read by the metrics thread)."""

    refused: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REFUSED_REASONS, 0))
    """Connections refused (or closed for max_buffered) by reason: fixed keys."""
    handshake_timeouts: int = 0
    accept_failures: int = 0



class _Refused(EngineSocket[Any]):
    """A connection over a listener's limit: told why (connection.close) once its
    protocol header arrived, then closed."""

    refusal = ""

    def _deliver(self, data: bytes) -> None:
        super()._deliver(data)
        if not self.closed and not self.engine.awaiting_header:
            self.abort(self.refusal)


def _ignore(sock: EngineSocket[Any], ev: Any) -> None:
    pass


def listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host`` (an IPv4 or IPv6 address or a name, without
    brackets) and ``port``; ``::`` takes IPv4 connections too where the system can."""
    ipv6 = ":" in host
    return socket.create_server(
        (host, port), family=socket.AF_INET6 if ipv6 else socket.AF_INET, reuse_port=False,
        dualstack_ipv6=host == "::" and socket.has_dualstack_ipv6())


class EngineListener(Generic[E]):
    """A listening socket whose accepted connections get a server-role engine from
    ``make_engine`` (behind a TLS handshake with ``ssl_context``), within ``limits`` (see the module's
    docstring); accepted sockets are ``socket_class`` instances.  ``name`` labels its
    log lines."""

    def __init__(self, container: Container, host: str, port: int,
                 make_engine: Callable[[], E], on_event: EventHandler,
                 on_accept: Callable[[EngineSocket[E]], None] | None = None, *,
                 ssl_context: ssl.SSLContext | None = None,
                 on_handshake: Callable[[EngineSocket[E]], None] | None = None,
                 limits: AcceptLimits | None = None, name: str = "",
                 socket_class: type[EngineSocket[Any]] = EngineSocket) -> None:
        self.container = container
        self.ssl_context = ssl_context
        self.on_handshake = on_handshake
        self.make_engine = make_engine
        self.on_event = on_event
        self.on_accept = on_accept
        self.limits = limits or AcceptLimits()
        self.name = name
        self.socket_class = socket_class
        self.stats = ListenerStats()
        self.connections: set[EngineSocket[E]] = set()
        """Accepted connections not closed yet (refused ones not included)."""
        self.per_peer: dict[str, int] = {}
        self.refusing: set[EngineSocket[Any]] = set()
        self.buffered = 0
        """Octets of unfinished input its connections hold (as last counted)."""
        self._backoff = 0.0
        self._shedding = False
        self._warn = RateLimited(log)
        self.sock = listening_socket(host, port)
        self.sock.setblocking(False)
        self.address = self.sock.getsockname()[:2]
        self.selectable = register_selectable(container, self, self.sock)

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
        peer = host_port(host, addr[1])
        limits = self.limits
        if not SERVES_ANY_DESCRIPTOR and sock.fileno() >= FD_SETSIZE:
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
        engine = self.make_engine()
        engine.tick(now)
        hosted = self.socket_class(self.container, sock, engine, self.on_event, peer=peer,
                                   tls=self.ssl_context, server_side=True,
                                   on_handshake=self.on_handshake)
        hosted.listener = self
        hosted.max_unsent = limits.max_unsent
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
        engine = self.make_engine()
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
        verb = "closed" if reason in ("max_buffered", "max_unsent") else "refused"
        self._warn.warning(f"refused:{reason}", "listener %s: %s %s: %s", self.name, verb,
                           peer, text, extra=self._fields("connection_refused", peer=peer,
                                                          reason=reason, error=text))

    def handshake_expired(self, sock: EngineSocket[Any]) -> None:
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
        sock.expire_handshake(f"amqp-bridge: handshake not completed within {timeout:g}s")

    def count_buffered(self, sock: EngineSocket[Any]) -> None:
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

    def not_reading(self, sock: EngineSocket[Any]) -> None:
        """``sock``'s peer leaves more output unread than ``max_unsent`` (it keeps asking
        and does not read the answers): close it, so that it cannot make the bridge hold
        its replies without bound."""
        text = (f"amqp-bridge: the client left {sock.unsent} octets unread (listener "
                f"{self.name}: max_unsent {self.limits.max_unsent})")
        self._refused("max_unsent", sock.peer, text)
        sock.abort(text)

    def released(self, sock: EngineSocket[Any]) -> None:
        """``sock``'s transport is gone: it no longer counts against the limits."""
        self.buffered -= sock.counted
        sock.counted = 0
        if sock in self.refusing:
            self.refusing.discard(sock)
            return
        if sock in self.connections:
            self.connections.discard(sock)
            host = sock.peer.rpartition(":")[0].strip("[]")  # (an IPv6 one in brackets)
            left = self.per_peer.get(host, 1) - 1
            if left > 0:
                self.per_peer[host] = left
            else:
                self.per_peer.pop(host, None)

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in accepting is logged; the listener keeps listening."""
        name = getattr(getattr(self.on_event, "__self__", None), "name", "")
        return Part("facade_listener", f"façade listener {name}", {"listener": name},
                    "still listening")


__all__ = ["ACCEPT_BACKOFF", "FD_SETSIZE", "MAX_REFUSING", "REFUSAL_GRACE", "REFUSED_REASONS",
           "AcceptLimits", "EngineListener", "ListenerStats", "listening_socket"]
