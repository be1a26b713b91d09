"""The façade's listener: accepting legacy 0-10 applications, their logins and events.

A :class:`Facade` is one configured listener.  Its sockets are the runtime's
(:class:`~bridge.runtime.EngineListener` accepts, within the listener's limits, and
hosts each client as an :class:`~bridge.runtime.EngineSocket` whose reading the
façade pauses while the client publishes to a throttled route).  PLAIN logins are
checked on worker threads (:mod:`bridge.logins`); each client's engine events are
dispatched here: publishes to the publish routes, model commands to the command
model (:class:`~bridge.facade.commands.ServerCommands`), credit and completions to
the subscriptions.  Output the routes queue on a client's session is written once
per burst of loop events (:meth:`Facade.flush_later`, the runtime's
:class:`~bridge.runtime.EndOfBurst`).  A graceful stop accepts nothing new and
closes the clients once the routes drained (:meth:`Facade.close_when_drained`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from proton.reactor import Container

from amqp010.connection import Connection, ConnectionConfig, Role
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
from amqp010.session import Session
from amqp010.spec import CloseCode, ErrorCode

from ..config import ConfigError, Listener
from ..ops.logs import WarnLimiter
from ..runtime import AcceptLimits, EndOfBurst, EngineListener, EngineSocket, LoopCalls, Timer
from ..runtime.containment import Part
from ..security.logins import REFUSAL_TEXT, LoginChecks, PendingLogin
from ..security.passwords import PasswordTable
from ..security.tls import TlsFileError, describe_ssl_error, peer_common_name, server_context
from .commands import ServerCommands
from .consume import FacadeConsume
from .publish import FacadePublish
from .state import Client, SessionState

log = logging.getLogger(__package__)  # the façade's one logger: "bridge.facade"

_STOP_POLL = 0.1
_LOGIN_WORKERS = 2
"""Threads checking PBKDF2 passwords per listener (hashlib releases the GIL meanwhile)."""


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
        self._pending_logins: dict[EngineSocket, PendingLogin] = {}
        self.publish_routes: dict[str, FacadePublish] = {}
        self.consume_routes: dict[str, FacadeConsume] = {}
        self.exchange_subscriptions: dict[str, FacadeConsume] = {}
        """Routes to an exchange of this listener: what temporary queues bound to it get."""
        self.commands = ServerCommands(name, self.publish_routes, self.consume_routes,
                                       self.exchange_subscriptions, lambda: self.stopping)
        """The model commands, answered from the route tables."""
        self.refused_publishes = 0
        """Publishes refused with an execution.exception (unknown exchange or queue, a
        route's refusal): ``amqp_bridge_publishes_refused_total``."""
        self._client_warnings = WarnLimiter()
        """Bad-credential refusals: one WARNING per client address every 10 s."""
        self.queue_publishers: dict[str, FacadePublish] = {}
        """Publishes to the default exchange naming a façade queue, by queue (made on
        first use): they go to the address the queue's subscribers consume from."""
        self.clients: dict[EngineSocket, Client] = {}
        self.sessions: dict[Session, SessionState] = {}
        self.acceptor: EngineListener | None = None
        self.address: tuple[str, int] | None = None
        self.stopping = False
        self.bursts = EndOfBurst.of(container)

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
            self.acceptor = EngineListener(self.container, host, int(port),
                                            self._new_engine, self._on_event,
                                            self._on_accept, ssl_context=self.ssl_context,
                                            on_handshake=self._on_handshake,
                                            limits=_accept_limits(self.settings),
                                            name=self.name)
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

    def _new_engine(self) -> Connection:
        """The server-role 0-10 engine of an accepted client."""
        return Connection(Role.SERVER, ConnectionConfig(
            authenticator=self.authenticator,
            properties={"product": "amqp-bridge", "listener": self.name},
            max_message_size=self.settings.max_message_size,
            max_buffered=self.settings.max_buffered_per_connection,
            max_session_timeout=0))  # sessions are not resumable on the façade

    def _on_handshake(self, sock: EngineSocket) -> None:
        """TLS is up: a verified client certificate's CN is the identity SASL EXTERNAL gets."""
        assert sock.tls is not None
        cn = peer_common_name(sock.tls.obj.getpeercert())
        sock.engine.config.external_identity = cn
        if cn is not None:
            log.info("façade %s: %s presented a client certificate for %r", self.name,
                     sock.peer, cn)

    def _on_accept(self, sock: EngineSocket) -> None:
        if self.stopping:
            sock.engine.close(CloseCode.CONNECTION_FORCED, "amqp-bridge is shutting down")
            sock.flush()
            return
        self.clients[sock] = Client(sock)
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
        self.container.schedule(_STOP_POLL, Timer(self.close_when_drained))

    def close_when_drained(self) -> None:
        """Close the clients once no route has anything pending; else look again shortly."""
        routes: list[FacadePublish | FacadeConsume] = [*self.publish_routes.values(),
                                                       *self.queue_publishers.values(),
                                                       *self.consume_routes.values()]
        if any(r.pending for r in routes):
            self.container.schedule(_STOP_POLL, Timer(self.close_when_drained))
            return
        for sock in list(self.clients):
            sock.engine.close(CloseCode.CONNECTION_FORCED, "amqp-bridge is shutting down")
            sock.flush()
        self.logins.close()
        self._pending_logins.clear()
        if self._loop_calls is not None:
            self._loop_calls.close()

    # -- logins ---------------------------------------------------------------------------

    def _check_login(self, sock: EngineSocket, ev: CredentialsReceived) -> None:
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

    def _login_closed(self, sock: EngineSocket) -> None:
        """The connection ended: a login of it still waiting for its check is dropped."""
        login = self._pending_logins.pop(sock, None)
        if login is not None:
            self.logins.client_gone(login)

    # -- output ---------------------------------------------------------------------------

    def flush_later(self, sock: EngineSocket) -> None:
        """Write what ``sock``'s engine produced, once the current burst of events is done
        (:class:`~bridge.runtime.EndOfBurst`: one write per client per burst)."""
        self.bursts.flush_soon(sock.flush)

    def update_reading(self) -> None:
        """Pause reading on every client publishing to a throttled route; resume the others."""
        for client in self.clients.values():
            client.sock.pause_reading(any(r.throttled for r in client.publishes_to))

    # -- engine events --------------------------------------------------------------------

    def _on_event(self, sock: EngineSocket, ev: Event) -> None:
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
                self.commands.on_command(st, ev)
        elif isinstance(ev, CreditChanged):
            st = self.sessions.get(ev.session)
            sub = st.subscriptions.get(ev.destination) if st is not None else None
            if sub is not None:
                sub.on_subscriber_credit()
        elif isinstance(ev, CommandsCompleted):
            st = self.sessions.get(ev.session)
            if st is not None:
                self.commands.on_completed(st, ev.commands)
        elif isinstance(ev, SessionAttached):
            self.sessions[ev.session] = SessionState(ev.session, client)
        elif isinstance(ev, SessionDetached):
            st = self.sessions.pop(ev.session, None)
            if st is not None:
                self._end_session(st)
        elif isinstance(ev, CredentialsReceived):
                self._check_login(sock, ev)
        elif isinstance(ev, ConnectionOpened):
            client.user = ev.user
            log.info("façade %s: %s logged in as %r", self.name, sock.peer, ev.user,
                     extra=self.log_fields("client_open", peer=sock.peer, user=ev.user))
        elif isinstance(ev, ConnectionClosed):
            del self.clients[client.sock]
            self.bursts.discard(client.sock.flush)
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

    def _end_session(self, st: SessionState) -> None:
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

    def _on_publish(self, st: SessionState, ev: MessageReceived) -> None:
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


    def bound(self, st: SessionState) -> None:
        """A temporary queue's binding exists now: publishes held for it go on."""
        st.binds_pending -= 1
        while not st.binds_pending and st.held_publishes and st.live:
            self._on_publish(st, st.held_publishes.popleft())

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in the listener's own work is logged (its shutdown poll rescheduled)."""
        names = {"listener": self.name}
        if method == "close_when_drained":
            return Part("facade_listener", f"façade listener {self.name}", names,
                        "shutdown poll rescheduled",
                        lambda reason: self._reschedule_close())
        return Part("facade_listener", f"façade listener {self.name}", names, "logged")

    def _reschedule_close(self) -> None:
        self.container.schedule(0.1, Timer(self.close_when_drained))

    def socket_fault_part(self, sock: EngineSocket) -> Part:
        """A fault in one client's connection closes that connection; the façade's
        cleanup gives what the client left unsettled back to the AMQP 1.0 broker."""
        def recover(reason: str) -> None:
            sock.abort(reason)
            if not sock.closed:
                sock.close_transport()

        return Part("facade_client", f"façade {self.name} client {sock.peer}",
                    {"listener": self.name, "peer": sock.peer},
                    "client connection closed", recover)


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


__all__ = ["Facade"]
