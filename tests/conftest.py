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
from tests.support.rabbitmq import (
    default_version,
    ensure_node,
    ensure_rabbitmq4,
    use_version,
    version_of,
)


def _marked_versions(item: pytest.Function | pytest.Metafunc) -> tuple[int, ...]:
    marker = item.definition.get_closest_marker("rabbitmq") if isinstance(
        item, pytest.Metafunc) else item.get_closest_marker("rabbitmq")
    return tuple(marker.args) if marker is not None else ()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked ``rabbitmq(3, 4)`` gets ``rabbitmq_url`` once per version."""
    versions = _marked_versions(metafunc)
    if versions and "rabbitmq_url" in metafunc.fixturenames:
        metafunc.parametrize("rabbitmq_url", versions, indirect=True, scope="session",
                             ids=[f"rabbitmq{v}" for v in versions])

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
    config.addinivalue_line(
        "markers", "rabbitmq(*versions): run against these RabbitMQ versions (3, 4) "
        "instead of the default one (AMQP_BRIDGE_RABBITMQ_VERSION); each test once per "
        "version through the rabbitmq_url fixture")
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
def rabbitmq_url(request: pytest.FixtureRequest) -> str:
    """AMQP URL of the project's RabbitMQ (installed and started if needed): the node
    of ``AMQP_BRIDGE_RABBITMQ_VERSION`` (3: 3.10, 4: 4.0), or of the version a
    ``rabbitmq(...)`` marker parametrizes.

    Fails, never skips, when the broker cannot be had: see docs/testing.md.
    """
    version = getattr(request, "param", None) or default_version()
    url = ensure_node(version)
    use_version(version)
    return url


@pytest.fixture(autouse=True)
def _rabbitmq_version_in_use(request: pytest.FixtureRequest) -> None:
    """The address helpers of tests.support.rabbitmq give the forms of the node this
    test uses: its ``rabbitmq_url``'s, else the one version it is marked with, else
    the default."""
    if "rabbitmq_url" in request.fixturenames:
        use_version(version_of(request.getfixturevalue("rabbitmq_url")))
        return
    versions = _marked_versions(request.node) if isinstance(request.node, pytest.Function) else ()
    use_version(versions[0] if len(versions) == 1 else default_version())


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
