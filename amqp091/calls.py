"""Typed shorthands for the methods an application sends most (client role).

:class:`ChannelCalls` is a mixin of :class:`~amqp091.connection.Connection`: each
call builds the pamqp method and hands it to ``send_method``, which checks the
state and records the reply it awaits.  Anything not here goes through
``send_method`` directly.
"""

from __future__ import annotations

from pamqp import commands as C
from pamqp.base import Frame
from pamqp.common import Arguments


class ChannelCalls:
    """Shorthands over :meth:`send_method` (see the module docstring)."""

    def send_method(self, channel: int, method: Frame) -> None:
        """Send ``method`` on ``channel`` (implemented by the connection)."""
        raise NotImplementedError

    def confirm_select(self, channel: int) -> None:
        """Put the channel in confirm mode (publishes are numbered from 1)."""
        self.send_method(channel, C.Confirm.Select())

    def qos(self, channel: int, prefetch_count: int, prefetch_size: int = 0,
            global_: bool = False) -> None:
        """basic.qos: at most ``prefetch_count`` unacknowledged deliveries."""
        self.send_method(channel, C.Basic.Qos(prefetch_size, prefetch_count, global_))

    def consume(self, channel: int, queue: str, consumer_tag: str = "", *,
                no_ack: bool = False, exclusive: bool = False,
                arguments: Arguments = None) -> None:
        """basic.consume (basic.consume-ok names the consumer tag)."""
        self.send_method(channel, C.Basic.Consume(queue=queue, consumer_tag=consumer_tag,
                                                  no_ack=no_ack, exclusive=exclusive,
                                                  arguments=arguments))

    def cancel(self, channel: int, consumer_tag: str) -> None:
        """basic.cancel (basic.cancel-ok follows)."""
        self.send_method(channel, C.Basic.Cancel(consumer_tag=consumer_tag))

    def get(self, channel: int, queue: str, *, no_ack: bool = False) -> None:
        """basic.get: a MessageReceived (get-ok) or MethodReceived (get-empty) follows."""
        self.send_method(channel, C.Basic.Get(queue=queue, no_ack=no_ack))

    def ack(self, channel: int, delivery_tag: int, multiple: bool = False) -> None:
        """basic.ack of a delivery (``multiple``: every one up to this tag)."""
        self.send_method(channel, C.Basic.Ack(delivery_tag, multiple))

    def nack(self, channel: int, delivery_tag: int, multiple: bool = False,
             requeue: bool = True) -> None:
        """basic.nack of deliveries (RabbitMQ's extension)."""
        self.send_method(channel, C.Basic.Nack(delivery_tag, multiple, requeue))

    def reject(self, channel: int, delivery_tag: int, requeue: bool = True) -> None:
        """basic.reject of one delivery."""
        self.send_method(channel, C.Basic.Reject(delivery_tag, requeue))

    def queue_declare(self, channel: int, queue: str = "", *, passive: bool = False,
                      durable: bool = False, exclusive: bool = False,
                      auto_delete: bool = False, arguments: Arguments = None) -> None:
        """queue.declare (queue.declare-ok follows)."""
        self.send_method(channel, C.Queue.Declare(
            queue=queue, passive=passive, durable=durable, exclusive=exclusive,
            auto_delete=auto_delete, arguments=arguments))

    def exchange_declare(self, channel: int, exchange: str, exchange_type: str = "direct", *,
                         passive: bool = False, durable: bool = False,
                         auto_delete: bool = False, arguments: Arguments = None) -> None:
        """exchange.declare (exchange.declare-ok follows)."""
        self.send_method(channel, C.Exchange.Declare(
            exchange=exchange, exchange_type=exchange_type, passive=passive, durable=durable,
            auto_delete=auto_delete, arguments=arguments))

    def queue_bind(self, channel: int, queue: str, exchange: str, routing_key: str = "",
                   arguments: Arguments = None) -> None:
        """queue.bind (queue.bind-ok follows)."""
        self.send_method(channel, C.Queue.Bind(queue=queue, exchange=exchange,
                                               routing_key=routing_key, arguments=arguments))

    def flow(self, channel: int, active: bool) -> None:
        """channel.flow: ask the peer to stop / resume sending content."""
        self.send_method(channel, C.Channel.Flow(active))


__all__ = ["ChannelCalls"]
