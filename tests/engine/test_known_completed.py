"""session.known-completed: answered when the peer asks, never volunteered, and a
session's own state stays small when the peer never sends it.

qpid.messaging closes its connection on a known-completed it did not ask for (its
handler is misnamed upstream) and never sends one itself; qpidd sends it only in
reply to a completed with timely-reply.  These tests push many thousands of commands
through an engine pair and look at what went over the wire and at what each session
keeps.
"""

from __future__ import annotations

import random
from typing import Any

from amqp010.events import MessageReceived
from amqp010.session import Session
from amqp010.spec import DeliveryProperties, SessionCompleted, SessionKnownCompleted
from amqp010.types import SequenceSet

from .test_connection import decode_all
from .test_session import attached_pair

COMMANDS = 6144
"""Commands per direction: several times the 1,024 after which the engine used to
volunteer a known-completed."""


def state_sizes(session: Session) -> dict[str, int]:
    """The size of every collection a session keeps (its own and its credits'; not the
    role's command table, which is shared and fixed)."""
    sizes = {name: len(value) for name, value in vars(session).items()
             if isinstance(value, list | dict | set) and name != "_commands"}
    for table in ("outgoing_credit", "incoming_credit"):
        for dest, credit in getattr(session, table).items():
            sizes[f"{table}[{dest}].in_flight"] = len(credit.in_flight)
    return sizes


def known_completed(wire: bytearray) -> list[SessionKnownCompleted]:
    return [op for op in decode_all(bytes(wire)) if isinstance(op, SessionKnownCompleted)]


def assert_small(session: Session, bound: int) -> None:
    big = {k: n for k, n in state_sizes(session).items() if n > bound}
    assert not big, f"{session!r} keeps {big}"


def test_no_known_completed_is_volunteered_and_state_stays_small_both_ways() -> None:
    """Transfers both ways, completed in order: nobody asks for known-completed, so none
    is sent, and neither session's collections grow with the number of commands."""
    pair, cs, ss = attached_pair()
    served = 0

    def server_app(ev: Any) -> None:
        nonlocal served
        if isinstance(ev, MessageReceived):
            served += 1
            ev.session.complete(ev.command_id)

    pair.on_server_event = server_app
    for i in range(COMMANDS):
        cs.message_transfer("amq.direct", [DeliveryProperties(routing_key="k")], b"%d" % i)
        ss.message_transfer("sub", (), b"%d" % i)  # the client completes on arrival
        if i % 250 == 249:
            pair.pump()
            assert_small(cs, 1)
            assert_small(ss, 1)
    pair.pump()
    assert known_completed(pair.c2s) == [] and known_completed(pair.s2c) == []
    assert served == COMMANDS == len(pair.of(MessageReceived))
    assert cs.outstanding == ss.outstanding == 0
    assert ss._completed == [(0, COMMANDS - 1)] and cs._completed == [(0, COMMANDS - 1)]


def test_a_peer_that_never_answers_leaves_the_completed_set_as_small_as_the_gaps() -> None:
    """The server application completes out of order (a random one of up to 32 pending
    commands at a time) and the client ignores timely-reply, as qpid.messaging does: the
    server's completed set is ranges between the commands still incomplete, never one
    entry per command."""
    pair, cs, ss = attached_pair()
    never_answer(cs)
    pending: list[int] = []
    rng = random.Random(7)
    most = 0

    def server_app(ev: Any) -> None:
        nonlocal most
        if isinstance(ev, MessageReceived):
            pending.append(ev.command_id)
            if len(pending) == 32:
                ss.complete(pending.pop(rng.randrange(len(pending))))
                most = max(most, len(ss._completed))

    pair.on_server_event = server_app
    for i in range(COMMANDS):
        cs.message_transfer("amq.direct", [DeliveryProperties(routing_key="k")], b"%d" % i)
        if i % 256 == 255:
            pair.pump()
            assert_small(ss, 32)
    ss.complete(pending)
    pair.pump()
    asked = [op for op in decode_all(bytes(pair.s2c))
             if isinstance(op, SessionCompleted) and op.timely_reply]
    assert asked, "the server never asked for known-completed"
    assert known_completed(pair.c2s) == []
    assert 8 < most <= 33, most
    assert cs.outstanding == 0 and ss._completed == [(0, COMMANDS - 1)]


def test_timely_reply_is_answered_with_an_exact_echo_at_once() -> None:
    pair, cs, _ss = attached_pair()
    for i in range(3):
        cs.queue_declare(f"q{i}")
    cs._on_control(SessionCompleted(commands=SequenceSet([(0, 1)]), timely_reply=False))
    pair.pump()
    assert known_completed(pair.c2s) == []
    cs._on_control(SessionCompleted(commands=SequenceSet([(0, 1), (5, 9)]), timely_reply=True))
    pair.pump()
    assert known_completed(pair.c2s) == [
        SessionKnownCompleted(commands=SequenceSet([(0, 1), (5, 9)]))]


def never_answer(session: Session) -> None:
    """Make ``session`` drop its known-completed replies (a peer like qpid.messaging)."""
    control = session._control

    def without_known_completed(ctl: Any) -> None:
        if not isinstance(ctl, SessionKnownCompleted):
            control(ctl)

    session._control = without_known_completed  # type: ignore[method-assign]

