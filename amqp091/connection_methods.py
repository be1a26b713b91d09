"""The connection's state machine: its states and the connection-class methods
(channel 0) that move it, for both roles.

Theory of operation
-------------------
:class:`ConnectionState` is where a connection stands.  A connection-class method
from the peer goes to :func:`on_connection_method`: connection.close is answered in
every state (close-ok, then the connection ends, told by whom and why); while we are
closing, only close-ok counts; anything else is looked up in :data:`HANDLERS` by
(role, state, method class), and a method with no entry there is 503
command-invalid.

- Client: AWAIT_START (protocol header sent) → start-ok (``handshake.start_ok``:
  mechanism, client properties) → AWAIT_TUNE → tune-ok + open
  (``handshake.tune_ok``) → AWAIT_OPEN_OK → OPEN; a broker that refuses the login
  closes the connection in AWAIT_TUNE (``Connection.auth_error``).  Once open,
  connection.blocked / unblocked.
- Server: AWAIT_HEADER → start sent → AWAIT_START_OK → the login goes to the
  application (:class:`~amqp091.events.CredentialsReceived`; AWAIT_AUTHENTICATION
  until ``Connection.finish_authentication``) → tune sent → AWAIT_TUNE_OK (the
  client's values checked as RabbitMQ checks them, 530) → AWAIT_OPEN (the virtual
  host checked, 530) → OPEN.

The functions take the :class:`~amqp091.connection.Connection` and use its
primitives (``_send``, ``_emit``, ``_finish``, ``_fatal``); they hold no state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from pamqp import commands as C
from pamqp.base import Frame

from .events import (
    ConnectionBlocked,
    ConnectionOpened,
    ConnectionUnblocked,
    CredentialsReceived,
    MethodReceived,
)
from .framing import FRAME_OVERHEAD, FrameError
from .handshake import start_ok, tune_ok
from .methods import ReplyCode, Role, class_method
from .sasl import AuthenticationError, offered_mechanisms, read_response
from .server_handshake import NegotiationError, negotiate

if TYPE_CHECKING:
    from .connection import Connection

log = logging.getLogger("amqp091.connection")

FRAME_SLACK = {Role.CLIENT: 0, Role.SERVER: FRAME_OVERHEAD}
"""Octets a received frame may run over frame-max: a server forgives a client the
off-by-8 (frame-max taken as the payload size) as RabbitMQ does (its
``FRAME_SIZE_FUDGE``); buffering stays bounded by frame-max + 8."""


class ConnectionState(Enum):
    """Handshake and life of a connection (see docs/amqp091-engine.md)."""

    AWAIT_HEADER = "await-header"
    """Server: waiting for the client's protocol header."""
    AWAIT_START_OK = "await-start-ok"
    """Server: connection.start sent."""
    AWAIT_AUTHENTICATION = "await-authentication"
    """Server: CredentialsReceived emitted; the application answers
    :meth:`~amqp091.connection.Connection.finish_authentication`."""
    AWAIT_TUNE_OK = "await-tune-ok"
    """Server: connection.tune sent."""
    AWAIT_OPEN = "await-open"
    """Server: tune-ok accepted, waiting for connection.open."""
    AWAIT_START = "await-start"
    """Client: protocol header sent."""
    AWAIT_TUNE = "await-tune"
    """Client: start-ok sent (the broker refuses a login by closing here)."""
    AWAIT_OPEN_OK = "await-open-ok"
    """Client: tune-ok and connection.open sent."""
    OPEN = "open"
    CLOSING = "closing"
    """We sent connection.close and wait for close-ok."""
    CLOSED = "closed"


def on_connection_method(conn: Connection, method: Frame) -> None:
    """A connection-class method from the peer (module docstring)."""
    t = type(method)
    st = conn.state
    if t is C.Connection.Close:
        conn._send(0, C.Connection.CloseOk())
        code = method.reply_code if method.reply_code is not None else 0  # type: ignore[attr-defined]
        text = method.reply_text or ""  # type: ignore[attr-defined]
        if st is ConnectionState.AWAIT_TUNE:
            conn.auth_error = text or f"login refused (reply code {code})"
        conn.close_code, conn.close_text = code, text
        conn._finish(code, text, by_peer=True, class_id=method.class_id or 0,  # type: ignore[attr-defined]
                     method_id=method.method_id or 0)  # type: ignore[attr-defined]
        return
    if st is ConnectionState.CLOSING:
        if t is C.Connection.CloseOk:
            conn._finish(conn.close_code, conn.close_text, by_peer=False)
        return  # anything else while closing is discarded
    handler = HANDLERS.get((conn.role, st, t))
    if handler is None:
        raise FrameError(ReplyCode.COMMAND_INVALID,
                         f"unexpected {method.name} in state {st.value}")
    handler(conn, method)


# -- client role: the broker's connection methods

def _c_start(conn: Connection, method: C.Connection.Start) -> None:
    if (method.version_major, method.version_minor) != (0, 9):
        conn._finish(None, f"the server proposes AMQP {method.version_major}-"
                           f"{method.version_minor}, not 0-9", by_peer=False)
        return
    conn.peer_properties = dict(method.server_properties or {})
    try:
        answer = start_ok(conn.config, method)
    except AuthenticationError as exc:
        conn.auth_error = str(exc)
        conn._finish(None, str(exc), by_peer=False)  # the spec: just close the socket
        return
    conn.mechanism = answer.mechanism
    conn.user = None if answer.mechanism == "EXTERNAL" else conn.config.credentials.username
    conn._send(0, answer)
    conn.state = ConnectionState.AWAIT_TUNE


def _c_secure(conn: Connection, method: C.Connection.Secure) -> None:
    raise FrameError(ReplyCode.NOT_IMPLEMENTED,
                     f"SASL {conn.mechanism} takes no challenge (connection.secure)")


def _c_tune(conn: Connection, method: C.Connection.Tune) -> None:
    answer = tune_ok(conn.config, method)
    conn.channel_max, conn.frame_max = answer.channel_max, answer.frame_max
    conn.heartbeat = answer.heartbeat
    conn._reader.frame_max = answer.frame_max
    conn._send(0, answer)
    conn._send(0, C.Connection.Open(virtual_host=conn.config.virtual_host))
    conn.state = ConnectionState.AWAIT_OPEN_OK


def _c_open_ok(conn: Connection, method: C.Connection.OpenOk) -> None:
    conn.state = ConnectionState.OPEN
    conn._emit(ConnectionOpened(conn.config.virtual_host, conn.peer_properties,
                                conn.channel_max, conn.frame_max, conn.heartbeat,
                                conn.user))


def _c_blocked(conn: Connection, method: C.Connection.Blocked) -> None:
    conn.blocked = method.reason or ""
    conn._emit(ConnectionBlocked(conn.blocked))


def _c_unblocked(conn: Connection, method: C.Connection.Unblocked) -> None:
    conn.blocked = None
    conn._emit(ConnectionUnblocked())


def _c_update_secret_ok(conn: Connection, method: C.Connection.UpdateSecretOk) -> None:
    conn._emit(MethodReceived(0, method))


# -- server role: the client's connection methods

def _s_start_ok(conn: Connection, method: C.Connection.StartOk) -> None:
    conn.peer_properties = dict(method.client_properties or {})
    cfg = conn.server_config
    mechanism = str(method.mechanism or "")
    raw = method.response or b""
    response = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    try:
        if mechanism not in offered_mechanisms(cfg.mechanisms, cfg.external_identity):
            raise AuthenticationError(f"SASL mechanism {mechanism!r} was not offered")
        login = read_response(mechanism, response, cfg.external_identity)
    except AuthenticationError as exc:
        # the spec (and RabbitMQ, after a delay): close the socket without a word
        conn.auth_error = str(exc)
        log.debug("AMQP 0-9-1 login failed: %s", exc)  # the application logs refusals
        conn._finish(None, f"login failed: {exc}", by_peer=False)
        return
    conn.mechanism = mechanism
    conn.state = ConnectionState.AWAIT_AUTHENTICATION
    conn._emit(CredentialsReceived(login.mechanism, login.user, login.password))


def _s_secure_ok(conn: Connection, method: C.Connection.SecureOk) -> None:
    raise FrameError(ReplyCode.COMMAND_INVALID, "connection.secure-ok, but no challenge "
                                                "was sent")


def _s_tune_ok(conn: Connection, method: C.Connection.TuneOk) -> None:
    try:
        channel_max, frame_max, heartbeat = negotiate(conn.server_config, method)
    except NegotiationError as exc:
        conn._fatal(ReplyCode.NOT_ALLOWED, str(exc), *class_method(C.Connection.Tune()))
        return
    conn.channel_max, conn.frame_max, conn.heartbeat = channel_max, frame_max, heartbeat
    conn._reader.frame_max = frame_max + FRAME_SLACK[conn.role]
    conn.state = ConnectionState.AWAIT_OPEN


def _s_open(conn: Connection, method: C.Connection.Open) -> None:
    vhost = str(method.virtual_host or "")
    allowed = conn.server_config.virtual_hosts
    if allowed is not None and vhost not in allowed:
        conn._fatal(ReplyCode.NOT_ALLOWED, f"vhost {vhost} not found",
                    *class_method(method))
        return
    access = conn.server_config.vhost_access
    if access is not None and not access(conn.user, vhost):
        conn._fatal(ReplyCode.NOT_ALLOWED,
                    f"access to vhost '{vhost}' refused for user '{conn.user or ''}'",
                    *class_method(method))
        return
    conn.virtual_host = vhost
    conn._send(0, C.Connection.OpenOk())
    conn.state = ConnectionState.OPEN
    conn._emit(ConnectionOpened(vhost, conn.peer_properties, conn.channel_max,
                                conn.frame_max, conn.heartbeat, conn.user))


HANDLERS: dict[tuple[Role, ConnectionState, type], Callable[[Connection, Any], None]] = {
    (Role.CLIENT, ConnectionState.AWAIT_START, C.Connection.Start): _c_start,
    (Role.CLIENT, ConnectionState.AWAIT_TUNE, C.Connection.Secure): _c_secure,
    (Role.CLIENT, ConnectionState.AWAIT_TUNE, C.Connection.Tune): _c_tune,
    (Role.CLIENT, ConnectionState.AWAIT_OPEN_OK, C.Connection.OpenOk): _c_open_ok,
    (Role.CLIENT, ConnectionState.OPEN, C.Connection.Blocked): _c_blocked,
    (Role.CLIENT, ConnectionState.OPEN, C.Connection.Unblocked): _c_unblocked,
    (Role.CLIENT, ConnectionState.OPEN, C.Connection.UpdateSecretOk):
        _c_update_secret_ok,
    (Role.SERVER, ConnectionState.AWAIT_START_OK, C.Connection.StartOk): _s_start_ok,
    (Role.SERVER, ConnectionState.AWAIT_START_OK, C.Connection.SecureOk): _s_secure_ok,
    (Role.SERVER, ConnectionState.AWAIT_TUNE_OK, C.Connection.TuneOk): _s_tune_ok,
    (Role.SERVER, ConnectionState.AWAIT_OPEN, C.Connection.Open): _s_open,
}
"""Connection methods by (role, state, method class); connection.close is handled in
every state before this table is consulted."""
