"""The bridge's proton container, with socket reads sized for throughput.

proton's stock IO handler reads at most what the AMQP 1.0 transport's input buffer
has room for — 8 KiB at first, and it only grows when a single frame does not fit.
With 1 KiB messages that is about five transfers per ``select`` round, and every
round costs a dozen Python-dispatched bookkeeping events (``reactor_quiesced``,
``selectable_updated``, ``selectable_readable``, ``transport``) plus the bridge's
end-of-burst work (a 0-10 ``session.flush``, a socket send, a credit top-up). The
bridge spent more CPU on those rounds than on the messages in them.

:class:`ReadAheadIO` reads up to :data:`READ_SIZE` octets per readable socket and
feeds them to the transport in as many pushes as its buffer takes; proton queues
the resulting events and the container dispatches them in the same round, so a
busy connection moves dozens of messages per round. Nothing else changes: the
bytes, their order and every event are the ones the stock handler produces, just
in fewer, larger rounds.
"""

from __future__ import annotations

import logging
from typing import Any

from proton.handlers import IOHandler
from proton.reactor import Container

log = logging.getLogger(__name__)

READ_SIZE = 256 * 1024
"""Octets read from a readable AMQP 1.0 socket at once (what the kernel has, up to this)."""


class ReadAheadIO(IOHandler):  # type: ignore[misc]
    """proton's IO handler, reading :data:`READ_SIZE` octets per readable event."""

    def on_selectable_readable(self, event: Any) -> None:
        selectable = event.selectable
        transport = selectable._transport
        if not transport:
            return  # an acceptor: it has no transport, and proton does nothing here either
        capacity = transport.capacity()
        if capacity > 0:
            try:
                data = selectable.recv(READ_SIZE)
            except OSError as exc:
                log.error("AMQP 1.0 socket: cannot receive: %r", exc)
                transport.close_tail()
            else:
                if data:
                    _push(transport, data)
                else:
                    self.on_selectable_error(event)  # end of stream: as proton handles it
        self.update(transport, selectable, selectable._reactor.now)


def _push(transport: Any, data: bytes) -> None:
    """Give ``data`` to ``transport`` in pieces its input buffer can take.

    The transport decodes every whole frame of a piece before it returns, so its
    buffer has room again for the next one (it grows when a frame is larger than
    the buffer). Only a transport whose input side is closed (capacity < 0, after
    a protocol error or the end of the connection) leaves octets unread: there is
    nobody left to give them to.
    """
    view = memoryview(data)
    while view:
        capacity = transport.capacity()
        if capacity <= 0:
            log.debug("AMQP 1.0 transport: input closed, %d octets left unread", len(view))
            return
        transport.push(bytes(view[:capacity]))
        view = view[capacity:]


def container(handler: Any) -> Container:
    """A proton container running ``handler`` with :class:`ReadAheadIO` as its IO handler."""
    return Container(handler, global_handler=ReadAheadIO())


__all__ = ["READ_SIZE", "ReadAheadIO", "container"]
