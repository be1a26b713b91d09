"""The topology backend of RabbitMQ 4.x: legacy declares as requests to its management
node over AMQP 1.0 (:class:`RabbitMQ4Topology`).

Theory of operation
-------------------
RabbitMQ 4 keeps the 0-9-1 model (exchanges, queues with arguments, bindings) and lets
a 1.0 client manage it through ``/management`` (:mod:`~bridge.topology.management`);
each :class:`~bridge.topology.model.Topology` operation becomes one or two requests:

===========================  ======================================================
exchange declare             ``PUT /exchanges/X`` (type, durable, auto_delete,
                             internal, arguments): 204, or 409 when it exists with
                             other properties
exchange declare, passive    a sender attached to ``/exchanges/X`` and detached
                             (RabbitMQ 4 has no GET for an exchange; the attach is
                             refused with ``amqp:not-found``); ``""`` always exists
exchange delete              ``DELETE /exchanges/X`` (``if_unused``: not-implemented,
                             RabbitMQ 4 cannot tell whether an exchange is in use)
queue declare                ``PUT /queues/Q`` (durable, exclusive, auto_delete,
                             arguments): 201 / 200 with the message and consumer
                             counts; a server-named queue gets a name of ours,
                             :data:`SERVER_NAMED_PREFIX` + random (RabbitMQ 4 names
                             no queue and reserves ``amq.``)
queue declare, passive       ``GET /queues/Q``: counts, exclusive or not
queue delete                 ``DELETE /queues/Q`` (``if_unused`` / ``if_empty``: a
                             ``GET`` first — RabbitMQ 4's DELETE has no conditions)
queue purge                  ``DELETE /queues/Q/messages``
bind                         ``POST /bindings`` (source, destination_queue or
                             destination_exchange, binding_key, arguments)
unbind                       ``DELETE /bindings/src=..;dstq=..;key=..;args=``; with
                             arguments, the binding's location from ``GET
                             /bindings?src=..&dstq=..&key=..`` (RabbitMQ hashes them)
===========================  ======================================================

RabbitMQ's answers become :class:`~bridge.topology.model.TopologyError` kinds in
:func:`error_of` (404 not-found, 409 precondition-failed, 403 access-refused, 400 by
RabbitMQ's explanation: "no queue"/"no exchange" not-found, "exclusive access to locked"
resource-locked, "unknown exchange type" not-implemented, else precondition-failed).

Exclusive queues belong, at RabbitMQ, to the 1.0 connection that declared them — one
of the bridge's, shared by legacy clients of the listener. The backend keeps the legacy
owner of each (:attr:`QueueSpec.owner`): another owner's declare of it is refused
``resource-locked`` as the legacy broker would, and :meth:`forget_owner` deletes them
when their client goes. Any connection may publish to them (RabbitMQ restricts only
consuming, declaring, binding, purging and deleting to the owner connection), so
replies from other connections and other bridge instances reach them.

Only the declaring connection may consume an exclusive queue, and a connection has a
bounded number of sessions (RabbitMQ 4: 64, one per link), so exclusive queues are
spread over the configured connection's pool (:mod:`bridge.amqp10.pool`) like links:
the declare of a new one asks the pool for a member (:meth:`ConnectionPool.reserve
<bridge.amqp10.pool.ConnectionPool.reserve>`, which keeps a session there for the
queue's consumer) and goes over a management pair on that member, opened on the first
such declare (the first connection's pair serves everything else). The queue remembers
its member (:attr:`RabbitMQ4Topology.exclusive_on`): every later request about it
(declare, bind, unbind, purge, delete) goes over that member's pair, and its consumers
attach there (:meth:`RabbitMQ4Topology.consumer_connection`, which gives the reserved
session back to the pool). An extra member's pair is closed :data:`PAIR_IDLE` seconds
after its last exclusive queue went, so that the pool may close the member when nothing
else uses it. RabbitMQ deletes a connection's exclusive queues when it drops; the
backend declares them again (and their bindings) on that member once it is back (a
topology-mode façade closes its clients at any member's loss, so usually none is left).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from proton.reactor import Container

from ..amqp10.connection import Amqp10ConnectionHandler
from ..runtime import Timer
from .management import ManagementClient, Response
from .model import (
    SERVER_NAMED_PREFIX,
    BindingSpec,
    Done,
    ExchangeSpec,
    QueueInfo,
    QueueSpec,
    Topology,
    TopologyError,
    TopologyErrorKind,
    amqp_arguments,
    server_name,
)

log = logging.getLogger("bridge.topology")

PAIR_IDLE = 5.0
"""Seconds an extra pool member's management pair stays attached after the last
exclusive queue declared over it went (less than the pool's idle grace: the member,
held by the pair, may then be closed)."""

R = TypeVar("R")

_EXPLANATIONS: tuple[tuple[str, TopologyErrorKind], ...] = (
    ("cannot obtain exclusive access to locked", "resource-locked"),
    ("no queue ", "not-found"),
    ("no exchange ", "not-found"),
    ("unknown exchange type", "not-implemented"),
)
"""RabbitMQ 4's 400 explanations that say more than "bad request" (the 0-9-1 channel
errors it would have raised: ``rabbit_amqp_management`` turns them all into 400)."""


@lru_cache(maxsize=4096)
def path_segment(name: str) -> str:
    """``name`` percent-encoded as one URI path segment (all but RFC 3986's unreserved);
    remembered for the names in use (a reply's ``reply-to`` is mapped at every RPC)."""
    return quote(name, safe="")


def error_of(response: Response) -> TopologyError:
    """The :class:`TopologyError` of RabbitMQ's non-2xx answer, with its explanation."""
    text = response.body if isinstance(response.body, str) else \
        f"RabbitMQ answered {response.status}"
    kind: TopologyErrorKind
    if response.status == 404:
        kind = "not-found"
    elif response.status == 409:
        kind = "precondition-failed"
    elif response.status == 403:
        kind = "access-refused"
    elif response.status == 400:
        kind = next((k for phrase, k in _EXPLANATIONS if phrase in text),
                    "precondition-failed")
    else:
        kind = "unavailable"
    return TopologyError(kind, text)


def _queue_info(body: Any, name: str) -> QueueInfo:
    if not isinstance(body, dict):
        return QueueInfo(name)
    kind = body.get("type")
    return QueueInfo(str(body.get("name", name)),
                     _count(body.get("message_count")), _count(body.get("consumer_count")),
                     kind if isinstance(kind, str) else None)


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int) else None


@dataclass(eq=False)
class _Declaring:
    """An exclusive queue declare on its way to RabbitMQ, for ``owner``; ``gone`` once
    the owner went (:meth:`RabbitMQ4Topology.forget_owner`)."""

    owner: str | None
    gone: bool = False


class RabbitMQ4Topology:
    """The :class:`~bridge.topology.model.Topology` of a RabbitMQ 4.x broker, through
    its management node on ``connection`` (the configured 1.0 connection's proton
    connection, as :class:`~bridge.amqp10.link.Amqp10Link` takes it)."""

    def __init__(self, container: Container, connection: Any, *, name: str,
                 request_timeout: float = 10.0) -> None:
        self.container = container
        self.name = name
        self.request_timeout = request_timeout
        self.management = ManagementClient(container, connection, name=name,
                                           request_timeout=request_timeout)
        """The first connection's pair: every request but those about an exclusive queue
        declared on another member of the pool."""
        handler = connection.handler
        self.first: Amqp10ConnectionHandler | None = \
            handler if isinstance(handler, Amqp10ConnectionHandler) else None
        self.pool = self.first.pool if self.first is not None else None
        """The connection's pool (None: one connection, where everything goes)."""
        self.pairs: dict[Amqp10ConnectionHandler, ManagementClient] = {}
        """The management pairs of the other members exclusive queues were declared on."""
        self.exclusive: dict[str, QueueSpec] = {}
        """Exclusive queues declared through this backend, by name (``owner``: their
        legacy owner), declared again after their 1.0 connection dropped."""
        self.exclusive_on: dict[str, Amqp10ConnectionHandler | None] = {}
        """The pool member each exclusive queue was declared on (None: the first)."""
        self._exclusive_count: Counter[Amqp10ConnectionHandler | None] = Counter()
        """How many of :attr:`exclusive_on` each member holds (whether a member's pair is
        still needed, without a scan of every exclusive queue each time one goes)."""
        self.exclusive_bindings: dict[str, list[BindingSpec]] = {}
        """Bindings to those queues, made again with them."""
        self._consumer_due: set[str] = set()
        """Exclusive queues whose member still keeps a session for their first consumer."""
        self._declaring: dict[str | None, list[_Declaring]] = {}
        """Exclusive declares waiting for RabbitMQ's answer, by owner: one whose owner
        goes meanwhile is not kept (:meth:`forget_owner`)."""
        self.management.on_restored = partial(self._declare_exclusive_again, None)

    def close(self) -> None:
        """Detach from the management node; pending operations fail ``unavailable``."""
        self.management.close()
        for pair in list(self.pairs.values()):
            pair.close()
        self.pairs.clear()

    def consumer_connection(self, queue: str) -> Any | None:
        """The proton connection that declared the exclusive queue ``queue`` (its
        consumers must attach there); None for another queue. The session the pool kept
        there for its consumer is given back: the consumer's link takes it now."""
        if queue not in self.exclusive_on:
            return None
        member = self.exclusive_on[queue]
        if queue in self._consumer_due:
            self._consumer_due.discard(queue)
            self._release(member)
        return self.management.connection if member is None else member.connection

    # -- the pool members' management pairs ----------------------------------------------

    def _pair(self, member: Amqp10ConnectionHandler | None) -> ManagementClient:
        """The management pair on ``member`` (None: the first), opened now if need be."""
        if member is None or member is self.first:
            return self.management
        pair = self.pairs.get(member)
        if pair is None:
            pair = self.pairs[member] = ManagementClient(
                self.container, member.connection, name=f"{self.name}.{member.name}",
                request_timeout=self.request_timeout)
            pair.on_restored = partial(self._declare_exclusive_again, member)
        return pair

    def _management_for(self, queue: str) -> ManagementClient:
        """The pair of the member ``queue`` was declared on (an exclusive queue's), else
        the first's."""
        return self._pair(self.exclusive_on.get(queue))

    def _release(self, member: Amqp10ConnectionHandler | None) -> None:
        """Give back a session the pool kept on ``member`` for a consumer."""
        held = member or self.first
        if self.pool is not None and held is not None:
            self.pool.release(held)

    def _pair_unused(self, member: Amqp10ConnectionHandler | None) -> None:
        """An exclusive queue on ``member`` went: its pair is closed :data:`PAIR_IDLE`
        seconds later if none is left there by then (the first's is never closed)."""
        if member is not None and member in self.pairs \
                and not self._exclusive_count[member]:
            self.container.schedule(PAIR_IDLE, Timer(partial(self._close_pair, member)))

    def _close_pair(self, member: Amqp10ConnectionHandler) -> None:
        pair = self.pairs.get(member)
        if pair is None or self._exclusive_count[member]:
            return
        if pair.busy:
            self.container.schedule(PAIR_IDLE, Timer(partial(self._close_pair, member)))
            return
        del self.pairs[member]
        log.info("topology %s: closing the management link pair on %s: no exclusive queue "
                 "left there", self.name, member.name,
                 extra={"event": "management_pair_closed", "topology": self.name,
                        "connection": member.name})
        pair.close()

    # -- exchanges -----------------------------------------------------------------------

    def declare_exchange(self, spec: ExchangeSpec, passive: bool,
                         done: Done[ExchangeSpec]) -> None:
        if passive:
            if spec.name == "":
                self._later(done, spec)
                return
            self.management.probe(self.publish_address(spec.name, ""), lambda result: done(
                spec if result is True else result if isinstance(result, TopologyError)
                else TopologyError("not-found", f"no exchange '{spec.name}'")))
            return
        arguments = amqp_arguments(spec.arguments, "RabbitMQ 4")
        if isinstance(arguments, TopologyError):
            self._later(done, arguments)
            return
        body = {"type": spec.type, "durable": spec.durable, "auto_delete": spec.auto_delete,
                "internal": spec.internal, "arguments": arguments}
        self._request("PUT", f"/exchanges/{path_segment(spec.name)}", body, done,
                      lambda response: spec)

    def delete_exchange(self, name: str, if_unused: bool, done: Done[None]) -> None:
        if if_unused:
            self._later(done, TopologyError(
                "not-implemented", "RabbitMQ 4's management cannot tell whether an exchange "
                                   "is in use: delete it without if-unused"))
            return
        self._request("DELETE", f"/exchanges/{path_segment(name)}", None, done,
                      lambda response: None)

    # -- queues --------------------------------------------------------------------------

    def declare_queue(self, spec: QueueSpec, passive: bool, done: Done[QueueInfo]) -> None:
        name = spec.name or server_name()
        if name in self.exclusive and self.exclusive[name].owner != spec.owner:
            self._later(done, TopologyError(
                "resource-locked", f"cannot obtain exclusive access to locked queue '{name}': "
                                   f"it is another connection's exclusive queue"))
            return
        path = f"/queues/{path_segment(name)}"
        if passive:
            self._request("GET", path, None, done, partial(self._existing, name),
                          via=self._management_for(name))
            return
        arguments = amqp_arguments(spec.arguments, "RabbitMQ 4")
        if isinstance(arguments, TopologyError):
            self._later(done, arguments)
            return
        body = {"durable": spec.durable, "exclusive": spec.exclusive,
                "auto_delete": spec.auto_delete, "arguments": arguments}
        declaring = _Declaring(spec.owner) if spec.exclusive else None
        if declaring is not None:
            self._declaring.setdefault(spec.owner, []).append(declaring)
        if spec.exclusive and name not in self.exclusive_on and self.pool is not None:
            # a new exclusive queue: on the member its consumer will have room on
            self.pool.reserve(lambda member: self._put_queue(
                None if member is self.first else member, name, spec, body, done,
                reserved=True, declaring=declaring))
        else:
            self._put_queue(self.exclusive_on.get(name), name, spec, body, done,
                            reserved=False, declaring=declaring)

    def _put_queue(self, member: Amqp10ConnectionHandler | None, name: str, spec: QueueSpec,
                   body: dict[str, Any], done: Done[QueueInfo], *, reserved: bool,
                   declaring: _Declaring | None = None) -> None:
        """The PUT of a queue declare over ``member``'s pair (None: the first's);
        ``reserved``: the pool keeps a session there for a new exclusive queue's
        consumer, given back unless the queue is declared; ``declaring``: an exclusive
        declare's note of its owner (see :meth:`forget_owner`)."""
        path = f"/queues/{path_segment(name)}"
        management = self._pair(member)

        def answered(result: Response | TopologyError) -> None:
            declared = isinstance(result, Response) and 200 <= result.status < 300
            kept = False  # the reserved session stays for the new queue's consumer
            if declaring is not None:
                self._declared(declaring)
            if declared and declaring is not None and declaring.gone:
                # its owner went while RabbitMQ was declaring it: not kept (it would
                # lock the name against the owner's successor), deleted at RabbitMQ
                management.request("DELETE", path, None, partial(self._forgotten, name))
            elif declared and spec.exclusive:
                self.exclusive[name] = QueueSpec(name, spec.durable, True, spec.auto_delete,
                                                 spec.arguments, spec.owner)
                kept = reserved and name not in self.exclusive_on
                if kept:
                    self._consumer_due.add(name)
                if name not in self.exclusive_on:
                    self.exclusive_on[name] = member
                    self._exclusive_count[member] += 1
            if reserved and not kept:
                self._release(member)
                self._pair_unused(member)
            if isinstance(result, TopologyError):
                done(result)
            elif declared:
                done(_queue_info(result.body, name))
            elif result.status == 403 and name.startswith("amq."):
                # RabbitMQ 4 refuses any declare of an amq. queue through its management,
                # where 0-9-1 lets one that exists (server-named) be declared again
                management.request("GET", path, None, partial(
                    self._existing_reserved, name, error_of(result), done))
            else:
                done(error_of(result))

        management.request("PUT", path, body, answered)

    def _existing_reserved(self, name: str, refusal: TopologyError, done: Done[QueueInfo],
                           result: Response | TopologyError) -> None:
        """The GET after a refused declare of an ``amq.`` queue: its counts if it exists,
        else the refusal."""
        if isinstance(result, Response) and result.status == 200:
            done(self._existing(name, result))
        else:
            done(refusal)

    def _existing(self, name: str, response: Response) -> QueueInfo | TopologyError:
        """An existing queue as RabbitMQ described it: its counts, unless it is another
        connection's exclusive queue (resource-locked, as a 0-9-1 passive declare says)."""
        if isinstance(response.body, dict) and response.body.get("exclusive") is True \
                and name not in self.exclusive:
            return TopologyError("resource-locked",
                                 f"cannot obtain exclusive access to locked queue '{name}': "
                                 f"it is another connection's exclusive queue")
        return _queue_info(response.body, name)

    def delete_queue(self, name: str, if_unused: bool, if_empty: bool,
                     done: Done[int | None]) -> None:
        path = f"/queues/{path_segment(name)}"
        management = self._management_for(name)

        def deleted(response: Response) -> int | None:
            self._forget_exclusive(name)
            return _count(response.body.get("message_count")) \
                if isinstance(response.body, dict) else None

        if not (if_unused or if_empty):
            self._request("DELETE", path, None, done, deleted, via=management)
            return

        def checked(result: Response | TopologyError) -> None:
            if isinstance(result, TopologyError):
                done(result)
                return
            if result.status == 404:  # gone already: as the DELETE would say
                done(0)
                return
            if result.status != 200:
                done(error_of(result))
                return
            info = _queue_info(result.body, name)
            if if_unused and info.consumer_count:
                done(TopologyError("precondition-failed", f"queue '{name}' in use"))
            elif if_empty and info.message_count:
                done(TopologyError("precondition-failed", f"queue '{name}' not empty"))
            else:
                self._request("DELETE", path, None, done, deleted, via=management)

        management.request("GET", path, None, checked)

    def purge_queue(self, name: str, done: Done[int | None]) -> None:
        self._request("DELETE", f"/queues/{path_segment(name)}/messages", None, done,
                      lambda response: _count(response.body.get("message_count"))
                      if isinstance(response.body, dict) else None,
                      via=self._management_for(name))

    def _declared(self, declaring: _Declaring) -> None:
        """An exclusive declare was answered: no longer waiting."""
        waiting = self._declaring.get(declaring.owner, [])
        if declaring in waiting:
            waiting.remove(declaring)
            if not waiting:
                del self._declaring[declaring.owner]

    def forget_owner(self, owner: str) -> None:
        # declares still waiting for RabbitMQ: their queue goes when the answer comes (a
        # client that left while its declare, or the queue's declare again after a lost
        # 1.0 connection, was on its way would otherwise keep the name locked)
        for declaring in self._declaring.pop(owner, []):
            declaring.gone = True
        for name in [q for q, spec in self.exclusive.items() if spec.owner == owner]:
            management = self._management_for(name)
            self._forget_exclusive(name)
            management.request("DELETE", f"/queues/{path_segment(name)}", None,
                               partial(self._forgotten, name))

    def _forgotten(self, name: str, result: Response | TopologyError) -> None:
        # (404: gone already, with the 1.0 connection it was declared on)
        if isinstance(result, TopologyError) or (result.status >= 300 and result.status != 404):
            error = result if isinstance(result, TopologyError) else error_of(result)
            log.warning("topology %s: the exclusive queue %r of a client that left was not "
                        "deleted: %s: %s", self.name, name, error.kind, error.text,
                        extra={"event": "exclusive_queue_left", "topology": self.name,
                               "queue": name, "error": error.text})

    def _forget_exclusive(self, name: str) -> None:
        self.exclusive.pop(name, None)
        self.exclusive_bindings.pop(name, None)
        if name in self.exclusive_on:
            member = self.exclusive_on.pop(name)
            self._exclusive_count[member] -= 1
            if not self._exclusive_count[member]:
                del self._exclusive_count[member]
            if name in self._consumer_due:
                self._consumer_due.discard(name)
                self._release(member)
            self._pair_unused(member)

    def _declare_exclusive_again(self, member: Amqp10ConnectionHandler | None) -> None:
        """``member``'s 1.0 connection (None: the first) came back: RabbitMQ deleted the
        exclusive queues declared on it with the old one; declare them again there, and
        their bindings (what was sent to them in between is lost)."""
        for spec in [spec for name, spec in self.exclusive.items()
                     if self.exclusive_on.get(name) is member]:
            log.info("topology %s: declaring the exclusive queue %r again after the 1.0 "
                     "connection came back", self.name, spec.name,
                     extra={"event": "exclusive_queue_restored", "topology": self.name,
                            "queue": spec.name})
            self.declare_queue(spec, False, partial(self._bind_again, spec.name))

    def _bind_again(self, name: str, result: QueueInfo | TopologyError) -> None:
        if isinstance(result, TopologyError):
            self._restore_failed(name, result)
            return
        for binding in self.exclusive_bindings.get(name, []):
            self.bind(binding, lambda outcome: self._restore_failed(name, outcome)
                      if isinstance(outcome, TopologyError) else None)

    def _restore_failed(self, name: str, error: TopologyError) -> None:
        log.warning("topology %s: the exclusive queue %r could not be restored: %s: %s",
                    self.name, name, error.kind, error.text,
                    extra={"event": "exclusive_queue_not_restored", "topology": self.name,
                           "queue": name, "error": error.text})

    # -- bindings ------------------------------------------------------------------------

    def bind(self, binding: BindingSpec, done: Done[None]) -> None:
        arguments = amqp_arguments(binding.arguments, "RabbitMQ 4")
        if isinstance(arguments, TopologyError):
            self._later(done, arguments)
            return
        destination = "destination_exchange" if binding.to_exchange else "destination_queue"
        body = {"source": binding.source, destination: binding.destination,
                "binding_key": binding.key, "arguments": arguments}
        self._request("POST", "/bindings", body, done, partial(self._bound, binding),
                      via=self._binding_pair(binding))

    def _bound(self, binding: BindingSpec, response: Response) -> None:
        kept = self.exclusive_bindings.setdefault(binding.destination, []) \
            if not binding.to_exchange and binding.destination in self.exclusive else None
        if kept is not None and binding not in kept:
            kept.append(binding)

    def _binding_pair(self, binding: BindingSpec) -> ManagementClient:
        """The pair a request about ``binding`` goes over: that of the member its queue
        was declared on when it is an exclusive queue's (only its connection may bind it)."""
        return self.management if binding.to_exchange \
            else self._management_for(binding.destination)

    def unbind(self, binding: BindingSpec, done: Done[None]) -> None:
        management = self._binding_pair(binding)
        kept = self.exclusive_bindings.get(binding.destination, [])
        if not binding.to_exchange and binding in kept:
            kept.remove(binding)
        kind = "dste" if binding.to_exchange else "dstq"
        if not binding.arguments:
            location = (f"/bindings/src={path_segment(binding.source)};{kind}="
                        f"{path_segment(binding.destination)};key={path_segment(binding.key)}"
                        f";args=")
            self._request("DELETE", location, None, done, lambda response: None,
                          via=management)
            return

        def found(result: Response | TopologyError) -> None:
            if isinstance(result, TopologyError):
                done(result)
                return
            if result.status != 200:
                done(error_of(result))
                return
            matches = [b for b in result.body or []
                       if isinstance(b, dict) and b.get("arguments") == binding.arguments]
            if not matches:
                done(None)  # no such binding: unbinding it succeeds
                return
            self._request("DELETE", str(matches[0]["location"]), None, done,
                          lambda response: None, via=management)

        query = (f"/bindings?src={path_segment(binding.source)}&{kind}="
                 f"{path_segment(binding.destination)}&key={path_segment(binding.key)}")
        management.request("GET", query, None, found)

    # -- addresses -----------------------------------------------------------------------

    def publish_address(self, exchange: str, routing_key: str) -> str:
        if exchange == "":
            return self.queue_address(routing_key)
        address = f"/exchanges/{path_segment(exchange)}"
        return f"{address}/{path_segment(routing_key)}" if routing_key else address

    def queue_address(self, queue: str) -> str:
        return f"/queues/{path_segment(queue)}"

    # -- helpers -------------------------------------------------------------------------

    def _request(self, method: str, path: str, body: Any, done: Callable[[Any], None],
                 result: Callable[[Response], R | TopologyError], *,
                 via: ManagementClient | None = None) -> None:
        """Send a request (over ``via``, default the first connection's pair); ``done``
        gets ``result(response)`` for a 2xx answer, else the error RabbitMQ's answer (or
        its absence) means."""
        def answered(response: Response | TopologyError) -> None:
            if isinstance(response, TopologyError):
                done(response)
            elif 200 <= response.status < 300:
                done(result(response))
            else:
                done(error_of(response))

        (via or self.management).request(method, path, body, answered)

    def _later(self, done: Callable[[Any], None], result: Any) -> None:
        self.container.schedule(0, Timer(lambda: done(result)))


if TYPE_CHECKING:
    def _conforms(backend: RabbitMQ4Topology) -> Topology:
        return backend  # mypy checks that the backend implements the protocol


__all__ = ["PAIR_IDLE", "SERVER_NAMED_PREFIX", "RabbitMQ4Topology", "error_of", "path_segment",
           "server_name"]
