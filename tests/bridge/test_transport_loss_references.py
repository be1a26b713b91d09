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
(:func:`tests.support.proton_refs.held_on`).
"""

from __future__ import annotations

from typing import Any

from cproton import pn_decref, pn_incref

from bridge.amqp10.connection import Amqp10ConnectionHandler
from bridge.amqp10.link import Amqp10Link
from bridge.routes.amqp10_endpoint import Amqp10Source, Amqp10Target
from bridge.runtime.reactor import DirectDeliveries, LightDelivery
from bridge.topology.management import ManagementClient
from tests.support.link_owners import ManualTimers, NotingOwner
from tests.support.memory_pair import MemoryPair, links, sessions
from tests.support.proton_refs import held_on


class _Loop(ManualTimers):
    """The links' container: manual timers, and deliveries handed over directly as on the
    bridge's loop (:class:`DirectDeliveries` on the pair's collector)."""

    def __init__(self, pair: MemoryPair) -> None:
        super().__init__()
        self._collector = pair.collector
        self.direct_deliveries = DirectDeliveries(self)  # type: ignore[arg-type]


class _Route:
    """A route on both kinds of 1.0 endpoint: the items it sent wait for their outcomes,
    the deliveries it took wait for the legacy side (both void at a loss)."""

    def __init__(self) -> None:
        self.taken: list[Any] = []
        self.void: list[Any] = []

    def on_target_ready(self) -> None:
        pass

    def on_outcome(self, item: Any, delivery: Any) -> None:
        pass

    def on_void(self, items: list[Any], culprit: Any, link: Amqp10Link) -> None:
        self.void += items

    def on_source_up(self) -> None:
        pass

    def on_source_down(self) -> None:
        self.taken.clear()  # the source redelivers them

    def on_received(self, delivery: Any, data: bytes) -> None:
        self.taken.append(delivery)


def _their_link(pair: MemoryPair, link: Amqp10Link) -> Any:
    (theirs,) = [lk for lk in links(pair.theirs) if lk.name == link.link.name]
    return theirs


def _answer(pair: MemoryPair) -> None:
    pair.answer_all()
    pair.dispatch()


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


def _everything_a_loss_frees() -> tuple[MemoryPair, _Loop, list[Any]]:
    """A connection with, at the loss: a route's sender with items in flight, its receiver
    with deliveries taken, a link attaching (its timer set), a link given up whose detach
    has not come, and a management client with its pair and a probe whose session's end
    has not come. Returns what the test keeps of them (no proton object)."""
    pair = MemoryPair()
    loop = _Loop(pair)
    pair.ours.handler = Amqp10ConnectionHandler("cloud")
    pair.ours.handler.container = loop
    pair.ours.open()
    pair.theirs.open()
    pair.pump()
    pair.dispatch()
    route = _Route()
    target: Amqp10Target[int] = Amqp10Target(
        loop, pair.ours, "/queues/out", owner=route, name="out",  # type: ignore[arg-type]
        route="r", poison_attempts=3)
    source = Amqp10Source(loop, pair.ours, "/queues/in", owner=route,  # type: ignore[arg-type]
                          name="in", route="r")
    given_up = Amqp10Link(loop, pair.ours, "/queues/gone", sender=False,  # type: ignore[arg-type]
                          owner=NotingOwner(), name="gone")
    client = ManagementClient(loop, pair.ours, name="t")  # type: ignore[arg-type]
    pair.pump()
    _answer(pair)
    assert target.up and source.up and given_up.up and client.up

    _their_link(pair, target.link).flow(10)
    pair.pump()
    pair.dispatch()
    for item in range(3):
        target.send(item, b"\x00Sw\xa1\x01x")
    source.grant(0, 10)
    pair.pump()
    their_sender = _their_link(pair, source.link)
    for n in range(2):
        their_sender.delivery(f"d{n}".encode())
        their_sender.send(b"\x00Sw\xa1\x01y")
        their_sender.advance()
    pair.pump()
    pair.dispatch()
    assert len(target.in_flight) == 3 and len(route.taken) == 2
    assert all(isinstance(delivery, LightDelivery) for delivery in route.taken)

    attaching = Amqp10Link(loop, pair.ours, "/queues/slow", sender=True,  # type: ignore[arg-type]
                           owner=NotingOwner(), name="slow")
    pair.pump()  # its attach goes out, and is never answered
    assert attaching.link is not None and len(loop.scheduled) == 4  # (4 attach timers)
    given_up.forget()  # its detach goes out; the peer's never comes
    results: list[Any] = []
    client.probe("/exchanges/x", results.append)
    pair.pump()
    (probe,) = [lk for lk in links(pair.theirs) if lk.name.startswith("amqp-bridge.t.probe")]
    probe.session.open()
    probe.source.copy(probe.remote_source)
    probe.target.copy(probe.remote_target)
    probe.open()  # the probe is attached: it detaches, and ends once the peer detaches
    pair.pump()
    pair.dispatch()
    assert results == [True]
    probe.close()  # the probe's detach answered; its session's end is not
    pair.pump()
    pair.dispatch()
    assert len(pair.ours.handler.ending) == 1, "the probe's session is not ending"
    assert not attaching.up
    return pair, loop, [route, target, source, given_up, client, attaching]


def test_a_lost_transport_leaves_no_reference_to_the_links_of_the_sessions_it_freed() -> None:
    pair, loop, kept = _everything_a_loss_frees()
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
    pair, _loop, _kept = _everything_a_loss_frees()
    before = {session._impl for session in sessions(pair.ours)}
    pair.our_transport.close_tail()
    pair.our_transport.close_head()
    pair.ours.handler._lost(pair.ours)
    still = {session._impl for session in sessions(pair.ours)}
    assert (len(before), len(still)) == (6, 1)
