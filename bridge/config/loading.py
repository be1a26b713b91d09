"""Loading a configuration file: YAML, then ``${NAME}`` / ``${NAME:-default}`` from the
environment and ``${file:/path}`` (secrets) substituted, then validated by the models;
every problem becomes one :class:`~bridge.config.models.ConfigError` line naming its key
path, with no secret in it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml
from pydantic import ValidationError

from .models import REFERENCE_PROBLEMS, BridgeConfig, ConfigError

_ENV = re.compile(r"\$\{(?:file:([^}]+)|([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?)\}")


def substitute_env(value: Any, env: Mapping[str, str], path: str = "",
                   secrets: list[str] | None = None) -> Any:
    """Replace ``${NAME}`` / ``${NAME:-default}`` (environment) and ``${file:/path}`` (the
    file's content without its final line break) in every string; an unknown name or an
    unreadable file is an error.  File contents are added to ``secrets``."""
    if isinstance(value, str):
        def repl(m: re.Match[str]) -> str:
            file, name, default = m.group(1), m.group(2), m.group(3)
            if file is not None:
                try:
                    content = Path(file).read_text(encoding="utf-8").removesuffix("\n")
                except (OSError, UnicodeDecodeError) as exc:
                    reason = getattr(exc, "strerror", None) or "not UTF-8 text"
                    raise ConfigError([f"{path or '<root>'}: cannot read secret file "
                                       f"{file!r}: {reason}"]) from None
                if secrets is not None:
                    secrets.append(content)
                return content.removesuffix("\r")
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigError([f"{path or '<root>'}: environment variable {name} is not set"])
        return _ENV.sub(repl, value)
    if isinstance(value, dict):
        return {k: substitute_env(v, env, f"{path}.{k}" if path else str(k), secrets)
                for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, env, f"{path}[{i}]", secrets) for i, v in enumerate(value)]
    return value


def _raw_secrets(raw: Any) -> list[str]:
    """Secret values of a configuration that may not validate (for error messages)."""
    out: list[str] = []
    if not isinstance(raw, dict):
        return out
    for section in ("connections", "listeners"):
        entries = raw.get(section)
        for entry in entries.values() if isinstance(entries, dict) else ():
            if not isinstance(entry, dict):
                continue
            urls = [entry.get("url"), *(entry.get("failover") or [])] \
                if isinstance(entry.get("failover", []), list) else [entry.get("url")]
            for url in urls:
                if isinstance(url, str):
                    try:
                        password = urlsplit(url).password
                    except ValueError:
                        password = None
                    if password:
                        out += [password, unquote(password)]
            users = entry.get("users")
            if isinstance(users, dict):
                out += [str(v) for v in users.values() if v is not None]
            tls = entry.get("tls")
            if isinstance(tls, dict) and tls.get("key_password") is not None:
                out.append(str(tls["key_password"]))
    return out


def parse_config(text: str, *, source: str = "config", env: Mapping[str, str] | None = None) -> BridgeConfig:
    """Validate YAML text; raises :class:`ConfigError` naming every bad key."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"not valid YAML: {exc}"], source) from None
    if not isinstance(raw, dict):
        raise ConfigError(["the top level must be a mapping with 'routes'"], source)
    file_secrets: list[str] = []
    try:
        raw = substitute_env(raw, os.environ if env is None else env, secrets=file_secrets)
    except ConfigError as exc:
        raise ConfigError(exc.problems, source) from None
    try:
        return BridgeConfig.model_validate(raw)
    except ValidationError as exc:
        # a secret never appears in a problem, even one put where a value is echoed
        raise ConfigError(_problems(exc), source, [*file_secrets, *_raw_secrets(raw)]) from None


def load_config(path: str | Path, *, env: Mapping[str, str] | None = None) -> BridgeConfig:
    """Read and validate a configuration file."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError([f"cannot read: {exc.strerror}"], str(path)) from None
    return parse_config(text, source=str(path), env=env)


_ALIASES = {"source": "from", "target": "to"}


def _problems(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        parts: list[str] = []
        for item in err["loc"]:
            if isinstance(item, int):
                parts.append(f"[{item}]")
            else:
                parts.append(("." if parts else "") + _ALIASES.get(str(item), str(item)))
        path = "".join(parts)
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif err["type"] == "missing":
            msg = "required key is missing"
        if msg.startswith(REFERENCE_PROBLEMS + "\n"):  # cross-reference problems carry their own paths
            out += msg.split("\n")[1:]
        else:
            out.append(f"{path or '<root>'}: {msg}")
    return out




