"""More links on one connection than the peer allows sessions: RabbitMQ 4 allows 64
(``session_max_per_connection``, its open's ``channel-max`` is 63) and closes the whole
connection with a framing error when a begin names channel 64.

Proton begins sessions before the peer's open is read, on the local channel-max, and
after a reconnect it begins every attached link's session again at once: a bridge with
more than 64 links to RabbitMQ 4 lost its connection at every start and every reconnect.
Every begin now waits for the peer's open and for a free channel
(:meth:`bridge.amqp10.connection.Amqp10ConnectionHandler.when_channels_free`); links
beyond the limit wait, logged and counted, until other links close — all but the last
session, kept for the topology's management requests (declares must not wait for
consumers to leave). The links' sessions are freed when the transport drops, so that a
failover from a broker allowing more sessions (RabbitMQ 3.10) begins none beyond the
limit of RabbitMQ 4 before its open is read.
"""

from __future__ import annotations

import logging

import pytest

from bridge.amqp10.connection import RESERVED_SESSIONS
from bridge.amqp10.link import Amqp10Link
from bridge.topology.management import ManagementClient
from tests.support.link_owners import NotingOwner
from tests.support.rabbitmq import (
    declare_queue,
    delete_queue,
    ensure_node,
    existing_queue_address,
    unique_queue,
)
from tests.support.relay import Relay
from tests.topology.loop import Loop

pytestmark = pytest.mark.rabbitmq(4)

LIMIT = 64
"""RabbitMQ 4.0's default ``session_max_per_connection``."""
FOR_LINKS = LIMIT - RESERVED_SESSIONS
MORE = 6


def test_links_beyond_the_peer_s_session_limit_wait_and_survive_a_reconnect(
        rabbitmq_url: str, caplog: pytest.LogCaptureFixture) -> None:
    queue = unique_queue("session-limit")
    declare_queue(rabbitmq_url, queue)
    relay = Relay(("127.0.0.1", int(rabbitmq_url.rsplit(":", 1)[1])))
    loop = Loop(relay.url(rabbitmq_url))
    try:
        # created before the connection's open is read, as the bridge creates its routes'
        links = [Amqp10Link(loop.container, loop.connection, existing_queue_address(queue),
                            sender=False, owner=NotingOwner(), name=f"l{n}")
                 for n in range(LIMIT + MORE)]
        handler = loop.handler
        loop.run_until(lambda: handler.up, "the connection to open")
        # its timers (the hold, the ends overdue) need the container: the bound event has none
        assert handler.container is loop.container
        loop.run_until(lambda: sum(link.up for link in links) == FOR_LINKS,
                       f"{FOR_LINKS} links to attach")
        loop.settle()
        assert handler.up and handler.reconnects == 0, "the broker closed the connection"
        assert sum(link.up for link in links) == FOR_LINKS
        assert handler.begins_waiting == LIMIT + MORE - FOR_LINKS
        assert any(r.__dict__.get("event") == "session_limit" for r in caplog.records)

        # the reserved session: a management request goes past the waiting links
        management = ManagementClient(loop.container, loop.connection, name="limit")
        response = loop.call(management.request, "GET", f"/queues/{queue}", None)
        assert response.status == 200 and response.body["name"] == queue, response
        management.close()
        loop.run_until(lambda: handler.begins_waiting == LIMIT + MORE - FOR_LINKS,
                       "the management pair's session to end")

        for link in links[:MORE + 1]:
            link.close()
        loop.run_until(lambda: sum(link.up for link in links) == FOR_LINKS,
                       "the waiting links to attach as others close")
        assert handler.begins_waiting == 0

        # the links' sessions are freed at the loss (proton would begin them again before
        # the open), and begun again through the gate
        with caplog.at_level(logging.WARNING):
            relay.cut()
            loop.run_until(lambda: not handler.up, "the connection to drop")
            relay.restore()
            loop.run_until(lambda: sum(link.up for link in links) == FOR_LINKS,
                           "every open link to attach again", limit=60.0)
        attempts = handler.attempts
        loop.settle()
        assert handler.up and handler.attempts == attempts, "the broker closed the connection"
        assert not [r for r in caplog.records if "framing-error" in r.getMessage()]
    finally:
        loop.close()
        relay.close()
        delete_queue(rabbitmq_url, queue)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def test_a_failover_from_a_broker_allowing_more_sessions_keeps_the_connection(
        rabbitmq_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """The links attached on RabbitMQ 3.10 (which allows far more than 64 sessions), then
    the connection fails over to RabbitMQ 4 (the relay's target changes while it is cut:
    the same URL, another broker). proton began every attached link's session again on the
    new transport before RabbitMQ 4's open was read: channels beyond 63, a framing error,
    and the same at every reconnect. The links' sessions are freed at the loss now, and the
    fresh ones begin through the gate: all but those beyond the limit attach, and the
    connection stays."""
    url3 = ensure_node(3)
    queue = unique_queue("failover-limit")
    for url in (url3, rabbitmq_url):
        declare_queue(url, queue)
    relay = Relay(("127.0.0.1", _port(url3)))
    loop = Loop(relay.url(url3))
    try:
        address = f"/amq/queue/{queue}"  # (the form both versions take)
        links = [Amqp10Link(loop.container, loop.connection, address, sender=False,
                            owner=NotingOwner(), name=f"l{n}") for n in range(LIMIT + MORE)]
        handler = loop.handler
        loop.run_until(lambda: all(link.up for link in links), "every link to attach on 3.10",
                       limit=60.0)
        assert handler.peer.endswith(f":{relay.port}")
        with caplog.at_level(logging.WARNING):
            relay.cut()
            relay.target = ("127.0.0.1", _port(rabbitmq_url))
            loop.run_until(lambda: not handler.up, "the connection to drop")
            relay.restore()
            loop.run_until(lambda: sum(link.up for link in links) == FOR_LINKS,
                           f"{FOR_LINKS} links to attach on RabbitMQ 4", limit=60.0)
        attempts = handler.attempts
        loop.settle(1.0)
        assert handler.up and handler.attempts == attempts, "the broker closed the connection"
        assert not [r for r in caplog.records if "framing-error" in r.getMessage()]
        assert sum(link.up for link in links) == FOR_LINKS
        assert handler.begins_waiting == LIMIT + MORE - FOR_LINKS
    finally:
        loop.close()
        relay.close()
        for url in (url3, rabbitmq_url):
            delete_queue(url, queue)
