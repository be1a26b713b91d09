"""The sans-IO AMQP 0-10 connection: bytes in → events out; method calls → bytes out.

>>> conn = Connection(Role.CLIENT, ConnectionConfig(username="guest", password="guest"))
>>> sock.sendall(conn.data_to_send())          # protocol header
>>> conn.receive_data(sock.recv(65536))         # b"" when the transport closed
>>> for event in conn.events(): ...
>>> conn.tick(time.monotonic())                 # heartbeats and dead-peer detection

The connection runs the handshake (protocol header, SASL start/secure, tune,
open/redirect), close in both directions, heartbeats, and routes session
controls and commands to :class:`~amqp010.session.Session` objects by
channel.  It holds no socket, thread or clock: time comes in through
:meth:`Connection.tick`.  See ``docs/amqp010-engine.md`` for the state machine.

Connection controls are dispatched by a table keyed by (role, state, control
class) (``_HANDLERS`` at the end).  Sessions are driven through their public
transport-side methods only (``bind``, ``transport_attached``,
``receive_control``, ``receive_command``, ``announce_completed``,
``transport_lost``, ``evict``); a bound session reaches back through the
:class:`~amqp010.session.SessionHost` interface, which the connection
implements (``send_control``, ``send_command``, ``emit``, ``withdraw_events``,
``release``, ``now``, and the ``is_server``, ``max_session_timeout`` and
``registry`` properties).  This module imports ``session.py``, never the
reverse.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .base import Control
from .errors import DecodeError, FramingError
from .events import (
    ConnectionClosed,
    ConnectionOpened,
    ConnectionRedirected,
    CredentialsReceived,
    Event,
    HeartbeatTimeout,
)
from .framing import (
    MAX_FRAME_SIZE,
    MIN_MAX_FRAME_SIZE,
    PROTOCOL_HEADER,
    Assembler,
    Assembly,
    FrameDecoder,
    ProtocolHeader,
    Track,
    encode_assembly,
    encode_segments,
)
from .sasl import (
    AuthenticationError,
    Authenticator,
    ClientCredentials,
    ServerMechanism,
    SimpleAuthenticator,
    Step,
)
from .session import Session, SessionRegistry, SessionState
from .spec import (
    CloseCode,
    ConnectionClose,
    ConnectionCloseOk,
    ConnectionHeartbeat,
    ConnectionOpen,
    ConnectionOpenOk,
    ConnectionRedirect,
    ConnectionSecure,
    ConnectionSecureOk,
    ConnectionStart,
    ConnectionStartOk,
    ConnectionTune,
    ConnectionTuneOk,
    DetachCode,
    SessionAttach,
    SessionDetach,
)
from .spec import (
    SessionAttached as SessionAttachedCtl,
)
from .spec import (
    SessionDetached as SessionDetachedCtl,
)
from .types import Array

STR16 = 0x95


class Role(Enum):
    CLIENT = "client"
    SERVER = "server"


class ConnectionState(Enum):
    """Handshake and life of a connection (see docs/amqp010-engine.md)."""

    AWAIT_HEADER = "await-header"
    AWAIT_START = "await-start"
    AWAIT_START_OK = "await-start-ok"
    AWAIT_SECURE_OK = "await-secure-ok"
    AWAIT_AUTHENTICATION = "await-authentication"
    """Server: credentials handed to the application (``CredentialsReceived``), which
    answers with :meth:`Connection.finish_authentication`."""
    AWAIT_TUNE = "await-tune"
    """Client: start-ok sent; secure challenges or tune come next."""
    AWAIT_TUNE_OK = "await-tune-ok"
    AWAIT_OPEN = "await-open"
    AWAIT_OPEN_OK = "await-open-ok"
    OPEN = "open"
    CLOSING = "closing"
    """We sent connection.close and wait for close-ok."""
    CLOSED = "closed"


PRE_OPEN_BUFFER = 64 << 10
"""Octets a peer can make us buffer in unfinished assemblies before the connection is
open (before login): the connection controls of the handshake are small."""


class ProtocolError(Exception):
    """An API call that the connection's state does not allow."""


@dataclass(frozen=True, slots=True)
class Redirect:
    """Server role: answer connection.open with connection.redirect."""

    host: str
    known_hosts: list[str] = field(default_factory=list)


OpenHandler = Callable[[str, "Connection"], "Redirect | str | None"]
"""Server role: decides on connection.open(virtual_host): None accepts, a
:class:`Redirect` redirects, a string refuses with close(invalid-path, string)."""


@dataclass(slots=True)
class ConnectionConfig:
    """Settings of one connection; most apply to one role only (marked)."""

    # both roles
    properties: dict[str, Any] = field(default_factory=lambda: {"product": "amqp-bridge"})
    """client-properties / server-properties."""
    channel_max: int = 256
    max_frame_size: int = MAX_FRAME_SIZE
    max_message_size: int = 256 << 20
    """Largest assembly (header + body octets) accepted; bounds receive memory."""
    max_buffered: int = 256 << 20
    """Octets all unfinished assemblies may hold together (every channel and track):
    with ``max_message_size`` the bound on what one open connection can make us buffer.
    Before the connection is open (no login yet) both are :data:`PRE_OPEN_BUFFER`."""
    # client role
    virtual_host: str = ""
    credentials: ClientCredentials = field(default_factory=ClientCredentials)
    locale: str = "en_US"
    heartbeat: int | None = None
    """Client: the heartbeat (seconds) to ask for; clamped to the server's range."""
    # server role
    authenticator: Authenticator = field(default_factory=SimpleAuthenticator)
    external_identity: str | None = None
    """Server: the TLS client certificate's identity (offers EXTERNAL)."""
    locales: list[str] = field(default_factory=lambda: ["en_US"])
    heartbeat_min: int | None = 0
    heartbeat_max: int | None = 120
    open_handler: OpenHandler | None = None
    known_hosts: list[str] = field(default_factory=list)
    max_session_timeout: int = 3600
    """Server (and client): the longest session timeout granted to a request-timeout."""


class Connection:
    """One AMQP 0-10 connection in the client or server role (sans-IO)."""

    def __init__(self, role: Role, config: ConnectionConfig | None = None, *,
                 registry: SessionRegistry | None = None) -> None:
        self.role = role
        self.config = config or ConnectionConfig()
        self.registry = registry if registry is not None else SessionRegistry()
        self.state = ConnectionState.AWAIT_HEADER
        self.max_frame_size = MIN_MAX_FRAME_SIZE
        """Largest frame we send: MIN-MAX-FRAME-SIZE until tune, then the negotiated size."""
        self.channel_max = self.config.channel_max
        self.heartbeat: int | None = None
        self.peer_properties: dict[str, Any] = {}
        self.user: str | None = None
        self.virtual_host = self.config.virtual_host
        self.known_hosts: list[str] = []
        self.close_code: int | None = None
        self.close_text = ""
        self.auth_error: str | None = None
        """Why the SASL login failed: the server refused it (client role: the peer closed
        the connection between start-ok and tune; server role: the credentials or the
        mechanism were refused), or no offered mechanism was usable (client role)."""
        self.sessions: dict[int, Session] = {}
        """Attached (or attaching/detaching) sessions by channel."""
        self._out: list[bytes] = []
        self._events: deque[Event] = deque()
        self._decoder = FrameDecoder(self.config.max_frame_size)
        self._held: Assembly | None = None
        """A peer's session.detach waiting for the application to take that session's
        events first."""
        self._assembler = Assembler(PRE_OPEN_BUFFER, PRE_OPEN_BUFFER)
        self._mechanism: ServerMechanism | None = None
        self._client_mech = ""
        self._now: float | None = None
        self._last_recv: float | None = None
        self._last_send: float | None = None
        self._recv_flag = False
        self._send_flag = False
        if role is Role.CLIENT:
            self._write(PROTOCOL_HEADER)

    # ------------------------------------------------------------ properties

    @property
    def is_server(self) -> bool:
        return self.role is Role.SERVER

    @property
    def closed(self) -> bool:
        """True once nothing more will be exchanged (close the transport after
        sending what :meth:`data_to_send` still returns)."""
        return self.state is ConnectionState.CLOSED

    @property
    def is_open(self) -> bool:
        return self.state is ConnectionState.OPEN

    @property
    def awaiting_header(self) -> bool:
        """Server role: the peer's protocol header has not arrived yet."""
        return self.state is ConnectionState.AWAIT_HEADER

    @property
    def incoming_backlog(self) -> int:
        """Received commands the application has not completed yet, over all sessions.

        A host applies backpressure by not reading from the transport while this
        is above its limit (the engine itself never stops reading)."""
        return sum(s.incomplete_count for s in self.sessions.values())

    @property
    def buffered(self) -> int:
        """Received octets held for input not yet complete: unfinished assemblies plus
        the partial frame (what ``max_buffered`` and ``max_message_size`` bound)."""
        return self._assembler.buffered + self._decoder.buffered

    @property
    def bytes_to_send(self) -> int:
        """Octets waiting in :meth:`data_to_send`."""
        return sum(len(b) for b in self._out)

    # ------------------------------------------------------------- I/O side

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the transport; ``b""`` means the transport closed."""
        if self.state is ConnectionState.CLOSED:
            return
        if not data:
            self._finish(None, "transport closed by peer", by_peer=True)
            return
        self._recv_flag = True
        self._decoder.feed(data)
        self._process_input()

    def _process_input(self) -> None:
        """Handle what the decoder has, in order — holding back a peer's session.detach
        while that session still has events the application has not taken: the
        application then completes those commands before the session goes (as a broker
        that executes in order would), and :meth:`events` resumes the input."""
        held, self._held = self._held, None
        try:
            if held is not None:
                self._on_assembly(held)
            for item in self._decoder.assemblies(self._assembler):
                if self.state is ConnectionState.CLOSED:
                    return
                if type(item) is ProtocolHeader:
                    self._on_protocol_header(item)
                elif type(item.op) is SessionDetach and self._must_hold(item):  # type: ignore[union-attr,arg-type]
                    self._held = item  # type: ignore[assignment]
                    return
                else:
                    self._on_assembly(item)  # type: ignore[arg-type]
                if self.state is ConnectionState.CLOSED:
                    return
        except FramingError as exc:
            self._fatal(CloseCode.FRAMING_ERROR, f"framing error: {exc}")
        except DecodeError as exc:
            self._fatal(CloseCode.FRAMING_ERROR, f"malformed frame: {exc}")

    def _must_hold(self, asm: Assembly) -> bool:
        if not self._events:
            return False
        session = self.sessions.get(asm.channel)
        return session is not None and any(getattr(e, "session", None) is session
                                           for e in self._events)

    def data_to_send(self) -> bytes:
        """Bytes to write to the transport (empty if none).

        What goes out here counts as sent at the last :meth:`tick` (the host ticks just
        before it collects, or earlier): the next heartbeat is then due one interval after
        that at the latest. Stamped at the *next* tick instead, output made here (a
        session.completed) moved the heartbeat up to two intervals after it — the very
        silence after which the peer gives up (twice the heartbeat)."""
        for s in list(self.sessions.values()):
            s.announce_completed()
        if not self._out:
            return b""
        if self._now is not None:
            self._last_send = self._now
            self._send_flag = False
        out = b"".join(self._out) if len(self._out) > 1 else self._out[0]
        self._out.clear()
        return out

    def next_event(self) -> Event | None:
        """The next event, or None."""
        if not self._events and self._held is not None:
            self._process_input()
        return self._events.popleft() if self._events else None

    def events(self) -> Iterator[Event]:
        """Drain the pending events (resuming input held back for them, see
        :meth:`receive_data`)."""
        while True:
            while self._events:
                yield self._events.popleft()
            if self._held is None:
                return
            self._process_input()

    def note_peer_alive(self) -> None:
        """The host knows the peer is there though nothing was received — it stopped
        reading on purpose (throttling): the silence until the next :meth:`tick` does not
        count towards the heartbeat timeout."""
        self._recv_flag = True

    def tick(self, now: float) -> None:
        """Advance time (seconds, any monotonic origin): sends heartbeats, detects a
        peer silent for more than twice the heartbeat."""
        self._now = now
        if self._recv_flag or self._last_recv is None:
            self._last_recv = now
            self._recv_flag = False
        if self._send_flag or self._last_send is None:
            self._last_send = now
            self._send_flag = False
        hb = self.heartbeat
        if not hb or self.state in (ConnectionState.CLOSED, ConnectionState.AWAIT_HEADER):
            return
        idle = now - self._last_recv
        if idle > 2 * hb:
            self._events.append(HeartbeatTimeout(idle))
            self._finish(None, f"no traffic from the peer for {idle:.1f}s "
                               f"(heartbeat {hb}s)", by_peer=True)
            return
        if now - self._last_send >= hb:
            self.send_control(0, ConnectionHeartbeat())
            self._last_send = now
            self._send_flag = False

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (None: no heartbeat)."""
        if not self.heartbeat or self._last_send is None or self._last_recv is None:
            return None
        return min(self._last_send + self.heartbeat, self._last_recv + 2 * self.heartbeat)

    # -------------------------------------------------------- application API

    def close(self, code: int = CloseCode.NORMAL, text: str = "") -> None:
        """Start a negotiated close (connection.close; ConnectionClosed follows close-ok)."""
        if self.state in (ConnectionState.CLOSING, ConnectionState.CLOSED):
            return
        if self.state is ConnectionState.AWAIT_HEADER:
            self._finish(None, text or "closed before the handshake", by_peer=False)
            return
        self.close_code, self.close_text = code, text
        self.send_control(0, ConnectionClose(reply_code=code, reply_text=text[:255]))
        self.state = ConnectionState.CLOSING

    def abort(self, code: int = CloseCode.CONNECTION_FORCED, text: str = "") -> None:
        """Close at once and discard the sessions: each attached session asks the peer to
        drop its state (session.request-timeout 0, so what it holds unsettled is requeued),
        connection.close is sent but its close-ok not awaited, every session ends (a
        SessionDetached each, none kept for a resume) and ConnectionClosed follows. Then
        close the transport after sending what :meth:`data_to_send` returns."""
        if self.state is ConnectionState.CLOSED:
            return
        for session in list(self.sessions.values()):
            if session.timeout or session.requested_timeout:
                session.request_timeout(0)
                session.timeout = 0
        self._fatal(code, text)

    def expire_handshake(self, text: str) -> None:
        """Server role: the handshake did not finish in time: :meth:`abort` with
        connection-forced and ``text`` (nothing is sent before the client's protocol
        header; after it, connection.close tells the client why)."""
        self.abort(CloseCode.CONNECTION_FORCED, text)

    def finish_authentication(self, identity: str | None, refusal: str = "") -> None:
        """Answer :class:`~amqp010.events.CredentialsReceived` (server role):
        ``identity`` logged in, or (None) the login is refused for ``refusal``.

        Ignored once the connection is closing or closed (the client went away while
        its credentials were being checked).
        """
        if self.state in (ConnectionState.CLOSING, ConnectionState.CLOSED):
            return
        if self.state is not ConnectionState.AWAIT_AUTHENTICATION:
            raise ProtocolError(f"no credentials await a check (state {self.state.value})")

        def outcome() -> Step:
            if identity is None:
                raise AuthenticationError(refusal or "bad credentials")
            return Step(identity=identity)

        self._sasl(outcome)

    def attach(self, name: bytes | str | None = None, *, timeout: int = 0,
               auto_complete: bool | None = None, **session_options: Any) -> Session:
        """Client API: create a session and attach it (SessionAttached follows).

        ``timeout`` > 0 asks the peer to keep the session's state that many
        seconds after a transport loss, so it can be resumed.
        """
        session = Session(name, timeout=timeout,
                          auto_complete=(not self.is_server) if auto_complete is None
                          else auto_complete, **session_options)
        return self.resume(session, force=False)

    def resume(self, session: Session, *, force: bool = True) -> Session:
        """Attach an existing (detached) session on this connection; unconfirmed
        commands are replayed once it is attached."""
        if self.state is not ConnectionState.OPEN:
            raise ProtocolError(f"connection is {self.state.value}, not open")
        if session.state is not SessionState.DETACHED:
            raise ProtocolError(f"session {session.name!r} is {session.state.value}")
        channel = self._free_channel()
        session.bind(self, channel)
        session.state = SessionState.ATTACHING
        self.sessions[channel] = session
        self.send_control(channel, SessionAttach(name=session.name, force=force))
        return session

    # ------------------------------------------------------ engine internals

    def _write(self, data: bytes) -> None:
        self._out.append(data)
        self._send_flag = True

    def _free_channel(self) -> int:
        for ch in range(1, max(self.channel_max, 2)):
            if ch not in self.sessions:
                return ch
        if 0 not in self.sessions:
            return 0
        raise ProtocolError(f"all {self.channel_max} channels are in use")

    def _fatal(self, code: int, text: str) -> None:
        """Send connection.close for a protocol violation and stop reading."""
        self.close_code, self.close_text = code, text
        if self.state not in (ConnectionState.AWAIT_HEADER, ConnectionState.CLOSED):
            self.send_control(0, ConnectionClose(reply_code=code, reply_text=text[:255]))
        self._finish(code, text, by_peer=False)

    def _finish(self, code: int | None, text: str, *, by_peer: bool) -> None:
        if self.state is ConnectionState.CLOSED:
            return
        self.state = ConnectionState.CLOSED
        # nothing more is decoded: free the input now, not when a garbage collection
        # breaks the cycles that may keep this connection around (a peer that made us
        # buffer much and went away must not keep it)
        self._decoder.discard()
        self._assembler.discard()
        self._held = None
        for s in list(self.sessions.values()):
            s.transport_lost(by_peer)
        self.sessions.clear()
        self._events.append(ConnectionClosed(code, text, by_peer))

    # ------------------------------------- the session host (SessionHost)

    @property
    def max_session_timeout(self) -> int:
        """The longest timeout granted to a peer's session.request-timeout."""
        return self.config.max_session_timeout

    def now(self) -> float | None:
        """The time of the last :meth:`tick` (None before the first)."""
        return self._now

    def send_control(self, channel: int, control: Control) -> None:
        """Write ``control`` on ``channel`` (nothing once the connection is closed)."""
        if self.state is ConnectionState.CLOSED:
            return
        self._write(encode_assembly(channel, control, max_frame_size=self.max_frame_size))

    def send_command(self, channel: int, segments: list[tuple[int, bytes]]) -> None:
        """Write one command's encoded segments on ``channel`` (framed to max-frame-size)."""
        self._out.append(encode_segments(channel, Track.COMMAND, segments, self.max_frame_size))
        self._send_flag = True

    def emit(self, event: Event) -> None:
        """Queue ``event`` for :meth:`events`."""
        self._events.append(event)

    def withdraw_events(self, drop: Callable[[Event], bool]) -> None:
        """Take back the queued events for which ``drop`` is true."""
        self._events = deque(e for e in self._events if not drop(e))

    def release(self, session: Session) -> bool:
        """Free the channel ``session`` holds here; False if it holds none here."""
        if session.channel is not None and self.sessions.get(session.channel) is session:
            del self.sessions[session.channel]
            return True
        return False

    # ---------------------------------------------------------- handshake

    def _on_protocol_header(self, header: ProtocolHeader) -> None:
        if self.state is not ConnectionState.AWAIT_HEADER:
            raise FramingError(0, "unexpected protocol header")
        if not header.supported:
            if self.is_server:
                self._write(PROTOCOL_HEADER)  # tell the peer what we speak, then hang up
            self._finish(None, f"unsupported protocol {header.version}: the peer speaks "
                               f"{header.protocol}, not AMQP 0-10", by_peer=True)
            return
        if self.is_server:
            self._write(PROTOCOL_HEADER)
            cfg = self.config
            mechs = cfg.authenticator.mechanisms(cfg.external_identity)
            self.send_control(0, ConnectionStart(
                server_properties=cfg.properties, mechanisms=Array(STR16, mechs),
                locales=Array(STR16, cfg.locales)))
            self.state = ConnectionState.AWAIT_START_OK
        else:
            self.state = ConnectionState.AWAIT_START

    def _on_assembly(self, asm: Assembly) -> None:
        op = asm.op
        if isinstance(op, Control) and op.CLASS_CODE == 1:
            self._on_connection_control(op)
            return
        if self.state is ConnectionState.CLOSING:
            return  # sent before the peer saw our close: nobody is listening any more
        if self.state is not ConnectionState.OPEN:
            self._fatal(CloseCode.FRAMING_ERROR, f"{op.NAME} before the connection is open")
            return
        if asm.channel >= self.channel_max:
            self._fatal(CloseCode.FRAMING_ERROR, f"channel {asm.channel} is past the "
                                                 f"negotiated channel-max {self.channel_max}")
            return
        if isinstance(op, Control):
            self._on_session_control(asm.channel, op)
            return
        session = self.sessions.get(asm.channel)
        if session is None or session.state is not SessionState.ATTACHED:
            if session is not None and session.state is SessionState.DETACHING:
                return  # in flight before our detach: discard
            self.send_control(asm.channel, SessionDetachedCtl(name=b"", code=DetachCode.NOT_ATTACHED))
            return
        session.receive_command(asm)

    def _on_connection_control(self, ctl: Control) -> None:
        t = type(ctl)
        st = self.state
        S = ConnectionState
        if t is ConnectionHeartbeat:
            return
        if t is ConnectionClose:
            self.send_control(0, ConnectionCloseOk())
            code = ctl.reply_code if ctl.reply_code is not None else CloseCode.NORMAL  # type: ignore[attr-defined]
            self.close_code, self.close_text = code, ctl.reply_text or ""  # type: ignore[attr-defined]
            if not self.is_server and st is ConnectionState.AWAIT_TUNE:
                self.auth_error = self.close_text or f"login refused (close code {code})"
            self._finish(code, self.close_text, by_peer=True)
            return
        if t is ConnectionCloseOk and st is S.CLOSING:
            self._finish(self.close_code, self.close_text, by_peer=False)
            return
        if st is S.CLOSING:
            return  # anything else while closing is ignored
        handler = _HANDLERS.get((self.role, st, t))
        if handler is None:
            self._fatal(CloseCode.FRAMING_ERROR, f"unexpected {ctl.NAME} in state {st.value}")
            return
        handler(self, ctl)

    # client side
    def _c_start(self, ctl: ConnectionStart) -> None:
        self.peer_properties = dict(ctl.server_properties or {})
        offered = list(ctl.mechanisms or [])
        creds = self.config.credentials
        try:
            mech = creds.choose(offered)
        except AuthenticationError as exc:
            self.auth_error = str(exc)
            self._fatal(CloseCode.CONNECTION_FORCED, str(exc))
            return
        self._client_mech = mech
        if mech == "PLAIN":
            self.user = creds.username
        locales = list(ctl.locales or [])
        locale = self.config.locale if self.config.locale in locales or not locales else locales[0]
        self.send_control(0, ConnectionStartOk(
            client_properties=self.config.properties, mechanism=mech,
            response=creds.initial_response(mech), locale=locale))
        self.state = ConnectionState.AWAIT_TUNE

    def _c_secure(self, ctl: ConnectionSecure) -> None:
        resp = self.config.credentials.respond(self._client_mech, ctl.challenge or b"")
        self.send_control(0, ConnectionSecureOk(response=resp))

    def _c_tune(self, ctl: ConnectionTune) -> None:
        cfg = self.config
        channel_max = min(cfg.channel_max, ctl.channel_max or 0xFFFF)
        frame = min(cfg.max_frame_size, ctl.max_frame_size or MAX_FRAME_SIZE)
        if frame < MIN_MAX_FRAME_SIZE:
            self._fatal(CloseCode.FRAMING_ERROR, f"max-frame-size {frame} is below the minimum")
            return
        heartbeat = None
        if ctl.heartbeat_min is not None and cfg.heartbeat:
            heartbeat = max(cfg.heartbeat, ctl.heartbeat_min)
            if ctl.heartbeat_max is not None:
                heartbeat = min(heartbeat, ctl.heartbeat_max)
            heartbeat = heartbeat or None
        self.channel_max, self.max_frame_size, self.heartbeat = channel_max, frame, heartbeat
        self._decoder.max_frame_size = frame
        self.send_control(0, ConnectionTuneOk(channel_max=channel_max, max_frame_size=frame,
                                               heartbeat=heartbeat))
        self.send_control(0, ConnectionOpen(virtual_host=cfg.virtual_host,
                                             capabilities=Array(STR16, [])))
        self.state = ConnectionState.AWAIT_OPEN_OK

    def _opened(self) -> None:
        """The handshake is done: the configured receive bounds apply from now on."""
        self.state = ConnectionState.OPEN
        self._assembler.max_assembly_size = self.config.max_message_size
        self._assembler.max_buffered = self.config.max_buffered

    def _c_open_ok(self, ctl: ConnectionOpenOk) -> None:
        self.known_hosts = list(ctl.known_hosts or [])
        self._opened()
        self.emit(ConnectionOpened(self.virtual_host, self.peer_properties, self.known_hosts,
                                    self.user))

    def _c_redirect(self, ctl: ConnectionRedirect) -> None:
        self.emit(ConnectionRedirected(ctl.host or "", list(ctl.known_hosts or [])))
        self._finish(None, f"redirected to {ctl.host}", by_peer=True)

    # server side
    def _s_start_ok(self, ctl: ConnectionStartOk) -> None:
        self.peer_properties = dict(ctl.client_properties or {})
        cfg = self.config
        mech = cfg.authenticator.mechanism(ctl.mechanism or "", cfg.external_identity)
        if mech is None:
            self.auth_error = f"SASL mechanism {ctl.mechanism!r} is not offered"
            self._fatal(CloseCode.CONNECTION_FORCED, self.auth_error)
            return
        self._mechanism = mech
        self._sasl(lambda: mech.start(ctl.response or b""))

    def _s_secure_ok(self, ctl: ConnectionSecureOk) -> None:
        mech = self._mechanism
        assert mech is not None
        self._sasl(lambda: mech.step(ctl.response or b""))

    def _sasl(self, run: Callable[[], Step]) -> None:
        try:
            step = run()
        except AuthenticationError as exc:
            self.auth_error = str(exc)
            self._fatal(CloseCode.CONNECTION_FORCED, f"authentication failed: {exc}")
            return
        if step.deferred is not None:
            self.state = ConnectionState.AWAIT_AUTHENTICATION
            self.emit(CredentialsReceived(step.deferred.user, step.deferred.password))
            return
        if step.challenge is not None:
            self.send_control(0, ConnectionSecure(challenge=step.challenge))
            self.state = ConnectionState.AWAIT_SECURE_OK
            return
        self.user = step.identity
        self._mechanism = None
        cfg = self.config
        self.send_control(0, ConnectionTune(
            channel_max=cfg.channel_max, max_frame_size=cfg.max_frame_size,
            heartbeat_min=cfg.heartbeat_min, heartbeat_max=cfg.heartbeat_max))
        self.state = ConnectionState.AWAIT_TUNE_OK

    def _s_tune_ok(self, ctl: ConnectionTuneOk) -> None:
        cfg = self.config
        channel_max = ctl.channel_max if ctl.channel_max is not None else cfg.channel_max
        frame = ctl.max_frame_size if ctl.max_frame_size is not None else cfg.max_frame_size
        if channel_max > cfg.channel_max or not MIN_MAX_FRAME_SIZE <= frame <= cfg.max_frame_size:
            # the spec: close without attempting a negotiated close
            self._finish(None, f"tune-ok outside the offered limits (channel-max {channel_max}, "
                               f"max-frame-size {frame})", by_peer=False)
            return
        hb = ctl.heartbeat
        if hb is not None and hb != 0:
            lo, hi = cfg.heartbeat_min, cfg.heartbeat_max
            if lo is None or hb < lo or (hi is not None and hb > hi):
                self._fatal(CloseCode.CONNECTION_FORCED,
                            f"heartbeat {hb} outside the offered range {lo}..{hi}")
                return
        self.channel_max, self.max_frame_size, self.heartbeat = channel_max, frame, hb or None
        self._decoder.max_frame_size = frame
        self.state = ConnectionState.AWAIT_OPEN

    def _s_open(self, ctl: ConnectionOpen) -> None:
        vhost = ctl.virtual_host or ""
        decision = self.config.open_handler(vhost, self) if self.config.open_handler else None
        if isinstance(decision, Redirect):
            self.send_control(0, ConnectionRedirect(host=decision.host,
                                                     known_hosts=Array(STR16, decision.known_hosts)))
            self._finish(None, f"redirected to {decision.host}", by_peer=False)
            return
        if isinstance(decision, str):
            self._fatal(CloseCode.INVALID_PATH, decision)
            return
        self.virtual_host = vhost
        self.send_control(0, ConnectionOpenOk(known_hosts=Array(STR16, self.config.known_hosts)))
        self._opened()
        self.emit(ConnectionOpened(vhost, self.peer_properties, [], self.user))

    # ------------------------------------------------------------ sessions

    def _on_session_control(self, channel: int, ctl: Control) -> None:
        t = type(ctl)
        session = self.sessions.get(channel)
        if t is SessionAttach:
            self._on_attach(channel, ctl)  # type: ignore[arg-type]
            return
        if session is None:
            if t is SessionDetachedCtl:
                return
            name = getattr(ctl, "name", None) or b""
            self.send_control(channel, SessionDetachedCtl(name=name, code=DetachCode.NOT_ATTACHED))
            return
        name = getattr(ctl, "name", None)
        if name is not None and name != session.name:
            if t is SessionDetachedCtl:
                return  # a reply about some other session name: never answer a reply
            self.send_control(channel, SessionDetachedCtl(name=name, code=DetachCode.NOT_ATTACHED))
            return
        if session.state is SessionState.ATTACHING and t not in (
                SessionAttachedCtl, SessionDetachedCtl, SessionDetach):
            self.send_control(channel, SessionDetachedCtl(name=session.name,
                                                           code=DetachCode.NOT_ATTACHED))
            return
        session.receive_control(ctl)

    def _on_attach(self, channel: int, ctl: SessionAttach) -> None:
        name = ctl.name or b""
        current = self.sessions.get(channel)
        if current is not None:
            if current.name == name and current.state is SessionState.ATTACHED:
                self.send_control(channel, SessionAttachedCtl(name=name))  # idempotent
            else:
                self.send_control(channel, SessionDetachedCtl(name=name,
                                                               code=DetachCode.TRANSPORT_BUSY))
            return
        session = self.registry.get(name)
        if session is not None and session.state is SessionState.CLOSED:
            self.registry.discard(session)
            session = None
        if session is not None and session.connection is not None:
            if not ctl.force:
                self.send_control(channel, SessionDetachedCtl(name=name,
                                                               code=DetachCode.SESSION_BUSY))
                return
            session.evict()
        if session is None:
            session = Session(name, auto_complete=not self.is_server)
            if self.is_server:
                self.registry.add(session)
        session.bind(self, channel)
        self.sessions[channel] = session
        self.send_control(channel, SessionAttachedCtl(name=name))
        session.transport_attached()


_HANDLERS: dict[tuple[Role, ConnectionState, type], Callable[[Connection, Any], None]] = {
    (Role.CLIENT, ConnectionState.AWAIT_START, ConnectionStart): Connection._c_start,
    (Role.CLIENT, ConnectionState.AWAIT_TUNE, ConnectionSecure): Connection._c_secure,
    (Role.CLIENT, ConnectionState.AWAIT_TUNE, ConnectionTune): Connection._c_tune,
    (Role.CLIENT, ConnectionState.AWAIT_OPEN_OK, ConnectionOpenOk): Connection._c_open_ok,
    (Role.CLIENT, ConnectionState.AWAIT_OPEN_OK, ConnectionRedirect): Connection._c_redirect,
    (Role.SERVER, ConnectionState.AWAIT_START_OK, ConnectionStartOk): Connection._s_start_ok,
    (Role.SERVER, ConnectionState.AWAIT_SECURE_OK, ConnectionSecureOk): Connection._s_secure_ok,
    (Role.SERVER, ConnectionState.AWAIT_TUNE_OK, ConnectionTuneOk): Connection._s_tune_ok,
    (Role.SERVER, ConnectionState.AWAIT_OPEN, ConnectionOpen): Connection._s_open,
}

__all__ = ["Connection", "ConnectionConfig", "ConnectionState", "ProtocolError", "Redirect",
           "Role"]
