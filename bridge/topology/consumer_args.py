"""A 0-9-1 consumer's arguments (``basic.consume``'s ``arguments`` table) as RabbitMQ 4
reads them on an AMQP 1.0 receiver's attach.

Theory of operation
-------------------
RabbitMQ takes the same consumer settings over both protocols, spelt differently: what a
0-9-1 client puts in ``basic.consume``'s arguments, a 1.0 client puts in the attach of
its receiving link — a source filter or a link property. RabbitMQ 4.0 turns the attach
back into the 0-9-1 arguments it knows (``rabbit_amqp_session``), so the façade's
consumer link carries them unchanged in meaning:

=============================== ===========================================================
0-9-1 argument                  AMQP 1.0 attach (RabbitMQ 4)
=============================== ===========================================================
``x-priority`` (integer)        link property ``rabbitmq:priority`` (int)
``x-stream-offset``             source filter ``rabbitmq:stream-offset-spec``: a string
                                (``first``, ``last``, ``next``, an interval ``1h``) as a
                                string, an offset as a long, a timestamp (seconds) as a
                                1.0 timestamp (milliseconds)
``x-stream-filter``             source filter ``rabbitmq:stream-filter`` (a string or a
                                list of strings)
``x-stream-match-unfiltered``   source filter ``rabbitmq:stream-match-unfiltered``
=============================== ===========================================================

Other arguments are ignored, as RabbitMQ ignores consumer arguments it does not know. A
value of the wrong type is refused ``precondition-failed`` naming the argument (RabbitMQ
refuses it with 406 too). Without this the link carried none of them: a stream consumer
read from ``next`` whatever offset it asked for, and consumer priorities were ignored.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from proton import Described, int32, symbol, timestamp

from .model import TopologyError

PRIORITY = symbol("rabbitmq:priority")
STREAM_OFFSET = symbol("rabbitmq:stream-offset-spec")
STREAM_FILTER = symbol("rabbitmq:stream-filter")
STREAM_MATCH_UNFILTERED = symbol("rabbitmq:stream-match-unfiltered")

INT32 = (-(2 ** 31), 2 ** 31 - 1)


@dataclass(frozen=True)
class ConsumerTerms:
    """What a consumer's link attaches with, beyond its source address."""

    filters: dict[symbol, Any] = field(default_factory=dict)
    """The source's filter set (each value described by its own key, as RabbitMQ's clients
    send them)."""
    properties: dict[symbol, Any] = field(default_factory=dict)
    """The link's properties."""

    def __bool__(self) -> bool:
        return bool(self.filters or self.properties)


def _refused(name: str, value: Any) -> TopologyError:
    return TopologyError("precondition-failed",
                         f"invalid arg '{name}' for consumer: {value!r} "
                         f"({type(value).__name__}) is not acceptable")


def _stream_offset(value: Any) -> Any:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, int):
        return value  # proton writes a Python int as a long
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:  # (pamqp's timestamps are naive UTC)
            value = value.replace(tzinfo=datetime.UTC)
        return timestamp(int(value.timestamp()) * 1000)
    return None


def rabbitmq_consumer_terms(arguments: dict[str, Any] | None
                            ) -> ConsumerTerms | TopologyError:
    """The attach terms that carry ``arguments`` (a ``basic.consume``'s) to RabbitMQ 4
    (module docstring), or the refusal of a value of the wrong type."""
    terms = ConsumerTerms()
    if not arguments:
        return terms
    for name, value in arguments.items():
        if name == "x-priority":
            if isinstance(value, bool) or not isinstance(value, int) \
                    or not INT32[0] <= value <= INT32[1]:
                return _refused(name, value)
            terms.properties[PRIORITY] = int32(value)
        elif name == "x-stream-offset":
            spec = _stream_offset(value)
            if spec is None:
                return _refused(name, value)
            terms.filters[STREAM_OFFSET] = Described(STREAM_OFFSET, spec)
        elif name == "x-stream-filter":
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = list(value)
            elif not isinstance(value, str):
                return _refused(name, value)
            terms.filters[STREAM_FILTER] = Described(STREAM_FILTER, value)
        elif name == "x-stream-match-unfiltered":
            if not isinstance(value, bool):
                return _refused(name, value)
            terms.filters[STREAM_MATCH_UNFILTERED] = Described(STREAM_MATCH_UNFILTERED,
                                                               value)
    return terms


__all__ = ["ConsumerTerms", "rabbitmq_consumer_terms"]
