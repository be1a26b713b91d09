"""Health endpoints of a real run: ``/healthz`` answers while the process lives; ``/readyz``
turns 503 (naming the routes that are not ready) while a broker is away and 200 again
once it is back, and the connection metrics follow. Each broker "goes away" behind a TCP
relay that the test cuts (every connection dropped, new ones closed at once) and
restores. The run logs JSON (``--log-format json`` over the configuration's ``kv``);
the state changes are checked in the log afterwards.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
from proton import Message

from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from tests.support.bridge import (
    BridgeRun,
    bridge_config,
    legacy_client,
    legacy_message,
    publish_legacy,
    wait_for,
)
from tests.support.logs import records
from tests.support.metrics import Scrape, http_get, metrics_port, poll, scrape
from tests.support.rabbitmq import queue_address, receive_messages, send_messages, unique_queue
from tests.support.relay import Relay

ROUTES = {"out", "in"}


def connection(s: Scrape, name: str) -> tuple[float, float]:
    """``(up, reconnects)`` of a connection in a scrape."""
    protocol = "amqp1.0" if name == "cloud" else "amqp0-10"
    return (s.value("amqp_bridge_connection_up", connection=name, protocol=protocol),
            s.value("amqp_bridge_reconnects_total", connection=name, protocol=protocol))


def readiness_logged(log: str, route: str) -> str:
    """The route's last readiness event in the log ("" if none yet)."""
    last = ""
    for rec in records(log):
        if rec.get("route") == route and rec.get("event") in ("route_ready", "route_not_ready"):
            last = str(rec["event"])
    return last


def test_readyz_follows_each_broker_going_away_and_back(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    cloud = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])))
    legacy_relay = Relay(server.address)
    out_q, in_q = unique_queue("health-out"), unique_queue("health-in")
    with legacy_client(server) as client:
        client.declare_queue("out")
        client.declare_queue("in-q")
        client.bind("in-q", "amq.direct", "in")
    routes = f"""
  - name: out
    from: {{connection: legacy, queue: out}}
    to:   {{connection: cloud, address: {queue_address(out_q)}}}
  - name: in
    from: {{connection: cloud, address: {queue_address(in_q)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: in}}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: kv}}
"""
    config = bridge_config(legacy_relay.url(server.url), cloud.url(rabbitmq_url), routes)
    bridge = BridgeRun(config, tmp_path, args=("--log-format", "json"))
    try:
        with bridge:
            port = metrics_port(bridge.log)

            def ready() -> tuple[int, Any]:
                return http_get(port, "/readyz")

            def logged_ready() -> None:  # the log samples readiness every 0.1 s: let it see
                wait_for(lambda: all(readiness_logged(bridge.log(), r) == "route_ready"
                                     for r in ROUTES), 10, "route_ready logged", bridge)

            assert poll(ready, lambda r: r[0] == 200, 30, "ready") == (
                200, {"ready": True, "routes_not_ready": []})
            logged_ready()
            assert connection(scrape(port), "cloud") == (1, 0)
            assert connection(scrape(port), "legacy") == (1, 0)
            for name, relay in (("cloud", cloud), ("legacy", legacy_relay)):
                relay.cut()
                # /readyz reads the loop's state without locks: wait until the loss has
                # reached every link of the connection, not just the first one
                status, body = poll(ready, lambda r: r[0] != 200 and set(
                    r[1]["routes_not_ready"]) == ROUTES, 10, f"{name} cut: not ready")
                assert status == 503 and body["ready"] is False
                assert set(body["routes_not_ready"]) == ROUTES  # both use each connection
                assert http_get(port, "/healthz") == (200, {"alive": True})
                # down, and the route whose target is behind the cut relay holds no credit
                # from it (gauges follow the route's bookkeeping, a moment later)
                blocked = "out" if name == "cloud" else "in"
                down = poll(lambda: scrape(port), lambda s, n=name, b=blocked:
                            connection(s, n)[0] == 0 and s.route("amqp_bridge_credit", b) == 0,
                            10, f"{name} down")
                assert down.route("amqp_bridge_route_ready", "out") == 0
                assert down.route("amqp_bridge_route_ready", "in") == 0
                # proton's / our own reconnect loop keeps knocking at the cut relay
                poll(lambda r=relay: r.refused, lambda n: n >= 2, 20, f"{name}: reconnect attempts")
                relay.restore()
                assert poll(ready, lambda r: r[0] == 200, 30, f"{name} back: ready") == (
                    200, {"ready": True, "routes_not_ready": []})
                up, reconnects = connection(scrape(port), name)
                assert up == 1 and reconnects >= relay.refused
                logged_ready()
                back = poll(lambda: scrape(port),  # credit comes back with the target
                            lambda s, b=blocked: s.route("amqp_bridge_credit", b) > 0, 10,
                            f"credit of {blocked}")
                assert back.route("amqp_bridge_route_ready", "out") == 1
                assert back.route("amqp_bridge_route_ready", "in") == 1
            # and messages flow again through both routes
            publish_legacy(server, "out", [legacy_message(i) for i in range(10)])
            got = receive_messages(rabbitmq_url, queue_address(out_q), 10, timeout=30)
            assert sorted(m.message.id for m in got) == [uuid.UUID(int=i + 1) for i in range(10)]
            send_messages(rabbitmq_url, queue_address(in_q),
                          [Message(id=f"m-{i}", body=b"x") for i in range(10)])
            wait_for(lambda: len(broker.queues["in-q"].messages) == 10, 30, "in-q filled", bridge)
            flowed = poll(lambda: scrape(port), lambda s: all(
                s.route("amqp_bridge_delivered_total", r) == 10 for r in ROUTES), 10,
                "delivered counted")
            assert all(flowed.route("amqp_bridge_in_flight", r) == 0 for r in ROUTES)
    finally:
        cloud.close()
        legacy_relay.close()

    docs = [orjson.loads(line) for line in bridge.log().splitlines() if line.strip()]
    cloud_peer = f"127.0.0.1:{cloud.port}"
    legacy_peer = f"127.0.0.1:{legacy_relay.port}"

    def events(event: str, **fields: Any) -> list[dict[str, Any]]:
        return [d for d in docs if d.get("event") == event
                and all(d.get(k) == v for k, v in fields.items())]

    # one line per state change, each naming its connection and peer (and route)
    for name, peer in (("cloud", cloud_peer), ("legacy", legacy_peer)):
        assert len(events("open", connection=name, peer=peer)) == 2
        assert len(events("lost", connection=name, peer=peer)) == 1
        assert len(events("closed", connection=name, peer=peer)) == 1  # at the end
    for name, peer in (("cloud", cloud_peer), ("legacy", legacy_peer)):
        scheduled = events("reconnect_scheduled", connection=name, peer=peer)
        assert scheduled and all(isinstance(d["delay"], float | int) for d in scheduled)
        assert len(events("connecting", connection=name, peer=peer)) >= 3
    for route in ROUTES:
        changes = [(d["event"], d.get("waiting_for", "")) for d in docs
                   if d.get("route") == route and d.get("event") in ("route_ready",
                                                                      "route_not_ready")]
        first = next(i for i, c in enumerate(changes) if c[0] == "route_ready")
        changes = changes[first:]  # not ready while starting, possibly
        if changes[-1][0] == "route_not_ready" and "stopping" in changes[-1][1]:
            changes.pop()  # while draining at the end, possibly
        assert [c[0] for c in changes] == ["route_ready", "route_not_ready", "route_ready",
                                           "route_not_ready", "route_ready"], changes
        assert changes[1][1].startswith("1.0 link") and changes[1][1].endswith("on cloud")
        assert changes[3][1] == "0-10 session on legacy"
    assert events("link_lost", route="out", connection="cloud", peer=cloud_peer,
                  link="out.target")
    assert len(events("link_attached", route="in", connection="cloud", link="in.source")) >= 2
    legacy_sessions = events("session_attached", connection="legacy", peer=legacy_peer) \
        + events("session_resumed", connection="legacy", peer=legacy_peer)
    assert {d["route"] for d in legacy_sessions} == ROUTES and len(legacy_sessions) >= 4


def test_readiness_is_looked_at_every_tick_for_few_routes_and_a_bounded_number_per_second() -> None:
    """The housekeeping logs readiness changes every tick (0.1 s) for a handful of routes;
    with the thousands a topology-mode façade makes (one per queue its clients consume)
    it looks at no more than READINESS_CHECKS_PER_SECOND routes a second."""
    from bridge.app import HOUSEKEEPING_INTERVAL, READINESS_CHECKS_PER_SECOND, readiness_interval
    assert readiness_interval(0) == readiness_interval(8) == HOUSEKEEPING_INTERVAL
    for routes in (400, 2_000, 20_000):
        assert routes / readiness_interval(routes) <= READINESS_CHECKS_PER_SECOND
        assert readiness_interval(routes) > HOUSEKEEPING_INTERVAL
