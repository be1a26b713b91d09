"""``amqp-bridge run`` over TLS on both sides, and its permanent faults.

The 0-10 side is the in-memory 0-10 broker served by the engine's ``EngineServer``
with a TLS context; the 1.0 side is a RabbitMQ node with a TLS listener
(``rabbitmq_tls``).  Certificates are made per session by ``tests.support.certs``.

A refused certificate or login is a permanent fault: the bridge logs one ERROR
line (the exact text is documented in docs/operations.md, "Security"), makes no
further attempt and exits with status 3.
"""

from __future__ import annotations

import selectors
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from proton import Message

from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from tests.security.conftest import EXTERNAL_USER, TlsBroker
from tests.support.bridge import BridgeRun
from tests.support.certs import Issued, Pki
from tests.support.logs import records
from tests.support.rabbitmq import (
    queue_address,
    receive_messages,
    send_messages,
    unique_queue,
)

KEY_PASSWORD = "k3y-pa55phrase-for-the-client"
EXIT_TIMEOUT = 20.0
"""Seconds within which the bridge must have exited after a permanent fault."""

#: The TLS node (rabbitmq_tls) is a 3.10 node, part of the suite's 3.10 coverage; the
#: plain node beside it is 3.10 too, so the helpers give 3.x addresses for both.
pytestmark = pytest.mark.rabbitmq(3)



class CountingServer(EngineServer):
    """An EngineServer that counts TCP connections (attempts), handshakes or not."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.attempts = 0

    def _accept(self, sel: selectors.BaseSelector) -> None:
        self.attempts += 1
        super()._accept(sel)


def _peer_cn(sock: socket.socket) -> str | None:
    if not isinstance(sock, ssl.SSLSocket):
        return None
    for rdn in (sock.getpeercert() or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


def legacy_server(pki: Pki, broker: Broker, presenting: Issued | None = None) -> CountingServer:
    """The 0-10 test broker behind TLS (client certificates optional, EXTERNAL by CN)."""
    ctx = pki.server_context(presenting)
    return CountingServer(lambda sock: broker.connection(external_identity=_peer_cn(sock)),
                          ssl_context=ctx).start()


LEGACY_USER = "legacy-app"
"""A 0-10 login of its own: ``guest`` is the RabbitMQ password, so logs mask it."""


@pytest.fixture
def broker() -> Broker:
    return Broker(users={"guest": "guest", LEGACY_USER: "legacy-pa55"})


@pytest.fixture
def encrypted_client_key(pki: Pki, tmp_path: Path) -> tuple[Issued, Path]:
    """A client certificate whose key is encrypted; its password is in a file."""
    issued = pki.authority.issue(tmp_path, "client-enc", EXTERNAL_USER, hosts=(), client=True,
                                 key_password=KEY_PASSWORD)
    secret = tmp_path / "key-password"
    secret.write_text(KEY_PASSWORD + "\n")
    return issued, secret


def run_until_exit(config: str, tmp_path: Path, name: str = "bridge") -> tuple[int, str]:
    """Run the bridge; return (exit status, log) once it exits on its own."""
    run = BridgeRun(config, tmp_path, name).start()
    assert run.proc is not None
    try:
        status = run.proc.wait(EXIT_TIMEOUT)
    except Exception:
        run.stop()
        raise AssertionError(f"the bridge did not exit within {EXIT_TIMEOUT}s:\n{run.log()}") \
            from None
    return status, run.log()


def error_lines(log: str) -> list[str]:
    """``"logger message"`` of every ERROR line of a structured log."""
    return [f"{r['logger']} {r['msg']}" for r in records(log) if r.get("level") == "error"]


# --- messages over TLS ------------------------------------------------------------------------


def test_messages_flow_over_tls_on_both_sides_with_external_and_plain(
        pki: Pki, rabbitmq_tls: TlsBroker, broker: Broker, tmp_path: Path,
        encrypted_client_key: tuple[Issued, Path]) -> None:
    client, key_password_file = encrypted_client_key
    server = legacy_server(pki, broker)
    out_q, in_q = unique_queue("tls-out"), unique_queue("tls-in")
    port = server.address[1]
    with BlockingClient.connect(f"amqps://guest:guest@localhost:{port}",
                                ssl_context=pki.client_context()) as c:
        c.declare_queue("orders")
        c.declare_queue("replies")
        c.bind("replies", "amq.direct", "replies")
        for i in range(20):
            c.publish(f"order {i}".encode(), routing_key="orders", wait=(i == 19))
    send_messages(rabbitmq_tls.url, queue_address(in_q),
                  [Message(body=f"reply {i}") for i in range(20)])
    config = f"""
connections:
  legacy:                 # 0-10 over TLS, SASL EXTERNAL with an encrypted client key
    protocol: amqp0-10
    url: "amqps://localhost:{port}"
    heartbeat: 0
    tls:
      ca_file: {pki.ca_file}
      cert_file: {client.cert}
      key_file: {client.key}
      key_password: "${{file:{key_password_file}}}"
  cloud:                  # 1.0 over TLS, PLAIN, hostname verified
    protocol: amqp1.0
    url: "{rabbitmq_tls.tls_url()}"
    tls: {{ca_file: {pki.ca_file}}}
  cloud_ext:              # 1.0 over TLS, SASL EXTERNAL as the certificate's CN
    protocol: amqp1.0
    url: "{rabbitmq_tls.tls_url('')}"
    tls: {{ca_file: {pki.ca_file}, cert_file: {pki.client.cert}, key_file: {pki.client.key}}}
routes:
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {queue_address(out_q)}}}
  - name: replies-in
    from: {{connection: cloud_ext, address: {queue_address(in_q)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: replies}}
"""
    run = BridgeRun(config, tmp_path).start()
    try:
        got = receive_messages(rabbitmq_tls.url, queue_address(out_q), 20, timeout=30)
        with BlockingClient.connect(f"amqps://guest:guest@localhost:{port}",
                                    ssl_context=pki.client_context()) as c:
            c.subscribe("replies", messages=20)
            replies = [c.receive("replies", timeout=30) for _ in range(20)]
            c.accept(*replies)
    finally:
        status = run.stop()
        server.stop()
    log = run.log()
    assert status == 0, log
    assert [bytes(r.message.body) for r in got] == [f"order {i}".encode() for i in range(20)]
    assert [r.body for r in replies] == [f"reply {i}".encode() for i in range(20)]
    # the legacy connection logged in with EXTERNAL as the client certificate's CN
    users = [e.user for bc in broker.connections for e in bc.seen
             if type(e).__name__ == "ConnectionOpened"]
    assert EXTERNAL_USER in users, users
    assert "amqp1.0 cloud: open" in log and "amqp1.0 cloud_ext: open" in log, log
    assert KEY_PASSWORD not in log and not error_lines(log), log


def test_a_refused_certificate_on_one_url_moves_on_to_the_next(
        pki: Pki, rabbitmq_url: str, broker: Broker, tmp_path: Path) -> None:
    bad = legacy_server(pki, broker, presenting=pki.expired_server)
    good = legacy_server(pki, broker)
    target = unique_queue("tls-failover")
    with BlockingClient.connect(f"amqps://guest:guest@localhost:{good.address[1]}",
                                ssl_context=pki.client_context()) as c:
        c.declare_queue("orders")
        c.publish(b"via the second url", routing_key="orders")
    config = f"""
connections:
  legacy:
    protocol: amqp0-10
    url: "amqps://guest:guest@localhost:{bad.address[1]}"
    failover: ["amqps://guest:guest@localhost:{good.address[1]}"]
    heartbeat: 0
    tls: {{ca_file: {pki.ca_file}}}
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
routes:
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
"""
    run = BridgeRun(config, tmp_path).start()
    try:
        got = receive_messages(rabbitmq_url, queue_address(target), 1, timeout=30)
    finally:
        status = run.stop()
        bad.stop()
        good.stop()
    log = run.log()
    assert status == 0 and bytes(got[0].message.body) == b"via the second url", log
    assert error_lines(log) == [
        "bridge.legacy.amqp010 amqp0-10 legacy: TLS certificate verify failed: certificate has expired "
        "(check tls.ca_file / the broker's certificate)"], log
    assert bad.attempts == 1, log


# --- permanent faults ------------------------------------------------------------------------


@pytest.fixture
def plain_legacy(broker: Broker) -> Iterator[EngineServer]:
    """A plain 0-10 broker for the other side of a route whose 1.0 side fails."""
    server = broker.serve()
    yield server
    server.stop()


def _legacy_fault_config(url: str, pki: Pki, rabbitmq_url: str, extra: str = "") -> str:
    return f"""
connections:
  legacy:
    protocol: amqp0-10
    url: "{url}"
    heartbeat: 0
    reconnect: {{initial_delay: 0.05, max_delay: 0.1}}   # a retry storm would show at once
    tls: {{ca_file: {pki.ca_file}{extra}}}
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
routes:
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {queue_address(unique_queue("tls-fault"))}}}
"""


LEGACY_FAULTS = {
    "expired": (
        "expired_server", "guest:guest@localhost",
        "amqp0-10 legacy: TLS certificate verify failed: certificate has expired "
        "(check tls.ca_file / the broker's certificate)"),
    "wrong-host": (
        "wrong_host_server", "guest:guest@localhost",
        "amqp0-10 legacy: TLS certificate verify failed: Hostname mismatch, certificate is not "
        "valid for 'localhost' (check the URL's host or tls.server_name / the broker's "
        "certificate)"),
    "other-ca": (
        "rogue_server", "guest:guest@localhost",
        "amqp0-10 legacy: TLS certificate verify failed: unable to get local issuer certificate "
        "(check tls.ca_file / the broker's certificate)"),
    "wrong-password": (
        "server", f"{LEGACY_USER}:not-the-password@localhost",
        f"amqp0-10 legacy: authentication failed: bad credentials for '{LEGACY_USER}' "
        "(check the user and password / sasl_mechanisms)"),
}


@pytest.mark.parametrize("case", sorted(LEGACY_FAULTS))
def test_legacy_permanent_fault_exits_with_the_documented_message(
        case: str, pki: Pki, rabbitmq_url: str, broker: Broker, tmp_path: Path) -> None:
    presenting, userinfo, expected = LEGACY_FAULTS[case]
    server = legacy_server(pki, broker, presenting=getattr(pki, presenting))
    try:
        status, log = run_until_exit(_legacy_fault_config(
            f"amqps://{userinfo}:{server.address[1]}", pki, rabbitmq_url), tmp_path)
        attempts = server.attempts
    finally:
        server.stop()
    assert status == 3, log
    assert error_lines(log) == [f"bridge.legacy.amqp010 {expected}"], log
    assert attempts == 1, f"{attempts} connection attempts:\n{log}"  # no retry storm
    assert "not-the-password" not in log


AMQP10_FAULTS = {
    "other-ca": (
        "guest:guest@", {"ca_file": "other_ca_file"},
        "amqp1.0 cloud: TLS certificate verify failed: self-signed certificate in certificate "
        "chain (check tls.ca_file / the broker's certificate)"),
    "expired-client-cert": (
        "", {"ca_file": "ca_file", "cert_file": "expired_client.cert",
             "key_file": "expired_client.key"},
        "amqp1.0 cloud: TLS handshake refused by the peer: certificate expired "
        "(check tls.cert_file / tls.key_file)"),
    "wrong-password": (
        "guest:not-the-password@", {"ca_file": "ca_file"},
        "amqp1.0 cloud: authentication failed: Authentication failed [mech=PLAIN] "
        "(check the user and password / sasl_mechanisms)"),
}


def _pki_path(pki: Pki, dotted: str) -> Path:
    value: object = pki
    for part in dotted.split("."):
        value = getattr(value, part)
    assert isinstance(value, Path)
    return value


@pytest.mark.parametrize("case", sorted(AMQP10_FAULTS))
def test_amqp10_permanent_fault_exits_with_the_documented_message(
        case: str, pki: Pki, rabbitmq_tls: TlsBroker, plain_legacy: EngineServer,
        tmp_path: Path) -> None:
    userinfo, files, expected = AMQP10_FAULTS[case]
    tls = ", ".join(f"{key}: {_pki_path(pki, attr)}" for key, attr in files.items())
    config = f"""
connections:
  legacy: {{protocol: amqp0-10, url: "{plain_legacy.url.replace('amqp://', 'amqp://guest:guest@')}", heartbeat: 0}}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_tls.tls_url(userinfo)}"
    reconnect: {{initial_delay: 0.05, max_delay: 0.1}}   # a retry storm would show at once
    tls: {{{tls}}}
routes:
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {queue_address(unique_queue("tls-fault"))}}}
"""
    status, log = run_until_exit(config, tmp_path)
    assert status == 3, log
    assert error_lines(log) == [f"bridge.app {expected}"], log
    # one attempt: the bridge logs each one it makes
    attempts = [r for r in records(log) if r.get("event") == "connecting"
                and r.get("peer", "").endswith(f":{rabbitmq_tls.tls_port}")]
    assert len(attempts) == 1, log
    assert "not-the-password" not in log
