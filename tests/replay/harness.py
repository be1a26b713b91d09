"""Replay a recorded AMQP 0-10 client against a live server (the bridge's façade).

Theory of operation
-------------------

A recording (``tests/data/captures/*/NAME.jsonl``) holds both directions of one TCP
connection, one JSON line per socket read with its time since connect.  A
:class:`Replay` opens a fresh connection to the server under test and sends the
**client's bytes** (c2s) at the recorded pace, while a reader thread decodes
everything the live server answers (our codec: ``FrameDecoder`` + ``Assembler``).

The client's bytes are sent as recorded except where they name something *the
server* chose.  That is:

- the server's command ids (its ``message.transfer`` and ``execution.result``
  commands, numbered from the server's ``session.command-point``), which the
  client's ``session.completed`` / ``message.accept`` / ``release`` / ``reject`` /
  ``acquire`` refer to: every recorded server command gets a *key* — an
  ``execution.result`` the client command id it answers, a transfer its destination
  and position among that destination's transfers, anything else its name and
  position on its channel — and the live command with the same key stands in for
  it; the frame is re-encoded with the live ids;
- the limits of ``connection.tune``, which the client's ``tune-ok`` echoes: they are
  lowered to what the live server offered.

Session names, channels and the client's own command ids are the client's and stay
as recorded.

Before sending a chunk, the replay waits (bounded) for the live counterpart of every
server assembly the recorded client had received before it and could depend on
(connection start/secure/tune/open-ok, session.attached, transfers, results): the
recorded client could only have sent, say, its accept after the transfer arrived.
Time lost waiting shifts the rest of the schedule, so the recorded gaps (an idle
period, heartbeats) are kept; while a wait holds the schedule up on a connection with
heartbeats, the replay sends ``connection.heartbeat`` as the idle client would.  A
wait that runs out (at once if the server ended that session) is recorded in
:attr:`Replay.errors`, naming the recording, the chunk and what was awaited, and the
replay goes on (references to what never came are left out of the re-encoded
frames), so later answers can still be checked; it stops only if the server closes
the connection.
"""

from __future__ import annotations

import contextlib
import copy
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amqp010.framing import Assembler, Assembly, FrameDecoder, ProtocolHeader
from amqp010.spec import (
    ConnectionHeartbeat,
    ConnectionTune,
    ConnectionTuneOk,
    ExecutionResult,
    MessageAccept,
    MessageAcquire,
    MessageReject,
    MessageRelease,
    MessageTransfer,
    SessionCommandPoint,
    SessionCompleted,
    SessionConfirmed,
)
from amqp010.types import SequenceSet

#: Server assemblies whose live counterpart must have arrived before the client's next
#: bytes are sent (the client's later bytes may depend on them).
ANCHORS = frozenset({"connection.start", "connection.secure", "connection.tune",
                     "connection.open-ok", "session.attached", "message.transfer",
                     "execution.result"})
#: How long to wait for one live counterpart.
WAIT = 5.0


@dataclass(frozen=True)
class Chunk:
    """One recorded socket read."""

    index: int
    direction: str
    t: float
    data: bytes


def load_chunks(path: Path) -> list[Chunk]:
    """The recording's socket reads in file order."""
    out: list[Chunk] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            out.append(Chunk(len(out), rec["dir"], float(rec["t"]), bytes.fromhex(rec["hex"])))
    return out


@dataclass
class Seen:
    """One assembly of a server's stream, recorded or live."""

    assembly: Assembly
    t: float
    """Seconds since connect."""
    chunk: int
    """Recorded: index of the chunk that completed it; live: -1."""
    command_id: int | None
    """The server's id for a command (None for a control)."""
    key: tuple[Any, ...]

    @property
    def name(self) -> str:
        return self.assembly.op.NAME

    @property
    def op(self) -> Any:
        return self.assembly.op


class ServerStream:
    """Decodes a server's byte stream into :class:`Seen` items, numbering and keying commands."""

    def __init__(self) -> None:
        self._decoder = FrameDecoder()
        self._assembler = Assembler()
        self._next_id: dict[int, int] = {}
        self._ordinal: Counter[tuple[Any, ...]] = Counter()
        self.items: list[Seen] = []

    def feed(self, data: bytes, t: float, chunk: int = -1) -> list[Seen]:
        self._decoder.feed(data)
        new = []
        for item in self._decoder.assemblies(self._assembler):
            if isinstance(item, ProtocolHeader):
                continue
            op, ch = item.op, item.channel
            command_id = None
            if isinstance(op, SessionCommandPoint):
                self._next_id[ch] = op.command_id or 0
            if item.track == 1:
                command_id = self._next_id.get(ch, 0)
                self._next_id[ch] = (command_id + 1) & 0xFFFFFFFF
            if isinstance(op, ExecutionResult):
                key: tuple[Any, ...] = (ch, op.NAME, op.command_id)
            else:
                base: tuple[Any, ...] = (ch, op.NAME)
                if isinstance(op, MessageTransfer):
                    base += (op.destination or "",)
                key = (*base, self._ordinal[base])
                self._ordinal[base] += 1
            seen = Seen(item, t, chunk, command_id, key)
            self.items.append(seen)
            new.append(seen)
        return new


def describe(key: tuple[Any, ...]) -> str:
    """A key in words, for failure messages."""
    if key[1] == "execution.result":
        return f"execution.result for client command {key[2]} on channel {key[0]}"
    if key[1] == "message.transfer":
        return f"message.transfer #{key[3]} to destination {key[2]!r} on channel {key[0]}"
    return f"{key[1]} #{key[2]} on channel {key[0]}"


@dataclass
class _Planned:
    chunk: Chunk
    ops: list[str] = field(default_factory=list)
    """Names of the client's assemblies that end in this chunk."""
    pieces: list[bytes | Assembly] = field(default_factory=list)
    awaits: list[Seen] = field(default_factory=list)
    syncs: list[tuple[int, int]] = field(default_factory=list)
    """(channel, command id) of the client's execution.sync commands the recorded server
    had completed before this chunk: the client waited for that (it is what sync is for)."""


_REWRITE = (ConnectionTuneOk, SessionCompleted, SessionConfirmed, MessageAccept, MessageRelease,
            MessageReject, MessageAcquire)


def _client_plan(chunks: list[Chunk]) -> tuple[list[_Planned], list[tuple[int, int, Any]]]:
    """The c2s chunks as pieces: raw bytes, and assemblies to re-encode with live values.

    Also returns the client's commands as ``(channel, command id, op)``.
    """
    c2s = [c for c in chunks if c.direction == "c2s"]
    stream = b"".join(c.data for c in c2s)
    decoder, assembler = FrameDecoder(), Assembler()
    spans: list[tuple[int, int, Assembly]] = []  # rewritten assemblies: [start, end)
    ends: list[tuple[int, str]] = []  # every assembly: (end offset, name)
    commands: list[tuple[int, int, Any]] = []
    next_id: dict[int, int] = {}
    starts: dict[tuple[int, int], int] = {}
    decoder.feed(stream)
    for frame in decoder.frames():
        if isinstance(frame, ProtocolHeader):
            continue
        starts.setdefault((frame.channel, frame.track), frame.offset)
        done = assembler.add(frame)
        if done is None:
            continue
        start = starts.pop((frame.channel, frame.track))
        op = done.op
        ends.append((frame.offset + 12 + len(frame.payload), op.NAME))
        if isinstance(op, SessionCommandPoint):
            next_id[done.channel] = op.command_id or 0
        if done.track == 1:
            cid = next_id.get(done.channel, 0)
            next_id[done.channel] = cid + 1
            commands.append((done.channel, cid, op))
        if isinstance(op, _REWRITE):
            spans.append((start, frame.offset + 12 + len(frame.payload), done))
    plan = []
    pos = 0
    span_i = 0
    for chunk in c2s:
        end = pos + len(chunk.data)
        planned = _Planned(chunk, [name for e, name in ends if pos < e <= end])
        cursor = pos
        while span_i < len(spans) and spans[span_i][1] <= end:
            s, e, assembly = spans[span_i]
            if s > cursor:
                planned.pieces.append(stream[cursor:s])
            planned.pieces.append(assembly)
            cursor = max(cursor, e)
            span_i += 1
        # a rewritten assembly that ends in a later chunk is sent whole with that chunk
        stop = spans[span_i][0] if span_i < len(spans) and spans[span_i][0] < end else end
        if stop > cursor:
            planned.pieces.append(stream[cursor:stop])
        plan.append(planned)
        pos = end
    return plan, commands


class ReplayFailed(AssertionError):
    """The live server did not send what the recorded client needed next."""


class Replay:
    """One recording's client side, replayed against ``host:port``."""

    def __init__(self, path: Path, host: str, port: int, *, wait: float = WAIT) -> None:
        self.name = path.stem
        self.host, self.port, self.wait = host, port, wait
        self.chunks = load_chunks(path)
        self.recorded = ServerStream()
        for chunk in self.chunks:
            if chunk.direction == "s2c":
                self.recorded.feed(chunk.data, chunk.t, chunk.index)
        self._rec_by_id = {(s.assembly.channel, s.command_id): s for s in self.recorded.items
                           if s.command_id is not None}
        self._plan, self.client_commands = _client_plan(self.chunks)
        awaited: set[tuple[Any, ...]] = set()
        for planned in self._plan:
            for seen in self.recorded.items:
                if (seen.chunk < planned.chunk.index and seen.name in ANCHORS
                        and seen.key not in awaited):
                    awaited.add(seen.key)
                    planned.awaits.append(seen)
        syncs = {(ch, cid) for ch, cid, op in self.client_commands
                 if op.NAME == "execution.sync"}
        for planned in self._plan:
            for seen in self.recorded.items:
                if seen.chunk >= planned.chunk.index or seen.name != "session.completed":
                    continue
                ch = seen.assembly.channel
                for cid in sorted(c for c_ch, c in syncs if c_ch == ch
                                  and c in (seen.op.commands or SequenceSet())):
                    syncs.discard((ch, cid))
                    planned.syncs.append((ch, cid))
        self.live = ServerStream()
        self._live_by_key: dict[tuple[Any, ...], Seen] = {}
        self._cond = threading.Condition()
        self.closed = False
        """True once the server closed the socket."""
        self._closing = False
        self.errors: list[str] = []
        """Every wait that ran out, and why sending stopped early, if it did."""
        self.sent: list[tuple[float, Assembly]] = []
        """What was re-encoded and sent instead of the recorded bytes, with its time."""
        self.unmapped: list[str] = []
        """Recorded server commands a rewritten frame named that had no live counterpart."""
        self.keepalives = 0
        self.sent_at: dict[int, float] = {}
        """When each client chunk (by recorded index) was sent, in seconds since connect."""
        """Heartbeats the replay added while it waited (not in the recording)."""
        self._sock: socket.socket | None = None
        self._t0 = 0.0
        self._heartbeat = 0
        """The heartbeat the client's tune-ok asked for (0: none)."""
        self._last_sent = 0.0

    # -- running -------------------------------------------------------------------------

    def run(self, *, until: Callable[[Replay], bool] | None = None, linger: float = 1.0,
            close: bool = True) -> Replay:
        """Send every client chunk at its recorded time, then read for up to ``linger``
        seconds more (less once ``until(self)`` holds or the server closed)."""
        self._sock = socket.create_connection((self.host, self.port), timeout=10)
        self._sock.settimeout(0.2)
        self._t0 = time.monotonic()
        reader = threading.Thread(target=self._read, name=f"replay-{self.name}", daemon=True)
        reader.start()
        try:
            self._send_all()
            deadline = time.monotonic() + linger
            with self._cond:
                while not self.closed and not (until is not None and until(self)):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(min(left, 0.1))
        finally:
            if close:
                self.close()
            reader.join(5)
        return self

    @property
    def error(self) -> str | None:
        """The first thing that went wrong (None: the client's bytes went out as recorded,
        every awaited server assembly came)."""
        return self.errors[0] if self.errors else None

    def close(self) -> None:
        """End the connection from the client's side (``closed`` stays as it was)."""
        self._closing = True
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)
            self._sock.close()

    def _send_all(self) -> None:
        assert self._sock is not None
        shift = 0.0
        for planned in self._plan:
            chunk = planned.chunk
            target = self._t0 + chunk.t + shift
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            for seen in planned.awaits:
                if not self._await(seen, chunk):
                    break  # the rest of this chunk's waits would fail alike
            for channel, command_id in planned.syncs:
                if not self._await_completed(channel, command_id, chunk):
                    break
            if self.closed:
                return
            late = time.monotonic() - target
            if late > 0.05:
                shift += late
            data = b"".join(p if isinstance(p, bytes) else self._rewrite(p)
                            for p in planned.pieces)
            try:
                self._sock.sendall(data)
                self._last_sent = time.monotonic()
                self.sent_at[chunk.index] = self._last_sent - self._t0
            except OSError as exc:
                self.errors.append(f"{self.name}: chunk {chunk.index} (t={chunk.t:.3f}s) could "
                                   f"not be sent: {exc}; {self._summary()}")
                return

    def _await(self, seen: Seen, chunk: Chunk) -> bool:
        deadline = time.monotonic() + self.wait
        with self._cond:
            while seen.key not in self._live_by_key:
                left = deadline - time.monotonic()
                ended = self._session_ended(seen.assembly.channel)
                if left <= 0 or self.closed or ended:
                    why = ("the server closed the connection" if self.closed else
                           "the server ended that session" if ended else
                           f"waited {self.wait:.0f}s")
                    self.errors.append(
                        f"{self.name}: before chunk {chunk.index} (t={chunk.t:.3f}s) the "
                        f"recorded client had received {describe(seen.key)} (recorded chunk "
                        f"{seen.chunk}); its live counterpart never came ({why}); "
                        f"{self._summary()}")
                    return False
                self._keep_alive()
                self._cond.wait(min(left, 0.1))
        return True

    def _await_completed(self, channel: int, command_id: int, chunk: Chunk) -> bool:
        """Wait until the live server completed the client's command ``command_id``."""
        deadline = time.monotonic() + self.wait
        with self._cond:
            while command_id not in self.completed(channel):
                left = deadline - time.monotonic()
                ended = self._session_ended(channel)
                if left <= 0 or self.closed or ended:
                    self.errors.append(
                        f"{self.name}: before chunk {chunk.index} (t={chunk.t:.3f}s) the "
                        f"recorded client had its execution.sync {command_id} on channel "
                        f"{channel} completed; the live server never completed it; "
                        f"{self._summary()}")
                    return False
                self._keep_alive()
                self._cond.wait(min(left, 0.1))
        return True

    def _keep_alive(self) -> None:
        """While a wait holds the schedule up, send heartbeats as the idle client would
        (its connection negotiated them; the server drops a client silent for two)."""
        if self._heartbeat and time.monotonic() - self._last_sent >= self._heartbeat:
            assert self._sock is not None
            try:
                self._sock.sendall(Assembly(0, ConnectionHeartbeat()).encode())
            except OSError:
                return
            self._last_sent = time.monotonic()
            self.keepalives += 1

    def _read(self) -> None:
        assert self._sock is not None
        while True:
            try:
                data = self._sock.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                data = b""
            with self._cond:
                if not data:
                    self.closed = not self._closing
                    self._cond.notify_all()
                    return
                self.received(data)

    def received(self, data: bytes) -> None:
        """Take bytes from the live server (the reader thread's, or a test's)."""
        with self._cond:
            for seen in self.live.feed(data, time.monotonic() - self._t0):
                self._live_by_key.setdefault(seen.key, seen)
            self._cond.notify_all()

    # -- adapting what the server chose ----------------------------------------------------

    def _rewrite(self, assembly: Assembly) -> bytes:
        op = copy.copy(assembly.op)
        ch = assembly.channel
        with self._cond:
            if isinstance(op, ConnectionTuneOk):
                tune = self.live_op("connection.tune")
                assert isinstance(tune, ConnectionTune)
                if op.channel_max is not None and tune.channel_max is not None:
                    op.channel_max = min(op.channel_max, tune.channel_max)
                if op.max_frame_size is not None and tune.max_frame_size is not None:
                    op.max_frame_size = min(op.max_frame_size, tune.max_frame_size)
                self._heartbeat = op.heartbeat or 0
            elif isinstance(op, (SessionCompleted, SessionConfirmed)):
                op.commands = self._map(ch, op.commands, cumulative=True)
            elif isinstance(op, (MessageAccept, MessageRelease, MessageReject, MessageAcquire)):
                op.transfers = self._map(ch, op.transfers, cumulative=False)
        new = Assembly(ch, op, assembly.header, assembly.body, segments=assembly.segments,
                       has_header=assembly.has_header)
        self.sent.append((time.monotonic() - self._t0, new))
        return new.encode()

    def _map(self, channel: int, ids: SequenceSet | None, *, cumulative: bool
             ) -> SequenceSet | None:
        """Recorded server command ids -> the live ids of their counterparts."""
        if ids is None:
            return None
        out = SequenceSet()
        for rec_id in ids:
            rec = self._rec_by_id.get((channel, rec_id))
            live = self._live_by_key.get(rec.key) if rec is not None else None
            if live is None or live.command_id is None:
                self.unmapped.append(describe(rec.key) if rec is not None
                                     else f"server command {rec_id} on channel {channel}")
                continue
            out.add(live.command_id)
        first = self._first_live_id(channel)
        if cumulative and out.ranges and len(ids.ranges) == 1 and first is not None:
            # "everything up to here": a client completes all it has processed
            out = SequenceSet([(first, max(out))])
        return out

    def _first_live_id(self, channel: int) -> int | None:
        for s in self.live.items:
            if s.assembly.channel == channel and isinstance(s.op, SessionCommandPoint):
                return s.op.command_id or 0
        return None

    def _session_ended(self, channel: int) -> bool:
        """True if the server detached the session on ``channel`` after it attached it."""
        ended = False
        for s in self.live.items:
            if s.assembly.channel == channel and s.name in ("session.attached",
                                                            "session.detach",
                                                            "session.detached"):
                ended = s.name != "session.attached"
        return ended

    def exceptions(self) -> list[str]:
        """The live execution.exceptions, each as "command NAME (id): code description"."""
        out = []
        for s in self.live_ops("execution.exception"):
            op = s.op
            try:
                name = self.client_command(s.assembly.channel, op.command_id).NAME
            except KeyError:
                name = "?"
            out.append(f"command {op.command_id} ({name}): {op.error_code} {op.description}")
        return out

    def _summary(self, last: int = 12) -> str:
        names = [f"{s.name}@{s.t:.2f}" for s in self.live.items[-last:]]
        text = ("the server's last assemblies: " + (", ".join(names) or "none")
                + (" (then it closed the connection)" if self.closed else ""))
        if self.exceptions():
            text += "; its execution.exceptions: " + "; ".join(self.exceptions())
        return text

    # -- what the live server sent ---------------------------------------------------------

    def live_ops(self, name: str, channel: int | None = None) -> list[Seen]:
        """Live server assemblies called ``name`` (e.g. ``"session.completed"``)."""
        return [s for s in self.live.items
                if s.name == name and (channel is None or s.assembly.channel == channel)]

    def live_op(self, name: str) -> Any:
        """The op of the first live assembly called ``name``."""
        found = self.live_ops(name)
        if not found:
            raise ReplayFailed(f"{self.name}: the server sent no {name}; {self._summary()}")
        return found[0].op

    def completed(self, channel: int) -> SequenceSet:
        """Client command ids the live server completed on ``channel``."""
        out = SequenceSet()
        for s in self.live_ops("session.completed", channel):
            for lo, hi in (s.op.commands.ranges if s.op.commands is not None else ()):
                out.add(lo, hi)
        return out

    def recorded_completed(self, channel: int) -> SequenceSet:
        """Client command ids the recorded server completed on ``channel``."""
        out = SequenceSet()
        for s in self.recorded.items:
            if s.name == "session.completed" and s.assembly.channel == channel:
                for lo, hi in (s.op.commands.ranges if s.op.commands is not None else ()):
                    out.add(lo, hi)
        return out

    def client_ops(self, index: int) -> list[str]:
        """Names of the client's assemblies that end in recorded chunk ``index``."""
        for planned in self._plan:
            if planned.chunk.index == index:
                return planned.ops
        raise KeyError(index)

    def client_command(self, channel: int, command_id: int) -> Any:
        """The client's command with this id (as recorded)."""
        for ch, cid, op in self.client_commands:
            if (ch, cid) == (channel, command_id):
                return op
        raise KeyError((channel, command_id))
