"""Real qpid.messaging client bytes against the running façade.

Each recording of ``tests/data/captures/amqp-0-10-qpid-messaging/`` (qpid-python's
``qpid.messaging`` and low-level API talking to qpidd 1.40) is replayed by
:mod:`tests.replay.harness` against ``amqp-bridge run``, whose listener carries the
names the recording uses and routes them to fresh RabbitMQ queues.  The tests check
that the façade answers as qpidd did where ``docs/semantics.md`` ("Façade") says it
should: heartbeats, completions, query results, deliveries, redelivery after a close.

One bridge serves the module; every replay runs once (module fixtures) and several
tests look at it, so a gap in one behaviour does not hide the others.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from proton import Message, char

from amqp010.spec import (
    DeliveryProperties,
    ErrorCode,
    ExchangeQueryResult,
    MessageProperties,
    QueueQueryResult,
)
from tests.data import CAPTURES_QPID_MESSAGING as QPID_MESSAGING
from tests.replay.harness import Replay, Seen
from tests.support.bridge import FacadeRun, free_port, serving, wait_for
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    rabbitmqctl,
    receive_messages,
    send_messages,
    unique_queue,
)

SCENARIOS = ("messaging_heartbeat", "messaging_close_unacked_1", "messaging_close_unacked_2",
             "messaging_exchange_sender", "translate_bodies_and_char")


class Facade(FacadeRun):
    """The bridge under test: the listener's port and the RabbitMQ queue behind each name."""

    def replay(self, scenario: str, **run: Any) -> Replay:
        return Replay(QPID_MESSAGING / f"{scenario}.jsonl", "127.0.0.1", self.port).run(**run)


@pytest.fixture(scope="module")
def facade(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Facade]:
    # the names the recordings use; qpidd's users were guest/guest (SASL PLAIN)
    queues = {name: unique_queue("replay-" + name.replace(".", "-"))
              for name in ("amq.topic", "cap.hb", "cap.unacked", "cap.bodies")}
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  legacy: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", users: {{guest: guest}}}}
routes:
  - name: topic-out
    from: {{listener: legacy, exchange: amq.topic}}
    to:   {{connection: cloud, address: /exchange/amq.topic}}
  - name: topic-subscribers
    from: {{connection: cloud, address: "/exchange/amq.topic/{{binding_key}}"}}
    to:   {{listener: legacy, exchange: amq.topic}}
"""
    for name in ("cap.hb", "cap.unacked", "cap.bodies"):
        config += f"""  - name: {name.replace(".", "-")}-in
    from: {{connection: cloud, address: {queue_address(queues[name])}}}
    to:   {{listener: legacy, queue: {name}}}
"""
    with serving(config, tmp_path_factory.mktemp("replay"), port) as proc:
        yield Facade(rabbitmq_url, port, queues, proc)


def test_every_recording_is_replayed() -> None:
    """A recording added to the folder gets a test here too."""
    assert sorted(p.stem for p in Path(QPID_MESSAGING).glob("*.jsonl")) == sorted(SCENARIOS)


# --- helpers -----------------------------------------------------------------------------


def not_completed(r: Replay, channel: int = 0) -> list[str]:
    """Client commands qpidd completed and the façade did not, as "id name"."""
    live = set(r.completed(channel))
    return [f"{cid} {r.client_command(channel, cid).NAME}"
            for cid in r.recorded_completed(channel) if cid not in live]


def results(r: Replay, name: str) -> list[Any]:
    """The live execution.result values for the client's commands called ``name``."""
    out = []
    for s in r.live_ops("execution.result"):
        command = r.client_command(s.assembly.channel, s.op.command_id)
        if name == command.NAME:
            out.append(s.op.value)
    return out


def transfers(r: Replay) -> list[Seen]:
    return r.live_ops("message.transfer")


def props(t: Seen) -> tuple[DeliveryProperties, MessageProperties]:
    dp = t.assembly.header_struct(DeliveryProperties) or DeliveryProperties()
    mp = t.assembly.header_struct(MessageProperties) or MessageProperties()
    return dp, mp


def ended_cleanly(r: Replay) -> None:
    """The client's own close sequence was answered: session.detached, close-ok, and the
    façade never closed the connection itself."""
    assert not r.live_ops("connection.close"), r.live_op("connection.close")
    assert r.live_ops("connection.close-ok"), f"{r.name}: no connection.close-ok"


# --- messaging_heartbeat -----------------------------------------------------------------


@pytest.fixture(scope="module")
def heartbeat(facade: Facade) -> Replay:
    return facade.replay("messaging_heartbeat")


def test_heartbeat_negotiated_and_sent_while_idle(heartbeat: Replay) -> None:
    """Connection(heartbeat=1): the façade's tune admits 1 s, it sends connection.heartbeat
    while the client idles (qpidd sent one a second) and keeps the connection open."""
    r = heartbeat
    tune = r.live_op("connection.tune")
    assert (tune.heartbeat_min or 0) <= 1 <= (tune.heartbeat_max or 0), tune
    # the idle period: between the client's last command before it and its first after
    hb_chunks = [i for i in r.sent_at if r.client_ops(i) == ["connection.heartbeat"]]
    assert len(hb_chunks) == 3, hb_chunks  # the recording's three client heartbeats
    start = max(t for i, t in r.sent_at.items() if i < min(hb_chunks))
    end = min((t for i, t in r.sent_at.items() if i > max(hb_chunks)), default=None)
    assert end is not None, r.error
    beats = [s for s in r.live_ops("connection.heartbeat") if start <= s.t <= end]
    assert len(beats) >= 2, f"{len(beats)} heartbeats from the façade in {end - start:.1f}s idle"
    assert not r.live_ops("connection.close"), r.live_op("connection.close")
    assert not r.closed or r.live_ops("connection.close-ok"), "the façade dropped the connection"


def test_heartbeat_send_and_receive(heartbeat: Replay) -> None:
    """After the idle period the application sends to and receives from queue cap.hb:
    qpid.messaging's queue sender transfers to the default exchange with the queue's
    name as routing key; both messages come back to its receiver and are accepted."""
    r = heartbeat
    assert not r.exceptions(), r.exceptions()
    assert r.error is None, r.error
    assert not_completed(r) == []
    got = transfers(r)
    assert [t.assembly.body for t in got] == [b"before idle", b"after idle"]
    for t in got:
        dp, mp = props(t)
        assert dp.routing_key == "cap.hb"
        assert mp.content_type == "text/plain"
    ended_cleanly(r)


# --- messaging_close_unacked_1, _2 ---------------------------------------------------------


@pytest.fixture(scope="module")
def close_unacked(facade: Facade) -> tuple[Replay, Replay]:
    first = facade.replay("messaging_close_unacked_1")
    second = facade.replay("messaging_close_unacked_2", until=lambda r: r.closed)
    return first, second


def test_close_unacked_first_receiver(close_unacked: tuple[Replay, Replay]) -> None:
    """Three jobs sent to queue cap.unacked (default exchange) and fetched; the receiver
    accepts the first, then closes: accept, cancel, detach and close all complete."""
    r, _ = close_unacked
    assert not r.exceptions(), r.exceptions()
    assert r.error is None, r.error
    assert not_completed(r) == []
    got = transfers(r)
    assert [t.assembly.body for t in got] == [b"job 0", b"job 1", b"job 2"]
    for i, t in enumerate(got):
        dp, mp = props(t)
        assert (dp.routing_key, mp.content_type) == ("cap.unacked", "text/plain")
        assert mp.application_headers is not None
        assert mp.application_headers["i"] == i
        assert not dp.redelivered
    assert r.live_ops("session.detached")
    ended_cleanly(r)


def test_close_unacked_second_receiver_gets_the_rest_redelivered(
        facade: Facade, close_unacked: tuple[Replay, Replay]) -> None:
    """The next connection's receiver gets the two jobs the first left unaccepted, with
    ``redelivered`` set, and accepts them: nothing is left on the 1.0 queue."""
    _, r = close_unacked
    got = transfers(r)
    assert [t.assembly.body for t in got] == [b"job 1", b"job 2"], r.error
    for i, t in enumerate(got, start=1):
        dp, mp = props(t)
        assert (dp.routing_key, mp.content_type) == ("cap.unacked", "text/plain")
        assert mp.application_headers is not None
        assert mp.application_headers["i"] == i
        assert dp.redelivered, f"job {i} arrived again without redelivered"
    assert_no_message(facade.rabbitmq_url, facade.address("cap.unacked"))


def test_close_unacked_second_connection_answers(close_unacked: tuple[Replay, Replay]) -> None:
    """Queries answered as qpidd did where the façade can know (exchange not found, the
    queue named; its message-count is 0 by design); every command completed but the
    closing queue.delete, which the façade refuses (not-implemented)."""
    _, r = close_unacked
    for value in results(r, "exchange.query"):
        assert isinstance(value, ExchangeQueryResult) and value.not_found
    queue_results = results(r, "queue.query")
    assert len(queue_results) == 2, r.error
    for value in queue_results:
        assert isinstance(value, QueueQueryResult) and value.queue == "cap.unacked"
        assert value.subscriber_count == 0
    deletes = [cid for ch, cid, op in r.client_commands if op.NAME == "queue.delete"]
    assert not_completed(r) == [f"{cid} queue.delete" for cid in deletes]
    codes = [s.op.error_code for s in r.live_ops("execution.exception")]
    assert codes == [ErrorCode.NOT_IMPLEMENTED], r.exceptions()


# --- messaging_exchange_sender -------------------------------------------------------------


@dataclass
class ExchangeSender:
    replay: Replay
    on_rabbitmq: list[Message]
    """What a 1.0 receiver bound to amq.topic with ``orders.#`` got meanwhile."""


@pytest.fixture(scope="module")
def exchange_sender(facade: Facade) -> ExchangeSender:
    # a 1.0 receiver of RabbitMQ's own: what the façade publishes to amq.topic reaches
    # every queue bound there, as the recording's receiver's queue was at qpidd
    got: list[Message] = []
    receiver = threading.Thread(target=lambda: got.extend(
        r.message for r in receive_messages(facade.rabbitmq_url, "/exchange/amq.topic/orders.#",
                                            2, timeout=60)))
    receiver.start()
    wait_for(lambda: "orders.#" in rabbitmqctl(facade.rabbitmq_url, "list_bindings",
                                               "routing_key"), 20, "the 1.0 receiver's binding")
    replay = facade.replay("messaging_exchange_sender")
    receiver.join(70)
    return ExchangeSender(replay, got)


def test_exchange_sender_resolves_the_address(exchange_sender: ExchangeSender) -> None:
    """exchange.query finds the configured exchange (durable; the façade says fanout where
    qpidd says topic: the route takes every key) and queue.query finds no such queue, so
    qpid.messaging treats ``amq.topic/orders.created`` as an exchange, as with qpidd."""
    r = exchange_sender.replay
    (exchange,) = results(r, "exchange.query")
    assert not exchange.not_found and exchange.durable, exchange
    (queue,) = results(r, "queue.query")
    assert not queue.queue, queue
    assert {0, 1} <= set(r.completed(0))


def test_exchange_sender_messages_reach_the_route(exchange_sender: ExchangeSender) -> None:
    """Both transfers to amq.topic are completed and reach RabbitMQ's amq.topic (the route's
    1.0 address) with the subject as routing key, the map content and the other
    properties: a 1.0 receiver bound with ``orders.#`` gets them."""
    r = exchange_sender.replay
    sent = [cid for ch, cid, op in r.client_commands if op.NAME == "message.transfer"]
    assert len(sent) == 2
    done = set(r.completed(0))
    assert all(cid in done for cid in sent), (
        f"transfers {sent} not completed; {r.exceptions() or r.error}")
    got = exchange_sender.on_rabbitmq
    assert [m.subject for m in got] == ["orders.created", "orders.shipped"]
    assert got[0].body == {"order": 1, "item": "widget"}
    assert got[0].priority == 7 and got[0].durable
    # binary on the 1.0 side; RabbitMQ's exchange path hands it on as a string
    assert got[0].correlation_id in (b"c-1", "c-1")
    properties: dict[str, Any] = got[0].properties or {}
    assert properties.get("region") == "eu"
    # an amqp-value string; RabbitMQ 3.10 hands it to a 1.0 consumer of a topic binding as data
    assert got[1].body == "plain text" or bytes(got[1].body) == b"plain text"


def test_exchange_sender_temporary_queue_receiver(exchange_sender: ExchangeSender) -> None:
    """The receiver on ``amq.topic/orders.#`` declares its own exclusive auto-delete queue,
    binds it and subscribes: it gets both messages, with their routing keys (through the
    route to the exchange, consuming from ``/exchange/amq.topic/orders.#``)."""
    r = exchange_sender.replay
    assert not r.exceptions(), r.exceptions()
    assert r.error is None, r.error
    got = transfers(r)
    assert [props(t)[0].routing_key for t in got] == ["orders.created", "orders.shipped"]
    assert not_completed(r) == []
    ended_cleanly(r)


# --- translate_bodies_and_char -------------------------------------------------------------


@pytest.fixture(scope="module")
def bodies(facade: Facade) -> Replay:
    # the four 1.0 messages of the .json, sent with python-qpid-proton
    messages = [
        Message(body=b"value-bytes", properties={"i": 0}),  # amqp-value binary (proton's default)
        Message(body=b"data-bytes", inferred=True, properties={"i": 1}),  # a data section
        Message(body="text body", properties={"i": 2}),  # amqp-value string
        Message(body=b"with-char", inferred=True, properties={"i": 3, "c": char("x")}),
    ]
    outcomes = send_messages(facade.rabbitmq_url, facade.address("cap.bodies"), messages)
    assert [o.state for o in outcomes] == ["accepted"] * 4
    return facade.replay("translate_bodies_and_char", linger=5.0,
                         until=lambda r: len(transfers(r)) >= 4)


def test_bodies_subscription_answers(bodies: Replay) -> None:
    """queue.declare of the configured queue, subscribe and the two flows complete."""
    r = bodies
    assert r.error is None, r.error
    assert not r.exceptions(), r.exceptions()
    assert not_completed(r, channel=1) == []


def test_bodies_delivered_as_qpidd_does(bodies: Replay) -> None:
    """The binary amqp-value and the data section arrive as their plain bytes, the string
    as text/plain; each with its application property."""
    got = transfers(bodies)
    assert len(got) >= 3, bodies.error
    expected = [(b"value-bytes", None), (b"data-bytes", None), (b"text body", "text/plain")]
    for i, (t, (body, content_type)) in enumerate(zip(got, expected, strict=False)):
        _, mp = props(t)
        assert mp.application_headers is not None and mp.application_headers["i"] == i
        assert (t.assembly.body, mp.content_type) == (body, content_type), f"message {i}"


def test_char_property_delivered_readable(bodies: Replay) -> None:
    """qpidd closes the connection on a char property; the façade delivers the message
    with its body and the property as the character it is."""
    got = transfers(bodies)
    assert len(got) == 4, f"{len(got)} messages delivered; {bodies.error}"
    _, mp = props(got[3])
    assert got[3].assembly.body == b"with-char"
    assert mp.application_headers is not None
    assert mp.application_headers["i"] == 3
    assert mp.application_headers["c"] == "x"
    assert not bodies.live_ops("connection.close")
