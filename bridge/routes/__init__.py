"""Route runtimes: move messages between a legacy (AMQP 0-10) side and an AMQP 1.0 side.

Theory of operation
-------------------
Both directions are at-least-once: the source message is settled only after the
target's outcome is known, and the number of messages (and octets) between the two
is bounded by the route's ``max_in_flight``. docs/semantics.md has the whole
contract. The package is layered so that each concern is written once:

* :mod:`.contract` — what the bridge calls on any route (:class:`RouteRuntime`, a
  :class:`bridge.metrics.ObservedRoute`), the façade's routes included;
* :mod:`.stats` — counters and duplicate suppression; :mod:`.refusals` — the
  dead-letter copy and the words and log lines of a refusal;
* :mod:`.amqp10_endpoint` — the 1.0 side: a target (sender, in-flight items, poison
  guard) and a source (receiver, credit); :mod:`.deadletter` — the one dead-letter
  component (queue, send, outcome) every route uses;
* :mod:`.legacy_endpoint` — the legacy side as the core sees it (Protocols), and
  :mod:`.amqp010_endpoint` — its AMQP 0-10 implementation (a second legacy protocol
  goes beside it);
* :mod:`.core` — the shared prologue, bookkeeping and readiness; the two route kinds
  are thin adapters over the endpoints: :class:`LegacyToAmqp10` (0-10 queue → 1.0
  address) and :class:`Amqp10ToLegacy` (1.0 address → 0-10 exchange).

Unmappable messages (MappingError, CloudEvents errors) go to the dead-letter address
with the reason in message annotations, or are rejected with it.

Faults: every 1.0 link sits on its own session and is re-created when the peer
detaches or closes it or ends its session (:class:`bridge.amqp10.link.Amqp10Link`);
proton re-attaches links after a reconnect. When a link or its connection goes down,
the deliveries in flight on it are void: their sources are released for redelivery
(0-10) or left to the broker to redeliver (1.0). 0-10 sessions are resumed when the
broker keeps them (:mod:`bridge.legacy`). Optional duplicate suppression remembers
the message-ids of the last ``dedupe.window`` delivered messages.

Legacy dispositions, credit and flushes are batched per burst of reactor events
(:meth:`~bridge.legacy.amqp010.LegacyConnection.defer`, through :meth:`.core.RouteCore.kick`).
"""

from .amqp10_to_legacy import Amqp10ToLegacy
from .contract import LegacyRoute, RouteRuntime
from .core import RouteCore
from .legacy_to_amqp10 import LegacyToAmqp10
from .stats import RouteStats

__all__ = ["Amqp10ToLegacy", "LegacyRoute", "LegacyToAmqp10", "RouteCore", "RouteRuntime",
           "RouteStats"]
