"""`amqp-bridge inspect` on real captures, raw streams and broken input."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from click.testing import CliRunner

from amqp010.capture import read_streams
from bridge.cli import main
from tests.data import CAPTURES_010 as CAPTURES

SCENARIOS = sorted(p.stem for p in CAPTURES.glob("*.jsonl"))


def run(*args: str) -> tuple[int, list[dict], str]:
    result = CliRunner().invoke(main, ["inspect", *args])
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return result.exit_code, lines, result.stderr


def test_captures_are_present() -> None:
    assert SCENARIOS == ["large_message", "reject_release", "session_basic", "translate_1_0_to_0_10"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_frame_of_every_capture_decodes(scenario: str) -> None:
    code, records, err = run(str(CAPTURES / f"{scenario}.jsonl"))
    assert code == 0, err
    streams = read_streams(CAPTURES / f"{scenario}.jsonl")
    for direction, data in streams.items():
        recs = [r for r in records if r["dir"] == direction]
        assert recs[0] == {"dir": direction, "protocol_header": "AMQP 1.1 0-10", "supported": True}
        frames = recs[1:]
        # the frames tile the whole stream: offsets and sizes add up exactly
        assert frames[0]["offset"] == 8
        for a, b in pairwise(frames):
            assert b["offset"] == a["offset"] + a["size"]
        assert frames[-1]["offset"] + frames[-1]["size"] == len(data)
        for f in frames:
            if f["segment"] in ("control", "command"):
                assert "." in f["op"], f
            elif f["segment"] == "header":
                assert f["structs"], f
            else:
                assert f["length"] == f["size"] - 12


def test_session_basic_frames_show_decoded_arguments() -> None:
    _, records, _ = run(str(CAPTURES / "session_basic.jsonl"))
    start = next(r for r in records if r.get("op") == "connection.start")
    assert start["dir"] == "s2c"
    assert start["args"]["mechanisms"] == {"type": "array", "element_type": "str16",
                                           "value": ["ANONYMOUS", "PLAIN"]}
    tune = next(r for r in records if r.get("op") == "connection.tune")
    assert tune["args"] == {"channel-max": 65534, "max-frame-size": 65535,
                            "heartbeat-min": 0, "heartbeat-max": 120}
    header = next(r for r in records if r.get("segment") == "header" and r["dir"] == "c2s")
    dp, mp = header["structs"]
    assert dp == {"type": "message.delivery-properties", "priority": 4, "delivery-mode": 1,
                  "routing-key": "cap.basic"}
    assert mp["message-id"] == {"uuid": "a3eea816-3595-45cf-8be1-b9a11fec943f"}
    assert mp["reply-to"] == {"type": "message.reply-to", "exchange": "amq.direct",
                              "routing-key": "replies"}
    assert mp["application-headers"]["big"] == 1099511627776
    assert mp["application-headers"]["bin"] == {"bytes_hex": "00ff"}


def test_assemble_prints_transfers_with_header_and_body_length() -> None:
    code, records, err = run("--assemble", str(CAPTURES / "large_message.jsonl"))
    assert code == 0, err
    transfers = [r for r in records if r.get("op") == "message.transfer"]
    assert [(t["dir"], t["body_length"]) for t in transfers] == [("c2s", 307200), ("s2c", 307200)]
    assert transfers[1]["body_prefix_hex"] == bytes(range(64)).hex()
    received = transfers[1]["header"]
    assert {"type": "message.message-properties", "content-type": "application/octet-stream"} in received


def test_raw_stream_of_one_direction(tmp_path: Path) -> None:
    raw = tmp_path / "s2c.bin"
    raw.write_bytes(read_streams(CAPTURES / "reject_release.jsonl")["s2c"])
    code, records, err = run("--assemble", "--direction", "s2c", str(raw))
    assert code == 0, err
    assert all(r["dir"] == "s2c" for r in records)
    redelivered = [r for r in records if r.get("op") == "message.transfer"
                   and any(s.get("redelivered") for s in r["header"])]
    assert len(redelivered) == 1


def test_raw_stream_without_protocol_header(tmp_path: Path) -> None:
    raw = tmp_path / "frames.bin"
    raw.write_bytes(read_streams(CAPTURES / "session_basic.jsonl")["c2s"][8:])
    code, records, _ = run("--format", "raw", str(raw))
    assert code == 0
    assert records[0]["op"] == "connection.start-ok"


def test_truncated_stream_prints_what_decoded_then_fails(tmp_path: Path) -> None:
    data = read_streams(CAPTURES / "session_basic.jsonl")["c2s"]
    raw = tmp_path / "cut.bin"
    raw.write_bytes(data[:300])
    code, records, err = run(str(raw))
    assert code == 1
    assert records and records[-1]["op"] == "session.attach"
    assert "stream ends inside a frame" in err and "offset 289" in err


def test_corrupt_frame_reports_offset_and_reason(tmp_path: Path) -> None:
    data = bytearray(read_streams(CAPTURES / "session_basic.jsonl")["c2s"])
    data[255 + 1] = 9  # segment type of the session.attach frame
    raw = tmp_path / "bad.bin"
    raw.write_bytes(bytes(data))
    code, records, err = run(str(raw))
    assert code == 1
    assert records[-1]["op"] == "connection.open"
    assert "unknown segment type 9 (at byte offset 256)" in err


def test_malformed_capture_line_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"dir": "c2s", "t": 0, "hex": "414d51500101000a"}\n{"dir": "c2s", "hex": "zz"}\n')
    code, _, err = run(str(bad))
    assert code == 1
    assert "bad.jsonl:2: not a capture record" in err
