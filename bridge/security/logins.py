"""Façade password checks: a bounded, fair queue in front of the PBKDF2 workers.

Theory of operation
-------------------

A PLAIN login whose answer needs PBKDF2 (about 0.1 s of CPU at the default cost)
is a :class:`PendingLogin`.  The event-loop thread decides everything about it;
the worker threads only hash:

1. **Admission** (:meth:`LoginQueue.add`, on the loop).  A listener holds at most
   ``max_pending`` logins that are waiting or being checked, and one peer address
   at most ``max_per_peer`` of them (IPv6 addresses count per /64, the block one
   host usually has).  Past either bound the login is refused at once, with a
   reason the client sees in its connection.close ("too many logins waiting from
   this address; try again later"), and nothing is hashed.
2. **Fair service** (:meth:`LoginQueue.take`).  Waiting logins sit in one FIFO per
   peer address; the addresses take turns (round-robin).  A login from an
   address with nothing else waiting is checked after at most one check per other
   address with logins waiting, however many those have queued.
3. **Dropping the abandoned.**  A client that closes its connection while its
   login waits has its check dropped (:meth:`LoginQueue.remove`; :meth:`take`
   also skips any whose client is gone), and one whose check is already running
   is ignored when it finishes: the answer goes nowhere.  Either way it counts as
   *abandoned*.
4. **Workers** (:class:`LoginChecks`).  The loop hands at most ``workers`` logins
   to a :class:`~concurrent.futures.ThreadPoolExecutor` of as many threads, so the
   executor's own (unbounded) queue stays empty and what runs next is decided
   on the loop at the last moment.  A finished check comes back through
   :class:`~bridge.runtime.LoopCalls`; the loop answers the client (if still
   there) and starts the next waiting login.

Refused and abandoned logins are counted (``refused`` by reason, ``abandoned``:
the ``amqp_bridge_logins_refused_total`` and ``amqp_bridge_logins_abandoned_total``
metrics) and logged as WARNING, at most one line per peer address and kind every
``WARN_INTERVAL`` seconds (:class:`WarnLimiter`), with the number of lines held
back since the last one.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from ..ops.logs import WarnLimiter

log = logging.getLogger(__name__)

PEER_FULL = "peer_full"
"""Refusal reason: the peer address already has its share of logins waiting."""
LISTENER_FULL = "listener_full"
"""Refusal reason: the listener's queue of logins is full."""
REASONS = (PEER_FULL, LISTENER_FULL)
REFUSAL_TEXT = {
    PEER_FULL: "too many logins waiting from this address; try again later",
    LISTENER_FULL: "too many logins waiting on this listener; try again later",
}
"""What a refused client reads in its connection.close (after "authentication failed: ")."""
WARN_INTERVAL = 10.0
"""Seconds between two WARNING lines about the same peer address and kind."""


def peer_address(peer: str) -> str:
    """The address part of a ``host:port`` peer, the unit of the fair share: the IP
    address, or for IPv6 its /64 network (``2001:db8::/64``)."""
    host = peer.rpartition(":")[0].strip("[]") or peer
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


@dataclass(eq=False)
class PendingLogin:
    """One login waiting for (or in) a PBKDF2 check."""

    peer: str
    """The peer address (see :func:`peer_address`): whose share it uses."""
    user: str
    password: str = field(repr=False)
    answer: Callable[[bool], None]
    """Called on the loop with the check's outcome (only while the client is there)."""
    gone: Callable[[], bool]
    """True once the client closed its connection (the answer would go nowhere)."""
    state: str = "waiting"
    """waiting → running → done, or abandoned (client gone), or refused."""


class LoginQueue:
    """The bounded, fair queue of a listener's pending logins (loop thread only).

    Counts a login from :meth:`add` until :meth:`finished` (or until it is dropped):
    waiting and running logins both use their address's share."""

    def __init__(self, max_pending: int, max_per_peer: int) -> None:
        self.max_pending = max_pending
        self.max_per_peer = max_per_peer
        self._waiting: OrderedDict[str, deque[PendingLogin]] = OrderedDict()
        """Peer address → its waiting logins; the order is the round-robin's."""
        self._per_peer: dict[str, int] = {}
        self.pending = 0
        """Logins waiting or running."""
        self.refused = dict.fromkeys(REASONS, 0)
        self.abandoned = 0

    def add(self, login: PendingLogin) -> str | None:
        """Queue ``login``; or return why it is refused (:data:`PEER_FULL`,
        :data:`LISTENER_FULL`), counted, the login left out."""
        if self._per_peer.get(login.peer, 0) >= self.max_per_peer:
            reason = PEER_FULL
        elif self.pending >= self.max_pending:
            reason = LISTENER_FULL
        else:
            self._per_peer[login.peer] = self._per_peer.get(login.peer, 0) + 1
            self.pending += 1
            self._waiting.setdefault(login.peer, deque()).append(login)
            return None
        login.state = "refused"
        self.refused[reason] += 1
        return reason

    def take(self, on_drop: Callable[[PendingLogin], None] | None = None) -> PendingLogin | None:
        """The next login to check (now running), round-robin over the addresses;
        logins whose client is gone are dropped on the way (counted, and given to
        ``on_drop``)."""
        while self._waiting:
            peer, logins = next(iter(self._waiting.items()))
            login = logins.popleft()
            if logins:
                self._waiting.move_to_end(peer)
            else:
                del self._waiting[peer]
            if login.gone():
                self._release(login, "abandoned")
                if on_drop is not None:
                    on_drop(login)
                continue
            login.state = "running"
            return login
        return None

    def remove(self, login: PendingLogin) -> bool:
        """The client of ``login`` went away: drop it if it waits (True); a running
        one is only marked (its outcome will be ignored)."""
        if login.state == "waiting":
            logins = self._waiting[login.peer]
            logins.remove(login)
            if not logins:
                del self._waiting[login.peer]
            self._release(login, "abandoned")
            return True
        if login.state == "running":
            login.state = "abandoned"
            self.abandoned += 1
        return False

    def finished(self, login: PendingLogin) -> bool:
        """A running check is over: frees its place; True if its client still waits
        for the answer (False: abandoned meanwhile, counted once)."""
        wanted = login.state == "running" and not login.gone()
        if login.state == "running" and not wanted:
            self.abandoned += 1
        login.state = "done" if wanted else "abandoned"
        self._free(login.peer)
        return wanted

    def waiting(self, peer: str | None = None) -> int:
        """Logins waiting (not running), of ``peer`` or in all."""
        if peer is not None:
            return len(self._waiting.get(peer, ()))
        return sum(len(q) for q in self._waiting.values())

    def _release(self, login: PendingLogin, state: str) -> None:
        login.state = state
        self.abandoned += 1
        self._free(login.peer)

    def _free(self, peer: str) -> None:
        self.pending -= 1
        left = self._per_peer[peer] - 1
        if left:
            self._per_peer[peer] = left
        else:
            del self._per_peer[peer]


class LoginChecks:
    """A listener's PBKDF2 login checks: :class:`LoginQueue` in front of ``workers``
    threads running ``verify(user, password)``; everything but the hash on the loop.

    ``call_soon`` brings a finished check back to the loop thread
    (:meth:`bridge.runtime.LoopCalls.call_soon`); made on first use by ``make_call_soon``.
    """

    def __init__(self, listener: str, verify: Callable[[str, str], bool], *,
                 max_pending: int, max_per_peer: int, workers: int,
                 make_call_soon: Callable[[], Callable[[Callable[[], None]], None]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.listener = listener
        self.verify = verify
        self.queue = LoginQueue(max_pending, max_per_peer)
        self.workers = workers
        self.running = 0
        self._make_call_soon = make_call_soon
        self._call_soon: Callable[[Callable[[], None]], None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._warnings = WarnLimiter(WARN_INTERVAL, clock=clock)
        self.closed = False

    @property
    def refused(self) -> dict[str, int]:
        """Logins refused at once, by reason (:data:`REASONS`)."""
        return self.queue.refused

    @property
    def abandoned(self) -> int:
        """Logins whose client went away before its answer."""
        return self.queue.abandoned

    def submit(self, peer: str, user: str, password: str, answer: Callable[[bool], None],
               gone: Callable[[], bool]) -> tuple[PendingLogin, str | None]:
        """Queue a check (on the loop); returns it, and the refusal text if it was refused
        at once (the caller refuses the login with it)."""
        login = PendingLogin(peer_address(peer), user, password, answer, gone)
        reason = self.queue.add(login)
        if reason is not None:
            self._warn(login, "login_refused_busy",
                       f"login refused at once: {REFUSAL_TEXT[reason].partition(';')[0]}",
                       reason=reason)
            return login, REFUSAL_TEXT[reason]
        log.debug("façade %s: %s: login check for %r queued (%d pending)", self.listener,
                  login.peer, user, self.queue.pending, extra={
                      "event": "login_queued", "listener": self.listener, "peer": login.peer,
                      "user": user})
        self._pump()
        return login, None

    def client_gone(self, login: PendingLogin) -> None:
        """The client of ``login`` closed its connection (on the loop)."""
        if login.state in ("waiting", "running"):
            dropped = self.queue.remove(login)
            self._warn_abandoned(login, dropped)

    def close(self) -> None:
        """Stop (on the loop): waiting checks are dropped, running ones not answered."""
        self.closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)

    # -- internals --------------------------------------------------------------------------

    def _pump(self) -> None:
        while not self.closed and self.running < self.workers:
            login = self.queue.take(lambda gone: self._warn_abandoned(gone, True))
            if login is None:
                return
            self.running += 1
            self._start(login)

    def _start(self, login: PendingLogin) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.workers,
                                                thread_name_prefix=f"login-{self.listener}")
            self._call_soon = self._make_call_soon()
        call_soon = self._call_soon
        assert call_soon is not None
        log.debug("façade %s: %s: login check for %r started", self.listener, login.peer,
                  login.user, extra={"event": "login_check_started", "listener": self.listener,
                                     "peer": login.peer, "user": login.user})
        future = self._executor.submit(self.verify, login.user, login.password)

        def done(future: Future[bool]) -> None:  # on the worker thread: back to the loop
            if not future.cancelled():
                call_soon(lambda: self._finished(login, future))

        future.add_done_callback(done)

    def _finished(self, login: PendingLogin, future: Future[bool]) -> None:
        """On the loop: answer the client if it is still there, start the next check."""
        self.running -= 1
        if self.closed:
            return
        try:
            error = future.exception()
            if error is not None:  # refused: a check that cannot run lets nobody in
                log.error("façade %s: %s: password check for %r failed: %r", self.listener,
                          login.peer, login.user, error, extra={
                              "event": "login_check_failed", "listener": self.listener,
                              "peer": login.peer})
            was_running = login.state == "running"
            if self.queue.finished(login):
                login.answer(error is None and future.result())
            elif was_running:  # gone without the façade telling us (client_gone not called)
                self._warn_abandoned(login, False)
        finally:
            self._pump()

    def _warn_abandoned(self, login: PendingLogin, dropped: bool) -> None:
        self._warn(login, "login_abandoned", "client went away before its login was answered"
                   + ("; check dropped" if dropped else " (check ran for nothing)"),
                   dropped=dropped)

    def _warn(self, login: PendingLogin, event: str, text: str, **fields: Any) -> None:
        held = self._warnings.allow((login.peer, event))
        if held is None:
            return
        more = f" ({held} more since the last such line)" if held else ""
        log.warning("façade %s: %s: %s%s", self.listener, login.peer, text, more,
                    extra={"event": event, "listener": self.listener, "peer": login.peer,
                           "user": login.user, "suppressed": held, **fields})
