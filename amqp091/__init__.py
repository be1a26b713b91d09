"""AMQP 0-9-1 for amqp-bridge: a sans-IO connection/channel engine on pamqp.

Theory of operation
-------------------
Frames and methods are encoded and decoded by **pamqp** only (no hand-written
0-9-1 codec): :mod:`~amqp091.framing` cuts the byte stream into frames, checks
the frame size against the negotiated frame-max *before* buffering a payload,
and hands each whole frame to ``pamqp.frame.unmarshal``; anything pamqp cannot
decode becomes a :class:`~amqp091.framing.FrameError` carrying the reply code
a broker would close with (501 frame-error, 540 not-implemented for an unknown
method).  The one structure pamqp does not decode is a message's ``headers``
table: :mod:`~amqp091.tables` reads and writes it with its field types intact
(pamqp's table codec collapses integer widths and float sizes).

:class:`~amqp091.connection.Connection` is the state machine, in the role given
to it: client (the bridge to RabbitMQ) or server (the 0-9-1 façade;
:mod:`~amqp091.server_handshake`, :mod:`~amqp091.server_calls`), sharing the
dispatch tables keyed by role.  It
holds no socket, thread or clock: bytes go in through ``receive_data``, bytes
come out of ``data_to_send``, time comes in through ``tick(now)``, and what
happened comes out as frozen events (:mod:`~amqp091.events`) from
``next_event`` / ``events``.  Each open channel is a
:class:`~amqp091.channel.Channel`: its lifecycle (open, flow, close in both
directions), the replies it awaits, content reassembly (method + header +
body frames → one :class:`~amqp091.events.MessageReceived`, bounded by
``max_message_size``) and publisher-confirm bookkeeping (delivery tags,
``multiple`` resolved to lists).

Which methods each role may send and the reply codes are tables in
:mod:`~amqp091.methods`.  This package imports pamqp and nothing else of ours.
See ``docs/amqp091-engine.md``.
"""

from .framing import FrameError
from .methods import ReplyCode
from .tables import FieldTypes, TableError

__all__ = ["FieldTypes", "FrameError", "ReplyCode", "TableError"]
