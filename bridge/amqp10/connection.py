"""One AMQP 1.0 connection's lifecycle: state logging, permanent faults, reconnect schedule.

Theory of operation
-------------------
Proton connects, reconnects and fails over by itself (``container.connect(urls=...,
reconnect=...)``). :class:`Amqp10ConnectionHandler` is the connection's handler: it
logs every attempt, open, close and loss; it turns a refused certificate or login
into a permanent fault once every URL refused it in a row (the connection is closed,
which ends proton's reconnect loop, and ``on_fatal`` stops the bridge); and when the
transport drops it tells every link registered with :meth:`~Amqp10ConnectionHandler.watch`
(:class:`LinkWatcher`), so their owners can forget the deliveries that went with it.
:class:`ReconnectDelays` is the schedule proton draws its waits from.

The handler is also the one place that knows which sessions this side has ended and
the peer not yet (:meth:`~Amqp10ConnectionHandler.end_session`). Proton gives a new
session the lowest free channel as soon as our ``end`` is sent, and RabbitMQ 4 drops a
``begin`` on a channel whose session it has not finished ending (its reader hands the
frame to the dying session when both arrive in one read): the new session's begin and
its link's attach are never answered. So every session begin on the connection (each
:class:`~bridge.amqp10.link.Amqp10Link`, the topology request/response pairs and
probes) goes through :meth:`~Amqp10ConnectionHandler.when_channels_free`, which holds
it back while such a session remains; the sessions' handlers report the peer's end
(:meth:`~Amqp10ConnectionHandler.session_ended`). When the peer ended a session first,
our end answers it and frees the channel at once on our side: begins then wait
:data:`PEER_END_HOLD`, time for the peer's old session to go. Begins also wait for the
peer's open and for a free channel within its ``channel-max``, counting the sessions
still ending (RabbitMQ 4 allows 64 sessions per connection and closes the connection at
a begin on channel 64; proton
begins sessions before the open is read, on its own channel-max, and on a new transport
it begins every session still open again at once: the links free theirs when the
transport drops (:meth:`bridge.amqp10.link.Amqp10Link.on_disconnected`), so that a
failover to a peer allowing fewer begins none beyond it). Links beyond the peer's limit
wait, with a WARNING and the ``amqp_bridge_amqp10_begins_waiting`` gauge — once the
connection's pool (:mod:`bridge.amqp10.pool`, :attr:`~Amqp10ConnectionHandler.pool`) has
no other connection to place them on. A lost transport clears the set (the
next one numbers its channels afresh) and frees its sessions: proton would begin them
again on the next transport and send their end as soon as the peer's open is read, so
that the peer's answer to that begin names a channel proton has forgotten ("begin reply
to unknown channel": the new connection fails). A session whose end the peer leaves
unanswered for :data:`ENDING_LIMIT` stops holding begins back (a WARNING): one broken
end must not stop every link on the connection for good. Opens are rare: nothing here
runs per message.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from proton import Endpoint, Handler

from ..config import Connection, Reconnect
from ..runtime import Timer, host_port
from ..runtime.containment import Part
from ..security.tls import (
    PermanentFault,
    classify_proton_error,
    describe_verify_failure,
    verify_failure,
)
from .outcomes import condition_text

log = logging.getLogger("bridge.app")
"""Logged under the bridge's name, as before the move (operators filter on it)."""

RESERVED_SESSIONS = 1
"""Sessions under the peer's limit that only :meth:`Amqp10ConnectionHandler.when_channels_free`
calls with ``reserved=True`` may take (the topology's request/response pairs and probes:
the declares every façade client needs must not wait for consumers to leave)."""
PEER_END_HOLD = 0.1
"""Seconds new sessions wait after our end answered a session the peer ended: the peer
says nothing when its old session is gone, and RabbitMQ 4 drops a begin it reads on that
channel before then (proton reuses the channel as soon as our end is written)."""
ENDING_LIMIT = 5.0
"""Seconds a session we ended may wait for the peer's end before its channel is taken as
free again (new sessions stop waiting for it). Brokers answer in milliseconds; every new
link on the connection waits meanwhile (a RabbitMQ 3.10 left one end unanswered in a
loaded run, and a route's publishes were refused at its 15 s attach timeout); a begin
the broker then drops is re-tried after ``ATTACH_TIMEOUT``."""

HELD_BY_OPEN, HELD_BY_END, HELD_BY_HOLD, HELD_BY_LIMIT = (
    "the peer's open", "a session end", "the hold after a peer's end",
    "the peer's session limit")
"""What holds session begins back (:meth:`Amqp10ConnectionHandler._held_by`); each has
its own wake-up (:meth:`Amqp10ConnectionHandler._wait`)."""


class LinkWatcher(Protocol):
    """What a link on the connection implements to hear of the transport's loss."""

    closing: bool
    """Closed for good: it will never attach again (it holds no place on the connection)."""

    @property
    def open(self) -> bool:
        """Attached or attaching, and not closed for good (the links gauge)."""
        ...

    def on_disconnected(self) -> None:
        """The connection's transport is gone; proton reconnects."""
        ...


class LinkPool(Protocol):
    """Where a new link goes among the connections of one configured connection
    (:class:`bridge.amqp10.pool.ConnectionPool`)."""

    def place(self, placed: Callable[[Amqp10ConnectionHandler], None]) -> None:
        """Call ``placed`` with the handler of the connection a new link is to use, now or
        once that is known (the first connection's session limit)."""
        ...

    def reserve(self, placed: Callable[[Amqp10ConnectionHandler], None]) -> None:
        """As :meth:`place`, and keep a session there for a link to come (an exclusive
        queue's consumer, which must go on the connection that declared the queue)."""
        ...

    def release(self, member: Amqp10ConnectionHandler) -> None:
        """Give back a session :meth:`reserve` kept on ``member``."""
        ...


class Amqp10ConnectionHandler(Handler):  # type: ignore[misc]
    """Logs state changes of one AMQP 1.0 connection; tells its links when the transport drops.

    Unlike proton's MessagingHandler it never closes the connection when the peer
    closes it with an error, so proton's reconnect keeps trying, as a bridge must.
    """

    def __init__(self, name: str, settings: Connection | None = None,
                 on_fatal: Callable[[str], None] | None = None) -> None:
        self.name = name
        self.settings = settings
        self.on_fatal = on_fatal
        """Called with the message once every URL failed permanently in a row."""
        self.up = False
        self.up_since = 0.0
        """When the connection last opened (monotonic; 0: never)."""
        self.attempts = 0
        """Transports bound so far (connection attempts, the first one included)."""
        self.unanswered = {"attach": 0, "end": 0}
        """Link attaches the peer left unanswered past ``ATTACH_TIMEOUT``
        (:mod:`bridge.amqp10.link`) and session ends past :data:`ENDING_LIMIT`."""
        self.peer = ""
        """host:port of the broker connected (or being connected) to."""
        self.watchers: list[LinkWatcher] = []
        """Links on this connection (:class:`bridge.amqp10.link.Amqp10Link`), registered
        with :meth:`watch`."""
        self._when_lost: list[Callable[[], None]] = []
        """Called when the open connection drops (:meth:`when_lost`)."""
        self._when_open: list[Callable[[], None]] = []
        """Called when the connection opens (:meth:`when_open`)."""
        self.pool: LinkPool | None = None
        """The pool of connections this one belongs to (None: links stay on it)."""
        self.known_limit: int | None = None
        """Sessions the peer allowed at its last open (None: never opened yet)."""
        self.permanent_faults = 0
        self.fault: PermanentFault | None = None
        self.ending: list[tuple[Any, float]] = []
        """Sessions we ended on the current transport whose end the peer has not sent yet,
        with when we ended them (monotonic)."""
        self._quiet_until = 0.0
        """Monotonic time before which no session begins: :data:`PEER_END_HOLD` after our
        end answered one the peer sent first."""
        self._begins: deque[tuple[float, Callable[[], None]]] = deque()
        """Session begins held back, in order, with when each was asked for (monotonic;
        :meth:`when_channels_free`)."""
        self._reserved_begins: deque[tuple[float, Callable[[], None]]] = deque()
        """Those that may take a reserved session, in order (run before the others)."""
        self._wake_at: float | None = None
        """When the timer that runs the held begins again is due (monotonic), if one is."""
        self._full = False
        """The peer's session limit held begins back (logged once until a begin runs)."""
        self.container: Any = None
        """The container (timers), known once the connection opened (proton's bound
        event carries none)."""
        self.connection: Any = None
        """The proton connection, known once a transport is bound."""

    def when_channels_free(self, begin: Callable[[], None], *, reserved: bool = False) -> None:
        """Run ``begin`` (which begins a session) now, or as soon as nothing holds session
        begins back (see the module's docstring); waiting begins run in order. Only
        ``reserved`` begins may take the last :data:`RESERVED_SESSIONS` of the peer's limit."""
        queue = self._reserved_begins if reserved else self._begins
        queue.append((time.monotonic(), begin))
        self._run_begins()

    def end_session(self, session: Any) -> None:
        """End ``session`` (if not yet): its channel is busy until the peer's end comes.
        Ended while no transport is bound, it is freed at once (as at the loss, :meth:`_lost`)."""
        if not session.state & Endpoint.LOCAL_ACTIVE:
            return
        session.close()
        if session.state & Endpoint.REMOTE_CLOSED:
            # our end answers the peer's: the channel is free on our side at once, and a
            # begin read with this end before the peer's old session has gone would be
            # dropped (RabbitMQ 4): new sessions wait PEER_END_HOLD
            if session.connection.transport is not None:
                self._quiet_until = time.monotonic() + PEER_END_HOLD
        elif session.connection.transport is None:  # (between transports)
            free_session(session)
        else:
            self.ending.append((session, time.monotonic()))
        self._run_begins()

    def session_ended(self, session: Any) -> None:
        """The peer ended ``session`` (told by the session's handler): the begins waiting
        for its channel go ahead once no other session is ending."""
        self.ending = [entry for entry in self.ending if entry[0] != session]
        self._run_begins()

    def _run_begins(self) -> None:
        """Run the waiting begins, in order (the reserved ones first), while nothing holds
        them back; else arrange to be run again when what holds them back may be gone.
        The sessions are counted once, and again only at the limit (a begin may have opened
        nothing): a begin queued behind thousands costs no walk through them."""
        begun: int | None = None
        held: dict[str, float] = {}  # what holds begins back -> its oldest begin's ask
        waited_out = False
        for queue, kept_back in ((self._reserved_begins, 0), (self._begins, RESERVED_SESSIONS)):
            while queue:
                asked, begin = queue[0]
                wait = self._held_by(asked)
                if wait is not None:
                    held[wait] = min(asked, held.get(wait, asked))
                    break
                limit = self._session_limit() - kept_back
                if begun is None or begun >= limit:
                    begun = self._sessions_begun()
                    if begun >= limit:
                        held.setdefault(HELD_BY_LIMIT, asked)
                        break  # (none behind it may go either)
                if self.ending and not waited_out:
                    waited_out = True
                    log.warning("amqp1.0 %s: a session waited %g s for session ends that "
                                "kept coming; beginning it all the same", self.name,
                                ENDING_LIMIT, extra=self.log_fields("session_ends_waited_out"))
                self._full = False
                queue.popleft()
                begin()
                begun += 1
        for reason, asked in held.items():
            self._wait(reason, asked)

    def _held_by(self, asked: float) -> str | None:
        """What holds back a session begin asked for at ``asked`` now, other than the
        peer's session limit. Ends hold it back for :data:`ENDING_LIMIT` at most: ends
        sent one after another, each before the last is answered, would hold it for as
        long as they keep coming."""
        if not self.up:
            return HELD_BY_OPEN  # (its channel-max is not known yet)
        if self.ending and time.monotonic() < asked + ENDING_LIMIT:
            return HELD_BY_END
        if time.monotonic() < self._quiet_until:
            return HELD_BY_HOLD
        return None

    def _session_limit(self) -> int:
        """Sessions the peer allows on the connection at once (its channel-max + 1)."""
        transport = self.connection.transport if self.connection is not None else None
        return transport.channel_max + 1 if transport is not None else 0

    def _sessions_begun(self) -> int:
        """Our sessions begun and not ended yet (each holds a channel), and those we ended
        whose end the peer has not answered (within :data:`ENDING_LIMIT`): the peer counts
        them against its limit until it reads our end, and proton frees their channel
        only once it has written the end — after the begins of the same pass, so a begin
        made beside a burst of ends would find no channel ("unable to find an open
        available channel", a transport error that leaves the connection dead, open)."""
        count = len(self.ending)
        session = self.connection.session_head(Endpoint.LOCAL_ACTIVE)
        while session is not None:
            count += 1
            session = session.next(Endpoint.LOCAL_ACTIVE)
        return count

    def _wait(self, reason: str, asked: float) -> None:
        """Begins wait for ``reason`` (the oldest of them asked for at ``asked``): a timer
        for an end overdue, a wait for ends over or a hold ending; a WARNING (once) when
        the peer's session limit is reached. An open, a session's end or a lost transport
        runs them again."""
        if reason == HELD_BY_END:
            self._wake_by(min(asked, *(since for _session, since in self.ending))
                          + ENDING_LIMIT)
        elif reason == HELD_BY_HOLD:
            self._wake_by(self._quiet_until)
        elif reason == HELD_BY_LIMIT and self.ending:  # (they count): until they are overdue
            self._wake_by(min(since for _session, since in self.ending) + ENDING_LIMIT)
        if reason == HELD_BY_LIMIT and not self._full:
            self._full = True
            log.warning("amqp1.0 %s: %d link(s) wait for a session: the peer allows %d "
                        "sessions per connection (RabbitMQ 4: session_max_per_connection)",
                        self.name, self.begins_waiting, self._session_limit(),
                        extra=self.log_fields("session_limit", waiting=self.begins_waiting,
                                              limit=self._session_limit()))

    def _wake_by(self, due: float) -> None:
        """Run :meth:`_ends_overdue` at ``due`` (monotonic) at the latest."""
        if self.container is None or (self._wake_at is not None and self._wake_at <= due):
            return
        self._wake_at = due
        self.container.schedule(max(0.0, due - time.monotonic()), Timer(self._ends_overdue))

    def _ends_overdue(self) -> None:
        """Sessions whose end the peer left unanswered for :data:`ENDING_LIMIT` no longer
        hold begins back; the begins waiting run if nothing else holds them."""
        self._wake_at = None
        if not self.begins_waiting:
            return
        now = time.monotonic()
        overdue = [entry for entry in self.ending if entry[1] + ENDING_LIMIT <= now]
        if overdue:
            log.warning("amqp1.0 %s: %d session end(s) unanswered for %g s; beginning new "
                        "sessions all the same", self.name, len(overdue), ENDING_LIMIT,
                        extra=self.log_fields("session_end_unanswered", sessions=len(overdue)))
            self.ending = [entry for entry in self.ending if entry not in overdue]
            self.unanswered["end"] += len(overdue)
        self._run_begins()

    @property
    def begins_waiting(self) -> int:
        """Sessions (links, request/response pairs) waiting to begin."""
        return len(self._begins) + len(self._reserved_begins)

    def watch(self, link: LinkWatcher) -> None:
        """Tell ``link`` when the transport drops (and count it in the links gauge)."""
        self.watchers.append(link)

    def unwatch(self, link: LinkWatcher) -> None:
        """Stop telling ``link`` (closed for good) about the transport."""
        if link in self.watchers:
            self.watchers.remove(link)

    @property
    def links_open(self) -> int:
        """Links attached or attaching (the links gauge)."""
        return sum(1 for link in list(self.watchers) if link.open)

    @property
    def links_held(self) -> int:
        """Links not closed for good: each takes (or will take again) a session here."""
        return sum(1 for link in list(self.watchers) if not link.closing)

    @property
    def reconnects(self) -> int:
        """Connection attempts after the first (proton's reconnects and failovers)."""
        return max(0, self.attempts - 1)

    def log_fields(self, event: str, **more: Any) -> dict[str, Any]:
        """``extra`` fields of a log line about this connection."""
        return {"event": event, "connection": self.name, "peer": self.peer, **more}

    def reconnect_scheduled(self, delay: float) -> None:
        """Proton drew ``delay`` from the reconnect schedule (for the first connection too)."""
        if self.attempts == 0:
            return  # the first connection, not a reconnect
        log.info("amqp1.0 %s: reconnecting in %.2fs", self.name, delay,
                 extra=self.log_fields("reconnect_scheduled", delay=round(delay, 3)))

    def on_connection_bound(self, event: Any) -> None:
        # proton binds a fresh transport for every attempt (reconnect and failover alike)
        self.container = getattr(event, "container", None) or self.container
        self.connection = event.connection
        self.attempts += 1
        url = event.connection.url
        if url is not None:
            self.peer = host_port(url.host, url.port)
        log.info("amqp1.0 %s: connecting to %s", self.name, self.peer,
                 extra=self.log_fields("connecting", attempt=self.attempts))

    def on_connection_remote_open(self, event: Any) -> None:
        # (proton's bound event carries no container: the open's does)
        self.container = getattr(event, "container", None) or self.container
        self.connection = event.connection
        self.up = True
        self.up_since = time.monotonic()
        self.permanent_faults = 0
        self.known_limit = self._session_limit()
        log.info("amqp1.0 %s: open", self.name, extra=self.log_fields("open"))
        self._run_begins()
        for fn in list(self._when_open):
            fn()

    def on_connection_remote_close(self, event: Any) -> None:
        if event.connection.state & Endpoint.LOCAL_ACTIVE:
            # keep the connection endpoint open and drop the transport: proton reconnects
            condition = condition_text(event.connection.remote_condition)
            log.warning("amqp1.0 %s: closed by the peer: %s", self.name, condition,
                        extra=self.log_fields("closed_by_peer", error=condition))
            transport = event.transport
            if transport is not None:
                transport.close_tail()
                transport.close_head()

    def on_transport_error(self, event: Any) -> None:
        condition = event.transport.condition
        fault = classify_proton_error(condition.name, condition.description or "") \
            if condition is not None else None
        if fault is None or self.settings is None:
            self.permanent_faults = 0
            text = condition_text(condition)
            log.warning("amqp1.0 %s: %s", self.name, text,
                        extra=self.log_fields("transport_error", error=text))
            return
        url = getattr(event.connection, "url", None)
        if fault.summary == "TLS certificate verify failed" and url is not None:
            # proton only says "certificate verify failed": ask Python's ssl for the reason
            detail = describe_verify_failure(self.settings.tls, url.host, int(url.port or 5671))
            if detail is not None:
                fault = verify_failure(detail)
        self.fault = fault
        self.permanent_faults += 1
        message = fault.message("amqp1.0", self.name)
        log.error("%s", message, extra=self.log_fields("permanent_fault", error=fault.summary))
        if self.permanent_faults >= 1 + len(self.settings.failover):
            # retrying cannot help: closing the endpoint ends proton's reconnect loop
            event.connection.close()
            if self.on_fatal is not None:
                self.on_fatal(message)

    def on_transport_tail_closed(self, event: Any) -> None:
        self._lost(event.connection)

    def on_transport_closed(self, event: Any) -> None:
        self._lost(event.connection)

    def when_open(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` each time the connection opens, once the begins waiting have run."""
        self._when_open.append(fn)

    def when_lost(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` each time the connection drops after it was open (not for attempts
        that never opened), once its links have been told."""
        self._when_lost.append(fn)

    def _lost(self, connection: Any) -> None:
        was_up = self.up
        if self.up:
            if connection is not None and connection.state & Endpoint.LOCAL_CLOSED:
                log.info("amqp1.0 %s: closed", self.name, extra=self.log_fields("closed"))
            else:
                log.info("amqp1.0 %s: disconnected", self.name, extra=self.log_fields("lost"))
        self.up = False
        # the next transport numbers its channels afresh; the sessions we ended whose end
        # the peer never sent are freed: proton would begin them again on it and send their
        # end as soon as the peer's open is read, forgetting the channel before the peer
        # answers that begin ("begin reply to unknown channel" fails the new connection)
        for session, _since in self.ending:
            free_session(session)
        self.ending.clear()
        self._quiet_until = 0.0
        for link in list(self.watchers):
            link.on_disconnected()
        self._run_begins()
        if was_up:
            for fn in list(self._when_lost):
                fn()

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault here drops the connection's transport; proton reconnects."""
        def recover(reason: str) -> Callable[[], bool] | None:
            attempts = self.attempts
            transport = getattr(event, "transport", None) if event is not None else None
            if transport is None:
                return None
            transport.close_tail()
            transport.close_head()
            return lambda: self.up and self.attempts > attempts

        return Part("amqp10_connection", f"1.0 connection {self.name}",
                    {"connection": self.name, "peer": self.peer},
                    "transport dropped, reconnecting", recover, back=lambda: self.up)


def when_channels_free(handler: Amqp10ConnectionHandler | None, begin: Callable[[], None], *,
                       reserved: bool = False) -> None:
    """:meth:`Amqp10ConnectionHandler.when_channels_free` on ``handler``; at once when the
    connection has none of ours (tests' bare proton connections)."""
    if handler is not None:
        handler.when_channels_free(begin, reserved=reserved)
    else:
        begin()


def free_session(session: Any) -> None:
    """Free ``session`` once: when its end handshake is complete, or when the transport
    that carried it is gone (a second free is a double free in proton's C code, which does
    not check outside debug builds)."""
    if not is_freed(session):
        session.freed_by_bridge = True
        session.free()


def is_freed(session: Any) -> bool:
    """Whether :func:`free_session` freed ``session`` (it gets no more events)."""
    return bool(getattr(session, "freed_by_bridge", False))


def end_session(handler: Amqp10ConnectionHandler | None, session: Any) -> None:
    """:meth:`Amqp10ConnectionHandler.end_session` on ``handler``; a bare close without one."""
    if handler is not None:
        handler.end_session(session)
    elif session.state & Endpoint.LOCAL_ACTIVE:
        session.close()


class ReconnectDelays:
    """Proton's reconnect schedule: at once, then exponential backoff with jitter.

    Proton iterates it afresh after every successful open, so each outage starts
    from the initial delay again.  Each delay drawn is reported to ``on_delay``
    (proton waits it before each URL of the failover list).
    """

    def __init__(self, settings: Reconnect, on_delay: Callable[[float], None]) -> None:
        self.settings = settings
        self.on_delay = on_delay

    def __iter__(self) -> Iterator[float]:
        self.on_delay(0.0)
        yield 0.0
        failures = 0
        while True:
            delay = self.settings.delay(failures)
            self.on_delay(delay)
            yield delay
            failures += 1


__all__ = ["ENDING_LIMIT", "RESERVED_SESSIONS", "Amqp10ConnectionHandler", "LinkPool",
           "LinkWatcher", "ReconnectDelays",
           "end_session", "free_session", "is_freed", "when_channels_free"]
