"""Test peers for the 0-10 library: an in-memory broker and a threaded server.

:mod:`~amqp010.testing.broker` is a small 0-10 broker (queues, exchanges,
bindings, acquire/accept/release, the subset qpidd behaves as) that the demo,
the tests and the benchmarks use as the legacy side; :mod:`~amqp010.testing.server`
runs engine connections on sockets in one background thread. Neither is used
by the bridge at run time.
"""
