"""Each session an :class:`~bridge.amqp10.link.Amqp10Link` gives up is freed exactly once.

``pn_session_free`` twice on one session corrupts proton's reference counts: the process
crashes later, in C, somewhere unrelated (calls into freed memory; it took loaded full
runs to see). The peer's frame order decides which of the link's handlers ends the
session, so each order is scripted here on two proton engines in memory
(:class:`~tests.support.memory_pair.MemoryPair`), with ``Session.free`` counted.
"""

from __future__ import annotations

import gc
import weakref
from collections import Counter
from typing import Any

import pytest
from cproton import addressof
from proton import Condition, Endpoint, Link, Session

from bridge.amqp10.link import Amqp10Link
from tests.support.link_owners import ManualTimers, NotingOwner
from tests.support.memory_pair import MemoryPair, links, sessions

NOT_FOUND = Condition("amqp:not-found", "no queue 'missing'")


@pytest.fixture
def frees(monkeypatch: pytest.MonkeyPatch) -> Counter[int]:
    """How often each session (by its C address) was freed."""
    counts: Counter[int] = Counter()
    real = Session.free

    def counting(session: Session) -> None:
        counts[addressof(session._impl)] += 1
        real(session)

    monkeypatch.setattr(Session, "free", counting)
    return counts


def _attached(owner: NotingOwner) -> tuple[MemoryPair, Amqp10Link, Any, Any]:
    pair = MemoryPair()
    pair.ours.open()
    pair.theirs.open()
    pair.pump()
    link = Amqp10Link(ManualTimers(), pair.ours, "/queues/missing",  # type: ignore[arg-type]
                      sender=False, owner=owner, name="r")
    pair.pump()
    (their_session,) = sessions(pair.theirs)
    their_session.open()
    their_link = pair.open_peer()
    pair.dispatch()
    assert link.up
    return pair, link, their_session, their_link


@pytest.mark.parametrize("refusal", ["detach and end", "end", "detach, then end"])
def test_a_session_the_peer_ends_is_freed_once(frees: Counter[int], refusal: str) -> None:
    owner = NotingOwner()
    pair, _link, their_session, their_link = _attached(owner)
    if "detach" in refusal:
        their_link.condition = NOT_FOUND
        their_link.close()
    if refusal != "detach, then end":  # in one read (RabbitMQ 4 refusing an attach)
        their_session.condition = NOT_FOUND
        their_session.close()
    pair.pump()
    pair.dispatch()
    if refusal == "detach, then end":  # the peer ends only once we have
        assert not frees
        assert their_session.state & Endpoint.REMOTE_CLOSED
        their_session.close()
        pair.pump()
        pair.dispatch()
    assert owner.downs and "not-found" in str(owner.downs[0])
    assert list(frees.values()) == [1]


def test_a_session_given_up_while_the_peer_ends_it_is_freed_once(frees: Counter[int]) -> None:
    """The owner closes the link (a façade client left) after the peer's detach and end
    arrived but before their events were handled."""
    pair, link, their_session, their_link = _attached(NotingOwner())
    their_link.close()
    their_session.close()
    pair.pump()
    link.close()  # before dispatching the peer's detach and end
    pair.pump()
    pair.dispatch()
    assert list(frees.values()) == [1]
    assert not [s for s in sessions(pair.ours) if s.state & Endpoint.LOCAL_ACTIVE]
    assert not list(links(pair.theirs)) or all(
        lk.state & Endpoint.LOCAL_CLOSED for lk in links(pair.theirs))


def _proton_endpoints_in(task: Any) -> list[Any]:
    """The proton links and sessions a scheduled timer holds (its callable's closure,
    bound object and defaults, two levels down)."""
    found, seen, todo = [], set(), [(task, 0)]
    while todo:
        obj, depth = todo.pop()
        if id(obj) in seen or depth > 3:
            continue
        seen.add(id(obj))
        if isinstance(obj, (Link, Session)):
            found.append(obj)
            continue
        fn = getattr(obj, "fn", None) if depth == 0 else obj
        for cell in getattr(fn, "__closure__", None) or ():
            todo.append((cell.cell_contents, depth + 1))
        if depth == 0 and fn is not None and fn is not obj:
            todo.append((fn, depth + 1))
    return found


def test_a_given_up_link_s_attach_timer_holds_none_of_proton_s_objects(
        frees: Counter[int]) -> None:
    """The attach timer (ATTACH_TIMEOUT, 15 s) outlives the link when a façade client
    leaves at once: a proton link wrapper it held was released after the link's session
    had been freed, and releasing it then crashed the bridge in proton's C code (double
    free; about one run in three of 3,300 clients coming and going through a topology
    façade)."""
    pair, link, their_session, their_link = _attached(NotingOwner())
    timers = link.container
    link.close()  # the client left
    pair.pump()
    their_link.close()
    their_session.close()
    pair.pump()
    pair.dispatch()
    assert list(frees.values()) == [1]  # its session is freed...
    assert timers.scheduled  # ...while the attach timer is still due
    assert [found for _delay, task in timers.tasks for found in _proton_endpoints_in(task)] == []
    # nor the link itself: a departed client's consumer goes at once, not 15 s later
    gone = weakref.ref(link)
    del link
    gc.collect()
    assert gone() is None
