"""The decoder's fast paths give exactly what the general paths give.

* ``FrameDecoder.assemblies()`` decodes a message.transfer whose segments each fill
  one frame, back to back, in one go (``_transfer``); ``frames()`` + ``Assembler.add()``
  is the general path. Both must yield the same assemblies and fail with the same
  error (type, offset, reason) on any input, in any chunking.
* ``feed()`` decodes straight from a chunk when nothing is buffered.
* Generated decoders build instances slot by slot and decode UUIDs inline.
"""

from __future__ import annotations

import pickle
import random
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp010 import codec, spec
from amqp010.errors import CodecError
from amqp010.framing import (
    Assembler,
    FrameDecoder,
    ProtocolHeader,
    encode_assembly,
)

from .captures import DIRECTIONS, SCENARIOS, stream
from .strategies import HEADER_STRUCTS, any_op, examples, instances


def _drive(pieces: list[bytes], max_frame_size: int, max_assembly_size: int,
           take: Callable[[FrameDecoder, Assembler, list[Any]], None]) -> Any:
    """Feed ``pieces`` one by one, ``take`` appending the assemblies after each (those
    before an error included); then the error or the decoder's and assembler's leftovers."""
    decoder = FrameDecoder(max_frame_size, expect_protocol_header=False)
    assembler = Assembler(max_assembly_size)
    out: list[Any] = []
    try:
        for piece in pieces:
            decoder.feed(piece)
            take(decoder, assembler, out)
    except CodecError as exc:
        return out, (type(exc), exc.offset, exc.reason)
    return out, None, decoder.buffered, assembler.pending


def _by_frames(decoder: FrameDecoder, assembler: Assembler, out: list[Any]) -> None:
    for frame in decoder.frames():
        assert not isinstance(frame, ProtocolHeader)
        a = assembler.add(frame)
        if a is not None:
            out.append(a)


def general(pieces: list[bytes], max_frame_size: int, max_assembly_size: int) -> Any:
    """Assemblies and error through frames() + Assembler.add()."""
    return _drive(pieces, max_frame_size, max_assembly_size, _by_frames)


def fast(pieces: list[bytes], max_frame_size: int, max_assembly_size: int) -> Any:
    """Assemblies and error through assemblies() (with its fast path)."""
    return _drive(pieces, max_frame_size, max_assembly_size,
                  lambda decoder, assembler, out: out.extend(decoder.assemblies(assembler)))


def chunks(data: bytes, rng: random.Random) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        n = rng.choice([1, 5, 12, 13, 100, 1000, 100_000])
        out.append(data[pos:pos + n])
        pos += n
    return out


def transfer_stream(draw: st.DrawFn) -> tuple[bytes, int]:
    """Some assemblies (mostly transfers) on a few channels, frames possibly interleaved."""
    max_frame_size = draw(st.sampled_from([4096, 8192, 65535]))
    frames_by_channel: list[list[bytes]] = []
    for channel in range(draw(st.integers(1, 3))):
        frames: list[bytes] = []
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.integers(0, 4)) == 0:
                data = encode_assembly(channel, draw(any_op()), max_frame_size=max_frame_size)
            else:
                op = draw(instances(spec.MessageTransfer))
                structs = draw(st.lists(st.sampled_from(HEADER_STRUCTS), unique=True))
                header = tuple(draw(instances(c, nested=False)) for c in structs)
                body = draw(st.one_of(st.none(), st.binary(max_size=64),
                                      st.integers(4000, 9000).map(bytes)))
                data = encode_assembly(channel, op, header if header or body is None
                                       or draw(st.booleans()) else None, body, max_frame_size)
            pos = 0
            while pos < len(data):
                size = int.from_bytes(data[pos + 2:pos + 4], "big")
                frames.append(data[pos:pos + size])
                pos += size
        frames_by_channel.append(frames)
    out = []
    rng = random.Random(draw(st.integers(0, 2**16)))
    while any(frames_by_channel):
        out.append(rng.choice([f for f in frames_by_channel if f]).pop(0))
    return b"".join(out), max_frame_size


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, int]:
    return transfer_stream(draw)


@examples(300)
@given(case=streams(), seed=st.integers(0, 2**32), limit=st.sampled_from([1 << 30, 5000, 64]))
def test_fast_path_matches_general_path(case: tuple[bytes, int], seed: int, limit: int) -> None:
    data, max_frame_size = case
    pieces = chunks(data, random.Random(seed))
    expected = general([data], max_frame_size, limit)
    assert fast([data], max_frame_size, limit) == expected
    assert fast(pieces, max_frame_size, limit) == expected


@examples(400)
@given(case=streams(), seed=st.integers(0, 2**32),
       edits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1,
                      max_size=3))
def test_fast_path_matches_general_path_on_damaged_input(case: tuple[bytes, int], seed: int,
                                                         edits: list[tuple[int, int]]) -> None:
    data, max_frame_size = case
    damaged = bytearray(data)
    for at, value in edits:
        damaged[at % len(damaged)] = value
    cut = random.Random(seed).randrange(len(damaged) + 1)
    for candidate in (bytes(damaged), bytes(damaged[:cut])):
        expected = general([candidate], max_frame_size, 1 << 30)
        assert fast([candidate], max_frame_size, 1 << 30) == expected
        assert fast(chunks(candidate, random.Random(seed)), max_frame_size, 1 << 30) == expected


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("direction", DIRECTIONS)
def test_fast_path_matches_general_path_on_captures(scenario: str, direction: str) -> None:
    data = stream(scenario, direction)[8:]  # without the protocol header
    expected = general([data], 0xFFFF, 1 << 30)
    assert expected[1] is None and expected[0], "the capture decodes"
    for pieces in ([data], chunks(data, random.Random(1))):
        assert fast(pieces, 0xFFFF, 1 << 30) == expected


def test_fast_path_counts_the_unfinished_assemblies_of_other_channels() -> None:
    """A whole transfer on one channel that takes what all channels hold unfinished past
    ``max_buffered`` fails on the fast path as on the general path (the oracle above found
    the fast path taking it: it checked the transfer's own size alone)."""
    transfer = spec.MessageTransfer(destination="d")
    started = encode_assembly(0, transfer, (), bytes(6000), max_frame_size=4096)
    last_frame_at = int.from_bytes(started[2:4], "big")  # command, then header + body...
    while last_frame_at + int.from_bytes(started[last_frame_at + 2:last_frame_at + 4],
                                         "big") < len(started):
        last_frame_at += int.from_bytes(started[last_frame_at + 2:last_frame_at + 4], "big")
    unfinished = started[:last_frame_at]  # channel 0's transfer without its last frame
    whole = encode_assembly(1, transfer, (), bytes(2000), max_frame_size=4096)
    data = unfinished + whole
    expected = general([data], 4096, 5000)
    assert expected[1][2] == "unfinished assemblies exceed 5000 octets"
    assert fast([data], 4096, 5000) == expected
    assert fast([unfinished, whole], 4096, 5000) == expected


def test_fast_path_is_taken_for_a_typical_transfer() -> None:
    transfer = spec.MessageTransfer(destination="amq.direct", accept_mode=0, acquire_mode=0)
    header = (spec.DeliveryProperties(routing_key="k"), spec.MessageProperties(message_id=uuid.uuid4()))
    data = encode_assembly(3, transfer, header, b"body")
    decoder = FrameDecoder(expect_protocol_header=False)
    decoder.feed(data)
    assembler = Assembler()
    a = decoder._transfer(data, 0, assembler)
    assert a is not None and (a.channel, a.op, a.header, a.body, a.segments) == (
        3, transfer, header, b"body", 3)
    assert decoder.buffered == 0


# --- generated decoders ----------------------------------------------------------------------


@examples(200)
@given(value=st.integers(0, 2**128 - 1))
def test_decoded_uuids_are_plain_uuids(value: int) -> None:
    expected = uuid.UUID(int=value)
    payload = codec.encode_header([spec.MessageProperties(message_id=expected)])
    (props,) = codec.decode_header(payload)
    got = props.message_id
    assert type(got) is uuid.UUID and got == expected and hash(got) == hash(expected)
    assert str(got) == str(expected) and got.is_safe is uuid.SafeUUID.unknown
    assert pickle.loads(pickle.dumps(got)) == expected


@examples(200)
@given(op=any_op(), sync=st.booleans())
def test_decoded_commands_and_controls_have_every_slot(op: Any, sync: bool) -> None:
    """Instances built slot by slot have every slot set (equality and repr read them all)."""
    if isinstance(op, spec.Command):
        op.sync = sync
        got = codec.decode_command(codec.encode_command(op))
    else:
        got = codec.decode_control(codec.encode_control(op))
    for name in type(op).__slots__:
        assert getattr(got, name) == getattr(op, name)
    assert got == op and repr(got).startswith(type(op).__name__)
