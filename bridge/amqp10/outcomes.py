"""Settling the AMQP 1.0 deliveries the bridge received: one rule for every route.

Every route that takes messages from an AMQP 1.0 source (1.0 → 0-10, façade consume,
and the originals of dead-letter copies) settles them here, so the routes cannot
drift apart (docs/semantics.md, "Giving a message back"):

* **accepted** — the target took it (settled by the route itself: nothing to choose);
* **rejected** with a condition and a description (at most 1024 characters) — refused
  for good: unmappable, refused by the target or a 0-10 subscriber;
* **given back** — to be delivered again: *modified* with ``delivery-failed`` when
  the message may have been seen by its receiver (a 0-10 subscriber or broker had it)
  and the source lists *modified* among the outcomes it supports; otherwise
  *released*. RabbitMQ 3.x lists accepted, rejected and released, and ends the whole
  session on any other outcome, so through it every give-back is *released* (it marks
  requeued messages redelivered itself: first-acquirer false).
"""

from __future__ import annotations

from typing import Any

from proton import Array, Condition, Delivery, Link, symbol

MODIFIED_OUTCOME = symbol("amqp:modified:list")


def supports_modified(link: Link) -> bool:
    """False if the 1.0 source lists the outcomes it supports and *modified* is not one
    of them."""
    data = link.remote_source.outcomes
    data.rewind()
    if not data.next():
        return True
    value = data.get_object()
    outcomes = value.elements if isinstance(value, Array) else [value]
    return not outcomes or MODIFIED_OUTCOME in outcomes


def accept(delivery: Delivery) -> None:
    """Settle a 1.0 delivery as accepted (the target took it, or it was a duplicate)."""
    delivery.update(Delivery.ACCEPTED)
    delivery.settle()


def give_back(delivery: Delivery, *, failed: bool) -> None:
    """Return a 1.0 delivery to its source: modified(delivery-failed) when ``failed`` (the
    receiver may have seen it) and the source supports that outcome, else released."""
    if failed and supports_modified(delivery.link):
        delivery.local.failed = True
        delivery.update(Delivery.MODIFIED)
    else:
        delivery.update(Delivery.RELEASED)
    delivery.settle()


def reject(delivery: Delivery, condition: str, description: str) -> None:
    """Settle a 1.0 delivery as rejected with ``condition`` and ``description``."""
    delivery.local.condition = Condition(condition, description[:1024])
    delivery.update(Delivery.REJECTED)
    delivery.settle()


def condition_text(condition: Any) -> str:
    """An AMQP 1.0 error condition as ``name: description`` for logs and reasons."""
    if condition is None:
        return "no error condition"
    return f"{condition.name}: {condition.description}" if condition.description \
        else str(condition.name)


def condition_name(condition: Any) -> str | None:
    """The condition's symbol as text (None: no condition)."""
    return None if condition is None else str(condition.name)


__all__ = ["MODIFIED_OUTCOME", "accept", "condition_name", "condition_text", "give_back", "reject",
           "supports_modified"]
