"""0-10 façade consume: the core's consume route with 0-10 subscriptions.

Every ``message.subscribe`` to the route's queue (or to a temporary queue bound to
the route's exchange) is a :class:`Subscription` of a :class:`Consume010` route with
its own 1.0 receiver on the route's source address; the receiver's link credit follows
the subscription's 0-10 message credit (credit or window mode; byte credit is
honoured before each transfer, a flush waits ``FLUSH_GRACE`` for what link credit
already promised); accept / reject / release settle the 1.0 delivery as accepted /
rejected / released (modified with delivery-failed when set-redelivered and the source
supports it: the core's :meth:`~bridge.facade.core.consume.FacadeConsume.settle_held`);
what the subscriber leaves unsettled when it goes away is given back to the 1.0 broker.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from proton import Delivery

from amqp010.base import Command
from amqp010.codec import encode_header
from amqp010.spec import AcceptMode, AcquireMode, ErrorCode, ExchangeBind

from ...amqp10.link import Amqp10Link
from ...runtime import EngineSocket, Timer
from ...runtime.containment import Part
from ..core.consume import FacadeConsume
from .state import LATER, Later, Refused, SessionState

FLUSH_GRACE = 0.05
"""Seconds a message.flush waits for messages already promised by 1.0 link credit."""
SUBSCRIBE_TIMEOUT = 10.0
"""Seconds a message.subscribe waits for its 1.0 link before it fails with not-found."""

@dataclass(eq=False, slots=True)
class _Held:
    """A 1.0 delivery mapped for the subscriber (waiting for credit, or transferred)."""

    delivery: Delivery | None
    """None once void: the link it came on was lost, and the source redelivers it."""
    header: bytes
    """The 0-10 header segment (delivery- and message-properties), encoded once."""
    body: bytes
    cost: int
    """What the transfer takes from byte credit: header segment plus body octets."""
    t0: float = 0.0
    """When the 1.0 delivery arrived (``time.monotonic()``), for the latency histogram."""
    data: bytes | None = None
    """The 1.0 message as received, kept when the route's tap records deliveries."""


class Subscription:
    """One 0-10 subscription to a façade queue and its own 1.0 receiver link."""

    def __init__(self, route: Consume010, st: SessionState, destination: str | None,
                 accept_mode: AcceptMode, exclusive: bool, *, queue: str, address: str,
                 browse: bool = False, pinned_to: Any = None) -> None:
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
        self.link = route.subscription_link(self, address, pinned_to=pinned_to, browse=browse)

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
        (``route_busy``: the route's
        :attr:`~bridge.facade.core.consume.FacadeConsume.busy`, if known); returns the
        credit added.

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
        self.route.link_lost(self, self.held)

    def on_credit(self, link: Amqp10Link) -> None:
        self.grant()

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        route = self.route
        taken = route.take_delivery(self, link, delivery, not self.closed and self.st.live,
                                    route.translator.amqp10_to_legacy)
        if taken is None:
            return
        data, (dp, mp, body) = taken
        header = encode_header((dp, mp))
        self.held.append(_Held(delivery, header, body, len(header) + len(body),
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
        if not self.route.settle_unsettled(self, tid, self.st.transfers, state, reason):
            return
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
        self.route.give_back_unsettled(self, self.st.transfers)
        self.flushes.clear()
        self._close_when_idle()
        self.route.grant()

    def _close_when_idle(self) -> None:
        """Detach once the transfers made are settled (the link carries their outcomes)."""
        if not self.closed and not self.unsettled:
            self.closed = True
            self.route.detach(self, self.held)
            self.st.cancelled.discard(self)

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in a subscription is its client's: that connection is closed."""
        return self.route.facade.socket_fault_part(self.client_socket)


class Consume010(FacadeConsume):
    """A 1.0 address consumed by the 0-10 subscribers of a façade queue (module docstring)."""

    def check_exclusive(self, queue: str, exclusive: bool) -> None:
        """resource-locked (field 4, message.subscribe's ``exclusive``) if ``queue`` has an
        exclusive subscriber, or an ``exclusive`` subscription would join others."""
        if self.exclusive or (exclusive and self.subscriptions):
            raise Refused(ErrorCode.RESOURCE_LOCKED, f"queue {queue!r} has an exclusive "
                          f"subscriber" if self.exclusive else
                          f"queue {queue!r} already has subscribers", 4)

    def subscribe(self, st: SessionState, destination: str | None, accept_mode: AcceptMode,
                  exclusive: bool, *, queue: str = "", address: str | None = None,
                  browse: bool = False, pinned_to: Any = None) -> Subscription:
        """A new subscription of ``st`` to ``queue``, consuming from the route's address
        (or ``address``: a temporary queue's, its binding key filled in); ``browse``: its
        messages stay on the queue (a 0-10 not-acquired subscription); ``pinned_to``: the
        1.0 connection its link must attach on (an exclusive queue's consumer: the one that
        declared it), else the pool chooses."""
        sub = Subscription(self, st, destination, accept_mode, exclusive, queue=queue,
                            address=address or self.address, browse=browse,
                            pinned_to=pinned_to)
        self.subscriptions.add(sub)
        return sub


__all__ = ["FLUSH_GRACE", "SUBSCRIBE_TIMEOUT", "Consume010", "Subscription"]
