"""Events the AMQP 0-9-1 engine reports to the application.

:meth:`Connection.next_event() <amqp091.connection.Connection.next_event>` returns
these in the order the peer's bytes (and the clock passed to ``tick``) caused
them.  Every event is a small frozen dataclass; events about a channel carry its
number.  Methods are pamqp's objects (:mod:`pamqp.commands`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pamqp import commands
from pamqp.base import Frame


class Event:
    """Base class of every engine event."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class CredentialsReceived(Event):
    """Server role: a client presented a login in start-ok. Check it (possibly
    elsewhere, asynchronously) and answer with
    :meth:`~amqp091.connection.Connection.finish_authentication`; until then the
    connection waits (nothing is sent to the client, the handshake timeout runs)."""

    mechanism: str
    """PLAIN, AMQPLAIN or EXTERNAL."""
    user: str
    """The user name, or for EXTERNAL the TLS client certificate's identity."""
    password: str | None = field(default=None, repr=False)
    """None for EXTERNAL."""


@dataclass(frozen=True, slots=True)
class ConnectionOpened(Event):
    """The handshake finished: the connection is open, with these negotiated limits."""

    virtual_host: str
    peer_properties: dict[str, Any]
    channel_max: int
    frame_max: int
    heartbeat: int
    """Seconds; 0: no heartbeat."""
    user: str | None
    """The name we logged in as (client role) / the identity the application accepted
    (server role). ``peer_properties["capabilities"]`` holds the peer's capabilities."""


@dataclass(frozen=True, slots=True)
class ConnectionClosed(Event):
    """The connection is over; nothing more will be sent or received.

    ``code`` is the reply code of a negotiated close (:class:`~amqp091.methods.ReplyCode`),
    or None when the transport ended without one (peer vanished, wrong protocol
    version, heartbeat timeout).  ``class_id``/``method_id`` name the method that
    caused the close, when the closer said so.
    """

    code: int | None
    text: str
    by_peer: bool
    class_id: int = 0
    method_id: int = 0


@dataclass(frozen=True, slots=True)
class ConnectionBlocked(Event):
    """The broker stopped accepting publishes (connection.blocked, e.g. a memory alarm)."""

    reason: str


@dataclass(frozen=True, slots=True)
class ConnectionUnblocked(Event):
    """The broker accepts publishes again (connection.unblocked)."""


@dataclass(frozen=True, slots=True)
class HeartbeatTimeout(Event):
    """Nothing arrived for more than two heartbeat intervals: the peer is dead
    (:class:`ConnectionClosed` follows)."""

    idle: float
    """Seconds since the last received byte."""


@dataclass(frozen=True, slots=True)
class ChannelOpened(Event):
    """channel.open-ok: the channel is ready."""

    channel: int


@dataclass(frozen=True, slots=True)
class ChannelClosed(Event):
    """The channel is closed and its number free again.

    ``by_peer``: the peer sent channel.close (``code``/``text`` are its reply code and
    text, e.g. 404 for a queue that does not exist) — or we did (our code, e.g. 311
    for a message over ``max_message_size``), or the connection ended (``code`` None).
    Publishes not yet confirmed are in ``unconfirmed``: they may or may not have
    reached the broker (server role: publishes received in confirm mode that the
    application has not confirmed).  Server role: ``unacked`` are the delivery tags
    delivered and not yet settled by the client — requeue those messages.
    """

    channel: int
    code: int | None
    text: str
    by_peer: bool
    class_id: int = 0
    method_id: int = 0
    unconfirmed: tuple[int, ...] = ()
    unacked: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class ChannelFlow(Event):
    """The peer sent channel.flow: stop (``active`` False) or resume sending content.
    The engine has answered flow-ok already."""

    channel: int
    active: bool


@dataclass(frozen=True, slots=True)
class MethodReceived(Event):
    """A method with no event of its own: replies (queue.declare-ok, basic.consume-ok,
    basic.qos-ok, basic.get-empty, …), the broker's basic.cancel (consumer cancel
    notification), connection.update-secret-ok (channel 0)."""

    channel: int
    method: Frame


@dataclass(frozen=True, slots=True)
class MessageReceived(Event):
    """A message, reassembled from its method, header and body frames.

    Client role: ``method`` is ``Basic.Deliver`` (a consumer's delivery),
    ``Basic.GetOk`` (the answer to basic.get) or ``Basic.Return`` (an unroutable
    mandatory publish).  Server role: ``Basic.Publish``; in confirm mode
    ``publish_tag`` is the sequence number to confirm it with
    (:meth:`~amqp091.server_calls.ServerCalls.confirm_publish`).
    """

    channel: int
    method: (commands.Basic.Deliver | commands.Basic.GetOk | commands.Basic.Return
             | commands.Basic.Publish)
    properties: commands.Basic.Properties
    body: bytes = field(repr=False)
    publish_tag: int | None = None

    @property
    def delivery_tag(self) -> int | None:
        """The tag to ack / nack / reject (None for a basic.return)."""
        return getattr(self.method, "delivery_tag", None)


@dataclass(frozen=True, slots=True)
class DeliveriesSettled(Event):
    """Server role: the client acked (basic.ack), nacked (basic.nack) or rejected
    (basic.reject) deliveries, or asked for them again (basic.recover with requeue:
    every unacked delivery, ``ack`` False, ``requeue`` True; the basic.recover itself
    follows as :class:`MethodReceived` for the application to answer recover-ok).

    ``delivery_tags`` are the tags ``deliver`` / ``get_ok`` returned, ascending
    (``multiple`` resolved).  A tag not outstanding closes the channel with 406 before
    any event, as RabbitMQ does (``unknown delivery tag``).
    """

    channel: int
    delivery_tags: list[int]
    ack: bool
    requeue: bool
    method: Frame


@dataclass(frozen=True, slots=True)
class PublishConfirmed(Event):
    """Publisher confirms: the broker acked (``ack``) or nacked these publishes.

    ``delivery_tags`` are the tags :meth:`~amqp091.connection.Connection.publish`
    returned, ascending (a ``multiple`` ack resolved to every outstanding tag up to
    the one it names).
    """

    channel: int
    delivery_tags: list[int]
    ack: bool


__all__ = [
    "ChannelClosed",
    "ChannelFlow",
    "ChannelOpened",
    "ConnectionBlocked",
    "ConnectionClosed",
    "ConnectionOpened",
    "ConnectionUnblocked",
    "CredentialsReceived",
    "DeliveriesSettled",
    "Event",
    "HeartbeatTimeout",
    "MessageReceived",
    "MethodReceived",
    "PublishConfirmed",
]
