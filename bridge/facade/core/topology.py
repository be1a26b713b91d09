"""What the topology modes of both façades share (``listeners.<name>.topology``,
docs/topology.md): the routes made on demand and the names and owners at the backend.

A topology-mode listener serves every name no route configures from the AMQP 1.0 broker
behind it, through its :class:`~bridge.topology.Topology` backend. Whatever the
legacy protocol, it needs the same few things, kept by a :class:`TopologyCore`:

- a *template route*: the settings (connection, login user, limits) of the one
  anonymous-terminus publisher and of each broker queue's consume route, made on demand
  (:meth:`TopologyCore.queue_route_settings`);
- *owner ids*: each client connection (0-9-1) or session (0-10) that may declare
  exclusive queues gets an opaque id (:meth:`TopologyCore.new_owner`); the backend
  deletes that owner's exclusive queues when it is forgotten;
- *who holds each exclusive queue* (:attr:`TopologyCore.held`), shared with the other
  topology-mode listeners on the same broker connection (the application passes one
  table to them all): the broker sees one connection, theirs and this one's, so it
  cannot lock one listener's clients out of another's exclusive queue; the fronts
  refuse another owner's (:meth:`TopologyCore.held_by_other`) as resource-locked;
- the *reply-to mapping back*: a 1.0 ``reply-to`` that is a queue's 1.0 address (a
  native 1.0 requester's) names that queue to a legacy consumer
  (:meth:`TopologyCore.queue_named_by`);
- :data:`KNOWN_EXCHANGE_TYPES`, the standard exchanges both legacy brokers have.

The protocol fronts (:mod:`~bridge.facade.amqp010.topology` for 0-10,
:mod:`~bridge.facade.amqp091.topology` for 0-9-1) turn commands into backend operations and
the backend's :class:`~bridge.topology.TopologyError` kinds into their protocol's errors.
"""

from __future__ import annotations

import itertools
from typing import Any
from urllib.parse import unquote

from ...config import ListenerTopology, Route
from ...topology import Topology

KNOWN_EXCHANGE_TYPES: dict[str, str] = {
    "": "direct", "amq.direct": "direct", "amq.topic": "topic", "amq.fanout": "fanout",
    "amq.match": "headers"}
"""The exchanges every RabbitMQ and qpidd has, by type (a passive declare says only that
an exchange exists, not its type)."""

_MARKER = "amqpbridgenamemarker"
"""A name no backend's address encoding changes: locates the name in an address."""


class TopologyCore:
    """The protocol-neutral part of one listener's topology mode (module docstring)."""

    _owners = itertools.count(1)

    def __init__(self, listener: str, backend: Topology, settings: ListenerTopology,
                 login_user: str | None, held: dict[str, str] | None = None) -> None:
        self.listener = listener
        self.held: dict[str, str] = {} if held is None else held
        """The owner id of each exclusive queue declared through this listener, or
        another topology-mode listener sharing the table (module docstring)."""
        self.backend = backend
        self.settings = settings
        template = Route.model_validate({
            "name": f"{listener}.topology",
            "from": {"listener": listener, "exchange": ""},
            "to": {"connection": settings.connection, "address": "(anonymous terminus)"}})
        template._target_login_user = login_user
        self.template = template
        """The anonymous publisher's settings, and the model of each queue route's."""
        prefix, _, suffix = backend.queue_address(_MARKER).partition(_MARKER)
        self._queue_address_form = (prefix, suffix)

    def new_owner(self, peer: str) -> str:
        """A fresh owner id at the backend for a client connection or session of ``peer``."""
        return f"{self.listener}/{next(self._owners)}/{peer}"

    def hold(self, queue: str, owner: str | None) -> None:
        """``owner``'s exclusive queue ``queue`` was declared."""
        if owner is not None:
            self.held[queue] = owner

    def release(self, queue: str) -> None:
        """Exclusive queue ``queue`` was deleted, or its owner went."""
        self.held.pop(queue, None)

    def held_by_other(self, queue: str, owner: str | None) -> bool:
        """Whether ``queue`` is an exclusive queue of an owner other than ``owner``."""
        holder = self.held.get(queue)
        return holder is not None and holder != owner

    def queue_route_settings(self, queue: str) -> Route:
        """The settings of the consume route of broker queue ``queue``."""
        return self.template.model_copy(update={
            "name": f"{self.listener}.queue.{queue}",
            "source": self.template.target.model_copy(
                update={"address": self.backend.queue_address(queue)}),
            "target": self.template.source.model_copy(
                update={"exchange": None, "queue": queue})})

    def queue_named_by(self, address: str) -> str | None:
        """The queue whose 1.0 address ``address`` is (None: not a queue's address)."""
        prefix, suffix = self._queue_address_form
        if not (address.startswith(prefix) and address.endswith(suffix)) \
                or len(address) <= len(prefix) + len(suffix):
            return None
        name = unquote(address[len(prefix):len(address) - len(suffix)])
        return name if self.backend.queue_address(name) == address else None


def exchange_arguments(arguments: dict[str, Any] | None, alternate: str | None
                       ) -> dict[str, Any]:
    """A declare's arguments, with its alternate exchange as ``alternate-exchange`` (the
    argument RabbitMQ reads and the property qpidd's management takes)."""
    out = dict(arguments or {})
    if alternate:
        out["alternate-exchange"] = alternate
    return out


__all__ = ["KNOWN_EXCHANGE_TYPES", "TopologyCore", "exchange_arguments"]
