"""The permissions each 0-9-1 method needs, as RabbitMQ checks them.

:func:`checks_for` is RabbitMQ's table (its access-control docs, and what a 3.10 node
answers): a non-passive exchange.declare or queue.declare and a delete need
*configure* on the name (a passive declare needs nothing); queue.bind and unbind
*write* on the queue and *read* on the exchange (exchange.bind: write on the
destination, read on the source); queue.purge, basic.consume and basic.get *read* on
the queue; basic.publish *write* on the exchange; a declare naming an exchange its
messages go on to (a queue's ``x-dead-letter-exchange``, an exchange's
``alternate-exchange``) also *read* on the name and *write* on that exchange
(:meth:`~bridge.facade.core.access.Access.publish_denied`; the default exchange is
``amq.default``).  A server-named queue (queue.declare of ``""``) is checked by the
handler once it has its ``amq.gen-…`` name, as RabbitMQ does.  A consume of
``amq.rabbitmq.reply-to`` (direct reply-to) needs nothing: RabbitMQ serves that
pseudo-queue to every user, and so does the façade (the reply queue it makes for the
channel at the 1.0 broker is the bridge's, not the user's).

:func:`refusal` is RabbitMQ's text: ``access to queue 'q' in vhost '/' refused for user
'u'`` (the engine prefixes ``ACCESS_REFUSED - ``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pamqp import commands as C
from pamqp.base import Frame

from ..core.access import (
    ALTERNATE_EXCHANGE,
    DEAD_LETTER_EXCHANGE,
    Check,
    exchange_named_by,
    forwarding_checks,
)
from .state import DIRECT_REPLY_TO


def _exchange_declare(m: C.Exchange.Declare) -> list[Check]:
    if m.passive or not m.exchange:
        return []
    return [Check("configure", "exchange", m.exchange),
            *forwarding_checks("exchange", m.exchange,
                               [(m.arguments or {}).get(ALTERNATE_EXCHANGE)])]


def _queue_declare(m: C.Queue.Declare) -> list[Check]:
    """configure on the queue (a server-named one: by its name, in the handler), and
    read on it and write on its dead-letter exchange if it names one."""
    if m.passive or m.queue == DIRECT_REPLY_TO:  # (RabbitMQ answers that one unchecked)
        return []
    dead_letter = (m.arguments or {}).get(DEAD_LETTER_EXCHANGE)
    if not m.queue:
        return [] if dead_letter is None \
            else [Check("write", "exchange", exchange_named_by(dead_letter))]
    return [Check("configure", "queue", m.queue),
            *forwarding_checks("queue", m.queue, [dead_letter])]


_CHECKS: dict[type[Frame], Callable[[Any], list[Check]]] = {
    C.Exchange.Declare: _exchange_declare,
    C.Exchange.Delete: lambda m: [Check("configure", "exchange", m.exchange or "")],
    C.Exchange.Bind: lambda m: [Check("write", "exchange", m.destination or ""),
                                Check("read", "exchange", m.source or "")],
    C.Queue.Declare: _queue_declare,
    C.Queue.Delete: lambda m: [Check("configure", "queue", m.queue or "")],
    C.Queue.Purge: lambda m: [Check("read", "queue", m.queue or "")],
    C.Queue.Bind: lambda m: [Check("write", "queue", m.queue or ""),
                             Check("read", "exchange", m.exchange or "")],
    C.Basic.Consume: lambda m: [] if m.queue == DIRECT_REPLY_TO
    else [Check("read", "queue", m.queue or "")],
    C.Basic.Get: lambda m: [Check("read", "queue", m.queue or "")],
}
_CHECKS[C.Exchange.Unbind] = _CHECKS[C.Exchange.Bind]
_CHECKS[C.Queue.Unbind] = _CHECKS[C.Queue.Bind]


def checks_for(method: Frame) -> list[Check]:
    """The permissions ``method`` needs (none for a method that names no exchange or
    queue to act on)."""
    checks = _CHECKS.get(type(method))
    return checks(method) if checks is not None else []


def refusal(check: Check, vhost: str, user: str | None) -> str:
    """RabbitMQ's refusal text (without the ``ACCESS_REFUSED - `` prefix)."""
    return (f"access to {check.kind} '{check.shown_name}' in vhost '{vhost or '/'}' refused "
            f"for user '{user or ''}'")


def user_id_refusal(user_id: str, user: str | None) -> str:
    """RabbitMQ's text for a user-id that is not the login (406 PRECONDITION_FAILED)."""
    return f"user_id property set to '{user_id}' but authenticated user was '{user or ''}'"


__all__ = ["checks_for", "refusal", "user_id_refusal"]
