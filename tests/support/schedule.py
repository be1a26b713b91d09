"""How pytest-xdist hands the suite to its workers: whole modules, the longest first.

Theory of operation
-------------------
Most of the suite waits on brokers and subprocesses, so ``scripts/test`` runs it on
several pytest-xdist workers. A *work unit* (what one worker runs, start to end, in
file order) is a whole test module, as with ``--dist loadfile``: a module's fixtures
(one bridge per module, a module's own RabbitMQ node) are built once, and its tests
keep their order (the lifecycle phases depend on it). Modules named together in
:data:`SHARED_SESSION_FIXTURES` form one unit, so the expensive session fixture they
share (a TLS RabbitMQ node, a Spark JVM) starts once, not once per worker.

Units are handed out longest first (what a greedy schedule needs to finish all
workers close together): a unit's cost is the seconds its modules took in the last
run (setup, call and teardown, kept in pytest's cache by :class:`ModuleTimes`), or for
a module the cache does not know (a fresh clone, a new module) the estimate in
:data:`EXPECTED_SECONDS`, or half a second per test. The order only affects the wall
time, never what runs or what it asserts.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

CACHE_KEY = "amqp-bridge/module-seconds"
"""Where :class:`ModuleTimes` keeps the seconds each module took (pytest's cache)."""

SHARED_SESSION_FIXTURES: dict[str, str] = {
    # the rabbitmq_tls node (tests/security/conftest.py)
    "tests/security/test_bridge_tls.py": "rabbitmq-tls",
    "tests/security/test_bridge091.py": "rabbitmq-tls",
    # the local Spark session, a JVM (tests/pipeline/conftest.py)
    **{f"tests/pipeline/{name}.py": "spark-session"
       for name in ("test_cli", "test_cluster", "test_convert", "test_reconcile", "test_replay")},
}
"""Modules that must share a worker because they share a costly session fixture."""

EXPECTED_SECONDS: dict[str, float] = {
    "tests/bridge/test_tap.py": 224,
    "tests/bridge/test_faults.py": 220,
    "tests/pipeline/test_cluster.py": 142,
    "tests/bridge/test_routes091.py": 120,
    "tests/broker/test_rabbitmq_amqp10.py": 100,
    "tests/mappings/test_amqp010_roundtrip.py": 99,
    "tests/security/test_bridge091.py": 93,
    "tests/pipeline/test_reconcile.py": 88,
    "tests/pipeline/test_replay.py": 80,
    "tests/bridge/test_facade091_acceptance.py": 79,
    "tests/bridge/test_tap091.py": 73,
    "tests/bridge/test_acceptance091.py": 66,
    "tests/security/test_attack_mix.py": 66,
    "tests/security/test_logins.py": 63,
    "tests/mappings/test_fast_paths.py": 58,
    "tests/bridge/test_facade091_flow.py": 52,
    "tests/bridge/test_acceptance.py": 50,
    "tests/apps/test_celery.py": 47,
    "tests/security/test_bridge_tls.py": 46,
    "tests/codec/test_properties.py": 45,
    "tests/mappings/test_amqp010_user_id.py": 41,
    "tests/bridge/test_facade.py": 37,
    "tests/pipeline/test_cli.py": 37,
    "tests/bridge/test_containment.py": 37,
    "tests/security/test_facade091_abuse.py": 36,
    "tests/pipeline/test_archive.py": 34,
    "tests/codec/test_fast_paths.py": 33,
    "tests/security/test_facade_fuzz.py": 32,
}
"""Seconds of the modules that take 30 s or more (four workers on a loaded two-core
machine, 2026-11): the order of a run without a cache (a fresh clone, CI). Only the order
depends on it; copy a new long module's figure from the cache."""

DEFAULT_SECONDS_PER_TEST = 0.5


def module_of(nodeid: str) -> str:
    """``tests/a/test_b.py`` of ``tests/a/test_b.py::test_c[x]``."""
    return nodeid.split("::", 1)[0]


class ModuleScheduling(LoadScopeScheduling):
    """Work units = modules (or groups of them), handed out longest first."""

    workqueue: OrderedDict[str, dict[str, bool]]  # the base class's: unit -> {nodeid: done}

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self.known: dict[str, float] = {}
        if getattr(config, "cache", None) is not None:
            self.known = config.cache.get(CACHE_KEY, {})
        self.ordered = False

    def _split_scope(self, nodeid: str) -> str:
        module = module_of(nodeid)
        return SHARED_SESSION_FIXTURES.get(module, module)

    def _cost(self, unit: dict[str, bool]) -> float:
        per_module: dict[str, int] = defaultdict(int)
        for nodeid in unit:
            per_module[module_of(nodeid)] += 1
        return sum(self.known.get(m, EXPECTED_SECONDS.get(m, DEFAULT_SECONDS_PER_TEST * n))
                   for m, n in per_module.items())

    def _assign_work_unit(self, node: Any) -> None:
        if not self.ordered:  # the first assignment: the work queue is complete
            units: list[tuple[str, dict[str, bool]]] = list(self.workqueue.items())
            units.sort(key=lambda unit: -self._cost(unit[1]))
            self.workqueue = OrderedDict(units)
            self.ordered = True
        super()._assign_work_unit(node)


class ModuleTimes:
    """Adds up, per module, the seconds its tests took (setup, call, teardown) and keeps
    them in pytest's cache at the end of the session, for the next run's order."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[module_of(report.nodeid)] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        cache = getattr(self.config, "cache", None)
        if cache is None or not self.seconds:
            return
        known = cache.get(CACHE_KEY, {})
        known.update({m: round(s, 1) for m, s in self.seconds.items()})
        cache.set(CACHE_KEY, known)
