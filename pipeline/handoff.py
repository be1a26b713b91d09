"""A bounded hand-off from many producer threads to one consumer that takes everything at once.

Producers append single items; the consumer swaps out the whole list. Compared
with ``queue.Queue`` (one lock round trip and possibly one thread wake-up per
item), a busy consumer costs producers almost nothing, and a full buffer wakes
them once per batch rather than once per item. The consumer can also wait for
a batch to build up (:meth:`Handoff.wait_for`).
"""

from __future__ import annotations

import threading
import time
from typing import Any


class Handoff:
    """At most ``capacity`` waiting items (urgent items may go beyond it)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._items: list[Any] = []
        self._urgent = False
        self._wake_at = 1
        lock = threading.Lock()
        self._ready = threading.Condition(lock)
        self._not_full = threading.Condition(lock)

    def put(self, item: Any, *, block: bool = True, urgent: bool = False,
            timeout: float | None = None) -> bool:
        """Append ``item``; when full, wait (``block``, at most ``timeout`` seconds if given)
        or return False (not appended).

        An ``urgent`` item ignores the bound and wakes the consumer at once.
        """
        with self._not_full:
            if not urgent:
                deadline = None if timeout is None else time.monotonic() + timeout
                while len(self._items) >= self.capacity:
                    if not block:
                        return False
                    if deadline is None:
                        self._not_full.wait()
                    else:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return False
                        self._not_full.wait(remaining)
            self._items.append(item)
            self._urgent |= urgent
            if urgent or len(self._items) >= self._wake_at:
                self._ready.notify()
            return True

    def take(self, timeout: float | None = None) -> list[Any]:
        """Every waiting item, oldest first; waits up to ``timeout`` seconds for one (``[]`` if none)."""
        with self._ready:
            if not self._items:
                self._ready.wait(timeout)
            items, self._items = self._items, []
            self._urgent = False
            if items:
                self._not_full.notify_all()
            return items

    def wait_for(self, timeout: float, count: int) -> None:
        """Wait up to ``timeout`` seconds until ``count`` items (or an urgent one) are waiting."""
        with self._ready:
            if len(self._items) < count and not self._urgent:
                self._wake_at = max(1, count)
                try:
                    self._ready.wait(timeout)
                finally:
                    self._wake_at = 1

    def __len__(self) -> int:
        return len(self._items)
