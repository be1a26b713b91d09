"""amqp-bridge: a bridge between AMQP 1.0 and legacy AMQP 0-10 messaging."""

__version__ = "0.1.0"
