"""The topology backend of qpidd's AMQP 1.0 side: legacy declares as QMF2 requests to
qpidd's own management agent (:class:`QpiddTopology`).

Theory of operation
-------------------
qpidd keeps the 0-10 model (exchanges, queues, bindings) and serves it to a 1.0 client
through QMF2 (:mod:`~bridge.topology.qmf`): methods of the broker object
``create``/``delete`` of ``queue``/``exchange``/``binding``, ``purge`` of a queue
object, and queries of queue and exchange objects. Each
:class:`~bridge.topology.model.Topology` operation becomes one or two requests:

===========================  ======================================================
exchange declare             ``create exchange X {exchange-type, durable,
                             auto-delete, arguments…}``; qpidd's "object already
                             exists" → a query: the same type and durability
                             succeed, others are precondition-failed
exchange declare, passive    a query of ``exchange:X`` (none: not-found)
exchange delete              ``delete exchange X`` (none: succeeds); ``if_unused``:
                             a query first, refused while ``bindingCount`` > 0
queue declare                ``create queue Q {durable, auto-delete, arguments…}``;
                             a new queue has no messages or consumers; "object
                             already exists" → a query: the counts (``msgDepth``,
                             ``consumerCount``), other durability or auto-delete
                             precondition-failed; a server-named queue (empty
                             name) gets a name of ours (:func:`server_name`)
queue declare, passive       a query of ``queue:Q`` (none: not-found)
queue delete                 ``delete queue Q {if_unused, if_empty}`` (qpidd checks
                             both; none: succeeds)
queue purge                  a query (the count), then ``purge`` ``{request: 0}``
bind / unbind                ``create`` / ``delete binding X/Q/K`` with the binding's
                             arguments (qpidd splits the name at ``/``: names and
                             keys holding one are not-implemented; so are
                             exchange-to-exchange bindings, which qpidd lacks); a
                             headers binding qpidd refuses for want of ``x-match``
                             is made again with ``x-match = all``, 0-9-1's default
===========================  ======================================================

qpidd's ``_exception`` texts become :class:`~bridge.topology.model.TopologyError`
kinds in :func:`error_of` by how they begin ("not-found: …", "No object found"
not-found; "unauthorized-access: …" / "ACL denied" access-refused; "Invalid exchange
type" not-implemented, and the "Duplicate binding key not allowed" of a second headers
binding with the same key; others, such as "Cannot delete queue …; queue in use",
precondition-failed).

Exclusive queues: QMF creates no queue owned by a connection, so the backend keeps
the legacy owner of each (:attr:`QueueSpec.owner`): another owner's declare is
refused ``resource-locked``; :meth:`forget_owner` deletes them when their client goes.
Any connection may publish to them (replies from other connections and bridge
instances reach them). Auto-delete queues are qpidd's: such a queue goes when its last
consumer leaves. qpidd keeps nothing across its restarts (this build has no store).

Addresses are qpidd's plain 1.0 ones: a queue by its name; an exchange by its name,
the routing key travelling as the message's subject (the mapping puts it there), by
which qpidd routes a message sent to an exchange node; the default exchange ``""``
becomes the queue named by the key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from proton.reactor import Container

from ..runtime import Timer
from .model import (
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
from .qmf import (
    BROKER_OBJECT,
    QmfClient,
    QmfException,
    QmfResult,
    exchange_object,
    queue_object,
)

log = logging.getLogger("bridge.topology")

R = TypeVar("R")
QmfAnswer = QmfResult | QmfException | TopologyError

ALREADY_EXISTS = "object already exists"

_TEXTS: tuple[tuple[str, TopologyErrorKind], ...] = (
    ("not-found: ", "not-found"),
    ("No object found", "not-found"),
    ("unauthorized-access: ", "access-refused"),
    ("ACL denied", "access-refused"),
    ("resource-locked: ", "resource-locked"),
    ("Invalid exchange type", "not-implemented"),
    ("not-implemented: ", "not-implemented"),
)
"""How qpidd's exception texts that say what kind of failure it was begin; any other
text is precondition-failed (the names a text quotes never decide)."""
MISSING_X_MATCH = "Invalid or missing x-match value"
"""qpidd's refusal of a headers binding without ``x-match`` (RabbitMQ takes ``all``)."""
DUPLICATE_KEY = "Duplicate binding key not allowed"
"""The end of qpidd's refusal of a second headers binding of a queue with the same key."""


def error_of(exception: QmfException) -> TopologyError:
    """The :class:`TopologyError` of qpidd's ``_exception`` answer, with its text."""
    text = exception.text
    kind: TopologyErrorKind = next((k for start, k in _TEXTS if text.startswith(start)),
                                   "precondition-failed")
    if text.rstrip(".").endswith(DUPLICATE_KEY):
        kind = "not-implemented"
    return TopologyError(kind, text or f"qpidd refused it (QMF error {exception.code})")


def _not_found(exception: QmfException) -> bool:
    return error_of(exception).kind == "not-found"


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int) else None


def _queue_info(name: str, values: dict[str, Any]) -> QueueInfo:
    return QueueInfo(name, _count(values.get("msgDepth")), _count(values.get("consumerCount")))


class QpiddTopology:
    """The :class:`~bridge.topology.model.Topology` of qpidd's AMQP 1.0 side, through its
    QMF2 agent on ``connection`` (the configured 1.0 connection's proton connection)."""

    def __init__(self, container: Container, connection: Any, *, name: str,
                 request_timeout: float = 10.0) -> None:
        self.container = container
        self.name = name
        self.qmf = QmfClient(container, connection, name=name, request_timeout=request_timeout)
        self.exclusive: dict[str, str | None] = {}
        """Exclusive queues declared through this backend: their legacy owners, by name."""

    def close(self) -> None:
        """Detach from qpidd's agent; pending operations fail ``unavailable``."""
        self.qmf.close()

    def consumer_connection(self, queue: str) -> Any | None:
        """None: qpidd's queues belong to no 1.0 connection (module docstring)."""
        return None

    # -- exchanges -----------------------------------------------------------------------

    def declare_exchange(self, spec: ExchangeSpec, passive: bool,
                         done: Done[ExchangeSpec]) -> None:
        if passive:  # (the result: the exchange as qpidd has it, its type and durability)
            self._query(exchange_object(spec.name), done, lambda found: replace(
                spec, type=found.get("type") or spec.type, durable=bool(found.get("durable")))
                if found else TopologyError("not-found", f"no exchange '{spec.name}'"))
            return
        if spec.internal:
            self._later(done, TopologyError("not-implemented",
                                            "qpidd has no internal exchanges"))
            return
        properties = amqp_arguments(spec.arguments, "qpidd")
        if isinstance(properties, TopologyError):
            self._later(done, properties)
            return
        properties.update({"exchange-type": spec.type, "durable": spec.durable,
                           "auto-delete": spec.auto_delete})

        def created(answer: QmfAnswer) -> None:
            if isinstance(answer, QmfException) and answer.text.startswith(ALREADY_EXISTS):
                self._query(exchange_object(spec.name), done, partial(self._same_exchange, spec))
            else:
                done(self._result(answer, spec))

        self._create("exchange", spec.name, properties, created)

    @staticmethod
    def _same_exchange(spec: ExchangeSpec, found: dict[str, Any] | None
                       ) -> ExchangeSpec | TopologyError:
        if found is None:  # deleted in between
            return TopologyError("not-found", f"no exchange '{spec.name}'")
        if found.get("type") != spec.type or bool(found.get("durable")) != spec.durable:
            return TopologyError(
                "precondition-failed",
                f"exchange '{spec.name}' exists as type {found.get('type')!r}, durable "
                f"{bool(found.get('durable'))}; declared as type {spec.type!r}, durable "
                f"{spec.durable}")
        return spec

    def delete_exchange(self, name: str, if_unused: bool, done: Done[None]) -> None:
        def delete() -> None:
            self._delete("exchange", name, {}, lambda answer: done(
                None if isinstance(answer, QmfException) and _not_found(answer)
                else self._result(answer, None)))

        if not if_unused:
            delete()
            return

        def checked(answer: QmfAnswer) -> None:
            found = self._found(answer)
            if isinstance(found, TopologyError):
                done(found)
            elif found is not None and _count(found.get("bindingCount")):
                done(TopologyError("precondition-failed", f"exchange '{name}' in use"))
            else:
                delete()

        self.qmf.query(exchange_object(name), checked)

    # -- queues --------------------------------------------------------------------------

    def declare_queue(self, spec: QueueSpec, passive: bool, done: Done[QueueInfo]) -> None:
        name = spec.name or server_name()
        if name in self.exclusive and self.exclusive[name] != spec.owner:
            self._later(done, TopologyError(
                "resource-locked", f"cannot obtain exclusive access to locked queue '{name}': "
                                   f"it is another connection's exclusive queue"))
            return
        if passive:
            self._query(queue_object(name), done, partial(self._existing, name))
            return
        properties = amqp_arguments(spec.arguments, "qpidd")
        if isinstance(properties, TopologyError):
            self._later(done, properties)
            return
        properties.update({"durable": spec.durable, "auto-delete": spec.auto_delete})

        def created(answer: QmfAnswer) -> None:
            if isinstance(answer, QmfException) and answer.text.startswith(ALREADY_EXISTS):
                self._query(queue_object(name), owned, partial(self._same_queue, spec, name))
            else:
                owned(self._result(answer, QueueInfo(name, 0, 0)))

        def owned(result: QueueInfo | TopologyError) -> None:
            if spec.exclusive and isinstance(result, QueueInfo):
                self.exclusive[name] = spec.owner
            done(result)

        self._create("queue", name, properties, created)

    def _existing(self, name: str, found: dict[str, Any] | None) -> QueueInfo | TopologyError:
        """An existing queue as qpidd described it: its counts, unless it is another
        connection's exclusive queue (resource-locked, as a 0-9-1 passive declare says)."""
        if found is None:
            return TopologyError("not-found", f"no queue '{name}'")
        if found.get("exclusive") is True and name not in self.exclusive:
            return TopologyError("resource-locked",
                                 f"cannot obtain exclusive access to locked queue '{name}': "
                                 f"it is another connection's exclusive queue")
        return _queue_info(name, found)

    def _same_queue(self, spec: QueueSpec, name: str, found: dict[str, Any] | None
                    ) -> QueueInfo | TopologyError:
        existing = self._existing(name, found)
        if isinstance(existing, TopologyError) or found is None:
            return existing
        for prop, key, declared in (("durable", "durable", spec.durable),
                                    ("auto-delete", "autoDelete", spec.auto_delete)):
            if bool(found.get(key)) != declared:
                return TopologyError("precondition-failed",
                                     f"queue '{name}' exists with {prop} {bool(found.get(key))}"
                                     f", declared with {prop} {declared}")
        return existing

    def delete_queue(self, name: str, if_unused: bool, if_empty: bool,
                     done: Done[int | None]) -> None:
        def deleted(answer: QmfAnswer) -> None:
            if isinstance(answer, QmfException) and _not_found(answer):
                done(0)  # gone already: as 0-9-1 says
                return
            result = self._result(answer, None)
            if not isinstance(result, TopologyError):
                self.exclusive.pop(name, None)
            done(result)

        self._delete("queue", name, {"if_unused": if_unused, "if_empty": if_empty}, deleted)

    def purge_queue(self, name: str, done: Done[int | None]) -> None:
        def counted(answer: QmfAnswer) -> None:
            found = self._found(answer)
            if isinstance(found, TopologyError):
                done(found)
            elif found is None:
                done(TopologyError("not-found", f"no queue '{name}'"))
            else:
                count = _count(found.get("msgDepth"))
                self.qmf.method(queue_object(name), "purge", {"request": 0},
                                lambda purged: done(self._result(purged, count)))

        self.qmf.query(queue_object(name), counted)

    def forget_owner(self, owner: str) -> None:
        for name in [q for q, who in self.exclusive.items() if who == owner]:
            del self.exclusive[name]
            self._delete("queue", name, {}, partial(self._forgotten, name))

    def _forgotten(self, name: str, answer: QmfAnswer) -> None:
        if isinstance(answer, QmfException) and _not_found(answer):
            return  # auto-delete: qpidd deleted it when its consumer left
        if isinstance(answer, QmfResult):
            return
        error = answer if isinstance(answer, TopologyError) else error_of(answer)
        log.warning("topology %s: the exclusive queue %r of a client that left was not "
                    "deleted: %s: %s", self.name, name, error.kind, error.text,
                    extra={"event": "exclusive_queue_left", "topology": self.name,
                           "queue": name, "error": error.text})

    # -- bindings ------------------------------------------------------------------------

    def bind(self, binding: BindingSpec, done: Done[None]) -> None:
        name = self._binding_name(binding)
        arguments = amqp_arguments(binding.arguments, "qpidd")
        if isinstance(name, TopologyError) or isinstance(arguments, TopologyError):
            self._later(done, name if isinstance(name, TopologyError) else arguments)
            return

        def created(answer: QmfAnswer) -> None:
            if (isinstance(answer, QmfException) and MISSING_X_MATCH in answer.text
                    and "x-match" not in arguments):
                # a headers exchange: 0-9-1's default is all, qpidd insists on one
                self._create("binding", name, {**arguments, "x-match": "all"},
                             lambda again: done(self._result(again, None)))
            else:
                done(self._result(answer, None))

        self._create("binding", name, arguments, created)

    def unbind(self, binding: BindingSpec, done: Done[None]) -> None:
        name = self._binding_name(binding)
        if isinstance(name, TopologyError):
            self._later(done, name)
            return
        self._delete("binding", name, {}, lambda answer: done(self._result(answer, None)))

    @staticmethod
    def _binding_name(binding: BindingSpec) -> str | TopologyError:
        """qpidd's name of the binding, ``exchange/queue/key`` (or why there is none)."""
        if binding.to_exchange:
            return TopologyError("not-implemented",
                                 "qpidd has no exchange-to-exchange bindings")
        if binding.source == "":
            return TopologyError("access-refused",
                                 "operation not permitted on the default exchange")
        parts = (binding.source, binding.destination, binding.key)
        if any("/" in part for part in parts):
            return TopologyError("not-implemented",
                                 "qpidd's management names a binding exchange/queue/key: "
                                 "an exchange, queue or binding key holding '/' cannot "
                                 "be bound through it")
        return "/".join(parts)

    # -- addresses -----------------------------------------------------------------------

    def publish_address(self, exchange: str, routing_key: str) -> str:
        return exchange if exchange else routing_key

    def queue_address(self, queue: str) -> str:
        return queue

    # -- helpers -------------------------------------------------------------------------

    def _create(self, kind: str, name: str, properties: dict[str, Any],
                done: Callable[[QmfAnswer], None]) -> None:
        self.qmf.method(BROKER_OBJECT, "create", {"type": kind, "name": name,
                                                  "properties": properties, "strict": True},
                        done)

    def _delete(self, kind: str, name: str, options: dict[str, Any],
                done: Callable[[QmfAnswer], None]) -> None:
        self.qmf.method(BROKER_OBJECT, "delete", {"type": kind, "name": name,
                                                  "options": options}, done)

    @staticmethod
    def _result(answer: QmfAnswer, result: R) -> R | TopologyError:
        """``result`` if qpidd did it, else why not."""
        if isinstance(answer, TopologyError):
            return answer
        if isinstance(answer, QmfException):
            return error_of(answer)
        return result

    @staticmethod
    def _found(answer: QmfAnswer) -> dict[str, Any] | TopologyError | None:
        """The object a query found (None: there is none), or why the query failed."""
        if isinstance(answer, TopologyError):
            return answer
        if isinstance(answer, QmfException):
            return error_of(answer)
        objects = answer.values if isinstance(answer.values, list) else []
        return objects[0] if objects and isinstance(objects[0], dict) else None

    def _query(self, object_name: str, done: Callable[[Any], None],
               result: Callable[[dict[str, Any] | None], Any]) -> None:
        """Query ``object_name``; ``done`` gets ``result(the object or None)``, or why
        the query failed."""
        def answered(answer: QmfAnswer) -> None:
            found = self._found(answer)
            done(found if isinstance(found, TopologyError) else result(found))

        self.qmf.query(object_name, answered)

    def _later(self, done: Callable[[Any], None], result: Any) -> None:
        self.container.schedule(0, Timer(lambda: done(result)))


if TYPE_CHECKING:
    def _conforms(backend: QpiddTopology) -> Topology:
        return backend  # mypy checks that the backend implements the protocol


__all__ = ["QpiddTopology", "error_of"]
