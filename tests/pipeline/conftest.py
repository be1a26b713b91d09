"""Fixtures of the pipeline tests: one small Spark session, and archives built from messages.

The session is the measured fast configuration for this machine (issue 6):
``local[1]``, one shuffle partition, no UI, error-level logging (the log4j2
file the package ships), the driver on loopback, a JVM tuned for start-up
(serial GC, C1 only). It is shared by every test of the session; start-up
costs about 7 s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from proton import symbol

from mappings.message import AmqpMessage, BodyKind, Header, Properties
from pipeline.archive import ArchiveWriter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

BASE_TIME_US = 1_714_564_800_000_000  # 2024-05-01T12:00:00Z

TEST_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.default.parallelism": "1",
}
TEST_JAVA_OPTIONS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")

# (route, side, message[, time in µs]) — what archive() takes
Entry = tuple[str, str, AmqpMessage] | tuple[str, str, AmqpMessage, int]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The shared local[1] Spark session (stopped at the end of the test session)."""
    from pipeline.session import spark_session

    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = spark_session(
        "local[1]", app_name="amqp-bridge tests", conf=TEST_CONF, java_options=TEST_JAVA_OPTIONS
    )
    yield session
    session.stop()


def write_archive(path: Path, entries: Iterable[Entry]) -> Path:
    """Write an archive of ``entries`` under ``path`` with the real writer; returns ``path``.

    Entries without a time get ``BASE_TIME_US`` plus their index in milliseconds.
    """
    with ArchiveWriter(path) as writer:
        for index, entry in enumerate(entries):
            route, side, message = entry[:3]
            time_us = entry[3] if len(entry) == 4 else BASE_TIME_US + index * 1000  # type: ignore[misc]
            writer.record(route, side, message, time_us=time_us)
    return path


@pytest.fixture
def archive(tmp_path: Path) -> Callable[[Iterable[Entry]], Path]:
    """``archive(entries)``: a fresh archive directory holding ``entries``."""
    counter = iter(range(1_000_000))

    def make(entries: Iterable[Entry]) -> Path:
        return write_archive(tmp_path / f"archive-{next(counter)}", entries)

    return make


def sample_messages(count: int, *, prefix: str = "m-", kind: str = "replay") -> list[AmqpMessage]:
    """``count`` small JSON messages with a header, properties and application properties."""
    return [
        AmqpMessage(
            header=Header(durable=n % 2 == 0, priority=n % 10),
            properties=Properties(message_id=f"{prefix}{n}",
                                  content_type=symbol("application/json")),
            application_properties={"n": n, "kind": kind},
            body_kind=BodyKind.DATA,
            body=[b'{"n": %d}' % n],
        )
        for n in range(count)
    ]
