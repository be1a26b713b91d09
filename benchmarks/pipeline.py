"""Data pipeline throughput, each figure next to a same-run baseline.

Run: ``.venv/bin/python benchmarks/pipeline.py [--rows 1000000] [--replay-rows 20000]``.
Replay needs the project's RabbitMQ (``scripts/rabbitmq start``).

- **convert**: a synthetic archive of ``--rows`` binary-mode CloudEvents (every
  row distinct: its own ids, order number and bare message, ~0.5 KiB) to JSON
  lines and to Parquet, next to a plain Parquet copy of the same archive with
  the same Spark session (read every column, write every column: the I/O
  limit). Target: convert >= 0.75x the copy rate. The Python mapping path
  (``engine="python"``) is measured on a tenth of the rows for reference.
- **replay**: ``--replay-rows`` archived messages into a RabbitMQ queue with 1
  and 2 partitions, next to one proton connection sending the same messages
  from this process (no Spark).
- **tap**: a bridge-like loop (decode an AMQP 1.0 message, encode it again)
  with and without a tap archiving both sides, time to drain included.

Spark runs ``local[*]``; every Spark figure is the best of ``--repeats`` runs,
the contenders alternating so that machine load affects both alike.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from _timing import rate, report  # noqa: E402
from proton import symbol  # noqa: E402

from mappings.cloudevents import CloudEvent, to_binary  # noqa: E402
from mappings.message import AmqpMessage, Header  # noqa: E402
from pipeline.rows import COLUMNS, archive_row  # noqa: E402
from pipeline.schema import archive_schema  # noqa: E402

MARK = "9999999999"  # ten digits, replaced by each row's number (same length: valid encodings)
NOISE = "N" * 32  # replaced by 32 random hex digits per row, so rows compress like real traffic
BASE_TIME_US = 1_714_564_800_000_000


def sample_message() -> AmqpMessage:
    """A typical bridge message: binary-mode CloudEvent with a JSON order, durable."""
    event = CloudEvent(
        id=f"evt-{MARK}",
        source="/legacy/orders",
        type="com.example.order.created",
        subject=f"order-{MARK}",
        time=datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC),
        datacontenttype="application/json",
        extensions={"tenant": "acme", "priority": 3, "traceid": NOISE},
        data=(
            b'{"order":"' + MARK.encode() + b'","customer":"c-0042","currency":"EUR",'
            b'"lines":[{"sku":"A-100","qty":2,"price":19.99},{"sku":"B-7","qty":1,"price":5.5}],'
            b'"total":45.48,"channel":"web","session":"' + NOISE.encode() + b'","note":"ring twice"}'
        ),
    )
    message = to_binary(event)
    message.header = Header(durable=True)
    message.properties.message_id = f"msg-{MARK}"
    message.properties.correlation_id = f"corr-{MARK}"
    message.message_annotations = {symbol("x-amqp-0-10.routing-key"): "orders.eu"}
    return message


def synthetic_archive(path: Path, rows: int, *, files: int = 8) -> int:
    """Write ``rows`` distinct archive rows of :func:`sample_message` under ``path``; returns bytes."""
    template = archive_row("orders", "received", BASE_TIME_US, sample_message())
    varying = {i for i, value in enumerate(template) if MARK in str(value) or NOISE in str(value)}
    schema = archive_schema()
    path.mkdir(parents=True)
    per_file = -(-rows // files)
    for start in range(0, rows, per_file):
        count = min(per_file, rows - start)
        marks = [(f"{n:010d}", os.urandom(16).hex()) for n in range(start, start + count)]
        columns = []
        for index, (name, value) in enumerate(zip(COLUMNS, template, strict=True)):
            if name == "time":
                values: list[object] = list(range(BASE_TIME_US + start * 1000, BASE_TIME_US + (start + count) * 1000, 1000))
            elif index in varying and isinstance(value, dict):  # application properties
                values = [{k: v and _vary(v, *m) for k, v in value.items()} for m in marks]
            elif index in varying:
                values = [_vary(value, *m) for m in marks]
            else:
                values = [value] * count
            columns.append(pa.array(values, type=schema.field(name).type))
        pq.write_table(pa.Table.from_arrays(columns, schema=schema), path / f"part-{start:09d}.parquet",
                       compression="zstd", row_group_size=128 * 1024)
    return sum(f.stat().st_size for f in path.iterdir())


def _vary(value: str | bytes, number: str, noise: str) -> str | bytes:
    if isinstance(value, str):
        return value.replace(MARK, number).replace(NOISE, noise)
    return value.replace(MARK.encode(), number.encode()).replace(NOISE.encode(), noise.encode())


def best_of(repeats: int, runs: dict[str, Callable[[], None]]) -> dict[str, float]:
    """Best seconds of each run, alternating between them."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(repeats):
        for name, run in runs.items():
            started = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def bench_convert(spark: object, source: Path, work: Path, rows: int, repeats: int) -> list[tuple[str, float, float]]:
    from pipeline.convert import convert
    from pipeline.inputs import load_archive

    archive = load_archive(spark, [source])  # type: ignore[arg-type]

    def output(name: str) -> str:
        target = work / name
        shutil.rmtree(target, ignore_errors=True)
        return str(target)

    def copy() -> None:
        spark.read.parquet(str(source)).write.parquet(output("copy"))  # type: ignore[attr-defined]

    def to_jsonl() -> None:
        result = convert(spark, archive, output("jsonl"))  # type: ignore[arg-type]
        assert result.events == rows and result.python_rows == 0, result

    def to_parquet() -> None:
        result = convert(spark, archive, output("parquet"), fmt="parquet")  # type: ignore[arg-type]
        assert result.events == rows, result

    best = best_of(repeats, {"copy": copy, "jsonl": to_jsonl, "parquet": to_parquet})
    tenth = archive.limit(rows // 10)
    started = time.perf_counter()
    result = convert(spark, tenth, output("python"), engine="python")  # type: ignore[arg-type]
    python_seconds = time.perf_counter() - started
    copy_rate = rows / best["copy"]
    return [
        ("convert → JSON lines (native SQL) vs Parquet copy", rows / best["jsonl"], copy_rate),
        ("convert → Parquet columns (native SQL) vs Parquet copy", rows / best["parquet"], copy_rate),
        ("convert → JSON lines, Python mapping path vs Parquet copy", result.events / python_seconds, copy_rate),
    ]


def bench_replay(spark: object, source: Path, rows: int, repeats: int) -> list[tuple[str, float, float]]:
    from pipeline.inputs import load_archive
    from pipeline.replay import replay
    from pipeline.sender import send_all
    from tests.support.rabbitmq import ensure_rabbitmq, queue_address, unique_queue

    url = ensure_rabbitmq()
    archive = load_archive(spark, [source]).limit(rows).cache()  # type: ignore[arg-type]
    payloads = [r.payload for r in archive.selectExpr("concat(coalesce(head, X''), bare) AS payload").collect()]

    def spark_replay(partitions: int) -> Callable[[], None]:
        def run() -> None:
            result = replay(spark, archive, url, queue_address(unique_queue("bench")),  # type: ignore[arg-type]
                            partitions=partitions)
            assert result.total("accepted") == rows, result

        return run

    def direct() -> None:
        outcomes = send_all(url, queue_address(unique_queue("bench")), iter(payloads))
        assert outcomes.accepted == rows, outcomes

    best = best_of(repeats, {"1": spark_replay(1), "2": spark_replay(2), "direct": direct})
    archive.unpersist()
    direct_rate = rows / best["direct"]
    return [
        ("replay, 1 partition vs one proton connection (no Spark)", rows / best["1"], direct_rate),
        ("replay, 2 partitions vs one proton connection (no Spark)", rows / best["2"], direct_rate),
    ]


def bench_tap(messages: int, repeats: int) -> tuple[list[tuple[str, float, float]], str]:
    """Tap cost: saturated throughput with/without, and the per-message cost on the message path."""
    from pipeline.tap import TapConfig, Taps

    raw = sample_message().encode()

    def bridge_step() -> tuple[AmqpMessage, bytes]:
        message = AmqpMessage.decode(raw)
        return message, message.encode()

    def without_tap() -> None:
        for _ in range(messages):
            bridge_step()

    def tapped(pace: float | None = None) -> tuple[list[float], float]:
        """Run the loop with a tap (paced to ``pace`` msg/s if given): seconds spent in each
        message's tap calls, and the rate the loop sustained."""
        directory = tempfile.mkdtemp(prefix="amqp-bridge-tap-")
        taps = Taps()
        tap = taps.open("orders", TapConfig(path=directory))
        spent = []
        started = time.perf_counter()
        for n in range(messages):
            message, encoded = bridge_step()
            before = time.perf_counter()
            tap.received(message, encoded=raw)
            tap.delivered(message, encoded=encoded)
            spent.append(time.perf_counter() - before)
            if pace is not None:
                delay = started + (n + 1) / pace - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
        sustained = messages / (time.perf_counter() - started)
        taps.close()  # drain: everything on disk
        shutil.rmtree(directory)
        return spent, sustained

    best = best_of(repeats, {"with": tapped, "without": without_tap})
    step = 1 / rate(bridge_step)
    pace = 0.5 / step  # half of what one core can do: a busy bridge that is not CPU-bound
    spent, sustained = tapped(pace)
    spent.sort()
    note = (
        f"tap at {pace:,.0f} msg/s (half the loop's capacity): the loop sustained {sustained:,.0f} msg/s; "
        f"{statistics.mean(spent) * 1e6:.1f} µs mean, {spent[int(len(spent) * 0.99)] * 1e6:.1f} µs p99 "
        f"per message for both sides, next to {step * 1e6:.0f} µs for the decode + encode step"
    )
    rows = [("bridge loop (decode + encode), tap on both sides, drained, vs no tap",
             messages / best["with"], messages / best["without"])]
    return rows, note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--replay-rows", type=int, default=20_000)
    parser.add_argument("--tap-messages", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--master", default="local[*]")
    args = parser.parse_args()

    from pipeline.session import spark_session

    rows_out: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="amqp-bridge-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        size = synthetic_archive(work / "archive", args.rows)
        print(f"synthetic archive: {args.rows:,} rows, {size / 2**20:,.1f} MiB of Parquet "
              f"({time.perf_counter() - started:.1f}s to generate)")
        spark = spark_session(args.master, conf={"spark.driver.memory": "2g", "spark.ui.enabled": "false"})
        try:
            rows_out += bench_convert(spark, work / "archive", work, args.rows, args.repeats)
            rows_out += bench_replay(spark, work / "archive", args.replay_rows, args.repeats)
        finally:
            spark.stop()
    tap_rows, tap_note = bench_tap(args.tap_messages, args.repeats + 1)
    report(rows_out + tap_rows)
    print(tap_note)


if __name__ == "__main__":
    main()
