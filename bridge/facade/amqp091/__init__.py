"""The 0-9-1 front of the façade: an AMQP 0-9-1 server for unchanged RabbitMQ
applications, backed by AMQP 1.0.

A :class:`Facade091` is one ``amqp0-9-1`` listener.  pika, kombu or aio-pika
applications connect to it as to RabbitMQ; it plays the 0-9-1 *server* role (our
engine, :mod:`amqp091`, hosted as proton selectables like every legacy socket of
the bridge) and answers what they send from the listener's routes
(``docs/semantics.md``, section "The 0-9-1 façade"):

``Publish091`` (``from: {listener: L, exchange: X[, routing_key: K]}`` → 1.0 address)
    every basic.publish to exchange X (with key K; without ``routing_key``: any key
    no keyed route of X takes) is mapped (:mod:`mappings.amqp091`, the route's
    CloudEvents) and sent unsettled to the 1.0 address; on a channel in confirm
    mode it is basic.ack'ed only once the 1.0 broker accepted it (or the
    dead-letter address did), basic.nack'ed when refused for good.  A publish to
    the default exchange naming a façade queue goes to the address that queue's
    consumers consume from; a publish no route takes is unroutable (basic.return
    312 when mandatory); an unknown exchange closes the channel 404.

``Consume091`` (1.0 address → ``to: {listener: L, queue: Q}``)
    every basic.consume on Q gets its own 1.0 receiver; its credit follows the
    basic.qos prefetch; ack / nack / reject / recover settle the 1.0 deliveries;
    basic.get is one more receiver per channel, credit one per get; what a
    channel leaves unacknowledged is given back to the 1.0 broker at once.

Theory of operation
-------------------
One module one job, dependencies one way (each imports only those before it):

- :mod:`~bridge.facade.amqp091.state`: per-connection and per-channel state
  (:class:`Client091`, :class:`Channel091`) and the refusals of method handlers;
- :mod:`~bridge.facade.amqp091.consume`: :class:`Consume091` and its :class:`Consumer091`;
- :mod:`~bridge.facade.amqp091.publish`: :class:`Publish091`;
- :mod:`~bridge.facade.amqp091.method_access`: the permissions each method needs and
  RabbitMQ's refusal texts;
- :mod:`~bridge.facade.amqp091.declare_cache`: the redeclares a topology-mode listener
  answers itself (a queue its own consumer links prove unchanged);
- :mod:`~bridge.facade.amqp091.topology`: :class:`TopologyMode`, a listener's topology mode
  (names no route configures are the 1.0 broker's: ``listeners.<name>.topology``);
- :mod:`~bridge.facade.amqp091.address_publish`: its publishes on RabbitMQ 3.x, a 1.0
  sender per address (RabbitMQ 3.x answers no attach to the anonymous terminus);
- :mod:`~bridge.facade.amqp091.commands`: :class:`Commands091`, the method model (each method
  checked against the user's permissions first);
- :mod:`~bridge.facade.amqp091.listener`: :class:`Facade091`, the listener (on the
  shared :class:`~bridge.facade.core.base.ListenerCore`) and its event dispatch.

The routes are the core's (:mod:`bridge.facade.core.publish`,
:mod:`bridge.facade.core.consume`, shared with the 0-10 front) with a 0-9-1 front;
messages cross with the route's :class:`~bridge.routes.translate.Translator` (a
consumer sees the routing key the message was published with); the façade logs as
``bridge.facade``.  Everything runs on the container's thread.
"""

from .commands import Commands091
from .consume import Consume091, Consumer091
from .listener import Facade091
from .publish import Publish091
from .state import Channel091, ChannelRefused, Client091, ConnectionRefused
from .topology import TopologyMode

__all__ = ["Channel091", "ChannelRefused", "Client091", "Commands091", "ConnectionRefused",
           "Consume091", "Consumer091", "Facade091", "Publish091", "TopologyMode"]
