"""Poison messages: one message the 1.0 broker refuses by ending the session must not
stop its route (docs/semantics.md, "Poison messages").

RabbitMQ ends the session (3.10: ``amqp:precondition-failed``, 4.0:
``amqp:unauthorized-access``) when a message's user-id is
not the user the bridge logged in as. The route retries that message alone a bounded
number of times, then rejects it at the source with the broker's reason, and every
message behind it moves on.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from proton import Condition, symbol

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from bridge.amqp10.poison import SUSPECTS, PoisonGuard, poison_suspected
from tests.support.bridge import (
    BridgeRun,
    bridge_config,
    collect,
    legacy_backlog,
    publish_legacy,
    wait_for,
)
from tests.support.rabbitmq import queue_address, unique_queue, version_of

COUNT = 30
POISON = 12


@pytest.mark.rabbitmq(3, 4)  # 3.10 ends the session with precondition-failed, 4.0 with
def test_a_message_that_ends_the_session_is_rejected_and_the_route_goes_on(  # unauthorized

        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    broker, server = legacy
    target = unique_queue("poison")
    messages = []
    for i in range(COUNT):
        mp = MessageProperties(message_id=uuid.UUID(int=i + 1),
                               user_id=b"alice" if i == POISON else None)
        messages.append((DeliveryProperties(), mp, f"m{i}".encode()))
    publish_legacy(server, "poison-src", messages)
    route = f"""
  - name: poison-out
    from: {{connection: legacy, queue: poison-src}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    max_in_flight: {{messages: 8}}
    poison_attempts: 3
    user_id: keep   # pass user-ids as they are: RabbitMQ refuses alice's
"""
    with BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path) as bridge:
        wanted = {f"m{i}".encode() for i in range(COUNT) if i != POISON}
        # at-least-once: what was in flight when RabbitMQ ended a session may come twice
        got = collect(rabbitmq_url, queue_address(target),
                      lambda got: {bytes(m.body) for m in got} >= wanted, timeout=60)
        wait_for(lambda: legacy_backlog(broker, "poison-src") == 0, 30,
                 "the source queue to drain", bridge)
        assert bridge.proc is not None and bridge.proc.poll() is None
        assert bridge.stop() == 0, bridge.log()
    assert {bytes(m.body) for m in got} == wanted
    assert len(got) - len(wanted) <= 8  # duplicates: at most max_in_flight
    # the poison message was rejected at the source, with RabbitMQ's reason
    assert [m.body for m in broker.dead_letters] == [f"m{POISON}".encode()]
    log = bridge.log()
    assert "event=poison_message" in log, log
    condition = "precondition-failed" if version_of(rabbitmq_url) == 3 else "unauthorized-access"
    assert condition in log.split("event=poison_message")[0].rsplit("\n", 1)[-1]
    stats = [line for line in log.splitlines() if "event=stats" in line][-1]
    assert "poison_messages=1" in stats and "rejected=1" in stats, stats


def test_by_default_user_ids_the_target_would_refuse_are_carried_not_refused(
        legacy: tuple[Broker, EngineServer], rabbitmq_url: str, tmp_path: Path) -> None:
    """qpidd stamps user-id '' on messages that came in over 1.0; a 0-10 application
    publishes as alice while the bridge logs into RabbitMQ as guest. With the default
    rule (``user_id: authenticated``) neither ends the session: an empty user-id is
    none, and alice's travels in the annotation x-amqp-0-10.user-id."""
    _, server = legacy
    target = unique_queue("user-ids")
    users = [b"", b"alice", b"guest", None]
    publish_legacy(server, "user-ids", [
        (DeliveryProperties(), MessageProperties(message_id=uuid.UUID(int=i + 1), user_id=u),
         f"u{i}".encode()) for i, u in enumerate(users)])
    route = f"""
  - name: user-ids-out
    from: {{connection: legacy, queue: user-ids}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
"""
    with BridgeRun(bridge_config(server.url, rabbitmq_url, route), tmp_path) as bridge:
        got = collect(rabbitmq_url, queue_address(target), lambda got: len(got) >= 4,
                      timeout=30, linger=0.5)
        assert bridge.stop() == 0, bridge.log()
    assert "event=poison_message" not in bridge.log() and "precondition-failed" not in bridge.log()
    by_body = {bytes(m.body): m for m in got}
    assert sorted(by_body) == [b"u0", b"u1", b"u2", b"u3"]
    carried = symbol("x-amqp-0-10.user-id")
    assert by_body[b"u0"].user_id in (None, b"") and carried not in (by_body[b"u0"].annotations or {})
    assert by_body[b"u1"].user_id in (None, b"")
    assert bytes(by_body[b"u1"].annotations[carried]) == b"alice"
    assert bytes(by_body[b"u2"].user_id) == b"guest"  # the bridge's own login: kept
    assert by_body[b"u3"].user_id in (None, b"")


def test_the_guard_probes_after_an_ambiguous_refusal_and_convicts_a_lone_suspect() -> None:
    guard = PoisonGuard(3)
    assert guard.window(50) == 50
    assert guard.refused(["a", "b", "c"]) is None  # which one? nobody can tell
    assert guard.probing and guard.window(50) == 1
    assert guard.refused(["b"]) is None and guard.attempts("b") == 1
    assert guard.refused(["b"]) is None and guard.attempts("b") == 2
    assert guard.refused(["b"]) == "b"  # third time alone: poison
    assert guard.attempts("b") == 0
    guard.accepted("a")
    assert guard.probing  # "c" is still a suspect
    guard.accepted("c")
    assert not guard.probing and guard.window(50) == 50


def test_only_errors_that_may_concern_a_message_are_blamed_on_one() -> None:
    assert poison_suspected(Condition("amqp:precondition-failed", "user_id ..."))
    assert poison_suspected(Condition("amqp:resource-limit-exceeded"))
    # RabbitMQ 4's answer to that user-id ends the session so (3.10: precondition-failed)
    assert poison_suspected(Condition(
        "amqp:unauthorized-access",
        "user_id property set to 'alice' but authenticated user was 'guest'"))
    assert not poison_suspected(None)
    assert not poison_suspected(Condition("amqp:not-found", "no queue"))
    assert not poison_suspected(Condition("amqp:link:detach-forced"))


def test_an_accepted_suspect_is_cleared_and_the_table_stays_bounded() -> None:
    guard = PoisonGuard(2)
    assert guard.refused(["x"]) is None
    guard.accepted("x")
    assert guard.attempts("x") == 0 and not guard.probing
    for i in range(SUSPECTS + 10):
        guard.refused([i])
    assert guard.attempts(0) == 0  # the oldest suspects were forgotten
    assert guard.attempts(SUSPECTS + 9) == 1
