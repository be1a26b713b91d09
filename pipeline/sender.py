"""Send a stream of encoded AMQP 1.0 messages over one connection, unsettled, and count outcomes.

One :func:`send_all` call is one proton connection with one sending link: a
message counts as delivered only once the peer *accepted* it; rejected,
released and modified outcomes are counted apart. At most ``window`` messages
are in flight (sent, not yet settled), and an optional rate limit spaces the
sends. Used by the ``amqp`` data source, one call per Spark partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from proton import Delivery
from proton.handlers import MessagingHandler
from proton.reactor import Container


class SendError(RuntimeError):
    """The connection or link failed, or the peer stopped settling, before every message was settled."""


@dataclass
class Outcomes:
    """How the peer settled the messages sent on one connection."""

    sent: int = 0
    accepted: int = 0
    rejected: int = 0
    released: int = 0
    modified: int = 0
    seconds: float = 0.0
    conditions: list[str] = field(default_factory=list)
    """The first few rejection conditions, as ``"name: description"``."""

    @property
    def settled(self) -> int:
        return self.accepted + self.rejected + self.released + self.modified


_MAX_CONDITIONS = 5


def send_all(
    url: str,
    address: str,
    payloads: Iterator[bytes],
    *,
    user: str | None = None,
    password: str | None = None,
    window: int = 1000,
    rate: float | None = None,
    timeout: float = 30.0,
) -> Outcomes:
    """Send every encoded message of ``payloads`` to ``address`` and wait for all outcomes.

    ``rate`` (messages per second) spaces the sends; ``timeout`` is how long
    the peer may go without settling anything (or granting credit) while
    messages are pending. Raises :class:`SendError` if the connection or link
    fails or the timeout passes; the messages settled before that are lost to
    the count, so a retry sends them again (at-least-once).
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    if rate is not None and rate <= 0:
        raise ValueError("rate must be positive")
    handler = _Sender(url, address, payloads, user, password, window, rate, timeout)
    started = time.monotonic()
    Container(handler).run()
    handler.outcomes.seconds = time.monotonic() - started
    if handler.error is not None:
        raise handler.error
    return handler.outcomes


class _Timer:
    """A proton timer task that calls back (proton dispatches ``on_timer_task`` to it)."""

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback

    def on_timer_task(self, event: Any) -> None:
        self.callback()


class _Sender(MessagingHandler):  # type: ignore[misc]
    def __init__(
        self,
        url: str,
        address: str,
        payloads: Iterator[bytes],
        user: str | None,
        password: str | None,
        window: int,
        rate: float | None,
        timeout: float,
    ) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=True)
        self.url = url
        self.address = address
        self.payloads = payloads
        self.credentials = {"user": user, "password": password} if user is not None else {}
        self.window = window
        self.rate = rate
        self.timeout = timeout
        self.outcomes = Outcomes()
        self.error: SendError | None = None
        self.exhausted = False
        self.closing = False
        self.container: Any = None
        self.connection: Any = None
        self.sender: Any = None
        self.started = 0.0
        self.last_progress = 0.0
        self.pacing: Any = None
        self.watchdog: Any = None

    # --- lifecycle ------------------------------------------------------------------------

    def on_start(self, event: Any) -> None:
        self.container = event.container
        self.connection = self.container.connect(self.url, reconnect=False, **self.credentials)
        self.sender = self.container.create_sender(self.connection, self.address)
        self.started = self.last_progress = time.monotonic()
        self.watchdog = self.container.schedule(self.timeout, _Timer(self._check_progress))

    def _finish(self) -> None:
        if self.closing:
            return
        self.closing = True
        for task in (self.watchdog, self.pacing):
            if task is not None:
                task.cancel()
        self.watchdog = self.pacing = None
        if self.connection is not None:
            self.connection.close()

    def _fail(self, reason: str) -> None:
        if self.exhausted and self.outcomes.settled == self.outcomes.sent:
            return  # everything is settled: a late error on closing changes nothing
        if self.error is None:
            counts = self.outcomes
            self.error = SendError(
                f"{self.address!r} on {self.url}: {reason} "
                f"({counts.sent} sent, {counts.settled} settled)"
            )
        self._finish()

    def _check_progress(self) -> None:
        self.watchdog = None
        if self.closing:
            return
        idle = time.monotonic() - self.last_progress
        if idle >= self.timeout:
            self._fail(f"no progress for {idle:.1f}s")
        else:
            self.watchdog = self.container.schedule(self.timeout - idle, _Timer(self._check_progress))

    # --- sending --------------------------------------------------------------------------

    def on_sendable(self, event: Any) -> None:
        self._send()

    def _send(self) -> None:
        sender = self.sender
        outcomes = self.outcomes
        while not self.exhausted and not self.closing and sender.credit > 0:
            if outcomes.sent - outcomes.settled >= self.window:
                return
            if self.rate is not None and not self._on_schedule():
                return
            payload = next(self.payloads, None)
            if payload is None:
                self.exhausted = True
                break
            sender.delivery(sender.delivery_tag())
            sender.stream(payload)
            sender.advance()
            outcomes.sent += 1
            self.last_progress = time.monotonic()
        self._maybe_done()

    def _on_schedule(self) -> bool:
        """Whether the next send is due; otherwise wake up when it is."""
        assert self.rate is not None
        delay = self.started + self.outcomes.sent / self.rate - time.monotonic()
        if delay <= 0:
            return True
        if self.pacing is None:
            self.pacing = self.container.schedule(delay, _Timer(self._paced))
        return False

    def _paced(self) -> None:
        self.pacing = None
        self._send()

    def _maybe_done(self) -> None:
        if self.exhausted and self.outcomes.settled == self.outcomes.sent:
            self._finish()

    # --- outcomes -------------------------------------------------------------------------

    def _settled(self) -> None:
        self.last_progress = time.monotonic()
        self._send()

    def on_accepted(self, event: Any) -> None:
        self.outcomes.accepted += 1
        self._settled()

    def on_rejected(self, event: Any) -> None:
        self.outcomes.rejected += 1
        condition = event.delivery.remote.condition
        if condition is not None and len(self.outcomes.conditions) < _MAX_CONDITIONS:
            self.outcomes.conditions.append(f"{condition.name}: {condition.description}")
        self._settled()

    def on_released(self, event: Any) -> None:
        if event.delivery.remote_state == Delivery.MODIFIED:
            self.outcomes.modified += 1
        else:
            self.outcomes.released += 1
        self._settled()

    # --- failures -------------------------------------------------------------------------

    def on_link_error(self, event: Any) -> None:
        self._fail(f"link error {_condition(event.link.remote_condition)}")

    def on_session_error(self, event: Any) -> None:
        self._fail(f"session error {_condition(event.session.remote_condition)}")

    def on_connection_error(self, event: Any) -> None:
        self._fail(f"connection error {_condition(event.connection.remote_condition)}")

    def on_transport_error(self, event: Any) -> None:
        self._fail(f"transport error {_condition(event.transport.condition)}")

    def on_disconnected(self, event: Any) -> None:
        if not self.closing:
            condition = event.transport.condition if event.transport is not None else None
            self._fail("disconnected" if condition is None else f"disconnected: {_condition(condition)}")


def _condition(condition: Any) -> str:
    if condition is None:
        return "(no condition)"
    return f"{condition.name}: {condition.description}"
