"""Fast paths for the frames every message crosses: its methods and its content header.

A route draining a queue decodes, per message, a ``basic.deliver`` method and a content
header; one publishing encodes a content header. A façade decodes each client's
``basic.publish`` and ``basic.ack`` and encodes a ``basic.deliver`` for each message it
hands out. pamqp does that generically (an attribute, its type name, a type lookup and a
slice per field), which cost the bridge about as much CPU as everything else it did for
the message. The functions here do the same for these frames in straight-line code:

- :func:`decode_fast_method` (``basic.deliver``, ``basic.publish``, ``basic.ack``) and
  :func:`decode_content_header` return what pamqp's unmarshalling (with the typed
  ``headers`` codec of :mod:`amqp091.tables`) returns, or ``None`` for any payload they
  do not take whole — another method, a truncated or over-long field, trailing octets, a
  continuation flag word, octets that are not UTF-8, a malformed table — so that
  :mod:`amqp091.framing`'s general path then decodes it and reports the error exactly as
  before;
- :func:`encode_deliver` writes pamqp's octets for a ``basic.deliver`` frame, or returns
  None for one pamqp would refuse (its validation, a value of the wrong type or out of
  range): the general path then raises pamqp's error;
- :func:`encode_properties` is pamqp's ``Basic.Properties.marshal`` with the field
  encoders looked up once (pamqp's own per-type functions, so the octets and the errors
  are the same) and the typed ``headers`` table written in its place.

``tests/engine091/test_fast_frames.py`` compares each with the general path on many
generated frames and properties.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from pamqp import constants as pconstants
from pamqp import decode as pdecode
from pamqp import encode as pencode
from pamqp.commands import Basic
from pamqp.header import ContentHeader

from .tables import FieldTypes, read_table

_DELIVER = struct.pack(">I", Basic.Deliver.index)
"""The 4-octet method index (class and method id) of ``basic.deliver``."""
_HEAD = struct.Struct(">HHQH")
"""Content-header payload: class id, weight, body size, the first property-flag word."""
_HEAD_SIZE = _HEAD.size
_PUBLISH = struct.pack(">I", Basic.Publish.index)
"""The 4-octet method index of ``basic.publish``."""
_ACK = struct.pack(">I", Basic.Ack.index)
"""The 4-octet method index of ``basic.ack``."""
_TAG_AND_BITS = struct.Struct(">qB")
"""Delivery tag (signed, as pamqp reads a longlong) and the octet of bits after it
(``redelivered``; ``multiple``)."""
_ACK_SIZE = 4 + _TAG_AND_BITS.size
_TICKET = struct.Struct(">H")
"""basic.publish's reserved ``ticket`` (pamqp's ``short``: unsigned)."""
_FRAME_HEAD = struct.Struct(">BHI")
"""Frame type, channel, payload size."""
_METHOD_FRAME, _FRAME_END = pconstants.FRAME_METHOD, bytes([pconstants.FRAME_END])
_EXCHANGE_NAME = pconstants.DOMAIN_REGEX["exchange-name"]
"""pamqp's validation of an exchange name (``Basic.Deliver.validate``)."""
_LONGLONG = (-(1 << 63), (1 << 63) - 1)
_FLAGS = struct.Struct(">H")

_SHORTSTR, _OCTET, _TABLE, _TIMESTAMP = "shortstr", "octet", "table", "timestamp"
_PROPERTIES: tuple[tuple[int, str, str], ...] = tuple(
    (Basic.Properties.flags[name], name, getattr(Basic.Properties, "_" + name))
    for name in Basic.Properties.__slots__)
"""(flag, attribute, pamqp type name) of each basic property, in wire order."""
if {kind for _, _, kind in _PROPERTIES} != {_SHORTSTR, _OCTET, _TABLE, _TIMESTAMP}:
    raise ImportError("pamqp's Basic.Properties changed its field types: review fast_frames")

_ENCODERS: tuple[tuple[int, str, Callable[[Any], bytes] | None], ...] = tuple(
    (flag, name, None if kind == _TABLE else pencode.METHODS[kind])
    for flag, name, kind in _PROPERTIES)
"""(flag, attribute, pamqp's encoder; None for the headers table) in wire order."""


def _short_str(payload: bytes, pos: int, end: int) -> tuple[int, str] | None:
    """(position after it, value) of a short string at ``pos``, None if it runs past ``end``
    (pamqp would cut it short silently; the general path decides)."""
    if pos >= end:
        return None
    stop = pos + 1 + payload[pos]
    if stop > end:
        return None
    return stop, payload[pos + 1:stop].decode("utf-8")


def decode_deliver(payload: bytes) -> Basic.Deliver | None:
    """The ``basic.deliver`` of a method-frame payload (its 4-octet index included) as
    pamqp decodes it, or None when the general path must decode it (another method
    included)."""
    if not payload.startswith(_DELIVER):
        return None
    end = len(payload)
    try:
        read = _short_str(payload, 4, end)
        if read is None:
            return None
        pos, consumer_tag = read
        if pos + 9 > end:
            return None
        delivery_tag, bits = _TAG_AND_BITS.unpack_from(payload, pos)
        read = _short_str(payload, pos + 9, end)
        if read is None:
            return None
        pos, exchange = read
        read = _short_str(payload, pos, end)
        if read is None or read[0] != end:
            return None
        routing_key = read[1]
    except UnicodeDecodeError:
        return None
    method = Basic.Deliver.__new__(Basic.Deliver)  # as unmarshalled: no validation
    method.consumer_tag = consumer_tag
    method.delivery_tag = delivery_tag
    method.redelivered = bits & 1 != 0
    method.exchange = exchange
    method.routing_key = routing_key
    return method


def decode_publish(payload: bytes) -> Basic.Publish | None:
    """The ``basic.publish`` of a method-frame payload as pamqp decodes it, or None when
    the general path must decode it."""
    if not payload.startswith(_PUBLISH):
        return None
    end = len(payload)
    if end < 7:
        return None
    (ticket,) = _TICKET.unpack_from(payload, 4)
    try:
        read = _short_str(payload, 6, end)
        if read is None:
            return None
        pos, exchange = read
        read = _short_str(payload, pos, end)
        if read is None or read[0] + 1 != end:
            return None
        pos, routing_key = read
    except UnicodeDecodeError:
        return None
    bits = payload[pos]
    method = Basic.Publish.__new__(Basic.Publish)  # as unmarshalled: no validation
    method.ticket = ticket
    method.exchange = exchange
    method.routing_key = routing_key
    method.mandatory = bits & 1 != 0
    method.immediate = bits & 2 != 0
    return method


def decode_ack(payload: bytes) -> Basic.Ack | None:
    """The ``basic.ack`` of a method-frame payload as pamqp decodes it, or None when the
    general path must decode it."""
    if len(payload) != _ACK_SIZE or not payload.startswith(_ACK):
        return None
    delivery_tag, bits = _TAG_AND_BITS.unpack_from(payload, 4)
    method = Basic.Ack.__new__(Basic.Ack)
    method.delivery_tag = delivery_tag
    method.multiple = bits & 1 != 0
    return method


_DECODERS: dict[bytes, Callable[[bytes], Any]] = {
    _DELIVER: decode_deliver, _PUBLISH: decode_publish, _ACK: decode_ack}


def decode_fast_method(payload: bytes) -> Any:
    """A ``basic.deliver``, ``basic.publish`` or ``basic.ack`` method-frame payload
    decoded as pamqp decodes it, or None when the general path must decode it."""
    decode = _DECODERS.get(payload[:4])
    return None if decode is None else decode(payload)


def encode_deliver(channel: int, method: Basic.Deliver) -> bytes | None:
    """The ``basic.deliver`` frame pamqp writes for ``method`` on ``channel``, or None
    when pamqp's marshalling must decide (it refuses the method, or might)."""
    return encode_deliver_fields(channel, method.consumer_tag, method.delivery_tag,
                                 method.redelivered, method.exchange, method.routing_key)


def encode_deliver_fields(channel: int, consumer_tag: Any, tag: Any, redelivered: Any,
                          exchange: Any, routing_key: Any) -> bytes | None:
    """:func:`encode_deliver` of the method's fields as they are, without the
    ``Basic.Deliver`` object (the server's per-message path makes none when this writes
    the frame); None when pamqp must decide."""
    if type(tag) is not int or not _LONGLONG[0] <= tag <= _LONGLONG[1] \
            or type(redelivered) is not bool or type(exchange) is not str \
            or type(consumer_tag) is not str or type(routing_key) is not str \
            or len(exchange) > 127 or not _EXCHANGE_NAME.fullmatch(exchange):
        return None
    tag_octets, exchange_octets, key_octets = \
        consumer_tag.encode(), exchange.encode(), routing_key.encode()
    if len(tag_octets) > 255 or len(key_octets) > 255 or len(exchange_octets) > 255:
        return None
    payload = b"".join((
        _DELIVER, bytes((len(tag_octets),)), tag_octets,
        _TAG_AND_BITS.pack(tag, 1 if redelivered else 0),
        bytes((len(exchange_octets),)), exchange_octets,
        bytes((len(key_octets),)), key_octets))
    return b"".join((_FRAME_HEAD.pack(_METHOD_FRAME, channel, len(payload)), payload,
                     _FRAME_END))


def decode_content_header(payload: bytes, field_types: FieldTypes) -> ContentHeader | None:
    """The content header of a header-frame payload as pamqp decodes it (``headers`` read
    by :func:`amqp091.tables.read_table` with ``field_types``), or None when the general
    path must decode it."""
    end = len(payload)
    if end < _HEAD_SIZE:
        return None
    class_id, weight, body_size, flags = _HEAD.unpack_from(payload)
    if flags & 1:  # a continuation flag word (none defined for basic)
        return None
    properties = Basic.Properties()
    pos = _HEAD_SIZE
    try:
        for flag, name, kind in _PROPERTIES:
            if not flags & flag:
                continue
            value: Any
            if kind == _SHORTSTR:
                read = _short_str(payload, pos, end)
                if read is None:
                    return None
                pos, value = read
            elif kind == _OCTET:
                if pos >= end:
                    return None
                value = payload[pos]
                pos += 1
            elif kind == _TABLE:
                consumed, value = read_table(payload[pos:], field_types)
                pos += consumed
            else:
                if pos + 8 > end:
                    return None
                value = pdecode.timestamp(payload[pos:pos + 8])[1]
                pos += 8
            setattr(properties, name, value)
    except ValueError:  # not UTF-8, a malformed table (TableError), a timestamp out of range
        return None
    if pos != end:
        return None
    header = ContentHeader.__new__(ContentHeader)
    header.class_id = class_id
    header.weight = weight
    header.body_size = body_size
    header.properties = properties
    return header


def encode_properties(properties: Basic.Properties, table: bytes | None) -> bytes:
    """``properties`` marshalled as pamqp does (a property is sent unless None or ''),
    with ``table`` (a length-prefixed field table, or None) as the ``headers`` property."""
    flags = 0
    parts = [b""]
    append = parts.append
    for flag, name, encoder in _ENCODERS:
        if encoder is None:
            if table is not None:
                flags |= flag
                append(table)
            continue
        value = getattr(properties, name)
        if value is not None and value != "":
            flags |= flag
            append(encoder(value))
    parts[0] = _FLAGS.pack(flags)
    return b"".join(parts)


__all__ = ["decode_ack", "decode_content_header", "decode_deliver", "decode_fast_method",
           "decode_publish", "encode_deliver", "encode_deliver_fields", "encode_properties"]
