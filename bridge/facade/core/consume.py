"""Façade consume: a 1.0 address consumed by the legacy subscribers of a façade queue.

:class:`FacadeConsume` is the route both fronts share; each front's subscriber (the
0-10 :class:`~bridge.facade.amqp010.consume.Subscription`, the 0-9-1
:class:`~bridge.facade.amqp091.consume.Consumer091`) has its own 1.0 receiver on the
route's source address (or a temporary queue's, its binding key filled in) and takes
its deliveries through :meth:`FacadeConsume.take_delivery`.  The route bounds what its
subscribers hold (``max_in_flight``: :meth:`FacadeConsume.room_for` shares it out as
link credit), settles the 1.0 deliveries with the outcomes the clients give
(:meth:`FacadeConsume.settle_held`: accepted / rejected / given back, modified with
delivery-failed where the client has seen the message: :mod:`bridge.amqp10.outcomes`)
and keeps the statistics.  A message that arrives when no subscriber wants it is
released, and not flagged redelivered when it comes back (:mod:`bridge.facade.core.unseen`).
A 1.0 message no subscriber can get (unmappable) is
dead-lettered (the routes' :class:`~bridge.routes.deadletter.DeadLetters`) or
rejected: one section of :class:`FacadeConsume` (``-- dead-lettering``).
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from proton import Delivery, symbol
from proton.reactor import Container

from mappings.errors import MappingError
from mappings.message import AmqpMessage

from ...amqp10.link import Amqp10Link
from ...amqp10.outcomes import accept, give_back, reject
from ...config import Route
from ...routes.amqp10_endpoint import redelivered_1_0
from ...routes.deadletter import DeadLetters
from ...routes.refusals import MAPPING_ERROR, log_refused, report_poison
from ...routes.stats import RouteStats
from ...routes.translate import Translator
from ...runtime.containment import Part
from .state import FacadeHost, waiting_for
from .unseen import UnseenReleases

if TYPE_CHECKING:
    from ...taps import RouteTap

T = TypeVar("T")

REJECTED_BY_SUBSCRIBER = symbol("amqp-bridge:rejected-by-subscriber")
"""Condition of a 1.0 reject caused by a client's reject (0-10 message.reject, 0-9-1
basic.reject / basic.nack without requeue)."""


class Subscriber(Protocol):
    """What the route uses of each front's subscriber (one 1.0 receiver link each)."""

    @property
    def exclusive(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    @property
    def cancelled(self) -> bool: ...

    @property
    def link(self) -> Amqp10Link: ...

    @property
    def unsettled(self) -> dict[int, Any]:
        """What the client has and has not settled yet."""

    @property
    def busy(self) -> int:
        """Messages promised (link credit), held and unsettled."""

    def grant(self, route_busy: int | None = None) -> int:
        """Top the link credit up within the route's bound; returns the credit added."""

    def subscriber_credit(self) -> int:
        """The client's credit (for the route's gauge)."""


class HeldMessage(Protocol):
    """A 1.0 delivery mapped for a legacy client (each façade's ``_Held``)."""

    delivery: Delivery | None
    body: bytes
    t0: float
    data: bytes | None


@dataclass(eq=False, slots=True)
class _DeadLetter:
    """An unmappable 1.0 message whose copy is on its way to the dead-letter address."""

    sub: Subscriber
    original: Delivery | None
    """None once void: the link it came on was lost."""


class FacadeConsume:
    """A 1.0 address consumed by legacy subscribers of a façade queue (module docstring)."""

    def __init__(self, container: Container, route: Route, facade: FacadeHost, amqp10: Any,
                 dead_letter: tuple[Any, str] | None, *, register: bool = True) -> None:
        assert route.source.address is not None
        if not register:
            pass  # made on demand by its listener, which keeps it (a topology-mode queue)
        elif route.target.queue is not None:
            facade.add_consume(self, route.target.queue)
        else:  # the exchange temporary queues bind to (docs/semantics.md)
            assert route.target.exchange is not None
            facade.add_exchange_subscription(self, route.target.exchange)
        self.name = route.name
        self.route = route
        self.facade = facade
        self.container = container
        self.amqp10 = amqp10
        self.connection = amqp10.handler
        """The 1.0 connection's handler (``up``, ``name``): read by the metrics thread."""
        self.address = route.source.address
        self.translator = Translator(route)
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        self.subscriptions: set[Subscriber] = set()
        self.bytes_in_flight = 0
        """Body octets of held and unsettled messages."""
        self.paused = False
        self.unseen = UnseenReleases()
        """Fresh messages released with no client having had them (their redelivered
        flag is the bridge's, not an application's: :mod:`bridge.facade.core.unseen`)."""
        self.tap: RouteTap | None = None
        """The route's archive tap (set by the bridge when the route has ``tap``)."""
        self.dead_letters: DeadLetters[_DeadLetter] | None = None
        if dead_letter is not None:
            self.dead_letters = DeadLetters(container, dead_letter[0], dead_letter[1],
                                            route=route, owner=self)

    @property
    def exclusive(self) -> bool:
        return any(s.exclusive for s in self.subscriptions)

    @property
    def busy(self) -> int:
        return sum(s.busy for s in self.subscriptions) + self._dead_letters_pending

    @property
    def pending(self) -> int:
        """Messages a subscriber (or the dead-letter address) has and has not settled yet;
        held ones go back to the 1.0 broker with their link."""
        return sum(len(s.unsettled) for s in self.subscriptions) + self._dead_letters_pending

    def pause(self) -> None:
        """Graceful stop: no more credit, no more transfers; outcomes still settle."""
        self.paused = True
        self.facade.pause()

    @property
    def ready(self) -> bool:
        """The façade listens, the 1.0 connection is open and every subscriber's link is
        attached."""
        return not self.waiting_for()

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (empty when it is); safe from any thread.

        A subscriber's link counts only once it failed (refused, or lost after it was
        up) and only on the route's own address: a link attaching for the first time,
        or a temporary queue's (its address has the client's binding key), is the
        client's affair — clients subscribing and cancelling in a loop must not take
        the bridge out of service for everyone."""
        out = waiting_for(self.facade, [
            s.link for s in tuple(self.subscriptions)
            if not s.closed and s.link.address == self.address
            and (s.link.failures or s.link.up_since)])
        if not self.connection.up:
            out.append(f"1.0 connection {self.connection.name}")
        return out

    def binding_address(self, binding_key: str) -> str:
        """The 1.0 address a temporary queue bound with ``binding_key`` consumes from."""
        return self.address.replace("{binding_key}", binding_key)

    def kept_for_tap(self, data: bytes) -> bytes | None:
        """A delivery's 1.0 bytes, kept with it when the route's tap records what is
        delivered (else None: nothing held for nothing)."""
        tap = self.tap
        return data if tap is not None and tap.wants_delivered else None

    def subscription_link(self, owner: Any, address: str, *, pinned_to: Any = None,
                          browse: bool = False, filters: dict[Any, Any] | None = None,
                          properties: dict[Any, Any] | None = None) -> Amqp10Link:
        """A subscriber's own receiving link on ``address`` (``browse``: a non-destructive
        source; ``filters`` and ``properties``: its source's filter set and the link's
        properties), attached on ``pinned_to`` if given (the 1.0 connection that declared
        an exclusive queue: the only one the broker lets consume it), else on the route's
        connection (any of its pool)."""
        return Amqp10Link(self.container, pinned_to or self.amqp10, address, sender=False,
                          owner=owner, name=f"{self.name}.{uuid.uuid4().hex[:12]}",
                          route=self.name, browse=browse, pinned=pinned_to is not None,
                          filters=filters, properties=properties)

    def take_delivery(self, sub: Any, link: Amqp10Link, delivery: Delivery, wanted: bool,
                      translate: Callable[[AmqpMessage], T]) -> tuple[bytes, T] | None:
        """A message on ``sub``'s link, read and translated: (its 1.0 bytes, what
        ``translate`` made of it) — or None: not complete yet, released (not
        ``wanted``: its subscriber is gone), or unmappable (dead-lettered or rejected)."""
        if not delivery.readable or delivery.partial:
            return None
        receiver = link.link
        data = receiver.recv(delivery.pending) or b""
        receiver.advance()
        self.stats.received += 1
        if not wanted:
            delivery.update(Delivery.RELEASED)  # never seen by anyone
            delivery.settle()
            self.stats.released += 1
            self.unseen.remember(data)
            return None
        if self.tap is not None:
            self.tap.received(data)
        try:
            message = AmqpMessage.decode(data)
            if redelivered_1_0(message.header) and not self.unseen.restore(message):
                self.stats.redelivered += 1
            return data, translate(message)
        except MappingError as exc:
            self.stats.mapping_errors += 1
            self.unmappable(sub, delivery, data, exc)
            sub.grant()
            return None

    def settle_held(self, msg: HeldMessage, state: int, reason: str = "") -> None:
        """The outcome of a message a subscriber (0-10) or consumer (0-9-1) had, for its
        1.0 delivery: ``Delivery.ACCEPTED``; ``REJECTED`` (``reason`` says why); else
        given back — ``MODIFIED``: the client has seen it (delivery-failed, so the
        source marks it redelivered), ``RELEASED``: not."""
        self.bytes_in_flight -= len(msg.body)
        if state == Delivery.ACCEPTED and self.tap is not None:
            self.tap.delivered(msg.data)  # the client has it, whatever became of its link
        delivery = msg.delivery
        if delivery is None:
            pass  # void: its link was lost and the source redelivers it anyway
        elif state == Delivery.ACCEPTED:
            accept(delivery)
            self.stats.delivered += 1
            self.stats.latency.observe(time.monotonic() - msg.t0)
        elif state == Delivery.REJECTED:
            reject(delivery, str(REJECTED_BY_SUBSCRIBER), reason)
            self.stats.rejected += 1
        else:
            give_back(delivery, failed=state == Delivery.MODIFIED)
            self.stats.released += 1

    def settle_unsettled(self, sub: Subscriber, key: int, index: dict[int, Any], state: int,
                         reason: str = "") -> bool:
        """The client's outcome for ``sub``'s delivery ``key`` (a 0-10 transfer id, a 0-9-1
        delivery tag): forgotten by ``sub`` and by ``index`` (its session's or channel's),
        its 1.0 delivery settled (:meth:`settle_held`); a give-back holds the link's new
        credit for a round (:meth:`~bridge.amqp10.link.Amqp10Link.hold_credit`). False if
        ``sub`` had no such delivery unsettled."""
        msg = sub.unsettled.pop(key, None)
        index.pop(key, None)
        if msg is None:
            return False
        if state not in (Delivery.ACCEPTED, Delivery.REJECTED):
            sub.link.hold_credit()  # the message given back comes again first
        self.settle_held(msg, state, reason)
        return True

    def give_back_unsettled(self, sub: Subscriber, index: dict[int, Any]) -> None:
        """``sub``'s session or channel is gone: whatever its client did not settle goes
        back to the 1.0 broker at once, modified (the client may have seen it)."""
        for key, msg in sub.unsettled.items():
            index.pop(key, None)
            self.settle_held(msg, Delivery.MODIFIED)
        sub.unsettled.clear()

    def detach(self, sub: Subscriber, held: deque[Any]) -> None:
        """``sub`` is closed with nothing unsettled (its link carried the outcomes): what it
        ``held`` and never passed on is released, its link detaches (ending the link's
        session) and the route forgets it (:meth:`forget`)."""
        self.release_held(held)
        sub.link.forget()
        self.forget(sub)

    def forget(self, sub: Subscriber) -> None:
        """``sub`` has detached its link for good."""
        self.subscriptions.discard(sub)

    def release_held(self, held: deque[Any]) -> None:
        """Give back to the 1.0 broker what was received for a client and never passed on
        (released: not a failed delivery)."""
        while held:
            msg = held.popleft()
            self.bytes_in_flight -= len(msg.body)
            if msg.delivery is not None:
                msg.delivery.update(Delivery.RELEASED)
                msg.delivery.settle()
                self.stats.released += 1

    def on_tap_ready(self) -> None:
        """The tap's writer caught up: grant credit again."""
        self.grant()

    def room_for(self, window: int, holding: int, busy: int, *, idle: bool) -> int:
        """Link credit a subscription may add: up to its own ``window`` (its prefetch or
        credit; unlimited: the route's bound) less what it is ``holding`` against it, at
        most its fair share of the route's bound, within what the route has left.

        Link credit cannot be taken back (RabbitMQ 3.x leaves a drain unanswered), so a
        subscription that took the route's whole bound would starve the others — a second
        temporary queue bound to the same exchange would never get a message. Hence the
        share (the bound split among the route's subscriptions, for what they are granted
        from now on) and the floor: an ``idle`` subscription (nothing promised, held or
        unsettled) gets one message of credit even when the others have the whole bound,
        so the route can exceed its bound by at most one message per subscription
        (docs/semantics.md)."""
        share = max(1, self.limit_messages // max(1, len(self.subscriptions)))
        room = min(min(window, share) - holding, self.limit_messages - busy)
        if room <= 0 and idle and holding == 0 and window > 0:
            return 1
        return room

    def grant(self) -> None:
        """Room in the route's bound: let every subscription top its link credit up."""
        busy = self.busy
        for sub in list(self.subscriptions):
            busy += sub.grant(busy)
        self.recount()

    def recount(self) -> None:
        """Bring the route's gauges up to date (after transfers, outcomes, credit)."""
        stats = self.stats
        stats.credit = sum(sub.subscriber_credit() for sub in self.subscriptions)
        stats.in_flight = self.pending
        stats.in_flight_bytes = self.bytes_in_flight
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)

    # -- dead-lettering (DeadLetterOwner) -----------------------------------------------------

    @property
    def _dead_letters_pending(self) -> int:
        """Copies on their way to the dead-letter address (waiting or in flight)."""
        return len(self.dead_letters) if self.dead_letters is not None else 0

    def unmappable(self, sub: Subscriber, delivery: Delivery, data: bytes,
                   exc: MappingError) -> None:
        """A 1.0 message no subscriber can get: dead-letter it, or reject it."""
        reason = f"cannot translate: {exc}"
        dead_letters = self.dead_letters
        log_refused(self.name, reason, dead_lettered=dead_letters is not None)
        if dead_letters is None:
            reject(delivery, str(MAPPING_ERROR), reason)
            self.stats.rejected += 1
            return
        dead_letters.put(_DeadLetter(sub, delivery), data, reason)

    def link_lost(self, sub: Subscriber, held: deque[Any]) -> None:
        """``sub``'s link is lost: what came on it is void (the source redelivers it).
        Its ``held`` messages (not yet sent to the client) leave the route's byte count,
        the client's outcome for those it has goes nowhere now, and its messages on their
        way to the dead-letter address are forgotten."""
        for msg in held:
            self.bytes_in_flight -= len(msg.body)
        held.clear()
        for msg in sub.unsettled.values():
            msg.delivery = None
        self.forget_dead_letters(sub)

    def forget_dead_letters(self, sub: Subscriber) -> None:
        """``sub``'s link is lost: its messages on their way to the dead-letter address
        are void (the source redelivers them)."""
        if self.dead_letters is not None:
            for entry in self.dead_letters.items():
                if entry.sub is sub:
                    entry.original = None

    def dead_lettered(self, entry: _DeadLetter) -> None:
        if entry.original is None:
            return
        accept(entry.original)
        self.stats.dead_lettered += 1
        self.grant()

    def dead_letter_refused(self, entry: _DeadLetter, delivery: Delivery) -> None:
        if entry.original is None:
            return
        give_back(entry.original, failed=False)
        self.stats.released += 1
        self.grant()

    def dead_letters_void(self, items: list[_DeadLetter], culprit: _DeadLetter | None,
                          link: Amqp10Link) -> bool:
        # copies in flight may or may not have arrived: have the originals redelivered
        for entry in items:
            if entry.original is not None:
                give_back(entry.original, failed=False)
                self.stats.released += 1
        if culprit is not None and culprit.original is not None:
            # the address ended its link over this copy too often: refuse the original
            reason = report_poison(self.route, self.stats, link)
            condition = str(link.refusal.name) if link.refusal is not None \
                else "amqp:internal-error"
            reason = f"{reason} (as a dead-letter copy)"
            log_refused(self.name, reason, dead_lettered=False)
            reject(culprit.original, condition, reason)
            self.stats.rejected += 1
        return False

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in the route's own work is logged."""
        return Part("route", f"route {self.name}", {"route": self.name}, "logged")


__all__ = ["REJECTED_BY_SUBSCRIBER", "FacadeConsume", "HeldMessage", "Subscriber"]
