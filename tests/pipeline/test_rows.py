"""Archive rows: every column extracted from a message (pure Python, no Spark)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import orjson
import pytest
from proton import Data, Described, symbol, timestamp, ulong

from mappings.cloudevents import CloudEvent, EventTemplate, to_binary, to_json, to_structured
from mappings.message import AmqpMessage, BodyKind, Header, Properties
from pipeline.rows import COLUMNS, archive_row, id_text, value_text
from pipeline.sections import SectionError, split_message

WHEN = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)


def row(message: AmqpMessage, **kwargs: object) -> dict[str, object]:
    return dict(zip(COLUMNS, archive_row("orders", "received", 42, message, **kwargs), strict=True))


def test_binary_event_columns_hold_the_event_in_json_text_forms() -> None:
    event = CloudEvent(
        id="e-1", source="/orders", type="com.example.created", subject="s", time=WHEN,
        dataschema="https://example.com/s", datacontenttype="application/json",
        extensions={"count": 7, "flag": True, "raw": b"\x00\x01", "seen": WHEN}, data=b'{"a": 1}',
    )
    columns = row(to_binary(event))
    assert columns["ce_mode"] == "binary"
    assert columns["ce_error"] is None
    assert [columns[f"ce_{name}"] for name in
            ("specversion", "id", "source", "type", "subject", "dataschema", "datacontenttype")] == [
        "1.0", "e-1", "/orders", "com.example.created", "s", "https://example.com/s", "application/json"]
    assert columns["ce_time"] == "2024-05-01T12:00:00.123Z"
    # exactly the members the JSON event format writes for the extensions
    document = orjson.loads(to_json(event))
    assert orjson.loads(columns["ce_extensions"]) == {k: document[k] for k in ("count", "flag", "raw", "seen")}
    assert columns["ce_extensions"][1:-1] in to_json(event).decode()  # the same bytes


def test_structured_event_and_invalid_event() -> None:
    structured = row(to_structured(CloudEvent(id="s-1", source="/s", type="t")))
    assert (structured["ce_mode"], structured["ce_id"], structured["ce_error"]) == ("structured", "s-1", None)
    broken = to_binary(CloudEvent(id="x", source="/s", type="t"))
    del broken.application_properties["cloudEvents_source"]
    invalid = row(broken)
    assert invalid["ce_mode"] == "binary"
    assert invalid["ce_id"] is None
    assert invalid["ce_error"] == "source: required attribute is missing"


def test_plain_message_columns() -> None:
    message = AmqpMessage(
        properties=Properties(message_id=ulong(12), correlation_id=b"\xff\x00", subject="hello",
                              content_type=symbol("text/plain"), creation_time=timestamp(1714564800000)),
        application_properties={"n": 5, "ok": False, "at": timestamp(1714564800123),
                                "id": uuid.UUID(int=1), "raw": b"abc", "none": None, "f": 1.5},
        body="héllo",
    )
    columns = row(message)
    assert (columns["route"], columns["side"], columns["time"]) == ("orders", "received", 42)
    assert (columns["message_id"], columns["message_id_type"]) == ("12", "ulong")
    assert (columns["correlation_id"], columns["correlation_id_type"]) == ("ff00", "binary")
    assert (columns["subject"], columns["content_type"], columns["creation_time_ms"]) == (
        "hello", "text/plain", 1714564800000)
    assert columns["application_properties"] == {
        "n": "5", "ok": "false", "at": "2024-05-01T12:00:00.123Z",
        "id": "00000000-0000-0000-0000-000000000001", "raw": "abc", "none": None, "f": "1.5"}
    assert columns["ce_mode"] is None and columns["ce_error"] is None
    assert (columns["body_kind"], columns["body_type"], columns["body_size"]) == ("amqp-value", "string", 6)


@pytest.mark.parametrize(
    ("kind", "body", "content_type", "expected"),
    [
        (BodyKind.DATA, [b'{"a":1}'], "application/json", ("data", None, 7, True)),
        (BodyKind.DATA, [b"{bad"], None, ("data", None, 4, False)),  # absent content type = JSON
        (BodyKind.DATA, [b"{}"], "text/plain", ("data", None, 2, None)),  # not checked
        (BodyKind.DATA, [b""], "application/json", ("data", None, 0, None)),
        (BodyKind.DATA, [b"a", b"b"], None, ("data", None, None, None)),  # not one run of bytes
        (BodyKind.SEQUENCE, [[1, 2]], None, ("amqp-sequence", None, None, None)),
        (BodyKind.VALUE, None, None, ("amqp-value", "null", 0, None)),
        (BodyKind.VALUE, b"\x01\x02", None, ("amqp-value", "binary", 2, False)),
        (BodyKind.VALUE, symbol("sym"), None, ("amqp-value", "symbol", 3, False)),
        (BodyKind.VALUE, {"k": 1}, None, ("amqp-value", "map", None, None)),
        (BodyKind.VALUE, 7, None, ("amqp-value", "long", None, None)),
    ],
)
def test_body_columns(kind: BodyKind, body: object, content_type: str | None,
                      expected: tuple[object, ...]) -> None:
    message = AmqpMessage(properties=Properties(content_type=content_type), body_kind=kind, body=body)
    columns = row(message)
    assert (columns["body_kind"], columns["body_type"], columns["body_size"], columns["body_json"]) == expected
    size = columns["body_size"]
    if size:  # the payload is the last body_size bytes of the bare message
        payload = body[0] if kind is BodyKind.DATA else body
        assert columns["bare"][-size:] == (payload.encode() if isinstance(payload, str) else payload)


def test_head_and_bare_are_the_message_encoding_without_hop_by_hop_sections() -> None:
    message = AmqpMessage(
        header=Header(durable=True, priority=7),
        delivery_annotations={symbol("x-hop"): 1},
        message_annotations={symbol("x-opt-routing-key"): "orders.eu"},
        properties=Properties(message_id="m-1"),
        application_properties={"k": "v"},
        body_kind=BodyKind.DATA,
        body=[b"payload"],
        footer={symbol("x-sig"): b"sig"},
    )
    columns = row(message)
    assert columns["bare"] == message.encode_bare()
    restored = AmqpMessage.decode(columns["head"] + columns["bare"])
    assert restored.header == message.header
    assert restored.message_annotations == message.message_annotations
    assert restored.delivery_annotations == {} and restored.footer == {}
    assert row(message, encoded=message.encode()) == columns  # bytes the caller already has
    assert row(AmqpMessage(body="x"))["head"] is None


def test_split_message_reads_symbolic_descriptors_and_rejects_garbage() -> None:
    data = Data()
    data.put_object(Described(symbol("amqp:header:list"), [True]))
    data.put_object(Described(symbol("amqp:properties:list"), ["id"]))
    data.put_object(Described(symbol("amqp:amqp-value:*"), "body"))
    head, bare = split_message(bytes(data.encode()))
    assert AmqpMessage.decode(head + bare).header.durable is True
    assert AmqpMessage.decode_bare(bare).body == "body"
    for garbage in (b"\x00\x53", b"\x40", b"\x00\x53\x75\xb0\x00\x00\x00\x09ab", b"\x00\x53\x70\x45"):
        with pytest.raises(SectionError):
            split_message(garbage)


@pytest.mark.parametrize(
    "message_id",
    ["order-1", ulong(2**64 - 1), uuid.UUID(int=3), b"caf\xc3\xa9", b"\xff\xfe"],
)
def test_id_text_is_the_text_event_templates_use(message_id: object) -> None:
    template = EventTemplate(source="/s", type="t")
    message = AmqpMessage(properties=Properties(message_id=message_id))
    assert id_text(message_id)[0] == template.build(message, now=WHEN).id


def test_value_text_of_structured_values() -> None:
    assert value_text({"a": [1, "x"]}) == '{"a":[1,"x"]}'
    assert value_text(True) == "true"
    assert value_text(None) is None


def test_archive_row_rejects_an_unknown_side() -> None:
    with pytest.raises(ValueError, match="side"):
        archive_row("r", "sent", 0, AmqpMessage())
