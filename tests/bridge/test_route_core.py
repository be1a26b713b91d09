"""RouteCore's end-of-burst scheduling: a route's batched work is queued once per burst,
however often the burst kicks it (every message's outcome does), and again for kicks
made while it runs. The end-to-end behaviour is in ``test_routes*.py``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bridge.config import parse_config
from bridge.routes.core import RouteCore

CONFIG = """
connections:
  rabbit: {protocol: amqp0-9-1, url: "amqp://u:p@127.0.0.1:1/"}
  cloud: {protocol: amqp1.0, url: "amqp://127.0.0.1:2"}
routes:
  - name: out
    from: {connection: rabbit, queue: q}
    to:   {connection: cloud, address: /queue/out}
"""


class Legacy:
    """The legacy side's deferral: what it was asked to run at the end of the burst."""

    def __init__(self) -> None:
        self.deferred: list[Callable[[], None]] = []

    def defer(self, fn: Callable[[], None]) -> None:
        self.deferred.append(fn)

    def end_burst(self) -> None:
        """Run what was deferred (and what that defers) as the loop does."""
        while self.deferred:
            batch, self.deferred = self.deferred, []
            for fn in dict.fromkeys(batch):
                fn()


class Route(RouteCore):
    """A route whose end-of-burst work counts its runs (and kicks once more on request)."""

    def __init__(self) -> None:
        super().__init__(parse_config(CONFIG, env={}).routes[0])
        self.legacy_side = Legacy()
        self.attach_legacy(self.legacy_side)  # type: ignore[arg-type]
        self.runs = 0
        self.kick_again = False

    def end_of_burst(self) -> None:
        self.runs += 1
        if self.kick_again:
            self.kick_again = False
            self.kick()


def test_a_burst_of_kicks_queues_the_end_of_burst_work_once() -> None:
    route = Route()
    for _ in range(5):
        route.kick()
    assert len(route.legacy_side.deferred) == 1
    route.legacy_side.end_burst()
    assert route.runs == 1
    route.kick()  # the next burst queues it again
    assert len(route.legacy_side.deferred) == 1
    route.legacy_side.end_burst()
    assert route.runs == 2


def test_a_kick_made_while_the_work_runs_runs_it_once_more() -> None:
    route = Route()
    route.kick_again = True
    route.kick()
    route.legacy_side.end_burst()
    assert route.runs == 2


def test_a_fault_in_the_work_does_not_stop_later_kicks() -> None:
    route = Route()

    def failing() -> None:
        raise RuntimeError("injected")

    route.end_of_burst = failing  # type: ignore[method-assign]
    route.kick()
    with pytest.raises(RuntimeError, match="injected"):
        route.legacy_side.end_burst()
    route.legacy_side.deferred.clear()
    route.kick()
    assert len(route.legacy_side.deferred) == 1


def test_kicks_before_the_legacy_side_is_attached_queue_nothing() -> None:
    route = Route.__new__(Route)
    RouteCore.__init__(route, parse_config(CONFIG, env={}).routes[0])
    route.kick()  # no legacy side yet: nothing to queue on, and no flag left set
    legacy = Legacy()
    route.attach_legacy(legacy)  # type: ignore[arg-type]
    route.runs = 0
    route.kick_again = False
    route.kick()
    assert len(legacy.deferred) == 1
