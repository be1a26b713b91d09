"""Small timing helpers shared by the benchmarks.

Rates are best-of-N over batches of at least ``min_time`` seconds, and a
comparison interleaves the two contenders' batches so that a change in machine
load affects both alike.

Importing it also puts the project root first on ``sys.path``: a script run from
this folder has the folder itself first there, where ``bridge.py`` (the end-to-end
benchmark) would stand in for the ``bridge`` package. Every benchmark imports this
module before the project's packages.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if sys.path[:1] != [str(ROOT)]:
    sys.path.insert(0, str(ROOT))


def _batch_size(fn: Callable[[], object], min_time: float) -> int:
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 10:
            return max(1, int(n * (min_time / elapsed)))
        n *= 2


def _run(fn: Callable[[], object], batch: int) -> float:
    start = time.perf_counter()
    for _ in range(batch):
        fn()
    return batch / (time.perf_counter() - start)


def rate(fn: Callable[[], object], *, min_time: float = 0.3, repeats: int = 5) -> float:
    """Best calls-per-second of ``fn`` over ``repeats`` batches."""
    batch = _batch_size(fn, min_time)
    return max(_run(fn, batch) for _ in range(repeats))


def compare(ours: Callable[[], object], baseline: Callable[[], object], *,
            min_time: float = 0.3, repeats: int = 7) -> tuple[float, float]:
    """Best rates of ``ours`` and ``baseline``, measured in alternating batches."""
    b_ours, b_base = _batch_size(ours, min_time), _batch_size(baseline, min_time)
    best_ours = best_base = 0.0
    for _ in range(repeats):
        best_ours = max(best_ours, _run(ours, b_ours))
        best_base = max(best_base, _run(baseline, b_base))
    return best_ours, best_base


def report(rows: list[tuple[str, float, float]]) -> None:
    """Print ``(name, ours, baseline)`` rows with the ratio."""
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'ours/s':>12}  {'baseline/s':>12}  {'ratio':>6}")
    for name, ours, base in rows:
        print(f"{name:{width}}  {ours:12,.0f}  {base:12,.0f}  {ours / base:6.2f}x")
