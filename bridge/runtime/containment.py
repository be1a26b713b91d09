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
2. The *fault domain* is the outermost object of the traceback that takes the blame:
   each part of the bridge implements :class:`FaultDomain` (``fault_part(method,
   event)``, returning a :class:`Part`: its kind, names and how it recovers) — a hosted
   0-10 socket (its owner's: a legacy connection or a façade client), an AMQP 1.0
   link, a route, a façade subscription, the AMQP 1.0 connection handler, the
   bridge's own timers.  Frames of generic dispatchers (proton, timer and call
   wrappers, lambdas) have none and are skipped.  This module imports none of the
   parts (they import it), so it sits below all of them.
3. :func:`contain` logs one ERROR line with the traceback (``event=handler_fault``,
   ``kind``, ``entry``, the names), counts it (``amqp_bridge_faults_total{kind}``,
   plain ints in :class:`Faults`, read by the metrics thread) and recovers the domain
   locally — the same paths a network fault takes:

   * legacy connection: connection.close (connection-forced), transport dropped,
     reconnect with backoff (:meth:`bridge.legacy.amqp010.LegacyConnection.reset`); its
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
culprit cannot hold up the others: :class:`bridge.runtime.EndOfBurst`'s
end-of-burst batch (one route's work failing does not drop the others') and
:class:`bridge.runtime.LoopCalls` (the calls queued after a failing one still run).

Only permanent faults (:mod:`bridge.security.tls`) end the process, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol

from proton import Event, Handler
from proton import _events as proton_events
from proton._events import EventBase
from proton.reactor import Container

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
    part = _describe(domain, exc.__traceback__, event, entry)
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


class Part:
    """A fault domain: what to call it, and how it recovers.

    ``kind`` is the ``kind`` label of ``amqp_bridge_faults_total`` (:data:`KINDS`),
    ``label`` and ``names`` what the log line says; ``recover(reason)`` does the local
    recovery and returns a check that tells when the part is back (the part is
    impaired until then), or None when nothing stays down; ``back`` is that check when
    the recovery itself failed.
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


class FaultDomain(Protocol):
    """A part of the bridge that can be blamed for a fault and recover from it.

    Connections, links, routes, façade clients and listeners implement it; this module
    imports none of them (they import it), so a new kind of part needs no change here.
    """

    def fault_part(self, method: str, event: Any) -> Part | None:
        """The part to blame for a fault raised in this object's ``method`` (``""``
        when proton dispatched ``event`` to the object itself), or None when the fault
        is another part's work (look further in)."""


def _find_part(tb: TracebackType | None, event: Any) -> Part | None:
    """The outermost part of the bridge in the traceback that takes the blame: a
    handler proton dispatched to (for a timer task, the owner of the timer's
    function), else a method's ``self``."""
    while tb is not None:
        frame = tb.tb_frame
        code = frame.f_code
        if code is _DISPATCH or code is _DISPATCH_ONE:
            handler = frame.f_locals.get("handler")
            fn = getattr(handler, "fn", None)  # a timer task's handler
            candidates = [(handler, ""), (getattr(fn, "__self__", None),
                                          getattr(fn, "__name__", ""))]
        else:
            candidates = [(frame.f_locals.get("self"), code.co_name)]
        for obj, method in candidates:
            part = _part_of(obj, method, event)
            if part is not None:
                return part
        tb = tb.tb_next
    return None


def _part_of(obj: Any, method: str, event: Any) -> Part | None:
    describe = getattr(type(obj), "fault_part", None) if obj is not None else None
    return describe(obj, method, event) if callable(describe) else None


def _describe(domain: Any, tb: TracebackType | None, event: Any, entry: str) -> Part:
    """The part ``domain`` (given by the caller, else found in the traceback) stands
    for; failing both, the 1.0 connection of the event, else the loop itself."""
    part = _part_of(domain, "", event) if domain is not None else _find_part(tb, event)
    if part is None and event is not None and getattr(event, "transport", None) is not None:
        connection = getattr(event, "connection", None)
        part = _part_of(getattr(connection, "handler", None), "", event)
    if part is None:
        kind = "io" if entry == "io" else "bridge" if domain is None else "handler"
        label = "the event loop" if domain is None else type(domain).__name__
        part = Part(kind, label, {}, "logged")
    return part


__all__ = ["KINDS", "ContainedContainer", "FaultDomain", "Faults", "Part", "contain", "faults_of"]
