"""Unchanged qpid.messaging programs through the 0-10 façade of one ``amqp-bridge run``.

Each program of ``programs/`` runs as a subprocess with qpid-python (the Python 3
copy in ``../shared/peers/qpid-python``, hence the interop suite) on its path and nothing of the bridge,
connects to the façade as it would to qpidd (PLAIN login, no reconnect: a lost
connection is an error) and prints what it did.  Behind the façade is the shared
RabbitMQ; each test has its own façade queue, served by a route from its own RabbitMQ
queue, where the tests put messages in and look at what is left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from proton import Message

from tests.interop.peers import QPID_PYTHON, require
from tests.support.bridge import FacadeRun, free_port, serving, wait_for
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    queue_depth,
    receive_messages,
    send_messages,
    unique_queue,
)

PROGRAMS = Path(__file__).resolve().parent / "programs"
USER, PASSWORD = "app", "app-secret"
FACADE_QUEUES = ("orders", "capacity", "acks", "unacked", "idle", "soak")
SOAK = 6000
"""Messages for one consumer session: several times the ~1,030 after which the façade
used to make qpid.messaging drop its connection (an unasked session.known-completed)."""


def start_program(port: int, program: str, address: str, *options: Any
                  ) -> subprocess.Popen[str]:
    """``programs/<program>.py`` started against the façade on ``port`` (qpid-python on
    its path, logged in as USER), its output piped."""
    return subprocess.Popen(
        [sys.executable, str(PROGRAMS / f"{program}.py"), f"127.0.0.1:{port}", address,
         *map(str, options)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROGRAMS,
        env={**os.environ, "PYTHONPATH": str(QPID_PYTHON), "QPID_USER": USER,
             "QPID_PASSWORD": PASSWORD})


class Facade(FacadeRun):
    """The running bridge, its façade port and the RabbitMQ queue behind each façade queue."""

    def run(self, program: str, address: str, *options: Any, timeout: float = 60) -> Any:
        """Run ``programs/<program>.py`` against the façade; its JSON report.

        The program must exit 0 (its stderr is in the failure message)."""
        proc = self.start(program, address, *options)
        out, err = proc.communicate(timeout=timeout)
        return self.report(program, out, err, proc.returncode)

    def start(self, program: str, address: str, *options: Any) -> subprocess.Popen[str]:
        return start_program(self.port, program, address, *options)

    @staticmethod
    def report(program: str, out: str, err: str, status: int) -> Any:
        assert status == 0, f"{program} exited with {status}:\n{err[-4000:]}\n{out[-2000:]}"
        return json.loads(out.strip().splitlines()[-1])

    def preload(self, name: str, count: int) -> None:
        """``count`` messages in the RabbitMQ queue behind façade queue ``name``, each
        with the application property ``n`` (0, 1, ...)."""
        outcomes = send_messages(self.rabbitmq_url, self.address(name),
                                 [Message(body=f"message {i}", properties={"n": i})
                                  for i in range(count)], timeout=60)
        assert {o.state for o in outcomes} == {"accepted"}

    def drained(self, name: str) -> None:
        """Wait until the RabbitMQ queue behind ``name`` holds nothing (every
        acknowledgement reached it), and nothing comes from it."""
        wait_for(lambda: queue_depth(self.rabbitmq_url, self.queues[name]) == 0, 10,
                 f"{name} to be drained", self.proc)
        assert_no_message(self.rabbitmq_url, self.address(name))


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    require(QPID_PYTHON / "qpid" / "messaging", "qpid-python")
    queues = {name: unique_queue(f"apps-qpid-{name}") for name in FACADE_QUEUES}
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  legacy: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", users: {{{USER}: "${{APPS_PASSWORD}}"}}}}
routes:
"""
    for name in FACADE_QUEUES:
        config += f"""  - name: {name}-in
    from: {{connection: cloud, address: {queue_address(queues[name])}}}
    to:   {{listener: legacy, queue: {name}}}
"""
    with serving(config, tmp_path_factory.mktemp("apps-qpid"), port,
                 env={"APPS_PASSWORD": PASSWORD}) as proc:
        yield Facade(rabbitmq_url, port, queues, proc)


def test_sender_publishes_every_message_in_order(facade: Facade) -> None:
    """sender("orders"): through the default exchange to the façade queue's RabbitMQ
    queue, each message completed once RabbitMQ took it (nothing left unsettled)."""
    report = facade.run("qpid_send", "orders", "--count", 300, "--capacity", 50)
    assert report == {"sent": 300, "unsettled": 0}
    got = receive_messages(facade.rabbitmq_url, facade.address("orders"), 300, timeout=20)
    assert [r.message.properties["n"] for r in got] == list(range(300))
    assert got[7].message.subject == "order-7"
    assert got[7].message.body == {"n": 7, "text": "order 7"}
    facade.drained("orders")


def test_receiver_with_capacity_gets_everything_in_order(facade: Facade) -> None:
    """A prefetching receiver (capacity 25), acknowledging every 10 messages."""
    facade.preload("capacity", 300)
    report = facade.run("qpid_receive", "capacity", "--count", 300, "--capacity", 25,
                        "--ack-every", 10)
    assert report["n"] == list(range(300)) and not any(report["redelivered"])
    facade.drained("capacity")


def test_acknowledged_messages_are_gone_for_the_next_receiver(facade: Facade) -> None:
    facade.preload("acks", 40)
    first = facade.run("qpid_receive", "acks", "--count", 40, "--capacity", 5, "--ack-every", 1)
    assert first["n"] == list(range(40)) and first["acknowledged"] == 40
    second = facade.start("qpid_receive", "acks", "--count", 1, "--timeout", 2)
    out, err = second.communicate(timeout=30)
    assert second.returncode == 3 and json.loads(out)["n"] == [], err  # Empty: nothing left
    facade.drained("acks")


def test_unacknowledged_messages_go_to_the_next_receiver_redelivered(facade: Facade) -> None:
    """A receiver fetches 20 of 50, acknowledges the first 10 and closes: the next
    receiver gets the other 40, the 10 fetched and not acknowledged flagged redelivered."""
    facade.preload("unacked", 50)
    first = facade.run("qpid_receive", "unacked", "--count", 20, "--capacity", 10,
                       "--ack-every", 10, "--ack-until", 10)
    assert first["n"] == list(range(20)) and first["acknowledged"] == 10
    second = facade.run("qpid_receive", "unacked", "--count", 40, "--capacity", 10)
    assert sorted(second["n"]) == list(range(10, 50)), second["n"]
    redelivered = {n for n, again in zip(second["n"], second["redelivered"], strict=True) if again}
    assert set(range(10, 20)) <= redelivered, redelivered
    facade.drained("unacked")


def test_heartbeats_keep_an_idle_connection(facade: Facade) -> None:
    """Connection(heartbeat=1) idle for 4 s (four intervals; qpid.messaging drops a
    connection silent for two): the façade's heartbeats keep it, and a message then
    makes the round trip on it."""
    report = facade.run("qpid_idle", "idle", "--heartbeat", 1, "--idle", 4)
    assert report == {"content": "after the idle period", "idle": 4.0}
    facade.drained("idle")


def test_one_consumer_session_takes_thousands_of_messages_without_a_disconnect(
        facade: Facade) -> None:
    """Issue item 8: qpid.messaging lost its connection every ~1,030 messages (the
    façade volunteered session.known-completed, which it cannot handle).  One receiver,
    one session, no reconnect: 6,000 messages, acknowledged as it goes."""
    facade.preload("soak", SOAK)
    report = facade.run("qpid_receive", "soak", "--count", SOAK, "--capacity", 100,
                        "--ack-every", 50, timeout=120)
    assert report["n"] == list(range(SOAK)) and not any(report["redelivered"])
    facade.drained("soak")
