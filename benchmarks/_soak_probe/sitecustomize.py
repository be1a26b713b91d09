"""The soak's memory probe, loaded into the bridge process by ``benchmarks/soak.py --probe``
(this folder first on its ``PYTHONPATH``; ``AMQP_BRIDGE_SOAK_PROBE=FILE:SECONDS[:collect]``).

A daemon thread writes, every SECONDS, one line to FILE: the time, glibc's heap
(``mallinfo2``: arena bytes, in use, free) and the counts of live objects by type for the
types whose count changed most since the first sample, the blocks pymalloc holds and the
collector's counts. With ``:collect`` it runs a full collection before each sample
(to tell garbage not yet collected from objects kept alive). When the bridge runs under
tracemalloc (``PYTHONTRACEMALLOC=1``), each sample also has the traced total and the
lines whose allocations grew most since the first sample. An investigation aid, not for
production: every sample walks the garbage collector's objects.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
import time
import tracemalloc
from collections import Counter


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]


def _types() -> Counter[str]:
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


def _is_the_bridge(within: float = 60.0) -> bool:
    """Whether this process is the bridge (it imports ``bridge.app`` soon after it starts):
    the applications beside it inherit the probe's environment and must not be probed."""
    deadline = time.monotonic() + within
    while "bridge.app" not in sys.modules:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _run(path: str, every: float, collect: bool) -> None:
    if not _is_the_bridge():
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        return
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    first: Counter[str] | None = None
    baseline = None
    t0 = time.monotonic()
    with open(path, "a", buffering=1) as out:
        while True:
            time.sleep(every)
            if collect:
                gc.collect()
            info = libc.mallinfo2()
            now = _types()
            if first is None:  # the bridge is running by the first sample: the baseline
                first = now
                if tracemalloc.is_tracing():
                    baseline = tracemalloc.take_snapshot()
            grown = sorted(((now[k] - first.get(k, 0), k) for k in now), reverse=True)[:12]
            counts = gc.get_count()
            full = gc.get_stats()[2]["collections"]
            out.write(f"{time.monotonic() - t0:.0f}s arena={info.arena >> 10}K "
                      f"pyblocks={sys.getallocatedblocks()} gc_count={counts} full_gcs={full} "
                      f"inuse={info.uordblks >> 10}K free={info.fordblks >> 10}K "
                      f"mmap={info.hblkhd >> 10}K objects={sum(now.values())} "
                      + " ".join(f"{k}:{now[k]}({d:+})" for d, k in grown) + "\n")
            if baseline is not None:
                traced = tracemalloc.get_traced_memory()[0]
                diff = tracemalloc.take_snapshot().compare_to(baseline, "lineno")[:8]
                out.write(f"  traced={traced >> 10}K " + " | ".join(
                    f"{d.traceback[0].filename.rsplit('/', 2)[-1]}:{d.traceback[0].lineno} "
                    f"{d.size_diff:+}B {d.count_diff:+}" for d in diff) + "\n")


_setting = os.environ.get("AMQP_BRIDGE_SOAK_PROBE")
if _setting:
    _path, _every, *_mode = _setting.split(":")
    threading.Thread(target=_run, args=(_path, float(_every), _mode == ["collect"]), daemon=True,
                     name="soak-probe").start()
