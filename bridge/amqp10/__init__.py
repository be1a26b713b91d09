"""The bridge's AMQP 1.0 side, on python-qpid-proton.

Theory of operation
-------------------
Proton owns the protocol; this package owns the lifecycle around it:

* :mod:`.connection` — one :class:`~.connection.Amqp10ConnectionHandler` per
  configured ``amqp1.0`` connection: logs its state changes, classifies transport
  errors (a refused certificate or login is a permanent fault), never closes the
  connection when the peer does (so proton's reconnect keeps trying), and tells the
  links registered with it (:class:`~.connection.LinkWatcher`) when the transport
  drops. :class:`~.connection.ReconnectDelays` is proton's reconnect schedule.
* :mod:`.pool` — :class:`~.pool.ConnectionPool`, the connections of one configured
  ``amqp1.0`` connection: extra ones opened on demand when its links need more sessions
  than the broker allows on one (RabbitMQ 4: 64), closed when idle.
* :mod:`.link` — :class:`~.link.Amqp10Link`, a sender or receiver on its own session,
  re-created whenever it is lost; it reports to its owner through the typed
  :class:`~.link.LinkOwner` interface (up, down, credit, delivery).
* :mod:`.outcomes` — the one rule for settling 1.0 deliveries the bridge received:
  accept, reject with a condition, give back (released or modified), and one
  ``condition_text`` for logs (docs/semantics.md, "Giving a message back").

Nothing here knows routes or AMQP 0-10: routes and the façade build on it.
"""

from .connection import Amqp10ConnectionHandler, LinkWatcher, ReconnectDelays
from .link import Amqp10Link, LinkOwner

__all__ = ["Amqp10ConnectionHandler", "Amqp10Link", "LinkOwner", "LinkWatcher",
           "ReconnectDelays"]
