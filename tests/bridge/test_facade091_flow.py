"""The 0-9-1 façade's flow control and consumer life, end to end against RabbitMQ's
AMQP 1.0 (the bridge's 1.0 connection runs through a relay the test can pause):

- publishers past the route's ``max_in_flight`` are not read (a synchronous method
  they send is not answered) and told ``connection.blocked``; once the 1.0 broker
  settles, ``connection.unblocked``, they are read again, nothing lost;
- a global ``basic.qos`` bounds a channel's consumers together;
- a consumer's prefetch holds even when the 1.0 broker sends beyond the link credit
  (as RabbitMQ 3.x's 1.0 plugin can: the relay makes it certain);
- ``basic.cancel`` keeps the unacknowledged deliveries with the consumer until acked,
  and ends an exclusive consumer's hold on the queue at once;
- publishes read before a channel or connection close are all forwarded, also those
  still waiting for the 1.0 sender;
- a client that publishes while a queue.bind waits for its 1.0 link is not read until
  the bind is answered (the bridge does not hold what it sends);
- a consumer whose 1.0 link is attaching leaves ``/readyz`` at 200;
- ``tx.select`` is ``540 NOT_IMPLEMENTED``;
- the 1.0 source gone for good (its RabbitMQ queue deleted): consumer cancel
  notification.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pika
import pika.exceptions
import pytest
from pamqp import commands as C
from proton import Message

from amqp091.framing import encode_method
from amqp091.methods import ReplyCode
from tests.support.bridge import wait_for
from tests.support.facade091 import Facade091 as Facade
from tests.support.facade091 import RawClient, facade091, publish_frames
from tests.support.metrics import http_get, metrics_port, poll
from tests.support.overcredit import OverCredit
from tests.support.rabbitmq import assert_no_message, receive_messages, send_messages
from tests.support.relay import Relay

WINDOW = 20
"""max_in_flight of the publish route."""


@dataclass
class Flow:
    facade: Facade
    relay: Relay
    """Between the bridge and RabbitMQ's AMQP 1.0."""
    overcredit: OverCredit
    """Raises the link credit the bridge grants, as the relay passes it on."""


@pytest.fixture(scope="module")
def flow(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flow]:
    port = int(rabbitmq_url.rsplit(":", 1)[1])
    overcredit = OverCredit()
    relay = Relay(("127.0.0.1", port), None, rewrite=overcredit)

    def routes(q: dict[str, str], names: dict[str, str]) -> str:
        return f"""
  - name: out
    from: {{listener: legacy, exchange: orders}}
    to:   {{connection: cloud, address: {q["out"]}}}
    max_in_flight: {{messages: {WINDOW}}}
  - {{name: left, from: {{connection: cloud, address: {q["left"]}}},
      to: {{listener: legacy, queue: left}}}}
  - {{name: right, from: {{connection: cloud, address: {q["right"]}}},
      to: {{listener: legacy, queue: right}}}}
  - {{name: over, from: {{connection: cloud, address: {q["over"]}}},
      to: {{listener: legacy, queue: over}}}}
  - {{name: replies, from: {{connection: cloud, address: "/exchange/amq.topic/{{binding_key}}"}},
      to: {{listener: legacy, exchange: replies}}}}
  - {{name: excl, from: {{connection: cloud, address: {q["excl"]}}},
      to: {{listener: legacy, queue: excl}}}}
  - {{name: attaching, from: {{connection: cloud, address: {q["attaching"]}}},
      to: {{listener: legacy, queue: attaching}}}}
  - {{name: cancel, from: {{connection: cloud, address: {q["cancel"]}}},
      to: {{listener: legacy, queue: cancel}}}}
  - {{name: gone, from: {{connection: cloud, address: "/amq/queue/{names["gone"]}"}},
      to: {{listener: legacy, queue: gone}}}}
metrics: {{bind: "127.0.0.1:0"}}
"""

    try:
        with facade091(rabbitmq_url, tmp_path_factory.mktemp("facade091-flow"),
                       ("out", "left", "right", "over", "excl", "attaching", "cancel", "gone"), routes,
                       cloud_url=rabbitmq_url.replace(f":{port}", f":{relay.port}")) as running:
            yield Flow(running, relay, overcredit)
    finally:
        relay.resume()


@pytest.mark.parametrize("announced", [True, False])
def test_publishers_past_max_in_flight_are_not_read_until_the_1_0_side_settles(
        flow: Flow, announced: bool) -> None:
    facade = flow.facade
    client = RawClient(facade.port)
    client.login({"connection.blocked": announced})
    client.open_channel(1)
    try:
        flow.relay.pause()  # the 1.0 broker hears nothing: no publish is settled
        count = 3 * WINDOW
        client.sock.sendall(b"".join(publish_frames(1, "orders", "k", f"m{i}".encode())
                                     for i in range(count)))
        if announced:
            blocked = client.read()
            assert isinstance(blocked, C.Connection.Blocked), blocked
            assert "max_in_flight" in (blocked.reason or "")
        # a synchronous method after the window: not read, so not answered
        client.sock.sendall(encode_method(1, C.Exchange.Declare(exchange="orders",
                                                                passive=True)))
        with pytest.raises(TimeoutError):
            client.read(timeout=1.0)
        flow.relay.resume()
        first = client.read(timeout=30)
        if announced:
            assert isinstance(first, C.Connection.Unblocked), first
            first = client.read(timeout=30)
        assert isinstance(first, C.Exchange.DeclareOk), first
        got = receive_messages(facade.rabbitmq_url, facade.address("out"), count, timeout=30)
        assert [bytes(r.message.body) for r in got] == [f"m{i}".encode() for i in range(count)]
    finally:
        flow.relay.resume()
        client.sock.close()


@pytest.mark.parametrize("close", ["channel", "connection"])
def test_publishes_read_before_a_close_are_all_forwarded(flow: Flow, close: str) -> None:
    """Without confirms, a client cannot tell which publishes were taken: RabbitMQ routes
    every one it read before the channel (or connection) closed, and so does the bridge —
    also those read past ``max_in_flight`` and still waiting for the 1.0 sender."""
    facade = flow.facade
    client = RawClient(facade.port)
    client.login()
    client.open_channel(1)
    count = 3 * WINDOW
    try:
        flow.relay.pause()  # nothing is settled: what is read past the window waits
        client.sock.sendall(b"".join(publish_frames(1, "orders", "k", f"c{i}".encode())
                                     for i in range(count))
                            + (encode_method(1, C.Channel.Close(200, "", 0, 0))
                               if close == "channel"
                               else encode_method(0, C.Connection.Close(200, "", 0, 0))))
        flow.relay.resume()
        closed = client.read(timeout=30)
        assert isinstance(closed, C.Channel.CloseOk if close == "channel"
                          else C.Connection.CloseOk), closed
        got = receive_messages(facade.rabbitmq_url, facade.address("out"), count, timeout=30)
        assert [bytes(r.message.body) for r in got] == [f"c{i}".encode() for i in range(count)]
    finally:
        flow.relay.resume()
        client.sock.close()


def test_a_client_waiting_for_a_bind_is_not_read_meanwhile(flow: Flow) -> None:
    """Publishes after a queue.bind wait until the bind is answered (a broker executes a
    connection's methods in order); meanwhile the bridge does not read the client, so
    what it sends stays in the kernel's socket buffers, not in the bridge's memory."""
    facade = flow.facade
    client = RawClient(facade.port)
    client.login()
    client.open_channel(1)
    client.open_channel(2)
    body = bytes(128 << 10)
    count = 400  # 50 MiB
    stream = b"".join(publish_frames(2, "orders", "k", body) for _ in range(count))
    try:
        client.sock.sendall(encode_method(1, C.Queue.Declare(queue="", exclusive=True)))
        declared = client.read()
        assert isinstance(declared, C.Queue.DeclareOk), declared
        flow.relay.pause()  # the temporary queue's 1.0 link cannot attach: the bind waits
        client.sock.sendall(encode_method(1, C.Queue.Bind(queue=declared.queue,
                                                          exchange="replies",
                                                          routing_key="replies.k")))
        sent = _send_until_stuck(client.sock, stream, stuck_for=2.0)
        assert sent < len(stream) // 2, f"the bridge read {sent >> 20} MiB meanwhile"
        flow.relay.resume()
        client.sock.settimeout(60)
        client.sock.sendall(stream[sent:])
        bound = client.read(timeout=30)
        assert isinstance(bound, C.Queue.BindOk), bound
        got = receive_messages(facade.rabbitmq_url, facade.address("out"), count, timeout=60)
        assert len(got) == count and all(bytes(r.message.body) == body for r in got)
    finally:
        flow.relay.resume()
        client.sock.close()


def _send_until_stuck(sock: socket.socket, data: bytes, stuck_for: float) -> int:
    """Send ``data`` until the peer has taken nothing for ``stuck_for`` seconds (or all
    of it); returns how much was sent."""
    sent = 0
    sock.setblocking(False)
    try:
        while sent < len(data):
            _, writable, _ = select.select([], [sock], [], stuck_for)
            if not writable:
                break
            sent += sock.send(data[sent:sent + (1 << 20)])
    finally:
        sock.setblocking(True)
    return sent


def _pump(conn: Any, until: Any, timeout: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        conn.process_data_events(time_limit=0.05)


def test_global_prefetch_bounds_the_channels_consumers_together(flow: Flow) -> None:
    facade = flow.facade
    for role in ("left", "right"):
        send_messages(facade.rabbitmq_url, facade.address(role),
                      [Message(body=f"{role} {i}".encode(), inferred=True) for i in range(8)])
    with facade.connect() as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=5, global_qos=True)
        got: list[tuple[Any, bytes]] = []
        for queue in ("left", "right"):
            ch.basic_consume(queue, lambda c, m, p, b: got.append((m, b)))
        _pump(conn, lambda: len(got) >= 5, what="5 deliveries")
        conn.process_data_events(time_limit=0.5)
        assert len(got) == 5  # both consumers together: the channel's prefetch
        while len(got) < 16:  # acknowledged one at a time: never more than 5 out
            unacked = len(got)
            ch.basic_ack(got[unacked - 5][0].delivery_tag)
            _pump(conn, lambda n=unacked: len(got) > n or n == 16, what="one more")
            conn.process_data_events(time_limit=0.05)
            assert len(got) <= unacked + 1
        ch.basic_ack(got[-1][0].delivery_tag, multiple=True)
        assert sorted(b for _, b in got) == sorted(
            f"{r} {i}".encode() for r in ("left", "right") for i in range(8))
        conn.process_data_events(time_limit=0.2)
    for role in ("left", "right"):
        assert_no_message(facade.rabbitmq_url, facade.address(role))


def test_prefetch_holds_when_the_1_0_broker_sends_beyond_the_credit(flow: Flow) -> None:
    facade = flow.facade
    count = 12
    send_messages(facade.rabbitmq_url, facade.address("over"),
                  [Message(body=f"over {i}".encode(), inferred=True) for i in range(count)])
    flow.overcredit.extra = 3  # RabbitMQ is told 3 more than the bridge grants
    try:
        with facade.connect() as conn:
            ch = conn.channel()
            ch.basic_qos(prefetch_count=2)
            got: list[tuple[Any, bytes]] = []
            ch.basic_consume("over", lambda c, m, p, b: got.append((m, b)))
            _pump(conn, lambda: len(got) >= 2, what="2 deliveries")
            conn.process_data_events(time_limit=0.5)
            assert len(got) == 2  # what came beyond the credit waits in the bridge
            acked = 0
            while acked < count:
                ch.basic_ack(got[acked][0].delivery_tag)  # the oldest: one at a time
                acked += 1
                _pump(conn, lambda n=acked: len(got) >= min(n + 2, count), what="one more")
                conn.process_data_events(time_limit=0.05)
                assert len(got) - acked <= 2  # never more than the prefetch unacked
            conn.process_data_events(time_limit=0.2)
    finally:
        flow.overcredit.extra = 0
    assert flow.overcredit.inflated > 0
    assert [b for _, b in got] == [f"over {i}".encode() for i in range(count)]
    assert_no_message(facade.rabbitmq_url, facade.address("over"))


def test_cancel_keeps_the_unacked_deliveries_until_acked(flow: Flow) -> None:
    facade = flow.facade
    send_messages(facade.rabbitmq_url, facade.address("cancel"),
                  [Message(body=f"c{i}".encode(), inferred=True) for i in range(4)])
    with facade.connect() as conn, facade.connect() as other:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=4)
        got: list[tuple[Any, bytes]] = []
        tag = ch.basic_consume("cancel", lambda c, m, p, b: got.append((m, b)))
        _pump(conn, lambda: len(got) == 4, what="4 deliveries")
        ch.basic_cancel(tag)
        och = other.channel()
        seen: list[bytes] = []
        och.basic_consume("cancel", lambda c, m, p, b: seen.append(b))
        other.process_data_events(time_limit=1.0)
        assert seen == []  # still the cancelled consumer's: not given to another
        for m, _ in got:  # acknowledged after the cancel: still settles on the 1.0 side
            ch.basic_ack(m.delivery_tag)
        conn.process_data_events(time_limit=0.3)
        other.process_data_events(time_limit=0.3)
        assert seen == []
    assert_no_message(facade.rabbitmq_url, facade.address("cancel"))


def test_a_cancelled_exclusive_consumer_leaves_the_queue_to_others(flow: Flow) -> None:
    """As with RabbitMQ, exclusivity ends with the basic.cancel, even while the cancelled
    consumer still holds a delivery unacknowledged."""
    facade = flow.facade
    send_messages(facade.rabbitmq_url, facade.address("excl"),
                  [Message(body=b"only", inferred=True)])
    with facade.connect() as conn, facade.connect() as other:
        ch = conn.channel()
        got: list[tuple[Any, bytes]] = []
        tag = ch.basic_consume("excl", lambda c, m, p, b: got.append((m, b)), exclusive=True)
        _pump(conn, lambda: len(got) == 1, what="the delivery")
        och = other.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            och.basic_consume("excl", lambda *a: None)  # still exclusive: 403
        assert info.value.reply_code == ReplyCode.ACCESS_REFUSED
        ch.basic_cancel(tag)
        och = other.channel()
        och.basic_consume("excl", lambda *a: None)  # the queue is free again
        other.process_data_events(time_limit=0.3)
        assert och.is_open
        ch.basic_ack(got[0][0].delivery_tag)
        conn.process_data_events(time_limit=0.3)
    assert_no_message(facade.rabbitmq_url, facade.address("excl"))


def test_a_consumer_whose_link_is_attaching_leaves_the_bridge_ready(flow: Flow) -> None:
    """Each basic.consume is a new 1.0 link; one attaching for the first time is the
    client's affair: ``/readyz`` stays 200 (clients consuming and cancelling in a loop
    would otherwise make a readiness probe take the bridge out of service for all)."""
    facade = flow.facade
    mport = metrics_port(facade.proc.log)
    poll(lambda: http_get(mport, "/readyz")[0], lambda s: s == 200, 30, "ready")
    with facade.connect() as conn:
        ch = conn.channel()
        flow.relay.pause()  # the consumer's link cannot attach
        try:
            tag = ch.basic_consume("attaching", lambda *a: None)  # consume-ok at once
            assert http_get(mport, "/readyz") == (200, {"ready": True, "routes_not_ready": []})
        finally:
            flow.relay.resume()
        ch.basic_cancel(tag)


def test_tx_select_is_540(flow: Flow) -> None:
    facade = flow.facade
    with facade.connect() as conn:
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
            conn.channel().tx_select()
        assert info.value.reply_code == ReplyCode.NOT_IMPLEMENTED
        assert "confirm" in info.value.reply_text


def test_consumer_cancelled_when_its_1_0_source_is_gone(flow: Flow) -> None:
    facade = flow.facade
    with facade.connect() as conn:
        ch = conn.channel()
        cancelled: list[Any] = []
        ch.add_on_cancel_callback(lambda frame: cancelled.append(frame))
        ch.basic_consume("gone", lambda *a: None)
        conn.process_data_events(time_limit=0.5)  # attached
        with pika.BlockingConnection(pika.URLParameters(facade.rabbitmq_url)) as rabbit:
            rabbit.channel().queue_delete(facade.queues["gone"])
        _pump(conn, lambda: bool(cancelled), timeout=30, what="basic.cancel from the façade")
        assert isinstance(cancelled[0].method, pika.spec.Basic.Cancel)
        assert conn.is_open and ch.is_open  # the consumer is cancelled, nothing else
    wait_for(lambda: "consumer_cancelled" in facade.proc.log(), 10, "the cancel logged",
             facade.proc)
