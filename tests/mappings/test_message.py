"""AmqpMessage: canonical AMQP 1.0 encoding, decoding and proton.Message conversion."""

from __future__ import annotations

import pickle
import uuid

import proton
import pytest
from hypothesis import given, settings
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

from mappings.errors import MappingError
from mappings.message import AmqpMessage, BodyKind, Header, Properties
from tests.mappings.strategies import messages

EVERY_PROPERTY = Properties(
    message_id=uuid.UUID("8e57ea7a-5e2a-4ad8-ab75-e4cfe858ea25"),
    user_id=b"guest",
    to="/queue/orders",
    subject="order.created",
    reply_to="/queue/replies",
    correlation_id=ulong(42),
    content_type=symbol("application/json"),
    content_encoding=symbol("gzip"),
    absolute_expiry_time=timestamp(1795302515688),
    creation_time=timestamp(1795302455688),
    group_id="group-1",
    group_sequence=uint(7),
    reply_to_group_id="group-2",
)
TYPED_APPLICATION_PROPERTIES = {
    "null": None,
    "bool": True,
    "ubyte": ubyte(255),
    "ushort": ushort(65535),
    "uint": uint(2**32 - 1),
    "ulong": ulong(2**64 - 1),
    "byte": byte(-128),
    "short": short(-32768),
    "int": int32(-(2**31)),
    "long": -(2**63),
    "float": float32(1.5),
    "double": 2.25,
    "decimal32": decimal32(0x3050_0001),
    "decimal64": decimal64(0x3150_0000_0000_0001),
    "decimal128": decimal128(bytes(range(16))),
    "char": char("\N{SNOWMAN}"),
    "timestamp": timestamp(1795302455688),
    "uuid": uuid.UUID("19b8d40d-df5b-490d-b4fa-b4d86e6aa2a5"),
    "binary": b"\x00\xff",
    "string": "tëxt",
    "symbol": symbol("sym"),
}


def full_message() -> AmqpMessage:
    return AmqpMessage(
        header=Header(
            durable=True,
            priority=ubyte(9),
            ttl=uint(1001),
            first_acquirer=True,
            delivery_count=uint(3),
        ),
        delivery_annotations={symbol("x-opt-trace"): "abc"},
        message_annotations={symbol("x-amqp-0-10.routing-key"): "order.created", ulong(12): [1, 2]},
        properties=EVERY_PROPERTY,
        application_properties=dict(TYPED_APPLICATION_PROPERTIES),
        body_kind=BodyKind.DATA,
        body=[b"first", b"second"],
        footer={symbol("x-hash"): b"\x01\x02"},
    )


def test_full_round_trip_keeps_every_field_and_type() -> None:
    message = full_message()
    decoded = AmqpMessage.decode(message.encode())
    assert decoded == message
    for key, value in TYPED_APPLICATION_PROPERTIES.items():
        assert type(decoded.application_properties[key]) is type(value), key
    for name in ("message_id", "correlation_id", "content_type", "creation_time", "group_sequence"):
        assert type(getattr(decoded.properties, name)) is type(getattr(EVERY_PROPERTY, name)), name
    assert type(decoded.header.priority) is ubyte


def test_encoding_is_the_amqp_section_layout() -> None:
    message = AmqpMessage(
        properties=Properties(subject="s"),
        application_properties={"k": 1},
        body_kind=BodyKind.DATA,
        body=[b"ab"],
    )
    expected = (
        "005373"
        "d0"
        "0000000a"
        "00000004"
        "404040"
        "a10173"  # properties [null, null, null, "s"]
        "005374"
        "d1"
        "00000009"
        "00000002"
        "a1016b"
        "5501"  # application-properties {"k": 1L}
        "005375"
        "a002"
        "6162"  # data section b"ab"
    )
    assert message.encode().hex() == expected
    assert AmqpMessage.decode(bytes.fromhex(expected)) == message


def test_defaults_and_empty_sections_are_omitted() -> None:
    message = AmqpMessage(body_kind=BodyKind.VALUE, body="x")
    assert message.encode() == bytes.fromhex("005377a10178")
    assert message.encode_bare() == message.encode()


def test_trailing_null_fields_are_dropped() -> None:
    encoded = AmqpMessage(header=Header(durable=True), body=None).encode()
    assert encoded.startswith(bytes.fromhex("005370d0000000050000000141"))


def test_plain_python_values_are_coerced_to_the_field_types() -> None:
    message = AmqpMessage(
        header=Header(priority=5, ttl=1000, delivery_count=1),
        properties=Properties(
            message_id=7,  # type: ignore[arg-type]  # plain int: written as ulong
            content_type="text/plain",
            creation_time=1,
            group_sequence=2,
        ),
        message_annotations={"x-opt-a": 1},
    )
    decoded = AmqpMessage.decode(message.encode())
    assert type(decoded.header.priority) is ubyte
    assert type(decoded.header.ttl) is uint
    assert type(decoded.properties.message_id) is ulong
    assert type(decoded.properties.content_type) is symbol
    assert type(decoded.properties.creation_time) is timestamp
    assert type(decoded.properties.group_sequence) is uint
    assert list(decoded.message_annotations) == [symbol("x-opt-a")]
    assert type(next(iter(decoded.message_annotations))) is symbol


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(messages())
def test_any_message_round_trips(message: AmqpMessage) -> None:
    assert AmqpMessage.decode(message.encode()) == message


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(messages(bare=True))
def test_any_bare_message_round_trips(message: AmqpMessage) -> None:
    encoded = message.encode_bare()
    assert AmqpMessage.decode_bare(encoded) == message
    assert encoded == message.encode()


@settings(deadline=None)  # proton calls can be slow on a loaded machine
@given(messages())
def test_encoding_is_canonical(message: AmqpMessage) -> None:
    encoded = message.encode()
    assert AmqpMessage.decode(encoded).encode() == encoded


def test_encode_bare_leaves_out_the_annotated_sections() -> None:
    message = full_message()
    bare = AmqpMessage.decode_bare(message.encode_bare())
    assert bare.header == Header()
    assert bare.delivery_annotations == bare.message_annotations == bare.footer == {}
    assert bare.properties == message.properties
    assert bare.application_properties == message.application_properties
    assert bare.body == message.body


@pytest.mark.parametrize(
    "section", ["header", "delivery_annotations", "message_annotations", "footer"]
)
def test_decode_bare_rejects_annotated_sections(section: str) -> None:
    with pytest.raises(MappingError, match="not part of a bare message") as info:
        AmqpMessage.decode_bare(full_message().encode())
    assert info.value.field == "header"
    only = AmqpMessage(body="x")
    setattr(only, section, Header(durable=True) if section == "header" else {symbol("k"): 1})
    with pytest.raises(MappingError) as info:
        AmqpMessage.decode_bare(only.encode())
    assert info.value.field == section


def _sections(*values: object) -> bytes:
    data = Data()
    for value in values:
        data.put_object(value)
    return bytes(data.encode())


def test_symbolic_descriptors_are_understood() -> None:
    encoded = _sections(
        Described(symbol("amqp:properties:list"), ["id-1"]),
        Described(symbol("amqp:data:binary"), b"ab"),
        Described(symbol("amqp:data:binary"), b"cd"),
    )
    decoded = AmqpMessage.decode(encoded)
    assert decoded.properties.message_id == "id-1"
    assert (decoded.body_kind, decoded.body) == (BodyKind.DATA, [b"ab", b"cd"])


def test_several_amqp_sequence_sections() -> None:
    message = AmqpMessage(body_kind=BodyKind.SEQUENCE, body=[[1, "a"], [symbol("b")]])
    assert AmqpMessage.decode(message.encode()) == message


def test_no_body_section_decodes_as_null_amqp_value() -> None:
    decoded = AmqpMessage.decode(_sections(Described(ulong(0x73), ["id"])))
    assert (decoded.body_kind, decoded.body) == (BodyKind.VALUE, None)


@pytest.mark.parametrize(
    ("encoded", "match"),
    [
        (b"", "no bytes"),
        (bytes.fromhex("a10178"), "not start a message section"),
        (bytes.fromhex("005377a1"), "malformed"),
        (_sections(Described(ulong(0x99), 1)), "unknown section descriptor"),
        (_sections(Described(ulong(0x77), 1), Described(ulong(0x73), [])), "out of order"),
        (_sections(Described(ulong(0x77), 1), Described(ulong(0x77), 2)), "repeated"),
        (_sections(Described(ulong(0x75), b"a"), Described(ulong(0x76), [1])), "out of order"),
        (_sections(Described(ulong(0x70), "x")), "is a list"),
        (_sections(Described(ulong(0x70), [None] * 6)), "6 fields"),
        (_sections(Described(ulong(0x74), {symbol("k"): 1})), "not a string"),
        (_sections(Described(ulong(0x72), [1])), "is a map"),
        (_sections(Described(ulong(0x75), "text")), "holds binary"),
    ],
)
def test_malformed_input_raises_mapping_error(encoded: bytes, match: str) -> None:
    with pytest.raises(MappingError, match=match):
        AmqpMessage.decode(encoded)


@pytest.mark.parametrize(
    ("encoded", "match"),
    [
        (bytes.fromhex("005377a102c080"), "not valid utf-8"),  # string
        (bytes.fromhex("005377b100000002c080"), "not valid utf-8"),  # long string
        (bytes.fromhex("005377a302c080"), "not valid ascii"),  # symbol
        (bytes.fromhex("005377d100000006000000 02a10178a102c080".replace(" ", "")),
         "not valid utf-8"),  # a map value
        (bytes.fromhex("005377980102030405"), "malformed"),  # a uuid cut short
        (bytes.fromhex("0053777300110000"), "beyond Unicode"),  # a char past U+10FFFF
        (bytes.fromhex("00537773ffffffff"), "beyond Unicode"),  # ... past a C int
    ],
)
def test_bad_text_and_short_values_raise_mapping_error(encoded: bytes, match: str) -> None:
    """Damaged bytes are a MappingError (never a bare UnicodeDecodeError or ValueError),
    whole or bare."""
    with pytest.raises(MappingError, match=match):
        AmqpMessage.decode(encoded)
    with pytest.raises(MappingError, match=match):
        AmqpMessage.decode_bare(encoded)


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (AmqpMessage(header=Header(priority=256)), "header.priority"),
        (AmqpMessage(header=Header(durable=1)), "header.durable"),  # type: ignore[arg-type]
        (AmqpMessage(header=Header(ttl=-1)), "header.ttl"),
        (AmqpMessage(properties=Properties(subject=b"x")), "properties.subject"),  # type: ignore[arg-type]
        (AmqpMessage(properties=Properties(content_type="tëxt")), "properties.content_type"),
        (AmqpMessage(properties=Properties(message_id=1.5)), "properties.message_id"),  # type: ignore[arg-type]
        (AmqpMessage(properties=Properties(user_id="guest")), "properties.user_id"),  # type: ignore[arg-type]
        (AmqpMessage(application_properties={1: "x"}), "application_properties[1]"),  # type: ignore[dict-item]
        (AmqpMessage(application_properties={"when": object()}), "application_properties['when']"),
        (AmqpMessage(application_properties={"big": 2**64}), "application_properties['big']"),
        (AmqpMessage(message_annotations={1.5: "x"}), "message_annotations[1.5]"),
        (AmqpMessage(body_kind=BodyKind.DATA, body=[]), "body"),
        (AmqpMessage(body_kind=BodyKind.DATA, body=["text"]), "body[0]"),
        (AmqpMessage(body_kind=BodyKind.SEQUENCE, body=[b"x"]), "body[0]"),
        (AmqpMessage(body_kind=BodyKind.VALUE, body={1, 2}), "body"),
    ],
)
def test_unencodable_values_name_the_field(message: AmqpMessage, field: str) -> None:
    with pytest.raises(MappingError) as info:
        message.encode()
    assert info.value.field == field


# --- proton.Message ---------------------------------------------------------------------------


def proton_safe(message: AmqpMessage) -> AmqpMessage:
    """``message`` with footer removed and one body section, as proton.Message can hold."""
    message.footer = {}
    if message.body_kind is BodyKind.DATA:
        message.body = [b"".join(message.body)]
    return message


def test_to_proton_sets_every_field() -> None:
    message = proton_safe(full_message())
    pm = message.to_proton()
    assert (pm.durable, pm.priority, pm.ttl, pm.first_acquirer, pm.delivery_count) == (
        True,
        9,
        1.001,
        True,
        3,
    )
    assert pm.id == EVERY_PROPERTY.message_id
    assert pm.user_id == b"guest"
    assert (pm.address, pm.subject, pm.reply_to) == (
        "/queue/orders",
        "order.created",
        "/queue/replies",
    )
    assert pm.correlation_id == 42
    assert (pm.content_type, pm.content_encoding) == ("application/json", "gzip")
    assert (pm.expiry_time, pm.creation_time) == (1795302515.688, 1795302455.688)
    assert (pm.group_id, pm.group_sequence, pm.reply_to_group_id) == ("group-1", 7, "group-2")
    assert pm.instructions == {symbol("x-opt-trace"): "abc"}
    assert pm.annotations == message.message_annotations
    assert pm.properties == TYPED_APPLICATION_PROPERTIES
    assert pm.inferred is True
    assert pm.body == b"firstsecond"
    assert type(pm.body) is bytes


def test_proton_round_trip() -> None:
    message = proton_safe(full_message())
    assert AmqpMessage.from_proton(message.to_proton()) == message
    assert AmqpMessage.decode(message.to_proton().encode()) == message


@pytest.mark.parametrize(
    ("kind", "body", "inferred", "proton_body"),
    [
        (BodyKind.DATA, [b"x"], True, b"x"),
        (BodyKind.SEQUENCE, [[1, 2]], True, [1, 2]),
        (BodyKind.VALUE, b"x", False, b"x"),
        (BodyKind.VALUE, [1, 2], False, [1, 2]),
        (BodyKind.VALUE, None, False, None),
    ],
)
def test_to_proton_body_kinds(
    kind: BodyKind, body: object, inferred: bool, proton_body: object
) -> None:
    message = AmqpMessage(body_kind=kind, body=body)
    pm = message.to_proton()
    assert (pm.inferred, pm.body) == (inferred, proton_body)
    assert AmqpMessage.from_proton(pm) == message


def test_from_proton_message_built_with_proton() -> None:
    pm = proton.Message(
        body="hello",
        id="m-1",
        subject="s",
        durable=True,
        priority=6,
        properties={"a": int32(1), "b": symbol("x")},
        annotations={"x-opt-k": "v"},
    )
    message = AmqpMessage.from_proton(pm)
    assert message.header == Header(durable=True, priority=6)
    assert message.properties == Properties(message_id="m-1", subject="s")
    assert message.application_properties == {"a": 1, "b": "x"}
    assert type(message.application_properties["a"]) is int32
    assert message.message_annotations == {symbol("x-opt-k"): "v"}
    assert (message.body_kind, message.body) == (BodyKind.VALUE, "hello")


def test_proton_collapses_amqp_defaults() -> None:
    """Documented limit: proton.Message writes default-valued fields as absent."""
    message = AmqpMessage(
        header=Header(durable=False, priority=4, ttl=0, first_acquirer=False, delivery_count=0),
        properties=Properties(creation_time=0, absolute_expiry_time=0, group_sequence=0),
    )
    assert AmqpMessage.from_proton(message.to_proton()) == AmqpMessage()


def test_to_proton_refuses_what_proton_message_cannot_hold() -> None:
    with pytest.raises(MappingError, match="one body section") as info:
        AmqpMessage(body_kind=BodyKind.DATA, body=[b"a", b"b"]).to_proton()
    assert info.value.field == "body"
    with pytest.raises(MappingError) as info:
        AmqpMessage(body_kind=BodyKind.SEQUENCE, body=[[1], [2]]).to_proton()
    assert info.value.field == "body"
    with pytest.raises(MappingError) as info:
        AmqpMessage(footer={symbol("k"): 1}).to_proton()
    assert info.value.field == "footer"


def test_decode_copies_binaries_out_of_proton_buffers() -> None:
    decoded = AmqpMessage.decode(full_message().encode())
    AmqpMessage.decode(AmqpMessage(body_kind=BodyKind.DATA, body=[b"z" * 64]).encode())
    assert decoded.body == [b"first", b"second"]
    assert type(decoded.application_properties["binary"]) is bytes


def test_arrays_and_described_values() -> None:
    value = {
        "ints": Array(UNDESCRIBED, Data.INT, int32(1), int32(2)),  # type: ignore[arg-type]
        "described": Described(symbol("com.example:thing"), [1, b"x"]),
        "described-array": Array(symbol("d"), Data.STRING, "a", "b"),
    }
    message = AmqpMessage(body=value)
    assert AmqpMessage.decode(message.encode()) == message


def test_pickle() -> None:
    message = full_message()
    assert pickle.loads(pickle.dumps(message)) == message


def test_section_copies_are_what_dataclasses_replace_gives() -> None:
    """``Header.copy`` / ``Properties.with_content_type`` (hot-path copies) keep every
    field: each field set to a value of its own, compared with ``dataclasses.replace``."""
    import dataclasses

    header = Header(**{f.name: f"h{i}" for i, f in enumerate(dataclasses.fields(Header))})
    copy = header.copy()
    assert copy == dataclasses.replace(header) and copy is not header
    properties = Properties(**{f.name: f"p{i}"
                               for i, f in enumerate(dataclasses.fields(Properties))})
    changed = properties.with_content_type(symbol("text/plain"))
    assert changed == dataclasses.replace(properties, content_type=symbol("text/plain"))
    assert properties.content_type == "p6"  # the original is untouched
