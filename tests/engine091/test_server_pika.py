"""The server role against an independent client: pika's BlockingConnection.

pika talks to ``server_host.ServerHost`` (the engine in the server role behind a
thread per socket and a toy in-memory broker) exactly as it talks to RabbitMQ.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pika
import pika.compat
import pika.credentials
import pika.data
import pika.exceptions
import pytest

from amqp091.events import (
    ChannelClosed,
    ConnectionClosed,
    ConnectionOpened,
    CredentialsReceived,
    DeliveriesSettled,
    HeartbeatTimeout,
    MessageReceived,
)
from amqp091.methods import ReplyCode
from amqp091.server_handshake import ServerConfig
from tests.engine091.server_host import ServerHost


class AMQPlainCredentials(pika.credentials.PlainCredentials):
    """pika ships PLAIN and EXTERNAL only; AMQPLAIN's response is a field table
    without its length prefix, written here by pika's own table encoder."""

    TYPE = "AMQPLAIN"

    def response_for(self, start):  # type: ignore[no-untyped-def]
        if b"AMQPLAIN" not in pika.compat.as_bytes(start.mechanisms).split():
            return None, None
        pieces: list[bytes] = []
        pika.data.encode_table(pieces, {"LOGIN": self.username, "PASSWORD": self.password})
        return "AMQPLAIN", b"".join(pieces)[4:]


def params(host: ServerHost, user: str = "guest", password: str = "guest", vhost: str = "/",
           credentials: object = None, **extra: object) -> pika.ConnectionParameters:
    creds = credentials or pika.PlainCredentials(user, password)
    return pika.ConnectionParameters("127.0.0.1", host.port, vhost, creds,
                                     connection_attempts=1, socket_timeout=5,
                                     blocked_connection_timeout=None, **extra)


@pytest.fixture
def host() -> Iterator[ServerHost]:
    h = ServerHost(ServerConfig(virtual_hosts=frozenset({"/", "tenant"}), heartbeat=10,
                                frame_max=16384, max_message_size=4 << 20),
                   users={"guest": "guest", "alice": "s3cret"})
    yield h
    h.stop()
    assert h.errors == []


def name(tag: str) -> str:
    return f"server091-{tag}-{uuid.uuid4().hex[:8]}"


def test_plain_login_handshake_and_channel_open_close(host: ServerHost) -> None:
    conn = pika.BlockingConnection(params(host, "alice", "s3cret", vhost="tenant"))
    assert conn.is_open
    props = conn._impl.server_properties  # what pika read from our connection.start
    assert props["capabilities"]["publisher_confirms"] is True
    assert props["capabilities"]["consumer_cancel_notify"] is True
    assert conn._impl.params.frame_max == 16384  # pika took our lower frame-max
    ch = conn.channel()
    assert ch.is_open
    ch.close()
    conn.close()
    creds = host.wait_for(CredentialsReceived)
    assert (creds.mechanism, creds.user, creds.password) == ("PLAIN", "alice", "s3cret")
    opened = host.wait_for(ConnectionOpened)
    assert opened.user == "alice" and opened.virtual_host == "tenant"
    assert opened.frame_max == 16384 and opened.heartbeat == 10
    assert opened.peer_properties["capabilities"]["authentication_failure_close"] is True
    closed = host.wait_for(ChannelClosed)
    assert closed.by_peer and (closed.code, closed.text) == (0, "Normal shutdown")  # pika's
    end = host.wait_for(ConnectionClosed)
    assert end.by_peer and end.text == "Normal shutdown"


def test_amqplain_login(host: ServerHost) -> None:
    conn = pika.BlockingConnection(params(host, credentials=AMQPlainCredentials("alice",
                                                                                "s3cret")))
    assert conn.is_open
    conn.close()
    creds = host.wait_for(CredentialsReceived)
    assert (creds.mechanism, creds.user, creds.password) == ("AMQPLAIN", "alice", "s3cret")


def test_wrong_password_is_refused_with_403(host: ServerHost) -> None:
    with pytest.raises(pika.exceptions.ProbableAuthenticationError) as info:
        pika.BlockingConnection(params(host, "alice", "wrong"))
    assert "403" in str(info.value) and "ACCESS_REFUSED" in str(info.value)
    end = host.wait_for(ConnectionClosed)
    assert end.code == ReplyCode.ACCESS_REFUSED and not end.by_peer
    assert host.connections[0].auth_error == "bad password for alice"


def test_unknown_virtual_host_is_refused_with_530(host: ServerHost) -> None:
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as info:
        pika.BlockingConnection(params(host, vhost="elsewhere"))
    assert "530" in str(info.value) and "vhost elsewhere not found" in str(info.value)
    assert host.wait_for(ConnectionClosed).code == ReplyCode.NOT_ALLOWED


def test_a_user_the_application_does_not_let_into_a_vhost_is_refused_with_530() -> None:
    asked: list[tuple[str | None, str]] = []

    def access(user: str | None, vhost: str) -> bool:
        asked.append((user, vhost))
        return user == "alice"

    h = ServerHost(ServerConfig(vhost_access=access), users={"guest": "guest", "alice": "s3cret"})
    try:
        with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as info:
            pika.BlockingConnection(params(h, vhost="tenant"))
        assert "530" in str(info.value) and \
            "access to vhost 'tenant' refused for user 'guest'" in str(info.value)
        assert h.wait_for(ConnectionClosed).code == ReplyCode.NOT_ALLOWED
        pika.BlockingConnection(params(h, "alice", "s3cret", vhost="tenant")).close()
        assert asked == [("guest", "tenant"), ("alice", "tenant")]
    finally:
        h.stop()


def test_heartbeats_keep_an_idle_connection_alive() -> None:
    host = ServerHost(ServerConfig(heartbeat=1))
    try:
        conn = pika.BlockingConnection(params(host))  # pika takes our 1 s
        assert host.wait_for(ConnectionOpened).heartbeat == 1
        conn.sleep(3.5)  # > 3 intervals idle: only heartbeats cross, both ways
        ch = conn.channel()
        assert ch.is_open
        conn.close()
        assert host.events_of(HeartbeatTimeout) == []
        assert host.sent_frame_sizes.count(8) >= 3  # our heartbeat frames
        assert host.wait_for(ConnectionClosed).by_peer
    finally:
        host.stop()
    assert host.errors == []


def test_publisher_confirms_ack_and_nack(host: ServerHost) -> None:
    conn = pika.BlockingConnection(params(host))
    ch = conn.channel()
    ch.confirm_delivery()
    ok, bad = name("ok"), name("nack")
    host.nack_queues.add(bad)
    ch.queue_declare(ok)
    ch.queue_declare(bad)
    for i in range(5):
        ch.basic_publish("", ok, f"m{i}".encode())  # returns once acked
    with pytest.raises(pika.exceptions.NackError):
        ch.basic_publish("", bad, b"refused")
    with pytest.raises(pika.exceptions.UnroutableError):
        ch.basic_publish("", name("nowhere"), b"x", mandatory=True)
    conn.close()
    tags = [e.publish_tag for e in host.events_of(MessageReceived)]
    assert tags == [1, 2, 3, 4, 5, 6, 7]


def test_consume_deliver_ack_and_get(host: ServerHost) -> None:
    conn = pika.BlockingConnection(params(host))
    ch = conn.channel()
    q = name("work")
    ch.queue_declare(q)
    ch.exchange_declare("server091-x", "direct")
    ch.queue_bind(q, "server091-x", "rk")
    for i in range(3):
        ch.basic_publish("server091-x", "rk", f"m{i}".encode(),
                         pika.BasicProperties(content_type="text/plain",
                                              headers={"n": i, "s": "x"}))
    ch.basic_qos(prefetch_count=2)
    got = []
    for method, props, body in ch.consume(q, inactivity_timeout=5):
        assert method is not None, "no delivery"
        got.append((method.delivery_tag, body, props.headers, props.content_type))
        if len(got) == 2:
            ch.basic_ack(method.delivery_tag, multiple=True)
        if len(got) == 3:
            ch.basic_ack(method.delivery_tag)
            break
    ch.cancel()
    assert got == [(1, b"m0", {"n": 0, "s": "x"}, "text/plain"),
                   (2, b"m1", {"n": 1, "s": "x"}, "text/plain"),
                   (3, b"m2", {"n": 2, "s": "x"}, "text/plain")]
    method, _, body = ch.basic_get(q)
    assert method is None  # get-empty
    ch.basic_publish("", q, b"for get")
    method, _, body = ch.basic_get(q)
    assert body == b"for get" and method.delivery_tag == 4
    ch.basic_nack(method.delivery_tag, requeue=True)
    method, _, body = ch.basic_get(q)
    assert body == b"for get" and method.redelivered
    ch.basic_reject(method.delivery_tag, requeue=False)
    conn.close()
    settled = host.events_of(DeliveriesSettled)
    assert [(e.delivery_tags, e.ack, e.requeue) for e in settled] == [
        ([1, 2], True, False), ([3], True, False), ([4], False, True), ([5], False, False)]


def test_a_large_message_is_cut_to_frame_max_both_ways(host: ServerHost) -> None:
    conn = pika.BlockingConnection(params(host))
    ch = conn.channel()
    q = name("big")
    ch.queue_declare(q)
    body = bytes(range(256)) * 4096  # 1 MiB
    ch.confirm_delivery()
    ch.basic_publish("", q, body)  # pika cuts it to our 16 KiB frames, or we would 501
    _, _, got = ch.basic_get(q, auto_ack=True)
    assert got == body
    conn.close()
    (received,) = host.events_of(MessageReceived)
    assert received.body == body
    assert max(host.sent_frame_sizes) == 16384  # our get-ok body frames: full ones
    assert sum(1 for s in host.sent_frame_sizes if s == 16384) == len(body) // (16384 - 8)


def test_body_over_max_message_size_closes_the_channel_with_406() -> None:
    host = ServerHost(ServerConfig(max_message_size=1000))
    try:
        conn = pika.BlockingConnection(params(host))
        ch = conn.channel()
        ch.confirm_delivery()
        q = name("small")
        ch.queue_declare(q)
        ch.basic_publish("", q, b"x" * 1000)  # at the limit: fine
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_publish("", q, b"x" * 5000)
        assert info.value.reply_code == ReplyCode.PRECONDITION_FAILED
        assert info.value.reply_text == ("PRECONDITION_FAILED - message size 5000 is larger "
                                         "than configured max size 1000")
        ch2 = conn.channel()  # the connection goes on
        assert ch2.is_open
        conn.close()
        assert len(host.events_of(MessageReceived)) == 1
        assert host.connections[0].buffered == 0
    finally:
        host.stop()
    assert host.errors == []
