"""One AMQP 0-9-1 channel's state: lifecycle, awaited replies, content, confirms.

The :class:`~amqp091.connection.Connection` owns its channels and drives them;
a channel never writes bytes or emits events itself.  What it keeps:

- ``state``: OPENING (channel.open sent) → OPEN → CLOSING (channel.close sent,
  everything but close / close-ok discarded until close-ok) → CLOSED;
- the replies it awaits, in order (pamqp's ``valid_responses`` of each
  synchronous method sent without no-wait): a reply nobody asked for is a 503;
- the message being received: the method (deliver / get-ok / return), then the
  content header (its declared body size is checked against
  ``max_message_size`` before any body is buffered), then body frames until
  the declared size is reached;
- confirm mode: publishes are numbered from 1 after confirm.select; basic.ack
  / basic.nack from the broker resolve to the list of tags they settle.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from pamqp import commands
from pamqp.base import Frame

from .framing import FrameError
from .methods import ReplyCode


class ChannelState(Enum):
    """Life of a channel."""

    OPENING = "opening"
    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"


class ChannelError(Exception):
    """A channel-level error: close this channel with ``code`` (the connection goes on)."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


@dataclass(slots=True)
class Incoming:
    """A message being received: its method, then header, then body parts."""

    method: Frame
    properties: commands.Basic.Properties | None = None
    body_size: int = 0
    parts: list[bytes] = field(default_factory=list)
    received: int = 0


class Channel:
    """State of one channel (see the module docstring)."""

    def __init__(self, number: int, max_message_size: int) -> None:
        self.number = number
        self.state = ChannelState.OPENING
        self.max_message_size = max_message_size
        self.peer_flow_active = True
        """False while the peer asked us (channel.flow) not to send content."""
        self.confirm_mode = False
        self.next_publish_tag = 1
        self.awaiting: deque[frozenset[str]] = deque()
        """Names of the replies each synchronous request awaits, oldest first."""
        self.incoming: Incoming | None = None
        self.close_code: int | None = None
        self.close_text = ""
        self._unconfirmed: deque[int] = deque()
        self._pending: set[int] = set()

    # -------------------------------------------------------------- replies

    def expect(self, method: Frame) -> None:
        """We sent ``method`` and await one of its replies."""
        self.awaiting.append(frozenset(method.valid_responses))

    def take_reply(self, method: Frame) -> None:
        """A reply arrived: it must answer the oldest request (else a 503)."""
        if not self.awaiting or method.name not in self.awaiting[0]:
            wanted = " or ".join(sorted(self.awaiting[0])) if self.awaiting else "no reply"
            raise FrameError(ReplyCode.COMMAND_INVALID,
                             f"unexpected {method.name} on channel {self.number} "
                             f"(awaiting {wanted})")
        self.awaiting.popleft()

    # -------------------------------------------------------------- content

    def start_content(self, method: Frame) -> None:
        """A content-carrying method arrived: its header and body follow."""
        self.incoming = Incoming(method)

    def content_header(self, properties: commands.Basic.Properties, class_id: int | None,
                       body_size: int) -> Incoming | None:
        """The content header arrived; returns the message if it has no body."""
        inc = self.incoming
        if inc is None or inc.properties is not None:
            raise FrameError(ReplyCode.UNEXPECTED_FRAME,
                             f"content header on channel {self.number} without a "
                             f"content method before it")
        if class_id != commands.Basic.frame_id:
            raise FrameError(ReplyCode.FRAME_ERROR,
                             f"content header of class {class_id} (basic is 60)")
        if body_size > self.max_message_size:
            self.incoming = None
            raise ChannelError(ReplyCode.CONTENT_TOO_LARGE,
                               f"{inc.method.name} of {body_size} octets is over "
                               f"max_message_size {self.max_message_size}")
        inc.properties, inc.body_size = properties, body_size
        if body_size == 0:
            self.incoming = None
            return inc
        return None

    def content_body(self, data: bytes) -> Incoming | None:
        """A body frame arrived; returns the message once its body is complete."""
        inc = self.incoming
        if inc is None or inc.properties is None:
            raise FrameError(ReplyCode.UNEXPECTED_FRAME,
                             f"content body on channel {self.number} without a content "
                             f"header before it")
        inc.received += len(data)
        if inc.received > inc.body_size:
            raise FrameError(ReplyCode.FRAME_ERROR,
                             f"content body on channel {self.number} is longer than the "
                             f"declared {inc.body_size} octets")
        inc.parts.append(data)
        if inc.received == inc.body_size:
            self.incoming = None
            return inc
        return None

    # -------------------------------------------------------------- confirms

    def select_confirms(self) -> None:
        """confirm.select sent: publishes are numbered from here on."""
        self.confirm_mode = True

    def publish_tag(self) -> int | None:
        """Number a publish (confirm mode), or None."""
        if not self.confirm_mode:
            return None
        tag = self.next_publish_tag
        self.next_publish_tag += 1
        self._unconfirmed.append(tag)
        self._pending.add(tag)
        return tag

    @property
    def unconfirmed(self) -> tuple[int, ...]:
        """Tags of publishes the broker has not confirmed yet, ascending."""
        return tuple(t for t in self._unconfirmed if t in self._pending)

    def settle(self, tag: int, multiple: bool) -> list[int]:
        """The tags a basic.ack / basic.nack(``tag``, ``multiple``) settles (ascending;
        empty for a ``multiple`` that settles nothing new). A tag never published, or
        a single one not outstanding, is a 406 (as a broker answers a bad ack)."""
        if tag == 0 and multiple:
            tag = self.next_publish_tag - 1  # "all outstanding"
        settled: list[int] = []
        if multiple:
            while self._unconfirmed and self._unconfirmed[0] <= tag:
                t = self._unconfirmed.popleft()
                if t in self._pending:
                    self._pending.discard(t)
                    settled.append(t)
        elif tag in self._pending:
            self._pending.discard(tag)
            settled.append(tag)
            while self._unconfirmed and self._unconfirmed[0] not in self._pending:
                self._unconfirmed.popleft()
        if tag >= self.next_publish_tag or (not multiple and not settled):
            raise ChannelError(ReplyCode.PRECONDITION_FAILED,
                               f"unknown delivery tag {tag} in a publisher confirm")
        return settled


__all__ = ["Channel", "ChannelError", "ChannelState", "Incoming"]
