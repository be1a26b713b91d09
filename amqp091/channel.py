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

Server role, in addition:

- the replies we owe the client, in order (``owe`` / ``pay``): a synchronous
  request without no-wait must be answered by one of its replies, in the order
  the requests came — the application cannot answer a request never made;
- publishes received in confirm mode are numbered (``confirms``, the same
  :class:`TagLedger` the client role numbers its own publishes with), and
  deliveries are numbered per channel (``deliveries``): the client's
  ack / nack / reject resolve to the tags they settle, strictly as RabbitMQ does
  (a tag not outstanding is a 406 ``unknown delivery tag``).
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


class TagLedger:
    """Tags numbered from 1 and the ones outstanding (published and not confirmed,
    delivered and not acknowledged): what a settlement with ``multiple`` covers."""

    def __init__(self) -> None:
        self.next_tag = 1
        self._order: deque[int] = deque()
        self._pending: set[int] = set()

    def issue(self, track: bool = True) -> int:
        """The next tag; outstanding until settled unless ``track`` is False."""
        tag = self.next_tag
        self.next_tag += 1
        if track:
            self._order.append(tag)
            self._pending.add(tag)
        return tag

    @property
    def outstanding(self) -> tuple[int, ...]:
        """Tags not yet settled, ascending."""
        return tuple(t for t in self._order if t in self._pending)

    def take_all(self) -> list[int]:
        """Settle every outstanding tag."""
        tags = list(self.outstanding)
        self._order.clear()
        self._pending.clear()
        return tags

    def settle(self, tag: int, multiple: bool, *, strict: bool = False) -> list[int]:
        """The tags a settlement of ``tag`` (``multiple``: and all before it) settles,
        ascending. ``tag`` 0 with ``multiple`` is every outstanding tag. A tag never
        issued, or a single tag not outstanding, raises :class:`ChannelError` (406);
        ``strict`` (RabbitMQ's rule for the client's acks): ``tag`` itself must be
        outstanding with ``multiple`` too."""
        if tag == 0 and multiple:
            return self.take_all()
        if tag not in self._pending and (strict or not multiple or tag >= self.next_tag):
            raise ChannelError(ReplyCode.PRECONDITION_FAILED, f"unknown delivery tag {tag}")
        settled: list[int] = []
        if multiple:
            while self._order and self._order[0] <= tag:
                t = self._order.popleft()
                if t in self._pending:
                    self._pending.discard(t)
                    settled.append(t)
        else:
            self._pending.discard(tag)
            settled.append(tag)
            while self._order and self._order[0] not in self._pending:
                self._order.popleft()
        return settled


class Channel:
    """State of one channel (see the module docstring)."""

    def __init__(self, number: int, max_message_size: int, *,
                 oversize_code: int = ReplyCode.CONTENT_TOO_LARGE) -> None:
        self.number = number
        self.state = ChannelState.OPENING
        self.max_message_size = max_message_size
        self.oversize_code = oversize_code
        """The channel.close code for a message over ``max_message_size`` (client role:
        311 content-too-large; server role: 406, as RabbitMQ answers a publisher)."""
        self.peer_flow_active = True
        """False while the peer asked us (channel.flow) not to send content."""
        self.confirm_mode = False
        self.tx_mode = False
        """Server role: the client sent tx.select (confirm.select is then a 406)."""
        self.confirms = TagLedger()
        """Confirm-mode publish numbers: ours (client role) or the client's (server)."""
        self.deliveries = TagLedger()
        """Server role: delivery tags handed out by deliver / get-ok, unacked ones."""
        self.awaiting: deque[frozenset[str]] = deque()
        """Names of the replies each synchronous request of ours awaits, oldest first."""
        self.owed: deque[tuple[str, frozenset[str]]] = deque()
        """Server role: (request, reply names) of each client request we must answer."""
        self.incoming: Incoming | None = None
        self.close_code: int | None = None
        self.close_text = ""

    # -------------------------------------------------------------- replies

    def expect(self, method: Frame) -> None:
        """We sent ``method`` and await one of its replies."""
        self.awaiting.append(frozenset(method.valid_responses))

    def take_reply(self, method: Frame) -> None:
        """A reply arrived: it answers the oldest request it can answer (else a 503).

        Not necessarily the oldest request: RabbitMQ sends basic.consume-ok and
        basic.cancel-ok from the queue's process, so a pipelined basic.qos sent after
        them can be answered first."""
        for index, replies in enumerate(self.awaiting):
            if method.name in replies:
                del self.awaiting[index]
                return
        wanted = " or ".join(sorted(self.awaiting[0])) if self.awaiting else "no reply"
        raise FrameError(ReplyCode.COMMAND_INVALID,
                         f"unexpected {method.name} on channel {self.number} "
                         f"(awaiting {wanted})")

    def owe(self, method: Frame) -> None:
        """The peer sent the synchronous request ``method``: we owe it a reply."""
        self.owed.append((method.name, frozenset(method.valid_responses)))

    def pay(self, reply: Frame) -> None:
        """We are sending ``reply``: it must answer the oldest request owed
        (``LookupError`` with the reason otherwise; nothing changes)."""
        if not self.owed or reply.name not in self.owed[0][1]:
            owed = f"{self.owed[0][0]} awaits {' or '.join(sorted(self.owed[0][1]))}" \
                if self.owed else "no request awaits a reply"
            raise LookupError(f"{reply.name} on channel {self.number} answers nothing ({owed})")
        self.owed.popleft()

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
            raise ChannelError(self.oversize_code,
                               f"message size {body_size} is larger than configured max "
                               f"size {self.max_message_size}")
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
        """confirm.select sent (client) / received (server): publishes are numbered."""
        self.confirm_mode = True

    def publish_tag(self) -> int | None:
        """Number a publish (confirm mode), or None."""
        return self.confirms.issue() if self.confirm_mode else None

    @property
    def next_publish_tag(self) -> int:
        return self.confirms.next_tag

    @property
    def unconfirmed(self) -> tuple[int, ...]:
        """Tags of publishes not confirmed yet, ascending."""
        return self.confirms.outstanding

    def settle(self, tag: int, multiple: bool) -> list[int]:
        """The tags a publisher confirm (``tag``, ``multiple``) settles (ascending; empty
        for a ``multiple`` that settles nothing new). A tag never published, or a
        single one not outstanding, is a 406 (as a broker answers a bad ack)."""
        try:
            return self.confirms.settle(tag, multiple)
        except ChannelError:
            raise ChannelError(ReplyCode.PRECONDITION_FAILED,
                               f"unknown delivery tag {tag} in a publisher confirm") from None


__all__ = ["Channel", "ChannelError", "ChannelState", "Incoming", "TagLedger"]
