"""The 0-9-1 façade's topology mode against RabbitMQ 4 (docs/topology.md): what pika
declares, binds, purges and deletes through the façade is RabbitMQ's (checked on
RabbitMQ itself), publishes are routed by RabbitMQ (unroutable: returned then confirmed;
no such exchange: 404), exclusive queues are their connection's, direct reply-to, the
reply-to mapping for native AMQP 1.0 peers, a connection's methods in order while a
declare is pending, a configured route keeping its name, and a reply through a second
bridge process.

One ``amqp-bridge run`` serves the module (a topology-mode listener with one route).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
from pamqp import commands as C
from proton import Message

from amqp091.framing import encode_method
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.facade091 import PASSWORD, USER, RawClient, facade091, publish_frames
from tests.support.facade091 import Facade091 as Facade
from tests.support.logs import records
from tests.support.metrics import counted, metrics_port
from tests.support.rabbitmq import receive_messages, send_messages

pytestmark = pytest.mark.rabbitmq(4)

TOPOLOGY = ", topology: {connection: cloud, broker: rabbitmq4}"
UNROUTABLE = "amqp_bridge_facade_publishes_unroutable_total"


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    def routes(q: dict[str, str], names: dict[str, str]) -> str:
        return f"""
  - name: configured
    from: {{listener: legacy, exchange: test.configured}}
    to:   {{connection: cloud, address: {q["configured"]}}}
  - name: configured-in
    from: {{connection: cloud, address: {q["configured_in"]}}}
    to:   {{listener: legacy, queue: test.configured.in}}
"""
    with facade091(rabbitmq_url, tmp_path_factory.mktemp("topology"),
                   ("configured", "configured_in"),
                   routes, listener=TOPOLOGY,
                   more='metrics: {bind: "127.0.0.1:0"}') as running:
        yield running
    log = running.proc.log()
    assert "level=error" not in log, log


def name(kind: str) -> str:
    return f"test.topology.{kind}.{uuid.uuid4().hex[:8]}"


def broker(facade: Facade) -> pika.BlockingConnection:
    """A connection straight to RabbitMQ (to see what the façade's clients did there)."""
    return pika.BlockingConnection(pika.URLParameters(facade.rabbitmq_url + "/%2F"))


LOCKED = -1
"""What :func:`broker_has_queue` says of another connection's exclusive queue."""


def broker_has_queue(facade: Facade, queue: str) -> int | None:
    """The queue's depth at RabbitMQ, None if it does not exist, :data:`LOCKED` if it is
    another connection's exclusive queue (the bridge's)."""
    conn = broker(facade)
    try:
        return int(conn.channel().queue_declare(queue, passive=True).method.message_count)
    except pika.exceptions.ChannelClosedByBroker as exc:
        assert exc.reply_code in (404, 405), exc
        return None if exc.reply_code == 404 else LOCKED
    finally:
        conn.close()


def test_declares_binds_purges_and_deletes_are_rabbitmqs(facade: Facade) -> None:
    exchange, queue = name("x"), name("q")
    conn = facade.connect()
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare(exchange, "topic")
        assert ch.queue_declare(queue).method.queue == queue
        ch.queue_bind(queue, exchange, "a.*")
        for key in ("a.b", "a.c", "b.a"):  # b.a matches nothing: confirmed all the same
            ch.basic_publish(exchange, key, b"m-" + key.encode())
        assert broker_has_queue(facade, queue) == 2  # RabbitMQ routed them
        ok = ch.queue_declare(queue, passive=True).method  # counts are the broker's
        assert (ok.message_count, ok.consumer_count) == (2, 0)
        assert ch.queue_purge(queue).method.message_count == 2
        assert broker_has_queue(facade, queue) == 0
        ch.queue_unbind(queue, exchange, "a.*")
        ch.basic_publish(exchange, "a.b", b"unbound")
        assert broker_has_queue(facade, queue) == 0
        ch.queue_delete(queue)
        assert broker_has_queue(facade, queue) is None
        ch.exchange_delete(exchange)
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.exchange_declare(exchange, "topic", passive=True)
        assert info.value.reply_code == 404
    finally:
        conn.close()


def test_refusals_are_rabbitmqs_codes(facade: Facade) -> None:
    queue = name("q")
    conn = facade.connect()
    try:
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare(name("missing"), passive=True)
        assert info.value.reply_code == 404
        ch = conn.channel()
        ch.queue_declare(queue, durable=True)
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare(queue, durable=False)  # inequivalent
        assert info.value.reply_code == 406
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_consume(name("missing"), lambda *a: None)
        assert info.value.reply_code == 404
        ch = conn.channel()
        ch.queue_delete(queue)
    finally:
        conn.close()


def test_unroutable_publishes_are_returned_when_mandatory_then_confirmed(
        facade: Facade) -> None:
    """... and each is counted in /metrics and warned of (rate-limited: a WARNING line
    per client address every 10 s; an earlier test's may have been this one's)."""
    exchange = name("x")
    metrics = metrics_port(facade.proc.log)
    before = counted(metrics, UNROUTABLE, listener="legacy")
    conn = facade.connect()
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare(exchange, "direct")
        returned: list[tuple[int, str, bytes]] = []
        ch.add_on_return_callback(lambda c, m, p, b: returned.append(
            (m.reply_code, m.routing_key, b)))
        with pytest.raises(pika.exceptions.UnroutableError):
            ch.basic_publish(exchange, "nobody", b"back to me", mandatory=True)
        ch.basic_publish(exchange, "nobody", b"dropped")  # confirmed, as RabbitMQ does
        ch.basic_publish("", name("no-such-queue"), b"dropped too")
        conn.process_data_events(0.2)
        assert returned == [(312, "nobody", b"back to me")]
        ch.exchange_delete(exchange)
    finally:
        conn.close()
    assert counted(metrics, UNROUTABLE, listener="legacy") == before + 3
    warnings = [r for r in records(facade.proc.log())
                if r.get("event") == "publish_unroutable" and r.get("level") == "warning"]
    assert warnings and warnings[0]["listener"] == "legacy", facade.proc.log()
    assert "no queue at the AMQP 1.0 broker of exchange" in warnings[0]["msg"]


def test_a_publish_to_a_missing_exchange_closes_the_channel_with_404(facade: Facade) -> None:
    conn = facade.connect()
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        missing = name("missing")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_publish(missing, "k", b"lost")
        assert info.value.reply_code == 404
        # RabbitMQ's own words, without the 1.0 condition's name before them
        assert info.value.reply_text == f"NOT_FOUND - no exchange '{missing}' in vhost '/'"
    finally:
        conn.close()


def test_an_exclusive_queue_is_its_connections_and_goes_with_it(facade: Facade) -> None:
    owner, other = facade.connect(), facade.connect()
    try:
        och = owner.channel()
        queue = och.queue_declare("", exclusive=True).method.queue
        assert queue  # server-named (by the backend: RabbitMQ 4 names no queue itself)
        got: list[bytes] = []
        och.basic_consume(queue, lambda c, m, p, b: got.append(b), auto_ack=True)
        xch = other.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            xch.queue_declare(queue, passive=True)
        assert info.value.reply_code == 405
        xch = other.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            xch.basic_consume(queue, lambda *a: None)
        assert info.value.reply_code == 405
        xch = other.channel()  # but another connection's reply reaches it
        xch.basic_publish("", queue, b"reply")
        native = broker(facade)  # and so does one straight on RabbitMQ
        try:
            native.channel().basic_publish("", queue, b"native reply")
        finally:
            native.close()
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            owner.process_data_events(0.1)
        assert sorted(got) == [b"native reply", b"reply"]
        assert broker_has_queue(facade, queue) == LOCKED  # exclusive at RabbitMQ too
    finally:
        owner.close()
        other.close()
    deadline = time.monotonic() + 10
    while broker_has_queue(facade, queue) is not None:
        assert time.monotonic() < deadline, f"{queue} outlived its connection"
        time.sleep(0.1)


def test_direct_reply_to(facade: Facade) -> None:
    requests = name("requests")
    conn = facade.connect()
    try:
        ch = conn.channel()
        ch.basic_publish("", requests, b"nobody consumes the reply-to",
                         pika.BasicProperties(reply_to="amq.rabbitmq.reply-to"))
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare(requests, passive=True)  # (the close comes first)
        assert info.value.reply_code == 406
        assert "fast reply consumer does not exist" in info.value.reply_text
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_consume("amq.rabbitmq.reply-to", lambda *a: None, auto_ack=False)
        assert info.value.reply_code == 406
        ch = conn.channel()
        ch.queue_declare(requests, auto_delete=True)
        replies: list[tuple[str, bytes]] = []
        ch.basic_consume("amq.rabbitmq.reply-to",
                         lambda c, m, p, b: replies.append((p.correlation_id, b)),
                         auto_ack=True)
        ch.basic_publish("", requests, b"question", pika.BasicProperties(
            reply_to="amq.rabbitmq.reply-to", correlation_id="c-1"))
        # a responder straight on RabbitMQ answers to the reply_to it got
        native = broker(facade)
        try:
            nch = native.channel()
            deadline = time.monotonic() + 10
            while (got := nch.basic_get(requests, auto_ack=True))[0] is None:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            _, props, body = got
            assert body == b"question"  # and reply_to the name of the channel's queue:
            assert props.reply_to and props.reply_to != "amq.rabbitmq.reply-to" \
                and not props.reply_to.startswith("/"), props.reply_to
            nch.basic_publish("", props.reply_to, b"answer",
                              pika.BasicProperties(correlation_id=props.correlation_id))
        finally:
            native.close()
        deadline = time.monotonic() + 10
        while not replies and time.monotonic() < deadline:
            conn.process_data_events(0.1)
        assert replies == [("c-1", b"answer")]
    finally:
        conn.close()


def test_reply_to_between_0_9_1_and_native_amqp_1_0_peers(facade: Facade) -> None:
    queue = name("q")
    conn = facade.connect()
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare(queue)
        ch.basic_publish("", queue, b"from 0-9-1", pika.BasicProperties(reply_to="my.replies"))
        native = receive_messages(facade.rabbitmq_url, f"/queues/{queue}", 1)[0].message
        assert native.reply_to == "my.replies"  # unchanged, as RabbitMQ carries it
        # a native 1.0 request's reply-to address is a queue name on 0-9-1, and a façade
        # publish's own "to" does not show on a 0-9-1 consumer
        send_messages(facade.rabbitmq_url, f"/queues/{queue}",
                      [Message(body=b"from 1.0", reply_to="/queues/their.replies",
                               inferred=True)])
        ch.basic_publish("", queue, b"from 0-9-1 again")
        seen = []
        for _ in range(2):
            deadline = time.monotonic() + 10
            while (got := ch.basic_get(queue, auto_ack=True))[0] is None:
                assert time.monotonic() < deadline
            seen.append((got[2], got[1].reply_to, got[1].headers or {}))
        assert [(body, reply_to) for body, reply_to, _ in seen] == [
            (b"from 1.0", "their.replies"), (b"from 0-9-1 again", None)]
        assert seen[1][2] == {}  # no x-amqp-1.0.to: it is the exchange and key delivered
        ch.queue_delete(queue)
    finally:
        conn.close()


def test_what_follows_a_pending_declare_waits_for_it(facade: Facade) -> None:
    """queue.declare no-wait, then at once a publish into the queue: the publish is
    routed after the declare took effect (a broker executes methods in order)."""
    queue = name("q")
    client = RawClient(facade.port)
    try:
        client.login()
        client.open_channel(1)
        client.sock.sendall(encode_method(1, C.Queue.Declare(queue=queue, nowait=True))
                            + publish_frames(1, "", queue, b"right behind"))
        deadline = time.monotonic() + 10
        while broker_has_queue(facade, queue) != 1:
            assert time.monotonic() < deadline, "the publish went before the declare"
            time.sleep(0.05)
    finally:
        client.sock.close()
    conn = broker(facade)
    try:
        conn.channel().queue_delete(queue)
    finally:
        conn.close()


def test_a_configured_route_keeps_its_name(facade: Facade) -> None:
    """test.configured is a route's exchange: its publishes go to the route's address
    (RabbitMQ has no such exchange) and its declare is the façade's."""
    conn = facade.connect()
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare("test.configured", "direct", passive=True)
        ch.basic_publish("test.configured", "any", b"routed by the route")
    finally:
        conn.close()
    got = receive_messages(facade.rabbitmq_url, facade.address("configured"), 1)
    assert got[0].message.body == b"routed by the route"


def test_a_configured_queue_keeps_its_name(facade: Facade) -> None:
    """test.configured.in is a route's queue: a consumer of it gets what the route's 1.0
    address holds (RabbitMQ has no such queue), and its declare is the façade's."""
    send_messages(facade.rabbitmq_url, facade.address("configured_in"),
                  [Message(body=b"from the route's address", inferred=True)])
    conn = facade.connect()
    try:
        ch = conn.channel()
        assert ch.queue_declare("test.configured.in", passive=True).method.consumer_count == 0
        deadline = time.monotonic() + 10
        while (got := ch.basic_get("test.configured.in", auto_ack=True))[0] is None:
            assert time.monotonic() < deadline
        assert got[2] == b"from the route's address"
    finally:
        conn.close()
    assert broker_has_queue(facade, "test.configured.in") is None




def test_a_reply_through_a_second_bridge_reaches_a_temporary_queue(
        facade: Facade, tmp_path: Path) -> None:
    """Another ``amqp-bridge run`` with the same configuration (its own port): a reply
    published through it reaches an exclusive queue a client of the first declared."""
    port = free_port()
    config = facade.proc.config_path.read_text().replace(f":{facade.port}\"", f":{port}\"")
    second = BridgeRun(config, tmp_path, "second").start()
    owner = facade.connect()
    try:
        wait_listening(port, second)
        och = owner.channel()
        queue = och.queue_declare("", exclusive=True).method.queue
        got: list[bytes] = []
        och.basic_consume(queue, lambda c, m, p, b: got.append(b), auto_ack=True)
        other = pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", port, credentials=pika.PlainCredentials(USER, PASSWORD)))
        try:
            xch = other.channel()
            xch.confirm_delivery()
            xch.basic_publish("", queue, b"via the second bridge", mandatory=True)
        finally:
            other.close()
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            owner.process_data_events(0.1)
        assert got == [b"via the second bridge"]
    finally:
        owner.close()
        assert second.stop() == 0, second.log()


def test_a_message_from_an_exchange_0_9_1_cannot_name_is_rejected_not_retried(
        facade: Facade) -> None:
    """An exchange made at RabbitMQ by another client may have a name no 0-9-1 frame of
    the façade can carry (pamqp's rule): a message published through it cannot be
    delivered to a façade consumer, so it is rejected (a WARNING line, the mapping-error
    count) rather than given back and retried for ever, and the next message comes."""
    exchange, queue = f"test.topology.é.{uuid.uuid4().hex[:8]}", name("uncarried")
    metrics = metrics_port(facade.proc.log)
    direct = broker(facade)
    try:
        dch = direct.channel()
        dch.exchange_declare(exchange, "direct")
        dch.queue_declare(queue)
        dch.queue_bind(queue, exchange, "k")
        dch.basic_publish(exchange, "k", b"from a name 0-9-1 cannot say")
        dch.basic_publish("", queue, b"fine")
        conn = facade.connect()
        try:
            got: list[bytes] = []
            conn.channel().basic_consume(queue, lambda _c, _m, _p, body: got.append(body),
                                         auto_ack=True)
            deadline = time.monotonic() + 30
            while not got and time.monotonic() < deadline:
                conn.process_data_events(time_limit=0.2)
            conn.process_data_events(time_limit=0.5)  # (nothing more may come)
            assert got == [b"fine"]
            # (the queue's route is made on demand, and goes with its consumer)
            assert counted(metrics, "amqp_bridge_mapping_errors_total",
                           route=f"legacy.queue.{queue}") == 1
        finally:
            conn.close()
        assert broker_has_queue(facade, queue) == 0  # rejected: RabbitMQ dropped it
        dch.queue_delete(queue)
        dch.exchange_delete(exchange)
    finally:
        direct.close()
    rejected = [r for r in records(facade.proc.log()) if r.get("event") == "message_rejected"
                and "cannot be carried in an AMQP 0-9-1 basic.deliver" in r.get("msg", "")]
    assert rejected, facade.proc.log()[-3000:]
