"""Events the AMQP 0-10 engine reports to the application.

:meth:`Connection.next_event() <amqp010.connection.Connection.next_event>`
returns these, in the order the peer's bytes (and the clock passed to ``tick``)
caused them.  Every event is a small frozen dataclass; events about a session
carry the :class:`~amqp010.session.Session` object itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .base import Command, Struct
from .spec import DeliveryProperties, MessageProperties, MessageTransfer

if TYPE_CHECKING:
    from .session import Session


class Event:
    """Base class of every engine event."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class CredentialsReceived(Event):
    """Server: a client logged in with SASL PLAIN and the authenticator defers the check
    (``SimpleAuthenticator(defer=True)``). Answer with
    :meth:`~amqp010.connection.Connection.finish_authentication`; until then the
    connection waits (nothing is sent to the client)."""

    user: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class ConnectionOpened(Event):
    """The handshake finished: the connection is open (both roles)."""

    virtual_host: str
    peer_properties: dict[str, Any]
    known_hosts: list[str]
    """Client role: the broker's known-hosts (empty in the server role)."""
    user: str | None
    """The authenticated identity (server role), or the name we logged in as (client role)."""


@dataclass(frozen=True, slots=True)
class ConnectionRedirected(Event):
    """Client role: the server answered connection.open with connection.redirect."""

    host: str
    known_hosts: list[str]


@dataclass(frozen=True, slots=True)
class ConnectionClosed(Event):
    """The connection is over; nothing more will be sent or received.

    ``code`` is the close code of a negotiated close (``CloseCode``), or None when
    the transport ended without one (peer vanished, unsupported protocol header,
    handshake failure, heartbeat timeout).
    """

    code: int | None
    text: str
    by_peer: bool
    """True if the peer initiated the close (or dropped the transport)."""


@dataclass(frozen=True, slots=True)
class HeartbeatTimeout(Event):
    """Nothing arrived for more than twice the negotiated heartbeat: the peer is dead."""

    idle: float
    """Seconds since the last received byte."""


@dataclass(frozen=True, slots=True)
class SessionAttached(Event):
    """A session is attached to this connection (``resumed``: it had prior state)."""

    session: Session
    resumed: bool


@dataclass(frozen=True, slots=True)
class SessionDetached(Event):
    """A session left this connection.

    ``code`` is the ``DetachCode`` from the peer's or our detached control, or
    None when the transport dropped (the session can then be resumed).
    """

    session: Session
    code: int | None
    by_peer: bool


@dataclass(frozen=True, slots=True)
class CommandReceived(Event):
    """A model command arrived (anything but message.transfer and execution.*).

    The application must answer it with ``session.complete(command_id, result)``
    or ``session.exception(...)`` unless the session auto-completes.
    """

    session: Session
    command_id: int
    command: Command


@dataclass(frozen=True, slots=True)
class MessageReceived(Event):
    """A message.transfer arrived, reassembled from its frames."""

    session: Session
    command_id: int
    transfer: MessageTransfer
    delivery_properties: DeliveryProperties | None
    message_properties: MessageProperties | None
    body: bytes = field(repr=False)
    header: tuple[Struct, ...] = field(default=(), repr=False)
    """Every header struct, in wire order (includes the two above)."""

    @property
    def destination(self) -> str:
        return self.transfer.destination or ""


@dataclass(frozen=True, slots=True)
class CommandsCompleted(Event):
    """The peer completed commands we sent: ``commands`` are newly completed ids."""

    session: Session
    commands: list[int]


@dataclass(frozen=True, slots=True)
class ResultReceived(Event):
    """execution.result for a command we sent (typed: e.g. ``QueueQueryResult``)."""

    session: Session
    command_id: int
    value: Struct | None


@dataclass(frozen=True, slots=True)
class ExecutionExceptionReceived(Event):
    """The peer raised execution.exception; the session is detached next."""

    session: Session
    error_code: int
    command_id: int | None
    class_code: int | None
    command_code: int | None
    field_index: int | None
    description: str
    error_info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreditChanged(Event):
    """Sender side: the peer changed our credit for ``destination`` (flow, stop,
    set-flow-mode, window re-grant, flush).  A host pushing messages (a broker's
    subscriptions) sends more when it sees this."""

    session: Session
    destination: str


__all__ = [
    "CommandReceived",
    "CommandsCompleted",
    "ConnectionClosed",
    "ConnectionOpened",
    "ConnectionRedirected",
    "CreditChanged",
    "Event",
    "ExecutionExceptionReceived",
    "HeartbeatTimeout",
    "MessageReceived",
    "ResultReceived",
    "SessionAttached",
    "SessionDetached",
]
