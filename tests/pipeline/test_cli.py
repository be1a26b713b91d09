"""``amqp-bridge pipeline convert|replay|reconcile`` (the click group, run in-process).

The commands reuse the tests' active Spark session (and leave it running).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import orjson
from click.testing import CliRunner
from pyspark.sql import SparkSession

from mappings.message import AmqpMessage, Properties
from pipeline.cli import pipeline_group
from tests.data import CAPTURES_010 as CAPTURES
from tests.pipeline.conftest import Entry
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue

Archive = Callable[[Iterable[Entry]], Path]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(pipeline_group, ["--master", "local[1]", "--no-progress", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def orders(count: int) -> list[AmqpMessage]:
    return [AmqpMessage(properties=Properties(message_id=f"o-{n}", subject="orders"), body=f"order {n}")
            for n in range(count)]


def test_convert_a_trace_with_a_template(spark: SparkSession, tmp_path: Path) -> None:
    output = tmp_path / "events"
    code, out, _ = run("convert", str(CAPTURES / "session_basic.jsonl"), "-o", str(output),
                       "--side", "received", "--source", "/legacy/{routing_key}", "--type", "com.example.basic",
                       "--time", "none", "--trace-start", "2024-05-01T12:00:00")
    assert code == 0
    assert out.startswith("convert: 3 events written to ")
    events = [orjson.loads(line) for part in output.glob("part-*") for line in part.read_text().splitlines()]
    assert {e["source"] for e in events} == {"/legacy/cap.basic", "/legacy/cap.key"}
    ids = {e["id"] for e in events}
    derived = ids - {"343c2864-d76a-4a8c-842c-8187cddd677b", "a3eea816-3595-45cf-8be1-b9a11fec943f"}
    assert len(derived) == 1  # the message without a message-id: the row-derived id (MD5 hex)
    assert len(next(iter(derived))) == 32
    assert not any("time" in e for e in events)


def test_reconcile_exits_1_when_messages_are_missing(
    spark: SparkSession, archive: Archive, tmp_path: Path
) -> None:
    sent = orders(3)
    path = archive([*(("orders", "received", m) for m in sent), ("orders", "delivered", sent[0]),
                    ("orders", "delivered", sent[2])])
    report = tmp_path / "report.json"
    code, out, _ = run("reconcile", str(path), "--report", str(report))
    assert code == 1
    assert "orders: missing message_ids: o-1" in out
    assert json.loads(report.read_text())["totals"]["missing"] == 1
    complete = archive([*(("orders", "received", m) for m in sent), *(("orders", "delivered", m) for m in sent)])
    code, out, _ = run("reconcile", str(complete), "--report", str(report))
    assert (code, json.loads(report.read_text())["ok"]) == (0, True)
    assert "OK: nothing missing" in out


def test_replay_prints_the_partition_counts(
    spark: SparkSession, archive: Archive, rabbitmq_url: str
) -> None:
    path = archive(("orders", "received", m) for m in orders(5))
    address = queue_address(unique_queue("cli-replay"))
    code, out, _ = run("replay", str(path), "--url", rabbitmq_url, "--address", address, "--partitions", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["partition", "sent", "accepted", "rejected", "released", "modified", "msg/s"]
    assert lines[1].split()[:6] == ["0", "5", "5", "0", "0", "0"]
    assert lines[-1].startswith(f"replay: 5 of 5 messages accepted by {address}")
    assert len(receive_messages(rabbitmq_url, address, 5)) == 5


def test_usage_errors_come_before_spark_starts() -> None:
    result = CliRunner().invoke(pipeline_group, ["convert", "in", "-o", "out", "--source", "/s"])
    assert result.exit_code == 2
    assert "give both --source and --type" in result.stderr
    result = CliRunner().invoke(pipeline_group, ["--conf", "novalue", "convert", "in", "-o", "out"])
    assert result.exit_code == 2
    assert "'novalue' is not KEY=VALUE" in result.stderr
    result = CliRunner().invoke(pipeline_group, ["reconcile", "--help"])
    assert result.exit_code == 0 and "--key" in result.stdout
