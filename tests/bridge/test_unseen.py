"""bridge.facade.core.unseen: which released messages get their first header back."""

from __future__ import annotations

from proton import uint

from bridge.facade.core.unseen import UnseenReleases
from mappings.message import AmqpMessage, BodyKind, Header, Properties


def message(body: bytes, first_acquirer: bool | None = True, count: int | None = None
            ) -> AmqpMessage:
    return AmqpMessage(header=Header(first_acquirer=first_acquirer,
                                     delivery_count=None if count is None else uint(count)),
                       properties=Properties(message_id="m"), body_kind=BodyKind.DATA,
                       body=[body])


def back(body: bytes) -> AmqpMessage:
    """``body`` as RabbitMQ sends it again after a release: first-acquirer false."""
    return AmqpMessage.decode(message(body, first_acquirer=False, count=0).encode())


def test_a_fresh_message_released_unseen_comes_back_fresh_once() -> None:
    unseen = UnseenReleases()
    unseen.remember(message(b"a").encode())
    again = back(b"a")
    assert unseen.restore(again)
    assert (again.header.first_acquirer, again.header.delivery_count) == (True, None)
    later = back(b"a")  # a client had it since, and gave it back
    assert not unseen.restore(later) and later.header.first_acquirer is False
    assert len(unseen) == 0


def test_what_arrived_redelivered_or_is_unreadable_is_not_remembered() -> None:
    unseen = UnseenReleases()
    unseen.remember(message(b"a", first_acquirer=False).encode())
    unseen.remember(message(b"b", count=2).encode())
    unseen.remember(b"\x00not amqp")
    assert len(unseen) == 0
    assert not unseen.restore(back(b"a"))


def test_another_message_is_not_restored_and_the_oldest_are_forgotten() -> None:
    unseen = UnseenReleases(limit=2)
    for body in (b"a", b"b", b"c"):
        unseen.remember(message(body).encode())
    assert not unseen.restore(back(b"z"))
    assert not unseen.restore(back(b"a"))  # beyond the limit
    assert unseen.restore(back(b"b")) and unseen.restore(back(b"c"))
