"""Who may do what on the 0-10 façade: 0-10 applications (the engine's
:class:`BlockingClient`) against ``amqp-bridge run`` with per-user permissions (the
model the 0-9-1 façade uses: RabbitMQ's configure / write / read), refused with
execution.exception unauthorized-access in qpidd's words, served when permitted,
every refusal counted in ``/metrics``; a user-id other than the login refused unless
the listener trusts user ids.

One bridge serves the module: listener ``strict`` with permissions, listener
``trusting`` with none configured and ``trust_user_id: true``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from proton import Message

from amqp010.events import ExecutionExceptionReceived
from amqp010.spec import ErrorCode, MessageProperties, QueuePurge
from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.logs import records
from tests.support.metrics import counted, metrics_port, poll
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    receive_messages,
    send_messages,
    unique_queue,
)

USERS = {"app": "app-pw", "reader": "reader-pw", "writer": "writer-pw",
         "configurer": "configurer-pw"}


@dataclass
class Running:
    url: str
    proc: BridgeRun
    port: int
    trusting_port: int
    metrics: int
    events: str
    jobs: str
    trusted: str

    def client(self, user: str, port: int | None = None) -> BlockingClient:
        return BlockingClient.connect(
            f"amqp://{user}:{USERS[user]}@127.0.0.1:{port or self.port}")

    def refused(self, operation: str, permission: str) -> float:
        return counted(self.metrics, "amqp_bridge_facade_access_refused_total",
                       listener="strict", operation=operation, permission=permission)


@pytest.fixture(scope="module")
def bridge(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    events, jobs, trusted = (queue_address(unique_queue(f"access010-{role}"))
                             for role in ("events", "jobs", "trusted"))
    port, trusting_port = free_port(), free_port()
    users = ", ".join(f"{u}: {p}" for u, p in USERS.items())
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  strict:
    protocol: amqp0-10
    bind: "127.0.0.1:{port}"
    users: {{{users}}}
    permissions:
      app: {{configure: ".*", write: ".*", read: ".*"}}
      reader: {{read: "^jobs$"}}
      writer: {{write: "^events$"}}
      configurer: {{configure: "^(events|jobs)$"}}
  trusting:
    protocol: amqp0-10
    bind: "127.0.0.1:{trusting_port}"
    users: {{{users}}}
    trust_user_id: true
routes:
  - {{name: events-out, from: {{listener: strict, exchange: events}},
      to: {{connection: cloud, address: {events}}}}}
  - {{name: jobs-in, from: {{connection: cloud, address: {jobs}}},
      to: {{listener: strict, queue: jobs}}}}
  - {{name: trusted-out, from: {{listener: trusting, exchange: events}},
      to: {{connection: cloud, address: {trusted}}}}}
metrics: {{bind: "127.0.0.1:0"}}
"""
    proc = BridgeRun(config, tmp_path_factory.mktemp("access010")).start()
    try:
        wait_listening(port, proc)
        wait_listening(trusting_port, proc)
        yield Running(rabbitmq_url, proc, port, trusting_port, metrics_port(proc.log), events,
                      jobs, trusted)
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()


def _refused(bridge: Running, user: str, action: Callable[[BlockingClient], object]
             ) -> tuple[int, str]:
    """Run ``action`` as ``user``; the execution.exception it ends with (code, text)."""
    with bridge.client(user) as client, pytest.raises(ClientError) as info:
        action(client)
    event = info.value.event
    assert isinstance(event, ExecutionExceptionReceived), info.value
    return event.error_code, event.description


def _denied(request: str, user: str, permission: str, kind: str, name: str) -> tuple[int, str]:
    return ErrorCode.UNAUTHORIZED_ACCESS, (
        f"ACL denied {request} request from {user} (amqp-bridge: no {permission} permission "
        f"on {kind} '{name}')")


def test_a_user_without_configure_is_refused_the_declare(bridge: Running) -> None:
    before = bridge.refused("queue.declare", "configure")
    assert _refused(bridge, "reader", lambda c: c.declare_queue("jobs")) == _denied(
        "queue create", "reader", "configure", "queue", "jobs")
    assert _refused(bridge, "reader", lambda c: c.declare_exchange("events", "topic")) == \
        _denied("exchange create", "reader", "configure", "exchange", "events")
    with bridge.client("reader") as client:
        client.declare_queue("jobs", passive=True)  # a passive declare needs nothing
    with bridge.client("configurer") as client:
        client.declare_queue("jobs")
        client.declare_exchange("events", "topic")
    poll(lambda: bridge.refused("queue.declare", "configure"), lambda n: n == before + 1, 10,
         "the refused queue.declare counted")


def test_a_user_without_write_is_refused_the_publish(bridge: Running) -> None:
    before = bridge.refused("message.transfer", "write")
    assert _refused(bridge, "reader", lambda c: c.publish(b"no", "k", "events")) == (
        ErrorCode.UNAUTHORIZED_ACCESS, "reader cannot publish to events with routing-key k "
                                       "(amqp-bridge: no write permission on exchange "
                                       "'events')")
    assert _refused(bridge, "writer", lambda c: c.publish(b"no", "jobs"))[1].startswith(
        "writer cannot publish to amq.default with routing-key jobs")
    with bridge.client("writer") as client:
        client.publish(b"allowed", "k", "events")  # completed: RabbitMQ took it
    assert [bytes(r.message.body) for r in receive_messages(bridge.url, bridge.events, 1)] \
        == [b"allowed"]
    assert_no_message(bridge.url, bridge.events)
    poll(lambda: bridge.refused("message.transfer", "write"), lambda n: n == before + 2, 10,
         "both refused transfers counted")


def test_a_user_without_read_is_refused_the_subscribe(bridge: Running) -> None:
    before = bridge.refused("message.subscribe", "read")
    assert _refused(bridge, "writer", lambda c: c.subscribe("jobs")) == _denied(
        "Queue subscribe", "writer", "read", "queue", "jobs")
    assert _refused(bridge, "writer", lambda c: c._call(c._s().send(
        QueuePurge(queue="jobs", sync=True))))[0] == ErrorCode.UNAUTHORIZED_ACCESS
    send_messages(bridge.url, bridge.jobs, [Message(body=b"job", inferred=True)])
    with bridge.client("reader") as client:
        client.subscribe("jobs", "d")
        assert client.receive("d", timeout=20).body == b"job"
    poll(lambda: bridge.refused("message.subscribe", "read"), lambda n: n == before + 1, 10,
         "the refused subscribe counted")


def test_a_bind_needs_write_on_the_queue_and_read_on_the_exchange(bridge: Running) -> None:
    assert _refused(bridge, "reader", lambda c: c.bind("jobs", "events", "k")) == _denied(
        "exchange bind", "reader", "write", "queue", "jobs")
    with bridge.client("app") as client:
        client.bind("jobs", "events", "k")


def test_a_user_id_other_than_the_login_is_refused_unless_trusted(bridge: Running) -> None:
    before = bridge.refused("message.transfer", "user_id")
    with bridge.client("app") as client:
        client.publish(b"mine", "k", "events", properties=MessageProperties(user_id=b"app"))
    assert _refused(bridge, "app", lambda c: c.publish(
        b"forged", "k", "events", properties=MessageProperties(user_id=b"mallory"))) == (
        ErrorCode.UNAUTHORIZED_ACCESS,
        "authorised user id : app but user id in message declared as mallory")
    assert [bytes(r.message.body) for r in receive_messages(bridge.url, bridge.events, 1)] \
        == [b"mine"]
    assert_no_message(bridge.url, bridge.events)
    with bridge.client("app", bridge.trusting_port) as client:
        client.publish(b"vouched", "k", "events",
                       properties=MessageProperties(user_id=b"someone"))
    assert [bytes(r.message.body) for r in receive_messages(bridge.url, bridge.trusted, 1)] \
        == [b"vouched"]
    poll(lambda: bridge.refused("message.transfer", "user_id"), lambda n: n == before + 1, 10,
         "the refused user-id counted")
    lines = [r for r in records(bridge.proc.log()) if r.get("event") == "access_refused"]
    assert lines and lines[0]["level"] == "warning" and lines[0]["listener"] == "strict"
