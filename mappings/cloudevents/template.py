"""Per-route templates that turn plain (non-CloudEvents) messages into events."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import fields
from datetime import datetime
from functools import cached_property, partial
from operator import attrgetter
from typing import Any, Literal

import orjson
from proton import symbol, timestamp
from pydantic import BaseModel, ConfigDict, field_validator

from mappings.cloudevents.event import CloudEvent, check_extension_name
from mappings.cloudevents.typesystem import (
    INTEGER_MAX,
    INTEGER_MIN,
    format_time,
    millis_to_datetime,
    value_from_amqp,
)
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind, Properties

# Enum members as module constants: reading one from its class is slow on Python 3.11.
_KIND_DATA, _KIND_SEQUENCE = BodyKind.DATA, BodyKind.SEQUENCE

ROUTING_KEY_ANNOTATION = "x-amqp-0-10.routing-key"
"""Message annotation holding the AMQP 0-10 routing key (``{routing_key}``)."""
ROUTING_KEY_ANNOTATION_091 = "x-routing-key"
"""Message annotation holding the AMQP 0-9-1 routing key (RabbitMQ's name; ``{routing_key}``
when neither the 0-10 one, the 0-9-1 mapping's own nor a 0-9-1 message's subject says it)."""
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"

_Getter = Callable[[AmqpMessage], Any]
_Part = str | tuple[str, _Getter]  # literal text, or (placeholder, getter)
_PROPERTY_FIELDS = frozenset(f.name for f in fields(Properties))


# Getters are attrgetters or partials of module functions (not lambdas) so compiled
# templates pickle.
def _annotation(key: symbol, message: AmqpMessage) -> Any:
    return message.message_annotations.get(key)


_ROUTING_KEY_010 = symbol(ROUTING_KEY_ANNOTATION)
_ROUTING_KEY_091 = symbol(ROUTING_KEY_ANNOTATION_091)
# the 0-9-1 mapping's own names, which RabbitMQ 4 keeps (it replaces x-exchange / x-routing-key
# with the routing it did itself on every delivery)
_PUBLISHED_ROUTING_KEY_091 = symbol("x-amqp-0-9-1.routing-key")
_EXCHANGES_091 = (symbol("x-amqp-0-9-1.exchange"), symbol("x-exchange"))


def _routing_key(message: AmqpMessage) -> Any:
    """The legacy routing key a message came with: 0-10's annotation, else the 0-9-1
    mapping's rule — its ``x-amqp-0-9-1.routing-key`` (null: none), else the subject of a
    0-9-1 message (one with an exchange annotation: the mapping writes the key as the
    subject), else RabbitMQ's ``x-routing-key``."""
    annotations = message.message_annotations
    value = annotations.get(_ROUTING_KEY_010)
    if value is not None:
        return value
    if _PUBLISHED_ROUTING_KEY_091 in annotations:
        return annotations[_PUBLISHED_ROUTING_KEY_091]
    subject = message.properties.subject
    if subject is not None and any(key in annotations for key in _EXCHANGES_091):
        return subject
    return annotations.get(_ROUTING_KEY_091)


def _application_property(key: str, message: AmqpMessage) -> Any:
    return message.application_properties.get(key)


def _getter(placeholder: str) -> _Getter:
    if placeholder in _PROPERTY_FIELDS:
        return attrgetter(f"properties.{placeholder}")  # C-level, and it pickles
    if placeholder == "routing_key":
        return _routing_key
    kind, colon, key = placeholder.partition(":")
    if colon and key and kind == "annotation":
        return partial(_annotation, symbol(key))
    if colon and key and kind == "property":
        return partial(_application_property, key)
    raise ValueError(
        f"unknown placeholder {{{placeholder}}}: use a properties field "
        f"({', '.join(sorted(_PROPERTY_FIELDS))}), routing_key, annotation:KEY or property:KEY"
    )


def compile_pattern(pattern: str) -> tuple[_Part, ...]:
    """Split a template string into literal text and ``{placeholder}`` getters.

    ``{{`` and ``}}`` stand for literal braces. Raises ValueError on bad syntax
    or an unknown placeholder.
    """
    parts: list[_Part] = []
    text: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char in "{}" and pattern.startswith(char * 2, i):
            text.append(char)
            i += 2
        elif char == "{":
            end = pattern.find("}", i)
            if end < 0:
                raise ValueError(f"unclosed '{{' at position {i} in {pattern!r}")
            name = pattern[i + 1 : end]
            if text:
                parts.append("".join(text))
                text = []
            parts.append((name, _getter(name)))
            i = end + 1
        elif char == "}":
            raise ValueError(f"single '}}' at position {i} in {pattern!r} (write '}}}}')")
        else:
            text.append(char)
            i += 1
    if text or not parts:
        parts.append("".join(text))
    return tuple(parts)


def _as_text(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is uuid.UUID:
        return uuid_text(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if type(value) is timestamp:
        return format_time(millis_to_datetime(value, "timestamp"))
    if isinstance(value, int):
        return str(int(value))  # proton's int types repr as "ulong(1)"
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value.hex()
    raise TypeError(f"{type(value).__name__} value has no text form")


def uuid_text(value: uuid.UUID) -> str:
    """``str(value)``, faster: hex in 2-octet groups, regrouped 4-2-2-2-6 octets."""
    h = value.int.to_bytes(16, "big").hex("-", 2)  # xxxx-xxxx-xxxx-xxxx-xxxx-xxxx-xxxx-xxxx
    return h[:4] + h[5:29] + h[30:34] + h[35:]


def render(parts: tuple[_Part, ...], message: AmqpMessage, attribute: str) -> str:
    """Fill a compiled template from ``message``; a missing value is a CloudEventError."""
    if len(parts) == 1 and isinstance(parts[0], str):
        return parts[0]
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        name, get = part
        value = get(message)
        if value is None:
            raise CloudEventError(
                f"placeholder {{{name}}} has no value in the message", field=attribute
            )
        if type(value) is str:
            out.append(value)
            continue
        try:
            out.append(_as_text(value))
        except TypeError as exc:
            raise CloudEventError(f"placeholder {{{name}}}: {exc}", field=attribute) from None
    return "".join(out)


def _new_uuid() -> str:
    return str(uuid.uuid4())


class EventTemplate(BaseModel):
    """How a route derives a CloudEvent from a plain message.

    String options are templates: literal text with ``{placeholder}`` slots
    filled from the message: a properties field by name (``{subject}``,
    ``{to}``, ``{message_id}``, ...), ``{routing_key}`` (message annotation
    ``x-amqp-0-10.routing-key``, or 0-9-1's ``x-routing-key``, else a 0-9-1 message's
    subject), ``{annotation:KEY}`` (a message annotation),
    ``{property:KEY}`` (an application property). ``{{`` / ``}}`` are literal
    braces. A placeholder whose value is absent makes :meth:`build` fail.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    """Required; usually a literal URI-reference such as ``/orders``."""
    type: str
    """Required; literal (``com.example.order``) or derived (``com.example.{routing_key}``)."""
    id: str | None = None
    """Default: the message-id as text, else a new UUID4."""
    time: Literal["creation_time", "now", "none"] = "creation_time"
    """``creation_time``: the message's creation-time, else ``now``; ``now``; ``none``: no time."""
    subject: str | None = None
    dataschema: str | None = None
    datacontenttype: str | None = None
    """Default: the message's content-type (text/plain or application/json for amqp-value bodies)."""
    extensions: dict[str, str] = {}
    """Extension attribute name -> name of the application property holding its value."""

    @field_validator("source", "type", "id", "subject", "dataschema")
    @classmethod
    def _check_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            compile_pattern(value)
        return value

    @field_validator("extensions")
    @classmethod
    def _check_extensions(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            try:
                check_extension_name(name)
            except CloudEventError as exc:
                raise ValueError(str(exc)) from None
        return value

    @cached_property
    def compiled(self) -> EventBuilder:
        """The compiled form of this template (computed once)."""
        return EventBuilder(self)

    def build(
        self,
        message: AmqpMessage,
        *,
        now: datetime,
        new_id: Callable[[], str] = _new_uuid,
    ) -> CloudEvent:
        """Shorthand for ``self.compiled.build(message, now=now, new_id=new_id)``."""
        return self.compiled.build(message, now=now, new_id=new_id)


def _compile_optional(pattern: str | None) -> tuple[_Part, ...] | None:
    return None if pattern is None else compile_pattern(pattern)


class EventBuilder:
    """A compiled :class:`EventTemplate`: builds events from plain messages."""

    __slots__ = (
        "_datacontenttype",
        "_dataschema",
        "_extensions",
        "_id",
        "_source",
        "_subject",
        "_time",
        "_type",
    )

    def __init__(self, template: EventTemplate) -> None:
        self._source = compile_pattern(template.source)
        self._type = compile_pattern(template.type)
        self._id = _compile_optional(template.id)
        self._subject = _compile_optional(template.subject)
        self._dataschema = _compile_optional(template.dataschema)
        self._time = template.time
        self._datacontenttype = template.datacontenttype
        self._extensions = tuple(template.extensions.items())

    def build(
        self,
        message: AmqpMessage,
        *,
        now: datetime,
        new_id: Callable[[], str] = _new_uuid,
    ) -> CloudEvent:
        """The CloudEvent for a plain ``message``.

        ``now`` (an aware datetime, truncated to milliseconds: AMQP's timestamp
        resolution) is the time when the template asks for it; ``new_id`` makes
        the id when the template has none and the message has no message-id.
        Raises CloudEventError naming the attribute when the result is invalid.
        """
        properties = message.properties
        if self._id is not None:
            event_id = render(self._id, message, "id")
        elif properties.message_id is not None:
            event_id = _as_text(properties.message_id)
        else:
            event_id = new_id()
        data, default_type = _event_data(message)
        content_type = self._datacontenttype
        if content_type is None:
            content_type = properties.content_type
            content_type = default_type if content_type is None else str(content_type)
        extensions = {}
        if self._extensions:
            application_properties = message.application_properties
            for name, key in self._extensions:
                value = application_properties.get(key)
                if value is not None:
                    kind = type(value)
                    if not (  # inline: what value_from_amqp returns unchanged
                        (kind is str and value.isascii() and value.isprintable())
                        or kind is bool
                        or (kind is int and INTEGER_MIN <= value <= INTEGER_MAX)
                    ):
                        value = value_from_amqp(value, name)
                    extensions[name] = value
        # extensions: a new dict of values CloudEvent keeps unchanged (checked above)
        return CloudEvent._from_checked_extensions(
            event_id,
            render(self._source, message, "source"),
            render(self._type, message, "type"),
            content_type,
            None if self._dataschema is None else render(self._dataschema, message, "dataschema"),
            None if self._subject is None else render(self._subject, message, "subject"),
            self._event_time(message, now),
            extensions,
            data,
        )

    def _event_time(self, message: AmqpMessage, now: datetime) -> datetime | None:
        if self._time == "none":
            return None
        creation_time = message.properties.creation_time
        if self._time == "creation_time" and creation_time is not None:
            return millis_to_datetime(creation_time, "time")
        if not isinstance(now, datetime) or now.utcoffset() is None:
            raise CloudEventError("now must be a timezone-aware datetime", field="time")
        return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _event_data(message: AmqpMessage) -> tuple[bytes | None, str | None]:
    """The body as event data, with the content type implied by an amqp-value body."""
    body = message.body
    kind = message.body_kind
    if kind is _KIND_DATA:
        return (body[0] if len(body) == 1 else b"".join(body)) or None, None
    if kind is _KIND_SEQUENCE:
        raise CloudEventError("amqp-sequence bodies cannot become event data", field="data")
    if body is None:
        return None, None
    if isinstance(body, bytes):
        return body or None, None
    if isinstance(body, str):
        return body.encode("utf-8") or None, TEXT_CONTENT_TYPE
    try:
        return orjson.dumps(body), JSON_CONTENT_TYPE
    except orjson.JSONEncodeError as exc:
        raise CloudEventError(
            f"amqp-value body is not JSON-representable ({exc})", field="data"
        ) from None
