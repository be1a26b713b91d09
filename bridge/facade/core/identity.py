"""What a façade client says of itself at login, for its log line."""

from __future__ import annotations

from typing import Any

IDENTITY_LIMIT = 100
"""Characters kept of each client-supplied name in the log (the rest is cut)."""


def client_identity(properties: dict[str, Any]) -> dict[str, str]:
    """What a client's connection.start-ok properties say of it, for the log line of its
    login: ``connection_name`` (0-9-1: pika's and kombu's, as RabbitMQ shows "client
    provided name"), ``client`` (its ``product`` and ``version``; qpid.messaging's
    ``qpid.client_version``) and ``client_process`` (qpid.messaging's ``qpid.client_process``
    and ``qpid.client_pid``). Only printable text, each cut at :data:`IDENTITY_LIMIT`:
    the client chooses these."""
    def text(value: Any) -> str:
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if not isinstance(value, str):
            return ""
        return "".join(c for c in value if c.isprintable())[:IDENTITY_LIMIT].strip()

    def joined(*names: str) -> str:
        return " ".join(filter(None, (text(properties.get(name)) for name in names)))

    pid = properties.get("qpid.client_pid")
    found = {"connection_name": text(properties.get("connection_name")),
             "client": joined("product", "version", "qpid.client_version"),
             "client_process": (joined("qpid.client_process") + (
                 f" (pid {pid})" if isinstance(pid, int) and not isinstance(pid, bool)
                 else "")).strip()}
    return {k: v for k, v in found.items() if v}


def described(identity: dict[str, str]) -> str:
    """``identity`` for a log message: `` (client X, process Y)``, or nothing."""
    return f" ({', '.join(f'{k} {v}' for k, v in identity.items())})" if identity else ""


__all__ = ["IDENTITY_LIMIT", "client_identity", "described"]
