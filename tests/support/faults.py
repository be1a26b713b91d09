"""A running bridge with fault injection armed on demand (``bridge/faultinject.py``), as the
containment tests of both legacy protocols use it."""

from __future__ import annotations

import os
import signal
from typing import Any

from tests.support.bridge import BridgeRun, wait_for
from tests.support.logs import records
from tests.support.metrics import http_get, scrape


class FaultyBridge:
    """``amqp-bridge run`` with one injection target: arm it, find its fault record, count
    faults, connection opens and readiness."""

    def __init__(self, proc: BridgeRun, metrics: int) -> None:
        self.proc = proc
        self.metrics = metrics

    def ready(self) -> bool:
        return http_get(self.metrics, "/readyz")[0] == 200

    def inject(self) -> None:
        """Arm the target: its next call raises."""
        os.kill(self.proc.pid, signal.SIGUSR1)

    def faults(self) -> list[dict[str, Any]]:
        return [r for r in records(self.proc.log()) if r.get("event") == "handler_fault"]

    def fault(self) -> dict[str, Any]:
        """The one fault record (waits for it): an ERROR line with the traceback."""
        wait_for(lambda: bool(self.faults()), 30, "the fault's ERROR line", self.proc)
        [fault] = self.faults()
        assert fault["level"] == "error"
        assert "InjectedFault" in fault["exception"]  # the traceback
        assert "Traceback" in fault["exception"]
        return fault

    def counted(self, kind: str) -> float:
        return scrape(self.metrics).value("amqp_bridge_faults_total", kind=kind)

    def opens(self, connection: str) -> int:
        return sum(1 for r in records(self.proc.log())
                   if r.get("event") == "open" and r.get("connection") == connection)

    def alive(self) -> bool:
        assert self.proc.proc is not None
        return self.proc.proc.poll() is None


__all__ = ["FaultyBridge"]
