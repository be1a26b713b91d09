"""The bridge process: one proton Container running every connection and route.

:class:`Bridge` is the container's handler.  At start it opens the AMQP 1.0
connections (proton, with its reconnect/failover), the AMQP 0-10 client
connections (our engine, hosted as selectables, see :mod:`bridge.hosting`) and
builds a route runtime per configured route (:mod:`bridge.routes`).  Everything
runs on the container's single thread.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Iterator
from typing import Any

from proton import Endpoint, Handler, Url
from proton.handlers import MessagingHandler
from proton.reactor import Container

from .config import BridgeConfig, ConfigError, Connection, DeadLetter, Reconnect, Route
from .legacy import LegacyConnection, _Timer, backoff
from .routes import Amqp10ToLegacy, LegacyToAmqp10
from .taps import BridgeTaps

log = logging.getLogger(__name__)

HOUSEKEEPING_INTERVAL = 0.1
"""Seconds between checks for a stop request (and, later, metrics refresh)."""
SHUTDOWN_TIMEOUT = 10.0
"""Seconds a graceful stop waits for in-flight outcomes."""
CLOSE_GRACE = 1.0
"""Seconds between closing the connections and ending the event loop."""
STATS_INTERVAL = 60.0
"""Seconds between route statistics lines in the log (only when something changed)."""


class _Amqp10ConnectionHandler(Handler):  # type: ignore[misc]
    """Logs state changes of one AMQP 1.0 connection; tells its links when the transport drops.

    Unlike proton's MessagingHandler it never closes the connection when the peer
    closes it with an error, so proton's reconnect keeps trying, as a bridge must.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.up = False
        self.watchers: list[Any] = []
        """Links on this connection (:class:`bridge.routes.Amqp10Link`)."""

    def on_connection_remote_open(self, event: Any) -> None:
        self.up = True
        log.info("amqp1.0 %s: open", self.name)

    def on_connection_remote_close(self, event: Any) -> None:
        if event.connection.state & Endpoint.LOCAL_ACTIVE:
            # keep the connection endpoint open and drop the transport: proton reconnects
            log.warning("amqp1.0 %s: closed by the peer: %s", self.name,
                        event.connection.remote_condition)
            transport = event.transport
            if transport is not None:
                transport.close_tail()
                transport.close_head()

    def on_transport_error(self, event: Any) -> None:
        log.warning("amqp1.0 %s: %s", self.name, event.transport.condition)

    def on_transport_tail_closed(self, event: Any) -> None:
        self._lost()

    def on_transport_closed(self, event: Any) -> None:
        self._lost()

    def _lost(self) -> None:
        if self.up:
            log.info("amqp1.0 %s: disconnected", self.name)
        self.up = False
        for link in list(self.watchers):
            link.on_disconnected()


class _ReconnectDelays:
    """Proton's reconnect schedule: at once, then exponential backoff with jitter.

    Proton iterates it afresh after every successful open, so each outage starts
    from the initial delay again.
    """

    def __init__(self, settings: Reconnect) -> None:
        self.settings = settings

    def __iter__(self) -> Iterator[float]:
        yield 0.0
        failures = 0
        while True:
            yield backoff(self.settings, failures)
            failures += 1


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
        self.amqp10_handlers: dict[str, _Amqp10ConnectionHandler] = {}
        self.legacy: dict[str, LegacyConnection] = {}
        self.routes: list[Any] = []
        self.stop_requested = False
        self.stopping_since: float | None = None
        self.shutdown_timeout = SHUTDOWN_TIMEOUT
        self._stats_due = time.monotonic() + STATS_INTERVAL
        self._last_stats: dict[str, str] = {}
        self.taps: BridgeTaps | None = None

    def on_start(self, event: Any) -> None:
        from .facade import Facade

        container = event.container
        self.container = container
        container.schedule(HOUSEKEEPING_INTERVAL, _Timer(self._housekeeping))
        self.facades: dict[str, Facade] = {
            name: Facade(container, name, listener)
            for name, listener in self.config.listeners.items()}
        for name, conn in self.config.connections.items():
            if conn.protocol == "amqp1.0":
                self.amqp10[name] = self._connect_amqp10(container, name, conn)
            else:
                self.legacy[name] = LegacyConnection(container, name, conn)
        for route in self.config.routes:
            self.routes.append(self._build_route(container, route))
        self._open_taps(container)
        for legacy in self.legacy.values():
            legacy.start()
        for facade in self.facades.values():
            facade.start()

    def _connect_amqp10(self, container: Container, name: str, conn: Connection) -> Any:
        handler = _Amqp10ConnectionHandler(name)
        self.amqp10_handlers[name] = handler
        return container.connect(
            url=conn.url, urls=[conn.url, *conn.failover], handler=handler,
            heartbeat=conn.heartbeat or None,
            reconnect=_ReconnectDelays(conn.reconnect))  # type: ignore[arg-type]  # any iterable

    def _dead_letter(self, dl: DeadLetter | None) -> tuple[Any, str] | None:
        if dl is None:
            return None
        if self.config.connections[dl.connection].protocol != "amqp1.0" or dl.address is None:
            raise ConfigError([f"dead_letter to {dl.connection}: only AMQP 1.0 addresses are "
                               f"supported as dead-letter targets so far"])
        return self.amqp10[dl.connection], dl.address

    def _build_route(self, container: Container, route: Route) -> Any:
        from .facade import FacadeConsume, FacadePublish

        src, dst = route.source, route.target
        dead_letter = self._dead_letter(route.dead_letter)
        if src.listener is not None and dst.connection in self.amqp10:
            return FacadePublish(container, route, self.facades[src.listener],
                                 self.amqp10[dst.connection], dead_letter)
        if dst.listener is not None and src.connection in self.amqp10:
            return FacadeConsume(container, route, self.facades[dst.listener],
                                 self.amqp10[src.connection], dead_letter)
        if src.connection in self.legacy and dst.connection in self.amqp10:
            return LegacyToAmqp10(container, route, self.legacy[src.connection],
                                  self.amqp10[dst.connection], dead_letter)
        if src.connection in self.amqp10 and dst.connection in self.legacy:
            return Amqp10ToLegacy(container, route, self.amqp10[src.connection],
                                  self.legacy[dst.connection], dead_letter)
        raise ConfigError([f"route {route.name}: {self.config.protocol_of(src)} -> "
                           f"{self.config.protocol_of(dst)} routes are not supported"])

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

    def on_reactor_quiesced(self, event: Any) -> None:
        # every event of this round is dispatched: send what the routes batched up
        for legacy in self.legacy.values():
            legacy.end_of_burst()

    def request_stop(self) -> None:
        """Ask for a graceful stop (safe from a signal handler: only sets a flag)."""
        if self.stop_requested and self.container is not None:
            self.shutdown_timeout = 0.0  # a second request: stop now
        self.stop_requested = True

    def _housekeeping(self) -> None:
        assert self.container is not None
        now = time.monotonic()
        if now >= self._stats_due:
            self._stats_due = now + STATS_INTERVAL
            self._log_stats(only_changed=True)
        if self.stop_requested:
            if self.stopping_since is None:
                self.stopping_since = time.monotonic()
                log.info("stopping: draining %d in-flight messages",
                         sum(r.pending for r in self.routes))
                for route in self.routes:
                    route.pause()
            drained = all(r.pending == 0 for r in self.routes)
            if drained or time.monotonic() - self.stopping_since >= self.shutdown_timeout:
                if not drained:
                    log.warning("stopping with %d messages in flight (they will be redelivered)",
                                sum(r.pending for r in self.routes))
                self._close_all()
                return
        self.container.schedule(HOUSEKEEPING_INTERVAL, _Timer(self._housekeeping))

    def _log_stats(self, *, only_changed: bool) -> None:
        for route in self.routes:
            stats = getattr(route, "stats", None)
            if stats is None:
                continue
            line = " ".join(f"{k}={v}" for k, v in vars(stats).items() if k != "extra")
            if only_changed and self._last_stats.get(route.name) == line:
                continue
            self._last_stats[route.name] = line
            log.info("route %s: %s", route.name, line)

    def _close_all(self) -> None:
        assert self.container is not None
        self._log_stats(only_changed=False)
        for legacy in self.legacy.values():
            legacy.stop()
        for conn in self.amqp10.values():
            conn.close()
        # let the close frames go out, then end the loop whatever peers do; the taps are
        # closed last, once no outcome can come any more
        self.container.schedule(CLOSE_GRACE, _Timer(self._stop_loop))

    def _stop_loop(self) -> None:
        assert self.container is not None
        self.close_taps()
        self.container.stop()


def run(config: BridgeConfig) -> None:
    """Run the bridge until SIGTERM or SIGINT."""
    bridge = Bridge(config)
    container = Container(bridge)

    def stop(signum: int, frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        bridge.request_stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        container.run()
    finally:
        bridge.close_taps()  # after a failure too: keep what was recorded


__all__ = ["Bridge", "Url", "run"]
