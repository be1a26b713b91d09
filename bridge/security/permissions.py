"""Who may do what on a façade listener: RabbitMQ's permission model, as pure data.

Theory of operation
-------------------
One model for both façades (AMQP 0-10 and 0-9-1), the one 0-9-1 users know from
RabbitMQ (``rabbitmqctl set_permissions USER CONFIGURE WRITE READ``):

- a user holds three regular expressions, over exchange and queue names:
  ``configure`` (declare, delete), ``write`` (publish to an exchange, bind a queue:
  write on the queue) and ``read`` (consume, get, purge a queue; bind: read on the
  exchange).  Which operation needs which is each façade's table
  (:mod:`bridge.facade.core.access`, docs/operations.md "Who may do what");
- a pattern is *searched* in the name, as RabbitMQ does (Erlang ``re:run``, not
  anchored: ``app`` allows ``my.app.q``; write ``^app\\.`` to anchor it); the empty
  pattern is RabbitMQ's special case ``^$``, which allows only the empty name, so ``""``
  grants nothing in practice; ``.*`` allows everything;
- the default exchange (named ``""`` on the wire) is checked, and named in refusals, as
  ``amq.default`` (what RabbitMQ does);
- a user's grant may differ per virtual host (0-9-1): ``vhosts`` maps a virtual host to
  its own three patterns, the user's top-level patterns apply in any other;
- a user not listed gets the ``default`` grant, or nothing: without a default it may
  not even open a virtual host (0-9-1: :meth:`Permissions.may_open`, as RabbitMQ refuses
  a user without permissions in the vhost);
- a listener with neither users nor a default (:attr:`Permissions.unrestricted`) lets
  everyone do everything: what the façades did before permissions existed.

Patterns are compiled once (:func:`compile_pattern`); an invalid one is a
:class:`PatternError` naming it, which configuration loading reports with its key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Permission = Literal["configure", "write", "read"]
PERMISSIONS: tuple[Permission, ...] = ("configure", "write", "read")
Kind = Literal["exchange", "queue"]
DEFAULT_EXCHANGE = "amq.default"
"""The name the default exchange (``""``) is checked and refused as, as in RabbitMQ."""


class PatternError(ValueError):
    """A permission pattern that is not a valid regular expression."""


def compile_pattern(text: str) -> re.Pattern[str]:
    """``text`` as RabbitMQ reads a permission: searched in the name, ``""`` as ``^$``."""
    try:
        return re.compile(text or "^$")
    except re.error as exc:
        raise PatternError(f"{text!r} is not a valid regular expression: {exc}") from None


def checked_name(kind: Kind, name: str) -> str:
    """The name a permission is checked against (the default exchange: ``amq.default``)."""
    return DEFAULT_EXCHANGE if kind == "exchange" and not name else name


@dataclass(frozen=True)
class Grant:
    """The three patterns of one user (in one virtual host)."""

    configure: str = ""
    write: str = ""
    read: str = ""
    _compiled: dict[str, re.Pattern[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = {}
        for permission in PERMISSIONS:
            try:
                compiled[permission] = compile_pattern(getattr(self, permission))
            except PatternError as exc:
                raise PatternError(f"{permission}: {exc}") from None
        object.__setattr__(self, "_compiled", compiled)

    def allows(self, permission: Permission, kind: Kind, name: str) -> bool:
        """Whether ``permission`` on the exchange or queue ``name`` is granted."""
        return self._compiled[permission].search(checked_name(kind, name)) is not None

    def describe(self) -> str:
        """``configure '…' write '…' read '…'`` (as ``amqp-bridge check`` prints it)."""
        return " ".join(f"{p} '{getattr(self, p)}'" for p in PERMISSIONS)


NOTHING = Grant()
"""No permission on anything."""
EVERYTHING = Grant(".*", ".*", ".*")
"""Every permission on everything."""


@dataclass(frozen=True)
class UserGrant:
    """A user's grant: ``grant`` in any virtual host but those of ``vhosts``."""

    grant: Grant
    vhosts: Mapping[str, Grant] = field(default_factory=dict)

    def in_vhost(self, vhost: str) -> Grant:
        """The grant that applies in ``vhost`` (0-10: ``""``)."""
        return self.vhosts.get(vhost, self.grant)

    def describe(self) -> str:
        text = self.grant.describe()
        for vhost, grant in self.vhosts.items():
            text += f"; in vhost '{vhost}': {grant.describe()}"
        return text


@dataclass(frozen=True)
class Permissions:
    """A listener's permissions: per user, and a default for users not listed."""

    users: Mapping[str, UserGrant] | None = None
    """Grants by login name (None: no permissions configured)."""
    default: UserGrant | None = None
    """The grant of any user not in :attr:`users` (None: nothing)."""

    @property
    def unrestricted(self) -> bool:
        """Nothing configured: everyone may do everything (the façades' behaviour before
        permissions existed)."""
        return self.users is None and self.default is None

    def grant_for(self, user: str | None, vhost: str = "") -> Grant:
        """What ``user`` may do in ``vhost``."""
        if self.unrestricted:
            return EVERYTHING
        grant = (self.users or {}).get(user or "")
        if grant is None:
            grant = self.default
        return NOTHING if grant is None else grant.in_vhost(vhost)

    def may_open(self, user: str | None) -> bool:
        """Whether ``user`` holds permissions at all, so may open a virtual host (0-9-1):
        everyone on an unrestricted listener or one with a default, else only the users
        listed (RabbitMQ refuses a user without permissions in the vhost its
        connection.open)."""
        return self.unrestricted or self.default is not None or (user or "") in (self.users or {})

    def allows(self, user: str | None, vhost: str, permission: Permission, kind: Kind,
               name: str) -> bool:
        """Whether ``user`` (logged in to ``vhost``) holds ``permission`` on the exchange
        or queue ``name``."""
        return self.grant_for(user, vhost).allows(permission, kind, name)

    def vhost_grants_not_kept(self, virtual_hosts: frozenset[str] | None) -> list[str]:
        """The users (``*``: the default) whose per-vhost grants bind nothing: every
        virtual host of a façade listener serves the same names, so a user who may open
        a virtual host its ``vhosts`` do not list (``virtual_hosts``: the ones the
        listener lets clients open, None: any) has its top-level grant on those same
        names there (unless that grant is nothing)."""
        grants = [*(self.users or {}).items(),
                  *([("*", self.default)] if self.default is not None else [])]
        return [user for user, grant in grants if grant.vhosts and grant.grant != NOTHING
                and (virtual_hosts is None or not virtual_hosts <= set(grant.vhosts))]

    def describe(self) -> list[str]:
        """One line per user and the default, as ``amqp-bridge check`` prints them."""
        if self.unrestricted:
            return ["every user may configure, write and read everything (no permissions "
                    "configured)"]
        lines = [f"user {user!r}: {grant.describe()}"
                 for user, grant in sorted((self.users or {}).items())]
        lines.append("any other user: " + (self.default.describe() if self.default is not None
                                           else "nothing"))
        return lines


__all__ = ["DEFAULT_EXCHANGE", "EVERYTHING", "NOTHING", "PERMISSIONS", "Grant", "Kind",
           "PatternError", "Permission", "Permissions", "UserGrant", "checked_name",
           "compile_pattern"]
