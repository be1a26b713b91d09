"""Binary content mode: writing (strict) and reading (lenient)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from proton import byte, char, int32, short, symbol, timestamp, ubyte, uint, ulong, ushort

from mappings.cloudevents import CloudEvent, Prefix, from_binary, to_binary
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind, Header, Properties

TIME = datetime(2026, 11, 21, 23, 7, 35, 688000, tzinfo=UTC)
EVENT = CloudEvent(
    id="ce-1",
    source="/orders",
    type="com.example.order.created",
    datacontenttype="application/json",
    dataschema="https://schemas.example/order",
    subject="order-7",
    time=TIME,
    extensions={"count": 7, "flag": True, "blob": b"\x00\x01", "text": "x", "when": TIME},
    data=b'{"order": 1}',
)


def message(
    props: dict[str, Any],
    *,
    content_type: str | None = None,
    body: Any = None,
    kind: BodyKind = BodyKind.DATA,
) -> AmqpMessage:
    return AmqpMessage(
        properties=Properties(content_type=content_type),
        application_properties=props,
        body_kind=kind,
        body=[b"payload"] if body is None and kind is BodyKind.DATA else body,
    )


def required(prefix: str = "cloudEvents_") -> dict[str, Any]:
    return {
        f"{prefix}specversion": "1.0",
        f"{prefix}id": "1",
        f"{prefix}source": "/s",
        f"{prefix}type": "t",
    }


def test_write_maps_each_type_per_the_binding_table() -> None:
    out = to_binary(EVENT)
    assert out.properties == Properties(content_type=symbol("application/json"))
    assert type(out.properties.content_type) is symbol
    assert out.application_properties == {
        "cloudEvents_specversion": "1.0",
        "cloudEvents_id": "ce-1",
        "cloudEvents_source": "/orders",
        "cloudEvents_type": "com.example.order.created",
        "cloudEvents_subject": "order-7",
        "cloudEvents_dataschema": "https://schemas.example/order",
        "cloudEvents_time": timestamp(1795302455688),
        "cloudEvents_count": 7,
        "cloudEvents_flag": True,
        "cloudEvents_blob": b"\x00\x01",
        "cloudEvents_text": "x",
        "cloudEvents_when": timestamp(1795302455688),
    }
    types = {k: type(v) for k, v in out.application_properties.items()}
    assert types["cloudEvents_time"] is types["cloudEvents_when"] is timestamp
    assert (types["cloudEvents_count"], types["cloudEvents_flag"], types["cloudEvents_blob"]) == (
        int,
        bool,
        bytes,
    )
    assert types["cloudEvents_source"] is types["cloudEvents_dataschema"] is str
    assert "cloudEvents_datacontenttype" not in out.application_properties
    assert (out.body_kind, out.body) == (BodyKind.DATA, [b'{"order": 1}'])


def test_integer_is_written_as_amqp_long() -> None:
    encoded = AmqpMessage.decode(to_binary(EVENT).encode())
    assert type(encoded.application_properties["cloudEvents_count"]) is int  # proton's long


def test_write_with_colon_prefix_uses_it_for_every_attribute() -> None:
    out = to_binary(EVENT, prefix=Prefix.COLON)
    assert all(key.startswith("cloudEvents:") for key in out.application_properties)
    assert len(out.application_properties) == 12
    assert to_binary(EVENT, prefix="cloudEvents:") == out
    with pytest.raises(ValueError, match="prefix"):
        to_binary(EVENT, prefix="ce_")


def test_inexact_times_are_written_as_canonical_strings() -> None:
    event = CloudEvent(
        id="1",
        source="/s",
        type="t",
        time=TIME + timedelta(microseconds=5),
        extensions={"local": TIME.astimezone(timezone(timedelta(hours=2)))},
    )
    props = to_binary(event).application_properties
    assert props["cloudEvents_time"] == "2026-11-21T23:07:35.688005Z"
    assert props["cloudEvents_local"] == "2026-11-22T01:07:35.688+02:00"
    back = from_binary(to_binary(event))
    assert back.time == event.time  # time is a known Timestamp: parsed back
    assert back.extensions == {
        "local": "2026-11-22T01:07:35.688+02:00"
    }  # extension: stays a String


def test_event_without_data_or_content_type() -> None:
    event = CloudEvent(id="1", source="/s", type="t")
    out = to_binary(event)
    assert out.properties.content_type is None
    assert out.body == [b""]
    assert from_binary(out) == event


def test_envelope_keeps_everything_but_cloudevents_content() -> None:
    envelope = AmqpMessage(
        header=Header(durable=True, priority=7),
        message_annotations={symbol("x-amqp-0-10.routing-key"): "rk"},
        properties=Properties(
            message_id="m-1", to="/queue/q", content_type="text/plain", creation_time=5
        ),
        application_properties={"region": "eu", "cloudEvents_stale": "x", "cloudEvents:old": 1},
        body_kind=BodyKind.VALUE,
        body="old body",
        footer={symbol("f"): 1},
    )
    out = to_binary(EVENT, envelope=envelope)
    assert out.header == envelope.header and out.header is not envelope.header
    assert out.message_annotations == envelope.message_annotations
    assert out.footer == envelope.footer
    assert out.properties == Properties(
        message_id="m-1", to="/queue/q", content_type="application/json", creation_time=5
    )
    assert out.application_properties["region"] == "eu"
    assert "cloudEvents_stale" not in out.application_properties
    assert "cloudEvents:old" not in out.application_properties
    assert (out.body_kind, out.body) == (BodyKind.DATA, [EVENT.data])
    assert envelope.properties.content_type == "text/plain"  # the envelope is not modified
    assert from_binary(out) == EVENT


# --- reading ----------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["cloudEvents_", "cloudEvents:"])
def test_read_either_prefix(prefix: str) -> None:
    event = from_binary(
        message({**required(prefix), f"{prefix}ext": "v", "other": 1}, content_type="text/plain")
    )
    assert event == CloudEvent(
        id="1",
        source="/s",
        type="t",
        datacontenttype="text/plain",
        extensions={"ext": "v"},
        data=b"payload",
    )


def test_read_back_what_we_write() -> None:
    assert from_binary(to_binary(EVENT)) == EVENT
    assert from_binary(AmqpMessage.decode(to_binary(EVENT, prefix=Prefix.COLON).encode())) == EVENT


def test_read_canonical_strings() -> None:
    props = {
        **required(),
        "cloudEvents_time": "2018-04-05T03:56:24Z",
        "cloudEvents_dataschema": "https://x.example/s",
        "cloudEvents_count": "7",
    }
    event = from_binary(message(props))
    assert event.time == datetime(2018, 4, 5, 3, 56, 24, tzinfo=UTC)
    assert event.extensions == {"count": "7"}  # extension types are unknown: the string stays


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (timestamp(1795302455688), TIME),
        (1795302455688, TIME),  # a long (what the Python SDK writes)
        ("2026-11-21T23:07:35.688Z", TIME),
        ("2026-11-22T00:07:35.688+01:00", TIME),
    ],
)
def test_read_time_forms(value: Any, expected: datetime) -> None:
    assert from_binary(message({**required(), "cloudEvents_time": value})).time == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (byte(-1), -1),
        (short(300), 300),
        (int32(-70000), -70000),
        (ubyte(1), 1),
        (ushort(2), 2),
        (uint(3), 3),
        (ulong(4), 4),
        (symbol("s"), "s"),
        (char("c"), "c"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (timestamp(0), datetime(1970, 1, 1, tzinfo=UTC)),
    ],
)
def test_read_is_lenient_about_amqp_types(value: Any, expected: Any) -> None:
    event = from_binary(message({**required(), "cloudEvents_ext": value}))
    assert event.extensions["ext"] == expected
    assert type(event.extensions["ext"]) is type(expected)


def test_read_symbol_typed_core_attributes() -> None:
    props = {
        **required(),
        "cloudEvents_type": symbol("t"),
        "cloudEvents_specversion": symbol("1.0"),
    }
    event = from_binary(message(props))
    assert (type(event.type), type(event.specversion)) == (str, str)


@pytest.mark.parametrize(
    ("props", "field"),
    [
        (
            {"cloudEvents_id": "1", "cloudEvents_source": "/s", "cloudEvents_type": "t"},
            "specversion",
        ),
        ({**required(), "cloudEvents_specversion": "0.3"}, "specversion"),
        ({k: v for k, v in required().items() if k != "cloudEvents_id"}, "id"),
        ({k: v for k, v in required().items() if k != "cloudEvents_type"}, "type"),
        ({**required(), "cloudEvents_id": ""}, "id"),
        ({**required(), "cloudEvents_id": 5}, "id"),
        ({**required(), "cloudEvents_source": b"/s"}, "source"),
        ({**required(), "cloudEvents_time": "last tuesday"}, "time"),
        ({**required(), "cloudEvents_time": 1.5}, "time"),
        ({**required(), "cloudEvents_ext": 1.5}, "ext"),
        ({**required(), "cloudEvents_ext": [1]}, "ext"),
        ({**required(), "cloudEvents_ext": None}, "ext"),
        ({**required(), "cloudEvents_ext": ulong(2**40)}, "ext"),
        ({**required(), "cloudEvents_Bad": 1}, "Bad"),
        ({**required(), "cloudEvents_data": 1}, "data"),
        ({**required(), "cloudEvents:id": "2"}, "cloudEvents:id"),
        ({**required("cloudEvents:"), "cloudEvents_x": "2"}, "cloudEvents_x"),
        ({**required(), "cloudEvents_dataschema": "not absolute"}, "dataschema"),
    ],
)
def test_read_errors_name_the_attribute(props: dict[str, Any], field: str) -> None:
    with pytest.raises(CloudEventError) as info:
        from_binary(message(props))
    assert info.value.field == field


def test_mixed_prefixes_message() -> None:
    with pytest.raises(CloudEventError, match="mixes"):
        from_binary(message({**required(), "cloudEvents:ext": "x"}))


@pytest.mark.parametrize(
    ("kind", "body", "data"),
    [
        (BodyKind.DATA, [b"ab", b"cd"], b"abcd"),
        (BodyKind.DATA, [b""], None),
        (BodyKind.VALUE, None, None),
        (BodyKind.VALUE, b"raw", b"raw"),
        (BodyKind.VALUE, "tëxt", "tëxt".encode()),
    ],
)
def test_read_body_forms(kind: BodyKind, body: Any, data: bytes | None) -> None:
    assert from_binary(message(required(), kind=kind, body=body)).data == data


@pytest.mark.parametrize(
    ("kind", "body"), [(BodyKind.VALUE, {"a": 1}), (BodyKind.VALUE, 5), (BodyKind.SEQUENCE, [[1]])]
)
def test_read_structured_bodies_are_errors(kind: BodyKind, body: Any) -> None:
    with pytest.raises(CloudEventError) as info:
        from_binary(message(required(), kind=kind, body=body))
    assert info.value.field == "data"


def test_datacontenttype_property_is_a_fallback_only() -> None:
    props = {**required(), "cloudEvents_datacontenttype": "text/csv"}
    assert from_binary(message(props)).datacontenttype == "text/csv"
    assert from_binary(message(props, content_type="text/plain")).datacontenttype == "text/plain"
