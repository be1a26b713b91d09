"""Two proton engines talking in memory: the bridge's side and a scripted peer.

No sockets and no reactor: :meth:`MemoryPair.pump` moves the bytes each transport has
to send to the other until both are quiet, and :meth:`MemoryPair.dispatch` hands the
events our side's collector gathered to their endpoints' handlers, in order, as the
reactor does. A test scripts the peer by opening, closing or ending its endpoints
between pumps, so that exact frame orders (a detach and an end in one read) are
certain rather than a matter of a real broker's timing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from proton import Collector, Connection, Endpoint, Transport


class MemoryPair:
    """Our proton connection and a peer's, their bytes moved by :meth:`pump`.

    ``rewrite`` changes what our side sends before the peer reads it, ``rewrite_back``
    what the peer sends before we read it; every chunk the peer received from us is kept
    in :attr:`sent`."""

    def __init__(self, rewrite: Callable[[bytes], bytes] | None = None,
                 rewrite_back: Callable[[bytes], bytes] | None = None) -> None:
        self.ours, self.theirs = Connection(), Connection()
        self.our_transport, self.their_transport = Transport(), Transport(Transport.SERVER)
        self.our_transport.bind(self.ours)
        self.their_transport.bind(self.theirs)
        self.rewrite = rewrite
        self.rewrite_back = rewrite_back
        self.sent: list[bytes] = []
        self.collector = Collector()
        self.ours.collect(self.collector)

    def pump(self) -> None:
        for _ in range(10):
            moved = _move(self.our_transport, self.their_transport, self.rewrite, self.sent)
            moved += _move(self.their_transport, self.our_transport, self.rewrite_back, None)
            if not moved:
                return

    def dispatch(self) -> list[str]:
        """Hand our side's pending events to their link's or session's handler, and the
        peer's open and close of the connection to our connection's (pumping after each,
        as the reactor writes after each); the names of those handled."""
        handled = []
        while (event := self.collector.peek()) is not None:
            handler = None
            if event.link is not None:
                handler = event.link.handler
            elif event.session is not None:
                handler = event.session.handler
            elif str(event.type).startswith("PN_CONNECTION_REMOTE"):
                handler = self.ours.handler
            if handler is not None:
                handled.append(str(event.type))
                event.dispatch(handler)
            self.collector.pop()
            self.pump()
        return handled

    def answer_all(self) -> None:
        """The peer opens whatever of ours it received and has not answered yet (a link
        with our source and target)."""
        for endpoint in (self.theirs, *sessions(self.theirs), *links(self.theirs)):
            if endpoint.state & Endpoint.LOCAL_UNINIT:
                if hasattr(endpoint, "source"):
                    endpoint.source.copy(endpoint.remote_source)
                    endpoint.target.copy(endpoint.remote_target)
                endpoint.open()
        self.pump()

    def open_with(self, handler: Any, container: Any) -> None:
        """Our connection, with ``handler`` (the bridge's connection handler, whose timers go
        to ``container``), and the peer's: opened, and the opens dispatched."""
        handler.container = container
        self.ours.handler = handler
        self.ours.open()
        self.theirs.open()
        self.pump()
        self.dispatch()

    def fail_over(self, sessions_at_once: int) -> None:
        """Our transport is lost (our connection's handler is told, as by proton's
        transport events) and proton connects to another peer, which allows
        ``sessions_at_once`` sessions and opens (pumped: our side writes what it writes
        before it has read that open; dispatched)."""
        self.our_transport.close_tail()
        self.our_transport.close_head()
        self.ours.handler._lost(self.ours)
        self.our_transport.unbind()
        self.theirs, self.their_transport = Connection(), Transport(Transport.SERVER)
        self.their_transport.channel_max = sessions_at_once - 1
        self.their_transport.bind(self.theirs)
        self.our_transport = Transport()
        self.our_transport.bind(self.ours)
        self.sent.clear()
        self.theirs.open()
        self.pump()
        self.dispatch()

    def open_sender(self, name: str, address: str) -> Any:
        """A sender of ours to ``address`` on a session of its own, both opened (not yet
        sent: :meth:`pump`)."""
        session = self.ours.session()
        session.open()
        link = session.sender(name)
        link.target.address = address
        link.open()
        return link

    def open_peer(self) -> Any:
        """The peer answers whatever we opened; returns its one link."""
        self.answer_all()
        (link,) = [link for link in links(self.theirs) if link.state & Endpoint.LOCAL_ACTIVE]
        return link


def sessions(conn: Connection) -> Iterator[Any]:
    session = conn.session_head(0)
    while session:
        yield session
        session = session.next(0)


def links(conn: Connection) -> Iterator[Any]:
    link = conn.link_head(0)
    while link:
        yield link
        link = link.next(0)


def _move(src: Transport, dst: Transport, rewrite: Callable[[bytes], bytes] | None,
          log: list[bytes] | None) -> int:
    size = src.pending()
    if size <= 0:
        return 0
    data = src.peek(size) or b""
    src.pop(size)
    if rewrite is not None:
        data = rewrite(data)
    if log is not None:
        log.append(data)
    dst.push(data)
    return size
