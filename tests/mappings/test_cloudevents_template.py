"""EventTemplate: creating CloudEvents from plain messages."""

from __future__ import annotations

import pickle
import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
import pydantic
import pytest
from pamqp.commands import Basic
from proton import symbol, timestamp, ulong

from mappings import amqp091
from mappings.cloudevents import ROUTING_KEY_ANNOTATION, CloudEvent, EventTemplate
from mappings.cloudevents.template import compile_pattern
from mappings.errors import CloudEventError
from mappings.message import AmqpMessage, BodyKind, Properties

NOW = datetime(2030, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
CREATED = timestamp(1795302455688)


def plain(**overrides: Any) -> AmqpMessage:
    message = AmqpMessage(
        message_annotations={
            symbol(ROUTING_KEY_ANNOTATION): "order.created",
            symbol("x-opt-tenant"): "acme",
        },
        properties=Properties(
            message_id="m-1",
            subject="orders",
            content_type="application/json",
            creation_time=CREATED,
            to="/q",
        ),
        application_properties={
            "region": "eu",
            "n": 7,
            "vip": True,
            "blob": b"\x01",
            "ignored": 1.5,
        },
        body_kind=BodyKind.DATA,
        body=[b'{"order": 1}'],
    )
    for name, value in overrides.items():
        setattr(message, name, value)
    return message


def test_defaults() -> None:
    event = EventTemplate(source="/orders", type="com.example.order").build(plain(), now=NOW)
    assert event == CloudEvent(
        id="m-1",
        source="/orders",
        type="com.example.order",
        datacontenttype="application/json",
        time=datetime(2026, 11, 21, 23, 7, 35, 688000, tzinfo=UTC),
        data=b'{"order": 1}',
    )


def test_placeholders() -> None:
    template = EventTemplate(
        source="/tenants/{annotation:x-opt-tenant}{to}",
        type="com.example.{routing_key}",
        subject="{subject}/{property:region}/{property:n}/{property:vip}",
        dataschema="https://schemas.example/{{v1}}/{message_id}",
        id="{message_id}-{creation_time}",
    )
    event = template.build(plain(), now=NOW)
    assert event.source == "/tenants/acme/q"
    assert event.type == "com.example.order.created"
    assert event.subject == "orders/eu/7/true"
    assert event.dataschema == "https://schemas.example/{v1}/m-1"
    assert event.id == "m-1-2026-11-21T23:07:35.688Z"


def test_extensions_keep_native_types() -> None:
    template = EventTemplate(
        source="/s",
        type="t",
        extensions={
            "region": "region",
            "count": "n",
            "vip": "vip",
            "blob": "blob",
            "gone": "missing",
        },
    )
    event = template.build(plain(), now=NOW)
    assert event.extensions == {"region": "eu", "count": 7, "vip": True, "blob": b"\x01"}


def test_extension_without_cloudevents_type_is_an_error() -> None:
    with pytest.raises(CloudEventError) as info:
        EventTemplate(source="/s", type="t", extensions={"ratio": "ignored"}).build(
            plain(), now=NOW
        )
    assert info.value.field == "ratio"


@pytest.mark.parametrize(
    ("message_id", "expected"),
    [
        (ulong(42), "42"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
        (b"ddacacd4-aebd", "ddacacd4-aebd"),
        (b"\xff\x00", "ff00"),
    ],
)
def test_id_from_message_id_types(message_id: Any, expected: str) -> None:
    message = plain(properties=Properties(message_id=message_id))
    assert EventTemplate(source="/s", type="t").build(message, now=NOW).id == expected


def test_id_falls_back_to_new_uuid() -> None:
    message = plain(properties=Properties())
    template = EventTemplate(source="/s", type="t")
    assert template.build(message, now=NOW, new_id=lambda: "generated").id == "generated"
    generated = template.build(message, now=NOW).id
    assert uuid.UUID(generated).version == 4


@pytest.mark.parametrize(
    ("option", "creation_time", "expected"),
    [
        ("creation_time", CREATED, datetime(2026, 11, 21, 23, 7, 35, 688000, tzinfo=UTC)),
        ("creation_time", None, NOW.replace(microsecond=678000)),
        ("now", CREATED, NOW.replace(microsecond=678000)),
        ("none", CREATED, None),
    ],
)
def test_time_options(option: str, creation_time: Any, expected: datetime | None) -> None:
    message = plain(properties=Properties(message_id="m", creation_time=creation_time))
    event = EventTemplate(source="/s", type="t", time=option).build(message, now=NOW)  # type: ignore[arg-type]
    assert event.time == expected


def test_now_must_be_aware() -> None:
    message = plain(properties=Properties(message_id="m"))
    with pytest.raises(CloudEventError) as info:
        EventTemplate(source="/s", type="t").build(message, now=datetime(2030, 1, 1))
    assert info.value.field == "time"
    offset = datetime(2030, 1, 1, tzinfo=timezone(timedelta(hours=3)))
    assert EventTemplate(source="/s", type="t").build(message, now=offset).time == offset


@pytest.mark.parametrize(
    ("body_kind", "body", "content_type", "data", "datacontenttype"),
    [
        (BodyKind.DATA, [b"a", b"b"], None, b"ab", None),
        (BodyKind.DATA, [b""], None, None, None),
        (BodyKind.VALUE, "just text", None, b"just text", "text/plain; charset=utf-8"),
        (BodyKind.VALUE, "just text", "text/x-custom", b"just text", "text/x-custom"),
        (BodyKind.VALUE, {"k": "v", "n": 2}, None, b'{"k":"v","n":2}', "application/json"),
        (BodyKind.VALUE, [1, symbol("s"), uuid.UUID(int=2)], None, None, "application/json"),
        (BodyKind.VALUE, b"raw", None, b"raw", None),
        (BodyKind.VALUE, None, None, None, None),
    ],
)
def test_body_to_data(
    body_kind: BodyKind,
    body: Any,
    content_type: str | None,
    data: bytes | None,
    datacontenttype: str | None,
) -> None:
    message = plain(
        body_kind=body_kind,
        body=body,
        properties=Properties(message_id="m", content_type=content_type),
    )
    event = EventTemplate(source="/s", type="t").build(message, now=NOW)
    assert event.datacontenttype == datacontenttype
    if data is None and body_kind is BodyKind.VALUE and isinstance(body, list):
        assert orjson.loads(event.data) == [1, "s", "00000000-0000-0000-0000-000000000002"]  # type: ignore[arg-type]
    else:
        assert event.data == data


def test_datacontenttype_override() -> None:
    template = EventTemplate(source="/s", type="t", datacontenttype="application/vnd.orders+json")
    assert template.build(plain(), now=NOW).datacontenttype == "application/vnd.orders+json"


@pytest.mark.parametrize(
    ("body_kind", "body"), [(BodyKind.SEQUENCE, [[1]]), (BodyKind.VALUE, {"k": b"bytes"})]
)
def test_bodies_without_data_form(body_kind: BodyKind, body: Any) -> None:
    with pytest.raises(CloudEventError) as info:
        EventTemplate(source="/s", type="t").build(plain(body_kind=body_kind, body=body), now=NOW)
    assert info.value.field == "data"


@pytest.mark.parametrize(
    ("template", "message", "field"),
    [
        (EventTemplate(source="/s", type="{routing_key}"), plain(message_annotations={}), "type"),
        (EventTemplate(source="{property:nope}", type="t"), plain(), "source"),
        (EventTemplate(source="/s", type="t", subject="{reply_to}"), plain(), "subject"),
        (EventTemplate(source="/s", type="t", id="{correlation_id}"), plain(), "id"),
        (
            EventTemplate(source="/s", type="t", dataschema="relative/{subject}"),
            plain(),
            "dataschema",
        ),
        (EventTemplate(source="/s", type="t{property:ignored}\x00"), plain(), "type"),
        (
            EventTemplate(source="/s", type="{subject}"),
            plain(properties=Properties(subject="", message_id="m")),
            "type",
        ),
    ],
)
def test_invalid_output_names_the_attribute(
    template: EventTemplate, message: AmqpMessage, field: str
) -> None:
    with pytest.raises(CloudEventError) as info:
        template.build(message, now=NOW)
    assert info.value.field == field


def test_unrenderable_placeholder_value() -> None:
    message = plain(application_properties={"l": [1]})
    with pytest.raises(CloudEventError, match="no text form") as info:
        EventTemplate(source="/s", type="{property:l}").build(message, now=NOW)
    assert info.value.field == "type"


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"type": "t"}, "source"),
        ({"source": "/s"}, "type"),
        ({"source": "/s", "type": "{nope}"}, "unknown placeholder"),
        ({"source": "/s", "type": "{annotation:}"}, "unknown placeholder"),
        ({"source": "/s", "type": "{subject"}, "unclosed"),
        ({"source": "/s", "type": "a}b"}, "single"),
        ({"source": "/s", "type": "t", "extensions": {"Bad": "x"}}, "lower-case"),
        ({"source": "/s", "type": "t", "extensions": {"id": "x"}}, "reserved"),
        ({"source": "/s", "type": "t", "time": "later"}, "time"),
        ({"source": "/s", "type": "t", "unknown": 1}, "unknown"),
    ],
)
def test_invalid_templates_are_rejected_at_configuration(
    options: dict[str, Any], match: str
) -> None:
    with pytest.raises(pydantic.ValidationError, match=match):
        EventTemplate(**options)


def test_template_from_config_mapping_is_frozen_and_reusable() -> None:
    template = EventTemplate.model_validate(
        {"source": "/s", "type": "com.example.{subject}", "extensions": {"region": "region"}}
    )
    with pytest.raises(pydantic.ValidationError):
        template.source = "/other"  # type: ignore[misc]
    builder = template.compiled
    assert builder is template.compiled
    assert builder.build(plain(), now=NOW) == template.build(plain(), now=NOW)
    assert EventTemplate.model_validate_json(template.model_dump_json()) == template


def test_compile_pattern() -> None:
    assert compile_pattern("literal") == ("literal",)
    assert compile_pattern("") == ("",)
    assert compile_pattern("{{x}}") == ("{x}",)
    parts = compile_pattern("a{subject}b")
    assert [part if isinstance(part, str) else part[0] for part in parts] == ["a", "subject", "b"]


def test_template_pickles_after_compiling() -> None:
    """Spark ships templates to its workers."""
    template = EventTemplate(
        source="/s", type="com.example.{routing_key}", extensions={"region": "region"}
    )
    expected = template.build(plain(), now=NOW)
    copy = pickle.loads(pickle.dumps(template))
    assert copy == template
    assert copy.build(plain(), now=NOW) == expected


def test_routing_key_placeholder_reads_the_0_10_or_the_0_9_1_annotation() -> None:
    template = EventTemplate(source="/s", type="com.example.{routing_key}")
    # RabbitMQ 4's conversion of a 0-9-1 publish: no subject, its x-exchange / x-routing-key
    amqp091 = plain(message_annotations={symbol("x-routing-key"): "eu.new",
                                         symbol("x-exchange"): "orders"},
                    properties=Properties(message_id="m-1"))
    assert template.build(amqp091, now=NOW).type == "com.example.eu.new"
    both = plain(message_annotations={symbol("x-amqp-0-10.routing-key"): "from-0-10",
                                      symbol("x-routing-key"): "from-0-9-1"})
    assert template.build(both, now=NOW).type == "com.example.from-0-10"


def test_routing_key_placeholder_reads_a_0_9_1_messages_subject() -> None:
    """The 0-9-1 mapping writes the routing key as the subject, x-routing-key only beside
    another subject (null: no routing key)."""
    template = EventTemplate(source="/s", type="com.example.{routing_key}")
    message = amqp091.to_amqp10(None, amqp091.Delivery091("orders", "eu.new"), b"")
    assert template.build(message, now=NOW).type == "com.example.eu.new"
    keyless = amqp091.to_amqp10(Basic.Properties(headers={"x-amqp-1.0.subject": "a 1.0 subject"}),
                                amqp091.Delivery091("", None), b"")
    with pytest.raises(CloudEventError):
        template.build(keyless, now=NOW)


def test_routing_key_placeholder_reads_past_rabbitmq_4s_routing() -> None:
    """RabbitMQ 4 writes its own routing in x-exchange / x-routing-key on every delivery (from
    /queues/Q: '' and Q): the 0-9-1 key is the mapping's annotation or the subject."""
    template = EventTemplate(source="/s", type="com.example.{routing_key}")
    rabbitmq4 = {symbol("x-exchange"): "", symbol("x-routing-key"): "test.q"}
    keyed = amqp091.to_amqp10(Basic.Properties(headers={"x-amqp-1.0.subject": "other"}),
                              amqp091.Delivery091("orders", "eu.new"), b"")
    plain_subject = amqp091.to_amqp10(None, amqp091.Delivery091("orders", "eu.new"), b"")
    native = plain(message_annotations={})
    native.properties.subject = "eu.new"
    for message in (keyed, plain_subject, native):
        message.message_annotations.update(rabbitmq4)
        assert template.build(message, now=NOW).type == "com.example.eu.new"
