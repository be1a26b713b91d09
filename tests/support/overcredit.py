"""A 1.0 broker that sends more than the credit it was given, made from a real one.

RabbitMQ 3.x's 1.0 plugin counts a credit top-up against its own delivery count, which
lags behind the messages already on their way: when a receiver tops its credit up while
messages are in flight, a few more than the credit arrive.  That race cannot be made to
happen on demand; :class:`OverCredit` makes its effect certain instead.  It rewrites
the frames a 1.0 client sends through a :class:`~tests.support.relay.Relay`: every link
``flow`` frame's link-credit is raised by :attr:`OverCredit.extra`, so the broker sends
up to that many messages beyond what the client granted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

from proton import Data
from proton._data import Described, uint

FLOW = 0x13
LINK_CREDIT = 6
"""Index of link-credit in the flow performative's field list."""


def performative(frame: bytes) -> Described | None:
    """The performative of an AMQP (type 0) frame, None for an empty or SASL frame."""
    offset, kind = frame[4] * 4, frame[5]
    if kind != 0 or len(frame) <= offset:
        return None
    body = Data()
    body.decode(frame[offset:])
    body.rewind()
    body.next()
    value = body.get_object()
    return value if isinstance(value, Described) else None


def link_credit(frame: bytes) -> int | None:
    """The link-credit of a link flow frame (None for any other frame)."""
    p = performative(frame)
    if p is None or p.descriptor != FLOW:
        return None
    fields = cast(list[Any], p.value)
    return None if len(fields) <= LINK_CREDIT or fields[LINK_CREDIT] is None \
        else int(fields[LINK_CREDIT])


def split(buffered: bytearray) -> Iterator[bytes]:
    """Take the whole protocol headers and frames off the front of ``buffered``."""
    while len(buffered) >= 8:
        size = 8 if buffered[:4] == b"AMQP" else int.from_bytes(buffered[:4], "big")
        if len(buffered) < size:
            return
        yield bytes(buffered[:size])
        del buffered[:size]


class OverCredit:
    """A rewriter factory for :class:`~tests.support.relay.Relay` (``rewrite=``)."""

    def __init__(self, extra: int = 0) -> None:
        self.extra = extra
        """Added to the link-credit of each flow frame sent from now on (0: none)."""
        self.inflated = 0
        """Flow frames rewritten so far."""
        self.largest = 0
        """The largest link-credit the client itself sent (before any rewrite)."""

    def __call__(self) -> Callable[[bytes], bytes]:
        """A rewriter for one relayed connection's client-to-broker bytes."""
        buffered = bytearray()

        def rewrite(data: bytes) -> bytes:
            buffered.extend(data)
            return b"".join(self._frame(frame) for frame in split(buffered))

        return rewrite

    def _frame(self, frame: bytes) -> bytes:
        if frame[:4] == b"AMQP":
            return frame
        credit = link_credit(frame)
        if credit is None:
            return frame
        self.largest = max(self.largest, credit)
        if not self.extra or credit + self.extra > 0xFFFFFFFF:
            return frame  # nothing to add, or already "everything"
        p = performative(frame)
        assert p is not None
        fields = cast(list[Any], p.value)
        fields[LINK_CREDIT] = uint(credit + self.extra)
        encoded = Data()
        encoded.put_object(Described(p.descriptor, fields))
        body = bytes(encoded.encode())
        self.inflated += 1
        offset = frame[4] * 4
        return (offset + len(body)).to_bytes(4, "big") + frame[4:offset] + body
