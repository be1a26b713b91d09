"""The container image definition: hadolint-clean and consistent with the project."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"


def instructions(name: str) -> list[str]:
    """The arguments of every ``name`` instruction (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    return [line.split(None, 1)[1] for line in text.splitlines()
            if line.split(None, 1)[:1] == [name]]


def test_hadolint_finds_nothing() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    done = subprocess.run([str(hadolint), "--no-color", str(DOCKERFILE)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


def test_runs_the_bridge_on_the_mounted_config_as_a_non_root_user() -> None:
    assert [json.loads(e) for e in instructions("ENTRYPOINT")] == [
        ["amqp-bridge", "run", "-c", "/etc/amqp-bridge/config.yaml"]]
    users = instructions("USER")
    assert users and users[-1] not in ("root", "0")
    assert len(instructions("FROM")) >= 2  # multi-stage
    assert all(base.startswith("python:3.11-slim") for base in instructions("FROM"))


def test_health_check_asks_the_healthz_endpoint() -> None:
    (check,) = instructions("HEALTHCHECK")
    assert "/healthz" in check


def test_every_package_of_the_distribution_is_copied_into_the_build() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = {args.split()[0] for args in instructions("COPY") if not args.startswith("--from")}
    assert packages <= copied, f"not copied into the image: {packages - copied}"
