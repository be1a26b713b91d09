"""Golden bytes: examples from the spec and encodings derived by hand from its layouts.

None of the expected byte strings here came from our encoder.  Layouts used
(AMQP 0-10 spec, "Transport" and "Types" chapters):

* protocol header: ``'A' 'M' 'Q' 'P'``, class 1, instance 1, version major 0, minor 10;
* frame header, 12 octets::

      octet 0: 0 0 (format version) 0 0 (reserved) B E b e  (first/last segment, frame)
      octet 1: segment type (0 control, 1 command, 2 header, 3 body)
      octets 2-3: frame size including this header, uint16
      octet 4: reserved (0); octet 5: 0000 + track (0 controls, 1 commands)
      octets 6-7: channel, uint16; octets 8-11: reserved (0)

* control segment: class-code, control-code, packing flags, fields;
  command segment: class-code, command-code, session header (size=1, flags: bit 0 = sync),
  packing flags, fields;
* packing flags: ``pack`` octets, field *n* is bit *n % 8* of octet *n // 8* (the order
  qpid-python and qpidd use, see the captures), bit fields live only in the flags;
* header segment: each struct as size (uint32), class-code, struct-code, flags, fields;
* map: size (uint32, octets after it), count (uint32), entries ``str8 key, type, value``;
  list: size, count, items ``type, value``; array: size, element type, count, values;
  struct32: size, class-code, struct-code, flags, fields.
"""

from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

import pytest

from amqp010 import codec, spec
from amqp010 import types as T
from amqp010.errors import FramingError
from amqp010.framing import (
    PROTOCOL_HEADER,
    Assembler,
    FrameDecoder,
    ProtocolHeader,
    encode_assembly,
    frame_header,
)


def h(text: str) -> bytes:
    """Hex with spaces allowed, for readable golden values."""
    return bytes.fromhex(text.replace(" ", ""))


def decode_all(data: bytes, *, header: bool = False) -> list[Any]:
    """Every assembly in ``data`` (frames, optionally preceded by the protocol header)."""
    decoder = FrameDecoder(expect_protocol_header=header)
    assembler = Assembler()
    decoder.feed(data)
    out: list[Any] = []
    for f in decoder.frames():
        if isinstance(f, ProtocolHeader):
            out.append(f)
        else:
            a = assembler.add(f)
            if a is not None:
                out.append(a)
    assert assembler.pending == 0
    return out


# --- sequence-set: the spec's own example ------------------------------------------------

SPEC_SEQUENCE_SET = h("0018000000000000000200000005000000060000000F0000000F")


def test_spec_sequence_set_example_encodes() -> None:
    out = bytearray()
    T.enc_sequence_set(out, T.SequenceSet([(0, 2), (5, 6), (15, 15)]))
    assert bytes(out) == SPEC_SEQUENCE_SET


def test_spec_sequence_set_example_decodes() -> None:
    value, end = T.dec_sequence_set(SPEC_SEQUENCE_SET, 0)
    assert end == len(SPEC_SEQUENCE_SET)
    assert value.ranges == [(0, 2), (5, 6), (15, 15)]
    assert list(value) == [0, 1, 2, 5, 6, 15]


def test_spec_sequence_set_example_from_its_words() -> None:
    """"a set containing words 0, 1, 2, 5, 6, and 15" is [(0, 2), (5, 6), (15, 15)]."""
    assert T.SequenceSet.of(0, 1, 2, 5, 6, 15).ranges == [(0, 2), (5, 6), (15, 15)]


def test_spec_sequence_set_example_in_session_completed() -> None:
    payload = h("02 0a") + h("01 00") + SPEC_SEQUENCE_SET
    control = codec.decode_control(payload)
    assert control == spec.SessionCompleted(commands=T.SequenceSet([(0, 2), (5, 6), (15, 15)]))
    assert codec.encode_control(control) == payload


# --- protocol header --------------------------------------------------------------------------


def test_protocol_header_bytes() -> None:
    assert b"AMQP" + bytes([1, 1, 0, 10]) == PROTOCOL_HEADER


def test_protocol_header_is_decoded_first() -> None:
    (ph,) = decode_all(h("414d5150 01 01 00 0a"), header=True)
    assert ph == ProtocolHeader(b"AMQP\x01\x01\x00\x0a")
    assert ph.supported and ph.version == "AMQP 1.1 0-10"


def test_other_amqp_versions_are_reported_not_rejected() -> None:
    (ph,) = decode_all(b"AMQP\x00\x01\x00\x00", header=True)  # AMQP 1.0
    assert not ph.supported
    assert ph.version == "AMQP 0.1 0-0"


@pytest.mark.parametrize("junk", [b"HTTP/1.1", b"GET / HT", b"AMQX\x01\x01\x00\x0a",
                                  b"\x16\x03\x01\x02\x00\x01\x00\x01"])  # TLS client hello
def test_non_amqp_stream_is_a_framing_error_at_offset_0(junk: bytes) -> None:
    decoder = FrameDecoder()
    decoder.feed(junk)
    with pytest.raises(FramingError) as info:
        list(decoder.frames())
    assert info.value.offset == 0


# --- frame headers ----------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "golden"), [
    # a whole control on channel 0: B E b e, control, 24 octets, track 0
    ((0x0F, 0, 0, 0, 12), "0f 00 0018 00 00 0000 00000000"),
    # a middle body frame of channel 0x1234: E only, body, 112 octets, track 1
    ((0x04, 3, 1, 0x1234, 100), "04 03 0070 00 01 1234 00000000"),
    # the largest frame
    ((0x03, 2, 1, 0xFFFF, 0xFFFF - 12), "03 02 ffff 00 01 ffff 00000000"),
])
def test_frame_header_layout(args: tuple[int, ...], golden: str) -> None:
    assert frame_header(*args) == h(golden)


# --- a control: connection.tune ---------------------------------------------------------------

TUNE_FRAME = h("0f 00 0018 00 00 0000 00000000"  # whole control, 24 octets, channel 0
               "01 05"                            # connection.tune
               "0f 00"                            # fields 0-3 present
               "fffe ffff 0000 0078")             # channel-max, max-frame-size, hb-min, hb-max
TUNE = spec.ConnectionTune(channel_max=65534, max_frame_size=65535, heartbeat_min=0,
                           heartbeat_max=120)


def test_connection_tune_encodes_to_golden_frame() -> None:
    assert encode_assembly(0, TUNE) == TUNE_FRAME


def test_connection_tune_golden_frame_decodes() -> None:
    (a,) = decode_all(TUNE_FRAME)
    assert a.op == TUNE
    assert (a.channel, a.track, a.segments, a.header, a.body) == (0, 0, 1, (), b"")


def test_control_with_some_fields_absent() -> None:
    payload = h("01 05  08 00  0078")  # only heartbeat-max (field 3)
    tune = codec.decode_control(payload)
    assert tune == spec.ConnectionTune(heartbeat_max=120)
    assert tune.channel_max is None and tune.max_frame_size is None
    assert codec.encode_control(tune) == payload


def test_control_without_fields_has_zero_flags() -> None:
    assert codec.encode_control(spec.ConnectionCloseOk()) == h("01 0c 0000")
    assert codec.encode_control(spec.ConnectionHeartbeat()) == h("01 0a 0000")


def test_bit_fields_live_only_in_the_flags() -> None:
    # session.attach: name (vbin16), force (bit)
    payload = h("02 01  03 00  0002 6162")
    assert codec.decode_control(payload) == spec.SessionAttach(name=b"ab", force=True)
    assert codec.encode_control(spec.SessionAttach(name=b"ab", force=True)) == payload
    assert codec.encode_control(spec.SessionAttach(name=b"ab")) == h("02 01 01 00 0002 6162")


# --- commands and the session header ----------------------------------------------------------


@pytest.mark.parametrize(("sync", "header"), [(True, "01 01"), (False, "01 00")])
def test_command_with_session_header(sync: bool, header: str) -> None:
    accept = spec.MessageAccept(transfers=T.SequenceSet([(1, 1)]), sync=sync)
    payload = h("04 02") + h(header) + h("01 00  0008 00000001 00000001")
    frame = h("0f 01 001c 00 01 0001 00000000") + payload
    assert codec.encode_command(accept) == payload
    assert encode_assembly(1, accept) == frame
    (a,) = decode_all(frame)
    assert a.op == accept and a.op.sync is sync
    assert (a.channel, a.track) == (1, 1)


def test_command_without_fields() -> None:
    payload = h("03 01  01 01  0000")  # execution.sync, sync flag set, no fields
    assert codec.encode_command(spec.ExecutionSync(sync=True)) == payload
    assert codec.decode_command(payload) == spec.ExecutionSync(sync=True)


def test_command_with_a_struct_field_of_its_own_size() -> None:
    # dtx.start: xid (dtx.xid, code 0x0604, 4-octet size), join, resume
    payload = h("06 02  01 00  0100"
                "0000000c 0604 0700 00000001 01 67 01 62")
    start = spec.DtxStart(xid=spec.Xid(format=1, global_id=b"g", branch_id=b"b"))
    assert codec.encode_command(start) == payload
    assert codec.decode_command(payload) == start


def test_execution_result_with_struct32_value() -> None:
    payload = h("03 02  01 00  0300  00000005"
                "0000000a 0801 4100 01 71 00000003")  # queue-query-result: queue, message-count
    result = spec.ExecutionResult(command_id=5,
                                  value=spec.QueueQueryResult(queue="q", message_count=3))
    assert codec.encode_command(result) == payload
    assert codec.decode_command(payload) == result


# --- header segments -------------------------------------------------------------------------

DELIVERY_PROPS = h("00000010 0401"      # size 16, message.delivery-properties
                   "1802"               # priority (3), delivery-mode (4), routing-key (9)
                   "04 01 09 6361702e6261736963")
MESSAGE_PROPS = h("0000001b 0403"       # size 27, message.message-properties
                  "0800"                # reply-to (3)
                  "0015 0300 0a 616d712e646972656374 07 7265706c696573")  # size 21, both


def test_header_segment_with_delivery_properties() -> None:
    dp = spec.DeliveryProperties(priority=4, delivery_mode=1, routing_key="cap.basic")
    assert codec.encode_header([dp]) == DELIVERY_PROPS
    assert codec.decode_header(DELIVERY_PROPS) == (dp,)
    assert dp.encode() == DELIVERY_PROPS


def test_header_segment_with_delivery_bits_and_uint64() -> None:
    golden = h("0000000c 0401  2400  000000000000ea60")  # redelivered (2), ttl (5) = 60000
    dp = spec.DeliveryProperties(redelivered=True, ttl=60000)
    assert codec.encode_header([dp]) == golden
    assert codec.decode_header(golden) == (dp,)


def test_header_segment_with_nested_reply_to() -> None:
    mp = spec.MessageProperties(reply_to=spec.ReplyTo(exchange="amq.direct", routing_key="replies"))
    assert codec.encode_header([mp]) == MESSAGE_PROPS
    assert codec.decode_header(MESSAGE_PROPS) == (mp,)
    both = DELIVERY_PROPS + MESSAGE_PROPS
    assert codec.decode_header(both)[1] == mp
    assert codec.encode_header(codec.decode_header(MESSAGE_PROPS + DELIVERY_PROPS)) == (
        MESSAGE_PROPS + DELIVERY_PROPS), "struct order is kept"


def test_message_transfer_assembly_golden_frames() -> None:
    transfer = spec.MessageTransfer(destination="", accept_mode=0, acquire_mode=0)
    golden = (h("0b 01 0015 00 01 0001 00000000  04 01 01 00 0700 00 00 00")  # B b e command
              + h("03 02 0020 00 01 0001 00000000") + DELIVERY_PROPS           # b e header
              + h("07 03 000e 00 01 0001 00000000  6869"))                      # E b e body
    dp = codec.decode_header(DELIVERY_PROPS)[0]
    assert encode_assembly(1, transfer, (dp,), b"hi") == golden
    (a,) = decode_all(golden)
    assert (a.op, a.header, a.body, a.segments) == (transfer, (dp,), b"hi", 3)
    assert a.header_struct(spec.DeliveryProperties) == dp
    assert a.header_struct(spec.MessageProperties) is None
    assert a.encode() == golden


def test_message_transfer_body_split_at_max_frame_size() -> None:
    transfer = spec.MessageTransfer(accept_mode=1, acquire_mode=0)
    body = bytes(range(10))
    frames = encode_assembly(2, transfer, (), body, max_frame_size=20)  # 8 payload octets each
    golden = (h("0b 01 0014 00 01 0002 00000000  04 01 01 00 0600 01 00")  # exactly fills it
              + h("03 02 000c 00 01 0002 00000000")                      # empty header segment
              + h("06 03 0014 00 01 0002 00000000 0001020304050607")     # E b
              + h("05 03 000e 00 01 0002 00000000 0809"))                # E e
    assert frames == golden
    (a,) = decode_all(golden)
    assert (a.op, a.header, a.body, a.segments) == (transfer, (), body, 3)


def test_command_segment_split_across_frames() -> None:
    transfer = spec.MessageTransfer(accept_mode=1, acquire_mode=0)
    golden = (h("0a 01 0010 00 01 0002 00000000  04 01 01 00")   # B b
              + h("09 01 0010 00 01 0002 00000000  0600 01 00")  # B e
              + h("07 02 000c 00 01 0002 00000000"))             # E b e: empty header segment
    assert encode_assembly(2, transfer, (), max_frame_size=16) == golden
    (a,) = decode_all(golden)
    assert (a.op, a.header, a.body, a.segments) == (transfer, (), b"", 2)


# --- typed values: one entry per type code -------------------------------------------------------

# (type code, value, hand-encoded value octets)
TYPED = [
    (0x00, T.Bin8(b"\xab"), "ab"),
    (0x01, T.Int8(-2), "fe"),
    (0x02, T.UInt8(200), "c8"),
    (0x04, T.Char("\u20ac"), "a4"),  # euro sign is 0xA4 in ISO-8859-15
    (0x08, True, "01"),
    (0x08, False, "00"),
    (0x10, T.Bin16(b"\x01\x02"), "0102"),
    (0x11, T.Int16(-2), "fffe"),
    (0x12, T.UInt16(0xBEEF), "beef"),
    (0x20, T.Bin32(b"\x01\x02\x03\x04"), "01020304"),
    (0x21, T.Int32(-2), "fffffffe"),
    (0x22, T.UInt32(0xDEADBEEF), "deadbeef"),
    (0x23, T.Float32(1.5), "3fc00000"),
    (0x27, T.CharUTF32("\U0001F600"), "0001f600"),
    (0x30, T.Bin64(bytes(range(8))), "0001020304050607"),
    (0x31, -2, "fffffffffffffffe"),
    (0x31, T.Int64(7), "0000000000000007"),
    (0x32, T.UInt64(2**64 - 1), "ffffffffffffffff"),
    (0x32, 2**63, "8000000000000000"),  # a plain int too big for int64
    (0x33, 1.5, "3ff8000000000000"),
    (0x33, T.Double(-0.0), "8000000000000000"),
    (0x38, T.Datetime(1_700_000_000), "000000006553f100"),
    (0x40, T.Bin128(bytes(range(16))), bytes(range(16)).hex()),
    (0x48, uuid.UUID("a3eea816-3595-45cf-8be1-b9a11fec943f"), "a3eea816359545cf8be1b9a11fec943f"),
    (0x50, T.Bin256(bytes(range(32))), bytes(range(32)).hex()),
    (0x60, T.Bin512(bytes(range(64))), bytes(range(64)).hex()),
    (0x70, T.Bin1024(bytes(range(128))), bytes(range(128)).hex()),
    (0x80, T.VBin8(b"\x00\xff"), "02 00ff"),
    (0x84, T.Str8Latin("\u20ac"), "01 a4"),
    (0x85, T.Str8("\u00e9"), "02 c3a9"),
    (0x86, T.Str8UTF16("\u00e9"), "02 00e9"),
    (0x90, b"\x00\xff", "0002 00ff"),
    (0x90, T.VBin16(b"\x01"), "0001 01"),
    (0x94, T.Str16Latin("\u20ac"), "0001 a4"),
    (0x95, "\u00e9", "0002 c3a9"),
    (0x95, T.Str16("x"), "0001 78"),
    (0x96, T.Str16UTF16("\U0001F600"), "0004 d83dde00"),  # a surrogate pair
    (0xA0, T.VBin32(b"\x00\xff"), "00000002 00ff"),
    (0xA8, {"a": 1}, "0000000f 00000001 01 61 31 0000000000000001"),
    (0xA9, [True], "00000006 00000001 08 01"),
    (0xAA, T.Array(0x95, ["a", "b"]), "0000000b 95 00000002 0001 61 0001 62"),
    (0xAB, spec.DeliveryProperties(routing_key="k"), "00000006 0401 0002 01 6b"),
    (0xC0, T.Bin40(bytes(range(5))), "0001020304"),
    (0xC8, T.Dec32(Decimal("-1.25")), "02 ffffff83"),
    (0xD0, T.Bin72(bytes(range(9))), "000102030405060708"),
    (0xD8, T.Dec64(Decimal("1.5")), "01 000000000000000f"),
    (0xF0, None, ""),
]
TYPED_IDS = [f"{code:#04x}-{type(v).__name__}" for code, v, _ in TYPED]


# what each default type code decodes to (other codes decode to their wrapper class)
DECODED_AS = {0x08: bool, 0x31: int, 0x32: T.UInt64, 0x33: float, 0x48: uuid.UUID, 0x90: bytes,
              0x95: str, 0xA8: dict, 0xA9: list, 0xAA: T.Array, 0xF0: type(None)}


def expected_type(code: int, value: Any) -> type:
    return DECODED_AS.get(code, type(value))


def map_of(entry_code: int, value_hex: str) -> bytes:
    entry = b"\x01k" + bytes([entry_code]) + h(value_hex)
    return (len(entry) + 4).to_bytes(4, "big") + (1).to_bytes(4, "big") + entry


def list_of(entry_code: int, value_hex: str) -> bytes:
    item = bytes([entry_code]) + h(value_hex)
    return (len(item) + 4).to_bytes(4, "big") + (1).to_bytes(4, "big") + item


def test_every_spec_type_code_is_covered() -> None:
    from .captures import xml_type_widths

    covered = {code for code, _, _ in TYPED} | {0xF1}  # bit: see test_bit_entries_decode_true
    assert covered == set(xml_type_widths())


@pytest.mark.parametrize(("code", "value", "value_hex"), TYPED, ids=TYPED_IDS)
def test_typed_value_encodes_to_golden(code: int, value: Any, value_hex: str) -> None:
    out = bytearray()
    T.encode_map(out, {"k": value})
    assert bytes(out) == map_of(code, value_hex), "as a map entry"
    out = bytearray()
    T.encode_list(out, [value])
    assert bytes(out) == list_of(code, value_hex), "as a list item"


@pytest.mark.parametrize(("value", "code"), [
    (2**63, 0x32),                 # a plain int that only fits uint64
    (b"\x00" * 70_000, 0xA0),      # plain bytes too long for vbin16
    (-(2**63), 0x31),
    (b"\x00" * 65_535, 0x90),
], ids=["int-2**63", "bytes-70000", "int--2**63", "bytes-65535"])
def test_type_code_of_is_the_code_the_value_encodes_with(value: Any, code: int) -> None:
    """type_code_of's contract: "the wire type code value encodes as inside a map, list
    or array" -- so an array of such values must encode too."""
    out = bytearray()
    T.encode_typed(out, value)
    assert out[0] == code
    assert T.type_code_of(value) == code
    out = bytearray()
    T.encode_array(out, [value])
    assert out[4] == code


@pytest.mark.parametrize(("code", "value", "value_hex"), TYPED, ids=TYPED_IDS)
def test_typed_value_decodes_from_golden(code: int, value: Any, value_hex: str) -> None:
    """Decoding gives the value back, as a type that re-encodes with the same type code."""
    decoded, end = T.decode_map(map_of(code, value_hex))
    assert end == len(map_of(code, value_hex))
    assert decoded == {"k": value}
    assert type(decoded["k"]) is expected_type(code, value), (
        f"decoded as {type(decoded['k']).__name__}, expected {expected_type(code, value).__name__}")
    assert T.type_code_of(decoded["k"]) == code, (
        f"{decoded['k']!r} ({type(decoded['k']).__name__}) would re-encode as "
        f"{T.type_code_of(decoded['k']):#04x}")
    got, end = T.decode_value(0xA9, list_of(code, value_hex))
    assert got == [value] and T.type_code_of(got[0]) == code


@pytest.mark.parametrize(("code", "value", "value_hex"), TYPED, ids=TYPED_IDS)
def test_typed_value_as_array_element(code: int, value: Any, value_hex: str) -> None:
    golden = ((5 + 2 * len(h(value_hex))).to_bytes(4, "big") + bytes([code])
              + (2).to_bytes(4, "big") + h(value_hex) * 2)
    out = bytearray()
    T.encode_array(out, T.Array(code, [value, value]))
    assert bytes(out) == golden
    got, end = T.decode_value(0xAA, golden)
    assert end == len(golden)
    assert got == T.Array(code, [value, value])


def test_bit_entries_decode_true() -> None:
    """bit (0xf1) has no octets: a map entry or array element of type bit is a set flag."""
    assert T.decode_map(map_of(0xF1, ""))[0] == {"k": True}
    array = h("00000005 f1 00000003")
    got, end = T.decode_value(0xAA, array)
    assert (got, end) == (T.Array(0xF1, [True, True, True]), len(array))
    out = bytearray()
    T.encode_array(out, got)
    assert bytes(out) == array


def test_list_as_qpid_sends_it() -> None:
    golden = h("0000001c 00000003  31 0000000000000001  95 0003 74776f  33 4008000000000000")
    out = bytearray()
    T.encode_list(out, [1, "two", 3.0])
    assert bytes(out) == golden
    assert T.decode_value(0xA9, golden) == ([1, "two", 3.0], len(golden))


def test_str16_array_as_qpid_sends_it() -> None:
    golden = h("00000017 95 00000002  0009 414e4f4e594d4f5553  0005 504c41494e")
    out = bytearray()
    T.encode_array(out, ["ANONYMOUS", "PLAIN"])  # a plain list of str: str16 elements
    assert bytes(out) == golden
    assert T.decode_value(0xAA, golden) == (T.Array(0x95, ["ANONYMOUS", "PLAIN"]), len(golden))


def test_empty_containers() -> None:
    cases = [(0xA8, {}, "00000004 00000000"), (0xA9, [], "00000004 00000000"),
             (0xAA, T.Array(0x31, []), "00000005 31 00000000")]
    for code, value, golden in cases:
        out = bytearray()
        T.encode_typed(out, value)
        assert bytes(out) == bytes([code]) + h(golden)
        assert T.decode_value(code, h(golden)) == (value, len(h(golden)))


def test_struct32_with_map_field() -> None:
    golden = h("00000017 0403"  # size 23, message.message-properties
               "0001"           # application-headers is field 8: bit 0 of the second octet
               "0000000f 00000001 01 61 31 0000000000000001")
    value = spec.MessageProperties(application_headers={"a": 1})
    out = bytearray()
    T.encode_struct32(out, value)
    assert bytes(out) == golden
    assert T.decode_value(0xAB, golden) == (value, len(golden))


def test_large_plain_bytes_become_vbin32() -> None:
    data = b"\x5a" * 70_000
    out = bytearray()
    T.encode_typed(out, data)
    assert bytes(out[:5]) == h("a0 00011170")
    value, end = T.decode_value(0xA0, bytes(out), 1)
    assert value == data and end == len(out)
    assert T.type_code_of(value) == 0xA0
