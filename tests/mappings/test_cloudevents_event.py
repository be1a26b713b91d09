"""CloudEvent validation and the CloudEvents type system."""

from __future__ import annotations

import dataclasses
import pickle
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from proton import symbol, timestamp, ulong

from mappings.cloudevents import CloudEvent
from mappings.cloudevents.typesystem import (
    canonical_string,
    format_time,
    millis_to_datetime,
    parse_time,
    time_from_amqp,
    time_to_amqp,
    value_from_amqp,
)
from mappings.errors import CloudEventError

BASE: dict[str, Any] = {"id": "1", "source": "/s", "type": "t"}


def make(**changes: Any) -> CloudEvent:
    return CloudEvent(**{**BASE, **changes})


def test_minimal_event() -> None:
    event = make()
    assert (event.specversion, event.time, event.extensions, event.data) == ("1.0", None, {}, None)
    assert event.attributes() == {"specversion": "1.0", "id": "1", "source": "/s", "type": "t"}


def test_attributes_lists_everything_set() -> None:
    when = datetime(2024, 5, 1, tzinfo=UTC)
    event = make(subject="sub", time=when, datacontenttype="text/plain", extensions={"a": 1})
    assert event.attributes() == {
        "specversion": "1.0",
        "id": "1",
        "source": "/s",
        "type": "t",
        "datacontenttype": "text/plain",
        "subject": "sub",
        "time": when,
        "a": 1,
    }


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"id": ""}, "id"),
        ({"source": ""}, "source"),
        ({"type": None}, "type"),
        ({"id": 5}, "id"),
        ({"specversion": "0.3"}, "specversion"),
        ({"subject": ""}, "subject"),
        ({"datacontenttype": ""}, "datacontenttype"),
        ({"dataschema": "relative/path"}, "dataschema"),
        ({"dataschema": 7}, "dataschema"),
        ({"time": "2024-01-01T00:00:00Z"}, "time"),
        ({"time": datetime(2024, 1, 1)}, "time"),
        ({"time": datetime(2024, 1, 1, tzinfo=timezone(timedelta(seconds=30)))}, "time"),
        ({"type": "a\x00b"}, "type"),
        ({"subject": "tab\there"}, "subject"),
        ({"subject": "c1\x85control"}, "subject"),
        ({"source": "non\ufdd0char"}, "source"),
        ({"source": "\U0001fffe"}, "source"),
        ({"extensions": {"Upper": 1}}, "Upper"),
        ({"extensions": {"with-dash": 1}}, "with-dash"),
        ({"extensions": {"": 1}}, ""),
        ({"extensions": {"data": 1}}, "data"),
        ({"extensions": {"time": 1}}, "time"),
        ({"extensions": {"big": 2**31}}, "big"),
        ({"extensions": {"small": -(2**31) - 1}}, "small"),
        ({"extensions": {"ratio": 1.5}}, "ratio"),
        ({"extensions": {"nothing": None}}, "nothing"),
        ({"extensions": {"naive": datetime(2024, 1, 1)}}, "naive"),
        ({"extensions": {"list": [1]}}, "list"),
        ({"data": "text"}, "data"),
        ({"data": {"a": 1}}, "data"),
    ],
)
def test_invalid_events_name_the_attribute(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(CloudEventError) as info:
        make(**changes)
    assert info.value.field == field


def test_valid_edge_values() -> None:
    event = make(
        id="ünïcode ok",
        subject="emoji \N{PARTY POPPER}",
        dataschema="urn:example:schema",
        time=datetime(2024, 1, 1, tzinfo=timezone(timedelta(hours=-5, minutes=-30))),
        extensions={
            "a" * 25: "long names are only NOT RECOMMENDED",
            "min": -(2**31),
            "max": 2**31 - 1,
            "flag": False,
            "blob": b"\x00",
            "empty": "",
        },
    )
    assert event.extensions["max"] == 2**31 - 1


def test_subclassed_values_are_normalised() -> None:
    event = make(
        id=symbol("sym-id"), extensions={"n": ulong(5), "s": symbol("x"), "b": bytearray(b"y")}
    )
    assert type(event.id) is str
    assert [type(v) for v in event.extensions.values()] == [int, str, bytes]
    assert make(data=bytearray(b"d")).data == b"d"


def test_empty_data_means_no_data() -> None:
    assert make(data=b"").data is None


def test_immutable_and_copied() -> None:
    extensions = {"a": 1}
    event = make(extensions=extensions)
    extensions["b"] = 2
    assert event.extensions == {"a": 1}
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.id = "2"  # type: ignore[misc]
    changed = dataclasses.replace(event, subject="new")
    assert changed.subject == "new"
    with pytest.raises(CloudEventError):
        dataclasses.replace(event, subject="")


def test_from_attributes() -> None:
    event = CloudEvent.from_attributes(
        {**BASE, "specversion": "1.0", "subject": "s", "ext": True}, b"x"
    )
    assert event == make(subject="s", extensions={"ext": True}, data=b"x")
    with pytest.raises(CloudEventError) as info:
        CloudEvent.from_attributes({"id": "1", "type": "t", "specversion": "1.0"})
    assert info.value.field == "source"


def test_pickle() -> None:
    event = make(time=datetime(2024, 1, 1, tzinfo=UTC), extensions={"a": b"x"}, data=b"d")
    assert pickle.loads(pickle.dumps(event)) == event


# --- type system ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (datetime(2018, 4, 5, 3, 56, 24, tzinfo=UTC), "2018-04-05T03:56:24Z"),
        (datetime(2018, 4, 5, 3, 56, 24, 120000, tzinfo=UTC), "2018-04-05T03:56:24.120Z"),
        (datetime(2018, 4, 5, 3, 56, 24, 1, tzinfo=UTC), "2018-04-05T03:56:24.000001Z"),
        (
            datetime(2018, 4, 5, 3, 56, 24, tzinfo=timezone(timedelta(hours=2))),
            "2018-04-05T03:56:24+02:00",
        ),
        (
            datetime(2018, 4, 5, tzinfo=timezone(timedelta(hours=-9, minutes=-30))),
            "2018-04-05T00:00:00-09:30",
        ),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z"),
    ],
)
def test_format_and_parse_time(value: datetime, text: str) -> None:
    assert format_time(value) == text
    parsed = parse_time(text, "time")
    assert parsed == value
    assert parsed.utcoffset() == value.utcoffset()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2018-04-05t03:56:24z", datetime(2018, 4, 5, 3, 56, 24, tzinfo=UTC)),
        ("2018-04-05 03:56:24Z", datetime(2018, 4, 5, 3, 56, 24, tzinfo=UTC)),
        ("2018-04-05T03:56:24.123456789Z", datetime(2018, 4, 5, 3, 56, 24, 123456, tzinfo=UTC)),
        ("2018-04-05T03:56:24.5+00:00", datetime(2018, 4, 5, 3, 56, 24, 500000, tzinfo=UTC)),
    ],
)
def test_parse_time_accepts_rfc3339_variants(text: str, expected: datetime) -> None:
    assert parse_time(text, "time") == expected


@pytest.mark.parametrize(
    "text",
    [
        "2018-04-05",
        "2018-04-05T03:56:24",
        "2018-04-05T03:56Z",
        "20180405T035624Z",
        "2018-13-05T03:56:24Z",
        "yesterday",
        "2018-04-05T03:56:60Z",
    ],
)
def test_parse_time_rejects_non_rfc3339(text: str) -> None:
    with pytest.raises(CloudEventError) as info:
        parse_time(text, "time")
    assert info.value.field == "time"


def test_time_to_amqp_is_native_when_exact() -> None:
    exact = datetime(2026, 11, 21, 23, 7, 35, 688000, tzinfo=UTC)
    assert time_to_amqp(exact) == timestamp(1795302455688)
    assert type(time_to_amqp(exact)) is timestamp
    assert time_to_amqp(datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)) == timestamp(-1)
    assert time_to_amqp(exact + timedelta(microseconds=1)) == "2026-11-21T23:07:35.688001Z"
    shifted = exact.astimezone(timezone(timedelta(hours=1)))
    assert time_to_amqp(shifted) == "2026-11-22T00:07:35.688+01:00"


def test_millis_and_time_from_amqp() -> None:
    expected = datetime(2026, 11, 21, 23, 7, 35, 688000, tzinfo=UTC)
    assert millis_to_datetime(1795302455688, "time") == expected
    assert time_from_amqp(timestamp(1795302455688), "time") == expected
    assert time_from_amqp(1795302455688, "time") == expected
    assert time_from_amqp("2026-11-21T23:07:35.688Z", "time") == expected
    for bad in (True, 1.5, None, b"x", 10**20):
        with pytest.raises(CloudEventError):
            time_from_amqp(bad, "time")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("s", "s"),
        (symbol("sym"), "sym"),
        (True, True),
        (ulong(7), 7),
        (-5, -5),
        (b"\x01", b"\x01"),
        (timestamp(0), datetime(1970, 1, 1, tzinfo=UTC)),
    ],
)
def test_value_from_amqp(value: Any, expected: Any) -> None:
    converted = value_from_amqp(value, "x")
    assert converted == expected
    assert type(converted) is type(expected)


@pytest.mark.parametrize("value", [1.5, None, [1], {"a": 1}, 2**31, ulong(2**64 - 1)])
def test_value_from_amqp_rejects(value: Any) -> None:
    with pytest.raises(CloudEventError) as info:
        value_from_amqp(value, "ext")
    assert info.value.field == "ext"


def test_canonical_string() -> None:
    assert [
        canonical_string(v)
        for v in ("s", True, False, -3, b"\xff", datetime(2024, 1, 1, tzinfo=UTC))
    ] == [
        "s",
        "true",
        "false",
        "-3",
        "/w==",
        "2024-01-01T00:00:00Z",
    ]
