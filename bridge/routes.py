"""Route runtimes: move messages between an AMQP 0-10 side and an AMQP 1.0 side.

Both directions are at-least-once: the source message is settled only after
the target's outcome is known, and the number of messages (and octets) between
the two is bounded by the route's ``max_in_flight``.  docs/semantics.md has the
whole contract; in short:

``LegacyToAmqp10`` (0-10 queue → 1.0 address)
    subscribes to the queue in credit mode with explicit accept; grants 0-10
    message credit only while the 1.0 sender has credit and the in-flight bound
    has room; sends each message unsettled; the 1.0 outcome decides the 0-10
    fate: accepted → message.accept; rejected → dead-letter (then accept) or
    message.reject; released → message.release; modified(delivery-failed) →
    release with set-redelivered.

``Amqp10ToLegacy`` (1.0 address → 0-10 exchange)
    grants 1.0 link credit up to the in-flight bound; transfers each message to
    the exchange; the transfer's session completion → 1.0 accepted; an
    execution.exception naming it → dead-letter (then accepted) or 1.0 rejected
    with the error.

Unmappable messages (MappingError, CloudEvents errors) go to the dead-letter
address with the reason in message annotations, or are rejected with it.

Faults: every 1.0 link sits on its own session and is re-created when the peer
detaches or closes it or ends its session (:class:`Amqp10Link`); proton
re-attaches links after a reconnect.  When a link or its connection goes down,
the deliveries in flight on it are void: their sources are released for
redelivery (0-10) or left to the broker to redeliver (1.0).  0-10 sessions are
resumed when the broker keeps them (:mod:`bridge.legacy`).  Optional duplicate
suppression remembers the message-ids of the last ``dedupe.window`` delivered
messages.

0-10 dispositions, credit and flushes are batched per burst of reactor events
(:meth:`~bridge.legacy.LegacyConnection.defer`).
"""

from __future__ import annotations

import logging
import time
import uuid
import zlib
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proton import Condition, Delivery, Endpoint, Link, symbol
from proton.reactor import Container

from amqp010.codec import encode_header
from amqp010.events import (
    CommandsCompleted,
    Event,
    ExecutionExceptionReceived,
    MessageReceived,
)
from amqp010.session import Session, SessionState
from amqp010.spec import AcceptMode, AcquireMode, CreditUnit, ErrorCode, FlowMode
from mappings.amqp010 import to_amqp10
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind, Header

from .config import Reconnect, Route
from .hosting import Timer
from .legacy import LegacyConnection, backoff
from .logs import WarnLimiter
from .metrics import LatencyHistogram
from .outcomes import condition_text, give_back, reject
from .poison import PoisonGuard, poison_suspected
from .translate import Translator

if TYPE_CHECKING:
    from .taps import RouteTap

log = logging.getLogger(__name__)

MAPPING_ERROR = symbol("amqp-bridge:mapping-error")
"""Condition of a 1.0 reject caused by a message that cannot be translated."""
REASON_ANNOTATION = symbol("x-amqp-bridge-dead-letter-reason")
ROUTE_ANNOTATION = symbol("x-amqp-bridge-route")
LEGACY_HEADER_ANNOTATION = symbol("x-amqp-bridge-0-10-header")
"""Dead-letter copies of unmappable 0-10 messages: the encoded 0-10 header segment."""
RELINK = Reconnect(initial_delay=0.5, max_delay=30.0)
"""Backoff before re-creating a 1.0 link the peer detached, closed or whose session it ended."""
STABLE_LINK = 10.0
"""Seconds a link must have been up for its loss not to count as a repeated failure."""
_UNLIMITED = 0xFFFFFFFF
_EXCEPTION_CONDITIONS: dict[int, str] = {
    ErrorCode.UNAUTHORIZED_ACCESS: "amqp:unauthorized-access",
    ErrorCode.NOT_FOUND: "amqp:not-found",
    ErrorCode.RESOURCE_LOCKED: "amqp:resource-locked",
    ErrorCode.PRECONDITION_FAILED: "amqp:precondition-failed",
    ErrorCode.RESOURCE_DELETED: "amqp:resource-deleted",
    ErrorCode.ILLEGAL_STATE: "amqp:illegal-state",
    ErrorCode.RESOURCE_LIMIT_EXCEEDED: "amqp:resource-limit-exceeded",
    ErrorCode.NOT_ALLOWED: "amqp:not-allowed",
    ErrorCode.INVALID_ARGUMENT: "amqp:invalid-field",
    ErrorCode.NOT_IMPLEMENTED: "amqp:not-implemented",
}
"""1.0 error condition for a 0-10 execution exception (others: amqp:internal-error)."""


@dataclass
class RouteStats:
    """Per-route counters and gauges, updated on the event loop and read by the metrics
    collector (:mod:`bridge.metrics`; counter names as in ``metrics.COUNTERS``)."""

    received: int = 0
    delivered: int = 0
    rejected: int = 0
    dead_lettered: int = 0
    released: int = 0
    redelivered: int = 0
    """Messages that arrived flagged redelivered (see :func:`redelivered_1_0`)."""
    duplicates_suppressed: int = 0
    """Messages settled at the source without forwarding: their id was recently delivered."""
    mapping_errors: int = 0
    poison_messages: int = 0
    """Messages settled as rejected because sending them made the target end the link."""
    oversized: int = 0
    """Messages refused because they exceed the route's (or the target's) size limit."""
    in_flight: int = 0
    in_flight_bytes: int = 0
    credit: int = 0
    """Credit the route holds from its target (see docs/operations.md per route kind)."""
    peak_in_flight: int = 0
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    """Source receipt to the target's accepted outcome, per delivered message."""
    extra: dict[str, int] = field(default_factory=dict)

    def counters(self) -> dict[str, int]:
        """The integer fields (for the statistics log line)."""
        return {k: v for k, v in vars(self).items() if isinstance(v, int)}


def redelivered_1_0(header: Header) -> bool:
    """Whether a received 1.0 message is flagged redelivered: delivery-count > 0, or
    first-acquirer false (RabbitMQ 3.10 marks redeliveries so, delivery-count staying 0)."""
    return bool(header.delivery_count) or header.first_acquirer is False


def send_raw(sender: Link, data: bytes) -> Delivery:
    """Send already-encoded AMQP 1.0 message bytes as one unsettled delivery."""
    delivery = sender.delivery(sender.delivery_tag())
    sender.stream(data)
    sender.advance()
    return delivery


def dead_letter_copy(message: AmqpMessage, route: str, reason: str) -> bytes:
    """The encoded dead-letter form of ``message``: annotated with route and reason."""
    message.message_annotations[ROUTE_ANNOTATION] = route
    message.message_annotations[REASON_ANNOTATION] = reason[:1024]
    return message.encode()


class DeliveredIds:
    """The message-ids of the last ``size`` delivered messages (a bounded set)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._ids: dict[Any, None] = {}

    def __contains__(self, key: Any) -> bool:
        return key in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, key: Any) -> None:
        ids = self._ids
        ids.pop(key, None)
        ids[key] = None
        if len(ids) > self.size:
            del ids[next(iter(ids))]


def message_id_key(message_id: Any) -> Any:
    """A hashable duplicate-detection key for a 0-10 or 1.0 message-id (None: no id)."""
    if message_id is None:
        return None
    if isinstance(message_id, bytes | bytearray | memoryview):
        return (bytes, bytes(message_id))
    return (type(message_id).__name__, message_id)


# --- AMQP 1.0 links ------------------------------------------------------------------------


class Amqp10Link:
    """A proton sender or receiver on its own session, kept attached for its owner.

    The link is replaced by a fresh one (on a fresh session) whenever it is lost:

    * the transport drops: new ones wait for proton's reconnect; the old ones,
      which proton re-attaches, are closed as soon as the peer has answered (the
      old link's void deliveries are never settled: settling them makes proton
      send payload-less transfers, which RabbitMQ 3.10 answers by ending the
      session);
    * the peer detaches or closes the link, or ends its session: the old ones are
      closed and the new ones opened after a backoff. RabbitMQ 3.10 reports most
      errors by ending the session, and answers a closing detach with a
      non-closing one (rabbitmq-server #2594), so both kinds of detach are
      handled alike.

    The owner is told ``on_link_up(link)``, ``on_link_down(link)`` (deliveries
    in flight on the link are void: forget them, never settle them),
    ``on_credit(link)`` and ``on_delivery(link, delivery)``.
    """

    def __init__(self, container: Container, connection: Any, address: str, *, sender: bool,
                 owner: Any, name: str, route: str = "") -> None:
        self.container = container
        self.connection = connection
        self.address = address
        self.is_sender = sender
        self.owner = owner
        self.name = name
        self.route = route
        self.handler = connection.handler
        """The connection's handler (``name``, ``peer``), kept so that other threads (the
        metrics server) never call into proton."""
        self.link: Any = None
        self.session: Any = None
        self.up = False
        self.up_since = 0.0
        self.failures = 0
        self.closing = False
        self.refusal: Condition | None = None
        """While :meth:`on_link_down` runs: the error condition with which the peer ended
        the link or its session, when it may be about a message in flight (None for a
        connection loss, an end without error, or a condition about the node itself)."""
        self.peer_max_message_size: int | None = None
        """The max-message-size the peer announced when it attached the link (None: none)."""
        self.explained = False
        """Set by the owner's :meth:`on_link_down` when it blamed a message in flight for
        :attr:`refusal`: the link is then re-attached soon, with no growing backoff."""
        self.generation = 0
        self._stale: list[tuple[Any, Any]] = []
        """Links (and sessions) of dead transports, waiting to be re-attached and closed."""
        self._detaching: list[tuple[Any, Any]] = []
        """Links given up, with their sessions: each session is ended once the peer has
        detached its link."""
        watchers = getattr(self.handler, "watchers", None)
        if watchers is not None:
            watchers.append(self)
        self._open()

    # -- the owner's API -----------------------------------------------------------------

    @property
    def credit(self) -> int:
        return self.link.credit if self.up else 0

    def message_size_limit(self, configured: int | None) -> int | None:
        """The largest message to send on this link: ``configured`` (a route's
        ``max_message_size``), else the max-message-size the peer announced when it
        attached the link (None: no limit)."""
        return configured if configured is not None else self.peer_max_message_size

    @property
    def open(self) -> bool:
        """Attached or attaching, and not closed for good (the links gauge)."""
        return not self.closing and self.link is not None

    @property
    def connection_name(self) -> str:
        """The configured name of the link's connection."""
        return str(getattr(self.handler, "name", "?"))

    def log_fields(self, event: str) -> dict[str, Any]:
        """``extra`` fields of this link's log lines."""
        return {"event": event, "route": self.route, "connection": self.connection_name,
                "peer": getattr(self.handler, "peer", ""), "link": self.name,
                "address": self.address}

    def send(self, data: bytes) -> Delivery:
        """Send encoded message bytes unsettled (only while :attr:`up`)."""
        return send_raw(self.link, data)

    def close(self) -> None:
        """Detach for good (shutdown)."""
        if self.up:
            log.info("route %s: 1.0 link %s detached", self.route, self.name,
                     extra=self.log_fields("link_detached"))
        self.closing = True
        self.up = False
        if self.link is not None:
            self._retire(self.link, self.session)
            self.link = self.session = None

    # -- proton events (this object is the link's and the session's handler) -------------

    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        if link == self.link:
            if not self.up:
                self.up = True
                self.up_since = time.monotonic()
                self.peer_max_message_size = link.remote_max_message_size or None
                log.info("route %s: 1.0 link %s attached to %r", self.route, self.name,
                         self.address, extra=self.log_fields("link_attached"))
                self.owner.on_link_up(self)
            return
        for stale in self._stale:
            if stale[0] == link:  # re-attached by proton after a reconnect: now end it
                self._stale.remove(stale)
                self._retire(*stale)
                return

    def on_link_flow(self, event: Any) -> None:
        if self.up and event.link == self.link:
            self.owner.on_credit(self)

    def on_delivery(self, event: Any) -> None:
        if event.link == self.link:
            self.owner.on_delivery(self, event.delivery)
        # else: a late delivery on a link we gave up: leave it to its session's end (an
        # incoming one settled without an outcome could be taken as accepted)

    def on_link_remote_close(self, event: Any) -> None:
        if event.link == self.link:
            self._lost("link closed by the peer", event.link.remote_condition)
        else:
            self._link_gone(event.link)

    def on_link_remote_detach(self, event: Any) -> None:
        if event.link == self.link:
            self._lost("link detached by the peer", event.link.remote_condition)
        else:
            self._link_gone(event.link)

    def on_session_remote_close(self, event: Any) -> None:
        session = event.session
        if session == self.session:
            self._lost("session ended by the peer", session.remote_condition)
            return
        for entry in self._detaching:
            if entry[1] == session:  # ended by the peer before it detached the link
                self._detaching.remove(entry)
                self._end_session(session)
                return
        if session.state & Endpoint.LOCAL_CLOSED:
            session.free()  # an old session's end handshake is complete

    def on_disconnected(self) -> None:
        """The connection's transport is gone; proton reconnects."""
        if not self.up or self.closing:
            return  # nothing was attached on that transport
        self.up = False
        if self.connection.state & Endpoint.LOCAL_CLOSED:
            log.info("route %s: 1.0 link %s detached: connection closed", self.route,
                     self.name, extra=self.log_fields("link_detached"))
        else:
            log.info("route %s: 1.0 link %s detached: connection lost", self.route, self.name,
                     extra=self.log_fields("link_lost"))
        # Proton re-attaches the old link on the next transport, keeping its void
        # deliveries (never sent again as long as nobody settles them). It is closed once
        # the peer has answered its attach (ending a session before the peer's begin
        # makes proton fail the connection: "begin reply to unknown channel"), and freed,
        # deliveries and all, with its session's end.
        self._stale.append((self.link, self.session))
        self.link = self.session = None  # from now on, events of the old ones are ignored
        self.owner.on_link_down(self)
        # a fresh link, once proton has let go of the dead transport
        self.container.schedule(0, Timer(self._reopen))

    # -- internals -----------------------------------------------------------------------

    def _open(self) -> None:
        self.generation += 1
        session = self.connection.session()
        session.handler = self
        session.open()
        name = f"amqp-bridge.{self.name}.{self.generation}.{time.time_ns():x}"
        link = session.sender(name) if self.is_sender else session.receiver(name)
        if self.is_sender:
            link.target.address = self.address
        else:
            link.source.address = self.address
        link.handler = self
        link.open()
        self.session, self.link = session, link

    def _retire(self, link: Any, session: Any) -> None:
        """Close a link, and its session once the peer has detached the link too; the
        session is freed once the peer ends it as well.  Ending the session earlier — before
        the peer's begin, or while its answers about the link are still on the way — makes
        proton fail the whole connection ("begin reply to unknown channel", or "no such
        channel" when proton reuses the channel for a new session and the old session's
        late frames arrive): every route on it, which a façade client subscribing and
        leaving at once could otherwise do at will."""
        if link.state & Endpoint.LOCAL_ACTIVE:
            link.close()
        if (session.state & Endpoint.LOCAL_ACTIVE
                and not (link.state | session.state) & Endpoint.REMOTE_CLOSED):
            self._detaching.append((link, session))  # ended in _link_gone
            return
        self._end_session(session)

    @staticmethod
    def _end_session(session: Any) -> None:
        if session.state & Endpoint.LOCAL_ACTIVE:
            session.close()
        if session.state & Endpoint.REMOTE_CLOSED:
            session.free()

    def _link_gone(self, link: Any) -> None:
        """The peer detached a link we gave up: its session may end now."""
        for entry in self._detaching:
            if entry[0] == link:
                self._detaching.remove(entry)
                self._end_session(entry[1])
                return

    def _lost(self, what: str, condition: Condition | None = None) -> None:
        if self.closing or self.link is None:
            return
        reason = f"{what}: {condition_text(condition)}"
        was_up, self.up = self.up, False
        old_link, old_session = self.link, self.session
        self.link = self.session = None
        # the owner may blame a message in flight for the peer's error (bridge.poison)
        self.refusal = condition if poison_suspected(condition) else None
        self.explained = False
        try:
            self.owner.on_link_down(self)
        finally:
            self.refusal = None
        if self.explained:
            # a message was to blame, not the link: come back soon, without growing backoff
            delay = backoff(RELINK, 0)
        else:
            lived = time.monotonic() - self.up_since if was_up else 0.0
            self.failures = 0 if lived >= STABLE_LINK else self.failures + 1
            delay = backoff(RELINK, self.failures - 1) if self.failures else 0.0
        log.warning("1.0 link %s to %r: %s; re-attaching in %.2fs", self.name, self.address,
                    reason, delay, extra={**self.log_fields("link_lost"), "error": reason,
                                          "delay": round(delay, 3)})
        self._retire(old_link, old_session)
        self.container.schedule(delay, Timer(self._reopen))

    def _reopen(self) -> None:
        if not self.closing and self.link is None \
                and self.connection.state & Endpoint.LOCAL_ACTIVE:
            self._open()


_REJECTIONS = WarnLimiter()
"""One WARNING line per route every 10 s about messages rejected for good."""


def log_refused(route: str, reason: str, *, dead_lettered: bool) -> None:
    """A message leaves ``route`` refused: dead-lettered (debug: the copy carries the
    reason), or rejected for good (WARNING, at most one line per route every 10 s, with
    the number held back: a stream of bad messages must not flood the log)."""
    if dead_lettered:
        log.debug("route %s: message dead-lettered: %s", route, reason,
                  extra={"event": "message_refused", "route": route, "error": reason})
        return
    held = _REJECTIONS.allow(route)
    if held is not None:
        log.warning("route %s: message rejected: %s%s", route, reason,
                    f" ({held} more since the last such line)" if held else "",
                    extra={"event": "message_rejected", "route": route, "error": reason,
                           "suppressed": held})


def report_poison(route: Route, stats: RouteStats, link: Amqp10Link, **fields: Any) -> str:
    """Count and log a poison message ``link``'s peer refused (bridge.poison); returns the
    reason to settle it with."""
    stats.poison_messages += 1
    refusal = condition_text(link.refusal)
    reason = (f"the AMQP 1.0 target {link.address!r} ended the link {route.poison_attempts} "
              f"times while this message was the only one in flight: {refusal}")
    log.warning("route %s: poison message: %s", route.name, reason,
                extra={**link.log_fields("poison_message"), "error": refusal, **fields})
    return reason


def too_large(size: int, limit: int, route: Route) -> str:
    """Why a message of ``size`` octets is refused on ``route``."""
    whose = "the route's max_message_size" if route.max_message_size is not None else \
        "the max-message-size the AMQP 1.0 target announced"
    return f"message of {size} octets exceeds {whose} ({limit} octets)"


# --- 0-10 queue → 1.0 address --------------------------------------------------------------

ACCEPT, RELEASE, REDELIVER = "accept", "release", "redeliver"


@dataclass(slots=True, eq=False)
class _Taken:
    """A 0-10 message taken from the source queue, until its fate is settled there."""

    session: Session
    command_id: int
    size: int
    data: bytes | None = None
    """The encoded 1.0 message, kept while a rejection may need to dead-letter it (or the
    route's tap record it as delivered)."""
    key: Any = None
    """Duplicate-detection key (message-id), when the route suppresses duplicates."""
    t0: float = 0.0
    """When it was received (``time.monotonic()``), for the latency histogram."""
    suspect: Any = None
    """Its :class:`~bridge.poison.PoisonGuard` key (the same when the 0-10 broker
    redelivers it): see :func:`poison_key`."""


def poison_key(message_id: Any, body: bytes) -> Any:
    """A key for a 0-10 message that stays the same across redeliveries: its message-id
    and length, or (without a message-id) its length and the CRC-32 of its body."""
    if message_id is not None:
        return message_id, len(body)
    return None, len(body), zlib.crc32(body)


class LegacyToAmqp10:
    """A 0-10 queue drained into a 1.0 address (see the module docstring)."""

    def __init__(self, container: Container, route: Route, legacy: LegacyConnection,
                 amqp10: Any, dead_letter: Any | None) -> None:
        self.name = route.name
        self.route = route
        self.translator = Translator(route)
        self.legacy = legacy
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        self.destination = f"bridge.{route.name}"
        self.paused = False
        self.session: Session | None = None
        self.granted = 0  # 0-10 message credit granted and not yet used
        self.stopped = False  # message.stop sent since the last octet credit
        self.progress = False  # the current session has moved a message
        self.in_flight: dict[Delivery, _Taken] = {}
        self.dlq_in_flight: dict[Delivery, _Taken] = {}
        self.dlq_waiting: deque[tuple[_Taken, bytes]] = deque()
        """Dead-letter copies waiting for the dead-letter link to come (back) up."""
        self.bytes = 0
        self.seen = DeliveredIds(route.dedupe.window) if route.dedupe else None
        self._dispositions: list[tuple[Session, str, int]] = []
        self.accepts_pending = 0
        """Accepts not yet completed by the broker (queued, or sent and unconfirmed)."""
        self._unconfirmed: dict[int, int] = {}  # message.accept command id -> messages
        self.poison = PoisonGuard(route.poison_attempts)
        self.dlq_poison = PoisonGuard(route.poison_attempts)
        self.max_message_size = route.max_message_size
        self.tap: RouteTap | None = None
        """The route's archive tap (set by the bridge when the route has ``tap``)."""
        assert route.target.address is not None
        self.sender = Amqp10Link(container, amqp10, route.target.address, sender=True,
                                 owner=self, name=f"{route.name}.target", route=route.name)
        self.dlq: Amqp10Link | None = None
        if dead_letter is not None:
            self.dlq = Amqp10Link(container, dead_letter[0], dead_letter[1], sender=True,
                                  owner=self, name=f"{route.name}.dead-letter", route=route.name)
        legacy.add(self)

    # -- 0-10 side -----------------------------------------------------------------------

    def on_session(self, session: Session, resumed: bool) -> None:
        self.session = session
        self.progress = False
        if resumed:
            # A kept session still has our subscription and credit; a broker that forgot it
            # answers this no-op flow with an exception, and we get a fresh session.
            session.message_flow(self.destination, CreditUnit.MESSAGE, 0)
        else:
            self.granted = 0
            self.stopped = False
            assert self.route.source.queue is not None
            session.message_subscribe(self.route.source.queue, self.destination,
                                      accept_mode=AcceptMode.EXPLICIT,
                                      acquire_mode=AcquireMode.PRE_ACQUIRED)
            session.message_set_flow_mode(self.destination, FlowMode.CREDIT)
            session.message_flow(self.destination, CreditUnit.BYTE, _UNLIMITED)
            if self.paused:
                return
        self._kick()

    def on_suspended(self) -> None:
        pass  # in-flight messages stay: their accepts are replayed on the resumed session

    def on_lost(self) -> bool:
        # the broker requeued what it had delivered on that session; outcomes still coming
        # for those messages are not settled there (redelivery may duplicate: at-least-once)
        self.session = None
        self.granted = 0
        self.accepts_pending = 0
        self._unconfirmed.clear()
        self._uncount(0)
        return self.progress

    def on_event(self, event: Event) -> None:
        if isinstance(event, MessageReceived):
            self._on_message(event)
        elif isinstance(event, CommandsCompleted):
            confirmed = sum(self._unconfirmed.pop(cid, 0) for cid in event.commands)
            if confirmed:
                self.accepts_pending -= confirmed
                self._uncount(0)
                self._kick()
        elif isinstance(event, ExecutionExceptionReceived):
            log.warning("route %s: 0-10 exception %s: %s", self.name, event.error_code,
                        event.description, extra=self.legacy.log_fields(
                            "session_exception", route=self.name, error=event.description))

    def _on_message(self, event: MessageReceived) -> None:
        self.granted = max(0, self.granted - 1)
        self.progress = True
        stats = self.stats
        stats.received += 1
        mp = event.message_properties
        dp = event.delivery_properties
        if dp is not None and dp.redelivered:
            stats.redelivered += 1
        taken = _Taken(event.session, event.command_id, len(event.body), t0=time.monotonic(),
                       suspect=poison_key(mp.message_id if mp is not None else None, event.body))
        if self.seen is not None:
            taken.key = message_id_key(mp.message_id if mp is not None else None)
            if taken.key is not None and taken.key in self.seen:
                stats.duplicates_suppressed += 1
                self._settle(taken, ACCEPT)
                return
        if self.paused or not self.sender.up:  # credit granted before the stop or the loss
            stats.released += 1
            self._settle(taken, RELEASE)
            return
        tap = self.tap
        try:
            data = self.translator.legacy_to_amqp10(event.delivery_properties, mp,
                                                    event.body).encode()
        except MappingError as exc:
            stats.mapping_errors += 1
            plain = plain_copy(event, self.route)
            if tap is not None:
                tap.received_message(plain)
            self._dead_letter(taken, plain, f"cannot translate: {exc}")
            return
        limit = self.sender.peer_max_message_size if self.max_message_size is None \
            else self.max_message_size
        if limit is not None and len(data) > limit:
            self.stats.oversized += 1
            if tap is not None:
                tap.received(data)
            self._dead_letter(taken, None, too_large(len(data), limit, self.route))
            return
        if tap is not None:
            tap.received(data)
            if tap.wants_delivered:
                taken.data = data
        if self.dlq is not None:
            taken.data = data
        self.in_flight[self.sender.send(data)] = taken
        self._count(taken.size)

    # -- 1.0 side ------------------------------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        if link is self.dlq:
            self._send_dead_letters()
        self._kick()

    def on_link_down(self, link: Amqp10Link) -> None:
        # what was in flight on the link may or may not have arrived: redeliver it, unless
        # the peer ended the link over it once too often (bridge.poison)
        lost = self.in_flight if link is self.sender else self.dlq_in_flight
        culprit: _Taken | None = None
        if link.refusal is not None and lost:
            link.explained = True
            guard = self.poison if link is self.sender else self.dlq_poison
            suspect = guard.refused(t.suspect for t in lost.values())
            culprit = next((t for t in lost.values() if t.suspect == suspect), None) \
                if suspect is not None else None
        for taken in lost.values():
            self.bytes -= taken.size
            if taken is not culprit:
                self._settle(taken, REDELIVER)
                self.stats.released += 1
        lost.clear()
        self._uncount(0)
        if culprit is not None:
            self._poisoned(culprit, link)
        if link is self.sender:
            self._stop_credit()
        self._kick()

    def on_credit(self, link: Amqp10Link) -> None:
        if link is self.sender:
            self._kick()

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        if not delivery.remote_state:
            return
        state = delivery.remote_state
        if link is self.dlq:
            taken = self.dlq_in_flight.pop(delivery, None)
            delivery.settle()
            if taken is None:
                return
            self._uncount(taken.size)
            if state == Delivery.ACCEPTED:
                self.dlq_poison.accepted(taken.suspect)
                self.stats.dead_lettered += 1
                self._settle(taken, ACCEPT)
            else:
                self.stats.released += 1
                self._settle(taken, RELEASE)
            self._send_dead_letters()
            return
        taken = self.in_flight.pop(delivery, None)
        if taken is None:
            delivery.settle()
            return
        self._uncount(taken.size)
        if state == Delivery.ACCEPTED:
            self.stats.delivered += 1
            self.stats.latency.observe(time.monotonic() - taken.t0)
            if self.poison.probe:
                self.poison.accepted(taken.suspect)
            if self.tap is not None:
                self.tap.delivered(taken.data)
            if self.seen is not None and taken.key is not None:
                self.seen.add(taken.key)
            self._settle(taken, ACCEPT)
        elif state == Delivery.REJECTED:
            reason = f"rejected by the target: {condition_text(delivery.remote.condition)}"
            message = AmqpMessage.decode(taken.data) if taken.data is not None else None
            self._dead_letter(taken, message, reason)
        elif state == Delivery.RELEASED:
            self.stats.released += 1
            self._settle(taken, RELEASE)
        else:  # MODIFIED
            self.stats.released += 1
            failed = bool(getattr(delivery.remote, "failed", True))
            self._settle(taken, REDELIVER if failed else RELEASE)
        delivery.settle()

    # -- fates ---------------------------------------------------------------------------

    def _dead_letter(self, taken: _Taken, message: AmqpMessage | None, reason: str) -> None:
        log_refused(self.name, reason, dead_lettered=self.dlq is not None and message is not None)
        if self.dlq is None or message is None:
            self.stats.rejected += 1
            session = taken.session
            if _usable(session):
                session.message_reject([taken.command_id], text=reason[:255])
                self._kick()
            return
        copy = dead_letter_copy(message, self.name, reason)
        self._count(taken.size)
        self.dlq_waiting.append((taken, copy))
        self._send_dead_letters()

    def _send_dead_letters(self) -> None:
        """Send waiting dead-letter copies (one at a time while the address probes)."""
        dlq = self.dlq
        while self.dlq_waiting and dlq is not None and dlq.up \
                and len(self.dlq_in_flight) < self.dlq_poison.window(self.limit_messages):
            taken, copy = self.dlq_waiting.popleft()
            self.dlq_in_flight[dlq.send(copy)] = taken

    def _poisoned(self, taken: _Taken, link: Amqp10Link) -> None:
        """The target ended ``link`` too often while ``taken`` was alone in flight on it:
        dead-letter it (or reject it at the source), and go on with the next message."""
        reason = report_poison(self.route, self.stats, link)
        if link is self.sender:
            message = AmqpMessage.decode(taken.data) if taken.data is not None else None
            self._dead_letter(taken, message, reason)
        else:  # the dead-letter address refuses the copy: the source's own rules apply
            self._dead_letter(taken, None, f"{reason} (as a dead-letter copy)")

    def _settle(self, taken: _Taken, fate: str) -> None:
        """Queue the 0-10 disposition of ``taken`` for the end of this burst of events."""
        if _usable(taken.session):
            self._dispositions.append((taken.session, fate, taken.command_id))
            if fate == ACCEPT and taken.session is self.session:
                self.accepts_pending += 1
        self._kick()

    def _kick(self) -> None:
        self.legacy.defer(self._end_of_burst)

    def _end_of_burst(self) -> None:
        """Send the batched dispositions, then grant what the window allows."""
        pending, self._dispositions = self._dispositions, []
        for session, fate, ids in _runs(pending):
            if not _usable(session):
                continue
            if fate == ACCEPT:
                # completed (sync) once the broker has settled them: till then they count
                # against the window, as they would come again after a crash
                command_id = session.message_accept(ids, sync=True)
                if session is self.session:
                    self._unconfirmed[command_id] = len(ids)
            else:
                session.message_release(ids, set_redelivered=fate == REDELIVER)
        self._grant()

    def _count(self, size: int) -> None:
        self.bytes += size
        stats = self.stats
        stats.in_flight = self.pending
        stats.in_flight_bytes = self.bytes
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)

    def _uncount(self, size: int) -> None:
        self.bytes -= size
        self.stats.in_flight = self.pending
        self.stats.in_flight_bytes = self.bytes

    # -- credit bridging -----------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Messages taken from the source that the source has not settled yet."""
        return (len(self.in_flight) + len(self.dlq_in_flight) + len(self.dlq_waiting)
                + self.accepts_pending)

    @property
    def ready(self) -> bool:
        """Both sides attached (the 0-10 session and the 1.0 sender), and not stopping."""
        return not self.waiting_for()

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (empty when it is); safe from any thread."""
        return _waiting(self.paused, self.session, self.legacy.name, self.sender)

    def pause(self) -> None:
        """Take no more messages from the source (graceful shutdown)."""
        self.paused = True
        self._stop_credit()
        self._kick()

    def _stop_credit(self) -> None:
        """message.stop: the broker's credit (messages and octets) drops to zero."""
        if self.session is not None and self.session.attached:
            self.session.message_stop(self.destination)
            self.granted = 0
            self.stopped = True

    def on_tap_ready(self) -> None:
        """The tap's writer caught up: grant credit again."""
        self._kick()

    def _grant(self) -> None:
        credit = self.stats.credit = self.sender.credit
        session = self.session
        if session is None or not session.attached or self.paused or not self.sender.up:
            return
        if self.tap is not None and self.tap.backpressured:
            return  # the archive writer is behind: take nothing more for now
        busy = self.pending + self.granted
        room = min(credit - self.granted, self.poison.window(self.limit_messages) - busy)
        if self.bytes >= self.limit_bytes:
            room = 0
        # grant in batches (a quarter of the window) to keep flow commands rare
        batch = max(1, min(self.limit_messages, max(credit, 1)) // 4)
        if room >= batch or (room > 0 and busy == 0):
            if self.stopped:  # message.stop took the octet credit too
                session.message_flow(self.destination, CreditUnit.BYTE, _UNLIMITED)
                self.stopped = False
            session.message_flow(self.destination, CreditUnit.MESSAGE, room)
            self.granted += room


def _waiting(paused: bool, session: Session | None, legacy: str, link: Amqp10Link) -> list[str]:
    out = ["stopping"] if paused else []
    if session is None or not session.attached:
        out.append(f"0-10 session on {legacy}")
    if not link.up:
        out.append(f"1.0 link to {link.address!r} on {link.connection_name}")
    return out


def _usable(session: Session | None) -> bool:
    """True if commands can still be sent on ``session`` (now, or replayed on resume)."""
    return session is not None and session.state in (
        SessionState.ATTACHED, SessionState.ATTACHING, SessionState.DETACHED)


def _runs(items: list[tuple[Session, str, int]]) -> Iterable[tuple[Session, str, list[int]]]:
    """Group consecutive (session, fate) items: one 0-10 command per run of ids."""
    run: list[int] = []
    key: tuple[Session, str] | None = None
    for session, fate, cid in items:
        if key is not None and (key[0] is not session or key[1] != fate):
            yield key[0], key[1], run
            run = []
        key = (session, fate)
        run.append(cid)
    if key is not None:
        yield key[0], key[1], run


def plain_copy(event: MessageReceived, route: Route) -> AmqpMessage:
    """The message as plain 1.0 (no CloudEvents) for dead-lettering, its user-id placed
    by ``route``'s rule for the dead-letter connection's login.

    A message the mapping refuses keeps its body as data, its UUID message-id, and
    its whole 0-10 header segment (binary, annotation ``x-amqp-bridge-0-10-header``).
    """
    try:
        return to_amqp10(event.delivery_properties, event.message_properties, event.body,
                         user_id=route.user_id, login_user=route.dead_letter_login_user)
    except MappingError:
        plain = AmqpMessage(body=[event.body])
        plain.body_kind = BodyKind.DATA
        mp = event.message_properties
        if mp is not None and isinstance(mp.message_id, uuid.UUID):
            plain.properties.message_id = mp.message_id
        plain.message_annotations[LEGACY_HEADER_ANNOTATION] = encode_header(tuple(event.header))
        return plain


# --- 1.0 address → 0-10 exchange -----------------------------------------------------------


@dataclass(slots=True, eq=False)
class _Received:
    """A 1.0 delivery taken from the source, until it is settled there."""

    delivery: Delivery | None
    """None once the link it came on is gone (the source redelivers it)."""
    size: int
    data: bytes | None = None
    """The received message, kept while an exception may need to dead-letter it (or the
    route's tap record it as delivered)."""
    key: Any = None
    t0: float = 0.0
    """When it was received (``time.monotonic()``), for the latency histogram."""


class Amqp10ToLegacy:
    """A 1.0 address drained into a 0-10 exchange (see the module docstring)."""

    def __init__(self, container: Container, route: Route, amqp10: Any,
                 legacy: LegacyConnection, dead_letter: Any | None) -> None:
        self.name = route.name
        self.route = route
        self.translator = Translator(route)
        self.legacy = legacy
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        target = route.target
        self.exchange = target.exchange if target.exchange is not None else ""
        self.paused = False
        self.session: Session | None = None
        self.progress = False  # the current session has moved a message
        self.in_flight: dict[int, _Received] = {}
        self.dlq_in_flight: dict[Delivery, _Received] = {}
        self.dlq_waiting: deque[tuple[_Received, bytes]] = deque()
        self.bytes = 0
        self.seen = DeliveredIds(route.dedupe.window) if route.dedupe else None
        self._unflushed = False  # transfers sent since the last session.flush
        self.tap: RouteTap | None = None
        """The route's archive tap (set by the bridge when the route has ``tap``)."""
        assert route.source.address is not None
        self.receiver = Amqp10Link(container, amqp10, route.source.address, sender=False,
                                   owner=self, name=f"{route.name}.source", route=route.name)
        self.dlq: Amqp10Link | None = None
        if dead_letter is not None:
            self.dlq = Amqp10Link(container, dead_letter[0], dead_letter[1], sender=True,
                                  owner=self, name=f"{route.name}.dead-letter", route=route.name)
        legacy.add(self)

    # -- 0-10 side -----------------------------------------------------------------------

    def on_session(self, session: Session, resumed: bool) -> None:
        self.session = session
        self.progress = False
        self._kick()

    def on_suspended(self) -> None:
        # transfers not completed yet are replayed on the resumed session
        self.stats.credit = 0

    def on_lost(self) -> bool:
        # transfers not completed may or may not have reached the broker: give the
        # 1.0 messages back (released) so they are redelivered
        self.session = None
        self.stats.credit = 0
        for received in self.in_flight.values():
            if received.delivery is not None:
                give_back(received.delivery, failed=True)  # the 0-10 broker may have it
                self.stats.released += 1
        self.in_flight.clear()
        self.bytes = 0
        self._recount()
        return self.progress

    def on_event(self, event: Event) -> None:
        if isinstance(event, CommandsCompleted):
            seen = self.seen
            stats = self.stats
            now = time.monotonic()
            for command_id in event.commands:
                received = self.in_flight.pop(command_id, None)
                if received is None:
                    continue
                self.progress = True
                self.bytes -= received.size
                stats.delivered += 1
                stats.latency.observe(now - received.t0)
                if self.tap is not None:
                    self.tap.delivered(received.data)
                if seen is not None and received.key is not None:
                    seen.add(received.key)
                if received.delivery is not None:
                    received.delivery.update(Delivery.ACCEPTED)
                    received.delivery.settle()
            self._recount()
            self._kick()
        elif isinstance(event, ExecutionExceptionReceived):
            log.warning("route %s: 0-10 exception %s: %s", self.name, event.error_code,
                        event.description, extra=self.legacy.log_fields(
                            "session_exception", route=self.name, error=event.description))
            if event.command_id is None:
                return
            received = self.in_flight.pop(event.command_id, None)
            if received is None:
                return
            self.progress = True  # the culprit is known and taken care of
            self.bytes -= received.size
            self._recount()
            condition = _EXCEPTION_CONDITIONS.get(event.error_code, "amqp:internal-error")
            reason = f"0-10 broker raised {event.error_code} ({condition}): {event.description}"
            self._dead_letter(received, received.data, reason, condition)
            # the session is over: on_lost gives the rest back

    # -- 1.0 side ------------------------------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        if link is self.dlq:
            while self.dlq_waiting and self.dlq.up:
                received, copy = self.dlq_waiting.popleft()
                self.dlq_in_flight[self.dlq.send(copy)] = received
        self._kick()

    def on_link_down(self, link: Amqp10Link) -> None:
        if link is self.receiver:
            # the source redelivers what it sent on the link: forget those deliveries, but keep
            # the transfers (their completion still records their message-ids)
            for received in self.in_flight.values():
                received.delivery = None
            for received in self.dlq_in_flight.values():
                received.delivery = None
            self.dlq_waiting.clear()  # redelivered, so dead-lettered again then
            self._recount()
        else:
            # dead-letter copies in flight may or may not have arrived: redeliver the originals
            for received in self.dlq_in_flight.values():
                if received.delivery is not None:
                    give_back(received.delivery, failed=False)
                    self.stats.released += 1
            self.dlq_in_flight.clear()
            self._recount()

    def on_credit(self, link: Amqp10Link) -> None:
        pass  # a receiver's credit is ours to give; a dead-letter sender's is not needed

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        if link is self.dlq:
            self._dead_letter_outcome(delivery)
            return
        if not delivery.readable or delivery.partial:
            return
        receiver = link.link
        data = receiver.recv(delivery.pending)
        receiver.advance()
        stats = self.stats
        stats.received += 1
        session = self.session
        if self.paused or session is None or not session.attached:
            give_back(delivery, failed=False)  # stopping, or no 0-10 session right now: give it back
            stats.released += 1
            return
        received = _Received(delivery, len(data), t0=time.monotonic())
        tap = self.tap
        try:
            message = AmqpMessage.decode(data)
        except MappingError as exc:
            stats.mapping_errors += 1
            if tap is not None:
                tap.received(data)
            self._dead_letter(received, data, f"cannot translate: {exc}", str(MAPPING_ERROR))
            return
        if redelivered_1_0(message.header):
            stats.redelivered += 1
        if self.seen is not None:
            received.key = message_id_key(message.properties.message_id)
            if received.key is not None and received.key in self.seen:
                stats.duplicates_suppressed += 1
                delivery.update(Delivery.ACCEPTED)
                delivery.settle()
                self._kick()
                return
        if tap is not None:
            tap.received(data)
        try:
            dp, mp, body = self.translator.amqp10_to_legacy(message)
        except MappingError as exc:
            stats.mapping_errors += 1
            self._dead_letter(received, data, f"cannot translate: {exc}", str(MAPPING_ERROR))
            return
        command_id = session.message_transfer(self.exchange, (dp, mp), body,
                                              accept_mode=AcceptMode.NONE,
                                              acquire_mode=AcquireMode.PRE_ACQUIRED)
        if self.dlq is not None or (tap is not None and tap.wants_delivered):
            received.data = data
        received.size = len(body)
        self.in_flight[command_id] = received
        self.bytes += received.size
        self._recount()

        self._unflushed = True
        self._kick()

    # -- fates ---------------------------------------------------------------------------

    def _dead_letter(self, received: _Received, data: bytes | None, reason: str,
                     condition: str) -> None:
        if received.delivery is None:
            return  # the source redelivers it anyway
        log_refused(self.name, reason, dead_lettered=self.dlq is not None and data is not None)
        if self.dlq is None or data is None:
            reject(received.delivery, condition, reason)
            self.stats.rejected += 1
            self._kick()
            return
        try:
            copy = dead_letter_copy(AmqpMessage.decode(data), self.name, reason)
        except MappingError:
            copy = data  # not even decodable: forward the bytes as they came
        received.data = None
        if self.dlq.up:
            self.dlq_in_flight[self.dlq.send(copy)] = received
        else:
            self.dlq_waiting.append((received, copy))
        self._recount()

    def _dead_letter_outcome(self, dlq_delivery: Delivery) -> None:
        if not dlq_delivery.remote_state:
            return
        received = self.dlq_in_flight.pop(dlq_delivery, None)
        state = dlq_delivery.remote_state
        dlq_delivery.settle()
        if received is None or received.delivery is None:
            return
        if state == Delivery.ACCEPTED:
            received.delivery.update(Delivery.ACCEPTED)
            received.delivery.settle()
            self.stats.dead_lettered += 1
        else:
            give_back(received.delivery, failed=False)
            self.stats.released += 1
        self._recount()
        self._kick()

    def _kick(self) -> None:
        self.legacy.defer(self._end_of_burst)

    def _end_of_burst(self) -> None:
        """Ask the broker for the completion of this burst's transfers; grant credit."""
        session = self.session
        if self._unflushed and session is not None and session.attached:
            session.flush(completed=True)
        self._unflushed = False
        self._grant()

    def _recount(self) -> None:
        stats = self.stats
        stats.in_flight = self.pending
        stats.in_flight_bytes = self.bytes
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)

    @property
    def pending(self) -> int:
        """Messages taken from the source whose outcome is not settled yet."""
        return len(self.in_flight) + len(self.dlq_in_flight) + len(self.dlq_waiting)

    @property
    def ready(self) -> bool:
        """Both sides attached (the 1.0 receiver and the 0-10 session), and not stopping."""
        return not self.waiting_for()

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (empty when it is); safe from any thread."""
        return _waiting(self.paused, self.session, self.legacy.name, self.receiver)

    def pause(self) -> None:
        """Take no more messages from the source (graceful shutdown)."""
        self.paused = True

    def on_tap_ready(self) -> None:
        """The tap's writer caught up: grant credit again."""
        self._kick()

    def _grant(self) -> None:
        session = self.session
        # a 0-10 target grants no credit to a publisher: what bounds the route there is
        # the session's replay buffer (transfers the broker has not completed yet)
        self.stats.credit = max(0, session.max_outstanding - session.outstanding) \
            if session is not None and session.attached else 0
        link = self.receiver
        if not link.up or self.paused:
            return
        if self.tap is not None and self.tap.backpressured:
            return  # the archive writer is behind: take nothing more for now
        if session is None or not session.attached or self.bytes >= self.limit_bytes \
                or self.legacy.backpressured or not session.can_send:
            return
        receiver = link.link
        # RabbitMQ 3.10 counts a top-up against its own delivery count, which lags behind
        # the messages already on their way to us: it may send the credit still
        # outstanding once more (proton's credit then goes negative). Counting that
        # credit twice keeps the window.
        busy = self.pending + receiver.queued + 2 * max(receiver.credit, 0)
        room = self.limit_messages - busy
        if room >= max(1, self.limit_messages // 4) or (room > 0 and busy == 0):
            receiver.flow(room)


