"""The archive's Parquet schema (docs/archive.md) as a pyarrow schema."""

from __future__ import annotations

import importlib.util
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from pipeline.rows import COLUMNS

if TYPE_CHECKING:
    import pyarrow as pa

FORMAT_VERSION = "1"
"""Stored in each file's key-value metadata as ``amqp-bridge.archive``."""
METADATA_KEY = b"amqp-bridge.archive"


class MissingDependency(RuntimeError):
    """An optional dependency of the pipeline is not installed."""


_MISSING_PYARROW = (
    "message archives (the route option 'tap' and the pipeline) need pyarrow, which is "
    "not installed: pip install 'amqp-bridge[spark]' (or just pyarrow)"
)


def require_pyarrow() -> ModuleType:
    """The ``pyarrow`` module, or :class:`MissingDependency` saying how to install it."""
    try:
        import pyarrow
    except ImportError as exc:
        raise MissingDependency(_MISSING_PYARROW) from exc
    return pyarrow


def check_pyarrow() -> None:
    """:class:`MissingDependency` (as :func:`require_pyarrow`) if pyarrow is not installed,
    found without importing it (about 35 MiB in a process that does not use it)."""
    if importlib.util.find_spec("pyarrow") is None:
        raise MissingDependency(_MISSING_PYARROW)


def require_parquet() -> ModuleType:
    """The ``pyarrow.parquet`` module (see :func:`require_pyarrow`)."""
    require_pyarrow()
    import pyarrow.parquet

    return pyarrow.parquet


@cache
def archive_schema() -> pa.Schema:
    """The pyarrow schema of archive files, columns in :data:`pipeline.rows.COLUMNS` order."""
    pa = require_pyarrow()
    string = pa.string()
    types = {
        "route": (string, False),
        "side": (string, False),
        "time": (pa.timestamp("us", tz="UTC"), False),
        "creation_time_ms": (pa.int64(), True),
        "application_properties": (pa.map_(string, string), True),
        "body_kind": (string, False),
        "body_size": (pa.int64(), True),
        "body_json": (pa.bool_(), True),
        "head": (pa.binary(), True),
        "bare": (pa.binary(), False),
    }
    fields = [pa.field(name, *types.get(name, (string, True))) for name in COLUMNS]
    return pa.schema(fields, metadata={METADATA_KEY: FORMAT_VERSION.encode()})


def rows_to_batch(rows: list[tuple[object, ...]]) -> pa.RecordBatch:
    """A record batch of archive rows (tuples from :func:`pipeline.rows.archive_row`)."""
    pa = require_pyarrow()
    schema = archive_schema()
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(COLUMNS)
    arrays = [pa.array(column, type=field.type) for column, field in zip(columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def rows_to_table(rows: list[tuple[object, ...]]) -> pa.Table:
    """A pyarrow table of archive rows (one record batch)."""
    pa = require_pyarrow()
    return pa.Table.from_batches([rows_to_batch(rows)])
