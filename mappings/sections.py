"""The sections of an AMQP 1.0 message as plain types, shared by the message model and codecs.

:class:`Header`, :class:`Properties` and :class:`BodyKind` are the section
types :class:`mappings.message.AmqpMessage` is made of. The two AMQP 1.0 codecs
(:mod:`mappings.fast_codec`, :mod:`mappings.proton_codec`) read and write
sections, not messages: they take anything shaped like :class:`MessageSections`
(an ``AmqpMessage`` is) and give back a :data:`DecodedSections` tuple, in the
order of :func:`mappings.message.new_message`'s parameters. That keeps the
dependencies one way: this module ← the codecs ← the message model.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from proton import ulong

__all__ = [
    "BodyKind",
    "DecodedSections",
    "Header",
    "MessageId",
    "MessageSections",
    "Properties",
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


class MessageSections(Protocol):
    """What a codec encodes: a message's sections as attributes (``AmqpMessage`` has them)."""

    header: Header
    delivery_annotations: dict[Any, Any]
    message_annotations: dict[Any, Any]
    properties: Properties
    application_properties: dict[str, Any]
    body_kind: BodyKind
    body: Any
    footer: dict[Any, Any]


DecodedSections: TypeAlias = tuple[
    Header, dict[Any, Any], dict[Any, Any], Properties, dict[str, Any], BodyKind, Any,
    dict[Any, Any],
]
"""What a codec decodes: header, delivery annotations, message annotations, properties,
application properties, body kind, body, footer (absent sections as their empty defaults)."""
