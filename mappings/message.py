"""The project's AMQP 1.0 message model and its AMQP encoding.

:class:`AmqpMessage` is the lingua franca of amqp-bridge: the AMQP 0-10 mapping
produces and consumes it, the CloudEvents layer reads and writes it, and the
live bridge turns it into bytes (:meth:`AmqpMessage.encode`) or a
``proton.Message`` (:meth:`AmqpMessage.to_proton`).

Typed AMQP values use python-qpid-proton's type classes (``proton.symbol``,
``ulong``, ``timestamp``, ``Described``, ...), so a value keeps its AMQP type
through every conversion. Plain Python values map as proton maps them: ``int``
→ long, ``float`` → double, ``str`` → string, ``bytes`` → binary, ``bool`` →
boolean, ``uuid.UUID`` → uuid, ``None`` → null, ``list`` → list, ``dict`` → map.

Encoding is canonical: a section that is empty (a header or properties with
every field ``None``, an empty annotations or application-properties map) is
omitted, trailing null fields of the header and properties lists are dropped,
and values are written by proton's encoder. ``decode(encode(m)) == m`` holds
for every valid message; decoding maps an absent section to its empty default.

Known limits: proton 0.40's decoder loses the siblings that follow a described
value whose value is itself described (``Described(d, Described(...))``), so
such values do not round-trip. AMQP 1.0 restricts application-property values
to simple types; like proton, this model does not enforce it (AMQP 0-10
headers can hold maps and lists), so check peers before sending compound values.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, TypeAlias

import proton
from proton import UNDESCRIBED, Array, Data, Described, symbol, timestamp, ubyte, uint, ulong

from mappings.errors import MappingError

__all__ = [
    "AmqpMessage",
    "BodyKind",
    "Header",
    "MessageId",
    "Properties",
    "new_message",
]

MessageId: TypeAlias = ulong | uuid.UUID | bytes | str
"""The AMQP 1.0 message-id / correlation-id types: ulong, uuid, binary or string."""


class BodyKind(enum.Enum):
    """Which of the three AMQP 1.0 body shapes :attr:`AmqpMessage.body` holds."""

    DATA = "data"
    """``body`` is a non-empty list of ``bytes``, one per data section."""
    SEQUENCE = "amqp-sequence"
    """``body`` is a non-empty list of lists, one per amqp-sequence section."""
    VALUE = "amqp-value"
    """``body`` is the single amqp-value (any AMQP value, ``None`` for null)."""


_new = object.__new__
# Enum members as module constants: reading one from its class is slow on Python 3.11.
_KIND_DATA, _KIND_VALUE = BodyKind.DATA, BodyKind.VALUE


@dataclass(slots=True)
class Header:
    """The header section; ``None`` means the field is absent (its AMQP default)."""

    durable: bool | None = None
    priority: int | None = None
    """ubyte; AMQP's default is 4."""
    ttl: int | None = None
    """Time to live in milliseconds (uint)."""
    first_acquirer: bool | None = None
    delivery_count: int | None = None
    """uint."""

    def copy(self) -> Header:
        """A copy (what ``dataclasses.replace(header)`` gives, for hot paths)."""
        return Header(self.durable, self.priority, self.ttl, self.first_acquirer,
                      self.delivery_count)


@dataclass(slots=True)
class Properties:
    """The properties section (immutable part of the bare message); ``None`` = absent."""

    message_id: MessageId | None = None
    user_id: bytes | None = None
    to: str | None = None
    subject: str | None = None
    reply_to: str | None = None
    correlation_id: MessageId | None = None
    content_type: str | None = None
    """A ``proton.symbol`` on the wire; plain ``str`` is accepted."""
    content_encoding: str | None = None
    """A ``proton.symbol`` on the wire; plain ``str`` is accepted."""
    absolute_expiry_time: int | None = None
    """``proton.timestamp``: milliseconds since the Unix epoch."""
    creation_time: int | None = None
    """``proton.timestamp``: milliseconds since the Unix epoch."""
    group_id: str | None = None
    group_sequence: int | None = None
    """sequence-no (uint)."""
    reply_to_group_id: str | None = None

    def with_content_type(self, content_type: str | None) -> Properties:
        """A copy with ``content_type`` replaced (what ``dataclasses.replace`` gives,
        for hot paths)."""
        return Properties(self.message_id, self.user_id, self.to, self.subject, self.reply_to,
                          self.correlation_id, content_type, self.content_encoding,
                          self.absolute_expiry_time, self.creation_time, self.group_id,
                          self.group_sequence, self.reply_to_group_id)


@dataclass(slots=True, kw_only=True)
class AmqpMessage:
    """An AMQP 1.0 message: the annotated message's sections as plain fields.

    The bare message is ``properties``, ``application_properties`` and the body
    (``body_kind`` + ``body``); ``header``, the two annotation maps and ``footer``
    belong to the annotated message around it. Annotation and footer keys are
    ``proton.symbol`` or ``proton.ulong`` (a plain ``str`` key is written as a
    symbol); application-property keys are strings.
    """

    header: Header = field(default_factory=Header)
    delivery_annotations: dict[Any, Any] = field(default_factory=dict)
    message_annotations: dict[Any, Any] = field(default_factory=dict)
    properties: Properties = field(default_factory=Properties)
    application_properties: dict[str, Any] = field(default_factory=dict)
    body_kind: BodyKind = BodyKind.VALUE
    body: Any = None
    footer: dict[Any, Any] = field(default_factory=dict)

    def encode(self) -> bytes:
        """The whole annotated message as AMQP 1.0 bytes (header ... footer).

        These are the bytes a sender streams as one delivery (``Sender.stream``);
        unlike :meth:`to_proton`, they carry every body shape and the footer.
        """
        data = Data()
        _put_composite(data, _HEADER, _header_fields(self.header))
        _put_annotations(
            data, _DELIVERY_ANNOTATIONS, self.delivery_annotations, "delivery_annotations"
        )
        _put_annotations(
            data, _MESSAGE_ANNOTATIONS, self.message_annotations, "message_annotations"
        )
        self._put_bare(data)
        _put_annotations(data, _FOOTER, self.footer, "footer")
        return bytes(data.encode())

    def encode_bare(self) -> bytes:
        """The bare message only: properties, application-properties and body sections."""
        data = Data()
        self._put_bare(data)
        return bytes(data.encode())

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> AmqpMessage:
        """Decode a whole annotated message (what :meth:`encode` writes or a peer sends).

        Raises :class:`MappingError` for malformed bytes, unknown or misordered
        sections and mixed body kinds.
        """
        return _decode(data, bare=False)

    @classmethod
    def decode_bare(cls, data: bytes | bytearray | memoryview) -> AmqpMessage:
        """Decode a bare message; header, annotation and footer sections are an error."""
        return _decode(data, bare=True)

    def to_proton(self) -> proton.Message:
        """This message as a ``proton.Message``.

        ``proton.Message`` holds exactly one body section and no footer, so a
        message with several data or amqp-sequence sections, or with a footer,
        raises :class:`MappingError` (field ``"body"`` / ``"footer"``): send
        :meth:`encode` bytes with ``Sender.stream()`` + ``Sender.advance()``
        instead. Note that proton re-encodes AMQP defaults as absent (priority 4,
        ttl 0, creation-time 0, empty user-id, ...).
        """
        if self.footer:
            raise MappingError(
                "proton.Message cannot carry a footer; send encode() bytes instead", field="footer"
            )
        if self.body_kind is not _KIND_VALUE and len(self.body or ()) != 1:
            raise MappingError(
                f"proton.Message holds one body section, this message has {len(self.body or ())} "
                f"{self.body_kind.value} sections; send encode() bytes instead",
                field="body",
            )
        encoded = self.encode()
        message = proton.Message()
        message.decode(encoded)
        # proton's decoder hands out binary values as views into its own buffers;
        # replace the maps and body with independent copies of the same values.
        canonical = _decode(encoded, bare=False)
        message.instructions = canonical.delivery_annotations or None
        message.annotations = canonical.message_annotations or None
        message.properties = canonical.application_properties or None  # type: ignore[assignment]
        message.body = (
            canonical.body if canonical.body_kind is _KIND_VALUE else canonical.body[0]
        )
        return message

    @classmethod
    def from_proton(cls, message: proton.Message) -> AmqpMessage:
        """The ``AmqpMessage`` equivalent of a ``proton.Message`` (via its encoding)."""
        return _decode(message.encode(), bare=False)

    def _put_bare(self, data: Data) -> None:
        _put_composite(data, _PROPERTIES, _properties_fields(self.properties))
        _put_application_properties(data, self.application_properties)
        _put_body(data, self.body_kind, self.body)


# --- section descriptors ----------------------------------------------------------------------

_HEADER = ulong(0x70)
_DELIVERY_ANNOTATIONS = ulong(0x71)
_MESSAGE_ANNOTATIONS = ulong(0x72)
_PROPERTIES = ulong(0x73)
_APPLICATION_PROPERTIES = ulong(0x74)
_DATA = ulong(0x75)
_AMQP_SEQUENCE = ulong(0x76)
_AMQP_VALUE = ulong(0x77)
_FOOTER = ulong(0x78)

# descriptor (numeric or symbolic) -> (section name, position in the message)
_SECTIONS: dict[Any, tuple[str, int]] = {}
for _code, _sym, _name, _rank in [
    (_HEADER, "amqp:header:list", "header", 0),
    (_DELIVERY_ANNOTATIONS, "amqp:delivery-annotations:map", "delivery_annotations", 1),
    (_MESSAGE_ANNOTATIONS, "amqp:message-annotations:map", "message_annotations", 2),
    (_PROPERTIES, "amqp:properties:list", "properties", 3),
    (_APPLICATION_PROPERTIES, "amqp:application-properties:map", "application_properties", 4),
    (_DATA, "amqp:data:binary", "data", 5),
    (_AMQP_SEQUENCE, "amqp:amqp-sequence:list", "amqp-sequence", 5),
    (_AMQP_VALUE, "amqp:amqp-value:*", "amqp-value", 5),
    (_FOOTER, "amqp:footer:map", "footer", 6),
]:
    _SECTIONS[_code] = _SECTIONS[symbol(_sym)] = (_name, _rank)
_BARE_SECTIONS = frozenset(
    {"properties", "application_properties", "data", "amqp-sequence", "amqp-value"}
)
_BODY_KINDS = {
    "data": BodyKind.DATA,
    "amqp-sequence": BodyKind.SEQUENCE,
    "amqp-value": BodyKind.VALUE,
}


# --- encoding ---------------------------------------------------------------------------------

_ENCODE_ERRORS = (
    KeyError,
    TypeError,
    ValueError,
    OverflowError,
    AssertionError,
    proton.DataException,
)


def new_message(
    header: Header,
    delivery_annotations: dict[Any, Any],
    message_annotations: dict[Any, Any],
    properties: Properties,
    application_properties: dict[str, Any],
    body_kind: BodyKind,
    body: Any,
    footer: dict[Any, Any],
) -> AmqpMessage:
    """``AmqpMessage(header=header, ...)`` with every field given, for hot paths.

    Calling a class with keywords is slow on Python 3.11 (they are packed into a
    dict on the way to ``__init__``); this sets the slots directly.
    """
    message = _new(AmqpMessage)
    message.header = header
    message.delivery_annotations = delivery_annotations
    message.message_annotations = message_annotations
    message.properties = properties
    message.application_properties = application_properties
    message.body_kind = body_kind
    message.body = body
    message.footer = footer
    return message


def _put_value(data: Data, value: Any, where: str) -> None:
    try:
        data.put_object(value)
    except _ENCODE_ERRORS as exc:
        raise MappingError(
            f"cannot encode {type(value).__name__} value {value!r} as AMQP ({exc!r})", field=where
        ) from exc


def _put_composite(data: Data, descriptor: ulong, values: list[Any]) -> None:
    while values and values[-1] is None:
        values.pop()
    if values:
        data.put_object(Described(descriptor, values))


def _put_map(data: Data, items: dict[Any, Any], key: Callable[[Any, str], Any], where: str) -> None:
    data.put_map()
    data.enter()
    for k, v in items.items():
        place = f"{where}[{k!r}]"
        _put_value(data, key(k, place), place)
        _put_value(data, v, place)
    data.exit()


def _put_annotations(data: Data, descriptor: ulong, items: dict[Any, Any], where: str) -> None:
    if items:
        data.put_described()
        data.enter()
        data.put_ulong(descriptor)
        _put_map(data, items, _annotation_key, where)
        data.exit()


def _put_application_properties(data: Data, items: dict[str, Any]) -> None:
    if items:
        data.put_described()
        data.enter()
        data.put_ulong(_APPLICATION_PROPERTIES)
        _put_map(data, items, _property_key, "application_properties")
        data.exit()


def _put_body(data: Data, kind: BodyKind, body: Any) -> None:
    if kind is _KIND_VALUE:
        data.put_described()
        data.enter()
        data.put_ulong(_AMQP_VALUE)
        _put_value(data, body, "body")
        data.exit()
        return
    if not isinstance(body, list | tuple) or not body:
        raise MappingError(f"a {kind.value} body is a non-empty list of sections", field="body")
    for index, section in enumerate(body):
        where = f"body[{index}]"
        if kind is _KIND_DATA:
            if not isinstance(section, bytes | bytearray | memoryview):
                raise MappingError(
                    f"a data section is bytes, not {type(section).__name__}", field=where
                )
            section_value: Any = bytes(section)
            descriptor = _DATA
        else:
            if not isinstance(section, list | tuple):
                raise MappingError(
                    f"an amqp-sequence section is a list, not {type(section).__name__}", field=where
                )
            section_value = list(section)
            descriptor = _AMQP_SEQUENCE
        data.put_described()
        data.enter()
        data.put_ulong(descriptor)
        _put_value(data, section_value, where)
        data.exit()


def _annotation_key(key: Any, where: str) -> Any:
    if type(key) is symbol or type(key) is ulong:
        return key
    if isinstance(key, str):
        return symbol(key)
    if isinstance(key, int) and not isinstance(key, bool):
        return _checked_int(ulong, key, 0, 2**64 - 1, where)
    raise MappingError(
        f"annotation keys are symbol or ulong, not {type(key).__name__}", field=where
    )


def _property_key(key: Any, where: str) -> str:
    if not isinstance(key, str):
        raise MappingError(
            f"application-property keys are strings, not {type(key).__name__}", field=where
        )
    return str(key)


def _checked_int(kind: Callable[[int], Any], value: Any, low: int, high: int, where: str) -> Any:
    if not isinstance(value, int) or isinstance(value, bool):
        raise MappingError(f"expected an integer, got {type(value).__name__}", field=where)
    if not low <= value <= high:
        raise MappingError(f"{value} is out of range [{low}, {high}]", field=where)
    return kind(value)


def _opt_bool(value: Any, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise MappingError(f"expected a boolean, got {type(value).__name__}", field=where)


def _opt_int(kind: Callable[[int], Any], low: int, high: int) -> Callable[[Any, str], Any]:
    def convert(value: Any, where: str) -> Any:
        return None if value is None else _checked_int(kind, value, low, high, where)

    return convert


def _opt_str(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    raise MappingError(f"expected a string, got {type(value).__name__}", field=where)


def _opt_symbol(value: Any, where: str) -> symbol | None:
    if value is None or type(value) is symbol:
        return value
    if isinstance(value, str) and value.isascii():
        return symbol(value)
    raise MappingError("expected an ASCII string (AMQP symbol)", field=where)


def _opt_binary(value: Any, where: str) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise MappingError(f"expected bytes, got {type(value).__name__}", field=where)


def _opt_message_id(value: Any, where: str) -> Any:
    if value is None or type(value) is ulong or isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return _checked_int(ulong, value, 0, 2**64 - 1, where)
    raise MappingError(
        f"a message id is ulong, uuid, binary or string, not {type(value).__name__}", field=where
    )


_UINT_MAX = 2**32 - 1
_HEADER_CODECS: list[Callable[[Any, str], Any]] = [
    _opt_bool,
    _opt_int(ubyte, 0, 255),
    _opt_int(uint, 0, _UINT_MAX),
    _opt_bool,
    _opt_int(uint, 0, _UINT_MAX),
]
_PROPERTIES_CODECS: list[Callable[[Any, str], Any]] = [
    _opt_message_id,
    _opt_binary,
    _opt_str,
    _opt_str,
    _opt_str,
    _opt_message_id,
    _opt_symbol,
    _opt_symbol,
    _opt_int(timestamp, -(2**63), 2**63 - 1),
    _opt_int(timestamp, -(2**63), 2**63 - 1),
    _opt_str,
    _opt_int(uint, 0, _UINT_MAX),
    _opt_str,
]
_HEADER_FIELDS = [f.name for f in fields(Header)]
_PROPERTIES_FIELDS = [f.name for f in fields(Properties)]


def _header_fields(header: Header) -> list[Any]:
    return [
        codec(getattr(header, name), f"header.{name}")
        for name, codec in zip(_HEADER_FIELDS, _HEADER_CODECS, strict=True)
    ]


def _properties_fields(properties: Properties) -> list[Any]:
    return [
        codec(getattr(properties, name), f"properties.{name}")
        for name, codec in zip(_PROPERTIES_FIELDS, _PROPERTIES_CODECS, strict=True)
    ]


# --- decoding ---------------------------------------------------------------------------------


def _read(data: Data) -> Any:
    """The current node as a Python value; binaries are copied out of proton's buffer."""
    kind = data.type()
    if kind == Data.BINARY:
        return bytes(data.get_binary())
    if kind == Data.LIST:
        items: list[Any] = []
        data.enter()
        while data.next() is not None:
            items.append(_read(data))
        data.exit()
        return items
    if kind == Data.MAP:
        mapping: dict[Any, Any] = {}
        data.enter()
        while data.next() is not None:
            key = _read(data)
            value = _read(data) if data.next() is not None else None
            try:
                mapping[key] = value
            except TypeError as exc:
                raise MappingError(f"unsupported map key {key!r} ({exc})") from exc
        data.exit()
        return mapping
    if kind == Data.DESCRIBED:
        data.enter()
        data.next()
        descriptor = _read(data)
        data.next()
        described = _read(data)
        data.exit()
        return Described(descriptor, described)
    if kind == Data.ARRAY:
        _, is_described, element_type = data.get_array()
        data.enter()
        array_descriptor: Any = UNDESCRIBED
        if is_described:
            data.next()
            array_descriptor = _read(data)
        elements = []
        while data.next() is not None:
            elements.append(_read(data))
        data.exit()
        return Array(array_descriptor, element_type or Data.NULL, *elements)
    getter = Data.get_mappings.get(kind)
    if getter is None:
        raise MappingError(f"unsupported AMQP type code {kind}")
    return getter(data)


def _as_fields(value: Any, names: list[str], section: str) -> list[Any]:
    if not isinstance(value, list):
        raise MappingError(
            f"the {section} section is a list, not {type(value).__name__}", field=section
        )
    if len(value) > len(names):
        raise MappingError(
            f"the {section} section has {len(value)} fields, AMQP 1.0 defines {len(names)}",
            field=section,
        )
    return value


def _as_map(value: Any, section: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise MappingError(
            f"the {section} section is a map, not {type(value).__name__}", field=section
        )
    return value


def _decode(encoded: bytes | bytearray | memoryview, *, bare: bool) -> AmqpMessage:
    view = memoryview(encoded)
    if not view:
        raise MappingError("an AMQP message has at least one section; got no bytes")
    data = Data()
    message = AmqpMessage()
    body: list[Any] = []
    body_kind: BodyKind | None = None
    last_rank = -1
    last_name = ""
    offset = 0
    while offset < len(view):
        data.clear()
        try:
            consumed = data.decode(view[offset:])  # type: ignore[arg-type]  # any buffer works
        except proton.DataException as exc:
            raise MappingError(f"malformed AMQP encoding at byte {offset} ({exc})") from exc
        data.rewind()
        data.next()
        if data.type() != Data.DESCRIBED:
            raise MappingError(f"byte {offset} does not start a message section (a described type)")
        section = _read(data)
        try:
            name, rank = _SECTIONS[section.descriptor]
        except (KeyError, TypeError):
            raise MappingError(
                f"unknown section descriptor {section.descriptor!r} at byte {offset}"
            ) from None
        if bare and name not in _BARE_SECTIONS:
            raise MappingError(f"{name} is not part of a bare message", field=name)
        repeatable = rank == 5 and name != "amqp-value" and name == last_name
        if rank < last_rank or (rank == last_rank and not repeatable):
            raise MappingError(
                f"section {name} out of order or repeated at byte {offset}", field=name
            )
        last_rank, last_name = rank, name
        _store(message, name, section.value, body)
        if rank == 5:
            body_kind = _BODY_KINDS[name]
        offset += consumed
    if body_kind is _KIND_VALUE:
        message.body_kind, message.body = _KIND_VALUE, body[0]
    elif body_kind is not None:
        message.body_kind, message.body = body_kind, body
    return message


def _store(message: AmqpMessage, name: str, value: Any, body: list[Any]) -> None:
    if name == "header":
        message.header = Header(*_as_fields(value, _HEADER_FIELDS, name))
    elif name == "properties":
        message.properties = Properties(*_as_fields(value, _PROPERTIES_FIELDS, name))
    elif name == "application_properties":
        props = _as_map(value, name)
        for key in props:
            if not isinstance(key, str) or type(key) is symbol:
                raise MappingError(f"application-property key {key!r} is not a string", field=name)
        message.application_properties = props
    elif name in ("delivery_annotations", "message_annotations", "footer"):
        setattr(message, name, _as_map(value, name))
    elif name == "data":
        if not isinstance(value, bytes):
            raise MappingError(
                f"a data section holds binary, not {type(value).__name__}", field="body"
            )
        body.append(value)
    elif name == "amqp-sequence":
        if not isinstance(value, list):
            raise MappingError(
                f"an amqp-sequence section holds a list, not {type(value).__name__}", field="body"
            )
        body.append(value)
    else:
        body.append(value)
