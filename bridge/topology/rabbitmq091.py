"""A topology backend that declares over AMQP 0-9-1 on the RabbitMQ node behind the bridge.

RabbitMQ 3.x's AMQP 1.0 plugin can neither declare an exchange nor bind a queue (its
addresses only name them: ``/exchange/X/K``, ``/amq/queue/Q``), so a topology-mode
listener in front of RabbitMQ 3.x carries out its applications' declares over the
node's own protocol: :class:`RabbitMQ091Topology` uses one channel of a configured
``amqp0-9-1`` connection to that node (:class:`~bridge.legacy.amqp091.Amqp091Connection`)
and the 1.0 addresses of the node's version for publishes and consumes (v1: a publish
goes to ``/exchange/X`` or ``/queue`` with its routing key as the message's subject,
RabbitMQ 3.x's rule; a consumer takes from ``/amq/queue/Q``). It works on
RabbitMQ 4.x as well (where RabbitMQ's management over AMQP 1.0 is the first choice).

Theory of operation
-------------------
Requests wait in one queue and go out one at a time on the backend's channel: 0-9-1
answers a channel's synchronous methods in order, so the reply (``declare-ok``,
``bind-ok``, …) belongs to the request at the head. A refusal closes the channel
(RabbitMQ's way): the close's reply code becomes the head's :class:`TopologyError`
(404 not-found, 406 precondition-failed, 405 resource-locked, 403 access-refused,
540 not-implemented) and the next request goes on the fresh channel the connection
opens at once. A request not answered within ``request_timeout`` fails
``unavailable``; if it was already sent, the channel is closed so that its late reply
cannot be taken for the next request's. A request made while the connection is
down waits for it (within its timeout).

Exclusive queues: an exclusive queue belongs to the 0-9-1 connection that declared it,
and the façade's consumers of it are 1.0 links on another connection, which RabbitMQ
would refuse (405). So the backend declares it non-exclusive, with ``x-expires``
(:data:`ORPHAN_EXPIRES`, unless the client gave one) so that the queue still goes
if the bridge dies, and deletes it when its owner's connection ends
(:meth:`RabbitMQ091Topology.forget_owner`; on RabbitMQ 3.x ``if_unused``, tried again
until the bridge's own consumers of it are gone: deleting a queue under an AMQP 1.0
consumer makes RabbitMQ 3.10's plugin fail that whole 1.0 connection); the façade
itself keeps other clients from it. Auto-delete queues are RabbitMQ's: they go with their last consumer.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from pamqp import commands as C
from pamqp.base import Frame
from proton.reactor import Container

from amqp091.events import ChannelClosed, Event, MethodReceived

from ..legacy.amqp091 import Amqp091Connection
from ..runtime import Timer
from .model import (
    BindingSpec,
    Done,
    ExchangeSpec,
    QueueInfo,
    QueueSpec,
    TopologyError,
    TopologyErrorKind,
)

log = logging.getLogger("bridge.topology")

ORPHAN_EXPIRES = 600_000
"""``x-expires`` (ms) of a client's exclusive queue, declared non-exclusive: it goes ten
unused minutes after a bridge that died could not delete it."""

ORPHAN_DELETE_ATTEMPTS = 20
ORPHAN_DELETE_RETRY = 0.5
"""RabbitMQ 3.x: times, and seconds apart, the delete of a client's exclusive queue is
tried while the bridge's own consumers of it are still detaching (then x-expires)."""

REPLY_CODES: dict[int, TopologyErrorKind] = {
    403: "access-refused", 404: "not-found", 405: "resource-locked",
    406: "precondition-failed", 540: "not-implemented", 530: "precondition-failed",
}
"""A channel or connection close's reply code, as the error a declare met."""

AddressStyle = Literal["v1", "v2"]
"""RabbitMQ's 1.0 address forms: v1 (3.x: ``/exchange/X/K``, ``/amq/queue/Q``), v2
(4.x: ``/exchanges/X/K``, ``/queues/Q``)."""


@dataclass(eq=False)
class _Request:
    method: Frame
    reply: type[Frame]
    finish: Callable[[Frame], Any]
    done: Done[Any]
    sent: bool = False
    over: bool = False


class RabbitMQ091Topology:
    """Declares on a RabbitMQ node over one 0-9-1 channel (see the module docstring)."""

    def __init__(self, container: Container, connection: Amqp091Connection, *, name: str,
                 request_timeout: float = 10.0, address_style: AddressStyle = "v1") -> None:
        self.name = name
        self.container = container
        self.connection = connection
        self.request_timeout = request_timeout
        self.address_style = address_style
        self.channel: int | None = None
        self._waiting: deque[_Request] = deque()
        self._closed_by: tuple[int | None, str] | None = None
        self._owned: dict[str, set[str]] = {}
        connection.add(self)

    # -- Topology ------------------------------------------------------------------------

    def declare_exchange(self, spec: ExchangeSpec, passive: bool,
                         done: Done[ExchangeSpec]) -> None:
        method = C.Exchange.Declare(
            exchange=spec.name, exchange_type=spec.type, passive=passive,
            durable=spec.durable, auto_delete=spec.auto_delete, internal=spec.internal,
            arguments=spec.arguments or None)
        self._submit(method, C.Exchange.DeclareOk, lambda _: spec, done)

    def delete_exchange(self, name: str, if_unused: bool, done: Done[None]) -> None:
        self._submit(C.Exchange.Delete(exchange=name, if_unused=if_unused),
                     C.Exchange.DeleteOk, lambda _: None, done)

    def declare_queue(self, spec: QueueSpec, passive: bool, done: Done[QueueInfo]) -> None:
        arguments = dict(spec.arguments)
        if spec.exclusive and not passive:
            arguments.setdefault("x-expires", ORPHAN_EXPIRES)
        method = C.Queue.Declare(queue=spec.name, passive=passive, durable=spec.durable,
                                 exclusive=False, auto_delete=spec.auto_delete,
                                 arguments=arguments or None)

        def finish(ok: Frame) -> QueueInfo:
            assert isinstance(ok, C.Queue.DeclareOk)
            name = str(ok.queue)
            if spec.exclusive and spec.owner is not None and not passive:
                self._owned.setdefault(spec.owner, set()).add(name)
            return QueueInfo(name, ok.message_count, ok.consumer_count)

        self._submit(method, C.Queue.DeclareOk, finish, done)

    def delete_queue(self, name: str, if_unused: bool, if_empty: bool,
                     done: Done[int | None]) -> None:
        def finish(ok: Frame) -> int | None:
            assert isinstance(ok, C.Queue.DeleteOk)
            for queues in self._owned.values():
                queues.discard(name)
            return ok.message_count

        self._submit(C.Queue.Delete(queue=name, if_unused=if_unused, if_empty=if_empty),
                     C.Queue.DeleteOk, finish, done)

    def purge_queue(self, name: str, done: Done[int | None]) -> None:
        def finish(ok: Frame) -> int | None:
            assert isinstance(ok, C.Queue.PurgeOk)
            return ok.message_count

        self._submit(C.Queue.Purge(queue=name), C.Queue.PurgeOk, finish, done)

    def bind(self, binding: BindingSpec, done: Done[None]) -> None:
        self._binding(binding, done, unbind=False)

    def unbind(self, binding: BindingSpec, done: Done[None]) -> None:
        self._binding(binding, done, unbind=True)

    def _binding(self, binding: BindingSpec, done: Done[None], *, unbind: bool) -> None:
        """queue.bind / unbind, or exchange.bind / unbind for an exchange destination."""
        args = binding.arguments or None
        method: Frame
        if binding.to_exchange:
            kind = C.Exchange.Unbind if unbind else C.Exchange.Bind
            method = kind(destination=binding.destination, source=binding.source,
                          routing_key=binding.key, arguments=args)
            reply: type[Frame] = C.Exchange.UnbindOk if unbind else C.Exchange.BindOk
        else:
            qkind = C.Queue.Unbind if unbind else C.Queue.Bind
            method = qkind(queue=binding.destination, exchange=binding.source,
                           routing_key=binding.key, arguments=args)
            reply = C.Queue.UnbindOk if unbind else C.Queue.BindOk
        self._submit(method, reply, lambda _: None, done)

    def consumer_connection(self, queue: str) -> Any | None:
        """None: a client's exclusive queue is non-exclusive at RabbitMQ (module
        docstring), any 1.0 connection may consume it."""
        return None

    def forget_owner(self, owner: str) -> None:
        for queue in sorted(self._owned.pop(owner, ())):
            self._delete_orphan(queue, ORPHAN_DELETE_ATTEMPTS)

    def _delete_orphan(self, queue: str, attempts: int) -> None:
        """Delete a client's exclusive queue once nobody consumes it: RabbitMQ 3.x's AMQP
        1.0 plugin fails the whole 1.0 connection when a queue is deleted under one of
        its consumers (the bridge's, still detaching: they go over another connection),
        so the delete is ``if_unused`` there, tried again while the queue is in use."""
        if_unused = self.address_style == "v1"

        def done(result: int | TopologyError | None) -> None:
            if isinstance(result, TopologyError) and result.kind == "precondition-failed" \
                    and attempts > 1:
                self.container.schedule(ORPHAN_DELETE_RETRY, Timer(
                    lambda: self._delete_orphan(queue, attempts - 1)))
                return
            self._deleted(queue, result)

        self.delete_queue(queue, if_unused, False, done)

    def publish_address(self, exchange: str, routing_key: str) -> str:
        if self.address_style == "v2":
            if exchange == "":
                return f"/queues/{quote(routing_key, safe='')}"
            return f"/exchanges/{quote(exchange, safe='')}/{quote(routing_key, safe='')}"
        # v1: the key travels as the message's subject (the mapping puts it there), by
        # which RabbitMQ 3.x routes what is sent to /exchange/X and /queue: one address per
        # exchange, so a channel's publishes to one exchange keep their order
        if exchange == "":
            return "/queue"
        return f"/exchange/{exchange}"

    def keyed_publish_address(self, exchange: str, routing_key: str) -> str | None:
        """The address naming the routing key itself (for a message whose subject is not
        its key), or None where the node's addresses cannot (v1: an empty key, or one
        holding ``/``)."""
        if self.address_style == "v2":
            return self.publish_address(exchange, routing_key)
        if routing_key == "" or "/" in routing_key:
            return None
        if exchange == "":
            return f"/amq/queue/{routing_key}"
        return f"/exchange/{exchange}/{routing_key}"

    def queue_address(self, queue: str) -> str:
        if self.address_style == "v2":
            return f"/queues/{quote(queue, safe='')}"
        return f"/amq/queue/{queue}"

    # -- the connection's user (Amqp091User) ------------------------------------------------

    def on_channel(self, channel: int) -> None:
        self.channel = channel
        self._closed_by = None
        self._send_head()

    def on_event(self, event: Event) -> None:
        if isinstance(event, ChannelClosed):
            self._closed_by = (event.code, event.text)
            return
        if not isinstance(event, MethodReceived) or not self._waiting:
            return
        head = self._waiting[0]
        if not head.sent or not isinstance(event.method, head.reply):
            return
        self._waiting.popleft()
        self._answer(head, head.finish(event.method))
        self._send_head()

    def on_lost(self) -> bool:
        self.channel = None
        closed_by, self._closed_by = self._closed_by, None
        if self._waiting and self._waiting[0].sent:
            head = self._waiting.popleft()
            code, text = closed_by if closed_by is not None else (None, "")
            kind = REPLY_CODES.get(code or 0, "unavailable")
            self._answer(head, TopologyError(
                kind, text or f"the connection to RabbitMQ ({self.connection.name}) ended"))
        return True  # a refusal is an answer, not a failing channel: reopen at once

    def on_connection_closed(self, code: int | None, text: str) -> None:
        if code is not None:
            self._closed_by = (code, text)

    # -- requests -------------------------------------------------------------------------

    def _submit(self, method: Frame, reply: type[Frame], finish: Callable[[Frame], Any],
                done: Done[Any]) -> None:
        request = _Request(method, reply, finish, done)
        self._waiting.append(request)
        self.container.schedule(self.request_timeout, Timer(lambda: self._expire(request)))
        if len(self._waiting) == 1:
            self._send_head()

    def _send_head(self) -> None:
        if not self._waiting or self._waiting[0].sent:
            return
        if not self.connection.usable(self.channel):
            return  # sent when the channel opens
        engine = self.connection.engine
        assert engine is not None and self.channel is not None
        head = self._waiting[0]
        head.sent = True
        engine.send_method(self.channel, head.method)
        self.connection.flush()

    def _expire(self, request: _Request) -> None:
        if request.over:
            return
        was_sent = request.sent
        self._waiting.remove(request)
        self._answer(request, TopologyError(
            "unavailable", f"RabbitMQ ({self.connection.name}) did not answer "
                           f"{request.method.name} within {self.request_timeout:g}s"))
        if was_sent:
            # its late reply must not be taken for the next request's: a fresh channel
            self.connection.restart(self, "topology request timed out")
        else:
            self._send_head()

    @staticmethod
    def _answer(request: _Request, result: Any) -> None:
        request.over = True
        request.done(result)

    def _deleted(self, queue: str, result: int | TopologyError | None) -> None:
        if isinstance(result, TopologyError) and result.kind != "not-found":
            log.warning("topology %s: could not delete the exclusive queue %r of a client "
                        "that left (%s); RabbitMQ deletes it when it has been unused for "
                        "%d s", self.name, queue, result.text, ORPHAN_EXPIRES // 1000,
                        extra={"event": "exclusive_queue_left", "queue": queue})
