"""A 1.0 connection on the in-memory pair with one of everything a transport's loss frees
sessions under (:func:`everything_a_loss_frees`): for the reference-rule test
(tests/bridge/test_transport_loss_references.py) and, under valgrind, for
``python -m tests.support.transport_loss`` (see :func:`main`)."""

from __future__ import annotations

import faulthandler
import gc
import os
import sys
from typing import Any

from bridge.amqp10 import link as link_module
from bridge.amqp10.connection import Amqp10ConnectionHandler
from bridge.amqp10.link import Amqp10Link
from bridge.routes.amqp10_endpoint import Amqp10Source, Amqp10Target
from bridge.runtime.reactor import DirectDeliveries, LightDelivery
from bridge.topology.management import ManagementClient
from tests.support.link_owners import ManualTimers, NotingOwner
from tests.support.memory_pair import MemoryPair, links


class Loop(ManualTimers):
    """The links' container: manual timers, and deliveries handed over directly as on the
    bridge's loop (:class:`DirectDeliveries` on the pair's collector)."""

    def __init__(self, pair: MemoryPair) -> None:
        super().__init__()
        self._collector = pair.collector
        self.direct_deliveries = DirectDeliveries(self)  # type: ignore[arg-type]


class Route:
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


def everything_a_loss_frees() -> tuple[MemoryPair, Loop, list[Any]]:
    """A connection with, at the loss: a route's sender with items in flight, its receiver
    with deliveries taken, a link attaching (its timer set), a link given up whose detach
    has not come, and a management client with its pair and a probe whose session's end
    has not come. Returns what the test keeps of them (no proton object)."""
    pair = MemoryPair()
    loop = Loop(pair)
    pair.open_with(Amqp10ConnectionHandler("cloud"), loop)
    route = Route()
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


def main(order: str) -> None:
    """Fail over, then let go of everything: ``rule`` in the bridge's order, ``timer-last``
    with each attach timer also holding proton's link (as before a2ad7bd), let go of last,
    after every session's reference went. Under ``PYTHONMALLOC=malloc valgrind -q``, an
    invalid read or free is a link freed twice (Python's own garbage collector shows
    uninitialised values there too: those are not the point)."""
    faulthandler.enable()
    held_by_timers: list[Any] = []
    if order == "timer-last":
        check_attach = Amqp10Link._check_attach

        def holding(self: Amqp10Link, generation: int, sent: float) -> None:
            held_by_timers.append(self.link)
            check_attach(self, generation, sent)

        link_module.Amqp10Link._check_attach = holding  # type: ignore[method-assign]
    pair, loop, kept = everything_a_loss_frees()
    pair.fail_over(64)
    loop.run(0)
    pair.pump()
    pair.dispatch()
    loop.tasks.clear()
    del kept
    gc.collect()
    pair.ours.handler.watchers.clear()
    del pair
    gc.collect()
    held_by_timers.clear()  # (the timers' links last)
    gc.collect()
    print("done", order, flush=True)
    os._exit(0)  # (the interpreter's own teardown order is not the point)


if __name__ == "__main__":
    main(sys.argv[1])
