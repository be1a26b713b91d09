"""A login flood against the façade: what it costs the bridge, and what it costs a
legitimate client.

Run: ``.venv/bin/python benchmarks/logins.py [--logins 200] [--addresses 1]``
(needs the project's RabbitMQ, started like the tests start it).

Set-up: ``amqp-bridge run`` with one façade listener whose user has a
``pbkdf2-sha256`` hash at the default cost (600,000 iterations). The attacker
opens ``--logins`` connections from ``--addresses`` loopback addresses
(127.0.0.2, 127.0.0.3 …), sends PLAIN credentials for unknown user names and
closes each at once, without waiting for the answer. Right after, a client from
127.0.0.1 logs in with the right password. Reported: the attacker's time, the
legitimate login's wait, the bridge's CPU seconds from the start of the flood until
it is idle again, and the refused / abandoned login counters.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import _timing  # noqa: F401  (puts the project root first on sys.path)

from amqp010.transport import BlockingClient
from bridge.security.passwords import hash_password
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.logins import RawLogin
from tests.support.metrics import metrics_port, scrape
from tests.support.rabbitmq import ensure_rabbitmq, queue_address, unique_queue


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, clock ticks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logins", type=int, default=200)
    parser.add_argument("--addresses", type=int, default=1)
    args = parser.parse_args()
    url = ensure_rabbitmq()
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{url}"}}
listeners:
  facade:
    protocol: amqp0-10
    bind: "127.0.0.1:{port}"
    users: {{app: "{hash_password('right')}"}}
metrics: {{bind: "127.0.0.1:0"}}
routes:
  - name: events-out
    from: {{listener: facade, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(unique_queue("login-bench"))}}}
"""
    with tempfile.TemporaryDirectory() as tmp, BridgeRun(config, Path(tmp)) as bridge:
        wait_listening(port, bridge)
        metrics = metrics_port(bridge.log)
        cpu0 = _cpu(bridge.pid)
        start = time.perf_counter()
        for i in range(args.logins):
            RawLogin(f"127.0.0.{2 + i % args.addresses}", port, f"nobody{i}").close()
        attack = time.perf_counter() - start
        start = time.perf_counter()
        with BlockingClient.connect(f"amqp://app:right@127.0.0.1:{port}", timeout=600):
            waited = time.perf_counter() - start
        idle_cpu = _cpu(bridge.pid)
        while True:  # until the bridge stops burning CPU on the flood
            time.sleep(1.0)
            now = _cpu(bridge.pid)
            if now - idle_cpu < 0.05:
                break
            idle_cpu = now
        counters = scrape(metrics)
    refused = {reason: counters.value("amqp_bridge_logins_refused_total", listener="facade",
                                      reason=reason) for reason in ("peer_full", "listener_full")}
    abandoned = counters.value("amqp_bridge_logins_abandoned_total", listener="facade")
    print(f"{args.logins} abandoned logins from {args.addresses} address(es) in {attack:.2f} s")
    print(f"legitimate hashed login answered after {waited:.2f} s")
    print(f"bridge CPU for the flood: {idle_cpu - cpu0:.1f} s")
    print(f"refused at once: {refused}; abandoned (dropped or ignored): {abandoned:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
