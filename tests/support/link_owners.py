"""Stand-ins for what a test's :class:`~bridge.amqp10.link.Amqp10Link` needs around it
when no route or façade owns it: an owner that notes what it is told, and a container
whose timers the test runs itself."""

from __future__ import annotations

from typing import Any

from bridge.amqp10.link import Amqp10Link


class NotingOwner:
    """A link owner (:class:`~bridge.amqp10.link.LinkOwner`) that keeps its link (re-attached
    after each loss) and notes how often it came up and why it went down."""

    def __init__(self) -> None:
        self.ups = 0
        self.downs: list[str | None] = []
        """:attr:`Amqp10Link.last_error` at each loss."""

    def on_link_up(self, link: Amqp10Link) -> None:
        self.ups += 1

    def on_link_down(self, link: Amqp10Link) -> None:
        self.downs.append(link.last_error)

    def on_credit(self, link: Amqp10Link) -> None:
        pass

    def on_delivery(self, link: Amqp10Link, delivery: Any) -> None:
        pass


class ManualTimers:
    """The container of a link on a :class:`~tests.support.memory_pair.MemoryPair`: timers
    are kept, and run when the test says (:meth:`run`)."""

    def __init__(self) -> None:
        self.tasks: list[tuple[float, Any]] = []

    @property
    def scheduled(self) -> list[float]:
        """The delays of the timers not run yet."""
        return [delay for delay, _task in self.tasks]

    def schedule(self, delay: float, task: Any) -> None:
        self.tasks.append((delay, task))

    def run(self, delay: float) -> int:
        """Run the timers scheduled about ``delay`` ahead (as if it had passed; within a
        second: a deadline is counted from when its clock started); how many ran."""
        due = [task for d, task in self.tasks if abs(d - delay) < 1]
        self.tasks = [(d, task) for d, task in self.tasks if abs(d - delay) >= 1]
        for task in due:
            task.on_timer_task(None)
        return len(due)
