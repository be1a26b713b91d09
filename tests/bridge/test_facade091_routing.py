"""Routing keys, headers and the redelivered flag as an unchanged 0-9-1 application sees
them through the bridge, against RabbitMQ's AMQP 1.0.

- A façade publish route and a 0-9-1 route to a key-less exchange address
  (``/exchange/X``, which RabbitMQ routes by the 1.0 subject) route by the 0-9-1
  routing key, for a topic and a direct exchange (docs/mapping.md, "0-9-1 routing
  key ⇄ subject"); read with pika straight from RabbitMQ.
- A façade consumer sees exactly the headers its publisher sent, and no headers for
  a 1.0 message without application properties.
- A message a ``basic.get`` finds after an earlier get found nothing is not
  redelivered (docs/semantics.md).

One ``amqp-bridge run`` serves the module.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pika
import pika.exceptions
import pytest
from proton import Message

from tests.bridge.test_routes091 import pika_channel, pika_get_all
from tests.support.bridge import BridgeRun, config091, free_port, wait_listening
from tests.support.facade091 import PASSWORD, USER
from tests.support.metrics import poll
from tests.support.rabbitmq import send_messages, version_of


@dataclass
class Setup:
    """The running bridge and RabbitMQ's exchanges and queues behind it."""

    rabbitmq_url: str
    port: int
    names: dict[str, str]
    proc: BridgeRun

    def connect(self) -> pika.BlockingConnection:
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", self.port, credentials=pika.PlainCredentials(USER, PASSWORD),
            connection_attempts=1, heartbeat=0))


#: RabbitMQ exchange: (type, {queue role: binding key})
EXCHANGES = {
    "topic": ("topic", {"errors": "*.error", "all": "#"}),
    "direct": ("direct", {"a": "a", "b": "b"}),
    "rtopic": ("topic", {"rerrors": "*.error", "rall": "#"}),
    "in": ("topic", {"source": "#"}),
}
PLAIN_QUEUES = ("headers", "get")


@pytest.fixture(scope="module")
def setup(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tag = uuid.uuid4().hex[:12]
    names = {role: f"test.frouting.{tag}.{role}" for role in EXCHANGES}
    for queues in (bindings for _, bindings in EXCHANGES.values()):
        names.update({role: f"test.frouting.{tag}.{role}" for role in queues})
    names.update({role: f"test.frouting.{tag}.{role}" for role in PLAIN_QUEUES})
    with pika_channel(rabbitmq_url) as ch:
        for exchange, (kind, bindings) in EXCHANGES.items():
            ch.exchange_declare(names[exchange], kind, auto_delete=False)
            for queue, key in bindings.items():
                ch.queue_declare(names[queue], arguments={"x-expires": 600_000})
                ch.queue_bind(names[queue], names[exchange], key)
        for queue in PLAIN_QUEUES:
            ch.queue_declare(names[queue], arguments={"x-expires": 600_000})
    port = free_port()
    routes = f"""
  - name: topic-out
    from: {{listener: legacy, exchange: logs}}
    to:   {{connection: cloud, address: /exchange/{names["topic"]}}}
  - name: direct-out
    from: {{listener: legacy, exchange: jobs}}
    to:   {{connection: cloud, address: /exchange/{names["direct"]}}}
  - name: r091
    from: {{connection: rabbit, queue: {names["source"]}}}
    to:   {{connection: cloud, address: /exchange/{names["rtopic"]}}}
  - name: headers-out
    from: {{listener: legacy, exchange: hx}}
    to:   {{connection: cloud, address: /amq/queue/{names["headers"]}}}
  - name: headers-in
    from: {{connection: cloud, address: /amq/queue/{names["headers"]}}}
    to:   {{listener: legacy, queue: headers.q}}
  - name: get-in
    from: {{connection: cloud, address: /amq/queue/{names["get"]}}}
    to:   {{listener: legacy, queue: get.q}}"""
    more = f"""listeners:
  legacy: {{protocol: amqp0-9-1, bind: "127.0.0.1:{port}", users: {{{USER}: "{PASSWORD}"}}}}
metrics: {{bind: "127.0.0.1:0"}}
"""
    proc = BridgeRun(config091(rabbitmq_url, routes, more=more),
                     tmp_path_factory.mktemp("facade091-routing")).start()
    try:
        wait_listening(port, proc)
        yield Setup(rabbitmq_url, port, names, proc)
    finally:
        rc = proc.stop()
        with pika_channel(rabbitmq_url) as ch:
            for exchange in EXCHANGES:
                ch.exchange_delete(names[exchange])
    assert rc == 0, proc.log()


def publish(setup: Setup, exchange: str, keys: list[str]) -> None:
    """Publish one message per key to façade exchange ``exchange``, each confirmed."""
    with setup.connect() as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        for i, key in enumerate(keys):
            ch.basic_publish(exchange, key, f"{i} {key}".encode())


def bodies(setup: Setup, role: str, count: int) -> list[bytes]:
    """The ``count`` messages in RabbitMQ queue ``role`` (read with pika), and then none."""
    got = [body for _, _, body in pika_get_all(setup.rabbitmq_url, setup.names[role], count)]
    with pika_channel(setup.rabbitmq_url) as ch:
        assert ch.basic_get(setup.names[role], auto_ack=True) == (None, None, None)
    return got


# --- routing keys --------------------------------------------------------------------------


def test_a_facade_publish_routes_by_key_through_a_topic_exchange(setup: Setup) -> None:
    publish(setup, "logs", ["app.error", "app.info", "db.error", "db.debug.x"])
    assert bodies(setup, "errors", 2) == [b"0 app.error", b"2 db.error"]
    assert bodies(setup, "all", 4) == [b"0 app.error", b"1 app.info", b"2 db.error",
                                       b"3 db.debug.x"]


def test_a_facade_publish_routes_by_key_through_a_direct_exchange(setup: Setup) -> None:
    """A key no queue is bound to: RabbitMQ 3.10 accepts the message and drops it (the
    publisher's confirm is an ack), RabbitMQ 4 releases it, and the bridge nacks it after
    three releases (docs/semantics.md, "RabbitMQ 4")."""
    publish(setup, "jobs", ["a", "b", "a"])
    if version_of(setup.rabbitmq_url) == 3:
        publish(setup, "jobs", ["nobody"])
    else:
        with pytest.raises(pika.exceptions.NackError):
            publish(setup, "jobs", ["nobody"])
    assert bodies(setup, "a", 2) == [b"0 a", b"2 a"]
    assert bodies(setup, "b", 1) == [b"1 b"]


def test_a_091_route_routes_by_key_through_a_topic_exchange(setup: Setup) -> None:
    with pika_channel(setup.rabbitmq_url) as ch:
        ch.confirm_delivery()
        for i, key in enumerate(["app.error", "app.info", "db.error"]):
            ch.basic_publish(setup.names["in"], key, f"{i} {key}".encode())
    assert bodies(setup, "rall", 3) == [b"0 app.error", b"1 app.info", b"2 db.error"]
    assert bodies(setup, "rerrors", 2) == [b"0 app.error", b"2 db.error"]


# --- headers -------------------------------------------------------------------------------


def test_a_facade_consumer_sees_exactly_the_headers_sent(setup: Setup) -> None:
    sent: list[dict[str, Any] | None] = [{"seq": 1, "kind": "order", "flag": True}, None, {}]
    with setup.connect() as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        for i, headers in enumerate(sent):
            ch.basic_publish("hx", "any", f"m{i}".encode(), pika.BasicProperties(headers=headers))
    # a 1.0 client's message with a default header, with and without application properties
    send_messages(setup.rabbitmq_url, f"/amq/queue/{setup.names['headers']}",
                  [Message(body=b"p0", inferred=True, properties={"region": "emea"}),
                   Message(body=b"p1", inferred=True)])
    got: list[tuple[Any, Any, bytes]] = []
    with setup.connect() as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=10)
        ch.basic_consume("headers.q", lambda c, m, p, b: (got.append((m, p, b)),
                                                           c.basic_ack(m.delivery_tag)))
        while len(got) < 5:
            conn.process_data_events(time_limit=20)
    assert [body for _, _, body in got] == [b"m0", b"m1", b"m2", b"p0", b"p1"]
    assert [props.headers for _, props, _ in got] == [*sent, {"region": "emea"}, None]
    assert not any(method.redelivered for method, _, _ in got)


# --- redelivered -----------------------------------------------------------------------------


def test_a_fresh_message_after_an_empty_get_is_not_redelivered(setup: Setup) -> None:
    """After a get-empty the get link's credit is drained (RabbitMQ 4 answers; 3.10 may
    still send a message for it, which the bridge gives back, marked redelivered there):
    either way the next get finds the next message fresh, as RabbitMQ's own basic.get
    would."""
    with setup.connect() as conn:
        ch = conn.channel()
        assert ch.basic_get("get.q") == (None, None, None)
        with pika_channel(setup.rabbitmq_url) as rch:
            rch.confirm_delivery()
            rch.basic_publish("", setup.names["get"], b"fresh")
        method, _, body = poll(lambda: ch.basic_get("get.q"), lambda r: r[0] is not None, 20,
                               "the fresh message")
        assert body == b"fresh" and method.redelivered is False
        ch.basic_ack(method.delivery_tag)
        # a message a client did have stays redelivered
        with pika_channel(setup.rabbitmq_url) as rch:
            rch.basic_publish("", setup.names["get"], b"seen")
        method, _, body = poll(lambda: ch.basic_get("get.q"), lambda r: r[0] is not None, 20,
                               "the second message")
        assert body == b"seen" and method.redelivered is False
        ch.basic_nack(method.delivery_tag, requeue=True)
        method, _, body = poll(lambda: ch.basic_get("get.q"), lambda r: r[0] is not None, 20,
                               "the requeued message")
        assert body == b"seen" and method.redelivered is True
        ch.basic_ack(method.delivery_tag)
