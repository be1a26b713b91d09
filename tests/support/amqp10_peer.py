"""An AMQP 1.0 peer in the test process that a route sends to: it decides each message's
outcome (accepted, released, modified, rejected) and how much credit it gives.

Theory of operation
-------------------
:class:`OutcomePeer` is a proton :class:`~proton.handlers.MessagingHandler` that listens
on a loopback port (``Container.listen``) and runs its container on a thread of its own.
The bridge connects to it as a 1.0 connection (``amqp://127.0.0.1:PORT``, anonymous) and
attaches its route's sender; the peer accepts any receiving link and records every
message with the outcome ``decide(message, times_seen_before)`` chose for it.

Credit: the peer keeps at most ``credit`` messages granted and unsettled. While
:meth:`OutcomePeer.hold` is on it settles nothing (deliveries wait, and no credit is
given back); :meth:`OutcomePeer.let_go` settles what waits, each by ``decide``, and opens
the credit again. The test thread talks to the peer's thread only through flags the
peer's timer reads every 50 ms, and reads what it recorded under a lock.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from proton import Condition, Delivery, Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from tests.support.bridge import free_port

ACCEPTED, RELEASED, MODIFIED, REJECTED = "accepted", "released", "modified", "rejected"


@dataclass(frozen=True, eq=False)
class Seen:
    """One message the peer received, and the outcome it gave (None while held)."""

    message: Message
    raw: bytes
    """The message as it came (``AmqpMessage.decode`` tells an absent field from a default)."""
    outcome: str | None


def accept_all(message: Message, seen_before: int) -> str:
    return ACCEPTED


class OutcomePeer(MessagingHandler):  # type: ignore[misc]
    """A listening 1.0 receiver with outcomes chosen by the test (module docstring)."""

    def __init__(self, decide: Callable[[Message, int], str] = accept_all, *,
                 credit: int = 100) -> None:
        super().__init__(prefetch=0, auto_accept=False)
        self.decide = decide
        self.credit = credit
        self.port = free_port()
        self.url = f"amqp://127.0.0.1:{self.port}"
        self.lock = threading.Lock()
        self._seen: list[Seen] = []
        self._times: Counter[Any] = Counter()
        self._held: list[tuple[Any, Seen]] = []
        self._holding = False
        self._let_go = False
        self.links: list[Any] = []
        self.listening = threading.Event()
        self.container = Container(self)
        self.thread = threading.Thread(target=self.container.run, daemon=True)

    # -- the test's side -----------------------------------------------------------------

    def __enter__(self) -> OutcomePeer:
        self.thread.start()
        assert self.listening.wait(10), "the 1.0 peer did not start listening"
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop = True
        self.thread.join(10)

    def hold(self) -> None:
        """Settle nothing from now on (and give no credit back) until :meth:`let_go`."""
        self._holding = True

    def let_go(self) -> None:
        """Settle what waits and take messages again."""
        self._holding = False
        self._let_go = True

    @property
    def seen(self) -> list[Seen]:
        with self.lock:
            return list(self._seen)

    def ids(self, outcome: str | None = ACCEPTED) -> list[Any]:
        """Message-ids of what got ``outcome``, in arrival order."""
        return [s.message.id for s in self.seen if s.outcome == outcome]

    @property
    def held(self) -> int:
        with self.lock:
            return len(self._held)

    # -- the peer's thread ---------------------------------------------------------------

    _stop = False

    def on_start(self, event: Any) -> None:
        self.acceptor = event.container.listen(f"127.0.0.1:{self.port}")
        self.listening.set()
        event.container.schedule(0.05, self)

    def on_timer_task(self, event: Any) -> None:
        if self._stop:
            self.acceptor.close()
            for link in self.links:
                link.connection.close()
            event.container.stop()
            return
        if self._let_go:
            self._let_go = False
            with self.lock:
                held, self._held = self._held, []
            for delivery, seen in held:
                self._settle(delivery, seen)
            for link in self.links:
                self._top_up(link)
        event.container.schedule(0.05, self)

    def on_link_opening(self, event: Any) -> None:
        link = event.link
        if link.is_receiver:
            link.source.copy(link.remote_source)
            link.target.copy(link.remote_target)
            self.links.append(link)
            link.open()
            link.flow(self.credit)

    def on_delivery(self, event: Any) -> None:
        delivery, link = event.delivery, event.link
        if not link.is_receiver or not delivery.readable or delivery.partial:
            return
        raw = link.recv(delivery.pending)
        link.advance()
        message = Message()
        message.decode(raw)
        seen = Seen(message, raw, None)
        with self.lock:
            self._seen.append(seen)
            if self._holding:
                self._held.append((delivery, seen))
                return
        self._settle(delivery, seen)
        self._top_up(link)

    def _top_up(self, link: Any) -> None:
        with self.lock:
            waiting = len(self._held)
        want = self.credit - link.credit - waiting
        if want > 0 and not self._holding:
            link.flow(want)

    def _settle(self, delivery: Delivery, seen: Seen) -> None:
        message = seen.message
        with self.lock:
            times = self._times[message.id]
            self._times[message.id] += 1
        outcome = self.decide(message, times)
        if outcome == ACCEPTED:
            delivery.update(Delivery.ACCEPTED)
        elif outcome == RELEASED:
            delivery.update(Delivery.RELEASED)
        elif outcome == MODIFIED:
            delivery.local.failed = True
            delivery.update(Delivery.MODIFIED)
        else:
            delivery.local.condition = Condition("amqp:precondition-failed",
                                                 "the test peer refuses it")
            delivery.update(Delivery.REJECTED)
        delivery.settle()
        with self.lock:
            self._seen[self._seen.index(seen)] = Seen(message, seen.raw, outcome)
