"""Property-based round trips: event → binary/structured → event, and mode conversions."""

from __future__ import annotations

from base64 import b64encode
from dataclasses import replace
from datetime import datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from proton import timestamp

from mappings.cloudevents import (
    AttributeValue,
    CloudEvent,
    ContentMode,
    Prefix,
    convert,
    from_binary,
    from_json,
    from_message,
    from_structured,
    to_binary,
    to_json,
    to_structured,
)
from mappings.cloudevents.typesystem import format_time, time_to_amqp
from mappings.message import AmqpMessage
from tests.mappings.strategies import ce_ms_utc_times, events

prefixes = st.sampled_from(list(Prefix))


def over_the_wire(message: AmqpMessage) -> AmqpMessage:
    return AmqpMessage.decode(message.encode())


def as_json_event(event: CloudEvent) -> CloudEvent:
    """What the JSON format carries of ``event``: Binary and Timestamp extensions become Strings."""
    extensions: dict[str, AttributeValue] = {}
    for name, value in event.extensions.items():
        if isinstance(value, bytes):
            value = b64encode(value).decode("ascii")
        elif isinstance(value, datetime):
            value = format_time(value)
        extensions[name] = value
    return replace(event, extensions=extensions)


def as_binary_event(event: CloudEvent) -> CloudEvent:
    """What binary mode carries: inexact (non-UTC or sub-ms) Timestamp extensions become Strings."""
    extensions: dict[str, AttributeValue] = {}
    for name, value in event.extensions.items():
        if isinstance(value, datetime) and not isinstance(time_to_amqp(value), timestamp):
            value = format_time(value)
        extensions[name] = value
    return replace(event, extensions=extensions)


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(), prefixes)
def test_event_binary_event(event: CloudEvent, prefix: Prefix) -> None:
    assert from_binary(over_the_wire(to_binary(event, prefix=prefix))) == as_binary_event(event)


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(time=ce_ms_utc_times), prefixes)
def test_event_binary_event_is_exact_for_amqp_timestamps(event: CloudEvent, prefix: Prefix) -> None:
    event = replace(
        event, extensions={k: v for k, v in event.extensions.items() if not isinstance(v, datetime)}
    )
    assert from_binary(over_the_wire(to_binary(event, prefix=prefix))) == event


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(binary=False, times=False))
def test_event_structured_event(event: CloudEvent) -> None:
    back = from_structured(over_the_wire(to_structured(event)))
    assert back == event
    if back.time is not None:
        assert back.time.utcoffset() == event.time.utcoffset()  # type: ignore[union-attr]


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events())
def test_structured_degrades_only_binary_and_timestamp_extensions(event: CloudEvent) -> None:
    assert from_json(to_json(event)) == as_json_event(event)


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(binary=False, times=False), prefixes)
def test_binary_structured_binary(event: CloudEvent, prefix: Prefix) -> None:
    binary = to_binary(event, prefix=prefix)
    structured = over_the_wire(convert(binary, ContentMode.STRUCTURED))
    assert from_message(structured) == event
    assert convert(structured, ContentMode.BINARY, prefix=prefix) == binary


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(binary=False, times=False), prefixes)
def test_structured_binary_structured(event: CloudEvent, prefix: Prefix) -> None:
    structured = to_structured(event)
    binary = over_the_wire(convert(structured, ContentMode.BINARY, prefix=prefix))
    assert from_message(binary) == event
    assert convert(binary, ContentMode.STRUCTURED) == structured


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(), prefixes, prefixes)
def test_prefix_conversion(event: CloudEvent, first: Prefix, second: Prefix) -> None:
    converted = convert(to_binary(event, prefix=first), ContentMode.BINARY, prefix=second)
    assert converted == to_binary(event, prefix=second)
