"""The permissions each 0-10 command needs, in RabbitMQ's model, refused as qpidd words it.

:func:`checks_for` maps the 0-10 model commands onto the permissions the 0-9-1
façade checks (one model for both, docs/operations.md "Who may do what"): a
non-passive exchange-declare or queue-declare and a delete need *configure* on the
name (a passive declare and the queries need nothing); exchange-bind and -unbind
*write* on the queue and *read* on the exchange; queue-purge and message-subscribe
*read* on the queue; message-transfer *write* on its destination exchange; a declare
naming an exchange its messages go on to (the ``alternate-exchange`` field or argument,
a queue's ``x-dead-letter-exchange`` argument) also *read* on the name and *write* on
that exchange, RabbitMQ's rule
(:meth:`~bridge.facade.core.access.Access.publish_denied`; the default exchange is
``amq.default``).  qpid.messaging addresses reach the façade as these commands (a
sender's address: a transfer to its exchange; a receiver's: a subscribe to its queue,
a bind for a temporary queue).

The refusal is execution.exception unauthorized-access with qpidd's ACL text ("ACL
denied queue create request from u"; a transfer: "u cannot publish to X with
routing-key K") followed by what the bridge found missing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from amqp010.base import Command
from amqp010.spec import (
    ExchangeBind,
    ExchangeDeclare,
    ExchangeDelete,
    ExchangeUnbind,
    MessageSubscribe,
    QueueDeclare,
    QueueDelete,
    QueuePurge,
)

from ..core.access import ALTERNATE_EXCHANGE, DEAD_LETTER_EXCHANGE, Check, forwarding_checks


def _bind(c: Any) -> list[Check]:
    """A binding: write on the queue, read on the exchange."""
    return [Check("write", "queue", c.queue or ""), Check("read", "exchange", c.exchange or "")]


def _alternate(c: Any) -> Any:
    """The alternate exchange a declare names: its field, else its argument (None: none)."""
    return c.alternate_exchange or (c.arguments or {}).get(ALTERNATE_EXCHANGE)


def _exchange_declare(c: Any) -> list[Check]:
    if c.passive:
        return []
    name = c.exchange or ""
    return [Check("configure", "exchange", name),
            *forwarding_checks("exchange", name, [_alternate(c)])]


def _queue_declare(c: Any) -> list[Check]:
    if c.passive:
        return []
    name = c.queue or ""
    return [Check("configure", "queue", name),
            *forwarding_checks("queue", name, [_alternate(c),
                                               (c.arguments or {}).get(DEAD_LETTER_EXCHANGE)])]


_CHECKS: dict[type[Command], tuple[str, Callable[[Any], list[Check]]]] = {
    ExchangeDeclare: ("exchange create", _exchange_declare),
    ExchangeDelete: ("exchange delete", lambda c: [Check("configure", "exchange",
                                                         c.exchange or "")]),
    ExchangeBind: ("exchange bind", _bind),
    ExchangeUnbind: ("exchange unbind", _bind),
    QueueDeclare: ("queue create", _queue_declare),
    QueueDelete: ("queue delete", lambda c: [Check("configure", "queue", c.queue or "")]),
    QueuePurge: ("purge", lambda c: [Check("read", "queue", c.queue or "")]),
    MessageSubscribe: ("Queue subscribe", lambda c: [Check("read", "queue", c.queue or "")]),
}
"""Command class → (qpidd's name of the request in its ACL refusal, the checks)."""


def checks_for(command: Command) -> tuple[str, list[Check]]:
    """What ``command`` is called in a refusal, and the permissions it needs."""
    entry = _CHECKS.get(type(command))
    if entry is None:
        return command.NAME, []
    request, checks = entry
    return request, checks(command)


def _missing(check: Check) -> str:
    return f" (amqp-bridge: no {check.permission} permission on {check.kind} " \
           f"'{check.shown_name}')"


def refusal(request: str, check: Check, user: str | None) -> str:
    """qpidd's ACL refusal of ``request`` ("ACL denied queue create request from u"),
    with the permission missing."""
    return f"ACL denied {request} request from {user or ''}" + _missing(check)


def transfer_refusal(check: Check, user: str | None, routing_key: str) -> str:
    """qpidd's refusal of a transfer ("u cannot publish to X with routing-key K")."""
    return (f"{user or ''} cannot publish to {check.shown_name} with routing-key "
            f"{routing_key}" + _missing(check))


def user_id_refusal(user_id: str, user: str | None) -> str:
    """qpidd's text for a user-id that is not the login (unauthorized-access)."""
    return f"authorised user id : {user or ''} but user id in message declared as {user_id}"


__all__ = ["checks_for", "refusal", "transfer_refusal", "user_id_refusal"]
