"""Lossless AMQP 0-10 <-> AMQP 1.0 message translation (pure functions, no I/O).

- :func:`to_amqp10` maps a 0-10 message (delivery-properties, message-properties,
  body) to an :class:`~mappings.message.AmqpMessage`; :func:`assembly_to_amqp10`
  does the same for a received ``message.transfer`` assembly.
- :func:`from_amqp10` maps an ``AmqpMessage`` to the 0-10 structs and body.

Every rule is in ``docs/mapping.md``. In short: fields both models have map to
each other; data only one model has rides in the other model's extension
space, and is consumed again on the way back:

- 1.0-only data travels in 0-10 application headers ``x-amqp-1.0.<field>``;
- 0-10-only data travels in 1.0 message annotations ``x-amqp-0-10.<field>``.

The user-id is the one field a route's configuration shapes (``user_id=`` and
``login_user=`` of both directions, see :data:`USER_ID_RULES`): brokers refuse a
message whose user-id is not the user that published it, so a rule decides
whether the target's user-id field holds it or a carrier does (1.0 annotation
``x-amqp-0-10.user-id``, 0-10 header ``x-amqp-1.0.user-id``). An empty user-id
is no user-id.

A side channel is honoured only when it agrees with the field it annotates
(a later 0-10 application may have changed the field: then the field wins and
the stale side channel is dropped). What cannot cross (a header key over 255
octets, a ttl over 2**32-1 ms ...) raises :class:`~mappings.errors.MappingError`
naming the field; nothing is dropped silently.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

from proton import symbol, timestamp, ubyte, uint, ulong

from amqp010 import types as t
from amqp010.errors import CodecError
from amqp010.framing import Assembly
from amqp010.spec import DeliveryProperties, MessageProperties, ReplyTo
from mappings.amqp010_values import (
    HEADER_TYPE_NAMES,
    PROPERTY_TYPE_NAMES,
    Unrepresentable,
    apply_header_type,
    apply_property_type,
    header_to_amqp10,
    nested_from_amqp10,
    nested_to_amqp10,
    property_from_amqp10,
)
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind, Header, Properties, new_message
from mappings.user_id import CARRY, FIELD, USER_ID_RULES, user_id_place

# Enum members as module constants: reading one from its class is slow on Python 3.11.
_KIND_DATA, _KIND_VALUE = BodyKind.DATA, BodyKind.VALUE

__all__ = [
    "APP_ID_PROPERTY",
    "BODY_CONTENT_TYPE",
    "LIST_CONTENT_TYPE",
    "MAP_CONTENT_TYPE",
    "SUBJECT_HEADER",
    "TEXT_CONTENT_TYPE",
    "USER_ID_RULES",
    "assembly_to_amqp10",
    "from_amqp10",
    "message_id_uuid",
    "to_amqp10",
]

# --- names --------------------------------------------------------------------------------------

SUBJECT_HEADER = "qpid.subject"
"""0-10 application header carrying the subject (qpidd's and qpid.messaging's convention)."""
APP_ID_PROPERTY = "x-amqp-0-10.app-id"
"""1.0 application property carrying message-properties.app-id (qpid.messaging's name)."""

MAP_CONTENT_TYPE = "amqp/map"
LIST_CONTENT_TYPE = "amqp/list"
TEXT_CONTENT_TYPE = "text/plain"
"""0-10 content-type of a 1.0 amqp-value string body (what qpidd writes)."""
BODY_CONTENT_TYPE = "application/x-amqp-1.0-body"
"""0-10 content-type of a body holding the AMQP 1.0 encoding of the body sections."""

# 1.0-only data in 0-10 application headers
H_TO = "x-amqp-1.0.to"
H_GROUP_ID = "x-amqp-1.0.group-id"
H_GROUP_SEQUENCE = "x-amqp-1.0.group-sequence"
H_REPLY_TO_GROUP_ID = "x-amqp-1.0.reply-to-group-id"
H_FIRST_ACQUIRER = "x-amqp-1.0.first-acquirer"
H_DELIVERY_COUNT = "x-amqp-1.0.delivery-count"
H_MESSAGE_ID = "x-amqp-1.0.message-id"
H_CORRELATION_ID = "x-amqp-1.0.correlation-id"
H_CREATION_TIME = "x-amqp-1.0.creation-time"
H_EXPIRY_TIME = "x-amqp-1.0.absolute-expiry-time"
H_REPLY_TO = "x-amqp-1.0.reply-to"
H_CONTENT_TYPE = "x-amqp-1.0.content-type"
H_BODY = "x-amqp-1.0.body"
H_PROPERTY_TYPES = "x-amqp-1.0.property-types"
H_MESSAGE_ANNOTATIONS = "x-amqp-1.0.message-annotations"
H_DELIVERY_ANNOTATIONS = "x-amqp-1.0.delivery-annotations"
H_FOOTER = "x-amqp-1.0.footer"
H_USER_ID = "x-amqp-1.0.user-id"
SIDE_HEADERS = frozenset({
    H_TO, H_GROUP_ID, H_GROUP_SEQUENCE, H_REPLY_TO_GROUP_ID, H_FIRST_ACQUIRER, H_DELIVERY_COUNT,
    H_MESSAGE_ID, H_CORRELATION_ID, H_CREATION_TIME, H_EXPIRY_TIME, H_REPLY_TO, H_CONTENT_TYPE,
    H_BODY, H_PROPERTY_TYPES, H_MESSAGE_ANNOTATIONS, H_DELIVERY_ANNOTATIONS, H_FOOTER, H_USER_ID,
})  # fmt: skip
"""Header names reserved for 1.0 data (rejected as 1.0 application-property names)."""
_ANNOTATION_FORMS = (dict, bytes, t.VBin32)
_SIDE_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    H_TO: ((str,), "a string"),
    H_GROUP_ID: ((str,), "a string"),
    H_REPLY_TO_GROUP_ID: ((str,), "a string"),
    H_GROUP_SEQUENCE: ((t.UInt32,), "a uint32"),
    H_FIRST_ACQUIRER: ((bool,), "a boolean"),
    H_DELIVERY_COUNT: ((t.UInt32, type(None)), "a uint32 or void"),
    H_MESSAGE_ID: ((str, bytes, t.VBin32, t.UInt64), "a string, binary or uint64 id"),
    H_CORRELATION_ID: ((bytes, t.VBin32, uuid.UUID, t.UInt64), "a binary, uuid or uint64 id"),
    H_CREATION_TIME: ((int,), "integer milliseconds"),
    H_EXPIRY_TIME: ((int,), "integer milliseconds"),
    H_REPLY_TO: ((str,), "a string"),
    H_CONTENT_TYPE: ((str,), "a string"),
    H_BODY: ((str,), "'data', 'amqp-value' or 'amqp-value-binary'"),
    H_USER_ID: ((bytes,), "a binary"),
    H_PROPERTY_TYPES: ((dict,), "a map of AMQP 1.0 type names"),
    H_MESSAGE_ANNOTATIONS: (_ANNOTATION_FORMS, "a map or an AMQP 1.0 encoded map"),
    H_DELIVERY_ANNOTATIONS: (_ANNOTATION_FORMS, "a map or an AMQP 1.0 encoded map"),
    H_FOOTER: (_ANNOTATION_FORMS, "a map or an AMQP 1.0 encoded map"),
}
"""The type the bridge writes each side-channel header with; another type is an error."""

# 0-10-only data in 1.0 message annotations
A_EXCHANGE = symbol("x-amqp-0-10.exchange")
A_ROUTING_KEY = symbol("x-amqp-0-10.routing-key")
A_HEADER_TYPES = symbol("x-amqp-0-10.header-types")
A_APP_HEADERS = symbol("x-amqp-0-10.app-headers")
A_REPLY_TO = symbol("x-amqp-0-10.reply-to")
A_DISCARD_UNROUTABLE = symbol("x-amqp-0-10.discard-unroutable")
A_IMMEDIATE = symbol("x-amqp-0-10.immediate")
A_RESUME_ID = symbol("x-amqp-0-10.resume-id")
A_RESUME_TTL = symbol("x-amqp-0-10.resume-ttl")
A_CONTENT_LENGTH = symbol("x-amqp-0-10.content-length")
A_USER_ID = symbol("x-amqp-0-10.user-id")
ANNOTATIONS = frozenset({
    A_EXCHANGE, A_ROUTING_KEY, A_HEADER_TYPES, A_APP_HEADERS, A_REPLY_TO, A_DISCARD_UNROUTABLE,
    A_IMMEDIATE, A_RESUME_ID, A_RESUME_TTL, A_CONTENT_LENGTH, A_USER_ID,
})  # fmt: skip


_REINTERPRETED = frozenset({MAP_CONTENT_TYPE, LIST_CONTENT_TYPE, BODY_CONTENT_TYPE})
_BODY_DATA, _BODY_VALUE, _BODY_BINARY = "data", "amqp-value", "amqp-value-binary"
_MISSING: Any = object()
_UINT_MAX, _U64_MAX = 2**32 - 1, 2**64 - 1
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_STR8_MAX, _STR16_MAX = 0xFF, 0xFFFF
_EMPTY_DP = DeliveryProperties()
_EMPTY_MP = MessageProperties()
_ONE = uint(1)


def _namespace(kind: str) -> bytes:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"urn:amqp-bridge:amqp-1.0:message-id:{kind}").bytes


_NS_STRING, _NS_BINARY, _NS_ULONG = _namespace("string"), _namespace("binary"), _namespace("ulong")
_UUID5_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID5_SET = (0x5000 << 64) | (0x8000 << 48)
_UUID_TEXT = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def message_id_uuid(message_id: Any) -> uuid.UUID:
    """The 0-10 message-id (a UUID) standing for a 1.0 message-id.

    A UUID stands for itself, and so (as in qpidd) do a string holding a UUID in
    its canonical text form and a 16-octet binary. Any other string, binary or
    ulong id gets a name-based UUID (version 5) under one namespace per type:
    the same 1.0 id always gives the same 0-10 id, so duplicate detection works.
    """
    kind = type(message_id)
    if kind is uuid.UUID:
        return message_id
    if kind is str:
        if len(message_id) == 36 and _UUID_TEXT.fullmatch(message_id):
            return uuid.UUID(message_id)
        namespace, name = _NS_STRING, message_id.encode("utf-8")
    elif kind is bytes:
        if len(message_id) == 16:
            return uuid.UUID(bytes=message_id)
        namespace, name = _NS_BINARY, message_id
    elif kind is ulong or (kind is int and 0 <= message_id <= _U64_MAX):
        namespace, name = _NS_ULONG, str(int(message_id)).encode("ascii")
    else:
        raise MappingError(
            f"a message id is ulong, uuid, binary or string, not {kind.__name__}",
            field="properties.message_id",
        )
    value = int.from_bytes(hashlib.sha1(namespace + name).digest()[:16], "big")
    return t.make_uuid(value & _UUID5_CLEAR | _UUID5_SET)  # RFC 4122 variant, version 5


# --- small checks -------------------------------------------------------------------------------


def _utf8_fits(value: str, limit: int) -> bool:
    return len(value) * 4 <= limit or len(value.encode("utf-8")) <= limit


def _str(value: Any, limit: int, field: str) -> str:
    if not isinstance(value, str):
        raise MappingError(f"expected a string, got {type(value).__name__}", field=field)
    if not _utf8_fits(value, limit):
        raise MappingError(
            f"{len(value.encode('utf-8'))} UTF-8 octets exceed the AMQP 0-10 limit of {limit}",
            field=field,
        )
    return str(value)


_symbols: dict[str, symbol] = {}


def _ascii_symbol(value: str, field: str) -> symbol:
    cached = _symbols.get(value)  # content types repeat: reuse their symbols
    if cached is not None:
        return cached
    if not value.isascii():
        raise MappingError(
            f"{value!r} is not ASCII, so it cannot be an AMQP 1.0 symbol", field=field
        )
    cached = symbol(value)
    if len(_symbols) < 1024:
        _symbols[value] = cached
    return cached


def _binary(value: Any, limit: int, field: str) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise MappingError(f"expected bytes, got {type(value).__name__}", field=field)
    if len(value) > limit:
        raise MappingError(
            f"{len(value)} octets exceed the AMQP 0-10 limit of {limit}", field=field
        )
    return bytes(value)


def _ranged(value: Any, high: int, field: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= high:
        raise MappingError(f"expected an integer in [0, {high}], got {value!r:.60}", field=field)
    return int(value)


def _truncated(value: str) -> str:
    """``value`` cut to at most 255 UTF-8 octets on a character boundary (a 0-10 str8)."""
    if _utf8_fits(value, _STR8_MAX):
        return value
    return value.encode("utf-8")[:_STR8_MAX].decode("utf-8", "ignore")


def _utf8_or_bytes(value: bytes) -> str | bytes:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return bytes(value)


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _side_error(name: str, expected: str, value: Any) -> MappingError:
    return MappingError(
        f"the bridge writes {expected} here, not {type(value).__name__} {value!r:.60}",
        field=f"message_properties.application_headers[{name!r}]",
    )


def _check_side(side: dict[str, Any]) -> None:
    """Every side-channel header has the type the bridge writes it with."""
    for name, value in side.items():
        kinds, expected = _SIDE_TYPES[name]
        if type(value) not in kinds:
            raise _side_error(name, expected, value)
    marker = side.get(H_BODY, _MISSING)
    if marker is not _MISSING and marker not in (_BODY_DATA, _BODY_VALUE, _BODY_BINARY):
        raise _side_error(H_BODY, "'data', 'amqp-value' or 'amqp-value-binary'", marker)


# --- reply-to -----------------------------------------------------------------------------------


def _format_reply_to(reply_to: ReplyTo) -> str:
    exchange, key = reply_to.exchange, reply_to.routing_key
    if exchange:
        return exchange if key is None else f"{exchange}/{key}"
    return "" if key is None else key


def _reads_back(address: str, reply_to: ReplyTo) -> bool:
    """Whether ``address`` parses back to ``reply_to`` (without building a struct)."""
    exchange, slash, key = address.partition("/")
    if slash:
        return reply_to.exchange == exchange and reply_to.routing_key == key
    return reply_to.exchange is None and reply_to.routing_key == address


def _parse_reply_to(address: str) -> ReplyTo | None:
    exchange, slash, key = address.partition("/")
    reply_to = ReplyTo(exchange, key) if slash else ReplyTo(None, address)
    if not _utf8_fits(reply_to.routing_key or "", _STR8_MAX) or not _utf8_fits(exchange, _STR8_MAX):
        return None
    return reply_to


def _reply_to_annotation(value: Any) -> ReplyTo | None:
    if type(value) is not dict or not value.keys() <= {"exchange", "routing-key"}:
        return None
    for key, item in value.items():
        if type(key) is not str or type(item) is not str or not _utf8_fits(item, _STR8_MAX):
            return None
    return ReplyTo(value.get("exchange"), value.get("routing-key"))


def _reply_to_from_amqp10(address: str, annotation: Any) -> tuple[ReplyTo | None, bool, bool]:
    """(0-10 reply-to, whether x-amqp-1.0.reply-to is needed, whether the annotation is consumed)."""
    if annotation is not _MISSING:
        annotated = _reply_to_annotation(annotation)
        if (
            annotated is not None
            and _format_reply_to(annotated) == address
            and not _reads_back(address, annotated)
        ):
            return annotated, False, True
    parsed = _parse_reply_to(address)
    return parsed, parsed is None or _format_reply_to(parsed) != address, False


# --- ids and times ------------------------------------------------------------------------------


def _id_header(value: Any, field: str) -> Any:
    """A 1.0 message-id/correlation-id as the typed 0-10 header that restores it."""
    kind = type(value)
    if kind is str:
        return _str(value, _STR16_MAX, field)
    if kind is bytes:
        return value if len(value) <= _STR16_MAX else t.VBin32(value)
    if kind is uuid.UUID:
        return value
    if kind is ulong or (kind is int and 0 <= value <= _U64_MAX):
        return t.UInt64(value)
    raise MappingError(
        f"a message id is ulong, uuid, binary or string, not {kind.__name__}", field=field
    )


def _id_of_header(value: Any) -> Any:
    """The 1.0 id a (type-checked) x-amqp-1.0.message-id/correlation-id header restores."""
    kind = type(value)
    if kind is bytes or kind is t.VBin32:
        return bytes(value)
    if kind is t.UInt64:
        return ulong(value)
    return value


def _correlation_from_amqp10(value: Any) -> tuple[bytes, Any]:
    """(0-10 correlation-id, header value restoring the 1.0 type or None)."""
    field = "properties.correlation_id"
    kind = type(value)
    if kind is str:
        return _binary(value.encode("utf-8"), _STR16_MAX, field), None
    if kind is bytes:
        return _binary(value, _STR16_MAX, field), (value if _is_utf8(value) else None)
    if kind is uuid.UUID:
        return str(value).encode("ascii"), value
    header = _id_header(value, field)
    return str(int(value)).encode("ascii"), header


def _seconds(ms: int) -> tuple[int, int | None]:
    """(0-10 datetime seconds, exact milliseconds to keep in a header, or None if whole)."""
    return int(ms) // 1000, (int(ms) if ms % 1000 else None)


def _ms(seconds: int, side: dict[str, Any], name: str, field: str) -> timestamp:
    exact = side.get(name, _MISSING)
    if exact is not _MISSING and exact // 1000 == seconds and exact % 1000:
        return timestamp(exact)
    ms = seconds * 1000
    if not _I64_MIN <= ms <= _I64_MAX:
        raise MappingError(f"{seconds} s is outside the AMQP 1.0 timestamp range", field=field)
    return timestamp(ms)


# --- bodies -------------------------------------------------------------------------------------


def _reinterpret(
    content_type: str, body: bytes, binary: bool = False
) -> tuple[BodyKind, Any] | None:
    """The 1.0 body a 0-10 body of this content-type stands for, or None if it is just data.

    An encoded amqp-value holding a binary stands for one only when ``binary``: the
    mapping writes that form only for a 1.0 content-type too long for a 0-10 one.
    """
    if content_type == BODY_CONTENT_TYPE:
        try:
            sections = AmqpMessage.decode_bare(body)
        except MappingError:
            return None
        if sections.application_properties or sections.properties != Properties():
            return None
        if not binary and sections.body_kind is _KIND_VALUE and type(sections.body) is bytes:
            return None
        # only what from_amqp10 itself encodes this way (canonical bytes, no simpler form)
        if _encode_body(sections.body_kind, sections.body) != (body, BODY_CONTENT_TYPE):
            return None
        return sections.body_kind, sections.body
    code, encode = (
        (0xA8, t.encode_map) if content_type == MAP_CONTENT_TYPE else (0xA9, t.encode_list)
    )
    try:
        value, end = t.decode_value(code, body)
        if end != len(body):
            return None
        out = bytearray()
        encode(out, value)
        if out != body:
            return None  # not the canonical encoding: keep the bytes as they are
        return _KIND_VALUE, nested_to_amqp10(value)
    except (CodecError, MappingError):
        return None


def _encode_body(kind: BodyKind, body: Any) -> tuple[bytes, str | None]:
    """The 0-10 body for a 1.0 body and the content-type that form implies (None: plain data)."""
    if kind is _KIND_DATA and isinstance(body, list | tuple) and len(body) == 1:
        data = body[0]
        return (data if type(data) is bytes else _binary(data, len(data), "body[0]")), None
    if kind is _KIND_VALUE:
        value_kind = type(body)
        if value_kind is str:
            try:
                return body.encode("utf-8"), TEXT_CONTENT_TYPE
            except UnicodeEncodeError as exc:
                raise MappingError(
                    f"the string body is not valid Unicode ({exc})", field="body"
                ) from None
        if value_kind is dict or value_kind is list:
            try:
                converted = nested_from_amqp10(body)
                out = bytearray()
                if value_kind is dict:
                    t.encode_map(out, converted)
                    return bytes(out), MAP_CONTENT_TYPE
                t.encode_list(out, converted)
                return bytes(out), LIST_CONTENT_TYPE
            except (Unrepresentable, CodecError):
                pass  # not an exact 0-10 map/list: carry the 1.0 encoding
    return AmqpMessage(body_kind=kind, body=body).encode_bare(), BODY_CONTENT_TYPE


def _body_from_amqp10(message: AmqpMessage) -> tuple[bytes, Any, str | None, bool]:
    """(0-10 body, 0-10 content-type, x-amqp-1.0.body marker, whether the 1.0 content-type
    must travel in x-amqp-1.0.content-type)."""
    content_type = message.properties.content_type
    if (
        message.body_kind is _KIND_VALUE
        and type(message.body) is bytes
        and (content_type is None or _utf8_fits(content_type, _STR8_MAX))
    ):
        # an amqp-value holding a binary (proton's Message(body=b"...")): the bytes
        # themselves, with the 1.0 content-type, as qpidd delivers it
        return message.body, content_type, _BODY_BINARY, False
    body, implied = _encode_body(message.body_kind, message.body)
    if implied is None:
        marker = None
        if content_type in _REINTERPRETED and _reinterpret(content_type, body) is not None:
            marker = _BODY_DATA  # these bytes would otherwise read back as an amqp-value
        return body, content_type, marker, False
    return body, implied, (_BODY_VALUE if implied == TEXT_CONTENT_TYPE else None), True


# --- annotation maps and footers ----------------------------------------------------------------


def _annotations_header(items: dict[Any, Any]) -> Any:
    """An annotations/footer map as a 0-10 map when exact, else its AMQP 1.0 encoding."""
    try:
        out = {}
        for key, value in items.items():
            if not isinstance(key, str) or not _utf8_fits(key, _STR8_MAX):
                raise Unrepresentable("key")
            out[str(key)] = nested_from_amqp10(value)
        return out
    except Unrepresentable:
        keyed = {
            symbol(k) if isinstance(k, str) else (ulong(k) if type(k) is int else k): v
            for k, v in items.items()
        }
        encoded = AmqpMessage(body=keyed).encode_bare()
        return encoded if len(encoded) <= _STR16_MAX else t.VBin32(encoded)


def _annotations_of_header(name: str, value: Any) -> dict[Any, Any]:
    """The annotations/footer map an ``x-amqp-1.0.*`` header (map or 1.0 encoding) holds."""
    if type(value) is dict:
        return {symbol(key): nested_to_amqp10(item) for key, item in value.items()}
    try:
        decoded = AmqpMessage.decode_bare(value)
    except MappingError:
        decoded = None
    if (
        decoded is None
        or decoded.body_kind is not _KIND_VALUE
        or type(decoded.body) is not dict
        or not all(type(key) in (symbol, ulong) for key in decoded.body)
    ):
        raise _side_error(name, "the AMQP 1.0 encoding of an annotations map", value)
    return decoded.body


# --- AMQP 0-10 -> AMQP 1.0 ----------------------------------------------------------------------


def assembly_to_amqp10(
    assembly: Assembly, *, user_id: str = "keep", login_user: str | None = None
) -> AmqpMessage:
    """:func:`to_amqp10` for a received ``message.transfer`` assembly."""
    return to_amqp10(
        assembly.header_struct(DeliveryProperties),
        assembly.header_struct(MessageProperties),
        assembly.body,
        user_id=user_id,
        login_user=login_user,
    )


def to_amqp10(
    delivery_properties: DeliveryProperties | None,
    message_properties: MessageProperties | None,
    body: bytes,
    *,
    user_id: str = "keep",
    login_user: str | None = None,
) -> AmqpMessage:
    """The AMQP 1.0 message for an AMQP 0-10 message (absent structs count as empty).

    ``user_id`` is the rule for the 1.0 user-id field (:data:`USER_ID_RULES`) and
    ``login_user`` the user the bridge logs into the 1.0 target as.
    Raises :class:`MappingError` (naming the 0-10 field) for what 1.0 cannot hold.
    """
    dp = delivery_properties if delivery_properties is not None else _EMPTY_DP
    mp = message_properties if message_properties is not None else _EMPTY_MP
    app: dict[str, Any] = {}
    annotations: dict[Any, Any] = {}
    side: dict[str, Any] = {}
    header_types: dict[str, str] = {}
    headers = mp.application_headers
    if headers:
        nested = _headers_to_amqp10(headers, app, side, header_types)
        if nested:
            annotations[A_APP_HEADERS] = nested
    elif headers is not None:
        annotations[A_APP_HEADERS] = {}  # an empty application-headers map, not an absent one

    properties = Properties()
    _routing_to_amqp10(dp, app, header_types, properties, annotations)
    if dp.exchange is not None:
        annotations[A_EXCHANGE] = dp.exchange
    if header_types:
        annotations[A_HEADER_TYPES] = header_types
    _flags_to_amqp10(dp, mp, annotations)
    if mp.app_id is not None:
        _app_id_to_amqp10(mp.app_id, app, side, header_types)

    header = Header()
    mode = dp.delivery_mode
    if mode is not None:
        if mode != 1 and mode != 2:
            raise MappingError(
                f"{mode} is neither 1 (non-persistent) nor 2 (persistent)",
                field="delivery_properties.delivery_mode",
            )
        header.durable = mode == 2
    if dp.priority is not None:
        header.priority = ubyte(dp.priority)
    if dp.ttl is not None:
        if dp.ttl > _UINT_MAX:
            raise MappingError(
                f"{dp.ttl} ms exceeds the AMQP 1.0 ttl limit (uint, {_UINT_MAX})",
                field="delivery_properties.ttl",
            )
        header.ttl = uint(dp.ttl)
    if dp.redelivered:
        header.delivery_count = _ONE

    uid = mp.user_id
    if side and (carried := side.get(H_USER_ID)) is not None and not uid:
        uid = carried  # the 1.0 user-id a previous route could not set (stale beside a user-id)
    if uid:  # an empty user-id is no user-id
        if user_id == "keep":
            properties.user_id = uid
        else:
            place = user_id_place(user_id, uid, login_user)
            if place == FIELD:
                properties.user_id = uid
            elif place == CARRY:
                annotations[A_USER_ID] = bytes(uid)
    if mp.message_id is not None:
        properties.message_id = mp.message_id
    if mp.correlation_id is not None:
        properties.correlation_id = _utf8_or_bytes(mp.correlation_id)
    if mp.content_encoding is not None:
        properties.content_encoding = _ascii_symbol(
            mp.content_encoding, "message_properties.content_encoding"
        )
    if dp.timestamp is not None:
        properties.creation_time = _ms(
            dp.timestamp, side, H_CREATION_TIME, "delivery_properties.timestamp"
        )
    if dp.expiration is not None:
        properties.absolute_expiry_time = _ms(
            dp.expiration, side, H_EXPIRY_TIME, "delivery_properties.expiration"
        )
    reply_to_restored = False
    if side:
        reply_to_restored = _side_to_amqp10(side, dp, mp, header, properties)
    if mp.reply_to is not None and not reply_to_restored:
        address = _format_reply_to(mp.reply_to)
        properties.reply_to = address
        if not _reads_back(address, mp.reply_to):
            annotations[A_REPLY_TO] = {
                name: value
                for name, value in (
                    ("exchange", mp.reply_to.exchange),
                    ("routing-key", mp.reply_to.routing_key),
                )
                if value is not None
            }

    body_kind, body_value, content_type = _body_to_amqp10(mp.content_type, body, side)
    properties.content_type = content_type

    message = new_message(header, {}, annotations, properties, app, body_kind, body_value, {})
    if side:
        message.message_annotations = {}
        _sections_to_amqp10(side, message, annotations)
        message.message_annotations = (
            annotations
            if not message.message_annotations
            else _merge_annotations(annotations, message.message_annotations)
        )
    return message


def _headers_to_amqp10(
    headers: dict[str, Any], app: dict[str, Any], side: dict[str, Any], header_types: dict[str, str]
) -> dict[str, Any]:
    """Split the 0-10 application headers into 1.0 properties, nested values and side channels."""
    nested: dict[str, Any] = {}
    property_types = None
    if H_PROPERTY_TYPES in headers:
        property_types = _property_types(headers[H_PROPERTY_TYPES])
    key = ""
    try:
        for key, value in headers.items():
            kind = type(value)
            if key in SIDE_HEADERS:
                side[key] = value
            elif (
                property_types is not None
                and key in property_types
                and (typed := _applied_property_type(property_types[key], value)) is not _MISSING
            ):
                app[key] = typed
            elif (
                kind is str
                or kind is bool
                or kind is bytes
                or kind is float
                or value is None
                or kind is uuid.UUID
                or (kind is int and _I64_MIN <= value <= _I64_MAX)
            ):
                app[key] = value
            elif kind is dict or kind is list or kind is t.Array:
                nested[key] = nested_to_amqp10(value)
            else:
                app[key], name = header_to_amqp10(value)
                if name is not None:
                    header_types[key] = name
    except MappingError as exc:
        raise MappingError(
            exc.reason, field=f"message_properties.application_headers[{key!r}]"
        ) from None
    if side:
        _check_side(side)
    return nested


def _property_types(value: Any) -> dict[str, str]:
    if type(value) is not dict or not all(
        type(name) is str and name in PROPERTY_TYPE_NAMES for name in value.values()
    ):
        raise _side_error(H_PROPERTY_TYPES, "a map of AMQP 1.0 type names", value)
    return value


def _applied_property_type(name: str, value: Any) -> Any:
    try:
        return apply_property_type(name, value)
    except Unrepresentable:
        return _MISSING  # stale: a 0-10 application changed the value


def _routing_to_amqp10(
    dp: DeliveryProperties,
    app: dict[str, Any],
    header_types: dict[str, str],
    properties: Properties,
    annotations: dict[Any, Any],
) -> None:
    """Subject from qpid.subject or the routing key; x-amqp-0-10.routing-key when not implied."""
    routing_key = dp.routing_key
    carrier = app.get(SUBJECT_HEADER, _MISSING)
    if (
        carrier is not _MISSING
        and (carrier is None or type(carrier) is str)
        and SUBJECT_HEADER not in header_types
    ):
        del app[SUBJECT_HEADER]
        properties.subject = carrier
        if carrier is None or routing_key != _truncated(carrier):
            annotations[A_ROUTING_KEY] = routing_key  # None: there was no routing key
        return
    properties.subject = routing_key
    if routing_key is not None:
        annotations[A_ROUTING_KEY] = routing_key


def _flags_to_amqp10(
    dp: DeliveryProperties, mp: MessageProperties, annotations: dict[Any, Any]
) -> None:
    if dp.discard_unroutable:
        annotations[A_DISCARD_UNROUTABLE] = True
    if dp.immediate:
        annotations[A_IMMEDIATE] = True
    if dp.resume_id is not None:
        annotations[A_RESUME_ID] = dp.resume_id
    if dp.resume_ttl is not None:
        annotations[A_RESUME_TTL] = ulong(dp.resume_ttl)
    if mp.content_length is not None:
        annotations[A_CONTENT_LENGTH] = ulong(mp.content_length)


def _app_id_to_amqp10(
    app_id: bytes, app: dict[str, Any], side: dict[str, Any], header_types: dict[str, str]
) -> None:
    wanted = (side.get(H_PROPERTY_TYPES) or {}).get(APP_ID_PROPERTY)
    value: Any = _MISSING
    if wanted == "binary" and _is_utf8(app_id):
        value = bytes(app_id)
    elif wanted == "symbol" and app_id.isascii():
        value = symbol(app_id.decode("ascii"))
    if value is _MISSING:
        value = _utf8_or_bytes(app_id)
    duplicate = app.pop(APP_ID_PROPERTY, _MISSING)
    if duplicate is not _MISSING:
        # qpidd and qpid.messaging repeat the app-id as this header: one value, kept once
        header_types.pop(APP_ID_PROPERTY, None)
        if not (
            duplicate == value or (type(duplicate) is str and duplicate.encode("utf-8") == app_id)
        ):
            raise MappingError(
                f"header {APP_ID_PROPERTY} {duplicate!r:.60} differs from the app-id {app_id!r:.60}",
                field=f"message_properties.application_headers[{APP_ID_PROPERTY!r}]",
            )
    app[APP_ID_PROPERTY] = value


def _side_to_amqp10(
    side: dict[str, Any],
    dp: DeliveryProperties,
    mp: MessageProperties,
    header: Header,
    properties: Properties,
) -> bool:
    """Restore 1.0 header/properties fields from side-channel headers; True if reply-to was restored."""
    get = side.get
    if (value := get(H_TO, _MISSING)) is not _MISSING:
        properties.to = value
    if (value := get(H_GROUP_ID, _MISSING)) is not _MISSING:
        properties.group_id = value
    if (value := get(H_REPLY_TO_GROUP_ID, _MISSING)) is not _MISSING:
        properties.reply_to_group_id = value
    if (value := get(H_GROUP_SEQUENCE, _MISSING)) is not _MISSING:
        properties.group_sequence = uint(value)
    if (value := get(H_FIRST_ACQUIRER, _MISSING)) is not _MISSING:
        header.first_acquirer = value
    count = get(H_DELIVERY_COUNT, _MISSING)
    # written for 0 (not redelivered), 2+ (redelivered), and 0 or void (no count) when
    # first-acquirer false alone set the flag; stale once the flag disagrees
    if count is not _MISSING:
        if dp.redelivered:
            if count is None or count == 0:
                if header.first_acquirer is False:
                    header.delivery_count = None if count is None else uint(0)
            elif count >= 2:
                header.delivery_count = uint(count)
        elif count == 0:
            header.delivery_count = uint(0)
    if (value := get(H_MESSAGE_ID, _MISSING)) is not _MISSING:
        original = _id_of_header(value)
        if mp.message_id is not None and message_id_uuid(original) == mp.message_id:
            properties.message_id = original
    if (value := get(H_CORRELATION_ID, _MISSING)) is not _MISSING:
        original = _id_of_header(value)
        if (
            mp.correlation_id is not None
            and _correlation_from_amqp10(original)[0] == mp.correlation_id
        ):
            properties.correlation_id = original
    if (value := get(H_REPLY_TO, _MISSING)) is not _MISSING:
        parsed, needed, _ = _reply_to_from_amqp10(value, _MISSING)
        if needed and parsed == mp.reply_to:
            properties.reply_to = value
            return True
    return False


def _body_to_amqp10(
    content_type: str | None, body: bytes, side: dict[str, Any]
) -> tuple[BodyKind, Any, Any]:
    marker = side.get(H_BODY, _MISSING)
    reinterpreted: tuple[BodyKind, Any] | None = None
    if marker == _BODY_BINARY:
        restored_type = (
            None
            if content_type is None
            else _ascii_symbol(content_type, "message_properties.content_type")
        )
        return _KIND_VALUE, bytes(body), restored_type
    if marker == _BODY_VALUE:
        if content_type == TEXT_CONTENT_TYPE and _is_utf8(body):
            reinterpreted = _KIND_VALUE, body.decode("utf-8")
    elif content_type in _REINTERPRETED and marker != _BODY_DATA:
        original = side.get(H_CONTENT_TYPE)
        reinterpreted = _reinterpret(
            content_type,
            body,
            binary=type(original) is str and not _utf8_fits(original, _STR8_MAX),
        )
    if reinterpreted is not None:
        original = side.get(H_CONTENT_TYPE, _MISSING)
        restored = (
            None
            if original is _MISSING
            else _ascii_symbol(
                original, f"message_properties.application_headers[{H_CONTENT_TYPE!r}]"
            )
        )
        return reinterpreted[0], reinterpreted[1], restored
    restored = (
        None
        if content_type is None
        else _ascii_symbol(content_type, "message_properties.content_type")
    )
    return _KIND_DATA, [bytes(body)], restored


def _sections_to_amqp10(
    side: dict[str, Any], message: AmqpMessage, annotations: dict[Any, Any]
) -> None:
    if (value := side.get(H_DELIVERY_ANNOTATIONS, _MISSING)) is not _MISSING:
        message.delivery_annotations = _annotations_of_header(H_DELIVERY_ANNOTATIONS, value)
    if (value := side.get(H_FOOTER, _MISSING)) is not _MISSING:
        message.footer = _annotations_of_header(H_FOOTER, value)
    if (value := side.get(H_MESSAGE_ANNOTATIONS, _MISSING)) is not _MISSING:
        message.message_annotations = _annotations_of_header(H_MESSAGE_ANNOTATIONS, value)


def _merge_annotations(generated: dict[Any, Any], restored: dict[Any, Any]) -> dict[Any, Any]:
    if A_USER_ID in generated:
        # a stale carrier beside a user-id (see from_amqp10): the user-id this route carries wins
        restored.pop(A_USER_ID, None)
    for key in restored:
        if key in generated:
            raise MappingError(
                f"annotation {key} is both carried and generated",
                field=f"message_properties.application_headers[{H_MESSAGE_ANNOTATIONS!r}]",
            )
    return {**restored, **generated}


# --- AMQP 1.0 -> AMQP 0-10 ----------------------------------------------------------------------


def from_amqp10(
    message: AmqpMessage, *, user_id: str = "keep", login_user: str | None = None
) -> tuple[DeliveryProperties, MessageProperties, bytes]:
    """The AMQP 0-10 delivery-properties, message-properties and body for an AMQP 1.0 message.

    ``user_id`` is the rule for the 0-10 user-id field (:data:`USER_ID_RULES`) and
    ``login_user`` the user the bridge logs into the 0-10 target as.
    Raises :class:`MappingError` (naming the 1.0 field) for what 0-10 cannot hold.
    """
    header, properties = message.header, message.properties
    dp = DeliveryProperties()
    mp = MessageProperties()
    ours: dict[Any, Any] = {}
    rest: dict[Any, Any] = {}
    if message.message_annotations:
        for key, value in message.message_annotations.items():
            (ours if key in ANNOTATIONS else rest)[key] = value

    headers: dict[str, Any] = {}
    property_types: dict[str, str] = {}
    applied = (
        _header_types_from_amqp10(ours, rest, message.application_properties)
        if A_HEADER_TYPES in ours
        else None
    )
    if message.application_properties:
        _properties_from_amqp10(
            message.application_properties, applied, mp, headers, property_types
        )
    empty_headers = False
    if A_APP_HEADERS in ours:
        empty_headers = _app_headers_from_amqp10(ours, rest, mp, headers)
    if ours:
        _fields_from_amqp10(ours, rest, dp, mp)
    _routing_from_amqp10(properties.subject, ours, dp, headers, property_types)

    if header.durable is not None:
        dp.delivery_mode = 2 if header.durable else 1
    if header.priority is not None:
        dp.priority = _ranged(header.priority, 0xFF, "header.priority")
    if header.ttl is not None:
        dp.ttl = _ranged(header.ttl, _UINT_MAX, "header.ttl")
    count = header.delivery_count
    first_acquirer = header.first_acquirer
    if count is not None:
        count = _ranged(count, _UINT_MAX, "header.delivery_count")
        # 0-10's redelivered: "may have been delivered before"; RabbitMQ marks a requeued
        # message with first-acquirer false and leaves delivery-count at 0
        dp.redelivered = count > 0 or first_acquirer is False
        if count != 1:
            headers[H_DELIVERY_COUNT] = t.UInt32(count)
    elif first_acquirer is False:
        dp.redelivered = True
        headers[H_DELIVERY_COUNT] = None  # void: no delivery-count (the flag alone reads as 1)
    if first_acquirer is not None:
        headers[H_FIRST_ACQUIRER] = bool(first_acquirer)

    _ids_from_amqp10(properties, mp, headers)
    uid = properties.user_id
    if A_USER_ID in ours:
        if uid:
            rest[A_USER_ID] = ours[A_USER_ID]  # stale beside a user-id: the 1.0 message's data
        else:
            uid = _carried_user_id(ours[A_USER_ID])
    if uid:  # an empty user-id is no user-id
        if user_id == "keep":
            mp.user_id = _binary(uid, _STR16_MAX, "properties.user_id")
        else:
            place = user_id_place(user_id, uid, login_user)
            if place == FIELD:
                mp.user_id = _binary(uid, _STR16_MAX, "properties.user_id")
            elif place == CARRY:
                headers[H_USER_ID] = _binary(uid, _STR16_MAX, "properties.user_id")
    if properties.to is not None:
        headers[H_TO] = _str(properties.to, _STR16_MAX, "properties.to")
    if properties.reply_to is not None:
        reply_to, needed, consumed = _reply_to_from_amqp10(
            _str(properties.reply_to, _STR16_MAX, "properties.reply_to"),
            ours.get(A_REPLY_TO, _MISSING),
        )
        mp.reply_to = reply_to
        if needed:
            headers[H_REPLY_TO] = str(properties.reply_to)
        if not consumed and A_REPLY_TO in ours:
            rest[A_REPLY_TO] = ours[A_REPLY_TO]
    elif A_REPLY_TO in ours:
        rest[A_REPLY_TO] = ours[A_REPLY_TO]
    if properties.content_encoding is not None:
        mp.content_encoding = _str(
            properties.content_encoding, _STR8_MAX, "properties.content_encoding"
        )
    if properties.creation_time is not None:
        dp.timestamp, exact = _seconds(properties.creation_time)
        if exact is not None:
            headers[H_CREATION_TIME] = exact
    if properties.absolute_expiry_time is not None:
        dp.expiration, exact = _seconds(properties.absolute_expiry_time)
        if exact is not None:
            headers[H_EXPIRY_TIME] = exact
    if properties.group_id is not None:
        headers[H_GROUP_ID] = _str(properties.group_id, _STR16_MAX, "properties.group_id")
    if properties.group_sequence is not None:
        headers[H_GROUP_SEQUENCE] = t.UInt32(
            _ranged(properties.group_sequence, _UINT_MAX, "properties.group_sequence")
        )
    if properties.reply_to_group_id is not None:
        headers[H_REPLY_TO_GROUP_ID] = _str(
            properties.reply_to_group_id, _STR16_MAX, "properties.reply_to_group_id"
        )

    body, content_type, marker, keep_content_type = _body_from_amqp10(message)
    if content_type is not None:
        mp.content_type = _str(content_type, _STR8_MAX, "properties.content_type")
    if marker is not None:
        headers[H_BODY] = marker
    if keep_content_type and properties.content_type is not None:
        headers[H_CONTENT_TYPE] = _str(
            properties.content_type, _STR16_MAX, "properties.content_type"
        )

    if property_types:
        headers[H_PROPERTY_TYPES] = property_types
    if message.delivery_annotations:
        headers[H_DELIVERY_ANNOTATIONS] = _annotations_header(message.delivery_annotations)
    if message.footer:
        headers[H_FOOTER] = _annotations_header(message.footer)
    if empty_headers:
        if headers or rest:
            rest[A_APP_HEADERS] = {}
        else:
            mp.application_headers = {}
    if rest:
        headers[H_MESSAGE_ANNOTATIONS] = _annotations_header(rest)
    if headers:
        mp.application_headers = headers
    return dp, mp, body


def _properties_from_amqp10(
    items: dict[str, Any],
    applied: dict[str, Any] | None,
    mp: MessageProperties,
    headers: dict[str, Any],
    property_types: dict[str, str],
) -> None:
    key = ""
    try:
        for key, value in items.items():
            kind = type(value)
            if key in SIDE_HEADERS:
                raise MappingError(f"{key!r} is reserved for the bridge's 1.0 data in AMQP 0-10")
            if len(key) > _STR8_MAX // 4 and not _utf8_fits(key, _STR8_MAX):
                raise MappingError(
                    f"{len(key.encode('utf-8'))} UTF-8 octets exceed the 255 of an AMQP 0-10 header key"
                )
            if key == APP_ID_PROPERTY and kind in (str, symbol, bytes):
                mp.app_id, name = _app_id_from_amqp10(value)
                if name is not None:
                    property_types[key] = name
            elif applied is not None and key in applied:
                headers[key] = applied[key]
            elif (
                kind is bool
                or kind is float
                or value is None
                or kind is uuid.UUID
                or (kind is int and _I64_MIN <= value <= _I64_MAX)
                or (
                    kind is str and (len(value) <= _STR16_MAX // 4 or _utf8_fits(value, _STR16_MAX))
                )
            ):
                headers[key] = value
            else:
                headers[key], name = property_from_amqp10(value)
                if name is not None:
                    property_types[key] = name
    except MappingError as exc:
        raise MappingError(exc.reason, field=f"application_properties[{key!r}]") from None


def _app_id_from_amqp10(value: Any) -> tuple[bytes, str | None]:
    kind = type(value)
    if kind is str:
        return _binary(value.encode("utf-8"), _STR16_MAX, ""), None
    if kind is symbol:
        return _binary(value.encode("ascii"), _STR16_MAX, ""), "symbol"
    return _binary(value, _STR16_MAX, ""), ("binary" if _is_utf8(value) else None)


def _header_types_from_amqp10(
    ours: dict[Any, Any], rest: dict[Any, Any], items: dict[str, Any]
) -> dict[str, Any] | None:
    """The 0-10 values x-amqp-0-10.header-types restores, or None (then it travels as is).

    Applied only as a whole and only if every entry still fits its property: a
    1.0 application may have changed a property since the types were recorded.
    """
    recorded = ours[A_HEADER_TYPES]
    applied = _applied_header_types(recorded, items)
    if applied is None:
        rest[A_HEADER_TYPES] = recorded
    return applied


def _applied_header_types(recorded: Any, items: dict[str, Any]) -> dict[str, Any] | None:
    if type(recorded) is not dict or not recorded:
        return None
    applied = {}
    for key, name in recorded.items():
        if (
            type(key) is not str
            or type(name) is not str
            or name not in HEADER_TYPE_NAMES
            or key not in items
            or key == APP_ID_PROPERTY
        ):
            return None
        try:
            applied[key] = apply_header_type(name, items[key])
        except Unrepresentable:
            return None
    return applied


def _app_headers_from_amqp10(
    ours: dict[Any, Any], rest: dict[Any, Any], mp: MessageProperties, headers: dict[str, Any]
) -> bool:
    """Put the nested headers back; True if the annotation is the empty-map marker."""
    recorded = ours[A_APP_HEADERS]
    if type(recorded) is dict and not recorded:
        return True
    converted: dict[str, Any] | None = {} if type(recorded) is dict else None
    if converted is not None:
        try:
            for key, value in recorded.items():
                if (
                    type(key) is not str
                    or key in headers
                    or key in SIDE_HEADERS
                    or not _utf8_fits(key, _STR8_MAX)
                ):
                    raise Unrepresentable("key")
                item = nested_from_amqp10(value)
                if type(item) not in (dict, list, t.Array):
                    raise Unrepresentable("not a nested value")
                converted[key] = item
        except Unrepresentable:
            converted = None
    if converted is None or (APP_ID_PROPERTY in converted and mp.app_id is not None):
        rest[A_APP_HEADERS] = recorded
    else:
        headers.update(converted)
    return False


def _fields_from_amqp10(
    ours: dict[Any, Any], rest: dict[Any, Any], dp: DeliveryProperties, mp: MessageProperties
) -> None:
    if (value := ours.get(A_EXCHANGE, _MISSING)) is not _MISSING:
        dp.exchange = _str(value, _STR8_MAX, f"message_annotations[{str(A_EXCHANGE)!r}]")
    for key, attr in ((A_DISCARD_UNROUTABLE, "discard_unroutable"), (A_IMMEDIATE, "immediate")):
        value = ours.get(key, _MISSING)
        if value is True:
            setattr(dp, attr, True)
        elif value is False:
            rest[key] = value  # 'not set' is the default: carried as it is
        elif value is not _MISSING:
            raise MappingError(
                f"expected a boolean, got {type(value).__name__}",
                field=f"message_annotations[{str(key)!r}]",
            )
    if (value := ours.get(A_RESUME_ID, _MISSING)) is not _MISSING:
        dp.resume_id = _str(value, _STR16_MAX, f"message_annotations[{str(A_RESUME_ID)!r}]")
    if (value := ours.get(A_RESUME_TTL, _MISSING)) is not _MISSING:
        dp.resume_ttl = _uint64(value, A_RESUME_TTL)
    if (value := ours.get(A_CONTENT_LENGTH, _MISSING)) is not _MISSING:
        mp.content_length = _uint64(value, A_CONTENT_LENGTH)


def _carried_user_id(value: Any) -> bytes:
    if type(value) is not bytes:
        raise MappingError(
            f"expected a binary user-id, got {type(value).__name__}",
            field=f"message_annotations[{str(A_USER_ID)!r}]",
        )
    return value


def _uint64(value: Any, key: symbol) -> int:
    if type(value) not in (ulong, int) or not 0 <= value <= _U64_MAX:
        raise MappingError(
            f"expected an unsigned 64-bit integer, got {value!r:.60}",
            field=f"message_annotations[{str(key)!r}]",
        )
    return int(value)


def _routing_from_amqp10(
    subject: str | None,
    ours: dict[Any, Any],
    dp: DeliveryProperties,
    headers: dict[str, Any],
    property_types: dict[str, str],
) -> None:
    """Routing key from x-amqp-0-10.routing-key or the subject; subject in qpid.subject when needed."""
    field = f"message_annotations[{str(A_ROUTING_KEY)!r}]"
    carrier: Any = _MISSING
    if subject is not None:
        subject = _str(subject, _STR16_MAX, "properties.subject")
    if A_ROUTING_KEY in ours:
        routing_key = ours[A_ROUTING_KEY]
        if routing_key is not None:
            routing_key = _str(routing_key, _STR8_MAX, field)
        if subject is None or routing_key is None or subject != routing_key:
            if (
                subject is not None
                and routing_key is not None
                and _truncated(subject) == routing_key
            ):
                raise MappingError(
                    "the routing key is the subject cut to 255 octets, which is how the bridge writes "
                    "a message without this annotation; remove it or change it",
                    field=field,
                )
            carrier = subject
    else:
        routing_key = None if subject is None else _truncated(subject)
        if subject is not None:
            carrier = subject
    dp.routing_key = routing_key

    present = headers.get(SUBJECT_HEADER, _MISSING)
    field = f"application_properties[{SUBJECT_HEADER!r}]"
    if carrier is not _MISSING:
        if present is _MISSING:
            headers[SUBJECT_HEADER] = carrier
        elif not (
            type(present) is str and present == carrier and SUBJECT_HEADER not in property_types
        ):
            raise MappingError(
                "differs from properties.subject, which travels in this 0-10 header", field=field
            )
    elif (
        present is not _MISSING
        and (present is None or type(present) is str)
        and SUBJECT_HEADER not in property_types
    ):
        raise MappingError(
            "would be read back as properties.subject (it is the 0-10 subject header)", field=field
        )


def _ids_from_amqp10(
    properties: Properties, mp: MessageProperties, headers: dict[str, Any]
) -> None:
    message_id = properties.message_id
    if message_id is not None:
        mp.message_id = message_id_uuid(message_id)
        if type(message_id) is not uuid.UUID:
            headers[H_MESSAGE_ID] = _id_header(message_id, "properties.message_id")
    if properties.correlation_id is not None:
        mp.correlation_id, original = _correlation_from_amqp10(properties.correlation_id)
        if original is not None:
            headers[H_CORRELATION_ID] = original
