"""AMQP 0-10 framing: protocol header, frames, segments and assemblies.

Wire layout of a frame (12-octet header, then the payload)::

    0        1        2    3    4        5        6    7    8 .. 11
    00FFffff type     size      reserved 0000trak channel   reserved
        B E b e

``B``/``E``: first/last segment of the assembly; ``b``/``e``: first/last frame of
the segment; ``size`` counts the header too.  An assembly is one control, or one
command followed (for message.transfer) by a header segment and a body segment.

Everything here is sans-IO: :class:`FrameDecoder` takes bytes in any chunking and
yields frames; :class:`Assembler` turns frames into :class:`Assembly` objects;
:func:`encode_assembly` turns an assembly into the bytes of its frames.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from .base import Command, Control, Struct
from .codec import (
    decode_command,
    decode_control,
    decode_header,
    encode_command,
    encode_control,
    encode_header,
)
from .errors import DecodeError, EncodeError, FramingError

PROTOCOL_HEADER = b"AMQP\x01\x01\x00\x0a"
"""AMQP 0-10's 8-octet protocol header: 'AMQP', class 1, instance 1, version 0-10."""
FRAME_HEADER_SIZE = 12
MAX_FRAME_SIZE = 0xFFFF
"""The largest frame the 16-bit size field allows."""
MIN_MAX_FRAME_SIZE = 4096
"""The smallest max-frame-size a peer may negotiate (spec constant)."""

_FRAME_HEADER = struct.Struct(">BBHBBHI").unpack_from
_FRAME_WORDS = struct.Struct(">HHQ").unpack_from
"""A frame header as three words: flags << 8 | segment type; size; and reserved, track,
channel, reserved (so one comparison checks track, channel and the reserved octets)."""
_TRANSFER_START = 0x0B01  # FIRST_SEGMENT | FIRST_FRAME | LAST_FRAME, COMMAND
_HEADER_MORE = 0x0302  # FIRST_FRAME | LAST_FRAME, HEADER
_HEADER_LAST = 0x0702  # LAST_SEGMENT | FIRST_FRAME | LAST_FRAME, HEADER
_BODY_LAST = 0x0703  # LAST_SEGMENT | FIRST_FRAME | LAST_FRAME, BODY
_COMMAND_TRACK_WORD = 0xFFFF0000FFFFFFFF  # the bits that must read 1 << 48 (track 1, reserved 0)
FIRST_SEGMENT = 0x08
LAST_SEGMENT = 0x04
FIRST_FRAME = 0x02
LAST_FRAME = 0x01


class SegmentType(IntEnum):
    """Segment types (spec domain segment-type)."""

    CONTROL = 0
    COMMAND = 1
    HEADER = 2
    BODY = 3


class Track(IntEnum):
    """Tracks (spec domain track): controls on 0, commands and their segments on 1."""

    CONTROL = 0
    COMMAND = 1


@dataclass(frozen=True, slots=True)
class ProtocolHeader:
    """The 8-octet protocol header a peer opened with."""

    raw: bytes

    @property
    def supported(self) -> bool:
        """True if this is AMQP 0-10."""
        return self.raw == PROTOCOL_HEADER

    @property
    def version(self) -> str:
        """The peer's protocol id, e.g. ``'AMQP 1.1 0-10'`` or ``'AMQP 0.1 0-0'``."""
        if self.raw[:4] != b"AMQP":
            return repr(self.raw)
        a, b, c, d = self.raw[4:8]
        return f"AMQP {a}.{b} {c}-{d}"

    @property
    def protocol(self) -> str:
        """The peer's protocol in words, e.g. ``'AMQP 1.0 (SASL layer)'``."""
        return describe_header(self.raw)


_AMQP_1_0_LAYERS = {0: "", 2: " (TLS layer)", 3: " (SASL layer)"}


def describe_header(raw: bytes) -> str:
    """What the first octets of a stream say about the protocol the peer speaks, in words
    an operator can act on (a TLS ClientHello, AMQP 1.0 or 0-9-1 on a 0-10 port ...)."""
    if raw[:4] == b"AMQP" and len(raw) >= 8:
        a, b, c, d = raw[4:8]
        if (a, b, c, d) == (1, 1, 0, 10):
            return "AMQP 0-10"
        if a in _AMQP_1_0_LAYERS and (b, c, d) == (1, 0, 0):
            return f"AMQP 1.0{_AMQP_1_0_LAYERS[a]}"
        if (a, b, c, d) == (0, 0, 9, 1):
            return "AMQP 0-9-1"
        if (a, b) == (1, 1) and (c, d) in ((8, 0), (9, 1), (0, 9)):
            return f"AMQP {c}-{d}"
        return f"AMQP (protocol id {a}, version {b}.{c}.{d})"
    if raw[:1] == b"\x16" and raw[1:2] == b"\x03":
        return "TLS (a ClientHello: the client uses TLS, this port does not)"
    if raw[:4] in (b"GET ", b"POST", b"HEAD", b"PUT ", b"OPTI", b"CONN"):
        return "HTTP"
    return f"not AMQP ({bytes(raw[:8])!r})"


@dataclass(slots=True)
class Frame:
    """One frame: flags, segment type, track, channel and payload."""

    flags: int
    segment_type: int
    track: int
    channel: int
    payload: bytes
    offset: int = 0
    """Stream offset of this frame's first octet (for error reports)."""

    @property
    def first_segment(self) -> bool:
        return bool(self.flags & FIRST_SEGMENT)

    @property
    def last_segment(self) -> bool:
        return bool(self.flags & LAST_SEGMENT)

    @property
    def first_frame(self) -> bool:
        return bool(self.flags & FIRST_FRAME)

    @property
    def last_frame(self) -> bool:
        return bool(self.flags & LAST_FRAME)

    def encode(self) -> bytes:
        """This frame's bytes."""
        return frame_header(self.flags, self.segment_type, self.track, self.channel,
                            len(self.payload)) + self.payload


def frame_header(flags: int, segment_type: int, track: int, channel: int, payload_len: int) -> bytes:
    """The 12-octet frame header."""
    size = payload_len + FRAME_HEADER_SIZE
    return bytes((flags, segment_type, size >> 8, size & 0xFF, 0, track,
                  channel >> 8, channel & 0xFF, 0, 0, 0, 0))


class FrameDecoder:
    """Incremental frame decoder: bytes in (any chunking), frames out.

    ``feed()`` appends bytes; iterating ``frames()`` yields each complete frame
    once and keeps only the unconsumed tail (at most one partial frame).  With
    ``expect_protocol_header`` the stream must start with the 8-octet header,
    yielded first as a :class:`ProtocolHeader`.
    """

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE, *,
                 expect_protocol_header: bool = True) -> None:
        self.max_frame_size = max_frame_size
        self._buf = b""  # joined input; decoding resumes at _pos
        self._pos = 0
        self._pending: list[bytes] = []  # fed chunks not yet joined into _buf
        self._pending_len = 0
        self._need = 8 if expect_protocol_header else FRAME_HEADER_SIZE
        self._offset = 0  # stream offset of _buf[0]
        self._need_header = expect_protocol_header
        self._failed: DecodeError | None = None

    @property
    def buffered(self) -> int:
        """Octets received but not yet returned as frames."""
        return len(self._buf) - self._pos + self._pending_len

    def discard(self) -> None:
        """Drop what is buffered (the stream is over: nothing more will be decoded)."""
        self._offset += len(self._buf)
        self._buf, self._pos, self._pending, self._pending_len = b"", 0, [], 0

    @property
    def stream_offset(self) -> int:
        """Stream offset of the next octet to decode."""
        return self._offset + self._pos

    def feed(self, data: bytes) -> None:
        """Append received bytes (joined to earlier ones only when they complete a frame)."""
        if data:
            if not self._pending_len and self._pos == len(self._buf):
                self._offset += self._pos  # nothing buffered: decode from ``data`` itself
                self._buf = bytes(data)
                self._pos = 0
            else:
                self._pending.append(bytes(data))
                self._pending_len += len(data)

    def _join(self) -> bool:
        """Join pending chunks once they complete what decoding needs next."""
        if len(self._buf) - self._pos + self._pending_len < self._need:
            return False
        self._offset += self._pos
        self._buf = b"".join([self._buf[self._pos:], *self._pending])
        self._pos = 0
        self._pending = []
        self._pending_len = 0
        return True

    def frames(self) -> Iterator[Frame | ProtocolHeader]:
        """Yield every complete frame (and the protocol header) buffered so far.

        Raises :class:`FramingError` at the first invalid frame; the decoder then
        stays failed (every later call raises the same error).
        """
        for item in self._split():
            yield item if type(item) is ProtocolHeader else Frame(*item)  # type: ignore[misc]

    def assemblies(self, assembler: Assembler) -> Iterator[Assembly | ProtocolHeader]:
        """Yield the protocol header and every assembly the buffered frames complete.

        A message.transfer whose segments each fill one frame, back to back, takes
        a fast path (:meth:`_transfer`) that gives the same assembly.
        """
        if self._failed is not None:
            raise self._failed
        add = assembler.add_parts
        while True:
            if self._pending_len and not self._join():
                return
            buf = self._buf
            pos = self._pos
            if not self._need_header and pos < len(buf) and buf[pos] == 0x0B:
                assembly = self._transfer(buf, pos, assembler)
                if assembly is not None:
                    yield assembly
                    continue
            item = self._next()
            if item is None:
                return
            if type(item) is ProtocolHeader:
                yield item
            else:
                assembly = add(*item)  # type: ignore[misc]
                if assembly is not None:
                    yield assembly

    def _transfer(self, buf: bytes, pos: int, assembler: Assembler) -> Assembly | None:
        """Decode a command and its header and/or body segments, each one whole frame, back to back.

        Returns the assembly, its frames consumed; or None, with nothing consumed or
        changed, to leave the frames to the general path (which reports any error).
        """
        limit = self.max_frame_size
        try:  # a frame header cut short raises struct.error: general path
            first, size, word = _FRAME_WORDS(buf, pos)
            if (first != _TRANSFER_START or word & _COMMAND_TRACK_WORD != 1 << 48
                    or size < FRAME_HEADER_SIZE or size > limit):
                return None
            p2 = pos + size
            second, size2, word2 = _FRAME_WORDS(buf, p2)
            if word2 != word or size2 < FRAME_HEADER_SIZE or size2 > limit:
                return None
            stop = p2 + size2
            if second == _HEADER_MORE:  # command, header, body
                third, size3, word3 = _FRAME_WORDS(buf, stop)
                if (third != _BODY_LAST or word3 != word or size3 < FRAME_HEADER_SIZE
                        or size3 > limit):
                    return None
                header_at, body_at, header_end, stop = p2, stop, stop, stop + size3
                segments = 3
            elif second == _HEADER_LAST:  # command, header
                header_at, body_at, header_end, segments = p2, 0, stop, 2
            elif second == _BODY_LAST:  # command, body
                header_at, body_at, header_end, segments = 0, p2, 0, 2
            else:
                return None
        except struct.error:
            return None
        channel = word >> 32 & 0xFFFF
        held = stop - pos - FRAME_HEADER_SIZE * segments  # what the general path would buffer
        if (stop > len(buf) or (assembler._partial and channel << 1 | 1 in assembler._partial)
                or held > assembler.max_assembly_size
                or assembler.buffered + held > assembler.max_buffered):
            return None
        try:
            op = decode_command(buf[pos + FRAME_HEADER_SIZE:p2])
            header = (decode_header(buf[header_at + FRAME_HEADER_SIZE:header_end]) if header_at
                      else ())
        except DecodeError:
            return None
        if not op.HAS_PAYLOAD:
            return None
        self._pos = stop
        self._need = FRAME_HEADER_SIZE
        return Assembly(channel, op, header,
                        buf[body_at + FRAME_HEADER_SIZE:stop] if body_at else b"",
                        self._offset + pos, segments, header_at != 0)

    def _split(self) -> Iterator[ProtocolHeader | tuple[int, int, int, int, bytes, int]]:
        if self._failed is not None:
            raise self._failed
        while (item := self._next()) is not None:
            yield item

    def _next(self) -> ProtocolHeader | tuple[int, int, int, int, bytes, int] | None:
        """Consume and return the next complete item, or None if more input is needed."""
        if self._pending_len and not self._join():
            return None
        buf = self._buf
        pos = self._pos
        avail = len(buf) - pos
        if self._need_header:
            if avail < 8:
                if avail and not buf[pos:].startswith(b"AMQP"[:avail]):
                    self._fail(pos, f"stream does not start with 'AMQP': "
                                    f"{describe_header(bytes(buf[pos:]))}")
                return None
            raw = buf[pos:pos + 8]
            if raw[:4] != b"AMQP":
                self._fail(pos, f"stream does not start with an AMQP protocol header: "
                                f"{describe_header(raw)}")
            self._pos = pos + 8
            self._need_header = False
            self._need = FRAME_HEADER_SIZE
            return ProtocolHeader(raw)
        if avail < FRAME_HEADER_SIZE:
            self._need = FRAME_HEADER_SIZE
            return None
        flags, seg, size, reserved, track, channel, reserved2 = _FRAME_HEADER(buf, pos)
        if flags & 0xF0 or seg > 3 or size < FRAME_HEADER_SIZE or size > self.max_frame_size \
                or reserved or reserved2 or track > 1:
            self._bad_header(pos, flags, seg, size, reserved, track, reserved2)
        if avail < size:
            self._need = size
            return None
        self._pos = pos + size
        self._need = FRAME_HEADER_SIZE
        return flags, seg, track, channel, buf[pos + FRAME_HEADER_SIZE:pos + size], self._offset + pos

    def _bad_header(self, pos: int, flags: int, seg: int, size: int, reserved: int, track: int,
                    reserved2: int) -> None:
        if flags & 0xF0:
            self._fail(pos, f"frame flags {flags:#04x}: unsupported frame format version")
        if seg > 3:
            self._fail(pos + 1, f"unknown segment type {seg}")
        if size < FRAME_HEADER_SIZE:
            self._fail(pos + 2, f"frame size {size} is smaller than the frame header")
        if size > self.max_frame_size:
            self._fail(pos + 2, f"frame size {size} exceeds max-frame-size {self.max_frame_size}")
        if track > 0x0F:
            self._fail(pos + 4, "reserved frame header bits are set")
        if track > 1:
            self._fail(pos + 5, f"unknown track {track}")
        self._fail(pos + 4, "reserved frame header bits are set")

    def _fail(self, pos: int, reason: str) -> None:
        self._failed = FramingError(self._offset + pos, reason)
        raise self._failed


@dataclass(slots=True)
class Assembly:
    """A complete control, or a command with its header structs and body."""

    channel: int
    op: Control | Command
    header: tuple[Struct, ...] = ()
    body: bytes = b""
    offset: int = 0
    """Stream offset of the assembly's first frame."""
    segments: int = 1
    """How many segments it arrived in (1 for a bare control or command)."""
    has_header: bool = False
    """True if a header segment was present (possibly empty)."""

    @property
    def track(self) -> int:
        return Track.CONTROL if isinstance(self.op, Control) else Track.COMMAND

    def encode(self, max_frame_size: int = MAX_FRAME_SIZE) -> bytes:
        """Frames of this assembly, with as many segments as it arrived in."""
        has_body = self.segments > 1 + self.has_header
        return encode_assembly(self.channel, self.op, self.header if self.has_header else None,
                               self.body if has_body else None, max_frame_size)

    def header_struct(self, cls: type[Any]) -> Any:
        """The header struct of type ``cls``, or None."""
        for s in self.header:
            if type(s) is cls:
                return s
        return None


class _Partial:
    """An assembly in progress."""

    __slots__ = ("segment_type", "offset", "parts", "part_offsets", "op", "header", "body",
                 "segments", "expect_first_frame", "size", "has_header")

    def __init__(self, segment_type: int, offset: int) -> None:
        self.segment_type = segment_type
        self.offset = offset
        self.parts: list[bytes] = []
        self.part_offsets: list[int] = []
        """Stream offset of each part's frame (to report errors at the right octet)."""
        self.op: Control | Command | None = None
        self.header: tuple[Struct, ...] = ()
        self.body: list[bytes] = []
        self.segments = 0
        self.expect_first_frame = True
        self.size = 0
        self.has_header = False


_CONTROL, _COMMAND, _HEADER, _BODY = 0, 1, 2, 3


class Assembler:
    """Collects frames into assemblies, one assembly in progress per channel and track.

    ``max_assembly_size`` bounds the octets one assembly may hold (header plus
    body), ``max_buffered`` the octets all unfinished assemblies hold together (a
    peer can start one on every channel and track); going past either raises
    :class:`FramingError` instead of growing memory.
    """

    def __init__(self, max_assembly_size: int = 1 << 30,
                 max_buffered: int | None = None) -> None:
        self.max_assembly_size = max_assembly_size
        self.max_buffered = max_assembly_size if max_buffered is None else max_buffered
        self.buffered = 0
        """Octets held in unfinished assemblies."""
        self._partial: dict[int, _Partial] = {}

    def add(self, frame: Frame) -> Assembly | None:
        """Take one frame; return the assembly it completes, if any."""
        return self.add_parts(frame.flags, frame.segment_type, frame.track, frame.channel,
                              frame.payload, frame.offset)

    def add_parts(self, flags: int, seg: int, track: int, channel: int, payload: bytes,
                  offset: int) -> Assembly | None:
        """:meth:`add` for a frame given by its parts (the decoder's fast path)."""
        key = channel << 1 | track
        p = self._partial.get(key)
        if p is None:
            if flags & 0x0A != 0x0A:  # FIRST_SEGMENT | FIRST_FRAME
                raise FramingError(offset, "frame continues an assembly that never started")
            if seg != track:  # controls start on track 0, commands on track 1
                raise FramingError(offset, f"an assembly on track {track} cannot start "
                                           f"with a {SegmentType(seg).name} segment")
            if flags & 0x05 == 0x05:  # the whole assembly is one frame: fast path
                try:
                    op = (decode_control if seg == _CONTROL else decode_command)(payload)
                except DecodeError as exc:
                    raise exc.shifted(offset + FRAME_HEADER_SIZE) from None
                return Assembly(channel, op, (), b"", offset, 1)
            p = _Partial(seg, offset)
            self._partial[key] = p
        elif p.expect_first_frame:
            if flags & FIRST_SEGMENT or not flags & FIRST_FRAME:
                raise FramingError(offset, "segment does not start where the previous one ended")
            if seg <= p.segment_type:
                raise FramingError(offset, f"{SegmentType(seg).name} segment out of order in assembly")
            p.segment_type = seg
        elif (flags & FIRST_FRAME or seg != p.segment_type
              or bool(flags & FIRST_SEGMENT) != (p.segments == 0)):
            raise FramingError(offset, "frame interrupts an unfinished segment")
        p.size += len(payload)
        self.buffered += len(payload)
        if p.size > self.max_assembly_size:
            self._drop(key)
            raise FramingError(offset, f"assembly exceeds {self.max_assembly_size} octets")
        if self.buffered > self.max_buffered:
            self._drop(key)
            raise FramingError(offset, f"unfinished assemblies exceed {self.max_buffered} "
                                       f"octets")
        if seg == _BODY:
            p.body.append(payload)
        else:
            p.parts.append(payload)
            p.part_offsets.append(offset)
        if not flags & LAST_FRAME:
            p.expect_first_frame = False
            return None
        p.expect_first_frame = True
        p.segments += 1
        if seg != _BODY:
            self._end_segment(p, flags, offset)
        if not flags & LAST_SEGMENT:
            return None
        del self._partial[key]
        self.buffered -= p.size
        if p.op is None:  # pragma: no cover - segment order checks prevent it
            raise FramingError(p.offset, "assembly has no control or command")
        body = p.body
        return Assembly(channel, p.op, p.header, body[0] if len(body) == 1 else b"".join(body),
                        p.offset, p.segments, p.has_header)

    def discard(self) -> None:
        """Drop every unfinished assembly (the stream is over)."""
        self._partial.clear()
        self.buffered = 0

    def _drop(self, key: int) -> None:
        self.buffered -= self._partial.pop(key).size

    def _end_segment(self, p: _Partial, flags: int, offset: int) -> None:
        parts, part_offsets = p.parts, p.part_offsets
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        p.parts, p.part_offsets = [], []
        seg = p.segment_type
        try:
            if seg == _HEADER:
                p.header = decode_header(data)
                p.has_header = True
            elif seg == _COMMAND:
                p.op = decode_command(data)
                if not flags & LAST_SEGMENT and not p.op.HAS_PAYLOAD:
                    raise FramingError(offset, f"{p.op.NAME} takes no header or body segments")
            else:
                p.op = decode_control(data)
                if not flags & LAST_SEGMENT:
                    raise FramingError(offset, f"{p.op.NAME} control is followed by more segments")
        except FramingError:
            raise
        except DecodeError as exc:
            raise exc.shifted(_stream_offset(exc.offset, parts, part_offsets) - exc.offset) from None


    @property
    def pending(self) -> int:
        """Assemblies in progress."""
        return len(self._partial)


def _stream_offset(index: int, parts: list[bytes], frame_offsets: list[int]) -> int:
    """Stream offset of octet ``index`` of a segment joined from ``parts``."""
    for part, frame_offset in zip(parts, frame_offsets, strict=True):
        if index < len(part):
            return frame_offset + FRAME_HEADER_SIZE + index
        index -= len(part)
    return frame_offsets[-1] + FRAME_HEADER_SIZE + len(parts[-1]) + index


def encode_assembly(channel: int, op: Control | Command, header: tuple[Struct, ...] | None = None,
                    body: bytes | None = None, max_frame_size: int = MAX_FRAME_SIZE) -> bytes:
    """Encode one assembly as frames no larger than ``max_frame_size``.

    For commands that carry content (``HAS_PAYLOAD``), a header segment is sent
    when ``header`` is not None and a body segment when ``body`` is not None.
    """
    if isinstance(op, Control):
        return encode_segments(channel, Track.CONTROL,
                               [(SegmentType.CONTROL, encode_control(op))], max_frame_size)
    segments: list[tuple[int, bytes]] = [(SegmentType.COMMAND, encode_command(op))]
    if header is not None or body is not None:
        if not op.HAS_PAYLOAD:
            raise EncodeError(f"{op.NAME} carries no header or body")
        if header is not None:
            segments.append((SegmentType.HEADER, encode_header(header)))
        if body is not None:
            segments.append((SegmentType.BODY, body))
    return encode_segments(channel, Track.COMMAND, segments, max_frame_size)


def encode_segments(channel: int, track: int, segments: list[tuple[int, bytes]],
                    max_frame_size: int = MAX_FRAME_SIZE) -> bytes:
    """Frame a list of ``(segment_type, payload)`` as one assembly."""
    room = max_frame_size - FRAME_HEADER_SIZE
    if not FRAME_HEADER_SIZE < max_frame_size <= MAX_FRAME_SIZE:
        raise EncodeError(f"max_frame_size {max_frame_size} is outside {FRAME_HEADER_SIZE + 1}..{MAX_FRAME_SIZE}")
    if not 0 <= channel <= 0xFFFF:
        raise EncodeError(f"channel {channel} is outside 0..65535")
    out: list[bytes] = []
    last_seg = len(segments) - 1
    for i, (seg, payload) in enumerate(segments):
        seg_flags = (FIRST_SEGMENT if i == 0 else 0) | (LAST_SEGMENT if i == last_seg else 0)
        n = len(payload)
        if n <= room:
            out.append(frame_header(seg_flags | FIRST_FRAME | LAST_FRAME, seg, track, channel, n))
            out.append(payload)
            continue
        view = memoryview(payload)
        for start in range(0, n, room):
            chunk = view[start:start + room]
            flags = seg_flags
            if start == 0:
                flags |= FIRST_FRAME
            if start + room >= n:
                flags |= LAST_FRAME
            out.append(frame_header(flags, seg, track, channel, len(chunk)))
            out.append(bytes(chunk))
    return b"".join(out)
