"""What a client answers in the 0-9-1 handshake: settings, start-ok and tune-ok.

Pure functions of the :class:`ConnectionConfig` and the server's method: the
connection applies their results to its state.  :func:`start_ok` picks the SASL
mechanism and builds the client properties (with the capabilities a RabbitMQ
client announces); :func:`tune_ok` negotiates channel-max, frame-max and the
heartbeat (the lower non-zero value of the two sides wins).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pamqp import commands as C
from pamqp.common import FieldTable

from .framing import FRAME_MIN_SIZE, FrameError
from .methods import ReplyCode
from .sasl import ClientCredentials
from .tables import DEFAULT_FIELD_TYPES, FieldTypes

CLIENT_CAPABILITIES: dict[str, Any] = {
    "publisher_confirms": True,
    "consumer_cancel_notify": True,
    "basic.nack": True,
    "connection.blocked": True,
    "exchange_exchange_bindings": True,
    "authentication_failure_close": True,
    "per_consumer_qos": True,
}
"""What a client tells the broker it understands (client-properties ``capabilities``)."""


@dataclass(slots=True)
class ConnectionConfig:
    """Settings of one connection."""

    properties: dict[str, Any] = field(default_factory=lambda: {
        "product": "amqp-bridge", "platform": "Python"})
    """client-properties (``capabilities`` is added from :data:`CLIENT_CAPABILITIES`)."""
    credentials: ClientCredentials = field(default_factory=ClientCredentials)
    virtual_host: str = "/"
    locale: str = "en_US"
    channel_max: int = 2047
    """The most channels we accept (the lower of this and the peer's wins)."""
    frame_max: int = 131072
    """The largest frame we accept (the lower of this and the peer's wins)."""
    heartbeat: int | None = 60
    """Seconds; None: take the server's proposal; 0: no heartbeat. Otherwise the
    lower of this and the server's (or this, if the server proposes none)."""
    max_message_size: int = 128 << 20
    """Largest message body accepted: a bigger one closes its channel (311) before a
    byte of its body is buffered."""
    field_types: FieldTypes = DEFAULT_FIELD_TYPES
    """The classes message-header values are decoded into and encoded from
    (:mod:`amqp091.tables`); a bridge to AMQP 1.0 passes proton's width types."""


def start_ok(config: ConnectionConfig, start: C.Connection.Start) -> C.Connection.StartOk:
    """The answer to connection.start (``AuthenticationError``: no usable mechanism)."""
    creds = config.credentials
    mechanism = creds.choose(str(start.mechanisms or "").split())
    response = creds.response(mechanism)
    locales = str(start.locales or "").split()
    locale = config.locale if config.locale in locales or not locales else locales[0]
    props: FieldTable = dict(config.properties)
    caps = dict(CLIENT_CAPABILITIES)
    extra = props.get("capabilities")
    if isinstance(extra, dict):
        caps.update(extra)
    props["capabilities"] = caps
    return C.Connection.StartOk(client_properties=props, mechanism=mechanism,
                                response=response, locale=locale)


def _lower(ours: int, theirs: int) -> int:
    """The lower of two limits where 0 means "no limit"."""
    return min(ours, theirs) if ours and theirs else ours or theirs


def tune_ok(config: ConnectionConfig, tune: C.Connection.Tune) -> C.Connection.TuneOk:
    """The answer to connection.tune: the negotiated limits (``FrameError`` 501 if the
    server's frame-max is below the minimum)."""
    channel_max = _lower(config.channel_max, tune.channel_max or 0)
    frame_max = _lower(config.frame_max, tune.frame_max or 0)
    if frame_max < FRAME_MIN_SIZE:
        raise FrameError(ReplyCode.FRAME_ERROR,
                         f"frame-max {frame_max} is below the minimum {FRAME_MIN_SIZE}")
    proposed = tune.heartbeat or 0
    if config.heartbeat is None:
        heartbeat = proposed
    elif config.heartbeat == 0:
        heartbeat = 0
    else:
        heartbeat = _lower(config.heartbeat, proposed)
    return C.Connection.TuneOk(channel_max=channel_max, frame_max=frame_max,
                               heartbeat=heartbeat)


__all__ = ["CLIENT_CAPABILITIES", "ConnectionConfig", "start_ok", "tune_ok"]
