"""What a client or a message gets refused for is logged (rate-limited) and counted, and a
client speaking another protocol is told apart (issue "Hostile input", item 8)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from proton import Message

from amqp010.spec import ErrorCode
from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import BridgeRun, free_port, wait_for, wait_listening
from tests.support.logs import records
from tests.support.metrics import poll, scrape
from tests.support.rabbitmq import queue_address, send_messages, unique_queue

LONG_KEY = "k" * 300  # a 0-10 header key holds at most 255 octets: cannot be mapped


def test_refusals_are_logged_counted_and_named(rabbitmq_url: str, tmp_path: Path) -> None:
    port, metrics = free_port(), free_port()
    jobs, events = unique_queue("refused-jobs"), unique_queue("refused-events")
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
metrics: {{bind: "127.0.0.1:{metrics}"}}
routes:
  - name: jobs
    from: {{connection: cloud, address: {queue_address(jobs)}}}
    to:   {{listener: app, queue: jobs}}
  - name: events
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(events)}}}
"""
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)
        # 1. messages rejected for a mapping error, without a dead-letter address: one
        #    WARNING line (not one per message), the reason in it
        send_messages(rabbitmq_url, queue_address(jobs),
                      [Message(body=f"bad {i}", properties={LONG_KEY: i}) for i in range(5)])
        with BlockingClient.connect(f"amqp://127.0.0.1:{port}") as client:
            client.subscribe("jobs")
            wait_for(lambda: scrape(metrics).value("amqp_bridge_rejected_total",
                                                   route="jobs") == 5, 20, "5 rejections")
            assert client.pending("jobs") == 0
        # 2. a publish to an exchange the façade does not have: logged and counted
        with BlockingClient.connect(f"amqp://127.0.0.1:{port}") as client, \
                pytest.raises(ClientError) as refused:
            client.publish(b"lost?", exchange="nowhere", wait=True)
        assert refused.value.event.error_code == ErrorCode.NOT_FOUND
        poll(lambda: scrape(metrics), lambda s: s.value(
            "amqp_bridge_publishes_refused_total", listener="app") == 1, 20, "the refusal")
        # 3. an AMQP 1.0 client and a TLS client on the plain 0-10 port
        for hello in (b"AMQP\x03\x01\x00\x00", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(hello)
                assert sock.recv(64) in (b"AMQP\x01\x01\x00\x0a", b"")  # ours, then closed
        wait_for(lambda: "TLS (a ClientHello" in bridge.log(), 10, "the TLS client named")
        assert bridge.stop() == 0, bridge.log()
    lines = records(bridge.log())
    rejected = [r for r in lines if r.get("event") == "message_rejected"]
    assert len(rejected) == 1 and rejected[0]["level"] == "warning", rejected
    assert rejected[0]["route"] == "jobs" and "cannot translate" in rejected[0]["error"]
    [publish] = [r for r in lines if r.get("event") == "publish_refused"]
    assert publish["level"] == "warning" and "exchange 'nowhere' not found" in publish["error"]
    closed = " ".join(str(r.get("error", "")) for r in lines if r.get("event") == "client_closed")
    assert "the peer speaks AMQP 1.0 (SASL layer), not AMQP 0-10" in closed
    assert "TLS (a ClientHello: the client uses TLS, this port does not)" in closed


def test_bad_credentials_warn_once_per_address_every_10s(rabbitmq_url: str,
                                                         tmp_path: Path) -> None:
    """Found by the attack mix (tests/security/test_attack_mix.py): a client guessing
    passwords got one WARNING line per guess (over a thousand a minute).  Now one per client
    address every 10 s, saying how many it held back; the others are INFO lines."""
    from amqp010.events import ConnectionClosed
    from tests.support.logins import RawLogin

    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", users: {{app: right}}}}
logging: {{format: json}}
routes:
  - name: events
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(unique_queue("refused-logins"))}}}
"""
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)
        for source, count in (("127.0.0.2", 10), ("127.0.0.3", 2)):
            for i in range(count):
                login = RawLogin(source, port, f"nobody{i}")
                answer = login.answer()
                login.close()
                assert isinstance(answer, ConnectionClosed)
                assert answer.text == f"authentication failed: bad credentials for 'nobody{i}'"
        wait_for(lambda: sum(r.get("event") == "login_refused"
                             for r in records(bridge.log())) == 12, 10, "12 refusals logged")
    refused = [r for r in records(bridge.log()) if r.get("event") == "login_refused"]
    warnings = [r for r in refused if r["level"] == "warning"]
    assert [r["peer"].rpartition(":")[0] for r in warnings] == ["127.0.0.2", "127.0.0.3"]
    assert [r["level"] for r in refused].count("info") == 10
    assert all("bad credentials for 'nobody" in r["error"] for r in refused)
