"""Queue declares a topology-mode listener answers without asking the broker again
(:class:`DeclareCache`; docs/topology.md, "Redeclares answered by the bridge").

Theory of operation
-------------------
Some clients declare the same queue before every publish — Celery's ``rpc://`` backend
redeclares its reply queue before every task and waits for declare-ok — and through
the façade each declare is a request to the 1.0 broker (a management round trip on
RabbitMQ 4). A redeclare is answered by the bridge only when the bridge can *prove*
that the answer would be the broker's:

The witness
    RabbitMQ detaches every consumer link of a queue it deletes. So a 1.0 receiver
    link of this listener on queue Q that has been attached continuously since the
    broker answered a declare of Q proves that the queue the broker confirmed then
    still exists — the same queue, with the properties and arguments it confirmed
    (a queue cannot be changed, only deleted and made again, which detaches the
    link). The cache keeps, per queue, the last declare the broker answered (its
    spec, its counts, when, and how many of the route's links were attached then).

A declare is answered from the cache when
    * an entry exists for the queue, made from a **non-passive** declare the broker
      answered (a passive one tells the queue's arguments to nobody) at most
      :data:`MAX_AGE` seconds ago;
    * the declare is passive, or its spec (flags, arguments, exclusive owner) equals
      the entry's — anything else goes to the broker, which refuses what differs;
    * a consumer link of the queue's route is attached since before that answer
      (the witness), and one of the route's links has credit: then the broker holds
      no ready message for it (RabbitMQ delivers to any consumer with credit), so
      ``message_count`` is 0 — the broker's own answer. Without credit (a full
      prefetch) the broker is asked.
    * the queue is not one where credit does not mean delivery: a stream
      (``x-queue-type: stream``) or a single-active-consumer queue.

    ``consumer_count`` is the broker's last count plus the route's links attached
    since, less those detached: other connections' consumers that came or went within
    :data:`MAX_AGE` are not seen (as a declare-ok's count is stale the moment it is
    sent). A redeclare answered so does not renew an ``x-expires`` lease at the
    broker: irrelevant, since the lease runs only while the queue has no consumer,
    and without one there is no witness.

A young answer, without a witness
    A queue nobody consumes through this listener has no witness — Celery's reply queue
    while its producer sends tasks, each ``.delay()`` redeclaring it and waiting for
    declare-ok before it publishes: a broker round trip per task. A **non-passive**
    redeclare repeating the spec exactly (the client asserting that the queue exists;
    a passive declare asks what it holds, and keeps the witness rule) is also answered
    with the broker's answer while that answer is at most :data:`YOUNG_AGE` seconds
    old — the broker's own counts, as old as that — unless, since it came:

    * a consumer of the queue through this listener went, or a link attached then
      detached (an auto-delete queue goes with its last consumer; RabbitMQ detaches the
      consumers of a queue it deletes);
    * the declaring connection published to the default exchange with the queue's name
      as routing key (it reads its own writes: their count is the broker's to tell);
    * its ``x-expires`` lease is that short or shorter (the lease the broker's answer
      renewed cannot have run out within it).

    What the bridge cannot see within those :data:`YOUNG_AGE` seconds is the price:
    a delete from another connection (or an operator's expiry policy), other
    connections' publishes and consumers, and publishes through exchanges — as a
    broker's declare-ok under load is that late.

Forgotten
    when the queue is deleted or purged through the listener, when its exclusive
    owner goes, once past :data:`MAX_AGE` (pruned as answers pile up: every queue a
    client declared and left would stay otherwise), and implicitly when the witness goes (a detach for any reason: the
    queue deleted by anyone, the 1.0 connection lost, the consumers cancelled).
    What the bridge has not read yet (a detach on its way) it cannot know: a queue
    deleted a moment before its consumers' detach arrives is still answered, as a
    broker's declare-ok is answered a moment before a delete from another connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from ...amqp10.link import Amqp10Link
from ...topology import QueueInfo, QueueSpec

MAX_AGE = 5.0
"""Seconds a broker's answer to a declare is used for redeclares (bounds how long other
connections' consumers may go unseen in ``consumer_count``)."""

YOUNG_AGE = 0.25
"""Seconds a broker's answer to a declare also answers a non-passive redeclare without a
witness (module docstring, "A young answer"): how stale such an answer may be."""


@dataclass
class _Answer:
    """The broker's answer to a non-passive declare."""

    spec: QueueSpec
    info: QueueInfo
    at: float
    """When it came (monotonic)."""
    links: int
    """The route's links attached then."""
    young: bool = True
    """No consumer of the queue through this listener went since (a young answer may
    serve: module docstring)."""
    writers: set[str | None] = field(default_factory=set)
    """The connections (owner ids) that published to the queue by name since."""


PRUNE_FLOOR = 256
"""Answers kept before the first prune of those past :data:`MAX_AGE`."""


def _essence(spec: QueueSpec) -> QueueSpec:
    """What a redeclare must repeat: the flags and arguments (and the owner of an
    exclusive queue; a shared queue's declares from any connection are alike)."""
    return spec if spec.exclusive else replace(spec, owner=None)


def _short_lease(spec: QueueSpec) -> bool:
    """Whether the queue's ``x-expires`` lease could run out within :data:`YOUNG_AGE`."""
    expires = spec.arguments.get("x-expires")
    return isinstance(expires, int) and expires <= YOUNG_AGE * 1000


def _countable(spec: QueueSpec) -> bool:
    """Whether credit on a consumer link means the broker holds no ready message."""
    arguments = spec.arguments
    return arguments.get("x-queue-type") != "stream" \
        and not arguments.get("x-single-active-consumer")


class DeclareCache:
    """The last broker answer per queue and the rule that reuses it (module docstring).
    ``links(queue)`` gives the 1.0 receiver links of the listener's consume route of
    the queue (none when it has no route)."""

    def __init__(self, links: Callable[[str], Iterable[Amqp10Link]],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._links = links
        self._clock = clock
        self._answers: dict[str, _Answer] = {}
        self._prune_at = PRUNE_FLOOR
        """The number of answers at which those past :data:`MAX_AGE` are dropped."""
        self.answered_by: dict[str, int] = {"bridge": 0, "broker": 0}
        """Queue declares answered by the bridge and sent to the broker (the metric
        ``amqp_bridge_facade_queue_declares``)."""

    def answered(self, spec: QueueSpec, passive: bool, info: QueueInfo) -> None:
        """The broker answered a declare of ``spec`` with ``info``."""
        if passive or not spec.name or not _countable(spec):
            return
        up = sum(1 for link in self._links(info.name) if link.up)
        now = self._clock()
        self._answers[info.name] = _Answer(_essence(spec), info, now, up)
        if len(self._answers) >= self._prune_at:
            self._prune(now)

    def _prune(self, now: float) -> None:
        """Drop the answers past :data:`MAX_AGE` (never used again): every queue a client
        declared and left without a delete — a Celery producer's reply queue — would
        otherwise stay for the life of the process. Amortised: the next prune waits for
        twice as many answers as are left."""
        self._answers = {name: answer for name, answer in self._answers.items()
                         if now - answer.at <= MAX_AGE}
        self._prune_at = max(PRUNE_FLOOR, 2 * len(self._answers))

    def __len__(self) -> int:
        """The answers kept (at most the queues declared within MAX_AGE, and fewer than
        twice the number left by the last prune, at least :data:`PRUNE_FLOOR`)."""
        return len(self._answers)

    def lookup(self, spec: QueueSpec, passive: bool) -> QueueInfo | None:
        """The answer to a declare of ``spec`` if the rule allows one without the broker,
        else None (then ask the broker)."""
        known = self._known(spec, passive)
        self.answered_by["broker" if known is None else "bridge"] += 1
        return known

    def _known(self, spec: QueueSpec, passive: bool) -> QueueInfo | None:
        answer = self._answers.get(spec.name)
        if answer is None:
            return None
        age = self._clock() - answer.at
        if age > MAX_AGE or not (passive or _essence(spec) == answer.spec):
            return None
        credit = False
        up = held = 0
        for link in self._links(spec.name):
            if not link.up:
                continue
            up += 1
            if link.up_since <= answer.at:
                held += 1  # (a witness)
            credit = credit or link.credit > 0
        consumers = answer.info.consumer_count
        if consumers is not None:
            consumers = max(0, consumers + up - answer.links)
        if held and credit:
            return QueueInfo(answer.info.name, 0, consumers)
        if passive or age > YOUNG_AGE or not answer.young or held < answer.links \
                or spec.owner in answer.writers or _short_lease(spec):
            return None
        return QueueInfo(answer.info.name, answer.info.message_count, consumers)

    def published(self, queue: str, owner: str | None) -> None:
        """Connection ``owner`` published to the default exchange with routing key
        ``queue``: its next redeclare of the queue is the broker's to answer."""
        answer = self._answers.get(queue)
        if answer is not None:
            answer.writers.add(owner)

    def consumer_gone(self, queue: str) -> None:
        """A consumer of ``queue`` through this listener went: no young answer for it."""
        answer = self._answers.get(queue)
        if answer is not None:
            answer.young = False

    def forget(self, queue: str) -> None:
        """``queue`` was deleted or purged through the listener (or its owner went)."""
        self._answers.pop(queue, None)


__all__ = ["MAX_AGE", "YOUNG_AGE", "DeclareCache"]
