"""The replay harness itself, against a 0-10 server that does what qpidd did.

The in-memory broker (``amqp010.testing.broker``, the engine's server role) has the
default exchange, queues it creates on declare, topic bindings and redelivery, so the
qpid.messaging recordings must replay against it without a failed wait, with the
client's accepts naming the live transfers.
"""

from __future__ import annotations

from typing import Any

import pytest

from amqp010.framing import PROTOCOL_HEADER, Assembler, Assembly, FrameDecoder
from amqp010.spec import (
    DeliveryProperties,
    MessageAccept,
    SessionCommandPoint,
    SessionCompleted,
)
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from tests.data import CAPTURES_QPID_MESSAGING as QPID_MESSAGING
from tests.replay.harness import Replay


def _replay(server: EngineServer, scenario: str) -> Replay:
    host, port = server.address[:2]
    return Replay(QPID_MESSAGING / f"{scenario}.jsonl", host, port).run(linger=0.5)


def _sent(r: Replay, kind: type) -> list[Any]:
    """The ops of kind ``kind`` the replay re-encoded and sent."""
    return [a.op for _, a in r.sent if isinstance(a.op, kind)]


@pytest.mark.parametrize("scenario", sorted(p.stem for p in QPID_MESSAGING.glob("*.jsonl")))
def test_plan_reproduces_the_recorded_bytes(scenario: str) -> None:
    """Cut into pieces for rewriting, the client's stream still holds exactly the
    recorded bytes when nothing is rewritten."""
    r = Replay(QPID_MESSAGING / f"{scenario}.jsonl", "127.0.0.1", 1)
    recorded = b"".join(c.data for c in r.chunks if c.direction == "c2s")
    planned = b"".join(p if isinstance(p, bytes) else p.encode()
                       for step in r._plan for p in step.pieces)
    assert planned == recorded


def test_server_command_ids_are_mapped() -> None:
    """A server that numbers its commands from 100 gets the client's completion and
    accept of the first transfer as 100..102 and 102 (recorded: 0..2 and 2)."""
    r = Replay(QPID_MESSAGING / "messaging_close_unacked_1.jsonl", "127.0.0.1", 1)
    live = bytearray(PROTOCOL_HEADER)
    for seen in r.recorded.items:
        op = seen.op
        if isinstance(op, SessionCommandPoint):
            op = SessionCommandPoint(command_id=100, command_offset=0)
        live += Assembly(seen.assembly.channel, op, seen.assembly.header, seen.assembly.body,
                         segments=seen.assembly.segments,
                         has_header=seen.assembly.has_header).encode()
    r.received(bytes(live))
    rewritten: dict[str, Any] = {}
    for step in r._plan:
        for piece in step.pieces:
            if isinstance(piece, Assembly):
                decoder = FrameDecoder(expect_protocol_header=False)
                decoder.feed(r._rewrite(piece))
                (out,) = list(decoder.assemblies(Assembler()))
                assert isinstance(out, Assembly)
                rewritten[out.op.NAME] = out.op
    assert rewritten["session.completed"].commands.ranges == [(100, 102)]
    assert rewritten["message.accept"].transfers.ranges == [(102, 102)]
    assert rewritten["connection.tune-ok"].channel_max == 65534  # the recorded tune offered it
    assert r.unmapped == []


def test_close_unacked_accepts_name_the_live_transfers(
        legacy: tuple[Broker, EngineServer]) -> None:
    """The first receiver accepts job 0 only (its live transfer id); the second gets
    jobs 1 and 2 redelivered and accepts both: the broker ends with nothing unacked."""
    broker, server = legacy
    first = _replay(server, "messaging_close_unacked_1")
    assert first.errors == [] and first.unmapped == [] and first.exceptions() == []
    job0 = first.live_ops("message.transfer")[0]
    (accept,) = _sent(first, MessageAccept)
    assert list(accept.transfers) == [job0.command_id]

    second = _replay(server, "messaging_close_unacked_2")
    assert second.errors == [] and second.exceptions() == []
    got = second.live_ops("message.transfer")
    assert [t.assembly.body for t in got] == [b"job 1", b"job 2"]
    assert all(t.assembly.header_struct(DeliveryProperties).redelivered for t in got)
    (accept,) = _sent(second, MessageAccept)
    assert list(accept.transfers) == [t.command_id for t in got]
    (completed,) = _sent(second, SessionCompleted)
    assert max(completed.commands) == got[-1].command_id
    assert not any(m.unacked for m in broker.sessions.values())


def test_exchange_sender_through_a_temporary_queue(legacy: tuple[Broker, EngineServer]) -> None:
    """Both messages published to amq.topic reach the receiver's own bound queue."""
    _, server = legacy
    r = _replay(server, "messaging_exchange_sender")
    assert r.errors == []
    got = r.live_ops("message.transfer")
    keys = [t.assembly.header_struct(DeliveryProperties).routing_key for t in got]
    assert keys == ["orders.created", "orders.shipped"]
