"""The loop's ``epoll`` selector (bridge/runtime/selector.py) against proton's own.

proton's ``IO.Selector`` (``select()``, every deadline read afresh each round) is the
reference: the same selectables, wishes and deadlines must give the same readable,
writable and expired answers. Real sockets (socket pairs), so readiness is the kernel's.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from proton._io import IO

from bridge.runtime.selector import EpollSelector

PAST = 1.0
"""A deadline long gone (seconds since the epoch, as proton's deadlines are)."""


class _Sel:
    """What a selector reads of proton's ``Selectable``: wishes, a deadline, a socket."""

    def __init__(self, sock: socket.socket | None) -> None:
        self.sock = sock
        self.reading = False
        self.writing = False
        self._deadline: float = 0

    @property
    def deadline(self) -> float | None:  # (proton's: None for none)
        return self._deadline or None

    def fileno(self) -> int:
        return self.sock.fileno() if self.sock is not None else -1


@contextmanager
def _pairs(count: int) -> Iterator[list[tuple[socket.socket, socket.socket]]]:
    pairs = [socket.socketpair() for _ in range(count)]
    try:
        yield pairs
    finally:
        for a, b in pairs:
            a.close()
            b.close()


def _names(sels: list[Any], found: list[Any]) -> set[int]:
    return {sels.index(s) for s in found}


def _future() -> float:
    return time.time() + 1000


OPS = st.lists(st.tuples(
    st.sampled_from(["read", "write", "both", "none", "data", "drain", "deadline-past",
                     "deadline-future", "later-untold", "drop-untold", "remove", "add"]),
    st.integers(0, 2)), min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_it_answers_as_protons_selector_does(ops: list[tuple[str, int]]) -> None:
    """Any sequence of wishes, data, deadlines (earlier ones told, later or dropped ones
    told or not) and removals: after each step, a zero-timeout select of both selectors
    gives the same readable, writable and expired selectables."""
    with _pairs(3) as pairs:
        sels = [_Sel(a) for a, _ in pairs]
        ours, protons = EpollSelector(), IO.Selector()
        held = set(range(3))
        for s in sels:
            ours.add(s)
            protons.add(s)
        try:
            for op, i in ops:
                s, peer = sels[i], pairs[i][1]
                tell = True
                if op == "read":
                    s.reading, s.writing = True, False
                elif op == "write":
                    s.reading, s.writing = False, True
                elif op == "both":
                    s.reading = s.writing = True
                elif op == "none":
                    s.reading = s.writing = False
                elif op == "data":
                    peer.send(b"x")
                elif op == "drain":
                    pairs[i][0].setblocking(False)
                    with suppress(BlockingIOError):
                        pairs[i][0].recv(4096)
                elif op == "deadline-past":
                    s._deadline = PAST
                elif op == "deadline-future":
                    s._deadline = _future()
                elif op == "later-untold":
                    if s._deadline:
                        s._deadline = max(s._deadline, _future())
                    tell = False
                elif op == "drop-untold":
                    s._deadline = 0
                    tell = False
                elif op == "remove":
                    if i in held:
                        held.discard(i)
                        ours.remove(s)
                        protons.remove(s)
                    continue
                elif op == "add":
                    if i not in held:
                        held.add(i)
                        ours.add(s)
                        protons.add(s)
                    continue
                if tell and i in held:
                    ours.update(s)
                    protons.update(s)
                got = ours.select(0)
                want = protons.select(0)
                assert [_names(sels, g) for g in got] == [_names(sels, w) for w in want], \
                    (op, i)
                assert ours.selectables == protons.selectables
        finally:
            ours.close()


def test_a_deadline_is_kept_for_a_selectable_with_no_socket() -> None:
    """proton's timer selectable has no descriptor: only its deadline is watched, and the
    select waits no longer than until it (a wait bounded by the deadline, not a 5 s one)."""
    timer = _Sel(None)
    selector = EpollSelector()
    try:
        selector.add(timer)
        timer._deadline = time.time() + 0.05
        selector.update(timer)
        readable, writable, expired = selector.select(5.0)
        if not expired:  # woke at the deadline, a hair early for the clock: once more
            readable, writable, expired = selector.select(5.0)
        assert (readable, writable, expired) == ([], [], [timer])
        # reported in every round until its deadline moves, as proton's selector does
        assert selector.select(0)[2] == [timer]
        timer._deadline = 0
        assert selector.select(0)[2] == []
    finally:
        selector.close()


def test_a_socket_closed_before_its_removal_does_not_shadow_the_next_one() -> None:
    """A selectable whose socket was closed without being removed first: a new socket
    given the same descriptor number is watched and reported as itself."""
    selector = EpollSelector()
    first_pair = socket.socketpair()
    old = _Sel(first_pair[0])
    old.reading = True
    selector.add(old)
    number = first_pair[0].fileno()
    first_pair[0].close()
    first_pair[1].close()
    a, b = socket.socketpair()
    try:
        # the kernel hands out the lowest free numbers: the old one comes back
        assert number in (a.fileno(), b.fileno())
        mine = a if a.fileno() == number else b
        peer = b if mine is a else a
        new = _Sel(mine)
        new.reading = True
        selector.add(new)
        peer.send(b"x")
        assert selector.select(1.0)[0] == [new]
        selector.remove(old)  # late: it must not take the new one's registration away
        assert selector.select(1.0)[0] == [new]
    finally:
        a.close()
        b.close()
        selector.close()


def test_a_hang_up_is_reported_only_for_what_was_asked() -> None:
    """A peer that went: readable (recv then says end of stream) while reading is asked;
    nothing at all while the selectable asks for nothing (select() would not report it,
    and epoll would, round after round: a busy loop)."""
    a, b = socket.socketpair()
    selector = EpollSelector()
    try:
        s = _Sel(a)
        selector.add(s)
        b.close()
        assert selector.select(0) == ([], [], [])
        s.reading = True
        selector.update(s)
        assert selector.select(0)[0] == [s]
    finally:
        a.close()
        selector.close()


def test_the_bridge_raises_its_soft_descriptor_limit_to_the_hard_one() -> None:
    """A process started with ``ulimit -n 64`` (soft) under a larger hard limit: the bridge
    lifts the soft one, so its façades are not capped at 64 descriptors."""
    import resource

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 4096))

    out = subprocess.run(
        [sys.executable, "-c", "import resource\n"
         "from bridge.runtime.selector import raise_descriptor_limit\n"
         "print(raise_descriptor_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])"],
        preexec_fn=low, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["4096", "4096"]
