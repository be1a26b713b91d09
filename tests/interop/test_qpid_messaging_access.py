"""Who may do what on the 0-10 façade, as qpid.messaging (the reference 0-10 client in
``../shared/peers/qpid-python``) meets it: its address forms become the façade's
commands (a sender's node: transfers to its exchange; a receiver's: a subscribe;
``{create: always}``: a declare), each checked against the user's permissions and
refused as qpidd refuses them (``UnauthorizedAccess``), a user-id not the login's
refused too; the permitted user is served. Behind the façade: the shared RabbitMQ.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from proton import Message

from tests.interop.peers import import_qpid_messaging
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.metrics import counted, metrics_port
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    receive_messages,
    send_messages,
    unique_queue,
)

import_qpid_messaging()
from qpid.messaging import Connection  # noqa: E402
from qpid.messaging import Message as QpidMessage  # noqa: E402
from qpid.messaging.exceptions import UnauthorizedAccess  # noqa: E402

USERS = {"app": "app-pw", "reader": "reader-pw", "writer": "writer-pw"}


@dataclass
class Running:
    url: str
    proc: BridgeRun
    port: int
    metrics: int
    events: str
    jobs: str

    def session(self, user: str) -> Any:
        connection = Connection(f"127.0.0.1:{self.port}", username=user,
                                password=USERS[user], sasl_mechanisms="PLAIN")
        connection.open()
        return connection.session()


@pytest.fixture(scope="module")
def bridge(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    events, jobs = (queue_address(unique_queue(f"access-qpid-{role}"))
                    for role in ("events", "jobs"))
    port = free_port()
    users = ", ".join(f"{u}: {p}" for u, p in USERS.items())
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  legacy:
    protocol: amqp0-10
    bind: "127.0.0.1:{port}"
    users: {{{users}}}
    permissions:
      app: {{configure: ".*", write: ".*", read: ".*"}}
      reader: {{read: "^jobs$"}}
      writer: {{write: "^events$"}}
routes:
  - {{name: events-out, from: {{listener: legacy, exchange: events}},
      to: {{connection: cloud, address: {events}}}}}
  - {{name: jobs-in, from: {{connection: cloud, address: {jobs}}},
      to: {{listener: legacy, queue: jobs}}}}
metrics: {{bind: "127.0.0.1:0"}}
"""
    proc = BridgeRun(config, tmp_path_factory.mktemp("access-qpid")).start()
    try:
        wait_listening(port, proc)
        yield Running(rabbitmq_url, proc, port, metrics_port(proc.log), events, jobs)
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()


def test_a_sender_without_write_is_refused_and_one_with_it_is_served(bridge: Running) -> None:
    session = bridge.session("reader")
    try:
        with pytest.raises(UnauthorizedAccess, match="reader cannot publish to events with "
                                                     "routing-key news"):
            session.sender("events/news").send(QpidMessage("no"), sync=True)
    finally:
        session.connection.close()
    session = bridge.session("writer")
    try:
        session.sender("events/news").send(QpidMessage("yes"), sync=True)
    finally:
        session.connection.close()
    assert [bytes(r.message.body) for r in receive_messages(bridge.url, bridge.events, 1)] \
        == [b"yes"]
    assert_no_message(bridge.url, bridge.events)


def test_a_receiver_without_read_is_refused_and_one_with_it_is_served(bridge: Running) -> None:
    session = bridge.session("writer")
    try:
        with pytest.raises(UnauthorizedAccess, match="ACL denied Queue subscribe request "
                                                     "from writer"):
            session.receiver("jobs").fetch(timeout=5)
    finally:
        session.connection.close()
    send_messages(bridge.url, bridge.jobs, [Message(body="job")])
    session = bridge.session("reader")
    try:
        assert session.receiver("jobs").fetch(timeout=20).content == "job"
        session.acknowledge()
    finally:
        session.connection.close()


def test_create_always_needs_configure(bridge: Running) -> None:
    """A node that does not exist is declared ({create: always}): configure on its name.
    (One that exists is not declared, by qpidd either: nothing to refuse.)"""
    session = bridge.session("reader")
    try:
        session.receiver("jobs; {create: always}").close()  # exists: no declare
        with pytest.raises(UnauthorizedAccess, match="ACL denied queue create request from "
                                                     "reader"):
            session.receiver("fresh; {create: always}")
    finally:
        session.connection.close()


def test_a_user_id_other_than_the_login_is_refused(bridge: Running) -> None:
    session = bridge.session("app")
    try:
        sender = session.sender("events/news")
        sender.send(QpidMessage("mine", user_id="app"), sync=True)
        with pytest.raises(UnauthorizedAccess, match="authorised user id : app but user id "
                                                     "in message declared as mallory"):
            sender.send(QpidMessage("forged", user_id="mallory"), sync=True)
    finally:
        session.connection.close()
    assert [bytes(r.message.body) for r in receive_messages(bridge.url, bridge.events, 1)] \
        == [b"mine"]
    assert_no_message(bridge.url, bridge.events)
    assert counted(bridge.metrics, "amqp_bridge_facade_access_refused_total",
                   listener="legacy", operation="message.transfer", permission="user_id") == 1
