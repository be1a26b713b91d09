"""The contract between the bridge (:mod:`bridge.app`) and its route runtimes.

Every route runtime — the two bridge routes of this package and the façade's publish
and consume routes — is a :class:`RouteRuntime`: what the metrics collector reads
(:class:`bridge.metrics.ObservedRoute`), plus what the bridge calls to log, tap, drain
and stop it. Routes with a legacy session also satisfy :class:`LegacyRoute`, which
fault containment (:mod:`bridge.runtime.containment`) uses to restart that session.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..ops.metrics import ObservedRoute
from ..taps import RouteTap
from .stats import RouteStats


class RouteRuntime(ObservedRoute, Protocol):
    """What the bridge uses of a route (on the event loop, except where noted)."""

    name: str
    stats: RouteStats
    limit_messages: int
    tap: RouteTap | None
    """The route's archive tap (set by the bridge when the route has ``tap``)."""

    @property
    def pending(self) -> int:
        """Messages taken from the source whose fate is not settled there yet."""
        ...

    @property
    def ready(self) -> bool:
        """Both sides attached, and not stopping; safe from any thread."""
        ...

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (empty when it is); safe from any thread."""
        ...

    def pause(self) -> None:
        """Take no more messages from the source (graceful shutdown)."""

    def on_tap_ready(self) -> None:
        """The tap's writer caught up: take messages again."""


class LegacyRoute(RouteRuntime, Protocol):
    """A route with a session on a legacy connection (fault containment restarts it)."""

    paused: bool

    @property
    def connection_name(self) -> str:
        """The legacy connection the route's session is on."""
        ...

    def restart_session(self) -> Callable[[], bool]:
        """End the route's legacy session after an internal fault (the broker requeues
        what it holds unsettled; a fresh one follows); returns a check that is true once
        the route is back (ready on a fresh session, or stopping)."""
        ...

    def end_of_burst(self) -> None:
        """The route's batched work at the end of a burst of events."""


__all__ = ["LegacyRoute", "RouteRuntime"]
