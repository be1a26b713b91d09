"""A route's AMQP 1.0 side: a target it sends to, or a source it takes from.

Theory of operation
-------------------
:class:`Amqp10Target` is a sender :class:`~bridge.amqp10.link.Amqp10Link` plus what
every route sending to 1.0 needs: the items in flight by delivery, and a
:class:`~bridge.amqp10.poison.PoisonGuard`. It owns its link; its owner (a route, or the
dead-letter component) hears of the sender being ready, of each item's outcome, and
of the items made void by a lost link, with the one to convict as poison when the
peer's refusal proves it (:class:`TargetOwner`).

:class:`Amqp10Source` is a receiver link whose credit is granted up to the route's
bound (with RabbitMQ 3.10's credit quirk accounted for); its owner gets each
complete message's bytes (:class:`SourceOwner`) and settles the deliveries with the
one outcome rule of :mod:`bridge.amqp10.outcomes`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, Protocol, TypeVar

from cproton import pn_delivery_remote_state, pn_delivery_settle
from proton import Delivery
from proton.reactor import Container

from mappings.message import Header

from ..amqp10.link import Amqp10Link
from ..amqp10.poison import PoisonGuard

T = TypeVar("T")


def redelivered_1_0(header: Header) -> bool:
    """Whether a received 1.0 message is flagged redelivered: delivery-count > 0, or
    first-acquirer false (RabbitMQ 3.10 marks redeliveries so, delivery-count staying 0)."""
    return bool(header.delivery_count) or header.first_acquirer is False


def _itself(item: Any) -> Hashable:
    return item  # type: ignore[no-any-return]


class TargetOwner(Protocol[T]):
    """What the owner of an :class:`Amqp10Target` implements."""

    def on_target_ready(self) -> None:
        """The sender is attached (again) or got credit: send what waits."""

    def on_outcome(self, item: T, delivery: Delivery) -> None:
        """The target settled ``item`` (``delivery.remote_state``); the delivery is
        settled locally right after this returns."""

    def on_void(self, items: list[T], culprit: T | None,
                link: Amqp10Link) -> None:
        """The sender is lost with ``items`` in flight (their outcomes never come), in
        the order they were sent; ``culprit`` is one of them (not in ``items``) the peer
        ended the link over too often: settle it as poison (``link.refusal`` says why)."""


class Amqp10Target(Generic[T]):
    """A 1.0 sender with the route's items in flight on it and its poison guard."""

    def __init__(self, container: Container, connection: Any, address: str | None, *,
                 owner: TargetOwner[T], name: str, route: str, poison_attempts: int,
                 suspect: Callable[[T], Hashable] = _itself) -> None:
        self.owner = owner
        self.in_flight: dict[Any, T] = {}
        """The items sent and not settled yet, by their C delivery (a cffi pointer: it hashes
        by address at a twelfth of the cost of a proton wrapper, which hashes through a
        cffi call); the C delivery lives, unsettled, on its link until the outcome."""
        self.poison = PoisonGuard(poison_attempts)
        self.suspect = suspect
        """An item's poison key, the same across redeliveries of its message."""
        self.link = Amqp10Link(container, connection, address, sender=True, owner=self,
                               name=name, route=route)

    @property
    def up(self) -> bool:
        return self.link.up

    @property
    def credit(self) -> int:
        return self.link.credit

    def window(self, limit: int) -> int:
        """Items to keep in flight at most: 1 while probing for poison, else ``limit``."""
        return self.poison.window(limit)

    def send(self, item: T, data: bytes) -> None:
        """Send ``item``'s encoded message unsettled (only while :attr:`up`)."""
        self.in_flight[self.link.send(data)] = item

    def close(self) -> None:
        """Detach for good."""
        self.link.close()

    # -- LinkOwner -------------------------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        self.owner.on_target_ready()

    def on_credit(self, link: Amqp10Link) -> None:
        self.owner.on_target_ready()

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        impl = delivery._impl
        state = pn_delivery_remote_state(impl)
        if not state:
            return
        item = self.in_flight.pop(impl, None)
        if item is not None:
            if self.poison.probe and state == Delivery.ACCEPTED:
                self.poison.accepted(self.suspect(item))
            self.owner.on_outcome(item, delivery)
        pn_delivery_settle(impl)  # delivery.settle(), without its Python layer

    def on_link_down(self, link: Amqp10Link) -> None:
        # what was in flight may or may not have arrived; unless the peer ended the link
        # over one of them once too often (bridge.amqp10.poison), the owner sends it again
        lost = self.in_flight
        culprit: T | None = None
        if link.refusal is not None and lost:
            link.explained = True
            suspect = self.suspect
            key = self.poison.refused(suspect(item) for item in lost.values())
            if key is not None:
                culprit = next((item for item in lost.values() if suspect(item) == key), None)
        items = [item for item in lost.values() if item is not culprit]
        lost.clear()
        self.owner.on_void(items, culprit, link)


class SourceOwner(Protocol):
    """What the owner of an :class:`Amqp10Source` implements."""

    def on_source_up(self) -> None:
        """The receiver is attached (again): grant credit."""

    def on_source_down(self) -> None:
        """The receiver is lost: the deliveries taken on it are void (the source
        redelivers them); never settle them."""

    def on_received(self, delivery: Delivery, data: bytes) -> None:
        """A complete message arrived (``data``: its encoded bytes), unsettled."""


class Amqp10Source:
    """A 1.0 receiver whose credit the route grants up to its in-flight bound."""

    def __init__(self, container: Container, connection: Any, address: str, *,
                 owner: SourceOwner, name: str, route: str) -> None:
        self.owner = owner
        self.link = Amqp10Link(container, connection, address, sender=False, owner=self,
                               name=name, route=route)

    @property
    def up(self) -> bool:
        return self.link.up

    def grant(self, busy: int, limit: int) -> None:
        """Top the link's credit up so that ``busy`` (messages the route holds) plus what
        is on its way stays within ``limit``; in batches of a quarter of it."""
        receiver = self.link.link
        # RabbitMQ 3.10 counts a top-up against its own delivery count, which lags behind
        # the messages already on their way to us: it may send the credit still
        # outstanding once more (see Amqp10Link.add_credit). Counting that credit twice
        # keeps the window.
        busy += receiver.queued + 2 * max(receiver.credit, 0)
        room = limit - busy
        if room >= max(1, limit // 4) or (room > 0 and busy == 0):
            self.link.add_credit(room)

    # -- LinkOwner -------------------------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        self.owner.on_source_up()

    def on_link_down(self, link: Amqp10Link) -> None:
        self.owner.on_source_down()

    def on_credit(self, link: Amqp10Link) -> None:
        pass  # a receiver's credit is ours to give

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        if not delivery.readable or delivery.partial:
            return
        receiver = link.link
        data = receiver.recv(delivery.pending)
        receiver.advance()
        self.owner.on_received(delivery, data)


__all__ = ["Amqp10Source", "Amqp10Target", "SourceOwner", "TargetOwner", "redelivered_1_0"]
