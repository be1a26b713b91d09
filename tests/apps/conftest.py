"""Real applications through the façades.

Each module here runs unchanged client programs of one library (qpid.messaging, and
later pika, kombu, Celery) as subprocesses against ONE ``amqp-bridge run`` per module
(a module-scoped fixture), with the shared RabbitMQ behind the bridge.  The programs
live in ``programs/``: plain scripts using only their library, as an application
would, printing what they did as one JSON line.  A client library that is missing
fails the module loudly; it is never skipped.
"""
