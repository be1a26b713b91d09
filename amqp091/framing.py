"""AMQP 0-9-1 frames: cutting the byte stream into frames and encoding, all through pamqp.

:class:`FrameReader` buffers received bytes and yields ``(channel, frame)`` for each
whole frame, decoded by ``pamqp.frame.unmarshal``.  It reads the 7-octet frame
header itself only to know how much to wait for, and checks the size against
frame-max before buffering the payload, so a peer cannot make it hold more than
one frame-max.  Every decoding failure is a :class:`FrameError` carrying the
reply code a broker closes the connection with.

Encoding (:func:`encode_method`, :func:`encode_content`) is ``pamqp.frame.marshal``;
content bodies are split into body frames that fit frame-max.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from pamqp import body as pbody
from pamqp import commands, constants
from pamqp import exceptions as pexc
from pamqp import frame as pframe
from pamqp import header as pheader
from pamqp.base import Frame

from .methods import ReplyCode

FRAME_OVERHEAD = constants.FRAME_HEADER_SIZE + 1
"""Octets of a frame that are not payload: type, channel, size (7) and frame-end (1)."""

FRAME_MIN_SIZE = constants.FRAME_MIN_SIZE
"""4096: the frame-max both peers accept before tune (and the lowest one negotiable)."""

PROTOCOL_HEADER = pheader.ProtocolHeader().marshal()
"""``AMQP\\x00\\x00\\x09\\x01``."""

FRAME_TYPES = (constants.FRAME_METHOD, constants.FRAME_HEADER, constants.FRAME_BODY,
               constants.FRAME_HEARTBEAT)

_HEADER = struct.Struct(">BHI")
_INDEX = struct.Struct(">I")

DecodedFrame = (Frame | pheader.ContentHeader | pbody.ContentBody | pheader.ProtocolHeader
                | object)
"""What :meth:`FrameReader.frames` yields: a pamqp method, content header, content body,
protocol header or ``pamqp.heartbeat.Heartbeat``."""


class FrameError(Exception):
    """The peer's bytes are not acceptable AMQP 0-9-1: close the connection with ``code``."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


class FrameReader:
    """Buffers received bytes and yields whole frames decoded by pamqp."""

    def __init__(self, frame_max: int = FRAME_MIN_SIZE, *, expect_protocol_header: bool) -> None:
        self.frame_max = frame_max
        """Largest frame accepted (header and frame-end included)."""
        self._buf = bytearray()
        self._expect_header = expect_protocol_header

    @property
    def buffered(self) -> int:
        """Octets received but not yet returned as a frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> None:
        """Add received bytes."""
        self._buf += data

    def discard(self) -> None:
        """Drop what is buffered (the connection is over)."""
        self._buf = bytearray()

    def frames(self) -> Iterator[tuple[int, DecodedFrame]]:
        """Yield ``(channel, frame)`` for each whole frame buffered; raises :class:`FrameError`."""
        buf = self._buf
        pos = 0
        try:
            while True:
                if buf[pos:pos + 4] == constants.AMQP or self._expect_header:
                    if len(buf) - pos < 8:
                        if buf[pos:pos + 4] != constants.AMQP[:len(buf) - pos][:4]:
                            raise FrameError(ReplyCode.FRAME_ERROR, "not an AMQP protocol header")
                        return
                    _, _, protocol_header = self._decode(bytes(buf[pos:pos + 8]))
                    pos += 8
                    self._expect_header = False
                    yield 0, protocol_header
                    continue
                if len(buf) - pos < constants.FRAME_HEADER_SIZE:
                    return
                ftype, channel, size = _HEADER.unpack_from(buf, pos)
                if ftype not in FRAME_TYPES:
                    raise FrameError(ReplyCode.FRAME_ERROR, f"unknown frame type {ftype}")
                total = size + FRAME_OVERHEAD
                if total > self.frame_max:
                    raise FrameError(ReplyCode.FRAME_ERROR,
                                     f"frame of {total} octets on channel {channel} is over "
                                     f"the negotiated frame-max {self.frame_max}")
                if ftype == constants.FRAME_METHOD:
                    if size < 4:
                        raise FrameError(ReplyCode.FRAME_ERROR,
                                         f"method frame of {size} octets has no method id")
                elif ftype == constants.FRAME_HEARTBEAT and size != 0:
                    raise FrameError(ReplyCode.FRAME_ERROR, "heartbeat frame with a payload")
                if len(buf) - pos < total:
                    return
                if ftype == constants.FRAME_METHOD:
                    (index,) = _INDEX.unpack_from(buf, pos + constants.FRAME_HEADER_SIZE)
                    if index not in commands.INDEX_MAPPING:
                        raise FrameError(ReplyCode.NOT_IMPLEMENTED,
                                         f"unknown method: class {index >> 16}, "
                                         f"method {index & 0xFFFF}")
                consumed, ch, value = self._decode(bytes(buf[pos:pos + total]))
                if consumed != total or ch != channel:
                    raise FrameError(ReplyCode.FRAME_ERROR, "frame boundaries do not match")
                pos += total
                yield channel, value
        finally:
            if pos:
                del buf[:pos]

    @staticmethod
    def _decode(data: bytes) -> tuple[int, int, DecodedFrame]:
        try:
            return pframe.unmarshal(data)
        except pexc.UnmarshalingException as exc:
            raise FrameError(ReplyCode.FRAME_ERROR, f"malformed frame: {exc}") from exc
        except (ValueError, TypeError, KeyError, IndexError, struct.error) as exc:
            raise FrameError(ReplyCode.FRAME_ERROR,
                             f"malformed frame: {type(exc).__name__}: {exc}") from exc


def encode_method(channel: int, method: Frame) -> bytes:
    """One method frame (pamqp validates the fields: ``ValueError`` if one is invalid)."""
    return pframe.marshal(method, channel)


def encode_content(channel: int, properties: commands.Basic.Properties, body: bytes,
                   frame_max: int) -> list[bytes]:
    """The content header frame and the body frames of one message, each within
    ``frame_max`` (``ValueError`` if the properties alone do not fit)."""
    out = [pframe.marshal(pheader.ContentHeader(0, len(body), properties), channel)]
    if len(out[0]) > frame_max:
        raise ValueError(f"the message properties need a {len(out[0])}-octet header frame, "
                         f"over frame-max {frame_max}")
    chunk = frame_max - FRAME_OVERHEAD
    view = memoryview(body)
    for start in range(0, len(body), chunk):
        out.append(pframe.marshal(pbody.ContentBody(bytes(view[start:start + chunk])), channel))
    return out


__all__ = [
    "FRAME_MIN_SIZE",
    "FRAME_OVERHEAD",
    "PROTOCOL_HEADER",
    "DecodedFrame",
    "FrameError",
    "FrameReader",
    "encode_content",
    "encode_method",
]
