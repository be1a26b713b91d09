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

Exclusive queues belong, at RabbitMQ, to the 1.0 connection that declared them — the
bridge's, shared by every legacy client of the listener. The backend keeps the legacy
owner of each (:attr:`QueueSpec.owner`): another owner's declare of it is refused
``resource-locked`` as the legacy broker would, and :meth:`forget_owner` deletes them
when their client goes. The façade's consumer links on the same 1.0 connection may
consume from them; any connection may publish to them (RabbitMQ restricts only
consuming, declaring, binding, purging and deleting to the owner connection), so
replies from other connections and other bridge instances reach them. RabbitMQ deletes
them when the bridge's 1.0 connection drops; the backend declares them again (and their
bindings) once it is back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from proton.reactor import Container

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
    return QueueInfo(str(body.get("name", name)),
                     _count(body.get("message_count")), _count(body.get("consumer_count")))


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int) else None


class RabbitMQ4Topology:
    """The :class:`~bridge.topology.model.Topology` of a RabbitMQ 4.x broker, through
    its management node on ``connection`` (the configured 1.0 connection's proton
    connection, as :class:`~bridge.amqp10.link.Amqp10Link` takes it)."""

    def __init__(self, container: Container, connection: Any, *, name: str,
                 request_timeout: float = 10.0) -> None:
        self.container = container
        self.name = name
        self.management = ManagementClient(container, connection, name=name,
                                           request_timeout=request_timeout)
        self.exclusive: dict[str, QueueSpec] = {}
        """Exclusive queues declared through this backend, by name (``owner``: their
        legacy owner), declared again after the 1.0 connection dropped."""
        self.exclusive_bindings: dict[str, list[BindingSpec]] = {}
        """Bindings to those queues, made again with them."""
        self.management.on_restored = self._declare_exclusive_again

    def close(self) -> None:
        """Detach from the management node; pending operations fail ``unavailable``."""
        self.management.close()

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
            self._request("GET", path, None, done, partial(self._existing, name))
            return
        arguments = amqp_arguments(spec.arguments, "RabbitMQ 4")
        if isinstance(arguments, TopologyError):
            self._later(done, arguments)
            return
        body = {"durable": spec.durable, "exclusive": spec.exclusive,
                "auto_delete": spec.auto_delete, "arguments": arguments}

        def answered(result: Response | TopologyError) -> None:
            if isinstance(result, TopologyError):
                done(result)
            elif 200 <= result.status < 300:
                if spec.exclusive:
                    self.exclusive[name] = QueueSpec(name, spec.durable, True, spec.auto_delete,
                                                     spec.arguments, spec.owner)
                done(_queue_info(result.body, name))
            elif result.status == 403 and name.startswith("amq."):
                # RabbitMQ 4 refuses any declare of an amq. queue through its management,
                # where 0-9-1 lets one that exists (server-named) be declared again
                self.management.request("GET", path, None, partial(
                    self._existing_reserved, name, error_of(result), done))
            else:
                done(error_of(result))

        self.management.request("PUT", path, body, answered)

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

        def deleted(response: Response) -> int | None:
            self._forget_exclusive(name)
            return _count(response.body.get("message_count")) \
                if isinstance(response.body, dict) else None

        if not (if_unused or if_empty):
            self._request("DELETE", path, None, done, deleted)
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
                self._request("DELETE", path, None, done, deleted)

        self.management.request("GET", path, None, checked)

    def purge_queue(self, name: str, done: Done[int | None]) -> None:
        self._request("DELETE", f"/queues/{path_segment(name)}/messages", None, done,
                      lambda response: _count(response.body.get("message_count"))
                      if isinstance(response.body, dict) else None)

    def forget_owner(self, owner: str) -> None:
        for name in [q for q, spec in self.exclusive.items() if spec.owner == owner]:
            self._forget_exclusive(name)
            self.management.request("DELETE", f"/queues/{path_segment(name)}", None,
                                    partial(self._forgotten, name))

    def _forgotten(self, name: str, result: Response | TopologyError) -> None:
        if isinstance(result, TopologyError) or result.status >= 300:
            error = result if isinstance(result, TopologyError) else error_of(result)
            log.warning("topology %s: the exclusive queue %r of a client that left was not "
                        "deleted: %s: %s", self.name, name, error.kind, error.text,
                        extra={"event": "exclusive_queue_left", "topology": self.name,
                               "queue": name, "error": error.text})

    def _forget_exclusive(self, name: str) -> None:
        self.exclusive.pop(name, None)
        self.exclusive_bindings.pop(name, None)

    def _declare_exclusive_again(self) -> None:
        """The 1.0 connection came back: RabbitMQ deleted the exclusive queues with the
        old one; declare them again, and their bindings (what was sent to them in
        between is lost)."""
        for spec in list(self.exclusive.values()):
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
        self._request("POST", "/bindings", body, done, partial(self._bound, binding))

    def _bound(self, binding: BindingSpec, response: Response) -> None:
        kept = self.exclusive_bindings.setdefault(binding.destination, []) \
            if not binding.to_exchange and binding.destination in self.exclusive else None
        if kept is not None and binding not in kept:
            kept.append(binding)

    def unbind(self, binding: BindingSpec, done: Done[None]) -> None:
        kept = self.exclusive_bindings.get(binding.destination, [])
        if not binding.to_exchange and binding in kept:
            kept.remove(binding)
        kind = "dste" if binding.to_exchange else "dstq"
        if not binding.arguments:
            location = (f"/bindings/src={path_segment(binding.source)};{kind}="
                        f"{path_segment(binding.destination)};key={path_segment(binding.key)}"
                        f";args=")
            self._request("DELETE", location, None, done, lambda response: None)
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
                          lambda response: None)

        query = (f"/bindings?src={path_segment(binding.source)}&{kind}="
                 f"{path_segment(binding.destination)}&key={path_segment(binding.key)}")
        self.management.request("GET", query, None, found)

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
                 result: Callable[[Response], R | TopologyError]) -> None:
        """Send a request; ``done`` gets ``result(response)`` for a 2xx answer, else
        the error RabbitMQ's answer (or its absence) means."""
        def answered(response: Response | TopologyError) -> None:
            if isinstance(response, TopologyError):
                done(response)
            elif 200 <= response.status < 300:
                done(result(response))
            else:
                done(error_of(response))

        self.management.request(method, path, body, answered)

    def _later(self, done: Callable[[Any], None], result: Any) -> None:
        self.container.schedule(0, Timer(lambda: done(result)))


if TYPE_CHECKING:
    def _conforms(backend: RabbitMQ4Topology) -> Topology:
        return backend  # mypy checks that the backend implements the protocol


__all__ = ["SERVER_NAMED_PREFIX", "RabbitMQ4Topology", "error_of", "path_segment",
           "server_name"]
