"""0-10 façade publish: message.transfer to a façade exchange, forwarded to a 1.0 address.

:class:`Publish010` is the core's :class:`~bridge.facade.core.publish.FacadePublish`
(the 1.0 sender, the in-flight bound and throttling, releases, poison messages,
dead-lettering) with a 0-10 front: a transfer is mapped by the route's
:class:`~bridge.routes.translate.Translator` (its CloudEvents too) and *completed* (the publisher's
confirmation) only once the 1.0 broker accepted it, or the dead-letter address did;
a refusal without a dead-letter address becomes an execution.exception, the 1.0
condition mapped to a 0-10 error code.
"""

from __future__ import annotations

import time
from typing import Any

from amqp010.events import MessageReceived
from amqp010.spec import DeliveryProperties, ErrorCode
from mappings.message import AmqpMessage

from ...routes.refusals import MAPPING_ERROR, plain_copy
from ..core.publish import FacadePublish, PublishEntry
from .state import SessionState

# 1.0 rejection conditions -> the execution.exception a 0-10 publisher gets
_ERROR_CODES = {
    "amqp:unauthorized-access": ErrorCode.UNAUTHORIZED_ACCESS,
    "amqp:not-found": ErrorCode.NOT_FOUND,
    "amqp:resource-locked": ErrorCode.RESOURCE_LOCKED,
    "amqp:precondition-failed": ErrorCode.PRECONDITION_FAILED,
    "amqp:resource-deleted": ErrorCode.RESOURCE_DELETED,
    "amqp:illegal-state": ErrorCode.ILLEGAL_STATE,
    "amqp:resource-limit-exceeded": ErrorCode.RESOURCE_LIMIT_EXCEEDED,
    "amqp:not-allowed": ErrorCode.NOT_ALLOWED,
    "amqp:not-implemented": ErrorCode.NOT_IMPLEMENTED,
    "amqp:invalid-field": ErrorCode.INVALID_ARGUMENT,
    "amqp:decode-error": ErrorCode.INVALID_ARGUMENT,
    str(MAPPING_ERROR): ErrorCode.INVALID_ARGUMENT,
}


class Publish010(FacadePublish):
    """message.transfer to a façade exchange, forwarded to a 1.0 address (module docstring)."""

    ERROR_CODES = _ERROR_CODES
    LINK_REFUSAL = ErrorCode.RESOURCE_DELETED
    INTERNAL_REFUSAL = ErrorCode.INTERNAL_ERROR
    MAPPING_REFUSAL = ErrorCode.INVALID_ARGUMENT
    SIZE_REFUSAL = ErrorCode.RESOURCE_LIMIT_EXCEEDED

    def publish(self, st: SessionState, ev: MessageReceived) -> None:
        self.stats.received += 1
        dp = ev.delivery_properties or DeliveryProperties()
        if dp.redelivered:
            self.stats.redelivered += 1
        dp.exchange = ev.destination  # set by the broker on receipt, as qpidd does
        mp = ev.message_properties
        entry = PublishEntry(st, ev.command_id, ev.transfer, b"", len(ev.body), t0=time.monotonic())
        self.take(entry, lambda: self.amqp10_message(dp, mp, ev.body),
                  lambda: plain_copy(ev, self.route))

    def amqp10_message(self, dp: DeliveryProperties, mp: Any, body: bytes) -> AmqpMessage:
        """A publish's 1.0 message (``dp.exchange`` is its exchange); a subclass may address
        it (a topology-mode publish on the anonymous terminus)."""
        return self.translator.legacy_to_amqp10(dp, mp, body)

    # -- answering the publisher (FacadePublish's hooks) ------------------------------------

    def _complete(self, entry: PublishEntry) -> None:
        """The publish is safe on the 1.0 side: complete the client's transfer."""
        self.bytes -= entry.size
        if entry.st.live:
            entry.st.session.complete(entry.command_id)
            self.facade.flush_later(entry.st.client.sock)

    def _fail(self, entry: PublishEntry, code: int, reason: str) -> None:
        """The publish cannot be forwarded: the publisher's session ends with the reason."""
        self.bytes -= entry.size
        st = entry.st
        self.facade.publish_refused(st.client.sock.peer, reason, route=self.name)
        if st.live:
            st.session.exception(code, entry.command_id, reason, command=entry.command)
            self.facade.flush_later(st.client.sock)

    def _tell_abandoned(self, entry: PublishEntry, reason: str) -> None:
        """Tell the publisher of an abandoned publish, if it is still there."""
        self.bytes -= entry.size
        st = entry.st
        if st.live:
            st.session.exception(ErrorCode.RESOURCE_DELETED, entry.command_id, reason,
                                 command=entry.command)
            self.facade.flush_later(st.client.sock)


__all__ = ["Publish010"]
