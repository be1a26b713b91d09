"""AMQP 0-10 for amqp-bridge: codec (types, generated spec, framing) and, later, the engine.

The codec is sans-IO: bytes in, objects out, and back.  Entry points:

- :class:`~bridge.amqp010.framing.FrameDecoder` / :class:`~bridge.amqp010.framing.Assembler`
  turn received bytes into :class:`~bridge.amqp010.framing.Assembly` objects;
- :func:`~bridge.amqp010.framing.encode_assembly` turns a control or command (with
  header structs and body for message.transfer) into frames;
- :mod:`bridge.amqp010.spec` (generated) holds one class per struct, control and command.
"""

from .errors import CodecError, DecodeError, EncodeError, FramingError

__all__ = ["CodecError", "DecodeError", "EncodeError", "FramingError"]
