"""The fast AMQP 1.0 codec: the reference codec's bytes and sections for the usual types.

:func:`encode` and :func:`decode` give exactly what :mod:`mappings.proton_codec`
gives, several times faster, by writing and reading the usual value types
directly (proton's encoder choices: 32-bit list and map sizes, the smallest
integer and string forms; the fixed-width integers and float32 that AMQP 0-9-1
headers carry included). Anything else — rarer types (char, decimals, described
values, arrays), symbolic section descriptors,
malformed input, values the reference codec refuses — raises
:class:`Unsupported`, and the caller (:class:`mappings.message.AmqpMessage`)
hands the message to the reference codec, so behaviour and errors are its.
The equivalence is pinned by ``tests/bridge/test_acceptance.py`` and
``tests/mappings/test_fast_paths.py``.
"""

from __future__ import annotations

import struct
import uuid
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

from mappings.sections import (
    BodyKind,
    DecodedSections,
    Header,
    MessageSections,
    Properties,
)

__all__ = ["Unsupported", "decode", "encode", "encode_bare"]


class Unsupported(Exception):
    """This message is not one the fast codec handles: use the reference codec."""


def encode(message: MessageSections) -> bytes:
    """The whole annotated message as AMQP 1.0 bytes (header ... footer)."""
    out = bytearray()
    _header(out, message.header)
    _annotations(out, 0x71, message.delivery_annotations)
    _annotations(out, 0x72, message.message_annotations)
    _bare(out, message)
    _annotations(out, 0x78, message.footer)
    return bytes(out)


def encode_bare(message: MessageSections) -> bytes:
    """The bare message only: properties, application-properties and body sections."""
    out = bytearray()
    _bare(out, message)
    return bytes(out)


def _bare(out: bytearray, message: MessageSections) -> None:
    _composite(out, 0x73, _properties_fields(message.properties))
    if message.application_properties:
        out += b"\x00\x53\x74"
        _map(out, message.application_properties, _property_key)
    _body(out, message.body_kind, message.body)


def decode(data: bytes | bytearray | memoryview, *, bare: bool = False) -> DecodedSections:
    """The sections of an annotated message (of a bare one if ``bare``).

    Raises :class:`Unsupported` for anything but the usual types, and for
    anything the reference codec would refuse.
    """
    try:
        return _read_message(data if type(data) is bytes else bytes(data), bare)
    except (IndexError, TypeError, ValueError, struct.error) as exc:  # ValueError: bad UTF-8
        raise Unsupported from exc


_U8, _U32, _U64 = 0xFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF
_I32, _I64 = 1 << 31, 1 << 63
_pack_u32 = struct.Struct(">I").pack
_pack_i32 = struct.Struct(">i").pack
_pack_i16 = struct.Struct(">h").pack
_pack_u16 = struct.Struct(">H").pack
_pack_f32 = struct.Struct(">f").pack
_pack_i64 = struct.Struct(">q").pack
_pack_u64 = struct.Struct(">Q").pack
_pack_f64 = struct.Struct(">d").pack


def _bool(value: Any) -> Any:
    if value is None or type(value) is bool:
        return value
    raise Unsupported


def _uint_field(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, int) and type(value) is not bool and 0 <= value <= _U32:
        return uint(value)
    raise Unsupported


# Header and Properties come in as Any: the fast path checks each value's type itself (a
# caller may have set anything), where the compiled build would refuse a mistyped one first.
def _header_fields(header: Any) -> list[Any]:
    priority = header.priority
    if priority is not None:
        if not isinstance(priority, int) or type(priority) is bool or not 0 <= priority <= _U8:
            raise Unsupported
        priority = ubyte(priority)
    return [_bool(header.durable), priority, _uint_field(header.ttl),
            _bool(header.first_acquirer), _uint_field(header.delivery_count)]


def _message_id(value: Any) -> Any:
    kind = type(value)
    if value is None or kind is ulong or kind is uuid.UUID or kind is str or kind is bytes:
        return value
    if kind is int and 0 <= value <= _U64:
        return ulong(value)
    raise Unsupported


def _text(value: Any) -> Any:
    if value is None or type(value) is str:
        return value
    raise Unsupported


def _sym(value: Any) -> Any:
    if value is None or type(value) is symbol:
        return value
    if type(value) is str and value.isascii():
        return symbol(value)
    raise Unsupported


def _time(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, int) and type(value) is not bool and -_I64 <= value < _I64:
        return timestamp(value)
    raise Unsupported


def _properties_fields(p: Any) -> list[Any]:
    user_id = p.user_id
    if user_id is not None and type(user_id) is not bytes:
        raise Unsupported
    return [_message_id(p.message_id), user_id, _text(p.to), _text(p.subject),
            _text(p.reply_to), _message_id(p.correlation_id), _sym(p.content_type),
            _sym(p.content_encoding), _time(p.absolute_expiry_time), _time(p.creation_time),
            _text(p.group_id), _uint_field(p.group_sequence), _text(p.reply_to_group_id)]


def _header(out: bytearray, header: Any) -> None:
    """The header section; its usual forms (only durable and first-acquirer given, or
    neither) from :data:`_HEADERS`."""
    durable, first = header.durable, header.first_acquirer
    if (header.priority is None and header.ttl is None and header.delivery_count is None
            and (durable is None or type(durable) is bool)
            and (first is None or type(first) is bool)):
        out += _HEADERS[durable, first]
    else:
        _composite(out, 0x70, _header_fields(header))


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
    raise Unsupported


def _property_key(key: Any) -> Any:
    if type(key) is str:
        return key
    raise Unsupported


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
        raise Unsupported
    for section in body:
        if kind is BodyKind.DATA:
            if type(section) is not bytes:
                raise Unsupported
            out += b"\x00\x53\x75"
            _binary(out, section)
        else:
            if type(section) is not list:
                raise Unsupported
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
        if item is None:  # the absent fields of header and properties, inline
            out += b"\x40"
        else:
            _value(out, item)
    out[start - 4:start] = _pack_u32(len(out) - start)


def _map(out: bytearray, items: dict[Any, Any], key: Any) -> None:
    out += b"\xd1\x00\x00\x00\x00"
    start = len(out)
    out += _pack_u32(2 * len(items))
    for k, v in items.items():
        _value(out, key(k))
        if type(v) is str:  # the usual value (application properties, annotations), inline
            data = v.encode()
            n = len(data)
            out += (b"\xa1" + bytes((n,))) if n < 256 else (b"\xb1" + _pack_u32(n))
            out += data
        else:
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
            raise Unsupported
    elif value is None:
        out += b"\x40"
    elif kind is bool:
        out += b"\x41" if value else b"\x42"
    elif kind is bytes:
        _binary(out, value)
    elif kind is symbol:
        encoded = _SYMBOLS.get(value)
        if encoded is None:
            if not value.isascii():
                raise Unsupported
            n = len(value)
            encoded = ((b"\xa3" + bytes((n,))) if n < 256 else (b"\xb3" + _pack_u32(n))) \
                + value.encode("ascii")
            if len(_SYMBOLS) < _SYMBOLS_KEPT:
                _SYMBOLS[value] = encoded
        out += encoded
    elif kind is ulong:
        if value == 0:
            out += b"\x44"
        elif value < 256:
            out += b"\x53" + bytes((value,))
        elif value <= _U64:
            out += b"\x80" + _pack_u64(value)
        else:
            raise Unsupported
    elif kind is uint:
        if value == 0:
            out += b"\x43"
        elif value < 256:
            out += b"\x52" + bytes((value,))
        elif value <= _U32:
            out += b"\x70" + _pack_u32(value)
        else:
            raise Unsupported
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
    elif kind is int32 and -_I32 <= value < _I32:  # every integer header pika writes
        if -128 <= value <= 127:
            out += b"\x54" + bytes((value & 0xFF,))
        else:
            out += b"\x71" + _pack_i32(value)
    elif kind is short and -32768 <= value <= 32767:
        out += b"\x61" + _pack_i16(value)
    elif kind is ushort and 0 <= value <= 0xFFFF:
        out += b"\x60" + _pack_u16(value)
    elif kind is byte and -128 <= value <= 127:
        out += b"\x51" + bytes((value & 0xFF,))
    elif kind is float32:
        try:
            out += b"\x72" + _pack_f32(value)
        except OverflowError:
            raise Unsupported from None
    else:
        raise Unsupported  # char, decimals, described values, arrays


_SYMBOLS: dict[symbol, bytes] = {}
"""Encoded symbols, by symbol: annotation keys and content types are a few names that
recur on every message."""
_SYMBOLS_KEPT = 1024
"""Symbols :data:`_SYMBOLS` keeps at most (the first ones seen)."""


def _encoded_header(durable: bool | None, first_acquirer: bool | None) -> bytes:
    out = bytearray()
    _composite(out, 0x70, [durable, None, None, first_acquirer, None])
    return bytes(out)


_HEADERS = {(durable, first): _encoded_header(durable, first)
            for durable in (None, True, False) for first in (None, True, False)}
"""The header section (empty when nothing is given) for each durable and first-acquirer
with the other fields absent: encoded once."""


def _any_key(key: Any) -> Any:
    return key


_unpack_u16 = struct.Struct(">H").unpack_from
_unpack_u32 = struct.Struct(">I").unpack_from
_unpack_i32 = struct.Struct(">i").unpack_from
_unpack_i16 = struct.Struct(">h").unpack_from
_unpack_i64 = struct.Struct(">q").unpack_from
_unpack_u64 = struct.Struct(">Q").unpack_from
_unpack_f32 = struct.Struct(">f").unpack_from
_unpack_f64 = struct.Struct(">d").unpack_from
_unpack_size_count = struct.Struct(">II").unpack_from
_SECTION_RANK = {0x70: 0, 0x71: 1, 0x72: 2, 0x73: 3, 0x74: 4, 0x75: 5, 0x76: 5, 0x77: 5,
                 0x78: 6}
_BARE_RANK = {code: rank for code, rank in _SECTION_RANK.items() if 3 <= rank <= 5}
_KIND_DATA, _KIND_SEQUENCE, _KIND_VALUE = BodyKind.DATA, BodyKind.SEQUENCE, BodyKind.VALUE


def _read_message(data: bytes, bare: bool) -> DecodedSections:
    """The sections of ``data``; raises Unsupported (or an index/struct error) for
    anything unusual, which :func:`decode` reports as Unsupported."""
    end = len(data)
    if not end:
        raise Unsupported
    header = properties = None
    delivery_annotations: Any = {}
    message_annotations: Any = {}
    application_properties: Any = {}
    footer: Any = {}
    body: list[Any] = []
    kind = _KIND_VALUE
    last = -1
    last_code = 0
    pos = 0
    while pos < end:
        if data[pos] != 0x00:
            raise Unsupported
        if data[pos + 1] == 0x53:
            code = data[pos + 2]
            pos += 3
        elif data[pos + 1] == 0x80:
            code = _unpack_u64(data, pos + 2)[0]
            pos += 10
        else:
            raise Unsupported  # symbolic descriptors
        rank = (_BARE_RANK if bare else _SECTION_RANK).get(code)
        if rank is None or rank < last or (rank == last and not (
                rank == 5 and code != 0x77 and code == last_code)):
            raise Unsupported  # unknown, misordered or repeated: the mapping layer says which
        last, last_code = rank, code
        value, pos = _read_value(data, pos)
        if code == 0x74:
            if type(value) is not dict or any(type(k) is not str for k in value):
                raise Unsupported
            application_properties = value
        elif code == 0x73:
            properties = Properties(*_read_fields(value, 13))
        elif code == 0x70:
            header = Header(*_read_fields(value, 5))
        elif code == 0x75:
            if type(value) is not bytes:
                raise Unsupported
            body.append(value)
            kind = _KIND_DATA
        elif code == 0x72 or code == 0x71 or code == 0x78:
            if type(value) is not dict:
                raise Unsupported
            if code == 0x72:
                message_annotations = value
            elif code == 0x71:
                delivery_annotations = value
            else:
                footer = value
        elif code == 0x76:
            if type(value) is not list:
                raise Unsupported
            body.append(value)
            kind = _KIND_SEQUENCE
        else:
            kind = _KIND_VALUE
            body.append(value)
    if pos != end:
        raise Unsupported  # the last value claimed more octets than there are
    return (header or Header(), delivery_annotations, message_annotations,
            properties or Properties(), application_properties, kind,
            (body[0] if body else None) if kind is _KIND_VALUE else (body or None), footer)


def _read_fields(value: Any, count: int) -> list[Any]:
    if type(value) is not list or len(value) > count:
        raise Unsupported
    return value


def _read_value(data: bytes, pos: int) -> tuple[Any, int]:
    """The value encoded at ``data[pos]`` and the position after it."""
    code = data[pos]
    pos += 1
    if code == 0xA1:
        n = data[pos]
        pos += 1 + n
        return data[pos - n:pos].decode(), pos
    if code == 0x40:
        return None, pos
    if code == 0xA3:
        n = data[pos]
        pos += 1 + n
        return symbol(data[pos - n:pos].decode("ascii")), pos
    if code == 0xD1 or code == 0xC1:
        count, pos, stop = _composite_header(data, code == 0xD1, pos)
        mapping: dict[Any, Any] = {}
        for _ in range(count >> 1):
            if data[pos] == 0xA1:  # string keys: application properties
                n = data[pos + 1]
                pos += 2 + n
                key: Any = data[pos - n:pos].decode()
            else:
                key, pos = _read_value(data, pos)
            # the usual values inline: short strings, null, small and full longs
            vcode = data[pos]
            if vcode == 0xA1:
                n = data[pos + 1]
                pos += 2 + n
                mapping[key] = data[pos - n:pos].decode()
            elif vcode == 0x55:
                v = data[pos + 1]
                mapping[key] = v - 256 if v > 127 else v
                pos += 2
            elif vcode == 0x81:
                mapping[key] = _unpack_i64(data, pos + 1)[0]
                pos += 9
            elif vcode == 0x40:
                mapping[key] = None
                pos += 1
            else:
                mapping[key], pos = _read_value(data, pos)
        if pos != stop or count & 1:
            raise Unsupported
        return mapping, pos
    if code == 0xC0 or code == 0xD0:
        count, pos, stop = _composite_header(data, code == 0xD0, pos)
        items: list[Any] = []
        append = items.append
        for _ in range(count):
            vcode = data[pos]
            if vcode == 0x40:  # the absent fields of header and properties
                append(None)
                pos += 1
            elif vcode == 0xA1:
                n = data[pos + 1]
                pos += 2 + n
                append(data[pos - n:pos].decode())
            elif vcode == 0xA3:
                n = data[pos + 1]
                pos += 2 + n
                append(symbol(data[pos - n:pos].decode("ascii")))
            elif vcode == 0x41 or vcode == 0x42:
                append(vcode == 0x41)
                pos += 1
            else:
                item, pos = _read_value(data, pos)
                append(item)
        if pos != stop:
            raise Unsupported
        return items, pos
    if code == 0xA0:
        n = data[pos]
        pos += 1 + n
        return data[pos - n:pos], pos
    if code == 0xB0 or code == 0xB1 or code == 0xB3:
        n = _unpack_u32(data, pos)[0]
        pos += 4 + n
        raw = data[pos - n:pos]
        if code == 0xB0:
            return raw, pos
        return (raw.decode() if code == 0xB1 else symbol(raw.decode("ascii"))), pos
    return _read_fixed(data, code, pos)


def _uuid(raw: bytes) -> uuid.UUID:
    """``uuid.UUID(bytes=raw)`` (16 octets) without its argument checks (a message-id per
    message). A uuid cut short by the end of the data is not caught here: its reader
    still moves 16 octets on, past the end, which :func:`_read_message` refuses."""
    value = _new_object(uuid.UUID)
    _set_attribute(value, "int", int.from_bytes(raw, "big"))
    _set_attribute(value, "is_safe", uuid.SafeUUID.unknown)
    return value


_new_object, _set_attribute = object.__new__, object.__setattr__


def _composite_header(data: bytes, wide: bool, pos: int) -> tuple[int, int, int]:
    """A list's or map's element count, where its elements start, and where they end."""
    if wide:
        size, count = _unpack_size_count(data, pos)
        return count, pos + 8, pos + 4 + size
    return data[pos + 1], pos + 2, pos + 1 + data[pos]


def _read_fixed(data: bytes, code: int, pos: int) -> tuple[Any, int]:
    """Fixed-width values (and the empty list); Unsupported for the rarer encodings."""
    if code == 0x41 or code == 0x42:
        return code == 0x41, pos
    if code == 0x55:
        return (data[pos] - 256 if data[pos] > 127 else data[pos]), pos + 1
    if code == 0x81:
        return _unpack_i64(data, pos)[0], pos + 8
    if code == 0x98:
        return _uuid(data[pos:pos + 16]), pos + 16
    if code == 0x83:
        return timestamp(_unpack_i64(data, pos)[0]), pos + 8
    if code == 0x52:
        return uint(data[pos]), pos + 1
    if code == 0x53:
        return ulong(data[pos]), pos + 1
    if code == 0x43 or code == 0x44:
        return (ulong(0) if code == 0x44 else uint(0)), pos
    if code == 0x70:
        return uint(_unpack_u32(data, pos)[0]), pos + 4
    if code == 0x80:
        return ulong(_unpack_u64(data, pos)[0]), pos + 8
    if code == 0x56:
        return data[pos] != 0, pos + 1
    if code == 0x45:
        return [], pos
    if code == 0x50:
        return ubyte(data[pos]), pos + 1
    if code == 0x51:
        return byte(data[pos] - 256 if data[pos] > 127 else data[pos]), pos + 1
    if code == 0x60:
        return ushort(_unpack_u16(data, pos)[0]), pos + 2
    if code == 0x61:
        return short(_unpack_i16(data, pos)[0]), pos + 2
    if code == 0x54:
        return int32(data[pos] - 256 if data[pos] > 127 else data[pos]), pos + 1
    if code == 0x71:
        return int32(_unpack_i32(data, pos)[0]), pos + 4
    if code == 0x82:
        return _unpack_f64(data, pos)[0], pos + 8
    if code == 0x72:
        return float32(_unpack_f32(data, pos)[0]), pos + 4
    raise Unsupported  # described values, chars, decimals, arrays
