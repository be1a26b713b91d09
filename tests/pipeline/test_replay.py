"""replay: archives into the real RabbitMQ (AMQP 1.0), every row counted only once accepted."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from mappings.message import AmqpMessage
from pipeline.inputs import load_archive
from pipeline.replay import ReplayError, replay
from pipeline.sender import SendError, send_all
from tests.pipeline.conftest import Entry
from tests.pipeline.conftest import sample_messages as messages
from tests.support.bridge import free_port
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue, version_of

Archive = Callable[[Iterable[Entry]], Path]


def test_every_row_arrives_and_counts_come_back_per_partition(
    spark: SparkSession, archive: Archive, rabbitmq_url: str
) -> None:
    sent = messages(40)
    path = archive([("orders", "received", m) for m in sent] + [("orders", "delivered", sent[0])])
    address = queue_address(unique_queue("replay"))
    rows = load_archive(spark, [path], side="received")
    result = replay(spark, rows, rabbitmq_url, address, partitions=2)
    assert [p.partition for p in result.partitions] == [0, 1]
    assert all(p.sent > 0 and p.accepted == p.sent for p in result.partitions)
    assert (result.total("sent"), result.total("accepted"), result.complete) == (40, 40, True)
    got = {}
    for received in receive_messages(rabbitmq_url, address, 40):
        message = AmqpMessage.decode(received.raw)
        got[message.properties.message_id] = message
    assert sorted(got) == sorted(m.properties.message_id for m in sent)
    for original in sent:
        copy = got[original.properties.message_id]
        assert copy.body == original.body
        assert copy.application_properties == original.application_properties
        assert copy.properties.content_type == "application/json"
        assert copy.header.durable == original.header.durable  # the archived header went along
        assert copy.header.priority == original.header.priority


def test_one_partition_keeps_archive_order_and_bare_sends_no_header(
    spark: SparkSession, archive: Archive, rabbitmq_url: str
) -> None:
    sent = messages(12)
    # archived out of order: replay sorts by archive time
    path = archive([("orders", "received", m, 1_000_000 * (12 - n)) for n, m in enumerate(sent)])
    address = queue_address(unique_queue("replay-order"))
    result = replay(spark, load_archive(spark, [path]), rabbitmq_url, address, partitions=1,
                    head=False, rate=500.0, window=3)
    assert (result.total("accepted"), len(result.partitions)) == (12, 1)
    got = [AmqpMessage.decode(r.raw) for r in receive_messages(rabbitmq_url, address, 12)]
    assert [m.properties.message_id for m in got] == [f"m-{n}" for n in reversed(range(12))]
    # bare messages: no header, so not durable — but on RabbitMQ 4, which reads an absent
    # durable as true
    durable = [bool(m.header.durable) for m in got]
    assert durable == [version_of(rabbitmq_url) == 4] * 12


def test_an_unreachable_peer_fails_the_replay(spark: SparkSession, archive: Archive) -> None:
    port = free_port()  # nothing listens there
    path = archive([("orders", "received", messages(1)[0])])
    with pytest.raises(ReplayError, match=r"replay to '/queue/nowhere' failed: .*Connection refused"):
        replay(spark, load_archive(spark, [path]), f"amqp://guest:guest@127.0.0.1:{port}", "/queue/nowhere",
               timeout=10.0)


def test_send_all_counts_outcomes_and_reports_a_refused_link(rabbitmq_url: str) -> None:
    address = queue_address(unique_queue("send"))
    payloads = [m.encode() for m in messages(5)]
    outcomes = send_all(rabbitmq_url, address, iter(payloads), window=1)
    assert (outcomes.sent, outcomes.accepted, outcomes.settled) == (5, 5, 5)
    assert len(receive_messages(rabbitmq_url, address, 5)) == 5
    # an exchange that does not exist: the broker ends the session
    with pytest.raises(SendError, match="session error amqp:not-found"):
        send_all(rabbitmq_url, f"/exchange/{unique_queue('absent')}/key", iter(payloads), timeout=10.0)
