"""The 0-9-1 server's method model: what the façade answers to declare, bind, qos,
consume, cancel, get, recover, and the client's acks.

A 0-9-1 application talks to a broker of exchanges and queues; the façade has only
the names its routes configure (the listener's ``exchanges`` — publish routes — and
``consume_routes`` by queue).  :class:`Commands091` answers each method from those
tables, as RabbitMQ would answer it (one handler per method class,
:data:`HANDLERS`), once the listener's permissions allow it (a method the user lacks
the permission for is 403 ACCESS_REFUSED first: :mod:`.method_access`):

- declares of configured names succeed (``passive`` too); a passive declare of an
  unknown name is channel.close 404 NOT_FOUND; any declare that would create an
  exchange or queue is 403 ACCESS_REFUSED, saying the name is not configured on
  the bridge (what RabbitMQ answers a user without configure permission); delete,
  purge and exchange-to-exchange bindings are 403 too;
- on a listener with *subscription exchanges* (routes ``to: {listener, exchange}``), a
  server-named queue (``queue.declare`` of ``""``: ``amq.gen-…``) or an exclusive or
  auto-delete queue of another name is a *temporary queue* of the connection, as on
  the 0-10 façade (:class:`~bridge.facade.core.state.TemporaryQueue`): ``queue.bind`` to a
  subscription exchange attaches its consumer's 1.0 link to the route's address with
  the binding key filled in and answers bind-ok once it is attached; ``basic.consume``
  on the queue adopts that consumer; ``queue.delete``, the consumer's cancel, or the
  connection's end detach it;
- ``queue.bind`` / ``queue.unbind`` of a configured queue to a configured exchange
  succeed (what reaches the queue is decided by its route's 1.0 source);
- ``queue.declare-ok`` counts the queue's active consumers; its message-count is 0
  (a 1.0 link does not tell a queue's depth);
- ``basic.qos`` sets the prefetch of later consumers (``global``: of the whole
  channel); ``prefetch_size`` other than 0 is 540 NOT_IMPLEMENTED, as RabbitMQ;
- ``basic.consume`` starts a :class:`~bridge.facade.amqp091.consume.Consumer091`; a reused
  consumer tag is connection.close 530, an exclusive conflict 403;
- ``basic.get`` is answered by the channel's getter; ``basic.recover`` (requeue) gives
  back what the channel holds unacknowledged (requeue false: 540, as RabbitMQ);
- an empty queue name in a bind, unbind, purge, delete, consume or get is the channel's
  last declared queue (:func:`expand_queue_shortcut`, before permissions are checked);
- tx.* is 540 NOT_IMPLEMENTED (publisher confirms are the façade's way), and so is
  any other method.

On a listener in *topology mode* (:mod:`~bridge.facade.amqp091.topology`), every name no
route configures is the 1.0 broker's instead: the handlers hand declares, binds,
deletes and purges to the :class:`~bridge.facade.amqp091.topology.TopologyMode` (answered
when the broker answered), consumes and gets check the queue there first, and
``basic.consume`` of ``amq.rabbitmq.reply-to`` is direct reply-to.

A name the façade could not carry back in its own frames — a queue's in declare-ok, an
exchange's in each basic.deliver, basic.get-ok and basic.return (pamqp, which writes
them, takes letters, digits, space and ``-_.:@#,/+``, up to 127 characters in an
exchange's name) — is refused at the declare, 406 PRECONDITION_FAILED, before the
broker is asked (:func:`uncarried_name`): RabbitMQ takes any UTF-8 name, and one made
at the broker through the bridge would have left the client's channel unanswered and
its consumers stuck on their first message.

Handlers raise :class:`~bridge.facade.amqp091.state.ChannelRefused` (channel.close) or
:class:`~bridge.facade.amqp091.state.ConnectionRefused` (connection.close); they return
the reply to send, or None when there is none (no-wait, or answered later).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pamqp import commands as C
from pamqp.base import Frame
from proton import Delivery

from amqp091.events import DeliveriesSettled
from amqp091.methods import ReplyCode

from ..core.access import Check
from ..core.state import AlreadyBound, TemporaryQueue, server_named_queue
from .consume import Consume091, Consumer091
from .method_access import checks_for
from .state import NAME_LIMITS, Channel091, ChannelRefused, ConnectionRefused, carriable
from .topology import DIRECT_REPLY_TO

if TYPE_CHECKING:
    from .listener import Facade091

log = logging.getLogger("bridge.facade")

EXCHANGE_TYPES = frozenset({"direct", "fanout", "topic", "headers"})
"""Exchange types a declare of a façade exchange may name (the route decides the routing)."""


QUEUE_NAME_SHORTCUTS = (C.Queue.Bind, C.Queue.Unbind, C.Queue.Purge, C.Queue.Delete,
                        C.Basic.Consume, C.Basic.Get)
"""Methods whose empty queue name means the channel's last declared queue (and, for a
binding with an empty routing key too, its routing key), as RabbitMQ expands them."""


def expand_queue_shortcut(ch: Channel091, method: Frame) -> None:
    """Fill in the queue name ``method`` left empty (:data:`QUEUE_NAME_SHORTCUTS`) with the
    channel's last declared queue, before the method is checked or answered; 404 as
    RabbitMQ when the channel declared none."""
    if not isinstance(method, QUEUE_NAME_SHORTCUTS) or method.queue:
        return
    last = ch.last_declared_queue
    if not last:
        raise ChannelRefused(ReplyCode.NOT_FOUND, "no previously declared queue")
    if isinstance(method, (C.Queue.Bind, C.Queue.Unbind)) and not method.routing_key:
        method.routing_key = last
    method.queue = last


def uncarried_name(method: Frame) -> str | None:
    """Why the name ``method`` declares is one the façade cannot carry back in its frames
    (module docstring), or None: it can (and for methods that declare no name)."""
    if isinstance(method, C.Queue.Declare):
        kind, name = "queue", method.queue or ""
    elif isinstance(method, C.Exchange.Declare) and not method.passive:
        kind, name = "exchange", method.exchange or ""
    else:
        return None
    if carriable(kind, name):
        return None
    return (f"{kind} name {name!r} cannot be carried by the amqp-bridge façade (it takes "
            f"letters, digits, space and -_.:@#,/+, at most {NAME_LIMITS[kind]} of them)")


class Commands091:
    """The methods of one 0-9-1 façade listener, answered from its route tables."""

    def __init__(self, facade: Facade091) -> None:
        self.facade = facade

    def on_method(self, ch: Channel091, method: Frame) -> None:
        """Answer ``method`` (a reply, nothing, or a channel / connection close). A method
        the engine reported before its channel or connection began closing is discarded,
        as a broker discards what follows its close: a burst of methods after a refused
        one makes one close, one count and one log line, not one for each."""
        if not ch.live:
            return
        engine = ch.client.engine
        handler = HANDLERS.get(type(method))
        try:
            if handler is None:
                raise ConnectionRefused(ReplyCode.NOT_IMPLEMENTED,
                                        f"{method.name} is not implemented by the "
                                        f"amqp-bridge façade")
            expand_queue_shortcut(ch, method)
            uncarried = uncarried_name(method)
            if uncarried is not None:
                raise ChannelRefused(ReplyCode.PRECONDITION_FAILED, uncarried)
            self.facade.authorize(ch, checks_for(method), method)
            reply = handler(self, ch, method)
        except ChannelRefused as exc:
            self.refuse(ch, method, exc)
            return
        if reply is not None and ch.live:
            engine.send_method(ch.number, reply)

    def refuse(self, ch: Channel091, method: Frame, exc: ChannelRefused) -> None:
        """Answer ``method`` with the channel.close (or, :class:`ConnectionRefused`,
        connection.close) ``exc`` names: counted and logged."""
        engine = ch.client.engine
        if engine.closed:
            return  # the client left before the answer (a topology-mode method)
        self.facade.client_error(ch.client, exc.code, exc.text, method, exc.event)
        index = method.index
        if isinstance(exc, ConnectionRefused):
            ch.client.facade_closes.add(0)
            engine.abort(exc.code, exc.text, class_id=index >> 16, method_id=index & 0xFFFF)
        elif ch.live:
            ch.client.facade_closes.add(ch.number)
            engine.close_channel(ch.number, exc.code, exc.text, class_id=index >> 16,
                                 method_id=index & 0xFFFF)

    # -- names ------------------------------------------------------------------------------

    def _vhost(self, ch: Channel091) -> str:
        return ch.client.virtual_host or "/"

    def _queue(self, ch: Channel091, name: str) -> Consume091:
        route = self.facade.consume_routes.get(name)
        if route is None and self.facade.topology is not None:
            self.facade.topology.check_exclusive(ch, name)
            return self.facade.topology.queue_route(name)
        if route is None:
            raise ChannelRefused(ReplyCode.NOT_FOUND,
                                 f"no queue '{name}' in vhost '{self._vhost(ch)}'")
        return route

    def _check_consumer_room(self, ch: Channel091) -> None:
        """One more 1.0 receiver for this connection, or 530 past the listener's
        ``max_consumers_per_connection`` or, over all its user's connections,
        ``max_consumers_per_user`` (each is a link on the route's shared 1.0 connection,
        whose sessions are bounded: one client or user must not take them all)."""
        settings = self.facade.settings
        limit = settings.max_consumers_per_connection
        if ch.client.consumer_links >= limit:
            raise ConnectionRefused(ReplyCode.NOT_ALLOWED,
                                    f"reached maximum ({limit}) of consumers per connection "
                                    f"(listener {self.facade.name}: "
                                    f"max_consumers_per_connection)")
        per_user = settings.max_consumers_per_user
        user = ch.client.user
        if per_user is not None and sum(
                c.consumer_links for c in self.facade.clients.values() if c.user == user) \
                >= per_user:
            raise ConnectionRefused(ReplyCode.NOT_ALLOWED,
                                    f"reached maximum ({per_user}) of consumers for user "
                                    f"'{user or ''}' (listener {self.facade.name}: "
                                    f"max_consumers_per_user)")

    def _known_exchange(self, name: str) -> bool:
        return name in self.facade.exchanges or name in self.facade.exchange_subscriptions

    def _not_configured(self, ch: Channel091, kind: str, name: str) -> ChannelRefused:
        known = sorted({*self.facade.exchanges, *self.facade.exchange_subscriptions}
                       if kind == "exchange" else self.facade.consume_routes)
        return ChannelRefused(
            ReplyCode.ACCESS_REFUSED,
            f"access to {kind} '{name}' in vhost '{self._vhost(ch)}' refused: it is not "
            f"configured on the amqp-bridge façade {self.facade.name} (its {kind}s: "
            f"{', '.join(repr(k) for k in known) or 'none'})")

    # -- exchange and queue ---------------------------------------------------------------

    def _exchange_declare(self, ch: Channel091, m: C.Exchange.Declare) -> Frame | None:
        name = m.exchange or ""
        topology = self.facade.topology
        if topology is not None and name and not self._known_exchange(name):
            topology.exchange_declare(ch, m)
            return None
        if name == "" and not m.passive:
            raise ChannelRefused(ReplyCode.ACCESS_REFUSED,
                                 "operation not permitted on the default exchange")
        if name and not self._known_exchange(name):
            if m.passive:
                raise ChannelRefused(ReplyCode.NOT_FOUND,
                                     f"no exchange '{name}' in vhost '{self._vhost(ch)}'")
            raise self._not_configured(ch, "exchange", name)
        if not m.passive and m.exchange_type not in EXCHANGE_TYPES:
            raise ConnectionRefused(ReplyCode.COMMAND_INVALID,
                                    f"unknown exchange type '{m.exchange_type}'")
        return None if m.nowait else C.Exchange.DeclareOk()

    def _queue_declare(self, ch: Channel091, m: C.Queue.Declare) -> Frame | None:
        name = m.queue or ""
        temporaries = ch.client.temporary_queues
        route = self.facade.consume_routes.get(name)
        if route is not None:
            count = route.consumer_count
        elif name in temporaries:
            count = int(temporaries[name].consuming)
        elif self.facade.topology is not None:
            return self.facade.topology.queue_declare(ch, m)
        elif m.passive:
            self._queue(ch, name)
            raise AssertionError  # (_queue raised)
        elif self.facade.exchange_subscriptions and (not name or m.exclusive or m.auto_delete):
            self._check_consumer_room(ch)
            if not name:  # checked by its name, as RabbitMQ does
                name = server_named_queue()
                self.facade.authorize(ch, [Check("configure", "queue", name)], m)
            temporaries[name] = TemporaryQueue(name)  # to bind to a subscription exchange
            count = 0
        elif not name:
            raise ChannelRefused(
                ReplyCode.ACCESS_REFUSED, f"the amqp-bridge façade {self.facade.name} "
                f"serves only the queues its routes configure (a server-named queue needs a "
                f"route to an exchange of the listener to bind it to)")
        else:
            raise self._not_configured(ch, "queue", name)
        ch.last_declared_queue = name
        if m.nowait:
            return None
        return C.Queue.DeclareOk(queue=name, message_count=0, consumer_count=count)

    def _queue_bind(self, ch: Channel091, m: C.Queue.Bind | C.Queue.Unbind) -> Frame | None:
        exchange = m.exchange or ""
        temporary = ch.client.temporary_queues.get(m.queue or "")
        if temporary is not None and exchange:
            return self._bind_temporary(ch, m, temporary, exchange)
        if self.facade.topology is not None and (m.queue or "") not in self.facade.consume_routes:
            self.facade.topology.queue_bind(ch, m)
            return None
        self._queue(ch, m.queue or "")
        if exchange == "":
            raise ChannelRefused(ReplyCode.ACCESS_REFUSED,
                                 "operation not permitted on the default exchange")
        if not self._known_exchange(exchange):
            raise ChannelRefused(ReplyCode.NOT_FOUND,
                                 f"no exchange '{exchange}' in vhost '{self._vhost(ch)}'")
        log.debug("façade %s: binding %r -> %r accepted (routing is the 1.0 broker's)",
                  self.facade.name, exchange, m.queue)
        if isinstance(m, C.Queue.Unbind):
            return C.Queue.UnbindOk()
        return None if m.nowait else C.Queue.BindOk()

    def _bind_temporary(self, ch: Channel091, m: C.Queue.Bind | C.Queue.Unbind,
                        temporary: TemporaryQueue, exchange: str) -> Frame | None:
        """(Un)bind a temporary queue: the bind attaches its consumer's link (bind-ok once
        attached: :meth:`~bridge.facade.amqp091.consume.Consumer091.answer_when_attached`)."""
        key = m.routing_key or ""
        if isinstance(m, C.Queue.Unbind):
            if temporary.unbind(exchange, key):
                temporary.sub.end()
                temporary.sub = None
            return C.Queue.UnbindOk()
        route = self.facade.exchange_subscriptions.get(exchange)
        if route is None:
            if self._known_exchange(exchange):
                raise ChannelRefused(
                    ReplyCode.ACCESS_REFUSED, f"exchange '{exchange}' of the amqp-bridge "
                    f"façade {self.facade.name} takes no bindings of temporary queues (no "
                    f"route to it: its subscription exchanges: "
                    f"{', '.join(map(repr, sorted(self.facade.exchange_subscriptions)))})")
            raise ChannelRefused(ReplyCode.NOT_FOUND,
                                 f"no exchange '{exchange}' in vhost '{self._vhost(ch)}'")
        try:
            if not temporary.bind(exchange, key):
                return None if m.nowait else C.Queue.BindOk()
        except AlreadyBound as exc:
            raise ConnectionRefused(ReplyCode.NOT_IMPLEMENTED, str(exc)) from None
        temporary.sub = route.bind_temporary(ch, temporary)
        temporary.sub.answer_when_attached(ch, reply=not m.nowait)
        return None

    def _queue_delete(self, ch: Channel091, m: C.Queue.Delete) -> Frame | None:
        temporary = ch.client.temporary_queues.pop(m.queue or "", None)
        if temporary is None and self.facade.topology is not None \
                and (m.queue or "") not in self.facade.consume_routes:
            self.facade.topology.queue_delete(ch, m)
            return None
        if temporary is None:
            return self._refused_change(ch, m)
        if temporary.sub is not None:
            self._drop_consumer(temporary.sub)
        return None if m.nowait else C.Queue.DeleteOk(message_count=0)

    def _drop_consumer(self, consumer: Consumer091) -> None:
        """A temporary queue goes: its consumer (adopted or not) ends, its link detaches
        once what it delivered is settled."""
        if consumer.adopted and consumer.ch.consumers.get(consumer.tag or "") is consumer:
            consumer.ch.consumers.pop(consumer.tag or "")
            consumer.cancel()
            if not consumer.closed:
                consumer.ch.cancelled.add(consumer)
        else:
            consumer.end()

    def _topology_change(self, ch: Channel091, m: Frame) -> Frame | None:
        """exchange.delete / bind / unbind, queue.purge: the broker's in topology mode
        (a configured name's: refused as without it)."""
        topology = self.facade.topology
        if topology is None:
            return self._refused_change(ch, m)
        if isinstance(m, C.Queue.Purge) and (m.queue or "") not in self.facade.consume_routes:
            topology.queue_purge(ch, m)
        elif isinstance(m, C.Exchange.Delete) and not self._known_exchange(m.exchange or ""):
            topology.exchange_delete(ch, m)
        elif isinstance(m, (C.Exchange.Bind, C.Exchange.Unbind)) and not any(
                self._known_exchange(name or "") for name in (m.source, m.destination)):
            topology.exchange_bind(ch, m)
        else:
            return self._refused_change(ch, m)
        return None

    def _refused_change(self, ch: Channel091, m: Frame) -> Frame | None:
        raise ChannelRefused(ReplyCode.ACCESS_REFUSED,
                             f"{m.name} is not permitted through the amqp-bridge façade "
                             f"{self.facade.name} (its exchanges and queues are its "
                             f"configuration's)")

    # -- basic ------------------------------------------------------------------------------

    def _qos(self, ch: Channel091, m: C.Basic.Qos) -> Frame | None:
        if m.prefetch_size:
            raise ConnectionRefused(ReplyCode.NOT_IMPLEMENTED,
                                    f"prefetch_size!=0 ({m.prefetch_size})")
        if m.global_:
            ch.global_prefetch = m.prefetch_count or 0
        else:
            ch.prefetch = m.prefetch_count or 0
        for consumer in ch.consumers.values():
            consumer.route.grant()
        return C.Basic.QosOk()

    def _consume(self, ch: Channel091, m: C.Basic.Consume) -> Frame | None:
        client = ch.client
        tag = m.consumer_tag or ""
        if not tag:
            client.consumer_tags += 1
            tag = f"amq.ctag-bridge-{client.consumer_tags}"
        elif tag in ch.consumers:
            raise ConnectionRefused(ReplyCode.NOT_ALLOWED,
                                    f"attempt to reuse consumer tag '{tag}'")
        name = m.queue or ""
        topology = self.facade.topology
        if topology is not None and name not in self.facade.consume_routes \
                and name not in client.temporary_queues:
            self._check_consumer_room(ch)
            if name == DIRECT_REPLY_TO:
                topology.consume_reply_to(ch, m, lambda queue: self._start_consume(
                    ch, m, tag, topology.queue_route(queue)))
            else:
                topology.check_queue(ch, m, name, lambda: self._start_consume(
                    ch, m, tag, self._queue(ch, name)))
            return None
        temporary = client.temporary_queues.get(name)
        route = self._queue(ch, name) if temporary is None else None
        if temporary is not None:
            consumer = temporary.sub
            if consumer is None or consumer.closed:
                raise ChannelRefused(ReplyCode.NOT_FOUND, f"queue '{m.queue}' is bound to no "
                                     f"exchange the amqp-bridge façade serves")
            if consumer.adopted:
                raise ChannelRefused(ReplyCode.ACCESS_REFUSED, f"queue '{m.queue}' in vhost "
                                     f"'{self._vhost(ch)}' has a consumer already (the "
                                     f"façade serves one per temporary queue)")
            consumer.adopt(ch, tag, no_ack=bool(m.no_ack), exclusive=bool(m.exclusive))
            ch.consumers[tag] = consumer
            return None if m.nowait else C.Basic.ConsumeOk(consumer_tag=tag)
        assert route is not None
        return self._start_consume(ch, m, tag, route)

    def _start_consume(self, ch: Channel091, m: C.Basic.Consume, tag: str,
                       route: Consume091) -> Frame | None:
        """A consumer of ``route``'s queue on ``ch`` (consume-ok unless no-wait)."""
        if tag in ch.consumers:  # (a topology-mode consume answered later)
            raise ConnectionRefused(ReplyCode.NOT_ALLOWED,
                                    f"attempt to reuse consumer tag '{tag}'")
        if any(c.exclusive for c in route.subscriptions if not (c.closed or c.cancelled)) \
                or (m.exclusive and route.consumer_count):
            raise ChannelRefused(ReplyCode.ACCESS_REFUSED,
                                 f"queue '{m.queue}' in vhost '{self._vhost(ch)}' in "
                                 f"exclusive use")
        if self.facade.stopping:
            raise ChannelRefused(ReplyCode.RESOURCE_LOCKED, "amqp-bridge is shutting down")
        self._check_consumer_room(ch)
        terms = route.consumer_terms(dict(m.arguments or {}))
        consumer = route.consume(ch, tag, no_ack=bool(m.no_ack), exclusive=bool(m.exclusive),
                                 terms=terms)
        ch.consumers[tag] = consumer
        return None if m.nowait else C.Basic.ConsumeOk(consumer_tag=tag)

    def _cancel(self, ch: Channel091, m: C.Basic.Cancel) -> Frame | None:
        tag = m.consumer_tag or ""
        consumer = ch.consumers.pop(tag, None)
        if consumer is not None:
            consumer.cancel()
            if not consumer.closed:  # deliveries unsettled: they end with the channel
                ch.cancelled.add(consumer)
            if consumer.temporary is not None:  # its only consumer: the queue goes with it
                ch.client.temporary_queues.pop(consumer.temporary.name, None)
            if ch.reply_queue is not None and consumer.route.queue == ch.reply_queue:
                ch.reply_queue = None  # direct reply-to: its queue goes with its link
        return None if m.nowait else C.Basic.CancelOk(consumer_tag=tag)

    def _get(self, ch: Channel091, m: C.Basic.Get) -> Frame | None:
        name = m.queue or ""
        if name in ch.client.temporary_queues:
            raise ChannelRefused(ReplyCode.ACCESS_REFUSED, f"basic.get from temporary queue "
                                 f"'{name}' is not served by the amqp-bridge façade "
                                 f"(basic.consume is)")
        getter = ch.getters.get(name)
        topology = self.facade.topology
        if topology is not None and name not in self.facade.consume_routes \
                and (getter is None or getter.closed):
            topology.check_queue(ch, m, name, lambda: self._start_get(ch, m))
            return None
        return self._start_get(ch, m)

    def _start_get(self, ch: Channel091, m: C.Basic.Get) -> Frame | None:
        """Answer a basic.get with the channel's getter on the queue (made now if none)."""
        name = m.queue or ""
        route = self._queue(ch, name)
        getter = ch.getters.get(name)
        if getter is None or getter.closed:
            if getter is not None:
                del ch.getters[name]
            self._check_consumer_room(ch)
            getter = ch.getters[name] = route.getter(ch)
        getter.get(bool(m.no_ack))
        return None  # get-ok or get-empty: the getter answers

    def _recover(self, ch: Channel091, m: C.Basic.Recover | C.Basic.RecoverAsync
                 ) -> Frame | None:
        if not m.requeue:
            raise ConnectionRefused(ReplyCode.NOT_IMPLEMENTED, "requeue=false")
        # the engine has reported the unacknowledged deliveries as settled (requeue)
        return C.Basic.RecoverOk() if isinstance(m, C.Basic.Recover) else None

    def _tx(self, ch: Channel091, m: Frame) -> Frame | None:
        raise ConnectionRefused(ReplyCode.NOT_IMPLEMENTED,
                                "transactions (tx.*) are not implemented by the amqp-bridge "
                                "façade; use publisher confirms (confirm.select)")

    # -- acks -------------------------------------------------------------------------------

    def on_settled(self, ch: Channel091, ev: DeliveriesSettled) -> None:
        """basic.ack / nack / reject / recover: the 1.0 deliveries behind the tags get
        their outcomes (accepted; given back with requeue; else rejected)."""
        if ev.ack:
            state, reason = Delivery.ACCEPTED, ""
        elif ev.requeue:
            state, reason = Delivery.MODIFIED, ""
        else:
            state = Delivery.REJECTED
            reason = f"rejected by the 0-9-1 consumer ({ev.method.name}, requeue false)"
        routes: set[Consume091] = set()
        for tag in ev.delivery_tags:
            consumer = ch.deliveries.get(tag)
            if consumer is not None:
                consumer.settle(tag, state, reason)
                routes.add(consumer.route)
        if ch.global_prefetch:  # room for the channel: any of its consumers may deliver
            for consumer in list(ch.consumers.values()):
                consumer.pump()
                routes.add(consumer.route)
        for route in routes:
            route.grant()


HANDLERS: dict[type[Frame], Callable[[Commands091, Channel091, Any], Frame | None]] = {
    C.Exchange.Declare: Commands091._exchange_declare,
    C.Exchange.Delete: Commands091._topology_change,
    C.Exchange.Bind: Commands091._topology_change,
    C.Exchange.Unbind: Commands091._topology_change,
    C.Queue.Declare: Commands091._queue_declare,
    C.Queue.Bind: Commands091._queue_bind,
    C.Queue.Unbind: Commands091._queue_bind,
    C.Queue.Purge: Commands091._topology_change,
    C.Queue.Delete: Commands091._queue_delete,
    C.Basic.Qos: Commands091._qos,
    C.Basic.Consume: Commands091._consume,
    C.Basic.Cancel: Commands091._cancel,
    C.Basic.Get: Commands091._get,
    C.Basic.Recover: Commands091._recover,
    C.Basic.RecoverAsync: Commands091._recover,
    C.Tx.Select: Commands091._tx,
    C.Tx.Commit: Commands091._tx,
    C.Tx.Rollback: Commands091._tx,
}
"""The façade's answer to each client method (any other: 540 NOT_IMPLEMENTED)."""


__all__ = ["EXCHANGE_TYPES", "HANDLERS", "QUEUE_NAME_SHORTCUTS", "Commands091",
           "expand_queue_shortcut"]
