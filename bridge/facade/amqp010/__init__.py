"""The 0-10 front of the façade: an AMQP 0-10 server for unchanged 0-10 applications,
backed by AMQP 1.0.

A :class:`Facade` is one configured listener.  It plays the 0-10 *server* role
(our engine, hosted as proton selectables like every 0-10 socket of the bridge)
and answers the model commands a 0-10 application sends to a broker, with two
kinds of route behind it (``docs/semantics.md``, section "Façade"):

``Publish010`` (``from: {listener: L, exchange: X}`` → 1.0 address)
    every ``message.transfer`` to exchange X is mapped and sent unsettled to
    the 1.0 address; the transfer is *completed* (the publisher's confirmation)
    only once the 1.0 broker accepted it, or the dead-letter address did.  A
    rejection without a dead-letter address becomes an execution.exception.
    Publishers are throttled like qpidd throttles them: completion is withheld,
    and past the route's ``max_in_flight`` the façade stops reading from their
    sockets.

``Consume010`` (1.0 address → ``to: {listener: L, queue: Q}``)
    every ``message.subscribe`` to queue Q gets its own 1.0 receiver on the
    route's source address; the receiver's link credit follows the
    subscription's 0-10 message credit (credit or window mode; byte credit is
    honoured before each transfer); accept / reject / release settle the 1.0
    delivery as accepted / rejected / released (modified with delivery-failed
    when set-redelivered and the source supports it); what the subscriber
    leaves unsettled when it goes away is given back to the 1.0 broker.

Every 1.0 link is a :class:`~bridge.routes.Amqp10Link` (its own session,
re-attached when lost; what was in flight on a lost link is resent or left to
the 1.0 broker to redeliver).  Sessions are not resumable on the façade (a
requested session timeout is granted as 0): a client that reconnects starts
afresh.  Everything runs on the container's thread.

Theory of operation
-------------------
The 0-10 front of :mod:`bridge.facade`: it speaks 0-10 to the client and leaves the 1.0
side to the core (:mod:`bridge.facade.core`: the listener core, access, the route
cores, temporary queues, the topology modes' shared part).  One module one job,
dependencies one way (at run time each module imports only those listed before it;
``state`` names the routes' classes for type checking only):

- :mod:`~bridge.facade.amqp010.state`: per-connection and per-session state
  (:class:`Client`, :class:`SessionState`) and the :class:`Refused` / ``LATER`` answers
  of command handlers;
- :mod:`~bridge.facade.amqp010.consume`: :class:`Consume010` and its :class:`Subscription`
  (one 1.0 receiver per 0-10 subscription, 1.0 link credit following 0-10 credit);
- :mod:`~bridge.facade.amqp010.publish`: :class:`Publish010` (transfers completed once the
  1.0 broker accepted them; 0-10 error codes for refusals);
- :mod:`~bridge.facade.amqp010.command_access`: the permissions each 0-10 command needs
  (checked by the core's :class:`~bridge.facade.core.access.Access`) and qpidd's texts;
- :mod:`~bridge.facade.amqp010.topology`: the 0-10 topology mode (names no route
  configures are the 1.0 broker's, through a :class:`~bridge.topology.Topology`
  backend; docs/topology.md), on the core's :mod:`~bridge.facade.core.topology`;
- :mod:`~bridge.facade.amqp010.commands`: :class:`ServerCommands`, the 0-10 server's command
  model (declare / query / bind / subscribe answers, temporary queues, error codes),
  each command checked against the user's permissions first, names no route
  configures handed to the topology mode when the listener has one;
- :mod:`~bridge.facade.amqp010.listener`: :class:`Facade`, the listener (on the core's
  :class:`~bridge.facade.core.base.ListenerCore`: accepting, logins, limits, graceful
  stop) and its event dispatch.

The façade logs as ``bridge.facade`` (every module).
"""

from ..core.state import FacadeHost
from .commands import ServerCommands
from .consume import Consume010, Subscription
from .listener import Facade
from .publish import Publish010
from .state import Client, Refused, SessionState

__all__ = ["Client", "Consume010", "Facade", "FacadeHost", "Publish010", "Refused",
           "ServerCommands", "SessionState", "Subscription"]
