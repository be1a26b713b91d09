"""A route's legacy side, as the route core sees it: what any legacy protocol provides.

Theory of operation
-------------------
The route core (:mod:`bridge.routes.legacy_to_amqp10`, :mod:`bridge.routes.amqp10_to_legacy`)
never speaks a legacy protocol itself. It drives a *legacy endpoint*:

* a :class:`LegacySource` (a queue the route drains): a subscription with explicit
  acknowledgement, credit the route grants message by message, and dispositions —
  accept, reject, release (with or without the redelivered mark) — batched per burst;
  each message arrives as a :class:`Taken` record plus the endpoint's own message
  object, which only the endpoint translates (:meth:`LegacySource.to_amqp10`);
* a :class:`LegacyTarget` (an exchange the route publishes to): transfers whose
  confirmation (0-10: session completion) or refusal (0-10: an execution exception)
  comes back by transfer id, and the room the session leaves for more.

Both tell their owner when their session (0-10) or channel comes, goes for good, or
is suspended for a resume. :mod:`bridge.routes.amqp010_endpoint` implements them for
AMQP 0-10; another legacy protocol (AMQP 0-9-1: a channel, ``basic.consume`` with
``basic.qos`` as credit, ``basic.ack/nack/reject``, publisher confirms) implements
the same two Protocols beside it, and the route core stays as it is.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from mappings.message import AmqpMessage

ACCEPT, RELEASE, REDELIVER = "accept", "release", "redeliver"
"""Fates of a message taken from a legacy source: done, given back, given back marked
redelivered (the target may have seen it)."""


@dataclass(slots=True, eq=False)
class Taken:
    """A message taken from a legacy source, until its fate is settled there."""

    channel: Any
    """Where it came from (0-10: the session); dispositions go back there."""
    tag: int
    """Its id there (0-10: the transfer's command id)."""
    size: int
    data: bytes | None = None
    """The encoded 1.0 message, kept while a rejection may need to dead-letter it (or the
    route's tap record it as delivered)."""
    key: Any = None
    """Duplicate-detection key (message-id), when the route suppresses duplicates."""
    t0: float = 0.0
    """When it was received (``time.monotonic()``), for the latency histogram."""
    suspect: Any = None
    """Its :class:`~bridge.amqp10.poison.PoisonGuard` key (the same when the legacy broker
    redelivers it): see :func:`poison_key`."""


def poison_key(message_id: Any, body: bytes) -> Any:
    """A key for a legacy message that stays the same across redeliveries: its message-id
    and length, or (without a message-id) its length and the CRC-32 of its body."""
    if message_id is not None:
        return message_id, len(body)
    return None, len(body), zlib.crc32(body)


class LegacyEndpoint(Protocol):
    """What both legacy sides offer: their connection, and their session's state."""

    connection_name: str
    progress: bool
    """The current session has moved a message (its loss then re-attaches at once)."""

    @property
    def attached(self) -> bool:
        """A session is attached: commands go out now."""
        ...

    @property
    def backpressured(self) -> bool:
        """The connection has more unsent octets than it should buffer."""
        ...

    def defer(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` once at the end of this burst of events, then write the socket."""

    def waiting_for(self) -> list[str]:
        """What is missing on this side for the route to be ready (empty: nothing)."""
        ...

    def restart(self) -> Callable[[], bool]:
        """End the session (the broker requeues what it holds unsettled) so that a fresh
        one follows; returns a check that is true once a fresh one is attached."""
        ...


class SourceOwner(Protocol):
    """What a route draining a :class:`LegacySource` implements."""

    def on_legacy_session(self) -> None:
        """A session is attached (fresh or resumed): grant credit."""

    def on_legacy_lost(self) -> None:
        """The session is gone for good: the broker requeued what it had delivered."""

    def on_legacy_message(self, taken: Taken, message: Any, message_id: Any,
                          redelivered: bool) -> None:
        """A message arrived (``message``: the endpoint's own object, for its
        :meth:`LegacySource.to_amqp10` and :meth:`LegacySource.plain_copy`)."""

    def on_legacy_confirmed(self) -> None:
        """The broker confirmed accepts: :attr:`LegacySource.accepts_pending` went down."""


class LegacySource(LegacyEndpoint, Protocol):
    """A legacy queue drained with explicit acknowledgement and message credit."""

    granted: int
    """Message credit granted and not yet used."""
    accepts_pending: int
    """Accepts the broker has not confirmed yet (they count against the window)."""
    grants_in_batches: bool
    """Whether the route should grant credit in batches (a grant costs a command: 0-10's
    message.flow), or as soon as there is room (0-9-1: a grant that makes up for the
    settled messages keeps the prefetch as it is, and costs nothing)."""

    def to_amqp10(self, message: Any) -> AmqpMessage:
        """``message`` as 1.0 by the route's translation (MappingError if it cannot be)."""
        ...

    def plain_copy(self, message: Any) -> AmqpMessage:
        """``message`` as plain 1.0 for a dead-letter copy (never fails)."""
        ...

    def settle(self, taken: Taken, fate: str) -> None:
        """Queue ``taken``'s disposition (:data:`ACCEPT`, :data:`RELEASE`,
        :data:`REDELIVER`) for the end of this burst."""

    def reject(self, taken: Taken, reason: str) -> bool:
        """Reject ``taken`` for good at the broker; False when its session is gone."""
        ...

    def grant(self, credit: int) -> None:
        """Grant ``credit`` more messages."""

    def stop(self) -> None:
        """Take the broker's credit back (no more messages until :meth:`grant`)."""

    def end_of_burst(self) -> None:
        """Send the dispositions batched up in this burst."""


class TargetOwner(Protocol):
    """What a route publishing to a :class:`LegacyTarget` implements."""

    def on_legacy_session(self) -> None:
        """A session is attached (fresh or resumed): grant credit at the source."""

    def on_legacy_suspended(self) -> None:
        """The transport is gone, the broker keeps the session: transfers not confirmed
        yet are replayed on resume."""

    def on_legacy_lost(self) -> None:
        """The session is gone for good: transfers not confirmed may or may not have
        reached the broker."""

    def on_transferred(self, tags: Iterable[int]) -> None:
        """The broker confirmed the transfers ``tags`` (some may be unknown: ignore them)."""

    def on_transfer_refused(self, tag: int, condition: str, reason: str) -> None:
        """The broker refused transfer ``tag`` (``condition``: the 1.0 error condition)."""


class LegacyTarget(LegacyEndpoint, Protocol):
    """A legacy exchange the route publishes to, with confirmed transfers."""

    @property
    def room(self) -> int:
        """Transfers the session takes before it must wait for confirmations."""
        ...

    @property
    def can_send(self) -> bool:
        """The session accepts a transfer now."""
        ...

    def transfer(self, message: AmqpMessage) -> tuple[int, int]:
        """Publish ``message`` translated by the route's rules: ``(tag, body size)``;
        MappingError if it cannot be translated."""
        ...

    def end_of_burst(self) -> None:
        """Ask for the confirmation of this burst's transfers."""


__all__ = ["ACCEPT", "REDELIVER", "RELEASE", "LegacyEndpoint", "LegacySource",
           "LegacyTarget", "SourceOwner", "Taken", "TargetOwner", "poison_key"]
