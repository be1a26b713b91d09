"""Refused messages: the dead-letter copy, and the words and log lines for a refusal.

Every route (and the façade) refuses a message the same way: an unmappable message,
one over the size limit, one the target rejected or ended its link over too often
(:mod:`bridge.amqp10.poison`) is dead-lettered when the route has a dead-letter address
(:mod:`bridge.routes.deadletter`), else rejected at its source. The helpers here
build the copy (:func:`dead_letter_copy`, :func:`plain_copy`, :func:`plain_copy_091`), phrase the reason
(:func:`too_large`, :func:`report_poison`) and log it (:func:`log_refused`, rate
limited).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from pamqp.commands import Basic
from proton import symbol

from amqp010.codec import encode_header
from amqp010.events import MessageReceived
from mappings import amqp091
from mappings.amqp010 import to_amqp10
from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind

from ..amqp10.link import Amqp10Link
from ..amqp10.outcomes import condition_text
from ..config import Route
from ..ops.logs import WarnLimiter
from .stats import RouteStats

log = logging.getLogger(__package__)

MAPPING_ERROR = symbol("amqp-bridge:mapping-error")
"""Condition of a 1.0 reject caused by a message that cannot be translated."""
REASON_ANNOTATION = symbol("x-amqp-bridge-dead-letter-reason")
ROUTE_ANNOTATION = symbol("x-amqp-bridge-route")
LEGACY_HEADER_ANNOTATION = symbol("x-amqp-bridge-0-10-header")
"""Dead-letter copies of unmappable 0-10 messages: the encoded 0-10 header segment."""
PROPERTIES_ANNOTATION = symbol("x-amqp-bridge-0-9-1-properties")
"""Dead-letter copies of unmappable 0-9-1 messages: their basic properties as text."""

_REJECTIONS = WarnLimiter()
"""One WARNING line per route every 10 s about messages rejected for good."""


def dead_letter_copy(message: AmqpMessage, route: str, reason: str) -> bytes:
    """The encoded dead-letter form of ``message``: annotated with route and reason."""
    message.message_annotations[ROUTE_ANNOTATION] = route
    message.message_annotations[REASON_ANNOTATION] = reason[:1024]
    return message.encode()


def plain_copy(event: MessageReceived, route: Route) -> AmqpMessage:
    """The message as plain 1.0 (no CloudEvents) for dead-lettering, its user-id placed
    by ``route``'s rule for the dead-letter connection's login.

    A message the mapping refuses keeps its body as data, its UUID message-id, and
    its whole 0-10 header segment (binary, annotation ``x-amqp-bridge-0-10-header``).
    """
    try:
        return to_amqp10(event.delivery_properties, event.message_properties, event.body,
                         user_id=route.user_id, login_user=route.dead_letter_login_user)
    except MappingError:
        plain = AmqpMessage(body=[event.body])
        plain.body_kind = BodyKind.DATA
        mp = event.message_properties
        if mp is not None and isinstance(mp.message_id, uuid.UUID):
            plain.properties.message_id = mp.message_id
        plain.message_annotations[LEGACY_HEADER_ANNOTATION] = encode_header(tuple(event.header))
        return plain


def plain_copy_091(properties: Basic.Properties, delivery: amqp091.Delivery091, body: bytes,
                   route: Route) -> AmqpMessage:
    """A 0-9-1 message as plain 1.0 (no CloudEvents) for dead-lettering, its user-id placed
    by ``route``'s rule for the dead-letter connection's login.

    A message the mapping refuses keeps its body as data, its message-id, exchange and
    routing key, and its properties as text (annotation ``x-amqp-bridge-0-9-1-properties``).
    """
    try:
        return amqp091.to_amqp10(properties, delivery, body, user_id=route.user_id,
                                 login_user=route.dead_letter_login_user)
    except MappingError:
        plain = AmqpMessage(body=[body])
        plain.body_kind = BodyKind.DATA
        if properties.message_id is not None:
            plain.properties.message_id = properties.message_id
        amqp091.annotate_exchange(plain.message_annotations, delivery.exchange)
        amqp091.annotate_routing_key(plain.message_annotations, delivery.routing_key)
        plain.message_annotations[PROPERTIES_ANNOTATION] = repr(
            {name: value for name, value in properties if value is not None})[:4096]
        return plain


def log_refused(route: str, reason: str, *, dead_lettered: bool) -> None:
    """A message leaves ``route`` refused: dead-lettered (debug: the copy carries the
    reason), or rejected for good (WARNING, at most one line per route every 10 s, with
    the number held back: a stream of bad messages must not flood the log)."""
    if dead_lettered:
        log.debug("route %s: message dead-lettered: %s", route, reason,
                  extra={"event": "message_refused", "route": route, "error": reason})
        return
    held = _REJECTIONS.allow(route)
    if held is not None:
        log.warning("route %s: message rejected: %s%s", route, reason,
                    f" ({held} more since the last such line)" if held else "",
                    extra={"event": "message_rejected", "route": route, "error": reason,
                           "suppressed": held})


def report_poison(route: Route, stats: RouteStats, link: Amqp10Link, **fields: Any) -> str:
    """Count and log a poison message ``link``'s peer refused (bridge.amqp10.poison); returns the
    reason to settle it with."""
    stats.poison_messages += 1
    refusal = condition_text(link.refusal)
    reason = (f"the AMQP 1.0 target {link.address!r} ended the link {route.poison_attempts} "
              f"times while this message was the only one in flight: {refusal}")
    log.warning("route %s: poison message: %s", route.name, reason,
                extra={**link.log_fields("poison_message"), "error": refusal, **fields})
    return reason


def too_large(size: int, limit: int, route: Route) -> str:
    """Why a message of ``size`` octets is refused on ``route``."""
    whose = "the route's max_message_size" if route.max_message_size is not None else \
        "the max-message-size the AMQP 1.0 target announced"
    return f"message of {size} octets exceeds {whose} ({limit} octets)"


__all__ = ["LEGACY_HEADER_ANNOTATION", "MAPPING_ERROR", "REASON_ANNOTATION",
           "ROUTE_ANNOTATION", "dead_letter_copy", "log_refused", "plain_copy",
           "report_poison", "too_large"]
