"""Fault containment: an unexpected exception in one connection, link, route or timer
never ends the bridge.

Theory of operation
-------------------
Everything runs in one proton :class:`~proton.reactor.Container`.  proton's
``Container.process`` hands each event to its handler (the link's, the session's, the
connection's, the selectable's or the timer task's handler object, else the
container's own handler) and then to the global handler; an exception from a handler
leaves ``process`` — and ``container.run()`` — with the event still queued.  Without
containment that ended the process.

:class:`ContainedContainer` overrides ``process`` with one ``try`` around proton's
(a ``try`` costs nothing on Python 3.11 until something raises, so the message path
pays nothing: no wrapper call per event).  When a handler raises:

1. The event being dispatched is the collector's head.  The traceback tells whether
   the regular handler or the global one raised (the ``handler`` proton's
   ``EventBase.dispatch`` was called with); an exception raised anywhere else, and any
   exception while the container starts (``reactor_init``: configuration errors),
   propagates as before.
2. The *fault domain* is the outermost object of the traceback that is one of the
   bridge's parts (:func:`_describe`): a hosted 0-10 socket (its owner: a legacy
   connection or a façade listener, so a legacy connection or a façade client), an
   AMQP 1.0 link, a route, a façade subscription, the AMQP 1.0 connection handler, the
   bridge itself.  Frames of generic dispatchers (proton, timer and call wrappers,
   lambdas) are skipped.
3. :func:`contain` logs one ERROR line with the traceback (``event=handler_fault``,
   ``kind``, ``entry``, the names), counts it (``amqp_bridge_faults_total{kind}``,
   plain ints in :class:`Faults`, read by the metrics thread) and recovers the domain
   locally — the same paths a network fault takes:

   * legacy connection: connection.close (connection-forced), transport dropped,
     reconnect with backoff (:meth:`bridge.legacy.LegacyConnection.reset`); its
     sessions are discarded, not resumed (the broker requeues what they held
     unsettled: the routes' state may be what failed) and fresh ones attached;
   * façade client: connection.close (connection-forced) and transport dropped; the
     façade's SessionDetached/ConnectionClosed cleanup runs, so what the client left
     unsettled goes back to the AMQP 1.0 broker;
   * AMQP 1.0 link: treated as lost (``Amqp10Link.recover_from_fault``: the route's void
     deliveries are released, a fresh link after a backoff);
   * AMQP 1.0 connection: its transport is dropped, proton reconnects;
   * route (its end-of-burst work): its 0-10 session is ended (the broker requeues what
     was unsettled) and a fresh one follows after the usual re-attach backoff;
   * periodic timers of the bridge (housekeeping) and of the façade's shutdown are
     rescheduled; anything else is logged and counted.

4. Then the event goes on to the global handler (if the regular one raised) and is
   popped, and the loop continues.

A part recovering from a fault is *impaired* (:attr:`Faults.impaired`) until it is
back (the connection open again, the link attached, the route ready on a fresh
session): ``/readyz`` reports it.  Two inner loops contain faults themselves, so one
culprit cannot hold up the others: :class:`bridge.hosting.EndOfBurst`'s
end-of-burst batch (one route's work failing does not drop the others') and
:class:`bridge.hosting.LoopCalls` (the calls queued after a failing one still run).

Only permanent faults (:mod:`bridge.tls`) end the process, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from proton import Event, Handler
from proton import _events as proton_events
from proton._events import EventBase
from proton.reactor import Container

if TYPE_CHECKING:  # links and routes import this module (through bridge.legacy)
    from .amqp10.link import Amqp10Link
    from .routes import LegacyRoute

log = logging.getLogger(__name__)

KINDS = ("legacy_connection", "facade_client", "facade_listener", "amqp10_link",
         "amqp10_connection", "route", "timer", "loop_call", "bridge", "io", "handler")
"""Values of the ``kind`` label of ``amqp_bridge_faults_total`` (each exported, 0 included)."""

CHECK_INTERVAL = 0.25
"""Seconds between checks whether impaired parts are back."""

_DISPATCH = EventBase.dispatch.__code__
_DISPATCH_ONE = proton_events._dispatch.__code__


class Faults:
    """Counters of contained faults and the parts still recovering from one.

    Written on the container's thread only; :meth:`snapshot` is safe from others (the
    metrics server).
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.impaired: dict[str, str] = {}
        """``part -> reason`` for every part down because of a fault, until it is back."""
        self._checks: dict[str, Callable[[], bool]] = {}
        self._checking = False

    def snapshot(self) -> tuple[dict[str, int], dict[str, str]]:
        """``(counts by kind, impaired parts)``, copied."""
        return dict(self.counts), dict(self.impaired)

    def impair(self, container: Container, part: str, reason: str,
               recovered: Callable[[], bool]) -> None:
        """``part`` is down because of a fault until ``recovered()`` says it is back."""
        self.impaired[part] = reason
        self._checks[part] = recovered
        if not self._checking:
            self._checking = True
            container.schedule(CHECK_INTERVAL, _Check(self, container))

    def check(self, container: Container) -> None:
        """Forget the parts that are back (logged), and check again later if some are not."""
        for part, recovered in list(self._checks.items()):
            try:
                back = recovered()
            except Exception:  # a part that cannot tell is not back
                back = False
            if back:
                del self._checks[part]
                self.impaired.pop(part, None)
                log.info("%s: recovered from an internal fault", part,
                         extra={"event": "fault_recovered", "part": part})
        if self._checks:
            container.schedule(CHECK_INTERVAL, _Check(self, container))
        else:
            self._checking = False


class _Check(Handler):  # type: ignore[misc]
    def __init__(self, faults: Faults, container: Container) -> None:
        self.faults = faults
        self.container = container

    def on_timer_task(self, event: Any) -> None:
        self.faults.check(self.container)


_UNOWNED = Faults()
"""Faults of parts running in a container that is not a :class:`ContainedContainer`."""


def faults_of(container: Any) -> Faults:
    """The container's :class:`Faults`."""
    faults = getattr(container, "faults", None)
    return faults if isinstance(faults, Faults) else _UNOWNED


class ContainedContainer(Container):  # type: ignore[misc]
    """proton's Container whose handlers' exceptions are contained (module docstring)."""

    def __init__(self, *handlers: Any, **kwargs: Any) -> None:
        super().__init__(*handlers, **kwargs)
        self.faults = Faults()

    def process(self) -> bool:
        while True:
            try:
                return bool(super().process())
            except Exception as exc:
                if not self._contain(exc):
                    raise

    def _contain(self, exc: Exception) -> bool:
        """Contain ``exc`` raised by a handler of the collector's head event; False when it
        was not raised by a handler, or while the container starts."""
        event = self._collector.peek()
        target = _dispatch_target(exc.__traceback__)
        if event is None or target is None or event.type is Event.REACTOR_INIT:
            return False
        global_handler = self._global_handler
        regular = target is not global_handler
        try:
            entry = "io" if not regular else "timer" if event.type is Event.TIMER_TASK \
                else "event"
            contain(self, exc, entry=entry, event=event)
        finally:
            if regular:  # the global handler's turn (IO, reconnect), as proton would give it
                try:
                    event.dispatch(global_handler)
                except Exception as again:
                    contain(self, again, entry="io", event=event)
            self._previous = event.type
            self._collector.pop()
        return True


def _dispatch_target(tb: TracebackType | None) -> Any:
    """The handler the outermost ``EventBase.dispatch`` of the traceback was given."""
    while tb is not None:
        if tb.tb_frame.f_code is _DISPATCH:
            return tb.tb_frame.f_locals.get("handler")
        tb = tb.tb_next
    return None


def contain(container: Any, exc: BaseException, *, entry: str, domain: Any = None,
            event: Any = None) -> None:
    """Log, count and recover from ``exc``, raised by a part of the bridge.

    ``entry`` says where it was caught (``event``, ``timer``, ``end_of_burst``,
    ``loop_call``, ``io``); ``domain`` is the failing part if the caller knows it, else
    it is found in the traceback.  Never raises.
    """
    try:
        _contain(container, exc, entry, domain, event)
    except Exception:  # containment must not become the next fault
        log.exception("internal fault (%r) and then a failure to contain it", exc,
                      extra={"event": "handler_fault", "kind": "handler", "entry": entry})


def _contain(container: Any, exc: BaseException, entry: str, domain: Any, event: Any) -> None:
    frame_name = ""
    if domain is None:
        domain, frame_name = _find_domain(exc.__traceback__)
    part = _describe(domain, frame_name, event, entry)
    kind = "timer" if entry == "timer" else part.kind
    faults = faults_of(container)
    faults.counts[kind] = faults.counts.get(kind, 0) + 1
    log.error("internal fault in %s (%s): %r; %s", part.label, entry, exc, part.action,
              exc_info=(type(exc), exc, exc.__traceback__),
              extra={"event": "handler_fault", "kind": kind, "part": part.kind,
                     "entry": entry, "error": repr(exc), "action": part.action, **part.names})
    try:
        recovered = part.recover(f"amqp-bridge internal error: {exc!r}"[:255])
    except Exception as failure:
        log.error("%s: recovering from the internal fault failed: %r", part.label, failure,
                  exc_info=(type(failure), failure, failure.__traceback__),
                  extra={"event": "fault_recovery_failed", "kind": kind, "part": part.kind,
                         "error": repr(failure), **part.names})
        recovered = part.back
    if recovered is not None:
        faults.impair(container, part.label, f"{kind}: {exc!r}"[:200], recovered)


def _find_domain(tb: TracebackType | None) -> tuple[Any, str]:
    """The outermost part of the bridge in the traceback, and the name of its function
    there: a handler proton dispatched to (for a timer task, the owner of the timer's
    function), else a method's ``self``. The bridge object itself counts only as a
    timer's owner (its own events, such as the end of a burst, are other parts' work)."""
    from .app import Bridge

    kinds = _domain_types()
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if code is _DISPATCH or code is _DISPATCH_ONE:
            handler = frame.f_locals.get("handler")
            fn = getattr(handler, "fn", None)  # a timer task's handler
            for obj, name in ((handler, ""), (getattr(fn, "__self__", None),
                                              getattr(fn, "__name__", ""))):
                if isinstance(obj, kinds) and (name or not isinstance(obj, Bridge)):
                    return obj, name
        else:
            obj = frame.f_locals.get("self")
            if isinstance(obj, kinds) and not isinstance(obj, Bridge):
                return obj, code.co_name
        tb = tb.tb_next
    return None, ""


def _domain_types() -> tuple[type, ...]:
    from .amqp10.connection import Amqp10ConnectionHandler
    from .amqp10.link import Amqp10Link
    from .app import Bridge
    from .facade import Facade, FacadeConsume, FacadePublish, Subscription
    from .hosting import Amqp010Listener, Amqp010Socket
    from .legacy import LegacyConnection
    from .routes import RouteCore

    return (Amqp010Socket, Amqp010Listener, LegacyConnection, Amqp10Link, RouteCore,
            FacadePublish, FacadeConsume, Subscription, Facade,
            Amqp10ConnectionHandler, Bridge)


class _Part:
    """A fault domain: what to call it, and how it recovers.

    ``recover(reason)`` does the local recovery and returns a check that tells when
    the part is back (the part is impaired until then), or None when nothing stays
    down; ``back`` is that check when the recovery itself failed.
    """

    def __init__(self, kind: str, label: str, names: dict[str, str], action: str,
                 recover: Callable[[str], Callable[[], bool] | None] | None = None,
                 back: Callable[[], bool] | None = None) -> None:
        self.kind = kind
        self.label = label
        self.names = names
        self.action = action
        self.recover = recover or (lambda reason: None)
        self.back = back


def _describe(obj: Any, frame_name: str, event: Any, entry: str) -> _Part:
    from .amqp10.connection import Amqp10ConnectionHandler
    from .amqp10.link import Amqp10Link
    from .app import Bridge
    from .facade import Facade, FacadeConsume, FacadePublish, Subscription
    from .hosting import Amqp010Listener, Amqp010Socket
    from .legacy import LegacyConnection
    from .routes import RouteCore

    if isinstance(obj, Amqp010Socket):
        owner = getattr(obj.on_event, "__self__", None)
        if isinstance(owner, LegacyConnection):
            return _legacy_connection(owner, obj)
        if isinstance(owner, Facade):
            return _facade_client(owner, obj)
        return _Part("handler", f"0-10 connection {obj.peer}", {"peer": obj.peer},
                     "connection closed", lambda reason: obj.abort(reason))
    if isinstance(obj, LegacyConnection):
        return _legacy_connection(obj, obj.socket)
    if isinstance(obj, Amqp10Link):
        return _amqp10_link(obj)
    if isinstance(obj, RouteCore):
        return _route(obj)
    if isinstance(obj, Subscription):
        return _facade_client(obj.route.facade, obj.client_socket)
    if isinstance(obj, FacadePublish | FacadeConsume):
        return _Part("route", f"route {obj.name}", {"route": obj.name}, "logged")
    if isinstance(obj, Amqp010Listener):
        name = getattr(getattr(obj.on_event, "__self__", None), "name", "")
        return _Part("facade_listener", f"façade listener {name}", {"listener": name},
                     "still listening")
    if isinstance(obj, Facade):
        if frame_name == "close_when_drained":
            return _Part("facade_listener", f"façade listener {obj.name}",
                         {"listener": obj.name}, "shutdown poll rescheduled",
                         lambda reason: _reschedule(obj.container, 0.1, obj.close_when_drained))
        return _Part("facade_listener", f"façade listener {obj.name}", {"listener": obj.name},
                     "logged")
    if isinstance(obj, Amqp10ConnectionHandler):
        return _amqp10_connection(obj, event)
    if isinstance(obj, Bridge):
        if frame_name == "_housekeeping":
            return _Part("bridge", "the bridge's housekeeping", {}, "housekeeping rescheduled",
                         lambda reason: obj.schedule_housekeeping(0.1))
        if frame_name == "stop_loop":
            return _Part("bridge", "the bridge's stop", {}, "stopping the loop",
                         lambda reason: _stop(obj.container))
        return _Part("bridge", "the bridge", {}, "logged")
    if event is not None and getattr(event, "transport", None) is not None and \
            getattr(event, "connection", None) is not None:
        handler = getattr(event.connection, "handler", None)
        if isinstance(handler, Amqp10ConnectionHandler):
            return _amqp10_connection(handler, event)
    if obj is None:
        return _Part("io" if entry == "io" else "bridge", "the event loop", {}, "logged")
    return _Part("handler", type(obj).__name__, {}, "logged")


def _reschedule(container: Any, delay: float, fn: Callable[[], None]) -> None:
    from .hosting import Timer

    container.schedule(delay, Timer(fn))


def _stop(container: Any) -> None:
    container.stop()


def _legacy_connection(conn: Any, sock: Any) -> _Part:
    peer = sock.peer if sock is not None else conn.peer

    def recover(reason: str) -> Callable[[], bool]:
        old = conn.socket
        conn.reset(reason)
        return lambda: conn.stopping or (conn.open and conn.socket is not old)

    return _Part("legacy_connection", f"0-10 connection {conn.name}",
                 {"connection": conn.name, "peer": peer},
                 "connection closed, reconnecting", recover,
                 back=lambda: conn.stopping or conn.open)


def _facade_client(facade: Any, sock: Any) -> _Part:
    def recover(reason: str) -> None:
        sock.abort(reason)  # the façade's ConnectionClosed/SessionDetached cleanup runs
        if not sock.closed:
            sock.close_transport()

    return _Part("facade_client", f"façade {facade.name} client {sock.peer}",
                 {"listener": facade.name, "peer": sock.peer},
                 "client connection closed", recover)


def _amqp10_link(link: Amqp10Link) -> _Part:
    def recover(reason: str) -> Callable[[], bool] | None:
        if not link.recover_from_fault(reason):  # the route's re-attach path, with its backoff
            return None
        return lambda: link.up or link.closing

    return _Part("amqp10_link", f"1.0 link {link.name}",
                 {"route": link.route, "link": link.name, "connection": link.connection_name,
                  "address": link.address},
                 "link lost, re-attaching", recover, back=lambda: link.up or link.closing)


def _route(route: LegacyRoute) -> _Part:
    def recover(reason: str) -> Callable[[], bool]:
        # the broker requeues what the session holds unsettled at once; the connection
        # starts a fresh session after its re-attach pause
        return route.restart_session()

    return _Part("route", f"route {route.name}",
                 {"route": route.name, "connection": route.connection_name},
                 "0-10 session restarted", recover,
                 back=lambda: route.paused or route.ready)


def _amqp10_connection(handler: Any, event: Any) -> _Part:
    def recover(reason: str) -> Callable[[], bool] | None:
        attempts = handler.attempts
        transport = getattr(event, "transport", None) if event is not None else None
        if transport is None:
            return None
        transport.close_tail()  # proton reconnects
        transport.close_head()
        return lambda: handler.up and handler.attempts > attempts

    return _Part("amqp10_connection", f"1.0 connection {handler.name}",
                 {"connection": handler.name, "peer": handler.peer},
                 "transport dropped, reconnecting", recover, back=lambda: handler.up)


__all__ = ["KINDS", "ContainedContainer", "Faults", "contain", "faults_of"]
