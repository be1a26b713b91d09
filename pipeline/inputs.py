"""Loading archives into Spark: Parquet archive directories/files and AMQP 0-10 traces."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from typing import TYPE_CHECKING

from pipeline.schema import archive_schema, rows_to_table
from pipeline.trace import Role, is_trace, trace_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

_SPARK_TYPES = {"string": "string", "int64": "bigint", "bool": "boolean", "binary": "binary"}


@dataclass(frozen=True)
class TraceOptions:
    """How AMQP 0-10 traces among the inputs become archive rows (see :mod:`pipeline.trace`)."""

    role: Role = "client"
    start: datetime | None = None
    route: str | None = None


def archive_ddl() -> str:
    """The archive schema as a Spark DDL string (``route STRING, side STRING, ...``)."""
    return ", ".join(f"`{field.name}` {_spark_type(field.type)}" for field in archive_schema())


def _spark_type(arrow_type: pa.DataType) -> str:
    text = str(arrow_type)
    if text.startswith("timestamp"):
        return "timestamp"
    if text.startswith("map<"):
        return "map<string,string>"
    return _SPARK_TYPES[text]


def load_archive(
    spark: SparkSession,
    paths: Sequence[str | os.PathLike[str]],
    *,
    routes: Sequence[str] = (),
    side: str | None = None,
    traces: TraceOptions = TraceOptions(),
) -> DataFrame:
    """The archive rows in ``paths``, optionally only some routes and one side.

    A path is an archive directory or Parquet file (globs as Spark reads them),
    or an AMQP 0-10 trace in the capture JSON-lines format, decoded here on the
    driver. Raises ValueError when ``paths`` is empty.
    """
    if not paths:
        raise ValueError("no input given")
    trace_paths = [p for p in paths if is_trace(p)]
    parquet_paths = [os.fspath(p) for p in paths if p not in trace_paths]
    frames = []
    if parquet_paths:
        frames.append(spark.read.schema(archive_ddl()).parquet(*parquet_paths))
    for path in trace_paths:
        rows = trace_rows(path, route=traces.route, role=traces.role, start=traces.start)
        frames.append(spark.createDataFrame(rows_to_table(rows), schema=archive_ddl()))
    archive = reduce(lambda a, b: a.unionByName(b), frames)
    if routes:
        archive = archive.where(archive.route.isin(list(routes)))
    if side is not None:
        archive = archive.where(archive.side == side)
    return archive

