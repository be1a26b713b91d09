"""The reference AMQP 1.0 codec: message sections to bytes and back with proton's ``Data``.

Every value is written and read by python-qpid-proton's own encoder and
decoder, so this codec covers every AMQP type proton knows and is the
reference the fast codec (:mod:`mappings.fast_codec`) is tested against; the
message model (:mod:`mappings.message`) uses it for what the fast codec leaves.

Encoding is canonical: a section that is empty (a header or properties with
every field ``None``, an empty annotations or application-properties map) is
omitted, trailing null fields of the header and properties lists are dropped.
Decoding maps an absent section to its empty default and checks the section
order. Every problem raises :class:`~mappings.errors.MappingError` naming the
field. Known limit: proton 0.40's decoder loses the siblings that follow a
described value whose value is itself described (``Described(d, Described(...))``).
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import fields
from typing import Any

import proton
from cproton import pn_data_get_char
from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Described,
    char,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
)

from mappings.errors import MappingError
from mappings.sections import (
    BodyKind,
    DecodedSections,
    Header,
    MessageSections,
    Properties,
)

__all__ = ["decode", "encode", "encode_bare"]

# Enum members as module constants: reading one from its class is slow on Python 3.11.
_KIND_DATA, _KIND_VALUE = BodyKind.DATA, BodyKind.VALUE


def encode(message: MessageSections) -> bytes:
    """The whole annotated message as AMQP 1.0 bytes (header ... footer)."""
    data = Data()
    _put_composite(data, _HEADER, _header_fields(message.header))
    _put_annotations(
        data, _DELIVERY_ANNOTATIONS, message.delivery_annotations, "delivery_annotations"
    )
    _put_annotations(data, _MESSAGE_ANNOTATIONS, message.message_annotations, "message_annotations")
    _put_bare(data, message)
    _put_annotations(data, _FOOTER, message.footer, "footer")
    return bytes(data.encode())


def encode_bare(message: MessageSections) -> bytes:
    """The bare message only: properties, application-properties and body sections."""
    data = Data()
    _put_bare(data, message)
    return bytes(data.encode())


def _put_bare(data: Data, message: MessageSections) -> None:
    _put_composite(data, _PROPERTIES, _properties_fields(message.properties))
    _put_application_properties(data, message.application_properties)
    _put_body(data, message.body_kind, message.body)


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
    if kind == Data.CHAR:  # proton's get_char lets chr() refuse a code point bare
        point = pn_data_get_char(data._data)
        if point > sys.maxunicode:
            raise MappingError(f"malformed AMQP encoding: a char holds {point:#x}, beyond Unicode")
        return char(chr(point))
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


def decode(encoded: bytes | bytearray | memoryview, *, bare: bool = False) -> DecodedSections:
    """The sections of an annotated message (of a bare one if ``bare``: header,
    annotation and footer sections are then an error).

    Raises :class:`MappingError` for malformed bytes, unknown or misordered
    sections and mixed body kinds.
    """
    view = memoryview(encoded)
    if not view:
        raise MappingError("an AMQP message has at least one section; got no bytes")
    data = Data()
    parts: dict[str, Any] = {}
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
        try:
            section = _read(data)
        except UnicodeDecodeError as exc:
            raise MappingError(f"malformed AMQP encoding in the section at byte {offset}: a "
                               f"string or symbol is not valid {exc.encoding}") from exc
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
        _store(parts, name, section.value, body)
        if rank == 5:
            body_kind = _BODY_KINDS[name]
        offset += consumed
    if body_kind is None:
        body_kind, body_value = _KIND_VALUE, None
    elif body_kind is _KIND_VALUE:
        body_value = body[0]
    else:
        body_value = body
    return (parts.get("header") or Header(), parts.get("delivery_annotations", {}),
            parts.get("message_annotations", {}), parts.get("properties") or Properties(),
            parts.get("application_properties", {}), body_kind, body_value,
            parts.get("footer", {}))


def _store(parts: dict[str, Any], name: str, value: Any, body: list[Any]) -> None:
    if name == "header":
        parts[name] = Header(*_as_fields(value, _HEADER_FIELDS, name))
    elif name == "properties":
        parts[name] = Properties(*_as_fields(value, _PROPERTIES_FIELDS, name))
    elif name == "application_properties":
        props = _as_map(value, name)
        for key in props:
            if not isinstance(key, str) or type(key) is symbol:
                raise MappingError(f"application-property key {key!r} is not a string", field=name)
        parts[name] = props
    elif name in ("delivery_annotations", "message_annotations", "footer"):
        parts[name] = _as_map(value, name)
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
