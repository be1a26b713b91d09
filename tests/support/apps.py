"""Real applications from PyPI as subprocesses: a program under ``tests/apps/programs/``
(or a console script such as ``celery``) with its output kept for assertions, waited on
by what it prints, and stopped by a signal as an operator would."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.bridge import BridgeRun, free_port, recipe_bridge

PROGRAMS = Path(__file__).resolve().parents[1] / "apps" / "programs"
BIN = Path(sys.executable).parent


def _default_signals() -> None:  # in the child, before exec
    """SIGINT and SIGQUIT as in an operator's terminal: a non-interactive shell starts its
    background jobs with them ignored (POSIX), every process below inherits that, and a
    Python program started with SIGINT ignored keeps ignoring it — ``celery events
    --dump``, stopped with SIGINT (Ctrl-C), then never ended in a suite run so started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


class AppProcess:
    """One application process; ``command[0]`` is a console script of the venv or a
    program file of ``tests/apps/programs``."""

    def __init__(self, command: list[str], log_path: Path, env: dict[str, str]) -> None:
        self.log_path = log_path
        first = command[0]
        if first.endswith(".py"):
            argv = [sys.executable, str(PROGRAMS / first), *command[1:]]
        else:
            argv = [str(BIN / first), *command[1:]]
        path = os.pathsep.join(p for p in (str(PROGRAMS), os.environ.get("PYTHONPATH")) if p)
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=PROGRAMS, env={**os.environ, **env, "PYTHONPATH": path,
                                   "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1"},
                preexec_fn=_default_signals)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout: float = 30.0) -> re.Match[str]:
        """The first match of ``pattern`` in the output; fails (with the output) if the
        process ends or ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(pattern, self.log())
            if found:
                return found
            assert self.proc.poll() is None, \
                f"{self.proc.args} exited {self.proc.returncode} before {pattern!r}:\n{self.log()}"
            assert time.monotonic() < deadline, \
                f"{self.proc.args}: no {pattern!r} within {timeout} s:\n{self.log()}"
            time.sleep(0.1)

    def wait(self, timeout: float = 60.0) -> int:
        """The exit status once the process ends by itself; past ``timeout`` it is ended
        with SIGABRT, so that its output shows where each thread was (faulthandler,
        ``PYTHONFAULTHANDLER``), and the test fails with that output."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            raise AssertionError(f"{self.proc.args} still running after {timeout} s (its "
                                 f"stacks at the end):\n{self.log()}") from None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        """Send ``sig`` and return the exit status (killed if it does not end in time)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def run_program(command: list[str], log_path: Path, env: dict[str, str],
                timeout: float = 60.0) -> str:
    """Run a program to its end; fails unless it exits 0; returns its output."""
    app = AppProcess(command, log_path, env)
    rc = app.wait(timeout)
    assert rc == 0, f"{command} exited {rc}:\n{app.log()}"
    return app.log()


@dataclass
class StraightAndThrough:
    """RabbitMQ 4 and a topology-mode 0-9-1 façade in front of it
    (``examples/topology.yaml``, nothing configured per name), to run the same program
    straight to the broker and through the bridge and compare what it saw."""

    bridge: BridgeRun
    url: str
    """The applications' broker URL (the bridge's listener)."""
    direct_url: str
    """RabbitMQ 4's own 0-9-1 URL."""
    tmp: Path


@contextlib.contextmanager
def straight_and_through(rabbitmq_url: str, tmp: Path, password: str
                         ) -> Iterator[StraightAndThrough]:
    """``amqp-bridge run`` with ``examples/topology.yaml`` in front of ``rabbitmq_url``
    (user ``app``, ``password``), for as long as the block runs."""
    port = free_port()
    with recipe_bridge("topology.yaml", tmp, {
            "CLOUD_URL": rabbitmq_url, "APP_BIND": f"127.0.0.1:{port}",
            "APP_PASSWORD": password, "PORT": str(port)}) as bridge:
        yield StraightAndThrough(bridge, f"amqp://app:{password}@127.0.0.1:{port}/%2F",
                                 rabbitmq_url.rstrip("/") + "/%2F", tmp)
