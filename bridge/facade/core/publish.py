"""Façade publish: legacy publishes to a façade exchange, forwarded to a 1.0 address.

:class:`FacadePublish` is the publish route both fronts share; each front's subclass
(the 0-10 :class:`~bridge.facade.amqp010.publish.Publish010`, the 0-9-1
:class:`~bridge.facade.amqp091.publish.Publish091`) takes its clients' publishes —
to the route's exchange, or to the default exchange naming a façade queue
(:meth:`FacadePublish.into_queue`) — and answers them in its protocol (the hooks in
``-- answering the publisher``).  A publish is mapped and sent unsettled on the
route's 1.0 sender; its publisher's confirmation (0-10: the transfer completed, 0-9-1:
basic.ack in confirm mode) comes only once the 1.0 broker accepted it, or the
dead-letter address did; a refusal without a dead-letter address is refused to the
publisher with the 1.0 condition mapped to the front's code.  Publishers are throttled
as qpidd throttles them: confirmation is withheld, and past the route's
``max_in_flight`` the listener stops reading from their sockets.  What was in flight on
a lost link is sent again when a link is back (at-least-once), unless the target ended
the link over it once too often (:mod:`bridge.amqp10.poison`).  The route's sender is an
:class:`~bridge.routes.amqp10_endpoint.Amqp10Target`; the dead-letter address is the
routes' :class:`~bridge.routes.deadletter.DeadLetters`, within the same in-flight bound
(one section of the class: ``-- refusals and dead-lettering``).

A publish once read is the bridge's to forward, whatever becomes of its session: one
whose session (or connection) ended still goes to the 1.0 broker, as a broker still
routes what it has read; its outcome then has nobody to tell (a refusal is
dead-lettered, or counted and logged).

The 1.0 link is waited for a bounded time (the route's ``attach_timeout``, counted
from when it was lost or first opened) while the 1.0 broker is connected but does not
attach it, or refuses it (an unknown queue, an inequivalent declare; a broker that is
away altogether is waited for, its publishers throttled): past it, the route *refuses* — what waits
for the link, and every new publish until the link attaches, is dead-lettered if the
route has a dead-letter address, else refused to its publisher (:meth:`_link_refusal`:
execution.exception; the 0-9-1 façade: basic.nack, or channel.close without confirms,
the message then counted as abandoned). A graceful stop gives up re-attaching such a
link. At the bridge's drain limit, :meth:`abandon` settles what is still unforwarded:
counted (``amqp_bridge_publishes_abandoned_total``), logged at ERROR, its publishers
told where they can be.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from proton import Delivery
from proton.reactor import Container

from mappings.errors import MappingError
from mappings.message import AmqpMessage

from ...amqp10.link import Amqp10Link
from ...amqp10.outcomes import condition_name, condition_text
from ...config import Route
from ...routes.amqp10_endpoint import Amqp10Target
from ...routes.deadletter import DeadLetters
from ...routes.refusals import log_refused, report_poison, too_large
from ...routes.stats import RouteStats
from ...routes.translate import Translator
from ...runtime import Timer
from ...runtime.containment import Part
from .consume import FacadeConsume
from .state import FacadeHost, waiting_for

if TYPE_CHECKING:
    from ...taps import RouteTap

log = logging.getLogger("bridge.facade")  # the façade's one logger

MAX_RELEASES = 3
"""Times a published message may be released by the 1.0 target before it counts as rejected."""
DRAIN_LIMIT_REASON = "not forwarded before the bridge's drain limit (shutdown.drain_timeout)"

@dataclass(eq=False, slots=True)
class PublishEntry:
    """A legacy publish on its way to the 1.0 target (or its dead-letter address)."""

    st: Any
    """What it came on: the 0-10 session's state, the 0-9-1 channel."""
    command_id: int
    """0-10: the transfer's command id; 0-9-1: its confirm-mode publish tag (0 without)."""
    command: Any
    """The 0-10 command, the 0-9-1 method."""
    data: bytes
    """The encoded 1.0 message."""
    size: int
    releases: int = 0
    t0: float = 0.0
    """When the publish arrived (``time.monotonic()``), for the latency histogram."""
    abandoned: bool = False
    """Given up at the drain limit (a late outcome is then ignored)."""
    diverted: bool = False
    """Sent to the dead-letter address at the drain limit while the target's outcome was
    still awaited (a late one is then ignored)."""
    returnable: Any = None
    """What to give back to the publisher if no queue takes the message (the 0-9-1
    façade's mandatory publishes: the client's MessageReceived), or None."""
    fence: str | None = None
    """The queue whose local deliveries wait for this publish to come back from the
    broker (0-9-1 topology mode, ``LocalDelivery.fence``), or None."""


class FacadePublish:
    """Legacy publishes to a façade exchange, forwarded to a 1.0 address (module docstring)."""

    def __init__(self, container: Container, route: Route, facade: FacadeHost, amqp10: Any,
                 dead_letter: tuple[Any, str] | None, *, register: bool = True,
                 anonymous: bool = False) -> None:
        assert route.source.exchange is not None and route.target.address is not None
        self.name = route.name
        self.route = route
        if register:
            facade.add_publish(self, route.source.exchange)
        self.facade = facade
        self.container = container
        self.translator = Translator(route)
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        self.waiting: deque[PublishEntry] = deque()
        self.bytes = 0
        self.throttled = False
        self.tap: RouteTap | None = None
        """The route's archive tap (set by the bridge when the route has ``tap``)."""
        self.target: Amqp10Target[PublishEntry] = Amqp10Target(
            container, amqp10, None if anonymous else route.target.address, owner=self,
            name=f"{route.name}.target",
            route=route.name, poison_attempts=route.poison_attempts)
        self.sender = self.target.link
        """The 1.0 sender link (``anonymous``: to the anonymous terminus, each message
        carrying its address in ``to``)."""
        self.attach_timeout = route.attach_timeout
        self.connection = amqp10.handler
        """The 1.0 connection's handler (``up``): a broker that is away is waited for."""
        self.refusing: str | None = None
        """Why publishes are refused at once (the link is down past ``attach_timeout``),
        or None."""
        self._link_check_due = False
        self._diverted = 0
        """Entries in flight on the target that were also sent to the dead-letter address."""
        self.dead_letters: DeadLetters[PublishEntry] | None = None
        if dead_letter is not None:
            # the copies share the route's in-flight bound with the sender's messages
            self.dead_letters = DeadLetters(
                container, dead_letter[0], dead_letter[1], route=route, owner=self,
                window=lambda: self.limit_messages - len(self.target.in_flight) + self._diverted)

    @classmethod
    def into_queue(cls, consume: FacadeConsume) -> Self:
        """Publishes to the default exchange with façade queue Q as routing key: sent to
        the 1.0 address Q's subscribers consume from (unrendered; the consume route's
        window and poison rule), as a broker would put them in Q."""
        settings = consume.route
        assert settings.target.queue is not None
        route = settings.model_copy(update={
            "name": f"{settings.name}.publish",
            "source": settings.target.model_copy(update={"queue": None, "exchange": ""}),
            "target": settings.source, "cloudevents": None, "dead_letter": None,
            "tap": None, "dedupe": None})
        return cls(consume.container, route, consume.facade, consume.amqp10, None,
                   register=False)

    @property
    def pending(self) -> int:
        """Publishes taken from clients and not yet completed or refused."""
        return len(self.waiting) + len(self.target.in_flight) - self._diverted \
            + self._dead_letters_pending

    def pause(self) -> None:
        """Graceful stop: take no new publishes (those taken still complete); a link
        already given up on is not re-attached any more."""
        self.facade.pause()
        if self.refusing is not None:
            self.target.close()

    @property
    def ready(self) -> bool:
        """The façade listens and the 1.0 sender is attached."""
        return not self.waiting_for()

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (empty when it is); safe from any thread."""
        return waiting_for(self.facade, [self.sender])

    # -- a link down past attach_timeout ------------------------------------------------------

    def _watch_link(self) -> None:
        """Publishes wait for a link that is down: check it once ``attach_timeout`` is up."""
        if self._link_check_due or self.target.up or self.refusing is not None:
            return
        self._link_check_due = True
        due = self._down_since() + self.attach_timeout - time.monotonic()
        self.container.schedule(max(0.0, due), Timer(self._check_link))

    def _down_since(self) -> float:
        """Since when the link has been down while the 1.0 connection was up: a broker
        that was away (a restart) gets ``attach_timeout`` afresh once it is back."""
        return max(self.sender.down_since, self.connection.up_since)

    def _check_link(self) -> None:
        self._link_check_due = False
        if self.target.up or not (self.waiting or self.facade.stopping):
            return
        down = time.monotonic() - self._down_since()
        if down < self.attach_timeout and (self.connection.up or self.facade.stopping):
            self._watch_link()
            return
        if not self.connection.up and not self.facade.stopping:
            # the broker is away (restarting, unreachable), not refusing: publishers stay
            # throttled (0-9-1: connection.blocked) until it is back, as at a broker whose
            # resources are short; checked again after another attach_timeout
            self._link_check_due = True
            self.container.schedule(self.attach_timeout, Timer(self._check_link))
            return
        if not self.waiting:  # the bridge is stopping and nothing waits: stop re-attaching
            self.target.close()
            return
        why = self.sender.last_error or "no answer from the AMQP 1.0 broker"
        self.refusing = (f"the AMQP 1.0 link to {self.route.target.address!r} is not "
                         f"attached ({why})")
        log.error("route %s: %s for %.1fs (attach_timeout): refusing its publishes until it "
                  "attaches", self.name, self.refusing, down,
                  extra={"event": "route_refusing", "route": self.name, "error": why})
        if self.facade.stopping:
            self.target.close()  # no more attempts during the drain
        waiting, self.waiting = self.waiting, deque()
        for entry in waiting:
            self._link_refusal(entry, self.refusing)
        self._recount()

    def _link_refusal(self, entry: PublishEntry, reason: str) -> None:
        """``entry`` cannot go to the target, whose link is down past attach_timeout:
        dead-lettered if the route has a dead-letter address, else refused to its
        publisher (0-10: execution.exception)."""
        if self.dead_letters is not None:
            self._dead_letter(entry, AmqpMessage.decode(entry.data), reason)
            return
        self.stats.rejected += 1
        self._fail(entry, self.ERROR_CODES.get(self.sender.last_condition or "",
                                              self.LINK_REFUSAL), reason)

    # -- the drain limit ------------------------------------------------------------------

    def dead_letter_unforwarded(self) -> int:
        """The bridge's drain limit is reached: what still waits for the target, or went
        to it without an answer, goes to the dead-letter address (if the route has one
        and its link is up) — a copy of a message that may have arrived rather than a
        loss. Returns the number."""
        dead_letters = self.dead_letters
        if dead_letters is None or not dead_letters.link.up:
            return 0
        waiting, self.waiting = list(self.waiting), deque()
        sent = [e for e in self.target.in_flight.values() if not e.diverted]
        for entry in sent:
            entry.diverted = True
        self._diverted += len(sent)
        for entry in [*waiting, *sent]:
            self._dead_letter(entry, AmqpMessage.decode(entry.data), DRAIN_LIMIT_REASON)
        if waiting or sent:
            log.warning("route %s: %d publishes not forwarded by the drain limit go to the "
                        "dead-letter address (%d of them were sent to the AMQP 1.0 broker "
                        "without an answer and may arrive twice)", self.name,
                        len(waiting) + len(sent), len(sent),
                        extra={"event": "publishes_dead_lettered_at_stop", "route": self.name,
                               "dead_lettered": len(waiting) + len(sent),
                               "unanswered": len(sent)})
        self._recount()
        return len(waiting) + len(sent)

    def abandon(self) -> int:
        """The bridge's drain limit is reached: every publish still unforwarded is given
        up — counted, its publisher told where it can be (a nack, an exception), logged
        at ERROR with the number (and how many went to the 1.0 broker unanswered: those
        may have arrived). Returns the number."""
        waiting, self.waiting = list(self.waiting), deque()
        sent = [e for e in self.target.in_flight.values()
                if not e.abandoned and not e.diverted]
        copies = [e for e in (self.dead_letters.items() if self.dead_letters is not None
                              else ()) if not e.abandoned]
        entries = [*waiting, *sent, *copies]
        if not entries:
            return 0
        reason = DRAIN_LIMIT_REASON
        for entry in entries:
            entry.abandoned = True
            self.stats.publishes_abandoned += 1
            self._tell_abandoned(entry, reason)
        log.error("route %s: %d publishes abandoned at shutdown: %s (%d of them were sent "
                  "to the AMQP 1.0 broker without an answer and may have arrived%s)",
                  self.name, len(entries), reason, len(sent),
                  f"; {len(copies)} were on their way to the dead-letter address"
                  if copies else "",
                  extra={"event": "publishes_abandoned", "route": self.name,
                         "abandoned": len(entries), "unanswered": len(sent)})
        self._recount()
        return len(entries)

    def _tell_abandoned(self, entry: PublishEntry, reason: str) -> None:
        """Tell the publisher of an abandoned publish, if it is still there (the front's)."""
        raise NotImplementedError

    # -- from the front ---------------------------------------------------------------------

    ERROR_CODES: Mapping[str, int] = {}
    """A 1.0 refusal's condition → the code the front refuses the publish with (its
    protocol's; :meth:`_fail` takes it); else :attr:`INTERNAL_REFUSAL`."""
    LINK_REFUSAL: int
    """The code of a publish refused because the route's link is down past
    ``attach_timeout`` (when the link's last refusal names no known condition)."""
    INTERNAL_REFUSAL: int
    """The code of a publish refused for any other reason no condition names."""
    MAPPING_REFUSAL: int
    """The code of a publish refused because it cannot be translated."""
    SIZE_REFUSAL: int
    """The code of a publish refused for its size."""

    def take(self, entry: PublishEntry, translate: Callable[[], AmqpMessage],
             plain: Callable[[], AmqpMessage]) -> None:
        """Forward a client's publish: ``translate`` makes its 1.0 message (or raises
        MappingError: then ``plain`` its plain copy for the tap and the dead-letter
        address); one over the size limit is refused; the rest waits for the sender."""
        self.bytes += entry.size
        tap = self.tap
        try:
            entry.data = translate().encode()
        except MappingError as exc:
            self.stats.mapping_errors += 1
            reason = f"cannot translate: {exc}"
            dead_letters = self.dead_letters
            copy = plain() if dead_letters is not None or tap is not None else None
            if tap is not None and copy is not None:
                tap.received_message(copy)
            if dead_letters is None or copy is None:
                self.stats.rejected += 1
                self._fail(entry, self.MAPPING_REFUSAL, reason)
            else:
                self._dead_letter(entry, copy, reason)
        else:
            if tap is not None:
                tap.received(entry.data)
            limit = self.sender.message_size_limit(self.route.max_message_size)
            if limit is not None and len(entry.data) > limit:
                self.stats.oversized += 1
                self.stats.rejected += 1
                self._fail(entry, self.SIZE_REFUSAL, too_large(len(entry.data), limit, self.route))
            elif self.refusing is not None:
                self._link_refusal(entry, self.refusing)
            else:
                self.waiting.append(entry)
                self._send()
        self._recount()

    # -- the 1.0 target (TargetOwner) -------------------------------------------------------

    def on_target_ready(self) -> None:
        if self.refusing is not None:
            log.info("route %s: the AMQP 1.0 link attached: taking publishes again",
                     self.name, extra={"event": "route_accepting", "route": self.name})
            self.refusing = None
        self._send()

    def on_void(self, items: list[PublishEntry], culprit: PublishEntry | None,
                link: Amqp10Link) -> None:
        # the outcomes of what was in flight on the lost link will never come: send it
        # again, in order, when a link is back (the target may get it twice: at-least-once),
        # unless the peer ended the link over it once too often (bridge.amqp10.poison)
        diverted = [item for item in items if item.diverted]
        if diverted:  # their copies went to the dead-letter address
            self._diverted -= len(diverted)
            items = [item for item in items if not item.diverted]
        self.waiting.extendleft(reversed(items))
        self.stats.credit = 0
        if self.waiting:
            self._watch_link()
        if culprit is not None:
            self._poisoned(culprit, link)
            self._recount()

    def on_outcome(self, entry: PublishEntry, delivery: Delivery) -> None:
        if entry.diverted:
            self._diverted -= 1
            return  # its copy went to the dead-letter address: that outcome counts
        if entry.abandoned:
            return  # counted as abandoned, its publisher told so
        self._on_outcome(entry, delivery)
        self._send()
        self._recount()

    def _send(self) -> None:
        """Send what waits, in order, within the 1.0 credit and ``max_in_flight`` (which so
        bounds what a crash can duplicate; what waits is bounded by the throttling): the
        sender's messages first, then the dead-letter copies."""
        self._send_messages()
        if self.dead_letters is not None:
            self.dead_letters.flush()

    def _send_messages(self) -> None:
        target = self.target
        window = target.window(self.limit_messages)  # 1 while probing for poison
        in_flight = target.in_flight
        others = self._dead_letters_in_flight
        while self.waiting and target.up and target.credit > 0 \
                and len(in_flight) + others < self.limit_messages and len(in_flight) < window:
            entry = self.waiting.popleft()
            target.send(entry, entry.data)
        self.stats.credit = target.credit
        if self.waiting and not target.up:
            self._watch_link()

    def _on_outcome(self, entry: PublishEntry, delivery: Delivery) -> None:
        state = delivery.remote_state
        if state == Delivery.ACCEPTED:
            self.stats.delivered += 1
            self.stats.latency.observe(time.monotonic() - entry.t0)
            if self.tap is not None:
                self.tap.delivered(entry.data)
            self._complete(entry)
            return
        if state == Delivery.REJECTED:
            self._rejected(entry, condition_name(delivery.remote.condition),
                           condition_text(delivery.remote.condition))
        else:
            self._released(entry)

    def _rejected(self, entry: PublishEntry, condition: str | None, text: str) -> None:
        """The target rejected the message: dead-letter it, or refuse it to its publisher."""
        self._refused(entry, condition,
                      f"rejected by the AMQP 1.0 target {self.route.target.address}: {text}")

    def _released(self, entry: PublishEntry) -> None:
        """Released or modified: the target did not process it; try again, a few times."""
        target = self.route.target.address
        entry.releases += 1
        self.stats.released += 1
        if entry.releases >= MAX_RELEASES:
            self._refused(entry, None, f"released {entry.releases} times by the AMQP 1.0 "
                                       f"target {target}")
        else:
            self.waiting.appendleft(entry)

    # -- refusals and dead-lettering (DeadLetterOwner) -----------------------------------------

    @property
    def _dead_letters_pending(self) -> int:
        return len(self.dead_letters) if self.dead_letters is not None else 0

    @property
    def _dead_letters_in_flight(self) -> int:
        return self.dead_letters.in_flight if self.dead_letters is not None else 0

    def _poisoned(self, entry: PublishEntry, link: Amqp10Link) -> None:
        """The target ended ``link`` too often while ``entry`` was alone in flight on it:
        dead-letter it, or refuse it to its publisher (execution.exception)."""
        reason = report_poison(self.route, self.stats, link, peer=entry.st.client.sock.peer)
        condition = str(link.refusal.name) if link.refusal is not None else None
        if link is self.target.link:
            self._refused(entry, condition, reason)
        else:  # the dead-letter address refuses the copy too
            self.stats.rejected += 1
            self._fail(entry, self.ERROR_CODES.get(condition or "", self.INTERNAL_REFUSAL),
                       f"{reason} (as a dead-letter copy)")

    def _refused(self, entry: PublishEntry, condition: str | None, reason: str) -> None:
        if self.dead_letters is not None:
            self._dead_letter(entry, AmqpMessage.decode(entry.data), reason)
            return
        self.stats.rejected += 1
        self._fail(entry, self.ERROR_CODES.get(condition or "", self.INTERNAL_REFUSAL), reason)

    def _dead_letter(self, entry: PublishEntry, message: AmqpMessage, reason: str) -> None:
        dead_letters = self.dead_letters
        assert dead_letters is not None
        log_refused(self.name, reason, dead_lettered=True)
        self._send_messages()  # what waits for the sender keeps its turn in the bound
        dead_letters.put(entry, message, reason)

    def dead_lettered(self, entry: PublishEntry) -> None:
        if entry.abandoned:
            return
        self.stats.dead_lettered += 1
        self._complete(entry)
        self._send()
        self._recount()

    def dead_letter_refused(self, entry: PublishEntry, delivery: Delivery) -> None:
        if entry.abandoned:
            return
        self.stats.rejected += 1
        text = condition_text(delivery.remote.condition)
        self._fail(entry, self.INTERNAL_REFUSAL,
                   f"the dead-letter address refused the message: {text}")
        self._send()
        self._recount()

    def dead_letters_void(self, items: list[PublishEntry], culprit: PublishEntry | None,
                          link: Amqp10Link) -> bool:
        # the copies in flight are sent again, in order, when the link is back (right
        # after this returns: counted as pending meanwhile), unless the address ended
        # the link over one of them once too often
        if culprit is not None:
            self._poisoned(culprit, link)
            self._recount(also_pending=len(items))
        return True

    # -- answering the publisher (the front's) -----------------------------------------------

    def _complete(self, entry: PublishEntry) -> None:
        """The publish is safe on the 1.0 side: confirm it to its publisher."""
        raise NotImplementedError

    def _fail(self, entry: PublishEntry, code: int, reason: str) -> None:
        """The publish cannot be forwarded: counted, logged, its publisher told (``code``:
        one of the front's refusal codes)."""
        raise NotImplementedError

    def on_tap_ready(self) -> None:
        """The tap's writer caught up: read the publishers again (unless otherwise throttled)."""
        self._recount()

    def _recount(self, also_pending: int = 0) -> None:
        """Update the statistics; throttle the publishers past the in-flight bound (or while
        the tap's writer is behind), and let them go again below three quarters of it
        (``also_pending``: publishes momentarily in none of the route's queues)."""
        pending, stats = self.pending + also_pending, self.stats
        stats.in_flight = pending
        stats.in_flight_bytes = self.bytes
        stats.peak_in_flight = max(stats.peak_in_flight, pending)
        tap_behind = self.tap is not None and self.tap.backpressured
        if not self.throttled:
            if pending >= self.limit_messages or self.bytes >= self.limit_bytes or tap_behind:
                self.throttled = True
                self.facade.update_reading()
        elif pending <= self.limit_messages * 3 // 4 and self.bytes <= self.limit_bytes * 3 // 4 \
                and not tap_behind:
            self.throttled = False
            self.facade.update_reading()

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in the route's own work is logged."""
        return Part("route", f"route {self.name}", {"route": self.name}, "logged")


__all__ = ["MAX_RELEASES", "FacadePublish", "PublishEntry"]
