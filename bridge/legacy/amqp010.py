"""The bridge's client connections to AMQP 0-10 brokers: connect, fail over, reconnect, resume.

One :class:`LegacyConnection` per configured ``amqp0-10`` connection.  Every
route using it gets its own 0-10 session (so one route's execution exception
cannot take the others down); the connection dispatches engine events to the
route owning the session.

Faults:

* The transport drops: sessions the broker agreed to keep (``session_timeout``
  > 0, granted by the broker's ``session.timeout``) are *suspended*; on the next
  connection they are resumed (``Connection.resume``): commands the broker had
  not completed are replayed, the broker drops what it already executed, and
  the route keeps its in-flight messages.  Sessions not kept are *lost*: the
  broker requeues what it had delivered and the route forgets their ids.
* The broker ends a session while the connection stays up (an execution
  exception, a forgotten session after a resume): the route is told it is
  lost and gets a fresh session after a backoff.
* The connection is retried through the URL list with exponential backoff and
  jitter.
* A refused login or certificate is a *permanent* fault: it is logged once as an
  ERROR and the next URL is tried; once every URL failed that way in a row the
  connection gives up and calls ``on_fatal`` (the bridge stops, ``docs/operations.md``).

TLS: ``amqps://`` URLs get a TLS handshake first (``tls`` settings, or the system's
CAs); SASL uses the configured or derived mechanisms (EXTERNAL with the client
certificate).

Batching: :meth:`LegacyConnection.defer` runs a callback once at the end of
the current burst of reactor events and then writes the socket (the runtime's
:class:`~bridge.runtime.EndOfBurst`), so a burst of outcomes becomes one
``message.accept`` and one ``send()``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from proton.reactor import Container

from amqp010.connection import Connection, ConnectionConfig, ProtocolError, Role
from amqp010.events import (
    ConnectionClosed,
    ConnectionOpened,
    ConnectionRedirected,
    Event,
    SessionAttached,
    SessionDetached,
)
from amqp010.session import Session, SessionState
from amqp010.urls import client_config, parse_url

from ..config import Connection as ConnectionSettings
from ..runtime import EngineSocket
from .client import LegacyClient, RouteSlot

log = logging.getLogger(__name__)

REATTACH_PAUSE = 0.5
"""Seconds between a session the broker ended and its successor on the same channel.

Controls the broker sent for the old session before it saw our ``detached`` (e.g. the
answer to a ``session.flush`` that crossed its ``execution.exception``) must arrive
while the channel is free: arriving during the new session's attach, the engine would
answer them with ``detached(not-attached)``, which ends the new session at the broker
while our side believes it attached."""


class LegacyUser(Protocol):
    """What a route implements to use a legacy connection."""

    name: str

    def on_session(self, session: Session, resumed: bool) -> None:
        """A session is attached: fresh (subscribe / start sending) or resumed."""

    def on_event(self, event: Event) -> None:
        """An engine event about this route's session."""

    def on_suspended(self) -> None:
        """The transport is gone but the broker keeps the session: wait for the resume."""

    def on_lost(self) -> bool:
        """The session is gone for good: the broker requeued what it had delivered.

        Returns True if the session moved messages (a fresh one is attached at once,
        without backing off)."""


@dataclass(eq=False)
class _Slot(RouteSlot):
    """One route's place on the connection."""

    user: LegacyUser
    session: Session | None = None
    """Attached, attaching, or detached and kept by the broker for a resume."""


class LegacyConnection(LegacyClient):
    """A client connection to one AMQP 0-10 broker, kept up for as long as the bridge runs."""

    protocol = "amqp0-10"
    short = "0-10"

    def __init__(self, container: Container, name: str, settings: ConnectionSettings, *,
                 on_fatal: Callable[[str], None] | None = None) -> None:
        super().__init__(container, name, settings, on_fatal=on_fatal)
        self.slots: list[_Slot] = []
        self.by_session: dict[int, _Slot] = {}  # id(session) -> slot
        self.resumed = 0
        """Sessions resumed after a transport loss (for logs and tests)."""

    @property
    def users(self) -> list[LegacyUser]:
        return [slot.user for slot in self.slots]

    def add(self, user: LegacyUser) -> None:
        """Register a route; it gets a session once the connection is open."""
        slot = _Slot(user)
        self.slots.append(slot)
        self._ensure(slot)

    def stop(self) -> None:
        """End the sessions (so the broker requeues at once what is unsettled) and close."""
        self.stopping = True
        self.bursts.run()
        if self.socket is None or self.socket.closed:
            return
        for slot in self.slots:
            session = slot.session
            if session is not None and session.attached:
                if session.timeout:
                    session.request_timeout(0)
                session.detach()
        self.socket.engine.close()
        self.socket.flush()

    # -- connection lifecycle ------------------------------------------------------------

    def _engine(self, url: str) -> tuple[Connection, str, int, bool]:
        addr = parse_url(url)
        tls = self.settings.tls
        config: ConnectionConfig = client_config(
            url, heartbeat=int(self.settings.heartbeat) or None,
            external=bool(tls is not None and tls.cert_file),
            properties={"product": "amqp-bridge", "connection": self.name})
        config.credentials.preference = tuple(self.settings.mechanisms)
        return Connection(Role.CLIENT, config), addr.host, addr.port, addr.tls

    def _lose_all(self) -> None:
        for slot in self.slots:
            if slot.session is not None:
                self._forget(slot)
                slot.user.on_lost()

    def _discard_all(self) -> None:
        for slot in self.slots:
            self._forget(slot)

    def _on_event(self, sock: EngineSocket, event: Event) -> None:
        if sock is not self.socket:
            return  # a previous connection's last words
        if isinstance(event, ConnectionOpened):
            self._opened(sock)
            for slot in self.slots:
                self._ensure(slot)
        elif isinstance(event, ConnectionClosed):
            self._closed(event)
        elif isinstance(event, ConnectionRedirected):
            log.info("amqp0-10 %s: redirected to %s", self.name, event.host,
                     extra=self.log_fields("redirected", to=event.host))
            self.urls.insert(self.url_index + 1, _redirect_url(self.urls[0], event.host))
        else:
            session: Session | None = getattr(event, "session", None)
            if session is None:
                return
            owner = self.by_session.get(id(session))
            if owner is None or owner.session is not session:
                return
            if isinstance(event, SessionAttached):
                owner.started_at = time.monotonic()
                if event.resumed:
                    self.resumed += 1
                    log.info("amqp0-10 %s: route %s: session resumed", self.name,
                             owner.user.name,
                             extra=self.log_fields("session_resumed", route=owner.user.name))
                else:
                    log.info("amqp0-10 %s: route %s: session attached", self.name,
                             owner.user.name,
                             extra=self.log_fields("session_attached", route=owner.user.name))
                owner.user.on_session(session, event.resumed)
            elif isinstance(event, SessionDetached):
                self._detached(owner, session, event)
            else:
                owner.user.on_event(event)

    def _ensure(self, slot: _Slot) -> None:
        """Give ``slot`` a session if the connection is open and it has none attached."""
        sock = self.socket
        if sock is None or not sock.engine.is_open or self.stopping or slot.waiting:
            return
        session = slot.session
        if session is not None and session.state is SessionState.DETACHED:
            try:
                sock.engine.resume(session)
                return
            except ProtocolError as exc:
                log.info("amqp0-10 %s: route %s: cannot resume: %s", self.name, slot.user.name, exc,
                         extra=self.log_fields("session_lost", route=slot.user.name,
                                               error=str(exc)))
                self._forget(slot)
                slot.user.on_lost()
        elif session is not None:
            return  # attached or attaching
        session = sock.engine.attach(
            f"amqp-bridge.{self.name}.{slot.user.name}.{time.time_ns():x}",
            timeout=self.settings.session_timeout)
        slot.session = session
        self.by_session[id(session)] = slot

    def _forget(self, slot: _Slot) -> None:
        if slot.session is not None:
            self.by_session.pop(id(slot.session), None)
        slot.session = None

    def _detached(self, slot: _Slot, session: Session, event: SessionDetached) -> None:
        engine_open = self.socket is not None and self.socket.engine.is_open
        if not engine_open and session.state is SessionState.DETACHED and not self.stopping:
            log.info("amqp0-10 %s: route %s: transport lost, session kept for %ss",
                     self.name, slot.user.name, session.timeout,
                     extra=self.log_fields("session_suspended", route=slot.user.name))
            slot.user.on_suspended()
            return
        self._forget(slot)
        progressed = slot.user.on_lost()
        if not engine_open or self.stopping:
            return
        # the broker ended the session (an exception, a resume it could not honour): start a
        # fresh one, backing off if that keeps happening without progress
        delay = slot.next_pause(progressed, REATTACH_PAUSE, self.settings.reconnect)
        reason = session.peer_exception.description if session.peer_exception else \
            f"detached with code {event.code}"
        log.warning("amqp0-10 %s: route %s: session ended by the broker (%s); new session in "
                    "%.2fs", self.name, slot.user.name, reason, delay,
                    extra=self.log_fields("session_ended", route=slot.user.name, error=reason,
                                          delay=round(delay, 3)))
        self._later(slot, delay, self._ensure)

    def _closed(self, event: ConnectionClosed) -> None:
        was_open = self.open
        if not self._ended(event.text or f"closed with code {event.code}"):
            return
        # sessions the engine did not report detached (never attached) are lost
        for slot in self.slots:
            session = slot.session
            if session is not None and session.state is not SessionState.DETACHED:
                self._forget(slot)
                slot.user.on_lost()
        self._reconnect_after(was_open)


def _redirect_url(template: str, host: str) -> str:
    base = parse_url(template)
    auth = ""
    if base.username:
        auth = base.username + (f":{base.password}" if base.password is not None else "") + "@"
    scheme = "amqps" if base.tls else "amqp"
    return f"{scheme}://{auth}{host}/{base.virtual_host}"
