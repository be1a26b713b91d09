"""The 0-9-1 façade's topology mode: every name no route configures is the AMQP 1.0
broker's (``listeners.<name>.topology``, docs/topology.md).

Theory of operation
-------------------
A :class:`TopologyMode` belongs to one ``amqp0-9-1`` listener with a ``topology``. It
holds the listener's :class:`~bridge.topology.Topology` backend (the broker kind's way of
carrying out declares) and serves what the listener's routes do not:

Declares, deletes, purges and bindings
    ``exchange.declare`` / ``delete`` / ``bind`` / ``unbind``, ``queue.declare`` /
    ``bind`` / ``unbind`` / ``purge`` / ``delete`` become backend operations
    (:meth:`TopologyMode.call`). The client's method is answered when the operation's
    ``done`` fires — declare-ok with the broker's message and consumer counts — or
    refused as RabbitMQ refuses it (:data:`ERROR_CODES`: 404, 405, 406, 403 close the
    channel; 540, 506 the connection). While an operation is pending, what the
    connection sends next (methods and publishes) is held, and its socket not read:
    a broker executes a connection's methods in order. A server-named queue's declare
    is checked for configure by the name it will get, as RabbitMQ checks it.

Publishes
    Every publish no route takes goes to ONE anonymous-terminus sender
    (:class:`TopologyPublish091`: a :class:`~bridge.facade.amqp091.publish.Publish091` and
    so the façade's in-flight bound, throttling, stop rule), each message's ``to`` the
    backend's ``publish_address(exchange, routing key)``; the 1.0 outcome is the
    confirm: accepted → basic.ack; released (RabbitMQ 4: routed to no queue) →
    basic.return 312 NO_ROUTE when mandatory, then basic.ack, as RabbitMQ does;
    rejected with amqp:not-found (no such exchange) → channel.close 404; other
    rejections → basic.nack.

Consumes and gets
    ``basic.consume`` / ``basic.get`` on any queue: a
    :class:`TopologyConsume091` route per queue made on demand (a 1.0 receiver per
    consumer on ``queue_address(queue)``) and dropped when its last consumer is gone.

Temporary queues
    Exclusive queues (server-named ``amq.gen-…`` too) are declared at the broker with
    the client connection as their owner: a reply published from any connection
    reaches them, other connections of this listener get 405 RESOURCE_LOCKED, and
    they go when their owner connection goes (``forget_owner``).

Direct reply-to (``amq.rabbitmq.reply-to``)
    ``basic.consume`` on it (no-ack) gives the channel a reply queue of its own at the
    broker (server-named, exclusive, auto-delete); a publish on that channel whose
    ``reply_to`` is ``amq.rabbitmq.reply-to`` carries that queue's name instead, so a
    responder's publish to the default exchange (through the façade or straight to
    the broker) reaches the consumer.

reply-to and to
    A publish's ``reply_to`` travels unchanged (RabbitMQ 4 carries it so between 0-9-1
    and 1.0, and a responder straight on the broker's 0-9-1 answers to the name; a
    native 1.0 responder answers to ``queue_address(reply_to)``); a 1.0 message whose
    reply-to is a queue's 1.0 address (a native 1.0 requester's) reaches a 0-9-1
    consumer with the queue's name, to publish the answer to the default exchange. The ``to`` the publisher's sender set, and a subject equal
    to the routing key, are dropped on the way to a 0-9-1 consumer (the exchange and
    routing key it is delivered with say them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pamqp import commands as C
from pamqp.base import Frame
from proton.reactor import Container

from amqp091.events import MessageReceived
from amqp091.methods import ReplyCode
from mappings.amqp091 import H_DELIVERY_COUNT, H_SUBJECT, H_TO, Delivery091
from mappings.errors import MappingError
from mappings.message import AmqpMessage
from mappings.rabbitmq_annotations import broker_data

from ...amqp10.link import Amqp10Link
from ...config import ListenerTopology, Route
from ...runtime import Timer
from ...topology import (
    BindingSpec,
    Done,
    ExchangeSpec,
    QueueInfo,
    QueueSpec,
    Topology,
    TopologyError,
)
from ...topology.consumer_args import ConsumerTerms, rabbitmq_consumer_terms
from ...topology.model import server_name
from ...topology.rabbitmq091 import RabbitMQ091Topology
from ..core.access import DEAD_LETTER_EXCHANGE, Check
from ..core.publish import PublishEntry
from ..core.state import server_named_queue
from ..core.topology import TopologyCore
from .consume import Consume091, Consumer091
from .declare_cache import DeclareCache
from .local_delivery import LocalDelivery
from .publish import Publish091
from .state import (
    DIRECT_REPLY_TO,
    Channel091,
    ChannelRefused,
    Client091,
    ConnectionRefused,
    carriable,
)

if TYPE_CHECKING:
    from .listener import Facade091

log = logging.getLogger("bridge.facade")

DETACH_WAIT = 10.0
DETACH_POLL = 0.02
"""Seconds a queue.delete through the listener waits at most for the detaches of its
consumers' links, and how often it looks (``_consumers_gone``)."""

ERROR_CODES: dict[str, tuple[int, bool]] = {
    "not-found": (ReplyCode.NOT_FOUND, False),
    "precondition-failed": (ReplyCode.PRECONDITION_FAILED, False),
    "resource-locked": (ReplyCode.RESOURCE_LOCKED, False),
    "access-refused": (ReplyCode.ACCESS_REFUSED, False),
    "not-implemented": (ReplyCode.NOT_IMPLEMENTED, True),
    "unavailable": (ReplyCode.RESOURCE_ERROR, True),
}
"""A :class:`~bridge.topology.TopologyError` kind → (0-9-1 reply code, closes the
connection rather than the channel), as RabbitMQ answers."""

def refusal(error: TopologyError) -> ChannelRefused:
    """The channel or connection close a backend's failure becomes."""
    code, connection = ERROR_CODES.get(error.kind, (ReplyCode.INTERNAL_ERROR, True))
    return (ConnectionRefused if connection else ChannelRefused)(code, error.text)


def _declare_ok(info: QueueInfo) -> C.Queue.DeclareOk:
    """queue.declare-ok with what the broker said of the queue (a count it did not tell: 0)."""
    return C.Queue.DeclareOk(queue=info.name, message_count=info.message_count or 0,
                             consumer_count=info.consumer_count or 0)


class TopologyPublish091(Publish091):
    """Every publish of a topology-mode listener no route takes, on one anonymous-terminus
    sender (module docstring, "Publishes")."""

    def __init__(self, container: Container, route: Route, facade: Facade091, amqp10: Any,
                 mode: TopologyMode, *, anonymous: bool = True) -> None:
        super().__init__(container, route, facade, amqp10, None, register=False,
                         anonymous=anonymous)
        self.mode = mode

    def to_amqp10(self, ev: MessageReceived, where: Delivery091) -> AmqpMessage:
        """The route's translation, addressed (``to``) to the exchange and routing key
        (``reply_to`` unchanged, as RabbitMQ carries it between 0-9-1 and 1.0)."""
        message = super().to_amqp10(ev, where)
        message.properties.to = self.mode.backend.publish_address(
            where.exchange or "", where.routing_key or "")
        return message

    # -- a publish that will not come back from the broker lifts its local-delivery fence

    def _lift(self, entry: PublishEntry) -> None:
        if entry.fence is not None:
            local = self.mode.local
            if local is not None:
                local.lift(entry.fence)
            entry.fence = None

    def _fail(self, entry: PublishEntry, code: int, reason: str) -> None:
        self._lift(entry)
        super()._fail(entry, code, reason)

    def _link_refusal(self, entry: PublishEntry, reason: str) -> None:
        self._lift(entry)
        super()._link_refusal(entry, reason)

    def _tell_abandoned(self, entry: PublishEntry, reason: str) -> None:
        self._lift(entry)
        super()._tell_abandoned(entry, reason)

    def _released(self, entry: PublishEntry) -> None:
        """Routed to no queue (RabbitMQ 4 releases such a message): basic.return when
        mandatory, then confirmed, as RabbitMQ does."""
        self._lift(entry)
        self.stats.released += 1
        self.bytes -= entry.size
        ch: Any = entry.st
        self.facade.unroutable(ch, entry.command, entry.command_id, entry.returnable)

    def _rejected(self, entry: PublishEntry, condition: str | None, text: str) -> None:
        """No such exchange (amqp:not-found): the publisher's channel is closed with 404,
        as RabbitMQ closes it; any other rejection is a basic.nack."""
        self._lift(entry)
        if condition != "amqp:not-found":
            super()._rejected(entry, condition, text)
            return
        self.stats.rejected += 1
        self.bytes -= entry.size
        ch: Any = entry.st
        self.facade.publish_refused(ch.client.sock.peer, text, route=self.name)
        # RabbitMQ's own words ("no exchange 'X' in vhost '/'"), as its 0-9-1 says them
        self.facade.refuse_publish(ch, ReplyCode.NOT_FOUND,
                                   f"NOT_FOUND - {text.removeprefix(condition + ': ')}")


class TopologyConsume091(Consume091):
    """A broker queue's consumers and getters on a topology-mode listener, made on demand
    (module docstring, "Consumes and gets")."""

    def __init__(self, container: Container, route: Route, facade: Facade091, amqp10: Any,
                 mode: TopologyMode) -> None:
        super().__init__(container, route, facade, amqp10, None, register=False)
        self.mode = mode

    def consumer_connection(self) -> Any | None:
        """The 1.0 connection that declared the queue, when it is exclusive at the broker
        (the backend's answer: RabbitMQ 4 spreads them over the pool)."""
        return self.mode.backend.consumer_connection(self.queue)

    def count_left(self, consumer: Consumer091, done: Callable[[int | None], None]) -> bool:
        """RabbitMQ 4: a passive declare once the message is on its way to the bridge
        (its count is then the messages left behind it, what RabbitMQ's get-ok says); a
        1.0 delivery does not say it. Straight to the backend: the listener's own answer
        to a redeclare would say 0 while the getter's link has credit."""
        if self.mode.settings.broker != "rabbitmq4":
            return False
        self.mode.backend.declare_queue(
            QueueSpec(self.queue, owner=consumer.ch.client.owner), True,
            lambda info: done(info.message_count if isinstance(info, QueueInfo) else None))
        return True

    def consumer_terms(self, arguments: dict[str, Any] | None) -> ConsumerTerms | None:
        """RabbitMQ 4 reads a consumer's 0-9-1 arguments (``x-priority``,
        ``x-stream-offset``, …) from its link's attach: they go there
        (:mod:`bridge.topology.consumer_args`); other brokers get none."""
        if self.mode.settings.broker != "rabbitmq4" or not arguments:
            return None
        terms = rabbitmq_consumer_terms(arguments)
        if isinstance(terms, TopologyError):
            raise refusal(terms)
        return terms or None

    def take_delivery(self, sub: Any, link: Any, delivery: Any, wanted: bool,
                      translate: Any) -> Any:
        """As the core takes it; a whole message from the broker also counts the queue's
        publishes in transit down (:meth:`LocalDelivery.arrived`)."""
        local = self.mode.local
        if local is not None and delivery.readable and not delivery.partial:
            local.arrived(self.queue)
        return super().take_delivery(sub, link, delivery, wanted, translate)

    def to_legacy091(self, message: AmqpMessage, *, published_exchange_only: bool = False
                     ) -> Any:
        """The route's translation, less the ``to`` a topology-mode publish carries; a
        ``reply_to`` that is a queue's 1.0 address becomes the queue's name; RabbitMQ 4's
        dead-letter and stream annotations as the headers and routing its own 0-9-1
        consumers get (:mod:`mappings.rabbitmq_annotations`)."""
        broker = broker_data(message) if self.mode.settings.broker == "rabbitmq4" else None
        if broker is not None:
            message = broker.message
        properties, where, body = super().to_legacy091(
            message, published_exchange_only=published_exchange_only)
        backend = self.mode.backend
        headers = properties.headers
        if headers:
            key = where.routing_key or ""
            exchange, published_key = where.exchange, key
            if broker is not None and broker.routing is not None:  # (dead-lettered: the
                exchange = broker.published[0]                       # publish's own `to`)
                published_key = broker.published[1] or message.properties.subject or ""
            if headers.get(H_TO, self) == backend.publish_address(exchange or "",
                                                                  published_key):
                del headers[H_TO]
            if headers.get(H_SUBJECT, self) == key:  # (the key says it: RabbitMQ 4
                del headers[H_SUBJECT]                 # annotates the key it routed by)
            if not headers:
                properties.headers = None
        if properties.reply_to:
            name = self.mode.queue_named_by(properties.reply_to)
            if name is not None:
                properties.reply_to = name
        if broker is not None:
            if broker.headers:
                properties.headers = {**(properties.headers or {}), **broker.headers}
                if properties.headers.get(H_DELIVERY_COUNT, self) \
                        == broker.headers.get("x-delivery-count"):
                    del properties.headers[H_DELIVERY_COUNT]  # (RabbitMQ's says it)
            if broker.routing is not None:
                where = Delivery091(broker.routing[0], broker.routing[1], where.redelivered)
        if not carriable("exchange", where.exchange or ""):
            # (made at the broker by another client: a 0-9-1 frame cannot name it, so no
            # consumer here can get the message; refused, not retried for ever)
            raise MappingError(f"the exchange name {where.exchange!r} it was published to "
                               "cannot be carried in an AMQP 0-9-1 basic.deliver")
        return properties, where, body

    def forget(self, consumer: Any) -> None:
        """A consumer or getter is gone: the route goes with its last one (and the
        queue's declare-ok is the broker's again: an auto-delete queue may go with it)."""
        super().forget(consumer)
        self.mode.declares.consumer_gone(self.queue)
        if not self.subscriptions:
            self.mode.drop_route(self)


class TopologyMode:
    """A topology-mode listener's bond to its 1.0 broker (module docstring)."""

    def __init__(self, facade: Facade091, container: Container, backend: Topology,
                 amqp10: Any, settings: ListenerTopology, login_user: str | None,
                 publisher: Callable[..., Any] | None = None,
                 held: dict[str, str] | None = None) -> None:
        """``publisher`` makes the route of the publishes no route takes (default: one
        anonymous-terminus sender, :class:`TopologyPublish091`); ``held``: the exclusive
        queues' owners shared with the other listeners on the broker connection."""
        self.facade = facade
        self.container = container
        self.backend = backend
        self.amqp10 = amqp10
        self.settings = settings
        self.core = TopologyCore(facade.name, backend, settings, login_user, held)
        self.publisher = (publisher or TopologyPublish091)(container, self.core.template,
                                                           facade, amqp10, self)
        self.queues: dict[str, TopologyConsume091] = {}
        """The consume routes of broker queues that have consumers or getters, by queue."""
        self.exclusive: dict[str, Client091] = {}
        """Exclusive queues declared through this listener → the connection owning them."""
        self.declares = DeclareCache(self.queue_links)
        """Redeclares answered without the broker
        (:mod:`~bridge.facade.amqp091.declare_cache`)."""
        self.local = LocalDelivery(facade, self) \
            if settings.local_delivery and isinstance(self.publisher, TopologyPublish091) \
            else None
        """Publishes to a reply queue handed straight to its one consumer here
        (:mod:`~bridge.facade.amqp091.local_delivery`); None when switched off, and on
        RabbitMQ 3.x (whose AMQP 1.0 plugin changes messages in ways a local delivery
        would not)."""

    # -- clients -------------------------------------------------------------------------

    def client_opened(self, client: Client091) -> None:
        """A new connection: its owner id at the backend."""
        client.owner = self.core.new_owner(client.sock.peer)

    def client_gone(self, client: Client091) -> None:
        """The connection ended: its exclusive queues go (at the broker too)."""
        for name in [q for q, c in self.exclusive.items() if c is client]:
            del self.exclusive[name]
            self.core.release(name)
            self.declares.forget(name)
            if self.local is not None:
                self.local.forget(name)
        if client.owner:
            self.backend.forget_owner(client.owner)

    # -- names ---------------------------------------------------------------------------

    def queue_named_by(self, address: str) -> str | None:
        """The queue whose 1.0 address ``address`` is (None: not a queue's address); on
        RabbitMQ 3.x also ``/queue/Q``, the ``reply_to`` Q of a message published to it
        over 0-9-1 as its AMQP 1.0 plugin shows it (and takes it back)."""
        backend = self.backend
        if isinstance(backend, RabbitMQ091Topology) and backend.address_style == "v1" \
                and address.startswith("/queue/") and len(address) > len("/queue/"):
            return address[len("/queue/"):]
        return self.core.queue_named_by(address)

    def check_exclusive(self, ch: Channel091, queue: str) -> None:
        """405 RESOURCE_LOCKED for an exclusive queue of another connection (of this
        listener, or of another on the same broker connection)."""
        owner = self.exclusive.get(queue)
        if (owner is not None and owner is not ch.client) or (
                owner is None and self.core.held_by_other(queue, ch.client.owner)):
            raise ChannelRefused(
                ReplyCode.RESOURCE_LOCKED,
                f"RESOURCE_LOCKED - cannot obtain exclusive access to locked queue "
                f"'{queue}' in vhost '{ch.client.virtual_host or '/'}'. It could be "
                f"originally declared on another connection or the exclusive property "
                f"value does not match that of the original declaration.")

    # -- routes ----------------------------------------------------------------------------

    def queue_route(self, queue: str) -> TopologyConsume091:
        """The consume route of broker queue ``queue`` (made now if it has none)."""
        route = self.queues.get(queue)
        if route is None:
            settings = self.core.queue_route_settings(queue)
            route = self.queues[queue] = TopologyConsume091(
                self.container, settings, self.facade, self.amqp10, self)
            if self.facade.stopping:
                route.paused = True
        return route

    def queue_links(self, queue: str) -> list[Amqp10Link]:
        """The 1.0 receiver links of the consume route of broker queue ``queue``."""
        route = self.queues.get(queue)
        return [] if route is None else [consumer.link for consumer in route.subscriptions]

    def drop_route(self, route: TopologyConsume091) -> None:
        """``route`` has no consumer left: forget it (made again on the next one)."""
        if self.queues.get(route.queue) is route and not route.pending:
            del self.queues[route.queue]
            if self.local is not None and route.queue not in self.exclusive:
                self.local.forget(route.queue)

    def routes(self) -> list[Any]:
        """The publisher and the queues' consume routes (metrics, the graceful stop)."""
        return [self.publisher, *self.queues.values()]

    # -- methods answered by the backend ---------------------------------------------------

    def call(self, ch: Channel091, method: Frame, start: Callable[[Done[Any]], None],
             answer: Callable[[Any], Frame | None]) -> None:
        """Start a backend operation for ``method``; when its ``done`` fires, send what
        ``answer`` makes of the result (None: nothing, no-wait), or the close its
        failure (or ``answer``'s refusal) becomes. The connection's later methods and
        publishes wait meanwhile."""
        client = ch.client
        client.topology_pending += 1

        def done(result: Any) -> None:
            # (the connection's end resets the count: a late answer finds it at 0)
            client.topology_pending = max(0, client.topology_pending - 1)
            try:
                if isinstance(result, TopologyError):
                    raise refusal(result)
                reply = answer(result)  # (copes with a channel gone meanwhile)
            except ChannelRefused as exc:
                if ch.live:
                    self.facade.commands.refuse(ch, method, exc)
            else:
                if reply is not None and ch.live:
                    ch.client.engine.send_method(ch.number, reply)
            self.facade.flush_later(client.sock)
            self.facade.release_held(client)

        try:
            start(done)
        except Exception:  # (a backend's fault: contained; the connection is not stuck)
            client.topology_pending = max(0, client.topology_pending - 1)
            raise

    def exchange_declare(self, ch: Channel091, m: C.Exchange.Declare) -> None:
        spec = ExchangeSpec(m.exchange or "", m.exchange_type or "direct",
                            durable=bool(m.durable), auto_delete=bool(m.auto_delete),
                            internal=bool(m.internal), arguments=dict(m.arguments or {}))
        self.call(ch, m, lambda done: self.backend.declare_exchange(spec, bool(m.passive), done),
                  lambda _: None if m.nowait else C.Exchange.DeclareOk())

    def exchange_delete(self, ch: Channel091, m: C.Exchange.Delete) -> None:
        self.call(ch, m, lambda done: self.backend.delete_exchange(
            m.exchange or "", bool(m.if_unused), done),
            lambda _: None if m.nowait else C.Exchange.DeleteOk())

    def exchange_bind(self, ch: Channel091, m: C.Exchange.Bind | C.Exchange.Unbind) -> None:
        binding = BindingSpec(m.source or "", m.destination or "", m.routing_key or "",
                              dict(m.arguments or {}), to_exchange=True)
        if isinstance(m, C.Exchange.Bind):
            self.call(ch, m, lambda done: self.backend.bind(binding, done),
                      lambda _: None if m.nowait else C.Exchange.BindOk())
        else:
            self.call(ch, m, lambda done: self.backend.unbind(binding, done),
                      lambda _: None if m.nowait else C.Exchange.UnbindOk())

    def queue_declare(self, ch: Channel091, m: C.Queue.Declare) -> Frame | None:
        """queue.declare at the broker; or its answer at once (returned) when it is a
        redeclare the bridge can answer (:class:`DeclareCache`)."""
        name = m.queue or ""
        if name == DIRECT_REPLY_TO:  # every declare of it is passive, and it has a consumer
            ch.last_declared_queue = name  # (FastStream declares it before an RPC request)
            return None if m.nowait else C.Queue.DeclareOk(queue=name, message_count=0,
                                                           consumer_count=1)
        if not name and not m.passive:  # checked by the name it will get, as RabbitMQ does
            self.facade.authorize(ch, self._server_named_checks(m), m)
        self.check_exclusive(ch, name)
        client = ch.client
        exclusive = bool(m.exclusive) and not m.passive
        spec = QueueSpec(name, durable=bool(m.durable), exclusive=exclusive,
                         auto_delete=bool(m.auto_delete), arguments=dict(m.arguments or {}),
                         owner=client.owner)  # (the backend checks an exclusive one's)
        known = self.declares.lookup(spec, bool(m.passive))
        if known is not None:
            ch.last_declared_queue = known.name
            return None if m.nowait else _declare_ok(known)

        def answer(info: QueueInfo) -> Frame | None:
            self.declares.answered(spec, bool(m.passive), info)
            if exclusive:
                if not ch.client.engine.is_open:  # its owner went while it was declared
                    self.backend.forget_owner(client.owner)
                else:
                    self.exclusive[info.name] = client
                    self.core.hold(info.name, client.owner)
            ch.last_declared_queue = info.name
            return None if m.nowait else _declare_ok(info)

        self.call(ch, m, lambda done: self.backend.declare_queue(spec, bool(m.passive), done),
                  answer)
        return None

    def _server_named_checks(self, m: C.Queue.Declare) -> list[Check]:
        """What a server-named queue's declare needs: configure on the name the broker
        will give it (RabbitMQ 3.x: ``amq.gen-…``; else the backend's
        ``amqp-bridge.gen-…``: both random past the prefix, so a name like it stands for
        it), and read on it when it names a dead-letter exchange (write on that exchange
        is checked with the method)."""
        sample = server_named_queue() if isinstance(self.backend, RabbitMQ091Topology) \
            else server_name()
        checks = [Check("configure", "queue", sample)]
        if DEAD_LETTER_EXCHANGE in (m.arguments or {}):
            checks.append(Check("read", "queue", sample))
        return checks

    def queue_bind(self, ch: Channel091, m: C.Queue.Bind | C.Queue.Unbind) -> None:
        self.check_exclusive(ch, m.queue or "")
        binding = BindingSpec(m.exchange or "", m.queue or "", m.routing_key or "",
                              dict(m.arguments or {}))
        if isinstance(m, C.Queue.Bind):
            self.call(ch, m, lambda done: self.backend.bind(binding, done),
                      lambda _: None if m.nowait else C.Queue.BindOk())
        else:
            self.call(ch, m, lambda done: self.backend.unbind(binding, done),
                      lambda _: C.Queue.UnbindOk())

    def queue_purge(self, ch: Channel091, m: C.Queue.Purge) -> None:
        self.check_exclusive(ch, m.queue or "")
        self.declares.forget(m.queue or "")
        self.call(ch, m, lambda done: self.backend.purge_queue(m.queue or "", done),
                  lambda count: None if m.nowait else C.Queue.PurgeOk(message_count=count or 0))

    def queue_delete(self, ch: Channel091, m: C.Queue.Delete) -> None:
        name = m.queue or ""
        self.check_exclusive(ch, name)
        self.declares.forget(name)

        def answer(count: int | None) -> Frame | None:
            self.exclusive.pop(name, None)
            self.core.release(name)
            self.declares.forget(name)
            return None if m.nowait else C.Queue.DeleteOk(message_count=count or 0)

        self.call(ch, m, lambda done: self._consumers_gone(name, bool(m.if_unused),
                                                          lambda: self.backend.delete_queue(
            name, bool(m.if_unused), bool(m.if_empty), done)), answer)

    def _consumers_gone(self, queue: str, if_unused: bool, then: Callable[[], None]) -> None:
        """Call ``then`` (the delete of ``queue``) once this listener's consumers of it are
        cancelled, as RabbitMQ cancels the consumers of a queue it deletes, and their
        links detached. Not left to the broker: RabbitMQ 4 would detach the links, and
        they would attach again to a queue of the same name declared meanwhile; RabbitMQ
        3.x's AMQP 1.0 plugin fails the bridge's whole 1.0 connection when a queue is
        deleted under one of its consumers (every client of the listener is then closed,
        docs/topology.md). An ``if_unused`` delete is refused while they consume, as
        RabbitMQ refuses it. A detach the broker has not answered within DETACH_WAIT
        seconds is waited for no longer."""
        route = self.queues.get(queue)
        if if_unused or route is None:
            then()
            return
        consumers = [c for c in route.subscriptions if isinstance(c, Consumer091)]
        for consumer in consumers:
            consumer.queue_deleted()
        deadline = time.monotonic() + DETACH_WAIT

        def check() -> None:
            if all(c.link.detached for c in consumers) or time.monotonic() >= deadline:
                then()
            else:
                self.container.schedule(DETACH_POLL, Timer(check))
        check()

    def check_queue(self, ch: Channel091, method: Frame, queue: str,
                    then: Callable[[], Frame | None]) -> None:
        """Run ``then`` (a consume or get) once the broker said ``queue`` exists (a
        passive declare: 404 otherwise, as RabbitMQ answers a consume of a missing
        queue)."""
        self.check_exclusive(ch, queue)

        def exists(info: QueueInfo) -> Frame | None:
            if not ch.live:
                return None
            if info.queue_type == "stream":
                self._stream_rules(ch, method, queue)
            return then()

        self.call(ch, method, lambda done: self.backend.declare_queue(
            QueueSpec(queue, owner=ch.client.owner), True, done), exists)

    @staticmethod
    def _stream_rules(ch: Channel091, method: Frame, queue: str) -> None:
        """RabbitMQ's refusals of what a stream does not serve over 0-9-1: basic.get
        (540, closing the connection) and a consumer without its own prefetch (406).
        Through the 1.0 link neither is refused: the get was answered get-empty and the
        consumer read with the listener's credit."""
        where = f"queue '{queue}' in vhost '{ch.client.virtual_host or '/'}'"
        if isinstance(method, C.Basic.Get):
            raise ConnectionRefused(ReplyCode.NOT_IMPLEMENTED,
                                    f"NOT_IMPLEMENTED - basic.get not supported by stream "
                                    f"queues {where}")
        if isinstance(method, C.Basic.Consume) and not ch.prefetch:
            raise ChannelRefused(ReplyCode.PRECONDITION_FAILED,
                                 f"PRECONDITION_FAILED - consumer prefetch count is not set "
                                 f"for stream {where}")

    # -- direct reply-to -------------------------------------------------------------------

    def consume_reply_to(self, ch: Channel091, m: C.Basic.Consume,
                         consume: Callable[[str], Frame | None]) -> None:
        """basic.consume on ``amq.rabbitmq.reply-to``: the channel's reply queue is
        declared at the broker (server-named, exclusive, auto-delete), then ``consume``
        starts the consumer on it."""
        if not m.no_ack:
            raise ChannelRefused(ReplyCode.PRECONDITION_FAILED,
                                 "PRECONDITION_FAILED - reply consumer cannot acknowledge")
        if ch.reply_queue is not None:
            raise ChannelRefused(ReplyCode.PRECONDITION_FAILED,
                                 "PRECONDITION_FAILED - reply consumer already set")
        client = ch.client
        spec = QueueSpec("", exclusive=True, auto_delete=True, owner=client.owner)

        def answer(info: QueueInfo) -> Frame | None:
            if not client.engine.is_open:  # its owner went while it was declared
                self.backend.forget_owner(client.owner)
                return None
            self.exclusive[info.name] = client
            self.core.hold(info.name, client.owner)
            if not ch.live:
                return None  # (the connection's queue until it goes)
            ch.reply_queue = info.name
            return consume(info.name)

        self.call(ch, m, lambda done: self.backend.declare_queue(spec, False, done), answer)

    def reply_to_of(self, ch: Channel091, ev: MessageReceived) -> bool:
        """A publish with ``reply_to = amq.rabbitmq.reply-to`` carries the channel's reply
        queue instead; False (and the channel closed, as RabbitMQ closes it) if the
        channel has none."""
        if ev.properties.reply_to != DIRECT_REPLY_TO:
            return True
        if ch.reply_queue is None:
            text = "PRECONDITION_FAILED - fast reply consumer does not exist"
            self.facade.publish_refused(ch.client.sock.peer, text)
            self.facade.refuse_publish(ch, ReplyCode.PRECONDITION_FAILED, text)
            return False
        ev.properties.reply_to = ch.reply_queue
        return True


__all__ = ["DIRECT_REPLY_TO", "ERROR_CODES", "TopologyConsume091", "TopologyMode",
           "TopologyPublish091", "refusal"]
