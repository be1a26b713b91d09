"""Lossless AMQP 0-9-1 <-> AMQP 1.0 message translation (pure functions, no I/O).

- :func:`to_amqp10` maps a 0-9-1 message (``pamqp.commands.Basic.Properties``,
  :class:`Delivery091` and the body) to an :class:`~mappings.message.AmqpMessage`.
- :func:`from_amqp10` maps an ``AmqpMessage`` back to those three.

Every rule is in ``docs/mapping.md`` ("AMQP 0-9-1"). Fields both models have
map to each other, following RabbitMQ's own conversion (``mc_amqpl``) where it
is lossless: delivery-mode ⇄ durable, expiration ⇄ ttl, timestamp (seconds) ⇄
creation-time (ms), user-id ⇄ binary user-id, app-id ⇄ group-id, type ⇄
annotation ``x-basic-type``, routing key ⇄ subject (RabbitMQ's rule: its v1
``/exchange/X`` addresses route by the subject), redelivered ⇄ first-acquirer false
(the other 1.0 header fields only when the flag does not imply them). The exchange,
and the routing key where the subject does not say it (header ``x-amqp-1.0.subject``),
travel in annotations of the bridge's own, ``x-amqp-0-9-1.exchange`` / ``.routing-key``,
beside RabbitMQ's ``x-exchange`` / ``x-routing-key`` with the same values: RabbitMQ 4
replaces its own names with the routing it did on every delivery and keeps ours, so
ours are read first; RabbitMQ's are read only without ours (a message RabbitMQ
converted from 0-9-1), ``x-routing-key`` only without a subject (and then the key
comes back as the subject). Header
values keep their 0-9-1 type (:mod:`mappings.amqp091_values`); tables and arrays
go in the annotation ``x-amqp-0-9-1.headers``.

Data only one model has rides in the other model's extension space and is
consumed on the way back: 0-9-1-only data in 1.0 message annotations
``x-amqp-0-9-1.<field>``, 1.0-only data in 0-9-1 headers ``x-amqp-1.0.<field>``.
The user-id follows a route's rule (``user_id=`` / ``login_user=``, as in
:mod:`mappings.amqp010`). What cannot cross raises
:class:`~mappings.errors.MappingError` naming the field; nothing is dropped.
"""

from __future__ import annotations

import datetime as _dt
import operator
import uuid
from dataclasses import dataclass
from typing import Any

from pamqp.commands import Basic
from proton import symbol, timestamp, ubyte, uint, ulong

from mappings.amqp091_values import (
    HEADER_TYPE_NAMES,
    Unrepresentable,
    apply_header_type,
    apply_property_type,
    datetime_seconds,
    header_to_amqp10,
    nested_from_amqp10,
    nested_to_amqp10,
    property_from_amqp10,
    seconds_to_datetime,
)
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind, Header, Properties
from mappings.user_id import CARRY, DROP, FIELD, USER_ID_RULES, user_id_place

__all__ = [
    "AMQP10_BODY_TYPE",
    "Delivery091",
    "USER_ID_RULES",
    "annotate_exchange",
    "annotate_routing_key",
    "cut_shortstr",
    "from_amqp10",
    "to_amqp10",
]


@dataclass(frozen=True, slots=True)
class Delivery091:
    """Where a 0-9-1 message was published to or delivered from (``None``: unknown)."""

    exchange: str | None = None
    routing_key: str | None = None
    redelivered: bool = False


AMQP10_BODY_TYPE = "amqp-1.0"
"""0-9-1 ``type`` of a body holding the AMQP 1.0 encoding of the body sections (RabbitMQ's)."""

# 0-9-1 data in 1.0 message annotations (RabbitMQ's names where it has them)
A_EXCHANGE = symbol("x-exchange")
A_ROUTING_KEY = symbol("x-routing-key")
# The exchange and routing key under the bridge's own names, written beside RabbitMQ's
# and read first: RabbitMQ 4 replaces x-exchange / x-routing-key on every delivery with
# the routing it did itself (a message sent to /queues/Q: '' and Q) and keeps these.
A_PUBLISHED_EXCHANGE = symbol("x-amqp-0-9-1.exchange")
A_PUBLISHED_ROUTING_KEY = symbol("x-amqp-0-9-1.routing-key")
A_TYPE = symbol("x-basic-type")
A_HEADERS = symbol("x-amqp-0-9-1.headers")
A_HEADER_TYPES = symbol("x-amqp-0-9-1.header-types")
A_DELIVERY_MODE = symbol("x-amqp-0-9-1.delivery-mode")
A_EXPIRATION = symbol("x-amqp-0-9-1.expiration")
A_CLUSTER_ID = symbol("x-amqp-0-9-1.cluster-id")
A_USER_ID = symbol("x-amqp-0-9-1.user-id")
ANNOTATIONS = frozenset({
    A_EXCHANGE, A_ROUTING_KEY, A_PUBLISHED_EXCHANGE, A_PUBLISHED_ROUTING_KEY, A_TYPE, A_HEADERS,
    A_HEADER_TYPES, A_DELIVERY_MODE, A_EXPIRATION, A_CLUSTER_ID, A_USER_ID,
})  # fmt: skip

# 1.0 data in 0-9-1 headers
H_MESSAGE_ID = "x-amqp-1.0.message-id"
H_CORRELATION_ID = "x-amqp-1.0.correlation-id"
H_USER_ID = "x-amqp-1.0.user-id"
H_REPLY_TO = "x-amqp-1.0.reply-to"
H_GROUP_ID = "x-amqp-1.0.group-id"
H_TO = "x-amqp-1.0.to"
H_SUBJECT = "x-amqp-1.0.subject"
H_REPLY_TO_GROUP_ID = "x-amqp-1.0.reply-to-group-id"
H_GROUP_SEQUENCE = "x-amqp-1.0.group-sequence"
H_CONTENT_TYPE = "x-amqp-1.0.content-type"
H_CONTENT_ENCODING = "x-amqp-1.0.content-encoding"
H_CREATION_TIME = "x-amqp-1.0.creation-time"
H_EXPIRY_TIME = "x-amqp-1.0.absolute-expiry-time"
H_FIRST_ACQUIRER = "x-amqp-1.0.first-acquirer"
H_DELIVERY_COUNT = "x-amqp-1.0.delivery-count"
H_PROPERTY_TYPES = "x-amqp-1.0.property-types"
H_MESSAGE_ANNOTATIONS = "x-amqp-1.0.message-annotations"
H_DELIVERY_ANNOTATIONS = "x-amqp-1.0.delivery-annotations"
H_FOOTER = "x-amqp-1.0.footer"
H_BODY = "x-amqp-1.0.body"
_STRING, _BINARY, _INT, _TABLE = (str,), (bytes, bytearray), (int, uint), (dict,)
SIDE_HEADERS: dict[str, tuple[type, ...]] = {
    H_MESSAGE_ID: (str, bytes, bytearray, dict), H_CORRELATION_ID: (str, bytes, bytearray, dict),
    H_USER_ID: _BINARY, H_REPLY_TO: _STRING, H_GROUP_ID: _STRING, H_TO: _STRING,
    H_SUBJECT: (str, type(None)), H_REPLY_TO_GROUP_ID: _STRING, H_GROUP_SEQUENCE: _INT,
    H_CONTENT_TYPE: _STRING, H_CONTENT_ENCODING: _STRING, H_CREATION_TIME: (int,),
    H_EXPIRY_TIME: (int,), H_FIRST_ACQUIRER: (bool, type(None)),
    H_DELIVERY_COUNT: (int, uint, type(None)), H_PROPERTY_TYPES: _TABLE,
    H_MESSAGE_ANNOTATIONS: _BINARY, H_DELIVERY_ANNOTATIONS: _BINARY, H_FOOTER: _BINARY,
    H_BODY: _STRING,
}  # fmt: skip
"""Headers reserved for 1.0 data, with the types the mapping writes them as."""

_SHORTSTR = 255
_UINT_MAX = 2**32 - 1
_KIND_DATA, _KIND_VALUE = BodyKind.DATA, BodyKind.VALUE
_MISSING: Any = object()


def _fits_shortstr(value: str) -> bool:
    return len(value.encode("utf-8")) <= _SHORTSTR


def cut_shortstr(value: str) -> str:
    """``value`` cut to at most 255 UTF-8 octets on a character boundary (a shortstr)."""
    if _fits_shortstr(value):
        return value
    return value.encode("utf-8")[:_SHORTSTR].decode("utf-8", "ignore")


def annotate_exchange(annotations: dict[Any, Any], exchange: str | None) -> None:
    """Put a 0-9-1 exchange in ``annotations`` under both names (ours and RabbitMQ's)."""
    annotations[A_PUBLISHED_EXCHANGE] = annotations[A_EXCHANGE] = exchange


def annotate_routing_key(annotations: dict[Any, Any], routing_key: str | None) -> None:
    """Put a 0-9-1 routing key in ``annotations`` under both names (ours and RabbitMQ's):
    the key the message goes on with, whatever its subject says."""
    annotations[A_PUBLISHED_ROUTING_KEY] = annotations[A_ROUTING_KEY] = routing_key


def _symbol(value: str, field: str) -> symbol:
    if not value.isascii():
        raise MappingError(
            f"{value!r:.60} is not ASCII, so it cannot be an AMQP 1.0 symbol", field=field
        )
    return symbol(value)


def _uuid_urn(value: str) -> uuid.UUID | None:
    """The UUID a ``urn:uuid:<canonical text>`` id stands for (RabbitMQ's convention), else None."""
    if len(value) != 45 or not value.startswith("urn:uuid:"):
        return None
    try:
        parsed = uuid.UUID(value[9:])
    except ValueError:
        return None
    return parsed if value == parsed.urn else None


# --- AMQP 0-9-1 -> AMQP 1.0 ----------------------------------------------------------------------


def to_amqp10(
    properties: Basic.Properties | None,
    delivery: Delivery091 | None,
    body: bytes,
    *,
    user_id: str = "keep",
    login_user: str | None = None,
) -> AmqpMessage:
    """The AMQP 1.0 message for an AMQP 0-9-1 message (absent arguments count as empty).

    ``user_id`` is the rule for the 1.0 user-id field (:data:`USER_ID_RULES`) and
    ``login_user`` the user the bridge logs into the 1.0 target as. Raises
    :class:`MappingError` naming the 0-9-1 field for what 1.0 cannot hold.
    """
    p = properties if properties is not None else Basic.Properties()
    d = delivery if delivery is not None else Delivery091()
    header, props = Header(), Properties()
    annotations: dict[Any, Any] = {}
    app: dict[str, Any] = {}
    side: dict[str, Any] = {}
    if p.headers is not None:
        _headers_to_amqp10(p.headers, app, side, annotations)

    mode = p.delivery_mode
    if mode is not None:
        header.durable = mode == 2
        if mode not in (1, 2):
            annotations[A_DELIVERY_MODE] = ubyte(mode)
    if p.priority is not None:
        header.priority = ubyte(p.priority)
    if p.expiration is not None:
        text = p.expiration
        if text.isascii() and text.isdigit() and str(int(text)) == text and int(text) <= _UINT_MAX:
            header.ttl = uint(int(text))
        else:
            annotations[A_EXPIRATION] = text
    fa, dc = side.pop(H_FIRST_ACQUIRER, None), side.pop(H_DELIVERY_COUNT, None)
    if d.redelivered:  # RabbitMQ: first-acquirer = not redelivered; stale headers are dropped
        header.delivery_count = uint(dc) if dc else None
        header.first_acquirer = fa is True and bool(dc)

    if p.content_type is not None:
        props.content_type = _symbol(p.content_type, "properties.content_type")
    if p.content_encoding is not None:
        props.content_encoding = _symbol(p.content_encoding, "properties.content_encoding")
    props.message_id = _id_to_amqp10(p.message_id, side.pop(H_MESSAGE_ID, _MISSING), H_MESSAGE_ID)
    props.correlation_id = _id_to_amqp10(
        p.correlation_id, side.pop(H_CORRELATION_ID, _MISSING), H_CORRELATION_ID
    )
    props.reply_to = p.reply_to if p.reply_to is not None else side.pop(H_REPLY_TO, None)
    props.group_id = p.app_id if p.app_id is not None else side.pop(H_GROUP_ID, None)
    if p.timestamp is not None:
        seconds = (
            datetime_seconds(p.timestamp)
            if isinstance(p.timestamp, _dt.datetime)
            else int(p.timestamp)
        )
        exact = side.pop(H_CREATION_TIME, _MISSING)
        ok = exact is not _MISSING and exact // 1000 == seconds and exact % 1000
        props.creation_time = timestamp(exact if ok else seconds * 1000)
    if p.message_type is not None:
        annotations[A_TYPE] = p.message_type
    if p.cluster_id:  # pamqp's default is "": an empty cluster-id is no cluster-id
        annotations[A_CLUSTER_ID] = p.cluster_id
    if d.exchange is not None:
        annotate_exchange(annotations, d.exchange)
    _routing_to_amqp10(d.routing_key, side.pop(H_SUBJECT, _MISSING), props, annotations)

    uid: Any = p.user_id.encode("utf-8") if p.user_id else None
    carried = side.pop(H_USER_ID, None)
    if not uid and carried:
        uid = bytes(carried)
    if uid:
        place = user_id_place(user_id, uid, login_user)
        if place == FIELD:
            props.user_id = uid
        elif place == CARRY:
            annotations[A_USER_ID] = uid

    body_kind, body_value = _body_to_amqp10(p, body, side, annotations)
    if side:
        _side_to_amqp10(side, header, props, annotations)
    message = AmqpMessage(
        header=header, message_annotations=annotations, properties=props,
        application_properties=app, body_kind=body_kind, body=body_value,
    )  # fmt: skip
    for name, section in ((H_DELIVERY_ANNOTATIONS, "delivery_annotations"), (H_FOOTER, "footer")):
        if name in side:
            setattr(message, section, _decode_map(side.pop(name), name))
    if H_MESSAGE_ANNOTATIONS in side:
        for key, value in _decode_map(
            side.pop(H_MESSAGE_ANNOTATIONS), H_MESSAGE_ANNOTATIONS
        ).items():
            annotations.setdefault(key, value)
    return message


def _routing_to_amqp10(
    routing_key: str | None, carried: Any, props: Properties, annotations: dict[Any, Any]
) -> None:
    """The subject is the routing key, or the ``x-amqp-1.0.subject`` header when present
    (void: no subject); the routing-key annotations hold the key when the subject does not
    imply it."""
    if carried is _MISSING:
        props.subject = routing_key
        return
    props.subject = carried
    if carried is None or routing_key != cut_shortstr(carried) or routing_key == carried:
        annotate_routing_key(annotations, routing_key)  # None (null): there was no routing key


def _redelivered(first_acquirer: Any, delivery_count: Any) -> bool:
    return first_acquirer is False or (delivery_count or 0) > 0


def _headers_to_amqp10(
    headers: dict[str, Any], app: dict[str, Any], side: dict[str, Any], annotations: dict[Any, Any]
) -> None:
    nested: dict[str, Any] = {}
    header_types: dict[str, str] = {}
    property_types: Any = headers.get(H_PROPERTY_TYPES)
    name = ""
    try:
        for name, value in headers.items():
            if name in SIDE_HEADERS:
                if type(value) not in SIDE_HEADERS[name]:
                    raise MappingError(f"the mapping writes {SIDE_HEADERS[name][0].__name__} here, "
                                       f"not {type(value).__name__}")  # fmt: skip
                if name != H_PROPERTY_TYPES:
                    side[name] = value
                continue
            try:
                converted, recorded = header_to_amqp10(value)
            except Unrepresentable:
                nested[name] = nested_to_amqp10(value)
                continue
            if recorded is not None:
                header_types[name] = recorded
            elif property_types and name in property_types:
                try:
                    converted = apply_property_type(property_types[name], value)
                except Unrepresentable:
                    raise MappingError(f"does not hold a {property_types[name]} as "
                                       f"{H_PROPERTY_TYPES!r} says") from None  # fmt: skip
            app[name] = converted
    except MappingError as exc:
        raise MappingError(exc.reason, field=f"properties.headers[{name!r}]") from None
    if property_types and not set(property_types) <= set(app):
        raise MappingError(
            "names a header that is absent", field=f"properties.headers[{H_PROPERTY_TYPES!r}]"
        )
    if nested or not headers:
        annotations[A_HEADERS] = nested  # {} marks an empty (not absent) headers table
    if header_types:
        annotations[A_HEADER_TYPES] = header_types


def _header_field(name: str) -> str:
    """The field name of header ``name`` in a :class:`MappingError`."""
    return f"properties.headers[{name!r}]"


def _id_to_amqp10(value: str | None, carried: Any, carrier: str) -> Any:
    if carried is not _MISSING:
        kind = type(carried)
        if kind is dict:  # {"ulong": text} or {"string": text} beside the field
            tag, text = next(iter(carried.items())) if len(carried) == 1 else (None, None)
            if text == value and tag == "ulong" and value is not None and value.isdigit():
                return ulong(int(value))
            if text == value and tag == "string":
                return value
            raise MappingError(f"{carried!r:.60} does not describe the id field",
                               field=_header_field(carrier))
        if value is not None:
            raise MappingError("present beside the id field it stands for",
                               field=_header_field(carrier))
        return carried if kind is str else bytes(carried)
    if value is None:
        return None
    return _uuid_urn(value) or value


def _body_to_amqp10(
    p: Basic.Properties, body: bytes, side: dict[str, Any], annotations: dict[Any, Any]
) -> tuple[BodyKind, Any]:
    marker = side.pop(H_BODY, _MISSING)
    if marker is not _MISSING and marker != "data":
        raise MappingError(f"{marker!r:.40} is not 'data'", field=f"properties.headers[{H_BODY!r}]")
    if p.message_type == AMQP10_BODY_TYPE and marker is _MISSING:
        sections = _body_sections(body)
        if sections is not None:
            del annotations[A_TYPE]
            return sections
    return _KIND_DATA, [bytes(body)]


def _body_sections(body: bytes) -> tuple[BodyKind, Any] | None:
    """The 1.0 body sections ``body`` encodes, if it is exactly what :func:`from_amqp10` writes."""
    try:
        decoded = AmqpMessage.decode_bare(body)
    except MappingError:
        return None
    if decoded.application_properties or decoded.properties != Properties():
        return None
    if _encoded_body(decoded.body_kind, decoded.body) != body:
        return None
    return decoded.body_kind, decoded.body


def _encoded_body(kind: BodyKind, body: Any) -> bytes:
    return AmqpMessage(body_kind=kind, body=body).encode_bare()


def _side_to_amqp10(
    side: dict[str, Any], header: Header, props: Properties, annotations: dict[Any, Any]
) -> None:
    for name, attr in (
        (H_TO, "to"),
        (H_SUBJECT, "subject"),
        (H_REPLY_TO_GROUP_ID, "reply_to_group_id"),
    ):
        if name in side:
            setattr(props, attr, side.pop(name))
    if H_GROUP_SEQUENCE in side:
        props.group_sequence = uint(side.pop(H_GROUP_SEQUENCE))
    if H_EXPIRY_TIME in side:
        props.absolute_expiry_time = timestamp(side.pop(H_EXPIRY_TIME))
    for name, attr in ((H_CONTENT_TYPE, "content_type"), (H_CONTENT_ENCODING, "content_encoding")):
        if name in side:
            if getattr(props, attr) is not None:
                raise MappingError(
                    "present beside the field it stands for", field=f"properties.headers[{name!r}]"
                )
            setattr(props, attr, symbol(side.pop(name)))
    for name in (H_REPLY_TO, H_GROUP_ID, H_CREATION_TIME):
        if name in side:
            raise MappingError(
                "does not agree with the field it stands for", field=f"properties.headers[{name!r}]"
            )


def _decode_map(value: Any, name: str) -> dict[Any, Any]:
    try:
        decoded = AmqpMessage.decode_bare(bytes(value))
    except MappingError:
        decoded = None
    if decoded is None or decoded.body_kind is not _KIND_VALUE or type(decoded.body) is not dict:
        raise MappingError(
            "is not the AMQP 1.0 encoding of a map", field=f"properties.headers[{name!r}]"
        )
    return decoded.body


# --- AMQP 1.0 -> AMQP 0-9-1 ----------------------------------------------------------------------


def from_amqp10(
    message: AmqpMessage, *, user_id: str = "keep", login_user: str | None = None
) -> tuple[Basic.Properties, Delivery091, bytes]:
    """The AMQP 0-9-1 properties, delivery info and body for an AMQP 1.0 message.

    ``user_id`` is the rule for the 0-9-1 user-id field (:data:`USER_ID_RULES`)
    and ``login_user`` the user the bridge logs into the 0-9-1 target as.
    Raises :class:`MappingError` naming the 1.0 field for what 0-9-1 cannot hold.
    """
    header, props = message.header, message.properties
    p = Basic.Properties()
    ours: dict[Any, Any] = {}
    rest: dict[Any, Any] = {}
    for key, value in message.message_annotations.items():
        (ours if key in ANNOTATIONS else rest)[key] = value
    headers: dict[str, Any] = {}
    property_types: dict[str, str] = {}
    _properties_from_amqp10(message.application_properties, ours, rest, headers, property_types)
    empty_table = _nested_from_amqp10(ours, rest, headers)

    if header.durable is not None:
        p.delivery_mode = 2 if header.durable else 1
        mode = ours.pop(A_DELIVERY_MODE, _MISSING)
        if mode is not _MISSING:
            if type(mode) is ubyte and mode not in (1, 2) and (mode == 2) == header.durable:
                p.delivery_mode = int(mode)
            else:
                rest[A_DELIVERY_MODE] = mode
    if header.priority is not None:
        p.priority = int(header.priority)
    if header.ttl is not None:
        p.expiration = str(int(header.ttl))
    if (value := ours.pop(A_EXPIRATION, _MISSING)) is not _MISSING:
        if p.expiration is None and type(value) is str and _fits_shortstr(value):
            p.expiration = value
        else:
            rest[A_EXPIRATION] = value
    fa, dc = header.first_acquirer, header.delivery_count
    redelivered = _redelivered(fa, dc)
    if redelivered and dc:  # what the flag does not say, never a default or void
        headers[H_DELIVERY_COUNT] = uint(dc)
        if fa:
            headers[H_FIRST_ACQUIRER] = True

    for attr, name, carrier in (
        ("content_type", "content_type", H_CONTENT_TYPE),
        ("content_encoding", "content_encoding", H_CONTENT_ENCODING),
    ):
        value = getattr(props, attr)
        if value is not None:
            if _fits_shortstr(value):
                setattr(p, name, str(value))
            else:
                headers[carrier] = str(value)
    p.message_id = _id_from_amqp10(props.message_id, headers, H_MESSAGE_ID, "message_id")
    p.correlation_id = _id_from_amqp10(
        props.correlation_id, headers, H_CORRELATION_ID, "correlation_id"
    )
    for value, attr, carrier in (
        (props.reply_to, "reply_to", H_REPLY_TO),
        (props.group_id, "app_id", H_GROUP_ID),
    ):
        if value is not None:
            if _fits_shortstr(value):
                setattr(p, attr, value)
            else:
                headers[carrier] = value
    if props.creation_time is not None:
        # operator.index, not int(): the compiled build keeps int(x) of an int as x, so a
        # large proton.timestamp would stay one (the header must hold a plain int)
        ms = operator.index(props.creation_time)
        try:
            p.timestamp = seconds_to_datetime(ms // 1000)
        except Unrepresentable as exc:
            raise MappingError(str(exc), field="properties.creation_time") from None
        if ms % 1000:
            headers[H_CREATION_TIME] = ms
    if props.absolute_expiry_time is not None:
        headers[H_EXPIRY_TIME] = operator.index(props.absolute_expiry_time)
    for value, carrier in ((props.to, H_TO), (props.reply_to_group_id, H_REPLY_TO_GROUP_ID)):
        if value is not None:
            headers[carrier] = value
    if props.group_sequence is not None:
        headers[H_GROUP_SEQUENCE] = uint(props.group_sequence)

    uid = props.user_id
    carried = ours.pop(A_USER_ID, _MISSING)
    if carried is not _MISSING:
        if uid or type(carried) is not bytes:
            rest[A_USER_ID] = carried
        else:
            uid = carried
    if uid:
        place = user_id_place(user_id, uid, login_user)
        text = _utf8(uid)
        if place == FIELD and text is not None and _fits_shortstr(text):
            p.user_id = text
        elif place != DROP:
            headers[H_USER_ID] = bytes(uid)

    mtype = ours.pop(A_TYPE, _MISSING)
    if mtype is not _MISSING and type(mtype) is str and _fits_shortstr(mtype):
        p.message_type = mtype
    elif mtype is not _MISSING:
        rest[A_TYPE] = mtype
    cluster = ours.pop(A_CLUSTER_ID, _MISSING)
    if cluster is not _MISSING and type(cluster) is str and cluster and _fits_shortstr(cluster):
        p.cluster_id = cluster
    elif cluster is not _MISSING:
        rest[A_CLUSTER_ID] = cluster
    # Ours first: RabbitMQ 4 replaced x-exchange / x-routing-key with its own routing.
    _, exchange = _shortstr_annotation(ours, A_PUBLISHED_EXCHANGE, A_EXCHANGE, use_theirs=True)
    if exchange is _MISSING:
        exchange = None
    name, annotated = _shortstr_annotation(
        ours, A_PUBLISHED_ROUTING_KEY, A_ROUTING_KEY, use_theirs=props.subject is None
    )
    if name == A_ROUTING_KEY:  # RabbitMQ's alone: the key, which comes back as the subject
        routing_key = annotated if annotated is not _MISSING else None
    else:
        routing_key = _routing_from_amqp10(props.subject, name, annotated, headers)

    body = _body_from_amqp10(message, p, headers, rest)
    if property_types:
        headers[H_PROPERTY_TYPES] = property_types
    if message.delivery_annotations:
        headers[H_DELIVERY_ANNOTATIONS] = _encoded_body(_KIND_VALUE, message.delivery_annotations)
    if message.footer:
        headers[H_FOOTER] = _encoded_body(_KIND_VALUE, message.footer)
    rest.update(ours)  # annotations of ours this direction did not consume
    if rest:
        headers[H_MESSAGE_ANNOTATIONS] = _encoded_body(_KIND_VALUE, rest)
    if headers:
        if empty_table:
            rest_marker: dict[Any, Any] = {
                A_HEADERS: {}
            }  # beside other headers the marker is 1.0 data
            headers[H_MESSAGE_ANNOTATIONS] = _encoded_body(_KIND_VALUE, {**rest, **rest_marker})
        p.headers = headers
    elif empty_table:
        p.headers = {}
    return p, Delivery091(exchange, routing_key, redelivered), body


def _shortstr_annotation(
    ours: dict[Any, Any], own: symbol, theirs: symbol, *, use_theirs: bool
) -> tuple[symbol, Any]:
    """Which of the annotations ``own`` (the bridge's) and ``theirs`` (RabbitMQ's, used only
    when ``use_theirs`` and ours is absent) holds the value, and the value (None: null,
    ``_MISSING``: neither); both are consumed, the one not used being the 1.0 broker's
    routing (RabbitMQ 4 writes its own there on every delivery)."""
    mine, other = ours.pop(own, _MISSING), ours.pop(theirs, _MISSING)
    name, value = (own, mine) if mine is not _MISSING or not use_theirs else (theirs, other)
    if value is not _MISSING and value is not None and (
        type(value) is not str or not _fits_shortstr(value)
    ):
        raise MappingError(
            "expected a string of at most 255 octets", field=f"message_annotations[{str(name)!r}]"
        )
    return name, value


def _routing_from_amqp10(
    subject: str | None, name: symbol, annotated: Any, headers: dict[str, Any]
) -> Any:
    """The routing key: the annotated one (``name``) when there is one, else the subject
    (cut to 255 octets); the subject goes in the ``x-amqp-1.0.subject`` header when the
    key does not say it."""
    if annotated is _MISSING:
        if subject is None:
            return None
        if not _fits_shortstr(subject):
            headers[H_SUBJECT] = subject
        return cut_shortstr(subject)
    if (
        type(annotated) is str
        and subject is not None
        and annotated != subject
        and annotated == cut_shortstr(subject)
    ):
        raise MappingError(
            "the routing key is the subject cut to 255 octets, which is how the bridge writes "
            "a message without this annotation; remove it or change it",
            field=f"message_annotations[{str(name)!r}]",
        )
    headers[H_SUBJECT] = subject  # None (void): there was no subject
    return annotated


def _utf8(value: bytes) -> str | None:
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return None


def _properties_from_amqp10(
    items: dict[str, Any], ours: dict[Any, Any], rest: dict[Any, Any],
    headers: dict[str, Any], property_types: dict[str, str],
) -> None:  # fmt: skip
    recorded = ours.pop(A_HEADER_TYPES, _MISSING)
    applied: dict[str, Any] = {}
    if recorded is not _MISSING:
        try:
            if type(recorded) is not dict or not recorded:
                raise Unrepresentable("not a map")
            for key, name in recorded.items():
                if type(key) is not str or name not in HEADER_TYPE_NAMES or key not in items:
                    raise Unrepresentable("entry")
                applied[key] = apply_header_type(name, items[key])
        except Unrepresentable:
            applied = {}
            rest[A_HEADER_TYPES] = recorded  # changed since it was recorded: 1.0 data
    key = ""
    try:
        for key, value in items.items():
            if key in SIDE_HEADERS:
                raise MappingError("is reserved for the mapping's 1.0 data in AMQP 0-9-1")
            if key in applied:
                headers[key] = applied[key]
                continue
            headers[key], name = property_from_amqp10(value)
            if name is not None:
                property_types[key] = name
    except MappingError as exc:
        raise MappingError(exc.reason, field=f"application_properties[{key!r}]") from None


def _nested_from_amqp10(
    ours: dict[Any, Any], rest: dict[Any, Any], headers: dict[str, Any]
) -> bool:
    """Put the tables and arrays back; True if the annotation marks an empty headers table."""
    recorded = ours.pop(A_HEADERS, _MISSING)
    if recorded is _MISSING:
        return False
    try:
        if type(recorded) is not dict:
            raise Unrepresentable("not a map")
        converted = {}
        for key, value in recorded.items():
            if (
                type(key) is not str
                or key in headers
                or key in SIDE_HEADERS
                or type(value) not in (dict, list)
            ):
                raise Unrepresentable("key")
            converted[key] = nested_from_amqp10(value)
    except Unrepresentable:
        rest[A_HEADERS] = recorded
        return False
    headers.update(converted)
    return not recorded


def _id_from_amqp10(value: Any, headers: dict[str, Any], carrier: str, name: str) -> str | None:
    if value is None:
        return None
    kind = type(value)
    if kind is uuid.UUID:
        return value.urn
    if kind is ulong:
        headers[carrier] = {"ulong": str(int(value))}
        return str(int(value))
    if kind is str:
        if not _fits_shortstr(value):
            headers[carrier] = value
            return None
        if _uuid_urn(value) is not None:
            headers[carrier] = {"string": value}
        return value
    if kind is bytes:
        headers[carrier] = value
        return None
    raise MappingError(
        f"a message id is ulong, uuid, binary or string, not {kind.__name__}",
        field=f"properties.{name}",
    )


def _body_from_amqp10(
    message: AmqpMessage, p: Basic.Properties, headers: dict[str, Any], rest: dict[Any, Any]
) -> bytes:
    if message.body_kind is _KIND_DATA and len(message.body) == 1:
        body = bytes(message.body[0])
        if p.message_type == AMQP10_BODY_TYPE and _body_sections(body) is not None:
            headers[H_BODY] = "data"  # these bytes would otherwise read back as 1.0 sections
        return body
    if p.message_type is not None:
        rest[A_TYPE] = p.message_type  # the type field marks the 1.0 encoding (RabbitMQ's)
    p.message_type = AMQP10_BODY_TYPE
    return _encoded_body(message.body_kind, message.body)
