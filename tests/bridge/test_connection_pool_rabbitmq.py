"""More links than RabbitMQ 4 allows sessions on one connection: the pool of a configured
1.0 connection (:mod:`bridge.amqp10.pool`) opens extra connections for them, closes them
again when no link is left on them, and reports the loss of any of them.

RabbitMQ 4 allows 64 sessions per connection; every link has a session of its own, one
is kept for the topology's requests: 63 links per connection. Before the pool, links
past the 63rd waited for others to close (tests/bridge/test_session_limit_rabbitmq.py,
still the behaviour at ``max_connections: 1`` and at the bound).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from bridge.amqp10 import Amqp10ConnectionHandler, ReconnectDelays
from bridge.amqp10 import pool as pool_module
from bridge.amqp10.connection import RESERVED_SESSIONS
from bridge.amqp10.link import Amqp10Link
from bridge.amqp10.pool import ConnectionPool
from bridge.topology import BindingSpec, QueueSpec
from bridge.topology import rabbitmq4 as rabbitmq4_module
from bridge.topology.rabbitmq4 import RabbitMQ4Topology
from tests.support.link_owners import NotingOwner
from tests.support.rabbitmq import (
    declare_queue,
    delete_queue,
    existing_queue_address,
    rabbitmqctl,
    unique_queue,
)
from tests.topology.loop import FAST_RECONNECT, Loop, error_kind

pytestmark = pytest.mark.rabbitmq(4)

PER_CONNECTION = 64 - RESERVED_SESSIONS
"""Links RabbitMQ 4.0 (``session_max_per_connection`` 64) takes on one connection."""


class Pooled:
    """A :class:`ConnectionPool` on a test loop, its members connecting to ``url``."""

    def __init__(self, url: str, max_connections: int) -> None:
        self.loop = Loop(url)
        self.url = url
        self.pool = ConnectionPool(self.loop.container, "cloud", max_connections, self.connect)
        self.lost: list[str] = []
        self.pool.when_lost(self.lost.append)

    def connect(self, name: str) -> Any:
        handler = Amqp10ConnectionHandler(name)
        return self.loop.container.connect(
            url=self.url, handler=handler,
            reconnect=ReconnectDelays(FAST_RECONNECT,  # type: ignore[arg-type]  # any iterable
                                      handler.reconnect_scheduled))

    def links(self, queue: str, count: int, *, pinned: bool = False) -> list[Amqp10Link]:
        """``count`` receivers from ``queue``, made as the bridge makes a route's."""
        return [Amqp10Link(self.loop.container, self.pool.connection,
                           existing_queue_address(queue), sender=False, owner=NotingOwner(),
                           name=f"l{n}", pinned=pinned) for n in range(count)]

    def close(self) -> None:
        self.pool.close()
        self.loop.close()


@pytest.fixture
def make_pool(rabbitmq_url: str) -> Iterator[Callable[[int], Pooled]]:
    """Makes a :class:`Pooled` of ``max_connections`` (closed after the test)."""
    made: list[Pooled] = []

    def make(max_connections: int) -> Pooled:
        made.append(Pooled(rabbitmq_url, max_connections))
        return made[-1]

    yield make
    for one in made:
        one.close()


@pytest.fixture
def queue(rabbitmq_url: str) -> Iterator[str]:
    name = unique_queue("pool")
    declare_queue(rabbitmq_url, name)
    yield name
    delete_queue(rabbitmq_url, name)


def test_links_past_one_connection_s_sessions_go_on_extra_connections_closed_when_idle(
        make_pool: Callable[[int], Pooled], queue: str, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool_module, "IDLE_GRACE", 1.0)
    caplog.set_level(logging.INFO, logger="bridge.app")
    pooled = make_pool(4)
    pool = pooled.pool
    # made before the first connection opened, as the bridge makes its routes' links
    links = pooled.links(queue, 2 * PER_CONNECTION + 5)
    pooled.loop.run_until(lambda: all(link.up for link in links), "every link to attach")
    pooled.loop.settle()
    assert [member.name for member in pool.members] == ["cloud", "cloud#2", "cloud#3"]
    assert pool.opened == 2
    assert [member.links_held for member in pool.members] == [
        PER_CONNECTION, PER_CONNECTION, 5]
    assert all(member.up and member.reconnects == 0 for member in pool.members)
    assert {link.handler.name for link in links[-5:]} == {"cloud#3"}  # type: ignore[union-attr]
    assert not [r for r in caplog.records if r.__dict__.get("event") == "session_limit"]

    # a pinned link (an exclusive queue's consumer) stays on the first, full or not
    pinned = pooled.links(queue, 1, pinned=True)[0]
    assert pinned.handler is pool.first and pool.first.begins_waiting == 1

    # a link never moves: the first's links close, the others stay where they are
    for link in links[:PER_CONNECTION]:
        link.forget()
    pooled.loop.run_until(lambda: pinned.up, "the pinned link to attach on the first")
    assert all(link.up for link in links[PER_CONNECTION:])
    assert [link.generation for link in links[PER_CONNECTION:]] == [1] * (PER_CONNECTION + 5)

    # a new link takes the first free place: the first connection's
    late = pooled.links(queue, 1)[0]
    assert late.handler is pool.first

    # the extras with no link left are closed after the grace; the first stays
    extras = pool.members[1:]
    for link in links[PER_CONNECTION:]:
        link.forget()
    pooled.loop.run_until(lambda: len(pool.members) == 1, "the idle extras to close")
    pooled.loop.run_until(lambda: not any(member.up for member in extras),
                          "the extras' connections to end")
    assert pool.first.up and late.up and pinned.up
    assert pooled.lost == []  # closing an idle extra is no loss
    assert {r.__dict__.get("member") for r in caplog.records
            if r.__dict__.get("event") == "pool_shrunk"} == {"cloud#2", "cloud#3"}

    # grown again on demand, under the lowest free name
    more = pooled.links(queue, PER_CONNECTION)
    pooled.loop.run_until(lambda: all(link.up for link in more), "the new links to attach")
    assert [member.name for member in pool.members] == ["cloud", "cloud#2"]
    assert pool.opened == 3


def test_at_max_connections_links_wait_for_a_session_as_on_one_connection(
        make_pool: Callable[[int], Pooled], queue: str, caplog: pytest.LogCaptureFixture) -> None:
    pooled = make_pool(2)
    pool = pooled.pool
    with caplog.at_level(logging.WARNING):
        links = pooled.links(queue, 2 * PER_CONNECTION + 3)
        pooled.loop.run_until(lambda: sum(link.up for link in links) == 2 * PER_CONNECTION,
                              "two connections' worth of links to attach")
        pooled.loop.settle()
    assert len(pool.members) == 2 and pool.opened == 1
    assert sum(link.up for link in links) == 2 * PER_CONNECTION
    assert sum(member.begins_waiting for member in pool.members) == 3
    assert any(r.__dict__.get("event") == "session_limit" for r in caplog.records)
    # they wait on the members holding the fewest (a link never moves): links leaving
    # any member make room there
    for member in pool.members:
        for link in [link for link in links if link.handler is member and link.up][:3]:
            link.forget()
    pooled.loop.run_until(lambda: all(link.up for link in links if not link.closing),
                          "the waiting links to attach as others close")
    assert sum(member.begins_waiting for member in pool.members) == 0


def test_one_connection_keeps_today_s_single_connection(
        make_pool: Callable[[int], Pooled], queue: str) -> None:
    pooled = make_pool(1)
    pool = pooled.pool
    links = pooled.links(queue, PER_CONNECTION + 2)
    pooled.loop.run_until(lambda: sum(link.up for link in links) == PER_CONNECTION,
                          "one connection's worth of links to attach")
    pooled.loop.settle()
    assert len(pool.members) == 1 and pool.opened == 0 and pool.first.pool is None
    assert pool.first.begins_waiting == 2


def test_a_lost_extra_connection_is_reported_and_re_attaches_its_own_links(
        make_pool: Callable[[int], Pooled], queue: str) -> None:
    pooled = make_pool(3)
    pool = pooled.pool
    links = pooled.links(queue, PER_CONNECTION + 4)
    pooled.loop.run_until(lambda: all(link.up for link in links), "every link to attach")
    extra = pool.members[1]
    on_extra = [link for link in links if link.handler is extra]
    assert len(on_extra) == 4
    extra.connection.transport.close_tail()  # the connection drops (as a fault does)
    extra.connection.transport.close_head()
    pooled.loop.run_until(lambda: extra.reconnects == 1 and extra.up, "the extra to reconnect")
    pooled.loop.run_until(lambda: all(link.up for link in links), "its links to re-attach")
    assert pooled.lost == ["cloud#2"]
    assert all(link.handler is extra for link in on_extra)  # re-attached where they were
    assert [link.generation for link in links if link not in on_extra] == \
        [1] * PER_CONNECTION  # the first's links never went down
    assert len(pool.members) == 2 and pool.first.reconnects == 0


def test_a_reserved_session_is_left_for_the_link_to_come_and_keeps_its_member_open(
        make_pool: Callable[[int], Pooled], queue: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An exclusive queue's member keeps a session for its consumer (which only that
    connection may attach): other links go elsewhere meanwhile, the consumer's link gets
    it, and a member with a reservation is not idle."""
    monkeypatch.setattr(pool_module, "IDLE_GRACE", 1.0)
    pooled = make_pool(3)
    pool = pooled.pool
    links = pooled.links(queue, PER_CONNECTION + 1)  # the first full, one on cloud#2
    pooled.loop.run_until(lambda: all(link.up for link in links), "every link to attach")
    chosen: list[Amqp10ConnectionHandler] = []
    pool.reserve(chosen.append)  # an exclusive queue declared: on cloud#2, room kept there
    assert [member.name for member in chosen] == ["cloud#2"]
    assert pool.reserved == {chosen[0]: 1}
    others = pooled.links(queue, PER_CONNECTION - 2)  # cloud#2's room less the reserved one
    late = pooled.links(queue, 1)[0]
    pooled.loop.run_until(lambda: all(link.up for link in [*others, late]), "the others")
    assert {link.handler.name for link in others} == {"cloud#2"}  # type: ignore[union-attr]
    assert late.handler.name == "cloud#3"  # type: ignore[union-attr]
    # the consumer comes: its link takes the kept session, with no wait
    pool.release(chosen[0])
    consumer = Amqp10Link(pooled.loop.container, chosen[0].connection,
                          existing_queue_address(queue), sender=False, owner=NotingOwner(),
                          name="consumer", pinned=True)
    pooled.loop.run_until(lambda: consumer.up, "the consumer to attach where it was kept")
    assert consumer.handler is chosen[0] and chosen[0].begins_waiting == 0
    assert chosen[0].links_held == PER_CONNECTION and pool.reserved == {}

    # a member holding only a reservation is not idle; given back, it is
    for link in [*links[PER_CONNECTION:], *others, consumer, late]:
        link.forget()
    pool.reserve(chosen.append)
    extra = chosen[-1]
    assert extra.name != "cloud"
    pooled.loop.run_until(lambda: len(pool.members) == 2, "the member with nothing to close")
    pooled.loop.settle(3 * pool_module.IDLE_GRACE)
    assert extra in pool.members
    pool.release(extra)
    pooled.loop.run_until(lambda: pool.members == [pool.first], "the reserved one to close")


def _queue_at_rabbitmq(rabbitmq_url: str, name: str) -> bool:
    """(rabbitmqctl takes a second or more: not a condition for :meth:`Loop.run_until`,
    whose connections it would starve)"""
    return name in rabbitmqctl(rabbitmq_url, "list_queues", "-q", "name").split()


def test_an_exclusive_queue_lives_on_the_member_with_room_its_pair_closed_after_it(
        make_pool: Callable[[int], Pooled], queue: str, rabbitmq_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """RabbitMQ 4's backend on a pool (bridge/topology/rabbitmq4.py): a new exclusive
    queue is declared over a management pair on the member the pool chooses (the first
    is full), a session kept there for its consumer; its consumer attaches there (from
    another connection RabbitMQ refuses it: resource-locked), its binding is made over
    that pair, it is declared again when that member comes back, and once it is gone
    the pair closes and the member with it."""
    monkeypatch.setattr(pool_module, "IDLE_GRACE", 1.0)
    monkeypatch.setattr(rabbitmq4_module, "PAIR_IDLE", 0.2)
    pooled = make_pool(3)
    pool, loop = pooled.pool, pooled.loop
    topology = RabbitMQ4Topology(loop.container, pool.connection, name="excl")
    links = pooled.links(queue, PER_CONNECTION - 1)  # with the first's pair: the first full
    try:
        loop.run_until(lambda: all(link.up for link in links) and topology.management.up,
                       "the first connection to fill")
        refused = loop.call(topology.declare_queue, QueueSpec(
            "", exclusive=True, owner="rpc", arguments={"x-max-length": "many"}), False)
        assert error_kind(refused) == "precondition-failed"
        assert pool.reserved == {}  # (the session kept for its consumer is given back)
        name = loop.call(topology.declare_queue,
                         QueueSpec("", exclusive=True, auto_delete=True, owner="rpc"),
                         False).name
        member = topology.exclusive_on[name]
        assert member is not None and member.name == "cloud#2"
        assert pool.reserved == {member: 1} and set(topology.pairs) == {member}
        assert topology.consumer_connection(name) is member.connection
        assert pool.reserved == {}
        address = existing_queue_address(name)
        consumer = Amqp10Link(loop.container, member.connection, address, sender=False,
                              owner=NotingOwner(), name="consumer", pinned=True)
        links.pop().forget()  # (room on the first for the intruder)
        intruder = Amqp10Link(loop.container, pool.connection, address, sender=False,
                              owner=NotingOwner(), name="intruder", pinned=True)
        loop.run_until(lambda: consumer.up and intruder.last_condition is not None,
                       "the consumer to attach and the intruder to be refused")
        assert intruder.last_condition == "amqp:resource-locked" and not intruder.up
        intruder.forget()
        key = uuid.uuid4().hex  # only the declaring connection may bind it
        assert loop.call(topology.bind, BindingSpec("amq.direct", name, key)) is None
        consumer.forget()  # (the queue stays: auto-delete goes with a consumer that was)

        # the member drops: RabbitMQ deletes the queue, the backend declares it again there
        member.connection.transport.close_tail()
        member.connection.transport.close_head()
        loop.run_until(lambda: pooled.lost == ["cloud#2"], "the member's loss")
        pair = topology.pairs[member]
        loop.run_until(lambda: member.reconnects and pair.up and pair.requests >= 4,
                       "the member back, the queue and its binding made again there")
        assert _queue_at_rabbitmq(rabbitmq_url, name)
        assert topology.exclusive_on[name] is member
        loop.settle(3 * pool_module.IDLE_GRACE)
        assert member in pool.members  # its exclusive queue holds it
        assert key in rabbitmqctl(rabbitmq_url, "list_bindings", "-q", "routing_key")

        topology.forget_owner("rpc")
        loop.run_until(lambda: pool.members == [pool.first],
                       "the pair, then the member, to close once its queue went")
        assert not _queue_at_rabbitmq(rabbitmq_url, name) and topology.pairs == {}
    finally:
        topology.close()
