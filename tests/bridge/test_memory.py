"""Memory bound: a 100,000-message backlog behind a slow consumer.

The 0-10 queue holds 100,000 messages of 1 KiB; the bridge moves them to RabbitMQ
through a link throttled to a trickle (a TCP relay that forwards the bridge's bytes
at ``SLOW_RATE`` octets/s: the target accepts, and so settles, slowly), then at
full speed. Throughout, the 0-10 broker never has more than ``max_in_flight``
messages out to the bridge (credit bridging: the rest of the backlog stays in the
source), and the bridge process's resident memory stays under ``RSS_BOUND``
(docs/semantics.md, "Memory bounds").
"""

from __future__ import annotations

import time
from pathlib import Path

from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from tests.support.bridge import (
    BridgeRun,
    bridge_config,
    preload,
    wait_for,
)
from tests.support.logs import route_stats
from tests.support.rabbitmq import queue_address, rabbitmqctl, unique_queue
from tests.support.relay import Relay

BACKLOG = 100_000
MAX_IN_FLIGHT = 1000
RSS_BOUND = 80 * 1024  # KiB: ~55 MiB idle + ~4 KiB per in-flight 1 KiB message + margin
SLOW_RATE = 256 * 1024  # octets/s towards RabbitMQ while throttled
FAST_PHASE_MESSAGES = 30_000  # the fast phase ends here (or after 8 s), with the rest still waiting


def test_100000_message_backlog_behind_a_slow_consumer_stays_bounded(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    preload(broker, "backlog", BACKLOG)
    target = unique_queue("memory")
    port = int(rabbitmq_url.rsplit(":", 1)[1])
    relay = Relay(("127.0.0.1", port), SLOW_RATE)
    route = f"""
  - name: backlog-out
    from: {{connection: legacy, queue: backlog}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    cloudevents: {{mode: binary, type: com.example.backlog, source: /legacy/backlog}}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
"""
    url = rabbitmq_url.replace(f":{port}", f":{relay.port}")
    out_to_bridge: list[int] = []  # the broker's messages delivered and not yet accepted
    rss: list[int] = []
    queue = broker.queues["backlog"]

    def sample() -> None:
        out_to_bridge.append(BACKLOG - moved() - len(queue.messages))
        rss.append(bridge.status("VmRSS"))

    def moved() -> int:
        return BACKLOG - len(queue.messages) - unaccepted()

    def unaccepted() -> int:
        while True:
            try:
                return sum(len(m.unacked) for m in list(broker.sessions.values()))
            except RuntimeError:  # changed size during iteration: retry
                continue

    bridge = BridgeRun(bridge_config(server.url, url, route), tmp_path).start()
    try:
        wait_for(lambda: moved() > 0, 30, "the bridge to start", bridge)
        slow_until = time.monotonic() + 8
        while time.monotonic() < slow_until:  # the consumer trickles
            sample()
            time.sleep(0.1)
        slow_moved = moved()
        relay.rate = None
        fast_until = time.monotonic() + 8
        # the consumer keeps up: long enough to show the speed-up, short enough that most
        # of the backlog still waits in the source while memory is sampled
        while time.monotonic() < fast_until and moved() - slow_moved < FAST_PHASE_MESSAGES:
            sample()
            time.sleep(0.1)
        fast_moved = moved() - slow_moved
        peak_rss = bridge.status("VmHWM")
    finally:
        bridge.stop()
        relay.close()
        rabbitmqctl(rabbitmq_url, "delete_queue", target)
    stats = route_stats(bridge.log(), "backlog-out")
    print(f"\nslow phase: {slow_moved} messages in 8 s, fast phase: {fast_moved} in 8 s; "
          f"bridge RSS max {max(rss) / 1024:.1f} MiB (VmHWM {peak_rss / 1024:.1f} MiB); "
          f"at most {max(out_to_bridge)} messages out to the bridge")
    assert 0 < slow_moved < fast_moved  # the trickle did hold it back
    assert BACKLOG - slow_moved - fast_moved > BACKLOG // 2  # most of the backlog still waits
    assert max(out_to_bridge) <= MAX_IN_FLIGHT  # the rest of the backlog stayed in the source
    assert stats["peak_in_flight"] <= MAX_IN_FLIGHT
    assert peak_rss < RSS_BOUND, f"bridge VmHWM {peak_rss} KiB"
