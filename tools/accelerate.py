"""Build, check or remove the optional accelerated build (``scripts/accelerate``).

``build [DIR]`` compiles :data:`bridge.accelerated.MODULES` with mypyc into DIR
(default ``build/accelerated/``, gitignored): the generated C in ``DIR/c``, the objects in
``DIR/obj``, the extension modules in ``DIR/lib``, and ``DIR/manifest.json`` last (no
manifest, no build: a failed build is never used). ``status [DIR]`` says whether the build
is there and matches the sources (exit 1 if not), ``clean [DIR]`` removes it. Using the
build is :mod:`bridge.accelerated`'s job (``AMQP_BRIDGE_ACCELERATED=1``).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import sys
from pathlib import Path

from bridge.accelerated import (
    DEFAULT_DIR,
    MANIFEST,
    MODULES,
    ROOT,
    AcceleratedBuildError,
    check,
    digest,
    source_path,
)

OUR_PACKAGES = ("amqp010", "amqp091", "bridge", "mappings", "pipeline")
"""Top-level packages whose sources a compiled module can depend on (hashed)."""


def _module_path(module: str) -> Path | None:
    """The source file of ``module`` if it is one of ours (a package's ``__init__.py``)."""
    if module.split(".")[0] not in OUR_PACKAGES:
        return None
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(module: str, path: Path) -> set[str]:
    """The modules ``module`` (its source at ``path``) imports, and their parent packages."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            names.add(target)
            names.update(f"{target}.{alias.name}" for alias in node.names)
    parents = {name.rsplit(".", k)[0] for name in names for k in range(name.count(".") + 1)}
    return names | parents


def dependencies(modules: tuple[str, ...]) -> list[Path]:
    """Every source file of ours ``modules`` are built from: theirs, and those of every
    module of ours they import, directly or not (with the packages' ``__init__.py``)."""
    seen: dict[str, Path] = {}
    todo = list(modules)
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = _module_path(module)
        if path is None:
            continue
        seen[module] = path
        todo.extend(_imports(module, path))
    return sorted(set(seen.values()))


def build(build_dir: Path) -> None:
    """Compile :data:`MODULES` into ``build_dir`` (replacing what was there)."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    shutil.rmtree(build_dir, ignore_errors=True)
    sources = {str(path.relative_to(ROOT)): digest(path) for path in dependencies(MODULES)}
    os.chdir(ROOT)  # mypyc names the modules by their paths relative to the checkout
    extensions = mypycify([str(source_path(m).relative_to(ROOT)) for m in MODULES],
                          opt_level="3", target_dir=str(build_dir / "c"))
    # A bare Distribution: setup() would read this project's pyproject.toml as the package
    # being built; here only the extensions are.
    dist = Distribution({"name": "amqp-bridge-accelerated", "ext_modules": extensions,
                         "script_name": "scripts/accelerate", "script_args": [
                             "build_ext", "--build-lib", str(build_dir / "lib"),
                             "--build-temp", str(build_dir / "obj"),
                             "--parallel", str(os.cpu_count() or 1)]})
    dist.parse_command_line()
    dist.run_commands()
    lib = build_dir / "lib"
    built = {str(p.relative_to(lib)).split(".")[0].replace("/", "."): p.relative_to(build_dir)
             for p in lib.rglob("*.so")}
    missing = [m for m in MODULES if m not in built]
    if missing:
        raise AcceleratedBuildError(f"mypyc built no extension for {', '.join(missing)}")
    manifest = {
        "modules": {m: str(built[m]) for m in MODULES},
        "runtime": {name: str(file) for name, file in built.items() if name not in MODULES},
        "sources": sources,
    }
    (build_dir / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"scripts/accelerate: compiled {len(MODULES)} modules into {build_dir} "
          f"(use it with AMQP_BRIDGE_ACCELERATED=1)")


def status(build_dir: Path) -> int:
    """Print whether ``build_dir`` holds a build matching the sources; 0 if it does."""
    try:
        check(build_dir)
    except AcceleratedBuildError as exc:
        print(exc)
        return 1
    print(f"{build_dir}: up to date ({', '.join(MODULES)})")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``scripts/accelerate build|status|clean [DIR]``."""
    parser = argparse.ArgumentParser(prog="scripts/accelerate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "status", "clean"))
    parser.add_argument("dir", nargs="?", type=Path, default=DEFAULT_DIR,
                        help=f"the build directory (default {DEFAULT_DIR.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    build_dir: Path = args.dir.resolve()
    if args.command == "build":
        build(build_dir)
        return 0
    if args.command == "clean":
        shutil.rmtree(build_dir, ignore_errors=True)
        return 0
    return status(build_dir)


if __name__ == "__main__":
    sys.exit(main())
