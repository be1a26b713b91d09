"""The server role over a real socket fed bad bytes: each gets RabbitMQ's close, and
the engine never raises (``ServerHost.errors`` stays empty)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest
from pamqp import commands as C
from pamqp import header as pheader

from amqp091.events import ConnectionClosed
from amqp091.framing import PROTOCOL_HEADER, FrameReader
from amqp091.methods import ReplyCode
from amqp091.server_handshake import ServerConfig
from tests.engine091.peer import wire
from tests.engine091.server_host import ServerHost

FRAME_MAX = 8192
CHANNEL_MAX = 16


@pytest.fixture
def host() -> Iterator[ServerHost]:
    h = ServerHost(ServerConfig(frame_max=FRAME_MAX, channel_max=CHANNEL_MAX, heartbeat=0))
    yield h
    h.stop()
    assert h.errors == []


class RawClient:
    """A client written with pamqp frames directly, to send what no library would."""

    def __init__(self, host: ServerHost) -> None:
        self.sock = socket.create_connection(("127.0.0.1", host.port), timeout=5)
        self.reader = FrameReader(1 << 20, expect_protocol_header=False)

    def read(self) -> object:
        """The next frame from the server (fails on EOF)."""
        while True:
            for _, frame in self.reader.frames():
                return frame
            data = self.sock.recv(65536)
            assert data, "the server closed the transport"
            self.reader.feed(data)

    def read_to_eof(self) -> bytes:
        out = b""
        while data := self.sock.recv(65536):
            out += data
        return out

    def handshake(self, tune_ok: C.Connection.TuneOk | None = None) -> None:
        self.sock.sendall(PROTOCOL_HEADER)
        assert isinstance(self.read(), C.Connection.Start)
        self.sock.sendall(wire(0, C.Connection.StartOk(
            client_properties={"capabilities": {"authentication_failure_close": True}},
            mechanism="PLAIN", response="\0guest\0guest", locale="en_US")))
        tune = self.read()
        assert isinstance(tune, C.Connection.Tune)
        assert (tune.channel_max, tune.frame_max) == (CHANNEL_MAX, FRAME_MAX)
        self.sock.sendall(wire(0, tune_ok or C.Connection.TuneOk(CHANNEL_MAX, FRAME_MAX, 0),
                               C.Connection.Open(virtual_host="/")))
        if tune_ok is None:
            assert isinstance(self.read(), C.Connection.OpenOk)

    def open_channel(self, channel: int = 1) -> None:
        """Log in (:meth:`handshake`) and open ``channel``."""
        self.handshake()
        self.sock.sendall(wire(channel, C.Channel.Open()))
        assert isinstance(self.read(), C.Channel.OpenOk)

    def closed_with(self, code: int) -> C.Connection.Close:
        """The server sent connection.close(``code``) and ended the transport."""
        close = self.read()
        assert isinstance(close, C.Connection.Close), close
        assert close.reply_code == code, (close.reply_code, close.reply_text)
        rest = self.read_to_eof()
        assert rest == b""
        return close


def ended_with(host: ServerHost, code: int | None) -> ConnectionClosed:
    event = host.wait_for(ConnectionClosed)
    assert event.code == code, event
    return event


def frame_error(client: RawClient, host: ServerHost) -> str:
    """The server closed ``client`` with 501 FRAME_ERROR, and its connection ended so: the
    close's text."""
    close = client.closed_with(ReplyCode.FRAME_ERROR)
    ended_with(host, ReplyCode.FRAME_ERROR)
    return str(close.reply_text)


@pytest.mark.parametrize("header", [b"AMQP\x01\x01\x00\x0a", b"AMQP\x00\x01\x00\x00",
                                    b"GET / HTTP/1.1\r\n\r\n", b"AMQP\x00\x00\x09\x02"])
def test_wrong_protocol_header_gets_ours_and_the_end(host: ServerHost, header: bytes) -> None:
    client = RawClient(host)
    client.sock.sendall(header)
    assert client.read_to_eof() == b"AMQP\x00\x00\x09\x01"
    assert ended_with(host, None).by_peer


def test_garbage_frame_is_a_frame_error(host: ServerHost) -> None:
    client = RawClient(host)
    client.handshake()
    client.sock.sendall(b"\x09\x00\x01\x00\x00\x00\x00\xce")  # frame type 9
    assert "unknown frame type 9" in client.closed_with(ReplyCode.FRAME_ERROR).reply_text
    ended_with(host, ReplyCode.FRAME_ERROR)


def test_frame_over_frame_max_is_refused_on_its_header(host: ServerHost) -> None:
    client = RawClient(host)
    client.open_channel()
    # a body frame header announcing more than frame-max (+ RabbitMQ's 8-octet slack);
    # the payload never follows: the server must not wait for it
    client.sock.sendall(struct.pack(">BHI", 3, 1, FRAME_MAX + 1))
    assert "frame-max" in frame_error(client, host)


def test_unknown_method_is_not_implemented(host: ServerHost) -> None:
    client = RawClient(host)
    client.handshake()
    client.sock.sendall(struct.pack(">BHIHH", 1, 1, 4, 60, 999) + b"\xce")
    client.closed_with(ReplyCode.NOT_IMPLEMENTED)


def test_method_on_a_channel_never_opened_is_a_channel_error(host: ServerHost) -> None:
    client = RawClient(host)
    client.handshake()
    client.sock.sendall(wire(5, C.Basic.Qos(prefetch_count=1)))
    close = client.closed_with(ReplyCode.CHANNEL_ERROR)
    assert close.reply_text.startswith("CHANNEL_ERROR - ")


def test_channel_past_channel_max_is_not_allowed(host: ServerHost) -> None:
    client = RawClient(host)
    client.open_channel(CHANNEL_MAX)  # the highest usable number
    client.sock.sendall(wire(CHANNEL_MAX + 1, C.Channel.Open()))
    client.closed_with(ReplyCode.NOT_ALLOWED)


def test_channel_open_on_channel_zero_is_a_channel_error(host: ServerHost) -> None:
    client = RawClient(host)
    client.handshake()
    client.sock.sendall(wire(0, C.Channel.Open()))
    client.closed_with(ReplyCode.CHANNEL_ERROR)


def test_missing_frame_end_is_a_frame_error(host: ServerHost) -> None:
    client = RawClient(host)
    client.handshake()
    frame = wire(1, C.Channel.Open())
    client.sock.sendall(frame[:-1] + b"\x00")
    client.closed_with(ReplyCode.FRAME_ERROR)


def test_a_method_only_servers_send_is_command_invalid(host: ServerHost) -> None:
    client = RawClient(host)
    client.open_channel()
    client.sock.sendall(wire(1, C.Basic.Deliver(consumer_tag="x", delivery_tag=1, exchange="", routing_key="q")))
    client.closed_with(ReplyCode.COMMAND_INVALID)


def test_content_without_a_publish_is_an_unexpected_frame(host: ServerHost) -> None:
    client = RawClient(host)
    client.open_channel()
    client.sock.sendall(wire(1, pheader.ContentHeader(0, 3, C.Basic.Properties())))
    client.closed_with(ReplyCode.UNEXPECTED_FRAME)


@pytest.mark.parametrize("tune_ok, field", [
    (C.Connection.TuneOk(CHANNEL_MAX, FRAME_MAX * 2, 0), "frame_max"),
    (C.Connection.TuneOk(CHANNEL_MAX, 0, 0), "frame_max"),       # 0: no limit, above ours
    (C.Connection.TuneOk(CHANNEL_MAX, 1024, 0), "frame_max"),    # under the minimum
    (C.Connection.TuneOk(CHANNEL_MAX + 1, FRAME_MAX, 0), "channel_max"),
    (C.Connection.TuneOk(0, FRAME_MAX, 0), "channel_max"),
])
def test_tune_ok_outside_our_limits_is_not_allowed(host: ServerHost, tune_ok: C.Connection.TuneOk,
                                                   field: str) -> None:
    client = RawClient(host)
    client.handshake(tune_ok)
    close = client.closed_with(ReplyCode.NOT_ALLOWED)
    assert f"negotiated {field} = " in close.reply_text
    assert (close.class_id, close.method_id) == (10, 30)  # connection.tune, as RabbitMQ says


def nested_table(depth: int) -> bytes:
    """A length-prefixed field table nesting ``depth`` tables, one key each (7 octets a
    level: deep enough to exhaust the recursion of a recursive decoder in one frame)."""
    inner = b""
    for _ in range(depth):
        inner = b"\x01k" + b"F" + struct.pack(">I", len(inner)) + inner
    return struct.pack(">I", len(inner)) + inner


def method_frame(channel: int, class_id: int, method_id: int, args: bytes) -> bytes:
    return struct.pack(">BHIHH", 1, channel, len(args) + 4, class_id, method_id) + args \
        + b"\xce"


def test_client_properties_nested_too_deep_are_a_frame_error(host: ServerHost) -> None:
    client = RawClient(host)
    client.sock.sendall(PROTOCOL_HEADER)
    assert isinstance(client.read(), C.Connection.Start)
    # 560 levels fit in the 4096-octet frame allowed before tune
    args = (nested_table(560) + b"\x05PLAIN" + struct.pack(">I", 12) + b"\0guest\0guest"
            + b"\x05en_US")
    client.sock.sendall(method_frame(0, 10, 11, args))
    assert "nested too deep" in frame_error(client, host)


def test_method_arguments_nested_too_deep_are_a_frame_error(host: ServerHost) -> None:
    client = RawClient(host)
    client.open_channel()
    # queue.declare: ticket, queue "q", flags, arguments nested 1100 deep
    args = struct.pack(">H", 0) + b"\x01q" + b"\x00" + nested_table(1100)
    client.sock.sendall(method_frame(1, 50, 10, args))
    frame_error(client, host)
