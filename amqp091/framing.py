"""AMQP 0-9-1 frames: cutting the byte stream into frames and encoding, all through pamqp.

:class:`FrameReader` buffers received bytes and yields ``(channel, frame)`` for each
whole frame, decoded by ``pamqp.frame.unmarshal``.  It reads the 7-octet frame
header itself only to know how much to wait for, and checks the size against
frame-max before buffering the payload, so a peer cannot make it hold more than
one frame-max.  Every decoding failure is a :class:`FrameError` carrying the
reply code a broker closes the connection with.

Encoding (:func:`encode_method`, :func:`encode_content`) is ``pamqp.frame.marshal``;
content bodies are split into body frames that fit frame-max.

The ``headers`` property of a content header is the one exception: it goes through
the typed codec of :mod:`amqp091.tables` in both directions (:func:`cut_headers`
takes it out of a received header payload before pamqp decodes the rest; a published
header's table is written in its place by :func:`~amqp091.fast_frames.encode_properties`),
so that header values keep their 0-9-1 field types.

The frames of every message — ``basic.deliver`` and the content header — are decoded,
and content headers encoded, by the straight-line fast paths of
:mod:`amqp091.fast_frames` (pamqp's results, octet for octet); a received payload they
do not take whole goes the general way above, which reports its errors.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

from pamqp import body as pbody
from pamqp import commands, constants
from pamqp import exceptions as pexc
from pamqp import frame as pframe
from pamqp import header as pheader
from pamqp.base import Frame

from .fast_frames import (
    decode_content_header,
    decode_fast_method,
    encode_deliver,
    encode_properties,
)
from .methods import ReplyCode
from .tables import DEFAULT_FIELD_TYPES, FieldTypes, TableError, read_table, write_table

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
_FLAGS = struct.Struct(">H")
_HEADER_FIXED = 12
"""Octets of a content-header payload before its property flags: class, weight, body size."""
_CONTENT_TYPE_FLAG, _CONTENT_ENCODING_FLAG, _HEADERS_FLAG = 1 << 15, 1 << 14, 1 << 13
_FRAME_END = constants.FRAME_END_CHAR
_CONTENT_HEAD = struct.Struct(">HxxQ")
"""A content-header payload before its property flags: class id, weight 0, body size."""

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

    def __init__(self, frame_max: int = FRAME_MIN_SIZE, *, expect_protocol_header: bool,
                 field_types: FieldTypes = DEFAULT_FIELD_TYPES) -> None:
        self.frame_max = frame_max
        self.field_types = field_types
        """The classes message-header values are decoded into (:mod:`amqp091.tables`)."""
        """Largest frame accepted (header and frame-end included)."""
        self._buf = bytearray()
        self._consumed = 0
        """Octets at the front of ``_buf`` already returned as frames, not yet dropped (a
        :meth:`frames` left before its end drops them when it is next called)."""
        self._expect_header = expect_protocol_header

    @property
    def buffered(self) -> int:
        """Octets received but not yet returned as a frame."""
        return len(self._buf) - self._consumed

    def feed(self, data: bytes) -> None:
        """Add received bytes."""
        self._buf += data

    def discard(self) -> None:
        """Drop what is buffered (the connection is over)."""
        self._buf = bytearray()
        self._consumed = 0

    def frames(self) -> Iterator[tuple[int, DecodedFrame]]:
        """Yield ``(channel, frame)`` for each whole frame buffered; raises :class:`FrameError`."""
        buf = self._buf
        # Where the previous call stopped: a caller may leave this generator after any
        # frame, and its ``finally`` is not run then in the compiled build (mypyc does not
        # finalise abandoned generators), so each yield records how far it got.
        pos = self._consumed
        try:
            while True:
                if self._expect_header or buf.startswith(constants.AMQP, pos):
                    if len(buf) - pos < 8:
                        if buf[pos:pos + 4] != constants.AMQP[:len(buf) - pos][:4]:
                            raise FrameError(ReplyCode.FRAME_ERROR, "not an AMQP protocol header")
                        return
                    _, _, protocol_header = self._decode(bytes(buf[pos:pos + 8]))
                    pos += 8
                    self._expect_header = False
                    self._consumed = pos
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
                if ftype == constants.FRAME_HEARTBEAT:
                    data = bytes(buf[pos:pos + total])
                    consumed, _, value = self._decode(data)
                    if consumed != len(data):
                        raise FrameError(ReplyCode.FRAME_ERROR, "malformed heartbeat frame")
                    pos += total
                    self._consumed = pos
                    yield channel, value
                    continue
                if buf[pos + total - 1] != constants.FRAME_END:
                    raise FrameError(ReplyCode.FRAME_ERROR, "malformed frame: no frame-end "
                                     "octet after it")
                start = pos + constants.FRAME_HEADER_SIZE
                payload = bytes(buf[start:start + size])
                pos += total
                self._consumed = pos
                # the payload straight to the pamqp class that decodes it (what
                # pamqp.frame.unmarshal does after the checks made above)
                if ftype == constants.FRAME_BODY:
                    # a body frame's payload is the octets themselves: no decoding to do
                    yield channel, pbody.ContentBody(payload)
                elif ftype == constants.FRAME_METHOD:
                    yield channel, self._method(payload)
                else:
                    yield channel, self._content_header(payload)
        finally:
            if pos:
                del buf[:pos]
            self._consumed = 0

    @staticmethod
    def _method(payload: bytes) -> Frame:
        """A method frame's payload decoded (``basic.deliver``, ``basic.publish`` and
        ``basic.ack`` by their fast paths)."""
        fast = decode_fast_method(payload)  # not "or": a pamqp frame's truth is a Python __len__
        return fast if fast is not None else decode_method(payload)

    def _content_header(self, payload: bytes) -> pheader.ContentHeader:
        """A content header's payload decoded (by its fast path when it takes it)."""
        fast = decode_content_header(payload, self.field_types)
        if fast is not None:
            return fast
        return decode_header(payload, self.field_types)

    @staticmethod
    def _decode(data: bytes) -> tuple[int, int, DecodedFrame]:
        return _unmarshal(pframe, data)  # type: ignore[no-any-return]


def decode_method(payload: bytes) -> Frame:
    """A method frame's payload decoded by its pamqp class (the general path)."""
    (index,) = _INDEX.unpack_from(payload)
    method_class = commands.INDEX_MAPPING.get(index)
    if method_class is None:
        raise FrameError(ReplyCode.NOT_IMPLEMENTED,
                         f"unknown method: class {index >> 16}, method {index & 0xFFFF}")
    method = method_class()
    _unmarshal(method, payload[4:])
    return method


def decode_header(payload: bytes, field_types: FieldTypes = DEFAULT_FIELD_TYPES
                  ) -> pheader.ContentHeader:
    """A content header's payload decoded by pamqp, but for its ``headers`` table
    (decoded by :mod:`amqp091.tables`, keeping the field types): the general path."""
    try:
        rest, table = cut_headers(payload)
        headers = None if table is None else read_table(table, field_types)[1]
    except TableError as exc:
        raise FrameError(ReplyCode.FRAME_ERROR, f"malformed message headers: {exc}") from exc
    header = pheader.ContentHeader()
    _unmarshal(header, rest)
    if headers is not None:
        header.properties.headers = headers
    return header


def _unmarshal(decoder: Any, data: bytes) -> Any:
    """``decoder.unmarshal(data)``, pamqp's decoding failures raised as the frame error a
    broker closes the connection with."""
    try:
        return decoder.unmarshal(data)
    except pexc.UnmarshalingException as exc:
        raise FrameError(ReplyCode.FRAME_ERROR, f"malformed frame: {exc}") from exc
    except (ValueError, TypeError, KeyError, IndexError, struct.error) as exc:
        raise FrameError(ReplyCode.FRAME_ERROR,
                         f"malformed frame: {type(exc).__name__}: {exc}") from exc
    except RecursionError:
        # pamqp decodes nested field tables (client-properties, method arguments)
        # recursively: a peer nesting them hundreds deep, which fits in one frame,
        # must be a frame error, not an internal fault of the host
        raise FrameError(ReplyCode.FRAME_ERROR, "malformed frame: field tables nested "
                         "too deep to decode") from None


def encode_method(channel: int, method: Frame) -> bytes:
    """One method frame (pamqp validates the fields: ``ValueError`` if one is invalid;
    ``basic.deliver`` by its fast path)."""
    if type(method) is commands.Basic.Deliver:
        fast = encode_deliver(channel, method)
        if fast is not None:
            return fast
    return pframe.marshal(method, channel)


def _property_offset(payload: bytes) -> tuple[int, int, int]:
    """(offset of the first flag word, first flag word, offset of the headers property)."""
    if len(payload) < _HEADER_FIXED + 2:
        raise TableError("content header is truncated before its property flags")
    (flags,) = _FLAGS.unpack_from(payload, _HEADER_FIXED)
    pos, word = _HEADER_FIXED, flags
    while word & 1:  # continuation flag words (none defined for basic, but allowed)
        pos += 2
        if len(payload) < pos + 2:
            raise TableError("content header property flags are truncated")
        (word,) = _FLAGS.unpack_from(payload, pos)
    pos += 2
    for flag in (_CONTENT_TYPE_FLAG, _CONTENT_ENCODING_FLAG):
        if flags & flag:
            if len(payload) <= pos:
                raise TableError("content header properties are truncated")
            pos += 1 + payload[pos]
    return _HEADER_FIXED, flags, pos


def cut_headers(payload: bytes) -> tuple[bytes, bytes | None]:
    """A content-header payload without its ``headers`` property (flag cleared) and the
    length-prefixed table cut out, or ``(payload, None)`` when it has none."""
    flags_at, flags, pos = _property_offset(payload)
    if not flags & _HEADERS_FLAG:
        return payload, None
    if len(payload) < pos + 4:
        raise TableError("content header is truncated in its headers table")
    (size,) = _INDEX.unpack_from(payload, pos)
    end = pos + 4 + size
    if end > len(payload):
        raise TableError(f"headers table of {size} octets runs past the content header")
    rest = (payload[:flags_at] + _FLAGS.pack(flags & ~_HEADERS_FLAG)
            + payload[flags_at + 2:pos] + payload[end:])
    return rest, payload[pos:end]


def encode_content(channel: int, properties: commands.Basic.Properties, body: bytes,
                   frame_max: int, field_types: FieldTypes = DEFAULT_FIELD_TYPES) -> list[bytes]:
    """The content header frame and the body frames of one message, each within
    ``frame_max`` (``ValueError`` if the properties alone do not fit, or a header
    value has no field type: :class:`~amqp091.tables.TableError`)."""
    headers = properties.headers
    table = None
    if headers is not None:
        if not isinstance(headers, dict):
            raise TableError(f"headers must be a dict, not {type(headers).__name__}")
        table = write_table(headers, field_types)
    # pamqp's ContentHeader marshalling, with the typed table as the headers property
    # (pamqp's own table codec loses types)
    payload = _CONTENT_HEAD.pack(commands.Basic.frame_id, len(body)) \
        + encode_properties(properties, table)
    out = [_HEADER.pack(constants.FRAME_HEADER, channel, len(payload)) + payload + _FRAME_END]
    if len(out[0]) > frame_max:
        raise ValueError(f"the message properties need a {len(out[0])}-octet header frame, "
                         f"over frame-max {frame_max}")
    chunk = frame_max - FRAME_OVERHEAD
    view = memoryview(body)
    pack = _HEADER.pack
    for start in range(0, len(body), chunk):
        part = view[start:start + chunk]
        # a body frame is its octets framed: nothing for pamqp to marshal
        out.append(b"".join((pack(constants.FRAME_BODY, channel, len(part)), part, _FRAME_END)))
    return out


__all__ = [
    "FRAME_MIN_SIZE",
    "FRAME_OVERHEAD",
    "PROTOCOL_HEADER",
    "DecodedFrame",
    "FrameError",
    "FrameReader",
    "cut_headers",
    "decode_header",
    "decode_method",
    "encode_content",
    "encode_method",
]
