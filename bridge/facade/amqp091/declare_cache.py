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

Forgotten
    when the queue is deleted or purged through the listener, when its exclusive
    owner goes, and implicitly when the witness goes (a detach for any reason: the
    queue deleted by anyone, the 1.0 connection lost, the consumers cancelled).
    What the bridge has not read yet (a detach on its way) it cannot know: a queue
    deleted a moment before its consumers' detach arrives is still answered, as a
    broker's declare-ok is answered a moment before a delete from another connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ...amqp10.link import Amqp10Link
from ...topology import QueueInfo, QueueSpec

MAX_AGE = 5.0
"""Seconds a broker's answer to a declare is used for redeclares (bounds how long other
connections' consumers may go unseen in ``consumer_count``)."""


@dataclass(frozen=True)
class _Answer:
    """The broker's answer to a non-passive declare."""

    spec: QueueSpec
    info: QueueInfo
    at: float
    """When it came (monotonic)."""
    links: int
    """The route's links attached then."""


def _essence(spec: QueueSpec) -> QueueSpec:
    """What a redeclare must repeat: the flags and arguments (and the owner of an
    exclusive queue; a shared queue's declares from any connection are alike)."""
    return spec if spec.exclusive else replace(spec, owner=None)


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
        self.answered_by: dict[str, int] = {"bridge": 0, "broker": 0}
        """Queue declares answered by the bridge and sent to the broker (the metric
        ``amqp_bridge_facade_queue_declares``)."""

    def answered(self, spec: QueueSpec, passive: bool, info: QueueInfo) -> None:
        """The broker answered a declare of ``spec`` with ``info``."""
        if passive or not spec.name or not _countable(spec):
            return
        up = sum(1 for link in self._links(info.name) if link.up)
        self._answers[info.name] = _Answer(_essence(spec), info, self._clock(), up)

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
        if self._clock() - answer.at > MAX_AGE \
                or not (passive or _essence(spec) == answer.spec):
            return None
        witness = credit = False
        up = 0
        for link in self._links(spec.name):
            if not link.up:
                continue
            up += 1
            witness = witness or link.up_since <= answer.at
            credit = credit or link.credit > 0
        if not (witness and credit):
            return None
        consumers = answer.info.consumer_count
        return QueueInfo(answer.info.name, 0,
                         None if consumers is None else max(0, consumers + up - answer.links))

    def forget(self, queue: str) -> None:
        """``queue`` was deleted or purged through the listener (or its owner went)."""
        self._answers.pop(queue, None)


__all__ = ["MAX_AGE", "DeclareCache"]
