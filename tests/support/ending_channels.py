"""RabbitMQ 4's handling of a channel it has not finished ending, as a frame filter.

RabbitMQ 4's reader hands every frame on a channel to that channel's session process
until the process has exited: our ``end`` makes the session answer with its own
``end`` and exit, and a ``begin`` that arrives on the same channel before the reader has
seen the exit (both in one read) goes to the dying session and is dropped, with the
``attach`` after it. Proton gives a new session the lowest free channel as soon as our
``end`` is sent, so a session begun then may land there and never be answered.

:class:`DropsFramesWhileEnding` does that to the frames between two endpoints (a
:class:`~tests.support.memory_pair.MemoryPair`'s ``rewrite`` and ``rewrite_back``, or a
:class:`~tests.support.relay.Relay`'s): what our side sends on a channel it ended is
dropped until the peer's ``end`` for that channel has gone out. :class:`HoldsEnds` makes
the real RabbitMQ 4 read our ``end`` together with whatever we send next.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from .overcredit import performative, split

OPEN, BEGIN, END = 0x10, 0x11, 0x17


def channel(frame: bytes) -> int:
    """The channel of an AMQP frame."""
    return int.from_bytes(frame[6:8], "big")


def kind(frame: bytes) -> tuple[int | None, list[Any]]:
    """The performative's descriptor and fields of a frame (None for a header or an
    empty frame)."""
    if frame[:4] == b"AMQP":
        return None, []
    p = performative(frame)
    if p is None:
        return None, []
    return int(cast(int, p.descriptor)), list(cast(list[Any], p.value))


class DropsFramesWhileEnding:
    """Drops our frames on a channel we ended until the peer's end of it has gone out."""

    def __init__(self) -> None:
        self.ending: set[int] = set()
        """Our channels we sent an end on, the peer's end not sent yet."""
        self.dropped: list[tuple[int, int | None]] = []
        """(channel, descriptor) of every frame dropped."""
        self._peer_ended: set[int] = set()
        """Our channels whose session the peer ended first (our end answers it)."""
        self._ours_of: dict[int, int] = {}
        """The peer's channel of each session -> our channel of it (from its begin)."""
        self._to_peer = bytearray()
        self._from_peer = bytearray()

    def to_peer(self, data: bytes) -> bytes:
        """Filter what our side sends."""
        self._to_peer.extend(data)
        kept = []
        for frame in split(self._to_peer):
            descriptor, _ = kind(frame)
            number = channel(frame)
            if descriptor is not None and number in self.ending:
                self.dropped.append((number, descriptor))
                continue
            if descriptor == END:
                if number in self._peer_ended:
                    self._peer_ended.remove(number)
                else:
                    self.ending.add(number)
            kept.append(frame)
        return b"".join(kept)

    def from_peer(self, data: bytes) -> bytes:
        """Watch what the peer sends (unchanged): its end frees our channel."""
        self._from_peer.extend(data)
        for frame in split(self._from_peer):
            descriptor, fields = kind(frame)
            if descriptor == BEGIN and fields and fields[0] is not None:
                self._ours_of[channel(frame)] = int(fields[0])
            elif descriptor == END:
                ours = self._ours_of.pop(channel(frame), -1)
                if ours in self.ending:
                    self.ending.remove(ours)
                else:
                    self._peer_ended.add(ours)
        return data


class HoldsEnds:
    """A rewriter factory for :class:`~tests.support.relay.Relay` (``rewrite=``, with a
    ``flush_after``): what the client sends with an ``end`` in it is held back until the
    client sends more (then both go in one write, and the broker reads them together)
    or until the relay's ``flush_after`` of silence."""

    def __init__(self) -> None:
        self.held = 0
        """Writes with an ``end`` held back so far."""
        self.joined = 0
        """Held writes forwarded together with what the client sent next."""

    def __call__(self) -> Callable[[bytes], bytes]:
        buffered, held = bytearray(), bytearray()

        def rewrite(data: bytes) -> bytes:
            buffered.extend(data)
            frames = list(split(buffered))
            if not data:  # the relay's flush: silence since
                out = bytes(held)
                held.clear()
                return out
            if held:
                self.joined += 1
            held.extend(b"".join(frames))
            if any(kind(frame)[0] == END for frame in frames):
                self.held += 1
                return b""
            out = bytes(held)
            held.clear()
            return out

        return rewrite


def open_apart() -> Callable[[bytes], list[bytes]]:
    """A ``rewrite_back`` for :class:`~tests.support.relay.Relay`: the broker's ``open`` is
    written on its own and what came with it after it (its answers to our begins), so
    that the client reads the ``open`` before them — as it may from a loaded broker."""
    buffered = bytearray()
    opened = [False]
    """The last chunk written ended with the open: what comes next waits (an empty chunk)."""

    def chunks(data: bytes) -> list[bytes]:
        buffered.extend(data)
        out: list[bytes] = [b""] if opened[0] else []
        pending = bytearray()
        for frame in split(buffered):
            pending.extend(frame)
            if kind(frame)[0] == OPEN:
                out.append(bytes(pending))
                pending.clear()
        if pending:
            out.append(bytes(pending))
            opened[0] = False
        elif any(out):
            opened[0] = True  # (the last chunk is the open)
        return out

    return chunks
