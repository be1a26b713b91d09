"""Media types and the AMQP body as event data bytes."""

from __future__ import annotations

from functools import lru_cache

from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind

# Enum members as module constants: reading one from its class is slow on Python 3.11.
_KIND_DATA, _KIND_SEQUENCE, _KIND_VALUE = BodyKind.DATA, BodyKind.SEQUENCE, BodyKind.VALUE

JSON_EVENT_FORMAT = "application/cloudevents+json"
"""Media type of the JSON event format (structured mode)."""
STRUCTURED_CONTENT_TYPE = "application/cloudevents+json; charset=utf-8"
"""The content-type written on structured-mode messages."""
BATCH_MEDIA_PREFIX = "application/cloudevents-batch"
CLOUDEVENTS_MEDIA_PREFIX = "application/cloudevents"


@lru_cache(maxsize=1024)
def media_type(content_type: str) -> str:
    """The media type essence: lower-case ``type/subtype`` without parameters."""
    return content_type.partition(";")[0].strip().lower()


@lru_cache(maxsize=1024)
def is_json(content_type: str | None) -> bool:
    """Whether data of this content type is JSON: absent, ``application/json``,
    ``text/json`` or any ``*/*+json`` media type."""
    if content_type is None:
        return True
    essence = media_type(content_type)
    return essence in ("application/json", "text/json") or essence.endswith("+json")


def body_bytes(message: AmqpMessage) -> bytes | None:
    """The message body as event data bytes (``None`` when empty).

    Data sections are concatenated; an amqp-value holding binary or a string
    (UTF-8 encoded) is accepted leniently; other bodies raise CloudEventError.
    """
    body = message.body
    kind = message.body_kind
    data: bytes | None
    if kind is _KIND_DATA:
        data = bytes(body[0]) if len(body) == 1 else b"".join(body)
    elif kind is _KIND_VALUE and (body is None or isinstance(body, bytes | str)):
        data = body.encode("utf-8") if isinstance(body, str) else body
    else:
        described = "amqp-sequence" if kind is _KIND_SEQUENCE else type(body).__name__
        raise CloudEventError(
            f"event data must be a data section (or an amqp-value string/binary), not {described}",
            field="data",
        )
    return data or None
