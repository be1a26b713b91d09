"""The bridge's legacy side: client connections to legacy brokers.

Theory of operation
-------------------
:mod:`.amqp010` keeps each configured AMQP 0-10 connection up — a hosted
:class:`amqp010.connection.Connection` on the runtime's loop, failover across its URLs,
exponential backoff with jitter (:meth:`bridge.config.Reconnect.delay`), redirects — and
hands every route using it a 0-10 session of its own (:class:`.amqp010.LegacyUser`),
re-attached after a pause when it ends. The routes reach a session only through their
legacy endpoint (:mod:`bridge.routes.legacy_endpoint`), so a second legacy protocol
(AMQP 0-9-1) is a sibling module here plus an endpoint there; nothing above changes.
"""
