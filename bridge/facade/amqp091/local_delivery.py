"""Local delivery: a publish to a reply queue whose only consumer is on this listener,
handed to that consumer instead of making the trip through the AMQP 1.0 broker.

Theory of operation
-------------------
An RPC reply through a topology-mode façade crossed the bridge twice and the broker
once: the server's publish read and sent over AMQP 1.0, the broker's delivery read and
written to the client — half of every call's work. When the reply queue can only be
consumed by one consumer, and that consumer is a client of this listener, the broker
adds nothing but the trip: the message has nowhere else to go. Such a publish is
delivered straight to the consumer (as RabbitMQ's own direct reply-to skips its queues).

A publish to the default exchange, routing key ``Q``, is delivered locally when all of
these hold (:meth:`LocalDelivery.consumer_for`), and otherwise goes the broker's way:

- ``Q`` has exactly one consumer on the listener (a topology-mode consume route with one
  subscription), and that consumer owns ``Q``: ``Q`` is an exclusive queue its
  connection declared, or it consumes exclusively (``basic.consume exclusive``: no other
  consumer may exist). The façade enforces both (405 RESOURCE_LOCKED / 403).
- The consumer acknowledges nothing (``no-ack``: pika's and aio-pika's reply consumers,
  direct reply-to): a message is done once it is written, so nothing can come back to
  be requeued at the broker.
- It can take the message now: adopted, not cancelled, its channel open and not
  stopped by ``channel.flow``, nothing held before it, its socket not backed up.
- No publish to ``Q`` this listener sent through the broker is still on its way back
  (:attr:`LocalDelivery.in_transit`: counted as sent, and down again as ``Q``'s consumer
  receives from the broker, or as the publish is refused, found unroutable or abandoned
  — it holds its count, ``PublishEntry.fence``), so a channel's messages to ``Q`` stay
  in order.
- The listener's ``topology.local_delivery`` is on (the default).

The message the consumer gets is the one the broker would have delivered: the publish's
1.0 translation (the route's, as if it were sent) and the consume route's translation
back, with the default exchange and ``Q`` as where it was published. The publisher is
confirmed at once (in confirm mode), as RabbitMQ confirms a message it delivered. A
message over the broker's size limit (the route's ``max_message_size``, else RabbitMQ's
announced ``max_message_size``) goes the broker's way, which refuses it. What skips the
broker is not in its queue statistics or policies (a queue's TTL, length limit or
dead-lettering never applies: the message is delivered as it arrives); counted by
``amqp_bridge_facade_local_deliveries_total`` and on the consume route's
received/delivered counters.

Ordering across publishers is not a broker guarantee, so the fence is per queue, not per
channel: a broker delivery from another publisher also counts ``Q``'s in-transit
messages down. Publishes reaching ``Q`` through another exchange (a binding) always go
through the broker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mappings.amqp091 import Delivery091
from mappings.errors import MappingError

from .consume import Consumer091

if TYPE_CHECKING:
    from amqp091.events import MessageReceived

    from .listener import Facade091
    from .state import Channel091
    from .topology import TopologyMode


class LocalDelivery:
    """A topology-mode listener's local deliveries (module docstring)."""

    def __init__(self, facade: Facade091, mode: TopologyMode) -> None:
        self.facade = facade
        self.mode = mode
        self.in_transit: dict[str, int] = {}
        """Queue → publishes to it sent through the broker not seen back yet (only for
        queues a local delivery could serve)."""
        self.delivered = 0
        """Messages delivered locally: ``amqp_bridge_facade_local_deliveries_total``."""

    def consumer_for(self, queue: str) -> Consumer091 | None:
        """The consumer a publish to ``queue`` may be handed to now, or None."""
        route = self.mode.queues.get(queue)
        if route is None or route.tap is not None or route.paused \
                or len(route.subscriptions) != 1:
            return None
        (consumer,) = route.subscriptions
        if not isinstance(consumer, Consumer091) or consumer.getter \
                or consumer.temporary is not None or not consumer.adopted \
                or not consumer.no_ack or consumer.cancelled or consumer.closed \
                or consumer.held:
            return None
        ch = consumer.ch
        if not (consumer.exclusive or self.mode.exclusive.get(queue) is ch.client):
            return None
        if not ch.live or ch.client.sock.backpressured:
            return None
        channel = ch.client.engine.channels.get(ch.number)
        if channel is None or not channel.peer_flow_active:
            return None
        return consumer

    def take(self, ch: Channel091, ev: MessageReceived, publisher: Any) -> bool:
        """Deliver a client's publish to the default exchange locally if it may be (True),
        else leave it to the broker's way (False: then :meth:`fence` it)."""
        queue = ev.method.routing_key or ""
        consumer = None if self.in_transit.get(queue) else self.consumer_for(queue)
        if consumer is None:
            return False
        where = Delivery091(exchange="", routing_key=queue)
        route = consumer.route
        try:
            message = publisher.to_amqp10(ev, where)
            if self._maybe_too_large(publisher, ev, message):
                return False  # (refused there, as the broker's size limit says)
            properties, _, body = route.to_legacy091(message)
        except MappingError:  # the broker's way refuses or dead-letters it, as it should
            return False
        route.stats.received += 1
        route.stats.delivered += 1
        consumer.take_local(properties, where, body)
        self.delivered += 1
        if ev.publish_tag:
            self.facade.confirm(ch, ev.publish_tag, ack=True)
        return True

    @staticmethod
    def _maybe_too_large(publisher: Any, ev: MessageReceived, message: Any) -> bool:
        """Whether the message is over the size limit the broker's way applies (the
        publish route's ``max_message_size``, else the max-message-size RabbitMQ announced:
        ``max_message_size`` in rabbitmq.conf): its 1.0 encoding is measured only when
        the body alone is over half the limit."""
        limit = publisher.sender.message_size_limit(publisher.route.max_message_size)
        return limit is not None and len(ev.body) > limit // 2 \
            and len(message.encode()) > limit

    def fence(self, queue: str) -> str | None:
        """A publish to ``queue`` goes the broker's way: counted in transit if ``queue`` is
        one a local delivery could serve (returned: the publish holds that count until it
        arrives, or :meth:`lift` when it never will), else None."""
        if queue in self.mode.queues or queue in self.mode.exclusive:
            self.in_transit[queue] = self.in_transit.get(queue, 0) + 1
            return queue
        return None

    def arrived(self, queue: str) -> None:
        """``queue``'s consumer received a message from the broker."""
        left = self.in_transit.get(queue)
        if left is not None:
            if left > 1:
                self.in_transit[queue] = left - 1
            else:
                del self.in_transit[queue]

    lift = arrived
    """A publish :meth:`fence` counted will not arrive (refused, unroutable, abandoned)."""

    def forget(self, queue: str) -> None:
        """``queue`` is gone (deleted, or its owner's connection ended)."""
        self.in_transit.pop(queue, None)


__all__ = ["LocalDelivery"]
