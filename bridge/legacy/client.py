"""What every legacy client connection of the bridge shares, whatever its protocol.

Theory of operation
-------------------
:class:`LegacyClient` keeps one configured connection up on the runtime's loop: it
hosts a sans-IO client engine (:class:`~bridge.runtime.EngineSocket`), walks the URL list
(the ``url`` then each ``failover``), retries with exponential backoff and jitter
(:meth:`bridge.config.Reconnect.delay`), and treats a refused login or certificate as a
*permanent* fault: logged once as an ERROR, the next URL tried, and once every URL failed
that way in a row the connection gives up and calls ``on_fatal`` (the bridge stops,
``docs/operations.md``). An internal fault in its work (:mod:`bridge.runtime.containment`)
closes the connection and reconnects as after a loss.

A protocol's connection (:mod:`.amqp010`, :mod:`.amqp091`) subclasses it and supplies
what differs: the engine built for a URL (:meth:`LegacyClient._engine`), what happens to
the routes' sessions or channels when the connection ends (:meth:`LegacyClient._lose_all`),
and its event dispatch. The shared parts are the connection's life: :meth:`_connect`,
:meth:`_retry`, :meth:`reset`, the permanent-fault bookkeeping of :meth:`_ended` and
:meth:`_reconnect_after`, the log fields and the containment part. There is one
connection attempt at a time: scheduling a reconnect supersedes the one that waited (a
fault's reset between connections), and none starts once the connection is stopping.

Batching: :meth:`LegacyClient.defer` runs a callback once at the end of the current
burst of reactor events and then writes the socket (the runtime's
:class:`~bridge.runtime.EndOfBurst`), so a burst of outcomes becomes one write.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proton.reactor import Container

from ..config import ConfigError, Reconnect, redact_url
from ..config import Connection as ConnectionSettings
from ..runtime import EndOfBurst, EngineSocket, Timer, connect, host_port
from ..runtime.containment import Part
from ..security.tls import (
    PermanentFault,
    TlsFileError,
    auth_failure,
    classify_ssl_error,
    client_context,
)

FAULT_STABLE = 60.0
"""Seconds after an internal fault within which another one counts as a repeat."""
STABLE_USE = 10.0
"""Seconds a route's session or channel must have lived for its end not to count as a
repeated failure."""


@dataclass(eq=False, kw_only=True)
class RouteSlot:
    """A route's place on a connection: when its session or channel started, and how
    often in a row one ended early (the protocol's slot adds the session or channel)."""

    started_at: float = 0.0
    failures: int = 0
    """Consecutive sessions or channels the broker ended early without progress."""
    waiting: bool = False
    """A successor is scheduled."""

    def next_pause(self, progressed: bool, pause: float, reconnect: Reconnect) -> float:
        """Seconds before the successor of a session or channel that just ended: ``pause``,
        plus the reconnect backoff while they keep ending early without progress."""
        lived = time.monotonic() - self.started_at if self.started_at else 0.0
        self.failures = 0 if progressed or lived >= STABLE_USE else self.failures + 1
        return pause + (reconnect.delay(self.failures - 1) if self.failures else 0.0)


class LegacyClient:
    """A client connection to one legacy broker, kept up for as long as the bridge runs
    (module docstring); subclasses speak the protocol."""

    protocol = "legacy"
    """The configured protocol name (``amqp0-10``, ``amqp0-9-1``): logs and metrics."""
    short = "legacy"
    """The protocol's short name in containment descriptions (``0-10``, ``0-9-1``)."""

    def __init__(self, container: Container, name: str, settings: ConnectionSettings, *,
                 on_fatal: Callable[[str], None] | None = None) -> None:
        self.container = container
        self.name = name
        self.settings = settings
        self.on_fatal = on_fatal
        """Called with the message once every URL failed permanently in a row."""
        self.urls = [settings.url, *settings.failover]
        self.ssl_context = None
        if settings.tls is not None or any(u.startswith("amqps:") for u in self.urls):
            try:
                self.ssl_context = client_context(settings.tls)
            except TlsFileError as exc:
                raise ConfigError([f"connections.{name}.tls.{exc.key}: {exc.reason}"]) from None
        self.permanent_faults = 0
        """Consecutive attempts that failed permanently (bad certificate or login)."""
        self.fault: PermanentFault | None = None
        self.socket: EngineSocket[Any] | None = None
        self.open = False
        self.url_index = 0
        self.failures = 0
        """Consecutive failed connection attempts (drives the backoff)."""
        self.reconnects = 0
        self._scheduled = 0
        """How many attempts were scheduled: only the latest may start (one at a time)."""
        self.stopping = False
        self.last_error = ""
        self.peer = ""
        """host:port of the broker connected (or being connected) to."""
        self.bursts = EndOfBurst.of(container)
        self.fault_streak = 0
        """Internal faults in a row (each within FAULT_STABLE of the last): stretch the
        reconnect backoff, so that a fault that comes back at once cannot spin."""
        self._last_fault = 0.0
        self.log = logging.getLogger(type(self).__module__)
        """The subclass's module logger (its log lines name the protocol's module)."""

    def log_fields(self, event: str, **more: Any) -> dict[str, Any]:
        """``extra`` fields of a log line about this connection (``route=...`` etc. in more)."""
        return {"event": event, "connection": self.name, "peer": self.peer, **more}

    def start(self) -> None:
        """Connect (asynchronously) to the first URL."""
        self._connect()

    def flush(self) -> None:
        """Write what the routes queued on the engine."""
        if self.socket is not None:
            self.socket.flush()

    def defer(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once at the end of the current burst of events, then write the socket
        (:class:`~bridge.runtime.EndOfBurst`: a fault in ``fn`` is contained with ``fn``'s
        object as its domain; the rest of the batch still runs)."""
        self.bursts.call_soon(fn)
        self.bursts.flush_soon(self.flush)

    @property
    def backpressured(self) -> bool:
        """True while the socket has more unsent octets than it should buffer."""
        return self.socket is not None and self.socket.backpressured

    # -- what a protocol supplies --------------------------------------------------------

    def _engine(self, url: str) -> tuple[Any, str, int, bool]:
        """The client engine for ``url``, and its ``(host, port, tls)``."""
        raise NotImplementedError

    def _on_event(self, sock: EngineSocket[Any], event: Any) -> None:
        """An engine event (on the loop's thread)."""
        raise NotImplementedError

    def _lose_all(self) -> None:
        """The connection is gone for good or being replaced: every route's session or
        channel is lost (the broker requeues what they held unsettled)."""
        raise NotImplementedError

    def _later(self, slot: RouteSlot, delay: float, again: Callable[[Any], None]) -> None:
        """Run ``again(slot)`` (give it a fresh session or channel) in ``delay`` seconds,
        then write the socket."""
        slot.waiting = True

        def fire() -> None:
            slot.waiting = False
            again(slot)
            self.flush()

        self.container.schedule(delay, Timer(fire))

    def _discard_all(self) -> None:
        """After an internal fault that kept the close from being handled: forget every
        route's session or channel (the new connection gives them fresh ones)."""
        raise NotImplementedError

    # -- the connection's life -----------------------------------------------------------

    def _connect(self) -> None:
        url = self.urls[self.url_index % len(self.urls)]
        engine, host, port, tls = self._engine(url)
        self.peer = host_port(host, port)
        self.log.info("%s %s: connecting to %s", self.protocol, self.name, redact_url(url),
                 extra=self.log_fields("connecting", url=redact_url(url)))
        settings_tls = self.settings.tls
        try:
            self.socket = connect(
                self.container, host, port, engine, self._on_event,
                ssl_context=self.ssl_context if tls else None,
                server_hostname=(settings_tls.server_name if settings_tls is not None
                                 else None) or host,
                handshake_timeout=self.settings.connect_timeout)
        except OSError as exc:
            self.last_error = str(exc)
            self.url_index += 1
            self._retry()

    def _retry(self) -> None:
        if self.stopping:
            return
        delay = self.settings.reconnect.delay(max(self.failures, self.fault_streak - 1))
        self.failures += 1
        self.reconnects += 1
        self.log.info("%s %s: reconnecting in %.2fs (%s)", self.protocol, self.name, delay,
                 self.last_error, extra=self.log_fields(
                     "reconnect_scheduled", delay=round(delay, 3), error=self.last_error))
        self._scheduled += 1
        attempt = self._scheduled

        def reconnect() -> None:
            # one attempt at a time: a reconnect scheduled again (a fault's reset while
            # this one waited) replaces this one; none starts once the connection stops
            if attempt == self._scheduled and not self.stopping:
                self._connect()

        self.container.schedule(delay, Timer(reconnect))

    def _opened(self, sock: EngineSocket[Any]) -> None:
        """The handshake is done: count the attempt as a success."""
        self.open = True
        self.failures = 0
        self.permanent_faults = 0
        self.log.info("%s %s: open (%s)", self.protocol, self.name, sock.peer,
                 extra=self.log_fields("open"))

    def reset(self, reason: str) -> None:
        """Recover from an internal fault (:mod:`bridge.runtime.containment`): close the
        connection (connection.close with connection-forced; its sessions or channels are
        discarded, so the broker requeues what they held unsettled) and reconnect as after
        a loss. Between connections the reconnect is scheduled again, replacing the one
        that waited (never a second attempt beside it)."""
        now = time.monotonic()
        self.fault_streak = self.fault_streak + 1 if now - self._last_fault < FAULT_STABLE else 1
        self._last_fault = now
        sock = self.socket
        if self.stopping:
            if sock is not None:
                sock.close_transport()
            return
        if sock is None or sock.closed:
            self.socket = None
            self.open = False
            self.last_error = reason
            self._retry()  # between connections (a reconnect that failed): try again
            return
        try:
            sock.abort(reason)  # ConnectionClosed -> the subclass's close -> reconnect
        finally:
            if self.socket is sock:  # the close did not get that far: finish it here
                sock.close_transport()
                self.socket = None
                self.open = False
                self.last_error = reason
                self._discard_all()
                self._retry()

    def _permanent_fault(self, sock: EngineSocket[Any]) -> PermanentFault | None:
        if sock.tls_error is not None:
            return classify_ssl_error(sock.tls_error)
        if sock.engine.auth_error is not None:
            return auth_failure(sock.engine.auth_error)
        return None

    def _ended(self, text: str) -> bool:
        """Bookkeeping of a connection that ended (``text``: why): logs it, counts a
        permanent fault. Returns False when that was the last URL to fail permanently in
        a row: the connection has given up (routes told, ``on_fatal`` called)."""
        was_open = self.open
        self.open = False
        self.last_error = text
        fault = self._permanent_fault(self.socket) if self.socket is not None else None
        if fault is not None and not self.stopping:
            self.fault = fault
            self.permanent_faults += 1
            message = fault.message(self.protocol, self.name)
            self.log.error("%s", message, extra=self.log_fields("permanent_fault",
                                                             error=fault.summary))
            self.last_error = f"{fault.summary}: {fault.detail}"
            if self.permanent_faults >= len(self.urls):
                # retrying cannot help: stop here, no retry storm (docs/operations.md)
                self.stopping = True
                self.socket = None
                self._lose_all()
                if self.on_fatal is not None:
                    self.on_fatal(message)
                return False
        else:
            self.permanent_faults = 0
            sock = self.socket
            if sock is not None and sock.error:
                self.last_error += f" ({sock.error})"
            if sock is not None and sock.handshake_expired and not self.stopping:
                # a peer that took the connection and never finished the handshake: not
                # the usual refused or reset attempt
                self.log.warning("%s %s: connection attempt abandoned: %s", self.protocol,
                                 self.name, self.last_error,
                                 extra=self.log_fields("connect_timeout", error=self.last_error))
            else:
                self.log.info("%s %s: connection closed: %s", self.protocol, self.name,
                              self.last_error, extra=self.log_fields(
                                  "closed" if self.stopping else "lost" if was_open
                                  else "connect_failed", error=self.last_error))
        return True

    def _reconnect_after(self, was_open: bool) -> None:
        """An established connection that failed is retried at once on the same URL; a
        failed attempt moves on to the next URL of the failover list."""
        self.url_index = 0 if was_open else self.url_index + 1
        if was_open:
            self.failures = 0
        self.socket = None
        self._retry()

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault here closes this connection and reconnects (containment)."""
        return self.socket_fault_part(self.socket)

    def socket_fault_part(self, sock: EngineSocket[Any] | None) -> Part:
        """A fault in this connection's socket: close, then reconnect with backoff; its
        sessions or channels are discarded (the broker requeues what they held)."""
        peer = sock.peer if sock is not None else self.peer

        def recover(reason: str) -> Callable[[], bool]:
            old = self.socket
            self.reset(reason)
            return lambda: self.stopping or (self.open and self.socket is not old)

        return Part("legacy_connection", f"{self.short} connection {self.name}",
                    {"connection": self.name, "peer": peer},
                    "connection closed, reconnecting", recover,
                    back=lambda: self.stopping or self.open)


__all__ = ["FAULT_STABLE", "STABLE_USE", "LegacyClient", "RouteSlot"]
