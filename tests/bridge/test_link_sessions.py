"""A 1.0 link's session is freed exactly once, however its end and the link's giving up
cross (:meth:`bridge.amqp10.link.Amqp10Link._retire`).

RabbitMQ (3.10 and 4.0) answers an attach to a queue that does not exist by ending the
session: a begin and an end, often in one read. Proton marks the session remotely
closed as it reads the end, before its event is dispatched; a link given up in between
— a façade client that subscribed to such a queue leaving in the same loop round — freed
the session there, and the end's event freed it again. Proton does not check that
outside debug builds: the session stayed twice in its connection's list of freed
endpoints, and a later session's finalization compared against the dangling one
(``pn_compare`` in ``pn_session_finalize``) — the segfault of the façade fuzz test in
loaded full runs (core dump: ``pn_list_remove`` of the connection's ``freed`` list).

:mod:`tests.support.session_churn` drives it on the bridge's own loop against the real
broker, in a subprocess (a crash must fail the test, not end the test run).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.bridge import ROOT
from tests.support.rabbitmq import existing_queue_address, unique_queue
from tests.support.session_churn import WINDOW

pytestmark = pytest.mark.rabbitmq(3, 4)


def test_links_given_up_while_the_broker_ends_their_sessions_free_each_session_once(
        rabbitmq_url: str) -> None:
    prefix = existing_queue_address(unique_queue("never-declared"))
    proc = subprocess.run([sys.executable, "-m", "tests.support.session_churn", rabbitmq_url,
                           prefix], capture_output=True, text=True, cwd=ROOT, timeout=600,
                          check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-6000:]  # -11 (SIGSEGV) before the fix
    summary = json.loads(proc.stdout.splitlines()[-1])
    # the window was hit: links given up with their session's end read, not yet dispatched
    assert summary["given_up_in_window"] >= WINDOW, summary
    # every session opened was freed (none kept), and none twice
    assert summary["freed_again"] == 0, summary
    assert summary["freed"] == summary["sessions"], summary
