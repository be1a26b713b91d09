"""The façade's TLS listener end to end: 0-10 clients (the engine's ``BlockingClient``
with an ``ssl_context``) log in to ``amqp-bridge run`` with a hashed PLAIN password,
a ``users_file`` entry or SASL EXTERNAL (client certificate), and messages flow to
and from the shared RabbitMQ.  One bridge process serves the module.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from proton import Message

from amqp010.events import ConnectionClosed
from amqp010.spec import CloseCode
from amqp010.transport import BlockingClient, ClientError
from bridge.security.passwords import hash_password
from tests.security.conftest import EXTERNAL_USER
from tests.support.bridge import BridgeRun, free_port
from tests.support.certs import Issued, Pki
from tests.support.logs import records
from tests.support.rabbitmq import queue_address, receive_messages, send_messages, unique_queue

APP_USER, APP_PASSWORD = "app", "app-pa55word"
OPS_USER, OPS_PASSWORD = "ops", "ops-pa55word"
WRONG_PASSWORD = "Wr0ng-but-secret-looking"


@dataclass
class SecureFacade:
    port: int
    events: str
    jobs: str
    run: BridgeRun
    pki: Pki

    def connect(self, userinfo: str = f"{APP_USER}:{APP_PASSWORD}@", *,
                cert: Issued | None = None, external: bool = False) -> BlockingClient:
        return BlockingClient.connect(f"amqps://{userinfo}localhost:{self.port}",
                                      ssl_context=self.pki.client_context(cert),
                                      external=external, timeout=10)

    def wait_for_log(self, text: str, timeout: float = 10.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            log = self.run.log()
            if text in log:
                return log
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not logged:\n{self.run.log()}")




@pytest.fixture(scope="module")
def facade(pki: Pki, rabbitmq_url: str,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureFacade]:
    tmp = tmp_path_factory.mktemp("facade-tls")
    users_file = tmp / "users"
    users_file.write_text(f"# façade users\n{OPS_USER}:{hash_password(OPS_PASSWORD, iterations=10_000)}\n")
    events, jobs = unique_queue("facade-tls-events"), unique_queue("facade-tls-jobs")
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  secure:
    protocol: amqp0-10
    bind: "127.0.0.1:{port}"
    users: {{{APP_USER}: "{hash_password(APP_PASSWORD, iterations=10_000)}"}}
    users_file: {users_file}
    tls:
      cert_file: {pki.server.cert}
      key_file: {pki.server.key}
      ca_file: {pki.ca_file}
      client_certs: optional
routes:
  - name: events-out
    from: {{listener: secure, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(events)}}}
  - name: jobs-in
    from: {{connection: cloud, address: {queue_address(jobs)}}}
    to:   {{listener: secure, queue: jobs}}
"""
    run = BridgeRun(config, tmp, "facade").start()
    result = SecureFacade(port, events, jobs, run, pki)
    try:
        result.wait_for_log("façade secure: listening on", timeout=20)
        yield result
    finally:
        run.stop()


def test_plain_login_with_a_hashed_password_publishes_over_tls(facade: SecureFacade,
                                                               rabbitmq_url: str) -> None:
    with facade.connect() as client:
        for i in range(5):
            client.publish(f"event {i}".encode(), exchange="events", routing_key="e")
    got = receive_messages(rabbitmq_url, queue_address(facade.events), 5, timeout=20)
    assert [bytes(r.message.body) for r in got] == [f"event {i}".encode() for i in range(5)]
    facade.wait_for_log(f"logged in as '{APP_USER}'")


def test_users_file_login(facade: SecureFacade) -> None:
    with facade.connect(f"{OPS_USER}:{OPS_PASSWORD}@") as client:
        assert client.opened is not None and client.opened.user == OPS_USER
    facade.wait_for_log(f"logged in as '{OPS_USER}'")


def test_external_login_with_a_client_certificate_consumes(facade: SecureFacade,
                                                          rabbitmq_url: str) -> None:
    send_messages(rabbitmq_url, queue_address(facade.jobs),
                  [Message(body=f"job {i}") for i in range(3)])
    with facade.connect("", cert=facade.pki.client, external=True) as client:
        client.subscribe("jobs", messages=3)
        jobs = [client.receive("jobs", timeout=20) for _ in range(3)]
        client.accept(*jobs)
    assert sorted(j.body for j in jobs) == [f"job {i}".encode() for i in range(3)]
    facade.wait_for_log(f"presented a client certificate for '{EXTERNAL_USER}'")
    facade.wait_for_log(f"logged in as '{EXTERNAL_USER}'")


def test_wrong_password_is_refused_with_connection_forced(facade: SecureFacade) -> None:
    with pytest.raises(ClientError) as refused:
        facade.connect(f"{APP_USER}:{WRONG_PASSWORD}@")
    event = refused.value.event
    assert isinstance(event, ConnectionClosed) and event.code == CloseCode.CONNECTION_FORCED
    assert event.text == f"authentication failed: bad credentials for '{APP_USER}'"
    log = facade.wait_for_log(f"login refused: bad credentials for '{APP_USER}'")
    warning = [r for r in records(log) if r.get("event") == "login_refused"]
    assert warning and all(r["level"] == "warning" and r["logger"] == "bridge.facade"
                           and r["listener"] == "secure" and r["peer"].startswith("127.0.0.1:")
                           for r in warning), warning
    assert WRONG_PASSWORD not in log and APP_PASSWORD not in log


def test_untrusted_client_certificate_is_refused(facade: SecureFacade) -> None:
    with pytest.raises((ClientError, ssl.SSLError, OSError, TimeoutError)):
        facade.connect("", cert=facade.pki.rogue_client, external=True).close()
    facade.wait_for_log("TLS handshake failed: unable to get local issuer certificate")


def test_a_client_without_tls_is_refused(facade: SecureFacade) -> None:
    with pytest.raises((ClientError, OSError, TimeoutError)):
        BlockingClient.connect(f"amqp://{APP_USER}:{APP_PASSWORD}@127.0.0.1:{facade.port}",
                               timeout=5)
    facade.wait_for_log("TLS handshake failed:")
