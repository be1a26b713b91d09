"""Request/response over AMQP 1.0: the client behind the topology backends that manage
their broker with messages (:class:`RequestClient`), whatever the broker's protocol.

Theory of operation
-------------------
A broker that can be managed over AMQP 1.0 takes requests as messages on one link and
answers on another: RabbitMQ 4's ``/management`` node (HTTP over AMQP, a paired link
pair with ``$me`` as reply-to: :mod:`~bridge.topology.management`), qpidd's QMF2
agent (requests to ``qmf.default.direct``, answers to a dynamic receiver whose address
is the reply-to: :mod:`~bridge.topology.qmf`). What differs is a :class:`LinkPair`, the
protocol's *strategy*: how its two links are attached, how a request is encoded (with
the reply address and an id of ours), how an answer names its request, and what an
answer means. What is common is here:

* the pair: a sender and a receiver on one session of their own, both pre-settled
  (``snd-settle-mode`` settled: RabbitMQ takes no other kind of request, and qpidd
  then sends its answers settled too); ``up`` once both are attached (the reply address is
  known then);
* requests are pipelined: at most :attr:`LinkPair.window` unanswered on the pair (the
  receiver's credit) and never beyond the credit the broker gives our sender; the rest
  wait in order; a request is encoded when it is sent, for the pair it is sent on.

Every request is answered exactly once through its ``done`` callback: what the
strategy made of the answer, or a :class:`~bridge.topology.model.TopologyError` when

* it is not answered within ``request_timeout`` (``unavailable``; a late answer is
  dropped);
* the 1.0 connection drops while it is in flight (``unavailable``; requests not sent
  yet wait for the pair to come back, within their timeout);
* the broker ends the pair's session (or detaches a half) with an error: RabbitMQ
  refuses a request for want of permission (``amqp:unauthorized-access``) that way.
  A broker handles a session's frames in order and answers each request before it
  reads the next, so the oldest unanswered request is the one to blame; the others
  are sent again on the fresh pair.

A lost pair is replaced by a fresh one (on a fresh session) at once when a request
was to blame, else after :data:`~bridge.amqp10.link.RELINK`'s backoff, and when the
connection comes back. :meth:`RequestClient.probe` checks that a 1.0 address can be
attached (RabbitMQ 4 has no management request that tells whether an exchange exists;
a sender link to ``/exchanges/X`` is refused with ``amqp:not-found`` when it does not).

Sessions are retired in the order proton needs (:class:`_Retiring`): a session is ended
only once the peer has answered its begin and detached its links, and freed once the
peer has ended it too (ending it earlier makes proton fail the whole connection), its
links closed on our side first: RabbitMQ 4 refuses a probe by ending the session with
the attach unanswered, and a link freed with its session while still open was released
again when its last Python reference went (glibc: "double free or corruption"). Sessions
are ended, and new ones begun, through the connection's handler
(:meth:`~bridge.amqp10.connection.Amqp10ConnectionHandler.when_channels_free`): none
begins while a session anyone on the connection ended waits for the peer's end.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from proton import Endpoint, Link, Message
from proton.reactor import Container

from ..amqp10.connection import (
    Amqp10ConnectionHandler,
    end_session,
    free_session,
    is_freed,
    when_channels_free,
)
from ..amqp10.link import RELINK, STABLE_LINK, send_raw
from ..amqp10.outcomes import condition_text
from ..runtime import Timer
from ..runtime.containment import Part, contain
from .model import TopologyError, TopologyErrorKind

log = logging.getLogger("bridge.topology")

CONDITION_KINDS: dict[str, TopologyErrorKind] = {
    "amqp:unauthorized-access": "access-refused",
    "amqp:not-found": "not-found",
    "amqp:resource-locked": "resource-locked",
    "amqp:not-implemented": "not-implemented",
}
"""The error kind of a request (or probe) whose session the broker ended with this
condition; any other condition makes it ``unavailable``."""


class LinkPair:
    """A management protocol's strategy (see the module's docstring): subclasses say
    how to attach, encode, correlate and read answers."""

    peer = "the broker"
    """Who answers, as log lines and error texts name it ("RabbitMQ", "qpidd")."""
    node = ""
    """The address requests go to (log lines, fault reports)."""
    window = 8
    """Requests unanswered on the pair at most (the receiver's credit)."""

    def attach(self, session: Any, name: str) -> tuple[Any, Any]:
        """Create (not open) the sender and the receiver of a fresh pair on ``session``;
        ``name`` is unique to the pair."""
        raise NotImplementedError

    def reply_to(self, receiver: Any) -> str:
        """The reply address of requests sent on the pair whose receiver is attached."""
        raise NotImplementedError

    def encode(self, request: Any, message_id: int, reply_to: str) -> bytes:
        """The encoded message of ``request`` (what the client's owner passed),
        carrying ``message_id`` so that :meth:`correlation` finds it in the answer."""
        raise NotImplementedError

    def correlation(self, message: Message) -> int | None:
        """The id of the request ``message`` answers, if it names one of ours."""
        raise NotImplementedError

    def answer(self, message: Message, what: str) -> Any:
        """What the answer ``message`` to the request described by ``what`` means to
        the client's owner (a result, or a :class:`TopologyError`)."""
        raise NotImplementedError


@dataclass(eq=False)
class _Pending:
    """What waits for an answer: a request, or a probe."""

    done: Callable[[Any], None]
    timer: Any = field(default=None, init=False)
    answered: bool = field(default=False, init=False)

    def describe(self) -> str:
        raise NotImplementedError


@dataclass(eq=False)
class _Request(_Pending):
    request: Any = None
    what: str = ""
    id: int = 0

    def describe(self) -> str:
        return self.what


@dataclass(eq=False)
class _Probe(_Pending):
    address: str = ""
    session: Any = field(default=None, init=False)
    link: Any = field(default=None, init=False)

    def describe(self) -> str:
        return f"the attach to {self.address!r}"


@dataclass(eq=False)
class _Retiring:
    """A session and its links on their way out (see the module's docstring)."""

    session: Any
    links: list[Any] = field(default_factory=list)

    def advance(self, end_session: Callable[[Any], None]) -> bool:
        """Take the next step the peer's state allows (``end_session`` ends the session);
        True once the session is freed."""
        session = self.session
        if session.state & Endpoint.REMOTE_CLOSED:
            for link in self.links:  # never freed open: a refused probe's, attach unanswered
                if link.state & Endpoint.LOCAL_ACTIVE:
                    link.close()
            end_session(session)
            free_session(session)
            return True
        for link in self.links:
            # a link is detached once its attach is answered (on this transport)
            if link.state & Endpoint.LOCAL_ACTIVE and not link.state & Endpoint.REMOTE_UNINIT:
                link.close()
        if (session.state & Endpoint.LOCAL_ACTIVE and session.state & Endpoint.REMOTE_ACTIVE
                and all(link.state & Endpoint.REMOTE_CLOSED for link in self.links)):
            end_session(session)
        return False

    def owns(self, endpoint: Any) -> bool:
        return endpoint == self.session or any(endpoint == link for link in self.links)


class RequestClient:
    """Requests over one link pair of ``pair``'s protocol on ``connection`` (the proton
    connection of a configured 1.0 connection), on the event loop.

    ``name`` names the pair's links and the log lines. Everything runs on the
    container's thread; ``done`` callbacks run later on it, never within the call.
    """

    loop_event_methods: ClassVar[frozenset[str]] = frozenset({"on_link_flow"})
    """Handler methods that read only the event's ``link``: the loop may call them with a
    light stand-in for proton's event (:mod:`bridge.runtime.shortcuts`)."""

    def __init__(self, container: Container, connection: Any, pair: LinkPair, *, name: str,
                 request_timeout: float = 10.0) -> None:
        self.container = container
        self.pair = pair
        self.connection = connection
        self.name = name
        self.request_timeout = request_timeout
        handler = connection.handler
        self.handler: Amqp10ConnectionHandler | None = \
            handler if isinstance(handler, Amqp10ConnectionHandler) else None
        self.up = False
        """Both halves of the link pair are attached."""
        self.closing = False
        self.requests = 0
        """Requests answered by the broker (whatever the answer said)."""
        self.failures: dict[str, int] = {}
        """Requests and probes failed without a response, by :class:`TopologyError` kind."""
        self._ids = itertools.count(1)
        self._waiting: deque[_Request] = deque()
        """Requests not sent yet, in order."""
        self._in_flight: dict[int, _Request] = {}
        """Requests sent on the current pair and not answered, by message-id (in order)."""
        self._unanswered = 0
        """Requests sent on the current pair whose response has not come (timed-out ones
        too: their responses still take our receiver's credit)."""
        self._probes: list[_Probe] = []
        self._retiring: list[_Retiring] = []
        self._session: Any = None
        self._sender: Any = None
        self._receiver: Any = None
        self._reply_to = ""
        self._generation = 0
        self.on_restored: Callable[[], None] | None = None
        """Called when the pair is attached again after the 1.0 connection dropped
        (what the broker deleted with the connection may be declared again)."""
        self._connection_lost = False
        self._up_since = 0.0
        self._losses = 0
        if self.handler is not None:
            self.handler.watch(self)
        self._when_channels_free(self._open)

    # -- the API -------------------------------------------------------------------------

    def call(self, request: Any, what: str, done: Callable[[Any], None]) -> None:
        """Send ``request`` (which the pair's :meth:`LinkPair.encode` takes; ``what``
        describes it in log lines and errors); ``done`` gets what
        :meth:`LinkPair.answer` made of the answer, or a :class:`TopologyError`."""
        pending = _Request(done, request, what, next(self._ids))
        if self.closing:
            self._later(done, TopologyError("unavailable", "the bridge is stopping"))
            return
        pending.timer = self.container.schedule(
            self.request_timeout, Timer(lambda: self._timed_out(pending)))
        self._waiting.append(pending)
        self._send_waiting()

    def probe(self, address: str, done: Callable[[bool | TopologyError], None]) -> None:
        """Attach a sender to ``address`` on a session of its own and detach it again;
        ``done`` gets True when the broker attached it, or why not (``not-found`` for a
        node that does not exist, ``access-refused``, ``unavailable``)."""
        if self.closing:
            self._later(done, TopologyError("unavailable", "the bridge is stopping"))
            return
        probe = _Probe(done, address)
        probe.timer = self.container.schedule(
            self.request_timeout, Timer(lambda: self._probe_failed(probe, TopologyError(
                "unavailable", f"{self.pair.peer} did not answer the attach to {address!r} within "
                               f"{self.request_timeout:g} s"))))
        self._probes.append(probe)
        self._when_channels_free(lambda: self._attach_probe(probe))

    def _attach_probe(self, probe: _Probe) -> None:
        if probe.answered or self.closing:
            return
        probe.session = self._new_session()
        probe.link = probe.session.sender(f"amqp-bridge.{self.name}.probe.{time.time_ns():x}")
        probe.link.target.address = probe.address
        probe.link.handler = self
        probe.link.open()

    def close(self) -> None:
        """Detach for good; whatever is pending fails ``unavailable``."""
        if self.closing:
            return
        self.closing = True
        self._fail_all("the bridge is stopping", waiting_too=True)
        self._retire_pair()
        self._unwatch_when_retired()

    @property
    def reply_to(self) -> str:
        """The reply address of the current pair (qpidd's dynamic node; "" until the
        first pair is attached)."""
        return self._reply_to

    @property
    def busy(self) -> bool:
        """Requests or probes wait to be sent or for their answer."""
        return bool(self._waiting or self._in_flight or self._probes)

    @property
    def open(self) -> bool:
        """Attached or attaching, and not closed for good (:class:`LinkWatcher`)."""
        return not self.closing and self._session is not None

    # -- requests ------------------------------------------------------------------------

    def _send_waiting(self) -> None:
        while (self._waiting and self.up and self._sender.credit > 0
               and self._unanswered < self.pair.window):
            request = self._waiting.popleft()
            if request.answered:
                continue
            data = self.pair.encode(request.request, request.id, self._reply_to)
            # pre-settled: RabbitMQ takes no other kind of request (qpidd takes any)
            send_raw(self._sender, data).settle()
            self._in_flight[request.id] = request
            self._unanswered += 1

    def _response(self, delivery: Any) -> None:
        receiver = self._receiver
        if delivery.partial:
            return
        data = receiver.recv(delivery.pending)
        delivery.settle()
        receiver.flow(1)
        self._unanswered = max(0, self._unanswered - 1)
        message = Message()
        message.decode(data)
        correlation = self.pair.correlation(message)
        request = self._in_flight.pop(correlation, None) if correlation is not None else None
        if request is not None:
            self.requests += 1
            self._finish(request, self.pair.answer(message, request.describe()))
        self._send_waiting()

    def _timed_out(self, request: _Request) -> None:
        if request.answered:
            return
        self._in_flight.pop(request.id, None)
        self._finish(request, TopologyError(
            "unavailable", f"{self.pair.peer} did not answer {request.describe()} within "
                           f"{self.request_timeout:g} s"))

    def _finish(self, pending: _Pending, result: Any) -> None:
        """Answer a request or probe (once); a fault in its callback is its owner's."""
        if pending.answered:
            return
        pending.answered = True
        if pending.timer is not None:
            pending.timer.cancel()
        if isinstance(result, TopologyError):
            self.failures[result.kind] = self.failures.get(result.kind, 0) + 1
            log.log(logging.WARNING if result.kind == "unavailable" else logging.INFO,
                    "management %s: %s failed: %s: %s", self.name, pending.describe(),
                    result.kind, result.text,
                    extra={"event": "management_request_failed", "topology": self.name,
                           "kind": result.kind, "error": result.text})
        try:
            pending.done(result)
        except Exception as exc:
            contain(self.container, exc, entry="event")

    def _later(self, done: Callable[[Any], None], result: Any) -> None:
        self.container.schedule(0, Timer(lambda: done(result)))

    def _fail_all(self, why: str, *, waiting_too: bool, stale: bool = False) -> None:
        error = TopologyError("unavailable", why)
        in_flight = list(self._in_flight.values())
        self._in_flight.clear()
        waiting = list(self._waiting) if waiting_too else []
        if waiting_too:
            self._waiting.clear()
        probes, self._probes = self._probes, []
        for request in [*in_flight, *waiting]:
            self._finish(request, error)
        for probe in probes:
            self._finish(probe, error)
            self._retire_probe(probe, stale=stale)

    # -- probes --------------------------------------------------------------------------

    def _probe_of(self, endpoint: Any) -> _Probe | None:
        for probe in self._probes:
            if probe.session is not None and (endpoint == probe.link
                                              or endpoint == probe.session):
                return probe
        return None

    def _probe_failed(self, probe: _Probe, error: TopologyError) -> None:
        if probe in self._probes:
            self._probes.remove(probe)
            self._finish(probe, error)
            self._retire_probe(probe)

    def _retire_probe(self, probe: _Probe, *, stale: bool = False) -> None:
        """Retire the probe's session and link; the probe lets go of them, the link first:
        its timer, cancelled, stays in proton's timer heap until its deadline, and a link
        released after its session was freed is freed twice (docs/architecture.md)."""
        if probe.session is not None:
            self._retire(probe.session, [probe.link], stale=stale)
            probe.link = None
            probe.session = None

    # -- proton events (this object handles the pair's and the probes' endpoints) --------

    def on_link_remote_open(self, event: Any) -> None:
        link = event.link
        if link == self._sender or link == self._receiver:
            if (self._sender.state & Endpoint.REMOTE_ACTIVE
                    and self._receiver.state & Endpoint.REMOTE_ACTIVE and not self.up):
                self.up = True
                self._up_since = time.monotonic()
                self._reply_to = self.pair.reply_to(self._receiver)
                log.info("management %s: link pair attached to %s", self.name,
                         self.pair.node, extra={"event": "management_up", "topology": self.name})
                if self._connection_lost:
                    self._connection_lost = False
                    if self.on_restored is not None:
                        self.on_restored()
                self._send_waiting()
            return
        probe = self._probe_of(link)
        if probe is not None:
            self._probes.remove(probe)
            self._finish(probe, link.remote_target is not None
                               and link.remote_target.address is not None)
            self._retire_probe(probe)
            return
        self._advance(link)

    def on_link_flow(self, event: Any) -> None:
        if event.link == self._sender:
            self._send_waiting()

    def on_delivery(self, event: Any) -> None:
        if event.link == self._receiver and self._receiver is not None:
            self._response(event.delivery)

    def on_link_remote_close(self, event: Any) -> None:
        self._remote_end(event.link, event.link.remote_condition, f"link closed by {self.pair.peer}")

    def on_link_remote_detach(self, event: Any) -> None:
        self._remote_end(event.link, event.link.remote_condition, f"link detached by {self.pair.peer}")

    def on_session_remote_open(self, event: Any) -> None:
        self._advance(event.session)

    def on_session_remote_close(self, event: Any) -> None:
        self._remote_end(event.session, event.session.remote_condition,
                         f"session ended by {self.pair.peer}")
        if self.handler is not None:
            self.handler.session_ended(event.session)

    def on_disconnected(self) -> None:
        """The connection's transport is gone (:class:`LinkWatcher`): what was in flight
        fails; a fresh pair waits for proton's reconnect."""
        self._forget_freed()
        if self.closing:
            return
        self._connection_lost = True
        self._fail_all(f"the AMQP 1.0 connection to {self.pair.peer} was lost", waiting_too=False,
                       stale=True)
        if not self.up:
            return  # the pair was not attached on that transport: proton attaches it anew
        log.info("management %s: link pair detached: connection lost", self.name,
                 extra={"event": "management_down", "topology": self.name})
        self._retire_pair(stale=True)
        self._unanswered = 0
        self.container.schedule(0, Timer(self._reopen))

    def _remote_end(self, endpoint: Any, condition: Any, what: str) -> None:
        if endpoint == self._session or endpoint == self._sender or endpoint == self._receiver:
            self._pair_lost(what, condition)
            return
        probe = self._probe_of(endpoint)
        if probe is not None:
            kind = CONDITION_KINDS.get(str(condition.name) if condition else "", "unavailable")
            text = condition.description if condition is not None and condition.description \
                else f"{what} ({condition_text(condition)})"
            self._probe_failed(probe, TopologyError(kind, text))
        self._advance(endpoint)

    # -- the link pair -------------------------------------------------------------------

    def _new_session(self) -> Any:
        session = self.connection.session()
        session.handler = self
        session.open()
        return session

    def _when_channels_free(self, begin: Callable[[], None]) -> None:
        """Run ``begin`` (which begins a session) once the connection's handler lets it
        (no session ended on the connection waits for the peer's end; a session free, the
        reserved one included: declares must not wait for consumers to leave)."""
        when_channels_free(self.handler, begin, reserved=True)

    def _end_session(self, session: Any) -> None:
        end_session(self.handler, session)

    def _open(self) -> None:
        if self.closing or self._session is not None:
            return
        self._generation += 1
        name = f"amqp-bridge.{self.name}.management.{self._generation}.{time.time_ns():x}"
        session = self._new_session()
        sender, receiver = self.pair.attach(session, name)
        for link in (sender, receiver):
            link.snd_settle_mode = Link.SND_SETTLED
            link.rcv_settle_mode = Link.RCV_FIRST
            link.handler = self
            link.open()
        receiver.flow(self.pair.window)
        self._session, self._sender, self._receiver = session, sender, receiver

    def _reopen(self) -> None:
        if (not self.closing and self._session is None
                and self.connection.state & Endpoint.LOCAL_ACTIVE):
            self._when_channels_free(self._open)

    def _pair_lost(self, what: str, condition: Any) -> None:
        """The broker ended the pair's session or detached a half: the oldest unanswered
        request is to blame when the broker gave an error, the others go again."""
        if self.closing or self._session is None:
            return
        reason = f"{what}: {condition_text(condition)}"
        culprit = next(iter(self._in_flight.values()), None) if condition is not None else None
        if culprit is not None:
            del self._in_flight[culprit.id]
        again = [r for r in self._in_flight.values() if not r.answered]
        self._in_flight.clear()
        self._waiting.extendleft(reversed(again))
        lived = time.monotonic() - self._up_since if self.up else 0.0
        self._retire_pair()
        self._unanswered = 0
        if culprit is not None:
            delay = 0.0
            kind = CONDITION_KINDS.get(str(condition.name), "unavailable")
            self._finish(culprit, TopologyError(kind, condition.description or reason))
        else:
            self._losses = 0 if lived >= STABLE_LINK else self._losses + 1
            delay = RELINK.delay(self._losses - 1) if self._losses else 0.0
            log.warning("management %s: %s; re-attaching in %.2fs", self.name, reason, delay,
                        extra={"event": "management_lost", "topology": self.name,
                               "error": reason, "delay": round(delay, 3)})
        self.container.schedule(delay, Timer(self._reopen))

    def _retire_pair(self, *, stale: bool = False) -> None:
        self.up = False
        if self._session is not None:
            self._retire(self._session, [self._sender, self._receiver], stale=stale)
        self._sender = self._receiver = self._session = None  # (left to right: links first)

    def _retire(self, session: Any, links: list[Any], *, stale: bool = False) -> None:
        """Close ``session`` and ``links`` in the safe order; ``stale`` ones (of a dead
        transport, which proton re-attaches on the next) wait for the peer's answers
        on the new transport before anything is closed."""
        entry = _Retiring(session, links)
        if stale or not entry.advance(self._end_session):
            self._retiring.append(entry)
        else:
            entry.links.clear()  # freed: the links' references before the session's

    def _advance(self, endpoint: Any) -> None:
        for entry in self._retiring:
            if entry.owns(endpoint):
                if entry.advance(self._end_session):
                    self._retiring.remove(entry)
                    entry.links.clear()  # (the links' references before the session's)
                    self._unwatch_when_retired()
                break

    def _forget_freed(self) -> None:
        """Let go of the retiring sessions the connection's handler freed as the transport
        dropped (ended, their end never came: :class:`Amqp10ConnectionHandler`), their
        links first (docs/architecture.md, the reference rule); they get no more events."""
        freed = [entry for entry in self._retiring if is_freed(entry.session)]
        for entry in freed:
            self._retiring.remove(entry)
            entry.links.clear()
        self._unwatch_when_retired()

    def _unwatch_when_retired(self) -> None:
        """A client closed for good stops hearing of the transport once nothing it ended
        is left on the connection (until then a lost transport may free those)."""
        if self.closing and not self._retiring and self.handler is not None:
            self.handler.unwatch(self)

    def fault_part(self, method: str, event: Any) -> Part | None:
        """A fault here is treated as the link pair lost (requests in flight go again on
        a fresh one); a fault in a request's ``done`` callback is its owner's."""
        if method == "_finish":
            return None

        def recover(reason: str) -> Callable[[], bool] | None:
            if self.closing:
                return None
            if self._session is not None:
                self._pair_lost(reason, None)
            return lambda: self.up or self.closing

        return Part("amqp10_link", f"management link pair {self.name}",
                    {"link": self.name, "address": self.pair.node},
                    "link pair lost, re-attaching", recover,
                    back=lambda: self.up or self.closing)


__all__ = ["CONDITION_KINDS", "LinkPair", "RequestClient"]
