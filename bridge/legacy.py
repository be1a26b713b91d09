"""The bridge's client connections to AMQP 0-10 brokers: connect, fail over, reconnect.

One :class:`LegacyConnection` per configured ``amqp0-10`` connection.  Every
route using it gets its own 0-10 session (so one route's execution exception
cannot take the others down); the connection dispatches engine events to the
route owning the session.  When the transport drops or the broker closes, the
routes are told (so they can release what was in flight), and the connection
retries the URLs in order with exponential backoff and jitter.
"""

from __future__ import annotations

import logging
import random
import time
from typing import Any, Protocol

from proton.reactor import Container

from .amqp010.connection import ConnectionConfig
from .amqp010.events import (
    ConnectionClosed,
    ConnectionOpened,
    ConnectionRedirected,
    Event,
    SessionAttached,
    SessionDetached,
)
from .amqp010.session import Session
from .amqp010.transport import client_config, parse_url
from .config import Connection as ConnectionSettings
from .config import redact_url
from .hosting import Amqp010Socket, connect

log = logging.getLogger(__name__)


class LegacyUser(Protocol):
    """What a route implements to use a legacy connection."""

    name: str

    def on_session(self, session: Session) -> None:
        """A fresh session is attached: subscribe / start sending."""

    def on_event(self, event: Event) -> None:
        """An engine event about this route's session."""

    def on_lost(self) -> None:
        """The session is gone (transport loss, close, exception): forget its ids."""


class LegacyConnection:
    """A client connection to one AMQP 0-10 broker, kept up for as long as the bridge runs."""

    def __init__(self, container: Container, name: str, settings: ConnectionSettings) -> None:
        self.container = container
        self.name = name
        self.settings = settings
        self.urls = [settings.url, *settings.failover]
        self.users: list[LegacyUser] = []
        self.sessions: dict[int, LegacyUser] = {}  # id(session) -> user
        self.socket: Amqp010Socket | None = None
        self.open = False
        self.url_index = 0
        self.failures = 0
        """Consecutive failed attempts (drives the backoff)."""
        self.reconnects = 0
        self.stopping = False
        self.last_error = ""

    def add(self, user: LegacyUser) -> None:
        """Register a route; it gets a session once the connection is open."""
        self.users.append(user)
        if self.open and self.socket is not None:
            self._attach(user)
            self.socket.flush()

    def start(self) -> None:
        """Connect (asynchronously) to the first URL."""
        self._connect()

    def stop(self) -> None:
        """Close the connection for good."""
        self.stopping = True
        if self.socket is not None and not self.socket.closed:
            self.socket.engine.close()
            self.socket.flush()

    def flush(self) -> None:
        """Write what the routes queued on their sessions."""
        if self.socket is not None:
            self.socket.flush()

    # -- connection lifecycle ------------------------------------------------------------

    def _connect(self) -> None:
        url = self.urls[self.url_index % len(self.urls)]
        addr = parse_url(url)
        config: ConnectionConfig = client_config(
            url, heartbeat=int(self.settings.heartbeat) or None,
            properties={"product": "amqp-bridge", "connection": self.name})
        log.info("amqp0-10 %s: connecting to %s", self.name, redact_url(url))
        try:
            self.socket = connect(self.container, addr.host, addr.port, config, self._on_event)
        except OSError as exc:
            self.last_error = str(exc)
            self.url_index += 1
            self._retry()

    def _retry(self) -> None:
        if self.stopping:
            return
        r = self.settings.reconnect
        delay = min(r.max_delay, r.initial_delay * r.multiplier ** min(self.failures, 32))
        delay *= 1 + random.uniform(-r.jitter, r.jitter)
        self.failures += 1
        self.reconnects += 1
        log.info("amqp0-10 %s: reconnecting in %.2fs (%s)", self.name, delay, self.last_error)
        self.container.schedule(delay, _Timer(self._connect))

    def _on_event(self, sock: Amqp010Socket, event: Event) -> None:
        if isinstance(event, ConnectionOpened):
            self.open = True
            self.failures = 0
            log.info("amqp0-10 %s: open (%s)", self.name, sock.peer)
            for user in self.users:
                self._attach(user)
        elif isinstance(event, ConnectionClosed):
            self._closed(event)
        elif isinstance(event, ConnectionRedirected):
            log.info("amqp0-10 %s: redirected to %s", self.name, event.host)
            self.urls.insert(self.url_index + 1, _redirect_url(self.urls[0], event.host))
        else:
            session = getattr(event, "session", None)
            user = self.sessions.get(id(session)) if session is not None else None
            if user is None:
                return
            if isinstance(event, SessionAttached):
                user.on_session(event.session)
            elif isinstance(event, SessionDetached):
                del self.sessions[id(session)]
                user.on_lost()
                if self.open and not self.stopping:  # e.g. after an execution exception
                    self._attach(user)
            else:
                user.on_event(event)

    def _attach(self, user: LegacyUser) -> None:
        assert self.socket is not None
        session = self.socket.engine.attach(f"amqp-bridge.{self.name}.{user.name}.{time.time_ns()}")
        self.sessions[id(session)] = user

    def _closed(self, event: ConnectionClosed) -> None:
        was_open = self.open
        self.open = False
        self.last_error = event.text or f"closed with code {event.code}"
        log.info("amqp0-10 %s: connection closed: %s", self.name, self.last_error)
        users = list(self.sessions.values())
        self.sessions.clear()
        for user in users:
            user.on_lost()
        # an established connection that failed is retried at once on the same URL;
        # a failed attempt moves on to the next URL of the failover list
        self.url_index = 0 if was_open else self.url_index + 1
        if was_open:
            self.failures = 0
        self.socket = None
        self._retry()


class _Timer:
    """A proton timer task handler calling ``fn``."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def on_timer_task(self, event: Any) -> None:
        self.fn()


def _redirect_url(template: str, host: str) -> str:
    base = parse_url(template)
    auth = ""
    if base.username:
        auth = base.username + (f":{base.password}" if base.password is not None else "") + "@"
    scheme = "amqps" if base.tls else "amqp"
    return f"{scheme}://{auth}{host}/{base.virtual_host}"
