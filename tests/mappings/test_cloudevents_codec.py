"""Content-mode detection, from_message, to_message and convert."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from proton import symbol

from mappings.cloudevents import (
    STRUCTURED_CONTENT_TYPE,
    CloudEvent,
    ContentMode,
    Prefix,
    convert,
    detect_mode,
    from_message,
    to_binary,
    to_message,
    to_structured,
)
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind, Header, Properties

EVENT = CloudEvent(
    id="1",
    source="/s",
    type="t",
    datacontenttype="application/json",
    time=datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
    extensions={"n": 7, "ok": True},
    data=b'{"a":1}',
)


def plain(content_type: str | None = None, **props: Any) -> AmqpMessage:
    return AmqpMessage(
        properties=Properties(content_type=content_type),
        application_properties=props,
        body_kind=BodyKind.DATA,
        body=[b"x"],
    )


@pytest.mark.parametrize(
    ("message", "mode"),
    [
        (plain("application/cloudevents+json"), ContentMode.STRUCTURED),
        (plain("application/cloudevents+json; charset=utf-8"), ContentMode.STRUCTURED),
        (plain("APPLICATION/CLOUDEVENTS+JSON"), ContentMode.STRUCTURED),
        (plain(None, cloudEvents_specversion="1.0"), ContentMode.BINARY),
        (plain("application/json", **{"cloudEvents:specversion": "1.0"}), ContentMode.BINARY),
        (plain("text/plain"), None),
        (plain(None, specversion="1.0", id="1"), None),
        (AmqpMessage(), None),
    ],
)
def test_detect_mode(message: AmqpMessage, mode: ContentMode | None) -> None:
    assert detect_mode(message) is mode


@pytest.mark.parametrize(
    ("content_type", "match"),
    [
        ("application/cloudevents-batch+json", "batch"),
        ("application/cloudevents-batch+json; charset=utf-8", "batch"),
        ("application/cloudevents+avro", "unsupported event format"),
    ],
)
def test_detect_mode_rejects_other_cloudevents_formats(content_type: str, match: str) -> None:
    with pytest.raises(CloudEventError, match=match) as info:
        detect_mode(plain(content_type))
    assert info.value.field == "content_type"


def test_cloudevents_properties_without_specversion() -> None:
    with pytest.raises(CloudEventError, match="no specversion") as info:
        detect_mode(plain(None, cloudEvents_id="1", cloudEvents_type="t"))
    assert info.value.field == "cloudEvents_specversion"


def test_from_message_reads_both_modes_and_ignores_plain_messages() -> None:
    assert from_message(to_binary(EVENT)) == EVENT
    assert from_message(to_binary(EVENT, prefix=Prefix.COLON)) == EVENT
    assert from_message(to_structured(EVENT)) == EVENT
    assert from_message(plain("application/json", region="eu")) is None


def test_from_message_invalid_cloudevent_is_an_error() -> None:
    with pytest.raises(CloudEventError):
        from_message(plain(None, cloudEvents_specversion="1.0"))


def test_to_message() -> None:
    assert to_message(EVENT) == to_binary(EVENT)
    assert to_message(EVENT, "structured") == to_structured(EVENT)
    assert to_message(EVENT, ContentMode.BINARY, prefix=Prefix.COLON) == to_binary(
        EVENT, prefix=Prefix.COLON
    )
    with pytest.raises(ValueError, match="content mode"):
        to_message(EVENT, "batch")


def envelope_of(message: AmqpMessage) -> AmqpMessage:
    message.header = Header(durable=True, ttl=5000)
    message.message_annotations = {symbol("x-opt-a"): 1}
    message.properties.message_id = "m-1"
    message.properties.to = "/queue/q"
    message.application_properties["region"] = "eu"
    return message


def test_binary_to_structured_and_back_keeps_the_envelope() -> None:
    binary = envelope_of(to_binary(EVENT))
    structured = convert(binary, ContentMode.STRUCTURED)
    assert structured.properties.content_type == STRUCTURED_CONTENT_TYPE
    assert structured.application_properties == {"region": "eu"}
    assert (structured.header, structured.message_annotations) == (
        binary.header,
        binary.message_annotations,
    )
    assert (structured.properties.message_id, structured.properties.to) == ("m-1", "/queue/q")
    assert from_message(structured) == EVENT
    again = convert(structured, ContentMode.BINARY)
    assert again == binary


def test_prefix_conversion() -> None:
    underscore = envelope_of(to_binary(EVENT))
    colon = convert(underscore, ContentMode.BINARY, prefix=Prefix.COLON)
    assert sorted(colon.application_properties) == sorted(
        key.replace("cloudEvents_", "cloudEvents:") for key in underscore.application_properties
    )
    assert from_message(colon) == EVENT
    assert convert(colon, ContentMode.BINARY) == underscore


def test_structured_to_structured_is_stable() -> None:
    structured = to_structured(EVENT)
    assert convert(structured, ContentMode.STRUCTURED) == structured


def test_convert_plain_message_is_an_error() -> None:
    with pytest.raises(CloudEventError, match="not a CloudEvent"):
        convert(plain("text/plain"), ContentMode.BINARY)
