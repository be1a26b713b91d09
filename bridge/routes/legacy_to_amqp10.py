"""A legacy queue drained into an AMQP 1.0 address: :class:`LegacyToAmqp10`.

The route subscribes to the queue in credit mode with explicit accept (through its
legacy endpoint); grants message credit only while the 1.0 sender has credit and the
in-flight bound has room; sends each message unsettled; the 1.0 outcome decides the
legacy fate: accepted → accept; rejected → dead-letter (then accept) or reject;
released → release; modified(delivery-failed) → release marked redelivered. A lost
sender makes what was in flight void: released marked redelivered, unless the peer
ended the link over one message too often (:mod:`bridge.amqp10.poison`).
"""

from __future__ import annotations

import time
from typing import Any

from proton import Delivery
from proton.reactor import Container

from mappings.errors import MappingError
from mappings.message import AmqpMessage

from ..amqp10.link import Amqp10Link
from ..amqp10.outcomes import condition_text
from ..config import Route
from ..legacy.amqp010 import LegacyConnection
from ..legacy.amqp091 import Amqp091Connection
from .amqp010_endpoint import Amqp010Source
from .amqp091_endpoint import Amqp091Source
from .amqp10_endpoint import Amqp10Target
from .core import RouteCore
from .deadletter import DeadLetters
from .legacy_endpoint import ACCEPT, REDELIVER, RELEASE, LegacySource, Taken
from .refusals import log_refused, report_poison, too_large
from .stats import message_id_key


def _suspect(taken: Taken) -> Any:
    return taken.suspect


class LegacyToAmqp10(RouteCore):
    """A legacy queue drained into a 1.0 address (see the module docstring)."""

    def __init__(self, container: Container, route: Route,
                 legacy: LegacyConnection | Amqp091Connection,
                 amqp10: Any, dead_letter: tuple[Any, str] | None) -> None:
        super().__init__(route)
        self.max_message_size = route.max_message_size
        assert route.target.address is not None
        self.target: Amqp10Target[Taken] = Amqp10Target(
            container, amqp10, route.target.address, owner=self, name=f"{route.name}.target",
            route=route.name, poison_attempts=route.poison_attempts, suspect=_suspect)
        self.link = self.target.link
        self.dead_letters: DeadLetters[Taken] | None = None
        if dead_letter is not None:
            self.dead_letters = DeadLetters(container, dead_letter[0], dead_letter[1],
                                            route=route, owner=self, suspect=_suspect)
        self.source: LegacySource = Amqp091Source(legacy, route, self) \
            if isinstance(legacy, Amqp091Connection) else Amqp010Source(legacy, route, self)
        self.attach_legacy(self.source)

    @property
    def pending(self) -> int:
        """Messages taken from the source that the source has not settled yet."""
        dead_letters = self.dead_letters
        return (len(self.target.in_flight) + self.source.accepts_pending
                + (len(dead_letters) if dead_letters is not None else 0))

    def pause(self) -> None:
        """Take no more messages from the source (graceful shutdown)."""
        self.paused = True
        self.source.stop()
        self.kick()

    # -- the legacy source (SourceOwner) ---------------------------------------------

    def on_legacy_session(self) -> None:
        self.kick()

    def on_legacy_lost(self) -> None:
        self._uncount(0)

    def on_legacy_confirmed(self) -> None:
        self._uncount(0)
        self.kick()

    def on_legacy_message(self, taken: Taken, message: Any, message_id: Any,
                          redelivered: bool) -> None:
        stats = self.stats
        stats.received += 1
        if redelivered:
            stats.redelivered += 1
        if self.seen is not None:
            taken.key = message_id_key(message_id)
            if taken.key is not None and taken.key in self.seen:
                stats.duplicates_suppressed += 1
                self._settle(taken, ACCEPT)
                return
        target = self.target
        if self.paused or not target.link.up:  # credit granted before the stop or the loss
            stats.released += 1
            self._settle(taken, RELEASE)
            return
        tap = self.tap
        try:
            data = self.source.to_amqp10(message).encode()
        except MappingError as exc:
            stats.mapping_errors += 1
            plain = self.source.plain_copy(message)
            if tap is not None:
                tap.received_message(plain)
            self._dead_letter(taken, plain, f"cannot translate: {exc}")
            return
        limit = target.link.peer_max_message_size if self.max_message_size is None \
            else self.max_message_size
        if limit is not None and len(data) > limit:
            stats.oversized += 1
            if tap is not None:
                tap.received(data)
            self._dead_letter(taken, None, too_large(len(data), limit, self.route))
            return
        if tap is not None:
            tap.received(data)
            if tap.wants_delivered:
                taken.data = data
        if self.dead_letters is not None:
            taken.data = data
        target.send(taken, data)
        self._count(taken.size)

    # -- the 1.0 target (TargetOwner) ------------------------------------------------

    def on_target_ready(self) -> None:
        self.kick()

    def on_outcome(self, taken: Taken, delivery: Delivery) -> None:
        self._uncount(taken.size)
        state = delivery.remote_state
        if state == Delivery.ACCEPTED:
            stats = self.stats
            stats.delivered += 1
            stats.latency.observe(time.monotonic() - taken.t0)
            if self.tap is not None:
                self.tap.delivered(taken.data)
            if self.seen is not None and taken.key is not None:
                self.seen.add(taken.key)
            self._settle(taken, ACCEPT)
        elif state == Delivery.REJECTED:
            reason = f"rejected by the target: {condition_text(delivery.remote.condition)}"
            message = AmqpMessage.decode(taken.data) if taken.data is not None else None
            self._dead_letter(taken, message, reason)
        elif state == Delivery.RELEASED:
            self.stats.released += 1
            self._settle(taken, RELEASE)
        else:  # MODIFIED
            self.stats.released += 1
            failed = bool(getattr(delivery.remote, "failed", True))
            self._settle(taken, REDELIVER if failed else RELEASE)

    def on_void(self, items: list[Taken], culprit: Taken | None, link: Amqp10Link) -> None:
        self._void(items, culprit, link)
        self.source.stop()
        self.kick()

    # -- the dead-letter address (DeadLetterOwner) ---------------------------------------

    def dead_lettered(self, taken: Taken) -> None:
        self._uncount(taken.size)
        self.stats.dead_lettered += 1
        self._settle(taken, ACCEPT)

    def dead_letter_refused(self, taken: Taken, delivery: Delivery) -> None:
        self._uncount(taken.size)
        self.stats.released += 1
        self._settle(taken, RELEASE)

    def dead_letters_void(self, items: list[Taken], culprit: Taken | None,
                          link: Amqp10Link) -> bool:
        self._void(items, culprit, link)
        self.kick()
        return False  # released to the legacy source, which delivers them again

    # -- fates ---------------------------------------------------------------------------

    def _void(self, items: list[Taken], culprit: Taken | None, link: Amqp10Link) -> None:
        """What was in flight on ``link`` may or may not have arrived: redeliver it, but
        settle ``culprit`` (the peer ended the link over it once too often) as poison."""
        stats = self.stats
        for taken in items:
            self.bytes -= taken.size
            self._settle(taken, REDELIVER)
            stats.released += 1
        if culprit is not None:
            self.bytes -= culprit.size
        self._uncount(0)
        if culprit is not None:
            self._poisoned(culprit, link)

    def _dead_letter(self, taken: Taken, message: AmqpMessage | None, reason: str) -> None:
        dead_letters = self.dead_letters
        log_refused(self.name, reason,
                    dead_lettered=dead_letters is not None and message is not None)
        if dead_letters is None or message is None:
            self.stats.rejected += 1
            if self.source.reject(taken, reason):
                self.kick()
            return
        self._count(taken.size)
        dead_letters.put(taken, message, reason)

    def _poisoned(self, taken: Taken, link: Amqp10Link) -> None:
        """The target ended ``link`` too often while ``taken`` was alone in flight on it:
        dead-letter it (or reject it at the source), and go on with the next message."""
        reason = report_poison(self.route, self.stats, link)
        if link is self.target.link:
            message = AmqpMessage.decode(taken.data) if taken.data is not None else None
            self._dead_letter(taken, message, reason)
        else:  # the dead-letter address refuses the copy: the source's own rules apply
            self._dead_letter(taken, None, f"{reason} (as a dead-letter copy)")

    def _settle(self, taken: Taken, fate: str) -> None:
        """Queue the legacy disposition of ``taken`` for the end of this burst of events."""
        self.source.settle(taken, fate)
        self.kick()

    def end_of_burst(self) -> None:
        """Send the batched dispositions, then grant what the window allows."""
        self.source.end_of_burst()
        self._grant()

    def _count(self, size: int) -> None:
        self.bytes += size
        self.recount()

    def _uncount(self, size: int) -> None:
        self.bytes -= size
        self.stats.in_flight = self.pending
        self.stats.in_flight_bytes = self.bytes

    # -- credit bridging -----------------------------------------------------------------

    def _grant(self) -> None:
        target = self.target
        credit = self.stats.credit = target.link.credit
        source = self.source
        if not source.attached or self.paused or not target.link.up:
            return
        if self.tap is not None and self.tap.backpressured:
            return  # the archive writer is behind: take nothing more for now
        granted = source.granted
        busy = self.pending + granted
        room = min(credit - granted, target.window(self.limit_messages) - busy)
        if self.bytes >= self.limit_bytes:
            room = 0
        # grant in batches (a quarter of the window) to keep flow commands rare, where
        # they cost one
        batch = max(1, min(self.limit_messages, max(credit, 1)) // 4) \
            if source.grants_in_batches else 1
        if room >= batch or (room > 0 and busy == 0):
            source.grant(room)


__all__ = ["LegacyToAmqp10"]
