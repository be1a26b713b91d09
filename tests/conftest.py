"""Fixtures shared by the whole test suite.

Keep this file small: each area of the suite puts its own fixtures in its own
sub-directory's conftest.py.
"""

import pytest

from tests.support.rabbitmq import ensure_rabbitmq


@pytest.fixture(scope="session")
def rabbitmq_url() -> str:
    """AMQP URL of the project's RabbitMQ (installed and started if needed).

    Fails, never skips, when the broker cannot be had: see docs/testing.md.
    """
    return ensure_rabbitmq()
