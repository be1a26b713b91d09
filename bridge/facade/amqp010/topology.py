"""The 0-10 façade's topology mode: every name no route configures is the AMQP 1.0
broker's (``listeners.<name>.topology`` on an ``amqp0-10`` listener, docs/topology.md).

Theory of operation
-------------------
A :class:`TopologyMode` belongs to one ``amqp0-10`` listener with a ``topology``. It
holds the listener's :class:`~bridge.topology.Topology` backend (and, shared with the
0-9-1 front, a :class:`~bridge.facade.core.topology.TopologyCore`) and serves the
commands the listener's routes do not:

Declares, deletes, purges, bindings and queries
    queue-declare / -delete / -purge, exchange-declare / -delete / -bind / -unbind
    become backend operations (:meth:`TopologyMode.call`); the command is completed
    when the operation's ``done`` fires, or answered with execution.exception as qpidd
    answers (:data:`ERROR_CODES`: not-found 404, resource-locked 405,
    precondition-failed 406, unauthorized-access 403, not-implemented 540; the broker
    away or silent: resource-limit-exceeded 506). queue-query and exchange-query are
    passive declares: a name the broker lacks is a normal "not found" result
    (queue-query's empty queue name, exchange-query's not-found flag), and another
    session's exclusive queue is found (qpid.messaging resolves a reply-to address so).
    While an operation is pending, what the session sends next (commands and
    transfers) is held, and the client's socket not read: a broker executes a
    session's commands in order (qpid.messaging sends a declare, a bind and a
    subscribe without waiting).

Publishes
    Every message.transfer no route takes goes to ONE anonymous-terminus sender
    (:class:`TopologyPublish`: a :class:`~bridge.facade.amqp010.publish.Publish010`, so the
    in-flight bound, throttling and stop rule), each message's ``to`` the backend's
    ``publish_address(exchange, routing key)``. The transfer is completed with the 1.0
    outcome: accepted; released (routed to no queue: RabbitMQ 4 releases such a
    message) is completed too — qpidd drops a message no binding matches (its
    exchange's alternate, if it has one, takes it: the broker's routing) and tells the
    publisher nothing; rejected (amqp:not-found: no such exchange) →
    execution.exception not-found.

Subscriptions
    message.subscribe on any queue, after a passive declare (not-found at once, as
    qpidd answers, rather than a 1.0 attach that never comes): a
    :class:`~bridge.facade.amqp010.consume.Consume010` route per queue made on demand
    (a 1.0 receiver per subscription on ``queue_address(queue)``), dropped once it has
    no subscription left. acquire-mode not-acquired (qpid.messaging ``{mode:
    browse}``) is a receiver with distribution-mode copy where the broker kind has it
    (:data:`BROWSES`: qpidd does; RabbitMQ 4 does not — refused not-implemented with
    the reason).

Exclusive queues
    A 0-10 exclusive queue is its session's (qpidd's rule): each session gets an owner
    id at the backend; another session's declare of it is resource-locked, any session
    may publish to it (a reply from another connection or bridge instance reaches it),
    and it goes with its session (``forget_owner``). qpid.messaging's ``'#'`` names
    are such queues (exclusive, auto-delete).

reply-to
    A 0-10 ``reply-to`` (exchange and routing key) travels as the mapping writes it
    (``exchange/key``, or the queue's name for the default exchange). The other way,
    a 1.0 ``reply-to`` that is a queue's 1.0 address (a native 1.0 requester's; on
    RabbitMQ 4 ``/queues/Q``) reaches a 0-10 subscriber as the queue's name
    (:class:`TopologyTranslator`), so its ``session.sender(msg.reply_to)`` answers
    through the default exchange. The ``to`` the anonymous publisher set is not shown
    to 0-10 subscribers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from proton.reactor import Container

from amqp010.base import Command, Struct
from amqp010.spec import (
    AcceptMode,
    AcquireMode,
    DeliveryProperties,
    ErrorCode,
    ExchangeBind,
    ExchangeDeclare,
    ExchangeDelete,
    ExchangeQuery,
    ExchangeQueryResult,
    ExchangeUnbind,
    MessageSubscribe,
    QueueDeclare,
    QueueDelete,
    QueuePurge,
    QueueQuery,
    QueueQueryResult,
)
from mappings.amqp010 import A_ROUTING_KEY, H_TO
from mappings.message import AmqpMessage

from ...config import ListenerTopology, Route
from ...routes.translate import Translator
from ...topology import (
    BindingSpec,
    Done,
    ExchangeSpec,
    QueueInfo,
    QueueSpec,
    Topology,
    TopologyError,
)
from ..core.publish import PublishEntry
from ..core.topology import KNOWN_EXCHANGE_TYPES, TopologyCore, exchange_arguments
from .consume import Consume010
from .publish import Publish010
from .state import LATER, Later, Refused, SessionState

if TYPE_CHECKING:
    from .listener import Facade

ERROR_CODES: dict[str, int] = {
    "not-found": ErrorCode.NOT_FOUND,
    "resource-locked": ErrorCode.RESOURCE_LOCKED,
    "precondition-failed": ErrorCode.PRECONDITION_FAILED,
    "access-refused": ErrorCode.UNAUTHORIZED_ACCESS,
    "not-implemented": ErrorCode.NOT_IMPLEMENTED,
    "unavailable": ErrorCode.RESOURCE_LIMIT_EXCEEDED,
}
"""A :class:`~bridge.topology.TopologyError` kind → the 0-10 execution.exception code,
as qpidd answers."""

BROWSES: dict[str, str | None] = {
    "qpidd": None,
    "rabbitmq4": "RabbitMQ 4 has no non-destructive (distribution-mode copy) AMQP 1.0 "
                 "source for classic or quorum queues",
}
"""Broker kind → why it cannot serve a browsing subscription (None: it can)."""


def refusal(error: TopologyError) -> Refused:
    """The execution.exception a backend's failure becomes."""
    return Refused(ERROR_CODES.get(error.kind, ErrorCode.INTERNAL_ERROR), error.text)


class TopologyPublish(Publish010):
    """Every transfer of a topology-mode listener no route takes, on one anonymous-terminus
    sender (module docstring, "Publishes")."""

    def __init__(self, container: Container, route: Route, facade: Facade, amqp10: Any,
                 backend: Topology) -> None:
        super().__init__(container, route, facade, amqp10, None, register=False,
                         anonymous=True)
        self.backend = backend

    def amqp10_message(self, dp: DeliveryProperties, mp: Any, body: bytes) -> AmqpMessage:
        """The route's translation, addressed (``to``) to the exchange and routing key."""
        message = super().amqp10_message(dp, mp, body)
        message.properties.to = self.backend.publish_address(dp.exchange or "",
                                                             dp.routing_key or "")
        return message

    def _released(self, entry: PublishEntry) -> None:
        """Routed to no queue: dropped, as qpidd drops it (counted and logged as
        unroutable); the transfer is completed."""
        self.stats.released += 1
        message = AmqpMessage.decode(entry.data)
        # the routing key: the mapping's subject, or its annotation when they differ
        key = message.message_annotations.get(A_ROUTING_KEY, message.properties.subject)
        transfer: Any = entry.command  # (a message.transfer)
        self.facade.publish_unroutable(entry.st.client.sock.peer, transfer.destination or "",
                                       key or "", "dropped")
        self._complete(entry)


class TopologyTranslator(Translator):
    """A broker queue's translation toward 0-10 subscribers (module docstring,
    "reply-to"): a ``reply-to`` that is a queue's 1.0 address (a native 1.0
    requester's, RabbitMQ 4's ``/queues/Q``) becomes the queue's name, the reply-to a
    0-10 responder answers through the default exchange; the ``to`` the façade's
    publisher set is dropped (the exchange and routing key say it)."""

    def __init__(self, route: Route, core: TopologyCore) -> None:
        super().__init__(route)
        self.core = core

    def amqp10_to_legacy(self, message: AmqpMessage) -> Any:
        reply_to = message.properties.reply_to
        if reply_to:
            queue = self.core.queue_named_by(reply_to)
            if queue is not None:
                message.properties.reply_to = queue
        dp, mp, body = super().amqp10_to_legacy(message)
        headers = mp.application_headers
        if headers and headers.get(H_TO) == self.core.backend.publish_address(
                dp.exchange or "", dp.routing_key or ""):
            del headers[H_TO]
            if not headers:
                mp.application_headers = None
        return dp, mp, body


class TopologyMode:
    """A topology-mode 0-10 listener's bond to its 1.0 broker (module docstring)."""

    def __init__(self, facade: Facade, container: Container, backend: Topology,
                 amqp10: Any, settings: ListenerTopology, login_user: str | None,
                 held: dict[str, str] | None = None) -> None:
        """``held``: the exclusive queues' owners shared with the other listeners on the
        broker connection."""
        self.facade = facade
        self.container = container
        self.backend = backend
        self.amqp10 = amqp10
        self.core = TopologyCore(facade.name, backend, settings, login_user, held)
        self.cannot_browse = BROWSES.get(settings.broker, "the broker kind cannot browse")
        self.publisher = TopologyPublish(container, self.core.template, facade, amqp10,
                                         backend)
        self.queues: dict[str, Consume010] = {}
        """The consume routes of broker queues with subscriptions, by queue."""
        self.exchange_types: dict[str, str] = dict(KNOWN_EXCHANGE_TYPES)
        """Exchange types known to this listener (standard ones, and declared here)."""
        self.exclusive: dict[str, SessionState] = {}
        """Exclusive queues declared through this listener → the session owning them."""

    # -- sessions and routes -------------------------------------------------------------

    def session_opened(self, st: SessionState) -> None:
        """A new session: its owner id at the backend (its exclusive queues')."""
        st.owner = self.core.new_owner(st.client.sock.peer)

    def session_gone(self, st: SessionState) -> None:
        """The session ended: its exclusive queues go (at the broker too)."""
        for name in [q for q, owner in self.exclusive.items() if owner is st]:
            del self.exclusive[name]
            self.core.release(name)
        if st.owner is not None:
            self.backend.forget_owner(st.owner)

    def check_exclusive(self, st: SessionState, queue: str) -> None:
        """resource-locked for an exclusive queue of another session (qpidd's answer; of
        this listener, or a client's of another on the same broker connection)."""
        owner = self.exclusive.get(queue)
        if (owner is not None and owner is not st) or (
                owner is None and self.core.held_by_other(queue, st.owner)):
            raise Refused(ErrorCode.RESOURCE_LOCKED, f"cannot obtain exclusive access to "
                          f"queue {queue!r}: another session's exclusive queue", 0)

    def queue_route(self, queue: str) -> Consume010:
        """The consume route of broker queue ``queue`` (made now if it has none; routes
        left without subscriptions are dropped meanwhile)."""
        for name, made in list(self.queues.items()):
            if not made.subscriptions and not made.pending and name != queue:
                del self.queues[name]
        route = self.queues.get(queue)
        if route is None:
            settings = self.core.queue_route_settings(queue)
            route = self.queues[queue] = Consume010(
                self.container, settings, self.facade, self.amqp10, None, register=False)
            route.translator = TopologyTranslator(settings, self.core)
            if self.facade.stopping:
                route.paused = True
        return route

    def routes(self) -> list[Any]:
        """The publisher and the queues' consume routes (metrics, the graceful stop)."""
        return [self.publisher, *self.queues.values()]

    # -- commands answered by the backend ------------------------------------------------

    def call(self, st: SessionState, cid: int, command: Command,
             start: Callable[[Done[Any]], None],
             answer: Callable[[Any], Struct | Later | None], *,
             errors_answered: bool = False) -> Later:
        """Start a backend operation for ``command``; when its ``done`` fires, complete
        the command with what ``answer`` makes of the result (:data:`LATER`: ``answer``
        completes it itself), or raise the execution.exception its failure (or
        ``answer``'s :class:`Refused`) becomes (``errors_answered``: ``answer`` is given
        failures too). The session's later commands and transfers wait meanwhile."""
        st.topology_pending += 1

        def done(result: Any) -> None:
            st.topology_pending = max(0, st.topology_pending - 1)
            try:
                if isinstance(result, TopologyError) and not errors_answered:
                    raise refusal(result)
                reply = answer(result)
            except Refused as exc:
                self.facade.commands.refuse(st, cid, command, exc)
            else:
                if reply is not LATER and st.session.attached:
                    st.session.complete(cid, reply)  # type: ignore[arg-type]
            self.facade.flush_later(st.client.sock)
            self.facade.release_held(st)

        try:
            start(done)
        except Exception:  # (a backend's fault: contained; the session is not stuck)
            st.topology_pending = max(0, st.topology_pending - 1)
            raise
        return LATER

    def queue_declare(self, st: SessionState, cid: int, c: QueueDeclare) -> Later:
        name = c.queue or ""
        if not name:
            raise Refused(ErrorCode.INVALID_ARGUMENT, "a queue name is required", 0)
        exclusive = bool(c.exclusive) and not c.passive
        spec = QueueSpec(name, durable=bool(c.durable), exclusive=exclusive,
                         auto_delete=bool(c.auto_delete),
                         arguments=exchange_arguments(c.arguments, c.alternate_exchange),
                         owner=st.owner)

        def answer(info: QueueInfo) -> None:
            if not exclusive:
                return
            if st.live:
                self.exclusive[info.name] = st
                self.core.hold(info.name, st.owner)
            elif st.owner is not None:
                self.backend.forget_owner(st.owner)  # its owner went while it was declared

        return self.call(st, cid, c, lambda done: self.backend.declare_queue(
            spec, bool(c.passive), done), answer)

    def queue_query(self, st: SessionState, cid: int, c: QueueQuery) -> Later:
        name = c.queue or ""

        def answer(info: QueueInfo | TopologyError) -> QueueQueryResult:
            if isinstance(info, TopologyError):
                if info.kind == "not-found":
                    return QueueQueryResult(queue="")  # as qpidd answers for an unknown queue
                if info.kind != "resource-locked":
                    raise refusal(info)
                # another session's exclusive queue: it exists (a reply goes to it)
                return QueueQueryResult(queue=name, durable=False, exclusive=True,
                                        auto_delete=False, arguments={}, message_count=0,
                                        subscriber_count=0)
            return QueueQueryResult(queue=info.name, durable=False, exclusive=False,
                                    auto_delete=False, arguments={},
                                    message_count=info.message_count or 0,
                                    subscriber_count=info.consumer_count or 0)

        return self.call(st, cid, c, lambda done: self.backend.declare_queue(
            QueueSpec(name, owner=st.owner), True, done), answer, errors_answered=True)

    def queue_delete(self, st: SessionState, cid: int, c: QueueDelete) -> Later:
        name = c.queue or ""
        self.check_exclusive(st, name)

        def answer(_: int | None) -> None:
            self.exclusive.pop(name, None)
            self.core.release(name)

        return self.call(st, cid, c, lambda done: self.backend.delete_queue(
            name, bool(c.if_unused), bool(c.if_empty), done), answer)

    def queue_purge(self, st: SessionState, cid: int, c: QueuePurge) -> Later:
        self.check_exclusive(st, c.queue or "")
        return self.call(st, cid, c, lambda done: self.backend.purge_queue(
            c.queue or "", done), lambda _: None)

    def exchange_declare(self, st: SessionState, cid: int, c: ExchangeDeclare) -> Later:
        name = c.exchange or ""
        spec = ExchangeSpec(name, type=c.type or "direct", durable=bool(c.durable),
                            auto_delete=bool(c.auto_delete),
                            arguments=exchange_arguments(c.arguments, c.alternate_exchange))

        def answer(_: ExchangeSpec) -> None:
            if not c.passive:
                self.exchange_types[name] = spec.type

        return self.call(st, cid, c, lambda done: self.backend.declare_exchange(
            spec, bool(c.passive), done), answer)

    def exchange_query(self, st: SessionState, cid: int, c: ExchangeQuery) -> Later:
        name = c.name or ""

        def answer(found: ExchangeSpec | TopologyError) -> ExchangeQueryResult:
            if isinstance(found, TopologyError):
                if found.kind != "not-found":
                    raise refusal(found)
                return ExchangeQueryResult(type="", durable=False, not_found=True,
                                           arguments={})
            # (the broker's type where it tells it; else known here, or empty)
            return ExchangeQueryResult(type=found.type or self.exchange_types.get(name, ""),
                                       durable=found.durable, not_found=False, arguments={})

        return self.call(st, cid, c, lambda done: self.backend.declare_exchange(
            ExchangeSpec(name, type=""), True, done), answer, errors_answered=True)

    def exchange_delete(self, st: SessionState, cid: int, c: ExchangeDelete) -> Later:
        name = c.exchange or ""

        def answer(_: None) -> None:
            if name not in KNOWN_EXCHANGE_TYPES:
                self.exchange_types.pop(name, None)

        return self.call(st, cid, c, lambda done: self.backend.delete_exchange(
            name, bool(c.if_unused), done), answer)

    def exchange_bind(self, st: SessionState, cid: int, c: ExchangeBind | ExchangeUnbind
                      ) -> Later:
        self.check_exclusive(st, c.queue or "")
        arguments = dict(c.arguments or {}) if isinstance(c, ExchangeBind) else {}
        binding = BindingSpec(c.exchange or "", c.queue or "", c.binding_key or "", arguments)
        if isinstance(c, ExchangeBind):
            return self.call(st, cid, c, lambda done: self.backend.bind(binding, done),
                             lambda _: None)
        return self.call(st, cid, c, lambda done: self.backend.unbind(binding, done),
                         lambda _: None)

    def subscribe(self, st: SessionState, cid: int, c: MessageSubscribe,
                  accept_mode: AcceptMode, check_room: Callable[[], None]) -> Later:
        """message.subscribe on broker queue ``c.queue``, once the broker said it exists."""
        queue = c.queue or ""
        browse = c.acquire_mode == AcquireMode.NOT_ACQUIRED
        if browse and self.cannot_browse is not None:
            raise Refused(ErrorCode.NOT_IMPLEMENTED, f"browsing (acquire-mode not-acquired, "
                          f"qpid.messaging's mode: browse) is not available: "
                          f"{self.cannot_browse}", 3)
        check_room()

        def answer(_: QueueInfo) -> Later | None:
            if not st.live:
                return LATER  # (nobody to answer)
            route = self.queue_route(queue)
            route.check_exclusive(queue, bool(c.exclusive))
            check_room()
            dest = c.destination or ""
            # an exclusive queue is its declaring 1.0 connection's at the broker (a
            # member of the pool, bridge.topology.rabbitmq4): its consumers attach there
            sub = route.subscribe(st, dest, accept_mode, bool(c.exclusive), queue=queue,
                                  browse=browse,
                                  pinned_to=self.backend.consumer_connection(queue))
            st.subscriptions[dest] = sub
            return sub.complete_when_attached(cid, c)  # (like qpidd: once live)

        return self.call(st, cid, c, lambda done: self.backend.declare_queue(
            QueueSpec(queue, owner=st.owner), True, done), answer)


__all__ = ["BROWSES", "ERROR_CODES", "TopologyMode", "TopologyPublish", "TopologyTranslator",
           "refusal"]
