"""Channels: open/close both ways, flow, content reassembly and its bound, confirms, replies."""

from __future__ import annotations

import pytest
from pamqp import body as pbody
from pamqp import commands as C
from pamqp import header as pheader

from amqp091.connection import ProtocolError
from amqp091.events import (
    ChannelClosed,
    ChannelFlow,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)
from amqp091.framing import FRAME_OVERHEAD, FrameReader
from amqp091.methods import ReplyCode

from .peer import closed_with, methods, open_channel, open_client, sent, wire

DELIVER = C.Basic.Deliver("ctag", 7, False, "ex", "rk")


def content(channel: int, method: object, body: bytes, props: C.Basic.Properties | None = None,
            chunk: int = 1000) -> bytes:
    frames = [method, pheader.ContentHeader(0, len(body), props or C.Basic.Properties())]
    frames += [pbody.ContentBody(body[i:i + chunk]) for i in range(0, len(body), chunk)]
    return wire(channel, *frames)


def test_peer_closes_a_channel() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.receive_data(wire(ch, C.Channel.Close(406, "PRECONDITION_FAILED - x", 60, 40)))
    assert isinstance(methods(conn)[0], C.Channel.CloseOk)
    assert list(conn.events()) == [ChannelClosed(ch, 406, "PRECONDITION_FAILED - x", True,
                                                 60, 40)]
    assert ch not in conn.channels and conn.is_open


def test_we_close_a_channel_and_discard_until_close_ok() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.close_channel(ch, 200, "done")
    (close,) = methods(conn)
    assert isinstance(close, C.Channel.Close) and close.reply_text == "done"
    conn.receive_data(content(ch, DELIVER, b"late"))  # in flight: discarded
    conn.receive_data(wire(ch, C.Basic.QosOk()))
    assert list(conn.events()) == []
    conn.receive_data(wire(ch, C.Channel.Close(200, "crossing", 0, 0)))  # answered
    assert isinstance(methods(conn)[0], C.Channel.CloseOk)
    conn.receive_data(wire(ch, C.Channel.CloseOk()))
    assert list(conn.events()) == [ChannelClosed(ch, 200, "done", False)]
    assert conn.open_channel() == ch  # the number is free again


def test_close_ok_on_an_open_channel_is_command_invalid() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.receive_data(wire(ch, C.Channel.CloseOk()))
    closed_with(conn, ReplyCode.COMMAND_INVALID)


def test_methods_before_open_ok_are_a_channel_error() -> None:
    conn = open_client()
    ch = conn.open_channel()
    conn.receive_data(wire(ch, C.Basic.QosOk()))
    closed_with(conn, ReplyCode.CHANNEL_ERROR)


def test_second_open_ok_is_command_invalid() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.receive_data(wire(ch, C.Channel.OpenOk()))
    closed_with(conn, ReplyCode.COMMAND_INVALID)


def test_peer_flow_is_answered_and_reported() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.receive_data(wire(ch, C.Channel.Flow(False)))
    (ok,) = methods(conn)
    assert isinstance(ok, C.Channel.FlowOk) and ok.active is False
    assert list(conn.events()) == [ChannelFlow(ch, False)]
    assert conn.channels[ch].peer_flow_active is False


def test_message_reassembled_from_many_body_frames() -> None:
    conn = open_client()
    ch = open_channel(conn)
    body = bytes(range(256)) * 40
    props = C.Basic.Properties(content_type="x/y", headers={"n": [1, {"a": -2}]})
    data = content(ch, DELIVER, body, props, chunk=333)
    for i in range(0, len(data), 97):  # and arriving in odd pieces
        conn.receive_data(data[i:i + 97])
    (msg,) = list(conn.events())
    assert isinstance(msg, MessageReceived)
    assert (msg.channel, msg.body, msg.properties, msg.delivery_tag) == (ch, body, props, 7)
    assert msg.method.routing_key == "rk"


def test_empty_body_completes_at_the_header() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.receive_data(content(ch, DELIVER, b""))
    (msg,) = list(conn.events())
    assert isinstance(msg, MessageReceived) and msg.body == b""


@pytest.mark.parametrize(("frames", "code"), [
    ([DELIVER, C.Basic.QosOk()], ReplyCode.UNEXPECTED_FRAME),  # method where content is due
    ([pbody.ContentBody(b"x")], ReplyCode.UNEXPECTED_FRAME),  # body without a header
    ([pheader.ContentHeader(0, 1)], ReplyCode.UNEXPECTED_FRAME),  # header without a method
    ([DELIVER, pheader.ContentHeader(0, 1), pheader.ContentHeader(0, 1)],
     ReplyCode.UNEXPECTED_FRAME),
    ([DELIVER, pheader.ContentHeader(0, 2), pbody.ContentBody(b"xyz")], ReplyCode.FRAME_ERROR),
])
def test_content_out_of_sequence(frames: list[object], code: int) -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.receive_data(wire(ch, *frames))
    closed_with(conn, code)


def test_content_on_a_closed_channel_is_a_channel_error() -> None:
    conn = open_client()
    conn.receive_data(wire(9, pbody.ContentBody(b"x")))
    closed_with(conn, ReplyCode.CHANNEL_ERROR)


def test_message_over_max_message_size_closes_the_channel_without_buffering() -> None:
    conn = open_client(max_message_size=10_000)
    ch = open_channel(conn)
    conn.receive_data(content(ch, DELIVER, b"a" * 10_000))  # at the limit: fine
    assert isinstance(next(conn.events()), MessageReceived)
    conn.receive_data(wire(ch, DELIVER, pheader.ContentHeader(0, 10_001)))
    (close,) = methods(conn)
    assert isinstance(close, C.Channel.Close)
    assert close.reply_code == ReplyCode.CONTENT_TOO_LARGE
    assert "message size 10001 is larger than configured max size 10000" in close.reply_text
    conn.receive_data(wire(ch, *[pbody.ContentBody(b"b" * 1000)] * 10, pbody.ContentBody(b"c")))
    assert conn.buffered == 0 and list(conn.events()) == []
    conn.receive_data(wire(ch, C.Channel.CloseOk()))
    (closed,) = list(conn.events())
    assert isinstance(closed, ChannelClosed) and closed.code == 311 and not closed.by_peer
    assert conn.is_open


def test_publish_splits_the_body_under_frame_max() -> None:
    conn = open_client(C.Connection.Tune(2047, 4096, 0), frame_max=4096)
    ch = open_channel(conn)
    body = bytes(range(256)) * 50
    props = C.Basic.Properties(message_id="m", headers={"k": "v"})
    assert conn.publish(ch, "ex", "rk", body, props, mandatory=True) is None
    data = conn.data_to_send()
    reader = FrameReader(4096, expect_protocol_header=False)  # our own limit enforces it
    reader.feed(data)
    frames = list(reader.frames())
    publish, header, *bodies = (f for _, f in frames)
    assert isinstance(publish, C.Basic.Publish) and publish.mandatory
    assert isinstance(header, pheader.ContentHeader) and header.body_size == len(body)
    assert header.properties == props
    assert len(bodies) == -(-len(body) // (4096 - FRAME_OVERHEAD))
    assert b"".join(b.value for b in bodies) == body  # type: ignore[attr-defined]


def test_a_reader_left_after_a_frame_goes_on_from_the_next() -> None:
    """A caller may stop iterating ``frames()`` after any frame (an exception, a return);
    the next call starts after that frame, whether or not the first generator was closed
    (the compiled build never finalises an abandoned one)."""
    reader = FrameReader(4096, expect_protocol_header=False)
    reader.feed(wire(1, C.Channel.Open(), C.Channel.Flow(True), C.Channel.Close(200, "ok", 0, 0)))
    left = reader.frames()
    assert isinstance(next(left)[1], C.Channel.Open)
    assert isinstance(next(reader.frames())[1], C.Channel.Flow)
    assert [type(frame) for _, frame in reader.frames()] == [C.Channel.Close]
    assert reader.buffered == 0
    del left


def test_properties_too_big_for_a_frame_are_refused() -> None:
    conn = open_client(C.Connection.Tune(2047, 4096, 0), frame_max=4096)
    ch = open_channel(conn)
    with pytest.raises(ValueError, match="frame-max 4096"):
        conn.publish(ch, "", "q", b"", C.Basic.Properties(headers={"h": "x" * 5000}))


def confirming(conn: object) -> int:
    ch = open_channel(conn)  # type: ignore[arg-type]
    conn.confirm_select(ch)  # type: ignore[attr-defined]
    conn.receive_data(wire(ch, C.Confirm.SelectOk()))  # type: ignore[attr-defined]
    (ok,) = list(conn.events())  # type: ignore[attr-defined]
    assert isinstance(ok, MethodReceived) and isinstance(ok.method, C.Confirm.SelectOk)
    return ch


def test_publisher_confirms_resolve_multiple_to_tags() -> None:
    conn = open_client()
    ch = confirming(conn)
    tags = [conn.publish(ch, "", "q", b"%d" % i) for i in range(6)]
    assert tags == [1, 2, 3, 4, 5, 6]
    conn.receive_data(wire(ch, C.Basic.Ack(2), C.Basic.Ack(4, multiple=True),
                           C.Basic.Nack(5, requeue=False), C.Basic.Ack(0, multiple=True)))
    assert list(conn.events()) == [PublishConfirmed(ch, [2], True),
                                   PublishConfirmed(ch, [1, 3, 4], True),
                                   PublishConfirmed(ch, [5], False),
                                   PublishConfirmed(ch, [6], True)]
    assert conn.unconfirmed(ch) == ()


def test_unconfirmed_tags_reported_when_the_connection_drops() -> None:
    conn = open_client()
    ch = confirming(conn)
    for _ in range(3):
        conn.publish(ch, "", "q", b"x")
    conn.receive_data(wire(ch, C.Basic.Ack(1)))
    conn.receive_data(b"")
    events = list(conn.events())
    assert events[1] == ChannelClosed(ch, None, "connection closed: transport closed by peer",
                                      True, unconfirmed=(2, 3))


@pytest.mark.parametrize("confirm", [C.Basic.Ack(9), C.Basic.Ack(9, multiple=True),
                                     C.Basic.Nack(1)])
def test_confirm_of_an_unknown_tag_closes_the_channel(confirm: object) -> None:
    conn = open_client()
    ch = confirming(conn)
    conn.publish(ch, "", "q", b"x")
    conn.publish(ch, "", "q", b"y")
    conn.receive_data(wire(ch, C.Basic.Ack(1)))
    conn.data_to_send()
    list(conn.events())
    conn.receive_data(wire(ch, confirm))
    close = [m for m in methods(conn) if isinstance(m, C.Channel.Close)]
    assert close and close[0].reply_code == ReplyCode.PRECONDITION_FAILED
    assert close[0].class_id == 60 and conn.is_open


def test_confirm_outside_confirm_mode_is_command_invalid() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.publish(ch, "", "q", b"x")
    conn.receive_data(wire(ch, C.Basic.Ack(1)))
    closed_with(conn, ReplyCode.COMMAND_INVALID)


def test_replies_must_answer_our_requests() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.qos(ch, 10)
    conn.queue_declare(ch, "q")
    conn.get(ch, "q")
    conn.send_method(ch, C.Queue.Declare(queue="q2", nowait=True))  # no reply awaited
    conn.receive_data(wire(ch, C.Basic.QosOk(), C.Queue.DeclareOk("q", 0, 0)))
    conn.receive_data(content(ch, C.Basic.GetOk(1, False, "", "q", 0), b"m"))
    events = list(conn.events())
    assert [type(e.method).__name__ for e in events] == ["QosOk", "DeclareOk", "GetOk"]  # type: ignore[attr-defined]
    conn.receive_data(wire(ch, C.Queue.DeclareOk("q2", 0, 0)))  # nobody asked
    closed = closed_with(conn, ReplyCode.COMMAND_INVALID)
    assert "awaiting no reply" in closed.text


def test_a_reply_may_overtake_an_older_request_it_does_not_answer() -> None:
    """RabbitMQ answers basic.cancel (and basic.consume) from the queue's process, so the
    qos-ok of a basic.qos pipelined after it can come first."""
    conn = open_client()
    ch = open_channel(conn)
    conn.cancel(ch, "c1")
    conn.qos(ch, 5, global_=True)
    conn.consume(ch, "q", "c2")
    conn.receive_data(wire(ch, C.Basic.QosOk(), C.Basic.CancelOk("c1"),
                           C.Basic.ConsumeOk("c2")))
    events = list(conn.events())
    assert [type(e.method).__name__ for e in events] == ["QosOk", "CancelOk", "ConsumeOk"]  # type: ignore[attr-defined]
    assert not conn.channels[ch].awaiting
    conn.receive_data(wire(ch, C.Basic.QosOk()))  # nobody asked for a second one
    assert "awaiting no reply" in closed_with(conn, ReplyCode.COMMAND_INVALID).text


def test_broker_cancel_notification_is_a_method_event() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.receive_data(wire(ch, C.Basic.Cancel("ctag", nowait=True)))
    (event,) = list(conn.events())
    assert event == MethodReceived(ch, event.method)  # type: ignore[attr-defined]
    assert event.method.consumer_tag == "ctag"  # type: ignore[attr-defined]
    assert sent(conn) == []


def test_channel_numbers_run_out_at_channel_max() -> None:
    conn = open_client(C.Connection.Tune(channel_max=3, frame_max=131072, heartbeat=0))
    assert [conn.open_channel() for _ in range(3)] == [1, 2, 3]
    with pytest.raises(ProtocolError, match="all 3 channels"):
        conn.open_channel()
