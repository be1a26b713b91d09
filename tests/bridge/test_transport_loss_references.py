"""A lost transport frees sessions, and nothing of the bridge holds their links or
deliveries past them (docs/architecture.md, "the reference rule").

Two paths free sessions when a 1.0 connection's transport drops: each
:class:`~bridge.amqp10.link.Amqp10Link` frees its link's session and those of links it
gave up whose detach never came (proton would begin them again on the next transport,
beyond a smaller peer's session limit), and the connection's handler frees the sessions
the bridge ended whose end never came. proton frees a link twice when its last reference
goes after its session's, so once those sessions are freed no Python wrapper of their
links or deliveries may be left anywhere: not in a link's attach timer, the direct
deliveries' watch, a route's in-flight map, a held delivery of an owner (a
:class:`~bridge.runtime.reactor.LightDelivery` is allowed: it holds the session itself)
nor a topology request client's retiring sessions and probes. The test builds each of
those on the in-memory pair, fails over, and asks the garbage collector for what is left
(:func:`tests.support.proton_refs.held_on`; the set-up: :mod:`tests.support.transport_loss`).
"""

from __future__ import annotations

from typing import Any

from cproton import pn_decref, pn_incref

from tests.support.memory_pair import MemoryPair, sessions
from tests.support.proton_refs import held_on
from tests.support.transport_loss import everything_a_loss_frees


def _ours(pair: MemoryPair) -> set[Any]:
    """Our sessions' C objects, each held (released by :func:`_release`): a session held
    past its links is the safe order, and keeps the memory the check reads alive."""
    held = {session._impl for session in sessions(pair.ours)}
    for impl in held:
        pn_incref(impl)
    return held


def _release(held: set[Any]) -> None:
    for impl in held:
        pn_decref(impl)


def test_a_lost_transport_leaves_no_reference_to_the_links_of_the_sessions_it_freed() -> None:
    pair, loop, kept = everything_a_loss_frees()
    ours = _ours(pair)
    try:
        pair.fail_over(64)
        loop.run(0)
        pair.pump()
        pair.dispatch()
        freed = ours - {session._impl for session in sessions(pair.ours)}
        assert len(freed) == 5, len(freed)  # (all but the management pair's)
        left = held_on(freed)
        assert left == [], [f"{type(obj).__name__} {getattr(obj, 'name', '')}" for obj in left]
    finally:
        _release(ours)
    route, target, *_rest = kept
    assert route.void == [0, 1, 2] and not target.in_flight and not route.taken


def test_a_lost_transport_frees_the_session_of_a_link_forgotten_before_its_detach_came(
        ) -> None:
    """A link given up for good (a façade client leaving) whose detach had not come when
    the transport dropped: its session is freed with the others (the connection stopped
    telling the link at once; proton then began the session again on the next transport,
    before the peer's open said how many it allows). What the management pair keeps is
    its own session, which proton begins again and the client retires once answered."""
    pair, _loop, _kept = everything_a_loss_frees()
    before = {session._impl for session in sessions(pair.ours)}
    pair.our_transport.close_tail()
    pair.our_transport.close_head()
    pair.ours.handler._lost(pair.ours)
    still = {session._impl for session in sessions(pair.ours)}
    assert (len(before), len(still)) == (6, 1)
