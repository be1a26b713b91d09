"""Façade logins are checked off the event loop: a slow PBKDF2 check (or a client
guessing passwords) never holds up other clients or the routes, and a flood of logins
from one address cannot hold up another address's login (bridge/logins.py)."""

from __future__ import annotations

import threading
from pathlib import Path

from amqp010.events import ConnectionClosed
from amqp010.spec import CloseCode
from amqp010.transport import BlockingClient, ClientError
from bridge.security.passwords import hash_password
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.logins import RawLogin
from tests.support.logs import records
from tests.support.metrics import metrics_port, poll, scrape
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue

SLOW_ITERATIONS = 10_000_000
"""About a second or two of PBKDF2 per check on a quiet test machine."""
HANDSHAKE_TIMEOUT = 120
"""Seconds the listener gives a login: room for several slow checks in a row on a loaded
machine (other test workers share the cores), where the default 10 s cut them short."""
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
    handshake_timeout: {HANDSHAKE_TIMEOUT}
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
    from bridge.security.passwords import PasswordTable

    table = PasswordTable({USER: hash_password(PASSWORD, iterations=10_000), "plain": "pw"})
    assert table.quick_check(USER, PASSWORD) is None  # needs PBKDF2: off the loop
    assert table.quick_check("nobody", "x") is None  # unknown users cost the same
    # among hashes a plain password costs a PBKDF2 too: answering it at once would tell
    # which names exist (unknown ones are never answered at once)
    assert table.quick_check("plain", "pw") is None and table.quick_check("plain", "no") is None
    assert table.check("plain", "pw") is True and table.check("plain", "no") is False
    assert table.check(USER, "wrong") is False and table.quick_check(USER, "wrong") is None
    assert table.check(USER, PASSWORD) is True
    assert table.quick_check(USER, PASSWORD) is True  # remembered: microseconds from now on
    assert table.quick_check(USER, "wrong") is None
    assert table.check("nobody", "x") is False



def test_a_login_flood_from_one_address_cannot_hold_up_another_clients_login(
        rabbitmq_url: str, tmp_path: Path) -> None:
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  facade:
    protocol: amqp0-10
    bind: "127.0.0.1:{port}"
    users: {{{USER}: "{hash_password(PASSWORD, iterations=SLOW_ITERATIONS)}"}}
    handshake_timeout: {HANDSHAKE_TIMEOUT}
metrics: {{bind: "127.0.0.1:0"}}
routes:
  - name: events-out
    from: {{listener: facade, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(unique_queue("flood"))}}}
"""
    with BridgeRun(config, tmp_path, log_level="debug") as bridge:
        wait_listening(port, bridge)
        metrics = metrics_port(bridge.log)
        # 127.0.0.2 fills its share (4: two checks run, two wait) with unknown user names;
        # its next logins are refused at once
        holding = [RawLogin("127.0.0.2", port, f"hold{i}") for i in range(4)]
        over = [RawLogin("127.0.0.2", port, f"over{i}") for i in range(2)]
        for client in over:
            refused = client.answer()
            assert isinstance(refused, ConnectionClosed)
            assert refused.code == CloseCode.CONNECTION_FORCED
            assert refused.text == ("authentication failed: too many logins waiting from this "
                                    "address; try again later")
            client.close()
        # 127.0.0.3 queues four and goes away: their checks are dropped, never run
        for client in [RawLogin("127.0.0.3", port, f"gone{i}") for i in range(4)]:
            client.close()
        poll(lambda: scrape(metrics), lambda s: s.value(
            "amqp_bridge_logins_abandoned_total", listener="facade") == 4, 30,
             "the abandoned logins counted")
        # the right password from 127.0.0.1 gets its turn after at most one more check of
        # 127.0.0.2's backlog
        with BlockingClient.connect(f"amqp://{USER}:{PASSWORD}@127.0.0.1:{port}",
                                    timeout=60) as client:
            assert client.opened is not None and client.opened.user == USER
        counters = scrape(metrics)
        for client in holding:
            client.close()
        log = bridge.log()
    assert counters.value("amqp_bridge_logins_refused_total", listener="facade",
                          reason="peer_full") == 2
    assert counters.value("amqp_bridge_logins_refused_total", listener="facade",
                          reason="listener_full") == 0
    lines = [r for r in records(log) if r.get("listener") == "facade"]
    checks = [r["user"] for r in lines if r.get("event") == "login_check_started"]
    assert not any(user.startswith("gone") for user in checks), checks
    queued_at = next(i for i, r in enumerate(lines)
                     if r.get("event") == "login_queued" and r.get("user") == USER)
    before = [r["user"] for r in lines[queued_at:] if r.get("event") == "login_check_started"]
    assert before.index(USER) <= 1, before  # one check per other address waiting, at most
    warnings = [(r["event"], r["peer"]) for r in lines if r.get("level") == "warning"]
    # rate-limited: one line per address and kind for the burst
    assert warnings.count(("login_refused_busy", "127.0.0.2")) == 1, warnings
    assert warnings.count(("login_abandoned", "127.0.0.3")) == 1, warnings
    # a refusal for load is not logged once more per connection as a bad login
    assert not any(r.get("event") == "login_refused" and "too many" in r.get("error", "")
                   for r in lines), warnings
