"""The broker-neutral vocabulary of the topology mode and the :class:`Topology`
protocol its backends implement (see the package's docstring)."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

TopologyErrorKind = Literal[
    "not-found",            # passive declare / bind / delete of a name the broker lacks
    "precondition-failed",  # redeclared with other properties; if-unused / if-empty unmet
    "resource-locked",      # an exclusive queue of another connection
    "access-refused",       # the broker (or the bridge's authorization) refuses the name
    "not-implemented",      # the broker kind cannot express it (the text says why)
    "unavailable",          # the 1.0 broker is away or did not answer in time
]


@dataclass(frozen=True)
class TopologyError:
    """Why a topology operation failed; each façade turns :attr:`kind` into its
    protocol's error (0-9-1: 404 / 406 / 405 / 403 / 540 / 506; 0-10: not-found /
    precondition-failed / resource-locked / unauthorized-access / not-implemented /
    resource-limit-exceeded) and sends :attr:`text` to the client."""

    kind: TopologyErrorKind
    text: str


@dataclass(frozen=True)
class ExchangeSpec:
    """An exchange as a legacy application declares it."""

    name: str
    type: str = "direct"                   # direct, fanout, topic, headers, or a plugin's
    durable: bool = False
    auto_delete: bool = False
    internal: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QueueSpec:
    """A queue as a legacy application declares it. ``exclusive`` queues belong to
    ``owner`` (an opaque id of the declaring client connection): they go when it goes."""

    name: str
    durable: bool = False
    exclusive: bool = False
    auto_delete: bool = False
    arguments: dict[str, Any] = field(default_factory=dict)
    owner: str | None = None


@dataclass(frozen=True)
class BindingSpec:
    """A binding of ``destination`` (a queue, or an exchange when ``to_exchange``) to the
    exchange ``source`` with ``key`` (and, for headers exchanges, ``arguments``)."""

    source: str
    destination: str
    key: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    to_exchange: bool = False


@dataclass(frozen=True)
class QueueInfo:
    """A queue's name and, where the broker can say, its depth and consumers (``None``:
    the broker kind cannot tell)."""

    name: str
    message_count: int | None = None
    consumer_count: int | None = None
    queue_type: str | None = field(default=None, compare=False)
    """The broker's queue type (RabbitMQ 4: ``classic``, ``quorum``, ``stream``) where it
    says, else None; not part of the answer's equality (what a declare answers is the
    name and the counts)."""


SERVER_NAMED_PREFIX = "amqp-bridge.gen-"
"""The name prefix of a queue declared without a name (RabbitMQ's own ``amq.gen-`` is
reserved: a client may not declare it, not even through RabbitMQ 4's management)."""


def server_name() -> str:
    """A fresh name for a server-named queue, as RabbitMQ makes them (128 random bits)."""
    return SERVER_NAMED_PREFIX + base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")


def amqp_arguments(arguments: dict[str, Any], broker: str) -> dict[str, Any] | TopologyError:
    """``arguments`` as the AMQP 1.0 map ``broker`` reads (or why one cannot be sent)."""
    for key, value in arguments.items():
        if not _encodable(value):
            return TopologyError("precondition-failed",
                                 f"argument {key!r}: a {type(value).__name__} value cannot "
                                 f"be passed on to {broker}")
    return dict(arguments)


def _encodable(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return True
    if isinstance(value, list | tuple):
        return all(_encodable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _encodable(v) for k, v in value.items())
    return False


T = TypeVar("T")
Done = Callable[[T | TopologyError], None]
"""The callback of an operation: its result, or why it failed (on the event loop)."""


class Topology(Protocol):
    """A broker kind's way of carrying out legacy topology (one per topology-mode
    listener, shared by its client connections). Operations start on the event loop
    and call ``done`` exactly once, later, on the event loop."""

    def declare_exchange(self, spec: ExchangeSpec, passive: bool,
                         done: Done[ExchangeSpec]) -> None:
        """Create the exchange, or check that it exists (``passive``; or with other
        properties: precondition-failed). A passive declare's result has the
        exchange's type where the broker can tell it (qpidd), else ``spec``'s."""

    def delete_exchange(self, name: str, if_unused: bool, done: Done[None]) -> None:
        """Delete the exchange (deleting one that does not exist succeeds, as in 0-9-1)."""

    def declare_queue(self, spec: QueueSpec, passive: bool, done: Done[QueueInfo]) -> None:
        """Create the queue (a server-named one when ``spec.name`` is empty: the
        name is in the result), or check that it exists (``passive``)."""

    def delete_queue(self, name: str, if_unused: bool, if_empty: bool,
                     done: Done[int | None]) -> None:
        """Delete the queue; the result is the number of messages it held, if known."""

    def purge_queue(self, name: str, done: Done[int | None]) -> None:
        """Remove the queue's ready messages; the result is how many, if known."""

    def bind(self, binding: BindingSpec, done: Done[None]) -> None:
        """Create the binding (both ends must exist: not-found otherwise)."""

    def unbind(self, binding: BindingSpec, done: Done[None]) -> None:
        """Remove the binding (one that does not exist: succeeds)."""

    def forget_owner(self, owner: str) -> None:
        """The client connection ``owner`` is gone: its exclusive queues (and
        auto-delete queues only it consumed from, where the broker does not delete
        them itself) are deleted."""

    def publish_address(self, exchange: str, routing_key: str) -> str:
        """The 1.0 address (a target, or the ``to`` of a message on an anonymous
        sender) of a publish to ``exchange`` ("" is the default exchange) with
        ``routing_key``."""

    def queue_address(self, queue: str) -> str:
        """The 1.0 address of the queue: the source its consumers receive from, and
        the ``reply-to`` a native 1.0 responder answers to."""

    def consumer_connection(self, queue: str) -> Any | None:
        """The proton connection a consumer of ``queue`` must attach on — an exclusive
        queue's, where the broker binds it to the 1.0 connection that declared it
        (RabbitMQ 4) —, or None: any connection of the pool will do. Asked once per
        consumer, as its link is made."""
