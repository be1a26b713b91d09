"""The façade's login queue (bridge/logins.py) and the password table's cost rules, without
a network: bounded per listener and per client address, served round-robin across
addresses, abandoned checks dropped, and no user-name oracle in the answer time."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

from bridge.ops.logs import WarnLimiter
from bridge.security.logins import (
    LISTENER_FULL,
    PEER_FULL,
    REFUSAL_TEXT,
    LoginChecks,
    LoginQueue,
    PendingLogin,
    peer_address,
)
from bridge.security.passwords import PasswordTable, hash_password


class Client:
    """A login's client: records its answer, can go away."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.answers: list[bool] = []
        self.closed = False


def login(peer: str, client: Client | None = None) -> PendingLogin:
    client = client or Client(peer)
    return PendingLogin(peer, client.name, "pw", client.answers.append, lambda: client.closed)


def test_each_address_gets_its_share_and_the_listener_its_bound() -> None:
    queue = LoginQueue(max_pending=6, max_per_peer=4)
    attacker = [login("10.0.0.66") for _ in range(6)]
    assert [queue.add(x) for x in attacker] == [None] * 4 + [PEER_FULL] * 2
    assert [queue.add(login("10.0.0.7")) for _ in range(3)] == [None, None, LISTENER_FULL]
    assert queue.pending == 6 and queue.refused == {PEER_FULL: 2, LISTENER_FULL: 1}
    # a running check still uses its address's share until it finishes
    running = queue.take()
    assert running is attacker[0] and running.state == "running"
    assert queue.add(login("10.0.0.66")) == PEER_FULL
    assert queue.finished(running) is True
    assert queue.add(login("10.0.0.66")) is None


def test_addresses_take_turns_so_a_backlog_delays_others_by_one_check() -> None:
    queue = LoginQueue(max_pending=100, max_per_peer=50)
    attacker = [login("10.0.0.66") for _ in range(40)]
    for x in attacker:
        assert queue.add(x) is None
    first, second = queue.take(), queue.take()  # two workers busy with the attacker's
    honest = login("10.0.0.7")
    other = login("10.0.0.8")
    assert queue.add(honest) is None and queue.add(other) is None
    order = [queue.take() for _ in range(5)]
    # honest and other each wait for at most one check per other address with logins waiting
    assert order.index(honest) <= 2 and order.index(other) <= 2
    assert order == [attacker[2], honest, other, attacker[3], attacker[4]]
    assert first is attacker[0] and second is attacker[1]


def test_a_login_whose_client_went_away_is_dropped_before_it_runs() -> None:
    queue = LoginQueue(max_pending=10, max_per_peer=10)
    clients = [Client(f"c{i}") for i in range(4)]
    logins = [login("10.0.0.66", c) for c in clients]
    for x in logins:
        queue.add(x)
    running = queue.take()
    assert running is logins[0]
    assert queue.remove(logins[1]) is True  # told: dropped at once
    clients[2].closed = True  # not told: skipped when its turn comes
    assert queue.take() is logins[3]
    assert queue.take() is None
    assert [x.state for x in logins] == ["running", "abandoned", "abandoned", "running"]
    assert queue.abandoned == 2 and queue.pending == 2
    # a running check whose client goes is marked; its end frees the place, not answered
    clients[0].closed = True
    assert queue.remove(logins[0]) is False
    assert queue.finished(logins[0]) is False
    assert queue.abandoned == 3 and queue.pending == 1
    assert queue.finished(logins[3]) is True
    assert queue.pending == 0 and queue.waiting() == 0


def test_peer_addresses_are_ips_and_ipv6_slash_64s() -> None:
    assert peer_address("127.0.0.2:40000") == "127.0.0.2"
    assert peer_address("2001:db8:0:1:aa::5:40000") == "2001:db8:0:1::/64"
    assert peer_address("2001:db8:0:1:bb::9:40001") == "2001:db8:0:1::/64"
    assert peer_address("::ffff:10.1.2.3:5672") == "10.1.2.3"


def test_warnings_are_limited_per_key_and_count_what_they_held_back() -> None:
    now = [100.0]
    limiter = WarnLimiter(interval=10.0, clock=lambda: now[0])
    assert limiter.allow("a") == 0
    assert [limiter.allow("a") for _ in range(3)] == [None, None, None]
    assert limiter.allow("b") == 0
    now[0] += 10.0
    assert limiter.allow("a") == 3
    assert limiter.allow("a") is None


class Loop:
    """Stands in for the event loop: calls handed back from workers wait here."""

    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []
        self.cond = threading.Condition()

    def call_soon(self, fn: Callable[[], None]) -> None:
        with self.cond:
            self.calls.append(fn)
            self.cond.notify_all()

    def run_one(self) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.calls, timeout=30), "no check finished"
            fn = self.calls.pop(0)
        fn()


def test_workers_only_hash_what_the_loop_hands_them(caplog: pytest.LogCaptureFixture) -> None:
    gate = threading.Event()
    hashed: list[str] = []

    def verify(user: str, password: str) -> bool:  # a worker thread
        gate.wait(30)
        hashed.append(user)
        return user == "good"

    loop = Loop()
    checks = LoginChecks("facade", verify, max_pending=10, max_per_peer=3, workers=1,
                         make_call_soon=lambda: loop.call_soon)
    clients = {name: Client(name) for name in ("a1", "a2", "a3", "a4", "gone", "good")}

    def submit(peer: str, name: str) -> tuple[PendingLogin, str | None]:
        c = clients[name]
        return checks.submit(peer, name, "pw", c.answers.append, lambda: c.closed)

    caplog.set_level(logging.WARNING, logger="bridge.security.logins")
    started = [submit("10.0.0.66:1", n) for n in ("a1", "a2", "a3")]
    assert all(refusal is None for _, refusal in started)
    assert submit("10.0.0.66:5", "a4")[1] == REFUSAL_TEXT[PEER_FULL]
    gone, _ = submit("10.0.0.9:1", "gone")
    submit("10.0.0.7:1", "good")
    clients["gone"].closed = True
    checks.client_gone(gone)
    clients["a3"].closed = True  # goes while waiting, nobody tells: dropped when its turn comes
    gate.set()
    for _ in range(3):  # a1 (running), then a2 and good; gone never runs
        loop.run_one()
    assert hashed == ["a1", "a2", "good"]
    assert clients["good"].answers == [True] and clients["a1"].answers == [False]
    with loop.cond:
        assert not loop.calls
    assert checks.running == 0 and checks.queue.pending == 0
    assert checks.abandoned == 2 and checks.refused == {PEER_FULL: 1, LISTENER_FULL: 0}
    assert hashed == ["a1", "a2", "good"] and clients["gone"].answers == []
    events = [(r.__dict__["event"], r.__dict__["peer"]) for r in caplog.records]
    assert ("login_refused_busy", "10.0.0.66") in events
    assert events.count(("login_abandoned", "10.0.0.9")) == 1
    assert events.count(("login_abandoned", "10.0.0.66")) == 1
    checks.close()


def test_a_check_that_raises_refuses_the_login_and_the_queue_goes_on() -> None:
    def verify(user: str, password: str) -> bool:
        if user == "boom":
            raise RuntimeError("hash library broke")
        return True

    loop = Loop()
    checks = LoginChecks("facade", verify, max_pending=10, max_per_peer=3, workers=1,
                         make_call_soon=lambda: loop.call_soon)
    boom, after = Client("boom"), Client("after")
    checks.submit("10.0.0.1:1", "boom", "pw", boom.answers.append, lambda: False)
    checks.submit("10.0.0.1:2", "after", "pw", after.answers.append, lambda: False)
    loop.run_one()
    loop.run_one()
    assert boom.answers == [False] and after.answers == [True]
    checks.close()


def pbkdf2_work(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the PBKDF2 iterations every call runs."""
    work: list[int] = []
    real = hashlib.pbkdf2_hmac

    def counting(name: str, password: bytes, salt: bytes, iterations: int, *a: Any) -> bytes:
        work.append(iterations)
        return real(name, password, salt, iterations, *a)

    monkeypatch.setattr(hashlib, "pbkdf2_hmac", counting)
    return work


def test_every_login_of_a_hashed_table_costs_the_most_expensive_hash(
        monkeypatch: pytest.MonkeyPatch) -> None:
    table = PasswordTable({"cheap": hash_password("c", iterations=10_000),
                           "dear": hash_password("d", iterations=30_000), "plain": "p"})
    work = pbkdf2_work(monkeypatch)
    costs = []
    for user, password in [("nobody", "x"), ("cheap", "wrong"), ("cheap", "c"),
                           ("dear", "wrong"), ("dear", "d"), ("plain", "wrong"), ("plain", "p")]:
        assert table.quick_check(user, password) is None  # nothing answered at once
        before = len(work)
        assert table.verify(user, password) is (password in ("c", "d", "p"))
        costs.append(sum(work[before:]))
    assert costs == [30_000] * 7
    assert table.quick_check("cheap", "c") is True  # a repeat needs the right password
    assert table.quick_check("cheap", "wrong") is None


def test_a_table_of_plain_passwords_answers_everyone_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    table = PasswordTable({"plain": "p"})
    work = pbkdf2_work(monkeypatch)
    assert table.quick_check("plain", "p") is True
    assert table.quick_check("plain", "x") is False
    assert table.quick_check("nobody", "p") is False
    assert work == []
