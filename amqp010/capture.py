"""Reading recorded AMQP 0-10 conversations.

Two input forms are understood:

- the capture JSON-lines format (one object per TCP read:
  ``{"dir": "c2s" | "s2c", "t": seconds, "hex": "..."}``), as recorded in
  ``tests/data/captures/amqp-0-10/`` and written by the engine's protocol tracing;
- a raw byte stream of one direction (starting with the protocol header or
  directly with frames).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

DIRECTIONS = ("c2s", "s2c")


class CaptureFormatError(ValueError):
    """The capture file is not in the expected format (names the line)."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One recorded read: direction, time since connect, bytes."""

    direction: str
    time: float
    data: bytes


def read_chunks(path: str | Path) -> Iterator[Chunk]:
    """Yield the chunks of a capture JSON-lines file in arrival order."""
    with open(path, "rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = orjson.loads(line)
                direction = obj["dir"]
                data = bytes.fromhex(obj["hex"])
                t = float(obj.get("t", 0.0))
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise CaptureFormatError(f"{path}:{lineno}: not a capture record ({exc})") from None
            if direction not in DIRECTIONS:
                raise CaptureFormatError(f"{path}:{lineno}: unknown direction {direction!r}")
            yield Chunk(direction, t, data)


def read_streams(path: str | Path) -> dict[str, bytes]:
    """Each direction's whole byte stream: ``{"c2s": ..., "s2c": ...}``."""
    parts: dict[str, list[bytes]] = {d: [] for d in DIRECTIONS}
    for chunk in read_chunks(path):
        parts[chunk.direction].append(chunk.data)
    return {d: b"".join(p) for d, p in parts.items()}


def sniff_format(path: str | Path) -> str:
    """``"jsonl"`` if the file looks like capture JSON lines, else ``"raw"``."""
    with open(path, "rb") as fh:
        head = fh.read(64).lstrip()
    return "jsonl" if head.startswith(b"{") else "raw"
