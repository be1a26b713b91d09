"""0-9-1 sources on quorum queues, and what a 1.0 target's outcomes do to a 0-9-1 source:
RabbitMQ (the shared node) as the 0-9-1 broker, a 1.0 peer in the test process
(:class:`~tests.support.amqp10_peer.OutcomePeer`) or RabbitMQ's 1.0 side as the target."""

from __future__ import annotations

from pathlib import Path

import pika
from proton import Message

from mappings.message import AmqpMessage
from tests.bridge.test_routes091 import (
    amq_queue,
    declare,
    depth,
    pika_channel,
    pika_get_all,
)
from tests.support.amqp10_peer import ACCEPTED, MODIFIED, REJECTED, RELEASED, OutcomePeer
from tests.support.bridge import BridgeRun, collect, config091, wait_for
from tests.support.logs import records
from tests.support.rabbitmq import receive_messages, send_messages, unique_queue


def publish(url: str, queue: str, prefix: str, count: int) -> None:
    with pika_channel(url) as ch:
        for i in range(count):
            ch.basic_publish("", queue, f"{prefix} {i}".encode(),
                             pika.BasicProperties(message_id=f"{prefix}-{i}", delivery_mode=2))


def quorum(url: str, queue: str) -> None:
    with pika_channel(url) as ch:
        ch.queue_declare(queue, durable=True, arguments={"x-queue-type": "quorum",
                                                          "x-expires": 600_000})


def peer_connection(peer: OutcomePeer) -> str:
    """The 1.0 connection ``peer`` to the test's own 1.0 peer (``config091``'s ``more``)."""
    return f"""  peer:
    protocol: amqp1.0
    url: "{peer.url}"
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
"""


def test_quorum_queue_sources_consume_with_a_per_consumer_window(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """RabbitMQ refuses a channel-wide prefetch on quorum queues (by closing the
    connection): a source configured ``prefetch: window`` consumes with a per-consumer
    prefetch of ``max_in_flight`` and holds what comes beyond the 1.0 credit; one left at
    the default switches to window mode after the refusal (logged once), and a classic
    source on the same connection goes on."""
    auto, window, classic = (unique_queue("r091-qq-auto"), unique_queue("r091-qq-win"),
                             unique_queue("r091-classic"))
    auto_dst, classic_dst = unique_queue("r091-qq-auto-dst"), unique_queue("r091-classic-dst")
    quorum(rabbitmq_url, auto)
    quorum(rabbitmq_url, window)
    for queue in (classic, auto_dst, classic_dst):
        declare(rabbitmq_url, queue)
    count = 50
    for queue, prefix in ((auto, "auto"), (window, "win"), (classic, "classic")):
        publish(rabbitmq_url, queue, prefix, count)
    routes = f"""
  - name: r091-qq-auto
    from: {{connection: rabbit, queue: {auto}}}
    to:   {{connection: cloud, address: {amq_queue(auto_dst)}}}
    max_in_flight: {{messages: 8}}
  - name: r091-qq-window
    from: {{connection: rabbit2, queue: {window}, prefetch: window}}
    to:   {{connection: peer, address: somewhere}}
    max_in_flight: {{messages: 10}}
  - name: r091-classic
    from: {{connection: rabbit, queue: {classic}}}
    to:   {{connection: cloud, address: {amq_queue(classic_dst)}}}
"""
    with OutcomePeer(credit=3) as peer:
        peer.hold()  # the peer settles nothing: the route has 3 credits, no more
        # (its own connection: the first one reconnects once, when RabbitMQ refuses the
        # channel-wide prefetch of r091-qq-auto)
        text = config091(rabbitmq_url, routes, more=peer_connection(peer) + f"""\
  rabbit2: {{protocol: amqp0-9-1, url: "{rabbitmq_url}"}}
""")
        with BridgeRun(text, tmp_path) as bridge:
            got_auto = receive_messages(rabbitmq_url, amq_queue(auto_dst), count, timeout=30)
            # (the classic route's channel was lost with the connection: at least once)
            wanted = {f"classic-{i}" for i in range(count)}
            got_classic = collect(rabbitmq_url, amq_queue(classic_dst),
                                  lambda ms: {m.id for m in ms} >= wanted, linger=0.2,
                                  timeout=30)
            # RabbitMQ delivered the window (10) and keeps the rest ready; the route
            # passed on only what the peer's credit allowed (3)
            wait_for(lambda: depth(rabbitmq_url, window) == count - 10 and peer.held == 3,
                     20, "the window delivered, the credit used", bridge)
            assert len(peer.seen) == 3
            peer.let_go()
            wait_for(lambda: len(peer.ids()) >= count, 30, "every window message", bridge)
            wait_for(lambda: depth(rabbitmq_url, window) == 0, 10, "the window acked", bridge)
            log = bridge.log()
    assert [r.message.id for r in got_auto] == [f"auto-{i}" for i in range(count)]
    assert peer.ids() == [f"win-{i}" for i in range(count)]  # in order, once each
    assert {m.id for m in got_classic} == wanted
    switched = [r for r in records(log) if r.get("event") == "prefetch_window"]
    assert [r["route"] for r in switched] == ["r091-qq-auto"], log
    assert "does not support global qos" in switched[0]["error"]


def test_released_modified_and_rejected_outcomes_reach_the_091_queue(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """released and modified → basic.reject(requeue=true): RabbitMQ delivers the message
    again, marked redelivered (1.0: first-acquirer false); rejected →
    basic.reject(requeue=false): the queue's dead-letter exchange takes it. Every other
    message is delivered (at least once) and the queue ends empty."""
    source, dlq = unique_queue("r091-out"), unique_queue("r091-out-dlx")
    declare(rabbitmq_url, dlq)
    declare(rabbitmq_url, source, **{"x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": dlq})
    count = 30
    publish(rabbitmq_url, source, "o", count)

    def fate(i: int) -> str:
        return REJECTED if i % 5 == 4 else RELEASED if i % 3 == 0 else \
            MODIFIED if i % 3 == 1 else ACCEPTED

    def decide(message: Message, seen_before: int) -> str:
        wanted = fate(int(str(message.id).split("-")[1]))
        return wanted if wanted == REJECTED or not seen_before else ACCEPTED

    rejected = {f"o-{i}" for i in range(count) if fate(i) == REJECTED}
    routes = f"""
  - name: r091-outcomes
    from: {{connection: rabbit, queue: {source}}}
    to:   {{connection: peer, address: somewhere}}
    max_in_flight: {{messages: 7}}
"""
    with OutcomePeer(decide) as peer, \
            BridgeRun(config091(rabbitmq_url, routes, more=peer_connection(peer)), tmp_path) as bridge:
        dead = pika_get_all(rabbitmq_url, dlq, len(rejected))
        wait_for(lambda: set(peer.ids()) >= {f"o-{i}" for i in range(count)} - rejected,
                 30, "every other message accepted", bridge)
        wait_for(lambda: depth(rabbitmq_url, source) == 0, 10, "the source settled", bridge)
    assert sorted(props.message_id for _, props, _ in dead) == sorted(rejected)
    for _, props, _ in dead:  # RabbitMQ's own DLX: rejected by the bridge, not requeued
        assert props.headers["x-death"][0]["reason"] == "rejected"
        assert props.headers["x-death"][0]["queue"] == source
    seen = peer.seen
    assert [s.message.id for s in seen if s.outcome == REJECTED] == \
        [i for i in (s.message.id for s in seen) if i in rejected]  # rejected once each
    for i in range(count):
        mid = f"o-{i}"
        if mid in rejected:
            continue
        arrivals = [AmqpMessage.decode(s.raw) for s in seen if s.message.id == mid]
        # the first arrival is not marked; one given back comes again, redelivered
        assert arrivals[0].header is None or arrivals[0].header.first_acquirer is None, \
            (mid, arrivals)
        if fate(i) in (RELEASED, MODIFIED):
            assert len(arrivals) >= 2, (mid, arrivals)
            assert arrivals[1].header is not None
            assert arrivals[1].header.first_acquirer is False, (mid, arrivals)


def test_returns_are_matched_to_their_publishes_among_routable_ones(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """One route publishes routable and unroutable messages interleaved (the routing key
    is each message's subject), some with the same body: each basic.return refuses
    exactly its own publish — the unroutable ones reach the 1.0 source queue's DLX, the
    routable ones the bound queue, in order, and none is refused or lost by mistake."""
    source, dlx, bound = (unique_queue("r091-mix"), unique_queue("r091-mix-dlx"),
                          unique_queue("r091-mix-bound"))
    declare(rabbitmq_url, dlx)
    declare(rabbitmq_url, bound)
    declare(rabbitmq_url, source, **{"x-dead-letter-exchange": "",
                                     "x-dead-letter-routing-key": dlx})
    key, nowhere = f"mix.{source}", f"nowhere.{source}"
    with pika_channel(rabbitmq_url) as ch:
        ch.queue_bind(bound, "amq.direct", key)
    count = 60
    # unroutable: a run of 3 in every 7, and singles; bodies repeat across both kinds
    unroutable = {i for i in range(count) if i % 7 in (2, 3, 4) or i % 11 == 0}
    send_messages(rabbitmq_url, amq_queue(source), [
        Message(body=f"body {i % 4}".encode(), inferred=True, id=f"mix-{i}",
                subject=nowhere if i in unroutable else key) for i in range(count)])
    routes = f"""
  - name: r091-mix
    from: {{connection: cloud, address: {amq_queue(source)}}}
    to:   {{connection: rabbit, exchange: amq.direct}}
    max_in_flight: {{messages: 16}}
"""
    routable = [f"mix-{i}" for i in range(count) if i not in unroutable]
    with BridgeRun(config091(rabbitmq_url, routes), tmp_path) as bridge:
        delivered = pika_get_all(rabbitmq_url, bound, len(routable))
        refused = pika_get_all(rabbitmq_url, dlx, len(unroutable))
        wait_for(lambda: depth(rabbitmq_url, source) == 0, 10, "the source settled", bridge)
        log = bridge.log()
    assert [props.message_id for _, props, _ in delivered] == routable
    assert sorted(props.message_id for _, props, _ in refused) == \
        sorted(f"mix-{i}" for i in unroutable)
    for _, props, body in refused:
        assert props.headers["x-death"][0]["reason"] == "rejected"
        assert body == f"body {int(props.message_id.split('-')[1]) % 4}".encode()
    assert "unmatched_return" not in log
    assert depth(rabbitmq_url, bound) == 0  # nothing more than the routable ones
