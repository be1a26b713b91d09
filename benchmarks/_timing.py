"""Small timing helpers shared by the benchmarks (best-of-N rate measurement)."""

from __future__ import annotations

import time
from collections.abc import Callable


def rate(fn: Callable[[], object], *, min_time: float = 0.5, repeats: int = 5) -> float:
    """Best calls-per-second of ``fn`` over ``repeats`` runs of at least ``min_time`` seconds."""
    n = 1
    while True:  # calibrate the batch size
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 10:
            break
        n *= 2
    batch = max(1, int(n * (min_time / max(elapsed, 1e-9))))
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        best = max(best, batch / (time.perf_counter() - start))
    return best


def report(rows: list[tuple[str, float, float]]) -> None:
    """Print ``(name, ours, baseline)`` rows with the ratio."""
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'ours/s':>12}  {'baseline/s':>12}  {'ratio':>6}")
    for name, ours, base in rows:
        print(f"{name:{width}}  {ours:12,.0f}  {base:12,.0f}  {ours / base:6.2f}x")
