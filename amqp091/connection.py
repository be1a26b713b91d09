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
- connection-class methods (channel 0 only) go through ``_HANDLERS``, a table
  keyed by (role, state, method class) — the client role's handshake is
  start → start-ok, tune → tune-ok + open, open-ok; the server role's entries
  join the same table;
- every other method goes to its :class:`~amqp091.channel.Channel` through
  ``_CHANNEL_HANDLERS`` (keyed by method class, default: a reply to a request
  of ours or a method event).  A channel past the negotiated channel-max, or
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
receiving.  See ``docs/amqp091-engine.md``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

from pamqp import body as pbody
from pamqp import commands as C
from pamqp import header as pheader
from pamqp import heartbeat as pheartbeat
from pamqp.base import Frame

from .calls import ChannelCalls
from .channel import Channel, ChannelError, ChannelState
from .events import (
    ChannelClosed,
    ChannelFlow,
    ChannelOpened,
    ConnectionBlocked,
    ConnectionClosed,
    ConnectionOpened,
    ConnectionUnblocked,
    Event,
    HeartbeatTimeout,
    MessageReceived,
    MethodReceived,
    PublishConfirmed,
)
from .framing import (
    FRAME_MIN_SIZE,
    PROTOCOL_HEADER,
    FrameError,
    FrameReader,
    encode_content,
    encode_method,
)
from .handshake import CLIENT_CAPABILITIES, ConnectionConfig, start_ok, tune_ok
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
from .sasl import AuthenticationError

log = logging.getLogger(__name__)

CHANNEL_LIMIT = 0xFFFF
"""The highest channel number the wire allows (channel-max 0 means this)."""


class ConnectionState(Enum):
    """Handshake and life of a connection (see docs/amqp091-engine.md)."""

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


class ProtocolError(Exception):
    """An API call that the connection's (or channel's) state does not allow."""


def _short(text: str) -> str:
    """``text`` cut to a shortstr (255 octets of UTF-8)."""
    raw = text.encode("utf-8")
    return text if len(raw) <= 255 else raw[:255].decode("utf-8", "ignore")


class Connection(ChannelCalls):
    """One AMQP 0-9-1 connection (sans-IO); see the module docstring."""

    def __init__(self, role: Role = Role.CLIENT, config: ConnectionConfig | None = None) -> None:
        if role is not Role.CLIENT:
            raise NotImplementedError("the AMQP 0-9-1 server role is not implemented yet")
        self.role = role
        self.peer_role = Role.SERVER if role is Role.CLIENT else Role.CLIENT
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
        self._out: list[bytes] = []
        self._events: deque[Event] = deque()
        self._reader = FrameReader(FRAME_MIN_SIZE, expect_protocol_header=role is Role.SERVER,
                                   field_types=self.config.field_types)
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
    def closed(self) -> bool:
        """True once nothing more will be exchanged (close the transport after sending
        what :meth:`data_to_send` still returns)."""
        return self.state is ConnectionState.CLOSED

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
        self._reader.feed(data)
        try:
            for channel, frame in self._reader.frames():
                self._on_frame(channel, frame)
                if self.state is ConnectionState.CLOSED:
                    break
        except FrameError as exc:
            self._fatal(exc.code, exc.text)

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
        """When :meth:`tick` next has something to do (None: no heartbeat)."""
        if not self.heartbeat or self._last_send is None or self._last_recv is None \
                or self.state is ConnectionState.CLOSED:
            return None
        return min(self._last_send + self.heartbeat / 2, self._last_recv + 2 * self.heartbeat)

    # ----------------------------------------------------- connection calls

    def close(self, code: int = ReplyCode.REPLY_SUCCESS, text: str = "") -> None:
        """Start a negotiated close (ConnectionClosed follows the peer's close-ok)."""
        if self.state in (ConnectionState.CLOSING, ConnectionState.CLOSED):
            return
        if self.state in (ConnectionState.AWAIT_START, ConnectionState.AWAIT_TUNE):
            self._finish(None, text or "closed before the handshake", by_peer=False)
            return  # no close to negotiate before tune: just drop the transport
        self.close_code, self.close_text = code, text
        self._send(0, C.Connection.Close(reply_code=code, reply_text=_short(text),
                                         class_id=0, method_id=0))
        self.state = ConnectionState.CLOSING

    def abort(self, code: int = ReplyCode.CONNECTION_FORCED, text: str = "") -> None:
        """Send connection.close and end at once, without waiting for close-ok."""
        if self.state is not ConnectionState.CLOSED:
            self._fatal(code, text)

    # -------------------------------------------------------- channel calls

    def open_channel(self) -> int:
        """Open the lowest free channel (ChannelOpened follows); returns its number."""
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
        if t not in SENT_BY[self.role]:
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
        chan = self._channel(channel)
        if chan.state is ChannelState.CLOSING:
            raise ProtocolError(f"channel {channel} is closing")
        data = encode_method(channel, method)  # validates before any state changes
        if expects_reply(method):
            chan.expect(method)
        if t is C.Confirm.Select:
            chan.select_confirms()
        self._write(data)

    def publish(self, channel: int, exchange: str, routing_key: str, body: bytes,
                properties: C.Basic.Properties | None = None, *, mandatory: bool = False,
                immediate: bool = False) -> int | None:
        """basic.publish + content header + body frames cut to frame-max. Returns the
        publish's delivery tag in confirm mode (see PublishConfirmed), else None."""
        chan = self._channel(channel)
        if chan.state is ChannelState.CLOSING:
            raise ProtocolError(f"channel {channel} is closing")
        frames = [encode_method(channel, C.Basic.Publish(
            exchange=exchange, routing_key=routing_key, mandatory=mandatory,
            immediate=immediate))]
        frames += encode_content(channel, properties or C.Basic.Properties(), body,
                                 self.frame_max, self.config.field_types)
        self._out.extend(frames)
        self._send_flag = True
        return chan.publish_tag()

    def unconfirmed(self, channel: int) -> tuple[int, ...]:
        """Delivery tags published on ``channel`` in confirm mode and not yet confirmed."""
        return self._channel(channel).unconfirmed

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

    def _fatal(self, code: int, text: str, class_id: int = 0, method_id: int = 0) -> None:
        """Close the connection for a protocol violation: connection.close, then the end."""
        log.warning("AMQP 0-9-1 connection error %s: %s", code, text)
        self.close_code, self.close_text = code, text
        self._send(0, C.Connection.Close(reply_code=code, reply_text=_short(text),
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
            self._emit(ChannelClosed(chan.number, None, f"connection closed: {text}", by_peer,
                                     unconfirmed=chan.unconfirmed))
        self.channels.clear()
        self._emit(ConnectionClosed(code, text, by_peer, class_id, method_id))

    def _close_channel(self, chan: Channel, code: int, text: str, class_id: int = 0,
                       method_id: int = 0) -> None:
        chan.state, chan.close_code, chan.close_text = ChannelState.CLOSING, code, text
        chan.incoming = None
        self._send(chan.number, C.Channel.Close(reply_code=code, reply_text=_short(text),
                                                class_id=class_id, method_id=method_id))

    def _release(self, chan: Channel, code: int | None, text: str, by_peer: bool,
                 class_id: int = 0, method_id: int = 0) -> None:
        chan.state = ChannelState.CLOSED
        del self.channels[chan.number]
        self._emit(ChannelClosed(chan.number, code, text, by_peer, class_id, method_id,
                                 chan.unconfirmed))

    # ------------------------------------------------------------- dispatch

    def _on_frame(self, channel: int, frame: object) -> None:
        if isinstance(frame, Frame):
            self._on_method(channel, frame)
        elif isinstance(frame, pheartbeat.Heartbeat):
            if channel != 0:
                raise FrameError(ReplyCode.UNEXPECTED_FRAME,  # as RabbitMQ answers it
                                 f"heartbeat on channel {channel}")
        elif isinstance(frame, (pheader.ContentHeader, pbody.ContentBody)):
            self._on_content(channel, frame)
        elif isinstance(frame, pheader.ProtocolHeader):
            version = f"{frame.major_version}-{frame.minor_version}-{frame.revision}"
            self._finish(None, f"the peer does not speak AMQP 0-9-1 (it answered with the "
                               f"protocol header of {version})", by_peer=True)

    def _on_method(self, channel: int, method: Frame) -> None:
        t = type(method)
        if t not in SENT_BY[self.peer_role]:
            raise FrameError(ReplyCode.COMMAND_INVALID,
                             f"a {self.peer_role.value} does not send {method.name}")
        if t.index >> 16 == CONNECTION_CLASS:
            if channel != 0:
                raise FrameError(ReplyCode.COMMAND_INVALID,
                                 f"{method.name} on channel {channel} (connection methods "
                                 f"travel on channel 0)")
            self._on_connection_method(method)
            return
        if self.state is ConnectionState.CLOSING:
            return  # sent before the peer saw our close
        if self.state is not ConnectionState.OPEN:
            raise FrameError(ReplyCode.COMMAND_INVALID,
                             f"{method.name} before the connection is open")
        if channel == 0:
            raise FrameError(ReplyCode.COMMAND_INVALID, f"{method.name} on channel 0")
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
        handler = _CHANNEL_HANDLERS.get(t, Connection._ch_other)
        try:
            handler(self, chan, method)
        except ChannelError as exc:
            log.warning("AMQP 0-9-1 channel %s error %s: %s", channel, exc.code, exc.text)
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
                done = chan.content_header(frame.properties, frame.class_id, frame.body_size)
            else:
                done = chan.content_body(frame.value)
        except ChannelError as exc:
            log.warning("AMQP 0-9-1 channel %s error %s: %s", channel, exc.code, exc.text)
            self._close_channel(chan, exc.code, exc.text)
            return
        if done is not None:
            assert done.properties is not None
            body = b"".join(done.parts) if len(done.parts) != 1 else done.parts[0]
            self._emit(MessageReceived(channel, done.method, done.properties,  # type: ignore[arg-type]
                                       body))

    # channel methods

    def _ch_open_ok(self, chan: Channel, method: C.Channel.OpenOk) -> None:
        if chan.state is not ChannelState.OPENING:
            raise FrameError(ReplyCode.COMMAND_INVALID,
                             f"channel.open-ok on channel {chan.number}, which is open")
        chan.state = ChannelState.OPEN
        self._emit(ChannelOpened(chan.number))

    def _ch_close(self, chan: Channel, method: C.Channel.Close) -> None:
        self._send(chan.number, C.Channel.CloseOk())
        self._release(chan, method.reply_code, method.reply_text or "", True,
                      method.class_id or 0, method.method_id or 0)

    def _ch_close_ok(self, chan: Channel, method: C.Channel.CloseOk) -> None:
        raise FrameError(ReplyCode.COMMAND_INVALID,
                         f"channel.close-ok on channel {chan.number}, which is not closing")

    def _ch_flow(self, chan: Channel, method: C.Channel.Flow) -> None:
        active = bool(method.active)
        chan.peer_flow_active = active
        self._send(chan.number, C.Channel.FlowOk(active))
        self._emit(ChannelFlow(chan.number, active))

    def _ch_confirm(self, chan: Channel, method: C.Basic.Ack | C.Basic.Nack) -> None:
        if not chan.confirm_mode:
            raise FrameError(ReplyCode.COMMAND_INVALID,
                             f"{method.name} on channel {chan.number}, which is not in "
                             f"confirm mode")
        tags = chan.settle(method.delivery_tag, bool(method.multiple))
        if tags:
            self._emit(PublishConfirmed(chan.number, tags, type(method) is C.Basic.Ack))

    def _ch_content(self, chan: Channel, method: Frame) -> None:
        if method.name in REPLY_NAMES:
            chan.take_reply(method)  # basic.get-ok
        chan.start_content(method)

    def _ch_other(self, chan: Channel, method: Frame) -> None:
        if method.name in REPLY_NAMES:
            chan.take_reply(method)
        self._emit(MethodReceived(chan.number, method))

    # connection methods

    def _on_connection_method(self, method: Frame) -> None:
        t = type(method)
        st = self.state
        if t is C.Connection.Close:
            self._send(0, C.Connection.CloseOk())
            code = method.reply_code if method.reply_code is not None else 0  # type: ignore[attr-defined]
            text = method.reply_text or ""  # type: ignore[attr-defined]
            if st is ConnectionState.AWAIT_TUNE:
                self.auth_error = text or f"login refused (reply code {code})"
            self.close_code, self.close_text = code, text
            self._finish(code, text, by_peer=True, class_id=method.class_id or 0,  # type: ignore[attr-defined]
                         method_id=method.method_id or 0)  # type: ignore[attr-defined]
            return
        if st is ConnectionState.CLOSING:
            if t is C.Connection.CloseOk:
                self._finish(self.close_code, self.close_text, by_peer=False)
            return  # anything else while closing is discarded
        handler = _HANDLERS.get((self.role, st, t))
        if handler is None:
            raise FrameError(ReplyCode.COMMAND_INVALID,
                             f"unexpected {method.name} in state {st.value}")
        handler(self, method)

    def _c_start(self, method: C.Connection.Start) -> None:
        if (method.version_major, method.version_minor) != (0, 9):
            self._finish(None, f"the server proposes AMQP {method.version_major}-"
                               f"{method.version_minor}, not 0-9", by_peer=False)
            return
        self.peer_properties = dict(method.server_properties or {})
        try:
            answer = start_ok(self.config, method)
        except AuthenticationError as exc:
            self.auth_error = str(exc)
            self._finish(None, str(exc), by_peer=False)  # the spec: just close the socket
            return
        self.mechanism = answer.mechanism
        self.user = None if answer.mechanism == "EXTERNAL" else self.config.credentials.username
        self._send(0, answer)
        self.state = ConnectionState.AWAIT_TUNE

    def _c_secure(self, method: C.Connection.Secure) -> None:
        raise FrameError(ReplyCode.NOT_IMPLEMENTED,
                         f"SASL {self.mechanism} takes no challenge (connection.secure)")

    def _c_tune(self, method: C.Connection.Tune) -> None:
        answer = tune_ok(self.config, method)
        self.channel_max, self.frame_max = answer.channel_max, answer.frame_max
        self.heartbeat = answer.heartbeat
        self._reader.frame_max = answer.frame_max
        self._send(0, answer)
        self._send(0, C.Connection.Open(virtual_host=self.config.virtual_host))
        self.state = ConnectionState.AWAIT_OPEN_OK

    def _c_open_ok(self, method: C.Connection.OpenOk) -> None:
        self.state = ConnectionState.OPEN
        self._emit(ConnectionOpened(self.config.virtual_host, self.peer_properties,
                                    self.channel_max, self.frame_max, self.heartbeat,
                                    self.user))

    def _c_blocked(self, method: C.Connection.Blocked) -> None:
        self.blocked = method.reason or ""
        self._emit(ConnectionBlocked(self.blocked))

    def _c_unblocked(self, method: C.Connection.Unblocked) -> None:
        self.blocked = None
        self._emit(ConnectionUnblocked())

    def _c_update_secret_ok(self, method: C.Connection.UpdateSecretOk) -> None:
        self._emit(MethodReceived(0, method))


_HANDLERS: dict[tuple[Role, ConnectionState, type], Callable[[Connection, Any], None]] = {
    (Role.CLIENT, ConnectionState.AWAIT_START, C.Connection.Start): Connection._c_start,
    (Role.CLIENT, ConnectionState.AWAIT_TUNE, C.Connection.Secure): Connection._c_secure,
    (Role.CLIENT, ConnectionState.AWAIT_TUNE, C.Connection.Tune): Connection._c_tune,
    (Role.CLIENT, ConnectionState.AWAIT_OPEN_OK, C.Connection.OpenOk): Connection._c_open_ok,
    (Role.CLIENT, ConnectionState.OPEN, C.Connection.Blocked): Connection._c_blocked,
    (Role.CLIENT, ConnectionState.OPEN, C.Connection.Unblocked): Connection._c_unblocked,
    (Role.CLIENT, ConnectionState.OPEN, C.Connection.UpdateSecretOk):
        Connection._c_update_secret_ok,
}
"""Connection methods by (role, state, method class); connection.close is handled in
every state before this table is consulted."""

_CHANNEL_HANDLERS: dict[type, Callable[[Connection, Channel, Any], None]] = {
    C.Channel.OpenOk: Connection._ch_open_ok,
    C.Channel.Close: Connection._ch_close,
    C.Channel.CloseOk: Connection._ch_close_ok,
    C.Channel.Flow: Connection._ch_flow,
    C.Basic.Ack: Connection._ch_confirm,
    C.Basic.Nack: Connection._ch_confirm,
    C.Basic.Deliver: Connection._ch_content,
    C.Basic.Return: Connection._ch_content,
    C.Basic.GetOk: Connection._ch_content,
}
"""Channel methods by class; any other (replies, the broker's basic.cancel) is
``_ch_other``: a reply is checked against the awaited ones, then MethodReceived."""

__all__ = [
    "CLIENT_CAPABILITIES",
    "Connection",
    "ConnectionConfig",
    "ConnectionState",
    "ProtocolError",
    "Role",
]
