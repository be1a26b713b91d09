"""reconcile: missing, duplicate and unexpected ids, latency, and the report."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from mappings.message import AmqpMessage, Properties
from pipeline.inputs import load_archive
from pipeline.reconcile import KEY_DIGEST, reconcile
from tests.pipeline.conftest import BASE_TIME_US, Entry

Archive = Callable[[Iterable[Entry]], Path]


def message(key: str, body: str = "") -> AmqpMessage:
    return AmqpMessage(properties=Properties(message_id=key, correlation_id=f"c-{key}"), body=body or key)


def flow(route: str, sent: range, delivered: list[int], latency_ms: Callable[[int], float]) -> list[Entry]:
    """Rows of ``route``: ``sent`` received at n ms, ``delivered`` (with repeats) after ``latency_ms(n)``."""
    rows: list[Entry] = [(route, "received", message(f"{route}-{n}"), BASE_TIME_US + n * 1000) for n in sent]
    rows += [
        (route, "delivered", message(f"{route}-{n}"), BASE_TIME_US + n * 1000 + int(latency_ms(n) * 1000))
        for n in delivered
    ]
    return rows


def test_a_complete_route_is_ok_with_exact_latency_percentiles(spark: SparkSession, archive: Archive) -> None:
    path = archive(flow("orders", range(1, 101), list(range(1, 101)), latency_ms=float))
    report = reconcile(load_archive(spark, [path]), load_archive(spark, [path]))
    assert report.ok
    [route] = report.routes
    assert (route.route, route.sent, route.delivered, route.missing, route.duplicates, route.unexpected) == (
        "orders", 100, 100, 0, 0, 0)
    assert route.latency_p50_ms == pytest.approx(50.5)  # latencies are 1 ... 100 ms
    assert route.latency_p99_ms == pytest.approx(99.01)


def test_missing_duplicate_and_unexpected_ids_are_found(spark: SparkSession, archive: Archive) -> None:
    delivered = [n for n in range(10) if n != 3] + [5, 5, 7, 42]  # 3 lost; 5 three times, 7 twice; 42 never sent
    path = archive([
        *flow("orders", range(10), delivered, latency_ms=lambda n: 2.0),
        *flow("refunds", range(3), [0, 1, 2], latency_ms=lambda n: 1.0),
        ("refunds", "received", AmqpMessage(body="no id")),
    ])
    archive_rows = load_archive(spark, [path])
    report = reconcile(archive_rows, archive_rows, max_ids=1)
    assert not report.ok
    orders, refunds = report.routes
    assert (orders.sent, orders.delivered, orders.missing, orders.duplicates, orders.unexpected) == (10, 13, 1, 2, 1)
    assert orders.missing_ids == ["orders-3"]
    assert orders.duplicate_ids == ["orders-5"]  # max_ids=1 of the two
    assert orders.unexpected_ids == ["orders-42"]
    assert (refunds.missing, refunds.unkeyed_sent, refunds.latency_p50_ms) == (0, 1, 1.0)

    document = json.loads(report.to_json())
    assert document["ok"] is False
    assert document["totals"] == {"sent": 14, "delivered": 16, "missing": 1, "duplicates": 2,
                                  "unexpected": 1, "unkeyed_sent": 1, "unkeyed_delivered": 0}
    assert document["routes"][0]["missing_ids"] == ["orders-3"]
    table = report.table().splitlines()
    assert table[0].split() == ["route", "sent", "delivered", "missing", "duplicates", "unexpected",
                                "unkeyed", "p50", "ms", "p99", "ms"]
    assert table[1].split() == ["orders", "10", "13", "1", "2", "1", "0", "2.00", "2.00"]
    assert "orders: missing message_ids: orders-3" in table
    assert "orders: duplicate message_ids (first 1 of 2): orders-5" in table
    assert table[-1] == "FAILED: messages are missing"


def test_separate_archives_other_keys_and_sides(spark: SparkSession, archive: Archive) -> None:
    source = archive([("orders", "delivered", message("a")), ("orders", "delivered", message("b"))])
    # downstream, "a" got a new message-id (same correlation-id and body); "b" is unchanged
    renamed = AmqpMessage(properties=Properties(message_id="x", correlation_id="c-a"), body="a")
    target = archive([("orders", "received", renamed), ("orders", "received", message("b"))])
    src, dst = load_archive(spark, [source]), load_archive(spark, [target])
    sides = {"source_side": "delivered", "target_side": "received"}
    assert reconcile(src, dst, **sides).routes[0].missing_ids == ["a"]
    assert reconcile(src, dst, key="correlation_id", **sides).ok
    by_digest = reconcile(src, dst, key=KEY_DIGEST, source_side=None, target_side=None)
    assert (by_digest.routes[0].sent, by_digest.routes[0].missing, by_digest.routes[0].unexpected) == (2, 1, 1)
    with pytest.raises(ValueError, match="cannot match rows by 'bare'"):
        reconcile(src, dst, key="bare")
