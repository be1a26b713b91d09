"""The cluster path: ``amqp-bridge pipeline --master spark://...`` on a Spark standalone cluster.

One master and one worker (1 core, 1 GiB) from the installed PySpark serve the
module (``tests/support/spark.py``); the commands run as subprocesses, each its
own Spark driver, exactly as a user runs them. The executors run the venv's
Python with a ``PYTHONPATH`` holding a copy of only ``pipeline``, ``mappings``
and ``amqp010`` and a ``bridge`` that refuses to be imported: a job whose
executors reach for the bridge fails. Results must equal the local-mode ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from mappings.message import AmqpMessage
from pipeline.cli import pipeline_group
from pipeline.session import LOG4J2_CONFIG
from tests.data import CAPTURES_010 as CAPTURES
from tests.data import ROOT
from tests.pipeline.conftest import sample_messages, write_archive
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue
from tests.support.spark import Cluster, executor_path, executor_pythons, standalone_cluster

FAST_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
TEMPLATE_ARGS = ("--side", "received", "--source", "/legacy/{routing_key}", "--type", "com.example.basic",
                 "--time", "none", "--trace-start", "2024-05-01T12:00:00")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A standalone master and one worker for this module (fails if they cannot start)."""
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster"), cores=1, memory="1g") as running:
        yield running


@pytest.fixture(scope="module")
def executors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The executors' PYTHONPATH directory (tests/support/spark.executor_path)."""
    return executor_path(tmp_path_factory.mktemp("executor-path"))


def on_cluster(cluster: Cluster, executors: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``amqp-bridge pipeline --master spark://... ARGS`` as a subprocess (its own driver)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    confs = {
        "spark.executorEnv.PYTHONPATH": str(executors),
        "spark.executor.memory": "512m",
        "spark.executor.extraJavaOptions": FAST_JVM,
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()} {FAST_JVM}",
        "spark.cores.max": "1",
        "spark.task.maxFailures": "1",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "1",
    }
    conf_args = [arg for item in confs.items() for arg in ("--conf", "=".join(item))]
    command = [sys.executable, "-m", "bridge.cli", "pipeline", "--master", cluster.master_url,
               "--no-progress", *conf_args, *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def locally(*args: str) -> tuple[int, str]:
    """The same command in local mode, in-process on the tests' shared session."""
    result = CliRunner().invoke(pipeline_group, ["--master", "local[1]", "--no-progress", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


def counts(summary: str, output: Path) -> list[str]:
    """The convert summary without its output path and time."""
    return summary.replace(str(output), "OUT").split(";")[:2]


def events(output: Path) -> list[bytes]:
    return sorted(line for part in output.glob("part-*") for line in part.read_bytes().splitlines())


def assert_executors_ran_isolated(executors: Path) -> None:
    started = executor_pythons(executors)
    assert started, "no executor Python started with the isolated PYTHONPATH"
    for python in started:
        assert python["executable"] == sys.executable
        assert python["pipeline"] == str(executors / "pipeline" / "__init__.py")


def test_convert_through_the_python_mapping_on_the_cluster(
    cluster: Cluster, executors: Path, spark: SparkSession, tmp_path: Path
) -> None:
    trace = str(CAPTURES / "session_basic.jsonl")
    done = on_cluster(cluster, executors, "convert", trace, "-o", str(tmp_path / "cluster"),
                      "--engine", "python", *TEMPLATE_ARGS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("convert: 3 events written to ")
    assert "3 rows through the Python mapping" in done.stdout
    assert_executors_ran_isolated(executors)
    found = events(tmp_path / "cluster")
    parsed = [orjson.loads(line) for line in found]
    assert {e["source"] for e in parsed} == {"/legacy/cap.basic", "/legacy/cap.key"}
    assert not any("time" in e for e in parsed)
    code, out = locally("convert", trace, "-o", str(tmp_path / "local"), "--engine", "python", *TEMPLATE_ARGS)
    assert code == 0
    assert counts(out, tmp_path / "local") == counts(done.stdout, tmp_path / "cluster")
    assert found == events(tmp_path / "local")


def test_replay_from_the_cluster_executors(
    cluster: Cluster, executors: Path, rabbitmq_url: str, tmp_path: Path
) -> None:
    sent = sample_messages(20, prefix="c-", kind="cluster")
    archive = write_archive(tmp_path / "archive", [("orders", "received", m) for m in sent])
    address = queue_address(unique_queue("cluster-replay"))
    done = on_cluster(cluster, executors, "replay", str(archive), "--url", rabbitmq_url,
                      "--address", address, "--partitions", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["partition", "sent", "accepted", "rejected", "released", "modified", "msg/s"]
    counts = [line.split()[:6] for line in lines[1:3]]
    assert [c[0] for c in counts] == ["0", "1"]
    assert all(c[1] == c[2] and c[3:] == ["0", "0", "0"] for c in counts)
    assert sum(int(c[1]) for c in counts) == 20
    assert lines[-1].startswith(f"replay: 20 of 20 messages accepted by {address}")
    assert_executors_ran_isolated(executors)
    got: dict[str, AmqpMessage] = {}
    for received in receive_messages(rabbitmq_url, address, 20):
        message = AmqpMessage.decode(received.raw)
        got[str(message.properties.message_id)] = message
    assert sorted(got) == [f"c-{n}" for n in sorted(range(20), key=str)]
    for original in sent:
        copy = got[str(original.properties.message_id)]
        assert copy.body == original.body
        assert copy.application_properties == original.application_properties
        assert copy.header.durable == original.header.durable
        assert copy.header.priority == original.header.priority
