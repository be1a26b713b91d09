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
broker, in a subprocess (a crash must fail the test, not end the test run). The second
test follows a session proton begins again after a reconnect, which the broker ends
before the link's attach is answered: it is freed too.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bridge.amqp10.link import Amqp10Link
from tests.support.bridge import ROOT
from tests.support.link_owners import NotingOwner
from tests.support.memory_pair import sessions
from tests.support.rabbitmq import (
    declare_queue,
    delete_queue,
    existing_queue_address,
    unique_queue,
)
from tests.support.relay import Relay
from tests.support.session_churn import WINDOW
from tests.topology.loop import Loop

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


def test_a_session_the_broker_ends_when_it_is_begun_again_after_a_reconnect_is_freed(
        rabbitmq_url: str) -> None:
    """Proton begins an attached link's session again, and re-attaches the link, on the
    next transport after a reconnect; when the queue went away in between, the broker
    ends that session before answering the attach. It used to be kept, never ended on
    our side nor freed, for as long as the connection lived."""
    queue = unique_queue("stale-session")
    declare_queue(rabbitmq_url, queue)
    relay = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])))
    loop = Loop(relay.url(rabbitmq_url))
    try:
        link = Amqp10Link(loop.container, loop.connection, existing_queue_address(queue),
                          sender=False, owner=NotingOwner(), name="stale")
        loop.run_until(lambda: link.up, "the link to attach")
        relay.cut()
        loop.run_until(lambda: not link.up, "the link to be lost with the connection")
        delete_queue(rabbitmq_url, queue)
        relay.restore()
        loop.run_until(lambda: loop.handler.up, "the connection to come back")
        link.forget()  # the fresh link too: nothing of ours should stay on the connection
        loop.run_until(lambda: not list(sessions(loop.connection)),
                       "every session of the link to be freed")
    finally:
        loop.close()
        relay.close()
