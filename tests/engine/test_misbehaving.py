"""Misbehaving peers get the spec's answer: hand-written bad bytes into each role."""

from __future__ import annotations

from typing import Any

import pytest

from amqp010.base import Command, Control
from amqp010.connection import Connection, ConnectionState
from amqp010.events import (
    CommandReceived,
    ConnectionClosed,
    ExecutionExceptionReceived,
    HeartbeatTimeout,
    MessageReceived,
    SessionAttached,
)
from amqp010.framing import PROTOCOL_HEADER, encode_assembly, frame_header
from amqp010.spec import (
    CloseCode,
    ConnectionClose,
    ConnectionOpen,
    ConnectionStartOk,
    ConnectionTuneOk,
    DeliveryProperties,
    DetachCode,
    ErrorCode,
    ExecutionException,
    FlowMode,
    MessageCancel,
    MessageFlow,
    MessageSubscribe,
    MessageTransfer,
    QueueDeclare,
    SessionAttach,
    SessionCommandPoint,
    SessionCompleted,
    SessionDetach,
    SessionDetached,
)
from amqp010.testing.broker import Broker
from amqp010.types import SequenceSet

from .pump import client_conn, open_pair, server_conn
from .test_connection import decode_all


def handshake(server: Connection, frame_size: int | None = None) -> None:
    server.receive_data(PROTOCOL_HEADER)
    server.receive_data(encode_assembly(0, ConnectionStartOk(
        mechanism="PLAIN", response=b"\x00guest\x00guest", locale="en_US")))
    server.receive_data(encode_assembly(0, ConnectionTuneOk(max_frame_size=frame_size)))
    server.receive_data(encode_assembly(0, ConnectionOpen()))
    assert server.is_open
    server.data_to_send()
    list(server.events())


def raw_server(**cfg: Any) -> Connection:
    server = server_conn(**cfg)
    handshake(server, cfg.get("max_frame_size"))
    return server


def attached_raw_server(**cfg: Any) -> Connection:
    server = raw_server(**cfg)
    server.receive_data(encode_assembly(1, SessionAttach(name=b"s")))
    server.receive_data(encode_assembly(1, SessionCommandPoint(command_id=0, command_offset=0)))
    server.data_to_send()
    list(server.events())
    return server


def replies(conn: Connection) -> list[Control | Command]:
    return decode_all(conn.data_to_send(), header=False)


def closed_event(conn: Connection) -> ConnectionClosed:
    return next(e for e in conn.events() if isinstance(e, ConnectionClosed))


def test_command_before_attach_gets_detached_not_attached() -> None:
    server = raw_server()
    server.receive_data(encode_assembly(3, QueueDeclare(queue="q")))
    assert replies(server) == [SessionDetached(name=b"", code=DetachCode.NOT_ATTACHED)]
    assert server.is_open and not list(server.events())


def test_session_control_before_attach_gets_not_attached() -> None:
    server = raw_server()
    server.receive_data(encode_assembly(2, SessionCompleted(commands=SequenceSet([(0, 1)]))))
    assert replies(server) == [SessionDetached(name=b"", code=DetachCode.NOT_ATTACHED)]


def test_detach_of_an_unknown_session() -> None:
    server = attached_raw_server()
    server.receive_data(encode_assembly(1, SessionDetach(name=b"who")))
    server.receive_data(encode_assembly(5, SessionDetach(name=b"nobody")))
    assert replies(server) == [SessionDetached(name=b"who", code=DetachCode.NOT_ATTACHED),
                               SessionDetached(name=b"nobody", code=DetachCode.NOT_ATTACHED)]
    assert server.sessions[1].attached


def test_command_before_command_point_is_unknown_ids() -> None:
    server = raw_server()
    server.receive_data(encode_assembly(1, SessionAttach(name=b"s")))
    server.data_to_send()
    server.receive_data(encode_assembly(1, QueueDeclare(queue="q")))
    assert replies(server) == [SessionDetached(name=b"s", code=DetachCode.UNKNOWN_IDS)]
    assert 1 not in server.sessions


def test_duplicate_subscription_destination_is_not_allowed() -> None:
    broker = Broker()
    server = broker.connection()
    handshake(server.conn)
    for data in (encode_assembly(1, SessionAttach(name=b"s")),
                 encode_assembly(1, SessionCommandPoint(command_id=0, command_offset=0)),
                 encode_assembly(1, QueueDeclare(queue="q")),
                 encode_assembly(1, MessageSubscribe(queue="q", destination="d")),
                 encode_assembly(1, MessageSubscribe(queue="q", destination="d"))):
        server.receive_data(data)
    out = decode_all(server.data_to_send(), header=False)
    exc = [o for o in out if isinstance(o, ExecutionException)]
    assert len(exc) == 1
    assert (exc[0].error_code, exc[0].command_id, exc[0].class_code, exc[0].command_code,
            exc[0].field_index) == (ErrorCode.NOT_ALLOWED, 2, 4, 7, 1)
    assert SessionDetach(name=b"s") in out


@pytest.mark.parametrize("command,code", [
    (MessageFlow(destination="nope", unit=0, value=1), ErrorCode.NOT_FOUND),
    (MessageCancel(destination="nope"), ErrorCode.NOT_FOUND),
    (MessageFlow(destination="d", unit=7, value=1), ErrorCode.INVALID_ARGUMENT),
])
def test_flow_and_cancel_errors(command: Command, code: int) -> None:
    server = attached_raw_server()
    server.receive_data(encode_assembly(1, MessageSubscribe(queue="q", destination="d")))
    server.receive_data(encode_assembly(1, command))
    exc = [o for o in replies(server) if isinstance(o, ExecutionException)]
    assert [(e.error_code, e.command_id) for e in exc] == [(code, 1)]


def test_transfer_beyond_credit_is_refused_by_the_receiver() -> None:
    """Our client granted one message; a broker that sends two gets an exception."""
    pair = open_pair()
    cs = pair.client.attach("c")
    pair.pump()
    ss = pair.of(SessionAttached, "server")[0].session
    cs.message_subscribe("q", "d")
    cs.message_set_flow_mode("d", FlowMode.CREDIT)
    cs.grant("d", 1, None)
    pair.pump()
    # a misbehaving server: bypass the engine's own credit check
    ss.outgoing_credit.pop("d")
    ss.message_transfer("d", [DeliveryProperties(routing_key="q")], b"one")
    ss.message_transfer("d", [DeliveryProperties(routing_key="q")], b"two")
    pair.pump()
    assert [m.body for m in pair.of(MessageReceived)] == [b"one"]
    exc = pair.of(ExecutionExceptionReceived, "server")[0]
    assert (exc.error_code, exc.command_id, exc.class_code, exc.command_code) == (
        ErrorCode.RESOURCE_LIMIT_EXCEEDED, 1, MessageTransfer.CLASS_CODE, MessageTransfer.OP_CODE)


def test_byte_credit_violation_is_refused() -> None:
    pair = open_pair()
    cs = pair.client.attach("c")
    pair.pump()
    ss = pair.of(SessionAttached, "server")[0].session
    cs.message_subscribe("q", "d")
    cs.grant("d", 10, 50)
    pair.pump()
    ss.outgoing_credit.pop("d")
    ss.message_transfer("d", [], b"x" * 51)
    pair.pump()
    assert not pair.of(MessageReceived)
    assert pair.of(ExecutionExceptionReceived, "server")[0].error_code == \
        ErrorCode.RESOURCE_LIMIT_EXCEEDED


def test_frame_larger_than_max_frame_size_is_a_framing_error() -> None:
    server = attached_raw_server(max_frame_size=4096)
    big = encode_assembly(1, MessageTransfer(destination=""), (), b"x" * 5000, max_frame_size=8192)
    server.receive_data(big)
    assert replies(server)[-1] == ConnectionClose(
        reply_code=CloseCode.FRAMING_ERROR,
        reply_text=closed_event(server).text[:255])
    assert server.closed and "exceeds max-frame-size 4096" in server.close_text


def test_client_checks_incoming_frame_size_too() -> None:
    client = client_conn(max_frame_size=4096)
    pair = open_pair(client=client, server=server_conn(max_frame_size=4096))
    oversized = frame_header(0x0F, 0, 0, 0, 5000 - 12) + b"\x00" * (5000 - 12)
    pair.client.receive_data(oversized)
    assert pair.client.closed and pair.client.close_code == CloseCode.FRAMING_ERROR


@pytest.mark.parametrize("garbage", [
    bytes([0x1F, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0]) + b"\x00" * 8,  # frame format version
    bytes([0x0F, 9, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0]) + b"\x00" * 8,  # segment type 9
    bytes([0x0F, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0]),  # size smaller than the header
    bytes([0x0F, 0, 0, 14, 0, 0, 0, 0, 0, 0, 0, 0]) + b"\x01\x63",  # unknown control
    bytes([0x0F, 1, 0, 15, 0, 1, 0, 1, 0, 0, 0, 0]) + b"\x08\x01\x07",  # bad session header
    bytes([0x05, 0, 0, 14, 0, 0, 0, 0, 0, 0, 0, 0]) + b"\x01\x05",  # continues nothing
])
def test_malformed_frames_close_with_framing_error(garbage: bytes) -> None:
    server = attached_raw_server()
    server.receive_data(garbage)
    out = replies(server)
    assert isinstance(out[-1], ConnectionClose) and out[-1].reply_code == CloseCode.FRAMING_ERROR
    assert server.closed and closed_event(server).code == CloseCode.FRAMING_ERROR
    server.receive_data(b"more bytes after the error are ignored")
    assert server.data_to_send() == b""


def test_session_control_before_open_closes_the_connection() -> None:
    server = server_conn()
    server.receive_data(PROTOCOL_HEADER)
    server.receive_data(encode_assembly(1, SessionAttach(name=b"early")))
    assert server.closed and server.close_code == CloseCode.FRAMING_ERROR


def test_out_of_order_handshake_control_closes() -> None:
    server = server_conn()
    server.receive_data(PROTOCOL_HEADER)
    server.receive_data(encode_assembly(0, ConnectionOpen()))
    out = decode_all(server.data_to_send())
    assert isinstance(out[-1], ConnectionClose)
    assert "unexpected connection.open in state await-start-ok" in out[-1].reply_text


def test_tune_ok_above_the_offer_closes_without_negotiation() -> None:
    server = server_conn(max_frame_size=8192)
    server.receive_data(PROTOCOL_HEADER)
    server.receive_data(encode_assembly(0, ConnectionStartOk(
        mechanism="PLAIN", response=b"\x00guest\x00guest", locale="en_US")))
    server.data_to_send()
    server.receive_data(encode_assembly(0, ConnectionTuneOk(max_frame_size=16384)))
    assert server.closed and server.data_to_send() == b""  # no close control: just hang up
    assert closed_event(server).code is None


def test_heartbeat_out_of_range_is_refused() -> None:
    server = server_conn(heartbeat_min=5, heartbeat_max=10)
    server.receive_data(PROTOCOL_HEADER)
    server.receive_data(encode_assembly(0, ConnectionStartOk(
        mechanism="PLAIN", response=b"\x00guest\x00guest", locale="en_US")))
    server.receive_data(encode_assembly(0, ConnectionTuneOk(heartbeat=60)))
    assert server.closed and server.close_code == CloseCode.CONNECTION_FORCED


def test_peer_silent_past_twice_the_heartbeat() -> None:
    pair = open_pair(client=client_conn(heartbeat=3), server=server_conn(heartbeat_min=1))
    pair.server.tick(0.0)
    pair.server.tick(3.0)
    pair.server.data_to_send()
    pair.server.tick(6.0)
    assert not pair.server.closed
    pair.server.tick(6.1)
    events = list(pair.server.events())
    assert isinstance(events[0], HeartbeatTimeout)
    assert pair.server.state is ConnectionState.CLOSED


def test_exception_from_the_peer_with_unknown_fields_is_still_typed() -> None:
    pair = open_pair()
    cs = pair.client.attach("c")
    pair.pump()
    ss = pair.of(SessionAttached, "server")[0].session
    ss.send(ExecutionException(error_code=9999, description="odd", error_info={"k": 1}))
    pair.pump()
    exc = pair.of(ExecutionExceptionReceived)[0]
    assert (exc.error_code, exc.command_id, exc.description, exc.error_info) == (
        9999, None, "odd", {"k": 1})
    assert cs.peer_exception is exc


# --- resource bounds: what a peer can make the engine buffer --------------------------------


def _unfinished_command(channel: int, size: int) -> bytes:
    """A command segment of ``size`` octets on ``channel`` whose last frame never comes
    (every frame says more follows)."""
    chunk = 4000
    out = bytearray()
    first = True
    while size > 0:
        n = min(chunk, size)
        flags = 0x08 | 0x02 if first else 0x08  # FIRST_SEGMENT (| FIRST_FRAME), never LAST_*
        out += frame_header(flags, 1, 1, channel, n) + b"\x00" * n
        size -= n
        first = False
    return bytes(out)


def test_before_login_a_peer_cannot_make_the_server_buffer_more_than_64_kib() -> None:
    server = server_conn()
    server.receive_data(PROTOCOL_HEADER)
    server.data_to_send()
    server.receive_data(_unfinished_command(0, 40_000))
    assert not server.closed  # small is fine (and still unfinished)
    server.receive_data(_unfinished_command(1, 40_000))  # a second channel: 80 KB in all
    ev = closed_event(server)
    assert ev.code == CloseCode.FRAMING_ERROR and "exceed 65536 octets" in ev.text


def test_after_login_unfinished_assemblies_are_bounded_across_channels() -> None:
    server = raw_server(max_message_size=100_000, max_buffered=150_000)
    server.receive_data(_unfinished_command(1, 90_000))
    assert not server.closed  # one assembly under both bounds
    server.receive_data(_unfinished_command(2, 90_000))  # 180 KB over two channels
    ev = closed_event(server)
    assert ev.code == CloseCode.FRAMING_ERROR and "exceed 150000 octets" in ev.text


def test_a_session_past_the_negotiated_channel_max_ends_the_connection() -> None:
    server = raw_server(channel_max=4)
    assert server.channel_max == 4
    server.receive_data(encode_assembly(3, SessionAttach(name=b"ok")))
    assert any(isinstance(r, SessionAttached) or type(r).__name__ == "SessionAttached"
               for r in replies(server))
    server.receive_data(encode_assembly(4, SessionAttach(name=b"too-far")))
    ev = closed_event(server)
    assert ev.code == CloseCode.FRAMING_ERROR
    assert "channel 4 is past the negotiated channel-max 4" in ev.text
    assert 4 not in server.sessions


@pytest.mark.parametrize(("first_octets", "said"), [
    (b"AMQP\x00\x01\x00\x00", "the peer speaks AMQP 1.0, not AMQP 0-10"),
    (b"AMQP\x03\x01\x00\x00", "the peer speaks AMQP 1.0 (SASL layer), not AMQP 0-10"),
    (b"AMQP\x00\x00\x09\x01", "the peer speaks AMQP 0-9-1, not AMQP 0-10"),
])
def test_other_amqp_versions_are_named(first_octets: bytes, said: str) -> None:
    server = server_conn()
    server.receive_data(first_octets)
    assert said in closed_event(server).text


def test_a_tls_client_hello_on_a_plain_port_is_named() -> None:
    server = server_conn()
    server.receive_data(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
    text = closed_event(server).text
    assert "TLS (a ClientHello: the client uses TLS, this port does not)" in text


def test_a_detach_arriving_with_commands_waits_until_the_application_took_them() -> None:
    """qpid.messaging closes a receiver with message.cancel and session.detach in one TCP
    write. The application completes a command while handling its event; the completion
    still goes out, before session.detached — as from a broker executing in order."""
    server = attached_raw_server()
    server.receive_data(encode_assembly(1, QueueDeclare(queue="q"))
                        + encode_assembly(1, SessionDetach(name=b"s")))
    assert replies(server) == []  # nothing answered before the application had its say
    seen = []
    for ev in server.events():
        seen.append(type(ev).__name__)
        if isinstance(ev, CommandReceived):
            ev.session.complete(ev.command_id)
    assert seen == ["CommandReceived", "SessionDetached"]
    out = replies(server)
    assert [type(o).__name__ for o in out] == ["SessionCompleted", "SessionDetached"]
    assert out[0].commands.ranges == [(0, 0)]
    assert list(server.events()) == []


def test_a_closed_connection_lets_go_of_what_it_buffered() -> None:
    """Memory a peer made the engine hold is freed when the connection ends, not when a
    garbage collection gets round to the connection object."""
    server = raw_server(max_message_size=1 << 20, max_buffered=1 << 20)
    server.receive_data(_unfinished_command(1, 500_000) + _unfinished_command(2, 400_000)[:-7])
    assert not server.closed
    assert server._assembler.buffered > 800_000 and server._decoder.buffered > 0
    server.receive_data(b"")  # the peer goes away
    assert server.closed
    assert server._assembler.buffered == 0 and server._assembler.pending == 0
    assert server._decoder.buffered == 0
