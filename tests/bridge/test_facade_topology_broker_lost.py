"""A topology-mode listener whose AMQP 1.0 broker goes away closes its clients, as the
legacy broker would (RabbitMQ 4 behind both façades, its connection through a relay).

What RabbitMQ held for the clients (non-durable queues, exclusive and reply queues,
bindings, consumers) may be gone with the connection; a client that stayed connected
would never learn it and never declare again (the topology soak lost RPC calls that way
across a broker restart). So every client of the listener is closed with connection-forced
(320) and logged and counted (``amqp_bridge_facade_ended_total{reason="broker_lost"}``);
once the broker is back, a client that reconnects declares again and works.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pika
import pytest

from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.logs import records
from tests.support.metrics import counted, metrics_port
from tests.support.relay import Relay

pytestmark = pytest.mark.rabbitmq(4)  # (its listeners' broker kind: rabbitmq4)

PASSWORD = "lost-s3cret"


def _config(cloud_url: str, port091: int, port010: int) -> str:
    listener = "users: {{app: {pw}}}, topology: {{connection: cloud, broker: rabbitmq4}}"
    return f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{cloud_url}",
           reconnect: {{initial_delay: 0.2, max_delay: 1.0}}}}
listeners:
  app091: {{protocol: amqp0-9-1, bind: "127.0.0.1:{port091}",
            {listener.format(pw=PASSWORD)}}}
  app010: {{protocol: amqp0-10, bind: "127.0.0.1:{port010}",
            {listener.format(pw=PASSWORD)}}}
metrics: {{bind: "127.0.0.1:0"}}
"""


def _pika(port: int) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.ConnectionParameters(
        "127.0.0.1", port, credentials=pika.PlainCredentials("app", PASSWORD),
        connection_attempts=1, heartbeat=0))


def test_clients_are_closed_when_the_broker_goes_away_and_declare_again_after(
        rabbitmq_url: str, tmp_path: Path) -> None:
    host, port = rabbitmq_url.rsplit("@", 1)[1].split(":")
    relay = Relay((host, int(port)))
    port091, port010 = free_port(), free_port()
    try:
        with BridgeRun(_config(relay.url(rabbitmq_url), port091, port010), tmp_path) as bridge:
            wait_listening(port091, bridge)
            wait_listening(port010, bridge)
            metrics = metrics_port(bridge.log)
            conn = _pika(port091)
            reply = conn.channel().queue_declare("", exclusive=True).method.queue
            client = BlockingClient.connect(f"amqp://app:{PASSWORD}@127.0.0.1:{port010}")
            client.declare_queue(f"test.lost.{uuid.uuid4().hex[:8]}", exclusive=True,
                                 auto_delete=True)

            relay.cut()  # RabbitMQ goes away
            with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    conn.process_data_events(time_limit=0.2)
            assert closed.value.reply_code == 320, closed.value
            assert "broker behind amqp-bridge went away" in closed.value.reply_text
            with pytest.raises(ClientError) as ended:
                client.idle(30)
            client._pump(1.0)  # the connection.close behind the session's detach
            assert (client.conn.close_code, client.conn.close_text) == (
                320, "the AMQP 1.0 broker behind amqp-bridge went away: reconnect and "
                     "declare again"), ended.value
            for listener in ("app091", "app010"):
                assert counted(metrics, "amqp_bridge_facade_ended_total", listener=listener,
                               reason="broker_lost") == 1, listener
            assert {r.get("listener") for r in records(bridge.log())
                    if r.get("event") == "clients_closed_broker_lost"} == {"app091", "app010"}

            relay.restore()  # RabbitMQ is back: the application reconnects and declares
            deadline = time.monotonic() + 30
            while True:
                again = _pika(port091)
                ch = again.channel()
                try:
                    queue = ch.queue_declare("", exclusive=True).method.queue
                    break
                except pika.exceptions.ChannelClosedByBroker:
                    # the bridge's 1.0 connection is not back yet
                    assert time.monotonic() < deadline, "no declare answered after the return"
                    again.close()
                    time.sleep(0.2)
            assert queue != reply
            ch.basic_publish("", queue, b"after the return")
            deadline = time.monotonic() + 30
            while (got := ch.basic_get(queue, auto_ack=True))[0] is None:
                assert time.monotonic() < deadline, "the message after the return"
                time.sleep(0.1)
            assert got[2] == b"after the return"
            again.close()
    finally:
        relay.close()
