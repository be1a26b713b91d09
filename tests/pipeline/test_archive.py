"""The archive writer (the bridge's tap): Parquet files, rotation, back-pressure, failures."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from mappings.message import AmqpMessage, Properties
from pipeline.archive import ArchiveError, ArchiveWriter
from pipeline.rows import COLUMNS
from pipeline.schema import METADATA_KEY, archive_schema
from pipeline.tap import TapConfig, Taps

ROOT = Path(__file__).resolve().parents[2]


def message(n: int) -> AmqpMessage:
    return AmqpMessage(properties=Properties(message_id=f"m-{n}"), body=f"body {n}")


def visible_files(path: Path) -> list[Path]:
    return sorted(path.glob("part-*.parquet"))


def test_rows_land_in_parquet_files_with_the_archive_schema(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path, rotate_rows=4) as writer:
        for n in range(10):
            writer.record("orders", "received" if n % 2 else "delivered", message(n), time_us=1000 + n)
    files = visible_files(tmp_path)
    assert len(files) == 3  # 4 + 4 + 2 rows
    assert not list(tmp_path.glob(".*"))  # no temporary file is left
    table = pq.read_table(tmp_path)
    assert table.schema.equals(archive_schema(), check_metadata=False)
    assert pq.read_schema(files[0]).metadata[METADATA_KEY] == b"1"
    rows = sorted(table.to_pylist(), key=lambda r: r["time"])
    assert [r["message_id"] for r in rows] == [f"m-{n}" for n in range(10)]
    assert [r["side"] for r in rows[:2]] == ["delivered", "received"]
    assert list(rows[0]) == list(COLUMNS)
    assert AmqpMessage.decode_bare(rows[3]["bare"]).body == "body 3"
    assert writer.stats.recorded == writer.stats.written == 10
    assert writer.stats.files == 3


def test_a_file_becomes_visible_only_when_closed(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path, row_group_rows=1)
    try:
        writer.record("orders", "received", message(1))
        writer.record("orders", "received", message(2))
        assert visible_files(tmp_path) == []
        writer.flush()
        assert pq.read_table(tmp_path).num_rows == 2
        writer.record("orders", "received", message(3))
        writer.flush()
        assert len(visible_files(tmp_path)) == 2
    finally:
        writer.close()


def test_an_idle_file_is_closed_after_rotate_seconds(tmp_path: Path) -> None:
    with ArchiveWriter(tmp_path, rotate_seconds=0.05) as writer:
        writer.record("orders", "received", message(1))
        deadline = time.monotonic() + 30
        while writer.stats.files == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert writer.stats.files == 1  # closed by age, without flush() or close()
        assert pq.read_table(tmp_path).num_rows == 1


class _HeldMessage(AmqpMessage):
    """A message whose encoding waits for ``release``: holds the writer thread on it."""

    def __init__(self, started: threading.Event, release: threading.Event) -> None:
        super().__init__(body="held")
        self.started = started
        self.release = release

    def encode(self) -> bytes:
        self.started.set()
        self.release.wait()
        return super().encode()


@pytest.mark.parametrize("overflow", ["drop", "block"])
def test_a_full_queue_drops_or_blocks(tmp_path: Path, overflow: str) -> None:
    started, release = threading.Event(), threading.Event()
    writer = ArchiveWriter(tmp_path, queue_size=2, overflow=overflow)  # type: ignore[arg-type]
    writer.record("orders", "received", _HeldMessage(started, release))
    assert started.wait(30)  # the writer thread is busy with the first message
    writer.record("orders", "received", message(1))
    writer.record("orders", "received", message(2))  # the queue is full now
    if overflow == "drop":
        writer.record("orders", "received", message(3))
        assert writer.stats.dropped == 1
        release.set()
    else:
        blocked = threading.Thread(target=writer.record, args=("orders", "received", message(3)))
        blocked.start()
        blocked.join(0.2)
        assert blocked.is_alive()  # waits for room instead of dropping
        release.set()
        blocked.join(30)
        assert not blocked.is_alive()
    writer.close()
    expected = 3 if overflow == "drop" else 4
    assert (writer.stats.recorded, writer.stats.written) == (expected, expected)
    assert pq.read_table(tmp_path).num_rows == expected


def test_an_unencodable_message_is_counted_and_skipped(tmp_path: Path) -> None:
    bad = AmqpMessage(application_properties={"k": object()})
    with ArchiveWriter(tmp_path) as writer:
        writer.record("orders", "received", message(1))
        writer.record("orders", "received", bad)
        writer.record("orders", "received", message(2))
    assert writer.stats.unarchivable == 1
    assert pq.read_table(tmp_path).column("message_id").to_pylist() == ["m-1", "m-2"]


def test_a_write_failure_stops_the_writer_and_is_reported(tmp_path: Path) -> None:
    target = tmp_path / "archive"
    writer = ArchiveWriter(target)
    shutil.rmtree(target)  # the directory is gone: opening a file fails
    writer.record("orders", "received", message(1))
    with pytest.raises(ArchiveError, match="failed"):
        writer.flush()
    with pytest.raises(ArchiveError):
        writer.record("orders", "received", message(2))
    with pytest.raises(ArchiveError):
        writer.close()
    assert writer.stats.dropped == 1


def test_a_dead_writer_process_is_reported(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path)
    writer.record("orders", "received", message(1))
    assert writer.pid is not None
    os.kill(writer.pid, signal.SIGKILL)
    with pytest.raises(ArchiveError, match="writer process"):
        writer.flush()
    with pytest.raises(ArchiveError, match="writer process"):
        writer.record("orders", "received", message(2))
    with pytest.raises(ArchiveError):
        writer.close()


def test_record_after_close_is_an_error(tmp_path: Path) -> None:
    writer = ArchiveWriter(tmp_path)
    writer.close()
    writer.close()  # idempotent
    with pytest.raises(ArchiveError, match="closed"):
        writer.record("orders", "received", message(1))


def test_taps_record_the_configured_sides_and_share_a_directory(tmp_path: Path) -> None:
    taps = Taps()
    both = taps.open("a", TapConfig(path=str(tmp_path)))
    received_only = taps.open("b", TapConfig(path=str(tmp_path), side="received"))
    assert both.writer is received_only.writer
    with pytest.raises(ValueError, match="settings"):
        taps.open("c", TapConfig(path=str(tmp_path), rotate_rows=5))
    both.received(message(1))
    both.delivered(message(1))
    received_only.received(message(2))
    received_only.delivered(message(2))  # not tapped
    taps.close()
    rows = pq.read_table(tmp_path).select(["route", "side", "message_id"]).to_pylist()
    assert sorted(tuple(r.values()) for r in rows) == [
        ("a", "delivered", "m-1"), ("a", "received", "m-1"), ("b", "received", "m-2")]


def test_tap_config_rejects_unknown_keys_and_sides() -> None:
    with pytest.raises(ValueError):
        TapConfig(path="/x", side="sent")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        TapConfig(path="/x", rotate="daily")  # type: ignore[call-arg]


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)


def test_the_tap_never_imports_spark_nor_pyarrow_where_it_records(tmp_path: Path) -> None:
    done = _python(
        "import sys\n"
        "from pipeline.tap import Taps, TapConfig\n"
        "from mappings.message import AmqpMessage\n"
        f"taps = Taps(); taps.open('r', TapConfig(path={str(tmp_path)!r})).received(AmqpMessage())\n"
        "taps.close()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'pyarrow', 'pandas'}))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"  # the writer process does the Parquet work
    assert pq.read_table(tmp_path).num_rows == 1


def test_a_missing_pyarrow_is_a_clear_error() -> None:
    done = _python(
        "import sys, tempfile\n"
        "sys.modules['pyarrow'] = None  # as if it were not installed\n"
        "from pipeline.archive import ArchiveWriter\n"
        "ArchiveWriter(tempfile.mkdtemp())\n"
    )
    assert done.returncode == 1
    assert "MissingDependency: message archives (the route option 'tap' and the pipeline) need " \
           "pyarrow, which is not installed: pip install 'amqp-bridge[spark]'" in done.stderr
