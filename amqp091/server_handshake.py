"""What a server says and checks in the 0-9-1 handshake: settings, start, tune-ok.

Pure functions of the :class:`ServerConfig` and the client's method; the
connection applies their results to its state (``amqp091.connection``).

- :func:`connection_start`: server-properties with the capabilities RabbitMQ
  announces (:data:`SERVER_CAPABILITIES`), the SASL mechanisms (EXTERNAL only when
  the transport has a TLS client identity) and the locales.
- :func:`tune` / :func:`negotiate`: our channel-max, frame-max and heartbeat go
  out in connection.tune; the client's tune-ok is checked as RabbitMQ's reader
  checks it (``validate_negotiated_integer_value``): a value below the minimum
  (frame-max 4096, channel-max 1), or above ours — where 0, "no limit", is above
  any limit we set — is a :class:`NegotiationError`, which the connection turns
  into connection.close(530 not-allowed) naming connection.tune.  The heartbeat is
  the client's choice (RabbitMQ takes it as given).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pamqp import commands as C
from pamqp.common import FieldTable

from .framing import FRAME_MIN_SIZE
from .sasl import offered_mechanisms
from .tables import DEFAULT_FIELD_TYPES, FieldTypes

SERVER_CAPABILITIES: dict[str, Any] = {
    "publisher_confirms": True,
    "exchange_exchange_bindings": True,
    "basic.nack": True,
    "consumer_cancel_notify": True,
    "connection.blocked": True,
    "authentication_failure_close": True,
    "per_consumer_qos": True,
}
"""What the server role tells clients it understands (server-properties
``capabilities``); the application may override entries through
``ServerConfig.properties["capabilities"]``."""

CHANNEL_MIN = 1
"""The lowest channel-max a client may ask for (RabbitMQ's ``?CHANNEL_MIN``)."""


class NegotiationError(Exception):
    """The client's tune-ok is outside what we offered (connection.close 530)."""


@dataclass(slots=True)
class ServerConfig:
    """Settings of one server-role connection (one per accepted transport: the TLS
    client identity is the transport's)."""

    properties: dict[str, Any] = field(default_factory=lambda: {
        "product": "amqp-bridge", "platform": "Python"})
    """server-properties (``capabilities`` is added from :data:`SERVER_CAPABILITIES`)."""
    mechanisms: tuple[str, ...] = ("PLAIN", "AMQPLAIN", "EXTERNAL")
    """SASL mechanisms to offer, in order (EXTERNAL only with ``external_identity``)."""
    external_identity: str | None = None
    """The TLS client certificate's identity, when the transport authenticated one."""
    locales: tuple[str, ...] = ("en_US",)
    channel_max: int = 2047
    """Highest channel number a client may open (0: no limit; RabbitMQ's default 2047)."""
    frame_max: int = 131072
    """Largest frame we accept (at least 4096; input buffering is bounded by it)."""
    heartbeat: int = 60
    """The heartbeat (seconds) we propose; the client's tune-ok decides (0: none)."""
    virtual_hosts: frozenset[str] | None = None
    """Virtual hosts a client may open (None: any); another is 530 not-allowed."""
    vhost_access: Callable[[str | None, str], bool] | None = None
    """Whether the logged-in user may open a virtual host (``(user, vhost)``; None: any
    user any host of ``virtual_hosts``); refused: 530 not-allowed, "access to vhost 'V'
    refused for user 'U'" (RabbitMQ's words for a user without permissions there)."""
    max_message_size: int = 128 << 20
    """Largest message body a client may publish: a bigger one closes its channel with
    406 precondition-failed (RabbitMQ's answer) before a byte of it is buffered."""
    max_buffered: int | None = None
    """Octets of unfinished message bodies (all channels together) one connection may
    make us hold (None: only ``max_message_size`` per channel bounds it).  Past it the
    connection is closed with 506 resource-error — RabbitMQ has no such per-connection
    bound (it blocks publishers at its memory alarm); 506 is the spec's code for a
    server lacking the resources to go on."""
    handshake_timeout: float = 10.0
    """Seconds (of the clock given to ``tick``) from the first tick until the
    connection must be open; then it is dropped (RabbitMQ's ``handshake_timeout``).
    The time the application takes to check credentials counts."""
    field_types: FieldTypes = DEFAULT_FIELD_TYPES
    """The classes message-header values are decoded into and encoded from."""

    def __post_init__(self) -> None:
        if self.frame_max < FRAME_MIN_SIZE:
            raise ValueError(f"frame_max must be at least {FRAME_MIN_SIZE} (0, no limit, "
                             f"would leave input buffering unbounded)")
        if not 0 <= self.channel_max <= 0xFFFF or not 0 <= self.heartbeat <= 0xFFFF:
            raise ValueError("channel_max and heartbeat are 16-bit values")
        offered_mechanisms(self.mechanisms, None)  # rejects unknown mechanisms


def connection_start(config: ServerConfig) -> C.Connection.Start:
    """The connection.start a server sends after the protocol header."""
    props: FieldTable = dict(config.properties)
    caps = dict(SERVER_CAPABILITIES)
    extra = props.get("capabilities")
    if isinstance(extra, dict):
        caps.update(extra)
    props["capabilities"] = caps
    mechanisms = offered_mechanisms(config.mechanisms, config.external_identity)
    return C.Connection.Start(version_major=0, version_minor=9, server_properties=props,
                              mechanisms=" ".join(mechanisms),
                              locales=" ".join(config.locales))


def tune(config: ServerConfig) -> C.Connection.Tune:
    """The connection.tune that follows a successful login."""
    return C.Connection.Tune(channel_max=config.channel_max, frame_max=config.frame_max,
                             heartbeat=config.heartbeat)


def _check(name: str, minimum: int, ours: int, theirs: int) -> None:
    if theirs and theirs < minimum:
        raise NegotiationError(f"negotiated {name} = {theirs} is lower than the minimum "
                               f"allowed value ({minimum})")
    if ours and (theirs == 0 or theirs > ours):
        detail = " (no limit)" if theirs == 0 else ""
        raise NegotiationError(f"negotiated {name} = {theirs}{detail} is higher than the "
                               f"maximum allowed value ({ours})")


def negotiate(config: ServerConfig, tune_ok: C.Connection.TuneOk) -> tuple[int, int, int]:
    """(channel-max, frame-max, heartbeat) from the client's tune-ok, checked against
    ours (:class:`NegotiationError` as RabbitMQ refuses them)."""
    channel_max, frame_max = tune_ok.channel_max or 0, tune_ok.frame_max or 0
    _check("frame_max", FRAME_MIN_SIZE, config.frame_max, frame_max)
    _check("channel_max", CHANNEL_MIN, config.channel_max, channel_max)
    return channel_max, frame_max, tune_ok.heartbeat or 0


__all__ = [
    "CHANNEL_MIN",
    "SERVER_CAPABILITIES",
    "NegotiationError",
    "ServerConfig",
    "connection_start",
    "negotiate",
    "tune",
]
