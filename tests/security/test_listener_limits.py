"""The façade listener against hostile clients: connections that never log in, too many
connections, clients that make the bridge buffer too much, and a process out of file
descriptors (docs/operations.md#limits).

Every test runs the real bridge (``amqp-bridge run``) and attacks it as anyone who can
reach its port would, with raw sockets on loopback (distinct peers: 127.0.0.2, .3 …);
every attack is bounded in count and time.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amqp010.events import ConnectionClosed
from amqp010.framing import PROTOCOL_HEADER, Assembler, FrameDecoder, ProtocolHeader
from amqp010.spec import CloseCode, ConnectionClose, ConnectionStart, DeliveryProperties
from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.hostile import connect_from
from tests.support.logs import records
from tests.support.metrics import http_get, metrics_port, poll, scrape
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue


def _config(rabbitmq_url: str, port: int, events: str, **limits: Any) -> str:
    keys = "".join(f"\n    {key}: {value}" for key, value in limits.items())
    return f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  facade:
    protocol: amqp0-10
    bind: "127.0.0.1:{port}"
    allow_anonymous: true{keys}
routes:
  - name: events-out
    from: {{listener: facade, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(events)}}}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: json}}
"""


def _connect(port: int, source: str = "127.0.0.1", *, header: bool) -> socket.socket:
    """A raw connection from ``source``; ``header``: send the 0-10 protocol header."""
    sock = connect_from(source, port, timeout=20)
    if header:
        sock.sendall(PROTOCOL_HEADER)
    return sock


def _until_closed(sock: socket.socket) -> list[Any]:
    """What the bridge sent until it closed the connection: the protocol header and
    each control (socket.timeout if it does not close it within the socket's timeout)."""
    decoder = FrameDecoder(expect_protocol_header=True)
    data = bytearray()
    while chunk := sock.recv(65536):
        data += chunk
    sock.close()
    decoder.feed(bytes(data))
    return [item if isinstance(item, ProtocolHeader) else item.op
            for item in decoder.assemblies(Assembler(1 << 20))]


def _until_started(sock: socket.socket) -> None:
    """Wait until the bridge answered the header with connection.start (it accepted)."""
    decoder = FrameDecoder(expect_protocol_header=True)
    got: list[Any] = []
    while not any(isinstance(op, ConnectionStart) for op in got):
        chunk = sock.recv(65536)
        assert chunk, "closed instead of starting the handshake"
        decoder.feed(chunk)
        got += [getattr(item, "op", item) for item in decoder.assemblies(Assembler(1 << 20))]


def _events(bridge: BridgeRun, event: str) -> list[dict[str, Any]]:
    return [r for r in records(bridge.log()) if r.get("event") == event]


@contextlib.contextmanager
def _closing(socks: list[socket.socket]) -> Iterator[list[socket.socket]]:
    try:
        yield socks
    finally:
        for sock in socks:
            sock.close()


def test_connections_that_do_not_log_in_in_time_are_closed(rabbitmq_url: str,
                                                          tmp_path: Path) -> None:
    port = free_port()
    events = unique_queue("limits-handshake")
    config = _config(rabbitmq_url, port, events, handshake_timeout=1)
    with BridgeRun(config, tmp_path) as bridge, _closing([]) as socks:
        wait_listening(port, bridge)
        with BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=30) as client:
            silent = [_connect(port, header=False) for _ in range(20)]
            header_only = [_connect(port, header=True) for _ in range(20)]
            socks += silent + header_only
            for sock in silent:  # closed without a word: nothing came from them
                assert _until_closed(sock) == []
            for sock in header_only:  # told why, in the protocol
                header, start, close = _until_closed(sock)
                assert isinstance(header, ProtocolHeader) and isinstance(start, ConnectionStart)
                assert isinstance(close, ConnectionClose)
                assert close.reply_code == CloseCode.CONNECTION_FORCED
                assert close.reply_text == "amqp-bridge: handshake not completed within 1s"
            time.sleep(0.5)  # the logged-in client is past the timeout too: it stays
            client.publish(b"still here", exchange="events", routing_key="e")
        timeouts = scrape(metrics_port(bridge.log)).value(
            "amqp_bridge_handshake_timeouts_total", listener="facade")
        lines = _events(bridge, "handshake_timeout")
    assert timeouts == 40
    assert len(lines) == 1, lines  # rate-limited: one line for the burst
    assert lines[0]["level"] == "warning" and lines[0]["listener"] == "facade"
    [received] = receive_messages(rabbitmq_url, queue_address(events), 1, timeout=20)
    assert bytes(received.message.body) == b"still here"


def test_connections_over_the_limits_are_refused_with_a_reason(rabbitmq_url: str,
                                                              tmp_path: Path) -> None:
    port = free_port()
    config = _config(rabbitmq_url, port, unique_queue("limits-conn"), handshake_timeout=60,
                     max_connections=4, max_connections_per_peer=2)
    with BridgeRun(config, tmp_path) as bridge, _closing([]) as socks:
        wait_listening(port, bridge)
        mport = metrics_port(bridge.log)
        poll(lambda: _events(bridge, "client_closed"), bool, 20, "the end of the probe")
        first, second = _connect(port, header=True), _connect(port, header=True)
        socks += [first, second]
        for sock in socks:
            _until_started(sock)
        _wait_clients(mport, 2)
        # a third connection from 127.0.0.1: a 0-10 client is told why it cannot connect
        with pytest.raises(ClientError) as refused:
            BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=20)
        event = refused.value.event
        assert isinstance(event, ConnectionClosed) and event.code == CloseCode.CONNECTION_FORCED
        assert event.text == ("amqp-bridge: too many connections from 127.0.0.1 "
                              "(listener facade: max_connections_per_peer 2)")
        # another peer gets its two; then the listener is full for everybody
        others = [_connect(port, "127.0.0.2", header=True) for _ in range(2)]
        socks += others
        for sock in others:
            _until_started(sock)
        _wait_clients(mport, 4)
        header, start, close = _until_closed(_connect(port, "127.0.0.3", header=True))
        assert isinstance(header, ProtocolHeader) and isinstance(start, ConnectionStart)
        assert isinstance(close, ConnectionClose)
        assert close.reply_code == CloseCode.CONNECTION_FORCED
        assert close.reply_text == ("amqp-bridge: too many connections "
                                    "(listener facade: max_connections 4)")
        # a refused client that says nothing is not kept waiting for long
        assert _until_closed(_connect(port, "127.0.0.3", header=False)) == []
        # one goes: 127.0.0.1 may connect again
        first.close()
        _wait_clients(mport, 3)
        with BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=20) as client:
            assert client.opened is not None
        stats = scrape(mport)
        lines = _events(bridge, "connection_refused")
    name = "amqp_bridge_connections_refused_total"
    assert stats.value(name, listener="facade", reason="max_connections_per_peer") == 1
    assert stats.value(name, listener="facade", reason="max_connections") == 2
    assert stats.value(name, listener="facade", reason="max_buffered") == 0
    assert sorted(r["reason"] for r in lines) == ["max_connections", "max_connections_per_peer"]
    assert all(r["level"] == "warning" for r in lines)


def _wait_clients(mport: int, count: int) -> None:
    poll(lambda: scrape(mport).value("amqp_bridge_facade_clients", listener="facade"),
         lambda n: n == count, 20, f"{count} façade clients")


def _login(port: int) -> BlockingClient | None:
    try:
        return BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=20)
    except ClientError:
        return None


def test_the_connection_holding_most_is_closed_when_the_listener_holds_too_much(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """Three clients each leave a large message unfinished; together they pass the
    listener's max_buffered: the one holding the most is closed, the others finish their
    messages and have them confirmed."""
    port = free_port()
    events = unique_queue("limits-buffered")
    config = _config(rabbitmq_url, port, events, max_message_size=262144,
                     max_buffered_per_connection=262144, max_buffered=600000)
    sizes = {"a": 200_000, "b": 250_000, "c": 200_000}
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)
        clients = {name: BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=30)
                   for name in sizes}
        rest: dict[str, tuple[int, bytes]] = {}
        for name, size in sizes.items():  # all but the last octets of each message
            client = clients[name]
            assert client.session is not None
            cid = client.session.message_transfer(
                "events", [DeliveryProperties(routing_key="e")], name.encode() * size)
            data = client.conn.data_to_send()
            client.transport.sock.sendall(data[:-1000])
            rest[name] = cid, data[-1000:]
            time.sleep(0.3)
        with pytest.raises(ClientError):
            clients["b"].sync()
        closed = clients["b"].conn  # closed by the bridge, saying why
        assert closed.closed and closed.close_code == CloseCode.CONNECTION_FORCED
        assert closed.close_text.startswith("amqp-bridge: listener facade is holding too "
                                            "much unfinished input (max_buffered 600000)")
        for name in ("a", "c"):
            cid, tail = rest[name]
            clients[name].transport.sock.sendall(tail)
            clients[name].wait_completed(cid)  # confirmed: the 1.0 broker has it
        for client in clients.values():
            with contextlib.suppress(ClientError, OSError):
                client.close()
        stats = scrape(metrics_port(bridge.log))
    assert stats.value("amqp_bridge_connections_refused_total", listener="facade",
                       reason="max_buffered") == 1
    received = receive_messages(rabbitmq_url, queue_address(events), 2, timeout=20)
    assert sorted(bytes(r.message.body)[:1] for r in received) == [b"a", b"c"]


NOFILE = 96
"""The bridge's descriptor limit in the test below (it needs about 30 of its own)."""


def _runnable_seconds(pid: int) -> float:
    """Seconds the process's threads have been running or ready to run (``schedstat``: time
    on a CPU plus time waiting for one). A thread that spins is runnable all along however
    loaded the machine is, where its CPU seconds shrink with the share it gets."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            on_cpu, waiting = (task / "schedstat").read_text().split()[:2]
            total += int(on_cpu) + int(waiting)
    return total / 1e9


def test_out_of_descriptors_the_listener_waits_and_health_checks_answer(
        rabbitmq_url: str, tmp_path: Path) -> None:
    port = free_port()
    events = unique_queue("limits-emfile")
    config = _config(rabbitmq_url, port, events, handshake_timeout=60)
    with BridgeRun(config, tmp_path, nofile=NOFILE) as bridge, _closing([]) as socks:
        wait_listening(port, bridge)
        mport = metrics_port(bridge.log)
        poll(lambda: http_get(mport, "/readyz")[0], lambda s: s == 200, 30, "ready")
        # more connections than the bridge has descriptors (the rest wait in the backlog)
        for _ in range(NOFILE):
            socks.append(_connect(port, header=False))
        poll(lambda: _events(bridge, "accept_failed"), bool, 20, "a failed accept()")
        before = _runnable_seconds(bridge.pid)
        time.sleep(2.0)
        busy = _runnable_seconds(bridge.pid) - before
        # out of descriptors, the bridge still answers its health checks
        assert http_get(mport, "/healthz") == (200, {"alive": True})
        assert http_get(mport, "/readyz")[0] == 200
        failures = scrape(mport).value("amqp_bridge_accept_failures_total", listener="facade")
        lines = _events(bridge, "accept_failed")
        for sock in socks:
            sock.close()
        socks.clear()
        # the descriptors come back: a new client gets in and publishes
        client = poll(lambda: _login(port), lambda c: c is not None, 30, "a login")
        with client:
            client.publish(b"after the flood", exchange="events", routing_key="e")
    assert busy < 1.0, f"the bridge was runnable {busy:.2f}s of 2s while out of descriptors"
    assert failures >= 1
    assert len(lines) == 1, lines  # one WARN line per 10 s, not one per failure
    assert lines[0]["level"] == "warning" and "Too many open files" in lines[0]["error"]
    [received] = receive_messages(rabbitmq_url, queue_address(events), 1, timeout=20)
    assert bytes(received.message.body) == b"after the flood"


HELD = 1100
"""Idle connections held open in the test below: enough to put the next client's socket
past descriptor 1023 in the bridge."""


def test_a_client_on_a_descriptor_past_1023_is_served(rabbitmq_url: str,
                                                      tmp_path: Path) -> None:
    """With more than a thousand connections held, the next client's socket gets a
    descriptor numbered past 1023 in the bridge: it logs in and publishes, and nothing
    is refused (the loop watches sockets with epoll: select() could not, and such a socket
    was closed at once, reason="descriptors")."""
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = HELD + 200
    assert hard == resource.RLIM_INFINITY or hard >= need, \
        f"this test needs {need} open files (ulimit -Hn is {hard})"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    port = free_port()
    events = unique_queue("limits-fd1024")
    config = _config(rabbitmq_url, port, events, handshake_timeout=120,
                     max_connections=HELD + 10, max_connections_per_peer=HELD + 10)
    try:
        with BridgeRun(config, tmp_path, nofile=HELD + 200) as bridge, \
                _closing([]) as socks:
            wait_listening(port, bridge)
            mport = metrics_port(bridge.log)
            for _ in range(HELD):
                socks.append(_connect(port, header=False))
            _wait_clients(mport, HELD)
            fds = [int(fd) for fd in os.listdir(f"/proc/{bridge.pid}/fd")]
            assert max(fds) > 1023 + 50, "the held connections did not go past 1023"
            client = _login(port)
            assert client is not None, "the client past descriptor 1023 was not served"
            with client:
                client.publish(b"past 1023", exchange="events", routing_key="e")
            refused = scrape(mport).value("amqp_bridge_connections_refused_total",
                                          listener="facade", reason="descriptors")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert refused == 0
    [received] = receive_messages(rabbitmq_url, queue_address(events), 1, timeout=20)
    assert bytes(received.message.body) == b"past 1023"


# --- configuration and the log helper (no bridge needed) -----------------------------------


def test_check_prints_each_listeners_limits_and_bad_bounds_name_the_listener() -> None:
    from bridge.config import ConfigError, describe, parse_config

    base = """
connections:
  cloud: {protocol: amqp1.0, url: "amqp://127.0.0.1:5672"}
listeners:
  facade:
    protocol: amqp0-10
    bind: "127.0.0.1:5682"
    allow_anonymous: true%s
routes:
  - name: out
    from: {listener: facade, exchange: events}
    to:   {connection: cloud, address: /queue/x}
"""
    lines = describe(parse_config(base % ""))
    [listener] = [line for line in lines if line.startswith("listener facade:")]
    assert listener.endswith("; limits: handshake 10s, 500 connections (100 per peer address), "
                             "messages up to 67108864 bytes, 134217728 bytes buffered per "
                             "connection / 536870912 per listener")
    with pytest.raises(ConfigError) as bad:
        parse_config(base % "\n    max_buffered: 4096")
    assert "listeners.facade" in str(bad.value)
    assert "max_buffered must be at least max_buffered_per_connection" in str(bad.value)


def test_rate_limited_lines_count_what_they_leave_out(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from bridge.ops.logs import RateLimited

    now = [100.0]
    limited = RateLimited(logging.getLogger("test.limits"), interval=10.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="test.limits"):
        logged = [limited.warning("a", "event %d", i) for i in range(5)]
        assert limited.warning("b", "another kind")  # its own budget
        now[0] += 10.0
        assert limited.warning("a", "event %d", 5)
    assert logged == [True, False, False, False, False]
    assert [r.getMessage() for r in caplog.records] == [
        "event 0", "another kind", "event 5 (4 more like it since the last such line not logged)"]
    assert [r.__dict__["suppressed"] for r in caplog.records] == [0, 0, 4]
