"""Structured content mode: the JSON event format."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from proton import symbol

from mappings.cloudevents import (
    STRUCTURED_CONTENT_TYPE,
    CloudEvent,
    from_json,
    from_structured,
    to_json,
    to_structured,
)
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind, Header, Properties

TIME = datetime(2026, 11, 21, 23, 7, 35, 688000, tzinfo=UTC)


def event(**changes: Any) -> CloudEvent:
    base: dict[str, Any] = {"id": "1", "source": "/s", "type": "t"}
    return CloudEvent(**{**base, **changes})


def doc(event: CloudEvent) -> dict[str, Any]:
    return orjson.loads(to_json(event))  # type: ignore[no-any-return]


def test_full_document() -> None:
    full = event(
        datacontenttype="application/json",
        dataschema="https://schemas.example/s",
        subject="sub",
        time=TIME,
        extensions={"count": 7, "flag": False, "blob": b"\xff\x00", "when": TIME, "text": "x"},
        data=b'{"a": [1, 2]}',
    )
    assert doc(full) == {
        "specversion": "1.0",
        "id": "1",
        "source": "/s",
        "type": "t",
        "datacontenttype": "application/json",
        "dataschema": "https://schemas.example/s",
        "subject": "sub",
        "time": "2026-11-21T23:07:35.688Z",
        "count": 7,
        "flag": False,
        "blob": "/wA=",
        "when": "2026-11-21T23:07:35.688Z",
        "text": "x",
        "data": {"a": [1, 2]},
    }


def test_message_layout() -> None:
    out = to_structured(event(data=b"[1]"))
    assert out.properties == Properties(content_type=STRUCTURED_CONTENT_TYPE)
    assert type(out.properties.content_type) is symbol
    assert out.application_properties == {}
    assert out.body_kind is BodyKind.DATA
    assert orjson.loads(out.body[0])["data"] == [1]


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "application/json",
        "application/json; charset=utf-8",
        "application/cloudevents+json",
        "application/vnd.api+json",
        "TEXT/JSON",
    ],
)
def test_json_data_is_inlined(content_type: str | None) -> None:
    assert doc(event(datacontenttype=content_type, data=b'{"k": "v"}'))["data"] == {"k": "v"}


def test_json_data_is_embedded_verbatim() -> None:
    assert to_json(event(data=b'{"b": 1,  "a": 2}')).endswith(b'"data":{"b": 1,  "a": 2}}')


@pytest.mark.parametrize(
    ("content_type", "data"),
    [
        ("text/plain", b"hello"),
        ("application/octet-stream", b"\x00\xff"),
        ("application/xml", b"<a/>"),
        ("application/json", b"{not json"),
        (None, b"\xff\xfe"),
    ],
)
def test_other_data_is_base64(content_type: str | None, data: bytes) -> None:
    members = doc(event(datacontenttype=content_type, data=data))
    assert "data" not in members
    assert from_json(to_json(event(datacontenttype=content_type, data=data))).data == data


def test_no_data_no_member() -> None:
    members = doc(event())
    assert "data" not in members and "data_base64" not in members


def test_round_trip_through_message() -> None:
    original = event(time=TIME, extensions={"n": 1}, data=b'{"x":1}')
    assert from_structured(AmqpMessage.decode(to_structured(original).encode())) == original


def test_envelope() -> None:
    envelope = AmqpMessage(
        header=Header(durable=True),
        properties=Properties(message_id="m", content_type="application/json"),
        application_properties={"keep": 1, "cloudEvents_id": "old", "cloudEvents:type": "old"},
    )
    out = to_structured(event(), envelope=envelope)
    assert out.header == Header(durable=True)
    assert out.properties == Properties(message_id="m", content_type=STRUCTURED_CONTENT_TYPE)
    assert out.application_properties == {"keep": 1}


# --- reading ----------------------------------------------------------------------------------


def test_read_document() -> None:
    parsed = from_json(
        b'{"specversion":"1.0","id":"1","source":"/s","type":"t","time":"2026-11-21T23:07:35.688Z",'
        b'"subject":"s","n":7,"f":true,"s":"x","data":{"a":1}}'
    )
    assert parsed == event(
        time=TIME, subject="s", extensions={"n": 7, "f": True, "s": "x"}, data=b'{"a":1}'
    )


def test_read_str_document_and_null_members() -> None:
    parsed = from_json(
        '{"specversion":"1.0","id":"1","source":"/s","type":"t","subject":null,"ext":null,"data":null}'
    )
    assert parsed == event()


@pytest.mark.parametrize(
    ("data_member", "content_type", "expected"),
    [
        ('"text"', "text/plain", b"text"),
        ('"text"', "application/json", b'"text"'),
        ('"text"', None, b'"text"'),
        ("[1, 2.5, true]", None, b"[1,2.5,true]"),
        ('{"a": 1}', "text/plain", b'{"a":1}'),
    ],
)
def test_read_data_member(data_member: str, content_type: str | None, expected: bytes) -> None:
    members = '"specversion":"1.0","id":"1","source":"/s","type":"t"'
    if content_type is not None:
        members += f',"datacontenttype":"{content_type}"'
    assert from_json("{" + members + f',"data":{data_member}' + "}").data == expected


def test_non_canonical_json_data_is_re_encoded_compactly() -> None:
    """Documented: JSON data read from structured mode is re-encoded (whitespace is not kept)."""
    original = event(data=b'{ "a" : 1 }')
    assert from_json(to_json(original)).data == b'{"a":1}'


def test_json_null_data_reads_as_no_data() -> None:
    """Documented: the JSON format cannot tell ``"data": null`` from no data."""
    assert from_json(to_json(event(data=b"null"))).data is None


def test_integers_beyond_64_bits_stay_exact() -> None:
    big = 123456789012345678901234567890
    original = event(data=json.dumps({"n": big, "s": "x"}).encode())
    parsed = from_json(to_json(original))
    assert json.loads(parsed.data) == {"n": big, "s": "x"}  # type: ignore[arg-type]


def test_read_base64() -> None:
    parsed = from_json(
        '{"specversion":"1.0","id":"1","source":"/s","type":"t","data_base64":"AAE="}'
    )
    assert parsed.data == b"\x00\x01"


def test_integral_float_extension_is_an_integer() -> None:
    parsed = from_json('{"specversion":"1.0","id":"1","source":"/s","type":"t","n":7.0}')
    assert parsed.extensions == {"n": 7}
    assert type(parsed.extensions["n"]) is int


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ("not json", "data"),
        ("[1]", "data"),
        ('{"id":"1","source":"/s","type":"t"}', "specversion"),
        ('{"specversion":"0.3","id":"1","source":"/s","type":"t"}', "specversion"),
        ('{"specversion":"1.0","source":"/s","type":"t"}', "id"),
        ('{"specversion":"1.0","id":1,"source":"/s","type":"t"}', "id"),
        ('{"specversion":"1.0","id":"1","source":"/s","type":"t","time":12}', "time"),
        ('{"specversion":"1.0","id":"1","source":"/s","type":"t","time":"noon"}', "time"),
        ('{"specversion":"1.0","id":"1","source":"/s","type":"t","n":1.5}', "n"),
        ('{"specversion":"1.0","id":"1","source":"/s","type":"t","n":4294967296}', "n"),
        ('{"specversion":"1.0","id":"1","source":"/s","type":"t","o":{"a":1}}', "o"),
        ('{"specversion":"1.0","id":"1","source":"/s","type":"t","l":[1]}', "l"),
        ('{"specversion":"1.0","id":"1","source":"/s","type":"t","Bad":1}', "Bad"),
        (
            '{"specversion":"1.0","id":"1","source":"/s","type":"t","data":1,"data_base64":"AA=="}',
            "data",
        ),
        (
            '{"specversion":"1.0","id":"1","source":"/s","type":"t","data_base64":"***"}',
            "data_base64",
        ),
        ('{"specversion":"1.0","id":"1","source":"/s","type":"t","data_base64":5}', "data_base64"),
    ],
)
def test_read_errors(document: str, field: str) -> None:
    with pytest.raises(CloudEventError) as info:
        from_json(document)
    assert info.value.field == field


def structured(
    body: Any, content_type: str | None = STRUCTURED_CONTENT_TYPE, kind: BodyKind = BodyKind.DATA
) -> AmqpMessage:
    return AmqpMessage(properties=Properties(content_type=content_type), body_kind=kind, body=body)


DOCUMENT = b'{"specversion":"1.0","id":"1","source":"/s","type":"t"}'


@pytest.mark.parametrize(
    "content_type",
    [
        "application/cloudevents+json",
        "application/cloudevents+json; charset=UTF-8",
        "Application/CloudEvents+JSON ;charset=utf-8",
    ],
)
def test_from_structured_content_types(content_type: str) -> None:
    assert from_structured(structured([DOCUMENT], content_type)) == event()


def test_from_structured_body_forms() -> None:
    assert from_structured(structured([DOCUMENT[:10], DOCUMENT[10:]])) == event()
    assert from_structured(structured(DOCUMENT.decode(), kind=BodyKind.VALUE)) == event()
    assert from_structured(structured(DOCUMENT, kind=BodyKind.VALUE)) == event()


def test_from_structured_ignores_attribute_properties() -> None:
    message = structured([DOCUMENT])
    message.application_properties = {"cloudEvents_id": "other", "cloudEvents_type": "other"}
    assert from_structured(message) == event()


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (structured([DOCUMENT], "application/json"), "content_type"),
        (structured([DOCUMENT], None), "content_type"),
        (structured([b""]), "data"),
        (structured(None, kind=BodyKind.VALUE), "data"),
        (structured({"specversion": "1.0"}, kind=BodyKind.VALUE), "data"),
    ],
)
def test_from_structured_errors(message: AmqpMessage, field: str) -> None:
    with pytest.raises(CloudEventError) as info:
        from_structured(message)
    assert info.value.field == field
