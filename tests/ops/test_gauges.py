"""The gauges of what the bridge holds open: ``amqp_bridge_amqp10_links``,
``amqp_bridge_legacy_sessions``, ``amqp_bridge_facade_sessions`` and
``amqp_bridge_facade_subscriptions``.

The first test counts real :class:`~bridge.amqp10.link.Amqp10Link` objects on a proton
connection that is not bound to a transport (no broker needed: a link is *attaching* as
soon as it is opened); the second follows each gauge through a real ``amqp-bridge run``
as a façade client subscribes, cancels and goes, and as the 0-10 broker drops the
bridge's connection.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import proton

from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from bridge.amqp10.connection import Amqp10ConnectionHandler
from bridge.amqp10.link import Amqp10Link
from bridge.app import Bridge
from bridge.config import parse_config
from bridge.ops.metrics import wsgi_app
from tests.support.bridge import (
    BridgeRun,
    bridge_config,
    connections_yaml,
    free_port,
    legacy_client,
    wait_listening,
)
from tests.support.link_owners import ManualTimers, NotingOwner
from tests.support.metrics import Scrape, http_get, metrics_port, poll, scrape
from tests.support.rabbitmq import queue_address, unique_queue


def _scrape_in_process(bridge: Bridge) -> Scrape:
    """``/metrics`` of the WSGI application, called directly."""
    statuses: list[str] = []
    body = b"".join(wsgi_app(bridge)({"PATH_INFO": "/metrics", "REQUEST_METHOD": "GET"},
                                     lambda status, headers: statuses.append(status)))
    assert statuses == ["200 OK"]
    return Scrape(body.decode())


def test_links_gauge_counts_links_attaching_or_attached_until_closed() -> None:
    config = parse_config(bridge_config("amqp://127.0.0.1:1", "amqp://127.0.0.1:2", """
  - name: r
    from: {connection: legacy, queue: q}
    to:   {connection: cloud, address: a}
"""))
    bridge = Bridge(config)
    handler = Amqp10ConnectionHandler("cloud")
    bridge.amqp10_handlers["cloud"] = handler
    connection: Any = proton.Connection()
    connection.handler = handler
    proton.Transport().bind(connection)
    assert _scrape_in_process(bridge).value("amqp_bridge_amqp10_links", connection="cloud") == 0
    links = [Amqp10Link(ManualTimers(), connection, f"/queue/{n}",  # type: ignore[arg-type]
                        sender=n % 2 == 0, owner=NotingOwner(), name=f"l{n}") for n in range(3)]
    # their sessions wait for the peer's open (its channel-max)
    waiting = "amqp_bridge_amqp10_begins_waiting"
    assert _scrape_in_process(bridge).value(waiting, connection="cloud") == 3
    handler.on_connection_remote_open(SimpleNamespace(connection=connection))
    assert _scrape_in_process(bridge).value(waiting, connection="cloud") == 0
    assert _scrape_in_process(bridge).value("amqp_bridge_amqp10_links", connection="cloud") == 3
    links[0].close()  # closed for good: no longer counted, though still a watcher
    assert links[0] in handler.watchers
    assert _scrape_in_process(bridge).value("amqp_bridge_amqp10_links", connection="cloud") == 2
    links[1].link = links[1].session = None  # lost, waiting for its backoff to re-attach
    assert _scrape_in_process(bridge).value("amqp_bridge_amqp10_links", connection="cloud") == 1


def _config(legacy_url: str, rabbitmq_url: str, facade_port: int) -> str:
    out, into, pub, sub = (queue_address(unique_queue(f"gauge-{n}"))
                           for n in ("out", "in", "pub", "sub"))
    return f"""
{connections_yaml(legacy_url, rabbitmq_url)}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{facade_port}", allow_anonymous: true}}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: json}}
routes:
  - name: out
    from: {{connection: legacy, queue: gauge-out}}
    to:   {{connection: cloud, address: {out}}}
  - name: in
    from: {{connection: cloud, address: {into}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: gauge}}
  - name: pub
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {pub}}}
  - name: sub
    from: {{connection: cloud, address: {sub}}}
    to:   {{listener: app, queue: jobs}}
"""


def test_resource_gauges_follow_clients_and_connections(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    _, server = legacy
    with legacy_client(server) as admin:
        admin.declare_queue("gauge-out")
    port = free_port()
    with BridgeRun(_config(server.url, rabbitmq_url, port), tmp_path) as bridge:
        wait_listening(port, bridge)
        metrics = metrics_port(bridge.log)

        def gauges() -> tuple[float, float, float, float]:
            s = scrape(metrics)
            return (s.value("amqp_bridge_amqp10_links", connection="cloud"),
                    s.value("amqp_bridge_legacy_sessions", connection="legacy"),
                    s.value("amqp_bridge_facade_sessions", listener="app"),
                    s.value("amqp_bridge_facade_subscriptions", listener="app"))

        def expect(values: tuple[int, int, int, int], what: str) -> None:
            poll(gauges, lambda g: g == values, 20, what)

        poll(lambda: http_get(metrics, "/readyz"), lambda r: r[0] == 200, 30, "/readyz 200")
        # out's target, in's source, pub's target; a 0-10 session for out and in
        expect((3, 2, 0, 0), "the resting values")
        client = BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=20)
        try:
            client.subscribe("jobs", "a")
            client.subscribe("jobs", "b")
            expect((5, 2, 1, 2), "one session with two subscriptions, each with its link")
            client.cancel("a")
            expect((4, 2, 1, 1), "one subscription cancelled")
        finally:
            client.close()
        expect((3, 2, 0, 0), "the resting values once the client is gone")
        server.drop_all()  # the 0-10 broker drops the bridge's connection
        poll(lambda: scrape(metrics).value("amqp_bridge_reconnects_total", connection="legacy",
                                           protocol="amqp0-10"), lambda n: n >= 1, 20,
             "a reconnect")
        expect((3, 2, 0, 0), "both 0-10 sessions again on the new connection")
        assert bridge.stop() == 0, bridge.log()[-3000:]
