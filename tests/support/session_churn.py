"""1.0 links given up while RabbitMQ ends their sessions, on the bridge's own loop:
``python -m tests.support.session_churn URL PREFIX`` prints a JSON summary.

Each round opens two :class:`~bridge.amqp10.link.Amqp10Link` receivers (each on a
session of its own, as the bridge opens them) to queues that do not exist (``PREFIX``
and a number: RabbitMQ 3.10 and 4.0 both answer with a begin and an end carrying
``amqp:not-found``) on one connection of :func:`bridge.runtime.reactor.container`:

* one is given up at once, before the peer has answered (what a façade client that
  subscribes and leaves at once does);
* the other (:class:`GivesUpInTheWindow`) is given up when the peer's begin is
  dispatched, if proton has already read the peer's end with it (both in one read), so
  the end is read but not yet dispatched — as when a façade client's disconnect is
  dispatched in the same loop round as RabbitMQ's answer. The connection goes through a
  :class:`~tests.support.relay.Relay` that forwards what the broker sends within
  ``COALESCE`` of each other in one write, so that the begin and the end are mostly read
  together; a link whose begin and end come in two reads all the same is lost the usual
  way and given up then. Rounds go on until ``WINDOW`` links were given up in the window
  (or ``MAX_ROUNDS`` rounds were run).

Every ``Session.free`` is counted (whether the session was freed before is kept in its
record, shared by every wrapper of it), so the summary says how many sessions were
freed, and how many frees were of a session already freed (a double free: proton checks none outside debug builds, and crashes later in its
C code — the process then dies of SIGSEGV, the stacks written by :mod:`faulthandler`).
It runs in a subprocess of the test for that reason.
"""

from __future__ import annotations

import faulthandler
import json
import sys
import time
from collections import Counter
from typing import Any

from proton import Endpoint, Handler, Session

from bridge.amqp10.connection import Amqp10ConnectionHandler
from bridge.amqp10.link import Amqp10Link
from bridge.runtime import Timer
from bridge.runtime.reactor import container
from tests.support.link_owners import NotingOwner
from tests.support.relay import Relay

WINDOW = 100
"""Links to give up between the peer's end being read and being dispatched."""
MAX_ROUNDS = 2000
COALESCE = 0.02
"""Seconds of the broker's silence after which the relay forwards what it gathered."""
SETTLE = 60.0
"""Seconds the loop waits at most after the last round for every session to be freed
(RabbitMQ's last ends to arrive)."""

_free = Session.free
_begin = Session.open
FREES: Counter[str] = Counter()
"""``once``: sessions freed (a first free); ``again``: frees of a session already freed;
``begun``: sessions begun (a link given up before the channels let its session begin
never begins one)."""


def _counted_begin(session: Session) -> None:
    FREES["begun"] += 1
    _begin(session)


def _counted_free(session: Session) -> None:
    """``Session.free``, counted on the session's record (no wrapper is kept: holding one
    would keep the C object alive, and change what a double free does)."""
    FREES["again" if getattr(session, "freed", False) else "once"] += 1
    session.freed = True
    _free(session)


class _Owner(NotingOwner):
    """Gives its link up for good when it is lost (no re-attaching)."""

    def on_link_down(self, link: Amqp10Link) -> None:
        link.forget()


class GivesUpInTheWindow(Amqp10Link):
    """Given up when the peer's begin is dispatched if its end was read with it."""

    given_up_in_window = 0

    def on_session_remote_open(self, event: Any) -> None:
        if event.session == self.session and event.session.state & Endpoint.REMOTE_CLOSED:
            GivesUpInTheWindow.given_up_in_window += 1
            self.forget()


class Churn(Handler):  # type: ignore[misc]
    """Opens the rounds one after another, then stops the container."""

    def __init__(self, url: str, prefix: str) -> None:
        self.url, self.prefix = url, prefix
        self.connection: Any = None
        self.rounds = 0

    def on_reactor_init(self, event: Any) -> None:
        self.container = event.container
        self.connection = self.container.connect(self.url, handler=Amqp10ConnectionHandler("cloud"))
        self.container.schedule(0, Timer(self.round))

    def round(self) -> None:
        if GivesUpInTheWindow.given_up_in_window >= WINDOW or self.rounds >= MAX_ROUNDS:
            self.settled_by = time.monotonic() + SETTLE
            self.settle()
            return
        self.rounds += 1
        at_once = Amqp10Link(self.container, self.connection, f"{self.prefix}.{self.rounds}a",
                             sender=False, owner=_Owner(), name=f"at-once-{self.rounds}")
        at_once.forget()
        GivesUpInTheWindow(self.container, self.connection,
                           f"{self.prefix}.{self.rounds}b", sender=False, owner=_Owner(),
                           name=f"window-{self.rounds}")
        self.container.schedule(0.005, Timer(self.round))

    def settle(self) -> None:
        if FREES["once"] < FREES["begun"] and time.monotonic() < self.settled_by:
            self.container.schedule(0.1, Timer(self.settle))
        else:
            self.stop()

    def stop(self) -> None:
        print(json.dumps({"rounds": self.rounds, "sessions": FREES["begun"],
                          "given_up_in_window": GivesUpInTheWindow.given_up_in_window,
                          "freed": FREES["once"], "freed_again": FREES["again"]}), flush=True)
        self.connection.close()
        self.container.stop()


def main() -> None:
    faulthandler.enable(all_threads=True)
    Session.free = _counted_free  # type: ignore[method-assign]
    Session.open = _counted_begin  # type: ignore[method-assign]
    url, prefix = sys.argv[1:3]
    relay = Relay(("127.0.0.1", int(url.rsplit(":", 1)[1])), coalesce=COALESCE)
    container(Churn(relay.url(url), prefix)).run()


if __name__ == "__main__":
    main()
