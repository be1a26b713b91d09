"""QMF2 over AMQP 1.0: the request/response client of qpidd's management agent
(:class:`QmfClient`), on the machinery of :mod:`~bridge.topology.request_response`.

Theory of operation
-------------------
qpidd manages itself through QMF2 (its agent ``broker``), reachable from its AMQP 1.0
side as from 0-10; :class:`Qmf2` is that protocol's link pair:

* a sender to the exchange ``qmf.default.direct`` and a *dynamic* receiver: qpidd
  makes a temporary queue for it and names it in the attach; that name is the
  ``reply-to`` of every request (a fresh pair, a fresh name);
* a request is a message with ``subject`` = ``broker`` (the agent's routing key), the
  application properties ``qmf.opcode`` (``_method_request`` or ``_query_request``),
  ``x-amqp-0-10.app-id`` = ``qmf2`` and ``method`` = ``request``, a ``correlation-id``
  of ours and an amqp-value map body: a method call names the object
  (``{_object_id: {_object_name: ...}, _method_name, _arguments}``), a query the object
  it wants (``{_what: OBJECT, _object_id: ...}``);
* the answer carries the request's ``correlation-id`` and ``qmf.opcode``:
  ``_method_response`` (the method's output arguments), ``_query_response`` (a list of
  the objects found, each with its ``_values``: empty when there is none) or
  ``_exception`` (``_values``: ``error_code``, ``error_text``). Strings in QMF's maps
  come as binary; :func:`text_values` makes them text.

qpidd answers requests in order and keeps no limit of its own; at most :data:`WINDOW`
wait unanswered on the pair (the receiver's credit).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proton import Message
from proton.reactor import Container

from .model import TopologyError
from .request_response import LinkPair, RequestClient

QMF_NODE = "qmf.default.direct"
BROKER_OBJECT = "org.apache.qpid.broker:broker:amqp-broker"
"""The broker object: ``create`` and ``delete`` of queues, exchanges and bindings."""
WINDOW = 16
_SOURCE_LOCATION = re.compile(r"\s*\([^()]*\.(?:cpp|h):\d+\)$")
"""The ``(…/Broker.cpp:1519)`` qpidd appends to an exception's text."""


def queue_object(name: str) -> str:
    """The QMF object name of the queue ``name``."""
    return f"org.apache.qpid.broker:queue:{name}"


def exchange_object(name: str) -> str:
    """The QMF object name of the exchange ``name``."""
    return f"org.apache.qpid.broker:exchange:{name}"


@dataclass(frozen=True)
class MethodCall:
    """A method of the object ``object_name``, with its input ``arguments``."""

    object_name: str
    method: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Query:
    """The object ``object_name``'s properties and statistics."""

    object_name: str


@dataclass(frozen=True)
class QmfResult:
    """A successful answer: the method's output arguments, or a query's objects (their
    ``_values`` maps, strings as text)."""

    values: Any


@dataclass(frozen=True)
class QmfException:
    """qpidd's ``_exception`` answer: its code and its text (the source location it
    appends removed)."""

    code: int
    text: str


QmfDone = Callable[[QmfResult | QmfException | TopologyError], None]


def text_values(value: Any) -> Any:
    """``value`` with QMF's binary strings (and those nested in maps and lists) as text."""
    if isinstance(value, memoryview | bytes):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(text_values(k)): text_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [text_values(v) for v in value]
    return value


class Qmf2(LinkPair):
    """qpidd's QMF2 agent over AMQP 1.0 (see the module's docstring)."""

    peer = "qpidd"
    node = QMF_NODE
    window = WINDOW

    def attach(self, session: Any, name: str) -> tuple[Any, Any]:
        sender = session.sender(f"{name}.requests")
        sender.target.address = QMF_NODE
        receiver = session.receiver(f"{name}.replies")
        receiver.source.dynamic = True
        return sender, receiver

    def reply_to(self, receiver: Any) -> str:
        return str(receiver.remote_source.address)

    def encode(self, request: MethodCall | Query, message_id: int, reply_to: str) -> bytes:
        target = {"_object_name": request.object_name}
        if isinstance(request, MethodCall):
            opcode = "_method_request"
            body: dict[str, Any] = {"_object_id": target, "_method_name": request.method,
                                    "_arguments": request.arguments}
        else:
            opcode = "_query_request"
            body = {"_what": "OBJECT", "_object_id": target}
        message = Message(body=body, subject="broker", reply_to=reply_to,
                          correlation_id=str(message_id),
                          properties={"qmf.opcode": opcode, "x-amqp-0-10.app-id": "qmf2",
                                      "method": "request"})
        return bytes(message.encode())

    def correlation(self, message: Message) -> int | None:
        correlation = message.correlation_id
        if isinstance(correlation, memoryview | bytes):
            correlation = bytes(correlation).decode(errors="replace")
        return int(correlation) if isinstance(correlation, str) and correlation.isdigit() \
            else None

    def answer(self, message: Message, what: str) -> QmfResult | QmfException | TopologyError:
        properties: dict[str, Any] = message.properties or {}
        opcode = properties.get("qmf.opcode")
        body = text_values(message.body)
        if opcode == "_method_response" and isinstance(body, dict):
            return QmfResult(body.get("_arguments", {}))
        if opcode == "_query_response" and isinstance(body, list):
            return QmfResult([o.get("_values", {}) for o in body if isinstance(o, dict)])
        if opcode == "_exception" and isinstance(body, dict):
            values: dict[str, Any] = body.get("_values") or {}
            text = _SOURCE_LOCATION.sub("", str(values.get("error_text", "")))
            code = values.get("error_code")
            return QmfException(int(code) if isinstance(code, int) else 0, text)
        return TopologyError("unavailable", f"qpidd answered {what} with an unexpected "
                                            f"{opcode or 'unlabelled'} message")


class QmfClient(RequestClient):
    """Requests to qpidd's QMF2 agent over one link pair on ``connection`` (the proton
    connection of a configured 1.0 connection to qpidd), on the event loop."""

    def __init__(self, container: Container, connection: Any, *, name: str,
                 request_timeout: float = 10.0) -> None:
        super().__init__(container, connection, Qmf2(), name=name,
                         request_timeout=request_timeout)

    def method(self, object_name: str, method: str, arguments: dict[str, Any],
               done: QmfDone) -> None:
        """Call ``method`` of the object ``object_name``; ``done`` gets its output
        arguments (:class:`QmfResult`), qpidd's :class:`QmfException`, or why no answer
        came (:class:`TopologyError`)."""
        what = f"{method} {arguments.get('type', '')} {arguments.get('name', object_name)}"
        self.call(MethodCall(object_name, method, arguments), " ".join(what.split()), done)

    def query(self, object_name: str, done: QmfDone) -> None:
        """Query the object ``object_name``: ``done`` gets a :class:`QmfResult` whose
        values are the list of its ``_values`` maps (empty: there is no such object)."""
        self.call(Query(object_name), f"query {object_name}", done)


__all__ = ["BROKER_OBJECT", "QMF_NODE", "WINDOW", "MethodCall", "Qmf2", "QmfClient",
           "QmfDone", "QmfException", "QmfResult", "Query", "exchange_object",
           "queue_object", "text_values"]
