"""The legacy façades: unchanged 0-10 and 0-9-1 applications served from an AMQP 1.0 broker.

A façade is a configured listener that plays a legacy broker's *server* role
(qpidd's for ``protocol: amqp0-10``, RabbitMQ's for ``amqp0-9-1``) and answers the
model commands the applications send with the AMQP 1.0 broker behind the bridge:
configured routes (``from: {listener: L, exchange: X}`` → 1.0 address, 1.0 address →
``to: {listener: L, queue: Q}``) and, in a listener's topology mode, the 1.0 broker's
own nodes (docs/semantics.md "Façade", docs/topology.md).

Theory of operation
-------------------
One core, one front per protocol, dependencies one way (fronts → core → the rest of
the bridge; the core never imports a front, no front imports the other):

- :mod:`~bridge.facade.core`: what both façades share — the listener core
  (accepting, logins, limits, graceful stop: :class:`~bridge.facade.core.base.ListenerCore`),
  who may do what (:mod:`~bridge.facade.core.access`), the publish and consume route
  cores (:class:`FacadePublish`: legacy publishes forwarded unsettled to a 1.0 address,
  confirmed once the 1.0 broker accepted them, throttled past ``max_in_flight``;
  :class:`FacadeConsume`: a 1.0 address consumed by legacy clients, link credit
  following their credit), temporary queues and the 1.0-link helpers
  (:mod:`~bridge.facade.core.state`), the topology modes' shared part
  (:mod:`~bridge.facade.core.topology`) and unseen releases
  (:mod:`~bridge.facade.core.unseen`);
- :mod:`~bridge.facade.amqp010`: the 0-10 front (:class:`Facade`): the 0-10 server's
  sessions, command model, subscriptions, message.transfer publishes, 0-10 error codes
  and its topology mode;
- :mod:`~bridge.facade.amqp091`: the 0-9-1 front (:class:`Facade091`): channels,
  methods, basic.consume / basic.get consumers, confirms, RabbitMQ's reply codes, its
  topology mode (RabbitMQ 4 management, RabbitMQ 3.x addresses).

What flows where: a client's frames reach its front's listener (the engine's events);
the front checks the user's permissions (core access), then hands a publish to a
route (a front's subclass of the core's publish route, which talks to the 1.0 sender)
and a subscribe / consume to a consume route (the core's route, one 1.0 receiver per
subscriber of the front). Outcomes come back the same way: the core settles the 1.0
side, the front tells the client in its protocol.

Every module logs as ``bridge.facade`` (a literal name: operators filter on it).
Everything runs on the container's thread.
"""

from .amqp010 import Consume010, Facade, Publish010
from .amqp091 import Consume091, Facade091, Publish091
from .core.consume import FacadeConsume
from .core.publish import FacadePublish

__all__ = ["Consume010", "Consume091", "Facade", "Facade091", "FacadeConsume", "FacadePublish",
           "Publish010", "Publish091"]
