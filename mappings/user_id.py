"""The route option ``user_id``: where a message's user-id may go on the target, the
same rule for every legacy protocol's mapping (0-10 and 0-9-1)."""

from __future__ import annotations

USER_ID_RULES = ("authenticated", "keep", "carry", "drop")
"""What a target's user-id field may hold (a route's ``user_id`` option):

- ``keep``: the user-id as it is (the mappings' default);
- ``authenticated``: only the user the bridge logs into the target as (``login_user``;
  ``None``: unknown, so never);
- ``carry``: nothing;
- ``drop``: nothing, and the user-id is not carried either (it is lost).

A user-id the field may not hold (``authenticated``, ``carry``) travels in a carrier
instead (for 0-10: 1.0 annotation ``x-amqp-0-10.user-id`` or 0-10 header
``x-amqp-1.0.user-id``, binary; for 0-9-1 their ``x-amqp-0-9-1`` / ``x-amqp-1.0``
twins). A carrier is read back as the user-id when the field it stands for is
absent (or empty), and placed by the rule of the route it crosses then.
"""
FIELD, CARRY, DROP = 0, 1, 2
"""Where :func:`user_id_place` puts a user-id: its field, a carrier, nowhere."""


def user_id_place(rule: str, user_id: bytes, login_user: str | None) -> int:
    """Where a (non-empty) user-id goes on the target under ``rule``: FIELD, CARRY or DROP."""
    if rule == "keep":
        return FIELD
    if rule == "authenticated":
        if login_user is not None and user_id == login_user.encode("utf-8"):
            return FIELD
        return CARRY
    if rule == "carry":
        return CARRY
    if rule == "drop":
        return DROP
    raise ValueError(f"unknown user-id rule {rule!r} (one of {', '.join(USER_ID_RULES)})")


__all__ = ["CARRY", "DROP", "FIELD", "USER_ID_RULES", "user_id_place"]
