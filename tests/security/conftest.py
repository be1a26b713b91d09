"""Fixtures of the security tests: a throw-away PKI and a RabbitMQ node with a TLS listener.

The TLS node is a second node of its own (``scripts/rabbitmq`` with
``AMQP_BRIDGE_RABBITMQ_TLS_DIR``) on free ports, so the shared plain node is never
touched; it is stopped when the test session ends.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.certs import Pki, make_pki
from tests.support.rabbitmq import rabbitmqctl_on

ROOT = Path(__file__).resolve().parents[2]
EXTERNAL_USER = "bridge-client"
"""CN of the client certificate; RabbitMQ logs it in with SASL EXTERNAL."""


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"), client_cn=EXTERNAL_USER)


@dataclass(frozen=True)
class TlsBroker:
    """The TLS RabbitMQ node: ``amqps://localhost:TLS_PORT`` (guest/guest, or EXTERNAL)."""

    port: int
    tls_port: int
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}"

    def tls_url(self, userinfo: str = "guest:guest@") -> str:
        return f"amqps://{userinfo}localhost:{self.tls_port}"


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ephemeral_high() -> int:
    """The highest port the kernel hands out to outgoing connections."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 60999  # Linux's default


def _free_ports() -> tuple[int, int]:
    """A port P with P+1 (TLS) and P+20000 (Erlang distribution) free too.

    P+20000 is kept above the kernel's ephemeral range where it can: the node binds it
    seconds after this check, and an outgoing connection of another test that got it
    meanwhile made the node fail to start (``dist_port_already_used``)."""
    low = max(1024, min(_ephemeral_high() + 1 - 20000, 45534))
    for _ in range(200):
        port = random.randint(low, 45534)
        if all(_free(p) for p in (port, port + 1, port + 20000)):
            return port, port + 1
    raise RuntimeError("no free ports for the TLS RabbitMQ node")


def _script(env: dict[str, str], command: str, timeout: float = 180) -> str:
    done = subprocess.run([str(ROOT / "scripts" / "rabbitmq"), command], env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"scripts/rabbitmq {command} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout.strip()


@pytest.fixture(scope="session")
def rabbitmq_tls(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    """A RabbitMQ node with a TLS listener presenting ``pki.server`` and trusting ``pki``'s
    CA for client certificates; the user ``bridge-client`` exists for EXTERNAL."""
    tls_dir = tmp_path_factory.mktemp("rabbitmq-tls-certs")
    shutil.copy(pki.ca_file, tls_dir / "ca.pem")
    shutil.copy(pki.server.cert, tls_dir / "server.pem")
    shutil.copy(pki.server.key, tls_dir / "server.key")
    port, tls_port = _free_ports()
    env = {**os.environ,
           "AMQP_BRIDGE_RABBITMQ_PORT": str(port),
           "AMQP_BRIDGE_RABBITMQ_TLS_PORT": str(tls_port),
           "AMQP_BRIDGE_RABBITMQ_NODENAME": f"amqp_bridge_tls_{port}@localhost",
           "AMQP_BRIDGE_RABBITMQ_DIR": str(tmp_path_factory.mktemp("rabbitmq-tls-node")),
           "AMQP_BRIDGE_RABBITMQ_TLS_DIR": str(tls_dir)}
    try:
        _script(env, "start")
        rabbitmqctl_on(env["AMQP_BRIDGE_RABBITMQ_NODENAME"], "add_user", EXTERNAL_USER, os.urandom(18).hex())
        rabbitmqctl_on(env["AMQP_BRIDGE_RABBITMQ_NODENAME"], "set_permissions", "-p", "/", EXTERNAL_USER, ".*", ".*", ".*")
        yield TlsBroker(port, tls_port, env)
    finally:
        _script(env, "stop")
