"""The pipeline as the live bridge sees it: the one module of this package that ``bridge/`` imports.

The bridge uses the pipeline in two places: a route's ``tap`` option
(:class:`TapConfig` in the configuration, :class:`Taps` opening one
:class:`ArchiveWriter` per archive directory, :class:`ArchiveError` and
:class:`MissingDependency` when a writer fails or pyarrow is missing), and the
``amqp-bridge pipeline ...`` commands (:data:`pipeline_group`). Everything the
bridge needs is re-exported here, so the rest of the pipeline can change
without touching the bridge, and the dependency runs one way: the pipeline
never imports ``bridge`` (``tests/test_layering.py`` pins both rules).

Importing this module imports neither pyarrow nor Spark: the writer's own
process imports pyarrow, a Spark job imports PySpark when it runs.
"""

from __future__ import annotations

from pipeline.archive import ArchiveError, ArchiveWriter
from pipeline.cli import pipeline_group
from pipeline.schema import MissingDependency
from pipeline.tap import Tap, TapConfig, Taps

__all__ = [
    "ArchiveError",
    "ArchiveWriter",
    "MissingDependency",
    "Tap",
    "TapConfig",
    "Taps",
    "pipeline_group",
]
