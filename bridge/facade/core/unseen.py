"""Messages a façade gave back to the 1.0 broker without any client having had them.

A façade's 1.0 receiver can be sent a message no client is waiting for: link credit
cannot be taken back (RabbitMQ 3.x leaves a drain unanswered), so the credit of a
``basic.get`` answered get-empty brings the next message published, and a
subscription whose client has gone is still sent what its credit promised.  The
façade releases such a message at once; RabbitMQ 3.x then marks it redelivered
(first-acquirer false; every outcome that requeues does) although no application
saw it, and an unchanged client would read ``redelivered=True`` where RabbitMQ
itself says ``False``.  (A message that reached a client, or waited for one in the
bridge while its consumer was cancelled, stays redelivered: RabbitMQ would have
sent it to that client too.)

Theory of operation: when the façade releases a message that arrived *fresh*, it
records the message's fingerprint (a digest of its bare message: properties,
application-properties, body, which no broker changes) with the header it came
with.  When a message arrives flagged redelivered, a matching fingerprint means the
redelivery was the façade's own doing: the record is consumed and the message gets
its first header back.  A message a client did have is never recorded (its outcome
is a failed delivery, and rightly redelivered), nor is one that arrived redelivered.
The records are bounded (``LIMIT``, oldest forgotten first: such a message is then
flagged redelivered, as before); two byte-identical messages share a fingerprint,
so one of them may lose a redelivered flag that a client's failure set on the other.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from mappings.errors import MappingError
from mappings.message import AmqpMessage

LIMIT = 4096
"""Fingerprints kept per route; a message released unseen beyond it is flagged
redelivered when it comes back."""


def _fingerprint(message: AmqpMessage) -> bytes:
    return hashlib.blake2b(message.encode_bare(), digest_size=16).digest()


class UnseenReleases:
    """Fingerprints of fresh messages released without a client having had them."""

    def __init__(self, limit: int = LIMIT) -> None:
        self.limit = limit
        self._headers: OrderedDict[bytes, list[tuple[bool | None, int | None]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._headers)

    def remember(self, data: bytes) -> None:
        """The 1.0 message ``data`` is released unseen: if it arrived fresh, remember it."""
        try:
            message = AmqpMessage.decode(data)
        except MappingError:
            return  # it cannot reach a client anyway: a redelivered flag shows nobody
        header = message.header
        if bool(header.delivery_count) or header.first_acquirer is False:
            return  # a client (or an earlier release) may have had it: stays redelivered
        key = _fingerprint(message)
        self._headers.setdefault(key, []).append((header.first_acquirer, header.delivery_count))
        self._headers.move_to_end(key)
        while len(self._headers) > self.limit:
            self._headers.popitem(last=False)

    def restore(self, message: AmqpMessage) -> bool:
        """If redelivered ``message`` was released unseen, give it back its first header
        (first-acquirer, delivery-count) and forget it; True if so."""
        if not self._headers:
            return False
        key = _fingerprint(message)
        headers = self._headers.get(key)
        if headers is None:
            return False
        message.header.first_acquirer, message.header.delivery_count = headers.pop(0)
        if not headers:
            del self._headers[key]
        return True


__all__ = ["LIMIT", "UnseenReleases"]
