"""Real applications through the façades.

Each module here runs unchanged client programs of one library from PyPI (Celery,
kombu, pika, aio-pika) as subprocesses against ONE ``amqp-bridge run`` per module
(a module-scoped fixture), with the shared RabbitMQ behind the bridge.  The programs
live in ``programs/``: plain scripts using only their library, as an application
would, printing what they did.  The qpid.messaging programs need qpid-python, one of
the real peers outside the repository, and are in the interop suite
(``tests/interop/``).  A client library that is missing fails the module loudly; it is
never skipped.
"""
