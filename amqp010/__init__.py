"""AMQP 0-10 for amqp-bridge: a codec generated from the spec and a sans-IO engine.

Codec (bytes ⇄ objects): :mod:`~amqp010.types` (typed values),
:mod:`~amqp010.spec` (generated structs, controls, commands),
:mod:`~amqp010.codec` (segments), :mod:`~amqp010.framing`
(``FrameDecoder``, ``Assembler``, ``encode_assembly``).

Engine (state machines, no sockets, threads or clocks):
:class:`~amqp010.connection.Connection` in the client or server role,
:class:`~amqp010.session.Session`, events in :mod:`~amqp010.events`.
:mod:`~amqp010.transport` hosts it on blocking sockets for tools and tests.
"""

from .errors import CodecError, DecodeError, EncodeError, FramingError

__all__ = ["CodecError", "DecodeError", "EncodeError", "FramingError"]
