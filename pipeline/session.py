"""The Spark session factory of the pipeline jobs.

``local[*]`` (in-process, every core) is the default; give ``master`` for a
cluster, or run under ``spark-submit``, which sets it. The settings every job
relies on (UTC session time zone, unchunked base64) are applied here and again
by the jobs themselves, so a session made elsewhere works too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.schema import MissingDependency

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
"""Driver logging at error level (Spark is chatty at its default, warn)."""
JOB_CONF = {
    "spark.sql.session.timeZone": "UTC",
    # base64() otherwise breaks its output into 76-character lines (data_base64)
    "spark.sql.chunkBase64String.enabled": "false",
}
"""SQL settings the jobs' expressions depend on."""
_PROJECT_ROOT = str(Path(__file__).resolve().parents[1])


def require_pyspark() -> None:
    """Raise :class:`MissingDependency`, saying what to install, if PySpark is missing."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise MissingDependency(
            f"the data pipeline needs the 'spark' extra ({exc.name} is not installed): "
            "pip install 'amqp-bridge[spark]'"
        ) from exc


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "amqp-bridge pipeline",
    conf: Mapping[str, str] | None = None,
    java_options: Sequence[str] = (),
    progress: bool = False,
) -> SparkSession:
    """A Spark session for the pipeline jobs (the active one if there already is one).

    ``master`` defaults to ``local[*]``, except under ``spark-submit``, which
    sets the master itself. ``conf`` entries are applied last. ``java_options``
    are added to the driver JVM's options (with the error-level log4j2
    configuration shipped here), which only matters when this call launches
    the JVM. ``progress`` shows Spark's console progress bar on stderr.

    In local mode the Python workers run this interpreter with this checkout
    on their path. On a cluster, install ``amqp-bridge[spark]`` on every node
    (the workers import :mod:`pipeline` and :mod:`mappings`).
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if master is None and not under_submit:
        master = DEFAULT_MASTER
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if master is not None and master.startswith("local"):
        _prepare_local_workers()
    options = [f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}", *java_options]
    settings = {
        **JOB_CONF,
        "spark.ui.showConsoleProgress": str(progress).lower(),
        "spark.driver.extraJavaOptions": " ".join(options),
        **(conf or {}),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def apply_job_conf(spark: SparkSession) -> None:
    """Set the SQL settings the jobs need (:data:`JOB_CONF`) on ``spark``."""
    for key, value in JOB_CONF.items():
        if spark.conf.get(key, None) != value:
            spark.conf.set(key, value)


def _prepare_local_workers() -> None:
    """Local Python workers: this interpreter (not whatever ``python3`` is on PATH), this
    checkout importable, and the driver on the loopback interface."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if _PROJECT_ROOT not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([_PROJECT_ROOT, *paths])
