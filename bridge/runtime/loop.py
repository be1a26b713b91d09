"""Work on the loop's thread: timers, calls from other threads, end-of-burst work.

Three ways to have a callable run on the container's thread, each the only one of
its kind in the bridge:

- :class:`Timer`: after a delay (``container.schedule(delay, Timer(fn))``);
- :class:`LoopCalls`: as soon as possible, handed in from another thread (a password
  check's answer), through a socket pair that wakes the loop's ``select``;
- :class:`EndOfBurst`: once the loop has dispatched every event of the current round
  (``reactor_quiesced``), before it waits for I/O again.  A burst of events (dozens of
  transfers read at once) so ends in one batch of work — one ``message.accept``, one
  credit top-up — and one write per socket instead of one per event.

:class:`EndOfBurst` runs in two phases: the work (:meth:`EndOfBurst.call_soon`) first,
then the writes (:meth:`EndOfBurst.flush_soon`), so a socket is written once after
every piece of work that queued output on it.  Each callable is queued once per burst
however often it is asked for (bound methods of the same object compare equal).  The
burst's end is told by the container's global handler
(:class:`bridge.runtime.reactor.SkipDeliveries` calls :meth:`EndOfBurst.quiesced`); until
that has happened once (a container not built by :func:`bridge.runtime.reactor.container`),
a zero-delay timer stands in.  A callable that raises is contained
(:func:`bridge.runtime.containment.contain`, ``entry=end_of_burst``, the callable's object
as the fault domain): the others of the batch still run.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import weakref
from collections.abc import Callable
from typing import Any, ClassVar

from proton import Handler
from proton.reactor import Container

from .containment import contain
from .sockets import register_selectable


class Timer(Handler):  # type: ignore[misc]
    """The handler of a proton timer task: calls ``fn`` when it fires, on the loop's
    thread (``container.schedule(delay, Timer(fn))``). The one timer of the bridge."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn

    def on_timer_task(self, event: Any) -> None:
        self.fn()


class LoopCalls:
    """Callables handed in from other threads, run on the container's thread.

    A worker thread calls :meth:`call_soon`; a byte on a socket pair wakes the
    container's ``select``, and the loop runs the callables in the order they came.
    This is how work too slow for the loop (a password hash) reports back to it.
    """

    def __init__(self, container: Container) -> None:
        self.container = container
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._wake, self._waker = socket.socketpair()
        self._wake.setblocking(False)
        self._waker.setblocking(False)
        self.selectable = register_selectable(container, self, self._wake)
        self._closed = False

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` on the container's thread (from any thread)."""
        self._calls.put(fn)
        with contextlib.suppress(BlockingIOError, OSError):  # already awake, or closed
            self._waker.send(b"!")

    def close(self) -> None:
        """Stop (on the container's thread); calls still queued are dropped."""
        if not self._closed:
            self._closed = True
            self.selectable.terminate()
            self.selectable.update()

    def on_selectable_init(self, event: Any) -> None:
        self.selectable.reading = True
        self.selectable.update()

    def on_selectable_readable(self, event: Any) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            self._wake.recv(4096)
        while not self._closed:
            try:
                fn = self._calls.get_nowait()
            except queue.Empty:
                return
            try:
                fn()
            except Exception as exc:  # one caller's fault: the calls queued after it still run
                contain(self.container, exc, entry="loop_call")

    def on_selectable_final(self, event: Any) -> None:
        self.selectable.release()
        self._wake.close()
        self._waker.close()



class EndOfBurst:
    """Callables run once when the current burst of loop events is dispatched (module
    docstring); one per container: :meth:`of`."""

    _by_container: ClassVar[weakref.WeakKeyDictionary[Container, EndOfBurst]] = \
        weakref.WeakKeyDictionary()

    def __init__(self, container: Container) -> None:
        self.container = container
        self._calls: dict[Callable[[], None], None] = {}
        self._flushes: dict[Callable[[], None], None] = {}
        self._timer_pending = False
        self.quiesce_driven = False
        """True once the container reported the end of a burst (no stand-in timer since)."""

    @classmethod
    def of(cls, container: Container) -> EndOfBurst:
        """The container's end-of-burst batch (made on first use)."""
        batch = cls._by_container.get(container)
        if batch is None:
            batch = cls._by_container[container] = cls(container)
        return batch

    def call_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` once at the end of the current burst, before the writes."""
        self._calls[fn] = None
        self._arm()

    def flush_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` (a socket's write) once at the end of the current burst, after
        the work queued with :meth:`call_soon`."""
        self._flushes[fn] = None
        self._arm()

    def discard(self, fn: Callable[[], None]) -> None:
        """Forget ``fn`` if it is queued (its object is gone)."""
        self._calls.pop(fn, None)
        self._flushes.pop(fn, None)

    def quiesced(self) -> None:
        """The container dispatched every event of this round: run the batch."""
        self.quiesce_driven = True
        if self._calls or self._flushes:
            self.run()

    def run(self) -> None:
        """Run what is queued now: the work, then the writes (until nothing is left)."""
        self._timer_pending = False
        while self._calls or self._flushes:
            while self._calls:
                batch, self._calls = self._calls, {}
                self._run_each(batch)
            batch, self._flushes = self._flushes, {}
            self._run_each(batch)

    def _run_each(self, batch: dict[Callable[[], None], None]) -> None:
        for fn in batch:
            try:
                fn()
            except Exception as exc:  # one part's fault: the rest of the batch still runs
                contain(self.container, exc, entry="end_of_burst",
                        domain=getattr(fn, "__self__", None))

    def _arm(self) -> None:
        if not self._timer_pending and not self.quiesce_driven:
            self._timer_pending = True
            self.container.schedule(0, Timer(self.run))


__all__ = ["EndOfBurst", "LoopCalls", "Timer"]
