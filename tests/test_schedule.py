"""How scripts/test hands modules to its pytest-xdist workers (tests/support/schedule.py):
whole modules, modules that share a costly session fixture together, the longest first."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tests.support.schedule import EXPECTED_SECONDS, SHARED_SESSION_FIXTURES, ModuleScheduling


class Worker:
    """What the scheduler needs of a worker: it records the work it is sent."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[list[int]] = []
        self.shutting_down = False

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


class Cache:
    def __init__(self, known: dict[str, float]) -> None:
        self.known = known

    def get(self, key: str, default: Any) -> Any:
        return self.known


def schedule(collection: list[str], known: dict[str, float], workers: int) -> list[list[str]]:
    """The node ids each worker is sent first, as a real run would assign them."""
    config: Any = SimpleNamespace(getvalue=lambda name: [f"{workers}*popen"],
                                  cache=Cache(known),
                                  option=SimpleNamespace(loadscopereorder=True))
    scheduler = ModuleScheduling(config)
    nodes = [Worker(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
        scheduler.add_node_collection(node, collection)  # type: ignore[arg-type]
    scheduler.schedule()
    return [[collection[i] for i in node.sent[0]] for node in nodes]


def test_whole_modules_longest_first_by_the_last_run() -> None:
    collection = [f"tests/a/test_{m}.py::test_{i}" for m in "xyz" for i in range(3)]
    first = schedule(collection, {"tests/a/test_x.py": 1.0, "tests/a/test_y.py": 9.0,
                                  "tests/a/test_z.py": 5.0}, workers=2)
    assert first == [[f"tests/a/test_y.py::test_{i}" for i in range(3)],
                     [f"tests/a/test_z.py::test_{i}" for i in range(3)]]


def test_without_a_last_run_the_expected_seconds_then_the_number_of_tests_decide() -> None:
    long = next(iter(EXPECTED_SECONDS))
    collection = [f"tests/a/test_many.py::test_{i}" for i in range(40)] + [f"{long}::test_0"]
    first = schedule(collection, {}, workers=2)
    assert first == [[f"{long}::test_0"], [f"tests/a/test_many.py::test_{i}" for i in range(40)]]


def test_modules_sharing_a_session_fixture_go_to_one_worker() -> None:
    one, two = (m for m, group in SHARED_SESSION_FIXTURES.items() if group == "rabbitmq-tls")
    collection = [f"{one}::test_a", f"{two}::test_b", "tests/a/test_other.py::test_c"]
    first = schedule(collection, {one: 10.0, two: 10.0, "tests/a/test_other.py": 15.0},
                     workers=2)
    assert first == [[f"{one}::test_a", f"{two}::test_b"], ["tests/a/test_other.py::test_c"]]
