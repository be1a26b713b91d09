"""RabbitMQ features applications lean on, through a topology-mode 0-9-1 listener in front
of RabbitMQ 4 (``examples/topology.yaml``, nothing configured per name), each compared
with the same pika program straight to RabbitMQ 4 (issue 22): stream consumers'
``x-stream-offset``, consumer priorities (``x-priority``), and dead-lettered messages
consumed with their ``x-death`` headers and dead-letter routing, a message given back
(``basic.reject`` / ``basic.nack`` with requeue) got again.

The program (``programs/pika_features.py``) prints what the application saw; both runs
must print the same, and what RabbitMQ itself answers is spelt out too, so that neither
side can pass by seeing nothing.

One ``amqp-bridge run`` serves the module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.apps import StraightAndThrough, run_program, straight_and_through

pytestmark = pytest.mark.rabbitmq(4)

PASSWORD = "features-s3cret"


class Feature(StraightAndThrough):
    """The module's façade and RabbitMQ 4, and how it compares their runs."""

    def results(self, scenario: str, url: str, name: str) -> list[Any]:
        out = run_program(["pika_features.py", url, scenario],
                          self.tmp / f"{scenario}-{name}.log", {})
        assert "done" in out, out
        return [json.loads(line.split(" ", 1)[1]) for line in out.splitlines()
                if line.startswith("result ")]

    def both(self, scenario: str) -> list[Any]:
        """The program's results straight to RabbitMQ, checked equal to the façade's."""
        direct = self.results(scenario, self.direct_url, "direct")
        through = self.results(scenario, self.url, "facade")
        assert through == direct
        return direct


@pytest.fixture(scope="module")
def feature(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Feature]:
    tmp = tmp_path_factory.mktemp("features")
    with straight_and_through(rabbitmq_url, tmp, PASSWORD) as runs:
        yield Feature(runs.bridge, runs.url, runs.direct_url, runs.tmp)


def test_stream_consumers_start_at_the_offset_they_ask(feature: Feature) -> None:
    """``x-stream-offset`` first / 2 / last, each message with its ``x-stream-offset``
    header (the façade's links had read from ``next``: nothing)."""
    assert feature.both("stream_offsets") == [
        {"offset": "first", "got": [[f"m{i}", i] for i in range(5)]},
        {"offset": 2, "got": [[f"m{i}", i] for i in range(2, 5)]},
        {"offset": "last", "got": [["m4", 4]]},
    ]


def test_what_a_stream_does_not_serve_is_refused(feature: Feature) -> None:
    """A stream consumer without its own prefetch (none, 0, only a global one) is refused
    406 and a basic.get 540, as RabbitMQ refuses them (the façade had taken the consumer
    and answered the get get-empty: a poller saw an empty stream)."""
    where = "queue 'test.features.refusals.<T>' in vhost '/'"
    no_prefetch = [406, f"PRECONDITION_FAILED - consumer prefetch count is not set for "
                        f"stream {where}"]
    assert feature.both("stream_refusals") == [
        {"consume": None, "refused": no_prefetch}, {"consume": 0, "refused": no_prefetch},
        {"consume": "global", "refused": no_prefetch},
        {"get": [540, f"NOT_IMPLEMENTED - basic.get not supported by stream queues {where}"]},
    ]


def test_basic_get_says_how_many_messages_are_left(feature: Feature) -> None:
    """get-ok's message_count, on a classic and a quorum queue; a loop draining by it
    gets every message (the façade had said 0: the loop stopped after the first)."""
    seen = [["m0", 3], ["m0", 3], ["m1", 2], ["m2", 1], ["m3", 0]]
    assert feature.both("get_counts") == [
        {"queue": "classic", "seen": seen, "empty": True},
        {"queue": "quorum", "seen": seen, "empty": True},
    ]


def test_the_higher_priority_consumer_takes_everything(feature: Feature) -> None:
    """``x-priority`` 10 against 1, both with room (the façade had shared them out)."""
    assert feature.both("consumer_priorities") == [{"counts": {"high": 20, "low": 0}}]


def test_dead_letters_come_with_x_death_and_the_dead_letter_routing(feature: Feature
                                                                    ) -> None:
    """Rejected, nacked and expired messages from the dead-letter queue: exchange the
    dead-letter exchange, ``x-death`` and ``x-first/last-death-*`` as RabbitMQ writes
    them (the façade had given the source's exchange and no ``x-death``)."""
    src, dlx = "test.features.dl.src.<T>", "test.features.dl.x.<T>"

    def dead(body: str, reason: str, headers: dict[str, Any]) -> dict[str, Any]:
        death = {"count": 1, "exchange": "", "queue": src, "reason": reason,
                 "routing-keys": [src], "time": "<time>"}
        if body == "expired":
            death["original-expiration"] = "1"
        return {"body": body, "exchange": dlx, "routing_key": src, "headers": {
            **headers, "x-death": [death],
            **{f"x-{w}-death-{what}": value for w in ("first", "last")
               for what, value in (("exchange", ""), ("queue", src), ("reason", reason))}}}

    assert feature.both("dead_letters") == [
        dead("expired", "expired", {}), dead("nacked", "rejected", {}),
        dead("rejected", "rejected", {"app": 1})]


def test_a_message_given_back_comes_again_first(feature: Feature) -> None:
    """``basic.reject`` / ``basic.nack`` with requeue, then ``basic.get``: the message
    again, before the next one (the façade's new credit reached RabbitMQ before the
    give-back, which then sent the next message), and on a quorum queue with
    ``x-delivery-count`` (the façade had carried it in its opaque annotations header)."""
    classic = [[f"m{i}", redelivered, None] for i in range(3)
               for redelivered in (False, True, True)]
    assert feature.both("requeue") == [
        {"queue": "classic", "seen": classic},
        {"queue": "quorum", "seen": [["m0", False, None], ["m0", True, 1], ["m0", True, 2]]},
    ]


def test_an_empty_queue_name_is_the_channels_last_declared_queue(feature: Feature) -> None:
    """queue.bind (its routing key too), basic.get, basic.consume, queue.purge,
    queue.unbind and queue.delete of ``""`` act on the channel's last declared queue, as
    the 0-9-1 spec and RabbitMQ have it; 404 before any declare (the façade had taken
    ``""`` as a queue's name: RabbitMQ refused the bind 403 on ``amq.default``)."""
    assert feature.both("queue_shortcuts") == [
        {"before_declare": [404, "NOT_FOUND - no previously declared queue"]},
        {"got": [["m0", 1], ["m1", None]], "purged": 1, "after_unbind": "unroutable",
         "deleted": 0}]
