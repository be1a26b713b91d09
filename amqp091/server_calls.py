"""Typed sends of the server role: deliveries, get answers, returns, confirms, notices.

:class:`ServerCalls` is a mixin of :class:`~amqp091.connection.Connection` (the
client role's shorthands are :class:`~amqp091.calls.ChannelCalls`).  Each call
checks what the protocol requires of the server and then hands the method to
the connection's primitives:

- content (``deliver``, ``get_ok``, ``return_message``) goes out as method +
  content header + body frames cut to the negotiated frame-max, headers through
  the typed table codec (``Connection._send_content``); not while the client has
  stopped content with channel.flow;
- delivery tags are numbered by the engine per channel (``deliver`` and
  ``get_ok`` return them) and stay outstanding until the client settles them
  (:class:`~amqp091.events.DeliveriesSettled`) — unless sent with ``no_ack``;
- ``get_ok`` / ``get_empty`` must answer a basic.get (any reply sent through
  ``send_method`` must answer the oldest request the client is waiting on);
- publisher confirms name publish tags of ``MessageReceived.publish_tag``;
- capability-dependent notices (``cancel_consumer``, ``block`` / ``unblock``)
  are sent only when the client announced the capability, as RabbitMQ does, and
  say so by returning False otherwise.

Calls the state does not allow raise ``ProtocolError``; invalid field values
raise ``ValueError`` (nothing sent).
"""

from __future__ import annotations

from typing import Any

from pamqp import commands as C
from pamqp.base import Frame

from .channel import Channel
from .fast_frames import encode_deliver_fields


class ServerCalls:
    """Server-role sends (see the module docstring)."""

    # provided by the connection
    def _send_content(self, channel: int, method: Frame | None,
                      properties: C.Basic.Properties | None, body: bytes, *,
                      method_frame: bytes = b"") -> Channel:
        raise NotImplementedError

    def _server_channel(self, channel: int) -> Channel:
        raise NotImplementedError

    def _send_notice(self, channel: int, method: Frame) -> None:
        raise NotImplementedError

    def _confirm(self, channel: int, method: C.Basic.Ack | C.Basic.Nack) -> list[int]:
        raise NotImplementedError

    peer_capabilities: dict[str, Any]

    # ---------------------------------------------------------------- content

    def deliver(self, channel: int, consumer_tag: str, exchange: str, routing_key: str,
                body: bytes, properties: C.Basic.Properties | None = None, *,
                redelivered: bool = False, no_ack: bool = False) -> int:
        """basic.deliver to a consumer; returns the delivery tag (outstanding until the
        client acks, nacks or rejects it, unless ``no_ack``)."""
        chan = self._server_channel(channel)
        tag = chan.deliveries.next_tag
        frame = encode_deliver_fields(channel, consumer_tag, tag, redelivered, exchange,
                                      routing_key)
        if frame is None:  # (pamqp decides: it refuses the fields, or might)
            self._send_content(channel, C.Basic.Deliver(
                consumer_tag=consumer_tag, delivery_tag=tag, redelivered=redelivered,
                exchange=exchange, routing_key=routing_key), properties, body)
        else:
            self._send_content(channel, None, properties, body, method_frame=frame)
        return chan.deliveries.issue(track=not no_ack)

    def get_ok(self, channel: int, exchange: str, routing_key: str, body: bytes,
               properties: C.Basic.Properties | None = None, *, message_count: int = 0,
               redelivered: bool = False, no_ack: bool = False) -> int:
        """basic.get-ok answering the client's basic.get; returns the delivery tag."""
        chan = self._server_channel(channel)
        tag = chan.deliveries.next_tag
        method = C.Basic.GetOk(delivery_tag=tag, redelivered=redelivered, exchange=exchange,
                               routing_key=routing_key, message_count=message_count)
        self._send_content(channel, method, properties, body)
        return chan.deliveries.issue(track=not no_ack)

    def get_empty(self, channel: int) -> None:
        """basic.get-empty answering the client's basic.get."""
        self.send_method(channel, C.Basic.GetEmpty())

    def return_message(self, channel: int, reply_code: int, reply_text: str, exchange: str,
                       routing_key: str, body: bytes,
                       properties: C.Basic.Properties | None = None) -> None:
        """basic.return of an unroutable mandatory publish (312 no-route)."""
        self._send_content(channel, C.Basic.Return(
            reply_code=reply_code, reply_text=reply_text, exchange=exchange,
            routing_key=routing_key), properties, body)

    # --------------------------------------------------------------- notices

    def confirm_publish(self, channel: int, publish_tag: int, *, multiple: bool = False,
                        ack: bool = True) -> list[int]:
        """Publisher confirm: basic.ack (or, ``ack`` False, basic.nack) of the publish
        numbered ``publish_tag`` (``multiple``: and every unconfirmed one before it).
        Returns the tags it settles; ``ProtocolError`` for a tag not outstanding or a
        channel not in confirm mode."""
        cls = C.Basic.Ack if ack else C.Basic.Nack
        return self._confirm(channel, cls(delivery_tag=publish_tag, multiple=multiple))

    def cancel_consumer(self, channel: int, consumer_tag: str) -> bool:
        """Consumer cancel notification (basic.cancel, no-wait, as RabbitMQ sends it) —
        only to a client that announced ``consumer_cancel_notify``; False: not sent,
        the client will not learn that its consumer is gone."""
        self._server_channel(channel)
        if self.peer_capabilities.get("consumer_cancel_notify") is not True:
            return False
        self._send_notice(channel, C.Basic.Cancel(consumer_tag=consumer_tag, nowait=True))
        return True

    def block(self, reason: str = "") -> bool:
        """connection.blocked (stop publishing), only to a client that announced
        ``connection.blocked``; False: not sent."""
        if self.peer_capabilities.get("connection.blocked") is not True:
            return False
        self._send_notice(0, C.Connection.Blocked(reason=reason))
        return True

    def unblock(self) -> bool:
        """connection.unblocked, only to a client that announced ``connection.blocked``."""
        if self.peer_capabilities.get("connection.blocked") is not True:
            return False
        self._send_notice(0, C.Connection.Unblocked())
        return True

    def send_method(self, channel: int, method: Frame) -> None:
        """Send ``method`` on ``channel`` (implemented by the connection)."""
        raise NotImplementedError


__all__ = ["ServerCalls"]
