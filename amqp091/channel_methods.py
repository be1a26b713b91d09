"""What a connection does with the channel-class methods its peer sends, by role.

Theory of operation
-------------------
``Connection._on_method`` checks where a method may come (channel open, no content
due, not closing) and then calls the handler :data:`CHANNEL_HANDLERS` names for
the role and method class, or :func:`method_received` for any other method:

- client role: open-ok, close, close-ok, flow, publisher confirms (basic.ack /
  nack), and content-carrying methods (deliver, return, get-ok: the content frames
  follow) are handled here; every other method is a reply to one of our requests
  (checked against the oldest awaited) or a notice such as the broker's
  basic.cancel, and becomes a :class:`~amqp091.events.MethodReceived`;
- server role: channel.open (:func:`on_channel_open`, before the channel exists),
  close, flow, confirm.select (answered here), tx.select, acks / nacks / rejects /
  recover (:class:`~amqp091.events.DeliveriesSettled`) and basic.publish
  (content follows); every other request is owed its reply and handed to the
  application as a MethodReceived.

A :class:`~amqp091.channel.ChannelError` raised here closes the channel only; a
:class:`~amqp091.framing.FrameError` closes the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pamqp import commands as C
from pamqp.base import Frame

from .channel import Channel, ChannelError, ChannelState
from .events import (
    ChannelFlow,
    ChannelOpened,
    DeliveriesSettled,
    MethodReceived,
    PublishConfirmed,
)
from .framing import FrameError
from .methods import REPLY_NAMES, ReplyCode, Role, expects_reply

if TYPE_CHECKING:
    from .connection import Connection

OVERSIZE_CODE = {Role.CLIENT: ReplyCode.CONTENT_TOO_LARGE,
                 Role.SERVER: ReplyCode.PRECONDITION_FAILED}
"""The channel.close code for a message over max_message_size (RabbitMQ answers a
publisher 406 "message size N is larger than configured max size M")."""


# -- client role (and both)

def _ch_open_ok(conn: Connection, chan: Channel, method: C.Channel.OpenOk) -> None:
    if chan.state is not ChannelState.OPENING:
        raise FrameError(ReplyCode.COMMAND_INVALID,
                         f"channel.open-ok on channel {chan.number}, which is open")
    chan.state = ChannelState.OPEN
    conn._emit(ChannelOpened(chan.number))


def _ch_close(conn: Connection, chan: Channel, method: C.Channel.Close) -> None:
    conn._send(chan.number, C.Channel.CloseOk())
    conn._release(chan, method.reply_code, method.reply_text or "", True,
                  method.class_id or 0, method.method_id or 0)


def _ch_close_ok(conn: Connection, chan: Channel, method: C.Channel.CloseOk) -> None:
    raise FrameError(ReplyCode.COMMAND_INVALID,
                     f"channel.close-ok on channel {chan.number}, which is not closing")


def _ch_flow(conn: Connection, chan: Channel, method: C.Channel.Flow) -> None:
    active = bool(method.active)
    chan.peer_flow_active = active
    conn._send(chan.number, C.Channel.FlowOk(active))
    conn._emit(ChannelFlow(chan.number, active))


def _ch_confirm(conn: Connection, chan: Channel, method: C.Basic.Ack | C.Basic.Nack) -> None:
    if not chan.confirm_mode:
        raise FrameError(ReplyCode.COMMAND_INVALID,
                         f"{method.name} on channel {chan.number}, which is not in "
                         f"confirm mode")
    tags = chan.settle(method.delivery_tag, bool(method.multiple))
    if tags:
        conn._emit(PublishConfirmed(chan.number, tags, type(method) is C.Basic.Ack))


def _ch_content(conn: Connection, chan: Channel, method: Frame) -> None:
    if method.name in REPLY_NAMES:
        chan.take_reply(method)  # basic.get-ok
    chan.start_content(method)


def method_received(conn: Connection, chan: Channel, method: Frame) -> None:
    """Any channel method without a handler of its own: a reply is checked against the
    awaited requests, a request (server role) is owed its reply; then MethodReceived."""
    if method.name in REPLY_NAMES:
        chan.take_reply(method)
    elif conn.role is Role.SERVER and expects_reply(method):
        chan.owe(method)
    conn._emit(MethodReceived(chan.number, method))


# -- server role

def on_channel_open(conn: Connection, channel: int) -> None:
    """Server role: the client's channel.open (within channel-max, not open yet)."""
    if conn.channel_max and channel > conn.channel_max:
        raise FrameError(ReplyCode.NOT_ALLOWED,  # RabbitMQ's code for this limit
                         f"channel {channel} is past the negotiated channel_max "
                         f"({conn.channel_max})")
    chan = conn.channels.get(channel)
    if chan is not None:
        if chan.state is ChannelState.CLOSING:
            return  # sent before the client saw our channel.close
        raise FrameError(ReplyCode.CHANNEL_ERROR,
                         f"second 'channel.open' seen on channel {channel}")
    chan = Channel(channel, conn.config.max_message_size,
                   oversize_code=OVERSIZE_CODE[conn.role])
    chan.state = ChannelState.OPEN
    conn.channels[channel] = chan
    conn._send(channel, C.Channel.OpenOk())
    conn._emit(ChannelOpened(channel))


def _s_confirm_select(conn: Connection, chan: Channel, method: C.Confirm.Select) -> None:
    if chan.tx_mode:
        raise ChannelError(ReplyCode.PRECONDITION_FAILED,
                           "cannot switch from tx to confirm mode")
    chan.select_confirms()
    if not method.nowait:
        conn._send(chan.number, C.Confirm.SelectOk())


def _s_tx_select(conn: Connection, chan: Channel, method: C.Tx.Select) -> None:
    if chan.confirm_mode:
        raise ChannelError(ReplyCode.PRECONDITION_FAILED,
                           "cannot switch from confirm to tx mode")
    chan.tx_mode = True
    method_received(conn, chan, method)


def _s_settle(conn: Connection, chan: Channel, method: C.Basic.Ack | C.Basic.Nack | C.Basic.Reject) -> None:
    multiple = bool(getattr(method, "multiple", False))
    tags = chan.deliveries.settle(method.delivery_tag or 0, multiple, strict=True)
    requeue = bool(getattr(method, "requeue", False))
    conn._emit(DeliveriesSettled(chan.number, tags, type(method) is C.Basic.Ack, requeue,
                                 method))


def _s_recover(conn: Connection, chan: Channel, method: C.Basic.Recover | C.Basic.RecoverAsync) -> None:
    if method.requeue:
        tags = chan.deliveries.take_all()
        if tags:
            conn._emit(DeliveriesSettled(chan.number, tags, False, True, method))
    method_received(conn, chan, method)


CHANNEL_HANDLERS: dict[Role, dict[type, Callable[[Connection, Channel, Any], None]]] = {
    Role.CLIENT: {
        C.Channel.OpenOk: _ch_open_ok,
        C.Channel.Close: _ch_close,
        C.Channel.CloseOk: _ch_close_ok,
        C.Channel.Flow: _ch_flow,
        C.Basic.Ack: _ch_confirm,
        C.Basic.Nack: _ch_confirm,
        C.Basic.Deliver: _ch_content,
        C.Basic.Return: _ch_content,
        C.Basic.GetOk: _ch_content,
    },
    Role.SERVER: {  # channel.open is handled before (the channel does not exist yet)
        C.Channel.Close: _ch_close,
        C.Channel.CloseOk: _ch_close_ok,
        C.Channel.Flow: _ch_flow,
        C.Confirm.Select: _s_confirm_select,
        C.Tx.Select: _s_tx_select,
        C.Basic.Ack: _s_settle,
        C.Basic.Nack: _s_settle,
        C.Basic.Reject: _s_settle,
        C.Basic.Recover: _s_recover,
        C.Basic.RecoverAsync: _s_recover,
        C.Basic.Publish: _ch_content,
    },
}
"""Channel methods by role and class; any other (client role: replies, the broker's
basic.cancel; server role: the client's requests) is ``method_received``: a reply is
checked against the awaited ones, a request is owed its reply, then MethodReceived."""
