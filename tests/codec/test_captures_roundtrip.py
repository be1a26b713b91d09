"""Re-encoding the recorded conversations reproduces them byte for byte.

Also: the incremental FrameDecoder gives the same frames whatever the chunking
(TCP reads as recorded, one byte at a time, seeded random chunkings) and never
buffers more than one partial frame.
"""

from __future__ import annotations

import random

import pytest

from amqp010 import codec
from amqp010.framing import (
    PROTOCOL_HEADER,
    Assembler,
    Frame,
    FrameDecoder,
    ProtocolHeader,
    encode_assembly,
)

from .captures import DIRECTIONS, SCENARIOS, decode_chunks, decoded, stream, tcp_reads

CASES = [(s, d) for s in SCENARIOS for d in DIRECTIONS]


def frame_summary(frames: list[Frame]) -> list[tuple[int, int, int, int, int, bytes]]:
    return [(f.offset, f.flags, f.segment_type, f.track, f.channel, f.payload) for f in frames]


@pytest.mark.parametrize(("scenario", "direction"), CASES)
def test_reencoding_every_assembly_reproduces_the_stream(scenario: str, direction: str) -> None:
    data = stream(scenario, direction)
    d = decoded(scenario, direction)
    pos = len(PROTOCOL_HEADER)
    assert data[:pos] == PROTOCOL_HEADER
    for a in d.assemblies:
        encoded = a.encode()
        original = data[pos:pos + len(encoded)]
        assert a.offset == pos
        assert encoded == original, (
            f"{scenario}/{direction}: {a.op.NAME} at offset {pos} re-encodes differently:\n"
            f"  captured {original.hex()}\n  encoded  {encoded.hex()}")
        pos += len(encoded)
    assert pos == len(data), "assemblies account for the whole stream"


@pytest.mark.parametrize(("scenario", "direction"), CASES)
def test_encode_assembly_from_parts_reproduces_the_stream(scenario: str, direction: str) -> None:
    """The public encode_assembly (not just Assembly.encode) gives the captured bytes."""
    d = decoded(scenario, direction)
    out = [PROTOCOL_HEADER]
    for a, frames in zip(d.assemblies, d.frames_of, strict=True):
        has_header = any(f.segment_type == 2 for f in frames)
        has_body = any(f.segment_type == 3 for f in frames)
        out.append(encode_assembly(a.channel, a.op, a.header if has_header else None,
                                   a.body if has_body else None, max_frame_size=0xFFFF))
    assert b"".join(out) == stream(scenario, direction)


@pytest.mark.parametrize(("scenario", "direction"), CASES)
def test_every_frame_and_whole_segment_reencodes_exactly(scenario: str, direction: str) -> None:
    data = stream(scenario, direction)
    checked = {0: 0, 1: 0, 2: 0}
    for f in decoded(scenario, direction).frames:
        raw = data[f.offset:f.offset + 12 + len(f.payload)]
        assert f.encode() == raw, f"frame at {f.offset} re-encodes differently"
        if not (f.first_frame and f.last_frame) or f.segment_type == 3:
            continue
        if f.segment_type == 0:
            again = codec.encode_control(codec.decode_control(f.payload))
        elif f.segment_type == 1:
            again = codec.encode_command(codec.decode_command(f.payload))
        else:
            again = codec.encode_header(codec.decode_header(f.payload))
        assert again == f.payload, (
            f"segment type {f.segment_type} at {f.offset}: "
            f"{f.payload.hex()} re-encodes as {again.hex()}")
        checked[f.segment_type] += 1
    assert checked[0] and checked[1], "controls and commands were checked"
    headers = [f for f in decoded(scenario, direction).frames if f.segment_type == 2]
    assert checked[2] == len(headers), "every (single-frame) header segment was checked"


@pytest.mark.parametrize(("scenario", "direction"), CASES)
def test_recorded_tcp_reads_decode_the_same(scenario: str, direction: str) -> None:
    whole = decoded(scenario, direction)
    pieces = decode_chunks(tcp_reads(scenario, direction))
    assert frame_summary(pieces.frames) == frame_summary(whole.frames)
    assert pieces.assemblies == whole.assemblies


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("scenario", "direction"), CASES)
def test_one_byte_at_a_time(scenario: str, direction: str) -> None:
    data = stream(scenario, direction)
    whole = decoded(scenario, direction)
    bytewise = decode_chunks(data[i:i + 1] for i in range(len(data)))
    assert frame_summary(bytewise.frames) == frame_summary(whole.frames)
    assert bytewise.assemblies == whole.assemblies


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("scenario", "direction"), CASES)
def test_random_chunkings(scenario: str, direction: str, seed: int) -> None:
    data = stream(scenario, direction)
    rng = random.Random(f"{scenario}/{direction}/{seed}")
    largest = rng.choice([3, 17, 200, 5000, 70_000])
    cuts = []
    pos = 0
    while pos < len(data):
        n = rng.randint(0, largest)  # zero-length feeds included
        cuts.append(data[pos:pos + n])
        pos += n
    result = decode_chunks(cuts)
    whole = decoded(scenario, direction)
    assert frame_summary(result.frames) == frame_summary(whole.frames)
    assert result.assemblies == whole.assemblies


@pytest.mark.parametrize(("scenario", "direction"), CASES)
def test_frames_are_yielded_as_soon_as_complete(scenario: str, direction: str) -> None:
    """Feeding exactly up to the end of a frame yields it; one octet less does not."""
    data = stream(scenario, direction)
    ends = [f.offset + 12 + len(f.payload) for f in decoded(scenario, direction).frames][:40]
    decoder = FrameDecoder()
    decoder.feed(data[:8])
    assert len(list(decoder.frames())) == 1  # the protocol header
    fed = 8
    for end in ends:
        decoder.feed(data[fed:end - 1])
        assert list(decoder.frames()) == [], "a frame was yielded before its last octet"
        decoder.feed(data[end - 1:end])
        got = list(decoder.frames())
        assert len(got) == 1 and got[0].offset + 12 + len(got[0].payload) == end
        assert decoder.buffered == 0
        fed = end


@pytest.mark.parametrize(("scenario", "direction"), CASES)
def test_decoder_assemblies_api_matches_frames_api(scenario: str, direction: str) -> None:
    """FrameDecoder.assemblies(assembler) (the fast path) gives what frames() + add() give."""
    data = stream(scenario, direction)
    for pieces in ([data], [data[i:i + 997] for i in range(0, len(data), 997)]):
        decoder = FrameDecoder()
        assembler = Assembler()
        got = []
        for piece in pieces:
            decoder.feed(piece)
            got.extend(decoder.assemblies(assembler))
        assert got[0] == ProtocolHeader(PROTOCOL_HEADER)
        assert got[1:] == decoded(scenario, direction).assemblies
