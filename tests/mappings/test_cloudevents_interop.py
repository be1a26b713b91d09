"""Interoperability: the cloudevents SDK 2.x AMQP binding, other SDKs' conventions, real captures.

The SDK reads whatever we write with equal attributes and data, and we read
whatever it writes. Known SDK deviations from the binding, which these tests
pin down: it writes Timestamp *extensions* (and ``time``) as a plain long of
milliseconds rather than an AMQP timestamp, reads Timestamp extensions back
as that integer, cannot write Binary extensions in structured mode, and gives
events without ``time`` the current time.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pytest
from cloudevents.core.bindings import amqp
from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent as SdkCloudEvent
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import symbol, timestamp

from mappings.cloudevents import (
    CloudEvent,
    ContentMode,
    Prefix,
    detect_mode,
    from_message,
    to_binary,
    to_structured,
)
from mappings.cloudevents.typesystem import canonical_string, millis_to_datetime
from mappings.message import AmqpMessage, BodyKind, Properties
from tests.data import CAPTURES_010
from tests.mappings.sdk import assert_same_event, from_sdk, sdk_event, to_sdk
from tests.mappings.strategies import ce_text, events, extension_names, extension_values

FORMAT = JSONFormat()
CAPTURE = CAPTURES_010 / "translate_1_0_to_0_10.json"

# Times the SDK converts exactly: its float arithmetic is exact to the microsecond in this range.
sdk_times = st.datetimes(
    min_value=datetime(1900, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.just(UTC) | st.integers(-720, 720).map(lambda m: timezone(timedelta(minutes=m))),
)
sdk_ms_times = st.integers(-(2**41), 2**41).map(
    lambda ms: datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
)

EVENT = CloudEvent(
    id="ce-1",
    source="/orders",
    type="com.example.order.created",
    datacontenttype="application/json",
    dataschema="https://schemas.example/order",
    subject="order-7",
    time=datetime(2026, 11, 21, 23, 7, 35, 688000, tzinfo=UTC),
    extensions={"count": 7, "flag": True, "text": "x"},
    data=b'{"order": 1, "items": ["a", "b"]}',
)


# --- we write, the SDK reads ------------------------------------------------------------------


@pytest.mark.parametrize("prefix", list(Prefix))
def test_sdk_reads_our_binary_mode(prefix: Prefix) -> None:
    theirs = amqp.from_amqp(to_sdk(to_binary(EVENT, prefix=prefix)), FORMAT)
    assert_same_event(EVENT, theirs, structured=False)
    assert theirs.get_data() == {"order": 1, "items": ["a", "b"]}


def test_sdk_reads_our_structured_mode() -> None:
    message = to_sdk(to_structured(EVENT))
    theirs = amqp.from_amqp(message, FORMAT)
    assert_same_event(EVENT, theirs, structured=True)


def test_sdk_reads_binary_extensions_and_data_base64() -> None:
    event = CloudEvent(
        id="1",
        source="/s",
        type="t",
        datacontenttype="image/png",
        extensions={"blob": b"\x00\xff"},
        data=b"\x89PNG",
    )
    binary = amqp.from_amqp(to_sdk(to_binary(event)), FORMAT)
    assert binary.get_extension("blob") == b"\x00\xff"
    assert binary.get_data() == b"\x89PNG"
    structured = amqp.from_amqp(to_sdk(to_structured(event)), FORMAT)
    assert structured.get_extension("blob") == "AP8="
    assert structured.get_data() == b"\x89PNG"


def test_sdk_reads_timestamp_extension_as_integer() -> None:
    """SDK deviation: only ``time`` is turned back into a datetime."""
    event = replace(
        EVENT, extensions={"when": datetime(2026, 11, 21, 23, 7, 35, 688000, tzinfo=UTC)}
    )
    theirs = amqp.from_amqp(to_sdk(to_binary(event)), FORMAT)
    assert theirs.get_extension("when") == 1795302455688


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(times=False, time=sdk_times), st.sampled_from(list(Prefix)))
def test_sdk_reads_any_binary_event(event: CloudEvent, prefix: Prefix) -> None:
    message = to_sdk(to_binary(event, prefix=prefix))
    assert message.application_data == (event.data or b"")
    assert_same_event(event, amqp.from_amqp(message, FORMAT), structured=False)


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(binary=False, times=False, time=sdk_times))
def test_sdk_reads_any_structured_event(event: CloudEvent) -> None:
    assert_same_event(event, amqp.from_amqp(to_sdk(to_structured(event)), FORMAT), structured=True)


# --- the SDK writes, we read ------------------------------------------------------------------


def test_we_read_sdk_binary_mode() -> None:
    message = amqp.to_binary(sdk_event(EVENT), FORMAT)
    assert message.application_properties["cloudEvents_time"] == 1795302455688
    assert (
        type(message.application_properties["cloudEvents_time"]) is int
    )  # a long, not a timestamp
    ours = from_message(from_sdk(message))
    assert ours is not None
    assert replace(ours, data=None) == replace(EVENT, data=None)
    assert orjson.loads(ours.data) == orjson.loads(EVENT.data)  # type: ignore[arg-type]


def test_we_read_sdk_structured_mode() -> None:
    message = amqp.to_structured(sdk_event(EVENT), FORMAT)
    assert message.properties == {"content-type": "application/cloudevents+json"}
    ours = from_message(from_sdk(message))
    assert ours is not None
    assert replace(ours, data=None) == replace(EVENT, data=None)
    assert orjson.loads(ours.data) == orjson.loads(EVENT.data)  # type: ignore[arg-type]


def test_we_read_sdk_bytes_and_text_data() -> None:
    blob = SdkCloudEvent(
        {"id": "1", "source": "/s", "type": "t", "datacontenttype": "application/octet-stream"},
        b"\x00\x01",
    )
    text = SdkCloudEvent(
        {"id": "1", "source": "/s", "type": "t", "datacontenttype": "text/plain"}, "héllo"
    )
    for write in (amqp.to_binary, amqp.to_structured):
        assert from_message(from_sdk(write(blob, FORMAT))).data == b"\x00\x01"  # type: ignore[union-attr]
        assert from_message(from_sdk(write(text, FORMAT))).data == "héllo".encode()  # type: ignore[union-attr]


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(
    events(times=False, time=sdk_ms_times), st.sampled_from([amqp.to_binary, amqp.to_structured])
)
def test_we_read_any_sdk_message(event: CloudEvent, write: Any) -> None:
    structured = write is amqp.to_structured
    if structured:
        event = replace(
            event,
            extensions={k: v for k, v in event.extensions.items() if not isinstance(v, bytes)},
        )
    sdk_message = write(sdk_event(event), FORMAT)
    ours = from_message(from_sdk(sdk_message))
    assert ours is not None
    # The SDK's own reading of its message is the oracle for data.
    assert_same_event(ours, amqp.from_amqp(sdk_message, FORMAT), structured=structured)
    assert replace(ours, time=None) == replace(event, time=None, data=ours.data)
    if structured or event.time is None:
        assert event.time is None or ours.time == event.time
    else:
        # SDK bug: it computes the milliseconds as int(seconds_float * 1000), which can
        # be one millisecond off (1.001 s -> 1000 ms). We read exactly what it wrote.
        written = sdk_message.application_properties["cloudEvents_time"]
        assert ours.time == millis_to_datetime(written, "time")
        assert abs(event.time - ours.time) <= timedelta(milliseconds=1)


def test_sdk_truncates_milliseconds() -> None:
    """Pins the SDK rounding bug the property test above tolerates."""
    event = replace(EVENT, time=datetime(1970, 1, 1, 0, 0, 1, 1000, tzinfo=UTC))
    assert (
        amqp.to_binary(sdk_event(event), FORMAT).application_properties["cloudEvents_time"] == 1000
    )
    assert to_binary(event).application_properties["cloudEvents_time"] == 1001


# --- other SDKs' conventions ------------------------------------------------------------------


def go_java_style(event: CloudEvent) -> AmqpMessage:
    """Binary mode as the Go / Java / .NET SDKs write it: ``cloudEvents:`` and every value a string."""
    attributes = event.attributes()
    content_type = attributes.pop("datacontenttype", None)
    return AmqpMessage(
        properties=Properties(content_type=None if content_type is None else str(content_type)),
        application_properties={
            f"cloudEvents:{name}": canonical_string(value) for name, value in attributes.items()
        },
        body_kind=BodyKind.DATA,
        body=[event.data or b""],
    )


def test_read_binding_spec_example() -> None:
    message = AmqpMessage(
        properties=Properties(to="myqueue", content_type=symbol("application/json; charset=utf-8")),
        application_properties={
            "cloudEvents:specversion": "1.0",
            "cloudEvents:type": "com.example.someevent",
            "cloudEvents:time": "2018-04-05T03:56:24Z",
            "cloudEvents:id": "1234-1234-1234",
            "cloudEvents:source": "/mycontext/subcontext",
        },
        body_kind=BodyKind.DATA,
        body=[b'{"key": "value"}'],
    )
    assert from_message(AmqpMessage.decode(message.encode())) == CloudEvent(
        id="1234-1234-1234",
        source="/mycontext/subcontext",
        type="com.example.someevent",
        datacontenttype="application/json; charset=utf-8",
        time=datetime(2018, 4, 5, 3, 56, 24, tzinfo=UTC),
        data=b'{"key": "value"}',
    )


def test_read_go_java_style_strings() -> None:
    message = go_java_style(replace(EVENT, extensions={"count": 7, "flag": True, "blob": b"\x01"}))
    assert message.application_properties["cloudEvents:count"] == "7"
    assert message.application_properties["cloudEvents:time"] == "2026-11-21T23:07:35.688Z"
    ours = from_message(AmqpMessage.decode(message.encode()))
    assert ours == replace(EVENT, extensions={"count": "7", "flag": "true", "blob": "AQ=="})


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(events(binary=False, times=False), st.dictionaries(extension_names, ce_text, max_size=3))
def test_read_any_go_java_style_event(event: CloudEvent, string_extensions: dict[str, str]) -> None:
    event = replace(event, extensions=string_extensions)
    assert from_message(AmqpMessage.decode(go_java_style(event).encode())) == event


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(extension_values())
def test_colon_prefix_output_is_what_go_and_java_read(value: Any) -> None:
    event = replace(EVENT, extensions={"ext": value})
    props = to_binary(event, prefix=Prefix.COLON).application_properties
    assert set(props) == {
        f"cloudEvents:{name}" for name in event.attributes() if name != "datacontenttype"
    }


# --- recorded traffic -------------------------------------------------------------------------


def capture_messages() -> list[AmqpMessage]:
    """The AMQP 1.0 messages of the translate_1_0_to_0_10 capture, rebuilt as sent."""
    sent = json.loads(CAPTURE.read_text())["sent_amqp10"]
    messages = []
    for entry in sent:
        properties = {
            key: timestamp(value) if key == "cloudEvents_time" else value
            for key, value in entry["properties"].items()
        }
        body = entry["body"]
        if isinstance(body, dict) and "bytes_hex" in body:
            kind, value = BodyKind.DATA, [bytes.fromhex(body["bytes_hex"])]
        else:
            kind, value = BodyKind.VALUE, body
        messages.append(
            AmqpMessage(
                properties=Properties(
                    message_id=None if entry["id"] == "None" else entry["id"],
                    subject=entry["subject"],
                    content_type=None if entry["content_type"] == "None" else entry["content_type"],
                ),
                application_properties=properties,
                body_kind=kind,
                body=value,
            )
        )
    return messages


def test_capture_binary_mode_event() -> None:
    message = capture_messages()[0]
    assert detect_mode(message) is ContentMode.BINARY
    assert from_message(AmqpMessage.decode(message.encode())) == CloudEvent(
        id="ce-1",
        source="/orders",
        type="com.example.order.created",
        datacontenttype="application/json",
        time=millis_to_datetime(json.loads(CAPTURE.read_text())["cloudEvents_time_ms"], "time"),
        extensions={"count": 7},
        data=b'{"order": 1}',
    )


def test_capture_structured_mode_event() -> None:
    message = capture_messages()[1]
    assert detect_mode(message) is ContentMode.STRUCTURED
    event = from_message(AmqpMessage.decode(message.encode()))
    assert event == CloudEvent(id="ce-2", source="/s", type="t", data=b'{"x":1}')


def test_capture_plain_messages_are_not_cloudevents() -> None:
    assert [from_message(message) for message in capture_messages()[2:]] == [None, None]
