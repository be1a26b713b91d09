"""Exchanges emulated as routing tables over plain queues, for 1.0 brokers without them.

A plain AMQP 1.0 broker (qpidd's 1.0 side, a broker of addresses) has queues but no
exchanges or bindings. As kombu's virtual transport does, the bridge keeps the legacy
routing itself: a :class:`RoutingTable` holds the exchanges the applications declared
and their bindings, and :meth:`RoutingTable.route` says which queues a publish reaches.
The façade then sends one copy to each queue's address.

Theory of operation
-------------------
An exchange routes by its type, as RabbitMQ and qpidd do:

- ``direct``: bindings whose key equals the routing key;
- ``fanout``: every binding;
- ``topic``: bindings whose key, a pattern of dot-separated words, matches the
  routing key — ``*`` stands for exactly one word, ``#`` for zero or more;
- ``headers``: bindings whose arguments match the message's headers: ``x-match:
  all`` (the default) needs every argument present with an equal value, ``any`` one
  of them; arguments starting ``x-`` are not compared unless ``x-match`` is
  ``all-with-x`` / ``any-with-x`` (RabbitMQ's extension). An argument with no value
  (``None``) matches the header's presence.

The default exchange ``""`` reaches the queue named by the routing key, if it
exists. Exchange-to-exchange bindings are followed (each exchange visited once, so
a cycle ends). The table is pure state (no I/O); it lives in the bridge's memory,
so two bridge instances do not share what was declared through the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .model import BindingSpec, ExchangeSpec

EXCHANGE_TYPES = frozenset({"direct", "fanout", "topic", "headers"})
"""The exchange types the emulation routes (a declare of another is refused)."""


def _words(key: str) -> tuple[str, ...]:
    """A topic key's words (the empty key has none, as in RabbitMQ)."""
    return tuple(key.split(".")) if key else ()


@lru_cache(maxsize=4096)
def _pattern_words(binding_key: str) -> tuple[str, ...]:
    return _words(binding_key)


def topic_matches(binding_key: str, routing_key: str) -> bool:
    """Whether ``routing_key`` matches the topic ``binding_key`` (``*``: one word,
    ``#``: zero or more)."""
    pattern, words = _pattern_words(binding_key), _words(routing_key)
    # reachable[j]: the pattern's words so far can match the first j words of the key
    reachable = [True] + [False] * len(words)
    for part in pattern:
        if part == "#":
            for j in range(1, len(words) + 1):
                reachable[j] = reachable[j] or reachable[j - 1]
        else:
            for j in range(len(words), 0, -1):
                reachable[j] = reachable[j - 1] and (part == "*" or part == words[j - 1])
            reachable[0] = False
    return reachable[len(words)]


def headers_match(arguments: Mapping[str, Any], headers: Mapping[str, Any]) -> bool:
    """Whether a headers-exchange binding with ``arguments`` takes a message with
    ``headers`` (``x-match`` all / any / all-with-x / any-with-x)."""
    mode = str(arguments.get("x-match", "all"))
    with_x = mode.endswith("-with-x")
    wanted = [(k, v) for k, v in arguments.items()
              if k != "x-match" and (with_x or not k.startswith("x-"))]
    if not wanted:
        return mode.startswith("all")
    hits = (k in headers and (v is None or headers[k] == v) for k, v in wanted)
    return all(hits) if mode.startswith("all") else any(hits)


@dataclass
class _Exchange:
    spec: ExchangeSpec
    bindings: list[BindingSpec] = field(default_factory=list)


class RoutingTable:
    """Declared exchanges, queues and bindings, and where a publish goes."""

    def __init__(self) -> None:
        self._exchanges: dict[str, _Exchange] = {}
        self._queues: set[str] = set()

    # -- declares --------------------------------------------------------------------------

    def has_exchange(self, name: str) -> bool:
        """Whether the exchange exists (the default exchange always does)."""
        return name == "" or name in self._exchanges

    def exchange(self, name: str) -> ExchangeSpec | None:
        """The exchange's declared properties, or None."""
        found = self._exchanges.get(name)
        return found.spec if found else None

    def add_exchange(self, spec: ExchangeSpec) -> None:
        """Declare an exchange (of a type in :data:`EXCHANGE_TYPES`); a redeclare keeps
        its bindings."""
        if spec.type not in EXCHANGE_TYPES:
            raise ValueError(f"exchange type {spec.type!r} cannot be emulated "
                             f"(types: {', '.join(sorted(EXCHANGE_TYPES))})")
        found = self._exchanges.get(spec.name)
        if found is None:
            self._exchanges[spec.name] = _Exchange(spec)
        else:
            found.spec = spec

    def remove_exchange(self, name: str) -> None:
        """Delete an exchange, its bindings, and bindings of other exchanges to it."""
        self._exchanges.pop(name, None)
        for other in self._exchanges.values():
            other.bindings = [b for b in other.bindings
                              if not (b.to_exchange and b.destination == name)]

    def has_queue(self, name: str) -> bool:
        """Whether the table knows the queue."""
        return name in self._queues

    def queues(self) -> list[str]:
        """The queues the table knows."""
        return sorted(self._queues)

    def add_queue(self, name: str) -> None:
        """Know a queue (the default exchange reaches it by name)."""
        self._queues.add(name)

    def remove_queue(self, name: str) -> None:
        """Forget a queue and every binding to it."""
        self._queues.discard(name)
        for ex in self._exchanges.values():
            ex.bindings = [b for b in ex.bindings
                           if b.to_exchange or b.destination != name]

    def bind(self, binding: BindingSpec) -> None:
        """Add a binding (once: an equal binding is not added twice)."""
        ex = self._exchanges[binding.source]
        if binding not in ex.bindings:
            ex.bindings.append(binding)

    def unbind(self, binding: BindingSpec) -> None:
        """Remove a binding, if present."""
        ex = self._exchanges.get(binding.source)
        if ex is not None and binding in ex.bindings:
            ex.bindings.remove(binding)

    def bindings(self, exchange: str) -> list[BindingSpec]:
        """The exchange's bindings, in the order they were made."""
        found = self._exchanges.get(exchange)
        return list(found.bindings) if found else []

    # -- routing ---------------------------------------------------------------------------

    def route(self, exchange: str, routing_key: str,
              headers: Mapping[str, Any] | None = None) -> list[str]:
        """The queues a publish to ``exchange`` with ``routing_key`` (and ``headers``,
        for headers exchanges) reaches, each once, in binding order."""
        if exchange == "":
            return [routing_key] if routing_key in self._queues else []
        found: dict[str, None] = {}
        self._route(exchange, routing_key, headers or {}, found, set())
        return list(found)

    def _route(self, exchange: str, key: str, headers: Mapping[str, Any],
               found: dict[str, None], seen: set[str]) -> None:
        if exchange in seen:
            return
        seen.add(exchange)
        ex = self._exchanges.get(exchange)
        if ex is None:
            return
        for binding in _matching(ex.spec.type, ex.bindings, key, headers):
            if binding.to_exchange:
                self._route(binding.destination, key, headers, found, seen)
            else:
                found[binding.destination] = None


def _matching(kind: str, bindings: Iterable[BindingSpec], key: str,
              headers: Mapping[str, Any]) -> Iterable[BindingSpec]:
    if kind == "fanout":
        return bindings
    if kind == "direct":
        return (b for b in bindings if b.key == key)
    if kind == "topic":
        return (b for b in bindings if topic_matches(b.key, key))
    return (b for b in bindings if headers_match(b.arguments, headers))
