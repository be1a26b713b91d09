"""Who may do what on a façade listener, applied: both façades' checks, counts and rules.

Theory of operation
-------------------
The model is :mod:`bridge.security.permissions` (RabbitMQ's configure / write / read
patterns).  Each façade front turns a client's operation into :class:`Check` es —
the 0-10 façade in :mod:`bridge.facade.amqp010.command_access`, the 0-9-1 façade in
:mod:`bridge.facade.amqp091.method_access`, both after RabbitMQ's table (declare and
delete: configure; bind: write on the queue, read on the exchange; publish: write on
the exchange; consume, get, purge: read on the queue) — and asks the listener's
:class:`Access` before it does anything else, as RabbitMQ checks before it looks the
names up.  A refused check is counted here (:attr:`Access.refused`, by operation and
permission: ``amqp_bridge_facade_access_refused_total``); the front answers the
client as its legacy broker would and logs it through the listener's rate-limited
client warnings (event ``access_refused``), so a client hammering costs one line per
address every 10 s.

The same goes for a message's user-id (:meth:`Access.user_id_refused`): unless the
listener trusts user ids (``trust_user_id``), a user-id other than the publisher's
login is refused (counted with the permission ``user_id``), as RabbitMQ and qpidd
refuse it.

A declare may also name another exchange its messages go on to: a queue's dead-letter
exchange (argument ``x-dead-letter-exchange``), an exchange's or (0-10) a queue's
alternate exchange (``alternate-exchange``). RabbitMQ then also checks *read* on the
declared name and *write* on that exchange (:func:`forwarding_checks`), so that a user
cannot route into an exchange it may not publish to through a queue or exchange of
its own (a message that expires, is rejected or is unroutable there).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...security.permissions import Kind, Permission, Permissions, checked_name

log = logging.getLogger("bridge.facade")  # the façade's one logger

USER_ID = "user_id"
"""The ``permission`` label of a refused user-id (a rule, not a pattern)."""


@dataclass(frozen=True)
class Check:
    """One permission an operation needs: ``permission`` on exchange or queue ``name``."""

    permission: Permission
    kind: Kind
    name: str

    @property
    def shown_name(self) -> str:
        """The name as refusals show it (the default exchange: ``amq.default``)."""
        return checked_name(self.kind, self.name)


DEAD_LETTER_EXCHANGE = "x-dead-letter-exchange"
ALTERNATE_EXCHANGE = "alternate-exchange"
"""The declare arguments that name an exchange messages go on to."""


def exchange_named_by(value: Any) -> str:
    """The exchange name an argument's value gives (a byte string as its UTF-8 text,
    undecodable bytes kept as surrogate escapes, so a pattern still sees them)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "surrogateescape")
    return value if isinstance(value, str) else str(value)


def forwarding_checks(kind: Kind, name: str, exchanges: Iterable[Any]) -> list[Check]:
    """What a declare of ``name`` needs, beyond configure, for the exchanges it names as
    where its messages go on to (``None``: not named; ``""``: the default exchange):
    read on ``name`` and write on each exchange, RabbitMQ's rule (module docstring)."""
    targets = [exchange_named_by(v) for v in exchanges if v is not None]
    if not targets:
        return []
    return [Check("read", kind, name), *(Check("write", "exchange", t) for t in targets)]


class Access:
    """A listener's permissions and user-id rule, and the count of what they refused."""

    def __init__(self, listener: str, permissions: Permissions, *,
                 trust_user_id: bool = False) -> None:
        self.listener = listener
        self.permissions = permissions
        self.trust_user_id = trust_user_id
        self.refused: dict[tuple[str, str], int] = {}
        """Refusals by (operation, permission or ``user_id``)."""

    def announce(self, virtual_hosts: frozenset[str] | None = None) -> None:
        """Log, once at start, what an unrestricted listener lets everyone do, and users
        whose per-vhost grants do not restrict them (the listener opens ``virtual_hosts``,
        None: any; :meth:`~bridge.security.permissions.Permissions.vhost_grants_not_kept`)."""
        for user in self.permissions.vhost_grants_not_kept(virtual_hosts):
            log.warning("façade %s: user %r: its permissions per virtual host restrict nothing: "
                        "every virtual host of the listener serves the same exchanges and "
                        "queues, and it may open one its vhosts do not list, with its other "
                        "permissions (list them all in the listener's virtual_hosts, or "
                        "narrow its top-level permissions)", self.listener, user,
                        extra={"event": "permissions_vhost_not_kept",
                               "listener": self.listener, "user": user})
        if self.permissions.unrestricted:
            log.info("façade %s: no permissions configured: every user who logs in may "
                     "configure, write and read every exchange and queue", self.listener,
                     extra={"event": "permissions_unrestricted", "listener": self.listener})

    def denied(self, user: str | None, vhost: str, checks: list[Check],
               operation: str) -> Check | None:
        """The first of ``checks`` that ``user`` fails in ``vhost`` (counted under
        ``operation``), or None: allowed."""
        if self.permissions.unrestricted:
            return None
        grant = self.permissions.grant_for(user, vhost)
        for check in checks:
            if not grant.allows(check.permission, check.kind, check.name):
                self._count(operation, check.permission)
                return check
        return None

    def publish_denied(self, user: str | None, vhost: str, exchange: str,
                       operation: str) -> Check | None:
        """What a publish to ``exchange`` needs, write on it, if ``user`` lacks it in
        ``vhost`` (counted under ``operation``), else None. Asked per message: an
        unrestricted listener answers without making a check."""
        if self.permissions.unrestricted:
            return None
        return self.denied(user, vhost, [Check("write", "exchange", exchange)], operation)

    def may_open(self, user: str | None, vhost: str) -> bool:
        """Whether ``user`` may open ``vhost`` (0-9-1 connection.open; refusals counted as
        operation ``connection.open``, permission ``vhost``)."""
        if self.permissions.may_open(user):
            return True
        self._count("connection.open", "vhost")
        return False

    def user_id_refused(self, user: str | None, user_id: str | None, operation: str) -> bool:
        """Whether a message's ``user_id`` is refused (counted): set, not the login, and
        the listener does not trust user ids."""
        if not user_id or user_id == (user or "") or self.trust_user_id:
            return False
        self._count(operation, USER_ID)
        return True

    def _count(self, operation: str, permission: str) -> None:
        key = (operation, permission)
        self.refused[key] = self.refused.get(key, 0) + 1


__all__ = ["ALTERNATE_EXCHANGE", "DEAD_LETTER_EXCHANGE", "USER_ID", "Access", "Check",
           "exchange_named_by", "forwarding_checks"]
