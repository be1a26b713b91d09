"""Adapters between AmqpMessage and the cloudevents SDK 2.x AMQP binding.

The SDK's ``cloudevents.core.bindings.amqp.AMQPMessage`` is not a
``proton.Message``: it is a frozen dataclass of three parts, ``properties``
(a dict whose only key the binding uses is ``"content-type"``),
``application_properties`` (a dict) and ``application_data`` (bytes, one data
section). These helpers move a message across as an AMQP peer would see it:
through the AMQP 1.0 encoding.
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson
from cloudevents.core.base import BaseCloudEvent
from cloudevents.core.bindings.amqp import AMQPMessage
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent as SdkCloudEvent

from mappings.cloudevents import CloudEvent
from mappings.cloudevents.content import is_json
from mappings.message import AmqpMessage, BodyKind, Properties


def to_sdk(message: AmqpMessage) -> AMQPMessage:
    """What an SDK application receives for ``message`` (after the wire)."""
    wire = AmqpMessage.decode(message.encode())
    assert wire.body_kind is BodyKind.DATA
    properties = {}
    if wire.properties.content_type is not None:
        properties["content-type"] = str(wire.properties.content_type)
    return AMQPMessage(
        properties=properties,
        application_properties=dict(wire.application_properties),
        application_data=b"".join(wire.body),
    )


def from_sdk(message: AMQPMessage) -> AmqpMessage:
    """What we receive for an SDK-built message (after the wire)."""
    ours = AmqpMessage(
        properties=Properties(content_type=message.properties.get("content-type")),
        application_properties=dict(message.application_properties),
        body_kind=BodyKind.DATA,
        body=[message.application_data],
    )
    return AmqpMessage.decode(ours.encode())


def sdk_event(event: CloudEvent) -> BaseCloudEvent:
    """The SDK event equal to ``event``.

    JSON data is given as the parsed value (how SDK users hold JSON, and what
    makes its structured mode inline it); other data as bytes.
    """
    data: Any = event.data
    if data is not None and is_json(event.datacontenttype):
        with contextlib.suppress(orjson.JSONDecodeError):
            data = orjson.loads(data)
    return SdkCloudEvent(attributes=dict(event.attributes()), data=data)


def assert_same_event(ours: CloudEvent, theirs: BaseCloudEvent, *, structured: bool) -> None:
    """Equal attributes and equal data, the SDK's data seen as it decodes it.

    The SDK gives every event a ``time`` (now) when it has none, so a time the
    SDK reports is only compared when ours has one.
    """
    attributes = dict(theirs.get_attributes())
    if ours.time is None:
        attributes.pop("time", None)
    assert attributes == ours.attributes()
    assert theirs.get_data() == sdk_data_view(ours, structured=structured)


def sdk_data_view(event: CloudEvent, *, structured: bool) -> Any:
    """How the SDK represents ``event.data`` after reading our message.

    Structured mode: inline JSON comes back parsed, data_base64 as bytes.
    Binary mode: the SDK parses JSON content types, else decodes UTF-8 text,
    else keeps bytes (``JSONFormat.read_data``).
    """
    data = event.data
    if data is None:
        return None
    if structured:
        try:
            return orjson.loads(data) if is_json(event.datacontenttype) else data
        except orjson.JSONDecodeError:
            return data
    return JSONFormat().read_data(data, event.datacontenttype)
