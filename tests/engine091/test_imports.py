"""amqp091 is a library: it imports pamqp and the standard library, nothing else of ours."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "amqp091"


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_amqp091_imports_only_pamqp_and_the_standard_library() -> None:
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 5
    foreign = {f"{m.name}: {name}" for m in modules for name in imported(m)
               if name not in sys.stdlib_module_names and name not in ("pamqp", "amqp091")}
    assert foreign == set()
