"""A receiver link whose peer sent more than the credit (RabbitMQ 3.x's 1.0 plugin can).

Proton lets the receiver's credit go below 0 then, and puts a negative credit on the wire
as a uint: a top-up of 1 from -3 would tell the peer it may send 4294967294 messages.
:meth:`~bridge.amqp10.link.Amqp10Link.add_credit` writes the overdrawn credit off first.

The first test has two proton engines talk in memory (no sockets, no reactor); what the
bridge's side sends passes through :class:`~tests.support.overcredit.OverCredit`, which
makes the peer's sender believe it has 3 credits more than granted — the overdraft, made
certain.  The second runs ``amqp-bridge run`` with a 1.0 → 0-9-1 route whose 1.0
connection goes through a relay with the same rewrite, RabbitMQ on both sides: a small
window is overdrawn again and again, and the credit the bridge sends stays within it.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pika
from proton import Message

from bridge.amqp10.link import Amqp10Link
from tests.support.bridge import BridgeRun, bridge_config, wait_for
from tests.support.link_owners import ManualTimers, NotingOwner
from tests.support.logs import route_stats
from tests.support.memory_pair import MemoryPair
from tests.support.overcredit import OverCredit, link_credit, split
from tests.support.rabbitmq import queue_address, send_messages, unique_queue
from tests.support.relay import Relay


def _link_credits(data: bytes) -> list[int]:
    """The link-credit of each link flow frame in ``data`` (whole frames)."""
    frames = [frame for frame in split(bytearray(data)) if frame[:4] != b"AMQP"]
    return [c for c in map(link_credit, frames) if c is not None]


def test_a_top_up_after_the_peer_overdrew_the_credit_is_what_was_granted() -> None:
    overcredit = OverCredit(extra=3)
    pair = MemoryPair(overcredit())
    pair.ours.open()
    link = Amqp10Link(ManualTimers(), pair.ours, "/queue/q",  # type: ignore[arg-type]
                      sender=False, owner=NotingOwner(), name="r")
    pair.pump()
    sender = pair.open_peer()
    link.up = True  # attached (the reactor's remote-open event, which nothing runs here)
    receiver = link.link

    link.add_credit(1)
    pair.pump()
    assert sender.credit == 4  # the peer was told 1 + 3
    for i in range(4):
        sender.delivery(f"d{i}".encode())
        sender.send(Message(body=f"m{i}").encode())
        sender.advance()
    pair.pump()
    taken = 0
    while receiver.current is not None:
        receiver.recv(receiver.current.pending)
        receiver.advance()
        taken += 1
    assert taken == 4 and receiver.credit == -3  # the overdraft
    assert link.promised == 0  # overdrawn credit is no credit

    overcredit.extra = 0
    pair.sent.clear()
    link.add_credit(1)
    pair.pump()
    assert _link_credits(b"".join(pair.sent)) == [1]  # not 4294967294
    assert receiver.credit == 1 and link.promised == 1
    assert sender.credit == 1  # the peer may send exactly one more


def test_a_route_overdrawn_again_and_again_keeps_its_window_and_loses_nothing(
        rabbitmq_url: str, tmp_path: Path) -> None:
    source, bound = unique_queue("overdrawn-in"), unique_queue("overdrawn-out")
    key = f"overdrawn.{uuid.uuid4()}"
    with pika.BlockingConnection(pika.URLParameters(rabbitmq_url)) as conn:
        ch = conn.channel()
        ch.queue_declare(bound, arguments={"x-expires": 600_000})
        ch.queue_bind(bound, "amq.direct", key)
    count = 60
    send_messages(rabbitmq_url, queue_address(source),
                  [Message(body=f"o{i}".encode(), inferred=True) for i in range(count)])
    overcredit = OverCredit(extra=5)  # RabbitMQ sends up to 5 more than granted
    relay = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])), rewrite=overcredit)
    route = f"""
  - name: overdrawn
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: rabbit, exchange: amq.direct, routing_key: "{key}"}}
    max_in_flight: {{messages: 2}}
"""
    config = bridge_config(f"{rabbitmq_url}/%2F", relay.url(rabbitmq_url), route,
                           protocol="amqp0-9-1", legacy="rabbit")
    try:
        with BridgeRun(config, tmp_path) as bridge, \
                pika.BlockingConnection(pika.URLParameters(rabbitmq_url)) as conn:
            ch = conn.channel()
            got: list[bytes] = []

            def more() -> bool:
                while (taken := ch.basic_get(bound, auto_ack=True))[0] is not None:
                    got.append(taken[2])
                return len(got) >= count

            wait_for(more, 30, f"{count} messages through the overdrawn route", bridge)
    finally:
        relay.close()
    assert got == [f"o{i}".encode() for i in range(count)]
    assert overcredit.inflated > 0
    assert overcredit.largest <= 2  # never a negative credit sent as a huge uint
    # what RabbitMQ sent beyond the credit is counted (and may pass the window by as many)
    stats = route_stats(bridge.log(), "overdrawn")
    assert stats["overdrawn"] > 0
    assert stats["peak_in_flight"] <= 2 + stats["overdrawn"]
