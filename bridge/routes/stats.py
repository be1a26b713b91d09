"""What every route counts, and the memory behind duplicate suppression.

:class:`RouteStats` holds a route's plain counters and gauges, written on the event
loop and read by the metrics collector's thread (:mod:`bridge.metrics`);
:class:`DeliveredIds` remembers the message-ids of the last delivered messages for
the route option ``dedupe`` (:func:`message_id_key` makes 0-10 and 1.0 ids comparable).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ops.metrics import LatencyHistogram


@dataclass
class RouteStats:
    """Per-route counters and gauges, updated on the event loop and read by the metrics
    collector (:mod:`bridge.metrics`; counter names as in ``metrics.COUNTERS``)."""

    received: int = 0
    delivered: int = 0
    rejected: int = 0
    dead_lettered: int = 0
    released: int = 0
    redelivered: int = 0
    """Messages that arrived flagged redelivered (see
    :func:`bridge.routes.amqp10_endpoint.redelivered_1_0`)."""
    duplicates_suppressed: int = 0
    """Messages settled at the source without forwarding: their id was recently delivered."""
    mapping_errors: int = 0
    poison_messages: int = 0
    overdrawn: int = 0
    """Messages the 1.0 source sent beyond the link credit the route granted (RabbitMQ 3.x
    under load): the route holds them, so its in-flight figure may pass ``max_in_flight``
    by as many."""
    """Messages settled as rejected because sending them made the target end the link."""
    oversized: int = 0
    """Messages refused because they exceed the route's (or the target's) size limit."""
    publishes_abandoned: int = 0
    """Façade publishes read and never forwarded (the drain limit at shutdown, or a link
    down past attach_timeout for a publisher without confirms): lost, logged at ERROR."""
    in_flight: int = 0
    in_flight_bytes: int = 0
    credit: int = 0
    """Credit the route holds from its target (see docs/operations.md per route kind)."""
    peak_in_flight: int = 0
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    """Source receipt to the target's accepted outcome, per delivered message."""
    extra: dict[str, int] = field(default_factory=dict)

    def counters(self) -> dict[str, int]:
        """The integer fields (for the statistics log line)."""
        return {k: v for k, v in vars(self).items() if isinstance(v, int)}


class DeliveredIds:
    """The message-ids of the last ``size`` delivered messages (a bounded set)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._ids: dict[Any, None] = {}

    def __contains__(self, key: Any) -> bool:
        return key in self._ids

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, key: Any) -> None:
        """Remember ``key`` as the newest (the oldest is forgotten past ``size``)."""
        ids = self._ids
        ids.pop(key, None)
        ids[key] = None
        if len(ids) > self.size:
            del ids[next(iter(ids))]


def message_id_key(message_id: Any) -> Any:
    """A hashable duplicate-detection key for a 0-10 or 1.0 message-id (None: no id)."""
    if message_id is None:
        return None
    if isinstance(message_id, bytes | bytearray | memoryview):
        return (bytes, bytes(message_id))
    return (type(message_id).__name__, message_id)


__all__ = ["DeliveredIds", "RouteStats", "message_id_key"]
