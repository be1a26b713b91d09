"""The bounded producer → consumer hand-off behind the archive writer."""

from __future__ import annotations

import threading

import pytest

from pipeline.handoff import Handoff


def test_the_consumer_takes_everything_in_order() -> None:
    handoff = Handoff(3)
    for item in "abc":
        assert handoff.put(item)
    assert not handoff.put("d", block=False)  # full
    assert handoff.put("stop", urgent=True)  # urgent items ignore the bound
    assert handoff.take() == ["a", "b", "c", "stop"]
    assert handoff.take(timeout=0) == []
    with pytest.raises(ValueError):
        Handoff(0)


def test_a_full_handoff_blocks_until_the_consumer_takes() -> None:
    handoff = Handoff(1)
    handoff.put(1)
    producer = threading.Thread(target=handoff.put, args=(2,))
    producer.start()
    producer.join(0.2)
    assert producer.is_alive() and len(handoff) == 1
    assert handoff.take() == [1]
    producer.join(30)
    assert handoff.take() == [2]


def test_wait_for_returns_once_enough_items_or_an_urgent_one_are_waiting() -> None:
    handoff = Handoff(10)
    filler = threading.Thread(target=lambda: [handoff.put(n) for n in range(3)])
    filler.start()
    handoff.wait_for(30, 3)
    filler.join()
    assert len(handoff) == 3
    handoff.take()
    waiter = threading.Thread(target=handoff.wait_for, args=(30, 5))
    waiter.start()
    handoff.put("flush", urgent=True)
    waiter.join(30)
    assert not waiter.is_alive()
