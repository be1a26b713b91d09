"""The bridge's YAML configuration, validated with pydantic.

``load_config(path)`` reads YAML, substitutes ``${NAME}`` / ``${NAME:-default}``
from the environment, validates, and cross-checks references (a route's
endpoints name existing connections/listeners of a fitting protocol).  Every
problem is reported as a :class:`ConfigError` whose lines name the key path,
e.g. ``routes[0].from.queue: required for an amqp0-10 connection``.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from mappings.cloudevents.template import EventTemplate
from pipeline.tap import TapConfig  # a pydantic model only: imports neither pyarrow nor Spark

Protocol = Literal["amqp0-10", "amqp1.0"]
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
    """Invalid configuration; ``problems`` holds one ``"key.path: reason"`` per issue."""

    def __init__(self, problems: list[str], source: str = "config") -> None:
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Reconnect(_Model):
    """Exponential backoff with jitter between connection attempts."""

    initial_delay: float = Field(0.5, gt=0, description="First retry delay, seconds.")
    max_delay: float = Field(30.0, gt=0, description="Upper bound of the delay, seconds.")
    multiplier: float = Field(2.0, ge=1.0, description="Delay growth per failed attempt.")
    jitter: float = Field(0.2, ge=0, le=1, description="Random +/- fraction applied to each delay.")


class Connection(_Model):
    """An outgoing connection to a broker."""

    protocol: Protocol
    url: str = Field(description="amqp://[user:password@]host[:port][/vhost] or amqps://...")
    failover: list[str] = Field(default_factory=list, description="Further URLs tried in order.")
    heartbeat: float = Field(30.0, ge=0, description="Heartbeat interval, seconds (0: off).")
    reconnect: Reconnect = Field(default_factory=Reconnect)
    session_timeout: int = Field(
        30, ge=0, le=86400,
        description="AMQP 0-10 only: seconds the broker is asked to keep each route's session "
                    "after a transport loss, so the bridge resumes it without redelivery "
                    "(0: no resume; in-flight messages are redelivered instead).")

    @field_validator("url", "failover")
    @classmethod
    def _check_urls(cls, value: str | list[str]) -> str | list[str]:
        for url in [value] if isinstance(value, str) else value:
            parts = urlsplit(url)
            if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
                raise ValueError(f"{redact_url(url)!r} is not an amqp:// or amqps:// URL with a host")
            try:
                parts.port  # noqa: B018 - validates the port
            except ValueError as exc:
                raise ValueError(f"{redact_url(url)!r}: {exc}") from None
        return value


class Listener(_Model):
    """A listening socket for legacy AMQP 0-10 applications (the façade)."""

    protocol: Literal["amqp0-10"]
    bind: str = Field(description="host:port to listen on.")
    allow_anonymous: bool = Field(False, description="Accept SASL ANONYMOUS logins.")
    users: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="SASL PLAIN logins: user name -> password (put passwords in ${ENV}).")

    @field_validator("bind")
    @classmethod
    def _check_bind(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"{value!r} is not host:port")
        return value

    @field_validator("users")
    @classmethod
    def _check_users(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, password in value.items():
            if not name or "\0" in name or "\0" in password.get_secret_value():
                raise ValueError(f"user {name!r}: names must be non-empty, and neither a name "
                                 f"nor a password may contain NUL (the PLAIN separator)")
        return value


class Endpoint(_Model):
    """One side of a route: a connection or listener plus the node on it."""

    connection: str | None = None
    listener: str | None = None
    queue: str | None = None
    address: str | None = None
    exchange: str | None = None
    routing_key: str | None = None

    @model_validator(mode="after")
    def _one_owner(self) -> Endpoint:
        if (self.connection is None) == (self.listener is None):
            raise ValueError("give exactly one of 'connection' or 'listener'")
        return self


class CloudEvents(_Model):
    """How a route renders messages as CloudEvents."""

    mode: Literal["binary", "structured"]
    prefix: Literal["cloudEvents_", "cloudEvents:"] = Field(
        "cloudEvents_", description="Application-property prefix in binary mode.")
    source: str | None = Field(None, description="Template: creates events from plain messages.")
    type: str | None = None
    id: str | None = None
    time: Literal["creation_time", "now", "none"] = "creation_time"
    subject: str | None = None
    dataschema: str | None = None
    datacontenttype: str | None = None
    extensions: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _template(self) -> CloudEvents:
        if (self.source is None) != (self.type is None):
            raise ValueError("'source' and 'type' go together: give both to create events "
                             "from plain messages, or neither to pass CloudEvents through")
        if self.source is not None:
            self.template()  # validates the patterns and extension names
        return self

    def template(self) -> EventTemplate | None:
        """The event template, or None when only existing CloudEvents are accepted."""
        if self.source is None:
            return None
        fields = self.model_dump(exclude={"mode", "prefix"}, exclude_none=True)
        return EventTemplate(**fields)


class MaxInFlight(_Model):
    """Bound on unsettled messages per route (memory and duplicate bound)."""

    messages: int = Field(1000, ge=1, le=65536,
                          description="Unsettled messages (at most the 0-10 replay buffer, 65536).")
    bytes: int = Field(64 * 1024 * 1024, ge=1, description="Octets of unsettled message bodies.")


class Dedupe(_Model):
    """Duplicate suppression by message-id (optional, per route)."""

    window: int = Field(ge=1, le=1_000_000, description="How many recently delivered "
                        "message-ids are remembered; a message whose id is among them is "
                        "settled at the source without being forwarded again.")


class DeadLetter(_Model):
    """Where rejected or unmappable messages go instead of being rejected at the source."""

    connection: str
    address: str | None = None
    exchange: str | None = None
    routing_key: str | None = None


class Route(_Model):
    """Messages flow from ``from`` to ``to``."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    source: Endpoint = Field(alias="from")
    target: Endpoint = Field(alias="to")
    cloudevents: CloudEvents | None = None
    dead_letter: DeadLetter | None = None
    max_in_flight: MaxInFlight = Field(default_factory=MaxInFlight)
    dedupe: Dedupe | None = None
    tap: TapConfig | None = Field(
        None, description="Archive the route's messages as Parquet files (docs/archive.md): "
                          "as received from the source and/or as accepted by the target. "
                          "Needs pyarrow (the 'spark' extra).")


class BridgeConfig(_Model):
    """The whole configuration file."""

    connections: dict[str, Connection] = Field(default_factory=dict)
    listeners: dict[str, Listener] = Field(default_factory=dict)
    routes: list[Route] = Field(min_length=1)

    @model_validator(mode="after")
    def _references(self) -> BridgeConfig:
        problems = list(_check_references(self))
        if problems:
            raise ValueError("\n".join([_REFERENCES, *problems]))
        return self

    @model_validator(mode="after")
    def _taps(self) -> BridgeConfig:
        problems = list(_check_taps(self))
        if problems:
            raise ValueError("\n".join([_REFERENCES, *problems]))
        return self

    def protocol_of(self, endpoint: Endpoint | DeadLetter) -> str:
        """The protocol spoken at an endpoint."""
        listener = getattr(endpoint, "listener", None)
        if listener:
            return self.listeners[listener].protocol
        return self.connections[str(endpoint.connection)].protocol


def _check_references(cfg: BridgeConfig) -> list[str]:
    out = []
    names: set[str] = set()
    for i, route in enumerate(cfg.routes):
        where = f"routes[{i}]"
        if route.name in names:
            out.append(f"{where}.name: duplicate route name {route.name!r}")
        names.add(route.name)
        for side, ep in (("from", route.source), ("to", route.target)):
            out += _check_endpoint(cfg, f"{where}.{side}", side, ep)
        if route.dead_letter is not None:
            out += _check_endpoint(cfg, f"{where}.dead_letter", "to", route.dead_letter)
    return out


def _check_taps(cfg: BridgeConfig) -> list[str]:
    """Taps need pyarrow; routes tapping one directory share its writer, so its settings."""
    out = []
    shared: dict[str, tuple[int, TapConfig]] = {}
    for i, route in enumerate(cfg.routes):
        tap = route.tap
        if tap is None:
            continue
        if importlib.util.find_spec("pyarrow") is None:  # looks, does not import
            out.append(f"routes[{i}].tap: writing archives needs pyarrow, which is not "
                       f"installed: pip install 'amqp-bridge[spark]' (or just pyarrow)")
        path = os.path.normpath(os.path.abspath(tap.path))
        first = shared.setdefault(path, (i, tap))
        if first[0] != i and first[1].writer_settings() != tap.writer_settings():
            out.append(f"routes[{i}].tap: archives to {tap.path!r} like routes[{first[0]}] "
                       f"({cfg.routes[first[0]].name}), so its rotate_rows, rotate_seconds, "
                       f"queue_size and overflow must be the same")
    return out


def _check_endpoint(cfg: BridgeConfig, where: str, side: str, ep: Endpoint | DeadLetter) -> list[str]:
    listener = getattr(ep, "listener", None)
    if listener is not None:
        if listener not in cfg.listeners:
            return [f"{where}.listener: no listener named {listener!r} "
                    f"(defined: {', '.join(sorted(cfg.listeners)) or 'none'})"]
        # legacy apps publish to an exchange on the façade, and consume from a queue
        key = "exchange" if side == "from" else "queue"
        return [] if getattr(ep, key) else [f"{where}.{key}: required for a listener endpoint"]
    if ep.connection not in cfg.connections:
        return [f"{where}.connection: no connection named {ep.connection!r} "
                f"(defined: {', '.join(sorted(cfg.connections)) or 'none'})"]
    protocol = cfg.connections[ep.connection].protocol  # type: ignore[index]
    if protocol == "amqp1.0":
        return [] if ep.address else [f"{where}.address: required for an amqp1.0 connection"]
    if side == "from":
        return [] if getattr(ep, "queue", None) else [f"{where}.queue: required to consume "
                                                      f"from an amqp0-10 connection"]
    if ep.exchange is None and getattr(ep, "queue", None) is None:
        return [f"{where}.exchange: required to publish to an amqp0-10 connection "
                f"(or give 'queue' for the default exchange)"]
    return []


# --- loading -------------------------------------------------------------------------------


def substitute_env(value: Any, env: Mapping[str, str], path: str = "") -> Any:
    """Replace ``${NAME}`` / ``${NAME:-default}`` in every string; unknown names are errors."""
    if isinstance(value, str):
        def repl(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in env:
                return env[name]
            if default is not None:
                return default
            raise ConfigError([f"{path or '<root>'}: environment variable {name} is not set"])
        return _ENV.sub(repl, value)
    if isinstance(value, dict):
        return {k: substitute_env(v, env, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute_env(v, env, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def parse_config(text: str, *, source: str = "config", env: Mapping[str, str] | None = None) -> BridgeConfig:
    """Validate YAML text; raises :class:`ConfigError` naming every bad key."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError([f"not valid YAML: {exc}"], source) from None
    if not isinstance(raw, dict):
        raise ConfigError(["the top level must be a mapping with 'routes'"], source)
    try:
        raw = substitute_env(raw, os.environ if env is None else env)
    except ConfigError as exc:
        raise ConfigError(exc.problems, source) from None
    try:
        return BridgeConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_problems(exc), source) from None


def load_config(path: str | Path, *, env: Mapping[str, str] | None = None) -> BridgeConfig:
    """Read and validate a configuration file."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError([f"cannot read: {exc.strerror}"], str(path)) from None
    return parse_config(text, source=str(path), env=env)


_ALIASES = {"source": "from", "target": "to"}
_REFERENCES = "reference problems:"


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
        if msg.startswith(_REFERENCES + "\n"):  # cross-reference problems carry their own paths
            out += msg.split("\n")[1:]
        else:
            out.append(f"{path or '<root>'}: {msg}")
    return out


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def describe(cfg: BridgeConfig) -> list[str]:
    """Human-readable lines for the resolved routes (secrets redacted)."""
    lines = []
    for name, conn in cfg.connections.items():
        urls = ", ".join(redact_url(u) for u in [conn.url, *conn.failover])
        lines.append(f"connection {name}: {conn.protocol} {urls}")
    for name, lst in cfg.listeners.items():
        anon = ", anonymous allowed" if lst.allow_anonymous else ""
        lines.append(f"listener {name}: {lst.protocol} on {lst.bind}{anon}")
    for route in cfg.routes:
        text = f"route {route.name}: {_endpoint(cfg, route.source)} -> {_endpoint(cfg, route.target)}"
        if route.cloudevents is not None:
            ce = route.cloudevents
            text += f"; cloudevents {ce.mode}" + (f" ({ce.prefix})" if ce.mode == "binary" else "")
            if ce.source is not None:
                text += f" type={ce.type} source={ce.source}"
        if route.dead_letter is not None:
            text += f"; dead-letter {_endpoint(cfg, route.dead_letter)}"
        mif = route.max_in_flight
        text += f"; max in flight {mif.messages} messages / {mif.bytes} bytes"
        if route.dedupe is not None:
            text += f"; dedupe window {route.dedupe.window}"
        if route.tap is not None:
            text += f"; tap {route.tap.side} -> {route.tap.path} (overflow {route.tap.overflow})"
        lines.append(text)
    return lines


def _endpoint(cfg: BridgeConfig, ep: Endpoint | DeadLetter) -> str:
    owner = getattr(ep, "listener", None) or ep.connection
    node = [f"{k} {v!r}" for k in ("queue", "address", "exchange", "routing_key")
            if (v := getattr(ep, k, None)) is not None]
    return f"{owner}({cfg.protocol_of(ep)}) {' '.join(node)}"
