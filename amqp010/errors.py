"""Typed errors raised by the AMQP 0-10 codec."""

from __future__ import annotations


class CodecError(Exception):
    """Base class of every error the AMQP 0-10 codec raises."""


class DecodeError(CodecError):
    """Input bytes are not valid AMQP 0-10.

    ``offset`` is the byte offset (within the buffer being decoded, or within the
    stream for :class:`~amqp010.framing.FrameDecoder`) where the problem
    was found; ``reason`` says what is wrong.
    """

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"{reason} (at byte offset {offset})")
        self.offset = offset
        self.reason = reason

    def shifted(self, base: int) -> DecodeError:
        """The same error with its offset moved by ``base`` (segment → stream offsets)."""
        err = type(self)(self.offset + base, self.reason)
        err.__cause__ = self.__cause__
        return err


class FramingError(DecodeError):
    """A frame header or the frame/segment/assembly structure is invalid.

    The spec answers these with ``connection.close(framing-error)``.
    """


class EncodeError(CodecError):
    """A value cannot be encoded as the AMQP 0-10 type it was given (range, length, type)."""
