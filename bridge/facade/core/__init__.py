"""The façades' core: what the 0-10 and the 0-9-1 fronts share (:mod:`bridge.facade`).

Theory of operation
-------------------
The core knows the AMQP 1.0 side and the bridge's services, never a legacy protocol's
frames: each front subclasses or calls it and speaks its own protocol to the client.
Dependencies one way (at run time each module imports only those listed before it):

- :mod:`~bridge.facade.core.access`: who may do what on a listener (the permission
  checks, the user-id rule, refusal counts and log lines);
- :mod:`~bridge.facade.core.base`: :class:`~bridge.facade.core.base.ListenerCore`, a
  listener's accepting, TLS, logins, connection limits and graceful stop;
- :mod:`~bridge.facade.core.unseen`: released messages no client saw get their first
  header back;
- :mod:`~bridge.facade.core.state`: temporary queues, what a route sees of its listener
  (:class:`~bridge.facade.core.state.FacadeHost`) and the routes' 1.0-link helper;
- :mod:`~bridge.facade.core.consume`: :class:`~bridge.facade.core.consume.FacadeConsume`,
  a 1.0 address consumed by a front's subscribers;
- :mod:`~bridge.facade.core.publish`: :class:`~bridge.facade.core.publish.FacadePublish`,
  a front's publishes forwarded to a 1.0 address;
- :mod:`~bridge.facade.core.topology`: what both topology modes share (the made routes'
  settings, owner ids at the backend, the reply-to mapping back).
"""
