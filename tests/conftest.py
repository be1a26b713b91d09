"""Fixtures shared by the whole test suite.

Keep this file small: each area of the suite puts its own fixtures in its own
sub-directory's conftest.py.
"""

from collections.abc import Iterator

import pytest

from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from tests.support.bridge import legacy_broker
from tests.support.rabbitmq import ensure_rabbitmq, ensure_rabbitmq4


@pytest.fixture(scope="session")
def rabbitmq_url() -> str:
    """AMQP URL of the project's RabbitMQ (installed and started if needed).

    Fails, never skips, when the broker cannot be had: see docs/testing.md.
    """
    return ensure_rabbitmq()


@pytest.fixture(scope="session")
def rabbitmq4_url() -> str:
    """AMQP URL of the project's RabbitMQ 4.0 node (``scripts/rabbitmq4``; installed and
    started if needed), beside the 3.10 one. Fails, never skips."""
    return ensure_rabbitmq4()


@pytest.fixture
def legacy() -> Iterator[tuple[Broker, EngineServer]]:
    """The in-memory 0-10 broker served over TCP for one test (``(broker, server)``)."""
    with legacy_broker() as pair:
        yield pair
