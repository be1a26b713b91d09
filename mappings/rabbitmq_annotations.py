"""What RabbitMQ 4 annotates an AMQP 1.0 delivery with, as RabbitMQ's own AMQP 0-9-1
consumers get it: headers, and the dead-letter routing.

Theory of operation
-------------------
RabbitMQ 4 adds broker data to a message it delivers, in the form of the consumer's
protocol. A 0-9-1 consumer of a dead-lettered message gets the headers ``x-death`` (a
table per queue and reason the message died in, most recent first) and
``x-first-death-*`` / ``x-last-death-*``, and the message comes with the exchange and
routing key it was dead-lettered with; a stream consumer gets ``x-stream-offset``; a
quorum queue's consumer of a message given back gets ``x-delivery-count``. A 1.0
consumer — the façade's link — gets the same data as message annotations instead:
``x-opt-deaths`` (an array of maps), ``x-first-death-*`` / ``x-last-death-*``,
``x-stream-offset``, ``x-delivery-count``, and ``x-exchange`` / ``x-routing-key`` of
the dead-letter routing.

The 0-9-1 mapping (:mod:`mappings.amqp091`) carries annotations it does not know in the
opaque header ``x-amqp-1.0.message-annotations``, and prefers the exchange the message
was first published to (the bridge's own annotation) over RabbitMQ's: a 0-9-1 consumer
behind the façade saw no ``x-death`` (retry-count logic reads it) and the source
queue's exchange instead of the dead-letter exchange. :func:`broker_data` takes these
annotations off the message before the mapping and gives them back the way RabbitMQ's
0-9-1 side writes them (``mc_amqpl``):

- ``x-opt-deaths`` → ``x-death``: each map's ``count`` (long), ``reason``, ``queue``,
  ``time`` (its ``first-time``, in seconds), ``exchange``, ``routing-keys`` (an array),
  and ``original-expiration`` (its ``ttl``, as a string) where there is one;
- ``x-first-death-{exchange,queue,reason}``, ``x-last-death-{exchange,queue,reason}``
  → headers of the same names (strings);
- ``x-stream-offset``, ``x-delivery-count`` → the headers of the same names (long);
- for a dead-lettered message (``x-opt-deaths`` present), ``x-exchange`` /
  ``x-routing-key`` are the delivery's exchange and routing key.

Pure functions; nothing here knows a route or a connection.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Any

from proton import symbol

from .amqp091_values import Unrepresentable, seconds_to_datetime
from .message import AmqpMessage

A_DEATHS = symbol("x-opt-deaths")
A_STREAM_OFFSET = symbol("x-stream-offset")
A_DELIVERY_COUNT = symbol("x-delivery-count")
COUNTS = (A_STREAM_OFFSET, A_DELIVERY_COUNT)
"""Integers RabbitMQ annotates and its 0-9-1 consumers get as headers (longs)."""
_RABBITMQ_DATA = frozenset({A_DEATHS, *COUNTS})
"""The annotations :func:`broker_data` rebuilds: a message with none of them is passed as is."""
A_EXCHANGE = symbol("x-exchange")
A_ROUTING_KEY = symbol("x-routing-key")
DEATH_SUMMARY = tuple(symbol(f"x-{which}-death-{what}") for which in ("first", "last")
                      for what in ("exchange", "queue", "reason"))
"""The first and last death's annotations: headers of the same names."""
OWN_ROUTING = (symbol("x-amqp-0-9-1.exchange"), symbol("x-amqp-0-9-1.routing-key"))
"""The bridge's annotations of the exchange and key a message was first published with
(:mod:`mappings.amqp091`), which a dead-letter routing replaces."""


@dataclasses.dataclass(frozen=True)
class BrokerData:
    """What :func:`broker_data` found."""

    message: AmqpMessage
    """The message without the annotations below (the one to map)."""
    headers: dict[str, Any]
    """The 0-9-1 headers RabbitMQ's own consumers get for them (none: empty)."""
    routing: tuple[str, str] | None
    """A dead-lettered message's (exchange, routing key) at its dead-letter routing."""
    published: tuple[Any, Any] = (None, None)
    """With :attr:`routing`: the bridge's annotations of the exchange and routing key the
    message was first published with, taken off the message (None: absent)."""


def _elements(value: Any) -> list[Any]:
    """A 1.0 array's (``proton.Array``) or list's elements; [] for anything else."""
    value = getattr(value, "elements", value)
    return list(value) if isinstance(value, list | tuple) else []


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _death(death: Any) -> dict[str, Any] | None:
    if not isinstance(death, dict):
        return None
    get = {str(k): v for k, v in death.items()}.get
    table: dict[str, Any] = {
        "count": int(get("count") or 0),
        "reason": _text(get("reason") or ""),
        "queue": _text(get("queue") or ""),
    }
    first = get("first-time")
    if isinstance(first, int):
        with contextlib.suppress(Unrepresentable):  # (no time rather than a wrong one)
            table["time"] = seconds_to_datetime(int(first) // 1000)
    table["exchange"] = _text(get("exchange") or "")
    keys = get("routing-keys")
    table["routing-keys"] = [_text(k) for k in _elements(keys)]
    ttl = get("ttl")
    if ttl is not None:
        table["original-expiration"] = str(int(ttl))
    return table


def broker_data(message: AmqpMessage) -> BrokerData:
    """RabbitMQ 4's delivery annotations of ``message`` as 0-9-1 headers and routing
    (module docstring); ``message`` itself when it has none."""
    annotations = message.message_annotations
    if _RABBITMQ_DATA.isdisjoint(annotations):
        return BrokerData(message, {}, None)
    rest = dict(annotations)
    headers: dict[str, Any] = {}
    routing = None
    for name in COUNTS:
        count = rest.pop(name, None)
        if isinstance(count, int) and not isinstance(count, bool):
            headers[str(name)] = int(count)
        elif count is not None:
            rest[name] = count  # not RabbitMQ's: left to the mapping
    deaths = rest.pop(A_DEATHS, None)
    if deaths is not None:
        tables = [_death(d) for d in _elements(deaths)]
        headers["x-death"] = [t for t in tables if t is not None]
        for name in DEATH_SUMMARY:
            value = rest.pop(name, None)
            if value is not None:
                headers[str(name)] = _text(value)
        exchange, key = rest.get(A_EXCHANGE), rest.get(A_ROUTING_KEY)
        if isinstance(exchange, str) and isinstance(key, str):
            routing = (exchange, key)
            published = (rest.pop(OWN_ROUTING[0], None), rest.pop(OWN_ROUTING[1], None))
            return BrokerData(dataclasses.replace(message, message_annotations=rest),
                              headers, routing, published)
    return BrokerData(dataclasses.replace(message, message_annotations=rest), headers,
                      routing)


__all__ = ["BrokerData", "broker_data"]
