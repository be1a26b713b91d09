"""What both bridge routes share: the prologue, the in-flight bookkeeping, readiness.

:class:`RouteCore` is the base of :class:`~bridge.routes.legacy_to_amqp10.LegacyToAmqp10`
and :class:`~bridge.routes.amqp10_to_legacy.Amqp10ToLegacy`: the route's settings and
statistics, the in-flight bound, duplicate suppression, the end-of-burst scheduling
through the legacy endpoint, readiness, graceful pause and the session restart fault
containment asks for (:class:`~bridge.routes.contract.LegacyRoute`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..amqp10.link import Amqp10Link
from ..config import Route
from ..runtime.containment import Part
from ..taps import RouteTap
from .legacy_endpoint import LegacyEndpoint
from .stats import DeliveredIds, RouteStats


class RouteCore:
    """The common part of a route between a legacy endpoint and a 1.0 link."""

    legacy: LegacyEndpoint
    """The route's legacy side (set by the subclass)."""
    link: Amqp10Link
    """The route's 1.0 source or target link (set by the subclass)."""

    def __init__(self, route: Route) -> None:
        self.name = route.name
        self.route = route
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        self.paused = False
        self.bytes = 0
        """Octets of the messages in flight (bounded by ``max_in_flight.bytes``)."""
        self.seen = DeliveredIds(route.dedupe.window) if route.dedupe else None
        self.tap: RouteTap | None = None
        """The route's archive tap (set by the bridge when the route has ``tap``)."""
        self._defer: Callable[[Callable[[], None]], None] | None = None
        self._kicked = False
        """:meth:`end_of_burst` is queued for the end of this burst (a kick adds nothing)."""

    def attach_legacy(self, legacy: LegacyEndpoint) -> None:
        """Set the route's legacy side (once, by the subclass's constructor)."""
        self.legacy = legacy
        self._defer = legacy.defer

    def kick(self) -> None:
        """Run :meth:`end_of_burst` at the end of this burst of events (once, however
        often the burst kicks: every message's outcome does)."""
        if self._kicked or self._defer is None:
            return
        self._kicked = True
        self._defer(self._kicked_end_of_burst)

    def _kicked_end_of_burst(self) -> None:
        """The end of the burst a kick queued: kicks queue it again from now on (also
        those of :meth:`end_of_burst` itself, which then runs once more)."""
        self._kicked = False
        self.end_of_burst()

    def end_of_burst(self) -> None:
        """The route's batched work (dispositions, flushes, credit); see the subclasses."""
        raise NotImplementedError

    @property
    def pending(self) -> int:
        """Messages taken from the source whose fate is not settled there yet."""
        raise NotImplementedError

    def pause(self) -> None:
        """Take no more messages from the source (graceful shutdown)."""
        self.paused = True

    @property
    def connection_name(self) -> str:
        """The legacy connection the route's session is on."""
        return self.legacy.connection_name

    @property
    def ready(self) -> bool:
        """Both sides attached (the legacy session and the 1.0 link), and not stopping."""
        return not self.waiting_for()

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (empty when it is); safe from any thread."""
        out = ["stopping"] if self.paused else []
        out += self.legacy.waiting_for()
        link = self.link
        if not link.up:
            out.append(f"1.0 link to {link.address!r} on {link.connection_name}")
        return out

    def on_tap_ready(self) -> None:
        """The tap's writer caught up: grant credit again."""
        self.kick()

    def restart_session(self) -> Callable[[], bool]:
        """End the legacy session after an internal fault (fault containment); a check
        that is true once the route is ready on a fresh one (or stopping)."""
        fresh = self.legacy.restart()
        return lambda: self.paused or (self.ready and fresh())

    def recount(self) -> None:
        """Bring the in-flight gauges up to date."""
        stats = self.stats
        stats.in_flight = self.pending
        stats.in_flight_bytes = self.bytes
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in the route's work restarts its 0-10 session: the broker requeues
        what the session held unsettled, a fresh one follows after the re-attach pause."""
        return Part("route", f"route {self.name}",
                    {"route": self.name, "connection": self.connection_name},
                    "0-10 session restarted", lambda reason: self.restart_session(),
                    back=lambda: self.paused or self.ready)


__all__ = ["RouteCore"]
