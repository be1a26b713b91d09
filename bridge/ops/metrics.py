"""Metrics and health endpoints: Prometheus ``/metrics``, ``/healthz``, ``/readyz``.

The bridge's counters live in plain attributes updated on the event-loop thread
(``RouteStats`` per route, counters on connections): no locks on the message
path.  A Prometheus *collector* reads them when scraped, from the HTTP server's
thread; reading ints is safe under the GIL and a scrape sees a consistent-enough
snapshot.  The latency histogram is likewise a plain bucket array
(:class:`LatencyHistogram`) that the collector exports.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import orjson
from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
                   2.5, 5.0, 10.0)
"""Upper bounds (seconds) of the end-to-end latency histogram."""

COUNTERS = {
    "received": "Messages taken from the route's source.",
    "delivered": "Messages the target accepted (the source was then settled).",
    "rejected": "Messages rejected at the source (target rejected them or they could not be mapped, without a dead-letter target).",
    "dead_lettered": "Messages accepted by the dead-letter target.",
    "released": "Messages given back to the source for redelivery.",
    "redelivered": "Messages that arrived flagged as redelivered (0-10 / 0-9-1 redelivered; 1.0 delivery-count > 0 or first-acquirer false).",
    "duplicates_suppressed": "Messages dropped because their message-id was seen recently.",
    "mapping_errors": "Messages that could not be translated (0-10 or 0-9-1 <-> 1.0, or CloudEvents).",
    "oversized": "Messages refused because they exceed the route's max_message_size (or the max-message-size the AMQP 1.0 target announced).",
    "publishes_abandoned": "Façade publishes read and never forwarded: still unforwarded at the shutdown drain limit, or (a publisher without confirms) refused because the route's AMQP 1.0 link stayed down past attach_timeout. Each is logged at ERROR.",
    "overdrawn": "Messages the AMQP 1.0 source sent beyond the link credit the bridge granted (RabbitMQ 3.x does under load); the route held them, past its max_in_flight by as many.",
    "poison_messages": "Messages settled as rejected (or dead-lettered) because sending them made the target end the link or session poison_attempts times.",
}


GAUGES = {
    "in_flight": "Messages between source and target, outcome pending.",
    "in_flight_bytes": "Body octets of the in-flight messages.",
    "credit": "Credit the route currently holds from its target.",
}


class LatencyHistogram:
    """Cumulative-bucket histogram of seconds, updated without locks (one writer)."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        """Record one latency."""
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.sum += seconds

    def buckets(self) -> list[tuple[str, int]]:
        """Cumulative ``(le, count)`` pairs ending with ``+Inf``."""
        out, total = [], 0
        for bound, count in zip([*map(str, self.bounds), "+Inf"], list(self.counts), strict=True):
            total += count
            out.append((bound, total))
        return out


class ObservedRoute(Protocol):
    """What the collector reads from a route."""

    name: str
    stats: Any
    limit_messages: int
    """The route's ``max_in_flight.messages``."""

    @property
    def ready(self) -> bool: ...

    def waiting_for(self) -> list[str]:
        """What keeps the route from being ready (``/readyz`` shows it)."""
        ...


class ObservedBridge(Protocol):
    """What the collector and the health endpoints read from the bridge.

    Called from the HTTP server's thread: implementations only read attributes.
    ``observed_routes`` is empty until the bridge has built its routes (not ready).
    """

    def observed_routes(self) -> Iterable[ObservedRoute]: ...

    def observed_connections(self) -> Iterable[tuple[str, str, bool, int]]:
        """``(name, protocol, up, reconnects)`` per connection."""
        ...

    def observed_listeners(self) -> Iterable[tuple[str, int, int, int, int]]:
        """``(name, connected clients, publishes refused, publishes unroutable, publishes
        delivered locally)`` per façade listener."""
        ...

    def observed_logins(self) -> Iterable[tuple[str, dict[str, int], int]]:
        """``(name, refused logins by reason, abandoned logins)`` per façade listener."""
        ...

    def observed_listener_limits(self) -> Iterable[tuple[str, Any]]:
        """``(name, stats)`` per façade listener: ``stats.refused`` (reason -> count, fixed
        keys), ``stats.handshake_timeouts``, ``stats.accept_failures``."""
        ...

    def observed_faults(self) -> tuple[dict[str, int], dict[str, str]]:
        """Contained faults by kind, and ``part -> reason`` of the parts still down
        because of one (:mod:`bridge.runtime.containment`)."""
        ...

    def observed_client_errors(self) -> Iterable[tuple[str, dict[int, int]]]:
        """``(name, reply code -> count)`` per façade listener: client connections and
        channels closed, and 0-10 commands refused, for the client's error."""
        ...

    def observed_access_refusals(self) -> Iterable[tuple[str, dict[tuple[str, str], int]]]:
        """``(name, (operation, permission) -> count)`` per façade listener: operations
        refused for want of a permission (or for a user-id not the login's)."""
        ...

    def observed_links(self) -> Iterable[tuple[str, int]]:
        """``(name, open links)`` per AMQP 1.0 connection (attached or attaching)."""
        ...

    def observed_begins_waiting(self) -> Iterable[tuple[str, int]]:
        """``(name, session begins held back)`` per AMQP 1.0 connection."""
        ...

    def observed_pools(self) -> Iterable[tuple[str, int, int]]:
        """``(name, connections open, extra connections opened in all)`` per configured
        AMQP 1.0 connection (:mod:`bridge.amqp10.pool`)."""
        ...

    def observed_unanswered(self) -> Iterable[tuple[str, dict[str, int]]]:
        """``(name, what -> count)`` per AMQP 1.0 connection: link attaches (``attach``)
        and session ends (``end``) the peer left unanswered past their bound."""
        ...

    def observed_queue_declares(self) -> Iterable[tuple[str, dict[str, int]]]:
        """``(name, answered by -> count)`` per topology-mode 0-9-1 listener: queue
        declares sent to the 1.0 broker (``broker``) and redeclares the bridge answered
        itself (``bridge``, docs/topology.md)."""
        ...

    def observed_ended(self) -> Iterable[tuple[str, dict[str, int]]]:
        """``(name, reason -> count)`` per façade listener: client connections and
        sessions the bridge ended on its own (heartbeat timeout, session-layer error)."""
        ...

    def observed_legacy_sessions(self) -> Iterable[tuple[str, int]]:
        """``(name, open sessions or channels)`` per AMQP 0-10 or 0-9-1 connection."""
        ...

    def observed_facades(self) -> Iterable[tuple[str, int, int]]:
        """``(name, sessions, subscriptions)`` per façade listener."""
        ...

    def observed_sockets_in_memory(self) -> int:
        """0-10 and 0-9-1 connections (legacy and façade clients) whose objects are not
        freed yet, closed ones included."""
        ...


class BridgeCollector(Collector):
    """Exports the bridge's live counters at scrape time."""

    def __init__(self, bridge: ObservedBridge) -> None:
        self.bridge = bridge

    def collect(self) -> Iterator[Any]:
        routes = list(self.bridge.observed_routes())
        for field, help_text in COUNTERS.items():
            family = CounterMetricFamily(f"amqp_bridge_{field}", help_text, labels=["route"])
            for route in routes:
                family.add_metric([route.name], getattr(route.stats, field, 0))
            yield family
        for field, help_text in GAUGES.items():
            gauge = GaugeMetricFamily(f"amqp_bridge_{field}", help_text, labels=["route"])
            for route in routes:
                gauge.add_metric([route.name], getattr(route.stats, field, 0))
            yield gauge
        limit = GaugeMetricFamily("amqp_bridge_max_in_flight",
                                  "The route's configured max_in_flight.messages.",
                                  labels=["route"])
        for route in routes:
            limit.add_metric([route.name], route.limit_messages)
        yield limit
        ready = GaugeMetricFamily("amqp_bridge_route_ready",
                                  "1 when both sides of the route are attached.", labels=["route"])
        for route in routes:
            ready.add_metric([route.name], 1 if route.ready else 0)
        yield ready
        latency = HistogramMetricFamily(
            "amqp_bridge_latency_seconds",
            "Source receipt to target outcome, per message.", labels=["route"])
        for route in routes:
            hist = getattr(route.stats, "latency", None)
            if hist is not None:
                latency.add_metric([route.name], hist.buckets(), hist.sum)
        yield latency
        up = GaugeMetricFamily("amqp_bridge_connection_up", "1 while the connection is open.",
                               labels=["connection", "protocol"])
        reconnects = CounterMetricFamily("amqp_bridge_reconnects", "Reconnect attempts.",
                                         labels=["connection", "protocol"])
        for name, protocol, is_up, count in self.bridge.observed_connections():
            up.add_metric([name, protocol], 1 if is_up else 0)
            reconnects.add_metric([name, protocol], count)
        yield up
        yield reconnects
        unanswered = CounterMetricFamily(
            "amqp_bridge_amqp10_unanswered", "Link attaches (what=attach, after 30 s: the "
            "link is re-attached) and session ends (what=end, after 5 s: new sessions begin "
            "all the same) the AMQP 1.0 peer left unanswered; every kind exported, 0 "
            "included.", labels=["connection", "what"])
        for name, by_what in self.bridge.observed_unanswered():
            for what, n in sorted(by_what.items()):
                unanswered.add_metric([name, what], n)
        yield unanswered
        clients = GaugeMetricFamily("amqp_bridge_facade_clients",
                                    "0-10 client connections to the façade listener.",
                                    labels=["listener"])
        refused = CounterMetricFamily(
            "amqp_bridge_publishes_refused", "Façade publishes refused with an "
            "execution.exception (unknown exchange or queue, or the route refused them).",
            labels=["listener"])
        unroutable = CounterMetricFamily(
            "amqp_bridge_facade_publishes_unroutable", "Façade publishes no route (in "
            "topology mode: no queue at the AMQP 1.0 broker) took: returned (0-9-1 "
            "mandatory) or dropped, as the legacy broker does.", labels=["listener"])
        local = CounterMetricFamily(
            "amqp_bridge_facade_local_deliveries", "Façade publishes delivered to the one "
            "consumer of their queue on the same listener, without the trip through the "
            "AMQP 1.0 broker (0-9-1 topology mode: RPC replies).", labels=["listener"])
        for name, count, refusals, unroutables, locals_ in self.bridge.observed_listeners():
            clients.add_metric([name], count)
            refused.add_metric([name], refusals)
            unroutable.add_metric([name], unroutables)
            local.add_metric([name], locals_)
        yield clients
        yield refused
        yield unroutable
        yield local
        yield from _limit_families(list(self.bridge.observed_listener_limits()))
        errors = CounterMetricFamily(
            "amqp_bridge_facade_client_errors", "Façade client connections and channels "
            "closed, and 0-10 commands refused, for the client's error (malformed or "
            "oversized frames, unknown methods or exchanges, oversized messages, ...), by "
            "reply code.",
            labels=["listener", "code"])
        for name, by_code in self.bridge.observed_client_errors():
            for code, n in sorted(by_code.items()):
                errors.add_metric([name, str(code)], n)
        yield errors
        access = CounterMetricFamily(
            "amqp_bridge_facade_access_refused", "Façade operations refused because the "
            "user lacks the permission (configure, write, read) on the exchange or queue, "
            "or set a user-id other than its login (permission user_id), by operation.",
            labels=["listener", "operation", "permission"])
        for name, by_operation in self.bridge.observed_access_refusals():
            for (operation, permission), n in sorted(by_operation.items()):
                access.add_metric([name, operation, permission], n)
        yield access
        declares = CounterMetricFamily(
            "amqp_bridge_facade_queue_declares", "queue.declare of a topology-mode 0-9-1 "
            "listener, by who answered it: the 1.0 broker, or the bridge (a redeclare of a "
            "queue its consumers prove unchanged since the broker's answer).",
            labels=["listener", "answered_by"])
        for name, by_whom in self.bridge.observed_queue_declares():
            for whom, n in sorted(by_whom.items()):
                declares.add_metric([name, whom], n)
        yield declares
        faults = CounterMetricFamily(
            "amqp_bridge_faults", "Unexpected exceptions contained (the part was recovered "
            "or closed, the process went on).", labels=["kind"])
        for kind, count in self.bridge.observed_faults()[0].items():
            faults.add_metric([kind], count)
        yield faults
        ended = CounterMetricFamily(
            "amqp_bridge_facade_ended", "Façade client connections and sessions the bridge "
            "ended on its own initiative (a client silent past twice its heartbeat, a "
            "session-layer error), by reason.", labels=["listener", "reason"])
        for name, by_reason in self.bridge.observed_ended():
            for reason, n in sorted(by_reason.items()):
                ended.add_metric([name, reason], n)
        yield ended
        refused = CounterMetricFamily(
            "amqp_bridge_logins_refused", "Façade logins refused at once because too many "
            "waited for a password check (reason peer_full or listener_full).",
            labels=["listener", "reason"])
        abandoned = CounterMetricFamily(
            "amqp_bridge_logins_abandoned", "Façade logins whose client went away before "
            "the password check answered (dropped, or ignored when it finished).",
            labels=["listener"])
        for name, by_reason, count in self.bridge.observed_logins():
            for reason, n in by_reason.items():
                refused.add_metric([name, reason], n)
            abandoned.add_metric([name], count)
        yield refused
        yield abandoned
        yield from self._resources()

    def _resources(self) -> Iterator[Any]:
        """Gauges of what the bridge holds open: a leak shows as a gauge that only grows."""
        yield _gauge("amqp_bridge_amqp10_links",
                     "AMQP 1.0 links attached or attaching on the connection.", "connection",
                     self.bridge.observed_links())
        yield _gauge("amqp_bridge_amqp10_begins_waiting", "Sessions (of links, request/"
                     "response pairs) waiting to begin on the AMQP 1.0 connection: for the "
                     "peer's open, for an end, or for a free channel when the peer's session "
                     "limit is reached (RabbitMQ 4: 64).", "connection",
                     self.bridge.observed_begins_waiting())
        pool_size = GaugeMetricFamily(
            "amqp_bridge_amqp10_pool_connections", "AMQP 1.0 connections open for the "
            "configured connection: its first and the extra ones opened when their links "
            "need more sessions than one connection has (max_connections).",
            labels=["connection"])
        pool_grown = CounterMetricFamily(
            "amqp_bridge_amqp10_pool_opened", "Extra AMQP 1.0 connections opened for the "
            "configured connection (NAME#2, NAME#3…), in all.", labels=["connection"])
        for name, size, opened in self.bridge.observed_pools():
            pool_size.add_metric([name], size)
            pool_grown.add_metric([name], opened)
        yield pool_size
        yield pool_grown
        yield _gauge("amqp_bridge_legacy_sessions", "0-10 sessions (0-9-1: channels) open on "
                     "the legacy connection.", "connection", self.bridge.observed_legacy_sessions())
        facade_sessions = GaugeMetricFamily("amqp_bridge_facade_sessions",
                                            "0-10 sessions of the façade listener's clients.",
                                            labels=["listener"])
        subscriptions = GaugeMetricFamily(
            "amqp_bridge_facade_subscriptions",
            "Subscriptions (each with its own 1.0 link) of the façade listener's clients.",
            labels=["listener"])
        for name, session_count, subscription_count in self.bridge.observed_facades():
            facade_sessions.add_metric([name], session_count)
            subscriptions.add_metric([name], subscription_count)
        yield facade_sessions
        yield subscriptions
        yield GaugeMetricFamily(
            "amqp_bridge_sockets_in_memory", "0-10 and 0-9-1 connections (legacy and façade "
            "clients) whose objects are still in memory, closed ones the garbage collector has "
            "not freed yet included.", value=self.bridge.observed_sockets_in_memory())


def _gauge(name: str, help_text: str, label: str,
           rows: Iterable[tuple[str, int]]) -> GaugeMetricFamily:
    """A gauge with one label from ``(label value, value)`` rows."""
    gauge = GaugeMetricFamily(name, help_text, labels=[label])
    for key, value in rows:
        gauge.add_metric([key], value)
    return gauge


def _limit_families(listeners: list[tuple[str, Any]]) -> Iterator[Any]:
    refused = CounterMetricFamily(
        "amqp_bridge_connections_refused", "Façade connections refused for a limit "
        "(max_connections, max_connections_per_peer, descriptors), or closed for one "
        "(max_buffered, max_unsent: a client not reading its replies).",
        labels=["listener", "reason"])
        # (reason keys are fixed at start: iterating from this thread is safe)
    timeouts = CounterMetricFamily(
        "amqp_bridge_handshake_timeouts", "Façade connections closed for not logging in "
        "within handshake_timeout.", labels=["listener"])
    failures = CounterMetricFamily(
        "amqp_bridge_accept_failures", "Failed accept() calls of a façade listener (out of "
        "descriptors or memory: it pauses, 0.1 s doubling to 2 s).", labels=["listener"])
    for name, stats in listeners:
        for reason, count in stats.refused.items():
            refused.add_metric([name, reason], count)
        timeouts.add_metric([name], stats.handshake_timeouts)
        failures.add_metric([name], stats.accept_failures)
    yield refused
    yield timeouts
    yield failures


def readiness(bridge: ObservedBridge) -> tuple[bool, dict[str, Any]]:
    """Whether every route is attached on both sides and no part is recovering from an
    internal fault, with the routes that are not ready and the parts that are recovering.

    A bridge without routes yet (still starting) is not ready."""
    routes = list(bridge.observed_routes())
    waiting = {route.name: route.waiting_for() for route in routes if not route.ready}
    impaired = bridge.observed_faults()[1]
    ok = bool(routes) and not waiting and not impaired
    detail: dict[str, Any] = {"ready": ok, "routes_not_ready": list(waiting)}
    if waiting:
        detail["waiting_for"] = waiting
    if impaired:
        detail["recovering_from_fault"] = impaired
    if not routes:
        detail["starting"] = True
    return ok, detail


def wsgi_app(bridge: ObservedBridge) -> Callable[..., Iterable[bytes]]:
    """The WSGI application serving ``/metrics``, ``/healthz`` and ``/readyz``."""
    registry = CollectorRegistry()
    registry.register(BridgeCollector(bridge))
    metrics = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return metrics(environ, start_response)  # type: ignore[no-any-return]
        if path == "/healthz":
            body = b'{"alive":true}'
            status = "200 OK"
        elif path == "/readyz":
            ok, detail = readiness(bridge)
            body = orjson.dumps(detail)
            status = "200 OK" if ok else "503 Service Unavailable"
        else:
            body, status = b'{"error":"not found"}', "404 Not Found"
        start_response(status, [("Content-Type", "application/json"),
                                ("Content-Length", str(len(body)))])
        return [body]

    return app


class _Server(WSGIServer):
    """The WSGI server, keeping one descriptor in reserve for when the process has none.

    When the process is out of descriptors (a flood of connections to a façade listener
    or anything else), ``accept()`` fails with EMFILE and the health checks would go
    unanswered just when they matter. The server then gives up its reserve (a
    descriptor on ``/dev/null``) for the accept, answers, and takes the reserve back
    after closing the request. Serving a request needs no other descriptor. Without a
    reserve (another thread took the freed descriptor first) it pauses 0.1 s instead
    of retrying at once: the listening socket stays readable, and retrying would spin.
    """

    reserve: int | None = None

    def server_activate(self) -> None:
        super().server_activate()
        self._take_reserve()

    def _take_reserve(self) -> None:
        if self.reserve is None:
            with contextlib.suppress(OSError):
                self.reserve = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)

    def get_request(self) -> tuple[Any, Any]:
        try:
            return super().get_request()
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE):
                raise
            if self.reserve is None:
                time.sleep(0.1)
                raise
            os.close(self.reserve)
            self.reserve = None
            return super().get_request()

    def close_request(self, request: Any) -> None:
        super().close_request(request)
        self._take_reserve()

    def server_close(self) -> None:
        super().server_close()
        if self.reserve is not None:
            os.close(self.reserve)
            self.reserve = None


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server6(_Server):
    """The same on IPv6 (a ``bind`` such as ``[::1]:9090``)."""

    address_family = socket.AF_INET6


class MetricsServer:
    """The HTTP server, on a daemon thread so it never blocks the event loop."""

    def __init__(self, bridge: ObservedBridge, host: str, port: int) -> None:
        self.server: WSGIServer = make_server(
            host, port, wsgi_app(bridge), server_class=_Server6 if ":" in host else _Server,
            handler_class=_QuietHandler)
        bound = self.server.server_address
        self.address: tuple[str, int] = (str(bound[0]), int(bound[1]))
        """The bound address (the actual port when 0 was asked for)."""
        self.thread = threading.Thread(target=self.server.serve_forever, name="metrics",
                                       daemon=True)

    def start(self) -> MetricsServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
