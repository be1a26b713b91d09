"""The bridge process: one proton Container running every connection and route.

:class:`Bridge` is the container's handler.  At start it opens the AMQP 1.0
connections (proton, with its reconnect/failover), the AMQP 0-10 client
connections (our engine, hosted as selectables, see :mod:`bridge.runtime`) and
builds a route runtime per configured route (:mod:`bridge.routes`; each a
:class:`~bridge.routes.RouteRuntime`).  Everything runs on the container's single thread.

A permanent fault (a certificate or a login refused on every URL of a connection,
see :mod:`bridge.security.tls`) stops the bridge gracefully; :func:`run` then returns exit
status 3 (``docs/operations.md``, "Security").
"""

from __future__ import annotations

import functools
import logging
import signal
import time
from typing import Any

from proton import Url
from proton.handlers import MessagingHandler
from proton.reactor import Container

from . import faultinject
from .amqp10.connection import Amqp10ConnectionHandler, ReconnectDelays
from .amqp10.pool import ConnectionPool
from .config import (
    BridgeConfig,
    ConfigError,
    Connection,
    DeadLetter,
    ListenerTopology,
    Route,
    config_identities,
    config_secrets,
)
from .facade import (
    Consume010,
    Consume091,
    Facade,
    Facade091,
    FacadeConsume,
    FacadePublish,
    Publish010,
    Publish091,
)
from .legacy.amqp010 import LegacyConnection
from .legacy.amqp091 import Amqp091Connection
from .ops.logs import LastSeen, add_identities, add_secrets
from .ops.metrics import MetricsServer
from .routes import Amqp10ToLegacy, LegacyToAmqp10, RouteRuntime
from .runtime import EngineSocket, Timer, host_port, reactor
from .runtime.containment import Part, faults_of
from .runtime.selector import raise_descriptor_limit
from .security.tls import PERMANENT_EXIT_CODE, proton_domain
from .taps import BridgeTaps
from .topology import Topology
from .topology.rabbitmq091 import RabbitMQ091Topology

log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL = 0.1
"""Seconds between checks for a stop request (and, later, metrics refresh)."""
READINESS_CHECKS_PER_SECOND = 1000
"""Routes whose readiness the housekeeping looks at per second, at most (one look is a
route's ``waiting_for()``): every tick with up to 100 routes, less often with more (a
topology-mode listener makes one per queue its clients consume: thousands of clients,
thousands of routes, each looked at ten times a second cost a few percent of a core for
log lines). ``/readyz`` asks the routes itself, at once."""


def readiness_interval(routes: int) -> float:
    """Seconds between looks at the readiness of ``routes`` routes (at least the
    housekeeping's interval)."""
    return max(HOUSEKEEPING_INTERVAL, routes / READINESS_CHECKS_PER_SECOND)


DEAD_LETTER_GRACE = 5.0
"""Seconds the drain limit is extended for what it sends to dead-letter addresses."""
CLOSE_GRACE = 1.0
"""Seconds between closing the connections and ending the event loop."""
STATS_INTERVAL = 60.0
"""Seconds between route statistics lines in the log (only when something changed)."""


class Bridge(MessagingHandler):  # type: ignore[misc]
    """Runs a :class:`~bridge.config.BridgeConfig` inside a proton Container."""

    def __init__(self, config: BridgeConfig) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=False)
        facade_problems = [
            f"route {r.name}: a façade (listener) route needs an AMQP 1.0 connection on its "
            f"other side" for r in config.routes
            if (r.source.listener or r.target.listener)
            and config.protocol_of(r.target if r.source.listener else r.source) != "amqp1.0"]
        if facade_problems:
            raise ConfigError(facade_problems)
        self.config = config
        self.container: Container | None = None
        self.amqp10: dict[str, Any] = {}
        self.amqp10_handlers: dict[str, Amqp10ConnectionHandler] = {}
        """Each configured 1.0 connection's first connection's handler."""
        self.amqp10_pools: dict[str, ConnectionPool] = {}
        """Each configured 1.0 connection's pool (:mod:`bridge.amqp10.pool`)."""
        self.legacy: dict[str, LegacyConnection | Amqp091Connection] = {}
        self.exclusive_held: dict[str, dict[str, str]] = {}
        """The owners of the façades' exclusive queues, by the connection that declares
        them (``declare_via``, else the 1.0 one): one table for all the topology-mode
        listeners on it, whose clients the broker cannot tell apart."""
        self.routes: list[RouteRuntime] = []
        self.stop_requested = False
        self.stopping_since: float | None = None
        self._stop_deadline: float | None = None
        """Set at the drain limit: when to stop waiting for what was sent to dead-letter
        addresses then."""
        self.shutdown_timeout = config.shutdown.drain_timeout
        self._stats_due = time.monotonic() + STATS_INTERVAL
        self._last_stats = LastSeen()
        """Each route's statistics line as last logged."""
        self.fatal_error: str | None = None
        """The permanent fault that stopped the bridge, if one did."""
        self._ready = LastSeen()
        """Each route's readiness as last logged."""
        self._readiness_due = 0.0
        """When the routes' readiness is next looked at (monotonic; :func:`readiness_interval`)."""
        self.facades: dict[str, Any] = {}
        self.taps: BridgeTaps | None = None

    def on_start(self, event: Any) -> None:
        container = event.container
        self.container = container
        self.schedule_housekeeping(HOUSEKEEPING_INTERVAL)
        self.facades = {
            name: (Facade091 if listener.protocol == "amqp0-9-1" else Facade)(
                container, name, listener)
            for name, listener in self.config.listeners.items()}
        for facade in self.facades.values():  # a stop reads on for half its drain limit
            facade.read_limit = self.shutdown_timeout / 2
        for name, conn in self.config.connections.items():
            if conn.protocol == "amqp1.0":
                pool = ConnectionPool(container, name, conn.max_connections,
                                      functools.partial(self._connect_amqp10, container,
                                                        conn=conn))
                self.amqp10_pools[name] = pool
                self.amqp10_handlers[name] = pool.first
                self.amqp10[name] = pool.connection
            elif conn.protocol == "amqp0-9-1":
                self.legacy[name] = Amqp091Connection(container, name, conn,
                                                      on_fatal=self.fatal)
            else:
                self.legacy[name] = LegacyConnection(container, name, conn, on_fatal=self.fatal)
        for name, listener in self.config.listeners.items():
            if listener.topology is not None:
                self._enable_topology(container, self.facades[name], listener.topology)
        for route in self.config.routes:
            self.routes.append(self._build_route(container, route))
        self._open_taps(container)
        for legacy in self.legacy.values():
            legacy.start()
        for facade in self.facades.values():
            facade.start()

    def _connect_amqp10(self, container: Container, name: str, conn: Connection) -> Any:
        handler = Amqp10ConnectionHandler(name, conn, self.fatal)
        security: dict[str, Any] = {"allowed_mechs": " ".join(conn.mechanisms)}
        if conn.tls is not None or any(u.startswith("amqps:") for u in [conn.url, *conn.failover]):
            security["ssl_domain"] = proton_domain(conn.tls)
            if conn.tls is not None and conn.tls.server_name:
                security["sni"] = conn.tls.server_name
        return container.connect(
            url=conn.url, urls=[conn.url, *conn.failover], handler=handler,
            heartbeat=conn.heartbeat or None,
            reconnect=ReconnectDelays(conn.reconnect,  # type: ignore[arg-type]  # any iterable
                                       handler.reconnect_scheduled), **security)

    def _enable_topology(self, container: Container, facade: Any,
                         settings: ListenerTopology) -> None:
        """Give a topology-mode listener its broker kind's backend (docs/topology.md)."""
        amqp10 = self.amqp10[settings.connection]
        via = self.legacy[settings.declare_via] if settings.declare_via is not None else None
        backend = topology_backend(container, amqp10, settings, name=facade.name,
                                   declare_via=via)
        login_user = self.config.connections[settings.connection].login_user
        held = self.exclusive_held.setdefault(settings.declare_via or settings.connection, {})
        facade.enable_topology(backend, amqp10, login_user, held)
        pool = self.amqp10_pools[settings.connection]
        # what the broker held for the clients may be gone with the connection (with any
        # connection of its pool: a client's links and publishers may be on several)
        pool.when_lost(facade.broker_lost)

    def fatal(self, message: str) -> None:
        """A connection failed permanently (already logged as an ERROR): stop gracefully;
        :func:`run` returns exit status 3."""
        if self.fatal_error is None:
            self.fatal_error = message
            log.info("stopping after a permanent fault (exit status %d)", PERMANENT_EXIT_CODE,
                     extra={"event": "stopping_after_fault"})
        self.request_stop()

    def _dead_letter(self, dl: DeadLetter | None) -> tuple[Any, str] | None:
        if dl is None:
            return None
        if self.config.connections[dl.connection].protocol != "amqp1.0" or dl.address is None:
            raise ConfigError([f"dead_letter to {dl.connection}: only AMQP 1.0 addresses are "
                               f"supported as dead-letter targets so far"])
        return self.amqp10[dl.connection], dl.address

    def _build_route(self, container: Container, route: Route) -> RouteRuntime:
        src, dst = route.source, route.target
        dead_letter = self._dead_letter(route.dead_letter)
        if src.listener is not None and dst.connection in self.amqp10:
            facade = self.facades[src.listener]
            publish = Publish091 if isinstance(facade, Facade091) else Publish010
            return publish(container, route, facade, self.amqp10[dst.connection], dead_letter)
        if dst.listener is not None and src.connection in self.amqp10:
            facade = self.facades[dst.listener]
            consume = Consume091 if isinstance(facade, Facade091) else Consume010
            return consume(container, route, facade, self.amqp10[src.connection], dead_letter)
        if src.connection in self.legacy and dst.connection in self.amqp10:
            return LegacyToAmqp10(container, route, self.legacy[src.connection],
                                  self.amqp10[dst.connection], dead_letter)
        if src.connection in self.amqp10 and dst.connection in self.legacy:
            return Amqp10ToLegacy(container, route, self.amqp10[src.connection],
                                  self.legacy[dst.connection], dead_letter)
        raise ConfigError([f"route {route.name}: {self.config.protocol_of(src)} -> "
                           f"{self.config.protocol_of(dst)} routes are not supported"])

    # -- observed by the metrics server (from its own thread: reads only) -----------------

    def runtimes(self) -> list[RouteRuntime]:
        """Every route runtime: the configured routes (built at start) and the façades'
        publishers to the default exchange (made when first used)."""
        return [*self.routes, *(r for f in list(self.facades.values()) for r in f.made_routes())]

    def observed_routes(self) -> list[RouteRuntime]:
        """The routes (empty until they are built at start)."""
        return self.runtimes()

    def _amqp10_members(self) -> list[Amqp10ConnectionHandler]:
        """Every open 1.0 connection's handler: each pool's first and extra ones (named
        ``NAME#2``…)."""
        return [*list(self.amqp10_handlers.values()),
                *(h for pool in list(self.amqp10_pools.values()) for h in pool.members[1:])]

    def observed_connections(self) -> list[tuple[str, str, bool, int]]:
        """``(name, protocol, up, reconnects)`` per connection (a 1.0 pool's extra
        connections too)."""
        out = [(h.name, "amqp1.0", h.up, h.reconnects) for h in self._amqp10_members()]
        out += [(name, c.protocol, c.open, c.reconnects) for name, c in list(self.legacy.items())]
        return out

    def observed_logins(self) -> list[tuple[str, dict[str, int], int]]:
        """``(name, refused logins by reason, abandoned logins)`` per façade listener."""
        return [(name, dict(f.logins.refused), f.logins.abandoned)
                for name, f in list(self.facades.items())]

    def observed_faults(self) -> tuple[dict[str, int], dict[str, str]]:
        """Contained faults by kind, and the parts still down because of one
        (:mod:`bridge.runtime.containment`)."""
        return faults_of(self.container).snapshot()

    def observed_listeners(self) -> list[tuple[str, int, int, int, int]]:
        """``(name, connected clients, publishes refused, publishes unroutable, publishes
        delivered locally)`` per façade listener."""
        return [(name, len(f.clients), f.refused_publishes, f.unroutable_publishes,
                 f.local_deliveries) for name, f in list(self.facades.items())]

    def observed_client_errors(self) -> list[tuple[str, dict[int, int]]]:
        """``(name, client closes for the client's error by reply code)`` per listener."""
        return [(name, dict(f.client_errors)) for name, f in list(self.facades.items())]

    def observed_access_refusals(self) -> list[tuple[str, dict[tuple[str, str], int]]]:
        """``(name, refusals by (operation, permission))`` per façade listener."""
        return [(name, dict(f.access.refused)) for name, f in list(self.facades.items())]

    def observed_links(self) -> list[tuple[str, int]]:
        """``(name, links attached or attaching)`` per AMQP 1.0 connection."""
        return [(h.name, h.links_open) for h in self._amqp10_members()]

    def observed_begins_waiting(self) -> list[tuple[str, int]]:
        """``(name, session begins held back)`` per AMQP 1.0 connection (links waiting
        for the first connection's first open to be placed count on it)."""
        pools = {pool.first: pool.waiting for pool in list(self.amqp10_pools.values())}
        return [(h.name, h.begins_waiting + pools.get(h, 0)) for h in self._amqp10_members()]

    def observed_pools(self) -> list[tuple[str, int, int]]:
        """``(name, connections open, extra connections opened in all)`` per configured
        AMQP 1.0 connection."""
        return [(name, len(pool.members), pool.opened)
                for name, pool in list(self.amqp10_pools.items())]

    def observed_unanswered(self) -> list[tuple[str, dict[str, int]]]:
        """``(name, what -> count)`` per AMQP 1.0 connection: link attaches and session
        ends the peer left unanswered past their bound."""
        return [(h.name, dict(h.unanswered)) for h in self._amqp10_members()]

    def observed_queue_declares(self) -> list[tuple[str, dict[str, int]]]:
        """``(name, queue declares by who answered)`` per topology-mode 0-9-1 listener."""
        return [(name, dict(f.topology.declares.answered_by))
                for name, f in list(self.facades.items())
                if isinstance(f, Facade091) and f.topology is not None]

    def observed_ended(self) -> list[tuple[str, dict[str, int]]]:
        """``(name, client connections and sessions the bridge ended, by reason)`` per
        façade listener."""
        return [(name, dict(f.ended)) for name, f in list(self.facades.items())]

    def observed_legacy_sessions(self) -> list[tuple[str, int]]:
        """``(name, sessions on the current connection's channels)`` per 0-10 connection;
        ``(name, open channels)`` per 0-9-1 connection."""
        out = []
        for name, conn in list(self.legacy.items()):
            sock = conn.socket
            if sock is None:
                out.append((name, 0))
            elif isinstance(conn, Amqp091Connection):
                out.append((name, len(sock.engine.channels)))
            else:
                out.append((name, len(sock.engine.sessions)))
        return out

    def observed_facades(self) -> list[tuple[str, int, int]]:
        """``(name, client sessions, subscriptions)`` per façade listener."""
        return [(name, len(f.sessions),
                 sum(len(route.subscriptions) for route in [
                     *list(f.consume_routes.values()), *f.made_routes()]
                     if isinstance(route, FacadeConsume)))
                for name, f in list(self.facades.items())]

    def observed_sockets_in_memory(self) -> int:
        """0-10 and 0-9-1 connections (legacy and façade clients) not freed yet."""
        return len(EngineSocket.in_memory)

    def observed_listener_limits(self) -> list[tuple[str, Any]]:
        """``(name, ListenerStats)`` per started façade listener (refusals, handshake
        timeouts, failed accepts: :class:`~bridge.runtime.ListenerStats`)."""
        return [(name, f.acceptor.stats) for name, f in list(self.facades.items())
                if f.acceptor is not None]

    # -- archive taps ----------------------------------------------------------------------

    def _open_taps(self, container: Container) -> None:
        """Give each route with a ``tap`` its archive tap (docs/archive.md)."""
        for index, (route, runtime) in enumerate(zip(self.config.routes, self.routes,
                                                     strict=True)):
            if route.tap is not None:
                if self.taps is None:
                    self.taps = BridgeTaps(container)
                runtime.tap = self.taps.open(index, route, runtime.on_tap_ready)

    def close_taps(self) -> None:
        """Write what the taps recorded into closed files (idempotent)."""
        if self.taps is not None:
            self.taps.close()

    def request_stop(self) -> None:
        """Ask for a graceful stop (safe from a signal handler: only sets a flag)."""
        if self.stop_requested and self.container is not None:
            self.shutdown_timeout = 0.0  # a second request: stop now
            self._stop_deadline = 0.0
        self.stop_requested = True

    def schedule_housekeeping(self, delay: float) -> None:
        """Run the housekeeping (stop requests, statistics, readiness) in ``delay`` seconds
        (also how fault containment reschedules it after a fault)."""
        assert self.container is not None
        self.container.schedule(delay, Timer(self._housekeeping))

    def _housekeeping(self) -> None:
        # (its name is the timer's in logs and in fault injection: timer:_housekeeping)
        assert self.container is not None
        now = time.monotonic()
        if now >= self._stats_due:
            self._stats_due = now + STATS_INTERVAL
            self._log_stats(only_changed=True)
        if now >= self._readiness_due:
            self._readiness_due = now + readiness_interval(len(self._ready))
            self._log_readiness()
        if self.stop_requested:
            if self.stopping_since is None:
                self.stopping_since = time.monotonic()
                pending = sum(r.pending for r in self.runtimes())
                log.info("stopping: draining %d in-flight messages", pending,
                         extra={"event": "stopping", "in_flight": pending})
                for route in self.runtimes():
                    route.pause()
            drained = all(r.pending == 0 for r in self.runtimes())
            now = time.monotonic()
            if not drained and self._stop_deadline is None \
                    and now - self.stopping_since >= self.shutdown_timeout:
                # the drain limit: façade publishes left go to dead-letter addresses first
                diverted = sum(r.dead_letter_unforwarded() for r in self.runtimes()
                               if isinstance(r, FacadePublish))
                self._stop_deadline = now + (DEAD_LETTER_GRACE if diverted else 0.0)
            if drained or (self._stop_deadline is not None and now >= self._stop_deadline):
                if not drained:
                    self._drain_limit_reached()
                for facade in self.facades.values():
                    if not facade.clients_closed:
                        facade.close_clients()
                self._close_all()
                return
        self.schedule_housekeeping(HOUSEKEEPING_INTERVAL)

    def _drain_limit_reached(self) -> None:
        """The graceful stop's drain limit is over with messages still pending: façade
        publishes are abandoned (counted, logged at ERROR: nobody will send them again);
        what a broker source gave the bridge is left to that broker, which redelivers it."""
        for route in self.runtimes():
            if isinstance(route, FacadePublish):
                route.abandon()
            elif route.pending:
                source = (f"the broker of connection {route.route.source.connection}"
                          if isinstance(route, LegacyToAmqp10) else "the AMQP 1.0 broker")
                log.warning("route %s: stopping with %d messages in flight: %s redelivers "
                            "them", route.name, route.pending, source,
                            extra={"event": "stop_timeout", "route": route.name,
                                   "in_flight": route.pending})

    def _log_readiness(self) -> None:
        """One line whenever a route becomes ready or stops being ready."""
        waiting_for = {route.name: route.waiting_for() for route in self.runtimes()}
        for name, ready in self._ready.changed(
                (name, not waiting) for name, waiting in waiting_for.items()):
            if not ready:
                waiting = ", ".join(waiting_for[name])
                log.info("route %s: not ready, waiting for %s", name, waiting,
                         extra={"event": "route_not_ready", "route": name,
                                "waiting_for": waiting})
            else:
                log.info("route %s: ready", name,
                         extra={"event": "route_ready", "route": name})

    def _log_stats(self, *, only_changed: bool) -> None:
        counters = {route.name: route.stats.counters() for route in self.runtimes()}
        for name, _line in self._last_stats.changed(
                ((name, " ".join(f"{k}={v}" for k, v in values.items()))
                 for name, values in counters.items()), all_of_them=not only_changed):
            log.info("route %s: statistics", name,
                     extra={"event": "stats", "route": name, **counters[name]})

    def _close_all(self) -> None:
        assert self.container is not None
        self._log_stats(only_changed=False)
        for legacy in self.legacy.values():
            legacy.stop()
        for pool in self.amqp10_pools.values():
            pool.close()
        # let the close frames go out, then end the loop whatever peers do; the taps are
        # closed last, once no outcome can come any more
        self.container.schedule(CLOSE_GRACE, Timer(self.stop_loop))

    def stop_loop(self) -> None:
        """End the event loop (the close grace is over); the taps' files are closed first."""
        assert self.container is not None
        self.close_taps()
        self.container.stop()

    def fault_part(self, method: str, event: Any) -> Part | None:
        """The bridge takes the blame only for its own timers (housekeeping, stop);
        the events it dispatches are other parts' work."""
        if method == "_housekeeping":
            return Part("bridge", "the bridge's housekeeping", {}, "housekeeping rescheduled",
                        lambda reason: self.schedule_housekeeping(0.1))
        if method == "stop_loop":
            container = self.container
            return Part("bridge", "the bridge's stop", {}, "stopping the loop",
                        lambda reason: container.stop() if container is not None else None)
        return None


def topology_backend(container: Container, amqp10: Any, settings: ListenerTopology, *,
                     name: str, declare_via: Any = None) -> Topology:
    """The :class:`~bridge.topology.Topology` backend of ``settings.broker`` on the 1.0
    connection ``amqp10`` (the one the listener's links use: an exclusive queue is its
    declaring connection's at the broker), or declaring over the 0-9-1 connection
    ``declare_via`` (``settings.declare_via``; RabbitMQ 3.x's AMQP 1.0 cannot declare)."""
    if declare_via is not None:
        return RabbitMQ091Topology(container, declare_via, name=name,
                                   request_timeout=settings.request_timeout,
                                   address_style="v1" if settings.broker == "rabbitmq3"
                                   else "v2")
    if settings.broker == "rabbitmq4":
        try:
            from .topology.rabbitmq4 import RabbitMQ4Topology
        except ImportError as exc:  # (not merged yet into this build)
            raise ConfigError([f"listeners.{name}.topology.broker: rabbitmq4 is not "
                               f"available in this build ({exc})"]) from None
        return RabbitMQ4Topology(container, amqp10, name=name,  # type: ignore[no-any-return]
                                 request_timeout=settings.request_timeout)
    if settings.broker == "qpidd":
        from .topology.qpidd import QpiddTopology
        return QpiddTopology(container, amqp10, name=name,
                             request_timeout=settings.request_timeout)
    raise ConfigError([f"listeners.{name}.topology.broker: unknown broker kind "
                       f"{settings.broker!r}"])


def run(config: BridgeConfig) -> int:
    """Run the bridge until SIGTERM or SIGINT (exit status 0) or a permanent fault (3),
    with the metrics server if one is configured."""
    add_secrets(config_secrets(config))  # no log line shows them from here on
    add_identities(config_identities(config))  # user names do show, even guest:guest
    descriptors = raise_descriptor_limit()
    log.info("open descriptors: up to %d", descriptors,
             extra={"event": "descriptor_limit", "limit": descriptors})
    bridge = Bridge(config)
    container = reactor.container(bridge)

    def stop(signum: int, frame: Any) -> None:
        log.info("signal %d: stopping", signum, extra={"event": "signal", "signal": signum})
        bridge.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    faultinject.install_from_environment()  # tests only: nothing unless its variable is set
    server = start_metrics(config, bridge)
    reactor.tune_gc(container)
    try:
        container.run()
    finally:
        bridge.close_taps()  # after a failure too: keep what was recorded
        if server is not None:
            server.stop()
    return PERMANENT_EXIT_CODE if bridge.fatal_error is not None else 0


def start_metrics(config: BridgeConfig, bridge: Bridge) -> MetricsServer | None:
    """Start the HTTP server for ``/metrics``, ``/healthz``, ``/readyz`` if configured."""
    if config.metrics is None:
        return None
    host, _, port = config.metrics.bind.rpartition(":")
    try:
        server = MetricsServer(bridge, host.strip("[]"), int(port)).start()
    except OSError as exc:
        raise ConfigError([f"metrics.bind: cannot listen on {config.metrics.bind}: "
                           f"{exc.strerror or exc}"]) from None
    address = host_port(*server.address)
    log.info("metrics: listening on %s", address,
             extra={"event": "metrics_listening", "address": address})
    return server


__all__ = ["Bridge", "Url", "run"]
