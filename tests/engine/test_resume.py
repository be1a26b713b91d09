"""Session resume: after the transport drops, the client re-attaches the same
session on a new connection and replays what the server had not completed; the
server keeps detached state for the granted timeout.  Nothing runs twice,
nothing is lost."""

from __future__ import annotations

from collections import Counter

from amqp010.events import (
    CommandsCompleted,
    MessageReceived,
    SessionAttached,
    SessionDetached,
)
from amqp010.session import Session, SessionState
from amqp010.spec import DeliveryProperties, DetachCode, FlowMode, MessageProperties
from amqp010.spec import SessionDetached as DetachedCtl
from amqp010.testing.broker import Broker

from .pump import Pair, client_conn
from .test_connection import decode_all


def connect(broker: Broker) -> Pair:
    pair = Pair(client=client_conn(), server=broker.connection())
    pair.pump()
    return pair


def publish(s: Session, i: int, queue: str = "q") -> int:
    return s.message_transfer("", [DeliveryProperties(routing_key=queue),
                                   MessageProperties(application_headers={"i": i})], b"m%d" % i)


def cut(pair: Pair, c2s_keep: int, s2c_keep: int = 0) -> None:
    """Drop the transport: only the first bytes of what is in flight arrive."""
    c2s = pair.client.data_to_send()
    pair.server.receive_data(c2s[:c2s_keep])
    s2c = pair.server.data_to_send()
    pair.client.receive_data(s2c[:s2c_keep])
    pair.client_events.extend(pair.client.events())
    pair.server.receive_data(b"")
    pair.client.receive_data(b"")
    pair.client_events.extend(pair.client.events())
    pair.server.data_to_send()


def test_publishes_cut_mid_frame_are_replayed_once() -> None:
    broker = Broker()
    pair = connect(broker)
    s = pair.client.attach("resumable", timeout=60)
    pair.pump()
    assert s.timeout == 60
    s.queue_declare("q")
    for i in range(5):
        publish(s, i)
    pair.pump()
    for i in range(5, 20):
        publish(s, i)
    cut(pair, c2s_keep=700)  # a few transfers arrive, one is cut in the middle
    arrived = len(broker.queues["q"].messages)
    assert 5 < arrived < 20
    assert s.state is SessionState.DETACHED and s.outstanding > 0
    server_session = broker.registry.get(b"resumable")
    assert server_session is not None and server_session.state is SessionState.DETACHED
    assert any(isinstance(e, SessionDetached) and e.code is None for e in pair.client_events)

    pair2 = connect(broker)
    pair2.client.resume(s)
    pair2.pump()
    assert pair2.of(SessionAttached)[0].resumed and pair2.of(SessionAttached, "server")[0].resumed
    assert pair2.of(SessionAttached, "server")[0].session is server_session
    assert s.outstanding == 0
    bodies = [m.body for m in broker.queues["q"].messages]
    assert bodies == [b"m%d" % i for i in range(20)]
    completed = [i for p in (pair, pair2) for e in p.of(CommandsCompleted) for i in e.commands]
    assert sorted(completed) == list(range(21))


def test_deliveries_and_accepts_survive_a_drop_exactly_once() -> None:
    broker = Broker()
    pair = connect(broker)
    s = pair.client.attach("consumer", timeout=60)
    s.auto_complete = True
    pair.pump()
    s.queue_declare("q")
    for i in range(30):
        publish(s, i)
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 10, None)
    pair.pump()
    first = [m for m in pair.of(MessageReceived)]
    assert len(first) == 10
    s.message_accept([m.command_id for m in first[:5]])
    s.grant("sub", 20, None)
    # the accept and the new credit reach the broker; its deliveries are cut short
    cut(pair, c2s_keep=10_000, s2c_keep=400)
    got_before = pair.of(MessageReceived)
    assert 10 <= len(got_before) < 30

    pair2 = connect(broker)
    pair2.client.resume(s)
    pair2.pump()
    got_after = pair2.of(MessageReceived)
    replayed = [a for a in decode_all(bytes(pair2.s2c)) if type(a).__name__ == "MessageTransfer"]
    assert len(replayed) > len(got_after)  # some replays were duplicates, dropped by id
    all_msgs = got_before + got_after
    counts = Counter(m.message_properties.application_headers["i"] for m in all_msgs)
    assert sorted(counts) == list(range(30)) and set(counts.values()) == {1}
    s.message_accept([m.command_id for m in all_msgs[5:]])
    s.queue_query("q")
    pair2.pump()
    model = broker.model(broker.registry.get(b"consumer"))
    assert not model.unacked and not broker.queues["q"].messages


def test_detached_state_expires_after_the_timeout_and_messages_return() -> None:
    broker = Broker()
    pair = connect(broker)
    s = pair.client.attach("short", timeout=5)
    pair.pump()
    s.queue_declare("q")
    for i in range(3):
        publish(s, i)
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 3, None)
    pair.pump()
    assert len(pair.of(MessageReceived)) == 3 and not broker.queues["q"].messages
    pair.server.tick(100.0)
    cut(pair, 0)
    broker.tick(104.0)
    assert broker.registry.get(b"short") is not None  # still kept
    broker.tick(105.5)
    assert broker.registry.get(b"short") is None
    q = broker.queues["q"]
    assert [m.body for m in q.messages] == [b"m0", b"m1", b"m2"]
    assert all(m.redelivered for m in q.messages) and not q.subscriptions


def test_timeout_zero_session_is_gone_with_the_transport() -> None:
    broker = Broker()
    pair = connect(broker)
    s = pair.client.attach("ephemeral")
    pair.pump()
    cut(pair, 0)
    assert s.state is SessionState.CLOSED
    assert broker.registry.get(b"ephemeral") is None


def test_attach_of_a_busy_session_needs_force() -> None:
    broker = Broker()
    first = connect(broker)
    s = first.client.attach("busy", timeout=60)
    first.pump()
    second = connect(broker)
    intruder = second.client.attach("busy")
    second.pump()
    assert DetachedCtl(name=b"busy", code=DetachCode.SESSION_BUSY) in decode_all(bytes(second.s2c))
    assert intruder.state is SessionState.CLOSED and s.attached
    # force takes it over: the old transport is told session-busy
    third = connect(broker)
    s.connection = None  # the client gave up on the first connection
    s.state = SessionState.DETACHED
    first.client.sessions.clear()
    third.client.resume(s, force=True)
    third.pump()
    first.pump()
    assert s.attached and s.connection is third.client
    assert DetachedCtl(name=b"busy", code=DetachCode.SESSION_BUSY) in decode_all(bytes(first.s2c))


def test_resume_requires_a_detached_session() -> None:
    broker = Broker()
    pair = connect(broker)
    s = pair.client.attach("x")
    pair.pump()
    import pytest

    from amqp010.connection import ProtocolError

    with pytest.raises(ProtocolError):
        pair.client.resume(s)


def test_abort_discards_resumable_sessions_at_both_ends() -> None:
    """Connection.abort (the bridge's recovery from an internal fault): the sessions are
    not kept for a resume, here or at the broker, so what they held is requeued."""
    from amqp010.events import ConnectionClosed
    from amqp010.spec import CloseCode, ConnectionClose, SessionRequestTimeout

    broker = Broker()
    pair = connect(broker)
    s = pair.client.attach("kept", timeout=60)
    pair.pump()
    assert s.timeout == 60
    pair.client.abort(CloseCode.CONNECTION_FORCED, "internal error")
    events = list(pair.client.events())
    assert [type(e) for e in events] == [SessionDetached, ConnectionClosed]
    closed = events[1]
    assert isinstance(closed, ConnectionClosed)
    assert (closed.code, closed.text) == (CloseCode.CONNECTION_FORCED, "internal error")
    assert s.state is SessionState.CLOSED and pair.client.closed
    sent = pair.client.data_to_send()
    controls = decode_all(sent, header=False)
    assert SessionRequestTimeout(timeout=0) in controls
    assert any(isinstance(c, ConnectionClose) and c.reply_code == CloseCode.CONNECTION_FORCED
               for c in controls)
    pair.server.receive_data(sent)
    pair.server.receive_data(b"")  # then the transport is dropped
    list(pair.server.events())
    assert broker.registry.get(b"kept") is None
