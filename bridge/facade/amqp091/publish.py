"""0-9-1 façade publish: basic.publish to a façade exchange, forwarded to a 1.0 address.

:class:`Publish091` is the core's :class:`~bridge.facade.core.publish.FacadePublish`
(the 1.0 sender, the in-flight bound and throttling, releases, poison messages,
dead-lettering) with a 0-9-1 front: a publish is mapped by :mod:`mappings.amqp091`
(the route's translation and CloudEvents) and, on a channel in confirm mode,
confirmed with ``basic.ack`` only once the 1.0 broker accepted it (or the
dead-letter address did), ``basic.nack`` when it was refused for good.  Without
confirm mode a refusal is counted and logged (the client cannot be told: RabbitMQ
would drop it as silently, the bridge does not).  Publishers past the route's
``max_in_flight`` are throttled by not reading their sockets.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from amqp091.events import MessageReceived
from amqp091.methods import ReplyCode
from mappings.amqp091 import Delivery091
from mappings.message import AmqpMessage

from ...ops.logs import WarnLimiter
from ...routes.refusals import plain_copy_091
from ..core.publish import FacadePublish, PublishEntry
from .state import Channel091

if TYPE_CHECKING:
    from .listener import Facade091


log = logging.getLogger("bridge.facade")

_CHANNEL_CODES = {
    "amqp:not-found": ReplyCode.NOT_FOUND,
    "amqp:unauthorized-access": ReplyCode.ACCESS_REFUSED,
    "amqp:resource-locked": ReplyCode.RESOURCE_LOCKED,
}
"""The channel.close code for a link refusal's 1.0 condition (else precondition-failed)."""


class Publish091(FacadePublish):
    """basic.publish to a façade exchange, forwarded to a 1.0 address (module docstring)."""

    facade: Facade091
    _abandoned_lines = WarnLimiter()
    """The ERROR lines about publishes abandoned on a refusing route (one per route every
    10 s, with the number)."""
    MAPPING_REFUSAL = SIZE_REFUSAL = LINK_REFUSAL = INTERNAL_REFUSAL = \
        ReplyCode.PRECONDITION_FAILED  # (a nack carries none)

    def publish091(self, ch: Channel091, ev: MessageReceived, fence: str | None = None) -> None:
        """Take a client's publish (``ev.publish_tag``: its number in confirm mode;
        ``fence``: the queue whose local deliveries wait for it, :class:`PublishEntry`)."""
        self.stats.received += 1
        method: Any = ev.method
        where = Delivery091(exchange=method.exchange or "", routing_key=method.routing_key or "")
        entry = PublishEntry(ch, ev.publish_tag or 0, method, b"", len(ev.body),
                             t0=time.monotonic(), returnable=ev if method.mandatory else None,
                             fence=fence)
        self.take(entry, lambda: self.to_amqp10(ev, where),
                  lambda: plain_copy_091(ev.properties, where, ev.body, self.route))

    def to_amqp10(self, ev: MessageReceived, where: Delivery091) -> AmqpMessage:
        """The 1.0 message of a client's publish (the route's translation)."""
        return self.translator.legacy091_to_amqp10(ev.properties, where, ev.body)

    # -- answering the publisher (FacadePublish's hooks) ------------------------------------

    def _complete(self, entry: PublishEntry) -> None:
        """The publish is safe on the 1.0 side: basic.ack it in confirm mode."""
        self.bytes -= entry.size
        self._confirm(entry, ack=True)

    def _fail(self, entry: PublishEntry, code: int, reason: str) -> None:
        """The publish cannot be forwarded: counted and logged; basic.nack in confirm mode."""
        self.bytes -= entry.size
        ch: Any = entry.st
        self.facade.publish_refused(ch.client.sock.peer, reason, route=self.name)
        self._confirm(entry, ack=False)

    def _link_refusal(self, entry: PublishEntry, reason: str) -> None:
        """The route's link is down past attach_timeout: dead-lettered, else basic.nack in
        confirm mode; without confirms the message is lost: counted as abandoned, logged
        at ERROR, and its channel closed (the client's next call on it fails)."""
        ch: Any = entry.st
        if self.dead_letters is not None or entry.command_id:
            super()._link_refusal(entry, reason)
            return
        self.bytes -= entry.size
        self.stats.publishes_abandoned += 1
        held = self._abandoned_lines.allow(self.name)  # one ERROR line per 10 s
        if held is not None:
            log.error("route %s: %d publishes abandoned (from %s and others since the last "
                      "such line): %s; no confirm mode: their channels are closed",
                      self.name, held + 1, ch.client.sock.peer, reason,
                      extra={"event": "publishes_abandoned", "route": self.name,
                             "abandoned": held + 1, "peer": ch.client.sock.peer,
                             "error": reason})
        if ch.live:
            code = _CHANNEL_CODES.get(self.sender.last_condition or "",
                                      ReplyCode.PRECONDITION_FAILED)
            self.facade.close_channel(ch, code, reason)

    def _tell_abandoned(self, entry: PublishEntry, reason: str) -> None:
        """basic.nack an abandoned publish in confirm mode."""
        self.bytes -= entry.size
        self._confirm(entry, ack=False)

    def _confirm(self, entry: PublishEntry, *, ack: bool) -> None:
        ch: Any = entry.st
        if entry.command_id and ch.live:
            self.facade.confirm(ch, entry.command_id, ack=ack)


__all__ = ["Publish091"]
