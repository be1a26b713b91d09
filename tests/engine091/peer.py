"""A scripted 0-9-1 peer for unit tests: frames built and read with pamqp."""

from __future__ import annotations

from pamqp import commands as C
from pamqp import frame as pframe
from pamqp.base import Frame

from amqp091.connection import Connection, ConnectionConfig
from amqp091.events import ChannelOpened, ConnectionClosed, ConnectionOpened, Event
from amqp091.framing import PROTOCOL_HEADER, FrameReader
from amqp091.methods import Role

RABBIT_START = C.Connection.Start(
    server_properties={"product": "RabbitMQ", "capabilities": {"publisher_confirms": True}},
    mechanisms="PLAIN AMQPLAIN", locales="en_US")


def wire(channel: int, *frames: object) -> bytes:
    """The bytes of ``frames`` on ``channel``."""
    return b"".join(pframe.marshal(f, channel) for f in frames)  # type: ignore[arg-type]


def sent(conn: Connection) -> list[tuple[int, object]]:
    """Decode what the engine wrote since the last call."""
    reader = FrameReader(1 << 24, expect_protocol_header=False)
    reader.feed(conn.data_to_send())
    return list(reader.frames())


def methods(conn: Connection) -> list[Frame]:
    """The methods the engine wrote since the last call."""
    return [f for _, f in sent(conn) if isinstance(f, Frame)]


def client(**config: object) -> Connection:
    conn = Connection(Role.CLIENT, ConnectionConfig(**config))  # type: ignore[arg-type]
    assert conn.data_to_send() == PROTOCOL_HEADER
    return conn


def open_client(tune: C.Connection.Tune | None = None, **config: object) -> Connection:
    """A client through the handshake (events and output drained)."""
    conn = client(**config)
    conn.receive_data(wire(0, RABBIT_START))
    conn.receive_data(wire(0, tune or C.Connection.Tune(channel_max=2047, frame_max=131072,
                                                        heartbeat=60)))
    conn.receive_data(wire(0, C.Connection.OpenOk()))
    events = list(conn.events())
    assert isinstance(events[-1], ConnectionOpened), events
    conn.data_to_send()
    return conn


def open_channel(conn: Connection) -> int:
    ch = conn.open_channel()
    conn.receive_data(wire(ch, C.Channel.OpenOk()))
    assert list(conn.events()) == [ChannelOpened(ch)]
    conn.data_to_send()
    return ch


def closed_with(conn: Connection, code: int) -> ConnectionClosed:
    """The engine closed the connection with ``code``: connection.close was sent and
    ConnectionClosed is the last event."""
    out = methods(conn)
    assert isinstance(out[-1], C.Connection.Close) and out[-1].reply_code == code, out
    events: list[Event] = list(conn.events())
    last = events[-1]
    assert isinstance(last, ConnectionClosed) and last.code == code and not last.by_peer, events
    assert conn.closed
    return last
