"""``amqp-bridge run`` with AMQP 0-9-1 connections over TLS, its 0-9-1 permanent faults,
and RabbitMQ's resource alarm (``connection.blocked``).

The 0-9-1 broker is the security suite's own RabbitMQ node (``rabbitmq_tls``: a TLS
listener, SASL EXTERNAL for the suite's client certificate); the 1.0 side is the shared
node. The alarm is raised on the suite's own node only (its memory watermark set to 0,
then back), never on the shared one.
"""

from __future__ import annotations

from pathlib import Path

import pika
import pytest
from proton import Message

from tests.security.conftest import EXTERNAL_USER, TlsBroker
from tests.security.test_bridge_tls import (
    AMQP10_FAULTS,
    _pki_path,
    error_lines,
    run_until_exit,
)
from tests.support.bridge import BridgeRun, wait_for
from tests.support.certs import Pki
from tests.support.logs import records
from tests.support.rabbitmq import (
    queue_address,
    queue_depth,
    rabbitmqctl_on,
    receive_messages,
    send_messages,
    unique_queue,
)

#: The TLS node (rabbitmq_tls) is a 3.10 node, part of the suite's 3.10 coverage; the
#: plain node beside it is 3.10 too, so the helpers give 3.x addresses for both.
pytestmark = pytest.mark.rabbitmq(3)



def declare(url: str, *queues: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = connection.channel()
        for queue in queues:
            ch.queue_declare(queue, arguments={"x-expires": 600_000})
    finally:
        connection.close()


def pika_take(url: str, queue: str, count: int) -> list[tuple[object, bytes]]:
    """Up to ``count`` messages from ``queue`` (acked), waiting up to 30 s for them."""
    got: list[tuple[object, bytes]] = []
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        ch = connection.channel()

        def more() -> bool:
            while len(got) < count:
                method, props, body = ch.basic_get(queue, auto_ack=True)
                if method is None:
                    return False
                got.append((props, body))
            return True

        wait_for(more, 30, f"{count} messages on {queue} (got {len(got)})")
    finally:
        connection.close()
    return got


def node(broker: TlsBroker) -> str:
    return broker.env["AMQP_BRIDGE_RABBITMQ_NODENAME"]


def test_091_routes_over_tls_with_plain_and_external(
        pki: Pki, rabbitmq_tls: TlsBroker, rabbitmq_url: str, tmp_path: Path) -> None:
    out_q, out_dst = unique_queue("tls091-out"), unique_queue("tls091-out-dst")
    in_src, in_q = unique_queue("tls091-in-src"), unique_queue("tls091-in")
    declare(rabbitmq_tls.url, out_q, in_q)
    send_messages(rabbitmq_tls.url, f"/amq/queue/{out_q}",
                  [Message(body=f"order {i}", id=f"o-{i}") for i in range(20)])
    send_messages(rabbitmq_url, queue_address(in_src),
                  [Message(body=f"reply {i}".encode(), inferred=True, id=f"r-{i}")
                   for i in range(20)])
    config = f"""
connections:
  rabbit:                 # 0-9-1 over TLS, PLAIN, hostname verified
    protocol: amqp0-9-1
    url: "{rabbitmq_tls.tls_url()}"
    tls: {{ca_file: {pki.ca_file}}}
  rabbit_ext:             # 0-9-1 over TLS, SASL EXTERNAL as the certificate's CN
    protocol: amqp0-9-1
    url: "{rabbitmq_tls.tls_url('')}"
    tls: {{ca_file: {pki.ca_file}, cert_file: {pki.client.cert}, key_file: {pki.client.key}}}
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
routes:
  - name: tls091-out
    from: {{connection: rabbit, queue: {out_q}}}
    to:   {{connection: cloud, address: /amq/queue/{out_dst}}}
  - name: tls091-in
    from: {{connection: cloud, address: {queue_address(in_src)}}}
    to:   {{connection: rabbit_ext, queue: {in_q}}}
"""
    declare(rabbitmq_url, out_dst)
    with BridgeRun(config, tmp_path) as bridge:
        got = receive_messages(rabbitmq_url, f"/amq/queue/{out_dst}", 20, timeout=30)
        replies = pika_take(rabbitmq_tls.url, in_q, 20)
        logins = rabbitmqctl_on(node(rabbitmq_tls), "list_connections", "user", "ssl",
                                "client_properties")
        log = bridge.log()
    assert [r.message.id for r in got] == [f"o-{i}" for i in range(20)]
    assert [body for _, body in replies] == [f"reply {i}".encode() for i in range(20)]
    # both over TLS; rabbit_ext logged in with EXTERNAL as the client certificate's CN
    lines = [line for line in logins.splitlines() if "rabbit" in line]
    assert any(line.startswith(f"{EXTERNAL_USER}\ttrue") and "rabbit_ext" in line
               for line in lines), logins
    assert any(line.startswith("guest\ttrue") for line in lines), logins
    assert "amqp0-9-1 rabbit: open" in log and "amqp0-9-1 rabbit_ext: open" in log, log
    assert not error_lines(log), log


FAULTS = {case: (userinfo, files, expected.replace("amqp1.0 cloud:", "amqp0-9-1 rabbit:"))
          for case, (userinfo, files, expected) in AMQP10_FAULTS.items()}
"""The 1.0 side's cases, over 0-9-1: the same lines but for RabbitMQ's words on a login."""
FAULTS["wrong-password"] = (
    "guest:not-the-password@", {"ca_file": "ca_file"},
    "amqp0-9-1 rabbit: authentication failed: ACCESS_REFUSED - Login was refused using "
    "authentication mechanism PLAIN. For details see the broker logfile. "
    "(check the user and password / sasl_mechanisms)")


@pytest.mark.parametrize("case", sorted(FAULTS))
def test_091_permanent_fault_exits_with_the_documented_message(
        case: str, pki: Pki, rabbitmq_tls: TlsBroker, rabbitmq_url: str,
        tmp_path: Path) -> None:
    """A refused certificate or login on a 0-9-1 connection is a permanent fault, as on a
    0-10 or 1.0 one: one ERROR line, no second attempt, exit status 3."""
    userinfo, files, expected = FAULTS[case]
    tls = ", ".join(f"{key}: {_pki_path(pki, attr)}" for key, attr in files.items())
    config = f"""
connections:
  rabbit:
    protocol: amqp0-9-1
    url: "{rabbitmq_tls.tls_url(userinfo)}"
    reconnect: {{initial_delay: 0.05, max_delay: 0.1}}   # a retry storm would show at once
    tls: {{{tls}}}
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
routes:
  - name: orders-out
    from: {{connection: rabbit, queue: {unique_queue("tls091-fault")}}}
    to:   {{connection: cloud, address: {queue_address(unique_queue("tls091-fault"))}}}
"""
    status, log = run_until_exit(config, tmp_path)
    assert status == 3, log
    assert error_lines(log) == [f"bridge.legacy.amqp091 {expected}"], log
    attempts = [r for r in records(log) if r.get("event") == "connecting"
                and r.get("connection") == "rabbit"]
    assert len(attempts) == 1, log
    assert "not-the-password" not in log


def test_091_target_publishes_nothing_while_rabbitmq_blocks_the_connection(
        rabbitmq_tls: TlsBroker, rabbitmq_url: str, tmp_path: Path) -> None:
    """RabbitMQ's memory alarm (the suite's own node: watermark 0) blocks a connection that
    publishes, with ``connection.blocked``: the route logs it with the broker's reason and
    keeps what it took; once the alarm clears (``connection.unblocked``) every message
    goes, in order, none lost. (RabbitMQ also stops reading a blocked connection, so that
    the bridge itself sends nothing meanwhile is shown without a broker, in
    ``tests/bridge/test_amqp091_endpoint.py``.)"""
    source, bound = unique_queue("blk091-src"), unique_queue("blk091-dst")
    declare(rabbitmq_tls.url, bound)
    config = f"""
connections:
  rabbit: {{protocol: amqp0-9-1, url: "{rabbitmq_tls.url}"}}
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
routes:
  - name: blk091
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: rabbit, queue: {bound}}}
"""
    with BridgeRun(config, tmp_path) as bridge:
        wait_for(lambda: "event=route_ready route=blk091" in bridge.log(), 20,
                 "the route ready", bridge)
        try:
            rabbitmqctl_on(node(rabbitmq_tls), "set_vm_memory_high_watermark", "0")
            # RabbitMQ blocks (and says so) a connection that publishes during an alarm
            send_messages(rabbitmq_url, queue_address(source),
                          [Message(body=f"held {i}".encode(), inferred=True, id=f"h-{i}")
                           for i in range(10)])
            wait_for(lambda: "event=blocked" in bridge.log(), 20, "connection.blocked", bridge)
            # the route takes the messages (1.0 credit) but publishes no more
            wait_for(lambda: queue_depth(rabbitmq_url, source) == 0, 20,
                     "the bridge to take the messages", bridge)
            assert queue_depth(rabbitmq_tls.url, bound) == 0
        finally:
            rabbitmqctl_on(node(rabbitmq_tls), "set_vm_memory_high_watermark", "0.4")
        wait_for(lambda: "event=unblocked" in bridge.log(), 20, "connection.unblocked",
                 bridge)
        got = pika_take(rabbitmq_tls.url, bound, 10)
        log = bridge.log()
    assert [props.message_id for props, _ in got] == [f"h-{i}" for i in range(10)]  # type: ignore[attr-defined]
    blocked = [r for r in records(log) if r.get("event") == "blocked"]
    assert blocked and "memory" in blocked[0]["reason"], log


