"""The loop's event shortcuts (bridge/runtime/shortcuts.py): the same exchange with and
without them, what they take and what they leave to proton's dispatch."""

from __future__ import annotations

from typing import Any

import pytest
from proton import Event, Handler
from proton._events import EventBase

from bridge.runtime import reactor
from bridge.runtime.shortcuts import Unpredictable, callees, ignores
from tests.bridge.test_reactor import _PingPong
from tests.support.bridge import free_port

SHORTCUT_TYPES = {Event.REACTOR_QUIESCED, Event.SELECTABLE_READABLE, Event.SELECTABLE_UPDATED}


def _run(handler: Any, *, shortcuts: bool, monkeypatch: pytest.MonkeyPatch) -> set[Any]:
    """Run ``handler`` in the bridge's container (its shortcuts removed unless
    ``shortcuts``); the types of the events proton dispatched to the global handler."""
    container = reactor.container(handler)
    if not shortcuts:
        container.direct_deliveries.shortcuts = {}
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
