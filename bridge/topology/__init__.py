"""The 1.0 broker's model as the façades' topology mode sees it: exchanges, queues and
bindings declared by legacy applications, carried out at the AMQP 1.0 broker behind the
bridge.

A listener in *topology mode* (``listeners.<name>.topology``) does not refuse names an
operator did not configure: a 0-9-1 ``exchange.declare`` / ``queue.declare`` /
``queue.bind`` (or the 0-10 ``exchange-declare`` / ``queue-declare`` / ``exchange-bind``
and qpid.messaging's address options) becomes an operation on a :class:`Topology`, the
broker-kind-specific backend behind the listener; publishes and consumes then use the
1.0 addresses the backend names (:meth:`Topology.publish_address`,
:meth:`Topology.queue_address`).

Theory of operation
-------------------
- :mod:`~bridge.topology.model`: the broker-neutral vocabulary — :class:`ExchangeSpec`,
  :class:`QueueSpec`, :class:`BindingSpec`, :class:`QueueInfo`, the failures a
  declare can meet (:class:`TopologyError`, whose ``kind`` each façade turns into its
  protocol's error: 0-9-1 reply codes, 0-10 execution-exception codes) — and the
  :class:`Topology` protocol every backend implements. Every operation is
  asynchronous: it is started on the event loop and its ``done`` callback runs later on
  the event loop with the result or a :class:`TopologyError` (never raised).
- backends, one module each: RabbitMQ 4's management over AMQP 1.0
  (:mod:`~bridge.topology.rabbitmq4`: ``/management`` requests, declares with
  arguments, bindings, queue depth), qpidd's QMF2 over its AMQP 1.0 side
  (:mod:`~bridge.topology.qpidd`: create / delete / purge / query on qpidd's agent),
  declares over 0-9-1 for RabbitMQ 3.x (:mod:`~bridge.topology.rabbitmq091`), and
  exchanges emulated as routing tables over plain queues, as kombu's virtual
  transport does (:mod:`~bridge.topology.routing`).
- :mod:`~bridge.topology.consumer_args`: a 0-9-1 consumer's arguments (``x-priority``,
  ``x-stream-offset``, …) as the attach terms of its 1.0 link that RabbitMQ 4 reads.
- the management protocols the first two speak are strategies (a
  :class:`~bridge.topology.request_response.LinkPair`) of one request/response client
  (:mod:`~bridge.topology.request_response`: pipelining, timeouts, connection loss,
  each request answered once): HTTP over AMQP (:mod:`~bridge.topology.management`)
  and QMF2 (:mod:`~bridge.topology.qmf`).

Everything runs on the container's thread.
"""

from .model import (
    BindingSpec,
    Done,
    ExchangeSpec,
    QueueInfo,
    QueueSpec,
    Topology,
    TopologyError,
    TopologyErrorKind,
)

__all__ = ["BindingSpec", "Done", "ExchangeSpec", "QueueInfo", "QueueSpec", "Topology",
           "TopologyError", "TopologyErrorKind"]
