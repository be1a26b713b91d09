"""Fixtures of the security tests: a throw-away PKI and a RabbitMQ node with a TLS listener.

The TLS node is a second node of its own (``scripts/rabbitmq`` with
``AMQP_BRIDGE_RABBITMQ_TLS_DIR``, through ``private_rabbitmq``) on free ports, so the
shared plain node is never touched; it is stopped when the test session ends (with
pytest-xdist: each worker that runs a TLS test has one, in its own directory).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.certs import Pki, make_pki
from tests.support.rabbitmq import private_rabbitmq, rabbitmqctl_on

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


@pytest.fixture(scope="session")
def rabbitmq_tls(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    """A RabbitMQ node with a TLS listener presenting ``pki.server`` and trusting ``pki``'s
    CA for client certificates; the user ``bridge-client`` exists for EXTERNAL."""
    tls_dir = tmp_path_factory.mktemp("rabbitmq-tls-certs")
    shutil.copy(pki.ca_file, tls_dir / "ca.pem")
    shutil.copy(pki.server.cert, tls_dir / "server.pem")
    shutil.copy(pki.server.key, tls_dir / "server.key")
    with private_rabbitmq(tmp_path_factory.mktemp("rabbitmq-tls-node"),
                          AMQP_BRIDGE_RABBITMQ_TLS_DIR=str(tls_dir)) as node:
        rabbitmqctl_on(node.name, "add_user", EXTERNAL_USER, os.urandom(18).hex())
        rabbitmqctl_on(node.name, "set_permissions", "-p", "/", EXTERNAL_USER, ".*", ".*", ".*")
        yield TlsBroker(node.port, node.port + 1, node.env)
