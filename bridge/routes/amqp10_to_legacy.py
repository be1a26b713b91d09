"""An AMQP 1.0 address drained into a legacy exchange: :class:`Amqp10ToLegacy`.

The route grants 1.0 link credit up to its in-flight bound; transfers each message to
the exchange (through its legacy endpoint); the broker's confirmation → 1.0 accepted;
a refusal naming the transfer → dead-letter (then accepted) or 1.0 rejected with the
error. A lost legacy session gives the unconfirmed messages back to the 1.0 source
(:func:`~bridge.amqp10.outcomes.give_back`); a lost 1.0 receiver makes them void
(the source redelivers them), their transfers still recording their message-ids.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from proton import Delivery
from proton.reactor import Container

from mappings.errors import MappingError
from mappings.message import AmqpMessage

from ..amqp10.link import Amqp10Link
from ..amqp10.outcomes import accept, give_back, reject
from ..config import Route
from ..legacy.amqp010 import LegacyConnection
from ..legacy.amqp091 import Amqp091Connection
from .amqp010_endpoint import Amqp010Target
from .amqp091_endpoint import Amqp091Target
from .amqp10_endpoint import Amqp10Source, redelivered_1_0
from .core import RouteCore
from .deadletter import DeadLetters
from .legacy_endpoint import LegacyTarget
from .refusals import MAPPING_ERROR, log_refused, report_poison
from .stats import message_id_key


@dataclass(slots=True, eq=False)
class Received:
    """A 1.0 delivery taken from the source, until it is settled there."""

    delivery: Delivery | None
    """None once the link it came on is gone (the source redelivers it)."""
    size: int
    data: bytes | None = None
    """The received message, kept while an exception may need to dead-letter it (or the
    route's tap record it as delivered)."""
    key: Any = None
    t0: float = 0.0
    """When it was received (``time.monotonic()``), for the latency histogram."""


class Amqp10ToLegacy(RouteCore):
    """A 1.0 address drained into a legacy exchange (see the module docstring)."""

    def __init__(self, container: Container, route: Route, amqp10: Any,
                 legacy: LegacyConnection | Amqp091Connection,
                 dead_letter: tuple[Any, str] | None) -> None:
        super().__init__(route)
        self.in_flight: dict[int, Received] = {}
        """Messages transferred to the legacy broker, by transfer id, until confirmed."""
        assert route.source.address is not None
        self.source = Amqp10Source(container, amqp10, route.source.address, owner=self,
                                   name=f"{route.name}.source", route=route.name)
        self.link = self.source.link
        self.dead_letters: DeadLetters[Received] | None = None
        if dead_letter is not None:
            self.dead_letters = DeadLetters(container, dead_letter[0], dead_letter[1],
                                            route=route, owner=self)
        self.target: LegacyTarget = Amqp091Target(legacy, route, self) \
            if isinstance(legacy, Amqp091Connection) else Amqp010Target(legacy, route, self)
        self.attach_legacy(self.target)

    @property
    def pending(self) -> int:
        """Messages taken from the source whose outcome is not settled yet."""
        dead_letters = self.dead_letters
        return len(self.in_flight) + (len(dead_letters) if dead_letters is not None else 0)

    # -- the legacy target (TargetOwner) ---------------------------------------------

    def on_legacy_session(self) -> None:
        self.kick()

    def on_legacy_suspended(self) -> None:
        # transfers not completed yet are replayed on the resumed session
        self.stats.credit = 0

    def on_legacy_lost(self) -> None:
        # transfers not completed may or may not have reached the broker: give the
        # 1.0 messages back so they are redelivered
        self.stats.credit = 0
        for received in self.in_flight.values():
            if received.delivery is not None:
                give_back(received.delivery, failed=True)  # the legacy broker may have it
                self.stats.released += 1
        self.in_flight.clear()
        self.bytes = 0
        self.recount()

    def on_transferred(self, tags: Iterable[int]) -> None:
        in_flight = self.in_flight
        seen = self.seen
        stats = self.stats
        tap = self.tap
        now = time.monotonic()
        for tag in tags:
            received = in_flight.pop(tag, None)
            if received is None:
                continue
            self.target.progress = True
            self.bytes -= received.size
            stats.delivered += 1
            stats.latency.observe(now - received.t0)
            if tap is not None:
                tap.delivered(received.data)
            if seen is not None and received.key is not None:
                seen.add(received.key)
            if received.delivery is not None:
                accept(received.delivery)
        self.recount()
        self.kick()

    def on_transfer_refused(self, tag: int, condition: str, reason: str) -> None:
        received = self.in_flight.pop(tag, None)
        if received is None:
            return
        self.target.progress = True  # the culprit is known and taken care of
        self.bytes -= received.size
        self.recount()
        self._dead_letter(received, received.data, reason, condition)

    # -- the 1.0 source (SourceOwner) ------------------------------------------------

    def on_source_up(self) -> None:
        self.kick()

    def on_source_down(self) -> None:
        # the source redelivers what it sent on the link: forget those deliveries, but keep
        # the transfers (their completion still records their message-ids)
        for received in self.in_flight.values():
            received.delivery = None
        if self.dead_letters is not None:
            self.dead_letters.discard(lambda received: True)  # dead-lettered again then
            for received in self.dead_letters.items():
                received.delivery = None
        self.recount()

    def on_received(self, delivery: Delivery, data: bytes) -> None:
        stats = self.stats
        stats.received += 1
        target = self.target
        if self.paused or not target.attached:
            give_back(delivery, failed=False)  # stopping, or no legacy session: give it back
            stats.released += 1
            return
        received = Received(delivery, len(data), t0=time.monotonic())
        tap = self.tap
        try:
            message = AmqpMessage.decode(data)
        except MappingError as exc:
            stats.mapping_errors += 1
            if tap is not None:
                tap.received(data)
            self._dead_letter(received, data, f"cannot translate: {exc}", str(MAPPING_ERROR))
            return
        if redelivered_1_0(message.header):
            stats.redelivered += 1
        if self.seen is not None:
            received.key = message_id_key(message.properties.message_id)
            if received.key is not None and received.key in self.seen:
                stats.duplicates_suppressed += 1
                accept(delivery)
                self.kick()
                return
        if tap is not None:
            tap.received(data)
        try:
            tag, size = target.transfer(message)
        except MappingError as exc:
            stats.mapping_errors += 1
            self._dead_letter(received, data, f"cannot translate: {exc}", str(MAPPING_ERROR))
            return
        if self.dead_letters is not None or (tap is not None and tap.wants_delivered):
            received.data = data
        received.size = size
        self.in_flight[tag] = received
        self.bytes += size
        self.recount()
        self.kick()

    # -- the dead-letter address (DeadLetterOwner) ---------------------------------------

    def dead_lettered(self, received: Received) -> None:
        if received.delivery is None:
            return
        accept(received.delivery)
        self.stats.dead_lettered += 1
        self.recount()
        self.kick()

    def dead_letter_refused(self, received: Received, delivery: Delivery) -> None:
        if received.delivery is None:
            return
        give_back(received.delivery, failed=False)
        self.stats.released += 1
        self.recount()
        self.kick()

    def dead_letters_void(self, items: list[Received], culprit: Received | None,
                          link: Amqp10Link) -> bool:
        # copies in flight may or may not have arrived: redeliver the originals
        for received in items:
            if received.delivery is not None:
                give_back(received.delivery, failed=False)
                self.stats.released += 1
        if culprit is not None and culprit.delivery is not None:
            # the address ended its link over this copy too often: the source's own rules
            reason = report_poison(self.route, self.stats, link)
            condition = str(link.refusal.name) if link.refusal is not None \
                else "amqp:internal-error"
            self._reject(culprit, condition, f"{reason} (as a dead-letter copy)")
        self.recount()
        return False

    # -- fates ---------------------------------------------------------------------------

    def _dead_letter(self, received: Received, data: bytes | None, reason: str,
                     condition: str) -> None:
        if received.delivery is None:
            return  # the source redelivers it anyway
        dead_letters = self.dead_letters
        if dead_letters is None or data is None:
            self._reject(received, condition, reason)
            return
        log_refused(self.name, reason, dead_lettered=True)
        received.data = None
        dead_letters.put(received, data, reason)
        self.recount()

    def _reject(self, received: Received, condition: str, reason: str) -> None:
        assert received.delivery is not None
        log_refused(self.name, reason, dead_lettered=False)
        reject(received.delivery, condition, reason)
        self.stats.rejected += 1
        self.kick()

    def end_of_burst(self) -> None:
        """Ask the broker for the confirmation of this burst's transfers; grant credit."""
        self.target.end_of_burst()
        self._grant()

    def _grant(self) -> None:
        target = self.target
        self.stats.credit = target.room
        self.stats.overdrawn = self.link.overdrawn
        if not self.source.up or self.paused:
            return
        if self.tap is not None and self.tap.backpressured:
            return  # the archive writer is behind: take nothing more for now
        if self.bytes >= self.limit_bytes or target.backpressured or not target.can_send:
            return
        self.source.grant(self.pending, self.limit_messages)


__all__ = ["Amqp10ToLegacy", "Received"]
