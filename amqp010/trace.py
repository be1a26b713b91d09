"""Protocol tracing: each connection's bytes in the capture JSON-lines format.

One line per read or write, ``{"dir": "c2s" | "s2c", "t": seconds, "hex": "..."}``
(the format of ``tests/data/captures/amqp-0-10/``), so ``amqp-bridge inspect`` reads
a trace like a recording.  The host calls :meth:`Tracer.incoming` with what it
passed to ``receive_data`` and :meth:`Tracer.outgoing` with what it wrote.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from .connection import Role


class Tracer:
    """Writes one connection's traffic; directions follow the connection's role."""

    def __init__(self, target: str | Path | IO[str], role: Role, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(target, (str, Path)):
            self._fh: IO[str] = open(target, "w", encoding="utf-8")  # noqa: SIM115
            self._owned = True
        else:
            self._fh = target
            self._owned = False
        self._clock = clock
        self._start = clock()
        self._in, self._out = ("s2c", "c2s") if role is Role.CLIENT else ("c2s", "s2c")

    def incoming(self, data: bytes) -> None:
        """Record bytes received from the peer."""
        if data:
            self._write(self._in, data)

    def outgoing(self, data: bytes) -> None:
        """Record bytes sent to the peer."""
        if data:
            self._write(self._out, data)

    received = incoming
    """Alias of :meth:`incoming`."""
    sent = outgoing
    """Alias of :meth:`outgoing`."""

    def _write(self, direction: str, data: bytes) -> None:
        t = round(self._clock() - self._start, 6)
        self._fh.write(json.dumps({"dir": direction, "t": t, "hex": data.hex()}) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._owned:
            self._fh.close()
