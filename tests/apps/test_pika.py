"""pika programs in the shape of RabbitMQ's tutorials, unchanged, as subprocesses through
the 0-9-1 façade in front of RabbitMQ's AMQP 1.0: publisher confirms (tutorial 7), a
mandatory publish nobody routes, a polling ``basic_get`` consumer, and a consumer told by
``basic.cancel`` that its queue is gone.

One ``amqp-bridge run`` serves the module.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
from proton import Message

from tests.support.apps import AppProcess, run_program
from tests.support.facade091 import Facade091 as Facade
from tests.support.facade091 import facade091
from tests.support.rabbitmq import (
    queue_depth,
    receive_messages,
    send_messages,
)


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    def routes(q: dict[str, str], names: dict[str, str]) -> str:
        return f"""
  - name: orders
    from: {{listener: legacy, exchange: orders, routing_key: order.created}}
    to:   {{connection: cloud, address: {q["orders"]}}}
  - name: polled
    from: {{connection: cloud, address: {q["polled"]}}}
    to:   {{listener: legacy, queue: polled}}
  - name: work
    from: {{connection: cloud, address: /amq/queue/{names["work"]}}}  # no re-declare
    to:   {{listener: legacy, queue: work}}
"""

    with facade091(rabbitmq_url, tmp_path_factory.mktemp("apps-pika"),
                   ("orders", "polled", "work"), routes) as running:
        yield running


def test_confirmed_publishes_are_at_the_1_0_broker_and_unroutable_is_returned(
        facade: Facade, tmp_path: Path) -> None:
    out = run_program(["pika_confirms.py", facade.url, "orders", "order.created", "300"],
                      tmp_path / "confirms.log", {})
    assert "confirmed 300" in out
    assert re.search(r"returned 312 NO_ROUTE", out), out
    # every confirm came once RabbitMQ had the message: all 300 are in its queue
    assert queue_depth(facade.rabbitmq_url + "/%2F", facade.queues["orders"]) == 300
    received = receive_messages(facade.rabbitmq_url, facade.address("orders"), 300,
                                timeout=30)
    assert [r.message.id for r in received] == [f"m-{i}" for i in range(300)]
    assert queue_depth(facade.rabbitmq_url + "/%2F", facade.queues["orders"]) == 0


@pytest.mark.rabbitmq(3, 4)
def test_a_polling_consumer_gets_every_message_fresh_then_empty(
        facade: Facade, tmp_path: Path) -> None:
    poller = AppProcess(["pika_get.py", facade.url, "polled", "20"], tmp_path / "get.log", {})
    try:
        poller.wait_for("first get: empty")  # the queue was empty: RabbitMQ's get-empty
        send_messages(facade.rabbitmq_url, facade.address("polled"),
                      [Message(body=f"job {i}".encode(), inferred=True) for i in range(20)])
        assert poller.wait() == 0, poller.log()
    finally:
        poller.kill()
    out = poller.log()
    # no application saw these before: none is redelivered (RabbitMQ says False too; on
    # RabbitMQ 4 the first used to be: it came for the credit of the get answered
    # get-empty and was released, which RabbitMQ 4 marks not first-acquirer)
    assert re.findall(r"got (job \d+) redelivered=(\w+)", out) == \
        [(f"job {i}", "False") for i in range(20)]
    assert "got 20; then empty" in out
    assert queue_depth(facade.rabbitmq_url + "/%2F", facade.queues["polled"]) == 0


def test_a_consumer_is_told_when_its_queue_goes(facade: Facade,
                                                tmp_path: Path) -> None:
    send_messages(facade.rabbitmq_url, facade.address("work"),
                  [Message(body=f"task {i}".encode(), inferred=True) for i in range(5)])
    consumer = AppProcess(["pika_consumer.py", facade.url, "work"], tmp_path / "work.log", {})
    try:
        consumer.wait_for(r"received task 4")
        conn = pika.BlockingConnection(pika.URLParameters(facade.rabbitmq_url + "/%2F"))
        try:
            conn.channel().queue_delete(facade.queues["work"])
        finally:
            conn.close()
        consumer.wait_for(r"cancelled by the broker")
        assert consumer.wait() == 0, consumer.log()
    finally:
        consumer.kill()
    assert re.findall(r"received (task \d+)", consumer.log()) == [f"task {i}"
                                                                 for i in range(5)]
