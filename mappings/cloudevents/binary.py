"""Binary content mode: attributes in application-properties, data as the body."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from proton import symbol

from mappings.cloudevents.content import body_bytes
from mappings.cloudevents.event import CloudEvent, check_extension_name
from mappings.cloudevents.typesystem import (
    check_string,
    time_from_amqp,
    time_to_amqp,
    value_from_amqp,
)
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind, Header, Properties, new_message

# Enum members as module constants: reading one from its class is slow on Python 3.11.
_KIND_DATA = BodyKind.DATA


class Prefix(enum.StrEnum):
    """Application-property name prefix of binary-mode attributes."""

    UNDERSCORE = "cloudEvents_"
    """The default: JMS 2.0 selectors can name it."""
    COLON = "cloudEvents:"
    """The form the Go and Java SDKs read and write."""


PREFIXES: tuple[str, str] = (Prefix.UNDERSCORE.value, Prefix.COLON.value)

_Keys = tuple[str, str, str, str, str, str, str, str]
"""The prefix, then the property names of specversion, id, source, type, subject,
dataschema and time (precomputed: the hot path only unpacks them)."""
_KEYED = ("specversion", "id", "source", "type", "subject", "dataschema", "time")
_KEYS: dict[str, _Keys] = {p: (p, *(p + name for name in _KEYED)) for p in PREFIXES}  # type: ignore[misc]
_UNDERSCORE, _COLON = Prefix.UNDERSCORE, Prefix.COLON
_UNDERSCORE_KEYS, _COLON_KEYS = _KEYS[PREFIXES[0]], _KEYS[PREFIXES[1]]
_SPECVERSION_KEYS = tuple(keys[1] for keys in _KEYS.values())
_content_types: dict[str, symbol] = {}
_STRING_ATTRIBUTES = frozenset({"id", "source", "type", "subject", "dataschema", "specversion"})


def content_type_symbol(content_type: str | None) -> symbol | None:
    """``content_type`` as the AMQP symbol properties.content-type holds (memoized)."""
    if content_type is None:
        return None
    cached = _content_types.get(content_type)
    if cached is None:
        cached = symbol(content_type)
        if len(_content_types) < 1024:
            _content_types[content_type] = cached
    return cached


def is_cloudevents_key(key: str) -> bool:
    """Whether an application-property key carries a binary-mode attribute."""
    return key.startswith(PREFIXES)


def to_binary(
    event: CloudEvent,
    *,
    prefix: Prefix | str = Prefix.UNDERSCORE,
    envelope: AmqpMessage | None = None,
) -> AmqpMessage:
    """Render ``event`` in binary content mode.

    Every attribute but ``datacontenttype`` becomes an application property named
    ``prefix + name`` holding its native AMQP form (Timestamp → timestamp when
    exact to the millisecond in UTC, otherwise its RFC 3339 string; Integer →
    long; Boolean → boolean; Binary → binary; String/URI → string);
    ``datacontenttype`` becomes properties.content-type; data is one data section.
    With ``envelope``, its header, annotations, footer, properties (but
    content-type) and non-CloudEvents application properties are kept.
    """
    pfx, k_specversion, k_id, k_source, k_type, k_subject, k_dataschema, k_time = _keys_for(prefix)
    props: dict[str, Any] = {
        k_specversion: event.specversion,
        k_id: event.id,
        k_source: event.source,
        k_type: event.type,
    }
    if event.subject is not None:
        props[k_subject] = event.subject
    if event.dataschema is not None:
        props[k_dataschema] = event.dataschema
    if event.time is not None:
        props[k_time] = time_to_amqp(event.time)
    for name, value in event.extensions.items():
        props[pfx + name] = time_to_amqp(value) if isinstance(value, datetime) else value
    content_type = event.datacontenttype
    body = [event.data or b""]
    if envelope is None:
        return new_message(
            Header(),
            {},
            {},
            Properties(content_type=content_type_symbol(content_type)),
            props,
            _KIND_DATA,
            body,
            {},
        )
    return rewrap(envelope, content_type, props, body)


def rewrap(
    envelope: AmqpMessage, content_type: str | None, props: dict[str, Any], body: list[bytes]
) -> AmqpMessage:
    """A copy of ``envelope`` with new CloudEvents content (content-type, attributes, body)."""
    application_properties = {
        k: v for k, v in envelope.application_properties.items() if not is_cloudevents_key(k)
    }
    application_properties.update(props)
    return new_message(
        envelope.header.copy(),
        dict(envelope.delivery_annotations),
        dict(envelope.message_annotations),
        envelope.properties.with_content_type(content_type_symbol(content_type)),
        application_properties,
        _KIND_DATA,
        body,
        dict(envelope.footer),
    )


def _keys_for(prefix: Prefix | str) -> _Keys:
    # Identity checks first: hashing a StrEnum member runs Python code.
    if prefix is _UNDERSCORE:
        return _UNDERSCORE_KEYS
    if prefix is _COLON:
        return _COLON_KEYS
    keys = _KEYS.get(str(prefix))
    if keys is None:
        raise ValueError(f"prefix must be one of {PREFIXES}, not {prefix!r}")
    return keys


def binary_prefix(message: AmqpMessage) -> str | None:
    """The prefix of a binary-mode message (from its specversion property), else ``None``."""
    props = message.application_properties
    for key in _SPECVERSION_KEYS:
        if key in props:
            return key[: -len("specversion")]
    return None


def from_binary(message: AmqpMessage) -> CloudEvent:
    """Read a binary-mode event (either prefix; native AMQP values or canonical strings).

    Raises CloudEventError if the message carries no ``specversion`` property,
    mixes the two prefixes, or holds an invalid attribute.
    """
    prefix = binary_prefix(message)
    if prefix is None:
        raise CloudEventError(
            "not a binary-mode CloudEvent: no cloudEvents_specversion / cloudEvents:specversion "
            "application property",
            field="specversion",
        )
    other = PREFIXES[1] if prefix == PREFIXES[0] else PREFIXES[0]
    skip = len(prefix)
    core: dict[str, Any] = {}
    extensions: dict[str, Any] = {}
    for key, value in message.application_properties.items():
        if not key.startswith(prefix):
            if key.startswith(other):
                raise CloudEventError(
                    f"message mixes the {prefix!r} and {other!r} prefixes", field=key
                )
            continue
        name = key[skip:]
        if name in _STRING_ATTRIBUTES:
            core[name] = check_string(value, name)
        elif name == "time":
            core[name] = time_from_amqp(value, name)
        elif name == "datacontenttype":
            core[name] = check_string(value, name)  # non-standard; content-type wins below
        else:
            extensions[check_extension_name(name)] = value_from_amqp(value, name)
    content_type = message.properties.content_type
    if content_type is not None:
        core["datacontenttype"] = str(content_type)
    for name in ("id", "source", "type"):
        if name not in core:
            raise CloudEventError("required attribute is missing", field=name)
    return CloudEvent(**core, extensions=extensions, data=body_bytes(message))
