"""Hypothesis strategies for AMQP 1.0 values, messages and CloudEvents."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import orjson
from hypothesis import strategies as st
from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Described,
    byte,
    char,
    decimal32,
    decimal64,
    decimal128,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)

from mappings.cloudevents import CloudEvent
from mappings.cloudevents.event import RESERVED_NAMES
from mappings.message import AmqpMessage, BodyKind, Header, Properties

# --- AMQP values ------------------------------------------------------------------------------

symbols = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12).map(symbol)
strings = st.text(max_size=12)
amqp_timestamps = st.integers(-(2**62), 2**62).map(timestamp)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(0, 255).map(ubyte),
    st.integers(0, 2**16 - 1).map(ushort),
    st.integers(0, 2**32 - 1).map(uint),
    st.integers(0, 2**64 - 1).map(ulong),
    st.integers(-(2**7), 2**7 - 1).map(byte),
    st.integers(-(2**15), 2**15 - 1).map(short),
    st.integers(-(2**31), 2**31 - 1).map(int32),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(width=32, allow_nan=False).map(float32),
    st.floats(allow_nan=False),
    st.integers(0, 2**32 - 1).map(decimal32),
    st.integers(0, 2**64 - 1).map(decimal64),
    st.binary(min_size=16, max_size=16).map(decimal128),
    st.characters(exclude_categories=["Cs"]).map(char),
    amqp_timestamps,
    st.uuids(),
    st.binary(max_size=16),
    strings,
    symbols,
)
int_arrays = st.lists(st.integers(-(2**31), 2**31 - 1).map(int32), max_size=4).map(
    lambda items: Array(UNDESCRIBED, Data.INT, *items)  # type: ignore[arg-type]
)
symbol_arrays = st.lists(symbols, max_size=4).map(
    lambda items: Array(UNDESCRIBED, Data.SYMBOL, *items)  # type: ignore[arg-type]
)
hashable_keys = st.one_of(strings, symbols, st.integers(0, 2**64 - 1).map(ulong), st.booleans())


def _compound(children: st.SearchStrategy) -> st.SearchStrategy:
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(hashable_keys, children, max_size=4),
        # proton 0.40's decoder loses the siblings of a described value whose value is
        # itself described, so the strategy does not nest them directly.
        st.builds(
            Described,
            st.one_of(symbols, st.integers(0, 2**64 - 1).map(ulong)),
            children.filter(lambda value: not isinstance(value, Described)),
        ),
    )


amqp_values = st.recursive(st.one_of(scalars, int_arrays, symbol_arrays), _compound, max_leaves=12)
"""Any AMQP value, typed through proton's classes (no NaN, which never equals itself)."""

message_ids = st.one_of(
    st.integers(0, 2**64 - 1).map(ulong), st.uuids(), st.binary(max_size=16), strings
)
annotation_maps = st.dictionaries(
    st.one_of(symbols, st.integers(0, 2**64 - 1).map(ulong)), amqp_values, max_size=4
)
application_property_maps = st.dictionaries(strings, scalars, max_size=6)


def _optional(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


headers = st.builds(
    Header,
    durable=_optional(st.booleans()),
    priority=_optional(st.integers(0, 255).map(ubyte)),
    ttl=_optional(st.integers(0, 2**32 - 1).map(uint)),
    first_acquirer=_optional(st.booleans()),
    delivery_count=_optional(st.integers(0, 2**32 - 1).map(uint)),
)
properties = st.builds(
    Properties,
    message_id=_optional(message_ids),
    user_id=_optional(st.binary(min_size=1, max_size=8)),  # empty: no user-id (not kept)
    to=_optional(strings),
    subject=_optional(strings),
    reply_to=_optional(strings),
    correlation_id=_optional(message_ids),
    content_type=_optional(symbols),
    content_encoding=_optional(symbols),
    absolute_expiry_time=_optional(amqp_timestamps),
    creation_time=_optional(amqp_timestamps),
    group_id=_optional(strings),
    group_sequence=_optional(st.integers(0, 2**32 - 1).map(uint)),
    reply_to_group_id=_optional(strings),
)
bodies = st.one_of(
    st.tuples(st.just(BodyKind.DATA), st.lists(st.binary(max_size=32), min_size=1, max_size=3)),
    st.tuples(
        st.just(BodyKind.SEQUENCE),
        st.lists(st.lists(amqp_values, max_size=3), min_size=1, max_size=3),
    ),
    st.tuples(st.just(BodyKind.VALUE), amqp_values),
)


@st.composite
def messages(draw: st.DrawFn, *, bare: bool = False) -> AmqpMessage:
    """Any valid AmqpMessage (only bare sections when ``bare``)."""
    kind, body = draw(bodies)
    message = AmqpMessage(
        properties=draw(properties),
        application_properties=draw(application_property_maps),
        body_kind=kind,
        body=body,
    )
    if not bare:
        message.header = draw(headers)
        message.delivery_annotations = draw(annotation_maps)
        message.message_annotations = draw(annotation_maps)
        message.footer = draw(annotation_maps)
    return message


# --- CloudEvents ------------------------------------------------------------------------------

ce_text = st.text(st.characters(exclude_categories=["Cc", "Cs", "Cn"]), min_size=1, max_size=16)
"""Non-empty CloudEvents Strings: no controls, surrogates or unassigned code points
(which include the noncharacters)."""
ce_integers = st.integers(-(2**31), 2**31 - 1)
ce_times = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.one_of(
        st.just(UTC),
        st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m))),
    ),
)
ce_ms_utc_times = st.integers(-(2**40), 2**42).map(
    lambda ms: datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)
)
extension_names = st.from_regex(r"[a-z0-9]{1,20}", fullmatch=True).filter(
    lambda name: name not in RESERVED_NAMES
)
json_texts = (
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(2**63), 2**63 - 1)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=8),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=6), children, max_size=3)
        ),
        max_leaves=8,
    )
    .filter(lambda value: value is not None)
    .map(orjson.dumps)
)
"""Compact JSON documents as orjson writes them (so re-encoding is byte-identical); never a
top-level ``null``, which the JSON format cannot tell from no data."""

JSON_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    "application/vnd.x+json",
    "text/json",
]
OTHER_TYPES = [
    "text/plain",
    "application/octet-stream",
    "application/xml; charset=utf-8",
    "image/png",
]


@st.composite
def payloads(draw: st.DrawFn) -> tuple[str | None, bytes | None]:
    """A (datacontenttype, data) pair: JSON data under JSON types, any bytes otherwise."""
    content_type = draw(st.none() | st.sampled_from(JSON_TYPES + OTHER_TYPES))
    if draw(st.booleans()):
        return content_type, None
    if content_type is not None and content_type not in JSON_TYPES:
        return content_type, draw(st.binary(min_size=1, max_size=64))
    # JSON data is either canonical JSON or not JSON at all: valid but non-canonical
    # JSON (" 1") is re-encoded by a structured round trip (see test_structured.py).
    return content_type, draw(json_texts | st.binary(min_size=1, max_size=64).filter(_not_json))


def _not_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return True
    return False


def extension_values(*, binary: bool = True, times: bool = True) -> st.SearchStrategy:
    """Extension values of every CloudEvents type (optionally without Binary / Timestamp)."""
    options = [ce_text | st.just(""), ce_integers, st.booleans()]
    if binary:
        options.append(st.binary(max_size=16))
    if times:
        options.append(ce_times)
    return st.one_of(*options)


@st.composite
def events(
    draw: st.DrawFn,
    *,
    binary: bool = True,
    times: bool = True,
    time: st.SearchStrategy | None = None,
) -> CloudEvent:
    """A valid CloudEvent; ``binary`` / ``times`` allow Binary / Timestamp extensions."""
    content_type, data = draw(payloads())
    return CloudEvent(
        id=draw(ce_text),
        source=draw(ce_text),
        type=draw(ce_text),
        datacontenttype=content_type,
        dataschema=draw(st.none() | ce_text.map(lambda path: "https://schemas.example/" + path)),
        subject=draw(st.none() | ce_text),
        time=draw(st.none() | (time if time is not None else ce_times)),
        extensions=draw(
            st.dictionaries(
                extension_names, extension_values(binary=binary, times=times), max_size=5
            )
        ),
        data=data,
    )


def unique_uuid() -> str:
    """A fresh id for tests that need one."""
    return str(uuid.uuid4())
