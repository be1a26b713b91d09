"""What the loop waits on: :class:`EpollSelector`, proton's ``IO.Selector`` on ``epoll``.

Theory of operation
-------------------
proton's IO handler keeps every selectable (each AMQP 1.0 socket, each hosted legacy
socket, each listener, its timer) in a selector and asks it, once per loop round, which
are readable, writable, or past their deadline. proton's own selector does that with
``select()``: the sets of descriptors are rebuilt for the kernel on every round, every
change of one selectable walks all of them for the earliest deadline, and after each
round all of them again for those past theirs. That costs time in proportion to the
connections a process holds, on every event of every one of them; and ``select()``
cannot watch a descriptor numbered 1024 or more, so a process could serve no more than
about a thousand connections whatever its limits.

:class:`EpollSelector` answers the same questions the same way, in time that does not grow
with the connections held:

* **Readiness** is the kernel's: a selectable that wants to read or write is registered
  with an ``epoll`` instance for just that (``EPOLLIN``, ``EPOLLOUT``), changed only when
  its wish changes, and taken out when it wants neither (``select()`` would not report
  it then either, hang-ups included). ``epoll_wait`` returns only the ready ones, and an
  error or hang-up counts as readable and writable for what the selectable asked, as
  ``select()`` reports it. Level-triggered, as ``select()``: what is left unread is
  reported again.
* **Deadlines** are kept in a heap, one current entry per selectable. A deadline made
  earlier is pushed (the caller tells the selector, as it must tell proton's); one made
  later or dropped is seen when its old entry comes to the top, and the entry is then
  moved on or dropped — callers may change a deadline to later without telling
  (:func:`~bridge.runtime.sockets.set_interest`), as proton's selector re-reads all of
  them after each round. A selectable past its deadline is reported in every round until
  its deadline moves, as proton's does.
* A selectable is known by the descriptor it had when registered: one closed before it
  is removed (the kernel forgets it) never takes the registration of a new socket that
  gets the same number.

:func:`selector` gives the ``epoll`` one where the platform has ``epoll`` (Linux) and
proton's own elsewhere; :data:`SERVES_ANY_DESCRIPTOR` tells the listeners whether
descriptors past 1023 can be served, and :func:`raise_descriptor_limit` lifts the
process's soft ``ulimit -n`` to its hard one at start where they can.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import select
import time
from typing import Any

SERVES_ANY_DESCRIPTOR = hasattr(select, "epoll")
"""The loop can watch any descriptor number (``epoll``); else only those below 1024."""

_IN = getattr(select, "EPOLLIN", 0)
_OUT = getattr(select, "EPOLLOUT", 0)
_READABLE = _IN | getattr(select, "EPOLLERR", 0) | getattr(select, "EPOLLHUP", 0) \
    | getattr(select, "EPOLLRDHUP", 0)
"""What ``epoll`` reports that ``select()`` shows as readable."""
_WRITABLE = _OUT | getattr(select, "EPOLLERR", 0) | getattr(select, "EPOLLHUP", 0)
"""What ``epoll`` reports that ``select()`` shows as writable."""


class EpollSelector:
    """proton's ``IO.Selector`` interface (``add``, ``update``, ``remove``, ``select``,
    ``selectables``) on ``epoll`` and a deadline heap (module docstring)."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._selectables: set[Any] = set()
        self._registered: dict[Any, tuple[int, int]] = {}
        """Selectables registered with epoll → (descriptor, event mask)."""
        self._by_fd: dict[int, Any] = {}
        """Registered descriptors → their selectable."""
        self._heap: list[tuple[float, int, Any]] = []
        """(deadline, order, selectable): a selectable's entry is current while its
        deadline equals :attr:`_queued`'s for it; others are left to be dropped."""
        self._queued: dict[Any, float] = {}
        """Selectables → the deadline of their current heap entry."""
        self._order = itertools.count()

    @property
    def selectables(self) -> int:
        """How many selectables it holds."""
        return len(self._selectables)

    def add(self, selectable: Any) -> None:
        """Watch ``selectable`` for what it asks (its reading, writing and deadline)."""
        self._selectables.add(selectable)
        self.update(selectable)

    def update(self, selectable: Any) -> None:
        """``selectable``'s wishes changed: watch it for what it asks now."""
        if selectable not in self._selectables:
            return
        mask = (_IN if selectable.reading else 0) | (_OUT if selectable.writing else 0)
        registered = self._registered.get(selectable)
        if mask:
            fd = selectable.fileno()
            if fd < 0:  # (no socket, or closed: nothing the kernel could watch)
                self._unregister(selectable)
            elif registered is None or registered[0] != fd:
                self._unregister(selectable)
                self._register(selectable, fd, mask)
            elif registered[1] != mask:
                self._epoll.modify(fd, mask)
                self._registered[selectable] = (fd, mask)
        elif registered is not None:
            self._unregister(selectable)
        deadline = selectable._deadline
        if deadline:
            queued = self._queued.get(selectable)
            if queued is None or deadline < queued:
                self._push(selectable, deadline)

    def remove(self, selectable: Any) -> None:
        """Forget ``selectable`` (its heap entry is dropped when it comes to the top)."""
        self._selectables.discard(selectable)
        self._unregister(selectable)
        self._queued.pop(selectable, None)

    def select(self, timeout: float | None) -> tuple[list[Any], list[Any], list[Any]]:
        """Wait at most ``timeout`` seconds (None: no bound but the deadlines) for
        readiness or the earliest deadline; the readable, writable and expired
        selectables, as proton's selector returns them."""
        earliest = self._earliest()
        if earliest is not None:
            wait = max(0.0, earliest - time.time())
            timeout = wait if timeout is None else max(0.0, min(timeout, wait))
        try:
            ready = self._epoll.poll(-1 if timeout is None else timeout)
        except InterruptedError:
            ready = []
        readable: list[Any] = []
        writable: list[Any] = []
        by_fd = self._by_fd
        registered = self._registered
        for fd, events in ready:
            selectable = by_fd.get(fd)
            if selectable is None:
                continue
            mask = registered[selectable][1]
            if mask & _IN and events & _READABLE:
                readable.append(selectable)
            if mask & _OUT and events & _WRITABLE:
                writable.append(selectable)
        return readable, writable, self._expired(time.time())

    def close(self) -> None:
        """Release the epoll instance."""
        self._epoll.close()

    # -- internals -----------------------------------------------------------------------

    def _register(self, selectable: Any, fd: int, mask: int) -> None:
        stale = self._by_fd.pop(fd, None)
        if stale is not None:  # closed without a word; the number is someone else's now
            del self._registered[stale]
            self._kernel_forget(fd)
        try:
            self._epoll.register(fd, mask)
        except FileExistsError:  # (the kernel still has the old file: same socket)
            self._epoll.modify(fd, mask)
        self._registered[selectable] = (fd, mask)
        self._by_fd[fd] = selectable

    def _unregister(self, selectable: Any) -> None:
        registered = self._registered.pop(selectable, None)
        if registered is None:
            return
        fd = registered[0]
        if self._by_fd.get(fd) is selectable:
            del self._by_fd[fd]
            self._kernel_forget(fd)

    def _kernel_forget(self, fd: int) -> None:
        with contextlib.suppress(OSError):  # closed already: the kernel forgot it
            self._epoll.unregister(fd)

    def _push(self, selectable: Any, deadline: float) -> None:
        self._queued[selectable] = deadline
        heapq.heappush(self._heap, (deadline, next(self._order), selectable))

    def _current_top(self) -> tuple[float, Any] | None:
        """The heap's top once stale entries are dropped and moved deadlines moved on."""
        heap = self._heap
        queued = self._queued
        while heap:
            deadline, _, selectable = heap[0]
            if queued.get(selectable) != deadline:
                heapq.heappop(heap)  # superseded by an earlier entry, or removed
                continue
            current = selectable._deadline
            if current == deadline:
                return deadline, selectable
            heapq.heappop(heap)
            if current:  # moved later without a word (earlier ones are pushed)
                self._push(selectable, current)
            else:
                del queued[selectable]
        return None

    def _earliest(self) -> float | None:
        top = self._current_top()
        return None if top is None else top[0]

    def _expired(self, now: float) -> list[Any]:
        expired: list[Any] = []
        while True:
            top = self._current_top()
            if top is None or not now > top[0]:
                break
            heapq.heappop(self._heap)
            del self._queued[top[1]]
            expired.append(top[1])
        for selectable in expired:  # reported again next round unless its deadline moves
            self._push(selectable, selectable._deadline)
        return expired


def raise_descriptor_limit() -> int:
    """Raise the process's soft limit of open descriptors to its hard limit where the loop
    can watch them all (``ulimit -n`` is often 1024 by default, which would cap the
    façades' clients below what the loop serves); returns the soft limit in force."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if SERVES_ANY_DESCRIPTOR and soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass  # (a container's limit below what it reports: keep the soft one)
    return int(soft)


def selector() -> Any:
    """The loop's selector: :class:`EpollSelector` where the platform has ``epoll``,
    else proton's own (``select()``)."""
    if SERVES_ANY_DESCRIPTOR:
        return EpollSelector()
    from proton._io import IO
    return IO.Selector()


__all__ = ["SERVES_ANY_DESCRIPTOR", "EpollSelector", "raise_descriptor_limit", "selector"]
