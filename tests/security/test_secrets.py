"""No secret ever reaches ``amqp-bridge check`` output, ``amqp-bridge run`` logs or an
error message: the test puts every kind of secret in a configuration (URL passwords
from the environment and from a file, a plain façade password from a file, a hashed
one, an encrypted TLS key's password from the environment), drives the paths that
talk about them (logins that succeed and fail, a permanent fault, an invalid
configuration) and greps stdout and stderr for each."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient, ClientError
from bridge.security.passwords import hash_password
from tests.support.bridge import BridgeRun, free_port
from tests.support.certs import Pki
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue

ROOT = Path(__file__).resolve().parents[2]
LEGACY_PASSWORD = "legacy-Pa55-from-env"
FACADE_PASSWORD = "facade-Pa55-from-file"
HASHED_PASSWORD = "hashed-Pa55-of-ops"
KEY_PASSWORD = "server-key-Pa55-from-env"
WRONG_PASSWORD = "attempted-Wr0ng-Pa55"


def _grep(text: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s in text]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bridge.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def test_no_secret_in_check_output_logs_or_errors(pki: Pki, rabbitmq_url: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    hashed = hash_password(HASHED_PASSWORD, iterations=10_000)
    secrets = [LEGACY_PASSWORD, FACADE_PASSWORD, HASHED_PASSWORD, hashed, KEY_PASSWORD,
               WRONG_PASSWORD]
    facade_pw_file = tmp_path / "facade-password"
    facade_pw_file.write_text(FACADE_PASSWORD + "\n")
    server_cert = pki.authority.issue(tmp_path, "facade", "localhost", key_password=KEY_PASSWORD)
    broker = Broker(users={"legacy-app": LEGACY_PASSWORD})
    legacy = broker.serve()
    port = legacy.address[1]
    with BlockingClient.connect(f"amqp://legacy-app:{LEGACY_PASSWORD}@127.0.0.1:{port}") as c:
        c.declare_queue("orders")
        c.publish(b"one", routing_key="orders")
    target = unique_queue("secrets")
    facade_port = free_port()
    config = f"""
connections:
  legacy: {{protocol: amqp0-10, url: "amqp://legacy-app:${{LEGACY_PASSWORD}}@127.0.0.1:{port}",
            heartbeat: 0}}
  cloud:  {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  facade:
    protocol: amqp0-10
    bind: "127.0.0.1:{facade_port}"
    users:
      app: "${{file:{facade_pw_file}}}"
      ops: "{hashed}"
    tls: {{cert_file: {server_cert.cert}, key_file: {server_cert.key},
           key_password: "${{KEY_PASSWORD}}"}}
routes:
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
  - name: facade-out
    from: {{listener: facade, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
"""
    env = {**os.environ, "LEGACY_PASSWORD": LEGACY_PASSWORD, "KEY_PASSWORD": KEY_PASSWORD,
           "PYTHONUNBUFFERED": "1"}

    # check: a valid configuration, and an invalid one carrying the same secrets
    (tmp_path / "bridge.yaml").write_text(config)
    ok = _cli("check", "-c", str(tmp_path / "bridge.yaml"), env=env)
    assert ok.returncode == 0, ok.stderr
    assert "listener facade: amqp0-10" in ok.stdout and "legacy-app:***@" in ok.stdout
    # (the secret variable put where a value is echoed: "'...' is not host:port")
    (tmp_path / "broken.yaml").write_text(
        config.replace("heartbeat: 0", "heartbeat: -1").replace(f":{port}\"", ":notaport\"")
        .replace(f'bind: "127.0.0.1:{facade_port}"', 'bind: "${KEY_PASSWORD}"'))
    broken = _cli("check", "-c", str(tmp_path / "broken.yaml"), env=env)
    assert broken.returncode == 2 and "connections.legacy.url" in broken.stderr, broken.stderr
    assert "connections.legacy.heartbeat" in broken.stderr, broken.stderr
    assert "listeners.facade.bind: '***' is not host:port" in broken.stderr, broken.stderr
    for out in (ok.stdout, ok.stderr, broken.stdout, broken.stderr):
        assert _grep(out, secrets) == [], out

    # run: logins that succeed and fail on the façade, the legacy route moving a message
    monkeypatch.setenv("LEGACY_PASSWORD", LEGACY_PASSWORD)
    monkeypatch.setenv("KEY_PASSWORD", KEY_PASSWORD)
    run = BridgeRun(config, tmp_path, "run").start()
    try:
        receive_messages(rabbitmq_url, queue_address(target), 1, timeout=30)
        url = f"amqps://{{}}@localhost:{facade_port}"
        ctx = pki.client_context()
        _wait_listening(facade_port, run)
        for userinfo in (f"app:{FACADE_PASSWORD}", f"ops:{HASHED_PASSWORD}"):
            BlockingClient.connect(url.format(userinfo), ssl_context=ctx).close()
        for userinfo in (f"app:{WRONG_PASSWORD}", f"ops:{WRONG_PASSWORD}",
                         f"nobody:{WRONG_PASSWORD}"):
            with pytest.raises(ClientError):
                BlockingClient.connect(url.format(userinfo), ssl_context=ctx)
        _wait_for(run, "façade facade: 127.0.0.1", "login refused: bad credentials for 'nobody'")
    finally:
        run.stop()
        legacy.stop()
    log = run.log()
    assert log.count("login refused: bad credentials") == 3, log
    assert "logged in as 'app'" in log and "logged in as 'ops'" in log, log
    assert _grep(log, secrets) == [], log

    # run: a permanent fault (the legacy broker refuses the login) and its messages
    broker2 = Broker(users={"legacy-app": "another-password"})
    refusing = EngineServer(lambda sock: broker2.connection()).start()
    try:
        faulty = config.replace(f"127.0.0.1:{port}", f"127.0.0.1:{refusing.address[1]}")
        (tmp_path / "faulty.yaml").write_text(faulty)
        done = _cli("run", "-c", str(tmp_path / "faulty.yaml"), env=env)
    finally:
        refusing.stop()
    assert done.returncode == 3, done.stderr
    assert "amqp0-10 legacy: authentication failed: bad credentials for 'legacy-app'" \
        in done.stderr, done.stderr
    assert _grep(done.stdout + done.stderr, secrets) == [], done.stderr




def _wait_listening(port: int, run: BridgeRun, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if f"listening on 127.0.0.1:{port}" in run.log():
            return
        time.sleep(0.05)
    raise AssertionError(f"the façade did not listen:\n{run.log()}")


def _wait_for(run: BridgeRun, *texts: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log = run.log()
        if all(t in log for t in texts):
            return
        time.sleep(0.05)
    raise AssertionError(f"{texts} not logged:\n{run.log()}")
