"""Façade logins are checked off the event loop: a slow PBKDF2 check (or a client
guessing passwords) never holds up other clients or the routes."""

from __future__ import annotations

import threading
from pathlib import Path

from bridge.amqp010.events import ConnectionClosed
from bridge.amqp010.spec import CloseCode
from bridge.amqp010.transport import BlockingClient, ClientError
from bridge.passwords import hash_password
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue

SLOW_ITERATIONS = 10_000_000
"""About a second or two of PBKDF2 per check on the test machines."""
USER, PASSWORD = "app", "slow-to-check"


def test_a_slow_login_check_does_not_hold_up_other_clients(rabbitmq_url: str,
                                                           tmp_path: Path) -> None:
    events = unique_queue("logins-events")
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  facade:
    protocol: amqp0-10
    bind: "127.0.0.1:{port}"
    users: {{{USER}: "{hash_password(PASSWORD, iterations=SLOW_ITERATIONS)}"}}
    allow_anonymous: true
routes:
  - name: events-out
    from: {{listener: facade, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(events)}}}
"""
    order: list[str] = []
    refusals: list[ClientError] = []
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)

        def guess() -> None:  # a wrong password: the bridge pays the whole PBKDF2 check
            try:
                BlockingClient.connect(f"amqp://{USER}:wrong@127.0.0.1:{port}", timeout=60)
            except ClientError as exc:
                refusals.append(exc)
            order.append("wrong password refused")

        guesser = threading.Thread(target=guess)
        guesser.start()
        # while that check runs, another client logs in, publishes and has it confirmed
        with BlockingClient.connect(f"amqp://127.0.0.1:{port}", timeout=60) as client:
            client.publish(b"not held up", exchange="events", routing_key="e")  # waits
        order.append("published")
        guesser.join(60)
        assert not guesser.is_alive()
        # the right password still gets in (checked off the loop as well)
        with BlockingClient.connect(f"amqp://{USER}:{PASSWORD}@127.0.0.1:{port}",
                                    timeout=60) as client:
            assert client.opened is not None and client.opened.user == USER
        log = bridge.log()
    assert order == ["published", "wrong password refused"], log
    [refused] = refusals
    assert isinstance(refused.event, ConnectionClosed)
    assert refused.event.code == CloseCode.CONNECTION_FORCED
    assert refused.event.text == f"authentication failed: bad credentials for '{USER}'"
    assert "wrong" not in log and PASSWORD not in log
    [received] = receive_messages(rabbitmq_url, queue_address(events), 1, timeout=20)
    assert bytes(received.message.body) == b"not held up"


def test_quick_check_answers_only_what_costs_microseconds() -> None:
    """The worker-thread check and the quick check agree with the hash."""
    from bridge.passwords import PasswordTable

    table = PasswordTable({USER: hash_password(PASSWORD, iterations=10_000), "plain": "pw"})
    assert table.quick_check(USER, PASSWORD) is None  # needs PBKDF2: off the loop
    assert table.quick_check("nobody", "x") is None  # unknown users cost the same
    assert table.quick_check("plain", "pw") is True and table.quick_check("plain", "no") is False
    assert table.check(USER, "wrong") is False and table.quick_check(USER, "wrong") is None
    assert table.check(USER, PASSWORD) is True
    assert table.quick_check(USER, PASSWORD) is True  # remembered: microseconds from now on
    assert table.quick_check(USER, "wrong") is None
    assert table.check("nobody", "x") is False

