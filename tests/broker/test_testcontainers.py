"""The Docker alternative to the Debian broker: chosen by an environment variable,
failing loudly (never skipping) where no Docker engine answers, as on CI here."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.rabbitmq import REPO_ROOT


def test_asking_for_testcontainers_without_docker_fails_naming_the_cause() -> None:
    assert not os.path.exists("/var/run/docker.sock") and "DOCKER_HOST" not in os.environ, \
        "this machine has a Docker engine: run the suite with AMQP_BRIDGE_RABBITMQ=testcontainers"
    done = subprocess.run(
        [sys.executable, "-c", "from tests.support.rabbitmq import ensure_rabbitmq; "
                               "ensure_rabbitmq()"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
        env={**os.environ, "AMQP_BRIDGE_RABBITMQ": "testcontainers"})
    assert done.returncode != 0
    assert "AMQP_BRIDGE_RABBITMQ=testcontainers: cannot start rabbitmq:3.10 in Docker" in \
        done.stderr, done.stderr[-2000:]
