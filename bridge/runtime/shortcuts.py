"""The loop's bookkeeping events, handled where they are queued instead of dispatched.

Theory of operation
-------------------
proton's container dispatches every event the same way: it wraps the C event in an
:class:`proton.Event` (looking up and wrapping its delivery, link, session, connection
and transport), finds its handler (the link's, the session's, the connection's, the
context's, else the container's own) and walks that handler and all its children, then
the global handler chain (:class:`~bridge.runtime.reactor.SkipDeliveries` →
proton's ``GlobalOverrides`` → :class:`~bridge.runtime.reactor.ReadAheadIO`), asking each
for an ``on_<event>`` method and calling ``on_unhandled`` where there is none.

Most events of a busy or a request/response loop are the loop's own bookkeeping, and only
one handler in those chains does anything with them: ``reactor_quiesced`` (a round of
events is over: the bridge's end-of-burst work, then the IO handler's ``select``; two to
three per round), ``selectable_readable`` (a socket to read: its owner's handler, or the
IO handler for an AMQP 1.0 socket) and ``selectable_updated`` (the IO handler's selector
takes note). An RPC through a façade made about 25 events per call, more than half of them
these, and proton's event layer was about half the loop's CPU.

:class:`EventShortcuts` gives each of those event types a *shortcut*: a function that
calls just the handler that acts on it, with a small stand-in for the event
(:class:`LoopEvent`: the context, ``selectable``, ``reactor``, ``container`` and ``type``,
what those handlers read). :class:`~bridge.runtime.reactor.DirectDeliveries` calls the
shortcut for the event at the head of proton's queue and pops it, exactly where it hands
watched links' deliveries over.

A shortcut is only installed, or taken, where it is the same as proton's dispatch:

- the container's global handler chain is the one :func:`~bridge.runtime.reactor.container`
  builds (otherwise no shortcut at all);
- the handlers the event would otherwise visit ignore it (:func:`ignores`: no
  ``on_<event>`` method and no ``on_unhandled`` of their own, nor any of their children) —
  checked once for the container's own handler, and per handler class for a selectable's
  handler (the hosted sockets, the listeners);
- ``selectable_readable`` is taken for a selectable with a handler of its own only when
  it has no AMQP 1.0 transport (the IO handler ignores those), and for one without a
  handler only when it has one (the IO handler reads it).

Two more shortcuts take events whose context is a C object. ``transport`` (a transport
has output or room for input; taken when the connection's handler, the container's and the
reconnect logic ignore it) only marks the transport's socket: the IO handler's update of
its interest and deadline — all proton's dispatch would do — runs once at the end of the
round (:meth:`~bridge.runtime.reactor.ReadAheadIO.touched`), however many such events the
round had (six or so per RPC through a façade), as interest matters only to the ``select``
that ends the round; no wrapper is made and no handler runs for the event. ``link_flow``
(a link's credit changed) runs its handler's ``on_link_flow``, when the handler's class
lists it in ``loop_event_methods`` (it reads only the event's ``link``). That one holds
exactly what proton's Event holds while it is dispatched (:class:`HeldEvent`): a reference
to the event's link, session, connection and transport, taken before the event leaves the
queue and given back after the handler, the stand-in's own wrapper first, then those four
in proton's order. proton's reference counting depends on that. When the last reference to
a link goes, its finalizer may keep the link (``pni_preserve_child``: its session is
live and the link is not freed, or freed but still "bound" — which a link stays for good
once the peer ended its session without detaching it, proton keeping its handle numbers)
and then drop the link's reference to its session; if nothing else holds the session it
is finalized right there, and its ``pni_free_children`` frees the link — after which the
outer ``pn_decref`` reads the link's count from freed memory and, reading 0, frees it
again (valgrind: object.c:290 reads a block freed by engine.c:493, under engine.c:986;
``tests/support/nested_finalize.py`` shows it with proton alone). proton's Event never
lets a link's last reference go before its session's, as it holds both and drops the
link's wrapper first. A first version of these shortcuts held only a wrapper of the link
(or transport), after popping the event: in a link_flow handler the link, session,
connection and transport each had one reference less than under proton's dispatch, and
the topology soak (``benchmarks/soak.py --topology``) aborted in proton with a double free
within minutes (2 of 2 runs; a third run, 2026-11-28, went 8 minutes clean).
``test_shortcuts_hold_what_protons_event_holds_while_the_handler_runs`` compares the
counts with proton's dispatch of the same exchange.

Every other event, and these where a condition fails, goes proton's way unchanged. An
exception in a shortcut is contained as the dispatched handler's would be
(:func:`~bridge.runtime.containment.contain`) and the event popped all the same.
``tests/bridge/test_event_shortcuts.py`` runs the loop with and without them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cproton import (
    pn_collector_peek,
    pn_decref,
    pn_event_connection,
    pn_event_context,
    pn_event_link,
    pn_event_session,
    pn_event_transport,
    pn_incref,
    void2py,
)
from proton import Connection, Event, Handler, Link, Transport
from proton._reactor import _Connector

from .containment import contain
from .loop import EndOfBurst

Shortcut = Callable[[Any], "Callable[[], None] | None"]
"""Given a queued event's C object: what to do for it instead of dispatching it (the
caller pops the event first), or None if it must be dispatched after all."""


class Unpredictable(Exception):
    """A handler's own ``on_unhandled`` could do anything with an event."""


def callees(handler: Any, method: str) -> list[Callable[[Any], None]]:
    """The methods proton's dispatch of ``method`` to ``handler`` calls: ``method`` of the
    handler and of each of its children, depth first (proton's no-op ``on_unhandled`` where
    one has none). Raises :class:`Unpredictable` if one has an ``on_unhandled`` of its own."""
    found: list[Callable[[Any], None]] = []

    def walk(one: Any) -> None:
        bound = getattr(one, method, None)
        if bound is not None:
            found.append(bound)
        else:
            unhandled = getattr(type(one), "on_unhandled", None)
            if unhandled is not None and unhandled is not Handler.on_unhandled:
                raise Unpredictable(f"{type(one).__name__}.on_unhandled")
        for child in getattr(one, "handlers", ()) or ():
            walk(child)

    if handler is not None:
        walk(handler)
    return found


def ignores(handler: Any, method: str) -> bool:
    """Whether proton's dispatch of ``method`` to ``handler`` calls nothing but proton's
    no-op ``Handler.on_unhandled`` (on it and on all its children)."""
    try:
        return not callees(handler, method)
    except Unpredictable:
        return False


def light(methods: list[Callable[[Any], None]], method: str) -> bool:
    """Whether every one of ``methods`` may be given a :class:`LoopEvent`: its class lists
    ``method`` in ``loop_event_methods`` (it reads only the event's ``link``, ``transport``,
    ``context`` and ``type``)."""
    return all(method in getattr(type(getattr(bound, "__self__", None)), "loop_event_methods", ())
               for bound in methods)


class LoopEvent:
    """What the handlers a shortcut calls read of an event (proton's :class:`Event` has
    the same attributes)."""

    __slots__ = ("container", "context", "link", "reactor", "selectable", "transport", "type")

    def __init__(self, reactor: Any, event_type: Any, context: Any, *, selectable: Any = None,
                 link: Any = None, transport: Any = None) -> None:
        self.reactor = self.container = reactor
        self.type = event_type
        self.context = context
        self.selectable, self.link, self.transport = selectable, link, transport


class HeldEvent(LoopEvent):
    """A :class:`LoopEvent` for an event whose context is a C object (a link, a transport),
    holding what proton's :class:`Event` holds while it is dispatched: a reference to each
    of the event's link, session, connection and transport (those it has), taken in that
    order before the event leaves the queue and given back in that order by :meth:`release`
    (proton's Event wraps them in that order and its attributes go in that order), after
    the stand-in has dropped its own wrappers (proton's Event drops its link's wrapper
    first). See the module docstring for why nothing less will do."""

    __slots__ = ("_held",)

    def __init__(self, reactor: Any, event_type: Any, impl: Any, context: Any, *,
                 link: Any = None, transport: Any = None) -> None:
        super().__init__(reactor, event_type, context, link=link, transport=transport)
        held = [one for one in (pn_event_link(impl), pn_event_session(impl),
                                pn_event_connection(impl), pn_event_transport(impl)) if one]
        for one in held:
            pn_incref(one)
        self._held = held

    def release(self) -> None:
        """Drop the wrappers, then the references, in proton's order (once)."""
        self.context = self.link = self.transport = None
        held, self._held = self._held, []
        for one in held:
            pn_decref(one)


class EventShortcuts:
    """Shortcuts by event type number, for :class:`~bridge.runtime.reactor.DirectDeliveries`
    to take at the head of the queue (module docstring)."""

    def __init__(self, reactor: Any, io: Any) -> None:
        self.reactor = reactor
        self.io = io
        self._quiesced = LoopEvent(reactor, Event.REACTOR_QUIESCED, reactor)
        self._queue = reactor._collector._impl
        self._ignoring: dict[tuple[type, str], bool] = {}
        """:func:`ignores` by handler class and method, for childless handlers."""
        self._transport_sockets: dict[Any, Any] = {}
        """The socket (selectable) of each AMQP 1.0 transport by its C object, for those
        whose connection's handler ignores ``transport`` (:meth:`transport`)."""
        main = reactor._handler
        self.by_type: dict[int, Shortcut] = {}
        if ignores(main, "on_reactor_quiesced") and ignores(
                getattr(reactor, "handler", None), "on_reactor_quiesced"):
            self.by_type[Event.REACTOR_QUIESCED.number] = self.quiesced
        self._main_reads = not ignores(main, "on_selectable_readable")
        self.by_type[Event.SELECTABLE_READABLE.number] = self.readable
        self._main_updates = not ignores(main, "on_selectable_updated")
        self.by_type[Event.SELECTABLE_UPDATED.number] = self.updated
        # proton's GlobalOverrides also hands connection events to the connection's
        # reconnect logic (a _Connector): it must ignore these two as well
        overrides = _Connector.__new__(_Connector)
        if ignores(overrides, "on_transport") and ignores(overrides, "on_link_flow"):
            self._main_transport = ignores(main, "on_transport")
            self.by_type[Event.TRANSPORT.number] = self.transport
            self.by_type[Event.LINK_FLOW.number] = self.link_flow

    def quiesced(self, impl: Any) -> Callable[[], None]:
        """A round is over: the end-of-burst work, then, if that queued nothing, the IO
        handler's writes and ``select`` (what ``SkipDeliveries`` and ``ReadAheadIO`` do)."""
        return self._end_round

    def _end_round(self) -> None:
        EndOfBurst.of(self.reactor).quiesced()
        if not pn_collector_peek(self._queue):  # (else: the round goes on, as in proton)
            self._io(self.io.on_reactor_quiesced, self._quiesced)

    def _io(self, method: Callable[[Any], None], event: LoopEvent) -> None:
        """The IO handler's ``method``; a fault in it is contained as the global
        handler's is when proton dispatches (``entry=io``)."""
        try:
            method(event)
        except Exception as exc:
            contain(self.reactor, exc, entry="io", event=event)

    def readable(self, impl: Any) -> Callable[[], None] | None:
        """A socket to read: its owner's handler reads it (a hosted legacy socket, a
        listener), or the IO handler does (an AMQP 1.0 socket)."""
        return self.reader(void2py(pn_event_context(impl)))

    def reader(self, sel: Any) -> Callable[[], None] | None:
        """What reading the selectable ``sel`` is (:meth:`readable`), None where proton's
        dispatch must do it; the IO handler calls it for the sockets ``select`` found
        readable instead of queueing their events (``ReadAheadIO.reader``)."""
        handler = getattr(sel, "handler", None)  # (as proton's Event.handler finds it)
        if handler is not None:
            method = getattr(handler, "on_selectable_readable", None)
            if method is None or getattr(sel, "_transport", None) \
                    or getattr(handler, "handlers", None):
                return None
            return lambda: method(
                LoopEvent(self.reactor, Event.SELECTABLE_READABLE, sel, selectable=sel))
        if not getattr(sel, "_transport", None) or self._main_reads:
            return None
        return lambda: self._io(self.io.on_selectable_readable, LoopEvent(
            self.reactor, Event.SELECTABLE_READABLE, sel, selectable=sel))

    def updated(self, impl: Any) -> Callable[[], None] | None:
        """The selector takes note of what a selectable now waits for (the IO handler's
        only work for ``selectable_updated``)."""
        sel = void2py(pn_event_context(impl))
        handler = getattr(sel, "handler", None)  # (as proton's Event.handler finds it)
        if handler is None:
            if self._main_updates:
                return None
        elif not self._ignored_by(handler, "on_selectable_updated"):
            return None
        return lambda: self._io(self.io.on_selectable_updated,
                                LoopEvent(self.reactor, Event.SELECTABLE_UPDATED, sel,
                                          selectable=sel))

    def transport(self, impl: Any) -> Callable[[], None] | None:
        """A transport has output to write or room to read: the IO handler updates its
        socket's interest — at the end of the round, once, however many such events the
        round had (:meth:`~bridge.runtime.reactor.ReadAheadIO.touched`; its connection's
        handler, if any, ignores the event). What a transport's socket is, and that its
        connection's handler ignores the event, is looked up once per transport."""
        transport_impl = pn_event_transport(impl)
        selectable = self._transport_sockets.get(transport_impl)
        if selectable is not None:
            transport = selectable._transport
            if transport is not None and transport._impl == transport_impl:
                return lambda: self.io.touched(selectable)
            del self._transport_sockets[transport_impl]  # (a socket that went; or reused)
        connection = pn_event_connection(impl)
        handler = Connection.wrap(connection).handler if connection else None
        if handler is None:
            if not self._main_transport:
                return None
        elif not self._ignored_by(handler, "on_transport"):
            return None
        wrapper = Transport.wrap(transport_impl)
        selectable = wrapper._selectable if wrapper is not None else None
        if not selectable:
            return self._nothing  # (no socket yet, or none any more: proton does nothing)
        self._transport_sockets[transport_impl] = selectable
        return lambda: self.io.touched(selectable)

    @staticmethod
    def _nothing() -> None:
        pass

    def forget_socket(self, selectable: Any) -> None:
        """``selectable`` is gone: no transport's events are looked up to it any more."""
        for key in [key for key, one in self._transport_sockets.items() if one is selectable]:
            del self._transport_sockets[key]

    def link_flow(self, impl: Any) -> Callable[[], None] | None:
        """A link's credit changed: its handler's ``on_link_flow`` (the global handlers
        ignore it), when that handler takes a :class:`LoopEvent` (:func:`light`)."""
        link = Link.wrap(pn_event_link(impl))
        try:
            methods = callees(link.handler, "on_link_flow")
        except Unpredictable:
            return None
        if link.handler is None or not light(methods, "on_link_flow"):
            return None
        event = HeldEvent(self.reactor, Event.LINK_FLOW, impl, link, link=link)
        del link  # (the event's wrapper is the only one: it goes first at release)

        def run() -> None:
            try:
                for method in methods:
                    try:
                        method(event)
                    except Exception as exc:  # the handler's fault, as when proton dispatched
                        contain(self.reactor, exc, entry="event",
                                domain=getattr(method, "__self__", None))
            finally:
                event.release()
        return run

    def _ignored_by(self, handler: Any, method: str) -> bool:
        if getattr(handler, "handlers", None):
            return ignores(handler, method)
        key = (type(handler), method)
        known = self._ignoring.get(key)
        if known is None:
            known = self._ignoring[key] = ignores(handler, method)
        return known


__all__ = ["EventShortcuts", "HeldEvent", "LoopEvent", "Shortcut", "Unpredictable", "callees",
           "ignores", "light"]
