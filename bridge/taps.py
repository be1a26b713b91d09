"""The route option ``tap`` in the live bridge: archive rows recorded without blocking the loop.

A route with ``tap: {path: ..., side: ...}`` calls :meth:`RouteTap.received`
when it takes a message from its source and :meth:`RouteTap.delivered` when
its target accepted it, on the event-loop thread, with the message's AMQP 1.0
encoding (the bytes the route sends or received: nothing is encoded for the
tap on the message path). That only appends the row to the archive writer's
bounded queue (:meth:`pipeline.archive.ArchiveWriter.try_record`, a few µs);
a sender thread and the writer's own process build the rows and write the
rotating Parquet files (docs/archive.md).

When the writer's queue is full (the writer cannot keep up):

- ``overflow: drop``: the row is dropped, counted, and logged (a warning at
  most every :data:`WARN_INTERVAL` seconds);
- ``overflow: block`` (the default): no row is lost and the event loop is never
  blocked. The row is *held* by the route's tap, in order, and the route
  withholds credit from its source (0-10 message credit, 1.0 link credit, or
  the façade stops reading its publishers) until the writer has taken every
  held row; a timer offers them again every :data:`RETRY_INTERVAL` seconds.
  The route so slows down to the writer's pace. What is held is bounded by what
  the route had already let in: its ``max_in_flight`` window and the credit
  already granted, so about two rows per message in flight.

If the archive writer fails (disk full, its process killed), archiving stops:
the error is logged once per route, later rows are counted as lost, and the
bridge goes on moving messages (the archive is a record, not a delivery path).

:class:`BridgeTaps` opens the taps (one writer per archive directory) and
closes them when the bridge stops, after the last outcome: what was recorded
is then in closed, readable files. Neither importing this module nor opening
a tap imports pyarrow in the bridge's process (the writer's process does).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mappings.errors import MappingError
from mappings.message import AmqpMessage
from pipeline.bridge_api import (  # light: the writer's process imports pyarrow
    ArchiveError,
    ArchiveWriter,
    MissingDependency,
    Taps,
)

from .config import ConfigError, Route
from .runtime import Timer

if TYPE_CHECKING:
    from proton.reactor import Container

log = logging.getLogger(__name__)

RETRY_INTERVAL = 0.01
"""Seconds between offers of held rows to a full writer queue (``overflow: block``)."""
WARN_INTERVAL = 10.0
"""Seconds between warnings about dropped rows (``overflow: drop``)."""
CLOSE_TIMEOUT = 60.0
"""Seconds the bridge waits at shutdown for its taps' files to be written."""


@dataclass
class TapStats:
    """Counters of one route's tap (logged when the bridge stops)."""

    recorded: int = 0
    """Rows handed to the archive writer."""
    dropped: int = 0
    """Rows dropped because the writer's queue was full (``overflow: drop``)."""
    lost: int = 0
    """Rows not archived because the writer had failed or was closed."""
    unarchivable: int = 0
    """Messages the tap could not encode (logged)."""
    held_peak: int = 0
    """Most rows held at once while the writer's queue was full (``overflow: block``)."""
    backpressure: int = 0
    """Times the route withheld credit because rows were held."""
    backpressure_seconds: float = 0.0
    """Time spent withholding credit."""


class RouteTap:
    """One route's tap as its runtime uses it; event-loop thread only.

    ``resume`` is called (on the event loop) when held rows are all in the
    writer's queue again: the route then grants credit as usual.
    """

    def __init__(self, route: str, side: str, writer: ArchiveWriter, container: Container,
                 resume: Callable[[], None]) -> None:
        self.route = route
        self.writer = writer
        self.container = container
        self.resume = resume
        self.wants_received = side in ("received", "both")
        self.wants_delivered = side in ("delivered", "both")
        """Routes keep each in-flight message's encoding only when this is set."""
        self.block = writer.overflow == "block"
        self.stats = TapStats()
        self._held: deque[tuple[str, int, bytes]] = deque()
        self._retrying = False
        self._since: float | None = None
        """When the current backpressure began (None: rows flow)."""
        self._failure: str | None = None
        self._closed = False
        self._warned_at = float("-inf")
        self._dropped_warned = 0

    @property
    def backpressured(self) -> bool:
        """True while rows are held: the route must not let more messages in."""
        return bool(self._held)

    def received(self, data: bytes) -> None:
        """Record a message's AMQP 1.0 encoding as taken from the source (now)."""
        if self.wants_received:
            self._record("received", data)

    def delivered(self, data: bytes | None) -> None:
        """Record a message's AMQP 1.0 encoding as accepted by the target (now)."""
        if self.wants_delivered and data is not None:
            self._record("delivered", data)

    def received_message(self, message: AmqpMessage) -> None:
        """:meth:`received` for a message the route has not encoded (error paths only: this
        encodes it). A message that cannot be encoded is logged and counted."""
        if not self.wants_received:
            return
        try:
            data = message.encode()
        except MappingError as exc:
            self.stats.unarchivable += 1
            log.warning("route %s: tap: message not archived (cannot encode it): %s",
                        self.route, exc, extra={"event": "tap_unarchivable", "route": self.route,
                                                "error": str(exc)})
            return
        self._record("received", data)

    # -- internals --------------------------------------------------------------------------

    def _record(self, side: str, data: bytes) -> None:
        time_us = time.time_ns() // 1000
        if self._held:  # keep the order: behind what waits
            self._hold(side, time_us, data)
        elif not self._offer(side, time_us, data):
            self._hold(side, time_us, data)
            self.stats.backpressure += 1
            self._since = time.monotonic()
            if self.stats.backpressure == 1:
                log.info("route %s: tap: the archive writer is behind: holding rows and "
                         "withholding credit until it catches up", self.route,
                         extra={"event": "tap_backpressure", "route": self.route})
            self._retry_later()

    def _offer(self, side: str, time_us: int, data: bytes) -> bool:
        """Hand one row to the writer; False only if it must be held (queue full, block)."""
        if self._failure is not None or self._closed:
            self.stats.lost += 1
            return True
        try:
            queued = self.writer.try_record(self.route, side, data, time_us)
        except ArchiveError as exc:
            self._fail(str(exc))
            self.stats.lost += 1
            return True
        if queued:
            self.stats.recorded += 1
            return True
        if self.block:
            return False
        self.stats.dropped += 1
        now = time.monotonic()
        if now - self._warned_at >= WARN_INTERVAL:
            log.warning("route %s: tap: the archive writer's queue is full (overflow: drop): "
                        "%d rows dropped so far", self.route, self.stats.dropped,
                        extra={"event": "tap_dropping", "route": self.route,
                               "dropped": self.stats.dropped})
            self._warned_at = now
        return True

    def _hold(self, side: str, time_us: int, data: bytes) -> None:
        self._held.append((side, time_us, data))
        if len(self._held) > self.stats.held_peak:
            self.stats.held_peak = len(self._held)

    def _retry_later(self) -> None:
        if not self._retrying:
            self._retrying = True
            self.container.schedule(RETRY_INTERVAL, Timer(self._retry))

    def _retry(self) -> None:
        self._retrying = False
        held = self._held
        while held:
            item = held.popleft()
            if not self._offer(*item):
                held.appendleft(item)
                self._retry_later()
                return
        self._released()

    def _released(self) -> None:
        """The held rows are gone (to the writer, or lost): let the route take messages again."""
        if self._since is not None:
            self.stats.backpressure_seconds += time.monotonic() - self._since
            self._since = None
            self.resume()

    def _fail(self, reason: str) -> None:
        if self._failure is None:
            self._failure = reason
            log.error("route %s: tap: archiving stopped (%s); the bridge goes on without it, "
                      "counting the rows not archived", self.route, reason,
                      extra={"event": "tap_failed", "route": self.route, "error": reason})
        if self._held:
            self.stats.lost += len(self._held)
            self._held.clear()
        self._released()

    def close(self, timeout: float) -> None:
        """Hand the held rows to the writer (waiting up to ``timeout`` seconds for room);
        later rows are counted as lost."""
        deadline = time.monotonic() + timeout
        while self._held and self._failure is None:
            side, time_us, data = self._held[0]
            try:
                queued = self.writer.try_record(self.route, side, data, time_us,
                                                timeout=max(0.001, deadline - time.monotonic()))
            except ArchiveError as exc:
                self._fail(str(exc))
                break
            if not queued:
                self._fail(f"the writer did not take the held rows within {timeout:.0f}s")
                break
            self.stats.recorded += 1
            self._held.popleft()
        self._closed = True

    def counters(self) -> dict[str, int | float]:
        """The tap's counters, as logged when it closes."""
        s = self.stats
        return {"recorded": s.recorded, "dropped": s.dropped, "lost": s.lost,
                "unarchivable": s.unarchivable, "backpressure": s.backpressure,
                "backpressure_seconds": round(s.backpressure_seconds, 2),
                "held_peak": s.held_peak}


class BridgeTaps:
    """The taps of a bridge: one archive writer per directory, shared by its routes."""

    def __init__(self, container: Container) -> None:
        self.container = container
        self.routes: list[RouteTap] = []
        self._taps: Taps | None = None

    def open(self, index: int, route: Route, resume: Callable[[], None]) -> RouteTap:
        """The tap of ``route`` (``routes[index]``; its ``tap`` is set).

        Raises :class:`ConfigError` naming ``routes[index].tap`` when the writer
        cannot start (pyarrow missing, the directory not writable, ...).
        """
        config = route.tap
        assert config is not None
        if self._taps is None:
            self._taps = Taps()
        try:
            tap = self._taps.open(route.name, config)
        except (MissingDependency, OSError, ValueError) as exc:
            raise ConfigError([f"routes[{index}].tap: {exc}"]) from None
        route_tap = RouteTap(route.name, config.side, tap.writer, self.container, resume)
        self.routes.append(route_tap)
        log.info("route %s: tap: archiving %s rows to %s", route.name,
                 "received and delivered" if config.side == "both" else config.side,
                 tap.writer.path, extra={"event": "tap_open", "route": route.name,
                                         "side": config.side, "path": str(tap.writer.path)})
        return route_tap

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Write what every tap recorded into closed files and stop the writers (idempotent);
        logs each tap's counters and any failure."""
        if self._taps is None:
            return
        for route_tap in self.routes:
            route_tap.close(timeout)
        writers: list[Any] = self._taps.writers
        try:
            self._taps.close(timeout)
        except Exception as exc:  # ArchiveError, TimeoutError: reported, not raised at exit
            log.error("tap: archive writer failed: %s", exc,
                      extra={"event": "archive_failed", "error": str(exc)})
        self._taps = None
        for route_tap in self.routes:
            counters = route_tap.counters()
            log.info("route %s: tap: %s", route_tap.route,
                     " ".join(f"{k}={v}" for k, v in counters.items()),
                     extra={"event": "tap_stats", "route": route_tap.route, **counters})
        for writer in writers:
            s = writer.stats
            log.info("tap: archive %s: written=%d files=%d dropped=%d unarchivable=%d",
                     writer.path, s.written, s.files, s.dropped, s.unarchivable,
                     extra={"event": "archive_stats", "path": str(writer.path),
                            "written": s.written, "files": s.files, "dropped": s.dropped,
                            "unarchivable": s.unarchivable})
