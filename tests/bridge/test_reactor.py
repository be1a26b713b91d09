"""The container's read-ahead IO: whole bursts of AMQP 1.0 frames per socket read."""

from __future__ import annotations

from typing import Any

from proton import Collector, Connection, Delivery, Event, Transport
from proton._events import EventBase
from proton.handlers import IOHandler

from bridge.runtime import reactor


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


def test_the_bridge_container_uses_read_ahead_and_skips_deliveries() -> None:
    container = reactor.container(object())
    assert isinstance(container.global_handler, reactor.SkipDeliveries)
    assert isinstance(container.global_handler.inner.base, reactor.ReadAheadIO)


def test_skip_deliveries_passes_every_other_event_on() -> None:
    seen: list[str] = []

    class Inner:
        def on_link_flow(self, event: Any) -> None:
            seen.append("flow")

        def on_delivery(self, event: Any) -> None:
            seen.append("delivery")

    handler = reactor.SkipDeliveries(Inner())
    for kind in (Event.LINK_FLOW, Event.DELIVERY, Event.TRANSPORT):
        _StubEvent(kind).dispatch(handler)
    assert seen == ["flow"]  # the delivery ends at SkipDeliveries; transport: Inner has none


def test_proton_global_handler_has_nothing_to_do_for_deliveries() -> None:
    """What SkipDeliveries relies on: neither part of proton's global handler (the IO
    handler, the connection's reconnect logic) handles deliveries."""
    from proton import _reactor

    for part in (IOHandler, _reactor.GlobalOverrides, _reactor._Connector):
        assert not hasattr(part, "on_delivery"), part


class _StubEvent(EventBase):  # type: ignore[misc]
    """An event of ``kind`` without a proton object behind it."""
