"""Attach probes the broker refuses by ending their session, one after another on the
bridge's own loop: ``python -m tests.support.probe_churn URL PREFIX COUNT`` prints a JSON
summary.

Each round is a passive exchange declare of a name that does not exist (``PREFIX`` and
a number) through :class:`~bridge.topology.rabbitmq4.RabbitMQ4Topology`: a sender probe
(:meth:`bridge.topology.request_response.RequestClient.probe`) on a session of its own,
which RabbitMQ 4.0 answers by ending the session (``amqp:not-found``) without answering
the attach — what a qpid.messaging client's ``'#'`` reply address causes on every new
connection through a topology-mode 0-10 façade (its replier's ``exchange.query``). Every
few rounds a full garbage collection runs, as the bridge's periodic one does
(:func:`bridge.runtime.reactor.tune_gc`): a probe's link object still held then by
something the collector frees meets a session proton has already freed. It runs in a
subprocess of the test: a crash in proton's C code (SIGABRT, "double free or
corruption") must fail the test, not end the test run.
"""

from __future__ import annotations

import faulthandler
import gc
import json
import sys

from bridge.topology import TopologyError
from bridge.topology.model import ExchangeSpec
from bridge.topology.rabbitmq4 import RabbitMQ4Topology
from tests.topology.loop import Loop

COLLECT_EVERY = 5
"""Rounds between full garbage collections."""


def main() -> None:
    faulthandler.enable(all_threads=True)
    url, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    loop = Loop(url)
    topology = RabbitMQ4Topology(loop.container, loop.connection, name="probe-churn")
    kinds: dict[str, int] = {}
    for n in range(count):
        result = loop.call(topology.declare_exchange, ExchangeSpec(f"{prefix}.{n}"), True)
        kind = result.kind if isinstance(result, TopologyError) else "found"
        kinds[kind] = kinds.get(kind, 0) + 1
        if n % COLLECT_EVERY == COLLECT_EVERY - 1:
            gc.collect()
    topology.close()
    loop.close()
    gc.collect()
    print(json.dumps({"probes": count, "kinds": kinds}), flush=True)


if __name__ == "__main__":
    main()
