"""The archive writer's process: encoded messages in, rotating Parquet files out.

:func:`serve` runs in a child process of :class:`pipeline.archive.ArchiveWriter`
so that building rows (decoding AMQP, checking CloudEvents, Arrow conversion)
never competes with the bridge for its interpreter lock. It reads pickled
commands from a socket and answers on the same socket:

=================================  =====================================================
parent → child                     child → parent
=================================  =====================================================
``("rows", [(route, side,          ``("stats", stats)`` after each file it closes;
time_us, encoded), ...])``         ``("warning", text)`` for a message it cannot archive
``("flush", token)``               ``("flushed", token, stats)``: every row sent before is
                                   in a closed file
``("stop",)``                      ``("stopped", stats)``, then it exits
(any failure)                      ``("failed", text, stats)``, then it exits
=================================  =====================================================
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
import sys
import time
from collections import OrderedDict
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mappings.errors import MappingError
from mappings.message import AmqpMessage
from pipeline.rows import archive_row, with_context
from pipeline.schema import archive_schema, require_parquet, rows_to_batch
from pipeline.sections import SectionError

_CACHE_SIZE = 4096


def _warm_up() -> None:
    """Write one row to memory: pyarrow initialises itself lazily (about 0.3 s) on first use.

    Done before serving, so that the first rows are not delayed.
    """
    import pyarrow as pa

    pq = require_parquet()
    row = archive_row("warm-up", "received", 0, AmqpMessage(body="x"))
    with pq.ParquetWriter(pa.BufferOutputStream(), archive_schema(), compression="zstd") as out:
        out.write_batch(rows_to_batch([row]))


class RotatingFiles:
    """Archive rows → Parquet files under ``path``, closed after ``rotate_rows`` rows or
    ``rotate_seconds`` seconds; at most ``row_group_rows`` rows are held in memory."""

    def __init__(self, path: Path, writer_id: str, *, rotate_rows: int, rotate_seconds: float,
                 row_group_rows: int, compression: str) -> None:
        self._pq = require_parquet()
        self.path = path
        self.writer_id = writer_id
        self.rotate_rows = rotate_rows
        self.rotate_seconds = rotate_seconds
        self.row_group_rows = row_group_rows
        self.compression = compression
        self.written = 0
        self.files = 0
        self._rows: list[tuple[Any, ...]] = []
        self._file: Any = None
        self._file_rows = 0
        self._deadline = 0.0
        self._paths: tuple[Path, Path] | None = None

    def add(self, row: tuple[Any, ...]) -> bool:
        """Buffer a row; True if that closed a file."""
        if self._file is None and not self._rows:
            self._deadline = time.monotonic() + self.rotate_seconds
        self._rows.append(row)
        if len(self._rows) >= self.row_group_rows:
            self._write_rows()
        if self._file_rows + len(self._rows) >= self.rotate_rows:
            return self.finish()
        return False

    def due(self) -> float | None:
        """Seconds until the open file must be closed (``None``: nothing is open)."""
        if self._file is None and not self._rows:
            return None
        return max(0.0, self._deadline - time.monotonic())

    def finish(self) -> bool:
        """Write what is buffered and close the open file (it becomes visible); True if one was."""
        self._write_rows()
        if self._file is None:
            return False
        self._file.close()
        self._file = None
        assert self._paths is not None
        os.replace(*self._paths)
        self._paths = None
        self.written += self._file_rows
        self.files += 1
        self._file_rows = 0
        return True

    def abandon(self) -> int:
        """Drop the buffered rows and the open file (after a failure); how many rows were lost."""
        lost = len(self._rows) + self._file_rows
        self._rows = []
        self._file_rows = 0
        try:
            if self._file is not None:
                self._file.close()
        except Exception:  # already failing: keep the first error
            pass
        self._file = None
        if self._paths is not None:
            self._paths[0].unlink(missing_ok=True)
            self._paths = None
        return lost

    def _write_rows(self) -> None:
        if not self._rows:
            return
        if self._file is None:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            name = f"part-{stamp}-{self.writer_id}-{self.files:06d}.parquet"
            temporary = self.path / f".{name}.inprogress"
            self._file = self._pq.ParquetWriter(temporary, archive_schema(), compression=self.compression)
            self._paths = (temporary, self.path / name)
        self._file.write_batch(rows_to_batch(self._rows))
        self._file_rows += len(self._rows)
        self._rows = []


class RowMaker:
    """Archive rows from encoded messages, each distinct encoding decoded once
    (:meth:`AmqpMessage.decode`, on the fast codec).

    The same message usually comes twice, received and then delivered; the
    second row reuses the first one's columns (a bounded cache by encoding).
    """

    def __init__(self) -> None:
        self._cache: OrderedDict[bytes, tuple[Any, ...]] = OrderedDict()

    def row(self, route: str, side: str, time_us: int, encoded: bytes) -> tuple[Any, ...]:
        """Raises MappingError / SectionError for bytes that are not an AMQP 1.0 message."""
        cached = self._cache.get(encoded)
        if cached is not None:
            self._cache.move_to_end(encoded)
            return with_context(cached, route, side, time_us)
        row = archive_row(route, side, time_us, AmqpMessage.decode(encoded), encoded=encoded)
        self._cache[encoded] = row
        if len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return row


def serve(conn: Connection, path: str, writer_id: str, settings: dict[str, Any]) -> None:
    """The child process's main loop (see the module docstring)."""
    # Ctrl-C in the bridge's terminal reaches the whole process group, and a service
    # manager's stop (systemd's default KillMode) sends SIGTERM to every process of the
    # service: the bridge decides when to stop, drains, and then sends "stop" so that no
    # row is lost. If the bridge itself is gone, the socket's end of file stops this one.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    files = RotatingFiles(Path(path), writer_id, **settings)
    maker = RowMaker()
    unarchivable = lost = 0
    unwritten = 0  # rows of the batch in hand not yet given to ``files``

    def stats() -> dict[str, int]:
        return {"written": files.written, "files": files.files, "unarchivable": unarchivable,
                "lost": lost}

    try:
        while True:
            if not conn.poll(files.due()):
                if files.finish():
                    conn.send(("stats", stats()))
                continue
            command, *args = pickle.loads(conn.recv_bytes())
            if command == "rows":
                closed = False
                unwritten = len(args[0])
                for route, side, time_us, encoded in args[0]:
                    unwritten -= 1
                    try:
                        row = maker.row(route, side, time_us, encoded)
                    except (MappingError, SectionError, TypeError, ValueError) as exc:
                        # one message the row cannot be made of: reported, the rest archived
                        unarchivable += 1
                        conn.send(("warning", f"message on route {route!r} not archived: {exc}"))
                        continue
                    closed |= files.add(row)
                if files.due() == 0.0:
                    closed |= files.finish()
                if closed:
                    conn.send(("stats", stats()))
            elif command == "flush":
                files.finish()
                conn.send(("flushed", args[0], stats()))
            elif command == "stop":
                files.finish()
                conn.send(("stopped", stats()))
                return
    except (EOFError, BrokenPipeError, ConnectionResetError):
        # the bridge is gone without a "stop" (killed): keep the rows it had sent
        try:
            files.finish()
        except Exception:  # nothing to report to: the parent is gone
            files.abandon()
    except Exception as exc:  # disk full, directory gone ...
        lost = files.abandon() + unwritten
        _try_send(conn, ("failed", repr(exc), stats()))


def _try_send(conn: Connection, message: tuple[Any, ...]) -> None:
    with contextlib.suppress(OSError):  # the parent is gone
        conn.send(message)


def main(argv: list[str]) -> None:
    """``python -m pipeline.filewriter FD PATH WRITER_ID SETTINGS_JSON`` (started by ArchiveWriter)."""
    fd, path, writer_id, settings = argv
    _warm_up()
    serve(Connection(int(fd)), path, writer_id, json.loads(settings))


if __name__ == "__main__":
    main(sys.argv[1:])
