"""Façade consume: a 1.0 address consumed by legacy subscribers of a façade queue.

Every ``message.subscribe`` to the route's queue (or to a temporary queue bound to
the route's exchange) is a :class:`Subscription` with its own 1.0 receiver on the
route's source address; the receiver's link credit follows the subscription's 0-10
message credit (credit or window mode; byte credit is honoured before each
transfer, a flush waits ``FLUSH_GRACE`` for what link credit already promised);
accept / reject / release settle the 1.0 delivery as accepted / rejected / released
(modified with delivery-failed when set-redelivered and the source supports it:
:mod:`bridge.amqp10.outcomes`); what the subscriber leaves unsettled when it goes away is
given back to the 1.0 broker.  A message that arrives when no subscriber wants it is
released, and not flagged redelivered when it comes back (:mod:`bridge.facade.core.unseen`).
A 1.0 message no subscriber can get (unmappable) is
dead-lettered (the routes' :class:`~bridge.routes.deadletter.DeadLetters`) or
rejected: one section of :class:`FacadeConsume` (``-- dead-lettering``).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from proton import Delivery, symbol
from proton.reactor import Container

from amqp010.base import Command, Struct
from amqp010.codec import encode_header
from amqp010.spec import AcceptMode, AcquireMode, ErrorCode, ExchangeBind
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
from ...runtime import EngineSocket, Timer
from ...runtime.containment import Part
from .state import LATER, FacadeHost, Later, SessionState, waiting_for
from .unseen import UnseenReleases

if TYPE_CHECKING:
    from ...taps import RouteTap

log = logging.getLogger("bridge.facade")  # the façade's one logger

T = TypeVar("T")

REJECTED_BY_SUBSCRIBER = symbol("amqp-bridge:rejected-by-subscriber")
"""Condition of a 1.0 reject caused by a 0-10 subscriber's message.reject."""
FLUSH_GRACE = 0.05
"""Seconds a message.flush waits for messages already promised by 1.0 link credit."""
SUBSCRIBE_TIMEOUT = 10.0
"""Seconds a message.subscribe waits for its 1.0 link before it fails with not-found."""


class HeldMessage(Protocol):
    """A 1.0 delivery mapped for a legacy client (each façade's ``_Held``)."""

    delivery: Delivery | None
    body: bytes
    t0: float
    data: bytes | None


@dataclass(eq=False, slots=True)
class _Held:
    """A 1.0 delivery mapped for the subscriber (waiting for credit, or transferred)."""

    delivery: Delivery | None
    """None once void: the link it came on was lost, and the source redelivers it."""
    header: tuple[Struct, ...]
    body: bytes
    cost: int
    """What the transfer takes from byte credit: header segment plus body octets."""
    t0: float = 0.0
    """When the 1.0 delivery arrived (``time.monotonic()``), for the latency histogram."""
    data: bytes | None = None
    """The 1.0 message as received, kept when the route's tap records deliveries."""


class Subscription:
    """One 0-10 subscription to a façade queue and its own 1.0 receiver link."""

    def __init__(self, route: FacadeConsume, st: SessionState, destination: str | None,
                 accept_mode: AcceptMode, exclusive: bool, *, queue: str, address: str,
                 browse: bool = False) -> None:
        self.route = route
        self.st = st
        self.destination = destination
        self.accept_mode = accept_mode
        self.exclusive = exclusive
        self.held: deque[_Held] = deque()
        """Received from 1.0, not yet transferred (waiting for 0-10 credit)."""
        self.unsettled: dict[int, _Held] = {}
        """Transferred to the subscriber, not yet accepted/rejected/released."""
        self.flushes: list[int] = []
        self.waiting_for_link: list[tuple[int, Command]] = []
        """Commands to complete once the link is attached (message.subscribe, or the
        exchange.bind that opened a temporary queue's link)."""
        self.typical_cost = 1024
        """Running estimate of a transfer's byte-credit cost (sizes 1.0 link credit)."""
        self.cancelled = False
        self.closed = False
        self.queue = queue
        self.acquire_mode = AcquireMode.NOT_ACQUIRED if browse else AcquireMode.PRE_ACQUIRED
        """How its messages are transferred: not-acquired when it browses (its 1.0 source
        has distribution-mode copy: the messages stay on the queue)."""
        self.link = Amqp10Link(route.container, route.amqp10, address, sender=False,
                               owner=self, name=f"{route.name}.{uuid.uuid4().hex[:12]}",
                               route=route.name, browse=browse)

    @property
    def adopted(self) -> bool:
        """A subscriber took this subscription (a temporary queue's is made unadopted at
        its bind, and adopted by the message.subscribe to the queue)."""
        return self.destination is not None

    @property
    def client_socket(self) -> EngineSocket:
        """The subscriber's connection (what a fault of this subscription closes)."""
        return self.st.client.sock

    @property
    def busy(self) -> int:
        """Messages promised (link credit), held and unsettled: the route's in-flight share."""
        return self.link.promised + len(self.held) + len(self.unsettled)

    def subscriber_credit(self) -> int:
        """The subscriber's message credit (unlimited counts as the route's bound)."""
        credit = self._credit()
        if credit is None:
            return 0
        return self.route.limit_messages if credit.messages is None else credit.messages

    def _credit(self) -> Any:
        """The 0-10 credit the subscriber granted (None once cancelled or gone)."""
        if self.cancelled or not self.st.live or self.destination is None:
            return None
        return self.st.session.outgoing_credit.get(self.destination)

    # -- 1.0 credit follows 0-10 credit -------------------------------------------------------

    def grant(self, route_busy: int | None = None) -> int:
        """Bring the link credit to what the subscriber's credit and the route allow
        (``route_busy``: the route's :attr:`~FacadeConsume.busy`, if known); returns
        the credit added.

        Link credit is never taken back (RabbitMQ 3.x leaves a drain unanswered and
        stalls the session): what it still brings after a message.stop waits here
        for new 0-10 credit."""
        if self.closed or not self.link.up:
            return 0
        credit = self._credit()
        route = self.route
        if credit is None or route.paused or credit.messages == 0 or credit.bytes == 0:
            return 0
        if route.tap is not None and route.tap.backpressured:
            return 0  # the archive writer is behind: take nothing more for now
        wanted = route.limit_messages if credit.messages is None else credit.messages
        if credit.bytes is not None:
            # 1.0 has no byte credit: promise what the byte credit likely covers (from the
            # sizes seen so far), at least one message so a large one can still get through
            wanted = min(wanted, max(1, credit.bytes // self.typical_cost))
        busy = route.busy if route_busy is None else route_busy
        room = route.room_for(wanted, len(self.held) + self.link.promised, busy,
                              idle=not self.unsettled)
        if room <= 0 or route.bytes_in_flight >= route.limit_bytes:
            return 0
        self.link.add_credit(room)
        return room

    def on_subscriber_credit(self) -> None:
        """The subscriber changed its credit (flow, stop, flow mode, window re-grant)."""
        self.pump()
        self.grant()
        self.route.recount()

    def flush(self, cid: int) -> bool:
        """message.flush: True if completed now, False if it completes shortly.

        It completes once what is available has been transferred.  What the 1.0
        broker has is known only by draining the link, which RabbitMQ 3.x does not
        answer, so messages already promised by link credit get ``FLUSH_GRACE`` to
        arrive (the broker sends them at once when it has them); a flush of a
        subscription whose link is still attaching waits for it first.
        """
        self.pump()
        credit = self._credit()
        link = self.link
        if credit is None or credit.messages == 0 or credit.bytes == 0 or self.closed:
            return True
        attaching = not link.up and bool(self.waiting_for_link)
        if not attaching and (not link.up or link.credit == 0):
            return True  # nothing is on its way
        self.flushes.append(cid)
        if link.up and len(self.flushes) == 1:
            self.route.container.schedule(FLUSH_GRACE, Timer(self._finish_flushes))
        return False

    def _finish_flushes(self) -> None:
        self.pump()
        self._complete_flushes()
        self.route.facade.flush_later(self.st.client.sock)

    def _complete_flushes(self) -> None:
        for cid in self.flushes:
            if self.st.live:
                self.st.session.complete(cid)
        self.flushes.clear()

    # -- Amqp10Link owner -------------------------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        if self.waiting_for_link:
            waiting, self.waiting_for_link = self.waiting_for_link, []
            if self.st.live:
                for cid, command in waiting:
                    self.st.session.complete(cid)
                    if isinstance(command, ExchangeBind):
                        self.route.facade.bound(self.st)
                self.route.facade.flush_later(self.st.client.sock)
        self.grant()
        if self.flushes:
            self.route.container.schedule(FLUSH_GRACE, Timer(self._finish_flushes))

    def complete_when_attached(self, cid: int, command: Command) -> Later | None:
        """Complete ``cid`` (message.subscribe, exchange.bind) once the 1.0 link is
        attached — now if it is; raise an exception if it is not within
        ``SUBSCRIBE_TIMEOUT``."""
        if self.link.up:
            return None
        self.waiting_for_link.append((cid, command))
        self.route.container.schedule(SUBSCRIBE_TIMEOUT, Timer(self._subscribe_timeout))
        return LATER

    def _subscribe_timeout(self) -> None:
        if not self.waiting_for_link or not self.st.live:
            return
        (cid, command), *_ = self.waiting_for_link
        self.waiting_for_link = []
        self.st.session.exception(
            ErrorCode.NOT_FOUND, cid, f"the AMQP 1.0 source {self.link.address} did not "
            f"attach within {SUBSCRIBE_TIMEOUT:.0f}s", command=command)
        self.route.facade.flush_later(self.st.client.sock)

    def adopt(self, destination: str, accept_mode: AcceptMode, exclusive: bool) -> None:
        """message.subscribe to the temporary queue whose link this is (made at bind)."""
        self.destination = destination
        self.accept_mode = accept_mode
        self.exclusive = exclusive
        self.grant()

    def on_link_down(self, link: Amqp10Link) -> None:
        # what came on the lost link is void: the source redelivers it
        route = self.route
        for msg in self.held:
            route.bytes_in_flight -= len(msg.body)
        self.held.clear()
        for msg in self.unsettled.values():
            msg.delivery = None  # the subscriber's outcome for it goes nowhere now
        route.forget_dead_letters(self)

    def on_credit(self, link: Amqp10Link) -> None:
        self.grant()

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        route = self.route
        taken = route.take_delivery(self, link, delivery, not self.closed and self.st.live,
                                    route.translator.amqp10_to_legacy)
        if taken is None:
            return
        data, (dp, mp, body) = taken
        header = (dp, mp)
        self.held.append(_Held(delivery, header, body, len(encode_header(header)) + len(body),
                               t0=time.monotonic(), data=route.kept_for_tap(data)))
        route.bytes_in_flight += len(body)
        self.pump()
        self.grant()

    def pump(self) -> None:
        """Transfer held messages while the subscriber's credit allows (in order)."""
        if not self.held:
            return
        session = self.st.session
        destination = self.destination
        sent = False
        while self.held and destination is not None:
            credit = self._credit()
            msg = self.held[0]
            if credit is None or self.route.paused or not session.can_send \
                    or not credit.allows(msg.cost):
                break
            self.held.popleft()
            tid = session.message_transfer(destination, msg.header, msg.body,
                                           accept_mode=self.accept_mode,
                                           acquire_mode=self.acquire_mode)
            self.unsettled[tid] = msg
            self.st.transfers[tid] = self
            self.typical_cost = (3 * self.typical_cost + msg.cost) // 4 or 1
            sent = True
        if sent:
            self.route.facade.flush_later(self.st.client.sock)
            self.route.recount()

    def on_completed(self, tid: int) -> None:
        """The subscriber completed our transfer: with accept-mode none that settles it."""
        if self.accept_mode == AcceptMode.NONE:
            self.settle(tid, Delivery.ACCEPTED)

    def settle(self, tid: int, state: int, reason: str = "") -> None:
        """Give the 1.0 delivery behind transfer ``tid`` its outcome."""
        msg = self.unsettled.pop(tid, None)
        self.st.transfers.pop(tid, None)
        if msg is None:
            return
        self.route.settle_held(msg, state, reason)
        if self.cancelled:
            self._close_when_idle()
        self.route.grant()

    # -- the end ------------------------------------------------------------------------------

    def cancel(self) -> None:
        """message.cancel: no more messages; transfers already made can still be settled.

        The link stays attached until they are (it carries their outcomes); what it
        brings meanwhile is held and released when it detaches (released at once,
        it would come straight back to the same link)."""
        self.cancelled = True
        if self.st.live:
            for cid, _ in self.waiting_for_link:
                self.st.session.complete(cid)
        self.waiting_for_link = []
        self._complete_flushes()
        self._close_when_idle()
        self.route.grant()

    def end(self) -> None:
        """The session is gone: whatever it did not settle goes back to the 1.0 broker."""
        self.cancelled = True
        for tid, msg in self.unsettled.items():
            self.st.transfers.pop(tid, None)
            self.route.settle_held(msg, Delivery.MODIFIED)  # the subscriber may have seen it
        self.unsettled.clear()
        self.flushes.clear()
        self._close_when_idle()
        self.route.grant()

    def _close_when_idle(self) -> None:
        """Detach once the transfers made are settled (the link carries their outcomes)."""
        if not self.closed and not self.unsettled:
            self.closed = True
            self.route.release_held(self.held)
            self.link.forget()  # detaches and ends the link's session
            self.route.subscriptions.discard(self)
            self.st.cancelled.discard(self)

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in a subscription is its client's: that connection is closed."""
        return self.route.facade.socket_fault_part(self.client_socket)


@dataclass(eq=False, slots=True)
class _DeadLetter:
    """An unmappable 1.0 message whose copy is on its way to the dead-letter address."""

    sub: Subscription
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
        self.subscriptions: set[Subscription] = set()
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

    def subscribe(self, st: SessionState, destination: str | None, accept_mode: AcceptMode,
                  exclusive: bool, *, queue: str = "", address: str | None = None,
                  browse: bool = False) -> Subscription:
        """A new subscription of ``st`` to ``queue``, consuming from the route's address
        (or ``address``: a temporary queue's, its binding key filled in); ``browse``: its
        messages stay on the queue (a 0-10 not-acquired subscription)."""
        sub = Subscription(self, st, destination, accept_mode, exclusive, queue=queue,
                            address=address or self.address, browse=browse)
        self.subscriptions.add(sub)
        return sub

    def kept_for_tap(self, data: bytes) -> bytes | None:
        """A delivery's 1.0 bytes, kept with it when the route's tap records what is
        delivered (else None: nothing held for nothing)."""
        tap = self.tap
        return data if tap is not None and tap.wants_delivered else None

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

    def unmappable(self, sub: Subscription, delivery: Delivery, data: bytes,
                   exc: MappingError) -> None:
        """A 1.0 message no 0-10 subscriber can get: dead-letter it, or reject it."""
        reason = f"cannot translate: {exc}"
        dead_letters = self.dead_letters
        log_refused(self.name, reason, dead_lettered=dead_letters is not None)
        if dead_letters is None:
            reject(delivery, str(MAPPING_ERROR), reason)
            self.stats.rejected += 1
            return
        dead_letters.put(_DeadLetter(sub, delivery), data, reason)

    def forget_dead_letters(self, sub: Subscription) -> None:
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


__all__ = ["FLUSH_GRACE", "REJECTED_BY_SUBSCRIBER", "HeldMessage", "SUBSCRIBE_TIMEOUT", "FacadeConsume", "Subscription"]
