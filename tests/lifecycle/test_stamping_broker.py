"""The in-memory 0-10 broker's ``stamp_user_id`` option: every delivery carries the
configured user-id (as qpidd stamps messages that came in over AMQP 1.0), whatever the
publisher set, and the stored message keeps its own properties."""

from __future__ import annotations

import pytest

from amqp010.spec import MessageProperties
from amqp010.testing.broker import Broker
from tests.support.bridge import legacy_client


@pytest.mark.parametrize("stamp", [b"", b"alice"])
def test_every_delivery_carries_the_stamped_user_id(stamp: bytes) -> None:
    broker = Broker(users={"guest": "guest"}, stamp_user_id=stamp)
    server = broker.serve()
    try:
        with legacy_client(server) as client:
            client.declare_queue("q")
            client.publish(b"with", routing_key="q",
                           properties=MessageProperties(user_id=b"guest", app_id=b"app"))
            client.publish(b"without", routing_key="q")  # no message-properties at all
            original = broker.queues["q"].messages[0]  # publishes completed: enqueued
            client.subscribe("q", accept_mode=1)  # no accepts: the broker keeps nothing
            got = [client.receive("q", timeout=10) for _ in range(2)]
        assert [(m.body, m.message_properties.user_id) for m in got] == [
            (b"with", stamp), (b"without", stamp)]
        assert got[0].message_properties.app_id == b"app"
        assert original.message_properties.user_id == b"guest"  # a stamped copy went out
    finally:
        server.stop()


def test_without_the_option_deliveries_keep_the_publishers_user_id() -> None:
    broker = Broker(users={"guest": "guest"})
    server = broker.serve()
    try:
        with legacy_client(server) as client:
            client.declare_queue("q")
            client.publish(b"m", routing_key="q", properties=MessageProperties(user_id=b"guest"))
            client.subscribe("q")
            assert client.receive("q", timeout=10).message_properties.user_id == b"guest"
    finally:
        server.stop()
