"""Messages compared with the exact type of every value (``ulong(1)`` is not ``1``)."""

from __future__ import annotations

import math
from typing import Any

from mappings.message import AmqpMessage, Header, Properties


def typed_value(value: Any, *, ordered: bool = True) -> Any:
    """``value`` with the type of every part, so that ``ulong(1)`` differs from ``1``; with
    ``ordered=False`` the order of map entries does not count (RabbitMQ 4 re-encodes
    message annotations, not always in their order). A NaN stands as ``"NaN"``, so that
    two NaNs of one type compare equal (a NaN never equals itself; damaged bytes make
    them)."""
    if isinstance(value, float) and math.isnan(value):
        return (type(value).__name__, "NaN")
    if isinstance(value, dict):
        pairs = [(typed_value(k, ordered=ordered), typed_value(v, ordered=ordered))
                 for k, v in value.items()]
        return ("map", pairs if ordered else sorted(pairs, key=repr))
    if isinstance(value, list):
        return ("list", [typed_value(v, ordered=ordered) for v in value])
    return (type(value).__name__, value)


def typed_sections(message: AmqpMessage) -> list[Any]:
    """Every section of ``message`` with the exact type of every value."""
    return [typed_value([getattr(message.header, f) for f in Header.__slots__]),
            typed_value([getattr(message.properties, f) for f in Properties.__slots__]),
            typed_value(message.delivery_annotations), typed_value(message.message_annotations),
            typed_value(message.application_properties), message.body_kind,
            typed_value(message.body), typed_value(message.footer)]
