"""Listening on IPv6: a façade listener and the metrics server bound to ``[::1]`` (and a
listener on ``[::]``, which takes IPv4 clients too), as a deployment on an IPv6 network
writes them. Both had failed at start ("Address family for hostname not supported").

A pika application publishes over IPv6 through a configured exchange to RabbitMQ; the
log names the client as ``[::1]:port``; ``/healthz`` answers over IPv6; a connection's
close frees its place under ``max_connections_per_peer``.
"""

from __future__ import annotations

import time
import urllib.request
from pathlib import Path

import pika
import pika.exceptions

from tests.support.bridge import BridgeRun, config091, free_port, wait_listening
from tests.support.logs import records
from tests.support.metrics import metrics_port
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue


def connect_when_admitted(url: str) -> pika.BlockingConnection:
    """A connection to ``url``, tried again while the listener refuses it (the close of
    the one before may not have reached the bridge yet: its per-peer place is taken)."""
    for _ in range(100):
        try:
            return pika.BlockingConnection(pika.URLParameters(url))
        except pika.exceptions.AMQPConnectionError:
            time.sleep(0.1)
    raise AssertionError(f"{url}: refused for 10 s")


def test_a_facade_and_the_metrics_listen_on_ipv6(rabbitmq_url: str, tmp_path: Path) -> None:
    queue = unique_queue("ipv6")
    port, dual_port = free_port(), free_port()
    routes = f"""
  - {{name: orders-out, from: {{listener: v6, exchange: orders}},
      to: {{connection: cloud, address: {queue_address(queue)}}}}}
  - {{name: orders-out-dual, from: {{listener: dual, exchange: orders}},
      to: {{connection: cloud, address: {queue_address(queue)}}}}}
metrics: {{bind: "[::1]:0"}}"""
    listeners = f"""listeners:
  v6: {{protocol: amqp0-9-1, bind: "[::1]:{port}", users: {{app: app-pw}},
        max_connections_per_peer: 1}}
  dual: {{protocol: amqp0-9-1, bind: "[::]:{dual_port}", users: {{app: app-pw}}}}
"""
    proc = BridgeRun(config091(rabbitmq_url, routes, more=listeners), tmp_path).start()
    try:
        wait_listening(port, proc, host="::1")
        wait_listening(dual_port, proc, host="127.0.0.1")
        for url in (f"amqp://app:app-pw@[::1]:{port}/%2F",  # one at a time: the per-peer
                    f"amqp://app:app-pw@[::1]:{port}/%2F",  # count goes down at a close
                    f"amqp://app:app-pw@127.0.0.1:{dual_port}/%2F",
                    f"amqp://app:app-pw@[::1]:{dual_port}/%2F"):
            with connect_when_admitted(url) as conn:
                ch = conn.channel()
                ch.confirm_delivery()
                ch.basic_publish("orders", "k", url.encode())
        got = receive_messages(rabbitmq_url, queue_address(queue), 4)
        assert sorted(bytes(g.message.body).decode() for g in got) == sorted([
            f"amqp://app:app-pw@[::1]:{port}/%2F", f"amqp://app:app-pw@[::1]:{port}/%2F",
            f"amqp://app:app-pw@127.0.0.1:{dual_port}/%2F",
            f"amqp://app:app-pw@[::1]:{dual_port}/%2F"])
        health = urllib.request.urlopen(
            f"http://[::1]:{metrics_port(proc.log)}/healthz", timeout=10).read()
        assert b'"alive":true' in health
        peers = {str(r.get("peer")) for r in records(proc.log())
                 if r.get("listener") == "v6" and r.get("peer")}
        assert peers and all(p.startswith("[::1]:") for p in peers), peers
        listening = [r for r in records(proc.log()) if r.get("event") == "listening"]
        assert {r["bind"] for r in listening} == {f"[::1]:{port}", f"[::]:{dual_port}"}
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()
