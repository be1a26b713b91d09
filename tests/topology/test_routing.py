"""The emulated exchanges (bridge/topology/routing.py): each exchange type routes as
RabbitMQ routes, checked case by case and against a real RabbitMQ with the same
bindings and publishes."""

from __future__ import annotations

import uuid
from typing import Any

import pika
import pytest

from bridge.topology import BindingSpec, ExchangeSpec
from bridge.topology.routing import RoutingTable, headers_match, topic_matches
from tests.support.rabbitmq import ensure_rabbitmq

TOPIC_CASES = [
    # (binding key, routing key, matches)
    ("a.b.c", "a.b.c", True), ("a.b.c", "a.b", False), ("a.b", "a.b.c", False),
    ("*.b.*", "a.b.c", True), ("*.b.*", "a.b", False), ("*", "a", True), ("*", "", False),
    ("*", "a.b", False), ("#", "", True), ("#", "a", True), ("#", "a.b.c", True),
    ("a.#", "a", True), ("a.#", "a.b.c", True), ("a.#", "b.a", False),
    ("#.c", "c", True), ("#.c", "a.b.c", True), ("#.c", "a.b.c.d", False),
    ("a.#.c", "a.c", True), ("a.#.c", "a.b.b.c", True), ("a.#.c", "a.b.d", False),
    ("#.#", "a.b", True), ("#.*", "", False), ("#.*", "a", True), ("*.#", "a.b", True),
    ("a.*.#", "a", False), ("a.*.#", "a.b", True), ("news.#", "news", True),
    ("a..b", "a..b", True), ("a.*.b", "a..b", True), ("", "", True), ("", "a", False),
    ("usa.#", "usa.weather.news", True), ("#.weather.#", "europe.weather", True),
]


@pytest.mark.parametrize(("binding", "key", "expected"), TOPIC_CASES)
def test_topic_keys_match_as_amqp_defines(binding: str, key: str, expected: bool) -> None:
    assert topic_matches(binding, key) is expected


HEADER_CASES: list[tuple[dict[str, Any], dict[str, Any], bool]] = [
    ({"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3}, True),
    ({"a": 1, "b": 2}, {"a": 1}, False),
    ({"x-match": "any", "a": 1, "b": 2}, {"a": 1}, True),
    ({"x-match": "any", "a": 1, "b": 2}, {"a": 2}, False),
    ({"x-match": "all", "a": 1, "x-other": 5}, {"a": 1}, True),
    ({"x-match": "all-with-x", "a": 1, "x-other": 5}, {"a": 1}, False),
    ({"x-match": "any-with-x", "x-other": 5}, {"x-other": 5}, True),
    ({"x-match": "all"}, {}, True),
    ({"x-match": "any"}, {"a": 1}, False),
    ({"a": None}, {"a": "anything"}, True),
]


@pytest.mark.parametrize(("arguments", "headers", "expected"), HEADER_CASES)
def test_headers_bindings_match_all_or_any(arguments: dict[str, Any],
                                           headers: dict[str, Any], expected: bool) -> None:
    assert headers_match(arguments, headers) is expected


def table_with(kind: str, *bindings: tuple[str, str]) -> RoutingTable:
    table = RoutingTable()
    table.add_exchange(ExchangeSpec("x", kind))
    for queue, key in bindings:
        table.add_queue(queue)
        table.bind(BindingSpec("x", queue, key))
    return table


def test_direct_fanout_and_the_default_exchange() -> None:
    direct = table_with("direct", ("q1", "k"), ("q2", "k"), ("q3", "other"))
    assert direct.route("x", "k") == ["q1", "q2"]
    assert direct.route("x", "none") == []
    assert direct.route("", "q3") == ["q3"]
    assert direct.route("", "unknown") == []
    fanout = table_with("fanout", ("q1", "a"), ("q2", "b"))
    assert fanout.route("x", "whatever") == ["q1", "q2"]


def test_a_queue_bound_twice_receives_one_copy_and_unbind_removes_one_binding() -> None:
    table = table_with("topic", ("q", "a.*"), ("q", "*.b"))
    assert table.route("x", "a.b") == ["q"]
    table.unbind(BindingSpec("x", "q", "a.*"))
    assert table.route("x", "a.c") == []
    assert table.route("x", "c.b") == ["q"]
    table.bind(BindingSpec("x", "q", "*.b"))
    assert table.bindings("x") == [BindingSpec("x", "q", "*.b")]


def test_exchange_to_exchange_bindings_are_followed_and_a_cycle_ends() -> None:
    table = table_with("topic", ("q1", "a.#"))
    table.add_exchange(ExchangeSpec("y", "fanout"))
    table.add_queue("q2")
    table.bind(BindingSpec("y", "q2"))
    table.bind(BindingSpec("x", "y", "a.b", to_exchange=True))
    table.bind(BindingSpec("y", "x", "", to_exchange=True))
    assert table.route("x", "a.b") == ["q1", "q2"]
    assert table.route("y", "z") == ["q2"]
    table.remove_exchange("y")
    assert table.route("x", "a.b") == ["q1"]


def test_deleting_a_queue_removes_its_bindings_and_an_unknown_type_is_refused() -> None:
    table = table_with("direct", ("q1", "k"), ("q2", "k"))
    table.remove_queue("q1")
    assert table.route("x", "k") == ["q2"]
    assert not table.has_queue("q1")
    with pytest.raises(ValueError, match="x-consistent-hash"):
        table.add_exchange(ExchangeSpec("h", "x-consistent-hash"))


def test_the_emulation_routes_as_rabbitmq_routes() -> None:
    """The same topic and headers bindings on a real RabbitMQ exchange and in the
    table: every publish reaches the same queues."""
    topic_bindings = sorted({binding for binding, _, _ in TOPIC_CASES if binding})
    topic_keys = sorted({key for _, key, _ in TOPIC_CASES})
    header_cases = HEADER_CASES[:-1]  # RabbitMQ has no "present with any value" form
    tag = uuid.uuid4().hex[:8]
    params = pika.URLParameters(ensure_rabbitmq())
    with pika.BlockingConnection(params) as conn:
        ch = conn.channel()
        table = RoutingTable()
        topic, headers = f"test.topic.{tag}", f"test.headers.{tag}"
        for name, kind in ((topic, "topic"), (headers, "headers")):
            ch.exchange_declare(name, kind, auto_delete=True)
            table.add_exchange(ExchangeSpec(name, kind))
        queues: dict[str, str] = {}
        for i, binding in enumerate(topic_bindings):
            queue = ch.queue_declare(f"test.rt.{tag}.t{i}", exclusive=True).method.queue
            ch.queue_bind(queue, topic, binding)
            table.add_queue(queue)
            table.bind(BindingSpec(topic, queue, binding))
            queues[queue] = binding
        for i, (arguments, _, _) in enumerate(header_cases):
            queue = ch.queue_declare(f"test.rt.{tag}.h{i}", exclusive=True).method.queue
            ch.queue_bind(queue, headers, "", arguments=arguments)
            table.add_queue(queue)
            table.bind(BindingSpec(headers, queue, "", arguments))
        publishes: list[tuple[str, str, dict[str, Any]]] = [(topic, key, {}) for key in topic_keys]
        publishes += [(headers, "", hdrs) for _, hdrs, _ in header_cases]
        for n, (exchange, key, hdrs) in enumerate(publishes):
            ch.basic_publish(exchange, key, str(n).encode(),
                             pika.BasicProperties(headers=hdrs or None))
        reached: dict[int, set[str]] = {n: set() for n in range(len(publishes))}
        for queue in table.queues():  # every queue, drained after the publishes
            while True:
                method, _, body = ch.basic_get(queue, auto_ack=True)
                if method is None:
                    break
                reached[int(body)].add(queue)
        for n, (exchange, key, hdrs) in enumerate(publishes):
            assert set(table.route(exchange, key, hdrs)) == reached[n], (exchange, key, hdrs)
