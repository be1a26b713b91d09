"""qpidd's own AMQP 1.0 side as the bridge's 1.0 broker — a second, independent AMQP 1.0
implementation beside RabbitMQ, addressed by plain queue names: routes between RabbitMQ's
AMQP 0-9-1 and qpidd's 1.0 both ways (CloudEvents on one), and the 0-10 façade with
qpid.messaging applications in front of qpidd's 1.0.

qpidd and qpid-python come from ``../shared/peers/``. One qpidd and one
``amqp-bridge run`` serve the module.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pika
import pytest
from cloudevents.core.bindings import amqp as ce_amqp
from cloudevents.core.formats.json import JSONFormat
from proton import Message

from mappings.message import AmqpMessage
from tests.interop.peers import Qpidd, import_qpid_messaging
from tests.mappings.sdk import to_sdk
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import receive_messages, send_messages, unique_queue

import_qpid_messaging()
from qpid.messaging import Connection  # noqa: E402
from qpid.messaging import Message as QpidMessage  # noqa: E402

USER, PASSWORD = "app", "s3cret"


@dataclass
class Setup:
    qpidd: Qpidd
    bridge: BridgeRun
    rabbitmq_url: str
    facade_port: int
    names: dict[str, str]  # role -> queue name (at qpidd or RabbitMQ, by role)

    def qpidd_1_0(self) -> str:
        return f"amqp://127.0.0.1:{self.qpidd.port}"


@pytest.fixture(scope="module")
def setup(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("interop-qpidd-1-0")
    qpidd = Qpidd(tmp / "qpidd").start()
    token = uuid.uuid4().hex[:12]
    names = {role: f"interop.{role}.{token}" for role in
             ("from-rabbit", "to-rabbit", "facade-out", "facade-in")}
    names["rabbit-src"] = unique_queue("interop-src")
    names["rabbit-dst"] = unique_queue("interop-dst")
    connection = Connection(qpidd.address)
    connection.open()
    try:  # the queues at qpidd (a plain 1.0 broker declares nothing for an address)
        session = connection.session()
        for role in ("from-rabbit", "to-rabbit", "facade-out", "facade-in"):
            session.sender(f"{names[role]}; {{create: always}}").close()
    finally:
        connection.close()
    rabbit = pika.BlockingConnection(pika.URLParameters(rabbitmq_url + "/%2F"))
    try:
        ch = rabbit.channel()
        ch.queue_declare(names["rabbit-src"], durable=True)
        ch.queue_declare(names["rabbit-dst"], durable=True)
        ch.queue_bind(names["rabbit-dst"], "amq.direct", names["rabbit-dst"])
    finally:
        rabbit.close()
    port = free_port()
    config = f"""
connections:
  rabbit:
    protocol: amqp0-9-1
    url: "{rabbitmq_url}/%2F"
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
  qpidd:
    protocol: amqp1.0
    url: "amqp://127.0.0.1:{qpidd.port}"
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
listeners:
  legacy: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", users: {{{USER}: "{PASSWORD}"}}}}
routes:
  - name: from-rabbit
    from: {{connection: rabbit, queue: {names["rabbit-src"]}}}
    to:   {{connection: qpidd, address: {names["from-rabbit"]}}}
    cloudevents: {{mode: binary, type: com.example.order, source: /rabbit/orders}}
  - name: to-rabbit
    from: {{connection: qpidd, address: {names["to-rabbit"]}}}
    to:   {{connection: rabbit, exchange: amq.direct, routing_key: {names["rabbit-dst"]}}}
  - name: facade-out
    from: {{listener: legacy, exchange: orders}}
    to:   {{connection: qpidd, address: {names["facade-out"]}}}
  - name: facade-in
    from: {{connection: qpidd, address: {names["facade-in"]}}}
    to:   {{listener: legacy, queue: jobs}}
"""
    bridge = BridgeRun(config, tmp).start()
    try:
        wait_listening(port, bridge)
        yield Setup(qpidd, bridge, rabbitmq_url, port, names)
    finally:
        rc = bridge.stop()
        qpidd.stop()
    assert rc == 0, bridge.log()


def test_rabbitmq_0_9_1_to_qpidd_1_0_as_cloudevents(setup: Setup) -> None:
    rabbit = pika.BlockingConnection(pika.URLParameters(setup.rabbitmq_url + "/%2F"))
    try:
        ch = rabbit.channel()
        ch.confirm_delivery()
        for i in range(100):
            ch.basic_publish("", setup.names["rabbit-src"], f'{{"order": {i}}}'.encode(),
                             pika.BasicProperties(content_type="application/json",
                                                  message_id=f"o-{i}", headers={"n": i}))
    finally:
        rabbit.close()
    received = receive_messages(setup.qpidd_1_0(), setup.names["from-rabbit"], 100,
                                timeout=60)
    # the cloudevents SDK reads what qpidd delivered
    events = [ce_amqp.from_amqp(to_sdk(AmqpMessage.decode(r.raw)), JSONFormat())
              for r in received]
    assert [e.get_id() for e in events] == [f"o-{i}" for i in range(100)]
    assert {e.get_type() for e in events} == {"com.example.order"}
    assert {e.get_source() for e in events} == {"/rabbit/orders"}
    assert [bytes(r.message.body) for r in received] == [f'{{"order": {i}}}'.encode()
                                                         for i in range(100)]
    assert [r.message.properties["n"] for r in received] == list(range(100))


def test_qpidd_1_0_to_a_rabbitmq_exchange(setup: Setup) -> None:
    send_messages(setup.qpidd_1_0(), setup.names["to-rabbit"],
                  [Message(body=f"invoice {i}".encode(), inferred=True, id=f"i-{i}",
                           properties={"n": i}, durable=True) for i in range(100)],
                  timeout=30)
    rabbit = pika.BlockingConnection(pika.URLParameters(setup.rabbitmq_url + "/%2F"))
    got: list[tuple[Any, bytes]] = []
    try:
        ch = rabbit.channel()
        deadline = time.monotonic() + 60
        while len(got) < 100:
            assert time.monotonic() < deadline, f"{len(got)} of 100 reached RabbitMQ"
            method, props, body = ch.basic_get(setup.names["rabbit-dst"], auto_ack=True)
            if method is None:
                time.sleep(0.05)
                continue
            got.append((props, body))
    finally:
        rabbit.close()
    assert [body for _, body in got] == [f"invoice {i}".encode() for i in range(100)]
    assert [p.message_id for p, _ in got] == [f"i-{i}" for i in range(100)]
    assert [p.headers["n"] for p, _ in got] == list(range(100))


def facade_session(setup: Setup) -> Any:
    connection = Connection(f"127.0.0.1:{setup.facade_port}", username=USER,
                            password=PASSWORD, sasl_mechanisms="PLAIN")
    connection.open()
    return connection


def test_qpid_messaging_through_the_0_10_facade_to_qpidd_1_0_and_back(setup: Setup) -> None:
    connection = facade_session(setup)
    try:
        session = connection.session()
        sender = session.sender("orders/created")
        for i in range(100):
            sender.send(QpidMessage(content=f"order {i}", properties={"n": i}), sync=False)
        session.sync()
    finally:
        connection.close()
    received = receive_messages(setup.qpidd_1_0(), setup.names["facade-out"], 100, timeout=60)
    assert [bytes(r.message.body) for r in received] == [f"order {i}".encode()
                                                         for i in range(100)]
    assert {r.message.subject for r in received} == {"created"}  # the routing key
    assert [r.message.properties["n"] for r in received] == list(range(100))

    send_messages(setup.qpidd_1_0(), setup.names["facade-in"],
                  [Message(body=f"job {i}", properties={"n": i}) for i in range(100)],
                  timeout=30)
    connection = facade_session(setup)
    got: list[Any] = []
    try:
        session = connection.session()
        receiver = session.receiver("jobs")
        receiver.capacity = 20
        while len(got) < 100:
            got.append(receiver.fetch(timeout=30))
            session.acknowledge(sync=False)
        session.acknowledge()
    finally:
        connection.close()
    assert [m.content for m in got] == [f"job {i}" for i in range(100)]
    assert [m.properties["n"] for m in got] == list(range(100))
    # all were accepted at qpidd: nothing is left in its queue
    with pytest.raises(TimeoutError):
        receive_messages(setup.qpidd_1_0(), setup.names["facade-in"], 1, timeout=2)
