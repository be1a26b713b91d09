"""The loop's event shortcuts (bridge/runtime/shortcuts.py): the same exchange with and
without them, what they take and what they leave to proton's dispatch."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from proton import Connection, Event, Handler
from proton._events import EventBase

from bridge.runtime import reactor
from bridge.runtime.shortcuts import HeldEvent, Unpredictable, callees, ignores
from tests.bridge.test_reactor import _PingPong
from tests.support.bridge import free_port
from tests.support.memory_pair import MemoryPair
from tests.support.proton_refs import refcount

SHORTCUT_TYPES = {Event.REACTOR_QUIESCED, Event.SELECTABLE_READABLE, Event.SELECTABLE_UPDATED,
                  Event.TRANSPORT}


def _run(handler: Any, *, shortcuts: bool, monkeypatch: pytest.MonkeyPatch) -> set[Any]:
    """Run ``handler`` in the bridge's container (its shortcuts removed unless
    ``shortcuts``); the types of the events proton dispatched to the global handler."""
    container = reactor.container(handler)
    if not shortcuts:
        reactor.without_shortcuts(container)
    dispatched: set[Any] = set()
    dispatch = EventBase.dispatch

    def recording(event: Any, to: Any, type: Any = None) -> None:
        if to is container.global_handler:
            dispatched.add(event.type)
        dispatch(event, to, type)

    monkeypatch.setattr(EventBase, "dispatch", recording)
    container.run()
    return dispatched


@pytest.mark.parametrize("shortcuts", [True, False])
def test_the_loop_moves_the_same_exchange_with_and_without_shortcuts(
        shortcuts: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    handler = _PingPong(free_port(), 40)
    dispatched = _run(handler, shortcuts=shortcuts, monkeypatch=monkeypatch)
    assert (handler.sent, handler.accepted) == (40, 40)
    if shortcuts:  # taken where they are queued: proton never dispatched one of them
        assert not dispatched & SHORTCUT_TYPES
    else:
        assert dispatched >= SHORTCUT_TYPES


def test_transport_events_are_settled_at_the_rounds_end_and_their_sockets_forgotten() -> None:
    """Under the shortcuts a ``transport`` event only marks its socket (the IO handler
    updates it at the end of the round): the exchange still completes, and once its
    connections are gone no transport's socket is remembered."""
    handler = _PingPong(free_port(), 40)
    container = reactor.container(handler)
    io = container.global_handler.inner.base
    marked: list[Any] = []
    touched = io.touched

    def counting(selectable: Any) -> None:
        marked.append(selectable)
        touched(selectable)

    io.touched = counting
    container.run()
    assert (handler.sent, handler.accepted) == (40, 40)
    assert marked  # (the events were taken by the shortcut)
    assert not io._touched and not io.forget.__self__._transport_sockets


class _Quiescing(_PingPong):
    rounds = 0

    def on_reactor_quiesced(self, event: Any) -> None:
        self.rounds += 1


def test_a_main_handler_that_wants_quiesced_events_still_gets_each(
        monkeypatch: pytest.MonkeyPatch) -> None:
    handler = _Quiescing(free_port(), 20)
    dispatched = _run(handler, shortcuts=True, monkeypatch=monkeypatch)
    assert handler.accepted == 20
    assert handler.rounds >= 20  # one round at least per exchange
    assert Event.REACTOR_QUIESCED in dispatched  # (so proton's IO handler got it too)


class _FlowWatcher:
    """A link handler recording the events its ``on_link_flow`` is given, then stopping
    the exchange (``done``)."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.done: Any = None

    def on_link_flow(self, event: Any) -> None:
        self.events.append((type(event), event.link))
        self.done()


class _LightFlowWatcher(_FlowWatcher):
    loop_event_methods: ClassVar[frozenset[str]] = frozenset({"on_link_flow"})


class _FlowPingPong(_PingPong):
    guard_fired = False

    def on_timer_task(self, event: Any) -> None:
        self.guard_fired = True
        super().on_timer_task(event)

    def __init__(self, port: int, count: int, watcher: _FlowWatcher) -> None:
        super().__init__(port, count)
        self.watcher = watcher
        watcher.done = self.stop

    def on_start(self, event: Any) -> None:
        super().on_start(event)
        self.sender.handler = self.watcher  # (proton wraps it in a Handler of its own)


@pytest.mark.parametrize("light", [True, False])
def test_link_flow_reaches_the_links_handler_light_only_where_it_says_it_may(
        light: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    watcher = _LightFlowWatcher() if light else _FlowWatcher()
    handler = _FlowPingPong(free_port(), 1, watcher)
    _run(handler, shortcuts=True, monkeypatch=monkeypatch)
    assert watcher.events  # (the receiver's credit; then it stopped, long before its guard)
    assert not handler.guard_fired
    kinds = {kind for kind, _ in watcher.events}
    assert kinds == ({HeldEvent} if light else {Event})
    assert all(link == handler.sender for _, link in watcher.events)


def test_callees_follow_protons_dispatch_order() -> None:
    class Leaf:
        def on_link_flow(self, event: Any) -> None:
            pass

    class Unhandling(Handler):  # type: ignore[misc]
        def on_unhandled(self, method: str, *args: Any) -> None:
            pass

    first, second = Leaf(), Leaf()
    parent = Handler()
    parent.add(first)
    parent.add(Handler())
    parent.add(second)
    assert callees(parent, "on_link_flow") == [first.on_link_flow, second.on_link_flow]
    assert ignores(parent, "on_transport")
    assert not ignores(parent, "on_link_flow")
    parent.add(Unhandling())
    with pytest.raises(Unpredictable):
        callees(parent, "on_transport")
    assert not ignores(parent, "on_transport")  # it could do anything with it
    assert ignores(None, "on_transport")


def test_the_reference_counts_read_are_protons() -> None:
    connection = Connection()
    assert refcount(connection._impl) == 1  # (its wrapper's)
    again = Connection.wrap(connection._impl)
    assert refcount(connection._impl) == 2
    del again
    assert refcount(connection._impl) == 1


class _Holdings:
    """Records, each time the handler proton's dispatch or a shortcut gives a
    ``link_flow`` or ``transport`` event to is called, the reference counts of the link,
    its session, connection and transport (what proton's Event holds while it is
    dispatched), with the kind of event object it was given."""

    loop_event_methods: ClassVar[frozenset[str]] = frozenset({"on_link_flow"})

    def __init__(self, objects: list[Any]) -> None:
        self.objects = objects
        self.held: list[tuple[str, list[int]]] = []
        self.given: set[type] = set()

    def _note(self, name: str, event: Any) -> None:
        self.given.add(type(event))
        self.held.append((name, [refcount(one) for one in self.objects]))

    def on_link_flow(self, event: Any) -> None:
        self._note("link_flow", event)

    def on_transport(self, event: Any) -> None:
        self._note("transport", event)


def _held_while_handled(*, shortcuts: bool) -> tuple[list[Any], set[type]]:
    """A peer's credit for our sender read in memory, its events run as the bridge's
    container runs them (its shortcuts, or proton's dispatch); what was held when the
    handlers ran (:class:`_Holdings`), and the counts once every event is done."""
    container = reactor.container(Handler())
    if not shortcuts:
        reactor.without_shortcuts(container)
    pair = MemoryPair()
    pair.ours.collect(container._collector)
    pair.our_transport._selectable = None  # (no socket: the IO handler has nothing to update)
    pair.our_transport._reactor = container
    pair.ours.open()
    link = pair.open_sender("flow", "q")
    session = link.session
    holdings = _Holdings([link._impl, session._impl, pair.ours._impl, pair.our_transport._impl])
    link.handler = holdings
    container.global_handler.inner.base.on_transport = holdings.on_transport
    pair.pump()
    pair.open_peer().flow(10)
    pair.pump()
    queue = container._collector
    while (event := queue.peek()) is not None:  # (what Container.process does)
        event.dispatch(event.handler or container._handler)
        event.dispatch(container._global_handler)
        queue.pop()
        del event
    return [*holdings.held, ("after", [refcount(one) for one in holdings.objects])], \
        holdings.given


def test_shortcuts_hold_what_protons_event_holds_while_the_handler_runs() -> None:
    """A shortcut holds the event's link, session, connection and transport exactly as
    proton's Event does while its handler runs, and lets them go as it does. The shortcuts
    of a167915's parent held a wrapper of the link (or transport) only, and the topology
    soak aborted in proton with a double free within minutes."""
    by_proton, given_by_proton = _held_while_handled(shortcuts=False)
    by_shortcuts, given_by_shortcuts = _held_while_handled(shortcuts=True)
    assert [name for name, _ in by_proton].count("link_flow") == 1
    assert "transport" in [name for name, _ in by_proton]
    assert given_by_proton == {Event}
    assert given_by_shortcuts and Event not in given_by_shortcuts  # (taken by shortcuts)
    # a transport event runs no handler under the shortcuts (the IO handler's update is
    # done at the round's end: ReadAheadIO.touched), so nothing is held for it
    assert "transport" not in [name for name, _ in by_shortcuts]
    assert by_shortcuts == [(name, held) for name, held in by_proton if name != "transport"]
