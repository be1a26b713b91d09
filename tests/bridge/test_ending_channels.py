"""A session begins only once no session ended on its connection waits for the peer's end.

Proton gives a new session the lowest free channel as soon as our ``end`` is sent;
RabbitMQ 4 drops a ``begin`` on a channel whose session it has not finished ending (with
the ``attach`` after it): the new link would never attach. Every session on a 1.0
connection — each :class:`~bridge.amqp10.link.Amqp10Link` (routes, façade consumers,
dead letters) and the topology request/response pairs and probes — begins through the
connection's handler, which holds it back while such a session remains
(:meth:`~bridge.amqp10.connection.Amqp10ConnectionHandler.when_channels_free`). The
peer is scripted on two proton engines in memory (:class:`~tests.support.memory_pair.MemoryPair`)
that drop what RabbitMQ 4 drops (:class:`~tests.support.ending_channels.DropsFramesWhileEnding`);
a link whose attach is unanswered all the same is lost after
:data:`~bridge.amqp10.link.ATTACH_TIMEOUT` and re-attached.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from proton import Condition, Connection, Endpoint

from bridge.amqp10 import connection as connection_module
from bridge.amqp10.connection import ENDING_LIMIT, PEER_END_HOLD, Amqp10ConnectionHandler
from bridge.amqp10.link import ATTACH_TIMEOUT, STABLE_LINK, Amqp10Link
from bridge.topology.management import ManagementClient
from tests.support.ending_channels import BEGIN, END, DropsFramesWhileEnding, channel, kind
from tests.support.link_owners import ManualTimers, NotingOwner
from tests.support.memory_pair import MemoryPair, links, sessions
from tests.support.overcredit import split


def _pair() -> tuple[MemoryPair, DropsFramesWhileEnding, ManualTimers]:
    rabbit = DropsFramesWhileEnding()
    pair = MemoryPair(rewrite=rabbit.to_peer, rewrite_back=rabbit.from_peer)
    return pair, rabbit, _opened(pair)


def _opened(pair: MemoryPair) -> ManualTimers:
    """Our connection (with the bridge's handler) and the peer's, opened; our timers."""
    timers = ManualTimers()
    pair.open_with(Amqp10ConnectionHandler("cloud"), timers)
    return timers


def _answer_everything(pair: MemoryPair) -> None:
    """The peer begins and attaches whatever of ours it received and has not answered."""
    pair.answer_all()
    pair.dispatch()


def _give_up_until_only_the_end_is_unanswered(pair: MemoryPair, link: Amqp10Link) -> Any:
    """Give ``link`` up: the peer detaches it, our end goes out, and the peer's end is
    held back. Returns the peer's session (to end later)."""
    (their_link,) = [lk for lk in links(pair.theirs) if lk.name == link.link.name]
    their_session = their_link.session
    link.forget()
    pair.pump()
    their_link.close()
    pair.pump()
    pair.dispatch()
    assert their_session.state & Endpoint.REMOTE_CLOSED, "our end did not go out"
    return their_session


def test_a_link_begun_while_another_link_s_session_is_ending_waits_for_the_peer_s_end() -> None:
    pair, rabbit, timers = _pair()
    first = Amqp10Link(timers, pair.ours, "/queues/a", sender=False,  # type: ignore[arg-type]
                       owner=NotingOwner(), name="first")
    pair.pump()
    _answer_everything(pair)
    assert first.up
    their_session = _give_up_until_only_the_end_is_unanswered(pair, first)

    owner = NotingOwner()
    second = Amqp10Link(timers, pair.ours, "/queues/b", sender=True,  # type: ignore[arg-type]
                        owner=owner, name="second")
    pair.pump()
    _answer_everything(pair)
    their_session.close()  # the peer finishes ending the first session
    pair.pump()
    pair.dispatch()
    _answer_everything(pair)

    assert rabbit.dropped == [], "a begin went out on a channel the peer was still ending"
    assert second.up and owner.ups == 1 and second.generation == 1


def test_a_probe_begun_while_a_link_s_session_is_ending_waits_for_the_peer_s_end() -> None:
    """The topology client's probes and link pairs wait for every session on the
    connection, not only for the client's own."""
    pair, rabbit, timers = _pair()
    client = ManagementClient(timers, pair.ours, name="t")  # type: ignore[arg-type]
    link = Amqp10Link(timers, pair.ours, "/queues/a", sender=False,  # type: ignore[arg-type]
                      owner=NotingOwner(), name="link")
    pair.pump()
    _answer_everything(pair)
    assert client.up and link.up
    their_session = _give_up_until_only_the_end_is_unanswered(pair, link)

    results: list[Any] = []
    client.probe("/exchanges/x", results.append)
    pair.pump()
    _answer_everything(pair)
    their_session.close()
    pair.pump()
    pair.dispatch()
    _answer_everything(pair)

    assert rabbit.dropped == [], "a begin went out on a channel the peer was still ending"
    assert results == [True]


def test_a_lost_transport_lets_the_waiting_begins_go() -> None:
    """The next transport numbers its channels afresh: nothing waits for an end the dead
    one will never bring, only for the next open (which says how many channels the peer
    allows)."""
    pair, _rabbit, timers = _pair()
    first = Amqp10Link(timers, pair.ours, "/queues/a", sender=False,  # type: ignore[arg-type]
                       owner=NotingOwner(), name="first")
    pair.pump()
    _answer_everything(pair)
    _give_up_until_only_the_end_is_unanswered(pair, first)
    handler = pair.ours.handler
    second = Amqp10Link(timers, pair.ours, "/queues/b", sender=True,  # type: ignore[arg-type]
                        owner=NotingOwner(), name="second")
    assert second.link is None and second.open, "begun while a session was ending"
    handler._lost(pair.ours)
    assert not handler.ending
    assert second.link is None, "begun before the next transport's open"
    handler.on_connection_remote_open(SimpleNamespace(connection=pair.ours))
    assert second.link is not None


def test_a_link_whose_attach_is_never_answered_is_lost_and_attached_again(
        caplog: pytest.LogCaptureFixture) -> None:
    pair, _rabbit, timers = _pair()
    owner = NotingOwner()
    link = Amqp10Link(timers, pair.ours, "/queues/a", sender=False,  # type: ignore[arg-type]
                      owner=owner, name="silent")
    pair.pump()  # the peer reads the begin and the attach, and answers neither
    with caplog.at_level(logging.WARNING, logger="bridge.routes"):
        assert timers.run(ATTACH_TIMEOUT) == 1
    assert not link.up and link.link is None
    assert any("attach not answered" in r.getMessage() for r in caplog.records
               if r.levelno == logging.WARNING), caplog.text
    assert pair.ours.handler.unanswered == {"attach": 1, "end": 0}  # the metric's count
    timers.run(0.0)  # the re-attach (the first failure: at once)
    pair.pump()
    _answer_everything(pair)
    assert link.up and owner.ups == 1 and link.generation == 2


def test_an_end_the_peer_never_answers_holds_begins_back_for_a_bounded_time(
        caplog: pytest.LogCaptureFixture) -> None:
    """One broken end must not stop every link on the connection for good."""
    pair, _rabbit, timers = _pair()
    first = Amqp10Link(timers, pair.ours, "/queues/a", sender=False,  # type: ignore[arg-type]
                       owner=NotingOwner(), name="first")
    pair.pump()
    _answer_everything(pair)
    _give_up_until_only_the_end_is_unanswered(pair, first)  # and the peer never answers
    owner = NotingOwner()
    second = Amqp10Link(timers, pair.ours, "/queues/b", sender=True,  # type: ignore[arg-type]
                        owner=owner, name="second")
    assert second.link is None, "begun while a session was ending"
    handler = pair.ours.handler
    handler.ending = [(session, since - ENDING_LIMIT) for session, since in handler.ending]
    with caplog.at_level(logging.WARNING, logger="bridge.app"):
        timers.run(ENDING_LIMIT)
    assert any("session end(s) unanswered" in r.getMessage() for r in caplog.records), caplog.text
    assert handler.unanswered == {"attach": 0, "end": 1}  # the metric's count
    # begun now (whether a peer that never ends a session answers it is another matter:
    # if not, the attach timeout takes over)
    assert second.link is not None and second.session.state & Endpoint.LOCAL_ACTIVE


class _Clock:
    """The connection handler's clock (``time.monotonic``), moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> _Clock:
    clock = _Clock()
    monkeypatch.setattr(connection_module, "time", clock)
    return clock


def _frames(pair: MemoryPair, since: int) -> list[list[tuple[int, int | None]]]:
    """(channel, descriptor) of the frames of each chunk our side sent from ``since`` on."""
    return [[(channel(f), kind(f)[0]) for f in split(bytearray(chunk))]
            for chunk in pair.sent[since:]]


def _ended_by_the_peer(pair: MemoryPair, their_session: Any, condition: str) -> int:
    """The peer ends ``their_session`` with ``condition``; our end answers it. Returns
    where our chunks from then on start."""
    since = len(pair.sent)
    their_session.condition = Condition(condition, "ended by the peer")
    their_session.close()
    pair.pump()
    pair.dispatch()
    return since


def _begun_after_the_hold(pair: MemoryPair, timers: ManualTimers, clock: _Clock,
                          since: int) -> list[tuple[int, int | None]]:
    """What our side sent after the peer's end: nothing begins before PEER_END_HOLD has
    passed since our end answered it; the frames sent in all once it has."""
    before_hold = [frame for chunk in _frames(pair, since) for frame in chunk]
    assert (0, END) in before_hold, before_hold
    assert all(descriptor != BEGIN for _, descriptor in before_hold), before_hold
    timers.run(0)  # (what is due now: the hold is not over)
    pair.pump()
    assert all(d != BEGIN for chunk in _frames(pair, since) for _, d in chunk)
    clock.now += PEER_END_HOLD
    while timers.run(PEER_END_HOLD):
        pair.pump()
    return [frame for chunk in _frames(pair, since) for frame in chunk]


def test_a_fresh_pair_after_a_refusal_waits_for_the_hold_after_our_end(clock: _Clock) -> None:
    """RabbitMQ 4 refuses a management request by ending the pair's session; the requests
    in flight with it go again on a fresh pair. Our end answers the peer's and frees the
    channel at once, and RabbitMQ 4 drops a begin it reads on that channel before its old
    session has gone (the requests then waited out their 10 s): the fresh pair's session
    begins only PEER_END_HOLD later."""
    pair, _rabbit, timers = _pair()
    client = ManagementClient(timers, pair.ours, name="t")  # type: ignore[arg-type]
    pair.pump()
    _answer_everything(pair)
    for their_link in links(pair.theirs):
        if their_link.is_receiver:
            their_link.flow(10)  # (the requests go out at once: in flight)
    pair.pump()
    pair.dispatch()
    assert client.up
    (their_session,) = [s for s in sessions(pair.theirs) if s.state & Endpoint.LOCAL_ACTIVE]
    results: list[Any] = []
    for path in ("/queues/refused", "/queues/allowed"):
        client.request("PUT", path, {}, results.append)
    pair.pump()
    since = _ended_by_the_peer(pair, their_session, "amqp:unauthorized-access")
    assert [type(r).__name__ for r in results] == ["TopologyError"]
    frames = _begun_after_the_hold(pair, timers, clock, since)
    assert any(descriptor == BEGIN for _, descriptor in frames), frames


def test_a_link_whose_session_the_peer_ended_begins_again_after_the_hold(
        clock: _Clock) -> None:
    """The same for a link the peer's end of its session took down (re-attached at once:
    it had been up for long enough), and for any other session begun meanwhile."""
    pair, _rabbit, timers = _pair()
    owner = NotingOwner()
    link = Amqp10Link(timers, pair.ours, "/queues/a", sender=False,  # type: ignore[arg-type]
                      owner=owner, name="stable")
    pair.pump()
    _answer_everything(pair)
    assert link.up
    link.up_since -= STABLE_LINK  # (up for long enough: its loss is not a repeated failure)
    (their_session,) = [s for s in sessions(pair.theirs) if s.state & Endpoint.LOCAL_ACTIVE]
    since = _ended_by_the_peer(pair, their_session, "amqp:internal-error")
    other = Amqp10Link(timers, pair.ours, "/queues/b", sender=True,  # type: ignore[arg-type]
                       owner=NotingOwner(), name="other")
    pair.pump()
    frames = _begun_after_the_hold(pair, timers, clock, since)
    assert [d for _, d in frames].count(BEGIN) == 2, frames
    assert owner.downs and link.generation == 2 and other.generation == 1


def _pair_allowing(sessions_at_once: int) -> tuple[MemoryPair, ManualTimers]:
    """A pair whose peer allows ``sessions_at_once`` sessions (its channel-max + 1)."""
    pair = MemoryPair()
    pair.their_transport.channel_max = sessions_at_once - 1
    return pair, _opened(pair)


class _SessionWalks:
    """Counts the walks through our connection's session list (``session_head``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, connection: Any) -> None:
        self.count = 0
        head = Connection.session_head

        def counted(self_: Any, mask: int) -> Any:
            if self_ == connection:
                self.count += 1
            return head(self_, mask)

        monkeypatch.setattr(Connection, "session_head", counted)


def test_a_begin_queued_behind_many_waiting_ones_costs_one_look_at_the_sessions(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A façade with thousands of consumers beyond the peer's limit: each link that comes
    (and each session that ends) looks at the connection's sessions a bounded number of
    times, not once per link already waiting (quadratic in the links)."""
    pair, timers = _pair_allowing(3)
    handler = pair.ours.handler
    waiting = 200
    links_ = [Amqp10Link(timers, pair.ours, f"/queues/{n}", sender=True,  # type: ignore[arg-type]
                         owner=NotingOwner(), name=f"l{n}") for n in range(2 + waiting)]
    assert sum(link.link is not None for link in links_) == 2  # (one session kept back)
    assert handler.begins_waiting == waiting
    walks = _SessionWalks(monkeypatch, pair.ours)
    Amqp10Link(timers, pair.ours, "/queues/more", sender=True,  # type: ignore[arg-type]
               owner=NotingOwner(), name="more")
    assert handler.begins_waiting == waiting + 1
    assert walks.count <= 2, walks.count


def test_a_begin_waits_for_ends_that_keep_coming_for_a_bounded_time(clock: _Clock) -> None:
    """Links given up one after another, each end sent before the last one is answered
    (a façade's consumers leaving steadily): a link that comes meanwhile waits for no end
    in particular, and must not wait for as long as they keep coming."""
    pair, _rabbit, timers = _pair()
    gone = [Amqp10Link(timers, pair.ours, f"/queues/{n}", sender=False,  # type: ignore[arg-type]
                       owner=NotingOwner(), name=f"gone{n}") for n in range(3)]
    pair.pump()
    _answer_everything(pair)
    assert all(link.up for link in gone)
    unanswered = _give_up_until_only_the_end_is_unanswered(pair, gone[0])
    asked = clock.now
    waiting = Amqp10Link(timers, pair.ours, "/queues/w", sender=True,  # type: ignore[arg-type]
                         owner=NotingOwner(), name="waiting")
    for link in gone[1:]:
        clock.now += ENDING_LIMIT / 3
        answered, unanswered = unanswered, _give_up_until_only_the_end_is_unanswered(pair, link)
        answered.close()  # the peer answers the older end: a newer one is still out
        pair.pump()
        pair.dispatch()
        assert len(pair.ours.handler.ending) == 1
    assert waiting.link is None
    clock.now = asked + ENDING_LIMIT  # (not three thirds: their float sum may fall short)
    timers.run(ENDING_LIMIT)  # (the begin was asked for ENDING_LIMIT ago)
    assert waiting.link is not None, "waited for ends as long as they kept coming"


def test_a_begin_held_by_the_limit_past_the_bound_sets_no_timer_due_at_once(
        clock: _Clock) -> None:
    """A begin held by the peer's session limit for longer than ENDING_LIMIT, and a
    reserved one held by a session end: the timer is due when the end's hold on the
    reserved begin is over, not at once (a timer due at once found the same and set
    itself again: a busy loop)."""
    pair, timers = _pair_allowing(3)
    handler = pair.ours.handler
    for n in range(2):
        Amqp10Link(timers, pair.ours, f"/queues/{n}", sender=True,  # type: ignore[arg-type]
                   owner=NotingOwner(), name=f"l{n}")
    begun: list[str] = []
    handler.when_channels_free(lambda: begun.append("link"))
    clock.now += ENDING_LIMIT + 1
    handler.ending.append((object(), clock.now))  # (a session of ours ending now)
    timers.tasks.clear()
    handler.when_channels_free(lambda: begun.append("probe"), reserved=True)
    assert begun == [] and handler.begins_waiting == 2
    assert timers.scheduled and min(timers.scheduled) >= ENDING_LIMIT - 1, timers.scheduled


def test_a_failover_to_a_peer_allowing_fewer_sessions_begins_none_beyond_its_limit() -> None:
    """Proton begins every session still open on a new transport before the peer's open is
    read: after a failover from a broker allowing 6 sessions to one allowing 3 (RabbitMQ
    4's 64, or fewer: session_max_per_connection), the old links' sessions must not be
    begun beyond the new limit (RabbitMQ 4 closes the connection at such a begin, and the
    next transport began them again: closed at every reconnect, for good)."""
    pair, timers = _pair_allowing(6)
    owners = [NotingOwner() for _ in range(5)]
    links_ = [Amqp10Link(timers, pair.ours, f"/queues/{n}", sender=True,  # type: ignore[arg-type]
                         owner=owners[n], name=f"l{n}") for n in range(5)]
    pair.pump()
    _answer_everything(pair)
    assert all(link.up for link in links_)
    pair.fail_over(3)
    while timers.run(0):
        pair.pump()
        pair.dispatch()
    begun = [channel(f) for chunk in pair.sent for f in split(bytearray(chunk))
             if kind(f)[0] == BEGIN]
    assert begun and max(begun) <= 2, begun
    _answer_everything(pair)
    assert sum(link.up for link in links_) == 2  # (one session kept for management)
    assert pair.ours.handler.begins_waiting == 3
