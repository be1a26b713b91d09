"""The archive writer: rotating Parquet files, written off the message path by a child process.

The bridge calls :meth:`ArchiveWriter.record` on its message path; that only
appends a reference to the message (and its encoding) to a bounded hand-off
(:class:`~pipeline.handoff.Handoff`). A sender thread takes what waits in
batches and pipes the encoded messages to the writer process
(:func:`pipeline.filewriter.serve`), which builds the rows and writes rotating
Parquet files. Building rows costs about as much CPU as the bridge's own
decoding and encoding of a message; in a thread it would compete for the
interpreter lock with the message path, in a process it uses another core.

A file is written under a hidden temporary name and renamed when closed, so
readers (Spark, pyarrow) only ever see complete files. Needs pyarrow (imported
by the writer process only); Spark is never imported.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal

from mappings.errors import MappingError
from mappings.message import AmqpMessage
from pipeline.handoff import Handoff
from pipeline.rows import SIDES
from pipeline.schema import check_pyarrow

log = logging.getLogger(__name__)

Overflow = Literal["block", "drop"]
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])
_BATCH_PAUSE = 0.02  # seconds the sender lets a batch build up: fewer, larger pipe writes


class ArchiveError(RuntimeError):
    """The archive writer failed (cannot write its files) or is closed."""


@dataclass(frozen=True, slots=True)
class ArchiveStats:
    """Counters of an :class:`ArchiveWriter` (a snapshot)."""

    recorded: int
    """Messages accepted by :meth:`ArchiveWriter.record`."""
    written: int
    """Rows in closed (complete, visible) files."""
    dropped: int
    """Messages not archived because the queue was full (``overflow="drop"``) or after a failure."""
    unarchivable: int
    """Messages that could not be encoded or decoded (logged, not archived)."""
    files: int
    """Files closed so far."""


@dataclass(slots=True)
class _Flush:
    done: threading.Event


_STOP = object()


class ArchiveWriter:
    """Appends archive rows for tapped messages to Parquet files under ``path``.

    Files are named ``part-<UTC start time>-<writer id>-<n>.parquet``; a file is
    closed (and becomes visible) after ``rotate_rows`` rows or ``rotate_seconds``
    seconds, whichever comes first, and on :meth:`flush` / :meth:`close`. At
    most ``row_group_rows`` rows are buffered in memory, and at most
    ``queue_size`` messages wait to be handed to the writer process: when that
    is full, ``overflow="block"`` makes :meth:`record` wait (no message is
    lost) and ``overflow="drop"`` drops the message and counts it.

    Use as a context manager, or call :meth:`close`. Raises
    :class:`~pipeline.schema.MissingDependency` if pyarrow is not installed.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        rotate_rows: int = 1_000_000,
        rotate_seconds: float = 60.0,
        row_group_rows: int = 10_000,
        queue_size: int = 10_000,
        overflow: Overflow = "block",
        compression: str = "zstd",
    ) -> None:
        check_pyarrow()  # the writer process imports it; this one need not
        if overflow not in ("block", "drop"):
            raise ValueError(f"overflow must be 'block' or 'drop', not {overflow!r}")
        if min(rotate_rows, row_group_rows, queue_size) < 1 or rotate_seconds <= 0:
            raise ValueError("rotate_rows, rotate_seconds, row_group_rows and queue_size must be positive")
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.overflow = overflow
        self._id = uuid.uuid4().hex[:8]
        self._queue = Handoff(queue_size)
        self._error: str | None = None
        self._closed = False
        self._close_lock = threading.Lock()
        self._flushes: dict[int, threading.Event] = {}
        self._flush_tokens = itertools.count()
        self._stopped = threading.Event()
        self._recorded = self._dropped_full = self._dropped_failed = self._unencodable = 0
        self._child = {"written": 0, "files": 0, "unarchivable": 0, "lost": 0}
        settings = {"rotate_rows": rotate_rows, "rotate_seconds": rotate_seconds,
                    "row_group_rows": row_group_rows, "compression": compression}
        self._conn, self._process = _start_process(self.path, self._id, settings)
        self._sender = threading.Thread(target=self._send, name=f"archive-sender-{self._id}", daemon=True)
        self._receiver = threading.Thread(target=self._receive, name=f"archive-receiver-{self._id}",
                                          daemon=True)
        self._sender.start()
        self._receiver.start()

    # --- the caller's side ------------------------------------------------------------------

    def record(
        self,
        route: str,
        side: str,
        message: AmqpMessage,
        *,
        time_us: int | None = None,
        encoded: bytes | None = None,
    ) -> None:
        """Queue ``message`` for archiving (cheap: the row is built by the writer process).

        ``side`` is ``"received"`` or ``"delivered"``; ``time_us`` defaults to
        now (µs since the epoch). Pass ``encoded``, the message's AMQP encoding,
        whenever the caller has it (``message.encode()`` as sent, or the bytes
        as received); otherwise the message is encoded by the sender thread,
        which costs the bridge's process CPU. Neither may be modified
        afterwards. Raises :class:`ArchiveError` once the writer has failed or
        is closed.
        """
        if self._error is not None or self._closed:
            raise ArchiveError(self._failure_text())
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, not {side!r}")
        item = (route, side, time.time_ns() // 1000 if time_us is None else time_us,
                message if encoded is None else encoded)
        if not self._queue.put(item, block=self.overflow == "block"):
            self._dropped_full += 1
            return
        self._recorded += 1

    def try_record(self, route: str, side: str, encoded: bytes, time_us: int, *,
                   timeout: float = 0.0) -> bool:
        """Queue an encoded message if there is room within ``timeout`` seconds (0: now).

        Returns False when the queue stayed full: nothing was queued or counted,
        and the caller decides what to do (the live bridge holds the row and
        withholds credit, see :mod:`bridge.taps`). Unlike :meth:`record` it never
        waits longer, whatever ``overflow`` says. Raises :class:`ArchiveError`
        once the writer has failed or is closed.
        """
        if self._error is not None or self._closed:
            raise ArchiveError(self._failure_text())
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, not {side!r}")
        if not self._queue.put((route, side, time_us, encoded), block=timeout > 0,
                               timeout=timeout):
            return False
        self._recorded += 1
        return True

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every message recorded so far is in a closed, visible file."""
        if self._closed:
            raise ArchiveError(self._failure_text())
        done = threading.Event()
        self._queue.put(_Flush(done), urgent=True)
        if not done.wait(timeout):
            raise TimeoutError(f"archive writer {self.path}: flush did not finish in {timeout}s")
        if self._error is not None:
            raise ArchiveError(self._failure_text())

    def close(self, timeout: float | None = None) -> None:
        """Write what is queued, close the current file and stop (idempotent).

        Raises :class:`ArchiveError` if the writer failed at any point.
        """
        with self._close_lock:
            if not self._closed:
                self._closed = True
                self._queue.put(_STOP, urgent=True)
        deadline = None if timeout is None else time.monotonic() + timeout
        for worker in (self._sender, self._receiver):
            worker.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if worker.is_alive():
                raise TimeoutError(f"archive writer {self.path}: close did not finish in {timeout}s")
        try:
            self._process.wait(5.0)
        except subprocess.TimeoutExpired:  # pragma: no cover - it exits after "stop"
            self._process.kill()
            self._process.wait()
        self._conn.close()
        if self._error is not None:
            raise ArchiveError(self._failure_text())

    @property
    def pid(self) -> int | None:
        """The process id of the writer process."""
        return self._process.pid

    @property
    def stats(self) -> ArchiveStats:
        """Current counters."""
        child = self._child
        return ArchiveStats(
            recorded=self._recorded,
            written=child["written"],
            dropped=self._dropped_full + self._dropped_failed + child["lost"],
            unarchivable=self._unencodable + child["unarchivable"],
            files=child["files"],
        )

    def __enter__(self) -> ArchiveWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _failure_text(self) -> str:
        if self._error is not None:
            return f"archive writer {self.path} failed: {self._error}"
        return f"archive writer {self.path} is closed"

    def _fail(self, reason: str) -> None:
        if self._error is None:
            self._error = reason
            log.error("archive writer %s failed, archiving stopped: %s", self.path, reason)
        for done in self._flushes.values():
            done.set()

    # --- the sender thread: hand-off → pipe -------------------------------------------------

    def _send(self) -> None:
        while True:
            rows: list[tuple[str, str, int, bytes]] = []
            for item in self._queue.take():
                if isinstance(item, tuple):
                    row = self._encoded(*item)
                    if row is not None:
                        rows.append(row)
                    continue
                self._pipe(("rows", rows))
                rows = []
                if isinstance(item, _Flush):
                    token = next(self._flush_tokens)
                    self._flushes[token] = item.done
                    if not self._pipe(("flush", token)):
                        item.done.set()
                else:  # _STOP
                    self._pipe(("stop",))
                    self._stopped.wait()
                    return
            self._pipe(("rows", rows))
            self._queue.wait_for(_BATCH_PAUSE, self._queue.capacity // 2)

    def _encoded(
        self, route: str, side: str, time_us: int, payload: AmqpMessage | bytes | bytearray
    ) -> tuple[str, str, int, bytes] | None:
        """A recorded item with the message's encoding (made here if the caller had none)."""
        if isinstance(payload, bytearray | memoryview):  # proton's recv() gives bytearray
            payload = bytes(payload)
        elif isinstance(payload, AmqpMessage):
            try:
                payload = payload.encode()
            except MappingError as exc:
                self._unencodable += 1
                log.warning("archive writer %s: message on route %r not archived: %s",
                            self.path, route, exc)
                return None
        return route, side, time_us, payload

    def _pipe(self, command: tuple[Any, ...]) -> bool:
        """Send a command to the writer process; False (and rows counted dropped) if it is gone."""
        if command[0] == "rows" and not command[1]:
            return True
        if self._error is None:
            try:
                self._conn.send_bytes(pickle.dumps(command, protocol=pickle.HIGHEST_PROTOCOL))
                return True
            except OSError as exc:
                self._fail(f"the writer process is gone ({exc!r})")
        if command[0] == "rows":
            self._dropped_failed += len(command[1])
        if command[0] == "stop":
            self._stopped.set()
        return False

    # --- the receiver thread: answers of the writer process ---------------------------------

    def _receive(self) -> None:
        try:
            while True:
                kind, *args = self._conn.recv()
                if kind == "warning":
                    log.warning("archive writer %s: %s", self.path, args[0])
                    continue
                self._child = args[-1]
                if kind == "flushed":
                    done = self._flushes.pop(args[0], None)
                    if done is not None:
                        done.set()
                elif kind == "failed":
                    self._fail(args[0])
                    return
                elif kind == "stopped":
                    return
        except (EOFError, OSError) as exc:
            self._fail(f"the writer process ended unexpectedly ({exc!r})")
        finally:
            self._stopped.set()


def _start_process(path: Path, writer_id: str, settings: dict[str, Any]) -> tuple[Any, Any]:
    """Start the writer process; returns the parent's end of its socket and the process.

    A fresh interpreter running :mod:`pipeline.filewriter` (not multiprocessing,
    whose spawn and forkserver modes re-import the host program's main module),
    connected by a socket pair.
    """
    parent, child = socket.socketpair()
    env = dict(os.environ)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([_PACKAGE_ROOT, *paths])
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "pipeline.filewriter", str(child.fileno()), str(path), writer_id,
             json.dumps(settings)],
            pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, env=env,
        )
    finally:
        child.close()
    return Connection(parent.detach()), process
