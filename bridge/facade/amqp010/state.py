"""What the 0-10 front keeps per client connection and per 0-10 session.

The listener (:mod:`~bridge.facade.amqp010.listener`) makes a :class:`Client` per accepted
connection and a :class:`SessionState` per attached session; the command model
(:mod:`~bridge.facade.amqp010.commands`), the publish and the consume routes read and
update them.  A command handler that completes its command later (once a 1.0 link is
attached, a flush's grace is over) returns :data:`LATER`; one the façade answers with
an execution.exception raises :class:`Refused`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from amqp010.events import MessageReceived
from amqp010.session import Session

from ...runtime import EngineSocket
from ..core.state import TemporaryQueue

if TYPE_CHECKING:
    from ..core.publish import FacadePublish
    from .consume import Subscription


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
    """One 0-10 application's connection."""

    sock: EngineSocket
    user: str | None = None
    publishes_to: set[FacadePublish] = field(default_factory=set)
    holding: int = 0
    """Publishes its sessions hold while a bind is pending: the socket is not read
    while there are any (what a client sends meanwhile stays in the kernel's buffers)."""


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


__all__ = ["LATER", "AccessRefused", "Client", "Later", "Refused", "SessionState"]
