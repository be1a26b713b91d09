"""Hostile clients of the façade: mutated recordings of real 0-10 clients (the fuzz test)
and the attacks of the scripted attack mix (its test and ``benchmarks/attack.py``).

Theory of operation
-------------------

**Fuzz cases.** The client side (c2s) of every recording in
``tests/data/captures/amqp-0-10/`` and ``tests/data/captures/amqp-0-10-qpid-messaging/`` is
cut into its protocol header and its frames (by each frame's own size field).
:class:`Mutator` draws a case from a ``random.Random`` seeded with ``(seed, index)`` — so
any case can be rebuilt from the two numbers a failure message prints — by taking one
stream and applying one or two mutations (:data:`MUTATIONS`): bit flips, truncation,
duplicated, dropped or reordered frames, frame-size fields lied about or huge, random
bytes after the header, changed segment types, tracks, flags and channels (past the
façade's channel-max), poked payload octets, frames spliced from another recording, a
wrong protocol header, partial frames then silence. :func:`send_case` sends the bytes in
random pieces on a fresh connection, reads whatever comes back until the bridge closes the
connection or the case's deadline passes, and returns it; :func:`decode_answer` checks that
what the bridge said is well-formed 0-10 (a protocol header, then frames).

**Attacks.** Each ``attack_*`` function runs one kind of hostile client in a loop until a
shared :class:`threading.Event` is set, bounded by a count as well, on loopback only, and
counts what it did in an :class:`AttackStats`; :func:`run_attacks` starts them all in
threads.  They never raise for what the bridge does to them (a refusal, a reset): that is
the bridge defending itself.
"""

from __future__ import annotations

import contextlib
import json
import random
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from amqp010.connection import Connection, ConnectionState, Role
from amqp010.framing import (
    PROTOCOL_HEADER,
    Assembler,
    Assembly,
    FrameDecoder,
    ProtocolHeader,
    encode_assembly,
)
from amqp010.spec import ConnectionStartOk, DeliveryProperties, SessionAttach
from amqp010.transport import BlockingClient, SocketTransport, client_config
from tests.data import CAPTURES_010, CAPTURES_QPID_MESSAGING

CAPTURE_DIRS = (CAPTURES_010, CAPTURES_QPID_MESSAGING)


# --- the recorded client streams --------------------------------------------------------


@dataclass(frozen=True)
class ClientStream:
    """One recording's client side: its protocol header and its frames (header included)."""

    name: str
    header: bytes
    frames: tuple[bytes, ...]

    @property
    def data(self) -> bytes:
        return self.header + b"".join(self.frames)


def split_frames(data: bytes) -> tuple[bytes, tuple[bytes, ...]]:
    """A well-formed c2s stream as its 8-octet protocol header and its frames."""
    assert data[:4] == b"AMQP", data[:8]
    frames = []
    pos = 8
    while pos < len(data):
        size = int.from_bytes(data[pos + 2:pos + 4], "big")
        frames.append(data[pos:pos + size])
        pos += size
    assert pos == len(data)
    return data[:8], tuple(frames)


def client_streams() -> list[ClientStream]:
    """The client side of every recording of both capture folders, by name."""
    out = []
    for folder in CAPTURE_DIRS:
        for path in sorted(folder.glob("*.jsonl")):
            with open(path, encoding="utf-8") as fh:
                data = b"".join(bytes.fromhex(rec["hex"]) for line in fh if line.strip()
                                if (rec := json.loads(line))["dir"] == "c2s")
            header, frames = split_frames(data)
            out.append(ClientStream(path.stem, header, frames))
    return out


def anonymous_variant(stream: ClientStream) -> ClientStream:
    """The same client logging in with SASL ANONYMOUS (its start-ok re-encoded) — what
    the recordings send to a listener that takes anonymous logins."""
    decoder = FrameDecoder(expect_protocol_header=True)
    decoder.feed(stream.header + stream.frames[0])
    [_, first] = list(decoder.assemblies(Assembler()))
    assert isinstance(first, Assembly) and isinstance(first.op, ConnectionStartOk), first
    start_ok = ConnectionStartOk(client_properties=first.op.client_properties,
                                 mechanism="ANONYMOUS", response=b"anonymous")
    _, frames = split_frames(PROTOCOL_HEADER + encode_assembly(0, start_ok))
    return ClientStream(stream.name + "+anonymous", stream.header,
                        frames + stream.frames[1:])


# --- mutations ----------------------------------------------------------------------------


@dataclass
class Case:
    """One fuzz case: what to send, in which pieces, and whether to go silent after it."""

    seed: int
    index: int
    stream: str
    mutations: list[str]
    chunks: list[bytes]
    silent: bool
    """Keep the connection open after sending (a partial frame, then silence) instead of
    shutting down the sending side."""

    @property
    def data(self) -> bytes:
        return b"".join(self.chunks)

    def describe(self) -> str:
        """Everything needed to reproduce the case (seed, index) and its bytes."""
        data = self.data
        shown = data.hex() if len(data) <= 4096 else data[:4096].hex() + f"...({len(data)} octets)"
        return (f"fuzz case seed={self.seed} index={self.index} stream={self.stream} "
                f"mutations={self.mutations} silent={self.silent} "
                f"pieces={[len(c) for c in self.chunks]} bytes={shown}")


INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF)


def _pick(rng: random.Random, frames: list[bytes]) -> int:
    return rng.randrange(len(frames))


def _set(frame: bytes, pos: int, value: bytes) -> bytes:
    return frame[:pos] + value + frame[pos + len(value):]


def _bitflip(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    data = bytearray(header + b"".join(frames))
    # most flips in the first 2 KiB, where the handshake and the commands are
    for _ in range(rng.randint(1, 8)):
        pos = rng.randrange(min(len(data), 2048) if rng.random() < 0.8 else len(data))
        data[pos] ^= 1 << rng.randrange(8)
    return b"", [bytes(data)]


def _truncate(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    data = header + b"".join(frames)
    return b"", [data[:rng.randrange(len(data))]]


def _duplicate(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    for _ in range(rng.randint(1, 3)):
        i = _pick(rng, frames)
        frames.insert(rng.choice((i + 1, rng.randrange(len(frames) + 1))), frames[i])
    return header, frames


def _drop(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    if len(frames) < 2:
        return header, []
    for _ in range(rng.randint(1, min(3, len(frames) - 1))):
        del frames[_pick(rng, frames)]
    return header, frames


def _reorder(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    if len(frames) < 2:
        return header, frames[::-1]
    i, j = sorted(rng.sample(range(len(frames)), 2))
    if rng.random() < 0.5:
        frames[i], frames[j] = frames[j], frames[i]
    else:
        frames[i:j + 1] = reversed(frames[i:j + 1])
    return header, frames


def _size_lie(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    i = _pick(rng, frames)
    size = len(frames[i])
    lie = rng.choice((0, 1, 11, 12, size - 1, size + 1, size + rng.randint(2, 300),
                      rng.randrange(12, size + 1)))
    frames[i] = _set(frames[i], 2, (lie & 0xFFFF).to_bytes(2, "big"))
    return header, frames


def _size_huge(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    i = _pick(rng, frames)
    frames[i] = _set(frames[i], 2, rng.randint(0xF000, 0xFFFF).to_bytes(2, "big"))
    if rng.random() < 0.5:  # and the octets to fill it, random
        frames.insert(i + 1, rng.randbytes(rng.randint(1, 0x10000)))
    return header, frames


def _garbage(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    keep = rng.randrange(min(len(frames), 4) + 1)
    return header, [*frames[:keep], rng.randbytes(rng.randint(1, 8192))]


def _byte(rng: random.Random, frames: list[bytes], pos: int, values: tuple[int, ...]) -> list[bytes]:
    for _ in range(rng.randint(1, 3)):
        i = _pick(rng, frames)
        value = rng.choice(values) if rng.random() < 0.7 else rng.randrange(256)
        frames[i] = _set(frames[i], pos, bytes([value]))
    return frames


def _segment_type(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    return header, _byte(rng, frames, 1, (0, 1, 2, 3, 4))


def _track(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    return header, _byte(rng, frames, 5, (0, 1, 2, 15))


def _flags(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    return header, _byte(rng, frames, 0, (0x00, 0x0F, 0x03, 0x08, 0x04, 0x0E, 0x1F))


def _channel(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    """Frames past the handshake on channels past the façade's channel-max (256)."""
    channel = rng.choice((256, 257, 1000, 0x7FFF, 0xFFFF, rng.randint(256, 0xFFFF)))
    start = min(3, len(frames) - 1)  # start-ok, tune-ok, open: then the sessions
    for i in range(start, len(frames)):
        if rng.random() < 0.6:
            frames[i] = _set(frames[i], 6, channel.to_bytes(2, "big"))
    return header, frames


def _poke(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    """Payload octets set to boundary values: type codes, lengths, counts, flags."""
    for _ in range(rng.randint(1, 4)):
        i = _pick(rng, frames)
        if len(frames[i]) <= 12:
            continue
        pos = rng.randrange(12, len(frames[i]))
        value = (bytes([rng.choice(INTERESTING)]) if rng.random() < 0.6
                 else rng.choice((b"\xff\xff", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00",
                                  b"\x7f\xff\xff\xff")))
        frames[i] = _set(frames[i], pos, value)[:len(frames[i])]
    return header, frames


def _splice(rng: random.Random, frames: list[bytes], header: bytes,
            other: tuple[bytes, ...] = ()) -> tuple[bytes, list[bytes]]:
    pieces = list(other[rng.randrange(len(other)):][:rng.randint(1, 6)])
    at = rng.randrange(len(frames) + 1)
    frames[at:at] = pieces
    return header, frames


def _bad_header(rng: random.Random, frames: list[bytes], header: bytes) -> tuple[bytes, list[bytes]]:
    bad = rng.choice((b"AMQP\x00\x00\x09\x01", b"AMQP\x03\x01\x00\x00", b"AMQP\x01\x01\x00\x09",
                      b"AMQP\x00\x01\x00\x0a", b"GET / HTTP/1.1\r\n\r\n", b"\x16\x03\x01\x00",
                      rng.randbytes(8)))
    return bad, frames


def _repeat_handshake(rng: random.Random, frames: list[bytes], header: bytes
                      ) -> tuple[bytes, list[bytes]]:
    n = rng.randint(1, min(3, len(frames)))
    at = rng.randrange(n, len(frames) + 1)
    frames[at:at] = frames[:n]
    return header, frames


Mutation = Callable[[random.Random, list[bytes], bytes], tuple[bytes, list[bytes]]]
MUTATIONS: dict[str, Mutation] = {
    "bitflip": _bitflip, "truncate": _truncate, "duplicate": _duplicate, "drop": _drop,
    "reorder": _reorder, "size_lie": _size_lie, "size_huge": _size_huge,
    "garbage_after_header": _garbage, "segment_type": _segment_type, "track": _track,
    "flags": _flags, "channel_past_max": _channel, "poke": _poke, "splice": _splice,
    "bad_header": _bad_header, "repeat_handshake": _repeat_handshake,
    "partial_then_silence": _truncate,
}
"""Every mutation by name; each takes (rng, frames, header) and gives (header, frames)."""


class Mutator:
    """Fuzz cases from the recorded client streams; case ``i`` of seed ``s`` is always the
    same (its own ``random.Random((s, i))``)."""

    def __init__(self, streams: list[ClientStream], seed: int) -> None:
        self.streams = streams
        self.seed = seed
        # the 300 KB large_message stream costs time: it is drawn less often
        self.weights = [1 if len(s.header) + sum(map(len, s.frames)) > 100_000 else 6
                        for s in streams]

    def case(self, index: int) -> Case:
        rng = random.Random(f"{self.seed}/{index}")
        stream = rng.choices(self.streams, self.weights)[0]
        header, frames = stream.header, list(stream.frames)
        names = [rng.choice(sorted(MUTATIONS))]
        if rng.random() < 0.3:
            names.append(rng.choice(sorted(MUTATIONS)))
        chunks: list[bytes] = []
        for name in names:
            if not frames:  # nothing left to mutate
                break
            if name == "splice":
                other = rng.choice(self.streams)
                header, frames = _splice(rng, frames, header, other.frames)
            else:
                header, frames = MUTATIONS[name](rng, frames, header)
            if not header:  # a byte-level mutation: frames is now one blob
                header, frames = frames[0][:8], [frames[0][8:]]
        data = header + b"".join(frames)
        silent = "partial_then_silence" in names or rng.random() < 0.1
        cuts = sorted(rng.sample(range(1, len(data)), max(0, min(len(data) - 1, rng.randint(0, 6)))))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        return Case(self.seed, index, stream.name, names, chunks, silent)


# --- talking to the bridge ---------------------------------------------------------------


IP_BIND_ADDRESS_NO_PORT = getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24)  # Linux's value


def connect_from(source: str, port: int, timeout: float = 10.0) -> socket.socket:
    """A TCP connection to the loopback ``port`` from the loopback address ``source``.

    The source port is picked at connect time, knowing the destination
    (``IP_BIND_ADDRESS_NO_PORT``): a port picked at bind time can name a connection the
    bridge still holds in TIME_WAIT, which answers the SYN with a reset (hundreds of
    short connections from a few source addresses, as the fuzz and login tests make)."""
    sock = socket.socket()
    try:
        sock.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
        sock.bind((source, 0))
        sock.settimeout(timeout)
        sock.connect(("127.0.0.1", port))
    except BaseException:
        sock.close()
        raise
    return sock


def send_case(case: Case, port: int, source: str, deadline: float) -> bytes:
    """Send ``case`` on a fresh connection and return what the bridge answered until it
    closed the connection or ``deadline`` seconds passed."""
    end = time.monotonic() + deadline
    answer = bytearray()
    with connect_from(source, port) as sock:
        try:
            for chunk in case.chunks:
                sock.sendall(chunk)
            if not case.silent:
                sock.shutdown(socket.SHUT_WR)
            while (left := end - time.monotonic()) > 0:
                sock.settimeout(left)
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except OSError:  # our deadline (a timeout), or the bridge hung up first
            pass
    return bytes(answer)


def decode_answer(answer: bytes) -> list[object]:
    """What the bridge sent, decoded: its protocol header and each control or command
    (raises if it is not well-formed 0-10; a partial last frame is our deadline's doing)."""
    if not answer:
        return []
    decoder = FrameDecoder(expect_protocol_header=True)
    decoder.feed(answer)
    return [item if isinstance(item, ProtocolHeader) else getattr(item, "op", item)
            for item in decoder.assemblies(Assembler(1 << 24))]


# --- the attacks ----------------------------------------------------------------------------


@dataclass
class AttackStats:
    """What the attackers did (for the report and for assertions that they ran)."""

    counts: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, what: str, n: int = 1) -> None:
        with self.lock:
            self.counts[what] += n


PEERS = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
"""The loopback addresses the "few others" attack from (besides 127.0.0.1)."""


@dataclass
class Target:
    """The listener under attack and what the attackers may know about it."""

    port: int
    user: str
    password: str
    exchange: str
    """A façade exchange with a route (authenticated attacks publish to it)."""
    limited_exchange: str
    """A façade exchange whose route has a small ``max_message_size``."""
    limit: int
    """That route's max_message_size."""


def _quiet(fn: Callable[[], object]) -> bool:
    try:
        fn()
    except (OSError, AssertionError, TimeoutError):
        return False
    except Exception as exc:  # the client library's errors (ClientError, decode errors)
        if type(exc).__module__.startswith(("bridge.", "amqp010.")):
            return False
        raise
    return True


def _hold(socks: list[socket.socket], limit: int) -> None:
    while len(socks) > limit:
        with contextlib.suppress(OSError):
            socks.pop(0).close()


def attack_idle(target: Target, stop: threading.Event, stats: AttackStats,
                *, hold: int = 30, source: str = "127.0.0.6") -> None:
    """Connections that say nothing, and ones that send just the protocol header, kept
    open (up to ``hold`` of each at a time) until the bridge times them out."""
    socks: list[socket.socket] = []
    try:
        while not stop.is_set():
            for header in (False, True):
                def one(header: bool = header) -> None:
                    sock = connect_from(source, target.port)
                    if header:
                        sock.sendall(PROTOCOL_HEADER)
                    socks.append(sock)
                if _quiet(one):
                    stats.add("idle_header" if header else "idle_silent")
            _hold(socks, 2 * hold)
            stop.wait(0.1)
    finally:
        _hold(socks, 0)


def attack_flood(target: Target, stop: threading.Event, stats: AttackStats,
                 *, sources: tuple[str, ...] = ("127.0.0.7",), hold: int = 60) -> None:
    """Connection floods: connect, send the header, keep up to ``hold`` connections."""
    socks: list[socket.socket] = []
    i = 0
    try:
        while not stop.is_set():
            source = sources[i % len(sources)]
            i += 1

            def one(source: str = source) -> None:
                sock = connect_from(source, target.port, timeout=2)
                sock.sendall(PROTOCOL_HEADER)
                socks.append(sock)
            if _quiet(one):
                stats.add("flood_connections")
            _hold(socks, hold)
            if i % 20 == 0:
                stop.wait(0.05)
    finally:
        _hold(socks, 0)


def _raw_login(source: str, port: int, user: str, password: str) -> tuple[Connection,
                                                                          SocketTransport]:
    """A 0-10 client from ``source`` that has sent its PLAIN credentials (or was closed)."""
    sock = connect_from(source, port)
    conn = Connection(Role.CLIENT, client_config(f"amqp://{user}:{password}@127.0.0.1"))
    transport = SocketTransport(sock, conn)
    end = time.monotonic() + 10
    while (conn.state in (ConnectionState.AWAIT_HEADER, ConnectionState.AWAIT_START)
           and not transport.eof and time.monotonic() < end):
        transport.read_once(0.5)
    transport.flush()
    return conn, transport


def _wait_open(conn: Connection, transport: SocketTransport, timeout: float = 20) -> bool:
    end = time.monotonic() + timeout
    while conn.state is not ConnectionState.OPEN:
        if conn.closed or transport.eof or time.monotonic() > end:
            return False
        transport.read_once(0.2)
    return True


def attack_guessing(target: Target, stop: threading.Event, stats: AttackStats,
                    *, sources: tuple[str, ...] = PEERS, burst: int = 6) -> None:
    """Password guessing: bursts of ``burst`` logins at once from one address, unknown user
    names and wrong passwords for the real one; half of each burst is abandoned (closed
    before the answer), the other half waits for it."""
    i = 0
    while not stop.is_set():
        source = sources[i % len(sources)]
        logins: list[tuple[Connection, SocketTransport]] = []
        for _ in range(burst):
            i += 1
            user = target.user if i % 3 == 0 else f"nobody{i}"

            def one(user: str = user, i: int = i, source: str = source,
                    logins: list[tuple[Connection, SocketTransport]] = logins) -> None:
                logins.append(_raw_login(source, target.port, user, f"guess{i}"))
            _quiet(one)
        for n, (_, transport) in enumerate(logins):
            if n % 2 == 0:
                transport.sock.close()
                stats.add("guesses_abandoned")
        for n, (conn, transport) in enumerate(logins):
            if n % 2:
                end = time.monotonic() + 10
                while not conn.closed and not transport.eof and time.monotonic() < end:
                    transport.read_once(0.2)
                transport.sock.close()
                stats.add("guesses_answered")


def attack_partial_frames(target: Target, stop: threading.Event, stats: AttackStats,
                          *, hold: int = 30) -> None:
    """Before any login: the header, then the first part of a large frame, then silence."""
    socks: list[socket.socket] = []
    rng = random.Random(7)
    try:
        while not stop.is_set():
            def one() -> None:
                sock = connect_from(rng.choice(PEERS), target.port)
                frame_start = bytes([0x0F, 0x00, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0])
                sock.sendall(PROTOCOL_HEADER + frame_start + rng.randbytes(rng.randint(0, 4000)))
                socks.append(sock)
            if _quiet(one):
                stats.add("partial_frames")
            _hold(socks, hold)
            stop.wait(0.05)
    finally:
        _hold(socks, 0)


def client_from(source: str, port: int, user: str, password: str,
                timeout: float = 20.0) -> BlockingClient:
    """A logged-in :class:`BlockingClient` (session attached) from loopback ``source``."""
    sock = connect_from(source, port, timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    url = f"amqp://{user}:{password}@127.0.0.1:{port}"
    conn = Connection(Role.CLIENT, client_config(url))
    client = BlockingClient(SocketTransport(sock, conn), conn, timeout)
    try:
        client._wait(lambda: client.opened is not None, "connection.open-ok")
        client.attach()
    except BaseException:
        client.transport.close()
        raise
    return client


AUTHENTICATED = "127.0.0.8"
"""Where the attackers that log in come from."""


def _client(target: Target) -> BlockingClient:
    return client_from(AUTHENTICATED, target.port, target.user, target.password)


def attack_unfinished(target: Target, stop: threading.Event, stats: AttackStats,
                      *, channels: int = 8, size: int = 200_000) -> None:
    """An authenticated client makes the bridge hold big unfinished messages on many
    channels (sessions): every frame of each message but its last, then it waits and
    goes away (and comes back)."""
    while not stop.is_set():
        def one() -> None:
            client = _client(target)
            try:
                sessions = [client.conn.attach(f"unfinished-{n}") for n in range(channels)]
                end = time.monotonic() + 10
                while not all(s.attached for s in sessions) and time.monotonic() < end:
                    client.transport.read_once(0.2)
                for session in sessions:
                    session.message_transfer(target.exchange,
                                             [DeliveryProperties(routing_key="big")],
                                             b"u" * size)
                    frames = frames_of(client.conn.data_to_send())
                    client.transport.sock.sendall(b"".join(frames[:-1]))
                    stats.add("unfinished_messages")
                stop.wait(2.0)
            finally:
                client.transport.sock.close()
        if not _quiet(one):
            stats.add("unfinished_refused")
            stop.wait(0.2)


def frames_of(data: bytes) -> list[bytes]:
    """Whole frames of an encoded 0-10 stream without protocol header."""
    out = []
    while data:
        size = int.from_bytes(data[2:4], "big")
        out.append(data[:size])
        data = data[size:]
    return out


def attack_channels(target: Target, stop: threading.Event, stats: AttackStats) -> None:
    """Logged in, a session attached on a channel past channel-max."""
    while not stop.is_set():
        def one() -> None:
            conn, transport = _raw_login(AUTHENTICATED, target.port, target.user, target.password)
            try:
                if not _wait_open(conn, transport):
                    return
                # attach by hand: the engine would refuse a channel past the negotiated max
                frame = encode_assembly(300 + int(time.monotonic()) % 60000,
                                        SessionAttach(name=b"past-max"))
                transport.sock.sendall(frame)
                while transport.read_once(0.5) and not conn.closed:
                    pass
            finally:
                transport.sock.close()
        if _quiet(one):
            stats.add("channel_past_max")
        stop.wait(0.1)


def attack_oversized(target: Target, stop: threading.Event, stats: AttackStats) -> None:
    """Messages past the route's max_message_size, and publishes to unknown exchanges:
    each refused with an execution.exception (the client reconnects after each)."""
    i = 0
    while not stop.is_set():
        i += 1
        exchange = target.limited_exchange if i % 2 else f"no-such-exchange-{i}"
        body = b"o" * (target.limit + 1000)

        def one(exchange: str = exchange, body: bytes = body) -> None:
            with _client(target) as client:
                client.publish(body, exchange=exchange, routing_key="x")
        if not _quiet(one):  # refused, as it should be
            stats.add("oversized_refused" if i % 2 else "unknown_exchange_refused")
        stop.wait(0.05)


def attack_garbage(target: Target, stop: threading.Event, stats: AttackStats) -> None:
    """Random bytes, with and without a valid protocol header."""
    rng = random.Random(11)
    while not stop.is_set():
        def one() -> None:
            with connect_from(rng.choice(PEERS), target.port, timeout=2) as sock:
                head = PROTOCOL_HEADER if rng.random() < 0.5 else b""
                sock.sendall(head + rng.randbytes(rng.randint(1, 3000)))
                with contextlib.suppress(TimeoutError, ConnectionError):
                    while sock.recv(65536):
                        pass
        if _quiet(one):
            stats.add("garbage")
        stop.wait(0.02)


ATTACKS: dict[str, Callable[..., None]] = {
    "idle": attack_idle,
    "flood_one_address": attack_flood,
    "flood_few_addresses": lambda t, s, st: attack_flood(t, s, st, sources=PEERS, hold=160),
    "guessing": attack_guessing,
    "partial_frames": attack_partial_frames,
    "unfinished": attack_unfinished,
    "unfinished_2": attack_unfinished,
    "unfinished_3": attack_unfinished,
    "channels": attack_channels,
    "oversized": attack_oversized,
    "garbage": attack_garbage,
}
"""Every attack of the mix, by name; each runs until its ``stop`` event is set."""


def run_attacks(target: Target, stop: threading.Event, stats: AttackStats,
                errors: list[BaseException]) -> list[threading.Thread]:
    """Start every attack in its own thread (an unexpected exception lands in ``errors``)."""
    threads = []
    for name, attack in ATTACKS.items():
        def run(attack: Callable[..., None] = attack) -> None:
            try:
                attack(target, stop, stats)
            except BaseException as exc:  # reported by the caller
                errors.append(exc)
        thread = threading.Thread(target=run, name=f"attack-{name}", daemon=True)
        thread.start()
        threads.append(thread)
    return threads
