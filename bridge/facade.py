"""The legacy façade: an AMQP 0-10 server for unchanged 0-10 applications, backed by AMQP 1.0.

A :class:`Facade` is one configured listener.  It plays the 0-10 *server* role
(our engine, hosted as proton selectables like every 0-10 socket of the bridge)
and answers the model commands a 0-10 application sends to a broker, with two
kinds of route behind it (``docs/semantics.md``, section "Façade"):

``FacadePublish`` (``from: {listener: L, exchange: X}`` → 1.0 address)
    every ``message.transfer`` to exchange X is mapped and sent unsettled to
    the 1.0 address; the transfer is *completed* (the publisher's confirmation)
    only once the 1.0 broker accepted it, or the dead-letter address did.  A
    rejection without a dead-letter address becomes an execution.exception.
    Publishers are throttled like qpidd throttles them: completion is withheld,
    and past the route's ``max_in_flight`` the façade stops reading from their
    sockets.

``FacadeConsume`` (1.0 address → ``to: {listener: L, queue: Q}``)
    every ``message.subscribe`` to queue Q gets its own 1.0 receiver on the
    route's source address; the receiver's link credit follows the
    subscription's 0-10 message credit (credit or window mode; byte credit is
    honoured before each transfer); accept / reject / release settle the 1.0
    delivery as accepted / rejected / released (modified with delivery-failed
    when set-redelivered and the source supports it); what the subscriber
    leaves unsettled when it goes away is given back to the 1.0 broker.

Every 1.0 link is a :class:`~bridge.routes.Amqp10Link` (its own session,
re-attached when lost; what was in flight on a lost link is resent or left to
the 1.0 broker to redeliver).  Sessions are not resumable on the façade (a
requested session timeout is granted as 0): a client that reconnects starts
afresh.  Everything runs on the container's thread.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from proton import Delivery, symbol
from proton.reactor import Container

from amqp010.base import Command, Struct
from amqp010.codec import encode_header
from amqp010.connection import Connection, ConnectionConfig
from amqp010.events import (
    CommandReceived,
    CommandsCompleted,
    ConnectionClosed,
    ConnectionOpened,
    CredentialsReceived,
    CreditChanged,
    Event,
    ExecutionExceptionReceived,
    HeartbeatTimeout,
    MessageReceived,
    SessionAttached,
    SessionDetached,
)
from amqp010.sasl import SimpleAuthenticator
from amqp010.serial import serial_add, serial_diff, serial_le
from amqp010.session import Session
from amqp010.spec import (
    AcceptMode,
    AcquireMode,
    CloseCode,
    DeliveryProperties,
    ErrorCode,
    ExchangeBind,
    ExchangeDeclare,
    ExchangeQuery,
    ExchangeQueryResult,
    ExchangeUnbind,
    MessageAccept,
    MessageCancel,
    MessageFlush,
    MessageReject,
    MessageRelease,
    MessageSubscribe,
    QueueDeclare,
    QueueDelete,
    QueueQuery,
    QueueQueryResult,
)
from mappings.errors import MappingError
from mappings.message import AmqpMessage

from .amqp10.link import Amqp10Link
from .amqp10.outcomes import condition_name, condition_text, give_back, reject
from .config import ConfigError, Listener, Route
from .hosting import AcceptLimits, Amqp010Listener, Amqp010Socket, LoopCalls, Timer
from .logins import REFUSAL_TEXT, LoginChecks, PendingLogin
from .logs import WarnLimiter
from .passwords import PasswordTable
from .poison import PoisonGuard
from .routes.amqp10_endpoint import redelivered_1_0
from .routes.refusals import (
    MAPPING_ERROR,
    dead_letter_copy,
    log_refused,
    plain_copy,
    report_poison,
    too_large,
)
from .routes.stats import RouteStats
from .tls import TlsFileError, describe_ssl_error, peer_common_name, server_context
from .translate import Translator

if TYPE_CHECKING:
    from .taps import RouteTap

log = logging.getLogger(__name__)

MAX_RELEASES = 3
"""Times a published message may be released by the 1.0 target before it counts as rejected."""
EXCHANGE_TYPES = ("direct", "fanout", "topic", "headers", "xml")
"""Exchange types a declare of a façade exchange may name (the route decides the routing)."""
REJECTED_BY_SUBSCRIBER = symbol("amqp-bridge:rejected-by-subscriber")
"""Condition of a 1.0 reject caused by a 0-10 subscriber's message.reject."""
FLUSH_GRACE = 0.05
"""Seconds a message.flush waits for messages already promised by 1.0 link credit."""
SUBSCRIBE_TIMEOUT = 10.0
"""Seconds a message.subscribe waits for its 1.0 link before it fails with not-found."""
_STOP_POLL = 0.1
_LOGIN_WORKERS = 2
"""Threads checking PBKDF2 passwords per listener (hashlib releases the GIL meanwhile)."""

# 1.0 rejection conditions -> the execution.exception a 0-10 publisher gets
_ERROR_CODES = {
    "amqp:unauthorized-access": ErrorCode.UNAUTHORIZED_ACCESS,
    "amqp:not-found": ErrorCode.NOT_FOUND,
    "amqp:resource-locked": ErrorCode.RESOURCE_LOCKED,
    "amqp:precondition-failed": ErrorCode.PRECONDITION_FAILED,
    "amqp:resource-deleted": ErrorCode.RESOURCE_DELETED,
    "amqp:illegal-state": ErrorCode.ILLEGAL_STATE,
    "amqp:resource-limit-exceeded": ErrorCode.RESOURCE_LIMIT_EXCEEDED,
    "amqp:not-allowed": ErrorCode.NOT_ALLOWED,
    "amqp:not-implemented": ErrorCode.NOT_IMPLEMENTED,
    "amqp:invalid-field": ErrorCode.INVALID_ARGUMENT,
    "amqp:decode-error": ErrorCode.INVALID_ARGUMENT,
    str(MAPPING_ERROR): ErrorCode.INVALID_ARGUMENT,
}


class Refused(Exception):
    """A model command the façade answers with execution.exception."""

    def __init__(self, code: int, text: str, field_index: int | None = None) -> None:
        super().__init__(text)
        self.code = code
        self.text = text
        self.field_index = field_index


class _Later:
    """Returned by a command handler that completes the command itself, later."""


LATER = _Later()



# --- hosting: accepted sockets whose reading can be paused ---------------------------------


class _GatedSocket(Amqp010Socket):
    """An accepted 0-10 connection that stops reading while its publishers are throttled."""

    reading_paused = False

    def pause_reading(self, paused: bool) -> None:
        if paused != self.reading_paused:
            self.reading_paused = paused
            self._update()

    def _update(self) -> None:
        super()._update()
        if self.reading_paused and not self.closed:
            self.selectable.reading = False
            self.selectable.update()

    def on_selectable_expired(self, event: Any) -> None:
        if self.reading_paused:
            # we do not read, so we cannot hear its heartbeats: its silence is ours
            self.engine.note_peer_alive()
        super().on_selectable_expired(event)


class _Acceptor(Amqp010Listener):
    """The listening socket (limits, backoff: :class:`~bridge.hosting.Amqp010Listener`);
    accepted connections become :class:`_GatedSocket` (TLS first if the listener has a
    context)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, socket_class=_GatedSocket, **kwargs)


# --- per-connection and per-session state --------------------------------------------------


@dataclass(eq=False)
class _Client:
    """One legacy application's connection."""

    sock: _GatedSocket
    user: str | None = None
    publishes_to: set[FacadePublish] = field(default_factory=set)


@dataclass(eq=False)
class _TemporaryQueue:
    """A queue a client declared for itself (exclusive or auto-delete) to bind to one of
    the façade's subscription exchanges: its subscriptions consume from that route's
    address with the binding key filled in."""

    name: str
    binding: tuple[str, str] | None = None
    """(exchange, binding key)."""
    sub: _Subscription | None = None
    """Its subscription, made (and its 1.0 link attached) when it was bound: from then
    on the 1.0 broker keeps what is published for it, as a bound queue does."""


@dataclass(eq=False)
class _SessionState:
    """What the façade keeps for one attached 0-10 session."""

    session: Session
    client: _Client
    subscriptions: dict[str, _Subscription] = field(default_factory=dict)
    temporary_queues: dict[str, _TemporaryQueue] = field(default_factory=dict)
    """Queues this session declared to bind to an exchange (they end with it)."""
    binds_pending: int = 0
    """exchange.binds of temporary queues whose 1.0 link is not attached yet."""
    held_publishes: deque[MessageReceived] = field(default_factory=deque)
    """Publishes that came after a pending bind: a broker executes a session's commands
    in order, so they wait until the binding exists (else it would miss them)."""
    cancelled: set[_Subscription] = field(default_factory=set)
    """Cancelled subscriptions whose transfers are not all settled yet: they still end
    (and give their messages back) with the session."""
    transfers: dict[int, _Subscription] = field(default_factory=dict)
    """Our message.transfer ids not yet settled → the subscription that sent them."""
    ended: bool = False

    @property
    def live(self) -> bool:
        return not self.ended and self.session.attached


# --- the listener ---------------------------------------------------------------------------


class Facade:
    """One configured listener: accepts legacy 0-10 applications and serves its routes."""

    def __init__(self, container: Container, name: str, settings: Listener) -> None:
        self.container = container
        self.name = name
        self.settings = settings
        try:
            self.passwords = PasswordTable(settings.user_table())
            self.ssl_context = server_context(settings.tls) if settings.tls is not None else None
        except TlsFileError as exc:
            raise ConfigError([f"listeners.{name}.tls.{exc.key}: {exc.reason}"]) from None
        except (OSError, ValueError) as exc:
            raise ConfigError([f"listeners.{name}.users_file: {exc}"]) from None
        client_certs = settings.tls is not None and settings.tls.client_certs != "none"
        # PLAIN credentials come to us (CredentialsReceived): a PBKDF2 check runs on a
        # worker thread, so that a login (or a password-guessing client) never stalls the loop
        self.authenticator = SimpleAuthenticator(
            self.passwords.check if self.passwords else None,
            anonymous=settings.allow_anonymous, external=client_certs, defer=True)
        self._loop_calls: LoopCalls | None = None
        self.logins = LoginChecks(name, self.passwords.verify,
                                  max_pending=settings.max_pending_logins,
                                  max_per_peer=settings.max_pending_logins_per_peer,
                                  workers=_LOGIN_WORKERS, make_call_soon=self._make_loop_calls)
        """The PBKDF2 checks: a bounded queue, fair across client addresses (bridge.logins)."""
        self._pending_logins: dict[_GatedSocket, PendingLogin] = {}
        self.publish_routes: dict[str, FacadePublish] = {}
        self.consume_routes: dict[str, FacadeConsume] = {}
        self.refused_publishes = 0
        """Publishes refused with an execution.exception (unknown exchange or queue, a
        route's refusal): ``amqp_bridge_publishes_refused_total``."""
        self._client_warnings = WarnLimiter()
        """Bad-credential refusals: one WARNING per client address every 10 s."""
        self.exchange_subscriptions: dict[str, FacadeConsume] = {}
        """Routes to an exchange of this listener: what temporary queues bound to it get."""
        self.queue_publishers: dict[str, FacadePublish] = {}
        """Publishes to the default exchange naming a façade queue, by queue (made on
        first use): they go to the address the queue's subscribers consume from."""
        self.clients: dict[_GatedSocket, _Client] = {}
        self.sessions: dict[Session, _SessionState] = {}
        self.acceptor: _Acceptor | None = None
        self.address: tuple[str, int] | None = None
        self.stopping = False
        self._dirty: set[_GatedSocket] = set()
        self._flush_scheduled = False

    # -- setup ----------------------------------------------------------------------------

    def add_publish(self, route: FacadePublish, exchange: str) -> None:
        """``route`` takes what clients publish to ``exchange``."""
        self._register(self.publish_routes, exchange, route, f"exchange {exchange!r}", "source")

    def add_consume(self, route: FacadeConsume, queue: str) -> None:
        """``route`` feeds the subscribers of ``queue``."""
        self._register(self.consume_routes, queue, route, f"queue {queue!r}", "target")

    def add_exchange_subscription(self, route: FacadeConsume, exchange: str) -> None:
        """``route`` feeds the temporary queues clients bind to ``exchange``."""
        self._register(self.exchange_subscriptions, exchange, route,
                       f"exchange {exchange!r}", "target")

    def _register(self, table: dict[str, Any], key: str, route: Any, what: str,
                  role: str) -> None:
        other = table.get(key)
        if other is not None:
            raise ConfigError([f"route {route.name}: {what} of listener {self.name!r} is "
                               f"already the {role} of route {other.name}"])
        table[key] = route

    def start(self) -> None:
        """Start listening (after the routes were added)."""
        host, _, port = self.settings.bind.rpartition(":")
        host = host.strip("[]")
        try:
            self.acceptor = _Acceptor(self.container, host, int(port), self._engine_config,
                                      self._on_event, self._on_accept,
                                      ssl_context=self.ssl_context,
                                      on_handshake=self._on_handshake,
                                      limits=_accept_limits(self.settings), name=self.name)
        except OSError as exc:
            raise ConfigError([f"listeners.{self.name}.bind: cannot listen on "
                               f"{self.settings.bind}: {exc.strerror or exc}"]) from None
        self.address = self.acceptor.address
        if not self.authenticator.mechanisms("client-certificate"):
            log.warning("façade %s: no users and anonymous logins disabled: every login "
                        "will be refused", self.name, extra=self.log_fields("no_logins"))
        log.info("façade %s: listening on %s:%s%s", self.name, *self.address,
                 " (TLS)" if self.ssl_context is not None else "",
                 extra=self.log_fields("listening", bind=f"{self.address[0]}:{self.address[1]}",
                                       tls=self.ssl_context is not None))

    @property
    def listening(self) -> bool:
        """True while the listener accepts connections."""
        return self.acceptor is not None and not self.stopping

    def log_fields(self, event: str, **more: Any) -> dict[str, Any]:
        """``extra`` fields of a log line about this listener (``peer=...`` in more)."""
        return {"event": event, "listener": self.name, **more}

    def _engine_config(self) -> ConnectionConfig:
        return ConnectionConfig(
            authenticator=self.authenticator,
            properties={"product": "amqp-bridge", "listener": self.name},
            max_message_size=self.settings.max_message_size,
            max_buffered=self.settings.max_buffered_per_connection,
            max_session_timeout=0)  # sessions are not resumable on the façade

    def _on_handshake(self, sock: Amqp010Socket) -> None:
        """TLS is up: a verified client certificate's CN is the identity SASL EXTERNAL gets."""
        assert sock.tls is not None
        cn = peer_common_name(sock.tls.obj.getpeercert())
        sock.engine.config.external_identity = cn
        if cn is not None:
            log.info("façade %s: %s presented a client certificate for %r", self.name,
                     sock.peer, cn)

    def _on_accept(self, sock: Amqp010Socket) -> None:
        assert isinstance(sock, _GatedSocket)
        if self.stopping:
            sock.engine.close(CloseCode.CONNECTION_FORCED, "amqp-bridge is shutting down")
            sock.flush()
            return
        self.clients[sock] = _Client(sock)
        log.info("façade %s: connection from %s", self.name, sock.peer,
                 extra=self.log_fields("client_connected", peer=sock.peer))

    # -- shutdown -------------------------------------------------------------------------

    def pause(self) -> None:
        """Graceful stop: accept nothing new; close the clients once the routes drained."""
        if self.stopping:
            return
        self.stopping = True
        if self.acceptor is not None:
            self.acceptor.close()
        self.container.schedule(_STOP_POLL, Timer(self._close_when_drained))

    def _close_when_drained(self) -> None:
        routes: list[FacadePublish | FacadeConsume] = [*self.publish_routes.values(),
                                                       *self.queue_publishers.values(),
                                                       *self.consume_routes.values()]
        if any(r.pending for r in routes):
            self.container.schedule(_STOP_POLL, Timer(self._close_when_drained))
            return
        for sock in list(self.clients):
            sock.engine.close(CloseCode.CONNECTION_FORCED, "amqp-bridge is shutting down")
            sock.flush()
        self.logins.close()
        self._pending_logins.clear()
        if self._loop_calls is not None:
            self._loop_calls.close()

    # -- logins ---------------------------------------------------------------------------

    def _check_login(self, sock: _GatedSocket, ev: CredentialsReceived) -> None:
        """Answer a PLAIN login: at once when that is cheap and tells nothing (a listener of
        plain passwords, a returning client), else after a PBKDF2 check on a worker thread
        (about 0.1 s), queued fairly per client address — or refused at once when that
        address (or the listener) has too many logins waiting (bridge/logins.py)."""
        quick = self.passwords.quick_check(ev.user, ev.password)
        if quick is not None:
            _answer_login(sock.engine, ev.user, quick)
            return
        user = ev.user

        def answer(ok: bool) -> None:  # on the loop, the client still there
            self._pending_logins.pop(sock, None)
            sock.call(lambda engine: _answer_login(engine, user, ok))

        login, refusal = self.logins.submit(
            sock.peer, user, ev.password, answer,
            gone=lambda: sock.closed or sock.engine.closed)
        if refusal is not None:
            sock.engine.finish_authentication(None, refusal)
        elif login.state in ("waiting", "running"):
            self._pending_logins[sock] = login

    def _client_warning(self, event: str, peer: str, what: str, error: str,
                        **fields: Any) -> None:
        """Something a client can provoke at will (a refused login, TLS handshake or
        publish): a WARNING line at most once per client address and kind every 10 s
        (saying how many it held back), the others at INFO — a hostile client cannot
        flood the warnings."""
        held = self._client_warnings.allow((event, peer.rpartition(":")[0]))
        extra = self.log_fields(event, peer=peer, error=error, suppressed=held or 0, **fields)
        if held is None:
            log.info("façade %s: %s: %s: %s", self.name, peer, what, error, extra=extra)
        else:
            log.warning("façade %s: %s: %s: %s%s", self.name, peer, what, error,
                        f" ({held} more from that address since the last such warning)"
                        if held else "", extra=extra)

    def _make_loop_calls(self) -> Callable[[Callable[[], None]], None]:
        self._loop_calls = LoopCalls(self.container)
        return self._loop_calls.call_soon

    def _login_closed(self, sock: _GatedSocket) -> None:
        """The connection ended: a login of it still waiting for its check is dropped."""
        login = self._pending_logins.pop(sock, None)
        if login is not None:
            self.logins.client_gone(login)

    # -- output ---------------------------------------------------------------------------

    def flush_later(self, sock: _GatedSocket) -> None:
        """Write what ``sock``'s engine produced, once the current batch of events is done."""
        self._dirty.add(sock)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.container.schedule(0, Timer(self._flush))

    def _flush(self) -> None:
        self._flush_scheduled = False
        dirty, self._dirty = self._dirty, set()
        for sock in dirty:
            sock.flush()

    def update_reading(self) -> None:
        """Pause reading on every client publishing to a throttled route; resume the others."""
        for client in self.clients.values():
            client.sock.pause_reading(any(r.throttled for r in client.publishes_to))

    # -- engine events --------------------------------------------------------------------

    def _on_event(self, sock: Amqp010Socket, ev: Event) -> None:
        client = self.clients.get(sock)  # type: ignore[call-overload]
        if client is None:
            return
        if isinstance(ev, MessageReceived):
            st = self.sessions.get(ev.session)
            if st is not None:
                self._on_publish(st, ev)
        elif isinstance(ev, CommandReceived):
            st = self.sessions.get(ev.session)
            if st is not None:
                self._on_command(st, ev)
        elif isinstance(ev, CreditChanged):
            st = self.sessions.get(ev.session)
            sub = st.subscriptions.get(ev.destination) if st is not None else None
            if sub is not None:
                sub.on_subscriber_credit()
        elif isinstance(ev, CommandsCompleted):
            st = self.sessions.get(ev.session)
            if st is not None:
                self._on_completed(st, ev.commands)
        elif isinstance(ev, SessionAttached):
            self.sessions[ev.session] = _SessionState(ev.session, client)
        elif isinstance(ev, SessionDetached):
            st = self.sessions.pop(ev.session, None)
            if st is not None:
                self._end_session(st)
        elif isinstance(ev, CredentialsReceived):
            assert isinstance(sock, _GatedSocket)
            self._check_login(sock, ev)
        elif isinstance(ev, ConnectionOpened):
            client.user = ev.user
            log.info("façade %s: %s logged in as %r", self.name, sock.peer, ev.user,
                     extra=self.log_fields("client_open", peer=sock.peer, user=ev.user))
        elif isinstance(ev, ConnectionClosed):
            del self.clients[client.sock]
            self._dirty.discard(client.sock)
            self._login_closed(client.sock)
            if sock.tls_error is not None:
                self._client_warning("tls_refused", sock.peer, "TLS handshake failed",
                                     describe_ssl_error(sock.tls_error))
            elif sock.engine.auth_error is not None and not _busy_refusal(sock.engine.auth_error):
                self._client_warning("login_refused", sock.peer, "login refused",
                                     str(sock.engine.auth_error))
            else:
                reason = ev.text or f"code {ev.code}"
                if sock.error:
                    reason += f" ({sock.error})"
                log.info("façade %s: %s closed: %s", self.name, sock.peer, reason,
                         extra=self.log_fields("client_closed", peer=sock.peer, error=reason))
        elif isinstance(ev, ExecutionExceptionReceived):
            log.warning("façade %s: %s raised %s: %s", self.name, sock.peer, ev.error_code,
                        ev.description, extra=self.log_fields(
                            "client_exception", peer=sock.peer, error=ev.description))
        elif isinstance(ev, HeartbeatTimeout):
            log.info("façade %s: %s silent for %.1fs", self.name, sock.peer, ev.idle,
                     extra=self.log_fields("client_silent", peer=sock.peer))

    def _end_session(self, st: _SessionState) -> None:
        st.ended = True
        unsubscribed = [t.sub for t in st.temporary_queues.values()
                        if t.sub is not None and t.sub.destination is None]
        for sub in [*st.subscriptions.values(), *st.cancelled, *unsubscribed]:
            sub.end()
        st.temporary_queues.clear()
        st.subscriptions.clear()
        st.cancelled.clear()
        for route in st.client.publishes_to:
            route.forget(st)

    # -- publishing -----------------------------------------------------------------------

    def _on_publish(self, st: _SessionState, ev: MessageReceived) -> None:
        if st.binds_pending:
            st.held_publishes.append(ev)
            return
        session = st.session
        route = self.publish_routes.get(ev.destination)
        if route is None and ev.destination == "":
            route = self._queue_publisher(ev)
            if route is None:
                return
        if route is None:
            known = ", ".join(repr(x) for x in sorted(self.publish_routes)) or "none"
            reason = (f"exchange {ev.destination!r} not found (this façade's exchanges: "
                      f"{known})")
            self.publish_refused(st.client.sock.peer, reason)
            if st.live:  # (not if the connection already ended in this read: no one to tell)
                session.exception(ErrorCode.NOT_FOUND, ev.command_id, reason,
                                  command=ev.transfer, field_index=0)
            return
        mp = ev.message_properties
        user = st.client.user
        if mp is not None and mp.user_id and mp.user_id != (user or "").encode():
            if st.live:
                session.exception(ErrorCode.UNAUTHORIZED_ACCESS, ev.command_id,
                                  f"user-id {mp.user_id!r} is not the authenticated user "
                                  f"{user!r}", command=ev.transfer)
            return
        if self.stopping:
            # not taken: the transfer stays incomplete and the client resends it elsewhere
            route.stats.extra["refused_while_stopping"] = \
                route.stats.extra.get("refused_while_stopping", 0) + 1
            return
        st.client.publishes_to.add(route)
        route.publish(st, ev)

    def publish_refused(self, peer: str, reason: str, route: str | None = None) -> None:
        """A publish was refused with an execution.exception: count it, and log it (at
        most one WARNING line per client address every 10 s)."""
        self.refused_publishes += 1
        fields = {"route": route} if route is not None else {}
        self._client_warning("publish_refused", peer, "publish refused", reason, **fields)

    def _queue_publisher(self, ev: MessageReceived) -> FacadePublish | None:
        """The route for a publish to the default exchange: the façade queue its routing
        key names (as a broker puts it in that queue), or an exception (None)."""
        dp = ev.delivery_properties
        key = dp.routing_key if dp is not None and dp.routing_key else ""
        publisher = self.queue_publishers.get(key)
        if publisher is not None:
            return publisher
        consume = self.consume_routes.get(key)
        if consume is None:
            known = ", ".join(repr(q) for q in sorted(self.consume_routes)) or "none"
            reason = (f"no queue {key!r} for the default exchange to route to (this "
                      f"façade's queues: {known})")
            st = self.sessions.get(ev.session)
            self.publish_refused(st.client.sock.peer if st is not None else "?", reason)
            if ev.session.attached:
                ev.session.exception(ErrorCode.NOT_FOUND, ev.command_id, reason,
                                     command=ev.transfer)
            return None
        publisher = self.queue_publishers[key] = FacadePublish.into_queue(consume)
        return publisher

    # -- model commands -------------------------------------------------------------------

    def _on_command(self, st: _SessionState, ev: CommandReceived) -> None:
        cmd = ev.command
        handler = _COMMANDS.get(type(cmd))
        try:
            if handler is None:
                raise Refused(ErrorCode.NOT_IMPLEMENTED,
                              f"{cmd.NAME} is not implemented by the amqp-bridge façade")
            result = handler(self, st, ev.command_id, cmd)
        except Refused as exc:
            if st.session.attached:
                st.session.exception(exc.code, ev.command_id, exc.text, command=cmd,
                                     field_index=exc.field_index)
            return
        if result is not LATER and st.session.attached:
            st.session.complete(ev.command_id, result)  # type: ignore[arg-type]

    def bound(self, st: _SessionState) -> None:
        """A temporary queue's binding exists now: publishes held for it go on."""
        st.binds_pending -= 1
        while not st.binds_pending and st.held_publishes and st.live:
            self._on_publish(st, st.held_publishes.popleft())

    def _queue(self, name: str, field_index: int) -> FacadeConsume:
        route = self.consume_routes.get(name)
        if route is None:
            known = ", ".join(repr(q) for q in sorted(self.consume_routes)) or "none"
            raise Refused(ErrorCode.NOT_FOUND, f"queue {name!r} not found (this façade's "
                                               f"queues: {known})", field_index)
        return route

    def _queue_declare(self, st: _SessionState, cid: int, c: QueueDeclare) -> None:
        name = c.queue or ""
        if name in self.consume_routes or name in st.temporary_queues:
            return
        if c.passive:
            self._queue(name, 0)
        if self.exchange_subscriptions and name and (c.exclusive or c.auto_delete):
            st.temporary_queues[name] = _TemporaryQueue(name)  # to bind to an exchange
            return
        raise Refused(ErrorCode.NOT_ALLOWED, f"the amqp-bridge façade does not create queues "
                                             f"({name!r} is not configured)", 0)

    def _queue_query(self, st: _SessionState, cid: int, c: QueueQuery) -> QueueQueryResult:
        temporary = st.temporary_queues.get(c.queue or "")
        if temporary is not None:
            subscribers = sum(1 for sub in st.subscriptions.values()
                              if sub.queue == temporary.name)
            return QueueQueryResult(queue=temporary.name, durable=False, exclusive=True,
                                    auto_delete=True, arguments={}, message_count=0,
                                    subscriber_count=subscribers)
        route = self.consume_routes.get(c.queue or "")
        if route is None:
            return QueueQueryResult(queue="")  # as qpidd answers for an unknown queue
        # the 1.0 queue's depth is not known through a link: message-count is 0
        return QueueQueryResult(queue=c.queue, durable=True, exclusive=False, auto_delete=False,
                                arguments={}, message_count=0,
                                subscriber_count=len(route.subscriptions))

    def _exchange_declare(self, st: _SessionState, cid: int, c: ExchangeDeclare) -> None:
        name = c.exchange or ""
        if name in self.publish_routes or name in self.exchange_subscriptions:
            if c.type and c.type not in EXCHANGE_TYPES:
                raise Refused(ErrorCode.NOT_FOUND, f"exchange type {c.type!r} not found", 1)
            return
        if c.passive:
            raise Refused(ErrorCode.NOT_FOUND, f"exchange {name!r} not found", 0)
        if not name:
            raise Refused(ErrorCode.INVALID_ARGUMENT, "an exchange name is required", 0)
        raise Refused(ErrorCode.NOT_ALLOWED, f"the amqp-bridge façade does not create exchanges "
                                             f"({name!r} is not configured)", 0)

    def _exchange_query(self, st: _SessionState, cid: int, c: ExchangeQuery
                        ) -> ExchangeQueryResult:
        if (c.name or "") in self.exchange_subscriptions and (c.name or "") not in \
                self.publish_routes:
            return ExchangeQueryResult(type="topic", durable=True, not_found=False,
                                       arguments={})
        if (c.name or "") not in self.publish_routes:
            return ExchangeQueryResult(type="", durable=False, not_found=True, arguments={})
        # every message goes to the route's address whatever its key: fanout to one target
        return ExchangeQueryResult(type="fanout", durable=True, not_found=False, arguments={})

    def _exchange_bind(self, st: _SessionState, cid: int, c: ExchangeBind) -> _Later | None:
        exchange = c.exchange or ""
        temporary = st.temporary_queues.get(c.queue or "")
        if temporary is not None:
            route = self.exchange_subscriptions.get(exchange)
            if route is None:
                known = ", ".join(repr(x) for x in sorted(self.exchange_subscriptions))
                raise Refused(ErrorCode.NOT_FOUND, f"bind failed: no route serves bindings "
                              f"to exchange {exchange!r} (this façade's: {known})", 1)
            key = c.binding_key or ""
            if temporary.binding == (exchange, key):
                return None
            if temporary.binding is not None:
                raise Refused(ErrorCode.NOT_IMPLEMENTED, f"queue {temporary.name!r} is bound "
                              f"already; the façade serves one binding per temporary queue", 2)
            temporary.binding = (exchange, key)
            # bound means the 1.0 broker keeps what is published from now on: attach first
            temporary.sub = route.subscribe(st, None, AcceptMode.EXPLICIT, False,
                                            queue=temporary.name,
                                            address=route.address.replace("{binding_key}", key))
            later = temporary.sub.complete_when_attached(cid, c)
            if later is not None:
                st.binds_pending += 1
            return later
        self._queue(c.queue or "", 0)
        if exchange == "":
            raise Refused(ErrorCode.NOT_ALLOWED, "the default exchange takes no bindings", 1)
        if exchange not in self.publish_routes:
            raise Refused(ErrorCode.NOT_FOUND, f"bind failed: no such exchange {exchange!r}", 1)
        # both ends exist; what reaches the queue is decided by its route's 1.0 source
        log.debug("façade %s: binding %r -> %r accepted (routing is the 1.0 broker's)",
                  self.name, exchange, c.queue)
        return None

    def _queue_delete(self, st: _SessionState, cid: int, c: QueueDelete) -> None:
        temporary = st.temporary_queues.pop(c.queue or "", None)
        if temporary is None:
            raise Refused(ErrorCode.NOT_IMPLEMENTED,
                          f"{c.NAME} is not implemented by the amqp-bridge façade")
        if temporary.sub is not None and temporary.sub.destination is None:
            temporary.sub.end()  # bound, never subscribed: its link goes

    def _exchange_unbind(self, st: _SessionState, cid: int, c: ExchangeUnbind) -> None:
        temporary = st.temporary_queues.get(c.queue or "")
        if temporary is None:
            raise Refused(ErrorCode.NOT_IMPLEMENTED,
                          f"{c.NAME} is not implemented by the amqp-bridge façade")
        if temporary.binding == (c.exchange or "", c.binding_key or "") \
                and temporary.sub is not None and temporary.sub.destination is None:
            temporary.sub.end()
            temporary.binding = temporary.sub = None

    def _subscribe(self, st: _SessionState, cid: int, c: MessageSubscribe) -> _Later | None:
        temporary = st.temporary_queues.get(c.queue or "")
        if temporary is not None:
            return self._subscribe_temporary(st, cid, c, temporary)
        route = self._queue(c.queue or "", 0)
        if c.acquire_mode == AcquireMode.NOT_ACQUIRED:
            raise Refused(ErrorCode.NOT_IMPLEMENTED, "browsing (acquire-mode not-acquired) is "
                                                     "not available through the façade", 3)
        if route.exclusive or (c.exclusive and route.subscriptions):
            raise Refused(ErrorCode.RESOURCE_LOCKED, f"queue {c.queue!r} has an exclusive "
                          f"subscriber" if route.exclusive else
                          f"queue {c.queue!r} already has subscribers", 4)
        if self.stopping:
            raise Refused(ErrorCode.RESOURCE_LIMIT_EXCEEDED, "amqp-bridge is shutting down")
        dest = c.destination or ""
        sub = route.subscribe(st, dest, _accept_mode(c), bool(c.exclusive), queue=c.queue or "")
        st.subscriptions[dest] = sub
        # like qpidd: complete once the subscription is live
        return sub.complete_when_attached(cid, c)

    def _subscribe_temporary(self, st: _SessionState, cid: int, c: MessageSubscribe,
                             temporary: _TemporaryQueue) -> _Later | None:
        sub = temporary.sub
        if sub is None:
            raise Refused(ErrorCode.NOT_FOUND, f"queue {c.queue!r} is bound to no exchange "
                                               f"the façade serves", 0)
        if sub.destination is not None or sub.closed:
            raise Refused(ErrorCode.RESOURCE_LOCKED, f"queue {c.queue!r} has a subscriber "
                          f"already (the façade serves one per temporary queue)", 0)
        if c.acquire_mode == AcquireMode.NOT_ACQUIRED:
            raise Refused(ErrorCode.NOT_IMPLEMENTED, "browsing (acquire-mode not-acquired) is "
                                                     "not available through the façade", 3)
        dest = c.destination or ""
        sub.adopt(dest, _accept_mode(c), bool(c.exclusive))
        st.subscriptions[dest] = sub
        return sub.complete_when_attached(cid, c)

    def _cancel(self, st: _SessionState, cid: int, c: MessageCancel) -> None:
        sub = st.subscriptions.pop(c.destination or "", None)
        if sub is not None:
            sub.cancel()
            if not sub.closed:  # transfers still unsettled: they end with the session
                st.cancelled.add(sub)

    def _flush_command(self, st: _SessionState, cid: int, c: MessageFlush) -> _Later | None:
        sub = st.subscriptions.get(c.destination or "")
        if sub is None:
            raise Refused(ErrorCode.NOT_FOUND, f"no subscription {c.destination!r}", 0)
        return None if sub.flush(cid) else LATER

    def _settle(self, st: _SessionState, transfers: Any,
                outcome: Callable[[_Subscription, int], None]) -> None:
        """Apply ``outcome`` to each of our transfers named in the sequence-set."""
        for lo, hi in (transfers.ranges if transfers is not None else ()):
            if serial_diff(hi, lo) < len(st.transfers):
                ids = [serial_add(lo, i) for i in range(serial_diff(hi, lo) + 1)]
            else:  # a wide range: look at the transfers we have instead
                ids = [t for t in st.transfers if serial_le(lo, t) and serial_le(t, hi)]
            for tid in ids:
                sub = st.transfers.get(tid)
                if sub is not None:
                    outcome(sub, tid)

    def _accept(self, st: _SessionState, cid: int, c: MessageAccept) -> None:
        self._settle(st, c.transfers, lambda sub, tid: sub.settle(tid, Delivery.ACCEPTED))

    def _reject(self, st: _SessionState, cid: int, c: MessageReject) -> None:
        text = f"rejected by the 0-10 subscriber (code {c.code or 0})"
        if c.text:
            text += f": {c.text}"
        self._settle(st, c.transfers,
                     lambda sub, tid: sub.settle(tid, Delivery.REJECTED, reason=text))

    def _release(self, st: _SessionState, cid: int, c: MessageRelease) -> None:
        state = Delivery.MODIFIED if c.set_redelivered else Delivery.RELEASED
        self._settle(st, c.transfers, lambda sub, tid: sub.settle(tid, state))

    def _on_completed(self, st: _SessionState, commands: list[int]) -> None:
        """The client completed our transfers: settles accept-mode none deliveries."""
        for tid in commands:
            sub = st.transfers.get(tid)
            if sub is not None:
                sub.on_completed(tid)
        for sub in st.subscriptions.values():  # room in the replay buffer again
            sub.pump()


_COMMANDS: dict[type[Command], Callable[..., Struct | _Later | None]] = {
    QueueDeclare: Facade._queue_declare,
    QueueQuery: Facade._queue_query,
    ExchangeDeclare: Facade._exchange_declare,
    ExchangeQuery: Facade._exchange_query,
    ExchangeBind: Facade._exchange_bind,
    ExchangeUnbind: Facade._exchange_unbind,
    QueueDelete: Facade._queue_delete,
    MessageSubscribe: Facade._subscribe,
    MessageCancel: Facade._cancel,
    MessageFlush: Facade._flush_command,
    MessageAccept: Facade._accept,
    MessageReject: Facade._reject,
    MessageRelease: Facade._release,
}


def _accept_mode(c: MessageSubscribe) -> AcceptMode:
    """The subscription's accept-mode; one that is not in the spec is refused."""
    if c.accept_mode is None:
        return AcceptMode.EXPLICIT
    try:
        return AcceptMode(c.accept_mode)
    except ValueError:
        raise Refused(ErrorCode.INVALID_ARGUMENT, f"accept-mode {c.accept_mode} is not 0 "
                                                  f"(explicit) or 1 (none)", 2) from None


def _busy_refusal(error: object) -> bool:
    """A login refused because too many were waiting (bridge.logins logs those, rate-limited)."""
    return str(error) in _BUSY_REFUSALS


_BUSY_REFUSALS = frozenset(REFUSAL_TEXT.values())


def _accept_limits(settings: Listener) -> AcceptLimits:
    return AcceptLimits(handshake_timeout=settings.handshake_timeout,
                        max_connections=settings.max_connections,
                        max_connections_per_peer=settings.max_connections_per_peer,
                        max_buffered=settings.max_buffered)


def _answer_login(engine: Connection, user: str, ok: bool) -> None:
    """Let ``user`` in, or refuse the login (connection.close 320, the reason logged)."""
    engine.finish_authentication(user if ok else None, f"bad credentials for {user!r}")


# --- 1.0 helpers ----------------------------------------------------------------------------


def _waiting(facade: Facade, links: list[Amqp10Link]) -> list[str]:
    out = [] if facade.listening else [f"façade {facade.name} listening"]
    out += [f"1.0 link to {link.address!r} on {link.connection_name}"
            for link in links if not link.up]
    return out


def _forget(link: Amqp10Link) -> None:
    """Close a link for good and stop its connection from telling it about reconnects."""
    link.close()
    watchers = getattr(link.connection.handler, "watchers", None)
    if watchers is not None and link in watchers:
        watchers.remove(link)


# --- façade-publish -------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class _Publish:
    """A legacy publish on its way to the 1.0 target (or its dead-letter address)."""

    st: _SessionState
    command_id: int
    command: Command
    data: bytes
    """The encoded 1.0 message (its dead-letter copy once it is being dead-lettered)."""
    size: int
    releases: int = 0
    t0: float = 0.0
    """When the publish arrived (``time.monotonic()``), for the latency histogram."""


class FacadePublish:
    """Legacy publishes to a façade exchange, forwarded to a 1.0 address (module docstring)."""

    def __init__(self, container: Container, route: Route, facade: Facade, amqp10: Any,
                 dead_letter: tuple[Any, str] | None, *, register: bool = True) -> None:
        assert route.source.exchange is not None and route.target.address is not None
        if register:
            facade.add_publish(self, route.source.exchange)
        self.name = route.name
        self.route = route
        self.facade = facade
        self.translator = Translator(route)
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        self.waiting: deque[_Publish] = deque()
        self.in_flight: dict[Delivery, _Publish] = {}
        self.dlq_waiting: deque[_Publish] = deque()
        self.dlq_in_flight: dict[Delivery, _Publish] = {}
        self.bytes = 0
        self.throttled = False
        self.poison = PoisonGuard(route.poison_attempts)
        self.dlq_poison = PoisonGuard(route.poison_attempts)
        self.tap: RouteTap | None = None
        """The route's archive tap (set by the bridge when the route has ``tap``)."""
        self.sender = Amqp10Link(container, amqp10, route.target.address, sender=True,
                                 owner=self, name=f"{route.name}.target", route=route.name)
        self.dlq: Amqp10Link | None = None
        if dead_letter is not None:
            self.dlq = Amqp10Link(container, dead_letter[0], dead_letter[1], sender=True,
                                  owner=self, name=f"{route.name}.dead-letter", route=route.name)

    @classmethod
    def into_queue(cls, consume: FacadeConsume) -> FacadePublish:
        """Publishes to the default exchange with façade queue Q as routing key: sent to
        the 1.0 address Q's subscribers consume from (unrendered; the consume route's
        window and poison rule), as a 0-10 broker would put them in Q."""
        settings = consume.route
        assert settings.target.queue is not None
        route = settings.model_copy(update={
            "name": f"{settings.name}.publish",
            "source": settings.target.model_copy(update={"queue": None, "exchange": ""}),
            "target": settings.source, "cloudevents": None, "dead_letter": None,
            "tap": None, "dedupe": None})
        return cls(consume.container, route, consume.facade, consume.amqp10, None,
                   register=False)

    @property
    def pending(self) -> int:
        """Publishes taken from clients and not yet completed or refused."""
        return (len(self.waiting) + len(self.in_flight) + len(self.dlq_waiting)
                + len(self.dlq_in_flight))

    def pause(self) -> None:
        """Graceful stop: take no new publishes (those taken still complete)."""
        self.facade.pause()

    @property
    def ready(self) -> bool:
        """The façade listens and the 1.0 sender is attached."""
        return not self.waiting_for()

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (empty when it is); safe from any thread."""
        return _waiting(self.facade, [self.sender])

    # -- from the façade ------------------------------------------------------------------

    def publish(self, st: _SessionState, ev: MessageReceived) -> None:
        self.stats.received += 1
        dp = ev.delivery_properties or DeliveryProperties()
        if dp.redelivered:
            self.stats.redelivered += 1
        dp.exchange = ev.destination  # set by the broker on receipt, as qpidd does
        mp = ev.message_properties
        entry = _Publish(st, ev.command_id, ev.transfer, b"", len(ev.body), t0=time.monotonic())
        self.bytes += entry.size
        tap = self.tap
        try:
            entry.data = self.translator.legacy_to_amqp10(dp, mp, ev.body).encode()
        except MappingError as exc:
            self.stats.mapping_errors += 1
            reason = f"cannot translate: {exc}"
            plain = plain_copy(ev, self.route) if self.dlq is not None or tap is not None else None
            if tap is not None and plain is not None:
                tap.received_message(plain)
            if self.dlq is None or plain is None:
                self.stats.rejected += 1
                self._fail(entry, ErrorCode.INVALID_ARGUMENT, reason)
            else:
                self._dead_letter(entry, plain, reason)
        else:
            if tap is not None:
                tap.received(entry.data)
            limit = self.sender.message_size_limit(self.route.max_message_size)
            if limit is not None and len(entry.data) > limit:
                self.stats.oversized += 1
                self.stats.rejected += 1
                self._fail(entry, ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                           too_large(len(entry.data), limit, self.route))
            else:
                self.waiting.append(entry)
                self._send()
        self._recount()

    def forget(self, st: _SessionState) -> None:
        """``st`` ended: its publishes not sent yet are dropped (never completed, so the
        client knows they were not taken)."""
        for queue in (self.waiting, self.dlq_waiting):
            gone = [e for e in queue if e.st is st]
            if gone:
                self.bytes -= sum(e.size for e in gone)
                kept = [e for e in queue if e.st is not st]
                queue.clear()
                queue.extend(kept)
        self._recount()

    # -- 1.0 side (Amqp10Link owner) ------------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        self._send()

    def on_link_down(self, link: Amqp10Link) -> None:
        # the outcomes of what was in flight on the lost link will never come: send it
        # again, in order, when a link is back (the target may get it twice: at-least-once),
        # unless the peer ended the link over it once too often (bridge.poison)
        to_send, in_flight, guard = (
            (self.waiting, self.in_flight, self.poison) if link is self.sender
            else (self.dlq_waiting, self.dlq_in_flight, self.dlq_poison))
        culprit = None
        if link.refusal is not None and in_flight:
            link.explained = True
            culprit = guard.refused(in_flight.values())
        to_send.extendleft(reversed([e for e in in_flight.values() if e is not culprit]))
        in_flight.clear()
        if link is self.sender:
            self.stats.credit = 0
        if culprit is not None:
            self._poisoned(culprit, link)
            self._recount()

    def on_credit(self, link: Amqp10Link) -> None:
        self._send()

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        if not delivery.remote_state:
            return
        if link is self.sender:
            self._on_outcome(delivery)
        else:
            self._on_dead_letter_outcome(delivery)
        self._send()
        self._recount()

    def _send(self) -> None:
        """Send what waits, in order, within the 1.0 credit and ``max_in_flight`` (which so
        bounds what a crash can duplicate; what waits is bounded by the throttling)."""
        for link, queue, in_flight, guard in (
                (self.sender, self.waiting, self.in_flight, self.poison),
                (self.dlq, self.dlq_waiting, self.dlq_in_flight, self.dlq_poison)):
            window = guard.window(self.limit_messages)  # 1 while probing for poison
            while queue and link is not None and link.up and link.credit > 0 \
                    and len(self.in_flight) + len(self.dlq_in_flight) < self.limit_messages \
                    and len(in_flight) < window:
                entry = queue.popleft()
                in_flight[link.send(entry.data)] = entry
        self.stats.credit = self.sender.credit

    def _on_outcome(self, delivery: Delivery) -> None:
        entry = self.in_flight.pop(delivery, None)
        state = delivery.remote_state
        delivery.settle()
        if entry is None:
            return
        if state == Delivery.ACCEPTED:
            self.stats.delivered += 1
            self.stats.latency.observe(time.monotonic() - entry.t0)
            if self.poison.probe:
                self.poison.accepted(entry)
            if self.tap is not None:
                self.tap.delivered(entry.data)
            self._complete(entry)
            return
        target = self.route.target.address
        if state == Delivery.REJECTED:
            condition = condition_name(delivery.remote.condition)
            text = condition_text(delivery.remote.condition)
            self._refused(entry, condition, f"rejected by the AMQP 1.0 target {target}: {text}")
            return
        # released / modified: the target did not process it; try again, a few times
        entry.releases += 1
        self.stats.released += 1
        if entry.releases >= MAX_RELEASES:
            self._refused(entry, None, f"released {entry.releases} times by the AMQP 1.0 "
                                       f"target {target}")
        elif entry.st.live:
            self.waiting.appendleft(entry)
        else:
            self.bytes -= entry.size

    def _poisoned(self, entry: _Publish, link: Amqp10Link) -> None:
        """The target ended ``link`` too often while ``entry`` was alone in flight on it:
        dead-letter it, or refuse it to its publisher (execution.exception)."""
        reason = report_poison(self.route, self.stats, link, peer=entry.st.client.sock.peer)
        condition = str(link.refusal.name) if link.refusal is not None else None
        if link is self.sender:
            self._refused(entry, condition, reason)
        else:  # the dead-letter address refuses the copy too
            self.stats.rejected += 1
            self._fail(entry, _ERROR_CODES.get(condition or "", ErrorCode.INTERNAL_ERROR),
                       f"{reason} (as a dead-letter copy)")

    def _refused(self, entry: _Publish, condition: str | None, reason: str) -> None:
        if self.dlq is not None and entry.st.live:
            self._dead_letter(entry, AmqpMessage.decode(entry.data), reason)
            return
        self.stats.rejected += 1
        self._fail(entry, _ERROR_CODES.get(condition or "", ErrorCode.INTERNAL_ERROR), reason)

    def _dead_letter(self, entry: _Publish, message: AmqpMessage, reason: str) -> None:
        log_refused(self.name, reason, dead_lettered=True)
        entry.data = dead_letter_copy(message, self.name, reason)
        self.dlq_waiting.append(entry)
        self._send()

    def _on_dead_letter_outcome(self, delivery: Delivery) -> None:
        entry = self.dlq_in_flight.pop(delivery, None)
        state = delivery.remote_state
        delivery.settle()
        if entry is None:
            return
        if state == Delivery.ACCEPTED:
            self.dlq_poison.accepted(entry)
            self.stats.dead_lettered += 1
            self._complete(entry)
        else:
            self.stats.rejected += 1
            text = condition_text(delivery.remote.condition)
            self._fail(entry, ErrorCode.INTERNAL_ERROR,
                       f"the dead-letter address refused the message: {text}")

    # -- answering the publisher -----------------------------------------------------------

    def _complete(self, entry: _Publish) -> None:
        """The publish is safe on the 1.0 side: complete the client's transfer."""
        self.bytes -= entry.size
        if entry.st.live:
            entry.st.session.complete(entry.command_id)
            self.facade.flush_later(entry.st.client.sock)

    def _fail(self, entry: _Publish, code: int, reason: str) -> None:
        """The publish cannot be forwarded: the publisher's session ends with the reason."""
        self.bytes -= entry.size
        st = entry.st
        self.facade.publish_refused(st.client.sock.peer, reason, route=self.name)
        if st.live:
            st.session.exception(code, entry.command_id, reason, command=entry.command)
            self.facade.flush_later(st.client.sock)

    def on_tap_ready(self) -> None:
        """The tap's writer caught up: read the publishers again (unless otherwise throttled)."""
        self._recount()

    def _recount(self) -> None:
        """Update the statistics; throttle the publishers past the in-flight bound (or while
        the tap's writer is behind), and let them go again below three quarters of it."""
        pending, stats = self.pending, self.stats
        stats.in_flight = pending
        stats.in_flight_bytes = self.bytes
        stats.peak_in_flight = max(stats.peak_in_flight, pending)
        tap_behind = self.tap is not None and self.tap.backpressured
        if not self.throttled:
            if pending >= self.limit_messages or self.bytes >= self.limit_bytes or tap_behind:
                self.throttled = True
                self.facade.update_reading()
        elif pending <= self.limit_messages * 3 // 4 and self.bytes <= self.limit_bytes * 3 // 4 \
                and not tap_behind:
            self.throttled = False
            self.facade.update_reading()


# --- façade-consume -------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class _Held:
    """A 1.0 delivery mapped for the subscriber (waiting for credit, or transferred)."""

    delivery: Delivery | None
    """None once void: the link it came on was lost, and the source redelivers it."""
    header: tuple[Struct, ...]
    body: bytes
    cost: int
    """What the transfer takes from byte credit: header segment plus body octets."""
    t0: float = 0.0
    """When the 1.0 delivery arrived (``time.monotonic()``), for the latency histogram."""
    data: bytes | None = None
    """The 1.0 message as received, kept when the route's tap records deliveries."""


class _Subscription:
    """One 0-10 subscription to a façade queue and its own 1.0 receiver link."""

    def __init__(self, route: FacadeConsume, st: _SessionState, destination: str | None,
                 accept_mode: AcceptMode, exclusive: bool, *, queue: str, address: str
                 ) -> None:
        self.route = route
        self.st = st
        self.destination = destination
        self.accept_mode = accept_mode
        self.exclusive = exclusive
        self.held: deque[_Held] = deque()
        """Received from 1.0, not yet transferred (waiting for 0-10 credit)."""
        self.unsettled: dict[int, _Held] = {}
        """Transferred to the subscriber, not yet accepted/rejected/released."""
        self.flushes: list[int] = []
        self.waiting_for_link: list[tuple[int, Command]] = []
        """Commands to complete once the link is attached (message.subscribe, or the
        exchange.bind that opened a temporary queue's link)."""
        self.typical_cost = 1024
        """Running estimate of a transfer's byte-credit cost (sizes 1.0 link credit)."""
        self.cancelled = False
        self.closed = False
        self.queue = queue
        self.link = Amqp10Link(route.container, route.amqp10, address, sender=False,
                               owner=self, name=f"{route.name}.{uuid.uuid4().hex[:12]}",
                               route=route.name)

    @property
    def busy(self) -> int:
        """Messages promised (link credit), held and unsettled: the route's in-flight share."""
        link = self.link
        promised = link.link.credit + link.link.queued if link.up else 0
        return promised + len(self.held) + len(self.unsettled)

    def subscriber_credit(self) -> int:
        """The subscriber's message credit (unlimited counts as the route's bound)."""
        credit = self._credit()
        if credit is None:
            return 0
        return self.route.limit_messages if credit.messages is None else credit.messages

    def _credit(self) -> Any:
        """The 0-10 credit the subscriber granted (None once cancelled or gone)."""
        if self.cancelled or not self.st.live or self.destination is None:
            return None
        return self.st.session.outgoing_credit.get(self.destination)

    # -- 1.0 credit follows 0-10 credit -------------------------------------------------------

    def grant(self, route_busy: int | None = None) -> int:
        """Bring the link credit to what the subscriber's credit and the route allow
        (``route_busy``: the route's :attr:`~FacadeConsume.busy`, if known); returns
        the credit added.

        Link credit is never taken back (RabbitMQ 3.x leaves a drain unanswered and
        stalls the session): what it still brings after a message.stop waits here
        for new 0-10 credit."""
        if self.closed or not self.link.up:
            return 0
        credit = self._credit()
        route = self.route
        if credit is None or route.paused or credit.messages == 0 or credit.bytes == 0:
            return 0
        if route.tap is not None and route.tap.backpressured:
            return 0  # the archive writer is behind: take nothing more for now
        wanted = route.limit_messages if credit.messages is None else credit.messages
        if credit.bytes is not None:
            # 1.0 has no byte credit: promise what the byte credit likely covers (from the
            # sizes seen so far), at least one message so a large one can still get through
            wanted = min(wanted, max(1, credit.bytes // self.typical_cost))
        receiver = self.link.link
        busy = route.busy if route_busy is None else route_busy
        room = min(wanted - len(self.held) - receiver.credit - receiver.queued,
                   route.limit_messages - busy)
        if room <= 0 or route.bytes_in_flight >= route.limit_bytes:
            return 0
        receiver.flow(room)
        return room

    def on_subscriber_credit(self) -> None:
        """The subscriber changed its credit (flow, stop, flow mode, window re-grant)."""
        self.pump()
        self.grant()
        self.route.recount()

    def flush(self, cid: int) -> bool:
        """message.flush: True if completed now, False if it completes shortly.

        It completes once what is available has been transferred.  What the 1.0
        broker has is known only by draining the link, which RabbitMQ 3.x does not
        answer, so messages already promised by link credit get ``FLUSH_GRACE`` to
        arrive (the broker sends them at once when it has them); a flush of a
        subscription whose link is still attaching waits for it first.
        """
        self.pump()
        credit = self._credit()
        link = self.link
        if credit is None or credit.messages == 0 or credit.bytes == 0 or self.closed:
            return True
        attaching = not link.up and bool(self.waiting_for_link)
        if not attaching and (not link.up or link.credit == 0):
            return True  # nothing is on its way
        self.flushes.append(cid)
        if link.up and len(self.flushes) == 1:
            self.route.container.schedule(FLUSH_GRACE, Timer(self._finish_flushes))
        return False

    def _finish_flushes(self) -> None:
        self.pump()
        self._complete_flushes()
        self.route.facade.flush_later(self.st.client.sock)

    def _complete_flushes(self) -> None:
        for cid in self.flushes:
            if self.st.live:
                self.st.session.complete(cid)
        self.flushes.clear()

    # -- Amqp10Link owner -------------------------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        if self.waiting_for_link:
            waiting, self.waiting_for_link = self.waiting_for_link, []
            if self.st.live:
                for cid, command in waiting:
                    self.st.session.complete(cid)
                    if isinstance(command, ExchangeBind):
                        self.route.facade.bound(self.st)
                self.route.facade.flush_later(self.st.client.sock)
        self.grant()
        if self.flushes:
            self.route.container.schedule(FLUSH_GRACE, Timer(self._finish_flushes))

    def complete_when_attached(self, cid: int, command: Command) -> _Later | None:
        """Complete ``cid`` (message.subscribe, exchange.bind) once the 1.0 link is
        attached — now if it is; raise an exception if it is not within
        ``SUBSCRIBE_TIMEOUT``."""
        if self.link.up:
            return None
        self.waiting_for_link.append((cid, command))
        self.route.container.schedule(SUBSCRIBE_TIMEOUT, Timer(self._subscribe_timeout))
        return LATER

    def _subscribe_timeout(self) -> None:
        if not self.waiting_for_link or not self.st.live:
            return
        (cid, command), *_ = self.waiting_for_link
        self.waiting_for_link = []
        self.st.session.exception(
            ErrorCode.NOT_FOUND, cid, f"the AMQP 1.0 source {self.link.address} did not "
            f"attach within {SUBSCRIBE_TIMEOUT:.0f}s", command=command)
        self.route.facade.flush_later(self.st.client.sock)

    def adopt(self, destination: str, accept_mode: AcceptMode, exclusive: bool) -> None:
        """message.subscribe to the temporary queue whose link this is (made at bind)."""
        self.destination = destination
        self.accept_mode = accept_mode
        self.exclusive = exclusive
        self.grant()

    def on_link_down(self, link: Amqp10Link) -> None:
        # what came on the lost link is void: the source redelivers it
        route = self.route
        for msg in self.held:
            route.bytes_in_flight -= len(msg.body)
        self.held.clear()
        for msg in self.unsettled.values():
            msg.delivery = None  # the subscriber's outcome for it goes nowhere now
        route.forget_dead_letters(self)

    def on_credit(self, link: Amqp10Link) -> None:
        self.grant()

    def on_delivery(self, link: Amqp10Link, delivery: Delivery) -> None:
        if not delivery.readable or delivery.partial:
            return
        receiver = link.link
        data = receiver.recv(delivery.pending) or b""
        receiver.advance()
        route = self.route
        route.stats.received += 1
        if self.closed or not self.st.live:
            delivery.update(Delivery.RELEASED)  # never seen by anyone
            delivery.settle()
            route.stats.released += 1
            return
        tap = route.tap
        if tap is not None:
            tap.received(data)
        try:
            message = AmqpMessage.decode(data)
            if redelivered_1_0(message.header):
                route.stats.redelivered += 1
            dp, mp, body = route.translator.amqp10_to_legacy(message)
        except MappingError as exc:
            route.stats.mapping_errors += 1
            route.unmappable(self, delivery, data, exc)
            self.grant()
            return
        header = (dp, mp)
        self.held.append(_Held(delivery, header, body, len(encode_header(header)) + len(body),
                               t0=time.monotonic(),
                               data=data if tap is not None and tap.wants_delivered else None))
        route.bytes_in_flight += len(body)
        self.pump()
        self.grant()

    def pump(self) -> None:
        """Transfer held messages while the subscriber's credit allows (in order)."""
        if not self.held:
            return
        session = self.st.session
        destination = self.destination
        sent = False
        while self.held and destination is not None:
            credit = self._credit()
            msg = self.held[0]
            if credit is None or self.route.paused or not session.can_send \
                    or not credit.allows(msg.cost):
                break
            self.held.popleft()
            tid = session.message_transfer(destination, msg.header, msg.body,
                                           accept_mode=self.accept_mode,
                                           acquire_mode=AcquireMode.PRE_ACQUIRED)
            self.unsettled[tid] = msg
            self.st.transfers[tid] = self
            self.typical_cost = (3 * self.typical_cost + msg.cost) // 4 or 1
            sent = True
        if sent:
            self.route.facade.flush_later(self.st.client.sock)
            self.route.recount()

    def on_completed(self, tid: int) -> None:
        """The subscriber completed our transfer: with accept-mode none that settles it."""
        if self.accept_mode == AcceptMode.NONE:
            self.settle(tid, Delivery.ACCEPTED)

    def settle(self, tid: int, state: int, reason: str = "") -> None:
        """Give the 1.0 delivery behind transfer ``tid`` its outcome."""
        msg = self.unsettled.pop(tid, None)
        self.st.transfers.pop(tid, None)
        if msg is None:
            return
        route = self.route
        route.bytes_in_flight -= len(msg.body)
        if state == Delivery.ACCEPTED and route.tap is not None:
            route.tap.delivered(msg.data)  # the subscriber has it, whatever became of its link
        delivery = msg.delivery
        if delivery is None:
            pass  # void: its link was lost and the source redelivers it anyway
        elif state == Delivery.ACCEPTED:
            delivery.update(Delivery.ACCEPTED)
            delivery.settle()
            route.stats.delivered += 1
            route.stats.latency.observe(time.monotonic() - msg.t0)
        elif state == Delivery.REJECTED:
            reject(delivery, str(REJECTED_BY_SUBSCRIBER), reason)
            route.stats.rejected += 1
        else:
            give_back(delivery, failed=state == Delivery.MODIFIED)
            route.stats.released += 1
        if self.cancelled:
            self._close_when_idle()
        route.grant()

    # -- the end ------------------------------------------------------------------------------

    def release_held(self) -> None:
        """Give back to the 1.0 broker what was received but never transferred."""
        while self.held:
            msg = self.held.popleft()
            self.route.bytes_in_flight -= len(msg.body)
            if msg.delivery is not None:  # never transferred: not a failed delivery
                msg.delivery.update(Delivery.RELEASED)
                msg.delivery.settle()
                self.route.stats.released += 1

    def cancel(self) -> None:
        """message.cancel: no more messages; transfers already made can still be settled.

        The link stays attached until they are (it carries their outcomes); what it
        brings meanwhile is held and released when it detaches (released at once,
        it would come straight back to the same link)."""
        self.cancelled = True
        if self.st.live:
            for cid, _ in self.waiting_for_link:
                self.st.session.complete(cid)
        self.waiting_for_link = []
        self._complete_flushes()
        self._close_when_idle()
        self.route.grant()

    def end(self) -> None:
        """The session is gone: whatever it did not settle goes back to the 1.0 broker."""
        self.cancelled = True
        for tid, msg in self.unsettled.items():
            self.st.transfers.pop(tid, None)
            self.route.bytes_in_flight -= len(msg.body)
            if msg.delivery is not None:
                give_back(msg.delivery, failed=True)  # the subscriber may have seen it
                self.route.stats.released += 1
        self.unsettled.clear()
        self.flushes.clear()
        self._close_when_idle()
        self.route.grant()

    def _close_when_idle(self) -> None:
        """Detach once the transfers made are settled (the link carries their outcomes)."""
        if not self.closed and not self.unsettled:
            self.closed = True
            self.release_held()
            _forget(self.link)  # detaches and ends the link's session
            self.route.subscriptions.discard(self)
            self.st.cancelled.discard(self)


@dataclass(eq=False, slots=True)
class _DeadLetter:
    """An unmappable 1.0 message on its way to the dead-letter address."""

    sub: _Subscription
    original: Delivery | None
    """None once void: the link it came on was lost."""
    copy: bytes


class FacadeConsume:
    """A 1.0 address consumed by legacy subscribers of a façade queue (module docstring)."""

    def __init__(self, container: Container, route: Route, facade: Facade, amqp10: Any,
                 dead_letter: tuple[Any, str] | None) -> None:
        assert route.source.address is not None
        if route.target.queue is not None:
            facade.add_consume(self, route.target.queue)
        else:  # the exchange temporary queues bind to (docs/semantics.md)
            assert route.target.exchange is not None
            facade.add_exchange_subscription(self, route.target.exchange)
        self.name = route.name
        self.route = route
        self.facade = facade
        self.container = container
        self.amqp10 = amqp10
        self.connection = amqp10.handler
        """The 1.0 connection's handler (``up``, ``name``): read by the metrics thread."""
        self.address = route.source.address
        self.translator = Translator(route)
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        self.subscriptions: set[_Subscription] = set()
        self.bytes_in_flight = 0
        """Body octets of held and unsettled messages."""
        self.paused = False
        self.tap: RouteTap | None = None
        """The route's archive tap (set by the bridge when the route has ``tap``)."""
        self.dlq_waiting: deque[_DeadLetter] = deque()
        self.dlq_in_flight: dict[Delivery, _DeadLetter] = {}
        self.dlq: Amqp10Link | None = None
        if dead_letter is not None:
            self.dlq = Amqp10Link(container, dead_letter[0], dead_letter[1], sender=True,
                                  owner=self, name=f"{route.name}.dead-letter", route=route.name)

    @property
    def exclusive(self) -> bool:
        return any(s.exclusive for s in self.subscriptions)

    @property
    def busy(self) -> int:
        return sum(s.busy for s in self.subscriptions) + len(self.dlq_in_flight) \
            + len(self.dlq_waiting)

    @property
    def pending(self) -> int:
        """Messages a subscriber (or the dead-letter address) has and has not settled yet;
        held ones go back to the 1.0 broker with their link."""
        return sum(len(s.unsettled) for s in self.subscriptions) + len(self.dlq_in_flight) \
            + len(self.dlq_waiting)

    def pause(self) -> None:
        """Graceful stop: no more credit, no more transfers; outcomes still settle."""
        self.paused = True
        self.facade.pause()

    @property
    def ready(self) -> bool:
        """The façade listens, the 1.0 connection is open and every subscriber's link is
        attached."""
        return not self.waiting_for()

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (empty when it is); safe from any thread."""
        out = _waiting(self.facade, [s.link for s in tuple(self.subscriptions)
                                     if not s.closed])
        if not self.connection.up:
            out.append(f"1.0 connection {self.connection.name}")
        return out

    def subscribe(self, st: _SessionState, destination: str | None, accept_mode: AcceptMode,
                  exclusive: bool, *, queue: str = "", address: str | None = None
                  ) -> _Subscription:
        """A new subscription of ``st`` to ``queue``, consuming from the route's address
        (or ``address``: a temporary queue's, its binding key filled in)."""
        sub = _Subscription(self, st, destination, accept_mode, exclusive, queue=queue,
                            address=address or self.address)
        self.subscriptions.add(sub)
        return sub

    def on_tap_ready(self) -> None:
        """The tap's writer caught up: grant credit again."""
        self.grant()

    def grant(self) -> None:
        """Room in the route's bound: let every subscription top its link credit up."""
        busy = self.busy
        for sub in list(self.subscriptions):
            busy += sub.grant(busy)
        self.recount()

    def recount(self) -> None:
        """Bring the route's gauges up to date (after transfers, outcomes, credit)."""
        stats = self.stats
        stats.credit = sum(sub.subscriber_credit() for sub in self.subscriptions)
        stats.in_flight = self.pending
        stats.in_flight_bytes = self.bytes_in_flight
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)

    def unmappable(self, sub: _Subscription, delivery: Delivery, data: bytes,
                   exc: MappingError) -> None:
        """A 1.0 message no 0-10 subscriber can get: dead-letter it, or reject it."""
        reason = f"cannot translate: {exc}"
        log_refused(self.name, reason, dead_lettered=self.dlq is not None)
        if self.dlq is None:
            reject(delivery, str(MAPPING_ERROR), reason)
            self.stats.rejected += 1
            return
        try:
            copy = dead_letter_copy(AmqpMessage.decode(data), self.name, reason)
        except MappingError:
            copy = data  # not even decodable: forward the bytes as they came
        self.dlq_waiting.append(_DeadLetter(sub, delivery, copy))
        self._send_dead_letters()

    def forget_dead_letters(self, sub: _Subscription) -> None:
        """``sub``'s link is lost: its messages on their way to the dead-letter address
        are void (the source redelivers them)."""
        for entry in [*self.dlq_waiting, *self.dlq_in_flight.values()]:
            if entry.sub is sub:
                entry.original = None

    def _send_dead_letters(self) -> None:
        dlq = self.dlq
        while self.dlq_waiting and dlq is not None and dlq.up and dlq.credit > 0:
            entry = self.dlq_waiting.popleft()
            self.dlq_in_flight[dlq.send(entry.copy)] = entry

    # -- dead-letter link (Amqp10Link owner) -------------------------------------------------

    def on_link_up(self, link: Amqp10Link) -> None:
        self._send_dead_letters()

    def on_link_down(self, link: Amqp10Link) -> None:
        # copies in flight may or may not have arrived: have the originals redelivered
        for entry in self.dlq_in_flight.values():
            if entry.original is not None:
                give_back(entry.original, failed=False)
                self.stats.released += 1
        self.dlq_in_flight.clear()

    def on_credit(self, link: Amqp10Link) -> None:
        self._send_dead_letters()

    def on_delivery(self, link: Amqp10Link, dlq_delivery: Delivery) -> None:
        if not dlq_delivery.remote_state:
            return
        entry = self.dlq_in_flight.pop(dlq_delivery, None)
        state = dlq_delivery.remote_state
        dlq_delivery.settle()
        original = entry.original if entry is not None else None
        if original is None:
            return
        if state == Delivery.ACCEPTED:
            original.update(Delivery.ACCEPTED)
            original.settle()
            self.stats.dead_lettered += 1
        else:
            give_back(original, failed=False)
            self.stats.released += 1
        self.grant()


__all__ = ["Facade", "FacadeConsume", "FacadePublish", "Refused"]
