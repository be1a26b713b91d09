"""The optional accelerated build: hot modules compiled with mypyc, used only when asked for.

Theory of operation
-------------------
``scripts/accelerate build`` (:mod:`tools.accelerate`) compiles the modules in
:data:`MODULES` with mypyc into a directory of its own, :data:`DEFAULT_DIR`
(``build/accelerated/`` of the checkout, gitignored), and writes a manifest there: each
compiled module's extension file, and the SHA-256 of every source file the compiled code
was built from (the compiled modules and every module of ours they import, directly or
not). Nothing is put beside the ``.py`` files, so a plain ``import`` never finds compiled
code: the pure-Python build is the default, and the only one a fresh clone has.

The build is used only when the environment says so: ``AMQP_BRIDGE_ACCELERATED=1`` (the
default directory) or ``AMQP_BRIDGE_ACCELERATED=DIR``. Then importing :mod:`bridge`
(``amqp-bridge run`` does, and so does ``tests/__init__.py``) calls
:func:`install_from_environment`, which checks the manifest against the sources and puts a
finder first on :data:`sys.meta_path` that loads the compiled module for each name in the
manifest (and the mypyc runtime library they share); everything else imports as usual.

A stale build never shadows edited sources: if any recorded source changed, was removed,
or the list of modules differs from :data:`MODULES`, or a listed module was already
imported as Python, :func:`install` raises :class:`AcceleratedBuildError` naming it; asked
for acceleration, the bridge fails to start rather than run code that is not its source.
Compiled modules cannot be monkeypatched or subclassed by interpreted code
(docs/operations.md "Accelerated build").
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import json
import logging
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

ENV = "AMQP_BRIDGE_ACCELERATED"
"""``1`` (use :data:`DEFAULT_DIR`) or a build directory: run with the compiled modules."""

ROOT = Path(__file__).resolve().parents[1]
"""The checkout: the directory holding the ``bridge`` package and its sibling packages."""

DEFAULT_DIR = ROOT / "build" / "accelerated"
"""Where ``scripts/accelerate build`` puts the compiled modules unless told otherwise."""

MANIFEST = "manifest.json"
"""The build directory's record of what it holds and what it was built from."""

MODULES = (
    "amqp091.framing",
    "amqp091.fast_frames",
    "amqp091.connection",
    "amqp091.channel",
    "amqp091.channel_methods",
    "amqp091.connection_methods",
    "amqp091.events",
    "amqp091.calls",
    "amqp091.tables",
    "mappings.fast_codec",
    "mappings.amqp091",
    "mappings.message",
    "amqp010.codec",
    "amqp010.framing",
    "mappings.amqp010",
    "mappings.cloudevents.binary",
    "mappings.cloudevents.codec",
    "mappings.cloudevents.typesystem",
)
"""The modules compiled, chosen by measurement (docs/operations.md "Accelerated build")."""


class AcceleratedBuildError(ImportError):
    """The accelerated build was asked for and cannot be used as it is (the message says
    why and how to rebuild)."""


def source_path(module: str) -> Path:
    """The ``.py`` file of ``module`` in this checkout."""
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def digest(path: Path) -> str:
    """The SHA-256 of ``path``'s bytes, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def requested(environ: os._Environ[str] | dict[str, str] | None = None) -> Path | None:
    """The build directory the environment asks for, or None (the pure-Python build)."""
    value = (os.environ if environ is None else environ).get(ENV, "")
    if value in ("", "0"):
        return None
    return DEFAULT_DIR if value == "1" else Path(value)


class CompiledFinder:
    """A meta path finder that loads the listed modules from their compiled extension
    files (``extensions``: module name → file) and leaves every other name alone."""

    def __init__(self, extensions: dict[str, Path]) -> None:
        self.extensions = extensions

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        """The compiled module's spec if ``fullname`` is one of ours, else None."""
        extension = self.extensions.get(fullname)
        if extension is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(extension))
        return importlib.machinery.ModuleSpec(fullname, loader, origin=str(extension))


def load_manifest(build_dir: Path) -> dict[str, dict[str, str]]:
    """The build directory's manifest: ``modules`` (name → extension file, relative) and
    ``sources`` (source file, relative to the checkout → SHA-256 at build time)."""
    try:
        manifest: dict[str, dict[str, str]] = json.loads((build_dir / MANIFEST).read_text())
    except FileNotFoundError:
        raise AcceleratedBuildError(
            f"{ENV} asks for the accelerated build in {build_dir}, but there is none: "
            "run scripts/accelerate build") from None
    return manifest


def stale_sources(manifest: dict[str, dict[str, str]]) -> list[str]:
    """The recorded source files that changed or disappeared since the build."""
    stale = []
    for relative, sha in sorted(manifest["sources"].items()):
        path = ROOT / relative
        if not path.is_file() or digest(path) != sha:
            stale.append(relative)
    return stale


def check(build_dir: Path) -> dict[str, Path]:
    """The extension file of each compiled module (and of their shared runtime) in
    ``build_dir``; raises :class:`AcceleratedBuildError` if the build is missing, was made
    for other modules, or any source it was built from changed since."""
    manifest = load_manifest(build_dir)
    rebuild = f"rebuild with scripts/accelerate build, or unset {ENV}"
    if sorted(manifest["modules"]) != sorted(MODULES):
        raise AcceleratedBuildError(
            f"the accelerated build in {build_dir} compiled {sorted(manifest['modules'])}, "
            f"not the modules listed now ({sorted(MODULES)}): {rebuild}")
    stale = stale_sources(manifest)
    if stale:
        raise AcceleratedBuildError(
            f"the accelerated build in {build_dir} is stale: {', '.join(stale)} changed "
            f"since it was built: {rebuild}")
    extensions = {name: build_dir / file for name, file in manifest["modules"].items()}
    extensions.update((name, build_dir / file) for name, file in manifest["runtime"].items())
    return extensions


def install(build_dir: Path) -> CompiledFinder:
    """:func:`check` the build in ``build_dir`` and put its finder first on
    :data:`sys.meta_path` (once); raises :class:`AcceleratedBuildError` if it cannot be
    used as it is, or a compiled module was already imported as Python."""
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            return finder
    extensions = check(build_dir)
    early = [name for name in MODULES if name in sys.modules]
    if early:
        raise AcceleratedBuildError(
            f"{', '.join(early)} already imported as Python before the accelerated build "
            f"was installed (import bridge first)")
    finder = CompiledFinder(extensions)
    sys.meta_path.insert(0, finder)
    return finder


def install_from_environment() -> CompiledFinder | None:
    """:func:`install` the build :data:`ENV` asks for; None (nothing done) if unset."""
    build_dir = requested()
    return None if build_dir is None else install(build_dir)


def log_installed() -> None:
    """Log (INFO) that the accelerated build runs, if it was installed."""
    for finder in sys.meta_path:
        if isinstance(finder, CompiledFinder):
            log.info("running the accelerated build: %s compiled", ", ".join(MODULES),
                     extra={"event": "accelerated"})


def compiled(module: ModuleType) -> bool:
    """Whether ``module`` was loaded from a compiled extension (not from its source)."""
    return Path(module.__file__ or "").suffix == ".so"
