"""AMQP 0-10 protocol definitions, GENERATED from amqp-0-10-qpid-errata-stripped.xml by tools/gen_amqp010.py.

Do not edit: change the generator and run ``python tools/gen_amqp010.py``.
"""

# ruff: noqa
# mypy: disable-error-code="no-any-return"
from __future__ import annotations

import struct
from enum import IntEnum
from typing import Any, ClassVar
from uuid import UUID, SafeUUID

from . import types as T
from .base import Command, Control, FieldSpec, Struct
from .errors import DecodeError

_u16 = T.u16_unpack
_u32 = T.u32_unpack
_u64 = T.u64_unpack
_i64 = struct.Struct('>q').unpack_from
_p16 = T.u16_pack
_p32 = T.u32_pack
_p64 = T.u64_pack
_pi64 = struct.Struct('>q').pack
_u128 = struct.Struct('>QQ').unpack_from
_new = object.__new__
_set = object.__setattr__  # a UUID refuses plain attribute assignment
_UUID = UUID
_UUID_UNKNOWN = SafeUUID.unknown
_DEC_MAP = T.DECODERS[0xA8]
_DEC_ARRAY = T.DECODERS[0xAA]
_DEC_STRUCT32 = T.DECODERS[0xAB]
_SHORT = (IndexError, struct.error)

MIN_MAX_FRAME_SIZE = 4096

CLASS_CODES: dict[str, int] = {
    'connection': 0x01,
    'session': 0x02,
    'execution': 0x03,
    'message': 0x04,
    'tx': 0x05,
    'dtx': 0x06,
    'exchange': 0x07,
    'queue': 0x08,
    'file': 0x09,
    'stream': 0x0a,
}
"""Class code of each spec class."""


class SegmentType(IntEnum):
    """Domain segment-type."""

    CONTROL = 0
    COMMAND = 1
    HEADER = 2
    BODY = 3


class Track(IntEnum):
    """Domain track."""

    CONTROL = 0
    COMMAND = 1


class CloseCode(IntEnum):
    """Domain connection.close-code."""

    NORMAL = 200
    CONNECTION_FORCED = 320
    INVALID_PATH = 402
    FRAMING_ERROR = 501


class DetachCode(IntEnum):
    """Domain session.detach-code."""

    NORMAL = 0
    SESSION_BUSY = 1
    TRANSPORT_BUSY = 2
    NOT_ATTACHED = 3
    UNKNOWN_IDS = 4


class ErrorCode(IntEnum):
    """Domain execution.error-code."""

    UNAUTHORIZED_ACCESS = 403
    NOT_FOUND = 404
    RESOURCE_LOCKED = 405
    PRECONDITION_FAILED = 406
    RESOURCE_DELETED = 408
    ILLEGAL_STATE = 409
    COMMAND_INVALID = 503
    RESOURCE_LIMIT_EXCEEDED = 506
    NOT_ALLOWED = 530
    ILLEGAL_ARGUMENT = 531
    NOT_IMPLEMENTED = 540
    INTERNAL_ERROR = 541
    INVALID_ARGUMENT = 542


class AcceptMode(IntEnum):
    """Domain message.accept-mode."""

    EXPLICIT = 0
    NONE = 1


class AcquireMode(IntEnum):
    """Domain message.acquire-mode."""

    PRE_ACQUIRED = 0
    NOT_ACQUIRED = 1


class RejectCode(IntEnum):
    """Domain message.reject-code."""

    UNSPECIFIED = 0
    UNROUTABLE = 1
    IMMEDIATE = 2


class DeliveryMode(IntEnum):
    """Domain message.delivery-mode."""

    NON_PERSISTENT = 1
    PERSISTENT = 2


class DeliveryPriority(IntEnum):
    """Domain message.delivery-priority."""

    LOWEST = 0
    LOWER = 1
    LOW = 2
    BELOW_AVERAGE = 3
    MEDIUM = 4
    ABOVE_AVERAGE = 5
    HIGH = 6
    HIGHER = 7
    VERY_HIGH = 8
    HIGHEST = 9


class FlowMode(IntEnum):
    """Domain message.flow-mode."""

    CREDIT = 0
    WINDOW = 1


class CreditUnit(IntEnum):
    """Domain message.credit-unit."""

    MESSAGE = 0
    BYTE = 1


class XaStatus(IntEnum):
    """Domain dtx.xa-status."""

    XA_OK = 0
    XA_RBROLLBACK = 1
    XA_RBTIMEOUT = 2
    XA_HEURHAZ = 3
    XA_HEURCOM = 4
    XA_HEURRB = 5
    XA_HEURMIX = 6
    XA_RDONLY = 7


class FileReturnCode(IntEnum):
    """Domain file.return-code."""

    CONTENT_TOO_LARGE = 311
    NO_ROUTE = 312
    NO_CONSUMERS = 313


class StreamReturnCode(IntEnum):
    """Domain stream.return-code."""

    CONTENT_TOO_LARGE = 311
    NO_ROUTE = 312
    NO_CONSUMERS = 313


class SessionHeader(Struct):
    """Struct session.header (no code, size 1, pack 1)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'session.header'
    CODE: ClassVar[int | None] = None
    SIZE_WIDTH: ClassVar[int] = 1
    PACK_WIDTH: ClassVar[int] = 1
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('sync', 'sync', 'bit', 'bit', False),
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.sync
        flags = 0
        if f0:
            flags |= 0x1
        out.append(flags)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionHeader, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos]
            pos += 1
            if flags & 0xfe:
                raise DecodeError(pos - 1, f'session.header: packing flags {flags:#x} name fields it does not have')
            self.sync = flags & 0x1 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated session.header') from None
        return self, pos

    @classmethod
    def decode_sized(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionHeader, int]:
        end = len(buf)
        if pos + 1 > end:
            raise DecodeError(pos, 'truncated session.header size')
        stop = pos + 1 + (buf[pos])
        if stop > end:
            raise DecodeError(pos, 'session.header size overruns its container')
        pos += 1
        depth += 1
        self = _new(cls)
        try:
            flags = buf[pos]
            pos += 1
            if flags & 0xfe:
                raise DecodeError(pos - 1, f'session.header: packing flags {flags:#x} name fields it does not have')
            self.sync = flags & 0x1 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated session.header') from None
        if pos != stop:
            raise DecodeError(pos, 'session.header: size does not match its fields')
        return self, stop

class CommandFragment(Struct):
    """Struct session.command-fragment (no code, size 0, pack 0)."""

    __slots__ = ('command_id', 'byte_ranges', )
    NAME: ClassVar[str] = 'session.command-fragment'
    CODE: ClassVar[int | None] = None
    SIZE_WIDTH: ClassVar[int] = 0
    PACK_WIDTH: ClassVar[int] = 0
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('command-id', 'command_id', 'sequence-no', 'sequence-no', True),
        FieldSpec('byte-ranges', 'byte_ranges', 'byte-ranges', 'byte-ranges', True),
    )

    def __init__(self, command_id: int | None = None, byte_ranges: T.ByteRanges | None = None) -> None:
        self.command_id = command_id
        self.byte_ranges = byte_ranges

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.command_id
        f1 = self.byte_ranges
        try:
            if f0 is None:
                raise TypeError('session.command-fragment.command-id is required')
            out += _p32(f0)
            if f1 is None:
                raise TypeError('session.command-fragment.byte-ranges is required')
            T.enc_byte_ranges(out, f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[CommandFragment, int]:
        end = len(buf)
        self = _new(cls)
        try:
            self.command_id = _u32(buf, pos)[0]
            pos += 4
            self.byte_ranges, pos = T.dec_byte_ranges(buf, pos)
        except _SHORT:
            raise DecodeError(pos, 'truncated session.command-fragment') from None
        return self, pos

class DeliveryProperties(Struct):
    """Struct message.delivery-properties (code 0x0401, size 4, pack 2)."""

    __slots__ = ('discard_unroutable', 'immediate', 'redelivered', 'priority', 'delivery_mode', 'ttl', 'timestamp', 'expiration', 'exchange', 'routing_key', 'resume_id', 'resume_ttl', )
    NAME: ClassVar[str] = 'message.delivery-properties'
    CODE: ClassVar[int | None] = 0x401
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('discard-unroutable', 'discard_unroutable', 'bit', 'bit', False),
        FieldSpec('immediate', 'immediate', 'bit', 'bit', False),
        FieldSpec('redelivered', 'redelivered', 'bit', 'bit', False),
        FieldSpec('priority', 'priority', 'uint8', 'delivery-priority', True),
        FieldSpec('delivery-mode', 'delivery_mode', 'uint8', 'delivery-mode', True),
        FieldSpec('ttl', 'ttl', 'uint64', 'uint64', False),
        FieldSpec('timestamp', 'timestamp', 'datetime', 'datetime', False),
        FieldSpec('expiration', 'expiration', 'datetime', 'datetime', False),
        FieldSpec('exchange', 'exchange', 'str8', 'exchange.name', False),
        FieldSpec('routing-key', 'routing_key', 'str8', 'str8', False),
        FieldSpec('resume-id', 'resume_id', 'str16', 'resume-id', False),
        FieldSpec('resume-ttl', 'resume_ttl', 'uint64', 'uint64', False),
    )

    def __init__(self, discard_unroutable: bool = False, immediate: bool = False, redelivered: bool = False, priority: int | None = None, delivery_mode: int | None = None, ttl: int | None = None, timestamp: int | None = None, expiration: int | None = None, exchange: str | None = None, routing_key: str | None = None, resume_id: str | None = None, resume_ttl: int | None = None) -> None:
        self.discard_unroutable = discard_unroutable
        self.immediate = immediate
        self.redelivered = redelivered
        self.priority = priority
        self.delivery_mode = delivery_mode
        self.ttl = ttl
        self.timestamp = timestamp
        self.expiration = expiration
        self.exchange = exchange
        self.routing_key = routing_key
        self.resume_id = resume_id
        self.resume_ttl = resume_ttl

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.discard_unroutable
        f1 = self.immediate
        f2 = self.redelivered
        f3 = self.priority
        f4 = self.delivery_mode
        f5 = self.ttl
        f6 = self.timestamp
        f7 = self.expiration
        f8 = self.exchange
        f9 = self.routing_key
        f10 = self.resume_id
        f11 = self.resume_ttl
        flags = 0
        if f0:
            flags |= 0x1
        if f1:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        if f4 is not None:
            flags |= 0x10
        if f5 is not None:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        if f7 is not None:
            flags |= 0x80
        if f8 is not None:
            flags |= 0x100
        if f9 is not None:
            flags |= 0x200
        if f10 is not None:
            flags |= 0x400
        if f11 is not None:
            flags |= 0x800
        out += flags.to_bytes(2, 'little')
        try:
            if f3 is not None:
                out.append(f3)
            if f4 is not None:
                out.append(f4)
            if f5 is not None:
                out += _p64(f5)
            if f6 is not None:
                out += _pi64(f6)
            if f7 is not None:
                out += _pi64(f7)
            if f8 is not None:
                T.enc_str8(out, f8)
            if f9 is not None:
                T.enc_str8(out, f9)
            if f10 is not None:
                T.enc_str16(out, f10)
            if f11 is not None:
                out += _p64(f11)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DeliveryProperties, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xf000:
                raise DecodeError(pos - 2, f'message.delivery-properties: packing flags {flags:#x} name fields it does not have')
            self.discard_unroutable = flags & 0x1 != 0
            self.immediate = flags & 0x2 != 0
            self.redelivered = flags & 0x4 != 0
            if flags & 0x8:
                self.priority = buf[pos]
                pos += 1
            else:
                self.priority = None
            if flags & 0x10:
                self.delivery_mode = buf[pos]
                pos += 1
            else:
                self.delivery_mode = None
            if flags & 0x20:
                self.ttl = _u64(buf, pos)[0]
                pos += 8
            else:
                self.ttl = None
            if flags & 0x40:
                self.timestamp = _i64(buf, pos)[0]
                pos += 8
            else:
                self.timestamp = None
            if flags & 0x80:
                self.expiration = _i64(buf, pos)[0]
                pos += 8
            else:
                self.expiration = None
            if flags & 0x100:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x200:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.routing_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.routing_key = None
            if flags & 0x400:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.resume_id = buf[pos + 2:e].decode()
                pos = e
            else:
                self.resume_id = None
            if flags & 0x800:
                self.resume_ttl = _u64(buf, pos)[0]
                pos += 8
            else:
                self.resume_ttl = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.delivery-properties') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.delivery-properties') from None
        return self, pos

class FragmentProperties(Struct):
    """Struct message.fragment-properties (code 0x0402, size 4, pack 2)."""

    __slots__ = ('first', 'last', 'fragment_size', )
    NAME: ClassVar[str] = 'message.fragment-properties'
    CODE: ClassVar[int | None] = 0x402
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('first', 'first', 'bit', 'bit', False),
        FieldSpec('last', 'last', 'bit', 'bit', False),
        FieldSpec('fragment-size', 'fragment_size', 'uint64', 'uint64', False),
    )

    def __init__(self, first: bool = True, last: bool = True, fragment_size: int | None = None) -> None:
        self.first = first
        self.last = last
        self.fragment_size = fragment_size

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.first
        f1 = self.last
        f2 = self.fragment_size
        flags = 0
        if f0:
            flags |= 0x1
        if f1:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f2 is not None:
                out += _p64(f2)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FragmentProperties, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'message.fragment-properties: packing flags {flags:#x} name fields it does not have')
            self.first = flags & 0x1 != 0
            self.last = flags & 0x2 != 0
            if flags & 0x4:
                self.fragment_size = _u64(buf, pos)[0]
                pos += 8
            else:
                self.fragment_size = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.fragment-properties') from None
        return self, pos

class ReplyTo(Struct):
    """Struct message.reply-to (no code, size 2, pack 2)."""

    __slots__ = ('exchange', 'routing_key', )
    NAME: ClassVar[str] = 'message.reply-to'
    CODE: ClassVar[int | None] = None
    SIZE_WIDTH: ClassVar[int] = 2
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('exchange', 'exchange', 'str8', 'exchange.name', False),
        FieldSpec('routing-key', 'routing_key', 'str8', 'str8', False),
    )

    def __init__(self, exchange: str | None = None, routing_key: str | None = None) -> None:
        self.exchange = exchange
        self.routing_key = routing_key

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.exchange
        f1 = self.routing_key
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ReplyTo, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'message.reply-to: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.routing_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.routing_key = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.reply-to') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.reply-to') from None
        return self, pos

    @classmethod
    def decode_sized(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ReplyTo, int]:
        end = len(buf)
        if pos + 2 > end:
            raise DecodeError(pos, 'truncated message.reply-to size')
        stop = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
        if stop > end:
            raise DecodeError(pos, 'message.reply-to size overruns its container')
        pos += 2
        depth += 1
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'message.reply-to: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.routing_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.routing_key = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.reply-to') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.reply-to') from None
        if pos != stop:
            raise DecodeError(pos, 'message.reply-to: size does not match its fields')
        return self, stop

class MessageProperties(Struct):
    """Struct message.message-properties (code 0x0403, size 4, pack 2)."""

    __slots__ = ('content_length', 'message_id', 'correlation_id', 'reply_to', 'content_type', 'content_encoding', 'user_id', 'app_id', 'application_headers', )
    NAME: ClassVar[str] = 'message.message-properties'
    CODE: ClassVar[int | None] = 0x403
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('content-length', 'content_length', 'uint64', 'uint64', False),
        FieldSpec('message-id', 'message_id', 'uuid', 'uuid', False),
        FieldSpec('correlation-id', 'correlation_id', 'vbin16', 'vbin16', False),
        FieldSpec('reply-to', 'reply_to', 'ReplyTo', 'reply-to', False),
        FieldSpec('content-type', 'content_type', 'str8', 'str8', False),
        FieldSpec('content-encoding', 'content_encoding', 'str8', 'str8', False),
        FieldSpec('user-id', 'user_id', 'vbin16', 'vbin16', False),
        FieldSpec('app-id', 'app_id', 'vbin16', 'vbin16', False),
        FieldSpec('application-headers', 'application_headers', 'map', 'map', False),
    )

    def __init__(self, content_length: int | None = None, message_id: UUID | None = None, correlation_id: bytes | None = None, reply_to: ReplyTo | None = None, content_type: str | None = None, content_encoding: str | None = None, user_id: bytes | None = None, app_id: bytes | None = None, application_headers: dict[str, Any] | None = None) -> None:
        self.content_length = content_length
        self.message_id = message_id
        self.correlation_id = correlation_id
        self.reply_to = reply_to
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.user_id = user_id
        self.app_id = app_id
        self.application_headers = application_headers

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.content_length
        f1 = self.message_id
        f2 = self.correlation_id
        f3 = self.reply_to
        f4 = self.content_type
        f5 = self.content_encoding
        f6 = self.user_id
        f7 = self.app_id
        f8 = self.application_headers
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        if f4 is not None:
            flags |= 0x10
        if f5 is not None:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        if f7 is not None:
            flags |= 0x80
        if f8 is not None:
            flags |= 0x100
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p64(f0)
            if f1 is not None:
                out += f1.bytes
            if f2 is not None:
                T.enc_vbin16(out, f2)
            if f3 is not None:
                f3.encode_sized(out, depth)
            if f4 is not None:
                T.enc_str8(out, f4)
            if f5 is not None:
                T.enc_str8(out, f5)
            if f6 is not None:
                T.enc_vbin16(out, f6)
            if f7 is not None:
                T.enc_vbin16(out, f7)
            if f8 is not None:
                T.encode_map(out, f8, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageProperties, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfe00:
                raise DecodeError(pos - 2, f'message.message-properties: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.content_length = _u64(buf, pos)[0]
                pos += 8
            else:
                self.content_length = None
            if flags & 0x2:
                hi, lo = _u128(buf, pos)
                pos += 16
                u = _new(_UUID)
                _set(u, 'int', hi << 64 | lo)
                _set(u, 'is_safe', _UUID_UNKNOWN)
                self.message_id = u
            else:
                self.message_id = None
            if flags & 0x4:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.correlation_id = buf[pos + 2:e]
                pos = e
            else:
                self.correlation_id = None
            if flags & 0x8:
                self.reply_to, pos = ReplyTo.decode_sized(buf, pos, depth)
            else:
                self.reply_to = None
            if flags & 0x10:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.content_type = buf[pos + 1:e].decode()
                pos = e
            else:
                self.content_type = None
            if flags & 0x20:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.content_encoding = buf[pos + 1:e].decode()
                pos = e
            else:
                self.content_encoding = None
            if flags & 0x40:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.user_id = buf[pos + 2:e]
                pos = e
            else:
                self.user_id = None
            if flags & 0x80:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.app_id = buf[pos + 2:e]
                pos = e
            else:
                self.app_id = None
            if flags & 0x100:
                self.application_headers, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.application_headers = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.message-properties') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.message-properties') from None
        return self, pos

class Acquired(Struct):
    """Struct message.acquired (code 0x0404, size 4, pack 2)."""

    __slots__ = ('transfers', )
    NAME: ClassVar[str] = 'message.acquired'
    CODE: ClassVar[int | None] = 0x404
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('transfers', 'transfers', 'sequence-set', 'session.commands', True),
    )

    def __init__(self, transfers: T.SequenceSet | None = None) -> None:
        self.transfers = transfers

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.transfers
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[Acquired, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'message.acquired: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.transfers, pos = T.dec_sequence_set(buf, pos)
            else:
                self.transfers = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.acquired') from None
        return self, pos

class MessageResumeResult(Struct):
    """Struct message.message-resume-result (code 0x0405, size 4, pack 2)."""

    __slots__ = ('offset', )
    NAME: ClassVar[str] = 'message.message-resume-result'
    CODE: ClassVar[int | None] = 0x405
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('offset', 'offset', 'uint64', 'uint64', False),
    )

    def __init__(self, offset: int | None = None) -> None:
        self.offset = offset

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.offset
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p64(f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageResumeResult, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'message.message-resume-result: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.offset = _u64(buf, pos)[0]
                pos += 8
            else:
                self.offset = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.message-resume-result') from None
        return self, pos

class XaResult(Struct):
    """Struct dtx.xa-result (code 0x0601, size 4, pack 2)."""

    __slots__ = ('status', )
    NAME: ClassVar[str] = 'dtx.xa-result'
    CODE: ClassVar[int | None] = 0x601
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('status', 'status', 'uint16', 'xa-status', True),
    )

    def __init__(self, status: int | None = None) -> None:
        self.status = status

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.status
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p16(f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[XaResult, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'dtx.xa-result: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.status = _u16(buf, pos)[0]
                pos += 2
            else:
                self.status = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.xa-result') from None
        return self, pos

class Xid(Struct):
    """Struct dtx.xid (code 0x0604, size 4, pack 2)."""

    __slots__ = ('format', 'global_id', 'branch_id', )
    NAME: ClassVar[str] = 'dtx.xid'
    CODE: ClassVar[int | None] = 0x604
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('format', 'format', 'uint32', 'uint32', True),
        FieldSpec('global-id', 'global_id', 'vbin8', 'vbin8', True),
        FieldSpec('branch-id', 'branch_id', 'vbin8', 'vbin8', True),
    )

    def __init__(self, format: int | None = None, global_id: bytes | None = None, branch_id: bytes | None = None) -> None:
        self.format = format
        self.global_id = global_id
        self.branch_id = branch_id

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.format
        f1 = self.global_id
        f2 = self.branch_id
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p32(f0)
            if f1 is not None:
                T.enc_vbin8(out, f1)
            if f2 is not None:
                T.enc_vbin8(out, f2)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[Xid, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'dtx.xid: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.format = _u32(buf, pos)[0]
                pos += 4
            else:
                self.format = None
            if flags & 0x2:
                self.global_id, pos = T.dec_vbin8(buf, pos)
            else:
                self.global_id = None
            if flags & 0x4:
                self.branch_id, pos = T.dec_vbin8(buf, pos)
            else:
                self.branch_id = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.xid') from None
        return self, pos

class GetTimeoutResult(Struct):
    """Struct dtx.get-timeout-result (code 0x0602, size 4, pack 2)."""

    __slots__ = ('timeout', )
    NAME: ClassVar[str] = 'dtx.get-timeout-result'
    CODE: ClassVar[int | None] = 0x602
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('timeout', 'timeout', 'uint32', 'uint32', True),
    )

    def __init__(self, timeout: int | None = None) -> None:
        self.timeout = timeout

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.timeout
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p32(f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[GetTimeoutResult, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'dtx.get-timeout-result: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.timeout = _u32(buf, pos)[0]
                pos += 4
            else:
                self.timeout = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.get-timeout-result') from None
        return self, pos

class RecoverResult(Struct):
    """Struct dtx.recover-result (code 0x0603, size 4, pack 2)."""

    __slots__ = ('in_doubt', )
    NAME: ClassVar[str] = 'dtx.recover-result'
    CODE: ClassVar[int | None] = 0x603
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('in-doubt', 'in_doubt', 'array', 'array', True),
    )

    def __init__(self, in_doubt: T.Array | None = None) -> None:
        self.in_doubt = in_doubt

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.in_doubt
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.encode_array(out, f0, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[RecoverResult, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'dtx.recover-result: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.in_doubt, pos = _DEC_ARRAY(buf, pos, depth)
            else:
                self.in_doubt = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.recover-result') from None
        return self, pos

class ExchangeQueryResult(Struct):
    """Struct exchange.exchange-query-result (code 0x0701, size 4, pack 2)."""

    __slots__ = ('type', 'durable', 'not_found', 'arguments', )
    NAME: ClassVar[str] = 'exchange.exchange-query-result'
    CODE: ClassVar[int | None] = 0x701
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('type', 'type', 'str8', 'str8', False),
        FieldSpec('durable', 'durable', 'bit', 'bit', False),
        FieldSpec('not-found', 'not_found', 'bit', 'bit', False),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
    )

    def __init__(self, type: str | None = None, durable: bool = False, not_found: bool = False, arguments: dict[str, Any] | None = None) -> None:
        self.type = type
        self.durable = durable
        self.not_found = not_found
        self.arguments = arguments

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.type
        f1 = self.durable
        f2 = self.not_found
        f3 = self.arguments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f3 is not None:
                T.encode_map(out, f3, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExchangeQueryResult, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'exchange.exchange-query-result: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.type = buf[pos + 1:e].decode()
                pos = e
            else:
                self.type = None
            self.durable = flags & 0x2 != 0
            self.not_found = flags & 0x4 != 0
            if flags & 0x8:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated exchange.exchange-query-result') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in exchange.exchange-query-result') from None
        return self, pos

class ExchangeBoundResult(Struct):
    """Struct exchange.exchange-bound-result (code 0x0702, size 4, pack 2)."""

    __slots__ = ('exchange_not_found', 'queue_not_found', 'queue_not_matched', 'key_not_matched', 'args_not_matched', )
    NAME: ClassVar[str] = 'exchange.exchange-bound-result'
    CODE: ClassVar[int | None] = 0x702
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('exchange-not-found', 'exchange_not_found', 'bit', 'bit', False),
        FieldSpec('queue-not-found', 'queue_not_found', 'bit', 'bit', False),
        FieldSpec('queue-not-matched', 'queue_not_matched', 'bit', 'bit', False),
        FieldSpec('key-not-matched', 'key_not_matched', 'bit', 'bit', False),
        FieldSpec('args-not-matched', 'args_not_matched', 'bit', 'bit', False),
    )

    def __init__(self, exchange_not_found: bool = False, queue_not_found: bool = False, queue_not_matched: bool = False, key_not_matched: bool = False, args_not_matched: bool = False) -> None:
        self.exchange_not_found = exchange_not_found
        self.queue_not_found = queue_not_found
        self.queue_not_matched = queue_not_matched
        self.key_not_matched = key_not_matched
        self.args_not_matched = args_not_matched

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.exchange_not_found
        f1 = self.queue_not_found
        f2 = self.queue_not_matched
        f3 = self.key_not_matched
        f4 = self.args_not_matched
        flags = 0
        if f0:
            flags |= 0x1
        if f1:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3:
            flags |= 0x8
        if f4:
            flags |= 0x10
        out += flags.to_bytes(2, 'little')

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExchangeBoundResult, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xffe0:
                raise DecodeError(pos - 2, f'exchange.exchange-bound-result: packing flags {flags:#x} name fields it does not have')
            self.exchange_not_found = flags & 0x1 != 0
            self.queue_not_found = flags & 0x2 != 0
            self.queue_not_matched = flags & 0x4 != 0
            self.key_not_matched = flags & 0x8 != 0
            self.args_not_matched = flags & 0x10 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated exchange.exchange-bound-result') from None
        return self, pos

class QueueQueryResult(Struct):
    """Struct queue.queue-query-result (code 0x0801, size 4, pack 2)."""

    __slots__ = ('queue', 'alternate_exchange', 'durable', 'exclusive', 'auto_delete', 'arguments', 'message_count', 'subscriber_count', )
    NAME: ClassVar[str] = 'queue.queue-query-result'
    CODE: ClassVar[int | None] = 0x801
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'name', True),
        FieldSpec('alternate-exchange', 'alternate_exchange', 'str8', 'exchange.name', False),
        FieldSpec('durable', 'durable', 'bit', 'bit', False),
        FieldSpec('exclusive', 'exclusive', 'bit', 'bit', False),
        FieldSpec('auto-delete', 'auto_delete', 'bit', 'bit', False),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
        FieldSpec('message-count', 'message_count', 'uint32', 'uint32', True),
        FieldSpec('subscriber-count', 'subscriber_count', 'uint32', 'uint32', True),
    )

    def __init__(self, queue: str | None = None, alternate_exchange: str | None = None, durable: bool = False, exclusive: bool = False, auto_delete: bool = False, arguments: dict[str, Any] | None = None, message_count: int | None = None, subscriber_count: int | None = None) -> None:
        self.queue = queue
        self.alternate_exchange = alternate_exchange
        self.durable = durable
        self.exclusive = exclusive
        self.auto_delete = auto_delete
        self.arguments = arguments
        self.message_count = message_count
        self.subscriber_count = subscriber_count

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        f1 = self.alternate_exchange
        f2 = self.durable
        f3 = self.exclusive
        f4 = self.auto_delete
        f5 = self.arguments
        f6 = self.message_count
        f7 = self.subscriber_count
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3:
            flags |= 0x8
        if f4:
            flags |= 0x10
        if f5 is not None:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        if f7 is not None:
            flags |= 0x80
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f5 is not None:
                T.encode_map(out, f5, depth)
            if f6 is not None:
                out += _p32(f6)
            if f7 is not None:
                out += _p32(f7)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[QueueQueryResult, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xff00:
                raise DecodeError(pos - 2, f'queue.queue-query-result: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.alternate_exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.alternate_exchange = None
            self.durable = flags & 0x4 != 0
            self.exclusive = flags & 0x8 != 0
            self.auto_delete = flags & 0x10 != 0
            if flags & 0x20:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
            if flags & 0x40:
                self.message_count = _u32(buf, pos)[0]
                pos += 4
            else:
                self.message_count = None
            if flags & 0x80:
                self.subscriber_count = _u32(buf, pos)[0]
                pos += 4
            else:
                self.subscriber_count = None
        except _SHORT:
            raise DecodeError(pos, 'truncated queue.queue-query-result') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in queue.queue-query-result') from None
        return self, pos

class FileProperties(Struct):
    """Struct file.file-properties (code 0x0901, size 4, pack 2)."""

    __slots__ = ('content_type', 'content_encoding', 'headers', 'priority', 'reply_to', 'message_id', 'filename', 'timestamp', 'cluster_id', )
    NAME: ClassVar[str] = 'file.file-properties'
    CODE: ClassVar[int | None] = 0x901
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('content-type', 'content_type', 'str8', 'str8', False),
        FieldSpec('content-encoding', 'content_encoding', 'str8', 'str8', False),
        FieldSpec('headers', 'headers', 'map', 'map', False),
        FieldSpec('priority', 'priority', 'uint8', 'uint8', False),
        FieldSpec('reply-to', 'reply_to', 'str8', 'str8', False),
        FieldSpec('message-id', 'message_id', 'str8', 'str8', False),
        FieldSpec('filename', 'filename', 'str8', 'str8', False),
        FieldSpec('timestamp', 'timestamp', 'datetime', 'datetime', False),
        FieldSpec('cluster-id', 'cluster_id', 'str8', 'str8', False),
    )

    def __init__(self, content_type: str | None = None, content_encoding: str | None = None, headers: dict[str, Any] | None = None, priority: int | None = None, reply_to: str | None = None, message_id: str | None = None, filename: str | None = None, timestamp: int | None = None, cluster_id: str | None = None) -> None:
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.headers = headers
        self.priority = priority
        self.reply_to = reply_to
        self.message_id = message_id
        self.filename = filename
        self.timestamp = timestamp
        self.cluster_id = cluster_id

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.content_type
        f1 = self.content_encoding
        f2 = self.headers
        f3 = self.priority
        f4 = self.reply_to
        f5 = self.message_id
        f6 = self.filename
        f7 = self.timestamp
        f8 = self.cluster_id
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        if f4 is not None:
            flags |= 0x10
        if f5 is not None:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        if f7 is not None:
            flags |= 0x80
        if f8 is not None:
            flags |= 0x100
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.encode_map(out, f2, depth)
            if f3 is not None:
                out.append(f3)
            if f4 is not None:
                T.enc_str8(out, f4)
            if f5 is not None:
                T.enc_str8(out, f5)
            if f6 is not None:
                T.enc_str8(out, f6)
            if f7 is not None:
                out += _pi64(f7)
            if f8 is not None:
                T.enc_str8(out, f8)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileProperties, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfe00:
                raise DecodeError(pos - 2, f'file.file-properties: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.content_type = buf[pos + 1:e].decode()
                pos = e
            else:
                self.content_type = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.content_encoding = buf[pos + 1:e].decode()
                pos = e
            else:
                self.content_encoding = None
            if flags & 0x4:
                self.headers, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.headers = None
            if flags & 0x8:
                self.priority = buf[pos]
                pos += 1
            else:
                self.priority = None
            if flags & 0x10:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.reply_to = buf[pos + 1:e].decode()
                pos = e
            else:
                self.reply_to = None
            if flags & 0x20:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.message_id = buf[pos + 1:e].decode()
                pos = e
            else:
                self.message_id = None
            if flags & 0x40:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.filename = buf[pos + 1:e].decode()
                pos = e
            else:
                self.filename = None
            if flags & 0x80:
                self.timestamp = _i64(buf, pos)[0]
                pos += 8
            else:
                self.timestamp = None
            if flags & 0x100:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.cluster_id = buf[pos + 1:e].decode()
                pos = e
            else:
                self.cluster_id = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.file-properties') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in file.file-properties') from None
        return self, pos

class StreamProperties(Struct):
    """Struct stream.stream-properties (code 0x0a01, size 4, pack 2)."""

    __slots__ = ('content_type', 'content_encoding', 'headers', 'priority', 'timestamp', )
    NAME: ClassVar[str] = 'stream.stream-properties'
    CODE: ClassVar[int | None] = 0xa01
    SIZE_WIDTH: ClassVar[int] = 4
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('content-type', 'content_type', 'str8', 'str8', False),
        FieldSpec('content-encoding', 'content_encoding', 'str8', 'str8', False),
        FieldSpec('headers', 'headers', 'map', 'map', False),
        FieldSpec('priority', 'priority', 'uint8', 'uint8', False),
        FieldSpec('timestamp', 'timestamp', 'datetime', 'datetime', False),
    )

    def __init__(self, content_type: str | None = None, content_encoding: str | None = None, headers: dict[str, Any] | None = None, priority: int | None = None, timestamp: int | None = None) -> None:
        self.content_type = content_type
        self.content_encoding = content_encoding
        self.headers = headers
        self.priority = priority
        self.timestamp = timestamp

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.content_type
        f1 = self.content_encoding
        f2 = self.headers
        f3 = self.priority
        f4 = self.timestamp
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        if f4 is not None:
            flags |= 0x10
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.encode_map(out, f2, depth)
            if f3 is not None:
                out.append(f3)
            if f4 is not None:
                out += _pi64(f4)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamProperties, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xffe0:
                raise DecodeError(pos - 2, f'stream.stream-properties: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.content_type = buf[pos + 1:e].decode()
                pos = e
            else:
                self.content_type = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.content_encoding = buf[pos + 1:e].decode()
                pos = e
            else:
                self.content_encoding = None
            if flags & 0x4:
                self.headers, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.headers = None
            if flags & 0x8:
                self.priority = buf[pos]
                pos += 1
            else:
                self.priority = None
            if flags & 0x10:
                self.timestamp = _i64(buf, pos)[0]
                pos += 8
            else:
                self.timestamp = None
        except _SHORT:
            raise DecodeError(pos, 'truncated stream.stream-properties') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in stream.stream-properties') from None
        return self, pos

class ConnectionStart(Control):
    """Control connection.start (class 0x01, code 0x01)."""

    __slots__ = ('server_properties', 'mechanisms', 'locales', )
    NAME: ClassVar[str] = 'connection.start'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('server-properties', 'server_properties', 'map', 'map', False),
        FieldSpec('mechanisms', 'mechanisms', 'array', 'str16-array', True),
        FieldSpec('locales', 'locales', 'array', 'str16-array', True),
    )

    def __init__(self, server_properties: dict[str, Any] | None = None, mechanisms: T.Array | None = None, locales: T.Array | None = None) -> None:
        self.server_properties = server_properties
        self.mechanisms = mechanisms
        self.locales = locales

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.server_properties
        f1 = self.mechanisms
        f2 = self.locales
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.encode_map(out, f0, depth)
            if f1 is not None:
                T.encode_array(out, f1, depth)
            if f2 is not None:
                T.encode_array(out, f2, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionStart, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'connection.start: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.server_properties, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.server_properties = None
            if flags & 0x2:
                self.mechanisms, pos = _DEC_ARRAY(buf, pos, depth)
            else:
                self.mechanisms = None
            if flags & 0x4:
                self.locales, pos = _DEC_ARRAY(buf, pos, depth)
            else:
                self.locales = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.start') from None
        return self, pos

class ConnectionStartOk(Control):
    """Control connection.start-ok (class 0x01, code 0x02)."""

    __slots__ = ('client_properties', 'mechanism', 'response', 'locale', )
    NAME: ClassVar[str] = 'connection.start-ok'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('client-properties', 'client_properties', 'map', 'map', False),
        FieldSpec('mechanism', 'mechanism', 'str8', 'str8', True),
        FieldSpec('response', 'response', 'vbin32', 'vbin32', True),
        FieldSpec('locale', 'locale', 'str8', 'str8', True),
    )

    def __init__(self, client_properties: dict[str, Any] | None = None, mechanism: str | None = None, response: bytes | None = None, locale: str | None = None) -> None:
        self.client_properties = client_properties
        self.mechanism = mechanism
        self.response = response
        self.locale = locale

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.client_properties
        f1 = self.mechanism
        f2 = self.response
        f3 = self.locale
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.encode_map(out, f0, depth)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.enc_vbin32(out, f2)
            if f3 is not None:
                T.enc_str8(out, f3)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionStartOk, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'connection.start-ok: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.client_properties, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.client_properties = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.mechanism = buf[pos + 1:e].decode()
                pos = e
            else:
                self.mechanism = None
            if flags & 0x4:
                self.response, pos = T.dec_vbin32(buf, pos)
            else:
                self.response = None
            if flags & 0x8:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.locale = buf[pos + 1:e].decode()
                pos = e
            else:
                self.locale = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.start-ok') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in connection.start-ok') from None
        return self, pos

class ConnectionSecure(Control):
    """Control connection.secure (class 0x01, code 0x03)."""

    __slots__ = ('challenge', )
    NAME: ClassVar[str] = 'connection.secure'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('challenge', 'challenge', 'vbin32', 'vbin32', True),
    )

    def __init__(self, challenge: bytes | None = None) -> None:
        self.challenge = challenge

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.challenge
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_vbin32(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionSecure, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'connection.secure: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.challenge, pos = T.dec_vbin32(buf, pos)
            else:
                self.challenge = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.secure') from None
        return self, pos

class ConnectionSecureOk(Control):
    """Control connection.secure-ok (class 0x01, code 0x04)."""

    __slots__ = ('response', )
    NAME: ClassVar[str] = 'connection.secure-ok'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x04
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('response', 'response', 'vbin32', 'vbin32', True),
    )

    def __init__(self, response: bytes | None = None) -> None:
        self.response = response

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.response
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_vbin32(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionSecureOk, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'connection.secure-ok: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.response, pos = T.dec_vbin32(buf, pos)
            else:
                self.response = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.secure-ok') from None
        return self, pos

class ConnectionTune(Control):
    """Control connection.tune (class 0x01, code 0x05)."""

    __slots__ = ('channel_max', 'max_frame_size', 'heartbeat_min', 'heartbeat_max', )
    NAME: ClassVar[str] = 'connection.tune'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x05
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('channel-max', 'channel_max', 'uint16', 'uint16', False),
        FieldSpec('max-frame-size', 'max_frame_size', 'uint16', 'uint16', False),
        FieldSpec('heartbeat-min', 'heartbeat_min', 'uint16', 'uint16', False),
        FieldSpec('heartbeat-max', 'heartbeat_max', 'uint16', 'uint16', False),
    )

    def __init__(self, channel_max: int | None = None, max_frame_size: int | None = None, heartbeat_min: int | None = None, heartbeat_max: int | None = None) -> None:
        self.channel_max = channel_max
        self.max_frame_size = max_frame_size
        self.heartbeat_min = heartbeat_min
        self.heartbeat_max = heartbeat_max

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.channel_max
        f1 = self.max_frame_size
        f2 = self.heartbeat_min
        f3 = self.heartbeat_max
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p16(f0)
            if f1 is not None:
                out += _p16(f1)
            if f2 is not None:
                out += _p16(f2)
            if f3 is not None:
                out += _p16(f3)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionTune, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'connection.tune: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.channel_max = _u16(buf, pos)[0]
                pos += 2
            else:
                self.channel_max = None
            if flags & 0x2:
                self.max_frame_size = _u16(buf, pos)[0]
                pos += 2
            else:
                self.max_frame_size = None
            if flags & 0x4:
                self.heartbeat_min = _u16(buf, pos)[0]
                pos += 2
            else:
                self.heartbeat_min = None
            if flags & 0x8:
                self.heartbeat_max = _u16(buf, pos)[0]
                pos += 2
            else:
                self.heartbeat_max = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.tune') from None
        return self, pos

class ConnectionTuneOk(Control):
    """Control connection.tune-ok (class 0x01, code 0x06)."""

    __slots__ = ('channel_max', 'max_frame_size', 'heartbeat', )
    NAME: ClassVar[str] = 'connection.tune-ok'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x06
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('channel-max', 'channel_max', 'uint16', 'uint16', True),
        FieldSpec('max-frame-size', 'max_frame_size', 'uint16', 'uint16', False),
        FieldSpec('heartbeat', 'heartbeat', 'uint16', 'uint16', False),
    )

    def __init__(self, channel_max: int | None = None, max_frame_size: int | None = None, heartbeat: int | None = None) -> None:
        self.channel_max = channel_max
        self.max_frame_size = max_frame_size
        self.heartbeat = heartbeat

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.channel_max
        f1 = self.max_frame_size
        f2 = self.heartbeat
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p16(f0)
            if f1 is not None:
                out += _p16(f1)
            if f2 is not None:
                out += _p16(f2)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionTuneOk, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'connection.tune-ok: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.channel_max = _u16(buf, pos)[0]
                pos += 2
            else:
                self.channel_max = None
            if flags & 0x2:
                self.max_frame_size = _u16(buf, pos)[0]
                pos += 2
            else:
                self.max_frame_size = None
            if flags & 0x4:
                self.heartbeat = _u16(buf, pos)[0]
                pos += 2
            else:
                self.heartbeat = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.tune-ok') from None
        return self, pos

class ConnectionOpen(Control):
    """Control connection.open (class 0x01, code 0x07)."""

    __slots__ = ('virtual_host', 'capabilities', 'insist', )
    NAME: ClassVar[str] = 'connection.open'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x07
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('virtual-host', 'virtual_host', 'str8', 'str8', True),
        FieldSpec('capabilities', 'capabilities', 'array', 'str16-array', False),
        FieldSpec('insist', 'insist', 'bit', 'bit', False),
    )

    def __init__(self, virtual_host: str | None = None, capabilities: T.Array | None = None, insist: bool = False) -> None:
        self.virtual_host = virtual_host
        self.capabilities = capabilities
        self.insist = insist

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.virtual_host
        f1 = self.capabilities
        f2 = self.insist
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.encode_array(out, f1, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionOpen, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'connection.open: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.virtual_host = buf[pos + 1:e].decode()
                pos = e
            else:
                self.virtual_host = None
            if flags & 0x2:
                self.capabilities, pos = _DEC_ARRAY(buf, pos, depth)
            else:
                self.capabilities = None
            self.insist = flags & 0x4 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.open') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in connection.open') from None
        return self, pos

class ConnectionOpenOk(Control):
    """Control connection.open-ok (class 0x01, code 0x08)."""

    __slots__ = ('known_hosts', )
    NAME: ClassVar[str] = 'connection.open-ok'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x08
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('known-hosts', 'known_hosts', 'array', 'amqp-host-array', False),
    )

    def __init__(self, known_hosts: T.Array | None = None) -> None:
        self.known_hosts = known_hosts

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.known_hosts
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.encode_array(out, f0, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionOpenOk, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'connection.open-ok: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.known_hosts, pos = _DEC_ARRAY(buf, pos, depth)
            else:
                self.known_hosts = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.open-ok') from None
        return self, pos

class ConnectionRedirect(Control):
    """Control connection.redirect (class 0x01, code 0x09)."""

    __slots__ = ('host', 'known_hosts', )
    NAME: ClassVar[str] = 'connection.redirect'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x09
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('host', 'host', 'str16', 'amqp-host-url', True),
        FieldSpec('known-hosts', 'known_hosts', 'array', 'amqp-host-array', False),
    )

    def __init__(self, host: str | None = None, known_hosts: T.Array | None = None) -> None:
        self.host = host
        self.known_hosts = known_hosts

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.host
        f1 = self.known_hosts
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str16(out, f0)
            if f1 is not None:
                T.encode_array(out, f1, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionRedirect, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'connection.redirect: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.host = buf[pos + 2:e].decode()
                pos = e
            else:
                self.host = None
            if flags & 0x2:
                self.known_hosts, pos = _DEC_ARRAY(buf, pos, depth)
            else:
                self.known_hosts = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.redirect') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in connection.redirect') from None
        return self, pos

class ConnectionHeartbeat(Control):
    """Control connection.heartbeat (class 0x01, code 0x0a)."""

    __slots__ = ()
    NAME: ClassVar[str] = 'connection.heartbeat'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x0a
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self) -> None:
        pass

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionHeartbeat, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated connection.heartbeat packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'connection.heartbeat has no fields but its packing flags are set')
        return cls(), pos + 2

class ConnectionClose(Control):
    """Control connection.close (class 0x01, code 0x0b)."""

    __slots__ = ('reply_code', 'reply_text', )
    NAME: ClassVar[str] = 'connection.close'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x0b
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('reply-code', 'reply_code', 'uint16', 'close-code', True),
        FieldSpec('reply-text', 'reply_text', 'str8', 'str8', False),
    )

    def __init__(self, reply_code: int | None = None, reply_text: str | None = None) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.reply_code
        f1 = self.reply_text
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p16(f0)
            if f1 is not None:
                T.enc_str8(out, f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionClose, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'connection.close: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.reply_code = _u16(buf, pos)[0]
                pos += 2
            else:
                self.reply_code = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.reply_text = buf[pos + 1:e].decode()
                pos = e
            else:
                self.reply_text = None
        except _SHORT:
            raise DecodeError(pos, 'truncated connection.close') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in connection.close') from None
        return self, pos

class ConnectionCloseOk(Control):
    """Control connection.close-ok (class 0x01, code 0x0c)."""

    __slots__ = ()
    NAME: ClassVar[str] = 'connection.close-ok'
    CLASS_CODE: ClassVar[int] = 0x01
    OP_CODE: ClassVar[int] = 0x0c
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self) -> None:
        pass

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ConnectionCloseOk, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated connection.close-ok packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'connection.close-ok has no fields but its packing flags are set')
        return cls(), pos + 2

class SessionAttach(Control):
    """Control session.attach (class 0x02, code 0x01)."""

    __slots__ = ('name', 'force', )
    NAME: ClassVar[str] = 'session.attach'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('name', 'name', 'vbin16', 'name', True),
        FieldSpec('force', 'force', 'bit', 'bit', False),
    )

    def __init__(self, name: bytes | None = None, force: bool = False) -> None:
        self.name = name
        self.force = force

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.name
        f1 = self.force
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_vbin16(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionAttach, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'session.attach: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.name = buf[pos + 2:e]
                pos = e
            else:
                self.name = None
            self.force = flags & 0x2 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated session.attach') from None
        return self, pos

class SessionAttached(Control):
    """Control session.attached (class 0x02, code 0x02)."""

    __slots__ = ('name', )
    NAME: ClassVar[str] = 'session.attached'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('name', 'name', 'vbin16', 'name', True),
    )

    def __init__(self, name: bytes | None = None) -> None:
        self.name = name

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.name
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_vbin16(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionAttached, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'session.attached: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.name = buf[pos + 2:e]
                pos = e
            else:
                self.name = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.attached') from None
        return self, pos

class SessionDetach(Control):
    """Control session.detach (class 0x02, code 0x03)."""

    __slots__ = ('name', )
    NAME: ClassVar[str] = 'session.detach'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('name', 'name', 'vbin16', 'name', True),
    )

    def __init__(self, name: bytes | None = None) -> None:
        self.name = name

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.name
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_vbin16(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionDetach, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'session.detach: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.name = buf[pos + 2:e]
                pos = e
            else:
                self.name = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.detach') from None
        return self, pos

class SessionDetached(Control):
    """Control session.detached (class 0x02, code 0x04)."""

    __slots__ = ('name', 'code', )
    NAME: ClassVar[str] = 'session.detached'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x04
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('name', 'name', 'vbin16', 'name', True),
        FieldSpec('code', 'code', 'uint8', 'detach-code', True),
    )

    def __init__(self, name: bytes | None = None, code: int | None = None) -> None:
        self.name = name
        self.code = code

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.name
        f1 = self.code
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_vbin16(out, f0)
            if f1 is not None:
                out.append(f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionDetached, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'session.detached: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.name = buf[pos + 2:e]
                pos = e
            else:
                self.name = None
            if flags & 0x2:
                self.code = buf[pos]
                pos += 1
            else:
                self.code = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.detached') from None
        return self, pos

class SessionRequestTimeout(Control):
    """Control session.request-timeout (class 0x02, code 0x05)."""

    __slots__ = ('timeout', )
    NAME: ClassVar[str] = 'session.request-timeout'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x05
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('timeout', 'timeout', 'uint32', 'uint32', False),
    )

    def __init__(self, timeout: int | None = None) -> None:
        self.timeout = timeout

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.timeout
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p32(f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionRequestTimeout, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'session.request-timeout: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.timeout = _u32(buf, pos)[0]
                pos += 4
            else:
                self.timeout = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.request-timeout') from None
        return self, pos

class SessionTimeout(Control):
    """Control session.timeout (class 0x02, code 0x06)."""

    __slots__ = ('timeout', )
    NAME: ClassVar[str] = 'session.timeout'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x06
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('timeout', 'timeout', 'uint32', 'uint32', False),
    )

    def __init__(self, timeout: int | None = None) -> None:
        self.timeout = timeout

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.timeout
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p32(f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionTimeout, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'session.timeout: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.timeout = _u32(buf, pos)[0]
                pos += 4
            else:
                self.timeout = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.timeout') from None
        return self, pos

class SessionCommandPoint(Control):
    """Control session.command-point (class 0x02, code 0x07)."""

    __slots__ = ('command_id', 'command_offset', )
    NAME: ClassVar[str] = 'session.command-point'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x07
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('command-id', 'command_id', 'sequence-no', 'sequence-no', True),
        FieldSpec('command-offset', 'command_offset', 'uint64', 'uint64', True),
    )

    def __init__(self, command_id: int | None = None, command_offset: int | None = None) -> None:
        self.command_id = command_id
        self.command_offset = command_offset

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.command_id
        f1 = self.command_offset
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p32(f0)
            if f1 is not None:
                out += _p64(f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionCommandPoint, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'session.command-point: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.command_id = _u32(buf, pos)[0]
                pos += 4
            else:
                self.command_id = None
            if flags & 0x2:
                self.command_offset = _u64(buf, pos)[0]
                pos += 8
            else:
                self.command_offset = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.command-point') from None
        return self, pos

class SessionExpected(Control):
    """Control session.expected (class 0x02, code 0x08)."""

    __slots__ = ('commands', 'fragments', )
    NAME: ClassVar[str] = 'session.expected'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x08
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('commands', 'commands', 'sequence-set', 'commands', True),
        FieldSpec('fragments', 'fragments', 'array', 'command-fragments', False),
    )

    def __init__(self, commands: T.SequenceSet | None = None, fragments: T.Array | None = None) -> None:
        self.commands = commands
        self.fragments = fragments

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.commands
        f1 = self.fragments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
            if f1 is not None:
                T.encode_array(out, f1, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionExpected, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'session.expected: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.commands, pos = T.dec_sequence_set(buf, pos)
            else:
                self.commands = None
            if flags & 0x2:
                self.fragments, pos = _DEC_ARRAY(buf, pos, depth)
            else:
                self.fragments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.expected') from None
        return self, pos

class SessionConfirmed(Control):
    """Control session.confirmed (class 0x02, code 0x09)."""

    __slots__ = ('commands', 'fragments', )
    NAME: ClassVar[str] = 'session.confirmed'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x09
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('commands', 'commands', 'sequence-set', 'commands', False),
        FieldSpec('fragments', 'fragments', 'array', 'command-fragments', False),
    )

    def __init__(self, commands: T.SequenceSet | None = None, fragments: T.Array | None = None) -> None:
        self.commands = commands
        self.fragments = fragments

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.commands
        f1 = self.fragments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
            if f1 is not None:
                T.encode_array(out, f1, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionConfirmed, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'session.confirmed: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.commands, pos = T.dec_sequence_set(buf, pos)
            else:
                self.commands = None
            if flags & 0x2:
                self.fragments, pos = _DEC_ARRAY(buf, pos, depth)
            else:
                self.fragments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.confirmed') from None
        return self, pos

class SessionCompleted(Control):
    """Control session.completed (class 0x02, code 0x0a)."""

    __slots__ = ('commands', 'timely_reply', )
    NAME: ClassVar[str] = 'session.completed'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x0a
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('commands', 'commands', 'sequence-set', 'commands', False),
        FieldSpec('timely-reply', 'timely_reply', 'bit', 'bit', False),
    )

    def __init__(self, commands: T.SequenceSet | None = None, timely_reply: bool = False) -> None:
        self.commands = commands
        self.timely_reply = timely_reply

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.commands
        f1 = self.timely_reply
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionCompleted, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'session.completed: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.commands, pos = T.dec_sequence_set(buf, pos)
            else:
                self.commands = None
            self.timely_reply = flags & 0x2 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated session.completed') from None
        return self, pos

class SessionKnownCompleted(Control):
    """Control session.known-completed (class 0x02, code 0x0b)."""

    __slots__ = ('commands', )
    NAME: ClassVar[str] = 'session.known-completed'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x0b
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('commands', 'commands', 'sequence-set', 'commands', False),
    )

    def __init__(self, commands: T.SequenceSet | None = None) -> None:
        self.commands = commands

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.commands
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionKnownCompleted, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'session.known-completed: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.commands, pos = T.dec_sequence_set(buf, pos)
            else:
                self.commands = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.known-completed') from None
        return self, pos

class SessionFlush(Control):
    """Control session.flush (class 0x02, code 0x0c)."""

    __slots__ = ('expected', 'confirmed', 'completed', )
    NAME: ClassVar[str] = 'session.flush'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x0c
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('expected', 'expected', 'bit', 'bit', False),
        FieldSpec('confirmed', 'confirmed', 'bit', 'bit', False),
        FieldSpec('completed', 'completed', 'bit', 'bit', False),
    )

    def __init__(self, expected: bool = False, confirmed: bool = False, completed: bool = False) -> None:
        self.expected = expected
        self.confirmed = confirmed
        self.completed = completed

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.expected
        f1 = self.confirmed
        f2 = self.completed
        flags = 0
        if f0:
            flags |= 0x1
        if f1:
            flags |= 0x2
        if f2:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionFlush, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'session.flush: packing flags {flags:#x} name fields it does not have')
            self.expected = flags & 0x1 != 0
            self.confirmed = flags & 0x2 != 0
            self.completed = flags & 0x4 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated session.flush') from None
        return self, pos

class SessionGap(Control):
    """Control session.gap (class 0x02, code 0x0d)."""

    __slots__ = ('commands', )
    NAME: ClassVar[str] = 'session.gap'
    CLASS_CODE: ClassVar[int] = 0x02
    OP_CODE: ClassVar[int] = 0x0d
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('commands', 'commands', 'sequence-set', 'commands', False),
    )

    def __init__(self, commands: T.SequenceSet | None = None) -> None:
        self.commands = commands

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.commands
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[SessionGap, int]:
        end = len(buf)
        self = _new(cls)
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'session.gap: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.commands, pos = T.dec_sequence_set(buf, pos)
            else:
                self.commands = None
        except _SHORT:
            raise DecodeError(pos, 'truncated session.gap') from None
        return self, pos

class ExecutionSync(Command):
    """Command execution.sync (class 0x03, code 0x01)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'execution.sync'
    CLASS_CODE: ClassVar[int] = 0x03
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExecutionSync, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated execution.sync packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'execution.sync has no fields but its packing flags are set')
        return cls(), pos + 2

class ExecutionResult(Command):
    """Command execution.result (class 0x03, code 0x02)."""

    __slots__ = ('command_id', 'value', 'sync', )
    NAME: ClassVar[str] = 'execution.result'
    CLASS_CODE: ClassVar[int] = 0x03
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('command-id', 'command_id', 'sequence-no', 'sequence-no', True),
        FieldSpec('value', 'value', 'struct32', 'struct32', False),
    )

    def __init__(self, command_id: int | None = None, value: Struct | None = None, sync: bool = False) -> None:
        self.command_id = command_id
        self.value = value
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.command_id
        f1 = self.value
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p32(f0)
            if f1 is not None:
                T.encode_struct32(out, f1, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExecutionResult, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'execution.result: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.command_id = _u32(buf, pos)[0]
                pos += 4
            else:
                self.command_id = None
            if flags & 0x2:
                self.value, pos = _DEC_STRUCT32(buf, pos, depth)
            else:
                self.value = None
        except _SHORT:
            raise DecodeError(pos, 'truncated execution.result') from None
        return self, pos

class ExecutionException(Command):
    """Command execution.exception (class 0x03, code 0x03)."""

    __slots__ = ('error_code', 'command_id', 'class_code', 'command_code', 'field_index', 'description', 'error_info', 'sync', )
    NAME: ClassVar[str] = 'execution.exception'
    CLASS_CODE: ClassVar[int] = 0x03
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('error-code', 'error_code', 'uint16', 'error-code', True),
        FieldSpec('command-id', 'command_id', 'sequence-no', 'sequence-no', False),
        FieldSpec('class-code', 'class_code', 'uint8', 'uint8', False),
        FieldSpec('command-code', 'command_code', 'uint8', 'uint8', False),
        FieldSpec('field-index', 'field_index', 'uint8', 'uint8', False),
        FieldSpec('description', 'description', 'str16', 'str16', False),
        FieldSpec('error-info', 'error_info', 'map', 'map', False),
    )

    def __init__(self, error_code: int | None = None, command_id: int | None = None, class_code: int | None = None, command_code: int | None = None, field_index: int | None = None, description: str | None = None, error_info: dict[str, Any] | None = None, sync: bool = False) -> None:
        self.error_code = error_code
        self.command_id = command_id
        self.class_code = class_code
        self.command_code = command_code
        self.field_index = field_index
        self.description = description
        self.error_info = error_info
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.error_code
        f1 = self.command_id
        f2 = self.class_code
        f3 = self.command_code
        f4 = self.field_index
        f5 = self.description
        f6 = self.error_info
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        if f4 is not None:
            flags |= 0x10
        if f5 is not None:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p16(f0)
            if f1 is not None:
                out += _p32(f1)
            if f2 is not None:
                out.append(f2)
            if f3 is not None:
                out.append(f3)
            if f4 is not None:
                out.append(f4)
            if f5 is not None:
                T.enc_str16(out, f5)
            if f6 is not None:
                T.encode_map(out, f6, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExecutionException, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xff80:
                raise DecodeError(pos - 2, f'execution.exception: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.error_code = _u16(buf, pos)[0]
                pos += 2
            else:
                self.error_code = None
            if flags & 0x2:
                self.command_id = _u32(buf, pos)[0]
                pos += 4
            else:
                self.command_id = None
            if flags & 0x4:
                self.class_code = buf[pos]
                pos += 1
            else:
                self.class_code = None
            if flags & 0x8:
                self.command_code = buf[pos]
                pos += 1
            else:
                self.command_code = None
            if flags & 0x10:
                self.field_index = buf[pos]
                pos += 1
            else:
                self.field_index = None
            if flags & 0x20:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.description = buf[pos + 2:e].decode()
                pos = e
            else:
                self.description = None
            if flags & 0x40:
                self.error_info, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.error_info = None
        except _SHORT:
            raise DecodeError(pos, 'truncated execution.exception') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in execution.exception') from None
        return self, pos

class MessageTransfer(Command):
    """Command message.transfer (class 0x04, code 0x01)."""

    __slots__ = ('destination', 'accept_mode', 'acquire_mode', 'sync', )
    NAME: ClassVar[str] = 'message.transfer'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    HAS_PAYLOAD: ClassVar[bool] = True
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('destination', 'destination', 'str8', 'destination', False),
        FieldSpec('accept-mode', 'accept_mode', 'uint8', 'accept-mode', True),
        FieldSpec('acquire-mode', 'acquire_mode', 'uint8', 'acquire-mode', True),
    )

    def __init__(self, destination: str | None = None, accept_mode: int | None = None, acquire_mode: int | None = None, sync: bool = False) -> None:
        self.destination = destination
        self.accept_mode = accept_mode
        self.acquire_mode = acquire_mode
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.destination
        f1 = self.accept_mode
        f2 = self.acquire_mode
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                out.append(f1)
            if f2 is not None:
                out.append(f2)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageTransfer, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'message.transfer: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.destination = buf[pos + 1:e].decode()
                pos = e
            else:
                self.destination = None
            if flags & 0x2:
                self.accept_mode = buf[pos]
                pos += 1
            else:
                self.accept_mode = None
            if flags & 0x4:
                self.acquire_mode = buf[pos]
                pos += 1
            else:
                self.acquire_mode = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.transfer') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.transfer') from None
        return self, pos

class MessageAccept(Command):
    """Command message.accept (class 0x04, code 0x02)."""

    __slots__ = ('transfers', 'sync', )
    NAME: ClassVar[str] = 'message.accept'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('transfers', 'transfers', 'sequence-set', 'session.commands', True),
    )

    def __init__(self, transfers: T.SequenceSet | None = None, sync: bool = False) -> None:
        self.transfers = transfers
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.transfers
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageAccept, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'message.accept: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.transfers, pos = T.dec_sequence_set(buf, pos)
            else:
                self.transfers = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.accept') from None
        return self, pos

class MessageReject(Command):
    """Command message.reject (class 0x04, code 0x03)."""

    __slots__ = ('transfers', 'code', 'text', 'sync', )
    NAME: ClassVar[str] = 'message.reject'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('transfers', 'transfers', 'sequence-set', 'session.commands', True),
        FieldSpec('code', 'code', 'uint16', 'reject-code', True),
        FieldSpec('text', 'text', 'str8', 'str8', False),
    )

    def __init__(self, transfers: T.SequenceSet | None = None, code: int | None = None, text: str | None = None, sync: bool = False) -> None:
        self.transfers = transfers
        self.code = code
        self.text = text
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.transfers
        f1 = self.code
        f2 = self.text
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
            if f1 is not None:
                out += _p16(f1)
            if f2 is not None:
                T.enc_str8(out, f2)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageReject, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'message.reject: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.transfers, pos = T.dec_sequence_set(buf, pos)
            else:
                self.transfers = None
            if flags & 0x2:
                self.code = _u16(buf, pos)[0]
                pos += 2
            else:
                self.code = None
            if flags & 0x4:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.text = buf[pos + 1:e].decode()
                pos = e
            else:
                self.text = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.reject') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.reject') from None
        return self, pos

class MessageRelease(Command):
    """Command message.release (class 0x04, code 0x04)."""

    __slots__ = ('transfers', 'set_redelivered', 'sync', )
    NAME: ClassVar[str] = 'message.release'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x04
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('transfers', 'transfers', 'sequence-set', 'session.commands', True),
        FieldSpec('set-redelivered', 'set_redelivered', 'bit', 'bit', False),
    )

    def __init__(self, transfers: T.SequenceSet | None = None, set_redelivered: bool = False, sync: bool = False) -> None:
        self.transfers = transfers
        self.set_redelivered = set_redelivered
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.transfers
        f1 = self.set_redelivered
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageRelease, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'message.release: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.transfers, pos = T.dec_sequence_set(buf, pos)
            else:
                self.transfers = None
            self.set_redelivered = flags & 0x2 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated message.release') from None
        return self, pos

class MessageAcquire(Command):
    """Command message.acquire (class 0x04, code 0x05)."""

    __slots__ = ('transfers', 'sync', )
    NAME: ClassVar[str] = 'message.acquire'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x05
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('transfers', 'transfers', 'sequence-set', 'session.commands', True),
    )

    def __init__(self, transfers: T.SequenceSet | None = None, sync: bool = False) -> None:
        self.transfers = transfers
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.transfers
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_sequence_set(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageAcquire, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'message.acquire: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.transfers, pos = T.dec_sequence_set(buf, pos)
            else:
                self.transfers = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.acquire') from None
        return self, pos

class MessageResume(Command):
    """Command message.resume (class 0x04, code 0x06)."""

    __slots__ = ('destination', 'resume_id', 'sync', )
    NAME: ClassVar[str] = 'message.resume'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x06
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('destination', 'destination', 'str8', 'destination', False),
        FieldSpec('resume-id', 'resume_id', 'str16', 'resume-id', True),
    )

    def __init__(self, destination: str | None = None, resume_id: str | None = None, sync: bool = False) -> None:
        self.destination = destination
        self.resume_id = resume_id
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.destination
        f1 = self.resume_id
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str16(out, f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageResume, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'message.resume: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.destination = buf[pos + 1:e].decode()
                pos = e
            else:
                self.destination = None
            if flags & 0x2:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.resume_id = buf[pos + 2:e].decode()
                pos = e
            else:
                self.resume_id = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.resume') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.resume') from None
        return self, pos

class MessageSubscribe(Command):
    """Command message.subscribe (class 0x04, code 0x07)."""

    __slots__ = ('queue', 'destination', 'accept_mode', 'acquire_mode', 'exclusive', 'resume_id', 'resume_ttl', 'arguments', 'sync', )
    NAME: ClassVar[str] = 'message.subscribe'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x07
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'queue.name', True),
        FieldSpec('destination', 'destination', 'str8', 'destination', False),
        FieldSpec('accept-mode', 'accept_mode', 'uint8', 'accept-mode', True),
        FieldSpec('acquire-mode', 'acquire_mode', 'uint8', 'acquire-mode', True),
        FieldSpec('exclusive', 'exclusive', 'bit', 'bit', False),
        FieldSpec('resume-id', 'resume_id', 'str16', 'resume-id', False),
        FieldSpec('resume-ttl', 'resume_ttl', 'uint64', 'uint64', False),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
    )

    def __init__(self, queue: str | None = None, destination: str | None = None, accept_mode: int | None = None, acquire_mode: int | None = None, exclusive: bool = False, resume_id: str | None = None, resume_ttl: int | None = None, arguments: dict[str, Any] | None = None, sync: bool = False) -> None:
        self.queue = queue
        self.destination = destination
        self.accept_mode = accept_mode
        self.acquire_mode = acquire_mode
        self.exclusive = exclusive
        self.resume_id = resume_id
        self.resume_ttl = resume_ttl
        self.arguments = arguments
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        f1 = self.destination
        f2 = self.accept_mode
        f3 = self.acquire_mode
        f4 = self.exclusive
        f5 = self.resume_id
        f6 = self.resume_ttl
        f7 = self.arguments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        if f4:
            flags |= 0x10
        if f5 is not None:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        if f7 is not None:
            flags |= 0x80
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                out.append(f2)
            if f3 is not None:
                out.append(f3)
            if f5 is not None:
                T.enc_str16(out, f5)
            if f6 is not None:
                out += _p64(f6)
            if f7 is not None:
                T.encode_map(out, f7, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageSubscribe, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xff00:
                raise DecodeError(pos - 2, f'message.subscribe: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.destination = buf[pos + 1:e].decode()
                pos = e
            else:
                self.destination = None
            if flags & 0x4:
                self.accept_mode = buf[pos]
                pos += 1
            else:
                self.accept_mode = None
            if flags & 0x8:
                self.acquire_mode = buf[pos]
                pos += 1
            else:
                self.acquire_mode = None
            self.exclusive = flags & 0x10 != 0
            if flags & 0x20:
                e = pos + 2 + (buf[pos] << 8 | buf[pos + 1])
                if e > end:
                    raise IndexError
                self.resume_id = buf[pos + 2:e].decode()
                pos = e
            else:
                self.resume_id = None
            if flags & 0x40:
                self.resume_ttl = _u64(buf, pos)[0]
                pos += 8
            else:
                self.resume_ttl = None
            if flags & 0x80:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.subscribe') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.subscribe') from None
        return self, pos

class MessageCancel(Command):
    """Command message.cancel (class 0x04, code 0x08)."""

    __slots__ = ('destination', 'sync', )
    NAME: ClassVar[str] = 'message.cancel'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x08
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('destination', 'destination', 'str8', 'destination', True),
    )

    def __init__(self, destination: str | None = None, sync: bool = False) -> None:
        self.destination = destination
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.destination
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageCancel, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'message.cancel: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.destination = buf[pos + 1:e].decode()
                pos = e
            else:
                self.destination = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.cancel') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.cancel') from None
        return self, pos

class MessageSetFlowMode(Command):
    """Command message.set-flow-mode (class 0x04, code 0x09)."""

    __slots__ = ('destination', 'flow_mode', 'sync', )
    NAME: ClassVar[str] = 'message.set-flow-mode'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x09
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('destination', 'destination', 'str8', 'destination', False),
        FieldSpec('flow-mode', 'flow_mode', 'uint8', 'flow-mode', True),
    )

    def __init__(self, destination: str | None = None, flow_mode: int | None = None, sync: bool = False) -> None:
        self.destination = destination
        self.flow_mode = flow_mode
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.destination
        f1 = self.flow_mode
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                out.append(f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageSetFlowMode, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'message.set-flow-mode: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.destination = buf[pos + 1:e].decode()
                pos = e
            else:
                self.destination = None
            if flags & 0x2:
                self.flow_mode = buf[pos]
                pos += 1
            else:
                self.flow_mode = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.set-flow-mode') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.set-flow-mode') from None
        return self, pos

class MessageFlow(Command):
    """Command message.flow (class 0x04, code 0x0a)."""

    __slots__ = ('destination', 'unit', 'value', 'sync', )
    NAME: ClassVar[str] = 'message.flow'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x0a
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('destination', 'destination', 'str8', 'destination', False),
        FieldSpec('unit', 'unit', 'uint8', 'credit-unit', True),
        FieldSpec('value', 'value', 'uint32', 'uint32', False),
    )

    def __init__(self, destination: str | None = None, unit: int | None = None, value: int | None = None, sync: bool = False) -> None:
        self.destination = destination
        self.unit = unit
        self.value = value
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.destination
        f1 = self.unit
        f2 = self.value
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                out.append(f1)
            if f2 is not None:
                out += _p32(f2)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageFlow, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'message.flow: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.destination = buf[pos + 1:e].decode()
                pos = e
            else:
                self.destination = None
            if flags & 0x2:
                self.unit = buf[pos]
                pos += 1
            else:
                self.unit = None
            if flags & 0x4:
                self.value = _u32(buf, pos)[0]
                pos += 4
            else:
                self.value = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.flow') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.flow') from None
        return self, pos

class MessageFlush(Command):
    """Command message.flush (class 0x04, code 0x0b)."""

    __slots__ = ('destination', 'sync', )
    NAME: ClassVar[str] = 'message.flush'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x0b
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('destination', 'destination', 'str8', 'destination', False),
    )

    def __init__(self, destination: str | None = None, sync: bool = False) -> None:
        self.destination = destination
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.destination
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageFlush, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'message.flush: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.destination = buf[pos + 1:e].decode()
                pos = e
            else:
                self.destination = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.flush') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.flush') from None
        return self, pos

class MessageStop(Command):
    """Command message.stop (class 0x04, code 0x0c)."""

    __slots__ = ('destination', 'sync', )
    NAME: ClassVar[str] = 'message.stop'
    CLASS_CODE: ClassVar[int] = 0x04
    OP_CODE: ClassVar[int] = 0x0c
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('destination', 'destination', 'str8', 'destination', False),
    )

    def __init__(self, destination: str | None = None, sync: bool = False) -> None:
        self.destination = destination
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.destination
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[MessageStop, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'message.stop: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.destination = buf[pos + 1:e].decode()
                pos = e
            else:
                self.destination = None
        except _SHORT:
            raise DecodeError(pos, 'truncated message.stop') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in message.stop') from None
        return self, pos

class TxSelect(Command):
    """Command tx.select (class 0x05, code 0x01)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'tx.select'
    CLASS_CODE: ClassVar[int] = 0x05
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[TxSelect, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated tx.select packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'tx.select has no fields but its packing flags are set')
        return cls(), pos + 2

class TxCommit(Command):
    """Command tx.commit (class 0x05, code 0x02)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'tx.commit'
    CLASS_CODE: ClassVar[int] = 0x05
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[TxCommit, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated tx.commit packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'tx.commit has no fields but its packing flags are set')
        return cls(), pos + 2

class TxRollback(Command):
    """Command tx.rollback (class 0x05, code 0x03)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'tx.rollback'
    CLASS_CODE: ClassVar[int] = 0x05
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[TxRollback, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated tx.rollback packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'tx.rollback has no fields but its packing flags are set')
        return cls(), pos + 2

class DtxSelect(Command):
    """Command dtx.select (class 0x06, code 0x01)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'dtx.select'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxSelect, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated dtx.select packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'dtx.select has no fields but its packing flags are set')
        return cls(), pos + 2

class DtxStart(Command):
    """Command dtx.start (class 0x06, code 0x02)."""

    __slots__ = ('xid', 'join', 'resume', 'sync', )
    NAME: ClassVar[str] = 'dtx.start'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('xid', 'xid', 'Xid', 'xid', True),
        FieldSpec('join', 'join', 'bit', 'bit', False),
        FieldSpec('resume', 'resume', 'bit', 'bit', False),
    )

    def __init__(self, xid: Xid | None = None, join: bool = False, resume: bool = False, sync: bool = False) -> None:
        self.xid = xid
        self.join = join
        self.resume = resume
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.xid
        f1 = self.join
        f2 = self.resume
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        if f2:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                f0.encode_sized(out, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxStart, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'dtx.start: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.xid, pos = Xid.decode_sized(buf, pos, depth)
            else:
                self.xid = None
            self.join = flags & 0x2 != 0
            self.resume = flags & 0x4 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.start') from None
        return self, pos

class DtxEnd(Command):
    """Command dtx.end (class 0x06, code 0x03)."""

    __slots__ = ('xid', 'fail', 'suspend', 'sync', )
    NAME: ClassVar[str] = 'dtx.end'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('xid', 'xid', 'Xid', 'xid', True),
        FieldSpec('fail', 'fail', 'bit', 'bit', False),
        FieldSpec('suspend', 'suspend', 'bit', 'bit', False),
    )

    def __init__(self, xid: Xid | None = None, fail: bool = False, suspend: bool = False, sync: bool = False) -> None:
        self.xid = xid
        self.fail = fail
        self.suspend = suspend
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.xid
        f1 = self.fail
        f2 = self.suspend
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        if f2:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                f0.encode_sized(out, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxEnd, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'dtx.end: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.xid, pos = Xid.decode_sized(buf, pos, depth)
            else:
                self.xid = None
            self.fail = flags & 0x2 != 0
            self.suspend = flags & 0x4 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.end') from None
        return self, pos

class DtxCommit(Command):
    """Command dtx.commit (class 0x06, code 0x04)."""

    __slots__ = ('xid', 'one_phase', 'sync', )
    NAME: ClassVar[str] = 'dtx.commit'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x04
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('xid', 'xid', 'Xid', 'xid', True),
        FieldSpec('one-phase', 'one_phase', 'bit', 'bit', False),
    )

    def __init__(self, xid: Xid | None = None, one_phase: bool = False, sync: bool = False) -> None:
        self.xid = xid
        self.one_phase = one_phase
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.xid
        f1 = self.one_phase
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                f0.encode_sized(out, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxCommit, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'dtx.commit: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.xid, pos = Xid.decode_sized(buf, pos, depth)
            else:
                self.xid = None
            self.one_phase = flags & 0x2 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.commit') from None
        return self, pos

class DtxForget(Command):
    """Command dtx.forget (class 0x06, code 0x05)."""

    __slots__ = ('xid', 'sync', )
    NAME: ClassVar[str] = 'dtx.forget'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x05
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('xid', 'xid', 'Xid', 'xid', True),
    )

    def __init__(self, xid: Xid | None = None, sync: bool = False) -> None:
        self.xid = xid
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.xid
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                f0.encode_sized(out, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxForget, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'dtx.forget: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.xid, pos = Xid.decode_sized(buf, pos, depth)
            else:
                self.xid = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.forget') from None
        return self, pos

class DtxGetTimeout(Command):
    """Command dtx.get-timeout (class 0x06, code 0x06)."""

    __slots__ = ('xid', 'sync', )
    NAME: ClassVar[str] = 'dtx.get-timeout'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x06
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('xid', 'xid', 'Xid', 'xid', True),
    )

    def __init__(self, xid: Xid | None = None, sync: bool = False) -> None:
        self.xid = xid
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.xid
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                f0.encode_sized(out, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxGetTimeout, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'dtx.get-timeout: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.xid, pos = Xid.decode_sized(buf, pos, depth)
            else:
                self.xid = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.get-timeout') from None
        return self, pos

class DtxPrepare(Command):
    """Command dtx.prepare (class 0x06, code 0x07)."""

    __slots__ = ('xid', 'sync', )
    NAME: ClassVar[str] = 'dtx.prepare'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x07
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('xid', 'xid', 'Xid', 'xid', True),
    )

    def __init__(self, xid: Xid | None = None, sync: bool = False) -> None:
        self.xid = xid
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.xid
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                f0.encode_sized(out, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxPrepare, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'dtx.prepare: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.xid, pos = Xid.decode_sized(buf, pos, depth)
            else:
                self.xid = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.prepare') from None
        return self, pos

class DtxRecover(Command):
    """Command dtx.recover (class 0x06, code 0x08)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'dtx.recover'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x08
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxRecover, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated dtx.recover packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'dtx.recover has no fields but its packing flags are set')
        return cls(), pos + 2

class DtxRollback(Command):
    """Command dtx.rollback (class 0x06, code 0x09)."""

    __slots__ = ('xid', 'sync', )
    NAME: ClassVar[str] = 'dtx.rollback'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x09
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('xid', 'xid', 'Xid', 'xid', True),
    )

    def __init__(self, xid: Xid | None = None, sync: bool = False) -> None:
        self.xid = xid
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.xid
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                f0.encode_sized(out, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxRollback, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'dtx.rollback: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.xid, pos = Xid.decode_sized(buf, pos, depth)
            else:
                self.xid = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.rollback') from None
        return self, pos

class DtxSetTimeout(Command):
    """Command dtx.set-timeout (class 0x06, code 0x0a)."""

    __slots__ = ('xid', 'timeout', 'sync', )
    NAME: ClassVar[str] = 'dtx.set-timeout'
    CLASS_CODE: ClassVar[int] = 0x06
    OP_CODE: ClassVar[int] = 0x0a
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('xid', 'xid', 'Xid', 'xid', True),
        FieldSpec('timeout', 'timeout', 'uint32', 'uint32', True),
    )

    def __init__(self, xid: Xid | None = None, timeout: int | None = None, sync: bool = False) -> None:
        self.xid = xid
        self.timeout = timeout
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.xid
        f1 = self.timeout
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                f0.encode_sized(out, depth)
            if f1 is not None:
                out += _p32(f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[DtxSetTimeout, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'dtx.set-timeout: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.xid, pos = Xid.decode_sized(buf, pos, depth)
            else:
                self.xid = None
            if flags & 0x2:
                self.timeout = _u32(buf, pos)[0]
                pos += 4
            else:
                self.timeout = None
        except _SHORT:
            raise DecodeError(pos, 'truncated dtx.set-timeout') from None
        return self, pos

class ExchangeDeclare(Command):
    """Command exchange.declare (class 0x07, code 0x01)."""

    __slots__ = ('exchange', 'type', 'alternate_exchange', 'passive', 'durable', 'auto_delete', 'arguments', 'sync', )
    NAME: ClassVar[str] = 'exchange.declare'
    CLASS_CODE: ClassVar[int] = 0x07
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('exchange', 'exchange', 'str8', 'name', True),
        FieldSpec('type', 'type', 'str8', 'str8', True),
        FieldSpec('alternate-exchange', 'alternate_exchange', 'str8', 'name', False),
        FieldSpec('passive', 'passive', 'bit', 'bit', False),
        FieldSpec('durable', 'durable', 'bit', 'bit', False),
        FieldSpec('auto-delete', 'auto_delete', 'bit', 'bit', False),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
    )

    def __init__(self, exchange: str | None = None, type: str | None = None, alternate_exchange: str | None = None, passive: bool = False, durable: bool = False, auto_delete: bool = False, arguments: dict[str, Any] | None = None, sync: bool = False) -> None:
        self.exchange = exchange
        self.type = type
        self.alternate_exchange = alternate_exchange
        self.passive = passive
        self.durable = durable
        self.auto_delete = auto_delete
        self.arguments = arguments
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.exchange
        f1 = self.type
        f2 = self.alternate_exchange
        f3 = self.passive
        f4 = self.durable
        f5 = self.auto_delete
        f6 = self.arguments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3:
            flags |= 0x8
        if f4:
            flags |= 0x10
        if f5:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.enc_str8(out, f2)
            if f6 is not None:
                T.encode_map(out, f6, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExchangeDeclare, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xff80:
                raise DecodeError(pos - 2, f'exchange.declare: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.type = buf[pos + 1:e].decode()
                pos = e
            else:
                self.type = None
            if flags & 0x4:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.alternate_exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.alternate_exchange = None
            self.passive = flags & 0x8 != 0
            self.durable = flags & 0x10 != 0
            self.auto_delete = flags & 0x20 != 0
            if flags & 0x40:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated exchange.declare') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in exchange.declare') from None
        return self, pos

class ExchangeDelete(Command):
    """Command exchange.delete (class 0x07, code 0x02)."""

    __slots__ = ('exchange', 'if_unused', 'sync', )
    NAME: ClassVar[str] = 'exchange.delete'
    CLASS_CODE: ClassVar[int] = 0x07
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('exchange', 'exchange', 'str8', 'name', True),
        FieldSpec('if-unused', 'if_unused', 'bit', 'bit', False),
    )

    def __init__(self, exchange: str | None = None, if_unused: bool = False, sync: bool = False) -> None:
        self.exchange = exchange
        self.if_unused = if_unused
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.exchange
        f1 = self.if_unused
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExchangeDelete, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'exchange.delete: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            self.if_unused = flags & 0x2 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated exchange.delete') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in exchange.delete') from None
        return self, pos

class ExchangeQuery(Command):
    """Command exchange.query (class 0x07, code 0x03)."""

    __slots__ = ('name', 'sync', )
    NAME: ClassVar[str] = 'exchange.query'
    CLASS_CODE: ClassVar[int] = 0x07
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('name', 'name', 'str8', 'str8', False),
    )

    def __init__(self, name: str | None = None, sync: bool = False) -> None:
        self.name = name
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.name
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExchangeQuery, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'exchange.query: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.name = buf[pos + 1:e].decode()
                pos = e
            else:
                self.name = None
        except _SHORT:
            raise DecodeError(pos, 'truncated exchange.query') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in exchange.query') from None
        return self, pos

class ExchangeBind(Command):
    """Command exchange.bind (class 0x07, code 0x04)."""

    __slots__ = ('queue', 'exchange', 'binding_key', 'arguments', 'sync', )
    NAME: ClassVar[str] = 'exchange.bind'
    CLASS_CODE: ClassVar[int] = 0x07
    OP_CODE: ClassVar[int] = 0x04
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'queue.name', True),
        FieldSpec('exchange', 'exchange', 'str8', 'name', True),
        FieldSpec('binding-key', 'binding_key', 'str8', 'str8', True),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
    )

    def __init__(self, queue: str | None = None, exchange: str | None = None, binding_key: str | None = None, arguments: dict[str, Any] | None = None, sync: bool = False) -> None:
        self.queue = queue
        self.exchange = exchange
        self.binding_key = binding_key
        self.arguments = arguments
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        f1 = self.exchange
        f2 = self.binding_key
        f3 = self.arguments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.enc_str8(out, f2)
            if f3 is not None:
                T.encode_map(out, f3, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExchangeBind, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'exchange.bind: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x4:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.binding_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.binding_key = None
            if flags & 0x8:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated exchange.bind') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in exchange.bind') from None
        return self, pos

class ExchangeUnbind(Command):
    """Command exchange.unbind (class 0x07, code 0x05)."""

    __slots__ = ('queue', 'exchange', 'binding_key', 'sync', )
    NAME: ClassVar[str] = 'exchange.unbind'
    CLASS_CODE: ClassVar[int] = 0x07
    OP_CODE: ClassVar[int] = 0x05
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'queue.name', True),
        FieldSpec('exchange', 'exchange', 'str8', 'name', True),
        FieldSpec('binding-key', 'binding_key', 'str8', 'str8', True),
    )

    def __init__(self, queue: str | None = None, exchange: str | None = None, binding_key: str | None = None, sync: bool = False) -> None:
        self.queue = queue
        self.exchange = exchange
        self.binding_key = binding_key
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        f1 = self.exchange
        f2 = self.binding_key
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.enc_str8(out, f2)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExchangeUnbind, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'exchange.unbind: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x4:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.binding_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.binding_key = None
        except _SHORT:
            raise DecodeError(pos, 'truncated exchange.unbind') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in exchange.unbind') from None
        return self, pos

class ExchangeBound(Command):
    """Command exchange.bound (class 0x07, code 0x06)."""

    __slots__ = ('exchange', 'queue', 'binding_key', 'arguments', 'sync', )
    NAME: ClassVar[str] = 'exchange.bound'
    CLASS_CODE: ClassVar[int] = 0x07
    OP_CODE: ClassVar[int] = 0x06
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('exchange', 'exchange', 'str8', 'str8', False),
        FieldSpec('queue', 'queue', 'str8', 'str8', True),
        FieldSpec('binding-key', 'binding_key', 'str8', 'str8', False),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
    )

    def __init__(self, exchange: str | None = None, queue: str | None = None, binding_key: str | None = None, arguments: dict[str, Any] | None = None, sync: bool = False) -> None:
        self.exchange = exchange
        self.queue = queue
        self.binding_key = binding_key
        self.arguments = arguments
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.exchange
        f1 = self.queue
        f2 = self.binding_key
        f3 = self.arguments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.enc_str8(out, f2)
            if f3 is not None:
                T.encode_map(out, f3, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[ExchangeBound, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'exchange.bound: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            if flags & 0x4:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.binding_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.binding_key = None
            if flags & 0x8:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated exchange.bound') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in exchange.bound') from None
        return self, pos

class QueueDeclare(Command):
    """Command queue.declare (class 0x08, code 0x01)."""

    __slots__ = ('queue', 'alternate_exchange', 'passive', 'durable', 'exclusive', 'auto_delete', 'arguments', 'sync', )
    NAME: ClassVar[str] = 'queue.declare'
    CLASS_CODE: ClassVar[int] = 0x08
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'name', True),
        FieldSpec('alternate-exchange', 'alternate_exchange', 'str8', 'exchange.name', False),
        FieldSpec('passive', 'passive', 'bit', 'bit', False),
        FieldSpec('durable', 'durable', 'bit', 'bit', False),
        FieldSpec('exclusive', 'exclusive', 'bit', 'bit', False),
        FieldSpec('auto-delete', 'auto_delete', 'bit', 'bit', False),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
    )

    def __init__(self, queue: str | None = None, alternate_exchange: str | None = None, passive: bool = False, durable: bool = False, exclusive: bool = False, auto_delete: bool = False, arguments: dict[str, Any] | None = None, sync: bool = False) -> None:
        self.queue = queue
        self.alternate_exchange = alternate_exchange
        self.passive = passive
        self.durable = durable
        self.exclusive = exclusive
        self.auto_delete = auto_delete
        self.arguments = arguments
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        f1 = self.alternate_exchange
        f2 = self.passive
        f3 = self.durable
        f4 = self.exclusive
        f5 = self.auto_delete
        f6 = self.arguments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3:
            flags |= 0x8
        if f4:
            flags |= 0x10
        if f5:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f6 is not None:
                T.encode_map(out, f6, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[QueueDeclare, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xff80:
                raise DecodeError(pos - 2, f'queue.declare: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.alternate_exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.alternate_exchange = None
            self.passive = flags & 0x4 != 0
            self.durable = flags & 0x8 != 0
            self.exclusive = flags & 0x10 != 0
            self.auto_delete = flags & 0x20 != 0
            if flags & 0x40:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated queue.declare') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in queue.declare') from None
        return self, pos

class QueueDelete(Command):
    """Command queue.delete (class 0x08, code 0x02)."""

    __slots__ = ('queue', 'if_unused', 'if_empty', 'sync', )
    NAME: ClassVar[str] = 'queue.delete'
    CLASS_CODE: ClassVar[int] = 0x08
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'name', True),
        FieldSpec('if-unused', 'if_unused', 'bit', 'bit', False),
        FieldSpec('if-empty', 'if_empty', 'bit', 'bit', False),
    )

    def __init__(self, queue: str | None = None, if_unused: bool = False, if_empty: bool = False, sync: bool = False) -> None:
        self.queue = queue
        self.if_unused = if_unused
        self.if_empty = if_empty
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        f1 = self.if_unused
        f2 = self.if_empty
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        if f2:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[QueueDelete, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'queue.delete: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            self.if_unused = flags & 0x2 != 0
            self.if_empty = flags & 0x4 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated queue.delete') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in queue.delete') from None
        return self, pos

class QueuePurge(Command):
    """Command queue.purge (class 0x08, code 0x03)."""

    __slots__ = ('queue', 'sync', )
    NAME: ClassVar[str] = 'queue.purge'
    CLASS_CODE: ClassVar[int] = 0x08
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'name', True),
    )

    def __init__(self, queue: str | None = None, sync: bool = False) -> None:
        self.queue = queue
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[QueuePurge, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'queue.purge: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
        except _SHORT:
            raise DecodeError(pos, 'truncated queue.purge') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in queue.purge') from None
        return self, pos

class QueueQuery(Command):
    """Command queue.query (class 0x08, code 0x04)."""

    __slots__ = ('queue', 'sync', )
    NAME: ClassVar[str] = 'queue.query'
    CLASS_CODE: ClassVar[int] = 0x08
    OP_CODE: ClassVar[int] = 0x04
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'name', True),
    )

    def __init__(self, queue: str | None = None, sync: bool = False) -> None:
        self.queue = queue
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[QueueQuery, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'queue.query: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
        except _SHORT:
            raise DecodeError(pos, 'truncated queue.query') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in queue.query') from None
        return self, pos

class FileQos(Command):
    """Command file.qos (class 0x09, code 0x01)."""

    __slots__ = ('prefetch_size', 'prefetch_count', 'global_', 'sync', )
    NAME: ClassVar[str] = 'file.qos'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('prefetch-size', 'prefetch_size', 'uint32', 'uint32', False),
        FieldSpec('prefetch-count', 'prefetch_count', 'uint16', 'uint16', False),
        FieldSpec('global', 'global_', 'bit', 'bit', False),
    )

    def __init__(self, prefetch_size: int | None = None, prefetch_count: int | None = None, global_: bool = False, sync: bool = False) -> None:
        self.prefetch_size = prefetch_size
        self.prefetch_count = prefetch_count
        self.global_ = global_
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.prefetch_size
        f1 = self.prefetch_count
        f2 = self.global_
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p32(f0)
            if f1 is not None:
                out += _p16(f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileQos, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff8:
                raise DecodeError(pos - 2, f'file.qos: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.prefetch_size = _u32(buf, pos)[0]
                pos += 4
            else:
                self.prefetch_size = None
            if flags & 0x2:
                self.prefetch_count = _u16(buf, pos)[0]
                pos += 2
            else:
                self.prefetch_count = None
            self.global_ = flags & 0x4 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated file.qos') from None
        return self, pos

class FileQosOk(Command):
    """Command file.qos-ok (class 0x09, code 0x02)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'file.qos-ok'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileQosOk, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated file.qos-ok packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'file.qos-ok has no fields but its packing flags are set')
        return cls(), pos + 2

class FileConsume(Command):
    """Command file.consume (class 0x09, code 0x03)."""

    __slots__ = ('queue', 'consumer_tag', 'no_local', 'no_ack', 'exclusive', 'nowait', 'arguments', 'sync', )
    NAME: ClassVar[str] = 'file.consume'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'queue.name', False),
        FieldSpec('consumer-tag', 'consumer_tag', 'str8', 'str8', False),
        FieldSpec('no-local', 'no_local', 'bit', 'bit', False),
        FieldSpec('no-ack', 'no_ack', 'bit', 'bit', False),
        FieldSpec('exclusive', 'exclusive', 'bit', 'bit', False),
        FieldSpec('nowait', 'nowait', 'bit', 'bit', False),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
    )

    def __init__(self, queue: str | None = None, consumer_tag: str | None = None, no_local: bool = False, no_ack: bool = False, exclusive: bool = False, nowait: bool = False, arguments: dict[str, Any] | None = None, sync: bool = False) -> None:
        self.queue = queue
        self.consumer_tag = consumer_tag
        self.no_local = no_local
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.nowait = nowait
        self.arguments = arguments
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        f1 = self.consumer_tag
        f2 = self.no_local
        f3 = self.no_ack
        f4 = self.exclusive
        f5 = self.nowait
        f6 = self.arguments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3:
            flags |= 0x8
        if f4:
            flags |= 0x10
        if f5:
            flags |= 0x20
        if f6 is not None:
            flags |= 0x40
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f6 is not None:
                T.encode_map(out, f6, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileConsume, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xff80:
                raise DecodeError(pos - 2, f'file.consume: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.consumer_tag = buf[pos + 1:e].decode()
                pos = e
            else:
                self.consumer_tag = None
            self.no_local = flags & 0x4 != 0
            self.no_ack = flags & 0x8 != 0
            self.exclusive = flags & 0x10 != 0
            self.nowait = flags & 0x20 != 0
            if flags & 0x40:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.consume') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in file.consume') from None
        return self, pos

class FileConsumeOk(Command):
    """Command file.consume-ok (class 0x09, code 0x04)."""

    __slots__ = ('consumer_tag', 'sync', )
    NAME: ClassVar[str] = 'file.consume-ok'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x04
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('consumer-tag', 'consumer_tag', 'str8', 'str8', False),
    )

    def __init__(self, consumer_tag: str | None = None, sync: bool = False) -> None:
        self.consumer_tag = consumer_tag
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.consumer_tag
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileConsumeOk, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'file.consume-ok: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.consumer_tag = buf[pos + 1:e].decode()
                pos = e
            else:
                self.consumer_tag = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.consume-ok') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in file.consume-ok') from None
        return self, pos

class FileCancel(Command):
    """Command file.cancel (class 0x09, code 0x05)."""

    __slots__ = ('consumer_tag', 'sync', )
    NAME: ClassVar[str] = 'file.cancel'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x05
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('consumer-tag', 'consumer_tag', 'str8', 'str8', False),
    )

    def __init__(self, consumer_tag: str | None = None, sync: bool = False) -> None:
        self.consumer_tag = consumer_tag
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.consumer_tag
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileCancel, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'file.cancel: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.consumer_tag = buf[pos + 1:e].decode()
                pos = e
            else:
                self.consumer_tag = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.cancel') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in file.cancel') from None
        return self, pos

class FileOpen(Command):
    """Command file.open (class 0x09, code 0x06)."""

    __slots__ = ('identifier', 'content_size', 'sync', )
    NAME: ClassVar[str] = 'file.open'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x06
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('identifier', 'identifier', 'str8', 'str8', False),
        FieldSpec('content-size', 'content_size', 'uint64', 'uint64', False),
    )

    def __init__(self, identifier: str | None = None, content_size: int | None = None, sync: bool = False) -> None:
        self.identifier = identifier
        self.content_size = content_size
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.identifier
        f1 = self.content_size
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                out += _p64(f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileOpen, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'file.open: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.identifier = buf[pos + 1:e].decode()
                pos = e
            else:
                self.identifier = None
            if flags & 0x2:
                self.content_size = _u64(buf, pos)[0]
                pos += 8
            else:
                self.content_size = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.open') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in file.open') from None
        return self, pos

class FileOpenOk(Command):
    """Command file.open-ok (class 0x09, code 0x07)."""

    __slots__ = ('staged_size', 'sync', )
    NAME: ClassVar[str] = 'file.open-ok'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x07
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('staged-size', 'staged_size', 'uint64', 'uint64', False),
    )

    def __init__(self, staged_size: int | None = None, sync: bool = False) -> None:
        self.staged_size = staged_size
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.staged_size
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p64(f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileOpenOk, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'file.open-ok: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.staged_size = _u64(buf, pos)[0]
                pos += 8
            else:
                self.staged_size = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.open-ok') from None
        return self, pos

class FileStage(Command):
    """Command file.stage (class 0x09, code 0x08)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'file.stage'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x08
    PACK_WIDTH: ClassVar[int] = 2
    HAS_PAYLOAD: ClassVar[bool] = True
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileStage, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated file.stage packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'file.stage has no fields but its packing flags are set')
        return cls(), pos + 2

class FilePublish(Command):
    """Command file.publish (class 0x09, code 0x09)."""

    __slots__ = ('exchange', 'routing_key', 'mandatory', 'immediate', 'identifier', 'sync', )
    NAME: ClassVar[str] = 'file.publish'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x09
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('exchange', 'exchange', 'str8', 'exchange.name', False),
        FieldSpec('routing-key', 'routing_key', 'str8', 'str8', False),
        FieldSpec('mandatory', 'mandatory', 'bit', 'bit', False),
        FieldSpec('immediate', 'immediate', 'bit', 'bit', False),
        FieldSpec('identifier', 'identifier', 'str8', 'str8', False),
    )

    def __init__(self, exchange: str | None = None, routing_key: str | None = None, mandatory: bool = False, immediate: bool = False, identifier: str | None = None, sync: bool = False) -> None:
        self.exchange = exchange
        self.routing_key = routing_key
        self.mandatory = mandatory
        self.immediate = immediate
        self.identifier = identifier
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.exchange
        f1 = self.routing_key
        f2 = self.mandatory
        f3 = self.immediate
        f4 = self.identifier
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3:
            flags |= 0x8
        if f4 is not None:
            flags |= 0x10
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f4 is not None:
                T.enc_str8(out, f4)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FilePublish, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xffe0:
                raise DecodeError(pos - 2, f'file.publish: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.routing_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.routing_key = None
            self.mandatory = flags & 0x4 != 0
            self.immediate = flags & 0x8 != 0
            if flags & 0x10:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.identifier = buf[pos + 1:e].decode()
                pos = e
            else:
                self.identifier = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.publish') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in file.publish') from None
        return self, pos

class FileReturn(Command):
    """Command file.return (class 0x09, code 0x0a)."""

    __slots__ = ('reply_code', 'reply_text', 'exchange', 'routing_key', 'sync', )
    NAME: ClassVar[str] = 'file.return'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x0a
    PACK_WIDTH: ClassVar[int] = 2
    HAS_PAYLOAD: ClassVar[bool] = True
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('reply-code', 'reply_code', 'uint16', 'return-code', False),
        FieldSpec('reply-text', 'reply_text', 'str8', 'str8', False),
        FieldSpec('exchange', 'exchange', 'str8', 'exchange.name', False),
        FieldSpec('routing-key', 'routing_key', 'str8', 'str8', False),
    )

    def __init__(self, reply_code: int | None = None, reply_text: str | None = None, exchange: str | None = None, routing_key: str | None = None, sync: bool = False) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.exchange = exchange
        self.routing_key = routing_key
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.reply_code
        f1 = self.reply_text
        f2 = self.exchange
        f3 = self.routing_key
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p16(f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.enc_str8(out, f2)
            if f3 is not None:
                T.enc_str8(out, f3)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileReturn, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'file.return: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.reply_code = _u16(buf, pos)[0]
                pos += 2
            else:
                self.reply_code = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.reply_text = buf[pos + 1:e].decode()
                pos = e
            else:
                self.reply_text = None
            if flags & 0x4:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x8:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.routing_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.routing_key = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.return') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in file.return') from None
        return self, pos

class FileDeliver(Command):
    """Command file.deliver (class 0x09, code 0x0b)."""

    __slots__ = ('consumer_tag', 'delivery_tag', 'redelivered', 'exchange', 'routing_key', 'identifier', 'sync', )
    NAME: ClassVar[str] = 'file.deliver'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x0b
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('consumer-tag', 'consumer_tag', 'str8', 'str8', False),
        FieldSpec('delivery-tag', 'delivery_tag', 'uint64', 'uint64', False),
        FieldSpec('redelivered', 'redelivered', 'bit', 'bit', False),
        FieldSpec('exchange', 'exchange', 'str8', 'exchange.name', False),
        FieldSpec('routing-key', 'routing_key', 'str8', 'str8', False),
        FieldSpec('identifier', 'identifier', 'str8', 'str8', False),
    )

    def __init__(self, consumer_tag: str | None = None, delivery_tag: int | None = None, redelivered: bool = False, exchange: str | None = None, routing_key: str | None = None, identifier: str | None = None, sync: bool = False) -> None:
        self.consumer_tag = consumer_tag
        self.delivery_tag = delivery_tag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routing_key = routing_key
        self.identifier = identifier
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.consumer_tag
        f1 = self.delivery_tag
        f2 = self.redelivered
        f3 = self.exchange
        f4 = self.routing_key
        f5 = self.identifier
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        if f4 is not None:
            flags |= 0x10
        if f5 is not None:
            flags |= 0x20
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                out += _p64(f1)
            if f3 is not None:
                T.enc_str8(out, f3)
            if f4 is not None:
                T.enc_str8(out, f4)
            if f5 is not None:
                T.enc_str8(out, f5)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileDeliver, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xffc0:
                raise DecodeError(pos - 2, f'file.deliver: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.consumer_tag = buf[pos + 1:e].decode()
                pos = e
            else:
                self.consumer_tag = None
            if flags & 0x2:
                self.delivery_tag = _u64(buf, pos)[0]
                pos += 8
            else:
                self.delivery_tag = None
            self.redelivered = flags & 0x4 != 0
            if flags & 0x8:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x10:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.routing_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.routing_key = None
            if flags & 0x20:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.identifier = buf[pos + 1:e].decode()
                pos = e
            else:
                self.identifier = None
        except _SHORT:
            raise DecodeError(pos, 'truncated file.deliver') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in file.deliver') from None
        return self, pos

class FileAck(Command):
    """Command file.ack (class 0x09, code 0x0c)."""

    __slots__ = ('delivery_tag', 'multiple', 'sync', )
    NAME: ClassVar[str] = 'file.ack'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x0c
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('delivery-tag', 'delivery_tag', 'uint64', 'uint64', False),
        FieldSpec('multiple', 'multiple', 'bit', 'bit', False),
    )

    def __init__(self, delivery_tag: int | None = None, multiple: bool = False, sync: bool = False) -> None:
        self.delivery_tag = delivery_tag
        self.multiple = multiple
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.delivery_tag
        f1 = self.multiple
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p64(f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileAck, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'file.ack: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.delivery_tag = _u64(buf, pos)[0]
                pos += 8
            else:
                self.delivery_tag = None
            self.multiple = flags & 0x2 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated file.ack') from None
        return self, pos

class FileReject(Command):
    """Command file.reject (class 0x09, code 0x0d)."""

    __slots__ = ('delivery_tag', 'requeue', 'sync', )
    NAME: ClassVar[str] = 'file.reject'
    CLASS_CODE: ClassVar[int] = 0x09
    OP_CODE: ClassVar[int] = 0x0d
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('delivery-tag', 'delivery_tag', 'uint64', 'uint64', False),
        FieldSpec('requeue', 'requeue', 'bit', 'bit', False),
    )

    def __init__(self, delivery_tag: int | None = None, requeue: bool = False, sync: bool = False) -> None:
        self.delivery_tag = delivery_tag
        self.requeue = requeue
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.delivery_tag
        f1 = self.requeue
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1:
            flags |= 0x2
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p64(f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[FileReject, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffc:
                raise DecodeError(pos - 2, f'file.reject: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.delivery_tag = _u64(buf, pos)[0]
                pos += 8
            else:
                self.delivery_tag = None
            self.requeue = flags & 0x2 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated file.reject') from None
        return self, pos

class StreamQos(Command):
    """Command stream.qos (class 0x0a, code 0x01)."""

    __slots__ = ('prefetch_size', 'prefetch_count', 'consume_rate', 'global_', 'sync', )
    NAME: ClassVar[str] = 'stream.qos'
    CLASS_CODE: ClassVar[int] = 0x0a
    OP_CODE: ClassVar[int] = 0x01
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('prefetch-size', 'prefetch_size', 'uint32', 'uint32', False),
        FieldSpec('prefetch-count', 'prefetch_count', 'uint16', 'uint16', False),
        FieldSpec('consume-rate', 'consume_rate', 'uint32', 'uint32', False),
        FieldSpec('global', 'global_', 'bit', 'bit', False),
    )

    def __init__(self, prefetch_size: int | None = None, prefetch_count: int | None = None, consume_rate: int | None = None, global_: bool = False, sync: bool = False) -> None:
        self.prefetch_size = prefetch_size
        self.prefetch_count = prefetch_count
        self.consume_rate = consume_rate
        self.global_ = global_
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.prefetch_size
        f1 = self.prefetch_count
        f2 = self.consume_rate
        f3 = self.global_
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p32(f0)
            if f1 is not None:
                out += _p16(f1)
            if f2 is not None:
                out += _p32(f2)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamQos, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'stream.qos: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.prefetch_size = _u32(buf, pos)[0]
                pos += 4
            else:
                self.prefetch_size = None
            if flags & 0x2:
                self.prefetch_count = _u16(buf, pos)[0]
                pos += 2
            else:
                self.prefetch_count = None
            if flags & 0x4:
                self.consume_rate = _u32(buf, pos)[0]
                pos += 4
            else:
                self.consume_rate = None
            self.global_ = flags & 0x8 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated stream.qos') from None
        return self, pos

class StreamQosOk(Command):
    """Command stream.qos-ok (class 0x0a, code 0x02)."""

    __slots__ = ('sync', )
    NAME: ClassVar[str] = 'stream.qos-ok'
    CLASS_CODE: ClassVar[int] = 0x0a
    OP_CODE: ClassVar[int] = 0x02
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
    )

    def __init__(self, sync: bool = False) -> None:
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        out += bytes(2)

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamQosOk, int]:
        if pos + 2 > len(buf):
            raise DecodeError(pos, 'truncated stream.qos-ok packing flags')
        if any(buf[pos:pos + 2]):
            raise DecodeError(pos, 'stream.qos-ok has no fields but its packing flags are set')
        return cls(), pos + 2

class StreamConsume(Command):
    """Command stream.consume (class 0x0a, code 0x03)."""

    __slots__ = ('queue', 'consumer_tag', 'no_local', 'exclusive', 'nowait', 'arguments', 'sync', )
    NAME: ClassVar[str] = 'stream.consume'
    CLASS_CODE: ClassVar[int] = 0x0a
    OP_CODE: ClassVar[int] = 0x03
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('queue', 'queue', 'str8', 'queue.name', False),
        FieldSpec('consumer-tag', 'consumer_tag', 'str8', 'str8', False),
        FieldSpec('no-local', 'no_local', 'bit', 'bit', False),
        FieldSpec('exclusive', 'exclusive', 'bit', 'bit', False),
        FieldSpec('nowait', 'nowait', 'bit', 'bit', False),
        FieldSpec('arguments', 'arguments', 'map', 'map', False),
    )

    def __init__(self, queue: str | None = None, consumer_tag: str | None = None, no_local: bool = False, exclusive: bool = False, nowait: bool = False, arguments: dict[str, Any] | None = None, sync: bool = False) -> None:
        self.queue = queue
        self.consumer_tag = consumer_tag
        self.no_local = no_local
        self.exclusive = exclusive
        self.nowait = nowait
        self.arguments = arguments
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.queue
        f1 = self.consumer_tag
        f2 = self.no_local
        f3 = self.exclusive
        f4 = self.nowait
        f5 = self.arguments
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3:
            flags |= 0x8
        if f4:
            flags |= 0x10
        if f5 is not None:
            flags |= 0x20
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f5 is not None:
                T.encode_map(out, f5, depth)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamConsume, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xffc0:
                raise DecodeError(pos - 2, f'stream.consume: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.consumer_tag = buf[pos + 1:e].decode()
                pos = e
            else:
                self.consumer_tag = None
            self.no_local = flags & 0x4 != 0
            self.exclusive = flags & 0x8 != 0
            self.nowait = flags & 0x10 != 0
            if flags & 0x20:
                self.arguments, pos = _DEC_MAP(buf, pos, depth)
            else:
                self.arguments = None
        except _SHORT:
            raise DecodeError(pos, 'truncated stream.consume') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in stream.consume') from None
        return self, pos

class StreamConsumeOk(Command):
    """Command stream.consume-ok (class 0x0a, code 0x04)."""

    __slots__ = ('consumer_tag', 'sync', )
    NAME: ClassVar[str] = 'stream.consume-ok'
    CLASS_CODE: ClassVar[int] = 0x0a
    OP_CODE: ClassVar[int] = 0x04
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('consumer-tag', 'consumer_tag', 'str8', 'str8', False),
    )

    def __init__(self, consumer_tag: str | None = None, sync: bool = False) -> None:
        self.consumer_tag = consumer_tag
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.consumer_tag
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamConsumeOk, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'stream.consume-ok: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.consumer_tag = buf[pos + 1:e].decode()
                pos = e
            else:
                self.consumer_tag = None
        except _SHORT:
            raise DecodeError(pos, 'truncated stream.consume-ok') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in stream.consume-ok') from None
        return self, pos

class StreamCancel(Command):
    """Command stream.cancel (class 0x0a, code 0x05)."""

    __slots__ = ('consumer_tag', 'sync', )
    NAME: ClassVar[str] = 'stream.cancel'
    CLASS_CODE: ClassVar[int] = 0x0a
    OP_CODE: ClassVar[int] = 0x05
    PACK_WIDTH: ClassVar[int] = 2
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('consumer-tag', 'consumer_tag', 'str8', 'str8', False),
    )

    def __init__(self, consumer_tag: str | None = None, sync: bool = False) -> None:
        self.consumer_tag = consumer_tag
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.consumer_tag
        flags = 0
        if f0 is not None:
            flags |= 0x1
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamCancel, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfffe:
                raise DecodeError(pos - 2, f'stream.cancel: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.consumer_tag = buf[pos + 1:e].decode()
                pos = e
            else:
                self.consumer_tag = None
        except _SHORT:
            raise DecodeError(pos, 'truncated stream.cancel') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in stream.cancel') from None
        return self, pos

class StreamPublish(Command):
    """Command stream.publish (class 0x0a, code 0x06)."""

    __slots__ = ('exchange', 'routing_key', 'mandatory', 'immediate', 'sync', )
    NAME: ClassVar[str] = 'stream.publish'
    CLASS_CODE: ClassVar[int] = 0x0a
    OP_CODE: ClassVar[int] = 0x06
    PACK_WIDTH: ClassVar[int] = 2
    HAS_PAYLOAD: ClassVar[bool] = True
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('exchange', 'exchange', 'str8', 'exchange.name', False),
        FieldSpec('routing-key', 'routing_key', 'str8', 'str8', False),
        FieldSpec('mandatory', 'mandatory', 'bit', 'bit', False),
        FieldSpec('immediate', 'immediate', 'bit', 'bit', False),
    )

    def __init__(self, exchange: str | None = None, routing_key: str | None = None, mandatory: bool = False, immediate: bool = False, sync: bool = False) -> None:
        self.exchange = exchange
        self.routing_key = routing_key
        self.mandatory = mandatory
        self.immediate = immediate
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.exchange
        f1 = self.routing_key
        f2 = self.mandatory
        f3 = self.immediate
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2:
            flags |= 0x4
        if f3:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                T.enc_str8(out, f1)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamPublish, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'stream.publish: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.routing_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.routing_key = None
            self.mandatory = flags & 0x4 != 0
            self.immediate = flags & 0x8 != 0
        except _SHORT:
            raise DecodeError(pos, 'truncated stream.publish') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in stream.publish') from None
        return self, pos

class StreamReturn(Command):
    """Command stream.return (class 0x0a, code 0x07)."""

    __slots__ = ('reply_code', 'reply_text', 'exchange', 'routing_key', 'sync', )
    NAME: ClassVar[str] = 'stream.return'
    CLASS_CODE: ClassVar[int] = 0x0a
    OP_CODE: ClassVar[int] = 0x07
    PACK_WIDTH: ClassVar[int] = 2
    HAS_PAYLOAD: ClassVar[bool] = True
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('reply-code', 'reply_code', 'uint16', 'return-code', False),
        FieldSpec('reply-text', 'reply_text', 'str8', 'str8', False),
        FieldSpec('exchange', 'exchange', 'str8', 'exchange.name', False),
        FieldSpec('routing-key', 'routing_key', 'str8', 'str8', False),
    )

    def __init__(self, reply_code: int | None = None, reply_text: str | None = None, exchange: str | None = None, routing_key: str | None = None, sync: bool = False) -> None:
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.exchange = exchange
        self.routing_key = routing_key
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.reply_code
        f1 = self.reply_text
        f2 = self.exchange
        f3 = self.routing_key
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                out += _p16(f0)
            if f1 is not None:
                T.enc_str8(out, f1)
            if f2 is not None:
                T.enc_str8(out, f2)
            if f3 is not None:
                T.enc_str8(out, f3)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamReturn, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'stream.return: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                self.reply_code = _u16(buf, pos)[0]
                pos += 2
            else:
                self.reply_code = None
            if flags & 0x2:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.reply_text = buf[pos + 1:e].decode()
                pos = e
            else:
                self.reply_text = None
            if flags & 0x4:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x8:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.routing_key = buf[pos + 1:e].decode()
                pos = e
            else:
                self.routing_key = None
        except _SHORT:
            raise DecodeError(pos, 'truncated stream.return') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in stream.return') from None
        return self, pos

class StreamDeliver(Command):
    """Command stream.deliver (class 0x0a, code 0x08)."""

    __slots__ = ('consumer_tag', 'delivery_tag', 'exchange', 'queue', 'sync', )
    NAME: ClassVar[str] = 'stream.deliver'
    CLASS_CODE: ClassVar[int] = 0x0a
    OP_CODE: ClassVar[int] = 0x08
    PACK_WIDTH: ClassVar[int] = 2
    HAS_PAYLOAD: ClassVar[bool] = True
    FIELDS: ClassVar[tuple[FieldSpec, ...]] = (
        FieldSpec('consumer-tag', 'consumer_tag', 'str8', 'str8', False),
        FieldSpec('delivery-tag', 'delivery_tag', 'uint64', 'uint64', False),
        FieldSpec('exchange', 'exchange', 'str8', 'exchange.name', False),
        FieldSpec('queue', 'queue', 'str8', 'queue.name', True),
    )

    def __init__(self, consumer_tag: str | None = None, delivery_tag: int | None = None, exchange: str | None = None, queue: str | None = None, sync: bool = False) -> None:
        self.consumer_tag = consumer_tag
        self.delivery_tag = delivery_tag
        self.exchange = exchange
        self.queue = queue
        self.sync = sync

    def encode_fields(self, out: bytearray, depth: int = 0) -> None:
        f0 = self.consumer_tag
        f1 = self.delivery_tag
        f2 = self.exchange
        f3 = self.queue
        flags = 0
        if f0 is not None:
            flags |= 0x1
        if f1 is not None:
            flags |= 0x2
        if f2 is not None:
            flags |= 0x4
        if f3 is not None:
            flags |= 0x8
        out += flags.to_bytes(2, 'little')
        try:
            if f0 is not None:
                T.enc_str8(out, f0)
            if f1 is not None:
                out += _p64(f1)
            if f2 is not None:
                T.enc_str8(out, f2)
            if f3 is not None:
                T.enc_str8(out, f3)
        except Exception as exc:
            raise self._bad_field(exc) from None

    @classmethod
    def decode_fields(cls, buf: bytes, pos: int, depth: int = 0) -> tuple[StreamDeliver, int]:
        end = len(buf)
        self = _new(cls)
        self.sync = False
        try:
            flags = buf[pos] | buf[pos + 1] << 8
            pos += 2
            if flags & 0xfff0:
                raise DecodeError(pos - 2, f'stream.deliver: packing flags {flags:#x} name fields it does not have')
            if flags & 0x1:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.consumer_tag = buf[pos + 1:e].decode()
                pos = e
            else:
                self.consumer_tag = None
            if flags & 0x2:
                self.delivery_tag = _u64(buf, pos)[0]
                pos += 8
            else:
                self.delivery_tag = None
            if flags & 0x4:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.exchange = buf[pos + 1:e].decode()
                pos = e
            else:
                self.exchange = None
            if flags & 0x8:
                e = pos + 1 + buf[pos]
                if e > end:
                    raise IndexError
                self.queue = buf[pos + 1:e].decode()
                pos = e
            else:
                self.queue = None
        except _SHORT:
            raise DecodeError(pos, 'truncated stream.deliver') from None
        except UnicodeDecodeError:
            raise DecodeError(pos, 'invalid UTF-8 in stream.deliver') from None
        return self, pos

MessageAcquire.RESULT = Acquired
MessageResume.RESULT = MessageResumeResult
DtxStart.RESULT = XaResult
DtxEnd.RESULT = XaResult
DtxCommit.RESULT = XaResult
DtxGetTimeout.RESULT = GetTimeoutResult
DtxPrepare.RESULT = XaResult
DtxRecover.RESULT = RecoverResult
DtxRollback.RESULT = XaResult
ExchangeQuery.RESULT = ExchangeQueryResult
ExchangeBound.RESULT = ExchangeBoundResult
QueueQuery.RESULT = QueueQueryResult

STRUCTS_BY_CODE: dict[int, type[Struct]] = {
    0x0401: DeliveryProperties,
    0x0402: FragmentProperties,
    0x0403: MessageProperties,
    0x0404: Acquired,
    0x0405: MessageResumeResult,
    0x0601: XaResult,
    0x0604: Xid,
    0x0602: GetTimeoutResult,
    0x0603: RecoverResult,
    0x0701: ExchangeQueryResult,
    0x0702: ExchangeBoundResult,
    0x0801: QueueQueryResult,
    0x0901: FileProperties,
    0x0a01: StreamProperties,
}
"""Coded structs by ``class_code << 8 | struct_code``."""
T.register_structs(STRUCTS_BY_CODE)  # struct32 values decode through this table

CONTROLS: dict[tuple[int, int], type[Control]] = {
    (0x01, 0x01): ConnectionStart,
    (0x01, 0x02): ConnectionStartOk,
    (0x01, 0x03): ConnectionSecure,
    (0x01, 0x04): ConnectionSecureOk,
    (0x01, 0x05): ConnectionTune,
    (0x01, 0x06): ConnectionTuneOk,
    (0x01, 0x07): ConnectionOpen,
    (0x01, 0x08): ConnectionOpenOk,
    (0x01, 0x09): ConnectionRedirect,
    (0x01, 0x0a): ConnectionHeartbeat,
    (0x01, 0x0b): ConnectionClose,
    (0x01, 0x0c): ConnectionCloseOk,
    (0x02, 0x01): SessionAttach,
    (0x02, 0x02): SessionAttached,
    (0x02, 0x03): SessionDetach,
    (0x02, 0x04): SessionDetached,
    (0x02, 0x05): SessionRequestTimeout,
    (0x02, 0x06): SessionTimeout,
    (0x02, 0x07): SessionCommandPoint,
    (0x02, 0x08): SessionExpected,
    (0x02, 0x09): SessionConfirmed,
    (0x02, 0x0a): SessionCompleted,
    (0x02, 0x0b): SessionKnownCompleted,
    (0x02, 0x0c): SessionFlush,
    (0x02, 0x0d): SessionGap,
}
"""Controls by ``(class_code, control_code)``."""

COMMANDS: dict[tuple[int, int], type[Command]] = {
    (0x03, 0x01): ExecutionSync,
    (0x03, 0x02): ExecutionResult,
    (0x03, 0x03): ExecutionException,
    (0x04, 0x01): MessageTransfer,
    (0x04, 0x02): MessageAccept,
    (0x04, 0x03): MessageReject,
    (0x04, 0x04): MessageRelease,
    (0x04, 0x05): MessageAcquire,
    (0x04, 0x06): MessageResume,
    (0x04, 0x07): MessageSubscribe,
    (0x04, 0x08): MessageCancel,
    (0x04, 0x09): MessageSetFlowMode,
    (0x04, 0x0a): MessageFlow,
    (0x04, 0x0b): MessageFlush,
    (0x04, 0x0c): MessageStop,
    (0x05, 0x01): TxSelect,
    (0x05, 0x02): TxCommit,
    (0x05, 0x03): TxRollback,
    (0x06, 0x01): DtxSelect,
    (0x06, 0x02): DtxStart,
    (0x06, 0x03): DtxEnd,
    (0x06, 0x04): DtxCommit,
    (0x06, 0x05): DtxForget,
    (0x06, 0x06): DtxGetTimeout,
    (0x06, 0x07): DtxPrepare,
    (0x06, 0x08): DtxRecover,
    (0x06, 0x09): DtxRollback,
    (0x06, 0x0a): DtxSetTimeout,
    (0x07, 0x01): ExchangeDeclare,
    (0x07, 0x02): ExchangeDelete,
    (0x07, 0x03): ExchangeQuery,
    (0x07, 0x04): ExchangeBind,
    (0x07, 0x05): ExchangeUnbind,
    (0x07, 0x06): ExchangeBound,
    (0x08, 0x01): QueueDeclare,
    (0x08, 0x02): QueueDelete,
    (0x08, 0x03): QueuePurge,
    (0x08, 0x04): QueueQuery,
    (0x09, 0x01): FileQos,
    (0x09, 0x02): FileQosOk,
    (0x09, 0x03): FileConsume,
    (0x09, 0x04): FileConsumeOk,
    (0x09, 0x05): FileCancel,
    (0x09, 0x06): FileOpen,
    (0x09, 0x07): FileOpenOk,
    (0x09, 0x08): FileStage,
    (0x09, 0x09): FilePublish,
    (0x09, 0x0a): FileReturn,
    (0x09, 0x0b): FileDeliver,
    (0x09, 0x0c): FileAck,
    (0x09, 0x0d): FileReject,
    (0x0a, 0x01): StreamQos,
    (0x0a, 0x02): StreamQosOk,
    (0x0a, 0x03): StreamConsume,
    (0x0a, 0x04): StreamConsumeOk,
    (0x0a, 0x05): StreamCancel,
    (0x0a, 0x06): StreamPublish,
    (0x0a, 0x07): StreamReturn,
    (0x0a, 0x08): StreamDeliver,
}
"""Commands by ``(class_code, command_code)``."""

