"""The route option ``tap``: the live bridge archives a route's messages.

``tap: {path: /var/lib/amqp-bridge/archive, side: both}`` on a route makes the
bridge record the messages it receives from the route's source and/or the ones
its target accepted, in the archive format (docs/archive.md). Importing this
module imports neither pyarrow nor the writer (the bridge's configuration uses
:class:`TapConfig`); opening a tap does, and fails with
:class:`~pipeline.schema.MissingDependency` if pyarrow is not installed. How the
live bridge calls a tap (never blocking its event loop) is :mod:`bridge.taps`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from mappings.message import AmqpMessage

if TYPE_CHECKING:
    from pipeline.archive import ArchiveWriter


class TapConfig(BaseModel):
    """A route's ``tap`` option."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(
        description="Archive directory (created if missing; relative paths are relative to the "
                    "bridge's working directory). Routes may share one: they then share one "
                    "writer and must give the same settings."
    )
    side: Literal["received", "delivered", "both"] = Field(
        "both", description="Which rows to write: received (as taken from the route's source), "
                            "delivered (when the route's target accepted it), or both."
    )
    rotate_rows: int = Field(
        1_000_000, ge=1, description="Close a file (it becomes visible) after this many rows."
    )
    rotate_seconds: float = Field(
        60.0, gt=0, description="Close a file (it becomes visible) after this many seconds."
    )
    queue_size: int = Field(
        10_000, ge=1, description="Rows waiting to be handed to the writer process, at most."
    )
    overflow: Literal["block", "drop"] = Field(
        "block", description="When the queue is full: block (lose no row: the bridge holds the "
                             "row and withholds credit from the route's source until the writer "
                             "catches up) or drop (drop the row, count it and log a warning)."
    )

    def writer_settings(self) -> dict[str, object]:
        """The :class:`ArchiveWriter` keyword arguments of this option."""
        return self.model_dump(exclude={"path", "side"})


class Tap:
    """One route's tap: records the sides its :class:`TapConfig` selects, ignores the others."""

    __slots__ = ("_received", "_delivered", "route", "writer")

    def __init__(self, route: str, config: TapConfig, writer: ArchiveWriter) -> None:
        self.route = route
        self.writer = writer
        self._received = config.side in ("received", "both")
        self._delivered = config.side in ("delivered", "both")

    def received(
        self, message: AmqpMessage, *, encoded: bytes | None = None, time_us: int | None = None
    ) -> None:
        """Record a message as taken from the route's source (see :meth:`ArchiveWriter.record`)."""
        if self._received:
            self.writer.record(self.route, "received", message, encoded=encoded, time_us=time_us)

    def delivered(
        self, message: AmqpMessage, *, encoded: bytes | None = None, time_us: int | None = None
    ) -> None:
        """Record a message once the route's target accepted it."""
        if self._delivered:
            self.writer.record(self.route, "delivered", message, encoded=encoded, time_us=time_us)


class Taps:
    """The archive writers of a bridge: one per archive directory, shared by its routes."""

    def __init__(self) -> None:
        self._writers: dict[Path, tuple[dict[str, object], ArchiveWriter]] = {}

    def open(self, route: str, config: TapConfig) -> Tap:
        """The tap of ``route``; starts the directory's writer on first use.

        Raises ValueError if routes sharing a directory give different writer
        settings (rotation, queue, overflow).
        """
        from pipeline.archive import ArchiveWriter

        path = Path(config.path).resolve()
        settings = config.writer_settings()
        entry = self._writers.get(path)
        if entry is None:
            entry = (settings, ArchiveWriter(path, **settings))  # type: ignore[arg-type]
            self._writers[path] = entry
        elif entry[0] != settings:
            raise ValueError(
                f"route {route!r}: tap on {config.path} has settings {settings}, but another "
                f"route taps the same directory with {entry[0]}"
            )
        return Tap(route, config, entry[1])

    @property
    def writers(self) -> list[ArchiveWriter]:
        """The open writers."""
        return [writer for _, writer in self._writers.values()]

    def close(self, timeout: float | None = None) -> None:
        """Close every writer (writing what is queued); raises the first failure after closing all."""
        errors = []
        for writer in self.writers:
            try:
                writer.close(timeout)
            except Exception as exc:  # close the others first
                errors.append(exc)
        self._writers.clear()
        if errors:
            raise errors[0]
