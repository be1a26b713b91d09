"""Message transfer, subscriptions, credit and window flow, accept/reject/release,
acquire, large messages, and the model commands, client role against the
in-memory broker (engine server role)."""

from __future__ import annotations

from typing import Any

import pytest

from amqp010.codec import encode_header
from amqp010.events import (
    CommandsCompleted,
    CreditChanged,
    ExecutionExceptionReceived,
    MessageReceived,
    ResultReceived,
)
from amqp010.flow import UNLIMITED, Credit, CreditError
from amqp010.framing import FRAME_HEADER_SIZE, FrameDecoder, ProtocolHeader
from amqp010.session import Session
from amqp010.spec import (
    AcceptMode,
    Acquired,
    AcquireMode,
    CreditUnit,
    DeliveryProperties,
    ErrorCode,
    ExchangeBoundResult,
    ExchangeQueryResult,
    FlowMode,
    MessageProperties,
    QueueQueryResult,
)
from amqp010.testing.broker import Broker, topic_match

from .pump import Pair, client_conn


def broker_pair(**client_cfg: Any) -> tuple[Pair, Broker, Session]:
    broker = Broker()
    pair = Pair(client=client_conn(**client_cfg), server=broker.connection())
    pair.pump()
    session = pair.client.attach("msg")
    pair.pump()
    return pair, broker, session


def publish(s: Session, key: str, body: bytes, exchange: str = "", **mp: Any) -> int:
    return s.message_transfer(exchange, [DeliveryProperties(routing_key=key),
                                         MessageProperties(**mp)], body)


def received(pair: Pair) -> list[MessageReceived]:
    return pair.of(MessageReceived)


def bodies(pair: Pair) -> list[bytes]:
    return [m.body for m in received(pair)]


def fill(pair: Pair, s: Session, queue: str, n: int) -> None:
    s.queue_declare(queue)
    for i in range(n):
        publish(s, queue, b"m%d" % i)
    pair.pump()


def test_publish_is_completed_only_after_enqueue_and_delivered_in_order() -> None:
    pair, broker, s = broker_pair()
    s.queue_declare("q")
    ids = [publish(s, "q", b"m%d" % i, content_type="text/plain") for i in range(3)]
    pair.pump()
    done = [i for e in pair.of(CommandsCompleted) for i in e.commands]
    assert set(ids) <= set(done)
    assert [m.body for m in broker.queues["q"].messages] == [b"m0", b"m1", b"m2"]
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 10, None)
    pair.pump()
    msgs = received(pair)
    assert [m.body for m in msgs] == [b"m0", b"m1", b"m2"]
    assert all(m.destination == "sub" for m in msgs)
    assert msgs[0].message_properties == MessageProperties(content_type="text/plain")
    assert msgs[0].delivery_properties.routing_key == "q"
    assert msgs[0].delivery_properties.exchange == ""


def test_credit_mode_message_credit_is_never_exceeded() -> None:
    pair, broker, s = broker_pair()
    fill(pair, s, "q", 5)
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 2, None)
    pair.pump()
    assert bodies(pair) == [b"m0", b"m1"]
    server_session = pair.server.conn.sessions[1]
    assert server_session.credit("sub").messages == 0 and s.incoming_credit["sub"].messages == 0
    s.message_flow("sub", CreditUnit.MESSAGE, 2)
    pair.pump()
    assert bodies(pair) == [b"m0", b"m1", b"m2", b"m3"]
    assert len(broker.queues["q"].messages) == 1


def test_byte_credit_counts_header_and_body_frame_payloads() -> None:
    pair, _broker, s = broker_pair(max_frame_size=4096)
    s.queue_declare("q")
    for size in (100, 5000, 100):  # the middle one spans two body frames
        publish(s, "q", b"x" * size)
    pair.pump()
    header = (MessageProperties(), DeliveryProperties(exchange="", routing_key="q"))
    cost = len(encode_header(header)) + 100
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", None, cost)  # exactly one small message
    pair.pump()
    assert [len(b) for b in bodies(pair)] == [100]
    assert s.incoming_credit["sub"].bytes == 0 == pair.server.conn.sessions[1].credit("sub").bytes
    s.message_flow("sub", CreditUnit.BYTE, cost + 4900 - 1)  # one octet short of the big one
    pair.pump()
    assert len(received(pair)) == 1
    s.message_flow("sub", CreditUnit.BYTE, 1)
    pair.pump()
    assert [len(b) for b in bodies(pair)] == [100, 5000]
    assert s.incoming_credit["sub"].bytes == 0


def test_window_mode_regrants_on_completion() -> None:
    pair, _broker, s = broker_pair()
    s.auto_complete = False
    fill(pair, s, "q", 5)
    s.message_subscribe("q", "sub")  # window mode is the default
    s.grant("sub", 2, None)
    pair.pump()
    assert bodies(pair) == [b"m0", b"m1"]
    # accepting does not give credit back in window mode; completing does
    s.message_accept([received(pair)[0].command_id])
    pair.pump()
    assert len(received(pair)) == 2
    s.complete(received(pair)[0].command_id)
    pair.pump()
    assert bodies(pair) == [b"m0", b"m1", b"m2"]
    assert pair.of(CreditChanged, "server")
    for m in received(pair)[1:]:
        s.complete(m.command_id)
    pair.pump()
    assert bodies(pair) == [b"m0", b"m1", b"m2", b"m3", b"m4"]


def test_window_mode_with_auto_complete_drains_the_queue() -> None:
    pair, broker, s = broker_pair()
    fill(pair, s, "q", 20)
    s.message_subscribe("q", "sub", accept_mode=AcceptMode.NONE)
    s.grant("sub", 3, None)
    pair.pump()
    assert len(received(pair)) == 20 and not broker.queues["q"].messages


def test_unlimited_credit() -> None:
    pair, _broker, s = broker_pair()
    fill(pair, s, "q", 10)
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.message_flow("sub", CreditUnit.MESSAGE, UNLIMITED)
    s.message_flow("sub", CreditUnit.BYTE, UNLIMITED)
    pair.pump()
    assert len(received(pair)) == 10
    assert s.incoming_credit["sub"].messages is None


def test_stop_zeroes_credit_and_flush_uses_it_up() -> None:
    pair, _broker, s = broker_pair()
    fill(pair, s, "q", 3)
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.message_stop("sub")
    pair.pump()
    assert pair.server.conn.sessions[1].credit("sub").messages == 0
    s.grant("sub", 5, None)
    flush_id = s.message_flush("sub")
    pair.pump()
    assert len(received(pair)) == 3
    assert flush_id in [i for e in pair.of(CommandsCompleted) for i in e.commands]
    assert s.incoming_credit["sub"].messages == 0 == pair.server.conn.sessions[1].credit("sub").messages
    publish(s, "q", b"late")
    pair.pump()
    assert len(received(pair)) == 3  # no credit after the flush


def test_transfers_sent_before_the_peer_saw_our_stop_are_not_beyond_credit() -> None:
    """message.stop races with transfers already on the wire: those are legitimate, and
    credit checks resume (at zero) once the peer completes the stop."""
    pair, _broker, s = broker_pair()
    s.queue_declare("q")
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 3, None)
    pair.pump()
    server_session = pair.server.conn.sessions[1]
    s.message_stop("sub")  # not yet on the wire when the server sends
    for body in (b"a", b"b", b"c"):
        server_session.message_transfer("sub", (), body)
    pair.client.receive_data(pair.server.data_to_send())
    pair.client_events += pair.client.events()
    assert bodies(pair) == [b"a", b"b", b"c"]
    assert not pair.of(ExecutionExceptionReceived, "server") and s.attached
    s.message_flow("sub", CreditUnit.MESSAGE, 1)  # granted after the stop: survives it
    pair.pump()
    assert server_session.credit("sub").messages == 1 == s.incoming_credit["sub"].messages
    assert not s.incoming_credit["sub"].stops_pending


def test_credit_after_a_stop_is_at_most_what_was_granted_since() -> None:
    credit = Credit(mode=FlowMode.CREDIT)
    credit.add(CreditUnit.MESSAGE, 10)
    credit.add(CreditUnit.BYTE, UNLIMITED)
    credit.stop_sent()
    credit.consume(1, 100)
    assert credit.allows(10**9)  # the peer may not have seen the stop yet
    credit.add(CreditUnit.MESSAGE, 2)
    credit.stop_completed()
    assert (credit.messages, credit.bytes) == (2, 0)  # bytes: stop took the octet credit
    assert not credit.allows(1)
    credit.add(CreditUnit.BYTE, UNLIMITED)
    assert credit.allows(10**9)


def test_server_application_cannot_exceed_credit() -> None:
    pair, _broker, s = broker_pair()
    s.queue_declare("q")
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 1, None)
    pair.pump()
    server_session = pair.server.conn.sessions[1]
    assert server_session.can_transfer("sub", (), b"a")
    server_session.message_transfer("sub", (), b"a")
    assert not server_session.can_transfer("sub", (), b"b")
    before = (server_session.next_command_id, pair.server.conn.bytes_to_send)
    with pytest.raises(CreditError):
        server_session.message_transfer("sub", (), b"b")
    assert (server_session.next_command_id, pair.server.conn.bytes_to_send) == before


def test_one_mebibyte_messages_at_max_frame_size_4096() -> None:
    pair, _broker, s = broker_pair(max_frame_size=4096)
    assert pair.client.max_frame_size == 4096 == pair.server.conn.max_frame_size
    body = bytes(range(256)) * 4096
    s.queue_declare("big")
    publish(s, "big", body)
    s.message_subscribe("big", "sub")
    s.grant("sub", 1, None)
    pair.pump()
    assert [m.body for m in received(pair)] == [body]
    for stream in (bytes(pair.c2s), bytes(pair.s2c)):
        dec = FrameDecoder()
        dec.feed(stream)
        sizes = [len(f.payload) + FRAME_HEADER_SIZE for f in dec.frames()
                 if not isinstance(f, ProtocolHeader)]
        assert max(sizes) == 4096 and len(sizes) > 256


def test_accept_reject_release_and_redelivery() -> None:
    pair, broker, s = broker_pair()
    broker.exchanges["amq.fanout"].bindings.clear()
    s.exchange_declare("dlx", "fanout")
    s.queue_declare("dead")
    s.exchange_bind("dead", "dlx")
    s.queue_declare("q", alternate_exchange="dlx")
    for i in range(3):
        publish(s, "q", b"m%d" % i)
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 3, None)
    pair.pump()
    m0, m1, m2 = received(pair)
    s.message_release([m0.command_id], set_redelivered=True)
    s.message_reject([m1.command_id], 0, "bad message")
    s.message_accept([m2.command_id])
    pair.pump()
    assert [m.body for m in broker.queues["dead"].messages] == [b"m1"]
    assert [m.body for m in broker.queues["q"].messages] == [b"m0"]
    s.message_flow("sub", CreditUnit.MESSAGE, 1)
    pair.pump()
    again = received(pair)[-1]
    assert again.body == b"m0" and again.delivery_properties.redelivered is True
    s.message_accept([again.command_id])
    s.queue_query("q")
    pair.pump()
    q = pair.of(ResultReceived)[-1].value
    assert q.message_count == 0 and q.subscriber_count == 1
    assert not broker.model(pair.server.conn.sessions[1]).unacked


def test_release_without_redelivered_flag_keeps_it_false() -> None:
    pair, _broker, s = broker_pair()
    fill(pair, s, "q", 1)
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 2, None)
    pair.pump()
    s.message_release([received(pair)[0].command_id])
    pair.pump()
    assert [m.delivery_properties.redelivered for m in received(pair)] == [False, False]


def test_not_acquired_subscription_and_acquire() -> None:
    pair, broker, s = broker_pair()
    fill(pair, s, "q", 2)
    s.message_subscribe("q", "browse", acquire_mode=AcquireMode.NOT_ACQUIRED)
    s.message_set_flow_mode("browse", FlowMode.CREDIT)
    s.grant("browse", 10, None)
    pair.pump()
    b0, _b1 = received(pair)
    assert b0.transfer.acquire_mode == AcquireMode.NOT_ACQUIRED
    assert len(broker.queues["q"].messages) == 2  # browsing leaves them
    acq = s.message_acquire([b0.command_id, 999])
    pair.pump()
    res = next(r for r in pair.of(ResultReceived) if r.command_id == acq)
    assert isinstance(res.value, Acquired) and list(res.value.transfers) == [b0.command_id]
    assert [m.body for m in broker.queues["q"].messages] == [b"m1"]


def test_cancel_stops_deliveries_but_pending_ones_can_still_be_accepted() -> None:
    pair, broker, s = broker_pair()
    fill(pair, s, "q", 1)
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 10, None)
    pair.pump()
    s.message_cancel("sub")
    pair.pump()
    publish(s, "q", b"after-cancel")
    s.message_accept([received(pair)[0].command_id])
    pair.pump()
    assert bodies(pair) == [b"m0"]
    assert [m.body for m in broker.queues["q"].messages] == [b"after-cancel"]
    assert not pair.of(ExecutionExceptionReceived)


def test_exchanges_routing_bind_unbind_bound_query() -> None:
    pair, broker, s = broker_pair()
    s.exchange_declare("topics", "topic")
    for q in ("all", "eu", "none"):
        s.queue_declare(q)
    s.exchange_bind("all", "topics", "orders.#")
    s.exchange_bind("eu", "topics", "orders.eu.*")
    s.exchange_bind("all", "amq.fanout")
    s.exchange_bind("eu", "amq.fanout")
    publish(s, "orders.eu.created", b"1", exchange="topics")
    publish(s, "orders.us.created", b"2", exchange="topics")
    publish(s, "ignored", b"3", exchange="amq.fanout")
    b1 = s.exchange_bound("topics", "eu", "orders.eu.*")
    b2 = s.exchange_bound("topics", "none", "x")
    x1 = s.exchange_query("topics")
    x2 = s.exchange_query("missing")
    s.exchange_unbind("eu", "amq.fanout")
    publish(s, "ignored", b"4", exchange="amq.fanout")
    pair.pump()
    assert [m.body for m in broker.queues["all"].messages] == [b"1", b"2", b"3", b"4"]
    assert [m.body for m in broker.queues["eu"].messages] == [b"1", b"3"]
    res = {r.command_id: r.value for r in pair.of(ResultReceived)}
    assert res[b1] == ExchangeBoundResult()
    assert res[b2] == ExchangeBoundResult(queue_not_matched=True, key_not_matched=True)
    assert res[x1] == ExchangeQueryResult(type="topic", arguments={})
    assert res[x2] == ExchangeQueryResult(not_found=True)


def test_queue_purge_delete_and_errors() -> None:
    pair, _broker, s = broker_pair()
    fill(pair, s, "q", 3)
    s.queue_purge("q")
    qq = s.queue_query("q")
    s.queue_delete("q")
    qq2 = s.queue_query("q")
    pair.pump()
    res = {r.command_id: r.value for r in pair.of(ResultReceived)}
    assert res[qq].message_count == 0
    assert res[qq2] == QueueQueryResult(queue="q")
    s.message_transfer("no-such-exchange", [DeliveryProperties(routing_key="k")], b"x")
    pair.pump()
    exc = pair.of(ExecutionExceptionReceived)[0]
    assert exc.error_code == ErrorCode.NOT_FOUND and "no-such-exchange" in exc.description


def test_subscribe_to_missing_queue_is_not_found() -> None:
    pair, _broker, s = broker_pair()
    cid = s.message_subscribe("missing", "sub")
    pair.pump()
    exc = pair.of(ExecutionExceptionReceived)[0]
    assert (exc.error_code, exc.command_id) == (ErrorCode.NOT_FOUND, cid)


def test_tx_commit_and_rollback() -> None:
    pair, broker, s = broker_pair()
    s.queue_declare("q")
    s.tx_select()
    publish(s, "q", b"t1")
    pair.pump()
    assert not broker.queues["q"].messages
    s.tx_commit()
    publish(s, "q", b"t2")
    s.tx_rollback()
    pair.pump()
    assert [m.body for m in broker.queues["q"].messages] == [b"t1"]
    s.message_subscribe("q", "sub")
    s.message_set_flow_mode("sub", FlowMode.CREDIT)
    s.grant("sub", 1, None)
    pair.pump()
    s.message_accept([received(pair)[0].command_id])
    s.tx_rollback()  # the accept is undone: redelivered
    s.message_flow("sub", CreditUnit.MESSAGE, 1)
    pair.pump()
    assert bodies(pair) == [b"t1", b"t1"]
    assert received(pair)[1].delivery_properties.redelivered


def test_round_robin_between_two_subscribers() -> None:
    pair, _broker, s = broker_pair()
    fill(pair, s, "q", 4)
    for dest in ("a", "b"):
        s.message_subscribe("q", dest)
        s.message_set_flow_mode(dest, FlowMode.CREDIT)
        s.grant(dest, 10, None)
    pair.pump()
    dests = [m.destination for m in received(pair)]
    assert sorted(dests) == ["a", "a", "b", "b"]


def test_topic_match() -> None:
    assert topic_match("a.#", "a") and topic_match("a.#", "a.b.c")
    assert topic_match("*.b", "a.b") and not topic_match("*.b", "a.c.b")
    assert topic_match("#", "") and topic_match("#.z", "x.y.z") and not topic_match("a.*", "a")


def test_credit_unit() -> None:
    c = Credit()
    assert not c.allows(1)
    c.add(CreditUnit.MESSAGE, 1)
    c.add(CreditUnit.BYTE, None)
    c.consume(7, 1000)
    assert c.in_flight == {7: 1000} and c.messages == 0
    assert c.completed(7) and c.messages == 1 and not c.completed(7)
    with pytest.raises(ValueError):
        c.add(9, 1)


def test_a_transfer_given_its_encoded_header_sends_the_same_bytes() -> None:
    """message_transfer takes the header structs or their encoding (a sender that sized the
    transfer by it encodes it once): the frames on the wire are the same."""
    header = [DeliveryProperties(routing_key="q"), MessageProperties(content_type="text/plain",
                                                                     application_headers={"k": 1})]
    wires = []
    for given in (header, encode_header(tuple(header))):
        pair, _, s = broker_pair()
        s.queue_declare("q")
        pair.pump()
        pair.client.data_to_send()
        publish_id = s.message_transfer("", given, b"body")
        wires.append((publish_id, pair.client.data_to_send()))
        pair.pump()
    assert wires[0] == wires[1] and wires[0][1]
