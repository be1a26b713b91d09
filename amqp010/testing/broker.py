"""A small in-memory AMQP 0-10 broker hosted on the engine's server role (demo and tests).

Enough of a broker to test clients and the bridge against: queues (declare,
delete, purge, query, exclusive, auto-delete, alternate exchange), exchanges
(direct, fanout, topic; the default exchange; declare, delete, query, bind,
unbind, bound), subscriptions with the engine's credit accounting,
accept/reject/release (redelivery), acquire for not-acquired subscriptions,
and tx select/commit/rollback.  The broker completes a publish only after the
message is enqueued.

Usage::

    broker = Broker(users={"guest": "guest"})
    server = broker.connection()          # a BrokerConnection (sans-IO, like Connection)
    server.receive_data(bytes_from_client)
    bytes_to_client = server.data_to_send()

``BrokerConnection`` has the engine's sans-IO surface (``receive_data``,
``data_to_send``, ``events``, ``tick``…), handles every event itself, and keeps
the events so tests can look at them.  Time only enters through ``tick``.
"""

from __future__ import annotations

import copy
import itertools
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from amqp010.base import Command, Struct
from amqp010.codec import encode_header
from amqp010.connection import Connection, ConnectionConfig, Role
from amqp010.events import (
    CommandReceived,
    CreditChanged,
    Event,
    MessageReceived,
    SessionAttached,
    SessionDetached,
)
from amqp010.sasl import SimpleAuthenticator
from amqp010.session import Session, SessionRegistry, SessionState
from amqp010.spec import (
    AcceptMode,
    Acquired,
    AcquireMode,
    DeliveryProperties,
    ErrorCode,
    ExchangeBind,
    ExchangeBound,
    ExchangeBoundResult,
    ExchangeDeclare,
    ExchangeDelete,
    ExchangeQuery,
    ExchangeQueryResult,
    ExchangeUnbind,
    MessageAccept,
    MessageAcquire,
    MessageCancel,
    MessageFlush,
    MessageProperties,
    MessageReject,
    MessageRelease,
    MessageResume,
    MessageResumeResult,
    MessageSubscribe,
    QueueDeclare,
    QueueDelete,
    QueuePurge,
    QueueQuery,
    QueueQueryResult,
    TxCommit,
    TxRollback,
    TxSelect,
)
from amqp010.testing.server import EngineServer

_ids = itertools.count(1)


@dataclass
class Message:
    """A stored message: its header structs, body and delivery state."""

    delivery_properties: DeliveryProperties
    message_properties: MessageProperties | None
    other_headers: tuple[Struct, ...]
    body: bytes
    exchange: str
    redelivered: bool = False
    id: int = field(default_factory=lambda: next(_ids))


@dataclass
class Queue:
    name: str
    durable: bool = False
    exclusive: bool = False
    auto_delete: bool = False
    alternate_exchange: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    owner: Session | None = None
    messages: deque[Message] = field(default_factory=deque)
    subscriptions: list[Subscription] = field(default_factory=list)
    rr: int = 0
    """Where the next round-robin delivery starts."""


@dataclass
class Binding:
    queue: str
    key: str
    arguments: dict[str, Any]


@dataclass
class Exchange:
    name: str
    type: str
    durable: bool = False
    alternate_exchange: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    bindings: list[Binding] = field(default_factory=list)

    def route(self, key: str) -> list[str]:
        if self.type == "fanout":
            names = [b.queue for b in self.bindings]
        elif self.type == "topic":
            names = [b.queue for b in self.bindings if topic_match(b.key, key)]
        else:
            names = [b.queue for b in self.bindings if b.key == key]
        return list(dict.fromkeys(names))


def topic_match(pattern: str, key: str) -> bool:
    """AMQP topic matching: ``*`` is exactly one word, ``#`` zero or more words."""
    p = pattern.split(".")
    k = key.split(".") if key else []

    def match(i: int, j: int) -> bool:
        if i == len(p):
            return j == len(k)
        if p[i] == "#":
            return any(match(i + 1, jj) for jj in range(j, len(k) + 1))
        if j == len(k):
            return False
        return (p[i] == "*" or p[i] == k[j]) and match(i + 1, j + 1)

    return match(0, 0)


@dataclass
class Subscription:
    session: Session
    destination: str
    queue: Queue
    accept_mode: int
    acquire_mode: int
    exclusive: bool = False
    seen: set[int] = field(default_factory=set)
    """Not-acquired (browsing) subscriptions: messages already sent."""


@dataclass
class Delivery:
    queue: Queue
    message: Message
    acquired: bool


@dataclass
class SessionModel:
    """The broker's state for one engine session."""

    session: Session
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    unacked: dict[int, Delivery] = field(default_factory=dict)
    transactional: bool = False
    tx_publishes: list[tuple[str, Message]] = field(default_factory=list)
    tx_accepts: list[int] = field(default_factory=list)


class BrokerError(Exception):
    def __init__(self, code: int, text: str, field_index: int | None = None) -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.field_index = field_index


class Broker:
    """The broker model shared by all its connections."""

    def __init__(self, users: dict[str, str] | None = None, *, anonymous: bool = True,
                 max_session_timeout: int = 3600, stamp_user_id: bytes | None = None,
                 **config: Any) -> None:
        self.authenticator = SimpleAuthenticator(users if users is not None else {"guest": "guest"},
                                                 anonymous=anonymous)
        self.registry = SessionRegistry()
        self.max_session_timeout = max_session_timeout
        self.config = config
        self.queues: dict[str, Queue] = {}
        self.exchanges: dict[str, Exchange] = {}
        for name, typ in (("", "direct"), ("amq.direct", "direct"), ("amq.fanout", "fanout"),
                          ("amq.topic", "topic")):
            self.exchanges[name] = Exchange(name, typ, durable=True)
        self.sessions: dict[int, SessionModel] = {}
        self.connections: list[BrokerConnection] = []
        self.dead_letters: list[Message] = []
        """Rejected messages without an alternate exchange (kept for tests)."""
        self.stamp_user_id = stamp_user_id
        """If set, every delivered message carries this message-properties user-id, as
        qpidd stamps messages that came in over AMQP 1.0 (b'', or the sender's login)."""

    # ------------------------------------------------------------ plumbing

    def connection(self, **config: Any) -> BrokerConnection:
        """A new server-role connection to this broker."""
        cfg = {"authenticator": self.authenticator, "max_session_timeout": self.max_session_timeout,
               "properties": {"product": "amqp-bridge memory broker", "version": "0"}, **self.config, **config}
        conn = BrokerConnection(self, Connection(Role.SERVER, ConnectionConfig(**cfg),
                                                 registry=self.registry))
        self.connections.append(conn)
        return conn

    def serve(self, **server: Any) -> EngineServer:
        """This broker on a started TCP listener (``EngineServer`` options, e.g. ``port``)."""
        return EngineServer(lambda sock: self.connection(), **server).start()

    def tick(self, now: float) -> None:
        """Expire detached sessions past their timeout (releasing their messages)."""
        for s in self.registry.expire(now):
            self._end_session(s)

    def model(self, session: Session) -> SessionModel:
        m = self.sessions.get(id(session))
        if m is None:
            m = self.sessions[id(session)] = SessionModel(session)
        return m

    def queue(self, name: str) -> Queue:
        q = self.queues.get(name)
        if q is None:
            raise BrokerError(ErrorCode.NOT_FOUND, f"queue {name!r} not found")
        return q

    def exchange(self, name: str) -> Exchange:
        x = self.exchanges.get(name)
        if x is None:
            raise BrokerError(ErrorCode.NOT_FOUND, f"exchange {name!r} not found")
        return x

    # ------------------------------------------------------------ events

    def handle(self, event: Event) -> None:
        """Act on one server-side engine event."""
        if isinstance(event, MessageReceived):
            self._on_publish(event)
        elif isinstance(event, CommandReceived):
            self._on_command(event)
        elif isinstance(event, SessionDetached):
            if event.session.state is SessionState.CLOSED:
                self._end_session(event.session)
        elif isinstance(event, SessionAttached):
            self.model(event.session)
        elif isinstance(event, CreditChanged):
            pass  # deliver() runs before every write

    def _on_publish(self, ev: MessageReceived) -> None:
        s = ev.session
        dp = ev.delivery_properties or DeliveryProperties()
        exchange = ev.destination
        others = tuple(h for h in ev.header
                       if not isinstance(h, (DeliveryProperties, MessageProperties)))
        try:
            x = self.exchange(exchange)
        except BrokerError as exc:
            if s.attached:
                s.exception(exc.code, ev.command_id, exc.text, command=ev.transfer,
                            field_index=0)
            return
        msg = Message(dp, ev.message_properties, others, ev.body, x.name)
        model = self.model(s)
        if model.transactional:
            model.tx_publishes.append((exchange, msg))
        else:
            self.route(exchange, msg)
        s.complete(ev.command_id)

    def route(self, exchange: str, msg: Message) -> int:
        """Enqueue ``msg`` on every queue ``exchange`` routes it to; returns how many."""
        x = self.exchanges[exchange]
        key = msg.delivery_properties.routing_key or ""
        if x.name == "":
            names = [key] if key in self.queues else []
        else:
            names = [n for n in x.route(key) if n in self.queues]
        for n in names:
            q = self.queues[n]
            copy = Message(msg.delivery_properties, msg.message_properties, msg.other_headers,
                           msg.body, msg.exchange) if len(names) > 1 else msg
            q.messages.append(copy)
        if not names and x.alternate_exchange and x.alternate_exchange in self.exchanges:
            return self.route(x.alternate_exchange, msg)
        return len(names)

    def _on_command(self, ev: CommandReceived) -> None:
        handler = _COMMANDS.get(type(ev.command))
        s = ev.session
        try:
            if handler is None:
                raise BrokerError(ErrorCode.NOT_IMPLEMENTED, f"{ev.command.NAME} is not implemented")
            result = handler(self, s, ev.command_id, ev.command)
        except BrokerError as exc:
            if s.attached:
                s.exception(exc.code, ev.command_id, exc.text, command=ev.command,
                            field_index=exc.field_index)
            return
        if s.state is SessionState.ATTACHED or s.state is SessionState.DETACHED:
            s.complete(ev.command_id, result)

    # --------------------------------------------------------- commands

    def _queue_declare(self, s: Session, cid: int, c: QueueDeclare) -> None:
        name = c.queue or ""
        q = self.queues.get(name)
        if c.passive:
            self.queue(name)
            return
        if q is not None:
            if q.exclusive and q.owner is not s:
                raise BrokerError(ErrorCode.RESOURCE_LOCKED, f"queue {name!r} is exclusive")
            return
        if c.alternate_exchange:
            self.exchange(c.alternate_exchange)
        self.queues[name] = Queue(name, c.durable, c.exclusive, c.auto_delete,
                                  c.alternate_exchange or "", dict(c.arguments or {}),
                                  owner=s if c.exclusive else None)

    def _queue_delete(self, s: Session, cid: int, c: QueueDelete) -> None:
        q = self.queue(c.queue or "")
        if c.if_unused and q.subscriptions:
            raise BrokerError(ErrorCode.PRECONDITION_FAILED, f"queue {q.name!r} is in use")
        if c.if_empty and q.messages:
            raise BrokerError(ErrorCode.PRECONDITION_FAILED, f"queue {q.name!r} is not empty")
        self._delete_queue(q, s)

    def _delete_queue(self, q: Queue, by: Session | None) -> None:
        self.queues.pop(q.name, None)
        for x in self.exchanges.values():
            x.bindings = [b for b in x.bindings if b.queue != q.name]
        for sub in list(q.subscriptions):
            model = self.model(sub.session)
            model.subscriptions.pop(sub.destination, None)
            if sub.session is not by and sub.session.attached:
                sub.session.exception(ErrorCode.RESOURCE_DELETED, None,
                                      f"queue {q.name!r} was deleted")
        q.subscriptions.clear()

    def _queue_purge(self, s: Session, cid: int, c: QueuePurge) -> None:
        self.queue(c.queue or "").messages.clear()

    def _queue_query(self, s: Session, cid: int, c: QueueQuery) -> QueueQueryResult:
        q = self.queues.get(c.queue or "")
        if q is None:
            return QueueQueryResult(queue=c.queue)
        return QueueQueryResult(queue=q.name, alternate_exchange=q.alternate_exchange,
                                durable=q.durable, exclusive=q.exclusive, auto_delete=q.auto_delete,
                                arguments=q.arguments, message_count=len(q.messages),
                                subscriber_count=len(q.subscriptions))

    def _exchange_declare(self, s: Session, cid: int, c: ExchangeDeclare) -> None:
        name = c.exchange or ""
        x = self.exchanges.get(name)
        if c.passive:
            self.exchange(name)
            return
        if not name:
            raise BrokerError(ErrorCode.INVALID_ARGUMENT, "exchange name required", 0)
        if x is not None:
            if c.type and c.type != x.type:
                raise BrokerError(ErrorCode.NOT_ALLOWED,
                                  f"exchange {name!r} exists with type {x.type}", 1)
            return
        if name.startswith("amq."):
            raise BrokerError(ErrorCode.NOT_ALLOWED, f"{name!r}: amq.* names are reserved", 0)
        if c.type not in ("direct", "fanout", "topic"):
            raise BrokerError(ErrorCode.NOT_FOUND, f"exchange type {c.type!r} not found", 1)
        if c.alternate_exchange:
            self.exchange(c.alternate_exchange)
        self.exchanges[name] = Exchange(name, c.type, c.durable, c.alternate_exchange or "",
                                        dict(c.arguments or {}))

    def _exchange_delete(self, s: Session, cid: int, c: ExchangeDelete) -> None:
        x = self.exchange(c.exchange or "")
        if not x.name or x.name.startswith("amq."):
            raise BrokerError(ErrorCode.NOT_ALLOWED, f"exchange {x.name!r} cannot be deleted")
        if c.if_unused and x.bindings:
            raise BrokerError(ErrorCode.PRECONDITION_FAILED, f"exchange {x.name!r} is in use")
        del self.exchanges[x.name]

    def _exchange_query(self, s: Session, cid: int, c: ExchangeQuery) -> ExchangeQueryResult:
        x = self.exchanges.get(c.name or "")
        if x is None:
            return ExchangeQueryResult(not_found=True)
        return ExchangeQueryResult(type=x.type, durable=x.durable, arguments=x.arguments)

    def _exchange_bind(self, s: Session, cid: int, c: ExchangeBind) -> None:
        self.queue(c.queue or "")
        x = self.exchange(c.exchange or "")
        if x.name == "":
            raise BrokerError(ErrorCode.NOT_ALLOWED, "the default exchange takes no bindings")
        key = c.binding_key or ""
        if not any(b.queue == c.queue and b.key == key for b in x.bindings):
            x.bindings.append(Binding(c.queue or "", key, dict(c.arguments or {})))

    def _exchange_unbind(self, s: Session, cid: int, c: ExchangeUnbind) -> None:
        self.queue(c.queue or "")
        x = self.exchange(c.exchange or "")
        key = c.binding_key or ""
        before = len(x.bindings)
        x.bindings = [b for b in x.bindings if not (b.queue == c.queue and b.key == key)]
        if len(x.bindings) == before:
            raise BrokerError(ErrorCode.NOT_FOUND, f"no binding {c.queue!r}/{key!r}")

    def _exchange_bound(self, s: Session, cid: int, c: ExchangeBound) -> ExchangeBoundResult:
        x = self.exchanges.get(c.exchange or "")
        q = self.queues.get(c.queue or "") if c.queue is not None else None
        res = ExchangeBoundResult(exchange_not_found=x is None,
                                  queue_not_found=c.queue is not None and q is None)
        if x is None:
            return res
        binds = x.bindings
        if c.queue is not None:
            res.queue_not_matched = not any(b.queue == c.queue for b in binds)
            binds = [b for b in binds if b.queue == c.queue]
        if c.binding_key is not None:
            res.key_not_matched = not any(b.key == c.binding_key for b in binds)
        return res

    def _subscribe(self, s: Session, cid: int, c: MessageSubscribe) -> None:
        q = self.queue(c.queue or "")
        model = self.model(s)
        dest = c.destination or ""
        if q.exclusive and q.owner is not None and q.owner is not s:
            raise BrokerError(ErrorCode.RESOURCE_LOCKED, f"queue {q.name!r} is exclusive")
        if any(sub.exclusive for sub in q.subscriptions) or (c.exclusive and q.subscriptions):
            raise BrokerError(ErrorCode.RESOURCE_LOCKED, f"queue {q.name!r} has an exclusive "
                                                         "subscriber" if not c.exclusive else
                              f"queue {q.name!r} already has subscribers")
        sub = Subscription(s, dest, q,
                           c.accept_mode if c.accept_mode is not None else AcceptMode.EXPLICIT,
                           c.acquire_mode if c.acquire_mode is not None else AcquireMode.PRE_ACQUIRED,
                           c.exclusive)
        model.subscriptions[dest] = sub
        q.subscriptions.append(sub)

    def _cancel(self, s: Session, cid: int, c: MessageCancel) -> None:
        model = self.model(s)
        sub = model.subscriptions.pop(c.destination or "", None)
        if sub is not None:
            self._drop_subscription(sub)

    def _drop_subscription(self, sub: Subscription) -> None:
        q = sub.queue
        if sub in q.subscriptions:
            q.subscriptions.remove(sub)
        if q.auto_delete and not q.subscriptions and q.name in self.queues:
            self._delete_queue(q, sub.session)

    def _flush(self, s: Session, cid: int, c: MessageFlush) -> None:
        model = self.model(s)
        sub = model.subscriptions.get(c.destination or "")
        if sub is not None:
            self._deliver_sub(sub)

    def _accept(self, s: Session, cid: int, c: MessageAccept) -> None:
        model = self.model(s)
        for tid in c.transfers or ():
            if model.transactional:
                if tid in model.unacked:
                    model.tx_accepts.append(tid)
                continue
            model.unacked.pop(tid, None)

    def _reject(self, s: Session, cid: int, c: MessageReject) -> None:
        model = self.model(s)
        for tid in c.transfers or ():
            d = model.unacked.pop(tid, None)
            if d is None or not d.acquired:
                continue
            alt = d.queue.alternate_exchange
            if alt and alt in self.exchanges:
                self.route(alt, d.message)
            else:
                self.dead_letters.append(d.message)

    def _release(self, s: Session, cid: int, c: MessageRelease) -> None:
        model = self.model(s)
        back = []
        for tid in c.transfers or ():
            d = model.unacked.pop(tid, None)
            if d is None or not d.acquired:
                continue
            if c.set_redelivered:
                d.message.redelivered = True
            back.append(d)
        self._requeue(back)

    def _requeue(self, deliveries: list[Delivery]) -> None:
        for d in reversed(deliveries):  # keep their order at the head of the queue
            if d.queue.name in self.queues:
                d.queue.messages.appendleft(d.message)

    def _acquire(self, s: Session, cid: int, c: MessageAcquire) -> Acquired:
        model = self.model(s)
        got = []
        for tid in c.transfers or ():
            d = model.unacked.get(tid)
            if d is None or d.acquired:
                continue
            try:
                d.queue.messages.remove(d.message)
            except ValueError:
                continue  # acquired by someone else meanwhile
            d.acquired = True
            got.append(tid)
        from amqp010.types import SequenceSet

        return Acquired(transfers=SequenceSet.of(*got))

    def _resume(self, s: Session, cid: int, c: MessageResume) -> MessageResumeResult:
        return MessageResumeResult(offset=0)

    def _tx_select(self, s: Session, cid: int, c: TxSelect) -> None:
        self.model(s).transactional = True

    def _tx_commit(self, s: Session, cid: int, c: TxCommit) -> None:
        model = self.model(s)
        if not model.transactional:
            raise BrokerError(ErrorCode.ILLEGAL_STATE, "tx.select has not been used")
        for exchange, msg in model.tx_publishes:
            if exchange in self.exchanges:
                self.route(exchange, msg)
        for tid in model.tx_accepts:
            model.unacked.pop(tid, None)
        model.tx_publishes.clear()
        model.tx_accepts.clear()

    def _tx_rollback(self, s: Session, cid: int, c: TxRollback) -> None:
        model = self.model(s)
        if not model.transactional:
            raise BrokerError(ErrorCode.ILLEGAL_STATE, "tx.select has not been used")
        model.tx_publishes.clear()
        back = []
        for tid in model.tx_accepts:
            d = model.unacked.pop(tid, None)
            if d is not None and d.acquired:
                d.message.redelivered = True
                back.append(d)
        model.tx_accepts.clear()
        self._requeue(back)

    # ---------------------------------------------------------- delivery

    def deliver(self) -> None:
        """Send queued messages to every attached subscriber as credit allows."""
        for q in list(self.queues.values()):
            if not q.subscriptions or not q.messages:
                continue
            n = len(q.subscriptions)
            start = q.rr % n
            progress = True
            while progress and q.messages:
                progress = False
                for i in range(n):
                    sub = q.subscriptions[(start + i) % n]
                    if self._deliver_one(sub):
                        progress = True
                        start = (start + i + 1) % n
                        break
            q.rr = start

    def _deliver_sub(self, sub: Subscription) -> None:
        while self._deliver_one(sub):
            pass

    def _deliver_one(self, sub: Subscription) -> bool:
        s = sub.session
        if not s.attached or not s.can_send:
            return False
        flow = s.credit(sub.destination)
        if flow is None or flow.messages == 0 or flow.bytes == 0:
            return False
        q = sub.queue
        browsing = sub.acquire_mode == AcquireMode.NOT_ACQUIRED
        msg = None
        if browsing:
            for m in q.messages:
                if m.id not in sub.seen:
                    msg = m
                    break
        elif q.messages:
            msg = q.messages[0]
        if msg is None:
            return False
        src = msg.delivery_properties
        dp = DeliveryProperties(
            discard_unroutable=src.discard_unroutable, immediate=src.immediate,
            redelivered=msg.redelivered, priority=src.priority,
            delivery_mode=src.delivery_mode, ttl=src.ttl, timestamp=src.timestamp,
            expiration=src.expiration, exchange=msg.exchange, routing_key=src.routing_key)
        mp = msg.message_properties
        if self.stamp_user_id is not None:
            mp = copy.copy(mp) if mp is not None else MessageProperties()
            mp.user_id = self.stamp_user_id
        header: tuple[Struct, ...] = (dp,) if mp is None else (mp, dp)
        header += msg.other_headers
        if not flow.allows(len(encode_header(header)) + len(msg.body)):
            return False
        if browsing:
            sub.seen.add(msg.id)
        else:
            q.messages.popleft()
        tid = s.message_transfer(sub.destination, header, msg.body,
                                 accept_mode=sub.accept_mode, acquire_mode=sub.acquire_mode)
        if sub.accept_mode == AcceptMode.EXPLICIT or browsing:
            self.model(s).unacked[tid] = Delivery(q, msg, not browsing)
        return True

    # ------------------------------------------------------- session end

    def _end_session(self, s: Session) -> None:
        model = self.sessions.pop(id(s), None)
        self.registry.discard(s)
        if model is None:
            return
        for sub in model.subscriptions.values():
            self._drop_subscription(sub)
        back = []
        for d in model.unacked.values():
            if d.acquired:
                d.message.redelivered = True
                back.append(d)
        self._requeue(back)
        for q in list(self.queues.values()):
            if q.exclusive and q.owner is s:
                self._delete_queue(q, s)


_COMMANDS: dict[type[Command], Any] = {
    QueueDeclare: Broker._queue_declare,
    QueueDelete: Broker._queue_delete,
    QueuePurge: Broker._queue_purge,
    QueueQuery: Broker._queue_query,
    ExchangeDeclare: Broker._exchange_declare,
    ExchangeDelete: Broker._exchange_delete,
    ExchangeQuery: Broker._exchange_query,
    ExchangeBind: Broker._exchange_bind,
    ExchangeUnbind: Broker._exchange_unbind,
    ExchangeBound: Broker._exchange_bound,
    MessageSubscribe: Broker._subscribe,
    MessageCancel: Broker._cancel,
    MessageFlush: Broker._flush,
    MessageAccept: Broker._accept,
    MessageReject: Broker._reject,
    MessageRelease: Broker._release,
    MessageAcquire: Broker._acquire,
    MessageResume: Broker._resume,
    TxSelect: Broker._tx_select,
    TxCommit: Broker._tx_commit,
    TxRollback: Broker._tx_rollback,
}


class BrokerConnection:
    """One server-role connection of a :class:`Broker`, with the engine's sans-IO
    surface.  Events are handled by the broker and kept in ``seen`` for tests."""

    def __init__(self, broker: Broker, conn: Connection) -> None:
        self.broker = broker
        self.conn = conn
        self.seen: list[Event] = []
        self._fresh: list[Event] = []

    def receive_data(self, data: bytes) -> None:
        self.conn.receive_data(data)
        self._process()

    def _process(self) -> None:
        for ev in self.conn.events():
            self.seen.append(ev)
            self._fresh.append(ev)
            self.broker.handle(ev)

    def data_to_send(self) -> bytes:
        self.broker.deliver()
        self._process()
        return self.conn.data_to_send()

    def events(self) -> Iterator[Event]:
        """Events handled since the last call (already acted on by the broker)."""
        out, self._fresh = self._fresh, []
        return iter(out)

    def tick(self, now: float) -> None:
        self.conn.tick(now)
        self.broker.tick(now)
        self._process()

    @property
    def bytes_to_send(self) -> int:
        return self.conn.bytes_to_send

    @property
    def is_open(self) -> bool:
        return self.conn.is_open

    @property
    def closed(self) -> bool:
        return self.conn.closed

    @property
    def state(self) -> Any:
        return self.conn.state
