"""0-9-1 façade consume: a 1.0 address consumed by basic.consume / basic.get clients.

:class:`Consume091` is the route (a :class:`~bridge.facade.core.consume.FacadeConsume`:
its bound, statistics, dead-letters and unmappable messages are the core's, shared
with the 0-10 front);
each ``basic.consume`` on its queue is a :class:`Consumer091` with its own 1.0
receiver on the route's address, and each channel's ``basic.get`` on it one more
(a *getter*, kept for the channel's next gets).

Credit
    1.0 link credit follows the 0-9-1 prefetch end to end: a consumer is promised
    at most its prefetch-count (``basic.qos``, per consumer) less what it holds
    unacknowledged, and all consumers of a channel together at most the channel's
    global prefetch less its unacknowledged deliveries; without a prefetch (and
    for no-ack consumers) the route's ``max_in_flight`` bounds it.  A no-ack
    consumer, and a getter, is also not promised more while its socket has megabytes
    unsent (their deliveries are settled as they are written, so only the client's
    reading bounds them).
    The prefetch is also enforced at delivery: RabbitMQ 3.x's 1.0 plugin can send a
    few messages beyond the credit when credit is topped up while deliveries are on
    their way inside the broker, and those wait (held) until an ack makes room.
    Link credit is never taken back (RabbitMQ 3.x leaves a drain unanswered):
    what it still brings after a basic.cancel waits and is released when the
    link detaches.  A getter is promised one message per basic.get waiting (at
    most ``GET_WINDOW`` at a time); ``GET_GRACE`` seconds after a get's credit was granted (or at once if the
    link is already idle) the get is answered get-empty, and with no get left the
    getter drains its credit (RabbitMQ 4 gives it back at once; a message it brought
    later would be released, and come back marked redelivered).

Outcomes (:mod:`bridge.amqp10.outcomes`)
    ``basic.ack`` → accepted; ``basic.nack`` / ``basic.reject`` with requeue, and
    ``basic.recover(requeue)`` → given back (modified delivery-failed where the
    source supports it, else released: RabbitMQ marks it redelivered); without
    requeue → rejected.  A no-ack delivery is accepted as it is sent.  What a
    consumer's channel or connection leaves unacknowledged is given back at once.

The end
    ``basic.cancel`` stops deliveries; the link stays until the unacknowledged
    deliveries are settled (it carries their outcomes), then detaches.  A 1.0
    source that refuses the link ``CANCEL_AFTER`` times in a row (its queue is
    gone) cancels the consumer: ``basic.cancel`` from the server to a client that
    announced ``consumer_cancel_notify``, else channel.close 404.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, Any

from pamqp.commands import Basic, Queue
from proton import Delivery

from amqp091.connection import ProtocolError
from amqp091.methods import ReplyCode
from mappings.amqp091 import Delivery091
from mappings.message import AmqpMessage

from ...amqp10.link import Amqp10Link
from ...runtime import Timer
from ...runtime.containment import Part
from ..core.consume import FacadeConsume
from ..core.state import TemporaryQueue
from .state import Channel091

if TYPE_CHECKING:
    from ...topology.consumer_args import ConsumerTerms
    from .listener import Facade091

log = logging.getLogger("bridge.facade")

GET_GRACE = 0.2
"""Seconds a basic.get waits for a message its credit promised before get-empty (from
the grant; while the getter's link attaches, up to ``LINK_WAIT``)."""
LINK_WAIT = 10.0
"""Seconds a basic.get waits for its getter's 1.0 link to attach."""
CANCEL_AFTER = 3
"""Consecutive refusals of a consumer's 1.0 link by its source that cancel the consumer."""
GET_WINDOW = 16
"""basic.gets of a channel promised a message at once (the others wait their turn: a
client's gets are answered in order, and a burst of them must not pull a queue in)."""
BACKPRESSURE_RETRY = 0.05
"""Seconds before a no-ack consumer held back by its socket's unsent output looks again."""


@dataclass(eq=False, slots=True)
class _Held:
    """A 1.0 delivery mapped for the client (waiting to be delivered, or delivered)."""

    delivery: Delivery | None
    """None once void: the link it came on was lost, and the source redelivers it."""
    properties: Basic.Properties
    where: Delivery091
    body: bytes
    t0: float = 0.0
    data: bytes | None = None
    """The 1.0 message as received, kept when the route's tap records deliveries."""
    left: int | None = None
    """A getter's: the messages the broker had ready once this one was on its way to the
    bridge (:data:`COUNTING` while asked, None: not asked, -1: unknown)."""


COUNTING = -2
""":attr:`_Held.left` while the broker is asked."""


class Consumer091:
    """One basic.consume (or a channel's basic.gets) and its own 1.0 receiver link."""

    def __init__(self, route: Consume091, ch: Channel091, tag: str | None, *, no_ack: bool,
                 exclusive: bool, prefetch: int, getter: bool = False,
                 temporary: TemporaryQueue | None = None,
                 terms: ConsumerTerms | None = None) -> None:
        self.route = route
        self.ch = ch
        """The channel it delivers on (a temporary queue's: the binding's until adopted)."""
        self.tag = tag
        """The consumer tag; None for a channel's getter and a temporary queue's consumer
        not adopted yet."""
        self.getter = getter
        self.temporary = temporary
        """The temporary queue whose consumer this is (its link attached at queue.bind)."""
        self.binds: list[tuple[Channel091, bool]] = []
        """queue.binds waiting for the link to attach: (channel, reply owed)."""
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.prefetch = prefetch
        self.held: deque[_Held] = deque()
        self.unsettled: dict[int, _Held] = {}
        self.gets: deque[tuple[int, bool]] = deque()
        """Getter: (serial, no-ack flag) of each basic.get waiting for its answer."""
        self._get_serial = 0
        self._get_timed = 0
        """The last get whose grace is scheduled (only the first GET_WINDOW are)."""
        self._granted_at = 0.0
        """When the link was last given credit (monotonic): a get's grace runs from it."""
        self.cancelled = False
        self.closed = False
        self._retry_scheduled = False
        address = route.address if temporary is None or temporary.binding is None \
            else route.binding_address(temporary.binding[1])
        self.link = route.subscription_link(
            self, address, pinned_to=route.consumer_connection(),
            filters=terms.filters if terms else None,
            properties=terms.properties if terms else None)

    @property
    def engine(self) -> Any:
        return self.ch.client.engine

    @property
    def adopted(self) -> bool:
        """Consuming (a temporary queue's consumer is made at queue.bind, adopted by the
        basic.consume on the queue)."""
        return self.tag is not None

    @property
    def busy(self) -> int:
        """Messages promised (link credit), held and unacknowledged: the route's share."""
        return self.promised + len(self.unsettled)

    @property
    def promised(self) -> int:
        """Link credit outstanding plus messages received and not delivered yet."""
        return self.link.promised + len(self.held)

    def subscriber_credit(self) -> int:
        """What the client may still be sent (for the route's credit gauge)."""
        if self.cancelled or not self.ch.live:
            return 0
        if self.getter:
            return len(self.gets)
        if self.tag is None:
            return 0
        if self.no_ack or not self.prefetch:
            return self.route.limit_messages
        return max(0, self.prefetch - len(self.unsettled))

    # -- credit -------------------------------------------------------------------------------

    def grant(self, route_busy: int | None = None) -> int:
        """Top the link credit up to what the prefetch and the route allow; returns the
        credit added."""
        route = self.route
        if self.closed or self.cancelled or not self.link.up or not self.ch.live \
                or route.paused or (route.tap is not None and route.tap.backpressured):
            return 0
        promised = self.promised
        if self.getter:
            if self.ch.client.sock.backpressured:
                # a no-ack get is settled as it is written: a client that sends gets but
                # does not read would make us pull its whole queue into memory
                self._retry_later()
                return 0
            room = min(len(self.gets), GET_WINDOW) - promised
        elif self.tag is None:
            return 0  # a temporary queue nobody consumes yet: the 1.0 broker keeps it
        busy = route.busy if route_busy is None else route_busy
        if self.getter:
            room = min(room, route.limit_messages - busy)
        elif self.no_ack:
            if self.ch.client.sock.backpressured:
                self._retry_later()
                return 0
            room = route.room_for(route.limit_messages, promised, busy,
                                  idle=not self.unsettled)
        else:
            holding = len(self.unsettled) + promised
            room = route.room_for(self.prefetch or route.limit_messages, holding, busy,
                                  idle=holding == 0)
            if self.ch.global_prefetch:  # each may be promised the channel's whole share:
                # link credit on an empty queue cannot be taken back, so the share is not
                # split; pump() keeps what the channel's consumers deliver within it
                room = min(room, self.ch.global_prefetch - holding)
        if room <= 0 or route.bytes_in_flight >= route.limit_bytes:
            return 0
        self.link.add_credit(room)
        self._granted_at = time.monotonic()
        return room

    def _retry_later(self) -> None:
        if not self._retry_scheduled:
            self._retry_scheduled = True
            self.route.container.schedule(BACKPRESSURE_RETRY, Timer(self._retry))

    def _retry(self) -> None:
        self._retry_scheduled = False
        self.route.grant()

    # -- temporary queues ---------------------------------------------------------------------

    def answer_when_attached(self, ch: Channel091, reply: bool) -> None:
        """queue.bind of the temporary queue: bind-ok (if ``reply``) once the link is
        attached — the 1.0 broker keeps what is published from then on, as a bound queue
        does; publishes of the client wait until then.  Not attached within
        ``LINK_WAIT``: the channel is closed 404."""
        self.binds.append((ch, reply))
        ch.client.binds_pending += 1
        if self.link.up:
            self._answer_binds()
        else:
            self.route.container.schedule(LINK_WAIT, Timer(self._bind_timeout))

    def _answer_binds(self) -> None:
        binds, self.binds = self.binds, []
        for ch, reply in binds:
            if reply and ch.live:
                self.engine_of(ch).send_method(ch.number, Queue.BindOk())
                self.route.facade.flush_later(ch.client.sock)
            self.route.facade.bound(ch.client)

    def _bind_timeout(self) -> None:
        binds, self.binds = self.binds, []
        for ch, _ in binds:
            if ch.live:
                ch.client.facade_closes.add(ch.number)
                self.engine_of(ch).close_channel(
                    ch.number, ReplyCode.NOT_FOUND, f"the AMQP 1.0 source {self.link.address} "
                    f"did not attach within {LINK_WAIT:.0f}s", class_id=50, method_id=20)
                self.route.facade.flush_later(ch.client.sock)
            self.route.facade.bound(ch.client)

    @staticmethod
    def engine_of(ch: Channel091) -> Any:
        return ch.client.engine

    def adopt(self, ch: Channel091, tag: str, *, no_ack: bool, exclusive: bool) -> None:
        """basic.consume on the temporary queue: deliver on ``ch`` from now on."""
        self.ch, self.tag = ch, tag
        self.no_ack, self.exclusive, self.prefetch = no_ack, exclusive, ch.prefetch
        self.route.grant()

    # -- basic.get ----------------------------------------------------------------------------

    def get(self, no_ack: bool) -> None:
        """A basic.get: answered with the next message, or get-empty after ``GET_GRACE``."""
        self._get_serial += 1
        serial = self._get_serial
        self.gets.append((serial, no_ack))
        self.pump()
        if self.gets:
            self.route.grant()
            self._time_window()

    def _time_window(self) -> None:
        """Start the grace of each get that entered the window (its credit is granted
        now: a get waiting its turn is not answered get-empty for the wait)."""
        for serial, _ in islice(self.gets, GET_WINDOW):
            if serial > self._get_timed:
                self._get_timed = serial
                self._expire_later(serial, GET_GRACE if self.link.up else LINK_WAIT)

    def _expire_later(self, serial: int, delay: float) -> None:
        self.route.container.schedule(delay, Timer(lambda: self._get_expired(serial)))

    def _get_expired(self, serial: int) -> None:
        """A get's grace is over: if nothing came, it is answered get-empty (a message that
        comes later for its credit is released: see :meth:`on_delivery`)."""
        self.pump()
        if self.held and self.held[0].left == COUNTING:
            return  # a message came: its get-ok waits only for the broker's count
        if self.gets and self.gets[0][0] == serial and self.ch.live:
            # credit withheld (the client does not read) or granted since: not empty yet
            wait = GET_GRACE if self.ch.client.sock.backpressured \
                else self._granted_at + GET_GRACE - time.monotonic()
            if wait > 0:
                self._expire_later(serial, wait)
                return
            self.gets.popleft()
            try:
                self.engine.get_empty(self.ch.number)
            except ProtocolError:  # the channel closed meanwhile
                return
            self.route.facade.flush_later(self.ch.client.sock)
            if self.gets:
                self.route.grant()
                self._time_window()
            else:
                # the credit of a get answered get-empty: a message it brought later
                # would be released, and RabbitMQ 4 marks a released message redelivered
                self.link.drain()

    # -- Amqp10Link owner -------------------------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        self._answer_binds()
        self.route.grant()
        for serial, _ in islice(self.gets, GET_WINDOW):  # waiting for the link: their
            self._expire_later(serial, GET_GRACE)          # grace starts now

    def on_link_down(self, link: Amqp10Link) -> None:
        self.route.link_lost(self, self.held)
        if link.refusal is None and link.failures + 1 >= CANCEL_AFTER and self.adopted \
                and not self.cancelled:
            self._cancelled_by_source(link)

    def _cancelled_by_source(self, link: Amqp10Link) -> None:
        """The 1.0 source keeps refusing the link (its node is gone): cancel the consumer
        as RabbitMQ does when a queue is deleted."""
        ch, tag = self.ch, self.tag
        assert tag is not None
        log.warning("façade %s: consumer %r of %s: the AMQP 1.0 source %s refused its link "
                    "%d times: consumer cancelled", self.route.facade.name, tag,
                    ch.client.sock.peer, link.address, CANCEL_AFTER,
                    extra={"event": "consumer_cancelled", "route": self.route.name,
                           "peer": ch.client.sock.peer})
        ch.consumers.pop(tag, None)
        self.cancel()
        if ch.live:
            self._cancel_at_the_client(tag, f"the AMQP 1.0 source {link.address} of consumer "
                                            f"{tag!r} is gone")
            self.route.facade.flush_later(ch.client.sock)

    def _cancel_at_the_client(self, tag: str, text: str) -> None:
        """Tell the client (its channel live) that the server cancelled consumer ``tag``:
        basic.cancel if it announced consumer-cancel-notify, else channel.close 404 with
        ``text``, as RabbitMQ does."""
        ch = self.ch
        if not self.engine.cancel_consumer(ch.number, tag):
            ch.client.facade_closes.add(ch.number)
            self.engine.close_channel(ch.number, ReplyCode.NOT_FOUND, text)

    def queue_deleted(self) -> None:
        """Its queue is deleted through the listener: cancelled as RabbitMQ cancels the
        consumers of a deleted queue (basic.cancel, or channel.close 404 to a client
        without consumer-cancel-notify), a getter's waiting gets answered get-empty, and
        the link detached now; what it held and what the client has not acknowledged go
        with the queue (an ack of it later goes nowhere)."""
        ch, tag = self.ch, self.tag
        if self.adopted and not self.cancelled and tag is not None and ch.live:
            ch.consumers.pop(tag, None)
            self._cancel_at_the_client(tag, f"NOT_FOUND - queue '{self.route.queue}' deleted")
        while self.gets and ch.live:
            self.gets.popleft()
            self.engine.get_empty(ch.number)
        self.gets.clear()
        if ch.getters.get(self.route.queue) is self:
            del ch.getters[self.route.queue]
        self.cancelled = self.closed = True
        ch.cancelled.discard(self)
        self.route.link_lost(self, self.held)
        self.link.forget()
        self.route.forget(self)
        self.route.facade.flush_later(ch.client.sock)

    def on_credit(self, link: Amqp10Link) -> None:
        self.grant()

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        route = self.route
        wanted = not self.closed and self.ch.live and (self.adopted or bool(self.gets))
        taken = route.take_delivery(self, link, delivery, wanted,
                                    partial(route.to_legacy091,
                                            published_exchange_only=self.temporary is not None))
        if taken is None:
            return
        data, (properties, where, body) = taken
        self.held.append(_Held(delivery, properties, where, body, t0=time.monotonic(),
                               data=route.kept_for_tap(data)))
        route.bytes_in_flight += len(body)
        self.pump()
        self.grant()

    def take_local(self, properties: Basic.Properties, where: Delivery091, body: bytes) -> None:
        """A message that never went through the 1.0 broker (a local delivery,
        :mod:`~bridge.facade.amqp091.local_delivery`): delivered like one that did, with no
        1.0 delivery to settle."""
        self.route.bytes_in_flight += len(body)
        self.held.append(_Held(None, properties, where, body, t0=time.monotonic()))
        self.pump()

    # -- delivering ---------------------------------------------------------------------------

    def pump(self) -> None:
        """Deliver held messages (consumer) or answer waiting gets (getter), in order."""
        if not self.held:
            return
        ch, engine = self.ch, self.engine
        channel = engine.channels.get(ch.number) if ch.live else None
        sent = False
        while self.held and channel is not None and channel.peer_flow_active \
                and not self.cancelled and not self.route.paused \
                and (self.adopted or self.gets):
            if self.adopted and not self.no_ack and (
                    (self.prefetch and len(self.unsettled) >= self.prefetch)
                    or (ch.global_prefetch and ch.unacked >= ch.global_prefetch)):
                break  # the prefetch is full: waits for an ack (of any consumer if global)
            if self.getter and self.held[0].left is None:
                head = self.held[0]
                head.left = COUNTING
                if self.route.count_left(self, partial(self._counted, head)):
                    break
                head.left = -1
            if self.getter and self.held[0].left == COUNTING:
                break  # get-ok waits for the count (_counted)
            msg = self.held.popleft()
            exchange = msg.where.exchange or ""
            if not exchange and self.temporary is not None and self.temporary.binding:
                exchange = self.temporary.binding[0]
            key = msg.where.routing_key if msg.where.routing_key is not None \
                else self.route.queue
            if self.getter:
                no_ack = self.gets.popleft()[1]
                left = msg.left if msg.left is not None and msg.left >= 0 else 0
                # (held beyond it: the broker counts them out, RabbitMQ's 0-9-1 in)
                tag = engine.get_ok(ch.number, exchange, key, msg.body, msg.properties,
                                    message_count=left + len(self.held),
                                    redelivered=msg.where.redelivered, no_ack=no_ack)
            else:
                no_ack = self.no_ack
                tag = engine.deliver(ch.number, self.tag, exchange, key, msg.body,
                                     msg.properties, redelivered=msg.where.redelivered,
                                     no_ack=no_ack)
            sent = True
            if no_ack:
                self.route.settle_held(msg, Delivery.ACCEPTED)
            else:
                self.unsettled[tag] = msg
                ch.deliveries[tag] = self
        if sent:
            self.route.facade.flush_later(ch.client.sock)
            self.route.recount()
            if self.getter:
                self._time_window()

    def _counted(self, head: _Held, left: int | None) -> None:
        """The broker said how many messages it has ready (None: it could not): the get
        ``head`` answers goes out (:meth:`Consume091.count_left`)."""
        head.left = -1 if left is None else max(0, left)
        if not self.closed:
            self.pump()

    def settle(self, tag: int, state: int, reason: str = "") -> None:
        """Give the 1.0 delivery behind delivery tag ``tag`` its outcome."""
        if not self.route.settle_unsettled(self, tag, self.ch.deliveries, state, reason):
            return
        if self.cancelled:
            self._close_when_idle()
        else:
            self.pump()  # room in the prefetch for what the 1.0 broker sent beyond it

    # -- the end ------------------------------------------------------------------------------

    def cancel(self) -> None:
        """basic.cancel: no more deliveries; those made can still be settled (the link
        stays until they are)."""
        self.cancelled = True
        self._close_when_idle()
        self.route.grant()

    def end(self) -> None:
        """The channel is gone: whatever the client did not settle goes back at once."""
        self.cancelled = True
        self.route.give_back_unsettled(self, self.ch.deliveries)
        self.gets.clear()
        self._close_when_idle()
        self.route.grant()

    def _close_when_idle(self) -> None:
        """Detach once the deliveries made are settled (the link carries their outcomes);
        what was received and never delivered is released (not a failed delivery)."""
        if self.closed or self.unsettled:
            return
        self.closed = True
        self.route.detach(self, self.held)
        self.ch.cancelled.discard(self)

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in a consumer is its client's: that connection is closed."""
        return self.route.facade.socket_fault_part(self.ch.client.sock)


class Consume091(FacadeConsume):
    """A 1.0 address consumed by the 0-9-1 clients of a façade queue (module docstring)."""

    facade: Facade091

    @property
    def queue(self) -> str:
        """The façade queue the route serves."""
        return self.route.target.queue or ""

    def consumer_connection(self) -> Any | None:
        """The 1.0 connection a new consumer's link must attach on (the one that declared
        the route's queue, an exclusive queue at the broker), or None: any of the pool."""
        return None

    def to_legacy091(self, message: AmqpMessage, *, published_exchange_only: bool = False
                     ) -> tuple[Basic.Properties, Delivery091, bytes]:
        """What a consumer is sent for a 1.0 message (the route's translation; the routing
        key the message was published with; ``published_exchange_only``: a temporary
        queue's consumer, delivered with the exchange the message was published to through
        the bridge, else its façade exchange)."""
        return self.translator.amqp10_to_legacy091(
            message, own_routing_key=True, published_exchange_only=published_exchange_only)

    def count_left(self, consumer: Consumer091, done: Callable[[int | None], None]) -> bool:
        """Ask the broker how many messages the queue has ready, for ``consumer``'s
        get-ok (``done`` later, on the loop: the count, or None); False: this route cannot
        ask, and a get-ok counts the messages the bridge holds for the getter."""
        return False

    def consumer_terms(self, arguments: dict[str, Any] | None) -> ConsumerTerms | None:
        """What a consumer's link attaches with for its ``basic.consume`` arguments
        (None: nothing; a configured route's consumers attach as the route says). Raises
        :class:`ChannelRefused` for an argument the broker would refuse."""
        return None

    def consume(self, ch: Channel091, tag: str, *, no_ack: bool, exclusive: bool,
                terms: ConsumerTerms | None = None) -> Consumer091:
        """A new consumer of ``ch`` on the route's queue (its 1.0 link attaching, with
        ``terms``: :meth:`consumer_terms`)."""
        consumer = Consumer091(self, ch, tag, no_ack=no_ack, exclusive=exclusive,
                               prefetch=ch.prefetch, terms=terms)
        self.subscriptions.add(consumer)
        return consumer

    def getter(self, ch: Channel091) -> Consumer091:
        """The channel's getter for basic.get on the route's queue."""
        consumer = Consumer091(self, ch, None, no_ack=False, exclusive=False, prefetch=0,
                               getter=True)
        self.subscriptions.add(consumer)
        return consumer

    def bind_temporary(self, ch: Channel091, temporary: TemporaryQueue) -> Consumer091:
        """The consumer of ``temporary``, just bound to the route's exchange: its link to
        the route's address with the binding key filled in attaches now; it delivers
        once a basic.consume adopts it."""
        consumer = Consumer091(self, ch, None, no_ack=False, exclusive=True, prefetch=0,
                               temporary=temporary)
        self.subscriptions.add(consumer)
        return consumer

    @property
    def consumer_count(self) -> int:
        """Active consumers (queue.declare-ok's consumer-count)."""
        return sum(1 for c in self.subscriptions
                   if isinstance(c, Consumer091) and c.temporary is None and c.adopted
                   and not c.cancelled)


__all__ = ["CANCEL_AFTER", "GET_GRACE", "Consume091", "Consumer091"]
