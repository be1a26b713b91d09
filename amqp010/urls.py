"""AMQP URLs: what ``amqp[s]://[user[:password]@]host[:port][/vhost]`` says, and the
client-role connection settings it implies. Used by every client of the engine (the
bridge's legacy connections, the blocking client, tools)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from .connection import ConnectionConfig
from .sasl import ClientCredentials


@dataclass(frozen=True, slots=True)
class Address:
    """What an ``amqp://`` / ``amqps://`` URL says."""

    host: str
    port: int
    username: str | None
    password: str | None
    virtual_host: str
    tls: bool


def parse_url(url: str) -> Address:
    """``amqp[s]://[user[:password]@]host[:port][/vhost]`` (default ports 5672 / 5671)."""
    parts = urlsplit(url)
    if parts.scheme not in ("amqp", "amqps"):
        raise ValueError(f"not an amqp:// or amqps:// URL: {url!r}")
    tls = parts.scheme == "amqps"
    return Address(parts.hostname or "localhost", parts.port or (5671 if tls else 5672),
                   unquote(parts.username) if parts.username else None,
                   unquote(parts.password) if parts.password is not None else None,
                   unquote(parts.path[1:]) if parts.path else "", tls)


def client_config(url: str, *, external: bool = False, **config: Any) -> ConnectionConfig:
    """A client-role ConnectionConfig from an ``amqp[s]://`` URL: credentials
    (PLAIN if a user is given, else ANONYMOUS; EXTERNAL with ``external``) and
    virtual host; other settings from ``config``."""
    addr = parse_url(url)
    return ConnectionConfig(
        virtual_host=addr.virtual_host,
        credentials=ClientCredentials(addr.username, addr.password, external=external),
        **config)


__all__ = ["Address", "client_config", "parse_url"]
