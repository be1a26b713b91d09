"""The engine over loopback TCP and TLS: blocking client against the broker model,
protocol tracing, heartbeat timeout of a silent peer."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from amqp010.connection import Connection, Role
from amqp010.events import HeartbeatTimeout
from amqp010.framing import Assembler, FrameDecoder, ProtocolHeader
from amqp010.spec import ConnectionOpen, MessageProperties, QueueQueryResult
from amqp010.testing.broker import Broker, BrokerConnection
from amqp010.testing.server import EngineServer
from amqp010.transport import (
    BlockingClient,
    ClientError,
    SocketTransport,
    parse_url,
)

from .certs import make_certs, peer_common_name


@pytest.fixture
def broker() -> Broker:
    return Broker(users={"guest": "guest"})


@pytest.fixture
def server(broker: Broker, tmp_path: Path) -> Iterator[EngineServer]:
    srv = EngineServer(lambda sock: broker.connection(), trace_dir=tmp_path / "server-traces",
                       on_tick=broker.tick)
    (tmp_path / "server-traces").mkdir()
    with srv:
        yield srv
    assert not srv.errors


def url(srv: EngineServer, user: str = "guest:guest") -> str:
    host, port = srv.address
    return f"amqp://{user}@{host}:{port}"


def test_parse_url() -> None:
    a = parse_url("amqps://us%40er:p%3Ass@broker.example:1234/prod")
    assert (a.host, a.port, a.username, a.password, a.virtual_host, a.tls) == (
        "broker.example", 1234, "us@er", "p:ss", "prod", True)
    b = parse_url("amqp://localhost")
    assert (b.port, b.username, b.virtual_host, b.tls) == (5672, None, "", False)
    with pytest.raises(ValueError):
        parse_url("http://x")


def test_blocking_client_roundtrip_over_tcp(server: EngineServer, broker: Broker) -> None:
    with BlockingClient.connect(url(server)) as c:
        c.declare_queue("q")
        c.bind("q", "amq.direct", "k")
        for i in range(10):
            c.publish(b"m%d" % i, "k", "amq.direct",
                      properties=MessageProperties(application_headers={"i": i}))
        assert c.query_queue("q") == QueueQueryResult(
            queue="q", alternate_exchange="", arguments={}, message_count=10, subscriber_count=0)
        dest = c.subscribe("q", messages=4)
        got = [c.receive(dest) for _ in range(4)]
        assert [m.body for m in got] == [b"m0", b"m1", b"m2", b"m3"]
        assert got[2].message_properties.application_headers == {"i": 2}
        c.sync()
        assert c.pending(dest) == 0  # credit was 4
        c.accept(*got[:2])
        c.release(got[2], set_redelivered=True)
        c.reject(got[3], text="nope")
        c.flow(dest, messages=20)
        rest = [c.receive(dest) for _ in range(7)]
        assert [m.body for m in rest] == [b"m2"] + [b"m%d" % i for i in range(4, 10)]
        assert rest[0].delivery_properties.redelivered
        c.accept(*rest)
        c.cancel(dest)
        assert c.query_queue("q").message_count == 0
        c.delete_queue("q")
    assert [m.body for m in broker.dead_letters] == [b"m3"]


def test_errors_surface_as_client_errors(server: EngineServer) -> None:
    with BlockingClient.connect(url(server)) as c, pytest.raises(ClientError) as info:
        c.declare_queue("nope", passive=True)
    assert info.value.event.error_code == 404
    with pytest.raises(ClientError):
        BlockingClient.connect(url(server, "guest:wrong"))


def test_one_mebibyte_messages_at_4096_over_tcp(server: EngineServer) -> None:
    body = bytes(range(256)) * 4096
    with BlockingClient.connect(url(server), max_frame_size=4096) as c:
        assert c.conn.max_frame_size == 4096
        c.declare_queue("big")
        for _ in range(3):
            c.publish(body, "big")
        dest = c.subscribe("big", messages=3)
        for _ in range(3):
            m = c.receive(dest)
            assert m.body == body
            c.accept(m)


def test_protocol_trace_is_readable_by_inspect(server: EngineServer, tmp_path: Path) -> None:
    trace = tmp_path / "client.jsonl"
    with BlockingClient.connect(url(server), trace=trace) as c:
        c.declare_queue("traced")
        c.publish(b"hello", "traced")
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert {rec["dir"] for rec in lines} == {"c2s", "s2c"}
    assert all(set(rec) == {"dir", "t", "hex"} for rec in lines)
    c2s = b"".join(bytes.fromhex(r["hex"]) for r in lines if r["dir"] == "c2s")
    dec, asm = FrameDecoder(), Assembler()
    dec.feed(c2s)
    ops = [a.op for a in dec.assemblies(asm) if not isinstance(a, ProtocolHeader)]
    assert any(isinstance(o, ConnectionOpen) for o in ops)
    result = CliRunner().invoke(__import__("bridge.cli", fromlist=["main"]).main,
                                ["inspect", "--assemble", str(trace)])
    assert result.exit_code == 0, result.output
    assert "queue.declare" in result.output and "message.transfer" in result.output
    server_traces = sorted((tmp_path / "server-traces").glob("*.jsonl"))
    assert server_traces  # the server side traced its connection too


def test_tls_and_external_authentication(broker: Broker, tmp_path: Path) -> None:
    certs = make_certs(tmp_path)
    identities: list[str | None] = []

    def factory(sock: socket.socket) -> BrokerConnection:
        cn = peer_common_name(sock)
        identities.append(cn)
        return broker.connection(external_identity=cn)

    with EngineServer(factory, ssl_context=certs.server_context()) as srv:
        _host, port = srv.address
        with BlockingClient.connect(f"amqps://127.0.0.1:{port}",
                                    ssl_context=certs.client_context(with_cert=True),
                                    external=True) as c:
            assert c.opened is not None and c.opened.user is None
            c.declare_queue("secure")
            c.publish(b"over tls", "secure")
            dest = c.subscribe("secure")
            assert c.receive(dest).body == b"over tls"
        opened = [e for bc in broker.connections for e in bc.seen
                  if type(e).__name__ == "ConnectionOpened"]
        assert opened[0].user == "bridge-client"
        with BlockingClient.connect(f"amqps://guest:guest@127.0.0.1:{port}",
                                    ssl_context=certs.client_context()) as c:
            c.declare_queue("plain-over-tls")
        assert opened and identities == ["bridge-client", None]
        assert not srv.errors


class _Muted:
    """A broker connection whose output can be cut off (``muted``, or ``once_open``: right
    after its open-ok): a peer gone silent."""

    def __init__(self, inner: BrokerConnection, *, once_open: bool = False) -> None:
        self.inner = inner
        self.muted = False
        self.once_open = once_open

    def receive_data(self, data: bytes) -> None:
        self.inner.receive_data(data)

    def data_to_send(self) -> bytes:
        data = self.inner.data_to_send()
        if self.muted:
            return b""
        self.muted = self.once_open and self.inner.is_open  # (the open-ok still goes)
        return data

    def tick(self, now: float) -> None:
        self.inner.tick(now)

    @property
    def closed(self) -> bool:
        return self.inner.closed


def test_silent_peer_past_twice_the_heartbeat_is_dead(broker: Broker) -> None:
    with EngineServer(lambda sock: _Muted(broker.connection(heartbeat_min=1), once_open=True)) \
            as srv:
        host, port = srv.address
        sock = socket.create_connection((host, port))
        conn = Connection(Role.CLIENT)
        conn.config.heartbeat = 1
        transport = SocketTransport(sock, conn)
        events = []
        for _ in range(200):  # bounded: at most 200 reads of 50 ms
            transport.read_once(0.05)
            events.extend(conn.events())
            if conn.closed:
                break
        transport.close()
    assert conn.heartbeat == 1
    timeouts = [e for e in events if isinstance(e, HeartbeatTimeout)]
    assert timeouts and timeouts[0].idle > 2
    assert conn.closed


def test_the_blocking_client_names_its_own_heartbeat_timeout(broker: Broker) -> None:
    """When the client gives up on a silent broker, its error says so — not "the session
    was detached by the peer", which sent a soak's investigation after a detach the
    broker never sent (issue 20)."""
    endpoints: list[_Muted] = []

    def endpoint(sock: socket.socket) -> _Muted:
        endpoints.append(_Muted(broker.connection(heartbeat_min=1)))
        return endpoints[-1]

    with EngineServer(endpoint) as srv:
        client = BlockingClient.connect(url(srv), heartbeat=1)
        try:
            endpoints[0].muted = True
            with pytest.raises(ClientError) as failed:
                client.idle(10)  # bounded: the timeout comes after 2 s
        finally:
            client.close()
    assert isinstance(failed.value.event, HeartbeatTimeout), failed.value
    assert "HeartbeatTimeout" in str(failed.value)


def test_resume_over_tcp_after_the_network_drops(server: EngineServer, broker: Broker) -> None:
    c = BlockingClient.connect(url(server), session_name="tcp-resume", session_timeout=30)
    try:
        c.declare_queue("r")
        dest = c.subscribe("r", messages=None)
        for i in range(200):
            c.publish(b"%d" % i, "r", wait=False)
        got = [c.receive(dest) for _ in range(20)]
        server.drop_all()  # mid-stream: publishes and deliveries in flight
        while True:  # read until the client notices the dead transport
            try:
                got.append(c.receive(dest, timeout=5))
            except ClientError:
                break
        got += list(c.inbox.get(dest, ()))
        c.inbox.clear()
        assert c.session is not None and c.session.state.value == "detached"
        c.reconnect()
        c.sync()
        while len(got) < 200:
            got.append(c.receive(dest))
        c.sync()
        assert c.pending(dest) == 0
        bodies = sorted(int(m.body) for m in got)
        assert bodies == list(range(200))  # none lost, none duplicated
        c.accept(*got)
        assert c.query_queue("r").message_count == 0
    finally:
        c.close()


def test_client_config_from_url() -> None:
    from amqp010.transport import client_config

    cfg = client_config("amqp://bob:secret@h/vh", heartbeat=7)
    assert (cfg.virtual_host, cfg.heartbeat) == ("vh", 7)
    assert cfg.credentials.choose(["ANONYMOUS", "PLAIN"]) == "PLAIN"
    assert cfg.credentials.initial_response("PLAIN") == b"\x00bob\x00secret"
    anon = client_config("amqp://h")
    assert anon.credentials.choose(["ANONYMOUS", "PLAIN"]) == "ANONYMOUS"


def test_window_mode_over_tcp_keeps_at_most_the_window_in_flight(server: EngineServer,
                                                                 broker: Broker) -> None:
    with BlockingClient.connect(url(server)) as c:
        c.declare_queue("w")
        for i in range(25):
            c.publish(b"%d" % i, "w", wait=False)
        c.sync()
        dest = c.subscribe("w", messages=3, window=True)
        got = []
        while len(got) < 25:
            got.append(c.receive(dest))
            assert c.pending(dest) <= 3
        assert [int(m.body) for m in got] == list(range(25))
        c.accept(*got)
        assert c.query_queue("w").message_count == 0


def test_a_command_after_publishes_that_filled_the_replay_buffer_waits_for_room(
        server: EngineServer, broker: Broker) -> None:
    """Every command the blocking client sends waits for room in the replay buffer, not
    only a publish: an execution.sync (or any other command) sent while the last publish
    left ``max_outstanding`` commands uncompleted raised SessionBusy (the benchmarks'
    façade publisher at a window of 1,000 then died at 19,000 of 20,000 when the façade
    was slower than it)."""
    with BlockingClient.connect(url(server)) as c:
        c.declare_queue("full")
        session = c.session
        assert session is not None
        session.max_outstanding = 2
        for i in range(2):  # sent, not yet completed: nothing read between them
            c.publish(b"%d" % i, "full", wait=False)
        assert not session.can_send
        c.sync()
        assert c.query_queue("full").message_count == 2
        c.publish(b"2", "full", wait=False)
        c.publish(b"3", "full", wait=False)
        c.declare_queue("other")  # any command: it too waits for room
        assert session.outstanding == 0
        assert c.query_queue("full").message_count == 4
