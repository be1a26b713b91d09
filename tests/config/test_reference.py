"""docs/configuration.md is generated from the models and must not go stale."""

from __future__ import annotations

import subprocess
import sys
import typing
from pathlib import Path

from pydantic import BaseModel

from bridge.config import BridgeConfig

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "tools" / "gen_config_reference.py"


def test_the_checked_in_reference_is_what_the_generator_writes() -> None:
    done = subprocess.run([sys.executable, str(GENERATOR), "--check"], cwd=ROOT, timeout=60)
    assert done.returncode == 0, ("docs/configuration.md is stale: run "
                                  ".venv/bin/python tools/gen_config_reference.py")


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    seen.add(model)
    for info in model.model_fields.values():
        stack = [info.annotation]
        while stack:
            t = stack.pop()
            stack += typing.get_args(t)
            if isinstance(t, type) and issubclass(t, BaseModel) and t not in seen:
                _models(t, seen)
    return seen


def test_every_key_is_described() -> None:
    undocumented = [f"{model.__name__}.{name}" for model in _models(BridgeConfig, set())
                    for name, info in model.model_fields.items() if not info.description]
    assert not undocumented, f"add description= to {undocumented}"


def test_every_key_appears_in_the_reference() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    for model in _models(BridgeConfig, set()):
        for name, info in model.model_fields.items():
            assert f"| `{info.alias or name}` |" in page, f"{model.__name__}.{name}"
