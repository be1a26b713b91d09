"""Sessions and execution: attach/detach, numbering, completion, sync, results, exceptions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp010.events import (
    CommandReceived,
    CommandsCompleted,
    ConnectionClosed,
    ExecutionExceptionReceived,
    ResultReceived,
    SessionAttached,
    SessionDetached,
)
from amqp010.framing import encode_assembly
from amqp010.session import Session, SessionError, SessionState
from amqp010.spec import (
    DetachCode,
    ErrorCode,
    ExchangeBoundResult,
    ExchangeQueryResult,
    QueueDeclare,
    QueueQuery,
    QueueQueryResult,
    SessionCompleted,
    SessionExpected,
    SessionFlush,
    SessionGap,
    SessionKnownCompleted,
    SessionTimeout,
)
from amqp010.types import SequenceSet

from .pump import Pair, open_pair
from .test_connection import decode_all


def attached_pair(**kw: Any) -> tuple[Pair, Session, Session]:
    pair = open_pair()
    cs = pair.client.attach("test-session", **kw)
    pair.pump()
    ss = pair.of(SessionAttached, "server")[0].session
    return pair, cs, ss


def server_completes(pair: Pair, results: dict[type, Any] | None = None) -> list[CommandReceived]:
    got: list[CommandReceived] = []

    def on(ev: Any) -> None:
        if isinstance(ev, CommandReceived):
            got.append(ev)
            ev.session.complete(ev.command_id, (results or {}).get(type(ev.command)))

    pair.on_server_event = on
    return got


def test_attach_and_detach_normal() -> None:
    pair, cs, ss = attached_pair()
    assert cs.state is ss.state is SessionState.ATTACHED
    assert cs.channel == ss.channel == 1 and ss.name == b"test-session"
    assert pair.of(SessionAttached)[0].resumed is False
    cs.detach()
    assert cs.state is SessionState.DETACHING
    pair.pump()
    assert pair.of(SessionDetached)[0] == SessionDetached(cs, DetachCode.NORMAL, False)
    assert pair.of(SessionDetached, "server")[0] == SessionDetached(ss, DetachCode.NORMAL, True)
    assert cs.state is SessionState.CLOSED and not pair.client.sessions
    with pytest.raises(SessionError):
        cs.queue_declare("q")


def test_two_sessions_use_two_channels() -> None:
    pair = open_pair()
    a = pair.client.attach("a")
    b = pair.client.attach("b")
    pair.pump()
    assert (a.channel, b.channel) == (1, 2)
    assert {s.session.name for s in pair.of(SessionAttached, "server")} == {b"a", b"b"}


def test_command_ids_completion_and_known_completed() -> None:
    pair, cs, ss = attached_pair()
    got = server_completes(pair)
    ids = [cs.queue_declare(f"q{i}") for i in range(5)]
    assert ids == [0, 1, 2, 3, 4] and cs.outstanding == 5
    pair.pump()
    assert [e.command_id for e in got] == ids
    assert [e.command.queue for e in got] == [f"q{i}" for i in range(5)]
    done = [i for e in pair.of(CommandsCompleted) for i in e.commands]
    assert done == ids and cs.outstanding == 0
    # the server's completed set holds them until known-completed arrives
    assert ss._completed == [(0, 4)]
    cs._on_control(SessionCompleted(commands=SequenceSet([(0, 4)]), timely_reply=True))
    pair.pump()
    known = [o for o in decode_all(bytes(pair.c2s)) if isinstance(o, SessionKnownCompleted)]
    assert known and known[-1].commands == SequenceSet([(0, 4)])
    assert ss._completed == []


def test_incomplete_commands_are_not_reported_and_complete_out_of_order() -> None:
    pair, cs, ss = attached_pair()
    got: list[CommandReceived] = []
    pair.on_server_event = lambda ev: got.append(ev) if isinstance(ev, CommandReceived) else None
    for i in range(3):
        cs.queue_declare(f"q{i}")
    pair.pump()
    assert len(got) == 3 and not pair.of(CommandsCompleted)
    assert ss.incomplete == [0, 1, 2]
    ss.complete(2)
    pair.pump()
    assert pair.of(CommandsCompleted)[-1].commands == [2]
    ss.complete([0, 1])
    ss.complete(1)  # idempotent
    pair.pump()
    assert [e.commands for e in pair.of(CommandsCompleted)] == [[2], [0, 1]]


def test_execution_sync_completes_after_everything_before_it() -> None:
    pair, cs, ss = attached_pair()
    got: list[CommandReceived] = []
    pair.on_server_event = lambda ev: got.append(ev) if isinstance(ev, CommandReceived) else None
    cs.queue_declare("a")
    sync_id = cs.execution_sync()
    pair.pump()
    assert sync_id == 1 and not pair.of(CommandsCompleted)
    ss.complete(0)
    pair.pump()
    assert pair.of(CommandsCompleted)[-1].commands == [0, 1]


def test_results_are_typed() -> None:
    pair, cs, _ss = attached_pair()
    server_completes(pair, {
        QueueQuery: QueueQueryResult(queue="q", message_count=7, subscriber_count=1),
        type(None): None,
    })
    q = cs.queue_query("q")
    pair.pump()
    res = pair.of(ResultReceived)[0]
    assert res.command_id == q and isinstance(res.value, QueueQueryResult)
    assert (res.value.queue, res.value.message_count, res.value.subscriber_count) == ("q", 7, 1)


def test_exchange_query_and_bound_results() -> None:
    from amqp010.spec import ExchangeBound, ExchangeQuery

    pair, cs, _ss = attached_pair()
    server_completes(pair, {ExchangeQuery: ExchangeQueryResult(type="topic", durable=True),
                            ExchangeBound: ExchangeBoundResult(queue_not_found=True)})
    a = cs.exchange_query("x")
    b = cs.exchange_bound("x", "q", "k")
    pair.pump()
    by_id = {r.command_id: r.value for r in pair.of(ResultReceived)}
    assert by_id[a] == ExchangeQueryResult(type="topic", durable=True)
    assert by_id[b] == ExchangeBoundResult(queue_not_found=True)


def test_execution_exception_is_typed_and_ends_the_session() -> None:
    pair, cs, ss = attached_pair()

    def on(ev: Any) -> None:
        if isinstance(ev, CommandReceived):
            ev.session.exception(ErrorCode.NOT_FOUND, ev.command_id, "no such queue",
                                 command=ev.command, field_index=0)

    pair.on_server_event = on
    cid = cs.queue_declare("missing", passive=True)
    pair.pump()
    exc = pair.of(ExecutionExceptionReceived)[0]
    assert (exc.error_code, exc.command_id, exc.class_code, exc.command_code, exc.field_index,
            exc.description) == (ErrorCode.NOT_FOUND, cid, QueueDeclare.CLASS_CODE,
                                 QueueDeclare.OP_CODE, 0, "no such queue")
    assert cs.peer_exception is exc
    detached = pair.of(SessionDetached)[0]
    assert detached.by_peer and detached.code == DetachCode.NORMAL
    assert cs.state is SessionState.CLOSED and ss.state is SessionState.CLOSED


def test_commands_after_an_exception_are_discarded() -> None:
    pair, cs, _ss = attached_pair()
    got: list[CommandReceived] = []

    def on(ev: Any) -> None:
        if isinstance(ev, CommandReceived):
            got.append(ev)
            if len(got) == 1:
                ev.session.exception(ErrorCode.INTERNAL_ERROR, ev.command_id, "boom")

    pair.on_server_event = on
    cs.queue_declare("a")
    cs.queue_declare("b")  # in flight when the exception is raised
    pair.pump()
    assert [e.command.queue for e in got] == ["a"]


def test_flush_asks_for_completed_and_expected() -> None:
    pair, cs, _ss = attached_pair()
    server_completes(pair)
    cs.queue_declare("a")
    pair.pump()
    cs.flush(expected=True, completed=True)
    pair.pump()
    ops = decode_all(bytes(pair.s2c))
    assert SessionExpected(commands=SequenceSet([(1, 1)])) in ops
    assert ops[-1] == SessionCompleted(commands=SequenceSet([(0, 0)]))


def test_gap_marks_commands_completed_and_skips_them() -> None:
    pair, cs, ss = attached_pair()
    got = server_completes(pair)
    # the client declares it will never send commands 0..1: then sends command 2
    assert cs.skip(2) == SequenceSet([(0, 1)])
    cs.queue_declare("after-gap")
    pair.pump()
    assert [(e.command_id, e.command.queue) for e in got] == [(2, "after-gap")]
    assert ss._completed == [(0, 2)]
    assert SessionGap(commands=SequenceSet([(0, 1)])) in decode_all(bytes(pair.c2s))


def test_request_timeout_is_granted_up_to_the_server_limit() -> None:
    from .pump import client_conn, server_conn

    pair = open_pair(client=client_conn(), server=server_conn(max_session_timeout=60))
    cs = pair.client.attach("t", timeout=600)
    pair.pump()
    assert cs.timeout == 60
    assert SessionTimeout(timeout=60) in decode_all(bytes(pair.s2c))
    ss = pair.of(SessionAttached, "server")[0].session
    assert ss.timeout == 60


def test_serial_wraparound_of_command_ids() -> None:
    pair = open_pair()
    cs = pair.client.attach("wrap", first_command_id=0xFFFFFFFE)
    pair.pump()
    got = server_completes(pair)
    ids = [cs.queue_declare(f"q{i}") for i in range(4)]
    assert ids == [0xFFFFFFFE, 0xFFFFFFFF, 0, 1]
    pair.pump()
    assert [e.command_id for e in got] == ids
    assert [i for e in pair.of(CommandsCompleted) for i in e.commands] == ids
    assert cs.outstanding == 0


def test_replay_buffer_is_bounded() -> None:
    from amqp010.session import SessionBusy

    pair, cs, ss = attached_pair(max_outstanding=3)
    for i in range(3):
        cs.queue_declare(f"q{i}")
    assert not cs.can_send
    with pytest.raises(SessionBusy):
        cs.queue_declare("one-too-many")
    server_completes(pair)
    # the 3 pending declares were delivered before the hook was installed
    pair.pump()
    for i in ss.incomplete:
        ss.complete(i)
    pair.pump()
    assert cs.can_send and cs.outstanding == 0


def test_sender_requests_completion_with_flush_every() -> None:
    pair, cs, _ss = attached_pair(flush_every=4)
    for i in range(8):
        cs.queue_declare(f"q{i}")
    flushes = [o for o in decode_all(pair.client.data_to_send(), header=False)
               if isinstance(o, SessionFlush)]
    assert flushes == [SessionFlush(completed=True)] * 2


def test_attached_session_rejects_second_attach_on_same_channel_with_transport_busy() -> None:
    from amqp010.spec import SessionAttach
    from amqp010.spec import SessionDetached as DetachedCtl

    pair, cs, ss = attached_pair()
    pair.client._write(encode_assembly(1, SessionAttach(name=b"other")))
    pair.pump()
    assert DetachedCtl(name=b"other", code=DetachCode.TRANSPORT_BUSY) in decode_all(bytes(pair.s2c))
    assert ss.attached and cs.attached


def test_reattach_same_name_same_channel_is_idempotent() -> None:
    from amqp010.spec import SessionAttach
    from amqp010.spec import SessionAttached as AttachedCtl

    pair, _cs, _ss = attached_pair()
    pair.client._write(encode_assembly(1, SessionAttach(name=b"test-session")))
    pair.pump()
    assert decode_all(bytes(pair.s2c)).count(AttachedCtl(name=b"test-session")) == 2


def test_timely_reply_is_answered_even_when_nothing_is_new() -> None:
    pair, cs, _ = attached_pair()
    cs._on_control(SessionCompleted(commands=SequenceSet([(0, 3)]), timely_reply=True))
    ops = decode_all(pair.client.data_to_send(), header=False)
    assert ops == [SessionKnownCompleted(commands=SequenceSet([(0, 3)]))]


def test_closed_sessions_leave_the_server_registry() -> None:
    pair, cs, ss = attached_pair()
    assert pair.server.registry.get(b"test-session") is ss
    cs.detach()
    pair.pump()
    assert pair.server.registry.get(b"test-session") is None and len(pair.server.registry) == 0


def test_incoming_backlog_counts_uncompleted_commands() -> None:
    pair, cs, ss = attached_pair()
    for i in range(3):
        cs.queue_declare(f"q{i}")
    pair.pump()
    assert pair.server.incoming_backlog == 3
    ss.complete(ss.incomplete)
    assert pair.server.incoming_backlog == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=30), st.lists(st.integers(0, 40), max_size=30),
       st.integers(0, 0xFFFFFFFF))
def test_range_helpers_match_set_semantics(a: list[int], b: list[int], base: int) -> None:
    from amqp010.session import _add_range, _seqset, _subtract

    def shift(xs: list[int]) -> list[int]:
        return [(base + x) & 0xFFFFFFFF for x in xs]

    ra: list[tuple[int, int]] = []
    for x in shift(a):
        ra = _add_range(ra, x, x)
    rb = _seqset(sorted(set(b), key=lambda x: x)).ranges
    rb = [((base + lo) & 0xFFFFFFFF, (base + hi) & 0xFFFFFFFF) for lo, hi in rb]
    assert set(SequenceSet(ra)) == set(shift(a))
    assert set(SequenceSet(_subtract(ra, rb))) == set(shift(a)) - set(shift(b))


def test_traffic_in_flight_during_close_is_ignored() -> None:
    pair, cs, _ss = attached_pair()
    server_completes(pair)
    cs.queue_declare("late")
    pair.server.close()
    pair.pump()
    assert pair.client.closed and pair.server.closed
    closed = pair.of(ConnectionClosed, "server")
    assert [(e.code, e.by_peer) for e in closed] == [(200, False)]
