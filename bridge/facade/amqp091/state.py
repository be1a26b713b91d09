"""What the 0-9-1 façade keeps per client connection and per channel.

The listener (:mod:`~bridge.facade.amqp091.listener`) makes a :class:`Client091` per
accepted connection and a :class:`Channel091` per open channel; the command model,
the publish and the consume routes read and update them.  A command handler that
the façade answers by closing the channel (as a broker would) raises
:class:`ChannelRefused`; one that closes the whole connection raises
:class:`ConnectionRefused`.
"""

from __future__ import annotations

import functools
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pamqp import constants as pamqp_constants

from amqp091.channel import ChannelState
from amqp091.connection import Connection
from amqp091.events import MessageReceived

from ...runtime import EngineSocket
from ..core.state import TemporaryQueue

if TYPE_CHECKING:
    from ..core.publish import FacadePublish
    from .consume import Consumer091


DIRECT_REPLY_TO = "amq.rabbitmq.reply-to"
"""RabbitMQ's pseudo-queue of direct reply-to."""

NAME_LIMITS = {"queue": 255, "exchange": 127}
"""The longest queue and exchange names pamqp writes (characters)."""


@functools.lru_cache(maxsize=4096)  # (asked for each delivery's exchange: names repeat)
def carriable(kind: str, name: str) -> bool:
    """Whether the façade's 0-9-1 frames can carry the ``kind`` (``queue``, ``exchange``)
    name ``name`` (pamqp writes only names of its own rule: letters, digits, space and
    -_.:@#,/+, at most :data:`NAME_LIMITS` characters)."""
    return len(name) <= NAME_LIMITS[kind] \
        and pamqp_constants.DOMAIN_REGEX[f"{kind}-name"].fullmatch(name) is not None


class ChannelRefused(Exception):
    """Answer a client's method with channel.close (``code``: a 4xx reply code)."""

    event = "client_error"
    """The log line's event."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


class ConnectionRefused(ChannelRefused):
    """Answer a client's method with connection.close (``code``: a 5xx reply code)."""


class AccessRefused(ChannelRefused):
    """Answer a method the user has no permission for: channel.close 403 ACCESS_REFUSED
    (logged as ``access_refused``)."""

    event = "access_refused"


@dataclass(eq=False)
class Client091:
    """One legacy 0-9-1 application's connection."""

    sock: EngineSocket[Connection]
    user: str | None = None
    virtual_host: str = ""
    publishes_to: set[FacadePublish] = field(default_factory=set)
    channels: dict[int, Channel091] = field(default_factory=dict)
    consumer_tags: int = 0
    """Consumer tags made for consumers that named none (``amq.ctag-N``)."""
    temporary_queues: dict[str, TemporaryQueue] = field(default_factory=dict)
    """Queues this connection declared for itself (server-named, exclusive or
    auto-delete) to bind to a subscription exchange: they end with it, as exclusive
    queues do."""
    blocked: bool = False
    """Not read (a route it publishes to is throttled); told with connection.blocked if
    it announced the capability."""
    binds_pending: int = 0
    """queue.binds of temporary queues whose 1.0 link is not attached yet."""
    held_publishes: deque[tuple[Channel091, MessageReceived]] = field(default_factory=deque)
    """Publishes that came while a bind was pending: a broker executes a connection's
    methods in order, so they wait until the binding exists (else it would miss them);
    the socket is not read while there are any."""
    owner: str = ""
    """The connection's id at the topology backend: its exclusive queues' owner."""
    topology_pending: int = 0
    """Topology-mode methods waiting for the 1.0 broker's answer: what the connection
    sends meanwhile is held (a broker executes a connection's methods in order)."""
    facade_closes: set[int] = field(default_factory=set)
    """Channels (0: the connection) the façade itself closed: counted (or not a client
    error) where it closed them, so their ChannelClosed / ConnectionClosed is not
    counted again as an engine-made close."""

    @property
    def engine(self) -> Connection:
        return self.sock.engine

    @property
    def consumer_links(self) -> int:
        """The 1.0 receivers this connection holds or may bind: its channels' consumers
        (cancelled ones with deliveries unsettled too) and getters, and its temporary
        queues no basic.consume adopted yet (``max_consumers_per_connection`` bounds
        them)."""
        held = sum(len(ch.consumers) + len(ch.cancelled) + len(ch.getters)
                   for ch in self.channels.values())
        return held + sum(1 for t in self.temporary_queues.values()
                          if t.sub is None or not t.sub.adopted)

    @property
    def holding(self) -> int:
        """Publishes held until a bind is answered (the socket is not read meanwhile)."""
        return len(self.held_publishes)


@dataclass(eq=False)
class Channel091:
    """One open channel of a client: its consumers, deliveries and prefetch."""

    number: int
    client: Client091
    consumers: dict[str, Consumer091] = field(default_factory=dict)
    """Active consumers by consumer tag."""
    cancelled: set[Consumer091] = field(default_factory=set)
    """Cancelled consumers (and finished basic.gets) with deliveries not settled yet."""
    getters: dict[str, Consumer091] = field(default_factory=dict)
    """The channel's basic.get receivers by queue (made on the first get)."""
    deliveries: dict[int, Consumer091] = field(default_factory=dict)
    """Our delivery tags not yet settled by the client → the consumer that sent them."""
    prefetch: int = 0
    """basic.qos prefetch-count for consumers started after it (0: no limit)."""
    global_prefetch: int = 0
    """basic.qos global prefetch-count: shared by the channel's consumers (0: no limit)."""
    reply_queue: str | None = None
    """Topology mode: the channel's own queue at the 1.0 broker behind its consumer of
    ``amq.rabbitmq.reply-to`` (direct reply-to), or None."""
    last_declared_queue: str = ""
    """The name the channel's last queue.declare-ok gave (server-named ones too): what an
    empty queue name in a later bind, unbind, purge, delete, consume or get stands for,
    as on RabbitMQ ("" until a declare)."""
    ended: bool = False

    @property
    def live(self) -> bool:
        """The channel is open (not closing) and its connection with it: events the
        engine reported before the channel began closing find it not live."""
        if self.ended:
            return False
        engine = self.client.engine
        chan = engine.channels.get(self.number) if engine.is_open else None
        return chan is not None and chan.state is ChannelState.OPEN

    @property
    def unacked(self) -> int:
        """Deliveries the client has not settled yet."""
        return len(self.deliveries)


__all__ = ["DIRECT_REPLY_TO", "NAME_LIMITS", "AccessRefused", "Channel091", "ChannelRefused", "Client091",
           "ConnectionRefused", "carriable"]
