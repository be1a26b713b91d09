"""The sans-IO AMQP 0-9-1 connection: bytes in → events out; method calls → bytes out.

>>> conn = Connection(Role.CLIENT, ConnectionConfig(credentials=ClientCredentials("guest", "guest")))
>>> sock.sendall(conn.data_to_send())          # protocol header
>>> conn.receive_data(sock.recv(65536))         # b"" when the transport closed
>>> for event in conn.events(): ...             # ConnectionOpened, MessageReceived, …
>>> conn.tick(time.monotonic())                 # heartbeats and dead-peer detection

Theory of operation
-------------------
Received bytes go through :class:`~amqp091.framing.FrameReader` (frames cut and
checked against frame-max, decoded by pamqp).  Each frame is dispatched:

- heartbeats only refresh the liveness clock (on channel 0; elsewhere 505, as
  RabbitMQ answers);
- a method the peer's role may not send (:data:`~amqp091.methods.SENT_BY`) is
  503 command-invalid; a method id pamqp does not know is 540 not-implemented;
  anything pamqp cannot decode is 501 frame-error;
- connection-class methods (channel 0 only) drive the state machine of
  :mod:`~amqp091.connection_methods` (a table keyed by role, state and method
  class; the client role's handshake is start → start-ok, tune → tune-ok + open,
  open-ok; the server role's entries join the same table);
- every other method goes to its :class:`~amqp091.channel.Channel` through the
  handlers of :mod:`~amqp091.channel_methods` (keyed by role and method class,
  default: a reply to a request of ours, or a method event).  A channel past the negotiated channel-max, or
  not open, is 504 channel-error; a method where content frames were due, or
  content frames without their method, is 505 unexpected-frame.

Protocol errors close the connection at once (connection.close with the reply
code, then :class:`~amqp091.events.ConnectionClosed`; close the transport after
sending what :meth:`Connection.data_to_send` returns) — ``receive_data`` never
raises for the peer's bytes.  Channel-level problems (a message over
``max_message_size``, an unknown tag in a publisher confirm) close that channel
only.  Calls that the state does not allow raise :class:`ProtocolError`.

Time comes in through :meth:`Connection.tick`: a heartbeat frame is sent after
half the negotiated interval without sending, and the peer is declared dead
(:class:`~amqp091.events.HeartbeatTimeout`) after two intervals without
receiving.

Server role (``Connection(Role.SERVER, ServerConfig(...))``): the engine waits
for the protocol header (another one: our header goes back and the transport
ends, as the spec says), sends connection.start, reads the start-ok login and
hands it to the application (:class:`~amqp091.events.CredentialsReceived`),
which answers :meth:`Connection.finish_authentication`; then tune, the client's
tune-ok checked (:mod:`~amqp091.server_handshake`), connection.open checked
against the configured virtual hosts, open-ok.  Channels open and close at the
client's request without the application; confirm.select is answered by the
engine; every other client method is a :class:`~amqp091.events.MethodReceived`
for the application to answer with ``send_method`` (replies must answer the
oldest request owed), publishes are :class:`~amqp091.events.MessageReceived`,
acks / nacks / rejects :class:`~amqp091.events.DeliveriesSettled`; the sends of
a server are :class:`~amqp091.server_calls.ServerCalls`.  Errors follow what
RabbitMQ's reader and channel answer (reply texts prefixed with the reply
code's name, as RabbitMQ writes them).  See ``docs/amqp091-engine.md``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator
from typing import Any, cast

from pamqp import body as pbody
from pamqp import commands as C
from pamqp import header as pheader
from pamqp import heartbeat as pheartbeat
from pamqp.base import Frame

from .calls import ChannelCalls
from .channel import Channel, ChannelError, ChannelState
from .channel_methods import CHANNEL_HANDLERS, method_received, on_channel_open
from .connection_methods import FRAME_SLACK, ConnectionState, on_connection_method
from .events import (
    ChannelClosed,
    ConnectionClosed,
    Event,
    HeartbeatTimeout,
    MessageReceived,
)
from .framing import (
    FRAME_MIN_SIZE,
    PROTOCOL_HEADER,
    FrameError,
    FrameReader,
    encode_content,
    encode_method,
)
from .handshake import CLIENT_CAPABILITIES, ConnectionConfig
from .methods import (
    CONNECTION_CLASS,
    CONTENT_METHODS,
    REPLY_NAMES,
    SENT_BY,
    ReplyCode,
    Role,
    class_method,
    expects_reply,
)
from .server_calls import ServerCalls
from .server_handshake import ServerConfig, connection_start
from .server_handshake import tune as server_tune

log = logging.getLogger(__name__)

_PUBLISH_FRAMES = 64
"""basic.publish method frames kept marshalled (by channel, exchange, routing key, flags)."""
CHANNEL_LIMIT = 0xFFFF
"""The highest channel number the wire allows (channel-max 0 means this)."""
_CONTENT_FRAMES = (pbody.ContentBody, pheader.ContentHeader)
"""The frames of a message's content: two or more per message, so dispatched first."""


class ProtocolError(Exception):
    """An API call that the connection's (or channel's) state does not allow."""


def _short(text: str) -> str:
    """``text`` cut to a shortstr (255 octets of UTF-8)."""
    raw = text.encode("utf-8")
    return text if len(raw) <= 255 else raw[:255].decode("utf-8", "ignore")


_CHANNEL_ZERO_CODE = {Role.CLIENT: ReplyCode.COMMAND_INVALID,
                      Role.SERVER: ReplyCode.CHANNEL_ERROR}
"""The close code for a channel method on channel 0 (RabbitMQ's reader answers a
client 504 "unexpected method in connection state")."""

class Connection(ChannelCalls, ServerCalls):
    """One AMQP 0-9-1 connection (sans-IO); see the module docstring."""

    def __init__(self, role: Role = Role.CLIENT,
                 config: ConnectionConfig | ServerConfig | None = None) -> None:
        self.role = role
        self.peer_role = Role.SERVER if role is Role.CLIENT else Role.CLIENT
        # the role's tables, looked up once (an Enum hashes in Python: per frame it showed)
        self._sends = SENT_BY[role]
        self._peer_sends = SENT_BY[self.peer_role]
        self._channel_handlers = CHANNEL_HANDLERS[role]
        self.peer_error_level = logging.DEBUG if role is Role.SERVER else logging.WARNING
        """The level of the engine's log lines about the peer's errors: a server's
        application logs what its clients do wrong (rate-limited, counted), so the
        engine's own lines are DEBUG there; a client's peer is its broker (rare)."""
        if role is Role.SERVER:
            if not isinstance(config, (ServerConfig, type(None))):
                raise TypeError("the server role takes a ServerConfig")
            self.server_config = config or ServerConfig()
            self.config = ConnectionConfig(max_message_size=self.server_config.max_message_size,
                                           field_types=self.server_config.field_types,
                                           channel_max=self.server_config.channel_max,
                                           frame_max=self.server_config.frame_max)
            """The role-independent settings (the server's come from server_config)."""
            self.state = ConnectionState.AWAIT_HEADER
        else:
            if not isinstance(config, (ConnectionConfig, type(None))):
                raise TypeError("the client role takes a ConnectionConfig")
            self.config = config or ConnectionConfig()
            self.state = ConnectionState.AWAIT_START
        self.channel_max = self.config.channel_max
        self.frame_max = FRAME_MIN_SIZE
        """Largest frame either side sends: 4096 until tune, then the negotiated size."""
        self.heartbeat = 0
        self.peer_properties: dict[str, Any] = {}
        self.user: str | None = None
        self.mechanism = ""
        self.blocked: str | None = None
        """The broker's reason while it blocks publishes (connection.blocked), else None."""
        self.close_code: int | None = None
        self.close_text = ""
        self.auth_error: str | None = None
        """Why the login failed: no usable mechanism, or the broker closed the connection
        between start-ok and tune (it refuses logins so)."""
        self.channels: dict[int, Channel] = {}
        self.virtual_host = "" if role is Role.SERVER else self.config.virtual_host
        self._out: list[bytes] = []
        self._publish_frames: dict[tuple[int, str, str, bool, bool], bytes] = {}
        self._events: deque[Event] = deque()
        self._header = b""
        """Server: the part of the client's protocol header received so far."""
        self._reader = FrameReader(FRAME_MIN_SIZE + FRAME_SLACK[role],
                                   expect_protocol_header=False,
                                   field_types=self.config.field_types)
        self._started: float | None = None
        """Server: the first tick (the handshake timeout runs from it)."""
        self._last_recv: float | None = None
        self._last_send: float | None = None
        self._recv_flag = False
        self._send_flag = False
        if role is Role.CLIENT:
            self._write(PROTOCOL_HEADER)

    # ------------------------------------------------------------ properties

    @property
    def is_open(self) -> bool:
        return self.state is ConnectionState.OPEN

    @property
    def awaiting_header(self) -> bool:
        """Server role: the client's protocol header has not arrived yet."""
        return self.state is ConnectionState.AWAIT_HEADER

    @property
    def closed(self) -> bool:
        """True once nothing more will be exchanged (close the transport after sending
        what :meth:`data_to_send` still returns)."""
        return self.state is ConnectionState.CLOSED

    @property
    def peer_capabilities(self) -> dict[str, Any]:  # type: ignore[override]
        """The ``capabilities`` table of the peer's properties (empty before start /
        start-ok)."""
        caps = self.peer_properties.get("capabilities")
        return caps if isinstance(caps, dict) else {}

    @property
    def buffered(self) -> int:
        """Received octets held: the partial frame plus unfinished message bodies."""
        held = sum(c.incoming.received for c in self.channels.values() if c.incoming)
        return self._reader.buffered + held

    @property
    def bytes_to_send(self) -> int:
        """Octets waiting in :meth:`data_to_send`."""
        return sum(len(b) for b in self._out)

    # ------------------------------------------------------------- I/O side

    def receive_data(self, data: bytes) -> None:
        """Feed bytes from the transport; ``b""`` means the transport closed. Never raises
        for what the peer sent: errors close the connection (see the module docstring)."""
        if self.state is ConnectionState.CLOSED:
            return
        if not data:
            if self.state is ConnectionState.AWAIT_TUNE and self.auth_error is None:
                self.auth_error = "the server closed the connection after start-ok (login refused)"
            self._finish(None, "transport closed by peer", by_peer=True)
            return
        self._recv_flag = True
        if self.state is ConnectionState.AWAIT_HEADER:
            data = self._protocol_header(data)
            if not data:
                return
        self._reader.feed(data)
        try:
            for channel, frame in self._reader.frames():
                self._on_frame(channel, frame)
                if self.state is ConnectionState.CLOSED:
                    break
        except FrameError as exc:
            self._fatal(exc.code, exc.text)

    def _protocol_header(self, data: bytes) -> bytes:
        """Server: collect the client's 8-octet protocol header; returns the bytes after
        it. Another protocol's header: ours goes back and the transport ends."""
        need = len(PROTOCOL_HEADER) - len(self._header)
        self._header += data[:need]
        rest = data[need:]
        if PROTOCOL_HEADER.startswith(self._header) and len(self._header) < len(PROTOCOL_HEADER):
            return b""
        if self._header != PROTOCOL_HEADER:
            self._write(PROTOCOL_HEADER)  # the spec: tell the client what we speak, close
            self._finish(None, f"the client sent the protocol header {self._header!r}, not "
                               f"AMQP 0-9-1's", by_peer=True)
            return b""
        self.state = ConnectionState.AWAIT_START_OK
        self._send(0, connection_start(self.server_config))
        return rest

    def data_to_send(self) -> bytes:
        """Bytes to write to the transport (empty if none)."""
        if not self._out:
            return b""
        out = b"".join(self._out) if len(self._out) > 1 else self._out[0]
        self._out.clear()
        return out

    def next_event(self) -> Event | None:
        """The next event, or None."""
        return self._events.popleft() if self._events else None

    def events(self) -> Iterator[Event]:
        """Drain the pending events."""
        while self._events:
            yield self._events.popleft()

    def note_peer_alive(self) -> None:
        """The host stopped reading on purpose (throttling): the silence until the next
        :meth:`tick` does not count towards the heartbeat timeout."""
        self._recv_flag = True

    def tick(self, now: float) -> None:
        """Advance time (seconds, any monotonic origin): sends heartbeats, detects a peer
        silent for more than two heartbeat intervals."""
        if self._recv_flag or self._last_recv is None:
            self._last_recv, self._recv_flag = now, False
        if self._send_flag or self._last_send is None:
            self._last_send, self._send_flag = now, False
        if self.role is Role.SERVER and self.state not in _SETTLED_STATES:
            if self._started is None:
                self._started = now
            elif now - self._started > self.server_config.handshake_timeout:
                self.expire_handshake(f"the handshake did not finish within "
                                      f"{self.server_config.handshake_timeout}s")
                return
        hb = self.heartbeat
        if not hb or self.state is ConnectionState.CLOSED:
            return
        idle = now - self._last_recv
        if idle > 2 * hb:
            self._events.append(HeartbeatTimeout(idle))
            self._finish(None, f"no traffic from the peer for {idle:.1f}s (heartbeat {hb}s)",
                         by_peer=True)
            return
        if now - self._last_send >= hb / 2:
            self._out.append(pheartbeat.Heartbeat.marshal())
            self._last_send, self._send_flag = now, False

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (None: nothing timed)."""
        if self.role is Role.SERVER and self.state not in _SETTLED_STATES:
            return (self._started + self.server_config.handshake_timeout
                    if self._started is not None else None)
        if not self.heartbeat or self._last_send is None or self._last_recv is None \
                or self.state is ConnectionState.CLOSED:
            return None
        return min(self._last_send + self.heartbeat / 2, self._last_recv + 2 * self.heartbeat)

    # ----------------------------------------------------- connection calls

    def close(self, code: int = ReplyCode.REPLY_SUCCESS, text: str = "") -> None:
        """Start a negotiated close (ConnectionClosed follows the peer's close-ok)."""
        if self.state in (ConnectionState.CLOSING, ConnectionState.CLOSED):
            return
        if self.state in _BEFORE_TUNE:
            self._finish(None, text or "closed before the handshake", by_peer=False)
            return  # no close to negotiate before tune: just drop the transport
        self.close_code, self.close_text = code, text
        self._send(0, C.Connection.Close(reply_code=code, reply_text=_short(text),
                                         class_id=0, method_id=0))
        self.state = ConnectionState.CLOSING

    def abort(self, code: int = ReplyCode.CONNECTION_FORCED, text: str = "", *,
              class_id: int = 0, method_id: int = 0) -> None:
        """Send connection.close (naming the method it answers, if any) and end at once,
        without waiting for close-ok (nothing is sent before the client's protocol header)."""
        if self.state is not ConnectionState.CLOSED:
            self._fatal(code, text, class_id, method_id)

    def expire_handshake(self, text: str) -> None:
        """Server role: the handshake did not finish in time: end without a word, before
        or after the protocol header, as RabbitMQ does (its reader closes the socket on
        ``handshake_timeout``; no connection.close is sent).  ConnectionClosed(None,
        ``text``) follows; the host closes the transport."""
        self._finish(None, text, by_peer=False)

    # -------------------------------------------------------- channel calls

    def open_channel(self) -> int:
        """Open the lowest free channel (ChannelOpened follows); returns its number.
        Client role only (a server's channels are opened by the client)."""
        if self.role is not Role.CLIENT:
            raise ProtocolError("a server does not open channels: the client does")
        self._require_open()
        limit = self.channel_max or CHANNEL_LIMIT
        number = next((n for n in range(1, limit + 1) if n not in self.channels), None)
        if number is None:
            raise ProtocolError(f"all {limit} channels are in use")
        self.channels[number] = Channel(number, self.config.max_message_size)
        self._send(number, C.Channel.Open())
        return number

    def close_channel(self, channel: int, code: int = ReplyCode.REPLY_SUCCESS,
                      text: str = "", *, class_id: int = 0, method_id: int = 0) -> None:
        """Close ``channel`` (ChannelClosed follows the peer's close-ok)."""
        chan = self._channel(channel)
        if chan.state is ChannelState.CLOSING:
            return
        self._close_channel(chan, code, text, class_id, method_id)

    def send_method(self, channel: int, method: Frame) -> None:
        """Send a method the connection's role may send (``pamqp.commands`` object);
        its reply arrives as :class:`~amqp091.events.MethodReceived` (or a message).
        Raises :class:`ProtocolError` for a method the engine sends itself (channel
        open/close, connection methods, basic.publish: use :meth:`publish`) and
        ``ValueError`` when pamqp finds a field invalid."""
        t = type(method)
        if t not in self._sends:
            raise ProtocolError(f"a {self.role.value} does not send {method.name}")
        if t in (C.Channel.Open, C.Channel.Close, C.Channel.CloseOk) or t in CONTENT_METHODS \
                or (t.index >> 16 == CONNECTION_CLASS and t is not C.Connection.UpdateSecret):
            raise ProtocolError(f"{method.name} is sent by the engine: use its own call")
        if t is C.Connection.UpdateSecret:
            if channel != 0:
                raise ProtocolError("connection methods travel on channel 0")
            self._require_open()
            self._send(0, method)
            return
        if self.role is Role.SERVER and t in _SERVER_HELPER_SENDS:
            raise ProtocolError(f"send {method.name} with {_SERVER_HELPER_SENDS[t]}")
        chan = self._channel(channel)
        if chan.state is ChannelState.CLOSING:
            raise ProtocolError(f"channel {channel} is closing")
        data = encode_method(channel, method)  # validates before any state changes
        if self.role is Role.SERVER and method.name in REPLY_NAMES:
            self._pay(chan, method)
        if expects_reply(method):
            chan.expect(method)
        if t is C.Confirm.Select:
            chan.select_confirms()
        self._write(data)

    def _pay(self, chan: Channel, reply: Frame) -> None:
        try:
            chan.pay(reply)
        except LookupError as exc:
            raise ProtocolError(str(exc)) from None

    def publish(self, channel: int, exchange: str, routing_key: str, body: bytes,
                properties: C.Basic.Properties | None = None, *, mandatory: bool = False,
                immediate: bool = False) -> int | None:
        """basic.publish + content header + body frames cut to frame-max. Returns the
        publish's delivery tag in confirm mode (see PublishConfirmed), else None."""
        if self.role is not Role.CLIENT:
            raise ProtocolError("a server does not publish: use deliver / get_ok")
        key = (channel, exchange, routing_key, mandatory, immediate)
        frame = self._publish_frames.get(key)
        if frame is None:  # a route publishes with the same few arguments: marshal once
            frame = encode_method(channel, C.Basic.Publish(
                exchange=exchange, routing_key=routing_key, mandatory=mandatory,
                immediate=immediate))
            if len(self._publish_frames) >= _PUBLISH_FRAMES:
                self._publish_frames.clear()
            self._publish_frames[key] = frame
        chan = self._send_content(channel, None, properties, body, method_frame=frame)
        return chan.publish_tag()

    def unconfirmed(self, channel: int) -> tuple[int, ...]:
        """Delivery tags published on ``channel`` in confirm mode and not yet confirmed
        (server role: publishes received and not yet confirmed by the application)."""
        return self._channel(channel).unconfirmed

    def unacked(self, channel: int) -> tuple[int, ...]:
        """Server role: delivery tags sent on ``channel`` that the client has not settled."""
        return self._channel(channel).deliveries.outstanding

    def confirm_mode(self, channel: int) -> bool:
        """Whether ``channel`` is in publisher-confirm mode."""
        return self._channel(channel).confirm_mode

    def finish_authentication(self, identity: str | None, refusal: str = "") -> None:
        """Server role: answer :class:`~amqp091.events.CredentialsReceived` —
        ``identity`` (the user name to record) logged in, or (None) the login is refused
        for ``refusal`` (logged; the client is told only what RabbitMQ tells it:
        connection.close 403 ACCESS_REFUSED if it announced
        ``authentication_failure_close``, else the transport just ends).

        Ignored once the connection is over (the client left while its credentials
        were being checked)."""
        if self.state in (ConnectionState.CLOSING, ConnectionState.CLOSED):
            return
        if self.state is not ConnectionState.AWAIT_AUTHENTICATION:
            raise ProtocolError(f"no login awaits a check (state {self.state.value})")
        if identity is None:
            self.auth_error = refusal or "login refused"
            log.debug("AMQP 0-9-1 %s login refused: %s", self.mechanism, self.auth_error)
            text = (f"Login was refused using authentication mechanism {self.mechanism}. "
                    f"For details see the broker logfile.")
            if self.peer_capabilities.get("authentication_failure_close") is True:
                self._fatal(ReplyCode.ACCESS_REFUSED, text)
            else:
                self._finish(None, f"login refused: {self.auth_error}", by_peer=False)
            return
        self.user = identity
        self._send(0, server_tune(self.server_config))
        self.state = ConnectionState.AWAIT_TUNE_OK

    # ------------------------------------------------ server-role primitives

    def _send_content(self, channel: int, method: Frame | None,
                      properties: C.Basic.Properties | None, body: bytes, *,
                      method_frame: bytes = b"") -> Channel:
        """``method`` (or its ``method_frame``, already marshalled) + content header + body
        frames cut to frame-max (a reply among them must answer the request owed)."""
        chan = self._channel(channel)
        if chan.state is ChannelState.CLOSING:
            raise ProtocolError(f"channel {channel} is closing")
        if self.role is Role.SERVER and not chan.peer_flow_active:
            raise ProtocolError(f"the client stopped content on channel {channel} "
                                f"(channel.flow)")
        if not method_frame:
            assert method is not None
            method_frame = encode_method(channel, method)
        frames = [method_frame]
        if properties is None:  # (not "properties or": pamqp's objects have a __len__)
            properties = C.Basic.Properties()
        frames += encode_content(channel, properties, body, self.frame_max,
                                 self.config.field_types)
        if self.role is Role.SERVER and method is not None and method.name in REPLY_NAMES:
            self._pay(chan, method)
        self._out.extend(frames)
        self._send_flag = True
        return chan

    def _server_channel(self, channel: int) -> Channel:
        if self.role is not Role.SERVER:
            raise ProtocolError("a server-role call on a client connection")
        return self._channel(channel)

    def _send_notice(self, channel: int, method: Frame) -> None:
        if channel == 0:
            self._require_open()
        else:
            chan = self._server_channel(channel)
            if chan.state is ChannelState.CLOSING:
                raise ProtocolError(f"channel {channel} is closing")
        self._send(channel, method)

    def _confirm(self, channel: int, method: C.Basic.Ack | C.Basic.Nack) -> list[int]:
        chan = self._server_channel(channel)
        if chan.state is ChannelState.CLOSING:
            raise ProtocolError(f"channel {channel} is closing")
        if not chan.confirm_mode:
            raise ProtocolError(f"channel {channel} is not in confirm mode")
        data = encode_method(channel, method)
        try:
            tags = chan.confirms.settle(method.delivery_tag, bool(method.multiple))
        except ChannelError:
            raise ProtocolError(f"publish {method.delivery_tag} on channel {channel} is not "
                                f"awaiting a confirm") from None
        self._write(data)
        return tags

    # ------------------------------------------------------ engine internals

    def _write(self, data: bytes) -> None:
        self._out.append(data)
        self._send_flag = True

    def _send(self, channel: int, method: Frame) -> None:
        if self.state is not ConnectionState.CLOSED:
            self._write(encode_method(channel, method))

    def _emit(self, event: Event) -> None:
        self._events.append(event)

    def _require_open(self) -> None:
        if self.state is not ConnectionState.OPEN:
            raise ProtocolError(f"connection is {self.state.value}, not open")

    def _channel(self, channel: int) -> Channel:
        self._require_open()
        chan = self.channels.get(channel)
        if chan is None:
            raise ProtocolError(f"channel {channel} is not open")
        return chan

    def _reply_text(self, code: int, text: str) -> str:
        """The reply text of a close we send: the server role prefixes the code's name,
        as RabbitMQ does ("NOT_FOUND - no queue 'q'")."""
        if self.role is Role.SERVER and code != ReplyCode.REPLY_SUCCESS:
            try:
                name = ReplyCode(code).name
            except ValueError:
                return _short(text)
            if not text.startswith(name):
                return _short(f"{name} - {text}")
        return _short(text)

    def _fatal(self, code: int, text: str, class_id: int = 0, method_id: int = 0) -> None:
        """Close the connection for a protocol violation: connection.close, then the end
        (before the client's protocol header nothing is sent: there is no AMQP to say it in)."""
        log.log(self.peer_error_level, "AMQP 0-9-1 connection error %s: %s", code, text)
        self.close_code, self.close_text = code, text
        if self.state is not ConnectionState.AWAIT_HEADER:
            self._send(0, C.Connection.Close(
                reply_code=code, reply_text=self._reply_text(code, text),
                class_id=class_id, method_id=method_id))
        self._finish(code, text, by_peer=False, class_id=class_id, method_id=method_id)

    def _finish(self, code: int | None, text: str, *, by_peer: bool, class_id: int = 0,
                method_id: int = 0) -> None:
        if self.state is ConnectionState.CLOSED:
            return
        self.state = ConnectionState.CLOSED
        self._reader.discard()
        for chan in list(self.channels.values()):
            chan.incoming = None
            if chan.state is ChannelState.CLOSING and chan.close_code is not None:
                # we had closed it (the peer never answered close-ok): say why
                closed = ChannelClosed(chan.number, chan.close_code, chan.close_text, False,
                                       unconfirmed=chan.unconfirmed,
                                       unacked=chan.deliveries.outstanding)
            else:
                closed = ChannelClosed(chan.number, None, f"connection closed: {text}",
                                       by_peer, unconfirmed=chan.unconfirmed,
                                       unacked=chan.deliveries.outstanding)
            self._emit(closed)
        self.channels.clear()
        self._emit(ConnectionClosed(code, text, by_peer, class_id, method_id))

    def _close_channel(self, chan: Channel, code: int, text: str, class_id: int = 0,
                       method_id: int = 0) -> None:
        chan.state, chan.close_code, chan.close_text = ChannelState.CLOSING, code, text
        chan.incoming = None
        chan.owed.clear()
        self._send(chan.number, C.Channel.Close(reply_code=code,
                                                reply_text=self._reply_text(code, text),
                                                class_id=class_id, method_id=method_id))

    def _release(self, chan: Channel, code: int | None, text: str, by_peer: bool,
                 class_id: int = 0, method_id: int = 0) -> None:
        chan.state = ChannelState.CLOSED
        del self.channels[chan.number]
        self._emit(ChannelClosed(chan.number, code, text, by_peer, class_id, method_id,
                                 chan.unconfirmed, chan.deliveries.outstanding))

    # ------------------------------------------------------------- dispatch

    def _on_frame(self, channel: int, frame: object) -> None:
        if isinstance(frame, _CONTENT_FRAMES):
            self._on_content(channel, frame)
        elif isinstance(frame, Frame):
            self._on_method(channel, frame)
        elif isinstance(frame, pheartbeat.Heartbeat):
            if channel != 0:
                raise FrameError(ReplyCode.UNEXPECTED_FRAME,  # as RabbitMQ answers it
                                 f"heartbeat on channel {channel}")
        elif isinstance(frame, pheader.ProtocolHeader) and self.role is Role.SERVER:
            raise FrameError(ReplyCode.FRAME_ERROR, "a protocol header after the handshake")
        elif isinstance(frame, pheader.ProtocolHeader):
            version = f"{frame.major_version}-{frame.minor_version}-{frame.revision}"
            self._finish(None, f"the peer does not speak AMQP 0-9-1 (it answered with the "
                               f"protocol header of {version})", by_peer=True)

    def _check_buffered(self) -> None:
        """Server: the unfinished message bodies of all channels together must stay
        within ``ServerConfig.max_buffered`` (else 506 resource-error: the connection
        ends, its unfinished messages with it, never confirmed)."""
        limit = self.server_config.max_buffered if self.role is Role.SERVER else None
        if limit is None:
            return
        held = sum(c.incoming.received for c in self.channels.values() if c.incoming)
        if held > limit:
            raise FrameError(ReplyCode.RESOURCE_ERROR,
                             f"unfinished messages of this connection hold {held} octets, "
                             f"more than the configured max {limit}")

    def _on_method(self, channel: int, method: Frame) -> None:
        t = type(method)
        if t not in self._peer_sends:
            raise FrameError(ReplyCode.COMMAND_INVALID,
                             f"a {self.peer_role.value} does not send {method.name}")
        if t.index >> 16 == CONNECTION_CLASS:
            if channel != 0:
                raise FrameError(ReplyCode.COMMAND_INVALID,
                                 f"{method.name} on channel {channel} (connection methods "
                                 f"travel on channel 0)")
            on_connection_method(self, method)
            return
        if self.state is ConnectionState.CLOSING:
            return  # sent before the peer saw our close
        if self.state is not ConnectionState.OPEN:
            raise FrameError(ReplyCode.COMMAND_INVALID,
                             f"{method.name} before the connection is open")
        if channel == 0:
            raise FrameError(_CHANNEL_ZERO_CODE[self.role], f"{method.name} on channel 0")
        if t is C.Channel.Open and self.role is Role.SERVER:
            on_channel_open(self, channel)
            return
        chan = self._peer_channel(channel)
        if chan is None:
            return
        if chan.incoming is not None:
            raise FrameError(ReplyCode.UNEXPECTED_FRAME,
                             f"{method.name} on channel {channel} while the content of "
                             f"{chan.incoming.method.name} is due")
        if chan.state is ChannelState.CLOSING:
            if t is C.Channel.Close:
                self._send(channel, C.Channel.CloseOk())
            elif t is C.Channel.CloseOk:
                self._release(chan, chan.close_code, chan.close_text, by_peer=False)
            return  # anything else is discarded until close-ok
        if chan.state is ChannelState.OPENING and t not in (C.Channel.OpenOk, C.Channel.Close):
            raise FrameError(ReplyCode.CHANNEL_ERROR,
                             f"{method.name} on channel {channel} before channel.open-ok")
        handler = self._channel_handlers.get(t, method_received)
        try:
            handler(self, chan, method)
        except ChannelError as exc:
            log.log(self.peer_error_level, "AMQP 0-9-1 channel %s error %s: %s", channel,
                    exc.code, exc.text)
            self._close_channel(chan, exc.code, exc.text, *class_method(method))

    def _peer_channel(self, channel: int) -> Channel | None:
        """The channel a frame from the peer is for: 504 if past channel-max or not open."""
        if channel > (self.channel_max or CHANNEL_LIMIT):
            raise FrameError(ReplyCode.CHANNEL_ERROR,
                             f"channel {channel} is past the negotiated channel-max "
                             f"{self.channel_max}")
        chan = self.channels.get(channel)
        if chan is None:
            raise FrameError(ReplyCode.CHANNEL_ERROR, f"channel {channel} is not open")
        return chan

    def _on_content(self, channel: int, frame: pheader.ContentHeader | pbody.ContentBody) -> None:
        if self.state is ConnectionState.CLOSING:
            return
        if self.state is not ConnectionState.OPEN or channel == 0:
            raise FrameError(ReplyCode.UNEXPECTED_FRAME, f"content frame on channel {channel}")
        chan = self._peer_channel(channel)
        if chan is None or chan.state is ChannelState.CLOSING:
            return  # the rest of a message whose channel we are closing
        try:
            if isinstance(frame, pheader.ContentHeader):
                # pamqp declares class_id None (its __init__ value): read it untyped
                class_id: int | None = cast(Any, frame).class_id
                done = chan.content_header(frame.properties, class_id, frame.body_size)
            else:
                done = chan.content_body(frame.value)
        except ChannelError as exc:
            log.log(self.peer_error_level, "AMQP 0-9-1 channel %s error %s: %s", channel,
                    exc.code, exc.text)
            self._close_channel(chan, exc.code, exc.text)
            return
        if done is None:
            self._check_buffered()
            return
        assert done.properties is not None
        body = b"".join(done.parts) if len(done.parts) != 1 else done.parts[0]
        tag = chan.publish_tag() if self.role is Role.SERVER else None
        self._emit(MessageReceived(channel, done.method, done.properties,  # type: ignore[arg-type]
                                   body, tag))


_SETTLED_STATES = (ConnectionState.OPEN, ConnectionState.CLOSING, ConnectionState.CLOSED)
"""States past the handshake (the server's handshake timeout no longer applies). (Tuples:
membership by identity, where a set hashes the member in Python, ``Enum.__hash__``, on
every tick.)"""

_BEFORE_TUNE = (ConnectionState.AWAIT_START, ConnectionState.AWAIT_TUNE,
                ConnectionState.AWAIT_HEADER, ConnectionState.AWAIT_START_OK,
                ConnectionState.AWAIT_AUTHENTICATION)
"""States in which a close is not negotiated: the transport just ends."""

_SERVER_HELPER_SENDS: dict[type, str] = {
    C.Basic.Ack: "confirm_publish", C.Basic.Nack: "confirm_publish",
    C.Basic.Cancel: "cancel_consumer",
}
"""Methods a server sends only through the call that checks them (server role)."""

__all__ = [
    "CLIENT_CAPABILITIES",
    "Connection",
    "ConnectionConfig",
    "ConnectionState",
    "ProtocolError",
    "Role",
    "ServerConfig",
]
