"""The 0-9-1 façade's topology mode in front of RabbitMQ 3.10 (docs/topology.md,
"RabbitMQ 3.x"): declares over the configured 0-9-1 connection, publishes on a 1.0 sender
per exchange (bridge/facade/amqp091/address_publish.py) — what RabbitMQ 3.10's AMQP 1.0 makes
of a missing or deleted exchange (the channel closed with 404, as RabbitMQ closes it), of
an unroutable message (accepted: confirmed, no basic.return), the senders' bound (idle
ones closed, the least recently used one closed past max_publish_links) — and a
client's exclusive queue, declared non-exclusive at RabbitMQ and deleted when it leaves.

One ``amqp-bridge run`` serves the module.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pika
import pytest
from pamqp import commands as C

from amqp091.framing import encode_method
from tests.support.bridge import BridgeRun, free_port, wait_for, wait_listening
from tests.support.facade091 import PASSWORD, USER, RawClient, publish_frames

pytestmark = pytest.mark.rabbitmq(3)


class Running:
    def __init__(self, bridge: BridgeRun, port: int, rabbitmq_url: str) -> None:
        self.bridge = bridge
        self.port = port
        self.rabbitmq_url = rabbitmq_url

    def connect(self) -> pika.BlockingConnection:
        return pika.BlockingConnection(pika.URLParameters(
            f"amqp://{USER}:{PASSWORD}@127.0.0.1:{self.port}/%2F"))

    def broker(self) -> pika.BlockingConnection:
        """A connection straight to RabbitMQ (to see what the façade's clients did)."""
        return pika.BlockingConnection(pika.URLParameters(self.rabbitmq_url + "/%2F"))


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Running]:
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
  rabbit: {{protocol: amqp0-9-1, url: "{rabbitmq_url}"}}
listeners:
  legacy:
    protocol: amqp0-9-1
    bind: "127.0.0.1:{port}"
    users: {{{USER}: "{PASSWORD}"}}
    topology: {{connection: cloud, broker: rabbitmq3, declare_via: rabbit,
                max_publish_links: 2, publish_link_idle_timeout: 1}}
"""
    bridge = BridgeRun(config, tmp_path_factory.mktemp("topology3")).start()
    try:
        wait_listening(port, bridge)
        yield Running(bridge, port, rabbitmq_url)
    finally:
        rc = bridge.stop()
    assert rc == 0, bridge.log()
    assert "level=error" not in bridge.log(), bridge.log()


def name(kind: str) -> str:
    return f"test.topology3.{kind}.{uuid.uuid4().hex[:8]}"


def depth(facade: Running, queue: str) -> int:
    conn = facade.broker()
    try:
        return int(conn.channel().queue_declare(queue, passive=True).method.message_count)
    finally:
        conn.close()


def test_routed_by_rabbitmq_unroutable_ones_confirmed_without_return(
        facade: Running) -> None:
    """RabbitMQ 3.10 accepts (and drops) a message routed to no queue: the publisher's
    confirm is basic.ack, a mandatory one gets no basic.return (documented loss)."""
    exchange, queue = name("x"), name("q")
    conn = facade.connect()
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare(exchange, "topic")
        ch.queue_declare(queue)
        ch.queue_bind(queue, exchange, "a.*")
        returned: list[bytes] = []
        ch.add_on_return_callback(lambda c, m, p, b: returned.append(b))
        for key in ("a.b", "a.c/d", "b.a"):
            ch.basic_publish(exchange, key, key.encode(), mandatory=True)  # all acked
        conn.process_data_events(0.3)
        assert returned == []
        assert depth(facade, queue) == 2
        direct = facade.broker()  # (a basic.get through the façade would leave a 1.0
        try:                      # consumer that RabbitMQ 3.10 cannot see deleted)
            got = [direct.channel().basic_get(queue, auto_ack=True) for _ in range(2)]
        finally:
            direct.close()
        assert [(m.routing_key, body) for m, _, body in got] == [
            ("a.b", b"a.b"), ("a.c/d", b"a.c/d")]
        ch.queue_delete(queue)
        ch.exchange_delete(exchange)
    finally:
        conn.close()


def test_a_missing_or_deleted_exchange_closes_the_channel_with_404(facade: Running) -> None:
    exchange = name("x")
    conn = facade.connect()
    try:
        for confirms in (True, False):
            ch = conn.channel()
            if confirms:
                ch.confirm_delivery()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                ch.basic_publish(exchange, "k", b"lost")
                for _ in range(100):  # (without confirms: wait for the close)
                    ch._process_data_events(0.1)  # raises the broker's close
            assert (info.value.reply_code, info.value.reply_text) == (
                404, f"NOT_FOUND - no exchange '{exchange}' in vhost '/'")
        ch = conn.channel()
        ch.confirm_delivery()
        ch.exchange_declare(exchange, "fanout")
        ch.basic_publish(exchange, "k", b"fine")  # the sender attaches now
        broker = facade.broker()
        broker.channel().exchange_delete(exchange)
        broker.close()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_publish(exchange, "k", b"after the delete")
        assert info.value.reply_code == 404
        ch = conn.channel()  # the connection lives on
        ch.exchange_declare(exchange, "fanout", passive=False)
        ch.confirm_delivery()
        ch.basic_publish(exchange, "k", b"declared again")
        ch.exchange_delete(exchange)
    finally:
        conn.close()


def test_idle_senders_close_and_the_least_recently_used_goes_past_the_cap(
        facade: Running) -> None:
    """max_publish_links 2: a third exchange's sender closes the least recently used
    idle one; idle ones close after publish_link_idle_timeout (1 s)."""
    exchanges = [name(f"x{i}") for i in range(3)]
    conn = facade.connect()
    try:
        ch = conn.channel()
        ch.confirm_delivery()
        queue = ch.queue_declare(name("q")).method.queue
        for exchange in exchanges:
            ch.exchange_declare(exchange, "fanout")
            ch.queue_bind(queue, exchange)
        for exchange in [*exchanges, exchanges[0]]:
            ch.basic_publish(exchange, "", exchange.encode())
        assert depth(facade, queue) == 4
        log = facade.bridge.log
        closed = f"closing the idle sender to '/exchange/{exchanges[0]}'"
        wait_for(lambda: closed in log(), 20, "x0's sender closed", facade.bridge)
        for exchange in exchanges[1:]:
            wait_for(lambda e=exchange: f"closing the idle sender to '/exchange/{e}'" in log(),
                     20, f"{exchange}'s sender closed", facade.bridge)
        ch.basic_publish(exchanges[2], "", b"again")  # a fresh sender
        assert depth(facade, queue) == 5
        ch.queue_delete(queue)
        for exchange in exchanges:
            ch.exchange_delete(exchange)
    finally:
        conn.close()


def test_an_exclusive_queue_is_rabbitmqs_and_goes_with_its_connection(
        facade: Running) -> None:
    """Declared non-exclusive (with x-expires) over the 0-9-1 connection, so that the
    façade's 1.0 consumers may consume it and anyone may publish to it; other clients
    of the listener get 405; deleted when its connection ends."""
    owner, other = facade.connect(), facade.connect()
    try:
        och = owner.channel()
        queue = och.queue_declare("", exclusive=True).method.queue
        assert queue.startswith("amq.gen-")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            other.channel().basic_consume(queue, lambda *a: None)
        assert info.value.reply_code == 405
        direct = facade.broker()  # a reply from a connection straight to RabbitMQ
        direct.channel().basic_publish("", queue, b"reply")
        direct.close()
        got: list[bytes] = []
        och.basic_consume(queue, lambda c, m, p, b: got.append(b), auto_ack=True)
        while not got:
            owner.process_data_events(0.2)
        assert got == [b"reply"]
    finally:
        owner.close()
        other.close()
    wait_for(lambda: not _exists(facade, queue), 20, "the exclusive queue deleted",
             facade.bridge)


def _exists(facade: Running, queue: str) -> bool:
    try:
        depth(facade, queue)
    except pika.exceptions.ChannelClosedByBroker:
        return False
    return True


def test_a_requester_straight_on_rabbitmq_gets_the_reply_of_a_responder_through_the_facade(
        facade: Running) -> None:
    """RabbitMQ 3.x shows a 1.0 consumer the reply_to Q of a 0-9-1 publish as '/queue/Q';
    the façade's 0-9-1 consumer sees Q again (as RabbitMQ's own 0-9-1 consumers would), so
    its reply to the default exchange reaches the requester's queue."""
    requests = name("requests")
    direct = facade.broker()
    responder = facade.connect()
    try:
        dch = direct.channel()
        dch.queue_declare(requests)
        reply_queue = dch.queue_declare("", exclusive=True).method.queue
        dch.basic_publish("", requests, b"ping", pika.BasicProperties(
            reply_to=reply_queue, correlation_id="c1"))
        rch = responder.channel()
        rch.confirm_delivery()
        seen: list[str] = []

        def answer(c: object, m: object, p: pika.BasicProperties, b: bytes) -> None:
            seen.append(p.reply_to)
            rch.basic_publish("", p.reply_to, b"pong",
                              pika.BasicProperties(correlation_id=p.correlation_id))

        rch.basic_consume(requests, answer, auto_ack=True)
        while not seen:
            responder.process_data_events(0.2)
        assert seen == [reply_queue]
        for _ in range(100):
            method, props, body = dch.basic_get(reply_queue, auto_ack=True)
            if method is not None:
                break
            direct.sleep(0.1)
        assert (body, props.correlation_id) == (b"pong", "c1")
        rch.basic_cancel(rch.consumer_tags[0])
    finally:
        responder.close()
        wait_for(lambda: _consumers(direct, requests) == 0, 20,  # (RabbitMQ 3.10 cannot
                 "the façade's consumer gone", facade.bridge)   # delete under it)
        direct.channel().queue_delete(requests)
        direct.close()


def _consumers(conn: pika.BlockingConnection, queue: str) -> int:
    return int(conn.channel().queue_declare(queue, passive=True).method.consumer_count)


def test_past_the_cap_with_no_idle_sender_a_publish_is_nacked(facade: Running) -> None:
    """max_publish_links 2: three publishes to three new exchanges read at once — the
    first two senders are still attaching (not idle) when the third comes: it is
    refused with basic.nack (confirm mode), the others are confirmed."""
    exchanges = [name(f"cap{i}") for i in range(3)]
    direct = facade.broker()
    client = RawClient(facade.port)
    try:
        ch = direct.channel()
        for exchange in exchanges:
            ch.exchange_declare(exchange, "fanout")
        client.login()
        client.open_channel(1)
        client.sock.sendall(encode_method(1, C.Confirm.Select()))
        assert isinstance(client.read(), C.Confirm.SelectOk)
        client.sock.sendall(b"".join(publish_frames(1, exchange, "", b"m")
                                     for exchange in exchanges))
        answers = {}
        while len(answers) < 3:
            frame = client.read()
            if isinstance(frame, C.Basic.Ack | C.Basic.Nack):
                first = 1 if frame.multiple else frame.delivery_tag
                for tag in range(first, frame.delivery_tag + 1):
                    answers.setdefault(tag, type(frame).__name__)
        assert answers == {1: "Ack", 2: "Ack", 3: "Nack"}
        assert "already publishes to 2 AMQP 1.0 addresses" in facade.bridge.log()
    finally:
        client.sock.close()
        for exchange in exchanges:
            ch.exchange_delete(exchange)
        direct.close()
