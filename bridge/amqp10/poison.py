"""Poison messages: finding the one message a 1.0 target refuses by ending its link.

Theory of operation
-------------------
An AMQP 1.0 broker that will not take a message should settle it *rejected*, and
the routes handle that as an outcome. Many do not: RabbitMQ 3.x ends the whole
session (``amqp:precondition-failed`` for a user-id that is not the logged-in user,
``amqp:resource-limit-exceeded`` for a message over its size limit; RabbitMQ 4 ends it
with ``amqp:unauthorized-access`` for that user-id), other brokers
detach the link. Every message in flight on that link is then void and is sent
again on a fresh link — so, left alone, the same message ends the next link too,
forever, and nothing behind it moves.

A :class:`PoisonGuard` per route sender turns that into a bounded retry:

1. The target ends the link (or its session) *with an error condition* while
   messages are in flight: nobody can tell which one it was. The guard starts
   **probing**: the route keeps at most one message in flight until each of
   those messages has been settled, and the link comes back after a short fixed
   delay (a message is to blame, not the link: no growing backoff).
2. The target ends the link while exactly **one** message is in flight: that
   message is the suspect; its count goes up. At ``max_attempts`` it is declared
   poison — the route settles it as rejected with the peer's error as the reason
   (dead-lettered when the route has a dead-letter address), counts it
   (``poison_messages``), logs it, and goes on with the next message.
3. Once every suspect is settled (accepted, or convicted), the window opens again.

A connection loss, an end without an error condition, or one whose condition is
about the node or the link (:data:`NOT_ABOUT_A_MESSAGE`) proves nothing about any
message and is not counted. Suspects are remembered by a key the route chooses
(stable across redeliveries): a bounded table, oldest forgotten first.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any, TypeVar

K = TypeVar("K", bound=Hashable)

SUSPECTS = 1024
"""Suspects remembered at most (their attempt counts); the oldest is forgotten first."""
NOT_ABOUT_A_MESSAGE = frozenset({
    "amqp:not-found", "amqp:resource-deleted",
    "amqp:link:detach-forced", "amqp:link:stolen", "amqp:link:redirect",
    "amqp:connection:forced", "amqp:connection:redirect", "amqp:session:unattached-handle",
})
"""Error conditions about the node, the link or the connection itself: no message is
blamed for them (the link is re-attached with the usual backoff). Not among them:
``amqp:unauthorized-access``, which RabbitMQ 4 sends for a message whose user-id is not
the logged-in user (an attach refused for want of permission has no message in flight
to blame)."""


def poison_suspected(condition: Any) -> bool:
    """Whether a link or session ended by the peer with ``condition`` (a proton
    ``Condition`` or None) may have been caused by a message in flight."""
    return condition is not None and str(condition.name) not in NOT_ABOUT_A_MESSAGE


class PoisonGuard:
    """Bounded retries of a message whose send makes the 1.0 target end the link."""

    __slots__ = ("max_attempts", "probe", "_attempts")

    def __init__(self, max_attempts: int) -> None:
        self.max_attempts = max_attempts
        self.probe = 0
        """Outcomes still to see one at a time: the messages that were in flight when
        the target last ended the link, each a suspect until it is settled (0: not
        probing; a plain attribute, so the hot path can test it without a call)."""
        self._attempts: dict[Hashable, int] = {}

    @property
    def probing(self) -> bool:
        """True while the route must keep at most one message in flight."""
        return self.probe > 0

    def window(self, limit: int) -> int:
        """The in-flight bound to apply now: 1 while probing, else ``limit``."""
        return 1 if self.probe else limit

    def attempts(self, key: Hashable) -> int:
        """How often the target ended the link while ``key`` was alone in flight."""
        return self._attempts.get(key, 0)

    def refused(self, in_flight: Iterable[K]) -> K | None:
        """The target ended the link (or session) with an error while ``in_flight`` were
        unsettled on it. Returns the one to settle as poison now, else None (send the
        rest again, one at a time, until each of them is settled)."""
        keys = list(in_flight)
        self.probe = max(self.probe, len(keys))
        if len(keys) != 1:
            return None
        key = keys[0]
        count = self._attempts.pop(key, 0) + 1
        if count >= self.max_attempts:
            self.probe -= 1  # settled now
            return key
        self._attempts[key] = count  # re-inserted: now the newest
        if len(self._attempts) > SUSPECTS:
            del self._attempts[next(iter(self._attempts))]
        return None

    def accepted(self, key: Hashable) -> None:
        """The target accepted ``key``: it was no poison (one suspect fewer to probe)."""
        if self.probe:
            self.probe -= 1
            self._attempts.pop(key, None)


__all__ = ["NOT_ABOUT_A_MESSAGE", "PoisonGuard", "SUSPECTS", "poison_suspected"]
