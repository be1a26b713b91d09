"""Per-route message translation: AMQP 0-10 ⇄ AMQP 1.0 plus optional CloudEvents rendering.

Pure functions over the mapping layer (``mappings/``); the route runtime calls
them for every message. Any problem raises :class:`~mappings.errors.MappingError`
(``CloudEventError`` included), which the route turns into a dead-letter or a
reject carrying the reason.

The route's hot path also needs a message's AMQP 1.0 bytes, and a message from
them: :func:`encode` and :func:`decode` give exactly what
:meth:`AmqpMessage.encode` / :meth:`AmqpMessage.decode` give, several times
faster, by writing and reading the usual value types directly (proton's encoder
choices: 32-bit list and map sizes, the smallest integer and string forms).
Anything else — rarer types, malformed input, values the mapping layer
refuses — is handed to those methods, so behaviour and errors are theirs.
"""

from __future__ import annotations

import struct
import uuid
from datetime import UTC, datetime
from typing import Any

from proton import (
    byte,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)

from bridge.amqp010.spec import DeliveryProperties, MessageProperties
from bridge.config import CloudEvents, Route
from mappings.amqp010 import from_amqp10, to_amqp10
from mappings.cloudevents import ContentMode, EventBuilder, Prefix, from_message, to_message
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind, Header, Properties


class CloudEventsRenderer:
    """Renders messages as CloudEvents the way one route's configuration says."""

    def __init__(self, config: CloudEvents) -> None:
        self.mode = ContentMode.BINARY if config.mode == "binary" else ContentMode.STRUCTURED
        self.prefix = Prefix(config.prefix)
        template = config.template()
        self.builder: EventBuilder | None = template.compiled if template is not None else None

    def render(self, message: AmqpMessage, now: datetime | None = None) -> AmqpMessage:
        """``message`` as a CloudEvent in the route's mode.

        A message that already is a CloudEvent (either mode, either prefix) is
        converted; a plain message needs the route's template (``source`` and
        ``type``), else CloudEventError.
        """
        event = from_message(message)
        if event is None:
            if self.builder is None:
                raise CloudEventError(
                    "message is not a CloudEvent and the route has no event template "
                    "(set cloudevents.source and cloudevents.type)", field="cloudevents")
            event = self.builder.build(message, now=now or datetime.now(UTC))
        return to_message(event, self.mode, prefix=self.prefix, envelope=message)


class Translator:
    """The translation one route applies, in either direction."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.cloudevents = CloudEventsRenderer(route.cloudevents) if route.cloudevents else None
        target = route.target
        self.routing_key = target.routing_key if target.routing_key is not None else target.queue

    def legacy_to_amqp10(self, dp: DeliveryProperties | None, mp: MessageProperties | None,
                         body: bytes) -> AmqpMessage:
        """A received 0-10 message as the 1.0 message to send."""
        message = to_amqp10(dp, mp, body)
        if self.cloudevents is not None:
            message = self.cloudevents.render(message)
        return message

    def amqp10_to_legacy(self, message: AmqpMessage
                         ) -> tuple[DeliveryProperties, MessageProperties, bytes]:
        """A received 1.0 message as the 0-10 header structs and body to transfer."""
        if self.cloudevents is not None:
            message = self.cloudevents.render(message)
        dp, mp, body = from_amqp10(message)
        if self.routing_key is not None:
            dp.routing_key = self.routing_key
        return dp, mp, body


# --- the wire form, fast ----------------------------------------------------------------------


class _Slow(Exception):
    """Leave this message to the mapping layer's own codec."""


def encode(message: AmqpMessage) -> bytes:
    """``message.encode()``: the same bytes, faster for the usual value types."""
    try:
        out = bytearray()
        _composite(out, 0x70, _header_fields(message.header))
        _annotations(out, 0x71, message.delivery_annotations)
        _annotations(out, 0x72, message.message_annotations)
        _composite(out, 0x73, _properties_fields(message.properties))
        if message.application_properties:
            out += b"\x00\x53\x74"
            _map(out, message.application_properties, _property_key)
        _body(out, message.body_kind, message.body)
        _annotations(out, 0x78, message.footer)
        return bytes(out)
    except _Slow:
        return message.encode()


_U8, _U32, _U64 = 0xFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
_I64 = 1 << 63
_pack_u32 = struct.Struct(">I").pack
_pack_i64 = struct.Struct(">q").pack
_pack_u64 = struct.Struct(">Q").pack
_pack_f64 = struct.Struct(">d").pack


def _bool(value: Any) -> Any:
    if value is None or type(value) is bool:
        return value
    raise _Slow


def _uint_field(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, int) and type(value) is not bool and 0 <= value <= _U32:
        return uint(value)
    raise _Slow


def _header_fields(header: Header) -> list[Any]:
    priority = header.priority
    if priority is not None:
        if not isinstance(priority, int) or type(priority) is bool or not 0 <= priority <= _U8:
            raise _Slow
        priority = ubyte(priority)
    return [_bool(header.durable), priority, _uint_field(header.ttl),
            _bool(header.first_acquirer), _uint_field(header.delivery_count)]


def _message_id(value: Any) -> Any:
    kind = type(value)
    if value is None or kind is ulong or kind is uuid.UUID or kind is str or kind is bytes:
        return value
    if kind is int and 0 <= value <= _U64:
        return ulong(value)
    raise _Slow


def _text(value: Any) -> Any:
    if value is None or type(value) is str:
        return value
    raise _Slow


def _sym(value: Any) -> Any:
    if value is None or type(value) is symbol:
        return value
    if type(value) is str and value.isascii():
        return symbol(value)
    raise _Slow


def _time(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, int) and type(value) is not bool and -_I64 <= value < _I64:
        return timestamp(value)
    raise _Slow


def _properties_fields(p: Properties) -> list[Any]:
    user_id = p.user_id
    if user_id is not None and type(user_id) is not bytes:
        raise _Slow
    return [_message_id(p.message_id), user_id, _text(p.to), _text(p.subject),
            _text(p.reply_to), _message_id(p.correlation_id), _sym(p.content_type),
            _sym(p.content_encoding), _time(p.absolute_expiry_time), _time(p.creation_time),
            _text(p.group_id), _uint_field(p.group_sequence), _text(p.reply_to_group_id)]


def _composite(out: bytearray, code: int, fields: list[Any]) -> None:
    while fields and fields[-1] is None:
        fields.pop()
    if fields:
        out += b"\x00\x53" + bytes((code,))
        _list(out, fields)


def _annotation_key(key: Any) -> Any:
    kind = type(key)
    if kind is symbol or kind is ulong:
        return key
    if kind is str and key.isascii():
        return symbol(key)
    if kind is int and 0 <= key <= _U64:
        return ulong(key)
    raise _Slow


def _property_key(key: Any) -> Any:
    if type(key) is str:
        return key
    raise _Slow


def _annotations(out: bytearray, code: int, items: dict[Any, Any]) -> None:
    if items:
        out += b"\x00\x53" + bytes((code,))
        _map(out, items, _annotation_key)


def _body(out: bytearray, kind: BodyKind, body: Any) -> None:
    if kind is BodyKind.VALUE:
        out += b"\x00\x53\x77"
        _value(out, body)
        return
    if type(body) is not list or not body:
        raise _Slow
    for section in body:
        if kind is BodyKind.DATA:
            if type(section) is not bytes:
                raise _Slow
            out += b"\x00\x53\x75"
            _binary(out, section)
        else:
            if type(section) is not list:
                raise _Slow
            out += b"\x00\x53\x76"
            _list(out, section)


def _binary(out: bytearray, value: bytes) -> None:
    n = len(value)
    if n < 256:
        out += b"\xa0" + bytes((n,))
    else:
        out += b"\xb0" + _pack_u32(n)
    out += value


def _list(out: bytearray, items: list[Any]) -> None:
    if not items:
        out += b"\x45"
        return
    out += b"\xd0\x00\x00\x00\x00"
    start = len(out)
    out += _pack_u32(len(items))
    for item in items:
        _value(out, item)
    out[start - 4:start] = _pack_u32(len(out) - start)


def _map(out: bytearray, items: dict[Any, Any], key: Any) -> None:
    out += b"\xd1\x00\x00\x00\x00"
    start = len(out)
    out += _pack_u32(2 * len(items))
    for k, v in items.items():
        _value(out, key(k))
        _value(out, v)
    out[start - 4:start] = _pack_u32(len(out) - start)


def _value(out: bytearray, value: Any) -> None:
    kind = type(value)
    if kind is str:
        data = value.encode()
        n = len(data)
        out += (b"\xa1" + bytes((n,))) if n < 256 else (b"\xb1" + _pack_u32(n))
        out += data
    elif kind is int:
        if -128 <= value <= 127:
            out += b"\x55" + bytes((value & 0xFF,))
        elif -_I64 <= value < _I64:
            out += b"\x81" + _pack_i64(value)
        else:
            raise _Slow
    elif value is None:
        out += b"\x40"
    elif kind is bool:
        out += b"\x41" if value else b"\x42"
    elif kind is bytes:
        _binary(out, value)
    elif kind is symbol:
        if not value.isascii():
            raise _Slow
        n = len(value)
        out += (b"\xa3" + bytes((n,))) if n < 256 else (b"\xb3" + _pack_u32(n))
        out += value.encode("ascii")
    elif kind is ulong:
        if value == 0:
            out += b"\x44"
        elif value < 256:
            out += b"\x53" + bytes((value,))
        elif value <= _U64:
            out += b"\x80" + _pack_u64(value)
        else:
            raise _Slow
    elif kind is uint:
        if value == 0:
            out += b"\x43"
        elif value < 256:
            out += b"\x52" + bytes((value,))
        elif value <= _U32:
            out += b"\x70" + _pack_u32(value)
        else:
            raise _Slow
    elif kind is ubyte and 0 <= value <= _U8:
        out += b"\x50" + bytes((value,))
    elif kind is timestamp and -_I64 <= value < _I64:
        out += b"\x83" + _pack_i64(value)
    elif kind is float:
        out += b"\x82" + _pack_f64(value)
    elif kind is uuid.UUID:
        out += b"\x98" + value.bytes
    elif kind is list:
        _list(out, value)
    elif kind is dict:
        _map(out, value, _any_key)
    else:
        raise _Slow  # byte, short, int32, ushort, float32, char, decimals, described, arrays


def _any_key(key: Any) -> Any:
    return key


def decode(data: bytes) -> AmqpMessage:
    """``AmqpMessage.decode(data)``: the same message, faster for the usual value types."""
    try:
        return _Reader(data).message()
    except (_Slow, IndexError, TypeError, struct.error, UnicodeDecodeError):
        return AmqpMessage.decode(data)


_unpack_u16 = struct.Struct(">H").unpack_from
_unpack_u32 = struct.Struct(">I").unpack_from
_unpack_i32 = struct.Struct(">i").unpack_from
_unpack_i16 = struct.Struct(">h").unpack_from
_unpack_i64 = struct.Struct(">q").unpack_from
_unpack_u64 = struct.Struct(">Q").unpack_from
_unpack_f32 = struct.Struct(">f").unpack_from
_unpack_f64 = struct.Struct(">d").unpack_from
_SECTION_RANK = {0x70: 0, 0x71: 1, 0x72: 2, 0x73: 3, 0x74: 4, 0x75: 5, 0x76: 5, 0x77: 5,
                 0x78: 6}


class _Reader:
    """Reads the usual AMQP 1.0 encodings; raises _Slow for anything else."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def message(self) -> AmqpMessage:
        data = self.data
        if not data:
            raise _Slow
        message = AmqpMessage()
        body: list[Any] = []
        last = -1
        last_code = 0
        end = len(data)
        while self.pos < end:
            if data[self.pos] != 0x00:
                raise _Slow
            self.pos += 1
            code = self._descriptor()
            rank = _SECTION_RANK.get(code)
            if rank is None or rank < last or (rank == last and not (
                    rank == 5 and code != 0x77 and code == last_code)):
                raise _Slow  # unknown, misordered or repeated: the mapping layer says which
            last, last_code = rank, code
            value = self.value()
            if code == 0x70:
                message.header = Header(*self._fields(value, 5))
            elif code == 0x73:
                message.properties = Properties(*self._fields(value, 13))
            elif code == 0x74:
                if type(value) is not dict or any(type(k) is not str for k in value):
                    raise _Slow
                message.application_properties = value
            elif code in (0x71, 0x72, 0x78):
                if type(value) is not dict:
                    raise _Slow
                if code == 0x71:
                    message.delivery_annotations = value
                elif code == 0x72:
                    message.message_annotations = value
                else:
                    message.footer = value
            elif code == 0x75:
                if type(value) is not bytes:
                    raise _Slow
                body.append(value)
                message.body_kind = BodyKind.DATA
            elif code == 0x76:
                if type(value) is not list:
                    raise _Slow
                body.append(value)
                message.body_kind = BodyKind.SEQUENCE
            else:
                message.body_kind = BodyKind.VALUE
                body.append(value)
        if message.body_kind is BodyKind.VALUE and body:
            message.body = body[0]
        elif body:
            message.body = body
        return message

    @staticmethod
    def _fields(value: Any, count: int) -> list[Any]:
        if type(value) is not list or len(value) > count:
            raise _Slow
        return value

    def _descriptor(self) -> int:
        data, pos = self.data, self.pos
        code = data[pos]
        if code == 0x53:
            self.pos = pos + 2
            return data[pos + 1]
        if code == 0x80:
            self.pos = pos + 9
            value: int = _unpack_u64(data, pos + 1)[0]
            return value
        raise _Slow  # symbolic descriptors

    def value(self) -> Any:
        data, pos = self.data, self.pos
        code = data[pos]
        pos += 1
        if code == 0xA1 or code == 0xA3 or code == 0xA0:
            n = data[pos]
            raw = data[pos + 1:pos + 1 + n]
            self.pos = pos + 1 + n
        elif code == 0xB1 or code == 0xB3 or code == 0xB0:
            n = _unpack_u32(data, pos)[0]
            raw = data[pos + 4:pos + 4 + n]
            self.pos = pos + 4 + n
        elif code == 0xD1 or code == 0xC1:
            if code == 0xD1:
                count = _unpack_u32(data, pos + 4)[0]
                self.pos = pos + 8
            else:
                count = data[pos + 1]
                self.pos = pos + 2
            mapping = {}
            for _ in range(count // 2):
                key = self.value()
                mapping[key] = self.value()
            return mapping
        elif code == 0xD0 or code == 0xC0:
            if code == 0xD0:
                count = _unpack_u32(data, pos + 4)[0]
                self.pos = pos + 8
            else:
                count = data[pos + 1]
                self.pos = pos + 2
            return [self.value() for _ in range(count)]
        else:
            return self._fixed(code, pos)
        if len(raw) != n:
            raise _Slow
        if code & 0x0F == 0x01:
            return raw.decode()
        if code & 0x0F == 0x03:
            return symbol(raw.decode("ascii"))
        return bytes(raw)

    def _fixed(self, code: int, pos: int) -> Any:
        data = self.data
        if code == 0x40:
            self.pos = pos
            return None
        if code == 0x41 or code == 0x42:
            self.pos = pos
            return code == 0x41
        if code == 0x56:
            self.pos = pos + 1
            return data[pos] != 0
        if code == 0x45:
            self.pos = pos
            return []
        if code == 0x55:
            self.pos = pos + 1
            return data[pos] - 256 if data[pos] > 127 else data[pos]
        if code == 0x81:
            self.pos = pos + 8
            return _unpack_i64(data, pos)[0]
        if code == 0x44 or code == 0x43:
            self.pos = pos
            return ulong(0) if code == 0x44 else uint(0)
        if code == 0x53:
            self.pos = pos + 1
            return ulong(data[pos])
        if code == 0x80:
            self.pos = pos + 8
            return ulong(_unpack_u64(data, pos)[0])
        if code == 0x52:
            self.pos = pos + 1
            return uint(data[pos])
        if code == 0x70:
            self.pos = pos + 4
            return uint(_unpack_u32(data, pos)[0])
        if code == 0x50:
            self.pos = pos + 1
            return ubyte(data[pos])
        if code == 0x51:
            self.pos = pos + 1
            return byte(data[pos] - 256 if data[pos] > 127 else data[pos])
        if code == 0x60:
            self.pos = pos + 2
            return ushort(_unpack_u16(data, pos)[0])
        if code == 0x61:
            self.pos = pos + 2
            return short(_unpack_i16(data, pos)[0])
        if code == 0x54:
            self.pos = pos + 1
            return int32(data[pos] - 256 if data[pos] > 127 else data[pos])
        if code == 0x71:
            self.pos = pos + 4
            return int32(_unpack_i32(data, pos)[0])
        if code == 0x83:
            self.pos = pos + 8
            return timestamp(_unpack_i64(data, pos)[0])
        if code == 0x82:
            self.pos = pos + 8
            return _unpack_f64(data, pos)[0]
        if code == 0x72:
            self.pos = pos + 4
            return float32(_unpack_f32(data, pos)[0])
        if code == 0x98:
            self.pos = pos + 16
            return uuid.UUID(bytes=bytes(data[pos:pos + 16]))
        raise _Slow  # described values, chars, decimals, arrays
