"""The 0-9-1 façade under test: ``amqp-bridge run`` with one ``amqp0-9-1`` listener
(``legacy``) and a 1.0 connection (``cloud``) to the test RabbitMQ, the clients' ways
in (pika, a URL for kombu / aio-pika), and a raw client of pamqp frames for what no
library sends."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
from pamqp import commands as C
from pamqp import frame as pframe
from pamqp import header as pheader
from pamqp.body import ContentBody

from amqp091.framing import PROTOCOL_HEADER, FrameReader, encode_method
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import declare_queue, queue_address, unique_queue

USER, PASSWORD = "app", "s3cret"


@dataclass
class Facade091:
    """A running bridge: its listener's port and the RabbitMQ queue behind each role."""

    rabbitmq_url: str
    port: int
    queues: dict[str, str]
    proc: BridgeRun

    @property
    def url(self) -> str:
        """The listener as an AMQP URL (kombu, aio-pika)."""
        return f"amqp://{USER}:{PASSWORD}@127.0.0.1:{self.port}/"

    def connect(self, password: str = PASSWORD) -> pika.BlockingConnection:
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", self.port, credentials=pika.PlainCredentials(USER, password),
            connection_attempts=1, heartbeat=0))

    def address(self, role: str) -> str:
        """The 1.0 address of the RabbitMQ queue of ``role``."""
        return queue_address(self.queues[role])


@contextmanager
def facade091(rabbitmq_url: str, tmp_path: Path, roles: tuple[str, ...],
              routes: Callable[[dict[str, str], dict[str, str]], str], *,
              listener: str = "", cloud_url: str | None = None,
              more: str = "") -> Iterator[Facade091]:
    """Run the bridge with the routes (a YAML list) ``routes(q, names)`` makes — ``q``:
    the 1.0 address of a fresh RabbitMQ queue per role, ``names``: its name —,
    ``listener`` extra listener settings (``", key: value"``), the 1.0 connection to
    ``cloud_url`` (default: the RabbitMQ itself), ``more`` top-level settings (YAML
    lines). Stopped gracefully at the end (exit code 0 asserted)."""
    queues = {role: unique_queue(f"facade091-{role.replace('_', '-')}") for role in roles}
    for name in queues.values():
        declare_queue(rabbitmq_url, name)
    port = free_port()
    q = {role: queue_address(name) for role, name in queues.items()}
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{cloud_url or rabbitmq_url}"}}
listeners:
  legacy: {{protocol: amqp0-9-1, bind: "127.0.0.1:{port}",
            users: {{{USER}: "{PASSWORD}"}}{listener}}}
routes:
{routes(q, queues)}
{more}
"""
    proc = BridgeRun(config, tmp_path).start()
    try:
        wait_listening(port, proc)
        yield Facade091(rabbitmq_url, port, queues, proc)
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()


class RawClient:
    """A 0-9-1 client written with pamqp frames directly, to send what no library would
    and see exactly what the façade answers when."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.reader = FrameReader(1 << 20, expect_protocol_header=False)
        self.frame_max = 0

    def read(self, timeout: float = 10.0) -> object:
        """The next frame; ``TimeoutError`` if none comes within ``timeout``."""
        self.sock.settimeout(timeout)
        while True:
            for _, frame in self.reader.frames():
                return frame
            data = self.sock.recv(65536)
            assert data, "the bridge closed the transport"
            self.reader.feed(data)

    def login(self, capabilities: dict[str, Any] | None = None) -> None:
        self.sock.sendall(PROTOCOL_HEADER)
        assert isinstance(self.read(), C.Connection.Start)
        self.sock.sendall(encode_method(0, C.Connection.StartOk(
            client_properties={"capabilities": capabilities or {}}, mechanism="PLAIN",
            response=f"\0{USER}\0{PASSWORD}", locale="en_US")))
        tune = self.read()
        assert isinstance(tune, C.Connection.Tune)
        self.sock.sendall(encode_method(0, C.Connection.TuneOk(tune.channel_max,
                                                               tune.frame_max, 0))
                          + encode_method(0, C.Connection.Open(virtual_host="/")))
        assert isinstance(self.read(), C.Connection.OpenOk)
        self.frame_max = tune.frame_max

    def open_channel(self, channel: int) -> None:
        self.sock.sendall(encode_method(channel, C.Channel.Open()))
        assert isinstance(self.read(), C.Channel.OpenOk)

    def closed_with(self) -> int:
        close = self.read()
        assert isinstance(close, C.Connection.Close), close
        return int(close.reply_code)


def content_header(channel: int, body_size: int) -> bytes:
    """A content header frame announcing ``body_size`` octets."""
    return pframe.marshal(pheader.ContentHeader(0, body_size, C.Basic.Properties()), channel)


def publish_frames(channel: int, exchange: str, routing_key: str, body: bytes) -> bytes:
    """basic.publish, its content header and one body frame."""
    return (encode_method(channel, C.Basic.Publish(exchange=exchange, routing_key=routing_key))
            + content_header(channel, len(body)) + pframe.marshal(ContentBody(body), channel))
