"""Route runtimes: move messages between an AMQP 0-10 side and an AMQP 1.0 side.

Both directions are at-least-once: the source message is settled only after
the target's outcome is known, and the number of messages (and octets) between
the two is bounded by the route's ``max_in_flight``.

``LegacyToAmqp10`` (0-10 queue → 1.0 address)
    subscribes to the queue in credit mode with explicit accept; grants 0-10
    message credit only while the 1.0 sender has credit and the in-flight bound
    has room; sends each message unsettled; the 1.0 outcome decides the 0-10
    fate: accepted → message.accept; rejected → dead-letter (then accept) or
    message.reject; released → message.release; modified(delivery-failed) →
    release with set-redelivered.

``Amqp10ToLegacy`` (1.0 address → 0-10 exchange)
    grants 1.0 link credit up to the in-flight bound; transfers each message to
    the exchange; the transfer's session completion → 1.0 accepted; an
    execution.exception naming it → 1.0 rejected with the error.

Unmappable messages (MappingError, CloudEvents errors) go to the dead-letter
address with the reason in message annotations, or are rejected with it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from proton import Condition, Delivery, Endpoint, Link, symbol
from proton.reactor import Container

from mappings.errors import MappingError
from mappings.message import AmqpMessage

from .amqp010.events import (
    CommandsCompleted,
    Event,
    ExecutionExceptionReceived,
    MessageReceived,
)
from .amqp010.session import Session
from .amqp010.spec import AcceptMode, AcquireMode, CreditUnit, FlowMode
from .config import Route
from .legacy import LegacyConnection
from .translate import Translator

log = logging.getLogger(__name__)

MAPPING_ERROR = symbol("amqp-bridge:mapping-error")
"""Condition of a 1.0 reject caused by a message that cannot be translated."""
REASON_ANNOTATION = symbol("x-amqp-bridge-dead-letter-reason")
ROUTE_ANNOTATION = symbol("x-amqp-bridge-route")
_UNLIMITED = 0xFFFFFFFF


@dataclass
class RouteStats:
    """Per-route counters (exported as metrics)."""

    received: int = 0
    delivered: int = 0
    rejected: int = 0
    dead_lettered: int = 0
    released: int = 0
    mapping_errors: int = 0
    in_flight: int = 0
    in_flight_bytes: int = 0
    extra: dict[str, int] = field(default_factory=dict)


def send_raw(sender: Link, data: bytes) -> Delivery:
    """Send already-encoded AMQP 1.0 message bytes as one unsettled delivery."""
    delivery = sender.delivery(sender.delivery_tag())
    sender.stream(data)
    sender.advance()
    return delivery


def dead_letter_copy(message: AmqpMessage, route: str, reason: str) -> bytes:
    """The encoded dead-letter form of ``message``: annotated with route and reason."""
    message.message_annotations[ROUTE_ANNOTATION] = route
    message.message_annotations[REASON_ANNOTATION] = reason[:1024]
    return message.encode()


class _SenderHandler:
    """Routes a proton sender link's events to its owner."""

    def __init__(self, owner: Any) -> None:
        self.owner = owner

    def on_link_flow(self, event: Any) -> None:
        self.owner.on_credit()

    def on_delivery(self, event: Any) -> None:
        delivery = event.delivery
        if delivery.updated and delivery.remote_state:
            self.owner.on_outcome(delivery)

    def on_link_remote_close(self, event: Any) -> None:
        self.owner.on_link_closed(event.link)


class LegacyToAmqp10:
    """A 0-10 queue drained into a 1.0 address (see the module docstring)."""

    def __init__(self, container: Container, route: Route, legacy: LegacyConnection,
                 amqp10: Any, dead_letter: Any | None) -> None:
        self.name = route.name
        self.route = route
        self.translator = Translator(route)
        self.legacy = legacy
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        self.destination = f"bridge.{route.name}"
        self.paused = False
        self.session: Session | None = None
        self.granted = 0  # 0-10 message credit granted and not yet used
        self.in_flight: dict[Delivery, tuple[Session, int, int, bytes | None]] = {}
        self.dlq_in_flight: dict[Delivery, tuple[Session, int, int]] = {}
        handler = _SenderHandler(self)
        self.sender = container.create_sender(amqp10, route.target.address, handler=handler)
        self.dlq = None
        if dead_letter is not None:
            self.dlq = container.create_sender(dead_letter[0], dead_letter[1],
                                               handler=_DeadLetterHandler(self))
        legacy.add(self)

    # -- 0-10 side -----------------------------------------------------------------------

    def on_session(self, session: Session) -> None:
        self.session = session
        self.granted = 0
        assert self.route.source.queue is not None
        session.message_subscribe(self.route.source.queue, self.destination,
                                  accept_mode=AcceptMode.EXPLICIT,
                                  acquire_mode=AcquireMode.PRE_ACQUIRED)
        session.message_set_flow_mode(self.destination, FlowMode.CREDIT)
        session.message_flow(self.destination, CreditUnit.BYTE, _UNLIMITED)
        self._grant()

    def on_lost(self) -> None:
        # the broker requeues what was not accepted; outcomes still arriving for
        # those deliveries are ignored (the redelivery may duplicate: at-least-once)
        self.session = None
        self.granted = 0

    def on_event(self, event: Event) -> None:
        if isinstance(event, MessageReceived):
            self._on_message(event)
        elif isinstance(event, ExecutionExceptionReceived):
            log.warning("route %s: 0-10 exception %s: %s", self.name, event.error_code,
                        event.description)

    def _on_message(self, event: MessageReceived) -> None:
        self.granted = max(0, self.granted - 1)
        self.stats.received += 1
        size = len(event.body)
        try:
            message = self.translator.legacy_to_amqp10(event.delivery_properties,
                                                       event.message_properties, event.body)
            data = message.encode()
        except MappingError as exc:
            self.stats.mapping_errors += 1
            self._unmappable(event, exc)
            return
        delivery = send_raw(self.sender, data)
        # the encoded copy is kept only when a rejection may need to dead-letter it
        self.in_flight[delivery] = (event.session, event.command_id, size,
                                    data if self.dlq is not None else None)
        self.stats.in_flight = len(self.in_flight)
        self.stats.in_flight_bytes += size

    def _unmappable(self, event: MessageReceived, exc: MappingError) -> None:
        reason = f"cannot translate: {exc}"
        if self.dlq is not None:
            from mappings.amqp010 import to_amqp10

            try:
                plain = to_amqp10(event.delivery_properties, event.message_properties, event.body)
            except MappingError:
                plain = AmqpMessage(body=[event.body])
                from mappings.message import BodyKind

                plain.body_kind = BodyKind.DATA
            delivery = send_raw(self.dlq, dead_letter_copy(plain, self.name, reason))
            self.dlq_in_flight[delivery] = (event.session, event.command_id, len(event.body))
            return
        self.stats.rejected += 1
        event.session.message_reject([event.command_id], text=reason[:255])
        self._grant()

    # -- 1.0 side ------------------------------------------------------------------------

    def on_credit(self) -> None:
        self._grant()

    def on_outcome(self, delivery: Delivery) -> None:
        entry = self.in_flight.pop(delivery, None)
        if entry is None:
            return
        session, command_id, size, data = entry
        self.stats.in_flight = len(self.in_flight)
        self.stats.in_flight_bytes -= size
        state = delivery.remote_state
        delivery.settle()
        live = session is self.session and session.attached
        if state == Delivery.ACCEPTED:
            self.stats.delivered += 1
            if live:
                session.message_accept([command_id])
        elif state == Delivery.REJECTED:
            self._target_rejected(delivery, session, command_id, size, data, live)
        elif state == Delivery.RELEASED:
            self.stats.released += 1
            if live:
                session.message_release([command_id])
        else:  # MODIFIED
            self.stats.released += 1
            failed = bool(getattr(delivery.remote, "failed", True))
            if live:
                session.message_release([command_id], set_redelivered=failed)
        self._grant()
        self.legacy.flush()

    def _target_rejected(self, delivery: Delivery, session: Session, command_id: int,
                         size: int, data: bytes | None, live: bool) -> None:
        condition = delivery.remote.condition
        reason = f"rejected by the target: {condition.name if condition else 'no condition'}"
        if condition is not None and condition.description:
            reason += f" ({condition.description})"
        if not live:
            return
        if self.dlq is None or data is None:
            self.stats.rejected += 1
            session.message_reject([command_id], text=reason[:255])
            return
        copy = dead_letter_copy(AmqpMessage.decode(data), self.name, reason)
        self.dlq_in_flight[send_raw(self.dlq, copy)] = (session, command_id, size)

    def on_dead_letter_outcome(self, delivery: Delivery) -> None:
        entry = self.dlq_in_flight.pop(delivery, None)
        if entry is None:
            return
        session, command_id, _ = entry
        state = delivery.remote_state
        delivery.settle()
        if session is not self.session or not session.attached:
            return
        if state == Delivery.ACCEPTED:
            self.stats.dead_lettered += 1
            session.message_accept([command_id])
        else:
            session.message_release([command_id])
        self._grant()
        self.legacy.flush()

    def on_link_closed(self, link: Link) -> None:
        condition = link.remote_condition
        log.warning("route %s: 1.0 link closed by the peer: %s", self.name, condition)

    # -- credit bridging -----------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Messages taken from the source whose outcome is not settled yet."""
        return len(self.in_flight) + len(self.dlq_in_flight)

    def pause(self) -> None:
        """Take no more messages from the source (graceful shutdown)."""
        self.paused = True

    def _grant(self) -> None:
        session = self.session
        if session is None or not session.attached or self.paused:
            return
        busy = len(self.in_flight) + len(self.dlq_in_flight) + self.granted
        room = min(self.sender.credit - self.granted, self.limit_messages - busy)
        if self.stats.in_flight_bytes >= self.limit_bytes:
            room = 0
        # grant in batches (a quarter of the window) to keep flow commands rare
        batch = max(1, min(self.limit_messages, max(self.sender.credit, 1)) // 4)
        if room >= batch or (room > 0 and busy == 0):
            session.message_flow(self.destination, CreditUnit.MESSAGE, room)
            self.granted += room
            self.legacy.flush()


class _DeadLetterHandler(_SenderHandler):
    def on_link_flow(self, event: Any) -> None:
        pass

    def on_delivery(self, event: Any) -> None:
        delivery = event.delivery
        if delivery.updated and delivery.remote_state:
            self.owner.on_dead_letter_outcome(delivery)


class _ReceiverHandler:
    """Routes a proton receiver link's events to its owner."""

    def __init__(self, owner: Any) -> None:
        self.owner = owner

    def on_link_remote_open(self, event: Any) -> None:
        self.owner.on_link_open()

    def on_delivery(self, event: Any) -> None:
        delivery = event.delivery
        if delivery.readable and not delivery.partial:
            self.owner.on_delivery(delivery)

    def on_link_remote_close(self, event: Any) -> None:
        log.warning("route %s: 1.0 link closed by the peer: %s", self.owner.name,
                    event.link.remote_condition)


class Amqp10ToLegacy:
    """A 1.0 address drained into a 0-10 exchange (see the module docstring)."""

    def __init__(self, container: Container, route: Route, amqp10: Any,
                 legacy: LegacyConnection, dead_letter: Any | None) -> None:
        self.name = route.name
        self.route = route
        self.translator = Translator(route)
        self.legacy = legacy
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.limit_bytes = route.max_in_flight.bytes
        target = route.target
        self.exchange = target.exchange if target.exchange is not None else ""
        self.paused = False
        self.session: Session | None = None
        self.in_flight: dict[int, tuple[Delivery, int]] = {}
        self.dlq_in_flight: dict[Delivery, Delivery] = {}
        self.receiver = container.create_receiver(amqp10, route.source.address,
                                                  handler=_ReceiverHandler(self))
        self.dlq = None
        if dead_letter is not None:
            self.dlq = container.create_sender(dead_letter[0], dead_letter[1],
                                               handler=_DeadLetterHandler(self))
        legacy.add(self)

    # -- 0-10 side -----------------------------------------------------------------------

    def on_session(self, session: Session) -> None:
        self.session = session
        self._grant()

    def on_lost(self) -> None:
        # transfers not completed may or may not have reached the broker: give the
        # 1.0 messages back (modified, delivery-failed) so they are redelivered
        self.session = None
        for delivery, _size in self.in_flight.values():
            _modified(delivery)
            self.stats.released += 1
        self.in_flight.clear()
        self.stats.in_flight = 0
        self.stats.in_flight_bytes = 0

    def on_event(self, event: Event) -> None:
        if isinstance(event, CommandsCompleted):
            for command_id in event.commands:
                entry = self.in_flight.pop(command_id, None)
                if entry is not None:
                    delivery, size = entry
                    delivery.update(Delivery.ACCEPTED)
                    delivery.settle()
                    self.stats.delivered += 1
                    self.stats.in_flight_bytes -= size
            self.stats.in_flight = len(self.in_flight)
            self._grant()
        elif isinstance(event, ExecutionExceptionReceived):
            entry = self.in_flight.pop(event.command_id, None) if event.command_id is not None else None
            if entry is not None:
                delivery, size = entry
                _reject(delivery, "amqp:internal-error",
                        f"0-10 broker raised {event.error_code}: {event.description}")
                self.stats.rejected += 1
                self.stats.in_flight_bytes -= size
            # the session is over: on_lost releases the rest

    # -- 1.0 side ------------------------------------------------------------------------

    def on_link_open(self) -> None:
        self._grant()

    def on_delivery(self, delivery: Delivery) -> None:
        receiver = self.receiver
        data = receiver.recv(delivery.pending)
        receiver.advance()
        self.stats.received += 1
        session = self.session
        if session is None or not session.attached:
            _modified(delivery)  # no 0-10 session right now: give it back
            self.stats.released += 1
            return
        try:
            message = AmqpMessage.decode(data)
            dp, mp, body = self.translator.amqp10_to_legacy(message)
        except MappingError as exc:
            self.stats.mapping_errors += 1
            self._unmappable(delivery, data, exc)
            return
        command_id = session.message_transfer(self.exchange, (dp, mp), body,
                                              accept_mode=AcceptMode.NONE,
                                              acquire_mode=AcquireMode.PRE_ACQUIRED, sync=True)
        self.in_flight[command_id] = (delivery, len(body))
        self.stats.in_flight = len(self.in_flight)
        self.stats.in_flight_bytes += len(body)
        self.legacy.flush()

    def _unmappable(self, delivery: Delivery, data: bytes, exc: MappingError) -> None:
        reason = f"cannot translate: {exc}"
        if self.dlq is not None:
            try:
                message = AmqpMessage.decode(data)
                copy = dead_letter_copy(message, self.name, reason)
            except MappingError:
                copy = data  # not even decodable: forward the bytes as they came
            self.dlq_in_flight[send_raw(self.dlq, copy)] = delivery
            return
        _reject(delivery, str(MAPPING_ERROR), reason)
        self.stats.rejected += 1
        self._grant()

    def on_dead_letter_outcome(self, dlq_delivery: Delivery) -> None:
        original = self.dlq_in_flight.pop(dlq_delivery, None)
        state = dlq_delivery.remote_state
        dlq_delivery.settle()
        if original is None:
            return
        if state == Delivery.ACCEPTED:
            original.update(Delivery.ACCEPTED)
            original.settle()
            self.stats.dead_lettered += 1
        else:
            _modified(original)
            self.stats.released += 1
        self._grant()

    def on_credit(self) -> None:  # dead-letter sender credit: nothing to do
        pass

    def on_link_closed(self, link: Link) -> None:
        log.warning("route %s: dead-letter link closed: %s", self.name, link.remote_condition)

    @property
    def pending(self) -> int:
        """Messages taken from the source whose outcome is not settled yet."""
        return len(self.in_flight) + len(self.dlq_in_flight)

    def pause(self) -> None:
        """Take no more messages from the source (graceful shutdown)."""
        self.paused = True

    def _grant(self) -> None:
        receiver = self.receiver
        if receiver.state & Endpoint.REMOTE_ACTIVE == 0 or self.paused:
            return
        session = self.session
        if session is None or not session.attached or self.stats.in_flight_bytes >= self.limit_bytes:
            return
        busy = len(self.in_flight) + len(self.dlq_in_flight) + receiver.credit + receiver.queued
        room = self.limit_messages - busy
        if room >= max(1, self.limit_messages // 4) or (room > 0 and busy == 0):
            receiver.flow(room)


def _modified(delivery: Delivery) -> None:
    delivery.local.failed = True
    delivery.update(Delivery.MODIFIED)
    delivery.settle()


def _reject(delivery: Delivery, condition: str, description: str) -> None:
    delivery.local.condition = Condition(condition, description[:1024])
    delivery.update(Delivery.REJECTED)
    delivery.settle()
