"""Application frameworks through a topology-mode 0-9-1 listener in front of RabbitMQ 4
(``examples/topology.yaml``, nothing configured per name), each program run straight to
RabbitMQ 4 and through the façade, what it saw compared:

- dramatiq (pika): a four-thread worker, retries with backoff through its delay queue
  ``<q>.DQ``, ``send_with_options(delay=...)``, a message out of retries dead-lettered
  into ``<q>.XQ`` by the queue's ``x-dead-letter-*`` arguments, a pipeline, message
  priorities (``x-max-priority``);
- FastStream (aio-pika): subscriber → publisher, ``broker.request`` (RPC over
  ``amq.rabbitmq.reply-to``, which FastStream declares passively first: RabbitMQ answers
  declare-ok, the façade had closed the channel 404), a topic exchange, ``NackMessage``
  requeues on a quorum queue.

One ``amqp-bridge run`` serves the module.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.apps import StraightAndThrough, run_program, straight_and_through

pytestmark = pytest.mark.rabbitmq(4)

PASSWORD = "frameworks-s3cret"


class Framework(StraightAndThrough):
    """The module's façade and RabbitMQ 4, and how it compares their runs."""

    def result(self, program: str, url: str, tag: str) -> Any:
        out = run_program([program, url, tag], self.tmp / f"{tag}.log", {})
        assert "done" in out, out
        [line] = [line for line in out.splitlines() if line.startswith("result ")]
        return json.loads(line.split(" ", 1)[1])

    def both(self, program: str, tag: str) -> Any:
        """The program's result straight to RabbitMQ, checked equal to the façade's (each
        run on names of its own, deleted at its end)."""
        tag = f"{tag}_{secrets.token_hex(3)}"
        direct = self.result(program, self.direct_url, f"{tag}_direct")
        through = self.result(program, self.url, f"{tag}_facade")
        assert _untagged(through, f"{tag}_facade") == _untagged(direct, f"{tag}_direct")
        return _untagged(direct, f"{tag}_direct")


def _untagged(result: Any, tag: str) -> Any:
    return json.loads(json.dumps(result).replace(tag, "<T>"))


@pytest.fixture(scope="module")
def framework(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory
              ) -> Iterator[Framework]:
    tmp = tmp_path_factory.mktemp("frameworks")
    with straight_and_through(rabbitmq_url, tmp, PASSWORD) as runs:
        yield Framework(runs.bridge, runs.url, runs.direct_url, runs.tmp)


def test_dramatiq_retries_delays_and_dead_letters(framework: Framework) -> None:
    """Every plain message once, each flaky one run three times (two retries through
    ``<q>.DQ``), delayed ones not before their delay, the doomed one in ``<q>.XQ``,
    nothing left in any of the three queues, a pipeline's sum, and messages of a
    ``max_priority`` queue got highest priority first."""
    assert framework.both("dramatiq_app.py", "dram") == {
        "plain": list(range(20)), "flaky": [[0, 3], [1, 3], [2, 3]],
        "later": [[0, True], [1, True], [2, True]], "attempts": {"0": 3, "1": 3, "2": 3},
        "dead": [["doomed", [7], None, False]],
        "counts": {"fw_dram_<T>": 0, "fw_dram_<T>.DQ": 0, "fw_dram_<T>.XQ": 0},
        "pipeline": [13], "by_priority": [[9, 9], [5, 5], [3, 3], [1, 1], [0, 0]]}


def test_faststream_publishes_requests_and_routes_by_topic(framework: Framework) -> None:
    """Replies of ``broker.request`` (the façade had refused the passive declare of
    ``amq.rabbitmq.reply-to`` 404: the request raised), the subscriber's returns
    published on, topic routing, messages nacked with requeue got again."""
    assert framework.both("faststream_app.py", "fs") == {
        "in": [0, 1, 2, 3, 4], "out": [0, 10, 20, 30, 40], "rpc": ["ALPHA", "BETA"],
        "topic": [["all", "a.b.error"], ["all", "db.error"], ["all", "web.info"],
                  ["errors", "db.error"]],
        "nacked": [["q1", 3], ["q2", 3]]}
