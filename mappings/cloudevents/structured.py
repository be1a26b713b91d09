"""Structured content mode: the whole event as one JSON document (JSON event format)."""

from __future__ import annotations

import binascii
import json
import re
from base64 import b64decode, b64encode
from datetime import datetime
from typing import Any

import orjson
from proton import symbol

from mappings.cloudevents.binary import rewrap
from mappings.cloudevents.content import (
    JSON_EVENT_FORMAT,
    STRUCTURED_CONTENT_TYPE,
    body_bytes,
    is_json,
    media_type,
)
from mappings.cloudevents.event import CloudEvent, check_extension_name
from mappings.cloudevents.typesystem import check_integer, format_time, parse_time
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind, Header, Properties, new_message

# Enum members as module constants: reading one from its class is slow on Python 3.11.
_KIND_DATA = BodyKind.DATA

_CONTENT_TYPE = symbol(STRUCTURED_CONTENT_TYPE)
_STRING_MEMBERS = ("id", "source", "type", "datacontenttype", "dataschema", "subject")
# orjson reads integers beyond 64 bits as floats; documents with long digit runs are
# re-read with the standard library, which keeps them exact.
_LONG_DIGITS = re.compile(rb"\d{19}")


def _valid_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def to_json(event: CloudEvent) -> bytes:
    """The event in the JSON event format (UTF-8 bytes).

    Data is inlined as JSON (``data``) when ``datacontenttype`` is JSON or absent
    and the bytes are valid JSON, else written base64 encoded (``data_base64``).
    Extensions are top-level members; Binary extensions become base64 strings,
    Timestamps RFC 3339 strings.
    """
    doc: dict[str, Any] = {
        "specversion": event.specversion,
        "id": event.id,
        "source": event.source,
        "type": event.type,
    }
    content_type = event.datacontenttype
    if content_type is not None:
        doc["datacontenttype"] = content_type
    if event.dataschema is not None:
        doc["dataschema"] = event.dataschema
    if event.subject is not None:
        doc["subject"] = event.subject
    if event.time is not None:
        doc["time"] = format_time(event.time)
    for name, value in event.extensions.items():
        kind = type(value)
        if kind is str or kind is bool or kind is int:
            pass
        elif isinstance(value, bytes):
            value = b64encode(value).decode("ascii")
        elif isinstance(value, datetime):
            value = format_time(value)
        doc[name] = value
    data = event.data
    if data is not None:
        if is_json(content_type) and _valid_json(data):
            doc["data"] = orjson.Fragment(data)
        else:
            doc["data_base64"] = b64encode(data).decode("ascii")
    return orjson.dumps(doc)


def to_structured(event: CloudEvent, *, envelope: AmqpMessage | None = None) -> AmqpMessage:
    """Render ``event`` in structured content mode (JSON event format).

    The body is one data section holding :func:`to_json` output; content-type is
    ``application/cloudevents+json; charset=utf-8``. With ``envelope``, its
    header, annotations, footer, properties (but content-type) and
    non-CloudEvents application properties are kept.
    """
    body = [to_json(event)]
    if envelope is None:
        return new_message(
            Header(), {}, {}, Properties(content_type=_CONTENT_TYPE), {}, _KIND_DATA, body, {}
        )
    return rewrap(envelope, STRUCTURED_CONTENT_TYPE, {}, body)


def _loads(document: bytes) -> Any:
    try:
        parsed = orjson.loads(document)
    except orjson.JSONDecodeError as exc:
        raise CloudEventError(f"structured event is not valid JSON ({exc})", field="data") from None
    if _LONG_DIGITS.search(document):
        parsed = json.loads(document)
    return parsed


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def from_json(document: bytes | str) -> CloudEvent:
    """Read an event from the JSON event format.

    ``null`` members count as absent; ``time`` is parsed as RFC 3339; numeric
    extensions must be integers in the 32-bit range; object and array
    extensions are rejected. ``data`` is re-encoded as compact JSON bytes when
    the data content type is JSON, else a string is taken as UTF-8 text;
    ``data_base64`` is decoded.
    """
    raw = document.encode("utf-8") if isinstance(document, str) else bytes(document)
    members = _loads(raw)
    if not isinstance(members, dict):
        raise CloudEventError("a structured event is a JSON object", field="data")
    specversion = members.pop("specversion", None)
    if specversion is None:
        raise CloudEventError("required attribute is missing", field="specversion")
    core: dict[str, Any] = {"specversion": specversion}
    for name in _STRING_MEMBERS:
        value = members.pop(name, None)
        if value is not None:
            core[name] = value
    for name in ("id", "source", "type"):
        if name not in core:
            raise CloudEventError("required attribute is missing", field=name)
    time = members.pop("time", None)
    if time is not None:
        if not isinstance(time, str):
            raise CloudEventError("time is an RFC 3339 string in JSON", field="time")
        core["time"] = parse_time(time, "time")
    data_value = members.pop("data", None)
    data_base64 = members.pop("data_base64", None)
    extensions = {}
    for name, value in members.items():
        if value is not None:
            extensions[check_extension_name(name)] = _extension(value, name)
    return CloudEvent(
        **core,
        extensions=extensions,
        data=_data(data_value, data_base64, core.get("datacontenttype")),
    )


def _extension(value: Any, name: str) -> Any:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return check_integer(value, name)
    if isinstance(value, float) and value.is_integer():
        return check_integer(int(value), name)
    raise CloudEventError(
        f"JSON {type(value).__name__} is not a CloudEvents attribute type", field=name
    )


def _data(value: Any, base64_text: Any, content_type: Any) -> bytes | None:
    if base64_text is not None:
        if value is not None:
            raise CloudEventError("both data and data_base64 are present", field="data")
        if not isinstance(base64_text, str):
            raise CloudEventError("data_base64 is a base64 string", field="data_base64")
        try:
            return b64decode(base64_text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise CloudEventError(f"invalid base64 ({exc})", field="data_base64") from None
    if value is None:
        return None
    if isinstance(value, str) and not is_json(
        content_type if isinstance(content_type, str) else None
    ):
        return value.encode("utf-8")
    return _dumps(value)


def from_structured(message: AmqpMessage) -> CloudEvent:
    """Read a structured-mode event (content-type ``application/cloudevents+json``).

    Application properties (which the binding allows to repeat attributes)
    are ignored: the JSON document is authoritative.
    """
    content_type = message.properties.content_type
    if content_type is None or media_type(content_type) != JSON_EVENT_FORMAT:
        raise CloudEventError(
            f"structured mode needs content-type {JSON_EVENT_FORMAT}, got {content_type!r}",
            field="content_type",
        )
    document = body_bytes(message)
    if document is None:
        raise CloudEventError("structured-mode message has an empty body", field="data")
    return from_json(document)
