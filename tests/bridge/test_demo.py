"""``amqp-bridge demo`` (what ``scripts/run`` runs): every message makes it, both ways."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support.rabbitmq import REPO_ROOT


def test_demo_moves_every_message_through_the_bridge_and_says_so(rabbitmq_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bridge.cli", "demo", "--amqp10-url", rabbitmq_url,
         "--messages", "7"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert len(re.findall(r"1\.0 consumer got CloudEvent id=\S+ type=com\.example\.order\.created "
                          r"source=/legacy/orders data=\{\"order\": \d", out)) == 7
    assert out.count("0-10 client got reply: order ") == 7
    assert out.count("got structured CloudEvent") == 7
    assert re.search(r"OK: 7 orders .* \(7 read\), 7 replies .* 7 façade events", out), out
    assert "guest:guest" not in out  # the broker URL is shown without its password
