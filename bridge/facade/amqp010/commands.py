"""The 0-10 server's command model: what the façade answers to declare, query, bind,
subscribe, flush, accept, reject and release.

A 0-10 application talks to a broker of exchanges and queues; the façade has only
the names its routes configure (``publish_routes`` by exchange, ``consume_routes``
by queue, ``exchange_subscriptions`` by exchange that temporary queues bind to).
:class:`ServerCommands` answers each model command from those tables (one handler
per command class, :data:`COMMANDS`): declares and queries of configured names
succeed as a broker's would, anything that would create a queue or exchange is
refused (execution.exception with the error code a broker gives, :class:`Refused`);
a session's exclusive or auto-delete queue becomes a *temporary queue* bound to one
subscription exchange (docs/semantics.md, "Façade"); message.subscribe starts a
subscription of a consume route; accept / reject / release settle our transfers.

On a listener in *topology mode* (:mod:`~bridge.facade.amqp010.topology`) every name no route
configures is the 1.0 broker's: declares, queries, binds, deletes, purges and
subscriptions of such names go to the :class:`~bridge.facade.amqp010.topology.TopologyMode`
(answered once the broker did), configured names are answered as above.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from proton import Delivery

from amqp010.base import Command, Struct
from amqp010.events import CommandReceived
from amqp010.serial import serial_add, serial_diff, serial_le
from amqp010.spec import (
    AcceptMode,
    AcquireMode,
    ErrorCode,
    ExchangeBind,
    ExchangeDeclare,
    ExchangeDelete,
    ExchangeQuery,
    ExchangeQueryResult,
    ExchangeUnbind,
    MessageAccept,
    MessageCancel,
    MessageFlush,
    MessageReject,
    MessageRelease,
    MessageSubscribe,
    QueueDeclare,
    QueueDelete,
    QueuePurge,
    QueueQuery,
    QueueQueryResult,
)

from ..core.access import Access
from ..core.state import AlreadyBound, TemporaryQueue
from .command_access import checks_for, refusal
from .consume import Consume010, Subscription
from .publish import Publish010
from .state import LATER, AccessRefused, Later, Refused, SessionState
from .topology import TopologyMode

log = logging.getLogger("bridge.facade")  # the façade's one logger

EXCHANGE_TYPES = ("direct", "fanout", "topic", "headers", "xml")
"""Exchange types a declare of a façade exchange may name (the route decides the routing)."""


class ServerCommands:
    """The model commands of one façade listener, answered from its route tables."""

    def __init__(self, name: str, publish_routes: dict[str, Publish010],
                 consume_routes: dict[str, Consume010],
                 exchange_subscriptions: dict[str, Consume010],
                 stopping: Callable[[], bool], *, max_links: int,
                 links_of: Callable[[SessionState], int],
                 max_user_links: int | None = None,
                 user_links_of: Callable[[str | None], int] = lambda user: 0,
                 refused: Callable[[SessionState, int, str, str], None],
                 access: Access) -> None:
        self.name = name
        self.publish_routes = publish_routes
        self.consume_routes = consume_routes
        self.exchange_subscriptions = exchange_subscriptions
        self._stopping = stopping
        self.max_links = max_links
        """The listener's ``max_consumers_per_connection``."""
        self._links_of = links_of
        """The 1.0 receivers held by the connection of a session (:attr:`SessionState.links`
        over its sessions)."""
        self.max_user_links = max_user_links
        """The listener's ``max_consumers_per_user`` (None: no bound)."""
        self._user_links_of = user_links_of
        """The 1.0 receivers held by all the sessions of a user's connections."""
        self._refused = refused
        """Told of each command answered with execution.exception (code, text, log
        event): counted and logged by the listener."""
        self.access = access
        """Who may do what: asked before each command is answered."""
        self.topology: TopologyMode | None = None
        """The listener's topology mode (names no route configures are the 1.0 broker's,
        :mod:`~bridge.facade.amqp010.topology`), or None."""

    @property
    def stopping(self) -> bool:
        """The listener is shutting down: no new subscriptions."""
        return self._stopping()

    def on_command(self, st: SessionState, ev: CommandReceived) -> None:
        """Answer ``ev`` (complete it, now or later, or raise an execution.exception)."""
        cmd = ev.command
        handler = COMMANDS.get(type(cmd))
        try:
            self._authorize(st, cmd)  # first, as a broker checks its ACL first
            if handler is None:
                raise Refused(ErrorCode.NOT_IMPLEMENTED,
                              f"{cmd.NAME} is not implemented by the amqp-bridge façade")
            result = handler(self, st, ev.command_id, cmd)
        except Refused as exc:
            self.refuse(st, ev.command_id, cmd, exc)
            return
        if result is not LATER and st.session.attached:
            st.session.complete(ev.command_id, result)  # type: ignore[arg-type]

    def refuse(self, st: SessionState, cid: int, cmd: Command, exc: Refused) -> None:
        """Answer command ``cid`` with execution.exception (counted and logged); what the
        session sent after it is not executed."""
        self._refused(st, exc.code, f"{cmd.NAME}: {exc.text}", exc.event)
        if st.failed_at is None:
            st.failed_at = cid
        if st.session.attached:
            st.session.exception(exc.code, cid, exc.text, command=cmd,
                                 field_index=exc.field_index)

    def _authorize(self, st: SessionState, cmd: Command) -> None:
        """Raise :class:`AccessRefused` (unauthorized-access, qpidd's text) if the
        session's user lacks a permission ``cmd`` needs (counted under its name)."""
        request, checks = checks_for(cmd)
        user = st.client.user
        denied = self.access.denied(user, "", checks, cmd.NAME) if checks else None
        if denied is not None:
            raise AccessRefused(ErrorCode.UNAUTHORIZED_ACCESS, refusal(request, denied, user))

    def _check_link_room(self, st: SessionState) -> None:
        """One more 1.0 receiver for this session's connection, or resource-limit-exceeded
        past ``max_consumers_per_connection`` (or, over all its user's connections,
        ``max_consumers_per_user``): each is a link on the route's shared 1.0
        connection, which one client or user must not make hold without bound."""
        if self._links_of(st) >= self.max_links:
            raise Refused(ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                          f"reached maximum ({self.max_links}) of subscriptions per connection "
                          f"(listener {self.name}: max_consumers_per_connection)")
        user = st.client.user
        if self.max_user_links is not None \
                and self._user_links_of(user) >= self.max_user_links:
            raise Refused(ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                          f"reached maximum ({self.max_user_links}) of subscriptions for "
                          f"user '{user or ''}' (listener {self.name}: "
                          f"max_consumers_per_user)")

    def _queue(self, name: str, field_index: int) -> Consume010:
        route = self.consume_routes.get(name)
        if route is None:
            known = ", ".join(repr(q) for q in sorted(self.consume_routes)) or "none"
            raise Refused(ErrorCode.NOT_FOUND, f"queue {name!r} not found (this façade's "
                                               f"queues: {known})", field_index)
        return route

    def _queue_declare(self, st: SessionState, cid: int, c: QueueDeclare) -> Later | None:
        name = c.queue or ""
        if name in self.consume_routes or name in st.temporary_queues:
            return None
        if self.topology is not None:
            return self.topology.queue_declare(st, cid, c)
        if c.passive:
            self._queue(name, 0)
        if self.exchange_subscriptions and name and (c.exclusive or c.auto_delete):
            st.temporary_queues[name] = TemporaryQueue(name)  # to bind to an exchange
            return None
        raise Refused(ErrorCode.NOT_ALLOWED, f"the amqp-bridge façade does not create queues "
                                             f"({name!r} is not configured)", 0)

    def _queue_query(self, st: SessionState, cid: int, c: QueueQuery
                     ) -> QueueQueryResult | Later:
        if self.topology is not None and (c.queue or "") not in self.consume_routes:
            return self.topology.queue_query(st, cid, c)
        temporary = st.temporary_queues.get(c.queue or "")
        if temporary is not None:
            subscribers = sum(1 for sub in st.subscriptions.values()
                              if sub.queue == temporary.name)
            return QueueQueryResult(queue=temporary.name, durable=False, exclusive=True,
                                    auto_delete=True, arguments={}, message_count=0,
                                    subscriber_count=subscribers)
        route = self.consume_routes.get(c.queue or "")
        if route is None:
            return QueueQueryResult(queue="")  # as qpidd answers for an unknown queue
        # the 1.0 queue's depth is not known through a link: message-count is 0
        return QueueQueryResult(queue=c.queue, durable=True, exclusive=False, auto_delete=False,
                                arguments={}, message_count=0,
                                subscriber_count=len(route.subscriptions))

    def _exchange_declare(self, st: SessionState, cid: int, c: ExchangeDeclare
                          ) -> Later | None:
        name = c.exchange or ""
        if self._configured_exchange(name):
            if c.type and c.type not in EXCHANGE_TYPES:
                raise Refused(ErrorCode.NOT_FOUND, f"exchange type {c.type!r} not found", 1)
            return None
        if self.topology is not None and name:
            return self.topology.exchange_declare(st, cid, c)
        if c.passive:
            raise Refused(ErrorCode.NOT_FOUND, f"exchange {name!r} not found", 0)
        if not name:
            raise Refused(ErrorCode.INVALID_ARGUMENT, "an exchange name is required", 0)
        raise Refused(ErrorCode.NOT_ALLOWED, f"the amqp-bridge façade does not create exchanges "
                                             f"({name!r} is not configured)", 0)

    def _configured_exchange(self, name: str) -> bool:
        """A route publishes from, or feeds temporary queues bound to, exchange ``name``."""
        return name in self.publish_routes or name in self.exchange_subscriptions

    def _exchange_query(self, st: SessionState, cid: int, c: ExchangeQuery
                        ) -> ExchangeQueryResult | Later:
        if self.topology is not None and not self._configured_exchange(c.name or ""):
            return self.topology.exchange_query(st, cid, c)
        if (c.name or "") in self.exchange_subscriptions and (c.name or "") not in \
                self.publish_routes:
            return ExchangeQueryResult(type="topic", durable=True, not_found=False,
                                       arguments={})
        if (c.name or "") not in self.publish_routes:
            return ExchangeQueryResult(type="", durable=False, not_found=True, arguments={})
        # every message goes to the route's address whatever its key: fanout to one target
        return ExchangeQueryResult(type="fanout", durable=True, not_found=False, arguments={})

    def _exchange_bind(self, st: SessionState, cid: int, c: ExchangeBind) -> Later | None:
        if self.topology is not None and (c.queue or "") not in self.consume_routes:
            return self.topology.exchange_bind(st, cid, c)
        exchange = c.exchange or ""
        temporary = st.temporary_queues.get(c.queue or "")
        if temporary is not None:
            route = self.exchange_subscriptions.get(exchange)
            if route is None:
                known = ", ".join(repr(x) for x in sorted(self.exchange_subscriptions))
                raise Refused(ErrorCode.NOT_FOUND, f"bind failed: no route serves bindings "
                              f"to exchange {exchange!r} (this façade's: {known})", 1)
            key = c.binding_key or ""
            try:
                if not temporary.bind(exchange, key):
                    return None
            except AlreadyBound as exc:
                raise Refused(ErrorCode.NOT_IMPLEMENTED, str(exc), 2) from None
            self._check_link_room(st)
            # bound means the 1.0 broker keeps what is published from now on: attach first
            temporary.sub = route.subscribe(st, None, AcceptMode.EXPLICIT, False,
                                            queue=temporary.name,
                                            address=route.binding_address(key))
            later = temporary.sub.complete_when_attached(cid, c)
            if later is not None:
                st.binds_pending += 1
            return later
        self._queue(c.queue or "", 0)
        if exchange == "":
            raise Refused(ErrorCode.NOT_ALLOWED, "the default exchange takes no bindings", 1)
        if exchange not in self.publish_routes:
            raise Refused(ErrorCode.NOT_FOUND, f"bind failed: no such exchange {exchange!r}", 1)
        # both ends exist; what reaches the queue is decided by its route's 1.0 source
        log.debug("façade %s: binding %r -> %r accepted (routing is the 1.0 broker's)",
                  self.name, exchange, c.queue)
        return None

    def _queue_delete(self, st: SessionState, cid: int, c: QueueDelete) -> Later | None:
        if self.topology is not None and (c.queue or "") not in self.consume_routes:
            return self.topology.queue_delete(st, cid, c)
        temporary = st.temporary_queues.pop(c.queue or "", None)
        if temporary is None:
            raise Refused(ErrorCode.NOT_IMPLEMENTED,
                          f"{c.NAME} is not implemented by the amqp-bridge façade")
        if temporary.sub is not None and not temporary.consuming:
            temporary.sub.end()  # bound, never subscribed: its link goes
        return None

    def _queue_purge(self, st: SessionState, cid: int, c: QueuePurge) -> Later:
        if self.topology is None or (c.queue or "") in self.consume_routes:
            raise Refused(ErrorCode.NOT_IMPLEMENTED,
                          f"{c.NAME} is not implemented by the amqp-bridge façade")
        return self.topology.queue_purge(st, cid, c)

    def _exchange_delete(self, st: SessionState, cid: int, c: ExchangeDelete) -> Later:
        if self.topology is None or self._configured_exchange(c.exchange or ""):
            raise Refused(ErrorCode.NOT_IMPLEMENTED,
                          f"{c.NAME} is not implemented by the amqp-bridge façade")
        return self.topology.exchange_delete(st, cid, c)

    def _exchange_unbind(self, st: SessionState, cid: int, c: ExchangeUnbind) -> Later | None:
        if self.topology is not None and (c.queue or "") not in self.consume_routes:
            return self.topology.exchange_bind(st, cid, c)
        temporary = st.temporary_queues.get(c.queue or "")
        if temporary is None:
            raise Refused(ErrorCode.NOT_IMPLEMENTED,
                          f"{c.NAME} is not implemented by the amqp-bridge façade")
        if temporary.unbind(c.exchange or "", c.binding_key or ""):
            temporary.sub.end()
            temporary.sub = None
        return None

    def _subscribe(self, st: SessionState, cid: int, c: MessageSubscribe) -> Later | None:
        temporary = st.temporary_queues.get(c.queue or "")
        if temporary is not None:
            return self._subscribe_temporary(st, cid, c, temporary)
        if self.topology is not None and (c.queue or "") not in self.consume_routes:
            if self.stopping:
                raise Refused(ErrorCode.RESOURCE_LIMIT_EXCEEDED, "amqp-bridge is shutting down")
            return self.topology.subscribe(st, cid, c, _accept_mode(c),
                                           lambda: self._check_link_room(st))
        route = self._queue(c.queue or "", 0)
        if c.acquire_mode == AcquireMode.NOT_ACQUIRED:
            raise Refused(ErrorCode.NOT_IMPLEMENTED, "browsing (acquire-mode not-acquired) is "
                                                     "not available through the façade", 3)
        route.check_exclusive(c.queue or "", bool(c.exclusive))
        if self.stopping:
            raise Refused(ErrorCode.RESOURCE_LIMIT_EXCEEDED, "amqp-bridge is shutting down")
        self._check_link_room(st)
        dest = c.destination or ""
        sub = route.subscribe(st, dest, _accept_mode(c), bool(c.exclusive), queue=c.queue or "")
        st.subscriptions[dest] = sub
        # like qpidd: complete once the subscription is live
        return sub.complete_when_attached(cid, c)

    def _subscribe_temporary(self, st: SessionState, cid: int, c: MessageSubscribe,
                             temporary: TemporaryQueue) -> Later | None:
        sub = temporary.sub
        if sub is None:
            raise Refused(ErrorCode.NOT_FOUND, f"queue {c.queue!r} is bound to no exchange "
                                               f"the façade serves", 0)
        if sub.adopted or sub.closed:
            raise Refused(ErrorCode.RESOURCE_LOCKED, f"queue {c.queue!r} has a subscriber "
                          f"already (the façade serves one per temporary queue)", 0)
        if c.acquire_mode == AcquireMode.NOT_ACQUIRED:
            raise Refused(ErrorCode.NOT_IMPLEMENTED, "browsing (acquire-mode not-acquired) is "
                                                     "not available through the façade", 3)
        dest = c.destination or ""
        sub.adopt(dest, _accept_mode(c), bool(c.exclusive))
        st.subscriptions[dest] = sub
        return sub.complete_when_attached(cid, c)

    def _cancel(self, st: SessionState, cid: int, c: MessageCancel) -> None:
        sub = st.subscriptions.pop(c.destination or "", None)
        if sub is not None:
            sub.cancel()
            if not sub.closed:  # transfers still unsettled: they end with the session
                st.cancelled.add(sub)

    def _flush_command(self, st: SessionState, cid: int, c: MessageFlush) -> Later | None:
        sub = st.subscriptions.get(c.destination or "")
        if sub is None:
            raise Refused(ErrorCode.NOT_FOUND, f"no subscription {c.destination!r}", 0)
        return None if sub.flush(cid) else LATER

    def _settle(self, st: SessionState, transfers: Any,
                outcome: Callable[[Subscription, int], None]) -> None:
        """Apply ``outcome`` to each of our transfers named in the sequence-set."""
        for lo, hi in (transfers.ranges if transfers is not None else ()):
            if serial_diff(hi, lo) < len(st.transfers):
                ids = [serial_add(lo, i) for i in range(serial_diff(hi, lo) + 1)]
            else:  # a wide range: look at the transfers we have instead
                ids = [t for t in st.transfers if serial_le(lo, t) and serial_le(t, hi)]
            for tid in ids:
                sub = st.transfers.get(tid)
                if sub is not None:
                    outcome(sub, tid)

    def _accept(self, st: SessionState, cid: int, c: MessageAccept) -> None:
        self._settle(st, c.transfers, lambda sub, tid: sub.settle(tid, Delivery.ACCEPTED))

    def _reject(self, st: SessionState, cid: int, c: MessageReject) -> None:
        text = f"rejected by the 0-10 subscriber (code {c.code or 0})"
        if c.text:
            text += f": {c.text}"
        self._settle(st, c.transfers,
                     lambda sub, tid: sub.settle(tid, Delivery.REJECTED, reason=text))

    def _release(self, st: SessionState, cid: int, c: MessageRelease) -> None:
        state = Delivery.MODIFIED if c.set_redelivered else Delivery.RELEASED
        self._settle(st, c.transfers, lambda sub, tid: sub.settle(tid, state))

    def on_completed(self, st: SessionState, commands: list[int]) -> None:
        """The client completed our transfers: settles accept-mode none deliveries."""
        for tid in commands:
            sub = st.transfers.get(tid)
            if sub is not None:
                sub.on_completed(tid)
        for sub in st.subscriptions.values():  # room in the replay buffer again
            sub.pump()


COMMANDS: dict[type[Command], Callable[..., Struct | Later | None]] = {
    QueueDeclare: ServerCommands._queue_declare,
    QueueQuery: ServerCommands._queue_query,
    ExchangeDeclare: ServerCommands._exchange_declare,
    ExchangeQuery: ServerCommands._exchange_query,
    ExchangeBind: ServerCommands._exchange_bind,
    ExchangeUnbind: ServerCommands._exchange_unbind,
    ExchangeDelete: ServerCommands._exchange_delete,
    QueueDelete: ServerCommands._queue_delete,
    QueuePurge: ServerCommands._queue_purge,
    MessageSubscribe: ServerCommands._subscribe,
    MessageCancel: ServerCommands._cancel,
    MessageFlush: ServerCommands._flush_command,
    MessageAccept: ServerCommands._accept,
    MessageReject: ServerCommands._reject,
    MessageRelease: ServerCommands._release,
}


def _accept_mode(c: MessageSubscribe) -> AcceptMode:
    """The subscription's accept-mode; one that is not in the spec is refused."""
    if c.accept_mode is None:
        return AcceptMode.EXPLICIT
    try:
        return AcceptMode(c.accept_mode)
    except ValueError:
        raise Refused(ErrorCode.INVALID_ARGUMENT, f"accept-mode {c.accept_mode} is not 0 "
                                                  f"(explicit) or 1 (none)", 2) from None


__all__ = ["COMMANDS", "EXCHANGE_TYPES", "ServerCommands"]
