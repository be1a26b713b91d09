"""The mapping layer's fast paths give exactly what the general code gives.

Each fast path is checked against a reference: the plain construction it replaces
(``CloudEvent(...)``, ``AmqpMessage(...)``, ``str(uuid)``, ``value_from_amqp``, the
reference AMQP 1.0 codec behind ``AmqpMessage.encode``/``decode``) or the former
implementation (``format_time``, ``millis_to_datetime``), on random inputs.
"""

from __future__ import annotations

import inspect
import uuid
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from proton import symbol

from amqp010.spec import DeliveryProperties, MessageProperties
from mappings import proton_codec
from mappings.amqp010 import to_amqp10
from mappings.cloudevents import CloudEvent, EventTemplate
from mappings.cloudevents.template import uuid_text
from mappings.cloudevents.typesystem import (
    EPOCH,
    format_time,
    millis_to_datetime,
    value_from_amqp,
)
from mappings.errors import CloudEventError, MappingError
from mappings.message import (
    AmqpMessage,
    Properties,
    decode_reference,
    encode_reference,
    new_message,
)
from tests.support.typed import typed_sections

from .strategies import ce_text, ce_times, extension_names, extension_values, messages, scalars

FAST = settings(max_examples=300, deadline=None, derandomize=True, database=None)


def outcome(func: Any, *args: Any, **kwargs: Any) -> Any:
    """``("ok", result)`` or ``("error", type, field, reason)``."""
    try:
        return "ok", func(*args, **kwargs)
    except (CloudEventError, MappingError) as exc:
        return "error", type(exc), exc.field, exc.reason


def typed(event: CloudEvent) -> list[tuple[str, type, Any]]:
    """Every attribute with its exact type (``1 == True``, ``ulong(1) == 1``...)."""
    return [(name, type(value), value) for name, value in sorted(event.attributes().items())]


# --- CloudEvent construction -------------------------------------------------------------------

BAD_TEXT = st.one_of(st.just(""), st.text(max_size=6), ce_text.map(symbol), st.just(1))
TIMES = st.one_of(st.none(), ce_times, st.just(datetime(2030, 1, 1)),
                  st.just(datetime(2030, 1, 1, tzinfo=timezone(timedelta(seconds=30)))))
CORE = ("id", "source", "type", "datacontenttype", "dataschema", "subject")


@FAST
@given(core=st.fixed_dictionaries({name: ce_text for name in CORE}),
       bad=st.none() | st.tuples(st.sampled_from(CORE), BAD_TEXT), time=TIMES,
       extensions=st.dictionaries(extension_names, extension_values(), max_size=4),
       data=st.one_of(st.none(), st.binary(max_size=8), st.just(bytearray(b"x"))))
def test_checked_extensions_constructor_is_the_constructor(
        core: dict[str, Any], bad: tuple[str, Any] | None, time: Any,
        extensions: dict[str, Any], data: Any) -> None:
    core["dataschema"] = "https://example.com/" + core["dataschema"]
    if bad is not None:
        core[bad[0]] = bad[1]
    extensions = {name: value_from_amqp(value, name) for name, value in extensions.items()}
    expected = outcome(CloudEvent, **core, time=time, extensions=dict(extensions), data=data)
    got = outcome(CloudEvent._from_checked_extensions, core["id"], core["source"], core["type"],
                  core["datacontenttype"], core["dataschema"], core["subject"], time,
                  dict(extensions), data)
    assert got[0] == expected[0]
    if got[0] == "ok":
        assert got[1] == expected[1] and typed(got[1]) == typed(expected[1])
    else:
        assert got == expected


TEMPLATE = EventTemplate(source="/s", type="t.{subject}", extensions={"x": "x"}).compiled
NOW = datetime(2030, 1, 1, tzinfo=UTC)


@FAST
@given(value=scalars)
def test_builder_extension_values_are_value_from_amqp(value: Any) -> None:
    message = AmqpMessage(properties=Properties(subject="s"), application_properties={"x": value})
    expected = outcome(value_from_amqp, value, "x") if value is not None else ("ok", None)
    got = outcome(TEMPLATE.build, message, now=NOW)
    if expected[0] == "error":
        assert got == expected
    elif expected[1] is None:
        assert got[0] == "ok" and "x" not in got[1].extensions
    else:
        assert got[0] == "ok"
        assert (type(got[1].extensions["x"]), got[1].extensions["x"]) == (
            type(expected[1]), expected[1])


@FAST
@given(message=messages())
def test_builder_event_equals_one_built_by_the_constructor(message: AmqpMessage) -> None:
    got = outcome(TEMPLATE.build, message, now=NOW, new_id=lambda: "id-1")
    if got[0] == "ok":
        event = got[1]
        again = CloudEvent(**{name: getattr(event, name) for name in (
            "id", "source", "type", "datacontenttype", "dataschema", "subject", "time",
            "extensions", "data")})
        assert again == event and typed(again) == typed(event)


# --- AmqpMessage construction ----------------------------------------------------------------


def test_new_message_takes_every_field_in_order() -> None:
    assert list(inspect.signature(new_message).parameters) == [f.name for f in fields(AmqpMessage)]


@FAST
@given(message=messages())
def test_new_message_is_the_keyword_constructor(message: AmqpMessage) -> None:
    values = [getattr(message, f.name) for f in fields(AmqpMessage)]
    got = new_message(*values)
    assert got == message and type(got) is AmqpMessage
    assert all(getattr(got, f.name) is value for f, value in zip(fields(AmqpMessage), values,
                                                                 strict=True))


# --- AmqpMessage encoding: the fast codec against the reference (proton) codec ---------------


def decoded(decode: Any, data: bytes) -> Any:
    """``("ok", typed sections)`` or the MappingError's type, field and reason."""
    result = outcome(decode, data)
    return ("ok", typed_sections(result[1])) if result[0] == "ok" else result


@FAST
@given(message=messages())
def test_message_encode_and_decode_are_the_reference_codec(message: AmqpMessage) -> None:
    raw = encode_reference(message)
    assert message.encode() == raw
    assert typed_sections(AmqpMessage.decode(raw)) == typed_sections(decode_reference(raw))


@FAST
@given(message=messages(bare=True))
def test_bare_encode_and_decode_are_the_reference_codec(message: AmqpMessage) -> None:
    raw = proton_codec.encode_bare(message)
    assert message.encode_bare() == raw
    reference = new_message(*proton_codec.decode(raw, bare=True))
    assert typed_sections(AmqpMessage.decode_bare(raw)) == typed_sections(reference)


@FAST
@given(message=messages(), cut=st.integers(0, 2**16), flip=st.integers(0, 2**16),
       bit=st.integers(0, 7))
# a flipped exponent bit makes the double 1.5 (3ff8...) a NaN (7ff8...): both decode it
@example(message=AmqpMessage(body=1.5), cut=12, flip=4, bit=6)
def test_damaged_bytes_decode_as_the_reference_decodes_them(
        message: AmqpMessage, cut: int, flip: int, bit: int) -> None:
    raw = bytearray(encode_reference(message))
    raw[flip % len(raw)] ^= 1 << bit
    damaged = bytes(raw[:max(1, cut % (len(raw) + 1))])
    assert decoded(AmqpMessage.decode, damaged) == decoded(decode_reference, damaged)
    assert decoded(AmqpMessage.decode_bare, damaged) == decoded(
        lambda data: new_message(*proton_codec.decode(data, bare=True)), damaged)


# --- text forms ---------------------------------------------------------------------------------


@FAST
@given(value=st.uuids() | st.integers(0, 2**128 - 1).map(lambda i: uuid.UUID(int=i)))
def test_uuid_text_is_str(value: uuid.UUID) -> None:
    assert uuid_text(value) == str(value)


def former_format_time(value: datetime) -> str:
    micro = value.microsecond
    spec = "seconds" if not micro else "milliseconds" if not micro % 1000 else "microseconds"
    text = value.isoformat(timespec=spec)
    return text[:-6] + "Z" if value.utcoffset() == timedelta(0) else text


@FAST
@given(value=st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(0)),
                                                      timezone(timedelta(hours=-5, minutes=30))]))
       | st.datetimes(timezones=st.just(UTC)).map(lambda t: t.replace(
           microsecond=t.microsecond // 1000 * 1000)))
def test_format_time_is_the_former_format_time(value: datetime) -> None:
    assert format_time(value) == former_format_time(value)


@FAST
@given(millis=st.integers(-(2**64), 2**64) | st.integers(-(10**13), 10**13))
def test_millis_to_datetime_is_the_former_one(millis: int) -> None:
    try:
        expected = ("ok", EPOCH + timedelta(milliseconds=millis))
    except OverflowError:
        expected = ("error", CloudEventError, "time", f"timestamp {millis} ms is out of range")
    assert outcome(millis_to_datetime, millis, "time") == expected


@pytest.mark.parametrize("content_type", ["application/json", "text/plain; charset=utf-8"])
def test_content_type_symbols_are_reused_and_equal(content_type: str) -> None:
    first = to_amqp10(None, MessageProperties(content_type=content_type), b"x")
    second = to_amqp10(DeliveryProperties(), MessageProperties(content_type=content_type), b"y")
    for message in (first, second):
        assert type(message.properties.content_type) is symbol
        assert message.properties.content_type == content_type
    with pytest.raises(MappingError):
        to_amqp10(None, MessageProperties(content_type="tëxt/plain"), b"x")


@FAST
@given(value=st.uuids() | st.integers(0, 2**128 - 1).map(lambda i: uuid.UUID(int=i)))
def test_a_decoded_uuid_is_the_uuid_the_constructor_makes(value: uuid.UUID) -> None:
    """The fast codec builds message-id UUIDs without ``uuid.UUID(bytes=...)``'s checks:
    the result must be that object in every respect."""
    decoded = AmqpMessage.decode(AmqpMessage(properties=Properties(message_id=value)).encode())
    made = decoded.properties.message_id
    reference = uuid.UUID(bytes=value.bytes)
    assert type(made) is uuid.UUID
    assert (made.int, made.is_safe, str(made), repr(made), hash(made), made.version,
            made.urn) == (reference.int, reference.is_safe, str(reference), repr(reference),
                          hash(reference), reference.version, reference.urn)
