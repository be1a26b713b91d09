"""The project's AMQP 1.0 message model and its AMQP encoding.

:class:`AmqpMessage` is the lingua franca of amqp-bridge: the AMQP 0-10 mapping
produces and consumes it, the CloudEvents layer reads and writes it, and the
live bridge turns it into bytes (:meth:`AmqpMessage.encode`) or a
``proton.Message`` (:meth:`AmqpMessage.to_proton`). Its section types
(:class:`Header`, :class:`Properties`, :class:`BodyKind`) live in
:mod:`mappings.sections` and are exported here too.

Typed AMQP values use python-qpid-proton's type classes (``proton.symbol``,
``ulong``, ``timestamp``, ``Described``, ...), so a value keeps its AMQP type
through every conversion. Plain Python values map as proton maps them: ``int``
→ long, ``float`` → double, ``str`` → string, ``bytes`` → binary, ``bool`` →
boolean, ``uuid.UUID`` → uuid, ``None`` → null, ``list`` → list, ``dict`` → map.

Encoding is canonical: a section that is empty (a header or properties with
every field ``None``, an empty annotations or application-properties map) is
omitted, trailing null fields of the header and properties lists are dropped,
and values are written as proton's encoder writes them. ``decode(encode(m)) ==
m`` holds for every valid message; decoding maps an absent section to its
empty default.

Two codecs give those bytes: the fast one (:mod:`mappings.fast_codec`) for the
usual value types, and the reference one (:mod:`mappings.proton_codec`, proton's
own encoder and decoder) for everything else, so behaviour and errors are
proton's. Every caller gets the same choice through :meth:`AmqpMessage.encode`
and :meth:`AmqpMessage.decode`; :func:`encode_reference` and
:func:`decode_reference` take the reference path alone (for tests comparing the two).

Known limits: proton 0.40's decoder loses the siblings that follow a described
value whose value is itself described (``Described(d, Described(...))``), so
such values do not round-trip. AMQP 1.0 restricts application-property values
to simple types; like proton, this model does not enforce it (AMQP 0-10
headers can hold maps and lists), so check peers before sending compound values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import proton

from mappings import fast_codec, proton_codec
from mappings.errors import MappingError
from mappings.fast_codec import Unsupported
from mappings.sections import BodyKind, Header, MessageId, Properties

__all__ = [
    "AmqpMessage",
    "BodyKind",
    "Header",
    "MessageId",
    "Properties",
    "decode_reference",
    "encode_reference",
    "new_message",
]

# Enum members as module constants: reading one from its class is slow on Python 3.11.
_KIND_VALUE = BodyKind.VALUE


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
        try:
            return fast_codec.encode(self)
        except Unsupported:
            return proton_codec.encode(self)

    def encode_bare(self) -> bytes:
        """The bare message only: properties, application-properties and body sections."""
        try:
            return fast_codec.encode_bare(self)
        except Unsupported:
            return proton_codec.encode_bare(self)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview) -> AmqpMessage:
        """Decode a whole annotated message (what :meth:`encode` writes or a peer sends).

        Raises :class:`MappingError` for malformed bytes, unknown or misordered
        sections and mixed body kinds.
        """
        try:
            return new_message(*fast_codec.decode(data))
        except Unsupported:
            return new_message(*proton_codec.decode(data))

    @classmethod
    def decode_bare(cls, data: bytes | bytearray | memoryview) -> AmqpMessage:
        """Decode a bare message; header, annotation and footer sections are an error."""
        try:
            return new_message(*fast_codec.decode(data, bare=True))
        except Unsupported:
            return new_message(*proton_codec.decode(data, bare=True))

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
        canonical = AmqpMessage.decode(encoded)
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
        # proton's encode() says bytes but returns a bytearray (the compiled build checks)
        encoded: bytes | bytearray = cast(Any, message).encode()
        return AmqpMessage.decode(encoded)


_new = AmqpMessage.__new__
"""``object.__new__`` while interpreted; the compiled class's own in the accelerated build
(which refuses ``object.__new__``)."""


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


def encode_reference(message: AmqpMessage) -> bytes:
    """``message.encode()`` by the reference (proton) codec alone."""
    return proton_codec.encode(message)


def decode_reference(data: bytes | bytearray | memoryview) -> AmqpMessage:
    """``AmqpMessage.decode(data)`` by the reference (proton) codec alone."""
    return new_message(*proton_codec.decode(data))
