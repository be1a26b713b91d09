"""RFC 1982 serial-number arithmetic on 32-bit AMQP 0-10 sequence numbers."""

from __future__ import annotations

MASK = 0xFFFFFFFF
_HALF = 1 << 31


def serial_add(a: int, n: int) -> int:
    """``a + n`` modulo 2**32."""
    return (a + n) & MASK


def serial_lt(a: int, b: int) -> bool:
    """``a < b`` in serial order (undefined when they are exactly 2**31 apart)."""
    return a != b and ((b - a) & MASK) < _HALF


def serial_le(a: int, b: int) -> bool:
    """``a <= b`` in serial order."""
    return a == b or ((b - a) & MASK) < _HALF


def serial_diff(a: int, b: int) -> int:
    """Signed distance ``a - b`` in serial arithmetic."""
    d = (a - b) & MASK
    return d - (1 << 32) if d >= _HALF else d


def serial_add_range(ranges: list[tuple[int, int]], lo: int, hi: int) -> list[tuple[int, int]]:
    """Return ``ranges`` (sorted, disjoint, non-touching) with ``lo..hi`` merged in."""
    if serial_lt(hi, lo):
        raise ValueError(f"range {lo}..{hi} is empty in serial order")
    out: list[tuple[int, int]] = []
    placed = False
    for a, b in ranges:
        if serial_lt(serial_add(b, 1), lo):  # entirely before, not touching
            out.append((a, b))
        elif serial_lt(serial_add(hi, 1), a):  # entirely after, not touching
            if not placed:
                out.append((lo, hi))
                placed = True
            out.append((a, b))
        else:  # overlapping or touching: absorb
            if serial_lt(a, lo):
                lo = a
            if serial_lt(hi, b):
                hi = b
    if not placed:
        out.append((lo, hi))
    return out


def serial_remove_upto(ranges: list[tuple[int, int]], upto: int) -> list[tuple[int, int]]:
    """Return ``ranges`` without any id serially ``<= upto``."""
    out: list[tuple[int, int]] = []
    for a, b in ranges:
        if serial_le(b, upto):
            continue
        if serial_le(a, upto):
            a = serial_add(upto, 1)
        out.append((a, b))
    return out
