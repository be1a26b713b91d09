"""Against the real RabbitMQ 4: a link, or a topology probe, begun right after a link's
session was ended is answered at its first begin.

RabbitMQ 4 drops a ``begin`` on a channel whose session it has not finished ending when
it reads both in one go (6 of 6 tries with a bare proton client; RabbitMQ 3.10 answered
all 6). Proton gives the new session that channel as soon as our ``end`` is sent. A
relay holds our ``end`` back until we send more (:class:`~tests.support.ending_channels.HoldsEnds`),
so a begin sent before the broker's ``end`` came reaches the broker with it for certain:
the bridge must not send one then
(:meth:`~bridge.amqp10.connection.Amqp10ConnectionHandler.when_channels_free`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from proton import Endpoint

from bridge.amqp10.link import ATTACH_TIMEOUT, Amqp10Link
from bridge.topology import TopologyError
from bridge.topology.model import ExchangeSpec
from bridge.topology.rabbitmq4 import RabbitMQ4Topology
from tests.support.ending_channels import HoldsEnds, open_apart
from tests.support.link_owners import NotingOwner
from tests.support.rabbitmq import declare_queue, existing_queue_address, unique_queue
from tests.support.relay import Relay
from tests.topology.loop import Loop

pytestmark = pytest.mark.rabbitmq(4)

FLUSH_AFTER = 0.5
"""Seconds the relay holds our end back when nothing follows it."""


@pytest.fixture
def holds() -> HoldsEnds:
    return HoldsEnds()


@pytest.fixture
def loop(rabbitmq_url: str, holds: HoldsEnds) -> Iterator[Loop]:
    """A loop whose 1.0 connection goes through a relay that holds our ends back."""
    relay = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])), rewrite=holds,
                  flush_after=FLUSH_AFTER)
    loop = Loop(relay.url(rabbitmq_url))
    try:
        yield loop
    finally:
        loop.close()
        relay.close()


def _end_a_link_s_session(loop: Loop, holds: HoldsEnds, address: str) -> None:
    """Attach a link to ``address`` and give it up until our end of its session is
    written (and held back by the relay)."""
    first = Amqp10Link(loop.container, loop.connection, address, sender=False,
                       owner=NotingOwner(), name="first")
    loop.run_until(lambda: first.up, "the first link to attach")
    session = first.session
    first.forget()
    loop.run_until(lambda: bool(session.state & Endpoint.LOCAL_CLOSED),
                   "our end of the first link's session")
    # (the relay holds it until we send more, or FLUSH_AFTER of silence: a wait, not a nap)
    loop.run_until(lambda: holds.held >= 1, "our end held back by the relay")
    assert holds.held == 1, "our end was not held back"


def test_a_link_begun_while_another_link_s_session_is_ending_attaches_on_its_first_begin(
        rabbitmq_url: str, loop: Loop, holds: HoldsEnds) -> None:
    queue = unique_queue("ending-channel")
    declare_queue(rabbitmq_url, queue)
    address = existing_queue_address(queue)
    _end_a_link_s_session(loop, holds, address)

    second = Amqp10Link(loop.container, loop.connection, address, sender=True,
                        owner=NotingOwner(), name="second")
    loop.run_until(lambda: second.up or second.generation > 1,
                   "the second link to attach, or to be given up", ATTACH_TIMEOUT + 15)
    assert second.up and second.generation == 1, \
        f"the second link's first begin went unanswered: {second.last_error}"
    second.forget()


def test_a_probe_begun_while_a_link_s_session_is_ending_is_answered(
        rabbitmq_url: str, loop: Loop, holds: HoldsEnds) -> None:
    """The soak's unanswered probes: a passive exchange declare (a sender probe to
    ``/exchanges/X``) on the channel of a link's session just ended."""
    topology = RabbitMQ4Topology(loop.container, loop.connection, name="ending-channel")
    queue = unique_queue("ending-channel")
    declare_queue(rabbitmq_url, queue)
    loop.run_until(lambda: topology.management.up, "the management link pair to attach")
    _end_a_link_s_session(loop, holds, existing_queue_address(queue))

    result = loop.call(topology.declare_exchange, ExchangeSpec("amq.fanout"), True)
    assert not isinstance(result, TopologyError), result
    topology.close()


@pytest.mark.rabbitmq(3, 4)
def test_a_session_still_ending_when_the_connection_drops_does_not_fail_the_next_one(
        rabbitmq_url: str, holds: HoldsEnds) -> None:
    """A session we ended whose end the broker never got (the connection dropped with it
    held back). Proton begins such a session again on the next transport and sends its end
    as soon as the broker's ``open`` is read, forgetting its channel; when the broker's
    answer to that begin is read after that (apart from the ``open``: a loaded or
    restarting broker), proton fails the new connection ("begin reply to unknown
    channel") and every link reconnects once more — the lifecycle suite's RabbitMQ 3.10
    restart saw it. The bridge frees such sessions when their transport is lost."""
    relay = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])), rewrite=holds,
                  flush_after=FLUSH_AFTER, rewrite_back=open_apart)
    loop = Loop(relay.url(rabbitmq_url))
    try:
        queue = unique_queue("ending-at-drop")
        declare_queue(rabbitmq_url, queue)
        address = existing_queue_address(queue)
        loop.run_until(lambda: loop.handler.up, "the connection")
        drops: list[int] = []
        loop.handler.when_lost(lambda: drops.append(loop.handler.attempts))
        _end_a_link_s_session(loop, holds, address)
        relay.cut()  # (the held end goes with the connection)
        loop.run_until(lambda: not loop.handler.up, "the connection lost")
        relay.restore()
        second = Amqp10Link(loop.container, loop.connection, address, sender=True,
                            owner=NotingOwner(), name="second")
        # (the broker answers the new transport's begins in order: a failure comes before
        # the second link's attach is answered)
        loop.run_until(lambda: second.up, "the second link to attach", ATTACH_TIMEOUT + 15)
        assert len(drops) == 1, f"the connection failed again once re-established: {drops}"
        second.forget()
    finally:
        loop.close()
        relay.close()
