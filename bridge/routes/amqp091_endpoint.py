"""The AMQP 0-9-1 legacy endpoints: a RabbitMQ queue drained, an exchange published to.

Theory of operation
-------------------
Each endpoint is an :class:`~bridge.legacy.amqp091.Amqp091User` of one
:class:`~bridge.legacy.amqp091.Amqp091Connection`, which gives it a channel of its own
(reopened after a pause when it ends) and passes it the engine's events about that
channel. The endpoint turns them into the protocol-neutral calls of
:mod:`bridge.routes.legacy_endpoint`. A channel's deliveries and publishes live and die
with it: each opened channel gets a fresh *token* (the ``Taken.channel`` of its
messages), so an outcome that arrives after its channel ended is recognised and
dropped (the broker requeued that message already).

:class:`Amqp091Source` (implements :class:`~bridge.routes.legacy_endpoint.LegacySource`)
    ``basic.consume`` with manual acknowledgement. **Credit** (``from.prefetch:
    credit``, the default): RabbitMQ has no 0-9-1 credit method, and it applies a
    *per-consumer* ``basic.qos`` only to consumers created after it, so a per-consumer
    prefetch cannot follow the route's credit. The source therefore sets the
    *channel-wide* prefetch (``basic.qos`` with ``global`` true, which RabbitMQ's limiter
    applies at once to the consumers already on the channel; the channel has only this
    one consumer) to exactly ``held + granted`` — deliveries not yet acked or rejected,
    plus the credit the route granted and not yet used. A delivery moves one from
    granted to held (the limit stays); a grant raises the limit; a settlement lowers it,
    sent *before* the ack so that the broker never delivers past the credit. The limit
    and the settlements go out once per burst of events (:meth:`Amqp091Source.apply`,
    at its end): one ``basic.qos`` with the final limit, then the acks and rejects, so
    that a burst's acks and the route's next grant cost one ``basic.qos``, not a lower
    and a raise. A limit of 0 would mean "unlimited" in 0-9-1, so then the consumer is
    cancelled instead (``stop``) and created again at the next grant.

    **Window** (``from.prefetch: window``): quorum queues and streams refuse a
    channel-wide prefetch — RabbitMQ closes the whole *connection* with 540
    NOT_IMPLEMENTED naming the queue. There the consumer gets a fixed per-consumer
    prefetch of ``max_in_flight.messages`` (set before ``basic.consume``) and keeps
    consuming; deliveries beyond the granted credit wait in :attr:`Amqp091Source.buffered`
    (at most the window: the broker sends no more unacked) and go to the route, in
    order, as it grants credit. A credit-mode source whose queue RabbitMQ refuses that
    way (:meth:`Amqp091Source.on_connection_closed`) switches to window mode, logged
    once, and the connection reconnects as after any loss.

    Dispositions are batched per burst: ACCEPT → ``basic.ack``, RELEASE and REDELIVER →
    requeue (``basic.reject`` / ``basic.nack`` with requeue: RabbitMQ marks every
    requeued message redelivered). A run of same-fate tags at the head of the
    unsettled ones goes as one method with ``multiple`` (exact: nothing older is
    unsettled); the rest one by one. ``reject`` (for good) is ``basic.reject`` without
    requeue, so the queue's own dead-letter exchange applies. The broker's
    ``basic.cancel`` (the queue was deleted) is logged and the queue consumed again after
    a backoff that grows while it keeps happening without a delivery in between (a
    queue still missing closes the channel with 404, which the connection retries with
    its own backoff). The channel's loss: RabbitMQ requeues what it held, the route is
    told (``on_legacy_lost``).
:class:`Amqp091Target` (implements :class:`~bridge.routes.legacy_endpoint.LegacyTarget`)
    the channel is put in confirm mode; each transfer is a ``basic.publish`` with
    ``mandatory``, numbered by its publisher-confirm tag. ``basic.ack`` → transferred;
    ``basic.nack`` → refused. An unroutable message comes back as ``basic.return``
    before the confirm of its publish (routable messages published earlier may still be
    unconfirmed, and a return carries no tag): the return is matched to the oldest
    unconfirmed publish after the previously returned one with the same exchange,
    routing key, body and properties (returns come in publish order; two publishes
    that match alike are indistinguishable, so which of them is refused does not
    matter); that publish's confirm then refuses it with the reply code and text.
    :attr:`~Amqp091Target.room` is the route's window minus the unconfirmed publishes;
    nothing is sent while the connection is blocked, the channel flow-stopped, or the
    channel not open in confirm mode.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pamqp import commands as C

from amqp091.events import (
    ChannelFlow,
    ConnectionUnblocked,
    Event,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)
from mappings import amqp091
from mappings.errors import MappingError
from mappings.message import AmqpMessage

from ..config import Route
from ..legacy.amqp091 import Amqp091Connection
from ..runtime import Timer
from .legacy_common import LegacyEndpointBase
from .legacy_endpoint import ACCEPT, SourceOwner, Taken, TargetOwner, poison_key
from .refusals import plain_copy_091

log = logging.getLogger(__package__)

NO_ROUTE = 312
NOT_IMPLEMENTED = 540
CREDIT, WINDOW = "credit", "window"
"""A source's prefetch modes (``from.prefetch``; module docstring)."""
MAX_PREFETCH = 0xFFFF
"""basic.qos prefetch-count is a short."""
RETURN_CONDITIONS = {NO_ROUTE: "amqp:not-found"}
"""1.0 error condition of a refusal by ``basic.return`` (others: amqp:internal-error)."""
NACKED = "amqp-bridge:nacked"
"""1.0 error condition of a publish the broker refused with ``basic.nack``."""
_DISCARD = "discard"
"""A source's fate beside the routes' ones: rejected for good (``basic.reject`` without
requeue, so the queue's own dead-letter exchange applies)."""


class _Amqp091Endpoint(LegacyEndpointBase):
    """One route's channel on a 0-9-1 connection (the part both directions share)."""

    unit = "channel"

    def __init__(self, connection: Amqp091Connection, route: Route) -> None:
        super().__init__(connection, route)
        self.legacy = connection
        self.channel: int | None = None
        self.token: object | None = None
        """Identity of the current channel (numbers are reused): ``Taken.channel``."""

    @property
    def attached(self) -> bool:
        return self.legacy.usable(self.channel)

    def restart(self) -> Callable[[], bool]:
        """Close the channel so that a fresh one follows (a contained fault in the route):
        RabbitMQ requeues what the channel holds unacknowledged."""
        token = self.token
        self.legacy.restart(self, "the route restarts its channel after an internal fault")
        return lambda: self.attached and self.token is not token

    def on_connection_closed(self, code: int | None, text: str) -> None:
        """Nothing to learn from the connection's end (the source overrides it)."""

    def _opened(self, channel: int) -> None:
        self.channel = channel
        self.token = object()
        self.progress = False

    def _closed(self) -> bool:
        self.channel = None
        self.token = None
        return self.progress


class Amqp091Source(_Amqp091Endpoint):
    """A 0-9-1 queue drained with manual acks and a prefetch that follows the route's
    credit, or a fixed per-consumer window (module docstring)."""

    grants_in_batches = False  # a grant making up for the burst's acks keeps the prefetch

    def __init__(self, connection: Amqp091Connection, route: Route,
                 owner: SourceOwner) -> None:
        super().__init__(connection, route)
        assert route.source.queue is not None
        self.queue = route.source.queue
        self.owner = owner
        self.mode = route.source.prefetch or CREDIT
        """:data:`CREDIT` (channel-wide prefetch following the credit) or :data:`WINDOW`."""
        self.window = max(1, min(route.max_in_flight.messages, MAX_PREFETCH))
        """The per-consumer prefetch in window mode."""
        self.granted = 0
        self.accepts_pending = 0
        """Accepts queued for the end of this burst (basic.ack has no confirmation)."""
        self.held: dict[int, None] = {}
        """Delivery tags received and not yet acked or rejected, ascending (buffered ones
        included)."""
        self.buffered: deque[MessageReceived] = deque()
        """Window mode: deliveries beyond the granted credit, passed on at the next grant."""
        self.limit = 0
        """The channel's prefetch as last sent (0: none sent)."""
        self.consumer: str | None = None
        """Our consumer's tag while it consumes."""
        self.cancelled = 0
        """Consumer cancellations by the broker without a delivery since (the backoff)."""
        self.paused_consuming = False
        """A re-consume after the broker's cancel is scheduled."""
        self._consumers = 0
        self._dispositions: list[tuple[object | None, str, int]] = []
        self._settling: list[tuple[int, str, bool]] = []
        """``(tag, fate, multiple)`` settlements of the current channel, sent by
        :meth:`apply` after the limit."""
        connection.add(self)

    # -- Amqp091User -----------------------------------------------------------------

    def on_channel(self, channel: int) -> None:
        self._opened(channel)
        self.granted = 0
        self.held.clear()
        self.buffered.clear()
        self._settling.clear()
        self.limit = 0
        self.consumer = None
        self.owner.on_legacy_session()

    def on_lost(self) -> bool:
        # RabbitMQ requeued what the channel held; outcomes still coming for those
        # messages are not settled there (redelivery may duplicate: at-least-once)
        progressed = self._closed()
        self.granted = 0
        self.held.clear()
        self.buffered.clear()
        self._settling.clear()  # RabbitMQ requeued them with the channel
        self.accepts_pending = 0
        self.consumer = None
        self.owner.on_legacy_lost()
        return progressed

    def on_connection_closed(self, code: int | None, text: str) -> None:
        """RabbitMQ refuses a channel-wide prefetch on a quorum queue or stream by closing
        the whole connection (540 NOT_IMPLEMENTED, naming the queue): consume this one
        with a per-consumer window from the next connection on."""
        if self.mode == CREDIT and code == NOT_IMPLEMENTED and "global qos" in text \
                and f"queue '{self.queue}'" in text:
            self.mode = WINDOW
            log.warning("route %s: queue %r refuses a channel-wide prefetch (a quorum queue or "
                        "stream): consuming it with a per-consumer prefetch of %d instead; set "
                        "its from.prefetch: window to spare the connection this reconnect",
                        self.name, self.queue, self.window,
                        extra=self.legacy.log_fields("prefetch_window", route=self.name,
                                                     queue=self.queue, error=text))

    def on_event(self, event: Event) -> None:
        if isinstance(event, MessageReceived) and isinstance(event.method, C.Basic.Deliver):
            tag = int(event.method.delivery_tag or 0)
            self.progress = True
            self.cancelled = 0
            self.held[tag] = None
            if self.mode == WINDOW and (self.granted == 0 or self.buffered):
                self.buffered.append(event)  # beyond the credit: kept till the next grant
                return
            self._pass_on(event)
        elif isinstance(event, MethodReceived) and isinstance(event.method, C.Basic.Cancel) \
                and event.method.consumer_tag == self.consumer:
            self._cancelled_by_broker()

    def _pass_on(self, event: MessageReceived) -> None:
        """Hand a delivery to the route (it uses one credit)."""
        method = event.method
        assert isinstance(method, C.Basic.Deliver)
        granted = self.granted
        self.granted = granted - 1 if granted > 0 else 0
        body = event.body
        message_id = event.properties.message_id
        taken = Taken(self.token, int(method.delivery_tag or 0), len(body),
                      t0=time.monotonic(), suspect=poison_key(message_id, body))
        self.owner.on_legacy_message(taken, event, message_id, bool(method.redelivered))

    def _cancelled_by_broker(self) -> None:
        """The broker cancelled our consumer (the queue was deleted): consume again later."""
        self.consumer = None
        self.cancelled += 1
        delay = self.legacy.settings.reconnect.delay(self.cancelled - 1)
        log.warning("route %s: the broker cancelled the consumer of queue %r (deleted?); "
                    "consuming again in %.2fs", self.name, self.queue, delay,
                    extra=self.legacy.log_fields("consumer_cancelled", route=self.name,
                                                 queue=self.queue, delay=round(delay, 3)))
        self.paused_consuming = True
        token = self.token

        def resume() -> None:
            self.paused_consuming = False
            if self.token is token:
                self._set_limit()

        self.legacy.container.schedule(delay, Timer(resume))

    # -- LegacySource ----------------------------------------------------------------

    def to_amqp10(self, message: MessageReceived) -> AmqpMessage:
        return self.translator.legacy091_to_amqp10(message.properties, _delivery(message),
                                                   message.body)

    def plain_copy(self, message: MessageReceived) -> AmqpMessage:
        return plain_copy_091(message.properties, _delivery(message), message.body, self.route)

    def settle(self, taken: Taken, fate: str) -> None:
        if taken.channel is self.token and taken.tag in self.held:
            self._dispositions.append((taken.channel, fate, taken.tag))
            if fate == ACCEPT:
                self.accepts_pending += 1

    def reject(self, taken: Taken, reason: str) -> bool:
        if taken.channel is not self.token or taken.tag not in self.held \
                or self.legacy.engine is None or not self.attached:
            return False
        del self.held[taken.tag]
        self._settling.append((taken.tag, _DISCARD, False))  # after the lowered limit
        self._set_limit()
        return True

    def grant(self, credit: int) -> None:
        self.granted += credit
        while self.buffered and self.granted and self.token is not None:
            self._pass_on(self.buffered.popleft())
        self._set_limit()

    def stop(self) -> None:
        """No more deliveries until the next grant (credit mode: the prefetch drops to
        what is held, and with nothing held the consumer is cancelled; window mode: what
        comes is buffered)."""
        self.granted = 0
        self._set_limit()

    def end_of_burst(self) -> None:
        pending, self._dispositions = self._dispositions, []
        confirmed, self.accepts_pending = self.accepts_pending, 0
        fates = {tag: fate for token, fate, tag in pending if token is self.token}
        if fates and self.legacy.engine is not None and self.attached:
            self._settling += self._runs(fates)
            for tag in fates:
                self.held.pop(tag, None)
            self._set_limit()  # lowered before the acks free places
        if confirmed:
            self.owner.on_legacy_confirmed()

    def _runs(self, fates: dict[int, str]) -> list[tuple[int, str, bool]]:
        """The methods settling ``fates`` (tag -> fate) as ``(tag, fate, multiple)``: a run
        of one fate at the head of the held tags is one method with ``multiple`` (exact:
        every older tag is settled by then); the rest one by one."""
        out: list[tuple[int, str, bool]] = []
        run: tuple[int, str] | None = None
        run_length = 0
        at_head = True
        remaining = len(fates)
        for tag in self.held:
            if not remaining:
                break
            fate = fates.get(tag)
            if fate is None:
                if at_head and run is not None:
                    out.append((run[0], run[1], run_length > 1))
                at_head = False
                continue
            remaining -= 1
            if not at_head:
                out.append((tag, fate, False))
                continue
            if run is not None and run[1] != fate:
                out.append((run[0], run[1], run_length > 1))
                run_length = 0
            run = (tag, fate)
            run_length += 1
        if at_head and run is not None:
            out.append((run[0], run[1], run_length > 1))
        return out

    def _set_limit(self) -> None:
        """Have :meth:`apply` run at the end of this burst of events (then the socket is
        written)."""
        self.legacy.defer(self.apply)

    def apply(self) -> None:
        """Credit mode: bring the broker's prefetch to ``held + granted``; window mode: set
        the per-consumer window once, before the consumer (module docstring). Then the
        settlements of the burst, now that the limit no longer lets them free places."""
        engine = self.legacy.engine
        channel = self.channel
        if engine is None or channel is None or not self.attached:
            self._settling.clear()  # the channel is gone, and RabbitMQ requeued them
            return
        self._apply_limit(engine, channel)
        settling, self._settling = self._settling, []
        for tag, fate, multiple in settling:
            if fate == ACCEPT:
                engine.ack(channel, tag, multiple=multiple)
            elif fate == _DISCARD:
                engine.reject(channel, tag, requeue=False)
            elif multiple:
                engine.nack(channel, tag, multiple=True, requeue=True)
            else:
                engine.reject(channel, tag, requeue=True)

    def _apply_limit(self, engine: Any, channel: int) -> None:
        if self.mode == WINDOW:
            if self.consumer is None and self.granted and not self.paused_consuming:
                if self.limit != self.window:
                    engine.qos(channel, self.window, global_=False)
                    self.limit = self.window
                self._consume(engine, channel)
            return
        limit = len(self.held) + self.granted
        if limit == 0:
            if self.consumer is not None:
                engine.cancel(channel, self.consumer)
                self.consumer = None
            return
        if limit != self.limit:
            engine.qos(channel, limit, global_=True)
            self.limit = limit
        if self.consumer is None and self.granted and not self.paused_consuming:
            self._consume(engine, channel)

    def _consume(self, engine: Any, channel: int) -> None:
        self._consumers += 1
        self.consumer = f"amqp-bridge.{self.name}.{self._consumers}"
        engine.consume(channel, self.queue, self.consumer)


class Amqp091Target(_Amqp091Endpoint):
    """A 0-9-1 exchange published to with publisher confirms and ``mandatory``
    (module docstring)."""

    def __init__(self, connection: Amqp091Connection, route: Route,
                 owner: TargetOwner) -> None:
        super().__init__(connection, route)
        target = route.target
        self.exchange = target.exchange if target.exchange is not None else ""
        self.owner = owner
        self.window = route.max_in_flight.messages
        self.confirming = False
        """confirm.select-ok arrived on the current channel."""
        self.flowing = True
        """False while the broker asked (channel.flow) for no content."""
        self._published: dict[int, _Publish] = {}
        """Publishes not yet confirmed, by tag (ascending)."""
        self._returned: dict[int, tuple[int, str]] = {}
        """Unconfirmed publishes the broker returned: tag -> (reply code, reason)."""
        self._last_returned = 0
        connection.add(self)

    @property
    def attached(self) -> bool:
        return self.confirming and self.legacy.usable(self.channel)

    # -- Amqp091User -----------------------------------------------------------------

    def on_channel(self, channel: int) -> None:
        self._opened(channel)
        self.confirming = False
        self.flowing = True
        self._published.clear()
        self._returned.clear()
        self._last_returned = 0
        engine = self.legacy.engine
        assert engine is not None
        engine.confirm_select(channel)

    def on_lost(self) -> bool:
        progressed = self._closed()
        self.confirming = False
        self._published.clear()
        self._returned.clear()
        self.owner.on_legacy_lost()
        return progressed

    def on_event(self, event: Event) -> None:
        if isinstance(event, PublishConfirmed):
            self._confirmed(event)
        elif isinstance(event, MessageReceived) and isinstance(event.method, C.Basic.Return):
            self._return(event)
        elif isinstance(event, MethodReceived) and isinstance(event.method, C.Confirm.SelectOk):
            self.confirming = True
            self.owner.on_legacy_session()
        elif isinstance(event, ChannelFlow):
            self.flowing = event.active
            if event.active:
                self.owner.on_legacy_session()  # send again
        elif isinstance(event, ConnectionUnblocked):
            self.owner.on_legacy_session()

    def _confirmed(self, event: PublishConfirmed) -> None:
        accepted: list[int] = []
        for tag in event.delivery_tags:
            self._published.pop(tag, None)
            returned = self._returned.pop(tag, None)
            if returned is not None:
                code, reason = returned
                self.owner.on_transfer_refused(
                    tag, RETURN_CONDITIONS.get(code, "amqp:internal-error"), reason)
            elif event.ack:
                accepted.append(tag)
            else:
                self.owner.on_transfer_refused(
                    tag, NACKED, f"the 0-9-1 broker refused the message (basic.nack) on "
                                 f"exchange {self.exchange!r}, e.g. a queue at its "
                                 f"x-max-length with x-overflow reject-publish")
        if accepted:
            self.owner.on_transferred(accepted)

    def _return(self, event: MessageReceived) -> None:
        method = event.method
        assert isinstance(method, C.Basic.Return)
        tag = self._returned_tag(method, event)
        code, text = int(method.reply_code or 0), method.reply_text or ""
        reason = (f"unroutable: the 0-9-1 broker returned the message ({code} {text}) from "
                  f"exchange {method.exchange!r} with routing key {method.routing_key!r}")
        if tag is None:
            log.warning("route %s: a basic.return matched no unconfirmed publish: %s",
                        self.name, reason, extra=self.legacy.log_fields(
                            "unmatched_return", route=self.name, error=reason))
            return
        self._returned[tag] = (code, reason)
        self._last_returned = tag

    def _returned_tag(self, method: C.Basic.Return, event: MessageReceived) -> int | None:
        """The publish a basic.return is for (module docstring)."""
        key = (method.exchange, method.routing_key, event.body)
        first: int | None = None
        alike: int | None = None
        for tag, publish in self._published.items():
            if tag <= self._last_returned or tag in self._returned:
                continue
            if first is None:
                first = tag
            if (publish.exchange, publish.routing_key, publish.body) == key:
                if publish.properties == event.properties:
                    return tag
                if alike is None:
                    alike = tag
        return alike if alike is not None else first

    # -- LegacyTarget ----------------------------------------------------------------

    @property
    def room(self) -> int:
        if not self.attached:
            return 0
        return max(0, self.window - len(self._published))

    @property
    def can_send(self) -> bool:
        return self.attached and self.flowing and self.legacy.blocked is None

    def transfer(self, message: AmqpMessage) -> tuple[int, int]:
        engine = self.legacy.engine
        channel = self.channel
        assert engine is not None and channel is not None
        properties, delivery, body = self.translator.amqp10_to_legacy091(message)
        routing_key = delivery.routing_key or ""
        try:
            tag = engine.publish(channel, self.exchange, routing_key, body, properties,
                                 mandatory=True)
        except ValueError as exc:  # TableError, or a field pamqp cannot encode
            raise MappingError(f"cannot be published over AMQP 0-9-1: {exc}",
                               field="message") from None
        assert tag is not None  # the channel is in confirm mode
        self._published[tag] = _Publish(self.exchange, routing_key, properties, body)
        return tag, len(body)

    def end_of_burst(self) -> None:
        """Nothing to ask: the broker confirms publishes by itself."""


@dataclass(slots=True, eq=False)
class _Publish:
    """An unconfirmed publish, kept to match a basic.return to it."""

    exchange: str
    routing_key: str
    properties: C.Basic.Properties
    body: bytes


def _delivery(message: MessageReceived) -> amqp091.Delivery091:
    method: Any = message.method
    return amqp091.Delivery091(method.exchange, method.routing_key,
                               bool(getattr(method, "redelivered", False)))


__all__ = ["NACKED", "RETURN_CONDITIONS", "Amqp091Source", "Amqp091Target"]
