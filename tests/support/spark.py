"""A Spark standalone cluster for tests: one master and one worker from the installed PySpark.

:func:`standalone_cluster` starts ``org.apache.spark.deploy.master.Master`` and
``org.apache.spark.deploy.worker.Worker`` through PySpark's ``bin/spark-class``
(pip's PySpark ships no ``sbin/start-*.sh``), each in a process group of its
own, bound to 127.0.0.1 on free ports, with logs and work directories under
the given directory. It waits until the master's web UI reports the worker
alive (``/json/``), and at the end kills both process groups, which takes the
executors and their Python workers with them. Whatever goes wrong on the way
raises :class:`ClusterError` with the tail of the daemons' logs: the tests
that use it fail, never skip.

:func:`executor_path` builds the ``PYTHONPATH`` the cluster tests give the
executors: a copy of only the packages the pipeline's executors may import,
and a ``bridge`` package that refuses to be imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyspark

from tests.support.bridge import ROOT, free_port

SPARK_HOME = Path(pyspark.__file__).resolve().parent
EXECUTOR_PACKAGES = ("pipeline", "mappings", "amqp010")
"""What the pipeline's executors may import of ours."""
BLOCKED_IMPORT = "the pipeline's executors must not import the bridge"
DAEMON_JAVA_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


class ClusterError(RuntimeError):
    """The standalone cluster could not be started."""


@dataclass(frozen=True)
class Cluster:
    """A running standalone master with one worker."""

    master_url: str
    """``spark://127.0.0.1:PORT``"""
    webui_port: int
    directory: Path

    def status(self) -> dict[str, object]:
        """The master's state as its web UI reports it (``/json/``)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=5) as answer:
            state: dict[str, object] = json.load(answer)
        return state

    def logs(self) -> str:
        """The tail of every daemon log (for failure messages)."""
        parts = []
        for log in sorted(self.directory.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()
            parts.append(f"--- {log.name}\n" + "\n".join(lines[-40:]))
        return "\n".join(parts)


def daemon_env(directory: Path) -> dict[str, str]:
    """The daemons' environment: this one without PYTHONPATH (executors inherit it), Spark's
    home, loopback only, logs and scratch space under ``directory``."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env.update({
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(directory),
        "SPARK_LOCAL_DIRS": str(directory / "scratch"),  # the executors' shuffle and block files
        "SPARK_DAEMON_JAVA_OPTS": DAEMON_JAVA_OPTS,
        "SPARK_DAEMON_MEMORY": "256m",
    })
    return env


@contextlib.contextmanager
def standalone_cluster(directory: Path, *, cores: int = 1, memory: str = "1g",
                       timeout: float = 60.0) -> Iterator[Cluster]:
    """A master and one worker (``cores``, ``memory``) for the duration of the block."""
    directory.mkdir(parents=True, exist_ok=True)
    port, webui = free_port(), free_port()
    cluster = Cluster(f"spark://127.0.0.1:{port}", webui, directory)
    env = daemon_env(directory)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    procs: list[subprocess.Popen[bytes]] = []
    work = directory / "work"
    work.mkdir(exist_ok=True)
    try:
        procs.append(_start(
            [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(webui)],
            directory / "master.log", env))
        # started at once: the worker retries until the master listens
        procs.append(_start(
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
             "--port", str(free_port()), "--webui-port", str(free_port()), "--cores", str(cores),
             "--memory", memory, "--work-dir", str(work), cluster.master_url],
            directory / "worker.log", env))
        _wait(cluster, procs, timeout, "the worker's registration with the master")
        yield cluster
    finally:
        left = [_daemon(proc) for proc in reversed(procs) if not _stop(proc)]
        if left:
            raise ClusterError(f"process groups still alive after SIGKILL: {left}")


def _daemon(proc: subprocess.Popen[bytes]) -> str:
    """The daemon's class name, for messages."""
    return str(proc.args[1]).rsplit(".", 1)[-1]  # type: ignore[index]


def _start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True, cwd=log.parent)


def _wait(cluster: Cluster, procs: list[subprocess.Popen[bytes]], timeout: float, what: str) -> None:
    """Poll the master's web UI until it counts one alive worker; fail if a daemon exits."""
    deadline = time.monotonic() + timeout
    while True:
        for proc in procs:
            if proc.poll() is not None:
                raise ClusterError(f"waiting for {what}: {_daemon(proc)} exited with "
                                   f"{proc.returncode}\n{cluster.logs()}")
        try:
            if cluster.status().get("aliveworkers") == 1:
                return
        except (OSError, urllib.error.URLError, ValueError):
            pass  # not listening yet
        if time.monotonic() > deadline:
            raise ClusterError(f"no {what} within {timeout:.0f} s\n{cluster.logs()}")
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> bool:
    """Kill the daemon's whole process group (its executors and Python workers too);
    whether the group is gone."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            proc.poll()  # reap the daemon itself; its children are reparented and reaped by init
            if not _group_alive(proc.pid):
                return True
            time.sleep(0.1)
    return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def executor_path(directory: Path) -> Path:
    """A directory for the executors' ``PYTHONPATH``: copies of :data:`EXECUTOR_PACKAGES`
    from this checkout, a ``bridge`` package whose import raises ImportError, and a
    ``sitecustomize`` module that leaves a marker for every Python started with it
    (:func:`executor_pythons`).

    On the path, the stub shadows the bridge that the venv's editable install
    would otherwise find, so a job whose executors import the bridge fails.
    """
    directory.mkdir(parents=True, exist_ok=True)
    for name in EXECUTOR_PACKAGES:
        shutil.copytree(ROOT / name, directory / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    stub = directory / "bridge"
    stub.mkdir()
    (stub / "__init__.py").write_text(f"raise ImportError({BLOCKED_IMPORT!r})\n")
    markers = directory / "started"
    markers.mkdir()
    (directory / "sitecustomize.py").write_text(SITECUSTOMIZE.format(markers=str(markers)))
    return directory


def executor_pythons(directory: Path) -> list[dict[str, str]]:
    """What each Python started with :func:`executor_path`'s directory on its path recorded:
    its ``executable`` and where ``pipeline`` is found (``pipeline``)."""
    return [json.loads(marker.read_text()) for marker in sorted((directory / "started").iterdir())]


SITECUSTOMIZE = """\
# Written by tests/support/spark.py: record that this Python ran with the executor path.
import importlib.util, json, os, sys
with open(os.path.join({markers!r}, str(os.getpid())), "w") as fh:
    json.dump({{"executable": sys.executable, "pipeline": importlib.util.find_spec("pipeline").origin}}, fh)
"""
