"""Who may do what on the 0-9-1 façade: pika applications against ``amqp-bridge run``
with per-user permissions (RabbitMQ's configure / write / read), refused as RabbitMQ
refuses them (channel.close 403 ACCESS_REFUSED in its words), served when permitted,
every refusal counted in ``/metrics`` and logged at most once per address every 10 s;
a user-id other than the login refused (406) unless the listener trusts user ids.

One bridge serves the module: listener ``legacy`` with permissions, listener
``trusting`` with none configured and ``trust_user_id: true``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pika
import pika.exceptions
import pytest
from proton import Message

from tests.support.bridge import BridgeRun, config091, free_port, wait_listening
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
         "configurer": "configurer-pw", "stranger": "stranger-pw"}
PERMISSIONS = """
      app: {configure: ".*", write: ".*", read: ".*"}
      reader: {read: "^jobs$"}
      writer: {write: "^orders$"}
      configurer: {configure: "^(orders|jobs)$"}"""


@dataclass
class Running:
    url: str
    """The RabbitMQ node behind the bridge."""
    proc: BridgeRun
    port: int
    trusting_port: int
    closed_port: int
    """Listener ``closed``: permissions for ``app`` only, no default."""
    metrics: int
    orders: str
    jobs: str
    trusted: str

    def connect(self, user: str, port: int | None = None) -> pika.BlockingConnection:
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", port or self.port,
            credentials=pika.PlainCredentials(user, USERS[user]),
            connection_attempts=1, heartbeat=0))

    def refused(self, operation: str, permission: str, listener: str = "legacy") -> float:
        return counted(self.metrics, "amqp_bridge_facade_access_refused_total",
                       listener=listener, operation=operation, permission=permission)


@pytest.fixture(scope="module")
def bridge(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    orders, jobs, trusted = (queue_address(unique_queue(f"access091-{role}"))
                             for role in ("orders", "jobs", "trusted"))
    port, trusting_port, closed_port = free_port(), free_port(), free_port()
    users = ", ".join(f"{u}: {p}" for u, p in USERS.items())
    routes = f"""
  - {{name: orders-out, from: {{listener: legacy, exchange: orders}},
      to: {{connection: cloud, address: {orders}}}}}
  - {{name: jobs-in, from: {{connection: cloud, address: {jobs}}},
      to: {{listener: legacy, queue: jobs}}}}
  - {{name: trusted-out, from: {{listener: trusting, exchange: orders}},
      to: {{connection: cloud, address: {trusted}}}}}
metrics: {{bind: "127.0.0.1:0"}}"""
    listeners = f"""listeners:
  legacy:
    protocol: amqp0-9-1
    bind: "127.0.0.1:{port}"
    users: {{{users}}}
    permissions: {PERMISSIONS}
    default_permissions: {{read: "^jobs$"}}
  trusting:
    protocol: amqp0-9-1
    bind: "127.0.0.1:{trusting_port}"
    users: {{{users}}}
    trust_user_id: true
  closed:
    protocol: amqp0-9-1
    bind: "127.0.0.1:{closed_port}"
    users: {{{users}}}
    permissions: {{app: {{read: ".*"}}}}
"""
    proc = BridgeRun(config091(rabbitmq_url, routes, more=listeners),
                     tmp_path_factory.mktemp("access091")).start()
    try:
        wait_listening(port, proc)
        wait_listening(trusting_port, proc)
        wait_listening(closed_port, proc)
        yield Running(rabbitmq_url, proc, port, trusting_port, closed_port,
                      metrics_port(proc.log), orders, jobs, trusted)
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()


def _refused_with(call: Any) -> tuple[int, str]:
    """Run ``call``; the channel.close it provoked (reply code, text)."""
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
        call()
    return closed.value.reply_code, closed.value.reply_text


def _access_refused(kind: str, name: str, user: str) -> tuple[int, str]:
    return 403, f"ACCESS_REFUSED - access to {kind} '{name}' in vhost '/' refused for user " \
                f"'{user}'"


def test_a_user_without_configure_is_refused_the_declare(bridge: Running) -> None:
    before = bridge.refused("queue.declare", "configure")
    with bridge.connect("reader") as conn:
        assert conn.channel().queue_declare("jobs", passive=True)  # a passive one needs none
        assert _refused_with(lambda: conn.channel().queue_declare("jobs", durable=True)) \
            == _access_refused("queue", "jobs", "reader")
        assert _refused_with(lambda: conn.channel().exchange_declare("orders", "topic")) \
            == _access_refused("exchange", "orders", "reader")
    with bridge.connect("configurer") as conn:
        ch = conn.channel()
        assert ch.queue_declare("jobs", durable=True).method.queue == "jobs"
        ch.exchange_declare("orders", "topic", durable=True)
    poll(lambda: bridge.refused("queue.declare", "configure"), lambda n: n == before + 1, 10,
         "the refused queue.declare counted")
    assert bridge.refused("exchange.declare", "configure") >= 1


def test_a_user_without_write_is_refused_the_publish(bridge: Running) -> None:
    before = bridge.refused("basic.publish", "write")
    with bridge.connect("reader") as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        assert _refused_with(lambda: ch.basic_publish("orders", "k", b"not allowed")) \
            == _access_refused("exchange", "orders", "reader")
    with bridge.connect("writer") as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.basic_publish("orders", "k", b"allowed")  # confirmed: RabbitMQ took it
        # the default exchange is checked as amq.default
        assert _refused_with(lambda: ch.basic_publish("", "jobs", b"to a queue")) \
            == _access_refused("exchange", "amq.default", "writer")
    assert [bytes(r.message.body) for r in receive_messages(bridge.url, bridge.orders, 1)] \
        == [b"allowed"]
    assert_no_message(bridge.url, bridge.orders)
    poll(lambda: bridge.refused("basic.publish", "write"), lambda n: n == before + 2, 10,
         "both refused publishes counted")


def test_a_user_without_read_is_refused_the_consume_and_get(bridge: Running) -> None:
    before = bridge.refused("basic.consume", "read"), bridge.refused("basic.get", "read")
    with bridge.connect("writer") as conn:
        assert _refused_with(lambda: conn.channel().basic_consume("jobs", lambda *a: None)) \
            == _access_refused("queue", "jobs", "writer")
        assert _refused_with(lambda: conn.channel().basic_get("jobs")) \
            == _access_refused("queue", "jobs", "writer")
    send_messages(bridge.url, bridge.jobs, [Message(body=b"job-1", inferred=True),
                                          Message(body=b"job-2", inferred=True)])
    got = []
    for user in ("reader", "stranger"):  # stranger: not listed, the default lets it read
        with bridge.connect(user) as conn:
            ch = conn.channel()
            for _ in range(100):
                method, _props, body = ch.basic_get("jobs", auto_ack=True)
                if method is not None:
                    got.append(body)
                    break
                conn.sleep(0.1)
    assert sorted(got) == [b"job-1", b"job-2"]
    poll(lambda: (bridge.refused("basic.consume", "read"), bridge.refused("basic.get", "read")),
         lambda n: n == (before[0] + 1, before[1] + 1), 10, "the refusals counted")


def test_an_empty_queue_name_is_checked_as_the_queue_it_stands_for(bridge: Running) -> None:
    """basic.get of ``""`` after a passive declare of ``jobs`` reads ``jobs`` (the
    channel's last declared queue): refused to a user who may not read it, naming it,
    and served to one who may (the façade had checked and looked up a queue ``""``)."""
    with bridge.connect("writer") as conn:
        ch = conn.channel()
        ch.queue_declare("jobs", passive=True)
        assert _refused_with(lambda: ch.basic_get("")) \
            == _access_refused("queue", "jobs", "writer")
    send_messages(bridge.url, bridge.jobs, [Message(body=b"job-empty-name", inferred=True)])
    with bridge.connect("reader") as conn:
        ch = conn.channel()
        ch.queue_declare("jobs", passive=True)
        for _ in range(100):
            method, _props, body = ch.basic_get("", auto_ack=True)
            if method is not None:
                break
            conn.sleep(0.1)
    assert body == b"job-empty-name"


def test_a_bind_needs_write_on_the_queue_and_read_on_the_exchange(bridge: Running) -> None:
    with bridge.connect("reader") as conn:  # read on jobs, no write on it
        assert _refused_with(lambda: conn.channel().queue_bind("jobs", "orders", "k")) \
            == _access_refused("queue", "jobs", "reader")
    with bridge.connect("app") as conn:
        conn.channel().queue_bind("jobs", "orders", "k")


def test_a_user_id_other_than_the_login_is_refused_unless_trusted(bridge: Running) -> None:
    before = bridge.refused("basic.publish", "user_id")
    with bridge.connect("app") as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.basic_publish("orders", "k", b"mine", pika.BasicProperties(user_id="app"))
        assert _refused_with(lambda: ch.basic_publish(
            "orders", "k", b"forged", pika.BasicProperties(user_id="someone-else"))) == (
            406, "PRECONDITION_FAILED - user_id property set to 'someone-else' but "
                 "authenticated user was 'app'")
    assert [bytes(r.message.body) for r in receive_messages(bridge.url, bridge.orders, 1)] == [b"mine"]
    assert_no_message(bridge.url, bridge.orders)
    with bridge.connect("app", bridge.trusting_port) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.basic_publish("orders", "k", b"vouched", pika.BasicProperties(user_id="someone"))
    assert [bytes(r.message.body) for r in receive_messages(bridge.url, bridge.trusted, 1)] \
        == [b"vouched"]
    poll(lambda: bridge.refused("basic.publish", "user_id"), lambda n: n == before + 1, 10,
         "the refused user-id counted")


def test_a_client_hammering_is_counted_in_full_and_logged_rate_limited(
        bridge: Running) -> None:
    before = bridge.refused("queue.declare", "configure")
    lines_before = len(_access_lines(bridge))
    with bridge.connect("writer") as conn:
        for _ in range(30):
            assert _refused_with(lambda: conn.channel().queue_declare("jobs"))[0] == 403
    poll(lambda: bridge.refused("queue.declare", "configure"), lambda n: n == before + 30, 10,
         "30 refusals counted")
    # one WARNING per client address every 10 s (this module's earlier refusals from
    # 127.0.0.1 may have used it), the others only at DEBUG
    assert len(_access_lines(bridge)[lines_before:]) <= 1
    warning = _access_lines(bridge)[0]
    assert (warning["level"], warning["listener"]) == ("warning", "legacy")
    assert warning["user"] and warning["code"] == "403"


def test_a_user_without_permissions_may_not_open_a_vhost(bridge: Running) -> None:
    with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as refused:
        bridge.connect("reader", bridge.closed_port)
    assert "530" in str(refused.value) and \
        "NOT_ALLOWED - access to vhost '/' refused for user 'reader'" in str(refused.value)
    with bridge.connect("app", bridge.closed_port) as conn:  # listed: served
        assert conn.channel().is_open
    poll(lambda: bridge.refused("connection.open", "vhost", "closed"), lambda n: n == 1, 10,
         "the refused connection.open counted")


def test_an_unrestricted_listener_says_so_at_start(bridge: Running) -> None:
    lines = [r for r in records(bridge.proc.log()) if r.get("event") ==
             "permissions_unrestricted"]
    assert [r["listener"] for r in lines] == ["trusting"]


def _access_lines(bridge: Running) -> list[dict[str, Any]]:
    """The access_refused lines at INFO or above (the bridge logs at INFO)."""
    return [r for r in records(bridge.proc.log()) if r.get("event") == "access_refused"]



def test_a_login_is_logged_with_the_name_the_client_gives(bridge: Running) -> None:
    """The login's log line names the client as RabbitMQ's "client provided name" does:
    ``connection_name`` and ``client`` (product and version), printable text only."""
    params = pika.ConnectionParameters(
        "127.0.0.1", bridge.port, credentials=pika.PlainCredentials("app", USERS["app"]),
        client_properties={"connection_name": "orders-worker\x07 #3"}, connection_attempts=1)
    with pika.BlockingConnection(params):
        pass
    opened = poll(lambda: [r for r in records(bridge.proc.log())
                           if r.get("event") == "client_open" and "connection_name" in r],
                  lambda found: len(found) == 1, 10, "the login's log line")
    assert opened[0]["connection_name"] == "orders-worker #3"
    assert opened[0]["client"] == f"Pika Python Client Library {pika.__version__}"
