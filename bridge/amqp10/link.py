"""One AMQP 1.0 link kept attached for its owner: :class:`Amqp10Link`.

Theory of operation
-------------------
Every link the bridge uses (a route's sender or receiver, a dead-letter sender, a
façade subscriber's receiver) sits on a session of its own, so that a peer ending the
session over one link takes no other link with it. The link is replaced by a fresh
one (on a fresh session) whenever it is lost, and its owner hears of it through the
typed :class:`LinkOwner` interface; the connection's handler tells the link when the
transport drops (:class:`~bridge.amqp10.connection.LinkWatcher`). Old links and
sessions are closed in the order proton and RabbitMQ 3.10 need, and each session is
freed exactly once: when the peer's end of it is dispatched (see
:meth:`Amqp10Link._retire`), or when the transport drops (proton would begin it again
on the next transport before the peer's open says how many sessions it allows:
:meth:`Amqp10Link.on_disconnected`). A fresh session begins only when the connection's handler
says no session we ended still waits for the peer's end
(:meth:`~bridge.amqp10.connection.Amqp10ConnectionHandler.when_channels_free`), and a
link whose attach is not answered within :data:`ATTACH_TIMEOUT` is treated as lost.
"""

from __future__ import annotations

import logging
import struct
import time
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from cproton_ffi import ffi
from cproton_ffi.lib import pn_delivery, pn_link_advance, pn_link_send
from proton import Condition, Delivery, Endpoint, Link, Terminus
from proton.reactor import Container

from ..config import Reconnect
from ..runtime import Timer
from ..runtime.containment import Part
from ..runtime.reactor import DirectDeliveries
from .connection import Amqp10ConnectionHandler, end_session, free_session, when_channels_free
from .outcomes import condition_text
from .poison import poison_suspected

log = logging.getLogger("bridge.routes")
"""Logged under the routes' name, as before the move (operators filter on it)."""

RELINK = Reconnect(initial_delay=0.5, max_delay=30.0)
"""Backoff before re-creating a 1.0 link the peer detached, closed or whose session it ended."""
STABLE_LINK = 10.0
"""Seconds a link must have been up for its loss not to count as a repeated failure."""
ATTACH_TIMEOUT = 30.0
"""Seconds the peer has to answer a link's attach (and its session's begin) before the
link is treated as lost: RabbitMQ 4 silently drops a begin on a channel it has not
finished ending, and a link waiting for it would never attach."""


class LinkOwner(Protocol):
    """What the owner of an :class:`Amqp10Link` implements (all on the event loop)."""

    def on_link_up(self, link: Amqp10Link) -> None:
        """The link (a fresh one after a loss) is attached."""

    def on_link_down(self, link: Amqp10Link) -> None:
        """The link is lost: deliveries in flight on it are void (forget them, never
        settle them). :attr:`Amqp10Link.refusal` says whether a message may be to blame;
        set :attr:`Amqp10Link.explained` when one was."""

    def on_credit(self, link: Amqp10Link) -> None:
        """The peer changed the link's credit."""

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        """A delivery on the link changed: an outcome (sender) or a message (receiver)."""


def send_raw(sender: Link, data: bytes) -> Delivery:
    """Send already-encoded AMQP 1.0 message bytes as one unsettled delivery."""
    delivery = sender.delivery(sender.delivery_tag())
    sender.stream(data)
    sender.advance()
    return delivery


_TAG = struct.Struct(">Q")
"""A delivery tag of :meth:`Amqp10Link.send`: the link's count of sends."""


class Amqp10Link:
    """A proton sender or receiver on its own session, kept attached for its owner.

    The link is replaced by a fresh one (on a fresh session) whenever it is lost:

    * the transport drops: the old session is freed at once, with the old link and
      its void deliveries (nothing of them is sent: proton would begin the session
      again on the next transport, before the peer's open says how many it allows);
      new ones wait for proton's reconnect and the peer's open;
    * the peer detaches or closes the link, or ends its session: the old ones are
      closed and the new ones opened after a backoff. RabbitMQ 3.10 reports most
      errors by ending the session, and answers a closing detach with a
      non-closing one (rabbitmq-server #2594), so both kinds of detach are
      handled alike.

    The owner is told through :class:`LinkOwner`.

    A session freed here (at the peer's end, or when the transport drops) outlives every
    reference this object holds to its link, as proton needs (docs/architecture.md,
    "the reference rule"): a link's or delivery's last reference going after its
    session's frees the link twice. The link and session are let go in that order
    (:meth:`_let_go`), the attach timer holds neither (:meth:`_check_attach`), and the
    owner's deliveries are :class:`~bridge.runtime.reactor.LightDelivery` objects, which
    hold their session themselves.
    """

    loop_event_methods: ClassVar[frozenset[str]] = frozenset({"on_link_flow"})
    """Handler methods that read only the event's ``link``: the loop may call them with a
    light stand-in for proton's event (:mod:`bridge.runtime.shortcuts`)."""

    def __init__(self, container: Container, connection: Any, address: str | None, *,
                 sender: bool, owner: LinkOwner, name: str, route: str = "",
                 browse: bool = False, pinned: bool = False,
                 filters: dict[Any, Any] | None = None,
                 properties: dict[Any, Any] | None = None) -> None:
        self.container = container
        self.connection = connection
        self.address = address
        """The node (None: a sender to the anonymous terminus; each message's ``to``
        names its node)."""
        self.is_sender = sender
        self.browse = browse
        """A receiver whose source has distribution-mode copy: it sees the node's messages
        without taking them (a 0-10 not-acquired subscription, qpid.messaging's browse)."""
        self.filters = filters
        """A receiver's source filter set (symbol → described value), sent on every attach
        (a consumer's 0-9-1 arguments, :mod:`bridge.topology.consumer_args`)."""
        self.properties = properties
        """The link's properties, sent on every attach."""
        self.owner = owner
        self.name = name
        self.route = route
        handler = connection.handler
        self.handler: Amqp10ConnectionHandler | None = \
            handler if isinstance(handler, Amqp10ConnectionHandler) else None
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
        self.last_error: str | None = None
        """Why the link was last lost or refused (the peer's text), until it attaches
        again: what ``/readyz`` shows; the same error again is logged at INFO, not
        WARNING."""
        self.last_condition: str | None = None
        """The error condition's name with :attr:`last_error` (None: none given)."""
        self.down_since = time.monotonic()
        """When the link was last lost, or first opened (while it is not :attr:`up`)."""
        self.overdrawn = 0
        """Receiver: messages the peer sent beyond the credit granted, in all (RabbitMQ 3.x
        does under load: it counts a top-up against a delivery count that lags)."""
        self._held_credit = 0
        self._holding = False
        """Receiver: a give-back's disposition is not written yet; credit added meanwhile
        is :attr:`_held_credit`, flowed on the loop's next round (:meth:`hold_credit`)."""
        self._sent = 0
        """Messages sent on this link's generations (:meth:`send`'s delivery tags)."""
        self._direct = DirectDeliveries.of(container)
        """Hands the current link's deliveries to :meth:`_delivered` without an event."""
        self._detaching: list[tuple[Any, Any]] = []
        """Links given up, with their sessions: each session is ended once the peer has
        detached its link."""
        self._awaiting_channel = False
        """A fresh session waits for the connection's channels (:meth:`_open`)."""
        self._forgotten = False
        """:meth:`forget` was called: the connection stops telling this link once detached."""
        self._pool = self.handler.pool if self.handler is not None and not pinned else None
        """The pool that chooses this link's connection at its first open (None: it stays
        on ``connection``; ``pinned``: a consumer of an exclusive queue, which only the
        connection that declared it may consume)."""
        if self.handler is not None and self._pool is None:
            self.handler.watch(self)
        self._open()

    # -- the owner's API -----------------------------------------------------------------

    @property
    def credit(self) -> int:
        """The link credit, with what :meth:`hold_credit` holds back (0 when not attached)."""
        return self.link.credit + self._held_credit if self.up else 0

    # A receiver's credit can go below 0: RabbitMQ 3.x's 1.0 plugin counts a top-up
    # against its own delivery count, which lags behind the messages already on their
    # way to us, so it may send a few beyond the credit.  Proton puts a negative credit
    # on the wire as a uint (-1 is 4294967295: "send everything"), so a receiver's
    # credit is only ever raised through add_credit, which never leaves it below 0.

    @property
    def promised(self) -> int:
        """Receiver: messages the peer may still send plus those received and not taken
        yet (0 when not attached; credit overdrawn by the peer counts as none)."""
        if not self.up:
            return 0
        return max(self.link.credit, 0) + self.link.queued + self._held_credit

    def add_credit(self, room: int) -> None:
        """Receiver: let the peer send ``room`` more messages (``room`` > 0); credit
        the peer overdrew is written off first, so the link credit becomes ``room``
        more than what was left, never negative. Held back while :meth:`hold_credit`
        holds (counted in :attr:`credit` and :attr:`promised` meanwhile)."""
        if self._holding:
            self._held_credit += room
            return
        if self.link.drain_mode:
            self.link.drain_mode = False
        overdrawn = -min(self.link.credit, 0)
        self.overdrawn += overdrawn
        self.link.flow(room + overdrawn)

    def hold_credit(self) -> None:
        """Receiver: one of its deliveries was just given back (released or modified):
        credit added until the loop's next round is held back until then. Proton writes
        a session's flow frames before its dispositions, so credit granted in the same
        round would reach the broker before the give-back, and the broker would send the
        next message first: the message given back would come after it, where from a
        legacy broker (and from RabbitMQ over 0-9-1) it comes again first."""
        if not self._holding:
            self._holding = True
            self.container.schedule(0, Timer(self._credit_hold_over))

    def _credit_hold_over(self) -> None:
        self._holding = False
        room, self._held_credit = self._held_credit, 0
        if room > 0 and self.up:  # (a link lost meanwhile: its owner grants anew)
            self.add_credit(room)

    def drain(self) -> None:
        """Receiver: ask the peer to use up now, or give back, the credit it still has
        (drain). RabbitMQ 4 answers at once; RabbitMQ 3.x leaves a drain unanswered and
        the credit simply stays. The next :meth:`add_credit` leaves drain mode; credit
        :meth:`hold_credit` holds is dropped."""
        self._held_credit = 0
        if self.up and self.link.credit > 0:
            self.link.drain_mode = True
            self.link.flow(0)

    def message_size_limit(self, configured: int | None) -> int | None:
        """The largest message to send on this link: ``configured`` (a route's
        ``max_message_size``), else the max-message-size the peer announced when it
        attached the link (None: no limit)."""
        return configured if configured is not None else self.peer_max_message_size

    @property
    def open(self) -> bool:
        """Attached or attaching, and not closed for good (the links gauge)."""
        return not self.closing and (self.link is not None or self._awaiting_channel)

    @property
    def detached(self) -> bool:
        """Closed for good (:meth:`close`) and detached by the peer too: every link this
        object gave up has the peer's detach (or its session's end)."""
        return self.closing and self.link is None and not self._detaching

    @property
    def node(self) -> str:
        """The address as logs name it (a sender to the anonymous terminus: so named)."""
        return "the anonymous terminus" if self.address is None else repr(self.address)

    @property
    def connection_name(self) -> str:
        """The configured name of the link's connection."""
        return self.handler.name if self.handler is not None else "?"

    def log_fields(self, event: str) -> dict[str, Any]:
        """``extra`` fields of this link's log lines."""
        return {"event": event, "route": self.route, "connection": self.connection_name,
                "peer": self.handler.peer if self.handler is not None else "",
                "link": self.name,
                "address": self.address or ""}

    def send(self, data: bytes) -> Any:
        """Send encoded message bytes unsettled (only while :attr:`up`): :func:`send_raw`
        in proton's C calls. Returns the C delivery (a cffi pointer, which hashes by its
        address: the key of the outcome's :class:`~bridge.runtime.reactor.LightDelivery`'s
        ``_impl``), alive on the link until settled: proton's wrapper and tag generator
        cost more than the send itself, and so do the Python functions of ``cproton``
        around these C ones (the tag and the message go as cffi buffers, as they pass
        them)."""
        self._sent += 1
        link = self.link._impl
        tag = ffi.from_buffer(_TAG.pack(self._sent))
        delivery = pn_delivery(link, (len(tag), tag))
        sent = pn_link_send(link, ffi.from_buffer(data), len(data))
        if sent < 0:
            self.link._check(sent)  # raises proton's LinkException
        pn_link_advance(link)
        return delivery

    def close(self) -> None:
        """Detach for good (shutdown)."""
        if self.up:
            log.info("route %s: 1.0 link %s detached", self.route, self.name,
                     extra=self.log_fields("link_detached"))
        self.closing = True
        self.up = False
        if self.link is not None:
            self._retire(self.link, self.session)
            self._let_go()

    def forget(self) -> None:
        """Close for good and stop the connection from telling this link about reconnects,
        once every link it gave up is detached: until then a lost transport still frees
        their sessions (:meth:`on_disconnected`; proton would begin them again)."""
        self.close()
        self._forgotten = True
        self._unwatch_when_detached()

    def _unwatch_when_detached(self) -> None:
        if self._forgotten and not self._detaching and self.handler is not None:
            self.handler.unwatch(self)

    def recover_from_fault(self, reason: str) -> bool:
        """An internal fault hit this link (:mod:`bridge.runtime.containment`): treat it as lost
        (the owner's void deliveries, a fresh link after the usual backoff), or, when the
        fault came while re-creating it, try that again later. False when the link is
        closed for good (nothing to recover)."""
        if self.closing:
            return False
        if self.link is not None:
            self._lost(reason)
        else:
            self.failures += 1
            self.container.schedule(RELINK.delay(self.failures - 1), Timer(self._reopen))
        return True

    # -- proton events (this object is the link's and the session's handler) -------------

    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        if link == self.link:
            if not self.up:
                self.up = True
                self.up_since = time.monotonic()
                self._held_credit = 0  # (held for the link lost: the owner grants anew)
                self.last_error = self.last_condition = None
                self.peer_max_message_size = link.remote_max_message_size or None
                log.info("route %s: 1.0 link %s attached to %s", self.route, self.name,
                         self.node, extra=self.log_fields("link_attached"))
                self.owner.on_link_up(self)
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
        """The peer ended a session: give it up if we had not yet, and free it once it is
        closed on our side too — here only (see :meth:`_retire`)."""
        session = event.session
        if session == self.session:
            self._lost("session ended by the peer", session.remote_condition)
        elif (entry := _entry_of(self._detaching, session)) is not None:
            self._detaching.remove(entry)  # ended by the peer before it detached the link
            self._end_session(session)
        if session.state & Endpoint.LOCAL_CLOSED:
            free_session(session)  # its end handshake is complete
        if self.handler is not None:
            self.handler.session_ended(session)
        self._unwatch_when_detached()

    def on_disconnected(self) -> None:
        """The connection's transport is gone; proton reconnects. Every session of the
        link is freed now: proton would begin each again on the next transport before the
        peer's open is read, beyond the session limit of a peer that allows fewer (a
        failover; RabbitMQ 4 closes the connection at such a begin, and the next transport
        began them again). A fresh link begins through the connection's gate."""
        detaching, self._detaching = self._detaching, []
        while detaching:
            link, session = detaching.pop()
            free_session(session)
            del link  # (a link's last reference before its session's: see the class)
        self._unwatch_when_detached()
        if self.closing or self.link is None:
            return
        session, was_up = self.session, self.up
        self._let_go()  # (the link's references go; ``session`` holds the session)
        # freed with its links and their void deliveries, which are never sent (settled
        # by proton, not by the bridge: nothing goes out on a transport that is gone);
        # the owner lets go of what it held of them while ``session`` is still held here
        free_session(session)
        if was_up:
            self.up = False
            self.down_since = time.monotonic()
            if self.connection.state & Endpoint.LOCAL_CLOSED:
                log.info("route %s: 1.0 link %s detached: connection closed", self.route,
                         self.name, extra=self.log_fields("link_detached"))
            else:
                log.info("route %s: 1.0 link %s detached: connection lost", self.route,
                         self.name, extra=self.log_fields("link_lost"))
            self.owner.on_link_down(self)
        # a fresh link, once proton has let go of the dead transport
        self.container.schedule(0, Timer(self._reopen))

    # -- internals -----------------------------------------------------------------------

    def _open(self) -> None:
        """Begin a fresh session and attach the link on it, once the connection's
        channels allow (:meth:`Amqp10ConnectionHandler.when_channels_free`)."""
        if not self._awaiting_channel:
            self._awaiting_channel = True
            if self._pool is not None:  # the first open: the pool chooses the connection
                pool, self._pool = self._pool, None
                pool.place(self._placed)
            else:
                when_channels_free(self.handler, self._begin)

    def _placed(self, handler: Amqp10ConnectionHandler) -> None:
        """The pool chose ``handler``'s connection: the link lives there from now on
        (a link never moves once placed; a reconnect re-attaches it there)."""
        if self.closing:
            self._awaiting_channel = False
            return
        self.handler, self.connection = handler, handler.connection
        handler.watch(self)
        handler.when_channels_free(self._begin)

    def _begin(self) -> None:
        self._awaiting_channel = False
        if self.closing or self.link is not None \
                or self.connection.state & Endpoint.LOCAL_CLOSED:
            return
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
            if self.browse:
                link.source.distribution_mode = Terminus.DIST_MODE_COPY
            if self.filters:
                link.source.filter.put_dict(self.filters)
        if self.properties:
            link.properties = self.properties
        link.handler = self
        link.open()
        self.session, self.link = session, link
        if self._direct is not None:
            self._direct.watch(link, self._delivered)
        self._check_attach(self.generation, time.monotonic())

    def _check_attach(self, generation: int, sent: float) -> None:
        """Treat the link of ``generation`` as lost unless its attach (sent at ``sent``) is
        answered within :data:`ATTACH_TIMEOUT`. The timer holds the generation's number,
        not proton's link: a wrapper kept that long outlived the link's session, and
        releasing it then ended in a double free in proton (the façade churn of clients
        that come and go, 1 run in 3)."""
        delay = max(0.0, sent + ATTACH_TIMEOUT - time.monotonic())
        this = weakref.ref(self)  # (nor this link: a client's consumer that left goes now)

        def overdue() -> None:
            link = this()
            if link is not None:
                link._attach_overdue(generation, sent)

        self.container.schedule(delay, Timer(overdue))

    def _attach_overdue(self, generation: int, sent: float) -> None:
        if generation != self.generation or self.link is None or self.up or self.closing:
            return
        handler = self.handler  # (a transport lost since would have let the link go)
        if handler is not None:
            handler.unanswered["attach"] += 1
        self._lost(f"attach not answered within {ATTACH_TIMEOUT:g} s")

    def _delivered(self, delivery: Delivery) -> None:
        """A delivery on the current link (from :class:`DirectDeliveries`)."""
        self.owner.on_delivery(self, delivery)

    def _let_go(self) -> None:
        """Forget the current link and session: from now on their events are ignored. The
        link's references go first (its watch, then this object's), its session's last."""
        if self._direct is not None and self.link is not None:
            self._direct.unwatch(self.link)
        self.link = self.session = None  # (assigned left to right: the link first)

    def _retire(self, link: Any, session: Any) -> None:
        """Close a link, and its session once the peer has detached the link too; the
        session is freed when the peer's end of it is dispatched.

        Ending the session earlier — before the peer's begin, or while its answers about
        the link are still on the way — makes proton fail the whole connection ("begin
        reply to unknown channel", or "no such channel" when proton reuses the channel
        for a new session and the old session's late frames arrive): every route on it,
        which a façade client subscribing and leaving at once could otherwise do at will.

        Freeing it anywhere but in :meth:`on_session_remote_close` freed it twice:
        proton marks a session remotely closed as it reads the peer's end, before the
        event is dispatched, so a link given up in between (a façade client leaving in
        the same loop round as RabbitMQ's begin and end for a missing queue) saw the
        end, freed the session, and the event freed it again — a double free that proton
        does not check outside debug builds, and a segfault in its C code later."""
        if link.state & Endpoint.LOCAL_ACTIVE:
            link.close()
        if (session.state & Endpoint.LOCAL_ACTIVE
                and not (link.state | session.state) & Endpoint.REMOTE_CLOSED):
            self._detaching.append((link, session))  # ended in _link_gone
            return
        self._end_session(session)

    def _end_session(self, session: Any) -> None:
        """Close a session given up (freed once the peer's end is dispatched); the
        connection's handler holds new sessions back until the peer's end comes."""
        end_session(self.handler, session)

    def _link_gone(self, link: Any) -> None:
        """The peer detached a link we gave up: its session may end now."""
        for entry in self._detaching:
            if entry[0] == link:
                self._detaching.remove(entry)
                self._end_session(entry[1])
                self._unwatch_when_detached()
                return

    def _lost(self, what: str, condition: Condition | None = None) -> None:
        if self.closing or self.link is None:
            return
        reason = f"{what}: {condition_text(condition)}"
        was_up, self.up = self.up, False
        if was_up:
            self.down_since = time.monotonic()
        repeated = not was_up and reason == self.last_error
        self.last_error = reason
        self.last_condition = str(condition.name) if condition is not None else None
        old_link, old_session = self.link, self.session
        self._let_go()
        # the owner may blame a message in flight for the peer's error (bridge.amqp10.poison)
        self.refusal = condition if poison_suspected(condition) else None
        self.explained = False
        try:
            self.owner.on_link_down(self)
        finally:
            self.refusal = None
        if self.explained:
            # a message was to blame, not the link: come back soon, without growing backoff
            delay = RELINK.delay(0)
        else:
            lived = time.monotonic() - self.up_since if was_up else 0.0
            self.failures = 0 if lived >= STABLE_LINK else self.failures + 1
            delay = RELINK.delay(self.failures - 1) if self.failures else 0.0
        # the peer's refusal once at WARNING; the same again (a link it keeps refusing,
        # retried with a growing backoff) at INFO
        log.log(logging.INFO if repeated else logging.WARNING,
                "1.0 link %s to %s: %s; re-attaching in %.2fs", self.name, self.node,
                reason, delay, extra={**self.log_fields("link_lost"), "error": reason,
                                      "delay": round(delay, 3), "repeated": repeated})
        self._retire(old_link, old_session)
        self.container.schedule(delay, Timer(self._reopen))

    def _reopen(self) -> None:
        if not self.closing and self.link is None \
                and self.connection.state & Endpoint.LOCAL_ACTIVE:
            self._open()

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault here is treated as the link lost: re-attached after a backoff."""
        def recover(reason: str) -> Callable[[], bool] | None:
            if not self.recover_from_fault(reason):
                return None
            return lambda: self.up or self.closing

        return Part("amqp10_link", f"1.0 link {self.name}",
                    {"route": self.route, "link": self.name,
                     "connection": self.connection_name, "address": self.address or ""},
                    "link lost, re-attaching", recover, back=lambda: self.up or self.closing)


def _entry_of(entries: list[tuple[Any, Any]], session: Any) -> tuple[Any, Any] | None:
    """The (link, session) entry of ``session`` in ``entries`` (None: none)."""
    return next((entry for entry in entries if entry[1] == session), None)


__all__ = ["ATTACH_TIMEOUT", "RELINK", "STABLE_LINK", "Amqp10Link", "LinkOwner", "send_raw"]
