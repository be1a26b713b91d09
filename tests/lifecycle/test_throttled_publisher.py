"""A façade publisher that the bridge throttles is still a live client.

Found by the lifecycle suite (RabbitMQ restart phase): while the 1.0 target settles
nothing (RabbitMQ stopping, a network stall), the publish route fills its
``max_in_flight`` and the façade stops reading the publisher's socket. The publisher
keeps sending heartbeats, but the façade no longer reads them, takes the client for
silent after two intervals and closes its connection ("no traffic from the peer for
2.0s"). Here the stall is a paused relay in front of RabbitMQ.

The second test is the 0-10 side of a hostile-client finding on the 0-9-1 façade (whose
channel.close dropped what it had read past the window): a throttled 0-10 publisher
that detaches and closes has every publish forwarded.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from amqp010.spec import DeliveryProperties
from amqp010.transport import BlockingClient
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import queue_address, unique_queue
from tests.support.relay import Relay

from .peers import HEARTBEAT, amqp10_take, bodies, check_arrived, facade_client

WINDOW = 5


@dataclass
class Stalled:
    """A façade client whose publishes the bridge throttles: RabbitMQ's 1.0 side sits
    behind a relay that :meth:`publish_stalled` pauses."""

    bridge: BridgeRun
    cloud: Relay
    client: BlockingClient
    sent: list[bytes]

    def publish_stalled(self) -> None:
        """Warm up (the link attached), pause the relay, publish :attr:`sent` unconfirmed."""
        self.client.publish(b"warm-up", exchange="events", routing_key="e")
        self.cloud.pause()  # RabbitMQ settles nothing: what is read past the window waits
        for body in self.sent:
            self.client.publish(body, exchange="events", routing_key="e", wait=False,
                                delivery=DeliveryProperties(delivery_mode=2))


@contextmanager
def stalled(rabbitmq_url: str, tmp_path: Path, prefix: str) -> Iterator[Stalled]:
    """A bridge with a publish route of ``max_in_flight`` WINDOW to RabbitMQ through a
    relay, and a client of its façade; afterwards every body sent must have arrived."""
    cloud = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])))
    target = queue_address(unique_queue(prefix))
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{cloud.url(rabbitmq_url)}", heartbeat: 60}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
routes:
  - name: pub
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {target}}}
    max_in_flight: {{messages: {WINDOW}}}
"""
    sent = bodies(prefix, 4 * WINDOW)
    try:
        with BridgeRun(config, tmp_path) as bridge:
            wait_listening(port, bridge)
            client = facade_client(port)
            try:
                yield Stalled(bridge, cloud, client, sent)
            finally:
                cloud.resume()
                client.close()
            # before the bridge stops: a stopping bridge takes no more publishes, and it
            # may not have read all of a closed client's yet
            check_arrived(amqp10_take(rabbitmq_url, target, sent, timeout=30), sent,
                          WINDOW, f"the {prefix} publisher's messages")
    finally:
        cloud.close()


def test_a_throttled_publisher_answering_heartbeats_keeps_its_connection(
        rabbitmq_url: str, tmp_path: Path) -> None:
    with stalled(rabbitmq_url, tmp_path, "throttled") as run:
        run.publish_stalled()
        run.client.idle(5 * HEARTBEAT)  # raises if the bridge drops the connection
        run.cloud.resume()
        run.client.sync()  # every publish confirmed
        assert "client_silent" not in run.bridge.log(), run.bridge.log()[-3000:]


def test_a_throttled_publisher_that_closes_has_every_publish_forwarded(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """The publisher detaches and closes without waiting for its completions: what the
    façade read — also past ``max_in_flight``, still waiting for the 1.0 sender — goes to
    the 1.0 side all the same (a broker keeps what it has read); the completions go
    nowhere."""
    with stalled(rabbitmq_url, tmp_path, "closed") as run:
        run.publish_stalled()
        # detach and close behind the publishes, then RabbitMQ settles again: the bridge
        # reads the rest, the detach and the close (a client that gave up and reset its
        # connection instead would lose, in the kernel, what the bridge had not read)
        threading.Timer(0.5, run.cloud.resume).start()
        run.client.close()
