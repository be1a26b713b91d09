"""A façade publisher that the bridge throttles is still a live client.

Found by the lifecycle suite (RabbitMQ restart phase): while the 1.0 target settles
nothing (RabbitMQ stopping, a network stall), the publish route fills its
``max_in_flight`` and the façade stops reading the publisher's socket. The publisher
keeps sending heartbeats, but the façade no longer reads them, takes the client for
silent after two intervals and closes its connection ("no traffic from the peer for
2.0s"). Here the stall is a paused relay in front of RabbitMQ.

The second test is the 0-10 side of a hostile-client finding on the 0-9-1 façade: a
publisher that closes while throttled used to lose what the façade had read past the
window (dropped with its session); now every publish read is forwarded.
"""

from __future__ import annotations

from pathlib import Path

from amqp010.spec import DeliveryProperties
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import queue_address, unique_queue
from tests.support.relay import Relay

from .peers import HEARTBEAT, amqp10_take, bodies, check_arrived, facade_client

WINDOW = 5


def _config(cloud_url: str, port: int, target: str) -> str:
    return f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{cloud_url}", heartbeat: 60}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
routes:
  - name: pub
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {target}}}
    max_in_flight: {{messages: {WINDOW}}}
"""


def test_a_throttled_publisher_answering_heartbeats_keeps_its_connection(
        rabbitmq_url: str, tmp_path: Path) -> None:
    cloud = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])))
    target = queue_address(unique_queue("throttled"))
    port = free_port()
    sent = bodies("throttled", 4 * WINDOW)
    try:
        with BridgeRun(_config(cloud.url(rabbitmq_url), port, target), tmp_path) as bridge:
            wait_listening(port, bridge)
            client = facade_client(port)
            try:
                client.publish(b"warm-up", exchange="events", routing_key="e")  # link attached
                cloud.pause()  # RabbitMQ settles nothing for a while
                for body in sent:
                    client.publish(body, exchange="events", routing_key="e", wait=False,
                                   delivery=DeliveryProperties(delivery_mode=2))
                client.idle(5 * HEARTBEAT)  # raises if the bridge drops the connection
                cloud.resume()
                client.sync()  # every publish confirmed
            finally:
                cloud.resume()
                client.close()
            assert "client_silent" not in bridge.log(), bridge.log()[-3000:]
        check_arrived(amqp10_take(rabbitmq_url, target, sent, timeout=30), sent, WINDOW,
                      "the throttled publisher's messages")
    finally:
        cloud.close()


def test_a_throttled_publisher_that_closes_has_every_publish_forwarded(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """The publisher detaches and closes without waiting for its completions: what the
    façade read — also past ``max_in_flight``, still waiting for the 1.0 sender — goes to
    the 1.0 side all the same (a broker keeps what it has read); the completions go
    nowhere."""
    cloud = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])))
    target = queue_address(unique_queue("throttled-close"))
    port = free_port()
    sent = bodies("closed", 4 * WINDOW)
    try:
        with BridgeRun(_config(cloud.url(rabbitmq_url), port, target), tmp_path) as bridge:
            wait_listening(port, bridge)
            client = facade_client(port, timeout=1)
            try:
                client.publish(b"warm-up", exchange="events", routing_key="e")  # link attached
                cloud.pause()  # RabbitMQ settles nothing: what is read past the window waits
                for body in sent:
                    client.publish(body, exchange="events", routing_key="e", wait=False,
                                   delivery=DeliveryProperties(delivery_mode=2))
            finally:
                client.close()  # detach and close, their answers not awaited for long
                cloud.resume()
        check_arrived(amqp10_take(rabbitmq_url, target, sent, timeout=30), sent, WINDOW,
                      "the closed publisher's messages")
    finally:
        cloud.close()
