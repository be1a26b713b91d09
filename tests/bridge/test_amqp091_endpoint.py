"""The 0-9-1 route endpoints on their connection, driven without a socket: the engine is
our real client engine, fed the broker's frames by hand (``tests.engine091.peer``), so
what a test asserts is exactly what the bridge would put on the wire.

The end-to-end behaviour against RabbitMQ is in ``test_routes091*.py`` and
``tests/security/test_bridge091.py``; here are the cases RabbitMQ cannot be made to show
on demand, or not observably: a blocked connection's publishes, the broker's 540 refusal
of a channel-wide prefetch, window mode's buffer.
"""

from __future__ import annotations

from typing import Any

from pamqp import commands as C
from proton.reactor import Container

from amqp091.connection import Connection
from bridge.config import parse_config
from bridge.legacy.amqp091 import Amqp091Connection
from bridge.routes.amqp091_endpoint import WINDOW, Amqp091Source, Amqp091Target
from mappings.message import AmqpMessage
from tests.engine091.peer import methods, open_client, wire
from tests.engine091.test_channel import content

CONFIG = """
connections:
  rabbit: {protocol: amqp0-9-1, url: "amqp://u:p@127.0.0.1:1/"}
  cloud: {protocol: amqp1.0, url: "amqp://127.0.0.1:2"}
routes:
  - name: in
    from: {connection: cloud, address: /queue/in}
    to:   {connection: rabbit, exchange: amq.direct, routing_key: k}
    max_in_flight: {messages: 4}
  - name: out
    from: {connection: rabbit, queue: q%s}
    to:   {connection: cloud, address: /queue/out}
    max_in_flight: {messages: 3}
"""


class FakeSocket:
    """The part of :class:`~bridge.runtime.EngineSocket` a connection uses."""

    def __init__(self, engine: Connection) -> None:
        self.engine = engine
        self.closed = False
        self.backpressured = False

    def flush(self) -> None:
        pass


class Owner:
    """A route's side of the endpoint: records what it is told."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.messages: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("on_") and name not in ("dead_lettered",):
            raise AttributeError(name)
        return lambda *args: self.calls.append(name)

    def on_legacy_message(self, taken: Any, message: Any, message_id: Any,
                          redelivered: bool) -> None:
        self.messages.append(taken)


def connected(prefetch: str = "") -> tuple[Amqp091Connection, Connection, Any, Any]:
    cfg = parse_config(CONFIG % prefetch, env={})
    engine = open_client()
    conn = Amqp091Connection(Container(), "rabbit", cfg.connections["rabbit"])
    sock = FakeSocket(engine)
    conn.socket = sock  # type: ignore[assignment]
    conn.open = True
    return conn, engine, cfg.routes[0], cfg.routes[1]


def end_burst(conn: Amqp091Connection) -> None:
    """The loop's end of a burst of events: the endpoints' deferred work (the source's
    limit and settlements) runs."""
    conn.bursts.run()


def pump(conn: Amqp091Connection, engine: Connection, *data: bytes) -> None:
    """Feed the broker's frames and hand the engine's events to the connection."""
    for chunk in data:
        engine.receive_data(chunk)
    for event in list(engine.events()):
        conn._on_event(conn.socket, event)  # type: ignore[arg-type]


def test_a_blocked_connection_stops_the_target_until_unblocked() -> None:
    conn, engine, route, _ = connected()
    owner = Owner()
    target = Amqp091Target(conn, route, owner)  # type: ignore[arg-type]
    channel = target_channel = conn.slots[0].channel
    assert channel is not None
    pump(conn, engine, wire(channel, C.Channel.OpenOk()))
    assert [type(m) for m in methods(engine)][-1] is C.Confirm.Select
    pump(conn, engine, wire(channel, C.Confirm.SelectOk()))
    assert target.attached and target.can_send and target.room == 4
    target.transfer(AmqpMessage(body=[b"before"]))
    assert [type(m) for m in methods(engine)] == [C.Basic.Publish]

    pump(conn, engine, wire(0, C.Connection.Blocked("low on memory")))
    assert conn.blocked == "low on memory"
    assert not target.can_send and target.attached  # the route sends nothing now
    calls = len(owner.calls)
    pump(conn, engine, wire(0, C.Connection.Unblocked()))
    assert conn.blocked is None and target.can_send
    assert owner.calls[calls:] == ["on_legacy_session"]  # told to send again
    assert target_channel == channel


def test_window_mode_holds_deliveries_beyond_the_credit_in_order() -> None:
    conn, engine, _, route = connected(", prefetch: window")
    owner = Owner()
    source = Amqp091Source(conn, route, owner)  # type: ignore[arg-type]
    assert source.mode == WINDOW
    channel = conn.slots[0].channel
    assert channel is not None
    pump(conn, engine, wire(channel, C.Channel.OpenOk()))
    assert [type(m) for m in methods(engine)] == [C.Channel.Open]
    source.grant(1)
    end_burst(conn)
    qos, consume = methods(engine)
    assert isinstance(qos, C.Basic.Qos) and (qos.prefetch_count, qos.global_) == (3, False)
    assert isinstance(consume, C.Basic.Consume) and consume.queue == "q"
    pump(conn, engine, wire(channel, C.Basic.QosOk(), C.Basic.ConsumeOk(consume.consumer_tag)))

    def deliver(tag: int) -> bytes:
        return content(channel, C.Basic.Deliver(consume.consumer_tag, tag, False, "", "q"),
                       f"m{tag}".encode(), C.Basic.Properties(message_id=f"m{tag}"))

    pump(conn, engine, deliver(1), deliver(2), deliver(3))
    assert [t.tag for t in owner.messages] == [1]  # one credit: two wait
    assert len(source.buffered) == 2 and list(source.held) == [1, 2, 3]
    source.stop()  # window mode: nothing is cancelled, nothing sent
    end_burst(conn)
    assert methods(engine) == []
    source.grant(5)
    end_burst(conn)
    assert [t.tag for t in owner.messages] == [1, 2, 3] and source.granted == 3
    assert methods(engine) == []  # the window stays as it is
    source.settle(owner.messages[0], "accept")
    source.settle(owner.messages[1], "accept")
    source.end_of_burst()
    end_burst(conn)
    (ack,) = methods(engine)
    assert isinstance(ack, C.Basic.Ack) and (ack.delivery_tag, ack.multiple) == (2, True)


def test_a_refused_channel_wide_prefetch_switches_the_source_to_window() -> None:
    conn, _engine, _, route = connected()
    source = Amqp091Source(conn, route, Owner())  # type: ignore[arg-type]
    assert source.mode == "credit"
    source.on_connection_closed(540, "NOT_IMPLEMENTED - queue 'other' in vhost '/' does not "
                                     "support global qos")
    assert source.mode == "credit"  # another route's queue
    source.on_connection_closed(540, "NOT_IMPLEMENTED - queue 'q' in vhost '/' does not "
                                     "support global qos")
    assert source.mode == WINDOW


def test_a_bursts_acks_and_next_grant_cost_one_qos_sent_before_the_acks() -> None:
    conn, engine, _, route = connected()
    owner = Owner()
    source = Amqp091Source(conn, route, owner)  # type: ignore[arg-type]
    channel = conn.slots[0].channel
    assert channel is not None
    pump(conn, engine, wire(channel, C.Channel.OpenOk()))
    methods(engine)
    source.grant(3)
    end_burst(conn)
    qos, consume = methods(engine)
    assert isinstance(qos, C.Basic.Qos) and (qos.prefetch_count, qos.global_) == (3, True)
    assert isinstance(consume, C.Basic.Consume)
    pump(conn, engine, wire(channel, C.Basic.QosOk(), C.Basic.ConsumeOk(consume.consumer_tag)))
    pump(conn, engine, *(content(channel, C.Basic.Deliver(consume.consumer_tag, tag, False, "",
                                                          "q"), b"m", C.Basic.Properties())
                         for tag in (1, 2, 3)))
    first, second, third = owner.messages

    # the route's end of a burst: two outcomes came, and it grants one more
    source.settle(first, "accept")
    source.settle(second, "accept")
    source.end_of_burst()
    source.grant(1)
    end_burst(conn)
    qos, ack = methods(engine)
    assert isinstance(qos, C.Basic.Qos) and qos.prefetch_count == 2  # 1 held + 1 granted
    assert isinstance(ack, C.Basic.Ack) and (ack.delivery_tag, ack.multiple) == (2, True)

    # a grant that makes up for the settled ones: no basic.qos at all
    fourth = content(channel, C.Basic.Deliver(consume.consumer_tag, 4, False, "", "q"), b"m",
                     C.Basic.Properties())
    pump(conn, engine, wire(channel, C.Basic.QosOk()), fourth)
    source.settle(owner.messages[3], "accept")
    source.end_of_burst()
    source.grant(1)
    end_burst(conn)
    (ack,) = methods(engine)  # tag 3 is unsettled: no multiple
    assert isinstance(ack, C.Basic.Ack) and (ack.delivery_tag, ack.multiple) == (4, False)

    # no grant this time: the limit is lowered before the reject frees a place
    assert source.reject(third, "unmappable")
    end_burst(conn)
    qos, reject = methods(engine)
    assert isinstance(qos, C.Basic.Qos) and qos.prefetch_count == 1  # 0 held + 1 granted
    assert isinstance(reject, C.Basic.Reject) and (reject.delivery_tag, reject.requeue) == \
        (3, False)
