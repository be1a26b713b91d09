"""What the façade keeps per client connection and per 0-10 session, shared by its roles.

The listener (:mod:`~bridge.facade.listener`) makes a :class:`Client` per accepted
connection and a :class:`SessionState` per attached session; the command model
(:mod:`~bridge.facade.commands`), the publish and the consume routes read and update
them.  A command handler that completes its command later (once a 1.0 link is
attached, a flush's grace is over) returns :data:`LATER`; one the façade answers with
an execution.exception raises :class:`Refused`.  :class:`FacadeHost` is what the
routes see of their listener; :func:`waiting_for` is the routes' shared 1.0-link
helper.
"""

from __future__ import annotations

import base64
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from amqp010.events import MessageReceived
from amqp010.session import Session

from ..amqp10.link import Amqp10Link
from ..runtime import EngineSocket
from ..runtime.containment import Part

if TYPE_CHECKING:
    from .consume import FacadeConsume, Subscription
    from .publish import FacadePublish


class Refused(Exception):
    """A model command the façade answers with execution.exception."""

    event = "command_refused"
    """The log line's event."""

    def __init__(self, code: int, text: str, field_index: int | None = None) -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.field_index = field_index


class AccessRefused(Refused):
    """A command the user has no permission for (execution.exception unauthorized-access,
    logged as ``access_refused``)."""

    event = "access_refused"


class Later:
    """Returned by a command handler that completes the command itself, later."""


LATER = Later()


# --- per-connection and per-session state --------------------------------------------------


@dataclass(eq=False)
class Client:
    """One legacy application's connection."""

    sock: EngineSocket
    user: str | None = None
    publishes_to: set[FacadePublish] = field(default_factory=set)
    holding: int = 0
    """Publishes its sessions hold while a bind is pending: the socket is not read
    while there are any (what a client sends meanwhile stays in the kernel's buffers)."""


class AlreadyBound(Exception):
    """A second binding of a temporary queue (the façade serves one per queue)."""


def server_named_queue() -> str:
    """A name for a queue declared without one, in RabbitMQ's style (``amq.gen-…``)."""
    return "amq.gen-" + base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass(eq=False)
class TemporaryQueue:
    """A queue a client declared for itself (exclusive or auto-delete, or server-named)
    to bind to one of the façade's subscription exchanges (both protocols): its
    subscriber consumes from that route's address with the binding key filled in
    (:meth:`~bridge.facade.consume.FacadeConsume.binding_address`)."""

    name: str
    binding: tuple[str, str] | None = None
    """(exchange, binding key)."""
    sub: Any = None
    """Its subscription (0-10 :class:`~bridge.facade.consume.Subscription`, 0-9-1
    :class:`~bridge.facade091.consume.Consumer091`), made (and its 1.0 link attached)
    when it was bound: from then on the 1.0 broker keeps what is published for it, as a
    bound queue does."""

    def bind(self, exchange: str, key: str) -> bool:
        """Record the binding: True if it is new (the caller subscribes), False if the
        queue has exactly this binding already; :class:`AlreadyBound` if it has another."""
        if self.binding == (exchange, key):
            return False
        if self.binding is not None:
            raise AlreadyBound(f"queue {self.name!r} is bound already; the façade serves "
                               f"one binding per temporary queue")
        self.binding = (exchange, key)
        return True

    def unbind(self, exchange: str, key: str) -> bool:
        """Remove the binding if it is (``exchange``, ``key``) and nobody consumes from the
        queue yet: True if the caller should end :attr:`sub` (the link goes)."""
        if self.binding != (exchange, key) or self.sub is None or self.consuming:
            return False
        self.binding = None
        return True

    @property
    def consuming(self) -> bool:
        """A subscriber has taken the queue's subscription."""
        return self.sub is not None and self.sub.adopted


@dataclass(eq=False)
class SessionState:
    """What the façade keeps for one attached 0-10 session."""

    session: Session
    client: Client
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    temporary_queues: dict[str, TemporaryQueue] = field(default_factory=dict)
    """Queues this session declared to bind to an exchange (they end with it)."""
    binds_pending: int = 0
    """exchange.binds of temporary queues whose 1.0 link is not attached yet."""
    held_publishes: deque[MessageReceived] = field(default_factory=deque)
    """Publishes that came after a pending bind: a broker executes a session's commands
    in order, so they wait until the binding exists (else it would miss them)."""
    cancelled: set[Subscription] = field(default_factory=set)
    """Cancelled subscriptions whose transfers are not all settled yet: they still end
    (and give their messages back) with the session."""
    transfers: dict[int, Subscription] = field(default_factory=dict)
    """Our message.transfer ids not yet settled → the subscription that sent them."""
    owner: str | None = None
    """Topology mode: the session's id at the backend, the owner of its exclusive queues."""
    topology_pending: int = 0
    """Topology mode: commands waiting for the 1.0 broker's answer."""
    held_events: deque[Any] = field(default_factory=deque)
    """Topology mode: commands and transfers that came while a command was pending (a
    broker executes a session's commands in order); dispatched once none is."""
    failed_at: int | None = None
    """The command the session's execution.exception named: held commands after it are
    never executed (as the engine withdraws those it still queues)."""
    ended: bool = False

    @property
    def live(self) -> bool:
        return not self.ended and self.session.attached

    @property
    def links(self) -> int:
        """The 1.0 receivers this session holds: its subscriptions (cancelled ones with
        transfers unsettled too) and its bound temporary queues nobody subscribed to yet
        (the listener's ``max_consumers_per_connection`` bounds them per connection)."""
        return len(self.subscriptions) + len(self.cancelled) + sum(
            1 for t in self.temporary_queues.values() if t.sub is not None and not t.consuming)


class FacadeHost(Protocol):
    """What a façade route uses of its listener (:class:`~bridge.facade.Facade`)."""

    name: str
    stopping: bool

    @property
    def listening(self) -> bool: ...

    def add_publish(self, route: FacadePublish, exchange: str) -> None: ...

    def add_consume(self, route: FacadeConsume, queue: str) -> None: ...

    def add_exchange_subscription(self, route: FacadeConsume, exchange: str) -> None: ...

    def pause(self) -> None: ...

    def flush_later(self, sock: EngineSocket) -> None: ...

    def publish_refused(self, peer: str, reason: str, route: str | None = None) -> None: ...

    def publish_unroutable(self, peer: str, exchange: str, routing_key: str,
                           outcome: str) -> None: ...

    def update_reading(self) -> None: ...

    def bound(self, st: Any) -> None:
        """A temporary queue's pending bind is over: what the session (0-10) or client
        connection (0-9-1) ``st`` published meanwhile goes on."""

    def socket_fault_part(self, sock: EngineSocket) -> Part: ...


def waiting_for(facade: FacadeHost, links: list[Amqp10Link]) -> list[str]:
    out = [] if facade.listening else [f"façade {facade.name} listening"]
    out += [f"1.0 link to {link.node} on {link.connection_name}"
            + (f" (last refused: {link.last_error})" if link.last_error else "")
            for link in links if not link.up]
    return out


__all__ = ["LATER", "AccessRefused", "AlreadyBound", "Client", "FacadeHost", "Later", "Refused", "SessionState", "TemporaryQueue",
           "server_named_queue", "waiting_for"]
