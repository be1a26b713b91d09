"""The packages' layering, read from the source: forbidden imports and import cycles fail.

The graph is every ``import`` / ``from ... import`` in our packages, read with
:mod:`ast` — module level, function-local and ``TYPE_CHECKING`` ones alike,
relative imports resolved — from a module to the nearest module it names
(``from mappings import fast_codec`` is an edge to ``mappings.fast_codec``).
An edge to a parent package that Python adds implicitly is not counted.

The layers, bottom up (docs/architecture.md):

- ``amqp010``: the AMQP 0-10 library imports nothing else of ours, and its
  core never imports its ``testing`` part (in-memory broker, test server);
- ``amqp091``: the AMQP 0-9-1 engine (on pamqp) imports nothing else of ours;
- ``mappings``: imports only ``mappings`` and the 0-10 codec modules
  (:data:`AMQP010_CODEC`);
- ``pipeline``: imports ``pipeline``, ``mappings`` and ``amqp010`` (not its
  ``testing`` part), never the bridge;
- ``bridge``: imports ``amqp010`` (not ``testing``, but for
  :data:`TESTING_USERS`), ``mappings``, and of the pipeline only
  :data:`PIPELINE_ENTRY`;
- ``bridge.facade``: one core and one front per protocol, dependencies one way
  (fronts → core → the rest of the bridge): the core (:data:`FACADE_CORE`) never
  imports a front nor the package that gathers them, nor a legacy protocol
  (:data:`LEGACY_PROTOCOLS`: those are the fronts'); no front
  (:data:`FACADE_FRONTS`) imports another;
- ``tools``: scripts, may import anything; nothing imports them.

No two packages import each other, even through others, and no two modules
do (strongly connected components of the module graph); a failure names every
forbidden edge, and every cycle with the imports that make it. Between modules,
an import under ``if TYPE_CHECKING:`` (an annotation's reference, never
executed) does not make a cycle; between packages and for the layering rules it
counts like any other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("amqp010", "amqp091", "bridge", "mappings", "pipeline", "tools")
"""Our top-level packages (``tools`` is a folder of scripts, read as one)."""

AMQP010_CODEC = frozenset({
    "amqp010",  # the package: its __init__ re-exports the codec's errors
    "amqp010.base",
    "amqp010.codec",
    "amqp010.errors",
    "amqp010.framing",
    "amqp010.spec",
    "amqp010.types",
})
"""The 0-10 codec: values, structs, segments and frames. Not the engine (connection,
session, events, flow, sasl, urls), the sockets (transport, trace) or ``testing``."""

PIPELINE_ENTRY = "pipeline.bridge_api"
"""The one pipeline module the bridge imports (the tap, its writers, the pipeline commands)."""

TESTING_USERS = frozenset({
    # ``amqp-bridge demo`` embeds the in-memory 0-10 broker and the engine's test
    # server, so that the demo runs with nothing but an AMQP 1.0 broker installed.
    "bridge.demo",
})
"""Bridge modules that may import ``amqp010.testing``."""

FACADE_CORE = "bridge.facade.core"
"""What both façades share (listener core, access, route cores, temporary queues)."""

FACADE_FRONTS = ("bridge.facade.amqp010", "bridge.facade.amqp091")
"""One façade front per legacy protocol, each on the core."""

LEGACY_PROTOCOLS = ("amqp010", "amqp091", "mappings.amqp010", "mappings.amqp091",
                    "bridge.legacy")
"""The legacy protocols' engines, mappings and bridge endpoints: the façade core uses none."""


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` imports ``target`` at ``path:line``."""

    source: str
    target: str
    path: str
    line: int
    typing_only: bool = False
    """The import is under ``if TYPE_CHECKING:``: annotations only, never executed."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} → {self.target}"


def within(module: str, package: str) -> bool:
    """Whether ``module`` is ``package`` or inside it."""
    return module == package or module.startswith(package + ".")


def find_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``, by dotted name."""
    modules: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _typing_only_lines(tree: ast.AST) -> set[int]:
    """Lines of the statements under ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
                (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
                or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")):
            for statement in node.body:
                lines.update(range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return lines


def imported_names(module: str, path: Path, tree: ast.AST) -> Iterator[tuple[str, int]]:
    """``(dotted name, line)`` of everything ``module`` imports, anywhere in its source."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                base = parts if is_package else parts[:-1]
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            for alias in node.names:
                yield (f"{stem}.{alias.name}" if alias.name != "*" else stem), node.lineno


def nearest_module(name: str, modules: dict[str, Path]) -> str:
    """The longest prefix of ``name`` that is one of ``modules`` (else ``name`` itself)."""
    candidate = name
    while candidate not in modules and "." in candidate:
        candidate = candidate.rsplit(".", 1)[0]
    return candidate if candidate in modules else name


def import_graph(root: Path, packages: Iterable[str] = PACKAGES) -> tuple[set[str], list[Edge]]:
    """Our modules, and every import from one of them into our packages."""
    packages = tuple(packages)
    modules = find_modules(root, packages)
    edges = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        typing_only = _typing_only_lines(tree)
        for name, line in imported_names(module, path, tree):
            if name.split(".")[0] not in packages:
                continue
            target = nearest_module(name, modules)
            if target != module:
                edges.append(Edge(module, target, str(path.relative_to(root)), line,
                                  line in typing_only))
    return set(modules), sorted(set(edges), key=lambda e: (e.path, e.line, e.target))


def forbidden(source: str, target: str) -> str | None:
    """Why ``source`` may not import ``target``, or None when it may."""
    top, target_top = source.split(".")[0], target.split(".")[0]
    if target_top == "tools" and top != "tools":
        return "nothing imports tools/ (scripts)"
    if top == "amqp091":
        if target_top != "amqp091":
            return "amqp091 imports nothing else of ours"
    elif top == "amqp010":
        if target_top != "amqp010":
            return "amqp010 imports nothing else of ours"
        if within(target, "amqp010.testing") and not within(source, "amqp010.testing"):
            return "the 0-10 library does not import its testing part"
    elif top == "mappings":
        if target_top not in ("mappings", "amqp010"):
            return "mappings imports only mappings and the 0-10 codec"
        if target_top == "amqp010" and target not in AMQP010_CODEC:
            return f"mappings imports of amqp010 only its codec modules {sorted(AMQP010_CODEC)}"
    elif top == "pipeline":
        if target_top == "bridge":
            return "pipeline never imports the bridge"
        if within(target, "amqp010.testing"):
            return "pipeline does not import the 0-10 library's testing part"
    elif top == "bridge":
        if target_top == "pipeline" and target != PIPELINE_ENTRY:
            return f"the bridge imports of the pipeline only {PIPELINE_ENTRY}"
        if within(target, "amqp010.testing") and source not in TESTING_USERS:
            return f"only {sorted(TESTING_USERS)} of the bridge import amqp010.testing"
        return facade_rule(source, target)
    return None


def facade_rule(source: str, target: str) -> str | None:
    """Why a module of the façade may not import ``target``, or None (fronts → core)."""
    if within(source, FACADE_CORE):
        if target == "bridge.facade" or any(within(target, front) for front in FACADE_FRONTS):
            return "the façade core never imports a front"
        if any(within(target, protocol) for protocol in LEGACY_PROTOCOLS):
            return "the façade core speaks no legacy protocol (its fronts do)"
    for front in FACADE_FRONTS:
        if within(source, front) and any(within(target, other) for other in FACADE_FRONTS
                                         if other != front):
            return "a façade front never imports another front"
    return None


def strongly_connected(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    successors: dict[str, set[str]] = {node: set() for node in nodes}
    for source, target in edges:
        if source in successors and target in successors:
            successors[source].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(successors[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(successors):
        if node not in index:
            visit(node)
    return sorted(found)


def shortest_cycle(component: list[str], edges: Iterable[tuple[str, str]]) -> list[str]:
    """A shortest cycle through the first node of ``component`` (breadth-first search)."""
    members = set(component)
    successors: dict[str, list[str]] = {node: [] for node in component}
    for source, target in sorted(set(edges)):
        if source in members and target in members:
            successors[source].append(target)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    for node in queue:
        for succ in successors[node]:
            if succ == start:
                return [*paths[node], start]
            if succ not in paths:
                paths[succ] = [*paths[node], succ]
                queue.append(succ)
    raise AssertionError(f"{component} is not strongly connected")


def violations(edges: Iterable[Edge]) -> list[str]:
    """Every forbidden edge, with the rule it breaks."""
    return [f"{edge}: {reason}" for edge in edges
            if (reason := forbidden(edge.source, edge.target)) is not None]


def package_cycles(edges: Iterable[Edge]) -> list[str]:
    """Every cycle between top-level packages, with the imports that make it."""
    edges = list(edges)
    between = [(e.source.split(".")[0], e.target.split(".")[0]) for e in edges]
    packages = {p for pair in between for p in pair}
    report = []
    for component in strongly_connected(packages, between):
        members = set(component)
        imports = [str(e) for e in edges if e.source.split(".")[0] != e.target.split(".")[0]
                   and e.source.split(".")[0] in members and e.target.split(".")[0] in members]
        report.append(f"packages {' ↔ '.join(component)} (e.g. "
                      f"{' → '.join(shortest_cycle(component, between))}):\n    "
                      + "\n    ".join(imports))
    return report


def module_cycles(modules: Iterable[str], edges: Iterable[Edge]) -> list[str]:
    """Every cycle between modules (a strongly connected component), with its imports;
    ``TYPE_CHECKING`` imports are not executed and make none."""
    edges = [e for e in edges if not e.typing_only]
    report = []
    pairs = [(e.source, e.target) for e in edges]
    for component in strongly_connected(modules, pairs):
        members = set(component)
        imports = [str(e) for e in edges if e.source in members and e.target in members]
        report.append(f"modules {' ↔ '.join(component)} (e.g. "
                      f"{' → '.join(shortest_cycle(component, pairs))}):\n    "
                      + "\n    ".join(imports))
    return report


# --- the checks --------------------------------------------------------------------------------


def test_no_forbidden_import() -> None:
    _, edges = import_graph(ROOT)
    found = violations(edges)
    assert not found, "forbidden imports:\n  " + "\n  ".join(found)


def test_no_import_cycle_between_packages() -> None:
    _, edges = import_graph(ROOT)
    found = package_cycles(edges)
    assert not found, "import cycles between packages:\n  " + "\n  ".join(found)


def test_no_import_cycle_between_modules() -> None:
    modules, edges = import_graph(ROOT)
    found = module_cycles(modules, edges)
    assert not found, "import cycles between modules:\n  " + "\n  ".join(found)


def bridge_part(module: str) -> str:
    """The bridge's sub-package (``bridge.routes``) or top-level module a module is in."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "bridge" else parts[0]


def test_no_import_cycle_between_the_bridges_subpackages() -> None:
    """runtime, amqp10, legacy, routes, facade, ops, security, config, app … import
    downwards only (docs/architecture.md)."""
    _, edges = import_graph(ROOT)
    between = {(bridge_part(e.source), bridge_part(e.target)) for e in edges
               if not e.typing_only and e.source.startswith("bridge")
               and e.target.startswith("bridge")}
    between = {(a, b) for a, b in between if a != b}
    nodes = {node for pair in between for node in pair}
    found = [f"{' ↔ '.join(c)} (e.g. {' → '.join(shortest_cycle(c, between))})"
             for c in strongly_connected(nodes, between)]
    assert not found, "import cycles between the bridge's sub-packages:\n  " + "\n  ".join(found)


# --- the reader itself -------------------------------------------------------------------------


def test_the_facade_rules_name_a_core_importing_a_front_and_fronts_importing_each_other(
        tmp_path: Path) -> None:
    write(tmp_path, {
        "amqp010/__init__.py": "",
        "amqp010/spec.py": "",
        "mappings/__init__.py": "",
        "mappings/message.py": "",
        "bridge/__init__.py": "",
        "bridge/config.py": "",
        "bridge/facade/__init__.py": "from .amqp010 import listener\n",
        "bridge/facade/core/__init__.py": "",
        "bridge/facade/core/access.py": "from ...config import X\nfrom mappings.message import M\n",
        "bridge/facade/core/publish.py": (
            "from amqp010.spec import ErrorCode\nfrom ..amqp010 import publish\n"),
        "bridge/facade/core/state.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import Facade\n"),
        "bridge/facade/amqp010/__init__.py": "",
        "bridge/facade/amqp010/listener.py": "from ..core import access\nfrom amqp010 import spec\n",
        "bridge/facade/amqp010/publish.py": "from ..core.publish import P\n",
        "bridge/facade/amqp091/__init__.py": "",
        "bridge/facade/amqp091/listener.py": "from ..amqp010.listener import L\n",
    })
    _, edges = import_graph(tmp_path)
    assert violations(edges) == [
        "bridge/facade/amqp091/listener.py:1: bridge.facade.amqp091.listener → "
        "bridge.facade.amqp010.listener: a façade front never imports another front",
        "bridge/facade/core/publish.py:1: bridge.facade.core.publish → amqp010.spec: "
        "the façade core speaks no legacy protocol (its fronts do)",
        "bridge/facade/core/publish.py:2: bridge.facade.core.publish → "
        "bridge.facade.amqp010.publish: the façade core never imports a front",
        "bridge/facade/core/state.py:3: bridge.facade.core.state → bridge.facade: "
        "the façade core never imports a front",
    ]



def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_reader_sees_every_kind_of_import_and_names_edges_and_cycles(tmp_path: Path) -> None:
    write(tmp_path, {
        "amqp010/__init__.py": "",
        "amqp010/spec.py": "from . import types\n",
        "amqp010/types.py": "def late():\n    from .spec import X\n",
        "amqp010/connection.py": "",
        "amqp010/testing/__init__.py": "",
        "amqp010/testing/broker.py": "from ..spec import S\n",
        "mappings/__init__.py": "",
        "mappings/message.py": "from mappings import sections\nimport amqp010.spec\n",
        "mappings/sections.py": "from amqp010.connection import Connection\n",
        "pipeline/__init__.py": "",
        "pipeline/bridge_api.py": "",
        "pipeline/archive.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from bridge import app\n"),
        "bridge/__init__.py": "",
        "bridge/app.py": "from pipeline import archive\nfrom pipeline.bridge_api import T\n",
        "bridge/demo.py": "from amqp010.testing import broker\n",
        "bridge/cli.py": "def demo():\n    from amqp010.testing.broker import Broker\n",
        "tools/gen.py": "import bridge.app\n",
    })
    modules, edges = import_graph(tmp_path)
    assert {(e.source, e.target) for e in edges} == {
        ("amqp010.spec", "amqp010.types"), ("amqp010.types", "amqp010.spec"),
        ("mappings.message", "mappings.sections"), ("mappings.message", "amqp010.spec"),
        ("mappings.sections", "amqp010.connection"), ("pipeline.archive", "bridge.app"),
        ("bridge.app", "pipeline.archive"), ("bridge.app", "pipeline.bridge_api"),
        ("amqp010.testing.broker", "amqp010.spec"), ("bridge.demo", "amqp010.testing.broker"),
        ("bridge.cli", "amqp010.testing.broker"), ("tools.gen", "bridge.app"),
    }
    assert violations(edges) == [
        "bridge/app.py:1: bridge.app → pipeline.archive: "
        f"the bridge imports of the pipeline only {PIPELINE_ENTRY}",
        "bridge/cli.py:2: bridge.cli → amqp010.testing.broker: "
        f"only {sorted(TESTING_USERS)} of the bridge import amqp010.testing",
        "mappings/sections.py:1: mappings.sections → amqp010.connection: "
        f"mappings imports of amqp010 only its codec modules {sorted(AMQP010_CODEC)}",
        "pipeline/archive.py:3: pipeline.archive → bridge.app: pipeline never imports the bridge",
    ]
    assert package_cycles(edges) == [
        "packages bridge ↔ pipeline (e.g. bridge → pipeline → bridge):\n"
        "    bridge/app.py:1: bridge.app → pipeline.archive\n"
        "    bridge/app.py:2: bridge.app → pipeline.bridge_api\n"
        "    pipeline/archive.py:3: pipeline.archive → bridge.app"]
    assert module_cycles(modules, edges) == [
        "modules amqp010.spec ↔ amqp010.types (e.g. amqp010.spec → amqp010.types → amqp010.spec):\n"
        "    amqp010/spec.py:1: amqp010.spec → amqp010.types\n"
        "    amqp010/types.py:2: amqp010.types → amqp010.spec",
    ]  # pipeline.archive → bridge.app is TYPE_CHECKING only: no cycle between modules
