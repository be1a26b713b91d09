"""The AMQP 0-10 legacy endpoints: a queue drained, an exchange published to.

Theory of operation
-------------------
Each endpoint is a :class:`~bridge.legacy.LegacyUser` of one
:class:`~bridge.legacy.amqp010.LegacyConnection`, which gives it a session of its own (fresh,
or resumed after a transport loss when the broker kept it) and dispatches the engine's
events about that session to it. The endpoint turns them into the protocol-neutral
calls of :mod:`bridge.routes.legacy_endpoint`:

:class:`Amqp010Source` (implements :class:`~bridge.routes.legacy_endpoint.LegacySource`)
    subscribes to the queue in credit mode with explicit accept (pre-acquired); a
    resumed session keeps subscription and credit. Dispositions are batched per burst
    and sent as one command per run of ids (``message.accept`` with ``sync``: an accept
    counts against the window until the broker completes it; ``message.release``, with
    ``set-redelivered`` when the 1.0 target may have seen the message).
:class:`Amqp010Target` (implements :class:`~bridge.routes.legacy_endpoint.LegacyTarget`)
    transfers to the exchange (accept-mode none); a burst's transfers end with one
    ``session.flush(completed)``, whose answer confirms them; an
    ``execution.exception`` naming a transfer refuses it (and ends the session).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from amqp010.events import (
    CommandsCompleted,
    Event,
    ExecutionExceptionReceived,
    MessageReceived,
)
from amqp010.session import Session, SessionState
from amqp010.spec import AcceptMode, AcquireMode, CreditUnit, ErrorCode, FlowMode
from mappings.message import AmqpMessage

from ..config import Route
from ..legacy.amqp010 import LegacyConnection
from .legacy_common import LegacyEndpointBase
from .legacy_endpoint import ACCEPT, REDELIVER, SourceOwner, Taken, TargetOwner, poison_key
from .refusals import plain_copy

log = logging.getLogger(__package__)

_UNLIMITED = 0xFFFFFFFF
EXCEPTION_CONDITIONS: dict[int, str] = {
    ErrorCode.UNAUTHORIZED_ACCESS: "amqp:unauthorized-access",
    ErrorCode.NOT_FOUND: "amqp:not-found",
    ErrorCode.RESOURCE_LOCKED: "amqp:resource-locked",
    ErrorCode.PRECONDITION_FAILED: "amqp:precondition-failed",
    ErrorCode.RESOURCE_DELETED: "amqp:resource-deleted",
    ErrorCode.ILLEGAL_STATE: "amqp:illegal-state",
    ErrorCode.RESOURCE_LIMIT_EXCEEDED: "amqp:resource-limit-exceeded",
    ErrorCode.NOT_ALLOWED: "amqp:not-allowed",
    ErrorCode.INVALID_ARGUMENT: "amqp:invalid-field",
    ErrorCode.NOT_IMPLEMENTED: "amqp:not-implemented",
}
"""1.0 error condition for a 0-10 execution exception (others: amqp:internal-error)."""


def usable(session: Session | None) -> bool:
    """True if commands can still be sent on ``session`` (now, or replayed on resume)."""
    return session is not None and session.state in (
        SessionState.ATTACHED, SessionState.ATTACHING, SessionState.DETACHED)


def runs(items: list[tuple[Session, str, int]]) -> Iterable[tuple[Session, str, list[int]]]:
    """Group consecutive (session, fate) items: one 0-10 command per run of ids."""
    run: list[int] = []
    key: tuple[Session, str] | None = None
    for session, fate, cid in items:
        if key is not None and (key[0] is not session or key[1] != fate):
            yield key[0], key[1], run
            run = []
        key = (session, fate)
        run.append(cid)
    if key is not None:
        yield key[0], key[1], run


class _Amqp010Endpoint(LegacyEndpointBase):
    """One route's session on a 0-10 connection (the part both directions share)."""

    def __init__(self, connection: LegacyConnection, route: Route) -> None:
        super().__init__(connection, route)
        self.legacy = connection
        self.session: Session | None = None

    @property
    def attached(self) -> bool:
        session = self.session
        return session is not None and session.attached

    def restart(self) -> Callable[[], bool]:
        """End the session so that a fresh one follows (a contained fault in the route):
        the broker requeues what the session holds unsettled at once (timeout 0); the
        connection starts a fresh session after its re-attach pause."""
        session = self.session
        if session is not None and session.attached:
            if session.timeout:
                session.request_timeout(0)
            session.detach()
            self.legacy.flush()
        return lambda: self.attached and self.session is not session

    def log_exception(self, event: ExecutionExceptionReceived) -> None:
        log.warning("route %s: 0-10 exception %s: %s", self.name, event.error_code,
                    event.description, extra=self.legacy.log_fields(
                        "session_exception", route=self.name, error=event.description))


class Amqp010Source(_Amqp010Endpoint):
    """A 0-10 queue drained with explicit accept and message credit (module docstring)."""

    grants_in_batches = True  # each grant is a message.flow

    def __init__(self, connection: LegacyConnection, route: Route, owner: SourceOwner) -> None:
        super().__init__(connection, route)
        assert route.source.queue is not None
        self.queue = route.source.queue
        self.owner = owner
        self.destination = f"bridge.{route.name}"
        self.granted = 0
        self.stopped = False  # message.stop sent since the last octet credit
        self.accepts_pending = 0
        """Accepts not yet completed by the broker (queued, or sent and unconfirmed)."""
        self._dispositions: list[tuple[Session, str, int]] = []
        self._unconfirmed: dict[int, int] = {}  # message.accept command id -> messages
        connection.add(self)

    # -- LegacyUser ------------------------------------------------------------------

    def on_session(self, session: Session, resumed: bool) -> None:
        self.session = session
        self.progress = False
        if resumed:
            # A kept session still has our subscription and credit; a broker that forgot it
            # answers this no-op flow with an exception, and we get a fresh session.
            session.message_flow(self.destination, CreditUnit.MESSAGE, 0)
        else:
            self.granted = 0
            self.stopped = False
            session.message_subscribe(self.queue, self.destination,
                                      accept_mode=AcceptMode.EXPLICIT,
                                      acquire_mode=AcquireMode.PRE_ACQUIRED)
            session.message_set_flow_mode(self.destination, FlowMode.CREDIT)
            session.message_flow(self.destination, CreditUnit.BYTE, _UNLIMITED)
        self.owner.on_legacy_session()

    def on_suspended(self) -> None:
        pass  # in-flight messages stay: their accepts are replayed on the resumed session

    def on_lost(self) -> bool:
        # the broker requeued what it had delivered on that session; outcomes still coming
        # for those messages are not settled there (redelivery may duplicate: at-least-once)
        self.session = None
        self.granted = 0
        self.accepts_pending = 0
        self._unconfirmed.clear()
        self.owner.on_legacy_lost()
        return self.progress

    def on_event(self, event: Event) -> None:
        if isinstance(event, MessageReceived):
            self.granted = max(0, self.granted - 1)
            self.progress = True
            mp = event.message_properties
            dp = event.delivery_properties
            message_id = mp.message_id if mp is not None else None
            taken = Taken(event.session, event.command_id, len(event.body), t0=time.monotonic(),
                          suspect=poison_key(message_id, event.body))
            self.owner.on_legacy_message(taken, event, message_id,
                                         dp is not None and bool(dp.redelivered))
        elif isinstance(event, CommandsCompleted):
            confirmed = sum(self._unconfirmed.pop(cid, 0) for cid in event.commands)
            if confirmed:
                self.accepts_pending -= confirmed
                self.owner.on_legacy_confirmed()
        elif isinstance(event, ExecutionExceptionReceived):
            self.log_exception(event)

    # -- LegacySource ----------------------------------------------------------------

    def to_amqp10(self, message: MessageReceived) -> AmqpMessage:
        return self.translator.legacy_to_amqp10(message.delivery_properties,
                                                message.message_properties, message.body)

    def plain_copy(self, message: MessageReceived) -> AmqpMessage:
        return plain_copy(message, self.route)

    def settle(self, taken: Taken, fate: str) -> None:
        session = taken.channel
        if usable(session):
            self._dispositions.append((session, fate, taken.tag))
            if fate == ACCEPT and session is self.session:
                self.accepts_pending += 1

    def reject(self, taken: Taken, reason: str) -> bool:
        session = taken.channel
        if not usable(session):
            return False
        session.message_reject([taken.tag], text=reason[:255])
        return True

    def grant(self, credit: int) -> None:
        session = self.session
        assert session is not None
        if self.stopped:  # message.stop took the octet credit too
            session.message_flow(self.destination, CreditUnit.BYTE, _UNLIMITED)
            self.stopped = False
        session.message_flow(self.destination, CreditUnit.MESSAGE, credit)
        self.granted += credit

    def stop(self) -> None:
        """message.stop: the broker's credit (messages and octets) drops to zero."""
        session = self.session
        if session is not None and session.attached:
            session.message_stop(self.destination)
            self.granted = 0
            self.stopped = True

    def end_of_burst(self) -> None:
        pending, self._dispositions = self._dispositions, []
        for session, fate, ids in runs(pending):
            if not usable(session):
                continue
            if fate == ACCEPT:
                # completed (sync) once the broker has settled them: till then they count
                # against the window, as they would come again after a crash
                command_id = session.message_accept(ids, sync=True)
                if session is self.session:
                    self._unconfirmed[command_id] = len(ids)
            else:
                session.message_release(ids, set_redelivered=fate == REDELIVER)


class Amqp010Target(_Amqp010Endpoint):
    """A 0-10 exchange published to, transfers confirmed by completion (module docstring)."""

    def __init__(self, connection: LegacyConnection, route: Route, owner: TargetOwner) -> None:
        super().__init__(connection, route)
        target = route.target
        self.exchange = target.exchange if target.exchange is not None else ""
        self.owner = owner
        self._unflushed = False  # transfers sent since the last session.flush
        connection.add(self)

    # -- LegacyUser ------------------------------------------------------------------

    def on_session(self, session: Session, resumed: bool) -> None:
        self.session = session
        self.progress = False
        self.owner.on_legacy_session()

    def on_suspended(self) -> None:
        self.owner.on_legacy_suspended()

    def on_lost(self) -> bool:
        self.session = None
        self.owner.on_legacy_lost()
        return self.progress

    def on_event(self, event: Event) -> None:
        if isinstance(event, CommandsCompleted):
            self.owner.on_transferred(event.commands)
        elif isinstance(event, ExecutionExceptionReceived):
            self.log_exception(event)
            if event.command_id is None:
                return
            condition = EXCEPTION_CONDITIONS.get(event.error_code, "amqp:internal-error")
            reason = f"0-10 broker raised {event.error_code} ({condition}): {event.description}"
            self.owner.on_transfer_refused(event.command_id, condition, reason)
            # the session is over: on_lost gives the rest back

    # -- LegacyTarget ----------------------------------------------------------------

    @property
    def room(self) -> int:
        session = self.session
        # a 0-10 target grants no credit to a publisher: what bounds the route there is
        # the session's replay buffer (transfers the broker has not completed yet)
        if session is None or not session.attached:
            return 0
        return max(0, session.max_outstanding - session.outstanding)

    @property
    def can_send(self) -> bool:
        session = self.session
        return session is not None and session.attached and session.can_send

    def transfer(self, message: AmqpMessage) -> tuple[int, int]:
        session = self.session
        assert session is not None
        dp, mp, body = self.translator.amqp10_to_legacy(message)
        command_id = session.message_transfer(self.exchange, (dp, mp), body,
                                              accept_mode=AcceptMode.NONE,
                                              acquire_mode=AcquireMode.PRE_ACQUIRED)
        self._unflushed = True
        return command_id, len(body)

    def end_of_burst(self) -> None:
        session = self.session
        if self._unflushed and session is not None and session.attached:
            session.flush(completed=True)
        self._unflushed = False


__all__ = ["EXCEPTION_CONDITIONS", "Amqp010Source", "Amqp010Target", "runs", "usable"]
