"""kombu programs, unchanged, as subprocesses through the 0-9-1 façade in front of
RabbitMQ's AMQP 1.0, on topology that already exists on RabbitMQ (the migration case):

- ``SimpleQueue`` put/get of 500 messages with headers on a queue RabbitMQ holds as a
  durable queue (its 1.0 address is ``/amq/queue/NAME``: ``/queue/NAME`` would declare
  a non-durable queue, PRECONDITION_FAILED on RabbitMQ 3.x);
- a producer to a topic exchange and consumers of queues bound by ``*.error`` and
  ``#``: the routing keys route (the 0-9-1 routing key is the 1.0 subject RabbitMQ's
  ``/exchange/X`` routes by).

One ``amqp-bridge run`` serves the module.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.bridge.test_routes091 import pika_channel
from tests.support.apps import AppProcess, run_program
from tests.support.facade091 import Facade091 as Facade
from tests.support.facade091 import facade091
from tests.support.rabbitmq import queue_depth

COUNT = 500
KEYS = ["app.error", "app.info", "db.error", "db.slow.query", "app.error"]
"""Keys the topic producer publishes with, in order."""


NAMES = ("orders", "logs", "errors", "all")


@pytest.fixture(scope="module")
def names(rabbitmq_url: str) -> Iterator[dict[str, str]]:
    """RabbitMQ's side, as a migration finds it: a durable queue, and a topic exchange
    with durable queues bound by pattern."""
    tag = uuid.uuid4().hex[:12]
    names = {role: f"test.kombu.{tag}.{role}" for role in NAMES}
    with pika_channel(rabbitmq_url) as ch:
        ch.queue_declare(names["orders"], durable=True)
        ch.exchange_declare(names["logs"], "topic", durable=True)
        for queue, pattern in (("errors", "*.error"), ("all", "#")):
            ch.queue_declare(names[queue], durable=True)
            ch.queue_bind(names[queue], names["logs"], pattern)
    yield names
    with pika_channel(rabbitmq_url) as ch:
        for queue in ("orders", "errors", "all"):
            ch.queue_delete(names[queue])
        ch.exchange_delete(names["logs"])


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, names: dict[str, str],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    def routes(*_: dict[str, str]) -> str:
        return f"""
  - name: orders-out
    from: {{listener: legacy, exchange: orders}}
    to:   {{connection: cloud, address: /amq/queue/{names["orders"]}}}
  - name: orders-in
    from: {{connection: cloud, address: /amq/queue/{names["orders"]}}}
    to:   {{listener: legacy, queue: orders}}
  - name: logs-out
    from: {{listener: legacy, exchange: logs}}
    to:   {{connection: cloud, address: /exchange/{names["logs"]}}}
  - name: errors-in
    from: {{connection: cloud, address: /amq/queue/{names["errors"]}}}
    to:   {{listener: legacy, queue: errors}}
  - name: all-in
    from: {{connection: cloud, address: /amq/queue/{names["all"]}}}
    to:   {{listener: legacy, queue: all}}"""

    with facade091(rabbitmq_url, tmp_path_factory.mktemp("apps-kombu"), (), routes) as running:
        yield running


def depth(facade: Facade, queue: str) -> int:
    return queue_depth(facade.rabbitmq_url + "/%2F", queue)


def test_simple_queue_puts_and_gets_on_an_existing_durable_queue(
        facade: Facade, names: dict[str, str], tmp_path: Path) -> None:
    out = run_program(["kombu_simple_queue.py", facade.url, "orders", str(COUNT)],
                      tmp_path / "simple.log", {})
    assert f"put {COUNT}" in out
    got = re.findall(r"got (\d+) headers=(.*) redelivered=(\w+)", out)
    # in order, each once, with exactly the headers it was put with, none redelivered
    assert got == [(str(i), f"[('kind', 'order'), ('seq', {i})]", "False")
                   for i in range(COUNT)]
    assert out.rstrip().endswith("then empty")
    assert depth(facade, names["orders"]) == 0  # every get acknowledged; the queue is there


def test_topic_consumers_get_what_their_patterns_match(
        facade: Facade, names: dict[str, str], tmp_path: Path) -> None:
    out = run_program(["kombu_topic_producer.py", facade.url, "logs", *KEYS],
                      tmp_path / "producer.log", {})
    assert f"published {len(KEYS)}" in out
    consumers = {
        queue: AppProcess(["kombu_topic_consumer.py", facade.url, "logs", queue, pattern,
                           str(expected), "1"], tmp_path / f"{queue}.log", {})
        for queue, pattern, expected in (("errors", "*.error", 3), ("all", "#", len(KEYS)))
    }
    try:
        for consumer in consumers.values():
            assert consumer.wait() == 0, consumer.log()
    finally:
        for consumer in consumers.values():
            consumer.kill()
    errors = re.findall(r"got (\S+) n=(\d+) routing_key=(\S+) redelivered=(\w+)",
                        consumers["errors"].log())
    everything = re.findall(r"got (\S+) n=(\d+) routing_key=(\S+) redelivered=(\w+)",
                            consumers["all"].log())
    # each message delivered with the key it was published with, in order, not redelivered
    assert everything == [(key, str(i), key, "False") for i, key in enumerate(KEYS)]
    assert errors == [(key, str(i), key, "False") for i, key in enumerate(KEYS)
                      if key.endswith(".error")]
    assert depth(facade, names["errors"]) == depth(facade, names["all"]) == 0
