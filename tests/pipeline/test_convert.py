"""convert: archives → CloudEvents datasets, native SQL path vs the shared Python mapping."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from proton import symbol, timestamp, ulong
from pyspark.sql import SparkSession

from mappings.cloudevents import (
    CloudEvent,
    EventTemplate,
    from_message,
    to_binary,
    to_json,
    to_structured,
)
from mappings.message import AmqpMessage, BodyKind, Properties
from pipeline.convert import INVALID_DIR, convert
from pipeline.events import row_id
from pipeline.inputs import load_archive
from tests.data import CAPTURES_010 as CAPTURES
from tests.pipeline.conftest import BASE_TIME_US, write_archive

NOW = datetime(2024, 6, 1, 8, 30, 15, 250000, tzinfo=UTC)
WHEN = datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)
TEMPLATE = EventTemplate(source="/legacy/{subject}", type="com.example.legacy")


def _binary(**fields: object) -> AmqpMessage:
    return to_binary(CloudEvent(**{"source": "/orders", "type": "com.example.order", **fields}))  # type: ignore[arg-type]


def _multi_section() -> AmqpMessage:
    message = _binary(id="multi", data=b"ab")
    message.body = [b"a", b"b"]
    return message


def _invalid() -> AmqpMessage:
    message = _binary(id="broken")
    del message.application_properties["cloudEvents_source"]
    return message


EVENTS = [
    _binary(id="json", subject="sübject ✓", dataschema="https://example.com/schema", time=WHEN,
            datacontenttype="application/json", data=b'{"order": 1, "items": ["a"]}',
            extensions={"count": 7, "flag": True, "raw": b"\x00\xff", "seen": WHEN, "region": "eu"}),
    _binary(id="text", datacontenttype="text/plain; charset=utf-8", data="grüße".encode()),
    _binary(id="not-json", datacontenttype="application/json", data=b"{not json"),
    _binary(id="pretty", datacontenttype="application/vnd.x+json", data=b'{\n  "a": [1,\r\n 2]\n}\n'),
    _binary(id="no-type", data=b"[1, 2]"),
    _binary(id="no-data"),
    AmqpMessage(properties=Properties(message_id="text-value"),
                application_properties={"cloudEvents_specversion": "1.0", "cloudEvents_id": "value",
                                        "cloudEvents_source": "/v", "cloudEvents_type": "t"},
                body="an amqp-value string"),
    to_structured(CloudEvent(id="structured", source="/s", type="t", datacontenttype="application/json",
                             data=b'{"x": true}', extensions={"tenant": "a"})),
    _multi_section(),
]
PLAIN = [
    AmqpMessage(properties=Properties(message_id="p-1", subject="orders", creation_time=timestamp(1714564800000),
                                      content_type=symbol("application/json")),
                body_kind=BodyKind.DATA, body=[b'{"n": 1}']),
    AmqpMessage(properties=Properties(message_id=ulong(2), subject="orders", creation_time=timestamp(1714564800007)),
                body="plain text"),
    AmqpMessage(properties=Properties(message_id=uuid.UUID(int=3), subject="orders"), body={"k": [1, 2]}),
    AmqpMessage(properties=Properties(subject="no-id"), body_kind=BodyKind.DATA, body=[b"\x00\x01"]),
    AmqpMessage(properties=Properties(message_id="no-subject"), body="x"),
]


def _lines(path: str) -> list[str]:
    return sorted(
        line for part in Path(path).glob("part-*") for line in part.read_text().splitlines()
    )


def _expected_line(event: CloudEvent) -> str:
    """The mapping's JSON event format, on one line."""
    return to_json(event).decode().replace("\r", " ").replace("\n", " ")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    entries = [("orders", "received", m) for m in [*EVENTS, *PLAIN, _invalid()]]
    return write_archive(tmp_path_factory.mktemp("mixed"), entries)


def test_events_are_written_as_the_mappings_json_event_format(
    spark: SparkSession, mixed: Path, tmp_path: Path
) -> None:
    result = convert(spark, load_archive(spark, [mixed]), str(tmp_path / "out"), now=NOW)
    expected = sorted(_expected_line(from_message(m)) for m in EVENTS)  # type: ignore[arg-type]
    assert _lines(result.output) == expected
    assert (result.events, result.skipped, result.invalid) == (len(EVENTS), len(PLAIN), 1)
    assert result.python_rows == 2  # the structured event and the multi-section body
    invalid = spark.read.parquet(str(tmp_path / "out" / INVALID_DIR)).collect()
    assert [(r.route, r.side, r.error) for r in invalid] == [
        ("orders", "received", "source: required attribute is missing")]


def test_native_and_python_paths_give_identical_events(
    spark: SparkSession, mixed: Path, tmp_path: Path
) -> None:
    archive = load_archive(spark, [mixed])
    native = convert(spark, archive, str(tmp_path / "auto"), template=TEMPLATE, now=NOW)
    python = convert(spark, archive, str(tmp_path / "python"), template=TEMPLATE, now=NOW,
                     engine="python")
    total = len(EVENTS) + len(PLAIN) + 1
    assert python.python_rows == total
    # natively: the binary events and the first, second and fourth plain message
    assert native.python_rows == 2 + 2
    assert _lines(native.output) == _lines(python.output)
    assert (native.events, native.skipped, native.invalid) == (python.events, python.skipped, python.invalid)
    assert (native.events, native.invalid) == (len(EVENTS) + 4, 2)
    # the templated events are the mapping's, with the row-derived id for a message without one
    lines = set(_lines(native.output))
    for index, message in enumerate(PLAIN[:4]):
        derived = row_id("orders", BASE_TIME_US + (len(EVENTS) + index) * 1000, message.encode_bare())
        event = TEMPLATE.build(message, now=NOW, new_id=lambda id_=derived: id_)
        assert _expected_line(event) in lines


def test_parquet_output_has_a_column_per_attribute(
    spark: SparkSession, mixed: Path, tmp_path: Path
) -> None:
    archive = load_archive(spark, [mixed], routes=["orders"], side="received")
    result = convert(spark, archive, str(tmp_path / "pq"), fmt="parquet", now=NOW)
    table = spark.read.parquet(result.output)
    assert [(f.name, f.dataType.simpleString()) for f in table.schema.fields] == [
        ("specversion", "string"), ("id", "string"), ("source", "string"), ("type", "string"),
        ("datacontenttype", "string"), ("dataschema", "string"), ("subject", "string"),
        ("time", "timestamp"), ("extensions", "map<string,string>"), ("data", "binary")]
    rows = {r.id: r for r in table.collect()}
    assert set(rows) == {from_message(m).id for m in EVENTS}  # type: ignore[union-attr]
    first = rows["json"]
    assert first.extensions == {"count": "7", "flag": "true", "raw": "AP8=",
                                "seen": "2024-05-01T12:00:00.123Z", "region": "eu"}
    assert first.time.replace(tzinfo=UTC) == WHEN
    assert first.subject == "sübject ✓"
    assert bytes(first.data) == b'{"order": 1, "items": ["a"]}'
    assert rows["structured"].extensions == {"tenant": "a"}
    assert rows["no-data"].data is None


def test_a_legacy_trace_converts_directly(spark: SparkSession, tmp_path: Path) -> None:
    archive = load_archive(spark, [CAPTURES / "translate_1_0_to_0_10.jsonl"])
    result = convert(spark, archive, str(tmp_path / "trace"), now=NOW)
    events = [orjson.loads(line) for line in _lines(result.output)]
    assert [(e["id"], e["source"], e["type"]) for e in events] == [
        ("ce-1", "/orders", "com.example.order.created"), ("ce-2", "/s", "t")]
    assert events[0]["time"] == "2026-11-21T23:07:35.688Z" and events[0]["count"] == 7
    assert (result.events, result.skipped) == (2, 2)


def test_the_session_settings_the_jobs_rely_on(spark: SparkSession) -> None:
    from pyspark.sql import functions as F

    row = spark.range(1).select(
        F.base64(F.lit(bytes(range(200)))).alias("b64"),
        F.date_format(F.timestamp_millis(F.lit(0)), "HH:mm").alias("midnight"),
    ).first()
    assert "\n" not in row.b64 and "\r" not in row.b64
    assert row.midnight == "00:00"
    from pipeline.session import spark_session

    assert spark_session() is spark  # the active session is reused, not a second one


def test_bad_arguments(spark: SparkSession, mixed: Path, tmp_path: Path) -> None:
    archive = load_archive(spark, [mixed])
    with pytest.raises(ValueError, match="format"):
        convert(spark, archive, str(tmp_path / "x"), fmt="csv")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="engine"):
        convert(spark, archive, str(tmp_path / "x"), engine="jvm")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no input"):
        load_archive(spark, [])
