"""Client-role connection: handshake, SASL, tune, heartbeats, blocking, protocol errors."""

from __future__ import annotations

import struct

import pytest
from pamqp import commands as C
from pamqp import encode

from amqp091.connection import ConnectionState, ProtocolError
from amqp091.events import (
    ChannelClosed,
    ConnectionBlocked,
    ConnectionClosed,
    ConnectionOpened,
    ConnectionUnblocked,
    HeartbeatTimeout,
)
from amqp091.methods import ReplyCode
from amqp091.sasl import ClientCredentials

from .peer import (
    RABBIT_START,
    client,
    closed_with,
    methods,
    open_channel,
    open_client,
    sent,
    wire,
)


def test_handshake_plain_login_capabilities_and_tune() -> None:
    conn = client(credentials=ClientCredentials("alice", "sécret"), virtual_host="vh",
                  channel_max=100, frame_max=65536, heartbeat=30)
    conn.receive_data(wire(0, RABBIT_START))
    (start_ok,) = methods(conn)
    assert isinstance(start_ok, C.Connection.StartOk)
    assert (start_ok.mechanism, start_ok.response) == ("PLAIN", "\0alice\0sécret")
    caps = start_ok.client_properties["capabilities"]
    assert isinstance(caps, dict)
    for cap in ("publisher_confirms", "consumer_cancel_notify", "basic.nack",
                "connection.blocked"):
        assert caps[cap] is True
    assert conn.state is ConnectionState.AWAIT_TUNE
    conn.receive_data(wire(0, C.Connection.Tune(channel_max=0, frame_max=131072, heartbeat=60)))
    tune_ok, open_ = methods(conn)
    assert isinstance(tune_ok, C.Connection.TuneOk) and isinstance(open_, C.Connection.Open)
    assert (tune_ok.channel_max, tune_ok.frame_max, tune_ok.heartbeat) == (100, 65536, 30)
    assert open_.virtual_host == "vh"
    conn.receive_data(wire(0, C.Connection.OpenOk()))
    assert list(conn.events()) == [ConnectionOpened("vh", RABBIT_START.server_properties,
                                                    100, 65536, 30, "alice")]
    assert conn.is_open


@pytest.mark.parametrize(("ours", "theirs", "agreed"), [
    (None, 60, 60), (0, 60, 0), (10, 60, 10), (90, 60, 60), (10, 0, 10), (None, 0, 0)])
def test_heartbeat_negotiation(ours: int | None, theirs: int, agreed: int) -> None:
    conn = open_client(C.Connection.Tune(2047, 131072, theirs), heartbeat=ours)
    assert conn.heartbeat == agreed


def test_amqplain_when_only_it_is_offered() -> None:
    conn = client(credentials=ClientCredentials("bob", "pw"))
    conn.receive_data(wire(0, C.Connection.Start(mechanisms="AMQPLAIN")))
    (start_ok,) = methods(conn)
    assert start_ok.mechanism == "AMQPLAIN"  # type: ignore[attr-defined]
    table = start_ok.response.encode()  # type: ignore[attr-defined]
    assert table == encode.field_table({"LOGIN": "bob", "PASSWORD": "pw"})[4:]


def test_external_only_when_configured() -> None:
    offered = C.Connection.Start(mechanisms="EXTERNAL")
    conn = client()
    conn.receive_data(wire(0, offered))
    assert conn.closed and conn.data_to_send() == b""  # the spec: just close the socket
    assert conn.auth_error is not None and "EXTERNAL" in conn.auth_error
    (closed,) = list(conn.events())
    assert isinstance(closed, ConnectionClosed) and closed.code is None
    conn = client(credentials=ClientCredentials(mechanisms=("EXTERNAL", "PLAIN")))
    conn.receive_data(wire(0, offered))
    (start_ok,) = methods(conn)
    assert (start_ok.mechanism, start_ok.response) == ("EXTERNAL", "")  # type: ignore[attr-defined]
    assert conn.user is None


def test_refused_login_is_reported() -> None:
    conn = client()
    conn.receive_data(wire(0, RABBIT_START))
    conn.data_to_send()
    conn.receive_data(wire(0, C.Connection.Close(403, "ACCESS_REFUSED - Login was refused",
                                                 0, 0)))
    assert isinstance(methods(conn)[0], C.Connection.CloseOk)
    assert conn.auth_error == "ACCESS_REFUSED - Login was refused"
    assert list(conn.events()) == [ConnectionClosed(403, "ACCESS_REFUSED - Login was refused",
                                                    by_peer=True)]


def test_transport_closed_after_start_ok_is_a_refused_login() -> None:
    conn = client()
    conn.receive_data(wire(0, RABBIT_START))
    conn.receive_data(b"")
    assert conn.auth_error is not None and "login refused" in conn.auth_error
    assert list(conn.events()) == [ConnectionClosed(None, "transport closed by peer", True)]


def test_peer_answering_with_another_protocol_header_closes() -> None:
    conn = client()
    conn.receive_data(b"AMQP\x01\x01\x00\x0a")
    (closed,) = list(conn.events())
    assert isinstance(closed, ConnectionClosed) and closed.code is None and "1-0-10" in closed.text
    assert conn.closed


def test_frame_over_frame_max_is_a_frame_error_before_its_payload_arrives() -> None:
    conn = open_client(frame_max=4096 * 2)
    header = struct.pack(">BHI", 3, 1, 4096 * 2)  # one octet too many with the overhead
    conn.receive_data(header)
    closed = closed_with(conn, ReplyCode.FRAME_ERROR)
    assert "frame-max 8192" in closed.text
    assert conn.buffered == 0


def test_frames_before_tune_are_held_to_the_minimum_frame_max() -> None:
    conn = client()
    conn.receive_data(struct.pack(">BHI", 1, 0, 5000))
    closed_with(conn, ReplyCode.FRAME_ERROR)


def test_channel_past_channel_max_is_a_channel_error() -> None:
    conn = open_client(C.Connection.Tune(channel_max=10, frame_max=131072, heartbeat=0))
    conn.receive_data(wire(11, C.Channel.Flow(active=False)))
    closed = closed_with(conn, ReplyCode.CHANNEL_ERROR)
    assert "channel-max 10" in closed.text


def test_method_on_a_channel_that_is_not_open_is_a_channel_error() -> None:
    conn = open_client()
    conn.receive_data(wire(3, C.Basic.QosOk()))
    closed_with(conn, ReplyCode.CHANNEL_ERROR)


def test_unknown_method_is_not_implemented() -> None:
    conn = open_client()
    conn.receive_data(struct.pack(">BHIHH", 1, 0, 4, 60, 999) + b"\xce")
    closed = closed_with(conn, ReplyCode.NOT_IMPLEMENTED)
    assert "class 60, method 999" in closed.text


@pytest.mark.parametrize("method", [
    C.Basic.Publish(exchange="x"), C.Queue.Declare(queue="q"), C.Channel.Open()])
def test_method_a_server_never_sends_is_command_invalid(method: object) -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.receive_data(wire(ch, method))
    closed_with(conn, ReplyCode.COMMAND_INVALID)


def test_connection_method_off_channel_zero_and_channel_method_on_it() -> None:
    conn = open_client()
    conn.receive_data(wire(1, C.Connection.Blocked("x")))
    closed_with(conn, ReplyCode.COMMAND_INVALID)
    conn = open_client()
    conn.receive_data(wire(0, C.Basic.QosOk()))
    closed_with(conn, ReplyCode.COMMAND_INVALID)


def test_handshake_method_out_of_order_is_command_invalid() -> None:
    conn = client()
    conn.receive_data(wire(0, C.Connection.OpenOk()))
    closed_with(conn, ReplyCode.COMMAND_INVALID)


@pytest.mark.parametrize("data", [
    wire(0, C.Connection.Blocked("x"))[:-1] + b"\x00",  # bad frame-end
    struct.pack(">BHIHHBBI", 1, 0, 11, 10, 10, 0, 9, 1000) + b"x\xce",  # table past the end
    struct.pack(">BHI", 1, 0, 2) + b"\x00\x0a\xce",  # no room for a method id
    struct.pack(">BHI", 9, 0, 0) + b"\xce",  # unknown frame type
    struct.pack(">BHI", 8, 0, 1) + b"\x00\xce",  # heartbeat with a payload
    struct.pack(">BHI", 2, 1, 3) + b"\x00\x3c\x00\xce",  # truncated content header
])
def test_malformed_frames_are_frame_errors_never_exceptions(data: bytes) -> None:
    conn = open_client()
    open_channel(conn)
    conn.receive_data(data)
    closed_with(conn, ReplyCode.FRAME_ERROR)


def test_heartbeat_off_channel_zero_is_an_unexpected_frame() -> None:
    conn = open_client()
    conn.receive_data(struct.pack(">BHI", 8, 1, 0) + b"\xce")
    closed_with(conn, ReplyCode.UNEXPECTED_FRAME)


def test_garbage_in_any_state_never_raises() -> None:
    for state_bytes in (b"", wire(0, RABBIT_START)):
        for junk in (b"\x00" * 64, b"\xff" * 64, b"AMQX" * 4, bytes(range(256))):
            conn = client()
            conn.receive_data(state_bytes)
            conn.receive_data(junk)
            assert conn.closed or conn.buffered < 8


def test_frames_arriving_byte_by_byte() -> None:
    conn = client()
    for b in wire(0, RABBIT_START):
        conn.receive_data(bytes([b]))
    assert isinstance(methods(conn)[0], C.Connection.StartOk)


def test_heartbeats_sent_at_half_the_interval_and_dead_peer_after_two() -> None:
    conn = open_client(C.Connection.Tune(2047, 131072, 10), heartbeat=10)
    conn.tick(100.0)
    assert conn.next_deadline() == 105.0
    conn.tick(104.0)
    assert sent(conn) == []
    conn.tick(105.0)
    assert [type(f).__name__ for _, f in sent(conn)] == ["Heartbeat"]
    conn.receive_data(wire(0, C.Connection.Blocked("m")))  # traffic: the peer is alive
    conn.tick(115.0)
    assert not conn.closed
    assert conn.next_deadline() == 120.0
    conn.tick(135.1)
    events = list(conn.events())
    assert isinstance(events[-2], HeartbeatTimeout) and events[-2].idle == pytest.approx(20.1)
    assert isinstance(events[-1], ConnectionClosed) and events[-1].code is None
    assert conn.next_deadline() is None


def test_no_heartbeat_no_deadline() -> None:
    conn = open_client(C.Connection.Tune(2047, 131072, 0), heartbeat=None)
    conn.tick(1.0)
    conn.tick(10_000.0)
    assert conn.next_deadline() is None and conn.is_open and sent(conn) == []


def test_blocked_and_unblocked() -> None:
    conn = open_client()
    conn.receive_data(wire(0, C.Connection.Blocked("low on memory"), C.Connection.Unblocked()))
    assert list(conn.events()) == [ConnectionBlocked("low on memory"), ConnectionUnblocked()]
    assert conn.blocked is None


def test_close_by_us_discards_until_close_ok() -> None:
    conn = open_client()
    ch = open_channel(conn)
    conn.close(ReplyCode.REPLY_SUCCESS, "bye")
    (close,) = methods(conn)
    assert isinstance(close, C.Connection.Close) and close.reply_text == "bye"
    conn.receive_data(wire(ch, C.Basic.Deliver("t", 1, False, "", "q")))  # in flight
    assert list(conn.events()) == [] and not conn.closed
    conn.receive_data(wire(0, C.Connection.CloseOk()))
    events = list(conn.events())
    assert events == [ChannelClosed(ch, None, "connection closed: bye", False),
                      ConnectionClosed(200, "bye", by_peer=False)]


def test_close_before_tune_just_ends() -> None:
    conn = client()
    conn.close(text="changed my mind")
    assert conn.closed and conn.data_to_send() == b""
    assert list(conn.events()) == [ConnectionClosed(None, "changed my mind", by_peer=False)]


def test_close_by_peer_is_answered_and_reported() -> None:
    conn = open_client()
    conn.receive_data(wire(0, C.Connection.Close(320, "CONNECTION_FORCED - shutdown", 0, 0)))
    assert isinstance(methods(conn)[0], C.Connection.CloseOk)
    assert list(conn.events()) == [ConnectionClosed(320, "CONNECTION_FORCED - shutdown", True)]
    conn.receive_data(b"more")  # ignored once closed
    assert conn.closed


def test_calls_the_state_does_not_allow() -> None:
    conn = client()
    with pytest.raises(ProtocolError):
        conn.open_channel()
    conn = open_client()
    with pytest.raises(ProtocolError):
        conn.qos(5, 10)  # channel 5 is not open
    ch = open_channel(conn)
    for method in (C.Basic.Publish(), C.Channel.Open(), C.Channel.Close(200, "", 0, 0),
                   C.Connection.Blocked("x"), C.Basic.Deliver("t", 1, False, "", "q")):
        with pytest.raises(ProtocolError):
            conn.send_method(ch, method)
    with pytest.raises(ValueError):  # pamqp's validation of the queue name
        conn.queue_declare(ch, "bad name with \n")
    assert conn.channels[ch].awaiting == type(conn.channels[ch].awaiting)()  # nothing recorded


def test_update_secret() -> None:
    conn = open_client()
    conn.send_method(0, C.Connection.UpdateSecret("token", "renewed"))
    assert isinstance(methods(conn)[0], C.Connection.UpdateSecret)
    conn.receive_data(wire(0, C.Connection.UpdateSecretOk()))
    (event,) = list(conn.events())
    assert event.channel == 0 and isinstance(event.method, C.Connection.UpdateSecretOk)  # type: ignore[attr-defined]
