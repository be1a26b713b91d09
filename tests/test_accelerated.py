"""The optional accelerated build (bridge/accelerated.py, tools/accelerate.py): compiled
modules are used exactly when asked for, and a missing or stale build is refused loudly.

.ci/run runs this file (with the compiled modules' own tests) a second time with
``AMQP_BRIDGE_ACCELERATED=1`` after ``scripts/accelerate build``; the first test then
proves that run really imported compiled code.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge import accelerated
from bridge.accelerated import (
    ENV,
    MODULES,
    ROOT,
    AcceleratedBuildError,
    CompiledFinder,
    check,
    compiled,
    digest,
    requested,
)
from bridge.cli import main
from tools.accelerate import dependencies


def test_the_compiled_modules_load_exactly_when_asked_for() -> None:
    """In this process and in a child (as the tests' ``amqp-bridge run`` processes get
    it): every listed module compiled under AMQP_BRIDGE_ACCELERATED, none without."""
    wanted = requested() is not None
    assert {name: compiled(importlib.import_module(name)) for name in MODULES} == \
        dict.fromkeys(MODULES, wanted)
    child = subprocess.run(
        [sys.executable, "-c", "import bridge, importlib; print(*(importlib.import_module(m)"
         f".__file__ for m in {MODULES!r}))"],
        cwd=ROOT, capture_output=True, text=True, check=True)
    files = child.stdout.split()
    assert len(files) == len(MODULES)
    assert all(file.endswith(".so" if wanted else ".py") for file in files), files


def manifest(build_dir: Path, modules: tuple[str, ...] = MODULES,
             sources: dict[str, str] | None = None) -> Path:
    """A build directory's manifest for ``modules`` built from ``sources`` (the listed
    modules' files as they are now, by default); the extension files are not needed to
    check it."""
    if sources is None:
        sources = {str(accelerated.source_path(m).relative_to(ROOT)):
                   digest(accelerated.source_path(m)) for m in modules}
    (build_dir / accelerated.MANIFEST).write_text(json.dumps({
        "modules": {m: f"lib/{m.replace('.', '/')}.so" for m in modules},
        "runtime": {"abc__mypyc": "lib/abc__mypyc.so"}, "sources": sources}))
    return build_dir


def test_a_build_matching_its_sources_gives_each_module_its_extension(tmp_path: Path) -> None:
    extensions = check(manifest(tmp_path))
    assert extensions["amqp091.framing"] == tmp_path / "lib/amqp091/framing.so"
    assert extensions["abc__mypyc"] == tmp_path / "lib/abc__mypyc.so"
    assert set(extensions) == {*MODULES, "abc__mypyc"}


def test_a_build_is_refused_once_a_source_it_was_built_from_changed(tmp_path: Path) -> None:
    sources = {"mappings/message.py": digest(ROOT / "mappings/message.py"),
               "mappings/sections.py": "0" * 64, "amqp091/gone.py": "0" * 64}
    with pytest.raises(AcceleratedBuildError,
                       match=r"stale: amqp091/gone.py, mappings/sections.py changed .*"
                             r"scripts/accelerate build"):
        check(manifest(tmp_path, sources=sources))


def test_a_build_of_other_modules_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AcceleratedBuildError, match="not the modules listed now"):
        check(manifest(tmp_path, MODULES[:-1]))


def test_asking_for_a_build_that_is_not_there_fails_the_import_of_bridge(
        tmp_path: Path) -> None:
    """The environment asks, the directory holds no build: ``import bridge`` (so
    ``amqp-bridge run``) fails naming the fix, instead of running pure Python."""
    env = {**os.environ, ENV: str(tmp_path)}
    child = subprocess.run([sys.executable, "-m", "bridge.cli", "--version"], cwd=ROOT,
                           env=env, capture_output=True, text=True)
    assert child.returncode == 1
    assert "AcceleratedBuildError" in child.stderr
    assert f"in {tmp_path}, but there is none: run scripts/accelerate build" in child.stderr


def test_run_accelerated_without_a_build_exits_with_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "meta_path",
                        [f for f in sys.meta_path if not isinstance(f, CompiledFinder)])
    monkeypatch.setattr(accelerated, "DEFAULT_DIR", tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    result = CliRunner().invoke(main, ["run", "--accelerated", "-c", "unread.yaml"])
    assert result.exit_code == 1
    assert "there is none: run scripts/accelerate build" in result.output


def test_the_build_records_every_source_of_ours_a_compiled_module_imports() -> None:
    """Editing a module the compiled code imports (its classes and constants are compiled
    in) makes the build stale too, not only editing a compiled module."""
    files = {str(p.relative_to(ROOT)) for p in dependencies(("mappings.amqp091",))}
    assert {"mappings/amqp091.py", "mappings/__init__.py", "mappings/message.py",
            "mappings/fast_codec.py", "mappings/sections.py"} <= files
    assert all(f.split("/")[0] in ("amqp010", "amqp091", "bridge", "mappings", "pipeline")
               for f in files)
