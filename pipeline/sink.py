"""The ``amqp`` PySpark data source: write a DataFrame's messages to an AMQP 1.0 address.

``df.write.format("amqp").option("url", ...).option("address", ...).mode("append").save()``
sends the binary column ``payload`` (each value one encoded AMQP 1.0 message)
from the executors, one connection per partition (:func:`pipeline.sender.send_all`).
Each partition's counts travel back to the driver as its commit message;
``commit`` writes them, as JSON, to the file named by the ``report`` option,
since it runs in a Python process of its own on the driver.

Options: ``url`` (required), ``address`` (required), ``user`` / ``password``
(or in the URL), ``window`` (in-flight messages, default 1000), ``rate``
(messages per second per partition), ``timeout`` (seconds without progress,
default 30), ``report`` (path of the JSON report).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

from pipeline.sender import send_all

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

PAYLOAD_COLUMN = "payload"


@dataclass
class PartitionCounts(WriterCommitMessage):
    """One partition's outcome counts (its commit message)."""

    partition: int
    sent: int
    accepted: int
    rejected: int
    released: int
    modified: int
    seconds: float
    conditions: list[str]


class AmqpDataSource(DataSource):
    """Writes encoded AMQP 1.0 messages to an address (format name ``amqp``)."""

    @classmethod
    def name(cls) -> str:
        return "amqp"

    def writer(self, schema: StructType, overwrite: bool) -> AmqpWriter:
        return AmqpWriter(dict(self.options), schema)


class AmqpWriter(DataSourceArrowWriter):
    """The writer of :class:`AmqpDataSource`; options are checked on the driver."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        missing = [key for key in ("url", "address") if not options.get(key)]
        if missing:
            raise ValueError(f"the amqp data source needs the option(s) {', '.join(missing)}")
        if PAYLOAD_COLUMN not in schema.fieldNames():
            raise ValueError(f"the amqp data source sends the binary column {PAYLOAD_COLUMN!r}")
        self.url = options["url"]
        self.address = options["address"]
        self.user = options.get("user")
        self.password = options.get("password")
        self.window = int(options.get("window", 1000))
        self.rate = float(options["rate"]) if options.get("rate") else None
        self.timeout = float(options.get("timeout", 30.0))
        self.report = options.get("report")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> PartitionCounts:
        from pyspark import TaskContext

        context = TaskContext.get()
        outcomes = send_all(
            self.url,
            self.address,
            _payloads(iterator),
            user=self.user,
            password=self.password,
            window=self.window,
            rate=self.rate,
            timeout=self.timeout,
        )
        return PartitionCounts(
            partition=context.partitionId() if context is not None else 0,
            sent=outcomes.sent,
            accepted=outcomes.accepted,
            rejected=outcomes.rejected,
            released=outcomes.released,
            modified=outcomes.modified,
            seconds=outcomes.seconds,
            conditions=outcomes.conditions,
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._write_report(messages, committed=True)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._write_report(messages, committed=False)

    def _write_report(self, messages: list[WriterCommitMessage | None], *, committed: bool) -> None:
        if not self.report:
            return
        partitions: list[Any] = [
            asdict(m) if isinstance(m, PartitionCounts) else None for m in messages
        ]
        Path(self.report).write_text(json.dumps({"committed": committed, "partitions": partitions}))


def _payloads(batches: Iterator[pa.RecordBatch]) -> Iterator[bytes]:
    for batch in batches:
        yield from batch.column(PAYLOAD_COLUMN).to_pylist()
