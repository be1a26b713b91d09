"""A bridge event loop in the test's own thread, with a 1.0 connection on it, that a
topology test drives until the answers it waits for have come (:class:`Loop`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from proton import Delivery, Message

from bridge.amqp10 import Amqp10ConnectionHandler, ReconnectDelays
from bridge.amqp10.outcomes import condition_text
from bridge.config import Reconnect
from bridge.runtime import reactor
from bridge.topology import TopologyError

FAST_RECONNECT = Reconnect(initial_delay=0.2, max_delay=1.0)


class Loop:
    """The bridge's proton container (``bridge.runtime.reactor.container``) with one 1.0
    connection to ``url`` (reconnecting as the bridge's do), run step by step in the
    calling thread by :meth:`run_until`."""

    def __init__(self, url: str) -> None:
        self.container = reactor.container(self)
        self.container.timeout = 0.05
        self.container.start()
        self.handler = Amqp10ConnectionHandler("cloud")
        self.connection = self.container.connect(
            url=url, handler=self.handler,
            reconnect=ReconnectDelays(FAST_RECONNECT, self.handler.reconnect_scheduled))

    def run_until(self, condition: Callable[[], bool], what: str, limit: float = 30.0) -> None:
        """Process events until ``condition()`` holds (failing the test after ``limit``
        seconds: a deadline for waiting, not a claim about speed)."""
        deadline = time.monotonic() + limit
        while not condition():
            assert time.monotonic() < deadline, f"still waiting for {what}"
            self.container.process()

    def call(self, operation: Callable[..., None], *args: Any, limit: float = 30.0) -> Any:
        """Start ``operation(*args, done)`` and return what ``done`` got, checking that
        ``done`` is called exactly once and not within the call."""
        results: list[Any] = []
        operation(*args, results.append)
        assert results == [], "done was called within the operation"
        self.run_until(lambda: bool(results), f"{getattr(operation, '__name__', operation)}"
                                               f"{args!r} to be answered", limit)
        self.settle()
        assert len(results) == 1, f"done called {len(results)} times: {results}"
        return results[0]

    def settle(self, seconds: float = 0.2) -> None:
        """Process events for ``seconds`` (what is due now happens)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.container.process()

    def receiver(self, address: str, credit: int = 10) -> Receiver:
        """A receiver from ``address`` on the loop's 1.0 connection (its own session)."""
        return Receiver(self, address, credit)

    def close(self) -> None:
        self.connection.close()
        self.settle(0.3)
        self.container.stop()
        self.container.process()


def error_kind(result: Any) -> str:
    """The kind of a :class:`TopologyError` result (the assertion names what came)."""
    assert isinstance(result, TopologyError), f"expected a TopologyError, got {result!r}"
    return result.kind


class Receiver:
    """A 1.0 receiver on the loop's connection that keeps what it receives (settled as
    accepted) and what the peer refused (:attr:`error`)."""

    def __init__(self, loop: Loop, address: str, credit: int) -> None:
        session = loop.connection.session()
        session.handler = self
        session.open()
        self.link = session.receiver(f"test-receiver-{address}")
        self.link.source.address = address
        self.link.handler = self
        self.link.open()
        self.link.flow(credit)
        self.bodies: list[Any] = []
        self.attached = False
        self.error: str | None = None

    def on_link_remote_open(self, event: Any) -> None:
        self.attached = event.link.remote_source.address is not None

    def on_delivery(self, event: Any) -> None:
        delivery = event.delivery
        if delivery.readable and not delivery.partial:
            message = Message()
            message.decode(event.link.recv(delivery.pending))
            delivery.update(Delivery.ACCEPTED)
            delivery.settle()
            body = message.body
            self.bodies.append(bytes(body) if isinstance(body, memoryview) else body)

    def on_link_remote_close(self, event: Any) -> None:
        self.error = condition_text(event.link.remote_condition)

    def on_session_remote_close(self, event: Any) -> None:
        self.error = condition_text(event.session.remote_condition)
