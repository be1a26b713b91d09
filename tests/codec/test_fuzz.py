"""Hostile input: the decoder either succeeds or raises a DecodeError/FramingError with an
int offset and a reason -- never IndexError, struct.error, ValueError, UnicodeDecodeError,
RecursionError or MemoryError -- and does so in bounded time and memory."""

from __future__ import annotations

import random
import struct
import time
import tracemalloc
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp010 import codec, spec
from amqp010 import types as T
from amqp010.errors import CodecError, DecodeError, FramingError
from amqp010.framing import (
    PROTOCOL_HEADER,
    Assembler,
    Assembly,
    FrameDecoder,
    ProtocolHeader,
    encode_assembly,
    encode_segments,
    frame_header,
)

from .captures import DIRECTIONS, SCENARIOS, decoded, stream
from .strategies import ALL_CLASSES, CODED_STRUCTS, COMMANDS, CONTROLS, examples

pytestmark = pytest.mark.timeout(60)


# --- harness -----------------------------------------------------------------------------------


def check_error(exc: BaseException, limit: int | None = None) -> None:
    assert isinstance(exc, DecodeError), f"{type(exc).__name__} is not a DecodeError"
    assert type(exc.offset) is int and exc.offset >= 0, f"bad offset {exc.offset!r}"
    if limit is not None:
        assert exc.offset <= limit, f"offset {exc.offset} is beyond the input ({limit} octets)"
    assert isinstance(exc.reason, str) and exc.reason, "an error needs a reason"


def run(data: bytes, pieces: list[bytes] | None = None, *, header: bool = True,
        max_frame_size: int = 0xFFFF,
        max_assembly_size: int = 1 << 30) -> tuple[list[Assembly], DecodeError | None]:
    """Decode ``data`` (fed as ``pieces`` if given); return assemblies and the error, if any.

    Any exception other than a CodecError escapes and fails the test.
    """
    decoder = FrameDecoder(max_frame_size, expect_protocol_header=header)
    assembler = Assembler(max_assembly_size)
    out: list[Assembly] = []
    try:
        for piece in pieces if pieces is not None else [data]:
            decoder.feed(piece)
            for item in decoder.frames():
                if isinstance(item, ProtocolHeader):
                    continue
                a = assembler.add(item)
                if a is not None:
                    out.append(a)
    except CodecError as exc:
        check_error(exc, len(data))
        return out, exc  # type: ignore[return-value]
    return out, None


def outcome(result: tuple[list[Assembly], DecodeError | None]) -> Any:
    assemblies, err = result
    return assemblies, None if err is None else (type(err), err.offset, err.reason)


def expect_decode_error(func: Any, *args: Any) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        func(*args)
    check_error(info.value)
    return info.value


def frame(payload: bytes, *, flags: int = 0x0F, seg: int = 1, track: int = 1,
          channel: int = 1) -> bytes:
    return frame_header(flags, seg, track, channel, len(payload)) + payload


# --- random input ----------------------------------------------------------------------------------


@examples(300)
@given(data=st.binary(max_size=3000), header=st.booleans())
def test_random_bytes(data: bytes, header: bool) -> None:
    run((PROTOCOL_HEADER if header else b"") + data, header=header)


FRAME_FLAGS = st.integers(0, 15)


@st.composite
def plausible_frames(draw: st.DrawFn) -> bytes:
    """Frames with valid headers and payloads that start like real segments."""
    seg = draw(st.integers(0, 3))
    track = draw(st.integers(0, 1))
    if seg == 0:
        prefix = bytes(draw(st.sampled_from(sorted(spec.CONTROLS))))
    elif seg == 1:
        prefix = bytes(draw(st.sampled_from(sorted(spec.COMMANDS)))) + draw(
            st.sampled_from([b"\x01\x00", b"\x01\x01", b"", b"\x00", b"\x02\x00"]))
    elif seg == 2:
        code = draw(st.sampled_from(sorted(spec.STRUCTS_BY_CODE)))
        size = draw(st.integers(0, 40))
        prefix = struct.pack(">IH", size, code)
    else:
        prefix = b""
    payload = prefix + draw(st.binary(max_size=60))
    return frame(payload, flags=draw(FRAME_FLAGS), seg=seg, track=track,
                 channel=draw(st.integers(0, 2)))


@examples(500)
@given(frames=st.lists(plausible_frames(), max_size=8))
def test_random_frames(frames: list[bytes]) -> None:
    run(b"".join(frames), header=False)


@examples(800)
@given(op=st.sampled_from(CONTROLS + COMMANDS), tail=st.binary(max_size=80), sync=st.binary(
    max_size=2))
def test_random_control_and_command_payloads(op: Any, tail: bytes, sync: bytes) -> None:
    if op in CONTROLS:
        try:
            codec.decode_control(bytes((op.CLASS_CODE, op.OP_CODE)) + tail)
        except DecodeError as exc:
            check_error(exc)
    else:
        try:
            codec.decode_command(bytes((op.CLASS_CODE, op.OP_CODE)) + sync + tail)
        except DecodeError as exc:
            check_error(exc)


@examples(800)
@given(cls=st.sampled_from(ALL_CLASSES), data=st.binary(max_size=80), pos=st.integers(0, 3))
def test_random_struct_fields(cls: Any, data: bytes, pos: int) -> None:
    try:
        _value, end = cls.decode_fields(data, pos)
    except DecodeError as exc:
        check_error(exc)
    else:
        assert pos <= end <= len(data)


@examples(500)
@given(code=st.sampled_from(sorted(spec.STRUCTS_BY_CODE)), size=st.integers(0, 80),
       data=st.binary(max_size=80), more=st.binary(max_size=10))
def test_random_header_segments(code: int, size: int, data: bytes, more: bytes) -> None:
    try:
        codec.decode_header(struct.pack(">IH", size, code) + data + more)
    except DecodeError as exc:
        check_error(exc)


@examples(800)
@given(code=st.sampled_from(sorted(T.DECODERS)), data=st.binary(max_size=120))
def test_random_typed_values(code: int, data: bytes) -> None:
    try:
        _value, end = T.decode_value(code, data)
    except DecodeError as exc:
        check_error(exc, len(data))
    else:
        assert end <= len(data)


# --- mutated captures ------------------------------------------------------------------------------


def mutate(data: bytes, rng: random.Random) -> bytes:
    buf = bytearray(data)
    kind = rng.choice(["flip", "flip", "truncate", "size", "insert", "delete", "overwrite32"])
    pos = rng.randrange(8, len(buf))
    if kind == "flip":
        for _ in range(rng.randint(1, 3)):
            p = rng.randrange(8, len(buf))
            buf[p] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        del buf[pos:]
    elif kind == "size":  # corrupt the size field of a random frame
        frames = decoded_frame_offsets(data)
        f = rng.choice(frames)
        buf[f + 2:f + 4] = rng.randrange(0x10000).to_bytes(2, "big")
    elif kind == "insert":
        buf[pos:pos] = rng.randbytes(rng.randint(1, 8))
    elif kind == "delete":
        del buf[pos:pos + rng.randint(1, 8)]
    else:  # a huge or random 32-bit value where a size may be
        buf[pos:pos + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x7f\xff\xff\xf0",
                                       rng.randbytes(4)])
    return bytes(buf)


_frame_offsets: dict[int, list[int]] = {}


def decoded_frame_offsets(data: bytes) -> list[int]:
    key = hash(data)
    if key not in _frame_offsets:
        decoder = FrameDecoder()
        decoder.feed(data)
        _frame_offsets[key] = [f.offset for f in decoder.frames()
                               if not isinstance(f, ProtocolHeader)]
    return _frame_offsets[key]


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_mutated_captures(scenario: str, direction: str) -> None:
    data = stream(scenario, direction)
    rng = random.Random(f"mutate/{scenario}/{direction}")
    rounds = 60 if scenario == "large_message" else 250
    errors = 0
    for _ in range(rounds):
        bad = mutate(data, rng)
        whole = run(bad)
        errors += whole[1] is not None
        cut = rng.randrange(1, len(bad))
        split = run(bad, [bad[:cut], bad[cut:]])
        assert outcome(split) == outcome(whole), "the outcome does not depend on chunking"
    # most mutations of large_message land in its body, where any octet is valid
    assert errors > rounds // 4, f"only {errors} of {rounds} mutations were detected"


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("scenario", ["session_basic", "reject_release"])
def test_every_strict_prefix_of_every_captured_segment_is_an_error(scenario: str,
                                                                   direction: str) -> None:
    decode = {0: codec.decode_control, 1: codec.decode_command, 2: codec.decode_header}
    for f in decoded(scenario, direction).frames:
        if f.segment_type == 3 or not (f.first_frame and f.last_frame):
            continue
        boundaries = {0}  # a header segment may end after any of its structs
        while f.segment_type == 2 and max(boundaries) < len(f.payload):
            at = max(boundaries)
            boundaries.add(at + 4 + int.from_bytes(f.payload[at:at + 4], "big"))
        for n in range(len(f.payload)):
            if f.segment_type == 2 and n in boundaries:
                assert len(decode[2](f.payload[:n])) == sorted(boundaries).index(n)
                continue
            expect_decode_error(decode[f.segment_type], f.payload[:n])


# --- nesting, sizes and amplification ---------------------------------------------------------------


def nested_lists_and_maps(depth: int) -> bytes:
    """A list holding a map holding a list ... ``depth`` levels, innermost a void."""
    item = b"\xf0"
    for level in range(depth):
        if level % 2:
            body = struct.pack(">I", 1) + b"\x01k" + item
            item = b"\xa8" + struct.pack(">I", len(body)) + body
        else:
            body = struct.pack(">I", 1) + item
            item = b"\xa9" + struct.pack(">I", len(body)) + body
    return item  # type code + value


@pytest.mark.timeout(10)
def test_maps_in_lists_10000_deep_are_rejected() -> None:
    value = nested_lists_and_maps(10_000)
    err = expect_decode_error(T.decode_value, value[0], value, 1)
    assert "nested deeper" in err.reason
    assert err.offset < 32 * 20, "rejected at the nesting limit, not after walking it all"


@pytest.mark.timeout(10)
def test_deep_nesting_through_a_whole_transfer() -> None:
    value = nested_lists_and_maps(10_000)
    headers = struct.pack(">I", len(value) + 6) + struct.pack(">I", 1) + b"\x01k" + value
    props = struct.pack(">IH", 2 + 2 + len(headers), 0x0403) + b"\x00\x01" + headers
    assert len(props) > 0xFFFF, "the header segment spans several frames"
    transfer = codec.encode_command(spec.MessageTransfer(accept_mode=0, acquire_mode=0))
    data = encode_segments(1, 1, [(1, transfer), (2, props), (3, b"")])
    _, err = run(data, header=False)
    assert isinstance(err, DecodeError) and "nested deeper" in err.reason


@pytest.mark.timeout(10)
@pytest.mark.parametrize("code", [0xA8, 0xA9, 0xAA, 0xAB])
def test_deep_nesting_of_each_container(code: int) -> None:
    item = b"\xf0"
    for _ in range(5000):
        if code == 0xA8:
            body = struct.pack(">I", 1) + b"\x01k" + item
        elif code == 0xA9:
            body = struct.pack(">I", 1) + item
        elif code == 0xAA:  # an array of one array of ...
            body = b"\xaa" + struct.pack(">I", 1) + item[1:]
        else:  # struct32: message-properties whose headers map holds the next level
            inner = struct.pack(">I", 1) + b"\x01k" + item
            headers = struct.pack(">I", len(inner)) + inner
            body = b"\x04\x03" + b"\x00\x01" + headers
        item = bytes([code]) + struct.pack(">I", len(body)) + body
    err = expect_decode_error(T.decode_value, code, item, 1)
    assert "nested" in err.reason


HUGE = [
    ("map size", 0xA8, struct.pack(">II", 0xFFFFFFFF, 1) + b"\x01k\xf0"),
    ("map count", 0xA8, struct.pack(">II", 4, 0xFFFFFFFF)),
    ("list size", 0xA9, struct.pack(">II", 0xFFFFFFFF, 1) + b"\xf0"),
    ("list count", 0xA9, struct.pack(">II", 4, 0xFFFFFFFF)),
    ("array size", 0xAA, struct.pack(">IBI", 0xFFFFFFFF, 0x31, 1)),
    ("array count", 0xAA, struct.pack(">IBI", 5, 0x31, 0xFFFFFFFF)),
    ("void array count", 0xAA, struct.pack(">IBI", 5, 0xF0, 0xFFFFFFFF)),
    ("map array count", 0xAA, struct.pack(">IBI", 5, 0xA8, 0xFFFFFFFF)),
    ("vbin32 size", 0xA0, struct.pack(">I", 0xFFFFFFFF) + b"x"),
    ("struct32 size", 0xAB, struct.pack(">IH", 0xFFFFFFFF, 0x0401)),
    ("str16 size", 0x95, struct.pack(">H", 0xFFFF) + b"x"),
]


@pytest.mark.timeout(10)
@pytest.mark.parametrize(("what", "code", "value"), HUGE, ids=[h[0] for h in HUGE])
def test_huge_declared_sizes_are_errors_not_allocations(what: str, code: int,
                                                        value: bytes) -> None:
    tracemalloc.start()
    try:
        expect_decode_error(T.decode_value, code, value)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"decoding a bogus {what} allocated {peak} octets"


MALFORMED = [
    ("sequence-set size not a multiple of 8", T.dec_sequence_set, b"\x00\x07" + b"\x00" * 7),
    ("byte-ranges size not a multiple of 16", T.dec_byte_ranges, b"\x00\x0f" + b"\x00" * 15),
    ("array size below its header", lambda b, p: T.decode_value(0xAA, b, p),
     struct.pack(">IBI", 4, 0x31, 0)),
    ("fixed-width array size mismatch", lambda b, p: T.decode_value(0xAA, b, p),
     struct.pack(">IBI", 9, 0x31, 1) + b"\x00" * 8),
    ("map size larger than its entries", lambda b, p: T.decode_value(0xA8, b, p),
     struct.pack(">II", 8, 0) + b"\x00\x00\x00\x00"),
    ("list entries overrun the list", lambda b, p: T.decode_value(0xA9, b, p),
     struct.pack(">II", 5, 1) + b"\x31" + b"\x00" * 8),
    ("struct32 too short for a code", lambda b, p: T.decode_value(0xAB, b, p),
     struct.pack(">I", 1) + b"\x04"),
    ("struct32 with octets after its fields", lambda b, p: T.decode_value(0xAB, b, p),
     struct.pack(">IH", 5, 0x0401) + b"\x00\x00\x00"),
    ("reply-to size overruns message-properties", spec.MessageProperties.decode_fields,
     b"\x08\x00" + b"\x00\x20\x00\x00"),
]


@pytest.mark.parametrize(("what", "decode", "data"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_sizes(what: str, decode: Any, data: bytes) -> None:
    expect_decode_error(decode, data, 0)


def test_map_claiming_4_gib_in_a_connection_start() -> None:
    payload = b"\x01\x01" + b"\x01\x00" + struct.pack(">II", 0xFFFFFFFF, 1) + b"\x01k\xf0"
    _, err = run(frame(payload, seg=0, track=0, channel=0), header=False)
    assert err is not None and err.offset == 12 + 4, "the map's size field is at offset 4"


@pytest.mark.timeout(30)
def test_void_array_amplification_is_bounded() -> None:
    """An array of void (or bit) elements costs 9 octets for up to 65535 elements; nesting
    such arrays in an array must not multiply that into millions of decoded objects."""
    inner = struct.pack(">IBI", 5, 0xF0, 0xFFFF)
    outer_body = b"\xaa" + struct.pack(">I", 100) + inner * 100
    entry = b"\x01a\xaa" + struct.pack(">I", len(outer_body)) + outer_body
    wire = struct.pack(">II", len(entry) + 4, 1) + entry
    assert len(wire) < 1000
    start = time.perf_counter()
    try:
        value, _ = T.decode_map(wire)
    except DecodeError:
        return
    elements = sum(len(a) for a in value["a"])
    assert elements <= 0xFFFF + len(wire), (
        f"{len(wire)} input octets decoded into {elements} elements "
        f"in {time.perf_counter() - start:.2f}s; a 64 KiB frame of these would be "
        f"~{elements * 65535 // len(wire):,} elements")


# --- invalid text --------------------------------------------------------------------------------------


def assert_offset_in(err: DecodeError, first: int, last: int, what: str) -> None:
    assert first <= err.offset <= last, (
        f"{what}: error at offset {err.offset}, the bad field spans {first}..{last} "
        f"(reason: {err.reason})")


def test_invalid_utf8_in_str8_field() -> None:
    payload = bytearray(codec.encode_header([spec.DeliveryProperties(exchange="ex",
                                                                     routing_key="key")]))
    field = payload.index(b"\x03key")
    payload[field + 2] = 0xFF
    err = expect_decode_error(codec.decode_header, bytes(payload))
    assert_offset_in(err, field, field + 2, "routing-key")


def test_invalid_utf8_in_str16_field() -> None:
    cmd = spec.ExecutionException(error_code=404, description="no such queue")
    payload = bytearray(codec.encode_command(cmd))
    field = payload.index(b"\x00\x0dno such")
    payload[field + 5] = 0xC3  # a lead byte followed by ASCII
    err = expect_decode_error(codec.decode_command, bytes(payload))
    assert_offset_in(err, field, field + 5, "description")


@pytest.mark.parametrize("where", ["key", "str16 value", "str8 value", "list str16",
                                   "array str16"])
def test_invalid_utf8_in_typed_values(where: str) -> None:
    value: Any = {"good": 1, "keyXX": "valXX"}
    if where == "str8 value":
        value = {"good": 1, "keyXX": T.Str8("valXX")}
    elif where == "list str16":
        value = {"good": 1, "keyXX": ["valXX"]}
    elif where == "array str16":
        value = {"good": 1, "keyXX": T.Array(0x95, ["valXX"])}
    out = bytearray()
    T.encode_map(out, value)
    marker = b"keyXX" if where == "key" else b"valXX"
    bad = out.index(marker) + 3
    entry = out.index(b"\x05keyXX")
    out[bad] = 0x80  # a continuation byte with no lead byte
    err = expect_decode_error(T.decode_map, bytes(out))
    assert_offset_in(err, entry, bad, where)


@pytest.mark.parametrize(("code", "value"), [
    (0x86, b"\x03abc"),                 # odd number of UTF-16 octets
    (0x96, b"\x00\x02\xd8\x00"),        # a lone high surrogate
    (0x27, b"\x00\x11\x00\x00"),        # beyond U+10FFFF
    (0x27, b"\x00\x00\xd8\x00"),        # a surrogate is not a character
    (0x85, b"\x02\xc0\xaf"),            # overlong encoding of '/'
    (0x95, b"\x00\x03\xed\xa0\x80"),    # UTF-8-encoded surrogate
])
def test_invalid_unicode_in_typed_values(code: int, value: bytes) -> None:
    expect_decode_error(T.decode_value, code, value)


def test_invalid_utf8_offset_in_a_single_frame_header_segment() -> None:
    transfer = spec.MessageTransfer(destination="d", accept_mode=0, acquire_mode=0)
    data = bytearray(encode_assembly(1, transfer, (spec.DeliveryProperties(routing_key="QQQQ"),),
                                     b"body"))
    field = data.index(b"\x04QQQQ")
    data[field + 2] = 0xFF
    _, err = run(bytes(data), header=False)
    assert err is not None
    assert_offset_in(err, field, field + 2, "routing-key (stream offset)")


def test_invalid_utf8_offset_in_a_multi_frame_header_segment() -> None:
    """Error offsets are stream offsets even when the segment spans several frames."""
    transfer = spec.MessageTransfer(destination="d", accept_mode=0, acquire_mode=0)
    props = spec.MessageProperties(application_headers={"pad": "z" * 6000})
    data = bytearray(encode_assembly(1, transfer, (props, spec.DeliveryProperties(
        routing_key="QQQQ")), b"body", max_frame_size=4096))
    field = data.index(b"\x04QQQQ")
    data[field + 2] = 0xFF
    _, err = run(bytes(data), header=False, max_frame_size=4096)
    assert err is not None
    assert_offset_in(err, field, field + 2, "routing-key (stream offset, multi-frame segment)")


# --- unknown codes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("container", ["map", "list", "array"])
def test_unknown_type_code_is_reported_at_the_code(container: str) -> None:
    if container == "map":
        wire, at = struct.pack(">II", 7, 1) + b"\x01k\x03", 10
    elif container == "list":
        wire, at = struct.pack(">II", 5, 1) + b"\x03", 8
    else:
        wire, at = struct.pack(">IBI", 5, 0x03, 0), 4
    err = expect_decode_error(T.decode_value, {"map": 0xA8, "list": 0xA9, "array": 0xAA}[
        container], wire)
    assert err.offset == at
    assert "0x03" in err.reason


def test_unknown_struct_code_in_header_segment() -> None:
    header = spec.DeliveryProperties(routing_key="k").encode()
    bad = header + struct.pack(">IH", 2, 0x0499)
    err = expect_decode_error(codec.decode_header, bad)
    assert err.offset == len(header) + 4
    data = encode_segments(3, 1, [(1, codec.encode_command(spec.MessageTransfer())), (2, bad)])
    _, err = run(data, header=False)
    command_frame = 12 + len(codec.encode_command(spec.MessageTransfer()))
    assert err is not None and err.offset == command_frame + 12 + len(header) + 4


def test_unknown_struct32_code() -> None:
    expect_decode_error(T.decode_value, 0xAB, struct.pack(">IH", 2, 0x0999))


@pytest.mark.parametrize(("seg", "codes"), [
    (0, (0x01, 0x0D)), (0, (0x03, 0x01)), (0, (0xFF, 0x01)),
    (1, (0x04, 0x0D)), (1, (0x01, 0x01)), (1, (0x0B, 0x01)),
])
def test_unknown_control_or_command(seg: int, codes: tuple[int, int]) -> None:
    payload = bytes(codes) + b"\x01\x00\x00\x00"
    data = frame(payload, seg=seg, track=seg, channel=7)
    _, err = run(data, header=False)
    assert isinstance(err, DecodeError)
    assert err.offset == 12, "reported at the class code"
    assert "unknown" in err.reason


# --- frame header checks ------------------------------------------------------------------------------


def test_oversized_frame_is_rejected_as_soon_as_its_header_arrives() -> None:
    decoder = FrameDecoder(4096, expect_protocol_header=False)
    decoder.feed(frame_header(0x0F, 0, 0, 0, 4097 - 12))
    with pytest.raises(FramingError) as info:
        list(decoder.frames())
    assert info.value.offset == 2 and "4097" in info.value.reason
    assert decoder.buffered <= 12


def test_frame_of_exactly_max_frame_size_is_accepted() -> None:
    data = encode_assembly(0, spec.ConnectionHeartbeat())
    assert run(data, header=False, max_frame_size=len(data))[1] is None
    body = b"b" * (4096 - 12)
    transfer = encode_assembly(1, spec.MessageTransfer(), (), body, max_frame_size=4096)
    assert run(transfer, header=False, max_frame_size=4096)[1] is None


RESERVED = [  # (octet, bit mask) of every reserved frame-header bit
    (0, 0x80), (0, 0x40), (0, 0x20), (0, 0x10),
    *((4, 1 << b) for b in range(8)),
    *((5, 1 << b) for b in range(4, 8)),
    *((o, m) for o in range(8, 12) for m in (0x01, 0x80)),
]


@pytest.mark.parametrize(("octet", "mask"), RESERVED, ids=[f"{o}-{m:#04x}" for o, m in RESERVED])
def test_reserved_frame_header_bits(octet: int, mask: int) -> None:
    data = bytearray(encode_assembly(0, spec.ConnectionHeartbeat()))
    data[octet] |= mask
    _, err = run(bytes(data), header=False)
    assert isinstance(err, FramingError), f"octet {octet} bit {mask:#04x} was accepted"
    assert 0 <= err.offset < 12


@pytest.mark.parametrize(("octet", "value", "word"), [
    (1, 4, "segment"), (1, 0xFF, "segment"), (5, 2, "track"), (5, 0x0F, "track"),
    (3, 11, "size"), (3, 0, "size"),
])
def test_invalid_frame_header_values(octet: int, value: int, word: str) -> None:
    data = bytearray(encode_assembly(0, spec.ConnectionHeartbeat()))
    data[octet] = value
    _, err = run(bytes(data), header=False)
    assert isinstance(err, FramingError) and word in err.reason


def test_decoder_stays_failed() -> None:
    decoder = FrameDecoder(expect_protocol_header=False)
    decoder.feed(b"\xff" * 12)
    with pytest.raises(FramingError) as first:
        list(decoder.frames())
    decoder.feed(encode_assembly(0, spec.ConnectionHeartbeat()))
    with pytest.raises(FramingError) as again:
        list(decoder.frames())
    assert again.value is first.value


# --- packing flags and session headers -----------------------------------------------------------------


def unused_flag_classes(*, with_fields: bool) -> list[Any]:
    return [c for c in ALL_CLASSES if c.PACK_WIDTH and len(c.FIELDS) < 8 * c.PACK_WIDTH
            and bool(c.FIELDS) == with_fields]


@pytest.mark.parametrize("cls", unused_flag_classes(with_fields=True), ids=lambda c: c.NAME)
def test_packing_flags_naming_missing_fields(cls: Any) -> None:
    flags = (1 << len(cls.FIELDS)).to_bytes(cls.PACK_WIDTH, "little")
    data = b"\xee\xee" + flags + b"\x00" * 16
    err = expect_decode_error(cls.decode_fields, data, 2)
    assert err.offset == 2


def test_packing_flags_of_classes_without_fields_must_be_zero() -> None:
    """Controls/commands without fields still carry 2 flag octets; a set flag names a field
    that does not exist, as for every other class (and would not survive re-encoding)."""
    accepted = []
    for cls in unused_flag_classes(with_fields=False):
        for flags in (b"\x01\x00", b"\x00\x80"):
            try:
                cls.decode_fields(flags, 0)
            except DecodeError as exc:
                assert exc.offset == 0
            else:
                accepted.append(f"{cls.NAME} {flags.hex()}")
    assert not accepted, f"non-zero packing flags accepted by: {', '.join(accepted)}"


@pytest.mark.parametrize(("header", "at"), [(b"\x01\x02", 3), (b"\x01\x80", 3), (b"\x02\x00\x00", 2),
                                            (b"\xff", 2)])
def test_bad_session_header(header: bytes, at: int) -> None:
    err = expect_decode_error(codec.decode_command, b"\x03\x01" + header + b"\x00\x00")
    assert err.offset == at


def test_trailing_octets_after_fields() -> None:
    expect_decode_error(codec.decode_control, codec.encode_control(spec.ConnectionCloseOk()) + b"\0")
    expect_decode_error(codec.decode_command, codec.encode_command(spec.ExecutionSync()) + b"\0")
    expect_decode_error(codec.decode_header, spec.DeliveryProperties().encode() + b"\0")


@pytest.mark.parametrize("cls", CODED_STRUCTS, ids=lambda c: c.NAME)
def test_header_struct_size_not_matching_its_fields(cls: Any) -> None:
    raw = bytearray(cls().encode())
    raw[3] += 1
    raw += b"\x00"
    expect_decode_error(codec.decode_header, bytes(raw))


# --- assembly structure -----------------------------------------------------------------------------------

HEARTBEAT = codec.encode_control(spec.ConnectionHeartbeat())
SYNC = codec.encode_command(spec.ExecutionSync())
TRANSFER = codec.encode_command(spec.MessageTransfer())
NO_HEADER = codec.encode_header(())

# name -> (frames, index of the frame the error must point at)
STRUCTURE: dict[str, tuple[list[bytes], int]] = {
    "continues an assembly that never started": ([frame(SYNC, flags=0x01)], 0),
    "header segment first": ([frame(NO_HEADER, seg=2, flags=0x0F)], 0),
    "body segment first": ([frame(b"x", seg=3, flags=0x0F)], 0),
    "control on the command track": ([frame(HEARTBEAT, seg=0, track=1)], 0),
    "command on the control track": ([frame(SYNC, seg=1, track=0)], 0),
    "two command segments": ([frame(TRANSFER, flags=0x0B), frame(TRANSFER, flags=0x07)], 1),
    "header after body": ([frame(TRANSFER, flags=0x0B), frame(b"x", seg=3, flags=0x03),
                           frame(NO_HEADER, seg=2, flags=0x07)], 2),
    "control followed by a segment": ([frame(HEARTBEAT, seg=0, track=0, flags=0x0B),
                                       frame(b"", seg=2, track=0, flags=0x07)], 0),
    "command without payload followed by a header": ([frame(SYNC, flags=0x0B),
                                                      frame(NO_HEADER, seg=2, flags=0x07)], 0),
    "new assembly inside an unfinished segment": ([frame(TRANSFER[:3], flags=0x0A),
                                                   frame(SYNC, flags=0x0F)], 1),
    "next segment not marked first frame": ([frame(TRANSFER, flags=0x0B),
                                             frame(NO_HEADER, seg=2, flags=0x05)], 1),
    "segment continued with another type": ([frame(TRANSFER[:3], flags=0x0A),
                                             frame(TRANSFER[3:], seg=2, flags=0x09)], 1),
}


@pytest.mark.parametrize(("frames", "bad"), STRUCTURE.values(), ids=STRUCTURE.keys())
def test_invalid_assembly_structure(frames: list[bytes], bad: int) -> None:
    data = b"".join(frames)
    _, err = run(data, header=False)
    assert isinstance(err, FramingError), "the invalid structure was accepted"
    assert err.offset == sum(len(f) for f in frames[:bad]), "the offending frame's offset"


def test_transfer_with_a_body_but_no_header_segment() -> None:
    """Either such an assembly is refused, or it re-encodes to the same frames (not to a
    command plus an empty header segment, dropping the body)."""
    data = encode_segments(1, 1, [(1, TRANSFER), (3, b"hello")])
    assemblies, err = run(data, header=False)
    if err is None:
        (a,) = assemblies
        assert a.body == b"hello"
        assert a.encode() == data, "Assembly.encode() changed the segments"


def test_assembly_size_limit() -> None:
    data = encode_assembly(1, spec.MessageTransfer(), (), b"x" * 50_000, max_frame_size=4096)
    _, err = run(data, header=False, max_frame_size=4096, max_assembly_size=20_000)
    assert isinstance(err, FramingError) and "20000" in err.reason
    assembled, err = run(data, header=False, max_frame_size=4096, max_assembly_size=60_000)
    assert err is None and len(assembled) == 1
