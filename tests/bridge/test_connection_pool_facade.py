"""A topology-mode 0-9-1 façade with more consumers than RabbitMQ 4 allows sessions on
one connection (64; every consumer is a 1.0 link with a session of its own): the bridge
opens extra 1.0 connections for them (:mod:`bridge.amqp10.pool`), every consumer gets
the message published to its queue, and the extras close once the consumers went.

Before the pool, the consumers past the 63rd waited silently for a session and never got
a message while the others stayed. A lost extra connection closes the listener's clients
with 320 (as the first's loss does: a client's links may be on any connection), and the
messages they had not acknowledged are delivered again.

The bridge reaches RabbitMQ through a relay, so that its connections are told apart from
the rest of the shared node's (``rabbitmqctl list_connections peer_port``).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pika
import pytest

from amqp010.events import ExecutionExceptionReceived
from amqp010.spec import AcceptMode, ErrorCode
from amqp010.transport import BlockingClient, ClientError
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.logs import records
from tests.support.metrics import counted, metrics_port, poll, scrape
from tests.support.rabbitmq import rabbitmqctl
from tests.support.relay import Relay

pytestmark = pytest.mark.rabbitmq(4)

PASSWORD = "pool-s3cret"
CLIENTS = 5
PER_CLIENT = 30
"""150 consumers: more than two connections' sessions (63 links each)."""


def _config(cloud_url: str, port: int, port010: int | None = None) -> str:
    """The 0-9-1 listener ``app`` on ``port`` (and a 0-10 one, ``app010``, on ``port010``)."""
    listener010 = "" if port010 is None else f"""
  app010: {{protocol: amqp0-10, bind: "127.0.0.1:{port010}", users: {{app: {PASSWORD}}},
            max_connections_per_peer: 200,
            topology: {{connection: cloud, broker: rabbitmq4}}}}"""
    return f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{cloud_url}",
           reconnect: {{initial_delay: 0.2, max_delay: 1.0}}}}
listeners:
  app: {{protocol: amqp0-9-1, bind: "127.0.0.1:{port}", users: {{app: {PASSWORD}}},
         max_connections_per_peer: 200,
         topology: {{connection: cloud, broker: rabbitmq4}}}}{listener010}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: json}}
"""


def _pika(port: int) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.ConnectionParameters(
        "127.0.0.1", port, credentials=pika.PlainCredentials("app", PASSWORD),
        connection_attempts=1, heartbeat=0))


@contextmanager
def _bridge(rabbitmq_url: str, tmp_path: Path, port010: int | None = None
            ) -> Iterator[tuple[BridgeRun, Relay, int, int]]:
    """The bridge through a relay: (run, relay, façade port, metrics port); with a 0-10
    listener too on ``port010``."""
    host, port = rabbitmq_url.rsplit("@", 1)[1].split(":")
    relay = Relay((host, int(port)))
    facade_port = free_port()
    try:
        with BridgeRun(_config(relay.url(rabbitmq_url), facade_port, port010),
                       tmp_path) as bridge:
            wait_listening(facade_port, bridge)
            if port010 is not None:
                wait_listening(port010, bridge)
            yield bridge, relay, facade_port, metrics_port(bridge.log)
    finally:
        relay.close()


def _bridge_connections(rabbitmq_url: str, relay: Relay) -> list[str]:
    """The pids of the bridge's connections at RabbitMQ, oldest first (relayed ones)."""
    ports = [sock.getsockname()[1] for sock in list(relay.sockets)[1::2]]  # (upstream)
    found = {}
    for line in rabbitmqctl(rabbitmq_url, "list_connections", "pid", "peer_port").splitlines():
        fields = line.split()
        if len(fields) == 2 and fields[1].isdigit() and int(fields[1]) in ports:
            found[int(fields[1])] = fields[0]
    return [found[port] for port in ports if port in found]


def _pool_size(metrics: int) -> float:
    return scrape(metrics).value("amqp_bridge_amqp10_pool_connections", connection="cloud")


class Consumers:
    """``CLIENTS`` pika connections, each consuming ``PER_CLIENT`` queues of its own, then
    an exclusive server-named queue (an RPC client's reply queue: only the bridge's 1.0
    connection that declared it may consume it)."""

    def __init__(self, port: int, *, auto_ack: bool) -> None:
        self.run = uuid.uuid4().hex[:8]
        self.queues = [f"test.pool.{self.run}.{n}" for n in range(CLIENTS * PER_CLIENT)]
        self.got: dict[str, list[tuple[bytes, bool]]] = {q: [] for q in self.queues}
        self.connections = []
        self.replies: list[str] = []
        for c in range(CLIENTS):
            conn = _pika(port)
            ch = conn.channel()
            for queue in self.queues[c * PER_CLIENT:(c + 1) * PER_CLIENT]:
                ch.queue_declare(queue, arguments={"x-expires": 120_000})
                ch.basic_consume(queue, self._on_message(queue), auto_ack=auto_ack)
            reply = ch.queue_declare("", exclusive=True).method.queue
            ch.basic_consume(reply, self._on_message(reply), auto_ack=auto_ack)
            self.replies.append(reply)
            self.got[reply] = []
            self.connections.append(conn)

    def _on_message(self, queue: str):  # type: ignore[no-untyped-def]
        def on_message(ch, method, properties, body):  # type: ignore[no-untyped-def]
            self.got[queue].append((body, bool(method.redelivered)))
        return on_message

    def publish(self, port: int, rabbitmq_url: str) -> None:
        """One message to each queue through the façade, and to each reply queue at
        RabbitMQ (a native responder: the façade would hand its own publish to a reply
        queue's consumer here, link or not), confirmed."""
        for where, queues in ((_pika(port), self.queues),
                              (pika.BlockingConnection(pika.URLParameters(rabbitmq_url)),
                               self.replies)):
            ch = where.channel()
            ch.confirm_delivery()
            for queue in queues:
                ch.basic_publish("", queue, queue.encode(), mandatory=True)
            where.close()

    def pump_until(self, condition, what: str, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"still waiting for {what}: " \
                f"{sum(1 for got in self.got.values() if got)} queues got a message"
            for conn in self.connections:
                conn.process_data_events(time_limit=0.05)

    def all_got_one(self) -> bool:
        return all(len(got) == 1 for got in self.got.values())

    def close(self) -> None:
        for conn in self.connections:
            with contextlib.suppress(pika.exceptions.AMQPError):  # (closed by the bridge)
                conn.close()


def test_150_consumers_each_get_their_message_over_extra_connections_closed_after(
        rabbitmq_url: str, tmp_path: Path) -> None:
    with _bridge(rabbitmq_url, tmp_path) as (bridge, relay, port, metrics):
        consumers = Consumers(port, auto_ack=True)
        try:
            consumers.publish(port, rabbitmq_url)
            consumers.pump_until(consumers.all_got_one, "every consumer's message")
            assert all(got == [(queue.encode(), False)] for queue, got in consumers.got.items())
            # 150 consumer links, 5 of exclusive queues (each on the connection that
            # declared it), the topology's request pairs and publisher: three connections
            assert _pool_size(metrics) == 3
            assert len(_bridge_connections(rabbitmq_url, relay)) == 3
            assert counted(metrics, "amqp_bridge_amqp10_pool_opened_total",
                           connection="cloud") == 2
            assert scrape(metrics).value("amqp_bridge_amqp10_begins_waiting",
                                         connection="cloud#3") == 0
            assert not [r for r in records(bridge.log()) if r.get("event") == "session_limit"]
        finally:
            consumers.close()
        poll(lambda: _pool_size(metrics), lambda size: size == 1, 60,
             "the extra connections to close once the consumers went")
        poll(lambda: len(_bridge_connections(rabbitmq_url, relay)), lambda n: n == 1, 30,
             "RabbitMQ to see one bridge connection")
        assert {r.get("member") for r in records(bridge.log())
                if r.get("event") == "pool_shrunk"} == {"cloud#2", "cloud#3"}
        _delete(rabbitmq_url, consumers.queues)


def test_a_lost_extra_connection_closes_the_clients_and_their_messages_come_again(
        rabbitmq_url: str, tmp_path: Path) -> None:
    with _bridge(rabbitmq_url, tmp_path) as (bridge, relay, port, metrics):
        consumers = Consumers(port, auto_ack=False)  # received, never acknowledged
        try:
            consumers.publish(port, rabbitmq_url)
            consumers.pump_until(consumers.all_got_one, "every consumer's message")
            pids = _bridge_connections(rabbitmq_url, relay)
            assert len(pids) == 3
            rabbitmqctl(rabbitmq_url, "close_connection", pids[1], "pool test: an extra lost")
            with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
                consumers.pump_until(lambda: False, "the clients to be closed", timeout=30)
            assert closed.value.reply_code == 320, closed.value
            assert counted(metrics, "amqp_bridge_facade_ended_total", listener="app",
                           reason="broker_lost") == CLIENTS
            assert [r.get("connection") for r in records(bridge.log())
                    if r.get("event") == "clients_closed_broker_lost"] == ["cloud#2"]
        finally:
            consumers.close()

        # every message not acknowledged is there again, marked redelivered
        again = _pika(port)
        ch = again.channel()
        for queue in consumers.queues:
            deadline = time.monotonic() + 30
            while (got := ch.basic_get(queue, auto_ack=True))[0] is None:
                assert time.monotonic() < deadline, f"the message of {queue} again"
                time.sleep(0.1)
            assert got[2] == queue.encode() and got[0].redelivered, (queue, got)
        again.close()
        _delete(rabbitmq_url, consumers.queues)


def _delete(rabbitmq_url: str, queues: list[str]) -> None:
    conn = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    ch = conn.channel()
    for queue in queues:
        ch.queue_delete(queue)
    conn.close()


RPC_CLIENTS = 150
"""RPC clients each consuming an exclusive reply queue: more than two connections'
sessions (before the exclusive queues spread over the pool, they all went on the first
connection and the clients past its 64 sessions waited for a session for ever)."""


def _queues_at_rabbitmq(rabbitmq_url: str, names: set[str]) -> set[str]:
    """Which of ``names`` RabbitMQ has."""
    return {line.split()[0] for line in rabbitmqctl(rabbitmq_url, "list_queues", "name",
                                                    "--no-table-headers").splitlines()
            if line.split() and line.split()[0] in names}


def _reply_natively(rabbitmq_url: str, queues: list[str]) -> None:
    """Each queue's name to it, confirmed, from a responder straight on RabbitMQ (another
    connection than the one that declared it)."""
    native = pika.BlockingConnection(pika.URLParameters(rabbitmq_url))
    channel = native.channel()
    channel.confirm_delivery()
    for queue in queues:
        channel.basic_publish("", queue, queue.encode(), mandatory=True)
    native.close()


def test_150_rpc_clients_with_exclusive_reply_queues_spread_over_the_pool(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """pika's tutorial-6 RPC client shape: an exclusive server-named reply queue, consumed.
    Each exclusive queue is declared on the pool member its consumer goes on, so the
    clients are served across the pool; the exclusive rules hold (another client's consume
    and passive declare: 405) and the queues go with their clients."""
    with _bridge(rabbitmq_url, tmp_path) as (bridge, _relay, port, metrics):
        got: dict[str, list[bytes]] = {}
        clients: list[pika.BlockingConnection] = []

        def on_message(queue: str):  # type: ignore[no-untyped-def]
            return lambda ch, method, properties, body: got[queue].append(body)

        try:
            for _ in range(RPC_CLIENTS):
                conn = _pika(port)
                ch = conn.channel()
                reply = ch.queue_declare("", exclusive=True).method.queue
                got[reply] = []
                ch.basic_consume(reply, on_message(reply), auto_ack=True)
                clients.append(conn)
            _reply_natively(rabbitmq_url, list(got))
            deadline = time.monotonic() + 20
            while not all(got.values()):
                assert time.monotonic() < deadline, \
                    f"{sum(1 for g in got.values() if not g)} of {RPC_CLIENTS} RPC clients " \
                    f"still wait for their reply"
                for conn in clients:
                    conn.process_data_events(time_limit=0)
                time.sleep(0.01)
            assert all(g == [q.encode()] for q, g in got.items())
            assert _pool_size(metrics) >= 3  # (63 sessions a connection, less the pairs')
            assert not [r for r in records(bridge.log()) if r.get("event") == "session_limit"]
            # only its owner may consume it, or declare it passively (405, as RabbitMQ)
            other = clients[len(clients) // 2]
            for queue in (next(iter(got)), list(got)[-1]):  # (on the first; on an extra)
                with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                    other.channel().basic_consume(queue, lambda *a: None)
                assert info.value.reply_code == 405, info.value
                with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                    other.channel().queue_declare(queue, passive=True)
                assert info.value.reply_code == 405, info.value
        finally:
            for conn in clients:
                with contextlib.suppress(pika.exceptions.AMQPError):
                    conn.close()
        poll(lambda: _queues_at_rabbitmq(rabbitmq_url, set(got)), lambda left: not left, 20,
             "the exclusive queues to go with their clients")


QPID_RECEIVERS = 80
"""0-10 sessions each subscribed to an exclusive queue of their own: more than one
connection's sessions."""


def test_80_0_10_sessions_with_exclusive_queues_spread_over_the_pool(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """What qpid.messaging's ``'#'`` receivers do (an exclusive auto-delete queue, then a
    subscription), through the 0-10 façade: served across the pool, another session is
    refused (resource-locked), the queues go with their sessions."""
    port010 = free_port()
    run = uuid.uuid4().hex[:8]
    queues = [f"test.pool010.{run}.{n}" for n in range(QPID_RECEIVERS)]
    with _bridge(rabbitmq_url, tmp_path, port010) as (bridge, _relay, _port, metrics):
        url = f"amqp://app:{PASSWORD}@127.0.0.1:{port010}"
        clients: list[BlockingClient] = []
        try:
            for queue in queues:
                client = BlockingClient.connect(url)
                clients.append(client)
                client.declare_queue(queue, exclusive=True, auto_delete=True)
                client.subscribe(queue, accept_mode=AcceptMode.NONE)
            _reply_natively(rabbitmq_url, queues)
            for queue, client in zip(queues, clients, strict=True):
                assert client.receive(queue, timeout=20).body == queue.encode()
            assert _pool_size(metrics) >= 2
            assert not [r for r in records(bridge.log()) if r.get("event") == "session_limit"]
            for queue in (queues[0], queues[-1]):  # (on the first; on an extra)
                with BlockingClient.connect(url) as other, \
                        pytest.raises(ClientError) as info:
                    other.subscribe(queue)
                event = info.value.event
                assert isinstance(event, ExecutionExceptionReceived), info.value
                assert event.error_code == ErrorCode.RESOURCE_LOCKED
        finally:
            for client in clients:
                with contextlib.suppress(Exception):
                    client.close()
        poll(lambda: _queues_at_rabbitmq(rabbitmq_url, set(queues)), lambda left: not left,
             20, "the exclusive queues to go with their sessions")
