"""Pure message-mapping functions: AMQP 0-10 <-> AMQP 1.0 <-> CloudEvents (no I/O)."""
