"""One dead-letter component for every route: queue, send, outcome.

Theory of operation
-------------------
A route with a ``dead_letter`` address sends a copy of each message it refuses there
(annotated with the route and the reason, :func:`~bridge.routes.refusals.dead_letter_copy`)
and settles the original at its source only with the copy's outcome:

* :meth:`DeadLetters.put` queues the copy; copies are sent while the dead-letter
  link is up, has credit, and fewer than the route's window are in flight (one at a
  time while the address is being probed for poison, :mod:`bridge.amqp10.poison`);
* the address *accepted* the copy → the owner's :meth:`~DeadLetterOwner.dead_lettered`
  (settle the original as done); any other outcome →
  :meth:`~DeadLetterOwner.dead_letter_refused` (give the original back, or refuse it);
* the link is lost with copies in flight → :meth:`~DeadLetterOwner.dead_letters_void`
  with them, in order, and the one the address ended its link over too often (the
  owner refuses that original at its source by its own rules). The owner either
  gives the originals back to their source, or answers True to have the copies sent
  again, in order, ahead of those waiting.

The item type ``T`` is the owner's record of the original (a 0-10 message taken, a
1.0 delivery received, a façade publish); this component never looks inside it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, Protocol, TypeVar

from proton import Delivery
from proton.reactor import Container

from mappings.errors import MappingError
from mappings.message import AmqpMessage

from ..amqp10.link import Amqp10Link
from ..config import Route
from .amqp10_endpoint import Amqp10Target
from .refusals import dead_letter_copy

T = TypeVar("T")


def _itself(item: Any) -> Hashable:
    return item  # type: ignore[no-any-return]


class DeadLetterOwner(Protocol[T]):
    """What a route using :class:`DeadLetters` implements."""

    def dead_lettered(self, item: T) -> None:
        """The dead-letter address accepted ``item``'s copy: settle the original as done."""

    def dead_letter_refused(self, item: T, delivery: Delivery) -> None:
        """The address settled the copy otherwise (``delivery.remote_state``: released,
        modified or rejected, with ``delivery.remote.condition``)."""

    def dead_letters_void(self, items: list[T], culprit: T | None,
                          link: Amqp10Link) -> bool:
        """The dead-letter link is lost with ``items``' copies in flight (their outcomes
        never come); ``culprit`` (not in ``items``) is the one whose copy the address
        ended its link over too often (``link.refusal``). True: send those copies again
        once the link is back; False: forgotten (the owner gave the originals back)."""


class DeadLetters(Generic[T]):
    """A route's dead-letter address: copies waiting, in flight, and their outcomes."""

    def __init__(self, container: Container, connection: Any, address: str, *, route: Route,
                 owner: DeadLetterOwner[T], suspect: Callable[[T], Hashable] = _itself,
                 window: Callable[[], int] | None = None) -> None:
        """``suspect``: an item's poison key (stable across redeliveries); ``window``:
        how many copies may be in flight now (default: the route's
        ``max_in_flight.messages``)."""
        self.route = route.name
        self.owner = owner
        self.limit = route.max_in_flight.messages
        self.room = window
        self.waiting: deque[tuple[T, bytes]] = deque()
        """Copies waiting for the link to come (back) up, or for credit."""
        self.target: Amqp10Target[tuple[T, bytes]] = Amqp10Target(
            container, connection, address, owner=self, name=f"{route.name}.dead-letter",
            route=route.name, poison_attempts=route.poison_attempts,
            suspect=lambda entry: suspect(entry[0]))

    @property
    def link(self) -> Amqp10Link:
        return self.target.link

    @property
    def in_flight(self) -> int:
        """Copies sent and not yet settled by the address."""
        return len(self.target.in_flight)

    def __len__(self) -> int:
        """Copies not yet settled by the address (waiting or in flight)."""
        return len(self.waiting) + len(self.target.in_flight)

    def items(self) -> Iterator[T]:
        """Every item whose copy is waiting or in flight."""
        for item, _ in self.waiting:
            yield item
        for item, _ in self.target.in_flight.values():
            yield item

    def put(self, item: T, message: AmqpMessage | bytes, reason: str) -> None:
        """Dead-letter ``message`` (a decoded message, or encoded 1.0 bytes) for ``item``
        with ``reason``. Bytes that do not even decode are forwarded as they came."""
        if isinstance(message, AmqpMessage):
            copy = dead_letter_copy(message, self.route, reason)
        else:
            try:
                copy = dead_letter_copy(AmqpMessage.decode(message), self.route, reason)
            except MappingError:
                copy = message
        self.waiting.append((item, copy))
        self.flush()

    def discard(self, match: Callable[[T], bool]) -> list[T]:
        """Drop the waiting copies of the items ``match`` selects; returns those items."""
        gone = [item for item, _ in self.waiting if match(item)]
        if gone:
            kept = [entry for entry in self.waiting if not match(entry[0])]
            self.waiting.clear()
            self.waiting.extend(kept)
        return gone

    def flush(self) -> None:
        """Send waiting copies within the link's credit and the window."""
        target = self.target
        waiting = self.waiting
        limit = self.room() if self.room is not None else self.limit
        window = min(limit, target.window(limit))  # 1 while probing, within the window
        while waiting and target.link.up and target.link.credit > 0 \
                and len(target.in_flight) < window:
            entry = waiting.popleft()
            target.send(entry, entry[1])

    def close(self) -> None:
        """Detach the dead-letter link for good."""
        self.target.close()

    # -- TargetOwner -----------------------------------------------------------------

    def on_target_ready(self) -> None:
        self.flush()

    def on_outcome(self, entry: tuple[T, bytes], delivery: Delivery) -> None:
        if delivery.remote_state == Delivery.ACCEPTED:
            self.owner.dead_lettered(entry[0])
        else:
            self.owner.dead_letter_refused(entry[0], delivery)
        self.flush()

    def on_void(self, entries: list[tuple[T, bytes]], culprit: tuple[T, bytes] | None,
                link: Amqp10Link) -> None:
        again = self.owner.dead_letters_void([item for item, _ in entries],
                                             culprit[0] if culprit is not None else None, link)
        if again:
            self.waiting.extendleft(reversed(entries))


__all__ = ["DeadLetterOwner", "DeadLetters"]
