"""The bridge's client connections to AMQP 0-9-1 brokers (RabbitMQ): connect, fail over,
reconnect, give every route a channel of its own.

Theory of operation
-------------------
One :class:`Amqp091Connection` per configured ``amqp0-9-1`` connection hosts our sans-IO
engine (:mod:`amqp091`, client role) on the runtime's loop; the connection's life — URL
list and failover, backoff with jitter, TLS, refused logins and certificates as
permanent faults, containment — is :class:`~bridge.legacy.client.LegacyClient`'s.

Every route using the connection (an :class:`Amqp091User`) gets its own channel, so a
channel error one route causes (RabbitMQ closes a channel for 404 queue not found,
406 precondition failed, 403 access refused, …) ends only that route's channel. A
channel the broker closed is logged as a WARNING and reopened after a pause that grows
(the connection's reconnect backoff) while channels keep failing without the route
moving a message, so a route pointing at a missing queue retries slowly, never in a
tight loop. When the connection ends, RabbitMQ requeues what every channel held
unacknowledged, and publishes not yet confirmed may or may not have arrived: the routes
are told their channel is lost (:meth:`Amqp091User.on_lost`).

Heartbeats are the engine's (the negotiated interval, whole seconds; a silent broker
ends the connection after two intervals). ``connection.blocked`` (a RabbitMQ resource
alarm) is logged, remembered in :attr:`Amqp091Connection.blocked` — targets publish
nothing while it is set — and passed to every user, as is ``connection.unblocked``.

Message headers are decoded into proton's width types (:data:`FIELD_TYPES`), the
types :mod:`mappings.amqp091` maps to AMQP 1.0 and expects back.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from proton import byte, float32, int32, short, ubyte, uint, ulong, ushort
from proton.reactor import Container

from amqp091.connection import Connection, ConnectionConfig, Role
from amqp091.events import (
    ChannelClosed,
    ChannelOpened,
    ConnectionBlocked,
    ConnectionClosed,
    ConnectionOpened,
    ConnectionUnblocked,
    Event,
    HeartbeatTimeout,
    MessageReceived,
)
from amqp091.sasl import ClientCredentials
from amqp091.tables import FieldTypes
from mappings.amqp091_values import LongString

from ..config import Connection as ConnectionSettings
from ..runtime import EngineSocket
from .client import LegacyClient, RouteSlot

log = logging.getLogger(__name__)

FIELD_TYPES = FieldTypes(byte=byte, ubyte=ubyte, short=short, ushort=ushort, int32=int32,
                         uint=uint, ulong=ulong, float32=float32, long_string=LongString)
"""Header value types: proton's, which :mod:`mappings.amqp091` maps to AMQP 1.0."""
REOPEN_PAUSE = 0.5
"""Seconds between a channel that ended and its successor (at least)."""
DEFAULT_PORTS = {"amqp": 5672, "amqps": 5671}


class Amqp091User(Protocol):
    """What a route implements to use a 0-9-1 connection."""

    name: str

    def on_channel(self, channel: int) -> None:
        """A fresh channel is open for the route (declare its consumer / confirm mode)."""

    def on_event(self, event: Event) -> None:
        """An engine event about the route's channel (or the connection's blocked state);
        a ChannelClosed comes just before :meth:`on_lost`, with the reason."""

    def on_lost(self) -> bool:
        """The channel is gone: the broker requeued what it held unacknowledged.

        Returns True if the channel moved messages (its successor opens without backing
        off)."""

    def on_connection_closed(self, code: int | None, text: str) -> None:
        """The connection ended with ``code`` and ``text`` (None: no close method), before
        the channels are lost: a route may learn from the broker's reason."""


@dataclass(eq=False)
class _Slot(RouteSlot):
    """One route's place on the connection."""

    user: Amqp091User
    channel: int | None = None
    """Open or opening (None: none)."""


@dataclass(frozen=True, slots=True)
class Address:
    """Where an ``amqp://`` / ``amqps://`` URL points, and who logs in."""

    host: str
    port: int
    tls: bool
    username: str | None
    password: str | None
    virtual_host: str


def parse_url(url: str) -> Address:
    """``amqp[s]://[user[:password]@]host[:port][/vhost]`` as RabbitMQ's URI spec reads it
    (percent-decoded; no path or ``/``: the vhost ``/``)."""
    parts = urlsplit(url)
    path = parts.path[1:] if parts.path.startswith("/") else parts.path
    return Address(
        host=parts.hostname or "localhost",
        port=parts.port or DEFAULT_PORTS.get(parts.scheme, 5672),
        tls=parts.scheme == "amqps",
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
        virtual_host=unquote(path) if path else "/")


class Amqp091Connection(LegacyClient):
    """A client connection to one AMQP 0-9-1 broker (module docstring)."""

    protocol = "amqp0-9-1"
    short = "0-9-1"

    def __init__(self, container: Container, name: str, settings: ConnectionSettings, *,
                 on_fatal: Callable[[str], None] | None = None) -> None:
        super().__init__(container, name, settings, on_fatal=on_fatal)
        self.slots: list[_Slot] = []
        self.by_channel: dict[int, _Slot] = {}
        self.blocked: str | None = None
        """The broker's reason while it blocks publishes (connection.blocked), else None."""

    @property
    def users(self) -> list[Amqp091User]:
        return [slot.user for slot in self.slots]

    @property
    def engine(self) -> Connection | None:
        """The open connection's engine (None while not open)."""
        sock = self.socket
        if sock is None or not self.open or not sock.engine.is_open:
            return None
        engine: Connection = sock.engine
        return engine

    def usable(self, channel: int | None) -> bool:
        """True if methods can be sent on ``channel`` now (open, not closing)."""
        engine = self.engine
        if engine is None or channel is None:
            return False
        chan = engine.channels.get(channel)
        return chan is not None and chan.state.value == "open"

    def add(self, user: Amqp091User) -> None:
        """Register a route; it gets a channel once the connection is open."""
        slot = _Slot(user)
        self.slots.append(slot)
        self._ensure(slot)

    def restart(self, user: object, reason: str) -> None:
        """Close ``user``'s channel (the broker requeues what it holds unacknowledged); a
        fresh one follows after the reopen pause."""
        for slot in self.slots:
            if slot.user is user and self.usable(slot.channel):
                engine = self.engine
                assert engine is not None and slot.channel is not None
                engine.close_channel(slot.channel, 200, reason[:200])
                self.flush()

    def stop(self) -> None:
        """Close the connection (RabbitMQ requeues at once what the channels hold)."""
        self.stopping = True
        self.bursts.run()
        if self.socket is None or self.socket.closed:
            return
        self.socket.engine.close()
        self.socket.flush()

    # -- connection lifecycle ------------------------------------------------------------

    def _engine(self, url: str) -> tuple[Connection, str, int, bool]:
        addr = parse_url(url)
        heartbeat = self.settings.heartbeat
        config = ConnectionConfig(
            properties={"product": "amqp-bridge", "connection_name": self.name},
            credentials=ClientCredentials(addr.username or "", addr.password or "",
                                          tuple(self.settings.mechanisms)),
            virtual_host=addr.virtual_host,
            heartbeat=max(1, round(heartbeat)) if heartbeat > 0 else 0,
            field_types=FIELD_TYPES)
        return Connection(Role.CLIENT, config), addr.host, addr.port, addr.tls

    def _lose_all(self) -> None:
        for slot in self.slots:
            if slot.channel is not None:
                self._forget(slot)
                slot.user.on_lost()

    def _discard_all(self) -> None:
        self._lose_all()

    def _on_event(self, sock: EngineSocket[Any], event: Event) -> None:
        if sock is not self.socket:
            return  # a previous connection's last words
        if type(event) is MessageReceived:  # one per message: to its channel's user at once
            owner = self.by_channel.get(event.channel)
            if owner is not None:
                owner.user.on_event(event)
            return
        if isinstance(event, ConnectionOpened):
            self._opened(sock)
            for slot in self.slots:
                self._ensure(slot)
        elif isinstance(event, ConnectionClosed):
            self._closed(event)
        elif isinstance(event, ConnectionBlocked | ConnectionUnblocked):
            self._blocked(event)
        elif isinstance(event, HeartbeatTimeout):
            log.warning("amqp0-9-1 %s: no traffic from the broker for %.1fs: connection dead",
                        self.name, event.idle,
                        extra=self.log_fields("heartbeat_timeout", idle=round(event.idle, 1)))
        else:
            number: int | None = getattr(event, "channel", None)
            owner = self.by_channel.get(number) if number is not None else None
            if owner is None:
                return
            if isinstance(event, ChannelOpened):
                owner.started_at = time.monotonic()
                log.info("amqp0-9-1 %s: route %s: channel %d open", self.name, owner.user.name,
                         number, extra=self.log_fields("channel_open", route=owner.user.name))
                owner.user.on_channel(event.channel)
            elif isinstance(event, ChannelClosed):
                self._channel_closed(owner, event)
            else:
                owner.user.on_event(event)

    def _blocked(self, event: ConnectionBlocked | ConnectionUnblocked) -> None:
        if isinstance(event, ConnectionBlocked):
            self.blocked = event.reason
            log.warning("amqp0-9-1 %s: the broker blocks publishing (%s)", self.name,
                        event.reason, extra=self.log_fields("blocked", reason=event.reason))
        else:
            self.blocked = None
            log.info("amqp0-9-1 %s: the broker accepts publishing again", self.name,
                     extra=self.log_fields("unblocked"))
        for slot in self.slots:
            if slot.channel is not None:
                slot.user.on_event(event)

    def _ensure(self, slot: _Slot) -> None:
        """Give ``slot`` a channel if the connection is open and it has none."""
        engine = self.engine
        if engine is None or self.stopping or slot.waiting or slot.channel is not None:
            return
        slot.channel = engine.open_channel()
        self.by_channel[slot.channel] = slot

    def _forget(self, slot: _Slot) -> None:
        if slot.channel is not None and self.by_channel.get(slot.channel) is slot:
            del self.by_channel[slot.channel]
        slot.channel = None

    def _channel_closed(self, slot: _Slot, event: ChannelClosed) -> None:
        self._forget(slot)
        slot.user.on_event(event)  # the reason, before the loss
        progressed = slot.user.on_lost()
        if self.engine is None or self.stopping:
            return  # the connection is ending: its close reopens nothing
        delay = slot.next_pause(progressed, REOPEN_PAUSE, self.settings.reconnect)
        reason = f"{event.code} {event.text}".strip()
        if event.by_peer:
            log.warning("amqp0-9-1 %s: route %s: channel closed by the broker (%s); new "
                        "channel in %.2fs", self.name, slot.user.name, reason, delay,
                        extra=self.log_fields("channel_closed", route=slot.user.name,
                                              error=reason, delay=round(delay, 3)))
        else:
            log.info("amqp0-9-1 %s: route %s: channel closed (%s); new channel in %.2fs",
                     self.name, slot.user.name, reason, delay,
                     extra=self.log_fields("channel_closed", route=slot.user.name,
                                           error=reason, delay=round(delay, 3)))
        self._later(slot, delay, self._ensure)

    def _closed(self, event: ConnectionClosed) -> None:
        was_open = self.open
        self.blocked = None
        for slot in self.slots:
            slot.user.on_connection_closed(event.code, event.text)
        if not self._ended(event.text or f"closed with code {event.code}"):
            return
        self._lose_all()  # channels the engine did not report closed (still opening)
        self._reconnect_after(was_open)


__all__ = ["FIELD_TYPES", "Address", "Amqp091Connection", "Amqp091User", "parse_url"]
