"""Values that cannot be encoded raise EncodeError -- never TypeError, ValueError,
struct.error or OverflowError -- and a field's error names the struct and the field
(e.g. ``message.delivery-properties.routing-key``) so the caller can find it."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from typing import Any

import pytest

from amqp010 import codec, spec
from amqp010 import types as T
from amqp010.errors import CodecError, EncodeError
from amqp010.framing import encode_assembly

DP, MP = spec.DeliveryProperties, spec.MessageProperties

# (value that cannot be encoded, the dotted name its error must contain)
BAD_FIELDS: list[tuple[Any, str]] = [
    (DP(routing_key="x" * 256), "message.delivery-properties.routing-key"),
    (DP(routing_key="\u00e9" * 128), "message.delivery-properties.routing-key"),  # 256 octets
    (DP(exchange="x" * 300, routing_key="ok"), "message.delivery-properties.exchange"),
    (DP(priority=256), "message.delivery-properties.priority"),
    (DP(priority=-1), "message.delivery-properties.priority"),
    (DP(ttl=2**64), "message.delivery-properties.ttl"),
    (DP(ttl=-1), "message.delivery-properties.ttl"),
    (DP(timestamp=2**63), "message.delivery-properties.timestamp"),
    (DP(resume_id="x" * 65536), "message.delivery-properties.resume-id"),
    (DP(routing_key=b"bytes"), "message.delivery-properties.routing-key"),
    (DP(priority="high"), "message.delivery-properties.priority"),
    (MP(message_id="a3eea816-3595-45cf-8be1-b9a11fec943f"), "message.message-properties.message-id"),
    (MP(correlation_id="text"), "message.message-properties.correlation-id"),
    (MP(content_length=2**64), "message.message-properties.content-length"),
    (MP(application_headers=[("a", 1)]), "message.message-properties.application-headers"),
    (MP(application_headers={1: "x"}), "message.message-properties.application-headers"),
    (MP(application_headers={"k": object()}), "message.message-properties.application-headers"),
    (MP(application_headers={"k": T.Int8(300)}), "message.message-properties.application-headers"),
    (MP(reply_to={"exchange": "x"}), "message.message-properties.reply-to"),
    (MP(reply_to=spec.ReplyTo(exchange="x" * 300)), "message.reply-to.exchange"),
    (spec.ConnectionTune(channel_max=65536), "connection.tune.channel-max"),
    (spec.ConnectionStartOk(mechanism=b"PLAIN"), "connection.start-ok.mechanism"),
    (spec.ConnectionStart(mechanisms=["PLAIN", 1]), "connection.start.mechanisms"),
    (spec.SessionAttach(name=b"x" * 65536), "session.attach.name"),
    (spec.SessionCommandPoint(command_id=2**32), "session.command-point.command-id"),
    (spec.MessageAccept(transfers=T.SequenceSet([(1, 2**32)])), "message.accept.transfers"),
    (spec.MessageTransfer(destination="x" * 256), "message.transfer.destination"),
    (spec.ExecutionResult(command_id=1, value=spec.ReplyTo()), "execution.result.value"),
    (spec.DtxStart(xid=spec.Xid(format=1, global_id=b"x" * 256, branch_id=b"")),
     "dtx.xid.global-id"),
]
BAD_IDS = [f"{name}-{i}" for i, (_, name) in enumerate(BAD_FIELDS)]


def encode_any(value: Any) -> bytes:
    """Encode ``value`` the way an application would: a whole segment or assembly."""
    if isinstance(value, spec.Control):
        return codec.encode_control(value)
    if isinstance(value, spec.Command):
        return encode_assembly(1, value)
    if value.CODE is not None:
        return codec.encode_header([value])
    out = bytearray()
    value.encode_fields(out)
    return bytes(out)


@pytest.mark.parametrize(("value", "name"), BAD_FIELDS, ids=BAD_IDS)
def test_bad_field_raises_encode_error(value: Any, name: str) -> None:
    with pytest.raises(EncodeError):
        encode_any(value)


@pytest.mark.parametrize(("value", "name"), BAD_FIELDS, ids=BAD_IDS)
def test_bad_field_error_names_struct_and_field(value: Any, name: str) -> None:
    with pytest.raises(EncodeError) as info:
        encode_any(value)
    assert name in str(info.value), f"the error does not name {name}: {info.value}"


def test_field_error_in_a_transfer_header() -> None:
    with pytest.raises(EncodeError) as info:
        encode_assembly(1, spec.MessageTransfer(), (DP(routing_key="k" * 300),), b"body")
    assert "message.delivery-properties.routing-key" in str(info.value)


def test_valid_values_at_the_limits_encode() -> None:
    """The boundaries themselves are fine (guards against off-by-one limits)."""
    encode_any(DP(routing_key="x" * 255, priority=255, ttl=2**64 - 1, timestamp=-(2**63)))
    encode_any(DP(routing_key="\u00e9" * 127 + "x"))
    encode_any(spec.ConnectionTune(channel_max=65535))
    encode_any(spec.SessionAttach(name=b"x" * 65535))
    encode_any(spec.SessionCommandPoint(command_id=2**32 - 1, command_offset=2**64 - 1))


# --- typed values (maps, lists, arrays) -----------------------------------------------------------

BAD_TYPED: list[tuple[str, Any]] = [
    ("int8 out of range", T.Int8(128)),
    ("uint8 out of range", T.UInt8(-1)),
    ("int16 out of range", T.Int16(2**15)),
    ("uint16 out of range", T.UInt16(2**16)),
    ("int32 out of range", T.Int32(-(2**31) - 1)),
    ("uint32 out of range", T.UInt32(2**32)),
    ("uint64 out of range", T.UInt64(2**64)),
    ("plain int beyond uint64", 2**64),
    ("plain int below int64", -(2**63) - 1),
    ("float32 overflow", T.Float32(1e300)),
    ("char of two characters", T.Char("ab")),
    ("char outside ISO-8859-15", T.Char("\u0100")),
    ("char-utf32 of two characters", T.CharUTF32("ab")),
    ("str8 over 255 octets", T.Str8("x" * 256)),
    ("str8-latin not Latin-9", T.Str8Latin("\u2713")),
    ("str8-utf16 over 255 octets", T.Str8UTF16("x" * 128)),
    ("str16 over 65535 octets", "x" * 65536),
    ("vbin8 over 255 octets", T.VBin8(b"x" * 256)),
    ("vbin16 over 65535 octets", T.VBin16(b"x" * 65536)),
    ("fixed binary of the wrong width", T.Bin16(b"x")),
    ("dec32 with a positive exponent", T.Dec32(Decimal("1E+5"))),
    ("dec32 exponent beyond 255", T.Dec32(Decimal("1E-256"))),
    ("dec32 mantissa beyond int32", T.Dec32(Decimal(2**31))),
    ("dec64 mantissa beyond int64", T.Dec64(Decimal(2**63))),
    ("naive datetime", datetime.datetime(2024, 1, 1)),
    ("datetime beyond int64", T.Datetime(2**63)),
    ("a set", {1, 2}),
    ("an arbitrary object", object()),
    ("array of an unknown type code", T.Array(0x03, [1])),
    ("array of mixed values", T.Array(0x31, [1, "a"])),
    ("struct without a code as struct32", spec.ReplyTo()),
    ("map key that is not a string", {b"k": 1}),
    ("map key over 255 octets", {"k" * 256: 1}),
]


@pytest.mark.parametrize("value", [v for _, v in BAD_TYPED], ids=[n for n, _ in BAD_TYPED])
def test_bad_typed_value_raises_encode_error(value: Any) -> None:
    for container in ({"k": value}, [value]):
        with pytest.raises(EncodeError):
            T.encode_typed(bytearray(), container)


def test_encode_error_is_a_codec_error() -> None:
    assert issubclass(EncodeError, CodecError)


def test_too_deep_nesting_is_an_encode_error() -> None:
    value: Any = 1
    for _ in range(40):
        value = {"m": [value]}
    with pytest.raises(EncodeError) as info:
        T.encode_typed(bytearray(), value)
    assert "nested" in str(info.value)


def test_a_plain_list_array_of_mixed_types() -> None:
    with pytest.raises(EncodeError):
        T.encode_array(bytearray(), [uuid.uuid4(), "x"])


@pytest.mark.parametrize(("kwargs", "word"), [
    ({"channel": 0x10000}, "channel"),
    ({"channel": -1}, "channel"),
    ({"max_frame_size": 0x10000, "body": b"x" * 0x10000}, "max_frame_size"),
], ids=["channel-65536", "channel--1", "max-frame-size-65536"])
def test_frame_parameters_out_of_range(kwargs: dict[str, Any], word: str) -> None:
    """Frame-level arguments out of range are rejected with an error naming them, instead of
    a bare ``bytes must be in range(0, 256)`` from deep inside the frame header builder."""
    channel = kwargs.get("channel", 1)
    with pytest.raises((EncodeError, ValueError)) as info:
        encode_assembly(channel, spec.MessageTransfer(), (), kwargs.get("body", b""),
                        kwargs.get("max_frame_size", 0xFFFF))
    assert word.replace("_", "-") in str(info.value).replace("_", "-"), str(info.value)
