"""The CloudEvents type system: validation and AMQP / string representations.

CloudEvents types map to Python as: Boolean → ``bool``, Integer → ``int``
(32-bit signed), String / URI / URI-reference → ``str``, Binary → ``bytes``,
Timestamp → timezone-aware ``datetime``.
"""

from __future__ import annotations

import base64
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias

import orjson
from proton import timestamp

from mappings.errors import CloudEventError

AttributeValue: TypeAlias = bool | int | str | bytes | datetime
"""A CloudEvents attribute value in its Python form."""

INTEGER_MIN = -(2**31)
INTEGER_MAX = 2**31 - 1
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND = timedelta(milliseconds=1)
_MINUTE = timedelta(minutes=1)
_ZERO = timedelta(0)
_UTC_Z = orjson.OPT_UTC_Z

# Characters a CloudEvents String must not contain (spec, "Type System" / String):
# C0 and C1 controls, surrogates and the Unicode noncharacters.
_FORBIDDEN_CHARS = re.compile(
    r"[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef"  # re's escapes: no surrogate literal
    + "".join(
        f"{chr(plane * 0x10000 + 0xFFFE)}{chr(plane * 0x10000 + 0xFFFF)}" for plane in range(17)
    )
    + "]"
)
_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})", re.ASCII
)
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:", re.ASCII)


def check_string(value: Any, name: str) -> str:
    """``value`` as a valid CloudEvents String (``str`` subclasses become ``str``)."""
    if type(value) is not str:
        if not isinstance(value, str):
            raise CloudEventError(f"expected a String, got {type(value).__name__}", field=name)
        value = str(value)
    if not (value.isascii() and value.isprintable()) and _FORBIDDEN_CHARS.search(value):
        raise CloudEventError(
            "a String must not contain control characters, surrogates or noncharacters", field=name
        )
    return value


def check_uri(value: str, name: str) -> str:
    """Check that ``value`` is an absolute URI (it has a scheme)."""
    if not _URI_SCHEME.match(value):
        raise CloudEventError(f"expected an absolute URI, got {value!r}", field=name)
    return value


def check_integer(value: int, name: str) -> int:
    """``value`` as a CloudEvents Integer (32-bit signed range)."""
    if not INTEGER_MIN <= value <= INTEGER_MAX:
        raise CloudEventError(f"Integer {value} is outside the 32-bit signed range", field=name)
    return int(value)


def check_timestamp(value: Any, name: str) -> datetime:
    """``value`` as a CloudEvents Timestamp: an aware datetime with a whole-minute offset."""
    if not isinstance(value, datetime):
        raise CloudEventError(
            f"expected a Timestamp (datetime), got {type(value).__name__}", field=name
        )
    offset = value.utcoffset()
    if offset is None:
        raise CloudEventError("a Timestamp must be timezone-aware", field=name)
    if offset % _MINUTE:
        raise CloudEventError("an RFC 3339 UTC offset is whole minutes", field=name)
    return value


def check_value(value: Any, name: str) -> AttributeValue:
    """``value`` as an extension attribute value of any CloudEvents type."""
    kind = type(value)
    if kind is str:
        return check_string(value, name)
    if kind is bool:
        return value
    if kind is int:
        return check_integer(value, name)
    if kind is bytes:
        return value
    if isinstance(value, datetime):
        return check_timestamp(value, name)
    if isinstance(value, str):
        return check_string(value, name)
    if isinstance(value, int):
        return check_integer(value, name)
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    raise CloudEventError(f"{kind.__name__} is not a CloudEvents type", field=name)


# --- Timestamp forms --------------------------------------------------------------------------


def millis_to_datetime(millis: int, name: str) -> datetime:
    """An AMQP timestamp (ms since the Unix epoch) as a UTC datetime."""
    try:
        return EPOCH + _MILLISECOND * int(millis)  # exact; faster than timedelta(milliseconds=)
    except OverflowError:
        raise CloudEventError(f"timestamp {millis} ms is out of range", field=name) from None


def format_time(value: datetime) -> str:
    """RFC 3339 text of ``value``: ``Z`` for UTC, the shortest of s / ms / µs precision."""
    micro = value.microsecond
    if value.tzinfo is UTC:  # fast path: orjson writes YYYY-MM-DDTHH:MM:SS[.ffffff]Z
        text = orjson.dumps(value, option=_UTC_Z).decode("ascii")
        return text[1:24] + "Z" if micro and not micro % 1000 else text[1:-1]
    spec = "seconds" if not micro else "milliseconds" if not micro % 1000 else "microseconds"
    text = value.isoformat(timespec=spec)
    return text[:-6] + "Z" if value.utcoffset() == _ZERO else text


def parse_time(text: str, name: str) -> datetime:
    """Parse an RFC 3339 date-time (``T``, ``t`` or space separator; any fraction length)."""
    if not _RFC3339.fullmatch(text):
        raise CloudEventError(f"{text!r} is not an RFC 3339 timestamp", field=name)
    try:
        return datetime.fromisoformat(text.upper())
    except ValueError as exc:
        raise CloudEventError(f"{text!r} is not a valid timestamp ({exc})", field=name) from None


def time_to_amqp(value: datetime) -> timestamp | str:
    """Binary-mode form of a Timestamp: AMQP timestamp when exact, else RFC 3339 text.

    A native AMQP timestamp is written when it represents ``value`` exactly (UTC,
    whole milliseconds); otherwise the canonical string keeps precision and offset.
    """
    if not value.microsecond % 1000 and (value.tzinfo is UTC or value.utcoffset() == _ZERO):
        return timestamp((value - EPOCH) // _MILLISECOND)
    return format_time(value)


# --- lenient reading of AMQP values -----------------------------------------------------------


def value_from_amqp(value: Any, name: str) -> AttributeValue:
    """An AMQP application-property value as a CloudEvents value (lenient in).

    AMQP timestamp → Timestamp; boolean → Boolean; every AMQP integer type →
    Integer (range-checked); string, symbol and char → String; binary → Binary;
    uuid → its canonical String. Anything else has no CloudEvents type.
    """
    kind = type(value)
    if kind is str:
        return check_string(value, name)
    if kind is timestamp:
        return millis_to_datetime(value, name)
    if kind is bool:
        return value
    if isinstance(value, int):
        return check_integer(value, name)
    if isinstance(value, str):
        return check_string(str(value), name)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return check_timestamp(value, name)
    raise CloudEventError(f"AMQP {kind.__name__} value has no CloudEvents type", field=name)


def time_from_amqp(value: Any, name: str) -> datetime:
    """A Timestamp attribute from AMQP: timestamp, long (ms) or RFC 3339 string."""
    if isinstance(value, str):
        return parse_time(value, name)
    if isinstance(value, int) and not isinstance(value, bool):
        return millis_to_datetime(value, name)
    return check_timestamp(value, name)


def canonical_string(value: AttributeValue) -> str:
    """The CloudEvents canonical string form of a value."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return format_time(value)
