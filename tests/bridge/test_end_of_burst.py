"""The runtime's one end-of-burst batch (bridge.hosting.EndOfBurst): work, then writes,
each once per burst, run when the loop has dispatched every event of the round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from proton.reactor import Container

from bridge.runtime import EndOfBurst, reactor
from bridge.runtime.containment import faults_of


class _Part:
    """Something with end-of-burst work and a write, recording when each ran."""

    def __init__(self, name: str, seen: list[str]) -> None:
        self.name = name
        self.seen = seen

    def work(self) -> None:
        self.seen.append(f"{self.name}.work")

    def write(self) -> None:
        self.seen.append(f"{self.name}.write")

    def fail(self) -> None:
        raise RuntimeError(f"{self.name} failed")


class _Starter:
    """The container's handler: queues ``setup``'s work when the loop starts, and stops the
    loop after the first burst (a timer of its own, due after the batch ran)."""

    def __init__(self, setup: Callable[[EndOfBurst], None]) -> None:
        self.setup = setup
        self.batch: EndOfBurst | None = None

    def on_reactor_init(self, event: Any) -> None:
        self.batch = EndOfBurst.of(event.container)
        self.setup(self.batch)
        event.container.schedule(0.05, _Stop(event.container))


class _Stop:
    def __init__(self, container: Any) -> None:
        self.container = container

    def on_timer_task(self, event: Any) -> None:
        self.container.stop()


def _run(setup: Callable[[EndOfBurst], None], *, plain: bool = False) -> tuple[Any, EndOfBurst]:
    starter = _Starter(setup)
    container = Container(starter) if plain else reactor.container(starter)
    container.run()
    assert starter.batch is not None
    return container, starter.batch


def test_work_runs_once_per_burst_before_the_writes() -> None:
    seen: list[str] = []
    a, b = _Part("a", seen), _Part("b", seen)

    def setup(batch: EndOfBurst) -> None:
        batch.flush_soon(a.write)
        batch.call_soon(a.work)
        batch.call_soon(a.work)  # asked twice, run once
        batch.flush_soon(a.write)
        # work queued by work of the same burst still runs before the writes
        batch.call_soon(lambda: (seen.append("late"), batch.call_soon(b.work)))
        batch.flush_soon(b.write)

    _, batch = _run(setup)
    assert seen == ["a.work", "late", "b.work", "a.write", "b.write"]
    assert batch.quiesce_driven  # the bridge's container tells the burst's end


def test_a_discarded_write_does_not_run() -> None:
    seen: list[str] = []
    a, b = _Part("a", seen), _Part("b", seen)

    def setup(batch: EndOfBurst) -> None:
        batch.flush_soon(a.write)
        batch.flush_soon(b.write)
        batch.discard(a.write)  # its connection closed in the same burst

    _run(setup)
    assert seen == ["b.write"]


def test_a_failing_callable_is_contained_and_the_batch_goes_on() -> None:
    seen: list[str] = []
    a, bad = _Part("a", seen), _Part("bad", seen)

    def setup(batch: EndOfBurst) -> None:
        batch.call_soon(bad.fail)
        batch.call_soon(a.work)
        batch.flush_soon(a.write)

    container, _ = _run(setup)
    assert seen == ["a.work", "a.write"]
    assert sum(faults_of(container).counts.values()) == 1


def test_a_container_that_does_not_report_quiescence_gets_a_timer_instead() -> None:
    seen: list[str] = []
    a = _Part("a", seen)

    def setup(batch: EndOfBurst) -> None:
        batch.call_soon(a.work)
        batch.call_soon(a.work)
        batch.flush_soon(a.write)

    _, batch = _run(setup, plain=True)
    assert seen == ["a.work", "a.write"]
    assert not batch.quiesce_driven
