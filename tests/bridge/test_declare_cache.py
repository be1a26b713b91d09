"""The rule by which a topology-mode 0-9-1 listener answers a queue redeclare itself
(bridge/facade/amqp091/declare_cache.py), on its own with a hand-turned clock: the
witness rule, and the young answer without a witness — what serves it (a non-passive
redeclare repeating the spec within YOUNG_AGE of the broker's answer, with the broker's
counts) and each thing that sends the redeclare to the broker again. The real façade
against RabbitMQ: tests/bridge/test_facade091_redeclare.py."""

from __future__ import annotations

from dataclasses import dataclass, replace

from bridge.facade.amqp091.declare_cache import MAX_AGE, PRUNE_FLOOR, YOUNG_AGE, DeclareCache
from bridge.topology import QueueInfo, QueueSpec

REPLY = QueueSpec("celery-reply", durable=True, auto_delete=True,
                  arguments={"x-expires": 86400000}, owner="producer")
"""Celery's ``rpc://`` reply queue as its producer declares it before every task."""


@dataclass
class Link:
    """What the cache reads of a consumer's 1.0 link."""

    up: bool = True
    up_since: float = 0.0
    credit: int = 1


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def cache_with(links: list[Link]) -> tuple[DeclareCache, Clock]:
    clock = Clock()
    return DeclareCache(lambda queue: links, clock), clock


def answered(cache: DeclareCache, spec: QueueSpec = REPLY, ready: int = 3,
             consumers: int = 0) -> None:
    cache.answered(spec, False, QueueInfo(spec.name, ready, consumers))


def test_a_young_answer_serves_a_redeclare_without_a_witness_with_the_brokers_counts() -> None:
    cache, clock = cache_with([])
    answered(cache)
    clock.now += YOUNG_AGE
    assert cache.lookup(REPLY, False) == QueueInfo(REPLY.name, 3, 0)
    # another connection's redeclare of the shared queue too
    assert cache.lookup(replace(REPLY, owner="worker"), False) == QueueInfo(REPLY.name, 3, 0)
    assert cache.answered_by == {"bridge": 2, "broker": 0}


def test_an_answer_older_than_young_age_leaves_the_unwitnessed_redeclare_to_the_broker() -> None:
    cache, clock = cache_with([])
    answered(cache)
    clock.now += YOUNG_AGE + 0.001
    assert cache.lookup(REPLY, False) is None
    assert cache.answered_by == {"bridge": 0, "broker": 1}


def test_a_passive_declare_without_a_witness_is_the_brokers() -> None:
    cache, _ = cache_with([])
    answered(cache)
    assert cache.lookup(REPLY, True) is None


def test_a_redeclare_with_other_arguments_is_the_brokers() -> None:
    cache, _ = cache_with([])
    answered(cache)
    assert cache.lookup(replace(REPLY, arguments={"x-expires": 1000}), False) is None


def test_the_declaring_connection_reads_its_own_publishes_to_the_queue() -> None:
    cache, _ = cache_with([])
    answered(cache)
    cache.published(REPLY.name, "worker")  # another connection's: not seen (documented)
    assert cache.lookup(REPLY, False) is not None
    cache.published(REPLY.name, "producer")
    assert cache.lookup(REPLY, False) is None
    assert cache.lookup(replace(REPLY, owner="other"), False) is not None
    answered(cache)  # the broker's new answer counts those publishes
    assert cache.lookup(REPLY, False) is not None


def test_a_consumer_gone_ends_the_young_answer() -> None:
    """An auto-delete queue goes with its last consumer."""
    cache, _ = cache_with([])
    answered(cache)
    cache.consumer_gone(REPLY.name)
    assert cache.lookup(REPLY, False) is None


def test_a_link_attached_at_the_answer_and_since_detached_or_reattached_ends_it() -> None:
    """RabbitMQ detaches the consumers of a queue it deletes (and RabbitMQ 4's link may
    come back to a queue of the same name made again)."""
    link = Link(up_since=50.0, credit=0)  # (no credit: no witness answer)
    cache, clock = cache_with([link])
    answered(cache, consumers=1)
    assert cache.lookup(REPLY, False) == QueueInfo(REPLY.name, 3, 1)
    link.up_since = clock.now + 0.01  # re-attached after the answer
    assert cache.lookup(REPLY, False) is None
    link.up = False
    assert cache.lookup(REPLY, False) is None


def test_a_consumer_that_came_after_the_answer_is_counted_and_does_not_end_it() -> None:
    links: list[Link] = []
    cache, clock = cache_with(links)
    answered(cache)
    links.append(Link(up_since=clock.now + 0.01))
    assert cache.lookup(REPLY, False) == QueueInfo(REPLY.name, 3, 1)


def test_a_short_x_expires_lease_is_renewed_at_the_broker() -> None:
    short = replace(REPLY, arguments={"x-expires": int(YOUNG_AGE * 1000)})
    cache, _ = cache_with([])
    answered(cache, short)
    assert cache.lookup(short, False) is None
    longer = replace(REPLY, arguments={"x-expires": int(YOUNG_AGE * 1000) + 1})
    answered(cache, longer)
    assert cache.lookup(longer, False) is not None


def test_the_witness_rule_answers_for_max_age_with_no_ready_message() -> None:
    """A consumer with credit attached since the answer: the broker holds no ready
    message, whatever it said then."""
    link = Link(up_since=50.0)
    cache, clock = cache_with([link])
    answered(cache, ready=3, consumers=1)
    clock.now += MAX_AGE
    assert cache.lookup(REPLY, True) == QueueInfo(REPLY.name, 0, 1)
    clock.now += 0.001
    assert cache.lookup(REPLY, True) is None


def test_a_forgotten_queue_is_the_brokers() -> None:
    cache, _ = cache_with([])
    answered(cache)
    cache.forget(REPLY.name)
    assert cache.lookup(REPLY, False) is None


def test_answers_past_max_age_do_not_pile_up() -> None:
    """Every queue a client declares and leaves without a delete (a Celery producer's reply
    queue, one per process) would stay for the life of the bridge."""
    cache, clock = cache_with([])
    for n in range(10 * PRUNE_FLOOR):
        answered(cache, replace(REPLY, name=f"reply-{n}"))
        clock.now += MAX_AGE / 100  # (a hundred declares within MAX_AGE)
    assert len(cache) < 2 * PRUNE_FLOOR
    # the last one is still answered
    assert cache.lookup(replace(REPLY, name=f"reply-{10 * PRUNE_FLOOR - 1}"), False) is not None
