"""Fixtures shared by the whole test suite.

Keep this file small: each area of the suite puts its own fixtures in its own
sub-directory's conftest.py.
"""

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from tests.support.bridge import legacy_broker
from tests.support.rabbitmq import ensure_rabbitmq, ensure_rabbitmq4

# No per-example deadline and no "generation too slow" check in any property test:
# several workers share two cores, so how long an example takes says nothing about the
# code (either would be a timed assertion). What the tests assert is unchanged.
settings.register_profile("amqp-bridge", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("amqp-bridge")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--serial-tests", choices=("run", "skip", "only"), default="run",
        help="tests marked serial: run them with the rest (default), leave them out (the "
             "parallel part of scripts/test) or run only them (its serial part)")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mode = config.getoption("serial_tests")
    if mode == "run":
        return
    wanted = mode == "only"
    keep = [item for item in items if (item.get_closest_marker("serial") is not None) == wanted]
    if len(keep) < len(items):
        kept = {id(item) for item in keep}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
        items[:] = keep


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        from tests.support.schedule import ModuleTimes

        config.pluginmanager.register(ModuleTimes(config), "amqp-bridge-module-times")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` (what ``scripts/test`` asks for): whole modules per worker,
    the longest first, modules sharing a costly session fixture together
    (tests/support/schedule.py)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.support.schedule import ModuleScheduling

    return ModuleScheduling(config, log)


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
