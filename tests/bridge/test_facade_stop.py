"""The bridge's own stop, and a route whose 1.0 link never attaches, through both façades.

With the real ``amqp-bridge run`` process and the shared RabbitMQ (docs/operations.md,
"Stopping"; docs/semantics.md, "A façade route whose link is down"):

- a publisher without confirms writes 5,000 messages of 1 KiB and the bridge gets SIGTERM right
  after the last publish: every message arrives at RabbitMQ (counted there), and the
  client gets connection.close 320 — 0-9-1 (pika) with RabbitMQ's own words, 0-10 (our
  client, no waiting for completions). Before, what the bridge read while stopping
  was thrown away: a quarter to a half of the messages;
- the drain limit reached (RabbitMQ's 1.0 side stalled by a paused relay): what is
  unforwarded goes to the route's dead-letter address, or without one is counted as
  abandoned and logged at ERROR with the number, and the client still gets
  connection.close 320 (before: "they will be redelivered", and a bare EOF);
- a route to ``/queue/NAME`` where NAME already is a durable queue (RabbitMQ 3.10 refuses
  every attach; these tests run against 3.10 whatever the default): a confirm-mode publisher gets basic.nack after ``attach_timeout``, a
  publisher without confirms its channel closed; ``/readyz`` names the route and
  RabbitMQ's reason; RabbitMQ's text is a WARNING once (before: no answer at all, and
  a WARNING at every retry).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pika
import pika.exceptions
import pytest

from amqp010.events import ExecutionExceptionReceived
from amqp010.spec import ErrorCode
from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.logs import records, route_stats
from tests.support.metrics import http_get, metrics_port, poll
from tests.support.rabbitmq import declare_queue, queue_address, queue_depth, unique_queue
from tests.support.relay import Relay

COUNT = 5000
BODY = b"x" * 1024
USER, PASSWORD = "app", "s3cret"
RABBITMQ_SHUTDOWN = "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"


def _config(port: int, protocol: str, cloud_url: str, address: str, *,
            more: str = "", route: str = "", rabbitmq_url: str = "") -> str:
    """One listener ``app`` whose exchange ``events`` the route ``pub`` sends to
    ``address`` over ``cloud_url``; ``rabbitmq_url``: also the connection ``direct``."""
    users = f"users: {{{USER}: {PASSWORD}}}" if protocol == "amqp0-9-1" \
        else "allow_anonymous: true"
    direct = f'  direct: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}\n' if rabbitmq_url else ""
    return f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{cloud_url}", reconnect: {{initial_delay: 0.2, max_delay: 1.0}}}}
{direct}listeners:
  app: {{protocol: {protocol}, bind: "127.0.0.1:{port}", {users}}}
routes:
  - name: pub
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: "{address}"}}
{route}{more}"""


def _pika(port: int) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.ConnectionParameters(
        "127.0.0.1", port, credentials=pika.PlainCredentials(USER, PASSWORD),
        connection_attempts=1, heartbeat=0))


def _closed_by_bridge(conn: pika.BlockingConnection) -> pika.exceptions.ConnectionClosed:
    """Pump ``conn`` until the bridge ends it; the close pika saw (a bare EOF is
    StreamLostError, not ConnectionClosedByBroker)."""
    for _ in range(120):
        try:
            conn.process_data_events(time_limit=0.5)
        except pika.exceptions.ConnectionClosed as exc:
            return exc
    raise AssertionError("the bridge never ended the connection")


def _stopped(bridge: BridgeRun) -> int:
    assert bridge.proc is not None
    return bridge.proc.wait(60)


def _publish_then_stop(rabbitmq_url: str, tmp_path: Path, protocol: str,
                       publish_and_close: Callable[[int, Callable[[], None]], None]) -> None:
    """A bridge with one façade publish route to a fresh RabbitMQ queue;
    ``publish_and_close(port, sigterm)`` publishes COUNT messages, calls ``sigterm``
    right after the last, and waits for the bridge to close the connection. Every
    message read must have arrived at RabbitMQ, and every one was read."""
    queue = unique_queue("stop")
    declare_queue(rabbitmq_url, queue)
    port = free_port()
    bridge = BridgeRun(_config(port, protocol, rabbitmq_url, queue_address(queue)),
                       tmp_path).start()
    try:
        wait_listening(port, bridge)
        publish_and_close(port, lambda: bridge.proc.send_signal(signal.SIGTERM))  # type: ignore[union-attr]
        assert _stopped(bridge) == 0
    finally:
        bridge.stop()
    log = bridge.log()
    stats = route_stats(log, "pub")
    arrived = queue_depth(rabbitmq_url, queue)
    assert stats["received"] == COUNT, stats  # the bridge read every publish...
    assert arrived == COUNT, (stats, log[-3000:])  # ...and forwarded every one
    assert not [r for r in records(log) if r.get("level") == "error"], log[-3000:]


def test_a_091_publisher_without_confirms_loses_nothing_when_the_bridge_stops(
        rabbitmq_url: str, tmp_path: Path) -> None:
    closes: list[pika.exceptions.ConnectionClosed] = []

    def publish_and_close(port: int, sigterm: Callable[[], None]) -> None:
        conn = _pika(port)
        channel = conn.channel()
        for _ in range(COUNT):
            channel.basic_publish("events", "k", BODY)
        sigterm()
        closes.append(_closed_by_bridge(conn))

    _publish_then_stop(rabbitmq_url, tmp_path, "amqp0-9-1", publish_and_close)
    assert isinstance(closes[0], pika.exceptions.ConnectionClosedByBroker), repr(closes[0])
    assert (closes[0].reply_code, closes[0].reply_text) == (320, RABBITMQ_SHUTDOWN)


def test_a_010_publisher_not_waiting_for_completions_loses_nothing_when_the_bridge_stops(
        rabbitmq_url: str, tmp_path: Path) -> None:
    clients: list[BlockingClient] = []

    def publish_and_close(port: int, sigterm: Callable[[], None]) -> None:
        client = BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=60)
        clients.append(client)
        for _ in range(COUNT):
            client.publish(BODY, exchange="events", routing_key="k", wait=False)
        sigterm()
        with pytest.raises(ClientError):  # its session detached, its connection closed
            client.idle(60)

    _publish_then_stop(rabbitmq_url, tmp_path, "amqp0-10", publish_and_close)
    assert (clients[0].conn.close_code, clients[0].conn.close_text) == \
        (320, "amqp-bridge is shutting down")


@pytest.mark.parametrize("dead_letter", [False, True], ids=["abandoned", "dead-lettered"])
def test_past_the_drain_limit_what_is_unforwarded_is_dead_lettered_or_abandoned_loudly(
        rabbitmq_url: str, tmp_path: Path, dead_letter: bool) -> None:
    queue, dead = unique_queue("stopstall"), unique_queue("stopdead")
    declare_queue(rabbitmq_url, queue)
    declare_queue(rabbitmq_url, dead)
    cloud = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])))
    port = free_port()
    route = f"    dead_letter: {{connection: direct, address: {queue_address(dead)}}}\n" \
        if dead_letter else ""
    bridge = BridgeRun(_config(port, "amqp0-9-1", cloud.url(rabbitmq_url), queue_address(queue),
                               more="shutdown: {drain_timeout: 2}\n", route=route,
                               rabbitmq_url=rabbitmq_url), tmp_path).start()
    try:
        wait_listening(port, bridge)
        conn = _pika(port)
        channel = conn.channel()
        channel.confirm_delivery()
        channel.basic_publish("events", "k", b"warm-up")  # confirmed: the link is up
        cloud.pause()  # RabbitMQ's 1.0 side answers nothing any more
        stalled = _pika(port).channel()
        for _ in range(50):
            stalled.basic_publish("events", "k", BODY)
        bridge.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        closed = _closed_by_bridge(stalled.connection)
        assert _stopped(bridge) == 0
    finally:
        bridge.stop()
        cloud.close()
    assert isinstance(closed, pika.exceptions.ConnectionClosedByBroker), repr(closed)
    assert closed.reply_code == 320
    log = bridge.log()
    stats = route_stats(log, "pub")
    assert stats["received"] == 51 and stats["delivered"] == 1, stats
    assert "will be redelivered" not in log and "redelivers" not in log, log[-3000:]
    errors = [r for r in records(log) if r.get("event") == "publishes_abandoned"]
    if dead_letter:
        assert (stats["dead_lettered"], stats["publishes_abandoned"]) == (50, 0), stats
        assert queue_depth(rabbitmq_url, dead) == 50
        assert not errors, log[-3000:]
    else:
        assert stats["publishes_abandoned"] == 50, stats
        assert [(e["level"], int(e["abandoned"])) for e in errors] == [("error", 50)], \
            log[-3000:]


def _durable_queue(rabbitmq_url: str) -> str:
    """A fresh durable RabbitMQ queue (its address /queue/NAME wants a non-durable one:
    RabbitMQ 3.x refuses every attach to it)."""
    queue = unique_queue("durable")
    setup = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    setup.channel().queue_declare(queue, durable=True)
    setup.close()
    return queue


@pytest.mark.rabbitmq(3)  # the trigger is 3.10's: RabbitMQ 4 attaches /queues/NAME of a durable queue
def test_a_route_whose_link_never_attaches_tells_its_publishers(
        rabbitmq_url: str, tmp_path: Path) -> None:
    queue = _durable_queue(rabbitmq_url)
    port = free_port()
    bridge = BridgeRun(_config(port, "amqp0-9-1", rabbitmq_url, queue_address(queue),
                               route="    attach_timeout: 1\n",
                               more='metrics: {bind: "127.0.0.1:0"}\n'), tmp_path).start()
    try:
        wait_listening(port, bridge)
        conn = _pika(port)
        confirmed = conn.channel()
        confirmed.confirm_delivery()
        nacked: list[BaseException] = []

        def publish() -> None:
            try:
                confirmed.basic_publish("events", "k", b"job")
            except pika.exceptions.NackError as exc:
                nacked.append(exc)

        publisher = threading.Thread(target=publish, daemon=True)
        publisher.start()
        publisher.join(30)  # pika is blocked in basic_publish until the bridge answers
        assert nacked, "the confirm-mode publish got no nack"
        unconfirmed = conn.channel()
        unconfirmed.basic_publish("events", "k", b"job")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
            for _ in range(100):  # each waits for its answer: there comes the close
                unconfirmed.basic_qos(prefetch_count=1)
        assert closed.value.reply_code == 406, closed.value
        assert "inequivalent arg 'durable'" in closed.value.reply_text
        mport = metrics_port(bridge.log)
        status, body = http_get(mport, "/readyz")
        assert status == 503 and body["routes_not_ready"] == ["pub"], body
        assert "inequivalent arg 'durable'" in " ".join(body["waiting_for"]["pub"]), body
        refusals = poll(lambda: [r for r in records(bridge.log())
                                 if r.get("event") == "link_lost" and r.get("route") == "pub"],
                        lambda found: len(found) >= 3, 30, "three refused attaches")
        assert [r["level"] for r in refusals][:3] == ["warning", "info", "info"], refusals
        assert "inequivalent arg 'durable'" in refusals[0]["error"]
    finally:
        bridge.stop()
    log = bridge.log()
    stats = route_stats(log, "pub")
    assert stats["received"] == 2 and stats["publishes_abandoned"] == 1, stats
    abandoned = [r for r in records(log) if r.get("event") == "publishes_abandoned"]
    assert [r["level"] for r in abandoned] == ["error"], log[-3000:]


@pytest.mark.rabbitmq(3)  # the trigger is 3.10's: RabbitMQ 4 attaches /queues/NAME of a durable queue
def test_a_010_publisher_to_a_route_whose_link_never_attaches_gets_an_exception(
        rabbitmq_url: str, tmp_path: Path) -> None:
    port = free_port()
    config = _config(port, "amqp0-10", rabbitmq_url, queue_address(_durable_queue(rabbitmq_url)),
                     route="    attach_timeout: 1\n")
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)
        client = BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=30)
        with pytest.raises(ClientError) as refused:
            client.publish(b"job", exchange="events", routing_key="k")  # waits for completion
        client.close()
    event = refused.value.event
    assert isinstance(event, ExecutionExceptionReceived), repr(event)
    assert event.error_code == ErrorCode.PRECONDITION_FAILED, event
    assert "inequivalent arg 'durable'" in event.description
