"""Archive rows from the recorded AMQP 0-10 conversations in tests/data/captures/amqp-0-10/."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mappings.cloudevents import ROUTING_KEY_ANNOTATION
from mappings.message import AmqpMessage
from pipeline.rows import COLUMNS
from pipeline.trace import is_trace, trace_rows
from tests.data import CAPTURES_010 as CAPTURES

START = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
START_US = 1_714_564_800_000_000


def rows(scenario: str, **kwargs: object) -> list[dict[str, object]]:
    found = trace_rows(CAPTURES / f"{scenario}.jsonl", start=START, **kwargs)  # type: ignore[arg-type]
    return [dict(zip(COLUMNS, r, strict=True)) for r in found]


def relative_times(scenario: str) -> list[float]:
    with open(CAPTURES / f"{scenario}.jsonl") as fh:
        return [json.loads(line)["t"] for line in fh if line.strip()]


def test_session_basic_transfers_in_both_directions() -> None:
    expected = json.loads((CAPTURES / "session_basic.json").read_text())
    found = rows("session_basic")
    assert [r["side"] for r in found] == ["delivered"] * 3 + ["received"] * 3  # the client's view
    assert {r["route"] for r in found} == {"session_basic"}
    for published, got in zip(expected["sent"], found[:3], strict=True):
        properties = published["message-properties"]
        message_id = properties.get("message_id")
        assert got["message_id"] == (message_id and message_id["uuid"])
        assert got["content_type"] == properties.get("content_type")
        body = bytes.fromhex(published["body_hex"])
        assert got["body_size"] == len(body)
        message = AmqpMessage.decode(got["head"] + got["bare"])
        assert message.body == [body]
        routing_key = published["delivery-properties"]["routing_key"]
        assert message.message_annotations[ROUTING_KEY_ANNOTATION] == routing_key
    first = found[0]
    assert first["correlation_id"] == "corr-0"
    headers = first["application_properties"]
    assert headers["int"] == "42" and headers["flag"] == "true" and headers["bin"] == "00ff"
    assert headers["uid"] == "b0f46913-3b6b-41bc-a61c-4b8be6b1d81a"
    message = AmqpMessage.decode_bare(first["bare"])
    assert message.properties.message_id == uuid.UUID("a3eea816-3595-45cf-8be1-b9a11fec943f")
    assert message.application_properties["big"] == 1099511627776
    assert message.properties.reply_to == "amq.direct/replies"
    # every row's time is the start plus the relative time of a recorded read
    times = {START_US + int(t * 1_000_000) for t in relative_times("session_basic")}
    assert {r["time"] for r in found} <= times


def test_the_server_role_swaps_the_sides() -> None:
    assert [r["side"] for r in rows("session_basic", role="server")] == ["received"] * 3 + ["delivered"] * 3


def test_cloudevents_translated_by_qpidd_are_recognised() -> None:
    found = rows("translate_1_0_to_0_10", route="legacy")
    assert [r["route"] for r in found] == ["legacy"] * 4
    binary, structured, amqp_map, text = found
    assert (binary["ce_mode"], binary["ce_id"], binary["ce_type"]) == ("binary", "ce-1", "com.example.order.created")
    assert binary["ce_time"] == "2026-11-21T23:07:35.688Z"
    assert binary["ce_extensions"] == '{"count":7}'
    assert binary["subject"] == "order.created"  # qpidd's qpid.subject header
    assert (structured["ce_mode"], structured["ce_id"]) == ("structured", "ce-2")
    assert amqp_map["ce_mode"] is None
    assert (amqp_map["body_kind"], amqp_map["body_type"]) == ("amqp-value", "map")  # qpidd's amqp/map
    assert text["correlation_id"] == "ddacacd4-aebd-4af0-a447-b8fd3d6e871c"


def test_a_body_split_over_many_frames_is_one_row() -> None:
    found = rows("large_message")
    assert [r["body_size"] for r in found] == [307_200, 307_200]


def test_redelivered_messages_are_rows_too() -> None:
    found = rows("reject_release")
    received = [r["application_properties"]["i"] for r in found if r["side"] == "received"]
    assert received == ["0", "1", "2", "0"]  # #0 released, then redelivered


def test_start_defaults_to_the_file_time_minus_the_trace_length(tmp_path: Path) -> None:
    copy = tmp_path / "trace.jsonl"
    copy.write_bytes((CAPTURES / "reject_release.jsonl").read_bytes())
    os.utime(copy, (1_700_000_000, 1_700_000_000))
    last = max(relative_times("reject_release"))
    found = trace_rows(copy)
    first_transfer = min(r[COLUMNS.index("time")] for r in found)
    assert first_transfer >= 1_700_000_000_000_000 - int(last * 1_000_000)
    assert max(r[COLUMNS.index("time")] for r in found) <= 1_700_000_000_000_000
    assert {r[0] for r in found} == {"trace"}


def test_is_trace_tells_traces_from_archives(tmp_path: Path) -> None:
    assert is_trace(CAPTURES / "session_basic.jsonl")
    (tmp_path / "part-0.parquet").write_bytes(b"PAR1")
    assert not is_trace(tmp_path / "part-0.parquet")
    assert not is_trace(tmp_path)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="role"):
        trace_rows(CAPTURES / "session_basic.jsonl", role="broker")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timezone"):
        trace_rows(CAPTURES / "session_basic.jsonl", start=datetime(2024, 1, 1))
