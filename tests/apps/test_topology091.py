"""Unchanged RabbitMQ applications through a topology-mode 0-9-1 listener in front of
RabbitMQ 4's AMQP 1.0, configured as ``examples/topology.yaml``, and in front of RabbitMQ
3.10's (declares over 0-9-1, a sender per address), configured as
``examples/topology-rabbitmq3.yaml``: no route, nothing configured per name
(docs/topology.md). Celery with ALL defaults (but its task queue's name, the module's own
on the shared node) and the ``rpc://`` result backend, the RabbitMQ tutorial's RPC in pika with both reply styles, aio-pika's
RPC pattern, kombu topic routing by patterns — each as subprocesses of their own,
exactly as a user runs them.

One ``amqp-bridge run`` serves the module.
"""

from __future__ import annotations

import re
import signal
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pika
import pytest

from tests.apps.test_celery import CeleryBridge, assert_clean
from tests.support.apps import AppProcess, run_program
from tests.support.bridge import BridgeRun, free_port, recipe_bridge
from tests.support.rabbitmq import delete_queue, unique_queue, version_of

pytestmark = pytest.mark.rabbitmq(3, 4)

PASSWORD = "topology-s3cret"
TASKS = 200
CALLS = 100


@dataclass
class Topology:
    bridge: BridgeRun
    url: str
    """The applications' broker URL (the bridge's listener)."""
    broker_url: str
    """RabbitMQ's own 0-9-1 URL (to look at what the applications left there)."""
    tmp: Path
    task_queue: str
    """Celery's task queue, named for the module (other Celery workers on the shared node,
    other tests' or benchmarks', consume ``celery`` and would take these tasks)."""

    @property
    def celery(self) -> CeleryBridge:
        """The Celery side: ``celery_rpc_app`` (all defaults but the task queue's name,
        ``rpc://``) on the bridge."""
        return CeleryBridge(self.bridge, {"BROKER_URL": self.url.removesuffix("%2F") + "/",
                                          "RECORD_FILE": str(self.tmp / "records.txt"),
                                          "CELERY_QUEUE": self.task_queue},
                            self.tmp, app="celery_rpc_app")


@pytest.fixture(scope="module")
def topology(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Topology]:
    task_queue = unique_queue("celery-rpc-tasks")
    tmp = tmp_path_factory.mktemp("topology")
    port = free_port()
    recipe = {3: "topology-rabbitmq3.yaml", 4: "topology.yaml"}[version_of(rabbitmq_url)]
    try:
        with recipe_bridge(recipe, tmp, {
                "CLOUD_URL": rabbitmq_url, "RABBIT_URL": rabbitmq_url,
                "APP_BIND": f"127.0.0.1:{port}", "APP_PASSWORD": PASSWORD,
                "PORT": str(port)}) as bridge:
            yield Topology(bridge, f"amqp://app:{PASSWORD}@127.0.0.1:{port}/%2F",
                           rabbitmq_url, tmp, task_queue)
    finally:
        delete_queue(rabbitmq_url, task_queue)


def test_celery_with_all_defaults_and_rpc_results(topology: Topology) -> None:
    """200 tasks run exactly once and every AsyncResult.get() is right; inspect ping is
    answered; worker events reach a monitor; the worker shuts down warm."""
    celery = topology.celery
    name = f"w1@{uuid.uuid4().hex[:8]}"
    worker = celery.worker(name)
    try:
        token = uuid.uuid4().hex
        out = run_program(["celery_rpc_producer.py", token, str(TASKS)],
                          topology.tmp / "producer.log", celery.env, timeout=120)
        assert f"right {TASKS}/{TASKS}" in out, out
        runs = celery.records(token)
        assert sorted(n for n, _ in runs) == list(range(TASKS))  # each exactly once
        ping = run_program(["celery", "-A", "celery_rpc_app", "inspect", "ping", "-d", name,
                            "--timeout", "10"], topology.tmp / "ping.log", celery.env)
        assert re.search(re.escape(name) + r": OK\s+pong", ping), ping
        events = AppProcess(["celery", "-A", "celery_rpc_app", "events", "--dump"],
                            topology.tmp / "events.log", celery.env)
        try:
            events.wait_for(re.escape(name) + r".*heartbeat")
        finally:
            events.stop(signal.SIGINT)
    finally:
        rc = worker.stop(signal.SIGTERM)  # warm shutdown
    assert rc == 0, worker.log()
    assert "Warm shutdown" in worker.log(), worker.log()
    assert_clean(worker.log())
    assert celery.records(token) == runs  # nothing ran again after the acks


def test_two_celery_workers_share_the_tasks(topology: Topology) -> None:
    celery = topology.celery
    names = [f"w{i}@{uuid.uuid4().hex[:8]}" for i in (1, 2)]
    workers = [celery.worker(name) for name in names]
    try:
        token = uuid.uuid4().hex
        out = run_program(["celery_rpc_producer.py", token, str(TASKS)],
                          topology.tmp / "producer2.log", celery.env, timeout=120)
        assert f"right {TASKS}/{TASKS}" in out, out
    finally:
        codes = [w.stop(signal.SIGTERM) for w in workers]
    assert codes == [0, 0], [w.log() for w in workers]
    runs = celery.records(token)
    assert sorted(n for n, _ in runs) == list(range(TASKS))
    shares = Counter(worker for _, worker in runs)
    assert set(shares) == set(names), shares  # both took tasks
    for w in workers:
        assert_clean(w.log())


@pytest.mark.parametrize("style", ["exclusive", "direct"])
def test_pika_tutorial_rpc(topology: Topology, style: str) -> None:
    """Tutorial 6: replies to an exclusive server-named queue, or by direct reply-to."""
    queue = f"test.rpc.{uuid.uuid4().hex[:8]}"
    server = AppProcess(["pika_rpc_server.py", topology.url, queue],
                        topology.tmp / f"rpc-server-{style}.log", {})
    try:
        server.wait_for("ready")
        out = run_program(["pika_rpc_client.py", topology.url, queue, style, str(CALLS)],
                          topology.tmp / f"rpc-client-{style}.log", {})
    finally:
        server.kill()
    assert f"right {CALLS}/{CALLS}" in out, out


def test_aio_pika_rpc_pattern(topology: Topology) -> None:
    method = f"test.aio.{uuid.uuid4().hex[:8]}"
    server = AppProcess(["aio_pika_rpc.py", topology.url, method, "server"],
                        topology.tmp / "aio-server.log", {})
    try:
        server.wait_for("ready")
        out = run_program(["aio_pika_rpc.py", topology.url, method, "client", str(CALLS)],
                          topology.tmp / "aio-client.log", {})
    finally:
        server.kill()
    assert f"right {CALLS}/{CALLS}" in out, out


KEYS = ["app.error", "app.info", "db.error", "db.slow.query", "app.error"]


def test_kombu_topic_routing_by_patterns(topology: Topology, tmp_path: Path) -> None:
    """The consumers declare their queues and bind them by pattern; the broker routes."""
    exchange = f"test.logs.{uuid.uuid4().hex[:8]}"
    queues = {f"{exchange}.errors": ("*.error", 3), f"{exchange}.all": ("#", len(KEYS))}
    consumers = {
        queue: AppProcess(["kombu_topic_consumer.py", topology.url, exchange, queue, pattern,
                           str(expected), "1"], tmp_path / f"{queue}.log", {})
        for queue, (pattern, expected) in queues.items()}
    try:
        for consumer in consumers.values():
            consumer.wait_for("consuming")
        out = run_program(["kombu_topic_producer.py", topology.url, exchange, *KEYS],
                          tmp_path / "producer.log", {})
        assert f"published {len(KEYS)}" in out
        for consumer in consumers.values():
            assert consumer.wait() == 0, consumer.log()
    finally:
        for consumer in consumers.values():
            consumer.kill()
    pattern = r"got (\S+) n=(\d+) routing_key=(\S+) redelivered=(\w+)"
    errors = re.findall(pattern, consumers[f"{exchange}.errors"].log())
    everything = re.findall(pattern, consumers[f"{exchange}.all"].log())
    assert everything == [(key, str(i), key, "False") for i, key in enumerate(KEYS)]
    assert errors == [(key, str(i), key, "False") for i, key in enumerate(KEYS)
                      if key.endswith(".error")]
    conn = pika.BlockingConnection(pika.URLParameters(topology.broker_url + "/%2F"))
    try:  # the queues and the exchange are RabbitMQ's now, the messages all acknowledged
        ch = conn.channel()
        for queue in queues:
            assert ch.queue_declare(queue, passive=True).method.message_count == 0
            ch.queue_delete(queue)
        ch.exchange_delete(exchange)
    finally:
        conn.close()
