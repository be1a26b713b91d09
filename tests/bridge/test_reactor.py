"""The bridge's container: read-ahead IO (whole bursts of AMQP 1.0 frames per socket
read), output written at each burst's end, the selector told only what changed,
deliveries spared the global handler, and watched links' deliveries handed over
directly."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from cproton import pn_collector_peek, pn_collector_pop, pn_event_type
from proton import Collector, Connection, Delivery, Event, EventType, Message, Transport
from proton._events import EventBase
from proton.handlers import IOHandler, MessagingHandler
from proton.reactor import Container

from bridge.amqp10 import outcomes
from bridge.runtime import reactor
from bridge.runtime.containment import faults_of
from bridge.runtime.sockets import register_selectable, set_interest
from tests.support.bridge import free_port
from tests.support.proton_refs import refcount


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


def _linked(collector: Any, credit: int = 10) -> tuple[Any, Any, Any, Any]:
    """A sender and its receiver over in-memory transports, the receiver's events in
    ``collector``, with ``credit``."""
    client, server, client_t, server_t = _pair()
    server.collect(collector)
    client.open()
    session = client.session()
    session.open()
    sender = session.sender("bench")
    sender.open()
    _pump(client_t, server_t)
    server.open()
    server.session_head(0).open()
    receiver = server.link_head(0)
    receiver.open()
    receiver.flow(credit)
    _pump(client_t, server_t)
    return sender, receiver, client_t, server_t


def test_push_feeds_a_burst_larger_than_the_transport_buffer() -> None:
    sender, receiver, client_t, server_t = _linked(Collector(), credit=200)
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


def _send(sender: Any, client_t: Any, server_t: Any, *bodies: bytes) -> None:
    for i, body in enumerate(bodies):
        sender.delivery(f"{body!r}{i}")
        sender.send(body)
        sender.advance()
    _move(client_t, server_t)


def _drain(collector: Any) -> list[Any]:
    """The types of the events left in ``collector`` (peeked as the container does)."""
    types = []
    while (event := collector.peek()) is not None:
        types.append(event.type)
        collector.pop()
    return types


def _queued(collector: Any) -> list[Any]:
    """The types of the events queued in ``collector``, taken off its C queue as they are
    (no shortcut or direct delivery runs)."""
    types = []
    while impl := pn_collector_peek(collector._impl):
        types.append(EventType.TYPES[pn_event_type(impl)])
        pn_collector_pop(collector._impl)
    return types


def _direct_setup() -> tuple[Any, Any, Any, Any, Any]:
    container = reactor.container(object())
    # the transports are bound to the collector by hand, not to the loop's IO handler:
    # its event shortcuts (tests/bridge/test_event_shortcuts.py) would find no socket
    reactor.without_shortcuts(container)
    collector = container._collector
    sender, receiver, client_t, server_t = _linked(collector)
    _drain(collector)  # the link's set-up
    return container, sender, receiver, client_t, server_t


def test_direct_deliveries_hand_a_watched_links_deliveries_to_its_callback() -> None:
    container, sender, receiver, client_t, server_t = _direct_setup()
    received: list[bytes] = []

    def delivered(delivery: Delivery) -> None:
        received.append(receiver.recv(delivery.pending))
        receiver.advance()

    container.direct_deliveries.watch(receiver, delivered)
    _send(sender, client_t, server_t, b"one", b"two", b"three")

    left = _drain(container._collector)
    assert received == [b"one", b"two", b"three"]
    assert Event.DELIVERY not in left  # none of them reached proton's dispatch


def test_an_unwatched_links_deliveries_go_the_usual_way() -> None:
    container, sender, receiver, client_t, server_t = _direct_setup()
    called: list[Delivery] = []
    container.direct_deliveries.watch(receiver, called.append)
    container.direct_deliveries.unwatch(receiver)
    _send(sender, client_t, server_t, b"one")

    event = container._collector.peek()
    while event is not None and event.type is not Event.DELIVERY:
        container._collector.pop()
        event = container._collector.peek()
    assert event is not None and event.link == receiver
    assert called == []


def test_a_failing_callback_is_contained_and_the_deliveries_after_it_still_arrive() -> None:
    container, sender, receiver, client_t, server_t = _direct_setup()
    received: list[bytes] = []

    def delivered(delivery: Delivery) -> None:
        body = receiver.recv(delivery.pending)
        receiver.advance()
        if body == b"bad":
            raise RuntimeError("a bug in a route")
        received.append(body)

    container.direct_deliveries.watch(receiver, delivered)
    _send(sender, client_t, server_t, b"one", b"bad", b"two")

    assert Event.DELIVERY not in _drain(container._collector)
    assert received == [b"one", b"two"]
    assert sum(faults_of(container).counts.values()) == 1  # logged and counted once


def test_a_plain_proton_container_has_no_direct_deliveries() -> None:
    assert reactor.DirectDeliveries.of(Container(object())) is None
    assert isinstance(reactor.DirectDeliveries.of(reactor.container(object())),
                      reactor.DirectDeliveries)


class _PingPong(MessagingHandler):  # type: ignore[misc]
    """A sender and a receiver in one container, over a loopback AMQP 1.0 connection:
    each message is sent once the one before it was accepted (request, response)."""

    def __init__(self, port: int, count: int) -> None:
        super().__init__()
        self.url = f"127.0.0.1:{port}"
        self.count = count
        self.sent = self.accepted = 0
        self.connections: list[Any] = []

    def on_start(self, event: Any) -> None:
        self.acceptor = event.container.listen(self.url)
        connection = event.container.connect(self.url)
        self.connections.append(connection)
        self.sender = event.container.create_sender(connection, "pingpong")
        self.guard = event.container.schedule(30, self)  # (the test fails, it does not hang)

    def on_connection_opened(self, event: Any) -> None:
        if event.connection not in self.connections:
            self.connections.append(event.connection)  # the accepted side

    def on_sendable(self, event: Any) -> None:
        if self.sent == self.accepted < self.count and event.sender == self.sender:
            self.sender.send(Message(body=f"ping {self.sent}"))
            self.sent += 1

    def on_accepted(self, event: Any) -> None:
        self.accepted += 1
        if self.accepted < self.count:
            self.on_sendable(event)
        else:
            self.stop()

    def on_timer_task(self, event: Any) -> None:
        self.stop()

    @property
    def exchanging(self) -> bool:
        """Messages are going back and forth (the connections are up)."""
        return self.sent > 0 and self.accepted < self.count

    def stop(self) -> None:
        self.guard.cancel()
        for connection in self.connections:
            connection.close()
        self.acceptor.close()


def test_amqp10_output_made_in_a_burst_is_written_before_the_loop_waits() -> None:
    """A transfer or disposition made while a burst of events is dispatched goes out at
    the burst's end: the loop never waits in select with 1.0 output its socket could
    take (proton wrote only once select had reported the socket writable: one more loop
    round on every hop of a request/response exchange)."""
    handler = _PingPong(free_port(), 50)
    container = reactor.container(handler)
    io = container.global_handler.inner.base
    waits_with_output: list[int] = []
    select = io._selector.select

    def watched_select(timeout: float) -> Any:
        if handler.exchanging:
            waits_with_output.append(sum(1 for c in handler.connections
                                         if c.transport and c.transport.pending() > 0))
        return select(timeout)

    io._selector.select = watched_select
    container.run()

    assert handler.accepted == 50
    assert len(waits_with_output) >= 100  # (the loop waited between the hops)
    assert sum(waits_with_output) == 0


def test_the_selector_is_told_only_what_changed() -> None:
    """set_interest: an update event (dispatched through every handler) only when
    reading or writing changed, the deadline came earlier, or the selectable ends."""
    container = reactor.container(object())
    a, b = socket.socketpair()
    sel = register_selectable(container, object(), a)
    _queued(container._collector)

    def told(reading: bool, writing: bool, deadline: float | None) -> bool:
        result = set_interest(sel, reading, writing, deadline)
        events = _queued(container._collector)
        assert (Event.SELECTABLE_UPDATED in events) == result
        return result

    assert told(True, False, 100.0)  # the first time
    assert not told(True, False, 100.0)  # nothing changed
    assert not told(True, False, 200.0)  # later: the selector's own next look finds it
    assert not told(True, False, None)  # dropped: likewise
    assert told(True, False, 150.0)  # set again: the selector must know
    assert told(True, False, 120.0)  # earlier
    assert told(True, True, 120.0)  # writing
    assert told(False, True, 120.0)  # reading
    assert (sel.reading, sel.writing, sel.deadline) == (False, True, 120.0)
    sel.terminate()
    assert set_interest(sel, False, True, 120.0)  # the end is always told
    assert Event.SELECTABLE_FINAL in _queued(container._collector)
    a.close()
    b.close()


# -- LightDelivery: proton's Delivery without its per-wrapper bookkeeping -------------------


@pytest.mark.parametrize("outcome", ["accept", "release", "modified", "reject"])
def test_a_light_delivery_reads_and_settles_as_protons_delivery(outcome: str) -> None:
    """Both ends through LightDelivery give the peer, and read from it, what proton's own
    wrapper does: the state, a modified outcome's delivery-failed, a rejection's condition."""
    results = []
    for kind in (reactor.LightDelivery, Delivery):
        sender, receiver, client_t, server_t = _linked(Collector())
        sent = kind(sender.delivery(b"t1")._impl)
        sender.stream(b"message")
        sender.advance()
        _pump(client_t, server_t)
        received = kind(receiver.current._impl)
        assert received.remote_state == 0 and type(received.remote_state) is int  # none yet
        assert (received.readable, received.partial, received.pending, received.tag) == \
            (True, False, 7, "t1")
        assert receiver.recv(received.pending) == b"message"
        receiver.advance()
        {"accept": outcomes.accept, "release": lambda d: outcomes.give_back(d, failed=False),
         "modified": lambda d: outcomes.give_back(d, failed=True),
         "reject": lambda d: outcomes.reject(d, "amqp:not-allowed", "no")}[outcome](received)
        _pump(client_t, server_t)
        condition = sent.remote.condition
        results.append((sent.remote_state, type(sent.remote_state),
                        sent.remote_state == Delivery.ACCEPTED,
                        sent.remote.failed, condition and (condition.name, condition.description),
                        sent.settled))
        sent.settle()
    assert results[0] == results[1]
    assert results[0][0] == {"accept": Delivery.ACCEPTED, "release": Delivery.RELEASED,
                             "modified": Delivery.MODIFIED, "reject": Delivery.REJECTED}[outcome]


def test_a_light_delivery_holds_its_session_until_after_the_delivery() -> None:
    """A façade client can hold a message (unacknowledged) after the broker ended its
    link's session and the bridge freed it; its LightDelivery is then the last holder of
    the link. proton frees a link twice when the link's last reference goes after its
    session's (bridge.runtime.shortcuts, "HeldEvent"; under valgrind the old LightDelivery
    let go last read and freed freed memory): so it holds the session too, and lets it go
    after the delivery."""
    sender, receiver, client_t, server_t = _linked(Collector())
    sender.delivery(b"t1")
    sender.stream(b"message")
    sender.advance()
    _pump(client_t, server_t)
    session = receiver.session._impl
    before = refcount(session)
    held = reactor.LightDelivery(receiver.current._impl)
    assert refcount(session) == before + 1
    released: list[str] = []
    real_decref = reactor.pn_decref

    def noting(impl: Any) -> None:
        released.append("session" if impl == session else "other")
        real_decref(impl)

    reactor.pn_decref = noting  # type: ignore[assignment]
    try:
        del held
    finally:
        reactor.pn_decref = real_decref  # type: ignore[assignment]
    assert released == ["other", "session"]
    assert refcount(session) == before
