"""The container's read-ahead IO: whole bursts of AMQP 1.0 frames per socket read."""

from __future__ import annotations

from typing import Any

from proton import Collector, Connection, Delivery, Transport

from bridge import reactor


def _pair() -> tuple[Any, Any, Any, Any]:
    """An in-memory client and server proton transport (no sockets), connected."""
    client, server = Connection(), Connection()
    client_t, server_t = Transport(), Transport(Transport.SERVER)
    client_t.bind(client)
    server_t.bind(server)
    server.collect(Collector())
    return client, server, client_t, server_t


def _output(transport: Any) -> bytes:
    """Everything ``transport`` has to send (it hands it out a buffer at a time)."""
    out = bytearray()
    while (pending := transport.pending()) > 0:
        out += transport.peek(pending)
        transport.pop(pending)
    return bytes(out)


def _move(source: Any, target: Any) -> bytes:
    """Everything ``source`` has to send, given to ``target`` by read-ahead's push."""
    data = _output(source)
    reactor._push(target, data)
    return data


def _pump(client_t: Any, server_t: Any) -> None:
    for _ in range(4):
        _move(client_t, server_t)
        _move(server_t, client_t)


def test_push_feeds_a_burst_larger_than_the_transport_buffer() -> None:
    client, server, client_t, server_t = _pair()
    client.open()
    session = client.session()
    session.open()
    sender = session.sender("bench")
    sender.open()
    _pump(client_t, server_t)
    server.open()
    remote_session = server.session_head(0)
    remote_session.open()
    receiver = server.link_head(0)
    receiver.open()
    receiver.flow(200)
    _pump(client_t, server_t)
    assert sender.credit == 200

    bodies = [bytes([i]) * 1024 for i in range(100)]
    for i, body in enumerate(bodies):
        sender.delivery(str(i))
        sender.send(body)
        sender.advance()
    burst = _output(client_t)
    capacity = server_t.capacity()
    assert len(burst) > 10 * capacity  # proton's own handler reads only `capacity` at once

    reactor._push(server_t, burst)  # one read's worth, pushed in pieces

    assert receiver.queued == 100
    received = []
    while receiver.current is not None:
        current: Delivery = receiver.current
        received.append(receiver.recv(current.pending))
        receiver.advance()
    assert received == bodies


def test_push_stops_at_a_closed_input() -> None:
    _, _, _, server_t = _pair()
    server_t.close_tail()
    reactor._push(server_t, b"AMQP\x00\x01\x00\x00" * 10)  # nobody left to read it: no error
    assert server_t.capacity() < 0


def test_the_bridge_container_uses_read_ahead() -> None:
    container = reactor.container(object())
    assert isinstance(container.global_handler.base, reactor.ReadAheadIO)
