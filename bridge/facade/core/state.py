"""What both fronts keep beside their own connection state: temporary queues, and the
routes' view of their listener.

A :class:`TemporaryQueue` is a queue a client declared for itself to bind to one of the
façade's subscription exchanges (0-10 and 0-9-1 alike; :func:`server_named_queue` names
one declared without a name).  :class:`FacadeHost` is what the routes see of their
listener; :func:`waiting_for` is the routes' shared 1.0-link helper.  Each front keeps
its own per-connection state beside these (:mod:`bridge.facade.amqp010.state`,
:mod:`bridge.facade.amqp091.state`).
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ...amqp10.link import Amqp10Link
from ...runtime import EngineSocket
from ...runtime.containment import Part

if TYPE_CHECKING:
    from .consume import FacadeConsume
    from .publish import FacadePublish


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
    (:meth:`~bridge.facade.core.consume.FacadeConsume.binding_address`)."""

    name: str
    binding: tuple[str, str] | None = None
    """(exchange, binding key)."""
    sub: Any = None
    """Its subscription (0-10 :class:`~bridge.facade.amqp010.consume.Subscription`, 0-9-1
    :class:`~bridge.facade.amqp091.consume.Consumer091`), made (and its 1.0 link attached)
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


__all__ = ["AlreadyBound", "FacadeHost", "TemporaryQueue", "server_named_queue", "waiting_for"]
