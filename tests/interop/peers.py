"""The real peers in ``../shared/peers/`` (beside the clone, as CI has it): a qpidd 1.40
(AMQP 0-10 broker with its own AMQP 1.0 side) and qpid-python (the reference 0-10 client,
``qpid.messaging``). They cannot be in the repository; tests that need them fail loudly,
naming what is missing, when they are absent — never skip."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support.bridge import ROOT

PEERS = ROOT.parent / "shared" / "peers"
QPIDD = PEERS / "qpidd"
QPID_PYTHON = PEERS / "qpid-python"
STOPPED = {"T", "t"}
"""The states of a thread that runs no more until SIGCONT (stopped; stopped by a tracer)."""


def require(path: Path, what: str) -> Path:
    """``path``, or a RuntimeError saying the peers are missing."""
    if not path.exists():
        raise RuntimeError(f"{what} is missing: {path} does not exist. The interop tests "
                           "need the real peers in ../shared/peers/ beside the clone "
                           "(docs/testing.md, 'The interop suite').")
    return path


def import_qpid_messaging() -> None:
    """Put qpid-python first on ``sys.path`` so ``import qpid.messaging`` finds it."""
    path = str(require(QPID_PYTHON / "qpid" / "messaging", "qpid-python").parents[1])
    if path not in sys.path:
        sys.path.insert(0, path)


@dataclass
class Qpidd:
    """A qpidd started by ``peers/qpidd/start.sh`` on a port of its own, no authentication
    (any user name and password is accepted, PLAIN or ANONYMOUS)."""

    datadir: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Qpidd:
        """Start qpidd in the foreground as a child of this process (``QPIDD_FOREGROUND``:
        the fixture owns it) and return once it listens."""
        script = require(QPIDD / "start.sh", "qpidd")
        self.datadir.mkdir(parents=True, exist_ok=True)
        log = self.datadir / "qpidd.log"
        seen = len(log.read_text(errors="replace")) if log.exists() else 0
        self.proc = subprocess.Popen(
            [str(script), str(self.port), str(self.datadir)],
            env={**os.environ, "QPIDD_FOREGROUND": "1"}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            text = log.read_text(errors="replace")[seen:] if log.exists() else ""
            found = re.search(r"Listening on TCP/TCP6 port (\d+)", text)
            if found:
                self.port = int(found.group(1))
                return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"qpidd did not start (exit {self.proc.returncode}):\n"
                                   f"{text[-3000:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not end within 30 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def pause(self) -> None:
        """SIGSTOP qpidd and return once every thread of it has stopped (it hears, it
        does not answer).

        ``kill`` returns as soon as the signal is queued and one thread woken to take it;
        that thread stops the others only when it gets a CPU, and until then qpidd's
        other I/O threads read and answer: a QMF request sent right after the ``kill``
        was answered 3 ms later, with its own correlation id, in 1 of 30 tries at load ~6
        (2 cores), and right after the ``kill`` some thread was still running in 100 of 200.
        """
        pid = self.pid
        os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + 30
        while set(self.thread_states()) - STOPPED:
            if time.monotonic() > deadline:
                raise RuntimeError(f"qpidd {pid} not stopped 30 s after SIGSTOP: its threads "
                                   f"are {self.thread_states()}")
            time.sleep(0.001)

    def resume(self) -> None:
        """SIGCONT: a paused qpidd runs again (and answers what it heard meanwhile)."""
        os.kill(self.pid, signal.SIGCONT)

    def thread_states(self) -> list[str]:
        """The scheduler state of each of qpidd's threads (``/proc/PID/task/*/stat``:
        ``R`` running, ``S`` sleeping, ``T`` stopped, ...)."""
        states = []
        for stat in Path(f"/proc/{self.pid}/task").glob("*/stat"):
            try:  # the state follows the command name, which ends at the last ')'
                states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                continue  # a thread that ended meanwhile
        return states

    @property
    def pid(self) -> int:
        """qpidd's process id (start.sh ``exec``s it: the Popen's own)."""
        if self.proc is None:
            raise RuntimeError("qpidd is not started")
        return self.proc.pid

    def restart(self) -> None:
        """Stop, then start again on the same port (qpidd keeps no queues: no store)."""
        self.stop()
        self.start()

    @property
    def url(self) -> str:
        """The AMQP URL of both protocols (qpidd tells them apart by the header)."""
        return f"amqp://guest:guest@127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        """``host:port`` as qpid.messaging's ``Connection`` takes it."""
        return f"127.0.0.1:{self.port}"

    def log(self) -> str:
        return (self.datadir / "qpidd.log").read_text(errors="replace")
