"""What every façade listener does, whatever legacy protocol it speaks.

A façade listener (:class:`~bridge.facade.Facade` for AMQP 0-10,
:class:`~bridge.facade.amqp091.Facade091` for AMQP 0-9-1) is a :class:`ListenerCore`
plus its protocol's event dispatch.  The core owns what does not depend on the
protocol:

- accepting: the runtime's :class:`~bridge.runtime.EngineListener` within the
  listener's limits (:class:`~bridge.runtime.AcceptLimits`), TLS, each client an
  :class:`~bridge.runtime.EngineSocket` hosting the engine ``_new_engine`` builds;
- logins: PLAIN passwords checked off the loop by :mod:`bridge.security.logins`
  (bounded, fair across addresses), answered with the engine's
  ``finish_authentication`` (both engines have it);
- the route tables' registration (one route per exchange / queue, else a
  :class:`~bridge.config.ConfigError` naming both routes), including the routes to an
  exchange of the listener that serve the *temporary queues* clients bind to it
  (:attr:`ListenerCore.exchange_subscriptions`);
- who may do what: the listener's :class:`~bridge.facade.core.access.Access` (its
  permissions and user-id rule, the refusals counted), which each front asks;
- output once per burst of loop events, throttling (publishers of a throttled
  route are not read), warnings a client can provoke rate-limited per address;
- graceful stop (one rule for both façades, docs/semantics.md "Shutdown"): nothing
  new accepted; each client is read on until it has sent everything it had sent
  (nothing unread for it in the kernel at two looks in a row, or half the drain limit
  is over), then a publisher is read no more; every publish read is forwarded, its
  confirm or completion still flows; the clients are closed with connection-forced
  once the publish routes have drained — or when the bridge's drain limit is
  reached — and read again only to take their close-ok (what a client sends after
  our close is discarded, as a broker does);
- fault containment parts (a fault in one client's work closes that client).

The subclass supplies ``_new_engine``, ``_on_event``, ``_make_client``,
``_routes`` and ``_can_log_in``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from proton.reactor import Container

from ...config import ConfigError, Listener
from ...ops.logs import WarnLimiter
from ...runtime import (
    AcceptLimits,
    EndOfBurst,
    EngineListener,
    EngineSocket,
    LoopCalls,
    Timer,
    host_port,
)
from ...runtime.containment import Part
from ...security.logins import REFUSAL_TEXT, LoginChecks, PendingLogin
from ...security.passwords import PasswordTable
from ...security.tls import TlsFileError, describe_ssl_error, peer_common_name, server_context
from .access import Access

log = logging.getLogger("bridge.facade")  # the façade's one logger

STOP_POLL = 0.1
"""Seconds between two looks at the routes while a graceful stop waits for them."""
QUIET_POLLS = 2
"""Looks in a row that find nothing unread from a client: it has sent what it had."""
LOGIN_WORKERS = 2
"""Threads checking PBKDF2 passwords per listener (hashlib releases the GIL meanwhile)."""
CONNECTION_FORCED = 320
"""connection-forced: the close code of a client the bridge ends (0-10 and 0-9-1 alike)."""
QUIET_WHEN_HELD = frozenset({"access_refused", "publish_unroutable"})
"""Client warnings whose held-back lines are DEBUG, not INFO: what a client can repeat in
a tight loop (a refusal per operation; a publish per message that no queue takes, as
Celery's events with no monitor running) must not flood the log at the default level."""
SHUTDOWN_TEXT = "amqp-bridge is shutting down"
"""The close text a client gets when the bridge stops (the 0-9-1 façade says it as
RabbitMQ does)."""
BROKER_LOST_TEXT = ("the AMQP 1.0 broker behind amqp-bridge went away: reconnect and declare "
                    "again")
"""The close text of a topology-mode listener's clients when its 1.0 connection drops."""


class ListenerCore:
    """One configured façade listener, less its protocol (see the module docstring)."""

    clients: dict[EngineSocket, Any]
    """Accepted clients by socket: the subclass's client state (``sock``, ``publishes_to``)."""

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
        self.client_certs = settings.tls is not None and settings.tls.client_certs != "none"
        self.access = Access(name, settings.permission_table(),
                             trust_user_id=settings.trust_user_id)
        """Who may do what (permissions, the user-id rule) and what it refused."""
        self._loop_calls: LoopCalls | None = None
        self.logins = LoginChecks(name, self.passwords.verify,
                                  max_pending=settings.max_pending_logins,
                                  max_per_peer=settings.max_pending_logins_per_peer,
                                  workers=LOGIN_WORKERS, make_call_soon=self._make_loop_calls)
        """The PBKDF2 checks: a bounded queue, fair across client addresses (bridge.logins)."""
        self._pending_logins: dict[EngineSocket, PendingLogin] = {}
        self.refused_publishes = 0
        """Publishes refused (unknown exchange or queue, a route's refusal):
        ``amqp_bridge_publishes_refused_total``."""
        self.unroutable_publishes = 0
        """Publishes no route (in topology mode: no queue at the 1.0 broker) took:
        ``amqp_bridge_facade_publishes_unroutable_total``."""
        self.client_errors: dict[int, int] = {}
        """Client connections and channels the façade closed for the client's error, by
        reply code: ``amqp_bridge_facade_client_errors_total``."""
        self.ended: dict[str, int] = {}
        """Client connections and sessions the bridge ended on its own (a client silent
        past its heartbeat, a session-layer error), by reason:
        ``amqp_bridge_facade_ended_total``."""
        self._client_warnings = WarnLimiter()
        """Refusals a client can provoke: one WARNING per client address every 10 s."""
        self.clients = {}
        self.exchange_subscriptions: dict[str, Any] = {}
        """Routes to an exchange of this listener (``to: {listener, exchange}``): what the
        temporary queues clients bind to that exchange consume (docs/semantics.md)."""
        self.acceptor: EngineListener | None = None
        self.address: tuple[str, int] | None = None
        self.stopping = False
        self.clients_closed = False
        """Set once the graceful stop closed the clients."""
        self.read_limit = 15.0
        """Seconds a graceful stop reads on from clients still sending (the bridge sets
        half its drain limit)."""
        self._read_until = 0.0
        self._quiet: dict[EngineSocket, int] = {}
        self._done_sending: set[EngineSocket] = set()
        """During a graceful stop: clients read until they had nothing more to send."""
        self.bursts = EndOfBurst.of(container)

    # -- what the protocol supplies ----------------------------------------------------------

    def _new_engine(self) -> Any:
        """The server-role engine of an accepted client."""
        raise NotImplementedError

    def _on_event(self, sock: EngineSocket, ev: Any) -> None:
        """One engine event of ``sock``."""
        raise NotImplementedError

    def _make_client(self, sock: EngineSocket) -> Any:
        """The client state of a new connection."""
        raise NotImplementedError

    def _routes(self) -> list[Any]:
        """Every route of the listener (a graceful stop waits for their ``pending``)."""
        raise NotImplementedError

    def _can_log_in(self) -> bool:
        """Whether any login can succeed (else a warning at start)."""
        raise NotImplementedError

    def _set_external_identity(self, engine: Any, identity: str | None) -> None:
        """Give the engine the TLS client certificate's identity (SASL EXTERNAL)."""
        raise NotImplementedError

    # -- setup ----------------------------------------------------------------------------

    def _register(self, table: dict[Any, Any], key: Any, route: Any, what: str,
                  role: str) -> None:
        other = table.get(key)
        if other is not None:
            raise ConfigError([f"route {route.name}: {what} of listener {self.name!r} is "
                               f"already the {role} of route {other.name}"])
        table[key] = route

    def add_exchange_subscription(self, route: Any, exchange: str) -> None:
        """``route`` feeds the temporary queues clients bind to ``exchange``."""
        self._register(self.exchange_subscriptions, exchange, route,
                       f"exchange {exchange!r}", "target")

    def start(self) -> None:
        """Start listening (after the routes were added)."""
        host, _, port = self.settings.bind.rpartition(":")
        host = host.strip("[]")
        try:
            self.acceptor = EngineListener(self.container, host, int(port),
                                            self._new_engine, self._on_event,
                                            self._on_accept, ssl_context=self.ssl_context,
                                            on_handshake=self._on_handshake,
                                            limits=accept_limits(self.settings),
                                            name=self.name)
        except OSError as exc:
            raise ConfigError([f"listeners.{self.name}.bind: cannot listen on "
                               f"{self.settings.bind}: {exc.strerror or exc}"]) from None
        self.address = self.acceptor.address
        self.access.announce(frozenset(self.settings.virtual_hosts)
                             if self.settings.virtual_hosts else None)
        if not self._can_log_in():
            log.warning("façade %s: no users and anonymous logins disabled: every login "
                        "will be refused", self.name, extra=self.log_fields("no_logins"))
        bound = host_port(*self.address)
        log.info("façade %s: listening on %s%s", self.name, bound,
                 " (TLS)" if self.ssl_context is not None else "",
                 extra=self.log_fields("listening", bind=bound,
                                       tls=self.ssl_context is not None,
                                       protocol=self.settings.protocol))

    @property
    def listening(self) -> bool:
        """True while the listener accepts connections."""
        return self.acceptor is not None and not self.stopping

    def log_fields(self, event: str, **more: Any) -> dict[str, Any]:
        """``extra`` fields of a log line about this listener (``peer=...`` in more)."""
        return {"event": event, "listener": self.name, **more}

    def _on_handshake(self, sock: EngineSocket) -> None:
        """TLS is up: a verified client certificate's CN is the identity SASL EXTERNAL gets."""
        assert sock.tls is not None
        cn = peer_common_name(sock.tls.obj.getpeercert())
        self._set_external_identity(sock.engine, cn)
        if cn is not None:
            log.info("façade %s: %s presented a client certificate for %r", self.name,
                     sock.peer, cn)

    shutdown_text = SHUTDOWN_TEXT
    """The close text of the clients at a graceful stop."""

    def _on_accept(self, sock: EngineSocket) -> None:
        if self.stopping:
            sock.engine.close(CONNECTION_FORCED, self.shutdown_text)
            sock.flush()
            return
        self.clients[sock] = self._make_client(sock)
        log.info("façade %s: connection from %s", self.name, sock.peer,
                 extra=self.log_fields("client_connected", peer=sock.peer))

    # -- shutdown -------------------------------------------------------------------------

    def pause(self) -> None:
        """Graceful stop: accept nothing new; read on from each client until it has sent
        what it had (then a publisher is read no more); close the clients once the
        publish routes drained."""
        if self.stopping:
            return
        self.stopping = True
        self._read_until = time.monotonic() + self.read_limit
        if self.acceptor is not None:
            self.acceptor.close()
        self.container.schedule(STOP_POLL, Timer(self.close_when_drained))

    def _publish_routes(self) -> list[Any]:
        """The routes clients publish to (a graceful stop forwards what they hold): the
        configured ones, the publishers to the default exchange, in topology mode the
        anonymous publisher."""
        subclass: Any = self  # both façades have these tables and a topology mode
        topology = [subclass.topology.publisher] if subclass.topology is not None else []
        return [*subclass.publish_routes.values(), *subclass.queue_publishers.values(),
                *topology]

    def made_routes(self) -> list[Any]:
        """Routes made on demand beside the configured ones (the publishers to the default
        exchange; in topology mode the anonymous publisher and the broker queues' consume
        routes): the bridge's metrics and graceful stop see them too."""
        subclass: Any = self  # both façades have this table and a topology mode
        topology = subclass.topology.routes() if subclass.topology is not None else []
        return [*subclass.queue_publishers.values(), *topology]

    def _note_senders(self) -> bool:
        """One look at the clients still being read during a graceful stop: those with
        nothing unread (twice in a row), and all once ``read_limit`` is over, are done
        sending. Returns whether every client is."""
        over = time.monotonic() >= self._read_until
        changed = False
        for sock, client in list(self.clients.items()):
            if sock in self._done_sending:
                continue
            idle = not sock.reading_paused and not client.holding and sock.unread == 0
            self._quiet[sock] = self._quiet.get(sock, 0) + 1 if idle else 0
            if over or self._quiet[sock] >= QUIET_POLLS:
                self._done_sending.add(sock)
                changed = True
        if changed:
            self.update_reading()
        return len(self._done_sending) >= len(self.clients)

    def close_when_drained(self) -> None:
        """Close the clients once each has sent what it had, no publish route has anything
        pending, and no consume route anything a client still read may settle; else look
        again shortly."""
        if self.clients_closed:
            return
        if not self._note_senders() or any(r.pending for r in self._publish_routes()) or (
                any(r.pending for r in self._routes())
                and any(not c.sock.reading_paused for c in self.clients.values())):
            self.container.schedule(STOP_POLL, Timer(self.close_when_drained))
            return
        self.close_clients()

    def broker_lost(self, connection: str) -> None:
        """The 1.0 connection behind this topology-mode listener dropped: what the broker
        held for the clients (non-durable queues and exchanges, bindings, consumers) may be
        gone with it, and a client would never learn that. As RabbitMQ and qpidd do when
        they stop, every client is closed with connection-forced, so that it reconnects
        and declares again; counted as ``broker_lost`` in ``ended``."""
        if self.stopping or not self.clients:
            return
        count = len(self.clients)
        self.ended["broker_lost"] = self.ended.get("broker_lost", 0) + count
        log.warning("façade %s: closing %d client connection(s): the AMQP 1.0 connection %s "
                    "behind the topology mode dropped", self.name, count, connection,
                    extra=self.log_fields("clients_closed_broker_lost", clients=count,
                                          connection=connection))
        for sock in list(self.clients):
            sock.engine.close(CONNECTION_FORCED, BROKER_LOST_TEXT)
            sock.flush()

    def close_clients(self) -> None:
        """End every client with connection.close connection-forced (the drain is over or
        its limit reached); each is read again for its close-ok only."""
        self.clients_closed = True
        for sock in list(self.clients):
            sock.engine.close(CONNECTION_FORCED, self.shutdown_text)
            sock.flush()
        self.update_reading()
        self.logins.close()
        self._pending_logins.clear()
        if self._loop_calls is not None:
            self._loop_calls.close()

    # -- logins ---------------------------------------------------------------------------

    def check_login(self, sock: EngineSocket, user: str, password: str) -> None:
        """Answer a PLAIN login: at once when that is cheap and tells nothing (a listener of
        plain passwords, a returning client), else after a PBKDF2 check on a worker thread
        (about 0.1 s), queued fairly per client address — or refused at once when that
        address (or the listener) has too many logins waiting (bridge/logins.py)."""
        quick = self.passwords.quick_check(user, password)
        if quick is not None:
            answer_login(sock.engine, user, quick)
            return

        def answer(ok: bool) -> None:  # on the loop, the client still there
            self._pending_logins.pop(sock, None)
            sock.call(lambda engine: answer_login(engine, user, ok))

        login, refusal = self.logins.submit(
            sock.peer, user, password, answer,
            gone=lambda: sock.closed or sock.engine.closed)
        if refusal is not None:
            sock.engine.finish_authentication(None, refusal)
        elif login.state in ("waiting", "running"):
            self._pending_logins[sock] = login

    def count_client_error(self, event: str, peer: str, code: int, what: str,
                           error: str, **fields: Any) -> None:
        """A client answered with an error for its own fault (a connection or channel
        closed, a command refused): counted by ``code`` (:attr:`client_errors`) and
        logged as :meth:`client_warning`."""
        self.client_errors[code] = self.client_errors.get(code, 0) + 1
        self.client_warning(event, peer, what, error, code=code, **fields)

    def count_ended(self, event: str, peer: str, reason: str, what: str, error: str) -> None:
        """The bridge ended a client's connection or session on its own: counted by
        ``reason`` (:attr:`ended`) and logged as :meth:`client_warning` (a WARNING at
        most once per client address and ``event`` every 10 s)."""
        self.ended[reason] = self.ended.get(reason, 0) + 1
        self.client_warning(event, peer, what, error, reason=reason)

    def client_warning(self, event: str, peer: str, what: str, error: str,
                       **fields: Any) -> None:
        """Something a client can provoke at will (a refused login, TLS handshake or
        publish): a WARNING line at most once per client address and kind every 10 s
        (saying how many it held back), the others at INFO (DEBUG for the kinds of
        :data:`QUIET_WHEN_HELD`) — a hostile client cannot flood the warnings."""
        held = self._client_warnings.allow((event, peer.rpartition(":")[0]))
        extra = self.log_fields(event, peer=peer, error=error, suppressed=held or 0, **fields)
        if held is None:
            log.log(logging.DEBUG if event in QUIET_WHEN_HELD else logging.INFO,
                    "façade %s: %s: %s: %s", self.name, peer, what, error, extra=extra)
        else:
            log.warning("façade %s: %s: %s: %s%s", self.name, peer, what, error,
                        f" ({held} more from that address since the last such warning)"
                        if held else "", extra=extra)

    def _make_loop_calls(self) -> Callable[[Callable[[], None]], None]:
        self._loop_calls = LoopCalls(self.container)
        return self._loop_calls.call_soon

    def client_closed(self, sock: EngineSocket, code: int | None, text: str) -> None:
        """``sock``'s connection ended: forget it, drop a login of it still waiting, log
        why (refused logins and TLS handshakes rate-limited)."""
        self.clients.pop(sock, None)
        self._done_sending.discard(sock)
        self._quiet.pop(sock, None)
        self.bursts.discard(sock.flush)
        login = self._pending_logins.pop(sock, None)
        if login is not None:
            self.logins.client_gone(login)
        if sock.tls_error is not None:
            self.client_warning("tls_refused", sock.peer, "TLS handshake failed",
                                describe_ssl_error(sock.tls_error))
        elif sock.engine.auth_error is not None and not _busy_refusal(sock.engine.auth_error):
            self.client_warning("login_refused", sock.peer, "login refused",
                                str(sock.engine.auth_error))
        else:
            reason = text or f"code {code}"
            if sock.error:
                reason += f" ({sock.error})"
            log.info("façade %s: %s closed: %s", self.name, sock.peer, reason,
                     extra=self.log_fields("client_closed", peer=sock.peer, error=reason))

    # -- output and throttling ------------------------------------------------------------

    def flush_later(self, sock: EngineSocket) -> None:
        """Write what ``sock``'s engine produced, once the current burst of events is done
        (:class:`~bridge.runtime.EndOfBurst`: one write per client per burst)."""
        self.bursts.flush_soon(sock.flush)

    def update_reading(self) -> None:
        """Pause reading on every client publishing to a throttled route, or holding
        publishes until a bind is answered; resume the others."""
        for client in self.clients.values():
            if self.clients_closed:  # for the close-ok (the rest is discarded)
                paused = False
            elif client.sock in self._done_sending:  # a stop: what it sent is read
                paused = bool(client.publishes_to or client.holding)
            else:
                paused = bool(client.holding) or any(r.throttled for r in client.publishes_to)
            client.sock.pause_reading(paused)

    def publish_refused(self, peer: str, reason: str, route: str | None = None) -> None:
        """A publish was refused: count it, and log it (at most one WARNING line per client
        address every 10 s)."""
        self.refused_publishes += 1
        fields = {"route": route} if route is not None else {}
        self.client_warning("publish_refused", peer, "publish refused", reason, **fields)

    @property
    def local_deliveries(self) -> int:
        """Publishes delivered to a consumer of this listener without the trip through
        the 1.0 broker: ``amqp_bridge_facade_local_deliveries_total`` (only a 0-9-1
        topology-mode listener makes them)."""
        return 0

    def publish_unroutable(self, peer: str, exchange: str, routing_key: str,
                           outcome: str) -> None:
        """A publish no route (in topology mode: no queue at the 1.0 broker) took, then
        ``outcome`` (returned, dropped) as the legacy broker does: count it, and log it
        (at most one WARNING line per client address every 10 s, the rest at DEBUG)."""
        self.unroutable_publishes += 1
        subclass: Any = self  # both façades have a topology mode
        where = "no queue at the AMQP 1.0 broker" if subclass.topology is not None \
            else "no route"
        self.client_warning("publish_unroutable", peer, "publish unroutable",
                            f"{where} of exchange '{exchange}' takes routing key "
                            f"'{routing_key}' ({outcome})",
                            exchange=exchange, routing_key=routing_key)

    # -- fault containment ----------------------------------------------------------------

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in the listener's own work is logged (its shutdown poll rescheduled)."""
        names = {"listener": self.name}
        if method == "close_when_drained":
            return Part("facade_listener", f"façade listener {self.name}", names,
                        "shutdown poll rescheduled",
                        lambda reason: self._reschedule_close())
        return Part("facade_listener", f"façade listener {self.name}", names, "logged")

    def _reschedule_close(self) -> None:
        self.container.schedule(STOP_POLL, Timer(self.close_when_drained))

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


def accept_limits(settings: Listener) -> AcceptLimits:
    """The runtime's accept limits of a listener's settings.

    A client may leave at most the larger of ``max_unread_per_connection`` and two of its
    largest messages unread: deliveries stop at a few MiB unsent (the façade withholds
    credit from a client that does not read), so only a client that keeps asking
    without reading the answers gets there."""
    return AcceptLimits(handshake_timeout=settings.handshake_timeout,
                        max_connections=settings.max_connections,
                        max_connections_per_peer=settings.max_connections_per_peer,
                        max_buffered=settings.max_buffered,
                        max_unsent=max(settings.max_unread_per_connection,
                                       2 * settings.max_message_size))


def answer_login(engine: Any, user: str, ok: bool) -> None:
    """Let ``user`` in, or refuse the login (the engine tells the client as its protocol
    says, the reason logged)."""
    engine.finish_authentication(user if ok else None, f"bad credentials for {user!r}")


__all__ = ["BROKER_LOST_TEXT", "CONNECTION_FORCED", "ListenerCore", "accept_limits", "answer_login"]
