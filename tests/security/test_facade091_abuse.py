"""A hostile 0-9-1 application against ``amqp-bridge run``'s 0-9-1 façade (RabbitMQ's
1.0 behind it): what it sends gets RabbitMQ's close code, a log line and a metric, and
never makes the bridge hold without bound or serve its other clients worse.

- one connection asking for consumers without end (each a 1.0 link on the route's
  shared connection to the broker): 530 past ``max_consumers_per_connection``, the
  links it held given back, another client consuming as before;
- a client that sends a burst of no-ack ``basic.get`` and does not read: the bridge
  does not pull the queue in (a get's message is settled as it is written, so only a
  window of gets is promised one, and none while the socket has megabytes unsent);
  once the client reads, every get is answered with a message.
"""

from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path

import pytest
from pamqp import commands as C
from proton import Message

from amqp091.framing import PROTOCOL_HEADER, FrameReader, encode_method
from amqp091.methods import ReplyCode
from tests.support.facade091 import RawClient, facade091
from tests.support.metrics import metrics_port, poll, scrape
from tests.support.rabbitmq import queue_depth, send_messages

MAX_CONSUMERS = 20


def routes(q: dict[str, str], _: dict[str, str]) -> str:
    return f"""
  - name: jobs-in
    from: {{connection: cloud, address: {q["jobs"]}}}
    to:   {{listener: legacy, queue: jobs}}
metrics: {{bind: "127.0.0.1:0"}}
"""


def client_errors(port: int, code: int) -> float:
    """``amqp_bridge_facade_client_errors_total`` of the listener for ``code`` (0: none)."""
    try:
        return scrape(port).value("amqp_bridge_facade_client_errors_total",
                                  listener="legacy", code=str(code))
    except KeyError:
        return 0.0


@pytest.mark.parametrize("how", ["consume", "get_and_consume"])
def test_consumers_past_the_limit_close_the_connection_with_530(
        rabbitmq_url: str, tmp_path: Path, how: str) -> None:
    with facade091(rabbitmq_url, tmp_path, ("jobs",), routes,
                   listener=f", max_consumers_per_connection: {MAX_CONSUMERS}") as bridge:
        mport = metrics_port(bridge.proc.log)
        raw = RawClient(bridge.port)
        raw.login()
        raw.open_channel(1)
        out = b""
        if how == "get_and_consume":  # a getter holds a 1.0 receiver too
            out += encode_method(1, C.Basic.Get(queue="jobs", no_ack=True))
        out += b"".join(encode_method(1, C.Basic.Consume(queue="jobs", consumer_tag=f"t{i}",
                                                          nowait=True))
                        for i in range(MAX_CONSUMERS * 5))
        raw.sock.sendall(out)
        close = None
        while close is None:
            frame = raw.read()
            if isinstance(frame, C.Connection.Close):
                close = frame
        assert close.reply_code == ReplyCode.NOT_ALLOWED, close.reply_text
        assert f"reached maximum ({MAX_CONSUMERS}) of consumers per connection" \
            in close.reply_text
        assert (close.class_id, close.method_id) == (60, 20)  # basic.consume
        poll(lambda: client_errors(mport, ReplyCode.NOT_ALLOWED), lambda v: v == 1, 20,
             "the refusal counted")
        raw.sock.close()

        # another client is served: it consumes what the 1.0 queue gets
        send_messages(rabbitmq_url, bridge.address("jobs"), [Message(body=b"after", inferred=True)])
        connection = bridge.connect()
        try:
            ch = connection.channel()
            got: list[bytes] = []
            ch.basic_consume("jobs", lambda c, m, p, body: (got.append(body),
                                                            c.basic_ack(m.delivery_tag)))
            connection.process_data_events(time_limit=0)
            poll(lambda: (connection.process_data_events(time_limit=0.2), got)[1],
                 lambda g: g == [b"after"], 30, "the message after the attack")
        finally:
            connection.close()
    assert "reached maximum (20) of consumers per connection" in bridge.proc.log()


GETS, GET_SIZE = 300, 100_000
GET_RSS_BOUND_KIB = 12 * 1024
"""RSS growth allowed while the client does not read: its socket's kernel buffers and
output high-water mark (4 MiB) and the window of gets — well under the 30 MB queued."""


def test_a_get_burst_from_a_client_that_does_not_read_leaves_the_queue_at_the_broker(
        rabbitmq_url: str, tmp_path: Path) -> None:
    with facade091(rabbitmq_url, tmp_path, ("jobs",), routes) as bridge:
        send_messages(rabbitmq_url, bridge.address("jobs"),
                      [Message(body=b"%05d" % i + b"x" * GET_SIZE, inferred=True)
                       for i in range(GETS)])
        raw = RawClient(bridge.port)
        raw.login()
        raw.open_channel(1)
        baseline = bridge.proc.status("VmRSS")
        raw.sock.sendall(b"".join(encode_method(1, C.Basic.Get(queue="jobs", no_ack=True))
                                  for _ in range(GETS)))
        time.sleep(3)  # the bridge has had the gets for long enough to pull the queue
        grown = bridge.proc.status("VmRSS") - baseline
        assert grown < GET_RSS_BOUND_KIB, f"RSS grew {grown} KiB for a client not reading"
        assert queue_depth(rabbitmq_url, bridge.queues["jobs"]) > GETS // 2

        # the client reads now: every message reaches it through its gets. A get the
        # 1.0 side does not answer within the façade's grace is get-empty (a 1.0 link
        # cannot say "the queue is empty"; under load that can happen with messages
        # queued), and the client asks again, as a polling client does.
        answered, empty = 0, 0
        while answered < GETS:
            frame = raw.read()
            if isinstance(frame, C.Basic.GetEmpty):
                empty += 1
                assert empty <= GETS, "get-empty without end while messages are queued"
                raw.sock.sendall(encode_method(1, C.Basic.Get(queue="jobs", no_ack=True)))
            answered += isinstance(frame, C.Basic.GetOk)
        raw.sock.close()
        assert queue_depth(rabbitmq_url, bridge.queues["jobs"]) == 0  # every message taken


LONG_QUEUE = "q" * 200
"""A queue name each passive declare's answer echoes: a client asking cheaply for much."""


def long_queue_route(q: dict[str, str], _: dict[str, str]) -> str:
    return f"""
  - name: jobs-in
    from: {{connection: cloud, address: {q["jobs"]}}}
    to:   {{listener: legacy, queue: {LONG_QUEUE}}}
metrics: {{bind: "127.0.0.1:0"}}
"""


def test_a_client_that_asks_without_reading_is_closed_past_its_unread_bound(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """Requests whose answers the client never reads (passive declares of a long queue
    name) would make the bridge hold the answers without bound: past
    ``max_unread_per_connection`` the connection is closed, counted and logged, and
    another client is served."""
    with facade091(rabbitmq_url, tmp_path, ("jobs",), long_queue_route,
                   listener=", max_unread_per_connection: 1048576, "
                            "max_message_size: 262144") as bridge:
        mport = metrics_port(bridge.proc.log)
        raw = RawClient(bridge.port)
        raw.login()
        raw.open_channel(1)
        burst = encode_method(1, C.Queue.Declare(queue=LONG_QUEUE, passive=True)) * 1000
        baseline = bridge.proc.status("VmRSS")
        try:
            for _ in range(200):  # up to 43 MB of answers; the bound is 1 MiB
                raw.sock.sendall(burst)
        except OSError:
            pass  # the bridge closed the connection under the sender
        raw.sock.close()
        poll(lambda: scrape(mport).value("amqp_bridge_connections_refused_total",
                                         listener="legacy", reason="max_unsent"),
             lambda v: v == 1, 20, "the connection closed for not reading")
        assert bridge.proc.status("VmRSS") - baseline < 32 * 1024
        assert "unread (listener legacy: max_unsent 1048576)" in bridge.proc.log()
        connection = bridge.connect()  # another client is served as before
        try:
            ok = connection.channel().queue_declare(LONG_QUEUE, passive=True)
            assert ok.method.queue == LONG_QUEUE
        finally:
            connection.close()


def test_channel_errors_are_counted_even_unanswered_and_their_log_lines_are_few(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """Clients that ack a tag never delivered get RabbitMQ's 406 on that channel; each
    is counted in ``facade_client_errors`` — also when the client drops the connection
    instead of answering close-ok — and logged at WARNING at most once per address every
    10 s, however fast they come (the engine's own line about it is DEBUG)."""
    clients = 12
    with facade091(rabbitmq_url, tmp_path, ("jobs",), routes) as bridge:
        mport = metrics_port(bridge.proc.log)
        for i in range(clients):
            raw = RawClient(bridge.port)
            raw.login()
            raw.open_channel(1)
            raw.sock.sendall(encode_method(1, C.Basic.Ack(delivery_tag=999)))
            close = raw.read()
            assert isinstance(close, C.Channel.Close), close
            assert close.reply_code == ReplyCode.PRECONDITION_FAILED
            assert "unknown delivery tag 999" in close.reply_text
            if i % 2:  # half answer close-ok, half just go
                raw.sock.sendall(encode_method(1, C.Channel.CloseOk()))
            raw.sock.close()
        poll(lambda: client_errors(mport, ReplyCode.PRECONDITION_FAILED),
             lambda v: v == clients, 20, "every 406 counted")
        lines = [line for line in bridge.proc.log().splitlines()
                 if "unknown delivery tag 999" in line]
        warnings = [line for line in lines if "level=warning" in line]
        assert len(warnings) == 1, warnings  # the rest at INFO: rate-limited
        assert not [line for line in lines if "logger=amqp091" in line]  # the engine: DEBUG



def _all_until_closed(sock: socket.socket) -> list[object]:
    """Every frame the bridge sent until it closed the transport (a reset counts as
    closed: RabbitMQ resets a connection it drops)."""
    reader = FrameReader(1 << 20, expect_protocol_header=False)
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            reader.feed(chunk)
    sock.close()
    return [frame for _, frame in reader.frames()]


def test_connections_that_do_not_log_in_in_time_are_dropped_without_a_word(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """``handshake_timeout`` as RabbitMQ 3.10 applies it (its reader closes the socket
    and sends nothing, whether the protocol header came or not; checked against the
    test node): a client silent from the start gets nothing; one that sent its header
    and stalls gets connection.start and then the end, no connection.close.  Each is
    counted; a client logged in meanwhile stays."""
    with facade091(rabbitmq_url, tmp_path, ("jobs",), routes,
                   listener=", handshake_timeout: 1") as bridge:
        mport = metrics_port(bridge.proc.log)
        with contextlib.closing(bridge.connect()) as client:
            silent = [socket.create_connection(("127.0.0.1", bridge.port), timeout=20)
                      for _ in range(3)]
            header_only = [socket.create_connection(("127.0.0.1", bridge.port), timeout=20)
                           for _ in range(3)]
            for sock in header_only:
                sock.sendall(PROTOCOL_HEADER)
            for sock in silent:
                assert _all_until_closed(sock) == []
            for sock in header_only:
                frames = _all_until_closed(sock)
                assert [type(f) for f in frames] == [C.Connection.Start], frames
            time.sleep(0.5)  # the logged-in client is past the timeout too: it stays
            client.channel().queue_declare("jobs", passive=True)
        poll(lambda: scrape(mport).value("amqp_bridge_handshake_timeouts_total",
                                         listener="legacy"), lambda v: v == 6, 20,
             "every expired handshake counted")
