"""The bridge's proton container, tuned for throughput (reads, dispatch, garbage collection).

proton's stock IO handler reads at most what the AMQP 1.0 transport's input buffer
has room for — 8 KiB at first, and it only grows when a single frame does not fit.
With 1 KiB messages that is about five transfers per ``select`` round, and every
round costs a dozen Python-dispatched bookkeeping events (``reactor_quiesced``,
``selectable_updated``, ``selectable_readable``, ``transport``) plus the bridge's
end-of-burst work (a 0-10 ``session.flush``, a socket send, a credit top-up). The
bridge spent more CPU on those rounds than on the messages in them.

:class:`ReadAheadIO` reads up to :data:`READ_SIZE` octets per readable socket and
feeds them to the transport in as many pushes as its buffer takes; proton queues
the resulting events and the container dispatches them in the same round, so a
busy connection moves dozens of messages per round. Nothing else changes: the
bytes, their order and every event are the ones the stock handler produces, just
in fewer, larger rounds.

:class:`SkipDeliveries` spares every delivery event a trip through proton's global
handler, which has nothing to do for it, and :func:`tune_gc` makes the garbage
collector run in fewer, larger batches (and fully on a timer, so that cycles left by
clients that come and go do not pile up). Together with the read-ahead they took the
bridge's CPU per 1 KiB message (1.0 → 0-10) from about 140 µs to about 85 µs.

:class:`DirectDeliveries` goes further for the links that ask for it (every
:class:`~bridge.amqp10.link.Amqp10Link`): a delivery event on such a link — one per
message each way, the only per-message event the loop sees — is handed straight to the
link's callback from the head of proton's event queue, without the ``Event`` object
proton would build for it (five wrapped C objects: delivery, link, session, connection,
transport) and its two trips through the handler chains, which cost more than the
bridge's own work on the message.

The same global handler tells the container's :class:`~bridge.runtime.EndOfBurst` when
a round of events is over (``reactor_quiesced``): the bridge's per-burst work and
writes run then, once, before the loop waits for I/O again.

Two more changes are for latency, the bridge's share of a request/response round trip
(an RPC through a façade crosses the bridge four times): :class:`ReadAheadIO` writes
what the AMQP 1.0 transports have to send at the end of each burst, as the hosted
legacy sockets do, where proton waited for ``select`` to report the socket writable —
one more loop round, a ``select`` that returns at once, on every hop; and it tells the
selector only what changed (:func:`~bridge.runtime.sockets.set_interest`), where
proton sent a ``selectable_updated`` event through every handler after each transport
event. With the hosted sockets doing the same, an RPC through the 0-9-1 façade went
from about 40 to about 20 loop events, and from about 7 to about 5 loop rounds.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable
from functools import cached_property
from typing import Any

from cproton import (
    PN_DELIVERY,
    pn_collector_peek,
    pn_collector_pop,
    pn_decref,
    pn_delivery_link,
    pn_delivery_local,
    pn_delivery_remote,
    pn_delivery_remote_state,
    pn_delivery_update,
    pn_event_delivery,
    pn_event_type,
    pn_incref,
    pn_link_session,
)
from proton import Delivery, Disposition, Event, Handler, Link, ProtonException
from proton._delivery import DispositionType
from proton.handlers import IOHandler
from proton.reactor import Container

from .containment import ContainedContainer, contain
from .loop import EndOfBurst, Timer
from .selector import selector
from .shortcuts import EventShortcuts, Shortcut
from .sockets import set_interest

log = logging.getLogger(__name__)

READ_SIZE = 256 * 1024
"""Octets read from a readable AMQP 1.0 socket at once (what the kernel has, up to this)."""


class ReadAheadIO(IOHandler):  # type: ignore[misc]
    """proton's IO handler, reading :data:`READ_SIZE` octets per readable event, writing
    at the end of each burst and telling the selector only what changed."""

    def __init__(self) -> None:
        super().__init__()
        self._selector = selector()  # (epoll where there is: bridge.runtime.selector)
        self._writers: set[Any] = set()
        """Selectables whose AMQP 1.0 transport has output pending (as last updated)."""
        self._touched: set[Any] = set()
        """Selectables whose transport had a ``transport`` event this round, taken by the
        event shortcuts (:meth:`touched`): updated (and written) at the round's end."""
        self.forget: Callable[[Any], None] | None = None
        """Told of each selectable that is gone (the event shortcuts' lookup of sockets)."""
        self.reader: Callable[[Any], Callable[[], None] | None] | None = None
        """What reading a readable selectable is, without an event (the event shortcuts'
        :meth:`~bridge.runtime.shortcuts.EventShortcuts.reader`), None where proton's
        dispatch of its ``selectable_readable`` event must do it."""

    def touched(self, selectable: Any) -> None:
        """A ``transport`` event for ``selectable``'s transport: what proton's
        :meth:`on_transport` does (update the selectable's interest and deadline) is done
        at the end of the round (:meth:`on_reactor_quiesced`), once for all of the
        round's events — interest matters only when ``select`` is asked, and proton's
        update reads the transport's state as it is then."""
        self._touched.add(selectable)

    def update(self, transport: Any, selectable: Any, now: float) -> None:  # type: ignore[override]
        """proton's update (the selectable watches for what its transport can take and
        has to send, and for its next tick), through
        :func:`~bridge.runtime.sockets.set_interest`: the selector hears of a change only."""
        self._watch(transport, selectable, now, None)

    def _watch(self, transport: Any, selectable: Any, now: float,
               tell: Callable[[Any], None] | None) -> None:
        reading, writing = selectable.reading, selectable.writing
        try:
            reading = transport.capacity() > 0
        except ProtonException:
            self._drop_closed(transport, selectable)
        try:
            writing = transport.pending() > 0
        except ProtonException:
            self._drop_closed(transport, selectable)
        if writing:
            self._writers.add(selectable)
        else:
            self._writers.discard(selectable)
        set_interest(selectable, reading, writing, transport.tick(now), tell=tell)

    @staticmethod
    def _drop_closed(transport: Any, selectable: Any) -> None:
        if transport.closed:  # (as proton does)
            selectable.terminate()
            selectable._transport = None
            transport._selectable = None

    def on_reactor_quiesced(self, event: Any) -> None:
        """The burst is over: write what the AMQP 1.0 transports have to send now, then
        wait in ``select`` as proton does (:meth:`write_pending`)."""
        reactor = event.reactor
        if not reactor.quiesced:
            return  # (as proton's: the events queued since go first, then a new round end)
        if self._touched:
            # each is updated as proton's on_transport does, with its writes: a selectable
            # in _writers is written if it has output, and watched in any case
            self._writers |= self._touched
            self._touched.clear()
        if self._writers:
            self.write_pending(reactor.now)
        # The writes queue transport events (taken by the shortcuts as the quiesced check
        # peeks); anything else they queued goes first, then a new round end.
        if not reactor.quiesced:
            return
        for selectable in list(self._touched):  # (marked by those events: watched again)
            transport = selectable._transport
            if transport and not selectable.is_terminal:
                self._watch(transport, selectable, reactor.now, self._selector.update)
        self._touched.clear()
        # proton's wait, as its IOHandler.on_reactor_quiesced has it
        reactor.timer_deadline  # noqa: B018 - (drops cancelled timers from the heap's top)
        readable, writable, expired = self._selector.select(reactor.timeout)
        reactor.mark()
        reader = self.reader
        for selectable in readable:
            # read now what the shortcut would read when its event came up (events of
            # different sockets have no order to keep: select reports them in any)
            read = reader(selectable) if reader is not None else None
            if read is None:
                selectable.readable()
                continue
            try:
                read()
            except Exception as exc:  # (contained as the shortcut's would be)
                contain(reactor, exc, entry="event")
        for selectable in writable:
            selectable.writable()
        for selectable in expired:
            selectable.expired()
        reactor.yield_()

    def write_pending(self, now: float) -> None:
        """Send each AMQP 1.0 transport's pending output now, as far as its socket takes it.

        proton writes only when ``select`` reports the socket writable: a frame made in a
        burst (a transfer, a disposition, credit) went out one more loop round later — a
        ``select`` that returns at once, its events dispatched — on every hop of a
        request/response exchange. A socket whose kernel buffer is full keeps its
        writing interest and is written when ``select`` says it can be."""
        for selectable in list(self._writers):
            transport = selectable._transport
            if not transport or selectable.is_terminal:
                self._writers.discard(selectable)
                continue
            try:
                pending = transport.pending()
            except ProtonException:  # (closed: dropped by _watch as proton drops it)
                pending = 0
            if pending > 0:
                try:  # (the socket itself: the selectable's __getattr__ forwards to it)
                    sent = selectable._delegate.send(transport.peek(pending))
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError as exc:
                    log.error("AMQP 1.0 socket: cannot send: %r", exc)
                    transport.close_head()
                else:
                    transport.pop(sent)
            # (the selector watches it already: told directly, no event to dispatch)
            self._watch(transport, selectable, now, self._selector.update)

    def on_selectable_final(self, event: Any) -> None:
        self._writers.discard(event.selectable)
        self._touched.discard(event.selectable)
        if self.forget is not None:
            self.forget(event.selectable)
        super().on_selectable_final(event)

    def on_selectable_readable(self, event: Any) -> None:
        selectable = event.selectable
        transport = selectable._transport
        if not transport:
            return  # an acceptor: it has no transport, and proton does nothing here either
        capacity = transport.capacity()
        if capacity > 0:
            try:
                data = selectable._delegate.recv(READ_SIZE)
            except OSError as exc:
                log.error("AMQP 1.0 socket: cannot receive: %r", exc)
                transport.close_tail()
            else:
                if data:
                    _push(transport, data)
                else:
                    self.on_selectable_error(event)  # end of stream: as proton handles it
        self.update(transport, selectable, selectable._reactor.now)

    def on_selectable_expired(self, event: Any) -> None:
        # proton's handler assumes every selectable carries an AMQP 1.0 transport; a
        # hosted 0-10 socket (or the login waker) has none: its deadline is its own
        # handler's business (heartbeats), and nothing is left to do here
        if event.selectable._transport:
            super().on_selectable_expired(event)

    def on_selectable_error(self, event: Any) -> None:
        if event.selectable._transport:
            super().on_selectable_error(event)


def _push(transport: Any, data: bytes) -> None:
    """Give ``data`` to ``transport`` in pieces its input buffer can take.

    The transport decodes every whole frame of a piece before it returns, so its
    buffer has room again for the next one (it grows when a frame is larger than
    the buffer). Only a transport whose input side is closed (capacity < 0, after
    a protocol error or the end of the connection) leaves octets unread: there is
    nobody left to give them to.
    """
    view = memoryview(data)
    while view:
        capacity = transport.capacity()
        if capacity <= 0:
            log.debug("AMQP 1.0 transport: input closed, %d octets left unread", len(view))
            return
        transport.push(bytes(view[:capacity]))
        view = view[capacity:]


class SkipDeliveries(Handler):  # type: ignore[misc]
    """proton's global handler, minus its work for nobody on every delivery.

    The container hands each event to the handlers of its connection, session or link
    and then to the global handler, which passes it on to the connection's reconnect
    logic and to the IO handler. Neither handles deliveries — by far the most frequent
    event — so :meth:`on_delivery` ends there; every other event goes on to ``inner``.
    ``reactor_quiesced`` also runs the container's end-of-burst batch
    (:meth:`EndOfBurst.quiesced <bridge.runtime.EndOfBurst.quiesced>`).
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def on_delivery(self, event: Any) -> None:
        pass

    def on_reactor_quiesced(self, event: Any) -> None:
        EndOfBurst.of(event.context).quiesced()  # its context is the container
        event.dispatch(self.inner)

    def on_unhandled(self, method: str, event: Any) -> None:
        event.dispatch(self.inner)


_DISPOSITION_TYPES: dict[int, DispositionType] = dict(DispositionType._value2member_map_)
"""proton's delivery states by number (what ``DispositionType.or_int`` looks up)."""


class LightDelivery(Delivery):  # type: ignore[misc]
    """A :class:`proton.Delivery` without proton's per-wrapper bookkeeping.

    proton's wrapper of a C delivery looks up (and the first time creates) a Python
    dictionary in the delivery's record and two :class:`~proton.Disposition` objects
    for it: about 6 µs per wrap, and a message crosses two or three (sent, outcome;
    received, settled) — more than the rest of the loop's work for it. This one holds
    the C object (a reference, as proton's does) and its link's session (released after
    the delivery, as proton's Event releases them: see :meth:`__del__`) and makes its
    dispositions only when
    asked (``local`` before an outcome other than accepted is set, ``remote`` to read a
    refusal's condition); every property and method of :class:`proton.Delivery` works
    on it. Attributes set on it stay on this object (proton's would keep them in the C
    record, for other wrappers of the same delivery to see: the bridge sets none)."""

    def __init__(self, impl: Any) -> None:
        pn_incref(impl)
        session = pn_link_session(pn_delivery_link(impl))
        pn_incref(session)
        self.__dict__["_impl"] = impl
        self.__dict__["_session"] = session
        self.__dict__["_attrs"] = {}

    def __del__(self) -> None:
        # the delivery first, then its session, as proton's Event releases them: when a
        # delivery (or a link it holds) is let go after the last reference to its session,
        # the link's finalizer can finalize the session, which frees the link under it
        # (a double free; bridge.runtime.shortcuts, "HeldEvent")
        pn_decref(self.__dict__["_impl"])
        pn_decref(self.__dict__["_session"])

    @property
    def remote_state(self) -> Any:
        """As :attr:`proton.Delivery.remote_state` (the same enum member, or the int proton
        has no member for), by a dictionary lookup where proton calls the enum class."""
        state = pn_delivery_remote_state(self._impl)
        return _DISPOSITION_TYPES.get(state, state)

    def update(self, state: Any) -> None:
        """As :meth:`proton.Delivery.update`; with no local disposition made (so none of its
        data, annotations or condition set), just the state, which is all proton's would
        write then."""
        if "local" in self.__dict__:
            super().update(state)
        else:
            pn_delivery_update(self._impl, state)

    @cached_property
    def local(self) -> Disposition:  # type: ignore[override]
        return Disposition(pn_delivery_local(self._impl), True)

    @cached_property
    def remote(self) -> Disposition:  # type: ignore[override]
        return Disposition(pn_delivery_remote(self._impl), False)


class DirectDeliveries:
    """The delivery events of watched links, handed straight to their callbacks.

    It takes the place of the container's ``Collector.peek``, which the container calls
    for the next event to dispatch: while the event at the head of the queue is a
    delivery on a watched link, it calls that link's callback with the ``Delivery`` and
    pops the event; the first other event it returns as proton would. The delivery is a
    :class:`LightDelivery` (proton's wrapper costs more than the bridge's own work on it). A callback's
    exception is contained like a handler's (the event is popped all the same), so it
    never reaches proton's loop. Nothing changes for other events or unwatched links
    (a late delivery on a link its owner gave up goes the usual way, to be ignored).

    Only deliveries are taken this way, and they never come first in a round of events
    (they come of reading a socket, itself an event), so the container still sees each
    round end and sends ``reactor_quiesced`` as before.
    """

    def __init__(self, reactor: Container) -> None:
        self.reactor = reactor
        collector = reactor._collector
        self._queue = collector._impl
        self.shortcuts: dict[int, Shortcut] = {}
        """:class:`~bridge.runtime.shortcuts.EventShortcuts` by event type number (none
        unless :func:`container` installs them)."""
        self._watched: dict[Any, tuple[Link, Callable[[Delivery], None]]] = {}
        """Callbacks by the link's C object (cffi pointers hash and compare by address;
        the entry keeps the link's wrapper, and with it the C object, alive)."""
        collector.peek = self.peek  # type: ignore[method-assign]

    @staticmethod
    def of(reactor: Any) -> DirectDeliveries | None:
        """The container's :class:`DirectDeliveries`, None if it has none (a plain proton
        container: its deliveries go the usual way)."""
        direct = getattr(reactor, "direct_deliveries", None)
        return direct if isinstance(direct, DirectDeliveries) else None

    def watch(self, link: Link, callback: Callable[[Delivery], None]) -> None:
        """Hand ``link``'s deliveries to ``callback`` until :meth:`unwatch`."""
        self._watched[link._impl] = (link, callback)

    def unwatch(self, link: Link) -> None:
        """``link``'s deliveries go the usual way again."""
        self._watched.pop(link._impl, None)

    def peek(self) -> Event | None:
        """The event at the head of the queue, after running the watched deliveries and
        the :attr:`shortcuts` there."""
        queue = self._queue
        watched = self._watched
        shortcuts = self.shortcuts
        while True:
            impl = pn_collector_peek(queue)
            if not impl:
                return None
            kind = pn_event_type(impl)
            if kind == PN_DELIVERY:
                if watched:
                    delivery = pn_event_delivery(impl)
                    entry = watched.get(pn_delivery_link(delivery))
                    if entry is not None:
                        try:
                            entry[1](LightDelivery(delivery))
                        except Exception as exc:
                            contain(self.reactor, exc, entry="event")
                        pn_collector_pop(queue)
                        continue
            else:
                shortcut = shortcuts.get(kind)
                action = shortcut(impl) if shortcut is not None else None
                if action is not None:
                    pn_collector_pop(queue)
                    try:
                        action()
                    except Exception as exc:
                        contain(self.reactor, exc, entry="event")
                    continue
            return Event.wrap(impl)


def container(handler: Any) -> Container:
    """A proton container running ``handler``, reading with :class:`ReadAheadIO`, sparing
    deliveries the global handler (:class:`SkipDeliveries`), handing watched links'
    deliveries over directly (:class:`DirectDeliveries`, as ``direct_deliveries``) and
    containing the handlers' faults (:class:`~bridge.runtime.containment.ContainedContainer`)."""
    io = ReadAheadIO()
    reactor = ContainedContainer(handler, global_handler=io)
    reactor.global_handler = SkipDeliveries(reactor.global_handler)
    direct = reactor.direct_deliveries = DirectDeliveries(reactor)  # type: ignore[attr-defined]
    if reactor.global_handler.inner.base is io:  # (proton's GlobalOverrides around it)
        shortcuts = EventShortcuts(reactor, io)
        direct.shortcuts = shortcuts.by_type
        io.forget = shortcuts.forget_socket
        io.reader = shortcuts.reader
    return reactor


def without_shortcuts(reactor: Container) -> None:
    """Every event of ``reactor`` (a :func:`container`) dispatched proton's way from now on:
    no event shortcuts, no reads without an event (for comparing the two)."""
    reactor.direct_deliveries.shortcuts = {}  # type: ignore[attr-defined]
    io = reactor.global_handler.inner.base  # type: ignore[attr-defined]
    io.reader = None


GC_INTERVAL = 10.0
"""Seconds between the full garbage collections :func:`tune_gc` schedules on the loop."""


def tune_gc(container: Container, interval: float = GC_INTERVAL) -> None:
    """Collect garbage less often while the loop runs, and fully every ``interval`` seconds.

    Everything built at start-up (configuration, modules, proton objects) is moved
    out of the collector's sight (``gc.freeze``), and the youngest generation is
    collected every 20,000 allocations instead of 700: the message path allocates
    a few dozen short-lived objects per message, almost none of them in cycles, and
    the default threshold ran a collection every couple of dozen messages (about
    3 % of the bridge's CPU at 10,000 messages/s).

    That threshold counts allocations *minus* deallocations, and the loop frees nearly
    everything it allocates: under steady load it was not reached for many minutes
    (none in 5 minutes of 166 messages/s in ``benchmarks/soak.py``), and a full
    collection not for hours. The cycles a client connection, a subscription or a
    replaced link leaves behind (socket ↔ selectable ↔ engine ↔ handlers, link ↔ its
    owner) so stayed in memory for good: the resident size grew with every façade
    client that came and went (+35 MiB/h in a 40-minute soak). The full collection on
    a timer bounds that garbage to what ``interval`` seconds make; it walks only what
    was created after the freeze (a few thousand objects at rest: well under a
    millisecond).
    """
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)
    collector = PeriodicCollection(container, interval)
    container.schedule(interval, Timer(collector.collect))


class PeriodicCollection:
    """A full garbage collection every ``interval`` seconds on the loop (:func:`tune_gc`)."""

    def __init__(self, container: Container, interval: float) -> None:
        self.container, self.interval = container, interval

    def collect(self) -> None:
        self.container.schedule(self.interval, Timer(self.collect))
        gc.collect()


__all__ = ["GC_INTERVAL", "READ_SIZE", "DirectDeliveries", "LightDelivery", "PeriodicCollection",
           "ReadAheadIO", "SkipDeliveries", "container", "tune_gc", "without_shortcuts"]
