"""``replay``: send an archive's messages to an AMQP 1.0 address, from the executors.

Each partition opens one connection (the ``amqp`` data source,
:mod:`pipeline.sink`) and sends its rows in archive time order, unsettled; a
row counts once the target accepted it. Replay is at-least-once: if a
partition fails mid-way and Spark retries it, its messages are sent again
(``reconcile`` shows such duplicates).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit, urlunsplit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from pipeline.sink import PartitionCounts


class ReplayError(RuntimeError):
    """The replay job failed (a partition could not connect or send)."""


@dataclass(frozen=True)
class ReplayResult:
    """What a replay did, per partition and in total."""

    partitions: list[PartitionCounts]
    seconds: float

    def total(self, field: str) -> int:
        """The sum of one count (``sent``, ``accepted``, ...) over the partitions."""
        return sum(getattr(p, field) for p in self.partitions)

    @property
    def complete(self) -> bool:
        """Whether the target accepted every row."""
        return all(p.accepted == p.sent for p in self.partitions)


def replay(
    spark: SparkSession,
    archive: DataFrame,
    url: str,
    address: str,
    *,
    partitions: int | None = None,
    rate: float | None = None,
    window: int = 1000,
    timeout: float = 30.0,
    head: bool = True,
) -> ReplayResult:
    """Send every row of ``archive`` to ``address`` at ``url``.

    ``partitions`` redistributes the rows over that many partitions (= that
    many connections); by default the archive's own partitioning is kept.
    ``rate`` is the total messages per second, shared evenly by the
    partitions. With ``head`` (default) a row is sent with its archived header
    and message annotations, else as its bare message only. Credentials in
    ``url`` are passed to the executors as separate (redacted) options.
    Raises :class:`ReplayError` if a partition fails.
    """
    from pyspark.sql import functions as F

    from pipeline.sink import AmqpDataSource, PartitionCounts

    started = time.monotonic()
    payload = F.concat(F.coalesce("head", F.lit(b"")), "bare") if head else F.col("bare")
    rows = archive.select("time", payload.alias("payload"))
    if partitions is not None:
        rows = rows.repartition(partitions)
    rows = rows.sortWithinPartitions("time").select("payload")
    count = partitions or rows.rdd.getNumPartitions()
    plain_url, user, password = _split_credentials(url)
    spark.dataSource.register(AmqpDataSource)
    fd, report = tempfile.mkstemp(prefix="amqp-bridge-replay-", suffix=".json")
    os.close(fd)
    try:
        writer = (
            rows.write.format("amqp")
            .mode("append")
            .option("url", plain_url)
            .option("address", address)
            .option("window", str(window))
            .option("timeout", str(timeout))
            .option("report", report)
        )
        if user is not None:
            writer = writer.option("user", user).option("password", password or "")
        if rate is not None:
            writer = writer.option("rate", str(rate / max(count, 1)))
        try:
            writer.save()
        except Exception as exc:
            raise ReplayError(f"replay to {address!r} failed: {_first_line(exc)}") from exc
        with open(report) as fh:
            outcome = json.load(fh)
    finally:
        os.unlink(report)
    counts = [PartitionCounts(**p) for p in outcome["partitions"] if p is not None]
    return ReplayResult(sorted(counts, key=lambda p: p.partition), time.monotonic() - started)


def _split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``url`` without user:password, and the user and password."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None, None
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    password = None if parts.password is None else unquote(parts.password)
    return urlunsplit(parts._replace(netloc=netloc)), unquote(parts.username), password


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        if "SendError" in line or "Error:" in line:
            return line.strip()
    return text.splitlines()[0] if text else repr(exc)
