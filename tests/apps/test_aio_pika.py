"""aio-pika through the 0-9-1 façade: a robust connection with publisher confirms and a
prefetch-10 consumer, as its own process, while the bridge is killed (kill -9) and
started again: nothing confirmed is lost."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.apps import AppProcess
from tests.support.bridge import wait_listening
from tests.support.facade091 import facade091

COUNT = 400


def test_robust_connection_loses_nothing_confirmed_across_a_bridge_kill(
        rabbitmq_url: str, tmp_path: Path) -> None:
    def routes(q: dict[str, str], _: dict[str, str]) -> str:
        return f"""
  - name: events-out
    from: {{listener: legacy, exchange: events}}
    to:   {{connection: cloud, address: {q["events"]}}}
  - name: events-in
    from: {{connection: cloud, address: {q["events"]}}}
    to:   {{listener: legacy, queue: events.q}}
"""

    with facade091(rabbitmq_url, tmp_path, ("events",), routes) as facade:
        app = AppProcess(["aio_pika_robust.py", facade.url, "events", "e", "events.q",
                          str(COUNT)], tmp_path / "app.log", {})
        try:
            app.wait_for(r"received m-99\b")
            facade.proc.kill()  # mid-stream: publishes, confirms and deliveries under way
            app.wait_for(r"retrying m-\d+")  # the application saw the bridge go
            facade.proc.start()
            wait_listening(facade.port, facade.proc)
            assert app.wait(120) == 0, app.log()
        finally:
            app.kill()
    log = app.log()
    confirmed = re.findall(r"confirmed (m-\d+)", log)
    assert confirmed == [f"m-{i}" for i in range(COUNT)]
    assert set(re.findall(r"received (m-\d+)", log)) >= set(confirmed)
    assert f"all {COUNT} confirmed received" in log
