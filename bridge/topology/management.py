"""HTTP over AMQP 1.0: the request/response client of RabbitMQ 4's ``/management`` node
(:class:`ManagementClient`), on the machinery of :mod:`~bridge.topology.request_response`.

Theory of operation
-------------------
RabbitMQ 4.x serves its management operations (queues, exchanges, bindings) to any
AMQP 1.0 client as HTTP-style requests (rabbitmq-server's
``rabbit_amqp_management.erl``); :class:`HttpOverAmqp` is that protocol's link pair:

* a sender to and a receiver from ``/management``, on one session of their own, with
  the same link name and the link property ``paired = true`` (the OASIS link-pair
  convention RabbitMQ requires; it pairs the halves by name within a session).
  Requests go pre-settled (RabbitMQ accepts no other kind), responses come
  pre-settled;
* a request is a message with ``subject`` = the HTTP method, ``to`` = the URI path
  (names percent-encoded), ``reply-to`` = ``$me``, a ``message-id`` of ours and an
  amqp-value body (a map, or null: RabbitMQ insists on the null section); the
  response's ``subject`` is the status code, its ``correlation-id`` the request's
  message-id, its amqp-value body the result (or RabbitMQ's explanation);
* at most :data:`WINDOW` requests unanswered on the pair: RabbitMQ ends the session
  when a response finds no credit on our receiver.

RabbitMQ refuses a request for want of permission by ending the pair's session with
``amqp:unauthorized-access`` (the request client blames the oldest unanswered request).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proton import Message, symbol, ulong
from proton.reactor import Container

from .model import TopologyError
from .request_response import LinkPair, RequestClient

MANAGEMENT_NODE = "/management"
WINDOW = 8
"""Requests unanswered on the link pair at most (RabbitMQ grants its sender as much)."""
NULL_BODY = b"\x00\x53\x77\x40"
"""An amqp-value section holding null: the body of a request without one (proton
writes no body section for ``None``, and RabbitMQ's GET and DELETE match on null)."""


@dataclass(frozen=True)
class Response:
    """RabbitMQ's answer to a request: the HTTP status code and the decoded body."""

    status: int
    body: Any


ResponseDone = Callable[[Response | TopologyError], None]


@dataclass(frozen=True)
class HttpRequest:
    """One request: the HTTP method, the URI path and the amqp-value body (None: null)."""

    method: str
    path: str
    body: Any


class HttpOverAmqp(LinkPair):
    """RabbitMQ 4's paired links to ``/management`` (see the module's docstring)."""

    peer = "RabbitMQ"
    node = MANAGEMENT_NODE
    window = WINDOW

    def attach(self, session: Any, name: str) -> tuple[Any, Any]:
        sender = session.sender(name)
        sender.target.address = MANAGEMENT_NODE
        receiver = session.receiver(name)
        receiver.source.address = MANAGEMENT_NODE
        for link in (sender, receiver):
            link.properties = {symbol("paired"): True}
        return sender, receiver

    def reply_to(self, receiver: Any) -> str:
        return "$me"

    def encode(self, request: HttpRequest, message_id: int, reply_to: str) -> bytes:
        message = Message(body=request.body, inferred=False, address=request.path,
                          subject=request.method, reply_to=reply_to)
        message.id = ulong(message_id)
        data = bytes(message.encode())
        return data + NULL_BODY if request.body is None else data

    def correlation(self, message: Message) -> int | None:
        correlation = message.correlation_id
        return int(correlation) if isinstance(correlation, int) else None

    def answer(self, message: Message, what: str) -> Response | TopologyError:
        subject = message.subject
        if subject is not None and subject.isdigit():
            return Response(int(subject), message.body)
        return TopologyError("unavailable", f"RabbitMQ answered {what} without a status "
                                            f"code (subject {subject!r})")


class ManagementClient(RequestClient):
    """Requests to RabbitMQ 4's ``/management`` node over one link pair on ``connection``
    (the proton connection of a configured 1.0 connection), on the event loop."""

    def __init__(self, container: Container, connection: Any, *, name: str,
                 request_timeout: float = 10.0) -> None:
        super().__init__(container, connection, HttpOverAmqp(), name=name,
                         request_timeout=request_timeout)

    def request(self, method: str, path: str, body: Any, done: ResponseDone) -> None:
        """Send ``method path`` with ``body`` (an amqp-value: a dict, or None for null);
        ``done`` gets the :class:`Response` or a :class:`TopologyError`."""
        self.call(HttpRequest(method, path, body), f"{method} {path}", done)


__all__ = ["MANAGEMENT_NODE", "WINDOW", "HttpOverAmqp", "HttpRequest", "ManagementClient",
           "Response", "ResponseDone"]
