"""Content-mode detection, reading any CloudEvents message, and mode conversion."""

from __future__ import annotations

import enum

from mappings.cloudevents.binary import (
    PREFIXES,
    Prefix,
    binary_prefix,
    from_binary,
    is_cloudevents_key,
    to_binary,
)
from mappings.cloudevents.content import (
    BATCH_MEDIA_PREFIX,
    CLOUDEVENTS_MEDIA_PREFIX,
    JSON_EVENT_FORMAT,
    media_type,
)
from mappings.cloudevents.event import CloudEvent
from mappings.cloudevents.structured import from_structured, to_structured
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage


class ContentMode(enum.StrEnum):
    """How an event is laid out in an AMQP message."""

    BINARY = "binary"
    STRUCTURED = "structured"


def detect_mode(message: AmqpMessage) -> ContentMode | None:
    """The content mode of a CloudEvents message, or ``None`` for any other message.

    Structured when content-type is ``application/cloudevents+json`` (any
    parameters); binary when an application property ``cloudEvents_specversion``
    or ``cloudEvents:specversion`` is present. Raises CloudEventError for the
    batch media type (the AMQP binding has no batch mode), for other
    ``application/cloudevents+*`` formats, and for ``cloudEvents`` properties
    without a specversion.
    """
    content_type = message.properties.content_type
    if (
        content_type is not None
        and content_type[: len(CLOUDEVENTS_MEDIA_PREFIX)].lower() == CLOUDEVENTS_MEDIA_PREFIX
    ):
        essence = media_type(content_type)
        if essence == JSON_EVENT_FORMAT:
            return ContentMode.STRUCTURED
        if essence.startswith(BATCH_MEDIA_PREFIX):
            raise CloudEventError(
                f"{essence} is the batch content mode, which the AMQP binding does not define",
                field="content_type",
            )
        raise CloudEventError(f"unsupported event format {essence}", field="content_type")
    if binary_prefix(message) is not None:
        return ContentMode.BINARY
    for key in message.application_properties:
        if is_cloudevents_key(key):
            raise CloudEventError(
                f"CloudEvents property {key!r} present but no specversion property",
                field=key[: len(PREFIXES[0])] + "specversion",
            )
    return None


def from_message(message: AmqpMessage) -> CloudEvent | None:
    """The CloudEvent in ``message`` (either mode), or ``None`` if it carries none.

    Raises CloudEventError when the message claims to be a CloudEvent but is
    not a valid one.
    """
    mode = detect_mode(message)
    if mode is ContentMode.BINARY:
        return from_binary(message)
    if mode is ContentMode.STRUCTURED:
        return from_structured(message)
    return None


def to_message(
    event: CloudEvent,
    mode: ContentMode | str = ContentMode.BINARY,
    *,
    prefix: Prefix | str = Prefix.UNDERSCORE,
    envelope: AmqpMessage | None = None,
) -> AmqpMessage:
    """Render ``event`` in ``mode`` (``prefix`` applies to binary mode)."""
    if mode == ContentMode.BINARY:
        return to_binary(event, prefix=prefix, envelope=envelope)
    if mode == ContentMode.STRUCTURED:
        return to_structured(event, envelope=envelope)
    raise ValueError(f"unknown content mode {mode!r}")


def convert(
    message: AmqpMessage,
    mode: ContentMode | str,
    *,
    prefix: Prefix | str = Prefix.UNDERSCORE,
) -> AmqpMessage:
    """Re-render a CloudEvents message in ``mode`` (and ``prefix``), keeping the rest.

    Header, annotations, footer, properties other than content-type, and
    application properties that are not CloudEvents attributes are carried
    over unchanged. Raises CloudEventError if ``message`` holds no CloudEvent.
    """
    event = from_message(message)
    if event is None:
        raise CloudEventError("message is not a CloudEvent")
    return to_message(event, mode, prefix=prefix, envelope=message)
