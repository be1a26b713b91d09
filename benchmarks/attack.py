"""What the attack mix costs the legitimate users: a façade client's login latency and the
canary route's throughput, without and with every attack of the mix running, in one run.

Run: ``.venv/bin/python benchmarks/attack.py [--seconds 15] [--messages 2000]``
(needs the project's RabbitMQ, started like the tests start it).

Set-up: the bridge of ``tests/security/test_attack_mix.py`` (one listener with a
PBKDF2-hashed user at 100,000 iterations, a canary route from the in-memory 0-10 broker to
RabbitMQ). Each phase (quiet, then under attack) lasts ``--seconds``: a client from
127.0.0.1 logs in and publishes over and over (its login latency is recorded), then
``--messages`` are put on the canary's 0-10 queue and timed until all arrived at RabbitMQ.
Figures and ratios only, no pass/fail.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import _timing  # noqa: F401  (puts the project root first on sys.path)

from amqp010.testing.server import EngineServer
from bridge.security.passwords import hash_password
from tests.security.test_attack_mix import ITERATIONS, LIMIT, canary_batch, config
from tests.support.bridge import (
    BridgeRun,
    collect,
    free_port,
    legacy_broker,
    legacy_client,
    publish_legacy,
    wait_listening,
)
from tests.support.hostile import AttackStats, Target, client_from, run_attacks
from tests.support.metrics import http_get, metrics_port, poll
from tests.support.rabbitmq import ensure_rabbitmq, queue_address, unique_queue


def _logins(port: int, seconds: float) -> list[float]:
    out = []
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        start = time.perf_counter()
        with client_from("127.0.0.1", port, "app", "right", timeout=60) as client:
            out.append(time.perf_counter() - start)
            client.publish(f"bench {n}".encode(), exchange="events", routing_key="e")
        n += 1
    return out


def _canary(server: EngineServer, url: str, address: str, count: int, first: int) -> float:
    """Messages per second from the 0-10 queue to RabbitMQ for ``count`` messages."""
    expected = {f"canary {i}".encode() for i in range(first, first + count)}
    start = time.perf_counter()
    for at in range(first, first + count, 500):
        publish_legacy(server, "canary", canary_batch(at, min(500, first + count - at)))
    got = collect(url, address, lambda ms: expected <= {bytes(m.body) for m in ms},
                  linger=0.0, timeout=300)
    elapsed = time.perf_counter() - start
    assert expected <= {bytes(m.body) for m in got}, "canary messages missing"
    return count / elapsed


def _summary(name: str, latencies: list[float], rate: float) -> str:
    q = statistics.quantiles(latencies, n=20) if len(latencies) >= 2 else [0.0] * 19
    return (f"{name:>13}: {len(latencies)} logins, latency median "
            f"{statistics.median(latencies) * 1000:.1f} ms, p95 {q[18] * 1000:.1f} ms, "
            f"max {max(latencies) * 1000:.1f} ms; canary {rate:.0f} msg/s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--messages", type=int, default=2000)
    args = parser.parse_args()
    url = ensure_rabbitmq()
    port = free_port()
    queues = {name: queue_address(unique_queue(f"attack-bench-{name}"))
              for name in ("canary", "events", "limited")}
    with legacy_broker() as (_, server), tempfile.TemporaryDirectory() as tmp:
        with legacy_client(server) as admin:
            admin.declare_queue("canary")
        cfg = config(server.url, url, port, hash_password("right", iterations=ITERATIONS),
                     queues)
        with BridgeRun(cfg, Path(tmp)) as bridge:
            wait_listening(port, bridge)
            mport = metrics_port(bridge.log)
            poll(lambda: http_get(mport, "/readyz")[0], lambda s: s == 200, 30, "ready")
            quiet = _logins(port, args.seconds)
            quiet_rate = _canary(server, url, queues["canary"], args.messages, 0)
            stop, stats = threading.Event(), AttackStats()
            errors: list[BaseException] = []
            threads = run_attacks(Target(port, "app", "right", "events", "limited", LIMIT),
                                  stop, stats, errors)
            try:
                time.sleep(3.0)  # let the attacks reach their steady state
                attacked = _logins(port, args.seconds)
                attacked_rate = _canary(server, url, queues["canary"], args.messages,
                                        args.messages)
            finally:
                stop.set()
                for thread in threads:
                    thread.join(30)
    print(_summary("quiet", quiet, quiet_rate))
    print(_summary("under attack", attacked, attacked_rate))
    print(f"ratios (attack / quiet): login latency median "
          f"{statistics.median(attacked) / statistics.median(quiet):.2f}x, "
          f"logins per second {len(attacked) / max(len(quiet), 1):.2f}x, "
          f"canary throughput {attacked_rate / quiet_rate:.2f}x")
    print(f"attacks during the second phase: {dict(stats.counts)}")
    if errors:
        print(f"attack threads failed: {errors!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
