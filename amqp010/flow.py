"""Message credit for one destination, as the spec's message class defines it.

A :class:`Credit` is kept by both ends of a subscription: the *sender* of
transfers (a broker's subscription) never sends beyond it, and the *receiver*
(the subscriber that granted it) checks the peer against it.

- Credit is a message count and a byte count; ``UNLIMITED`` (0xFFFFFFFF) disables
  a limit until it is zeroed by stop/flush.
- One transfer costs one message and the payload sizes of its header and body
  frames (= header segment octets + body octets, whatever the frame size).
- Window mode: completing a transfer (session.completed) gives its cost back.
  Credit mode: only message.flow adds credit.
- New destinations start in window mode with zero credit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .spec import CreditUnit, FlowMode

UNLIMITED = 0xFFFFFFFF


class CreditError(Exception):
    """A transfer would exceed the available credit."""


@dataclass(slots=True)
class Credit:
    """Credit balance of one destination (``None`` means unlimited)."""

    mode: int = FlowMode.WINDOW
    messages: int | None = 0
    bytes: int | None = 0
    in_flight: dict[int, int] = field(default_factory=dict)
    """Window mode: transfer id → byte cost, re-granted when the transfer completes."""
    stops_pending: int = 0
    """Receiver side: message.stop commands sent and not yet completed by the peer.
    Transfers the peer sent before it saw the stop may still arrive meanwhile, so the
    balance is not enforced until the stop completes (see :meth:`stop_sent`)."""
    since_stop_messages: int | None = 0
    since_stop_bytes: int | None = 0

    def set_mode(self, mode: int) -> None:
        """message.set-flow-mode (the spec allows switching only at zero credit;
        we switch anyway and keep the balance)."""
        self.mode = FlowMode(mode)

    def add(self, unit: int, value: int | None) -> None:
        """message.flow: add ``value`` of ``unit`` (None or 0xFFFFFFFF = unlimited)."""
        if unit == CreditUnit.MESSAGE:
            self.messages = _plus(self.messages, value)
            self.since_stop_messages = _plus(self.since_stop_messages, value)
        elif unit == CreditUnit.BYTE:
            self.bytes = _plus(self.bytes, value)
            self.since_stop_bytes = _plus(self.since_stop_bytes, value)
        else:
            raise ValueError(f"unknown credit unit {unit}")

    def zero(self) -> None:
        """message.stop / completed message.flush: no credit, no pending re-grants."""
        self.messages = 0
        self.bytes = 0
        self.in_flight.clear()

    def stop_sent(self) -> None:
        """Receiver side: we sent message.stop; the peer's credit is zero once it completes.

        Until then the peer may legitimately deliver what it sent under the old credit,
        so the local balance is kept (not zeroed) and not enforced.  On completion the
        balance becomes at most what was granted since the stop: never less than the
        peer's real credit, so a well-behaved peer is never accused.
        """
        self.stops_pending += 1
        self.since_stop_messages = 0
        self.since_stop_bytes = 0

    def stop_completed(self) -> None:
        """The peer completed one of our message.stop commands."""
        self.stops_pending = max(0, self.stops_pending - 1)
        if self.stops_pending == 0:
            self.messages = _least(self.messages, self.since_stop_messages)
            self.bytes = _least(self.bytes, self.since_stop_bytes)
            self.in_flight.clear()

    def allows(self, cost: int) -> bool:
        """True if one transfer of ``cost`` bytes fits."""
        if self.stops_pending:
            return True
        return (self.messages is None or self.messages >= 1) and (
            self.bytes is None or self.bytes >= cost)

    def consume(self, transfer_id: int, cost: int) -> None:
        """Account one transfer; raises :class:`CreditError` if it does not fit."""
        if not self.allows(cost):
            raise CreditError(f"transfer of {cost} octets exceeds credit "
                              f"(messages={_fmt(self.messages)}, bytes={_fmt(self.bytes)})")
        if self.messages is not None:
            self.messages = max(0, self.messages - 1)
        if self.bytes is not None:
            self.bytes = max(0, self.bytes - cost)
        if self.mode == FlowMode.WINDOW:
            self.in_flight[transfer_id] = cost

    def completed(self, transfer_id: int) -> bool:
        """Window mode: give back the credit of a completed transfer (True if any)."""
        cost = self.in_flight.pop(transfer_id, None)
        if cost is None:
            return False
        if self.messages is not None:
            self.messages += 1
        if self.bytes is not None:
            self.bytes += cost
        return True

    @property
    def empty(self) -> bool:
        return self.messages == 0 or self.bytes == 0


def _plus(balance: int | None, value: int | None) -> int | None:
    if balance is None or value is None or value >= UNLIMITED:
        return None
    return min(balance + value, UNLIMITED - 1)


def _least(a: int | None, b: int | None) -> int | None:
    """The smaller balance (``None`` is unlimited)."""
    if a is None:
        return b
    return a if b is None else min(a, b)


def _fmt(v: int | None) -> str:
    return "unlimited" if v is None else str(v)
