"""More links than one AMQP 1.0 connection has sessions for: :class:`ConnectionPool`.

Theory of operation
-------------------
Every link has a session of its own (:mod:`bridge.amqp10.link`), and a broker bounds the
sessions of a connection (RabbitMQ 4: 64, ``session_max_per_connection``). A configured
1.0 connection is therefore a *pool*: its first connection, opened at start, and up to
``max_connections - 1`` extra connections to the same broker with the same settings
(URLs and failover, credentials, TLS, heartbeat, reconnect), opened on demand and named
``NAME#2``, ``NAME#3``… in logs and metrics.

A new link asks the pool for its connection once, at its first open
(:meth:`ConnectionPool.place`): the first member, in order, that holds fewer links
(:attr:`~bridge.amqp10.connection.Amqp10ConnectionHandler.links_held`: every link not
closed for good, attached, attaching or waiting to re-attach) than the peer's session
limit less :data:`~bridge.amqp10.connection.RESERVED_SESSIONS`; else a new member while
there are fewer than ``max_connections``; else the member holding the fewest, where the
link waits for a session as on a single connection (the ``session_limit`` WARNING, the
``amqp_bridge_amqp10_begins_waiting`` gauge).

A link that must go on one connection in particular never asks the pool: the consumer
of an exclusive queue, which only the connection that declared it may consume (RabbitMQ
4 refuses another connection's attach with ``amqp:resource-locked``). So such a queue is
*placed* before it is declared (:meth:`ConnectionPool.reserve`): its declare goes over a
request pair on the member chosen as for a link (:mod:`bridge.topology.rabbitmq4` opens
one per member that holds exclusive queues), and one session there is kept for the
queue's consumer from then on (counted as a link in the choice above) until the consumer
comes or the queue goes (:meth:`ConnectionPool.release`). Exclusive queues and their
consumers thus spread over the pool like other links. The limit is the one the first
connection's peer announced; until the first connection has opened once, links (and
reservations) wait in the pool (an extra connection is never opened blind). A link never
moves: a lost connection's links are re-attached on that connection by proton's
reconnect, as ever.

An extra connection that holds no link and no reserved session for :data:`IDLE_GRACE`
seconds is closed (not at once: consumers come and go); one that is lost is reconnected by proton like the first.
Every loss of an open member is reported to :meth:`ConnectionPool.when_lost` (a
topology-mode façade closes its clients: their links and what the broker held for them
may be on any member); an extra closed for idleness is not a loss. With
``max_connections: 1`` no pool is consulted at all: today's single connection.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ..runtime import Timer
from ..runtime.containment import Part
from .connection import RESERVED_SESSIONS, Amqp10ConnectionHandler

log = logging.getLogger("bridge.app")
"""Logged under the bridge's name, as the connections are."""

IDLE_GRACE = 10.0
"""Seconds an extra connection stays open with no link on it before it is closed."""
IDLE_CHECK = 1.0
"""Seconds between looks for idle extra connections (only while there are some)."""


class ConnectionPool:
    """The connections of one configured AMQP 1.0 connection (module docstring).

    ``connect(name)`` opens one connection with the configured settings and returns the
    proton connection, whose handler is its :class:`Amqp10ConnectionHandler`."""

    def __init__(self, container: Any, name: str, max_connections: int,
                 connect: Callable[[str], Any]) -> None:
        self.container = container
        self.name = name
        self.max_connections = max_connections
        self._connect = connect
        self.members: list[Amqp10ConnectionHandler] = []
        """The open (or opening, or reconnecting) connections' handlers, the first first."""
        self.opened = 0
        """Extra connections opened so far, in all."""
        self._unplaced: deque[Callable[[Amqp10ConnectionHandler], None]] = deque()
        """Links waiting for the first connection's first open to be placed."""
        self._when_lost: list[Callable[[str], None]] = []
        self._idle_since: dict[str, float] = {}
        """Extra connections with no link, by name → since when (monotonic)."""
        self._checking = False
        """The idle check's timer is scheduled."""
        self.reserved: dict[Amqp10ConnectionHandler, int] = {}
        """Sessions kept for links to come, by member (:meth:`reserve`)."""
        self.connection = self._add(name)
        """The first connection (proton's): the one routes and the topology are given."""

    @property
    def first(self) -> Amqp10ConnectionHandler:
        """The first connection's handler."""
        return self.members[0]

    @property
    def waiting(self) -> int:
        """Links not placed yet (the first connection never opened)."""
        return len(self._unplaced)

    def place(self, placed: Callable[[Amqp10ConnectionHandler], None]) -> None:
        """Call ``placed`` with the handler of the connection a new link is to use: at
        once, or when the first connection first opens (module docstring)."""
        if self.first.known_limit is None:
            self._unplaced.append(placed)
        else:
            placed(self._choose(self.first.known_limit))

    def reserve(self, placed: Callable[[Amqp10ConnectionHandler], None]) -> None:
        """As :meth:`place`, and keep a session of the chosen connection for a link that
        is to go there (an exclusive queue's consumer) until :meth:`release`."""
        def chosen(member: Amqp10ConnectionHandler) -> None:
            self.reserved[member] = self.reserved.get(member, 0) + 1
            placed(member)

        self.place(chosen)

    def release(self, member: Amqp10ConnectionHandler) -> None:
        """Give back a session :meth:`reserve` kept on ``member`` (its link came, or
        will not)."""
        left = self.reserved.get(member, 0) - 1
        if left > 0:
            self.reserved[member] = left
        else:
            self.reserved.pop(member, None)

    def when_lost(self, fn: Callable[[str], None]) -> None:
        """Call ``fn(member name)`` each time an open member drops (not when the pool
        closes an idle one)."""
        self._when_lost.append(fn)

    def close(self) -> None:
        """Close every member (the bridge stops)."""
        for member in list(self.members):
            member.connection.close()
        del self.members[1:]

    # -- internals -----------------------------------------------------------------------

    def _choose(self, limit: int) -> Amqp10ConnectionHandler:
        def room(member: Amqp10ConnectionHandler) -> int:
            return (member.known_limit or limit) - RESERVED_SESSIONS - member.links_held \
                - self.reserved.get(member, 0)

        for member in self.members:
            if room(member) > 0:
                return member
        if len(self.members) < self.max_connections:
            return self._add(self._free_name()).handler  # type: ignore[no-any-return]
        return max(self.members, key=room)

    def _free_name(self) -> str:
        taken = {member.name for member in self.members}
        return next(f"{self.name}#{n}" for n in range(2, len(self.members) + 2)
                    if f"{self.name}#{n}" not in taken)

    def _add(self, name: str) -> Any:
        """Open a member named ``name`` (it starts connecting as the loop goes on)."""
        connection = self._connect(name)
        handler: Amqp10ConnectionHandler = connection.handler
        handler.connection = connection
        if self.max_connections > 1:
            handler.pool = self
        handler.when_open(lambda: self._opened(handler))
        handler.when_lost(lambda: self._lost(handler))
        self.members.append(handler)
        if self.members[0] is not handler:
            self.opened += 1
            log.info("amqp1.0 %s: opening connection %s: %d links on %d connection(s) "
                     "fill their sessions", self.name, name,
                     sum(member.links_held for member in self.members[:-1]),
                     len(self.members) - 1,
                     extra={"event": "pool_grown", "connection": self.name, "member": name,
                            "connections": len(self.members)})
            self._check_later()
        return connection

    def _opened(self, handler: Amqp10ConnectionHandler) -> None:
        if handler is self.first and self._unplaced and handler.known_limit is not None:
            while self._unplaced:
                self._unplaced.popleft()(self._choose(handler.known_limit))

    def _lost(self, handler: Amqp10ConnectionHandler) -> None:
        if handler in self.members:
            for fn in list(self._when_lost):
                fn(handler.name)

    def _check_later(self) -> None:
        if not self._checking and self.container is not None:
            self._checking = True
            self.container.schedule(IDLE_CHECK, Timer(self._check_idle))

    def _check_idle(self) -> None:
        """Close the extra connections that held no link for :data:`IDLE_GRACE`."""
        self._checking = False
        now = time.monotonic()
        for member in self.members[1:]:
            if member.links_held or member in self.reserved:
                self._idle_since.pop(member.name, None)
            elif now - self._idle_since.setdefault(member.name, now) >= IDLE_GRACE:
                self._retire(member)
        if len(self.members) > 1:
            self._check_later()

    def _retire(self, member: Amqp10ConnectionHandler) -> None:
        self.members.remove(member)
        self.reserved.pop(member, None)
        self._idle_since.pop(member.name, None)
        log.info("amqp1.0 %s: closing connection %s: no link on it for %g s", self.name,
                 member.name, IDLE_GRACE,
                 extra={"event": "pool_shrunk", "connection": self.name,
                        "member": member.name, "connections": len(self.members)})
        member.connection.close()

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in the idle check: the check is scheduled again."""
        def recover(reason: str) -> None:
            self._checking = False
            self._check_later()

        return Part("amqp10_pool", f"1.0 connection pool {self.name}",
                    {"connection": self.name}, "idle check rescheduled", recover)


__all__ = ["IDLE_GRACE", "ConnectionPool"]
