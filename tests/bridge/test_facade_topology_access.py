"""A user with limited permissions against both façades in topology mode (issue 22),
RabbitMQ 4 behind: what RabbitMQ's own permission rules refuse, the bridge refuses —
also when the name the user may not touch only appears in a declare's arguments
(a dead-letter exchange, an alternate exchange), through which the user's own queue or
exchange would pass messages on into it (docs/operations.md "Who may do what").

And what one user does with the 1.0 connection's sessions (its consumers) does not
wedge the bridge for the others once that user is gone.

One ``amqp-bridge run`` serves the module: a 0-9-1 and a 0-10 topology-mode listener,
each with user ``victim`` (every permission) and ``att`` (its own ``att.`` names, and
write on ``amq.topic``). The victim's queue and exchange are made straight at RabbitMQ.
The tests of the 1.0 connection's sessions run a bridge of their own, on a pool of one
1.0 connection.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest

from amqp010.events import ExecutionExceptionReceived
from amqp010.spec import ErrorCode
from amqp010.transport import BlockingClient, ClientError
from bridge.amqp10.connection import ENDING_LIMIT
from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import queue_depth_if_any

pytestmark = pytest.mark.rabbitmq(4)

USERS = {"victim": "victim-pw", "att": "att-pw"}
PERMISSIONS = r"""
      victim: {configure: ".*", write: ".*", read: ".*"}
      att: {configure: "^att\\.", write: "^att\\.|^amq\\.topic$", read: "^att\\."}"""


@dataclass
class Running:
    rabbitmq_url: str
    port091: int
    port010: int
    proc: BridgeRun

    def client091(self, user: str) -> pika.BlockingConnection:
        return pika.BlockingConnection(pika.ConnectionParameters(
            "127.0.0.1", self.port091, credentials=pika.PlainCredentials(user, USERS[user]),
            connection_attempts=1, heartbeat=0))

    def client010(self, user: str) -> BlockingClient:
        return BlockingClient.connect(f"amqp://{user}:{USERS[user]}@127.0.0.1:{self.port010}")

    def broker(self) -> pika.BlockingConnection:
        """A connection straight to RabbitMQ (its own login: every permission)."""
        return pika.BlockingConnection(pika.URLParameters(self.rabbitmq_url + "/%2F"))


@contextmanager
def serving(rabbitmq_url: str, tmp_path: Path, connection: str = "", listener: str = ""
            ) -> Iterator[Running]:
    """A bridge with both listeners (``connection``: more settings of the 1.0 one;
    ``listener``: more lines of each listener's)."""
    port091, port010, port_prod = free_port(), free_port(), free_port()
    users = ", ".join(f"{u}: {p}" for u, p in USERS.items())
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"{connection}}}
listeners:
  rabbit:
    protocol: amqp0-9-1
    bind: "127.0.0.1:{port091}"
    users: {{{users}}}
    topology: {{connection: cloud, broker: rabbitmq4}}
    permissions: {PERMISSIONS}{listener}
  qpid:
    protocol: amqp0-10
    bind: "127.0.0.1:{port010}"
    users: {{{users}}}
    topology: {{connection: cloud, broker: rabbitmq4}}
    permissions: {PERMISSIONS}{listener}
  prod:
    protocol: amqp0-9-1
    bind: "127.0.0.1:{port_prod}"
    users: {{{users}}}
    topology: {{connection: cloud, broker: rabbitmq4}}
    permissions:
      victim: {{configure: ".*", write: ".*", read: ".*", vhosts: {{"/prod": {{read: ".*"}}}}}}
"""
    proc = BridgeRun(config, tmp_path).start()
    try:
        wait_listening(port091, proc)
        wait_listening(port010, proc)
        wait_listening(port_prod, proc)
        yield Running(rabbitmq_url, port091, port010, proc)
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()
    assert "level=error" not in proc.log(), proc.log()


@pytest.fixture(scope="module")
def bridge(rabbitmq_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with serving(rabbitmq_url, tmp_path_factory.mktemp("topology-access")) as running:
        yield running


@dataclass
class Names:
    tag: str
    victim_queue: str
    victim_exchange: str

    def att(self, kind: str) -> str:
        return f"att.{kind}.{self.tag}"


@pytest.fixture
def names(bridge: Running) -> Iterator[Names]:
    """The victim's queue, bound with key ``k`` to its direct exchange, at RabbitMQ; what
    the test made there under the attacker's names is deleted after it."""
    tag = uuid.uuid4().hex[:8]
    made = Names(tag, f"victim.q.{tag}", f"victim.x.{tag}")
    with bridge.broker() as conn:
        ch = conn.channel()
        ch.queue_declare(made.victim_queue)
        ch.exchange_declare(made.victim_exchange, "direct")
        ch.queue_bind(made.victim_queue, made.victim_exchange, "k")
    yield made
    with bridge.broker() as conn:
        ch = conn.channel()
        for queue in (made.victim_queue, made.att("q"), made.att("dl")):
            ch.queue_delete(queue)
        for exchange in (made.victim_exchange, made.att("x"), made.att("ae")):
            ch.exchange_delete(exchange)


def refused091(call: Callable[[], object]) -> tuple[int, str]:
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as closed:
        call()
    return closed.value.reply_code, closed.value.reply_text


def refused010(call: Callable[[], object]) -> ExecutionExceptionReceived:
    with pytest.raises(ClientError) as info:
        call()
    event = info.value.event
    assert isinstance(event, ExecutionExceptionReceived), info.value
    return event


def access_refused(name: str) -> tuple[int, str]:
    return 403, f"ACCESS_REFUSED - access to exchange '{name}' in vhost '/' refused for " \
                f"user 'att'"


def test_091_a_dead_letter_exchange_needs_write_on_it(bridge: Running, names: Names) -> None:
    """RabbitMQ checks write on a queue's x-dead-letter-exchange: else a queue of one's
    own with a TTL of 0 dead-letters into any queue (here through the default
    exchange, by the victim queue's name, or through the victim's exchange)."""
    dl = names.att("dl")
    with bridge.client091("att") as conn:
        assert refused091(lambda: conn.channel().queue_declare(dl, arguments={
            "x-dead-letter-exchange": "", "x-dead-letter-routing-key": names.victim_queue,
            "x-message-ttl": 0})) == access_refused("amq.default")
        assert refused091(lambda: conn.channel().queue_declare(dl, arguments={
            "x-dead-letter-exchange": names.victim_exchange, "x-message-ttl": 0})) \
            == access_refused(names.victim_exchange)
        assert queue_depth_if_any(bridge.rabbitmq_url, dl) is None  # never declared
        ch = conn.channel()  # an exchange of its own is fine
        ch.exchange_declare(names.att("x"), "direct")
        assert ch.queue_declare(dl, arguments={"x-dead-letter-exchange": names.att("x")}) \
            .method.queue == dl


def test_091_an_alternate_exchange_needs_write_on_it(bridge: Running, names: Names) -> None:
    """RabbitMQ checks write on an exchange's alternate-exchange: else what one publishes
    to an exchange of one's own with a key nothing binds goes on to the victim's."""
    with bridge.client091("att") as conn:
        assert refused091(lambda: conn.channel().exchange_declare(
            names.att("ae"), "direct", arguments={"alternate-exchange": names.victim_exchange})) \
            == access_refused(names.victim_exchange)
        ch = conn.channel()
        ch.exchange_declare(names.att("x"), "direct")
        ch.exchange_declare(names.att("ae"), "direct",
                            arguments={"alternate-exchange": names.att("x")})
        ch.confirm_delivery()
        ch.basic_publish(names.att("ae"), "k", b"unbound")  # to att.x, then nowhere
    assert queue_depth_if_any(bridge.rabbitmq_url, names.victim_queue) == 0


def test_091_a_server_named_queue_needs_configure_on_its_name(bridge: Running) -> None:
    """RabbitMQ checks a server-named queue's declare against the name it gets: ``att``
    may configure ``att.`` names only, so it may not make one (on RabbitMQ 4 the bridge
    names it ``amqp-bridge.gen-…``); ``victim`` may."""
    with bridge.client091("att") as conn:
        code, text = refused091(lambda: conn.channel().queue_declare("", exclusive=True))
    assert code == 403
    assert text.startswith("ACCESS_REFUSED - access to queue 'amqp-bridge.gen-"), text
    assert text.endswith("' in vhost '/' refused for user 'att'"), text
    with bridge.client091("victim") as conn:
        assert conn.channel().queue_declare("", exclusive=True).method.queue \
            .startswith("amqp-bridge.gen-")


def test_091_direct_reply_to_needs_no_permission(bridge: Running, names: Names) -> None:
    """A user may consume ``amq.rabbitmq.reply-to`` without read on that name, as on
    RabbitMQ (its consume clause checks none): ``att``'s request goes out with the reply
    queue's name, and the victim's answer to it comes back (the façade had refused the
    consume 403, and an RPC client with a restricted login could not start)."""
    request = names.att("q")
    with bridge.client091("att") as att, bridge.client091("victim") as victim:
        ch = att.channel()
        ch.queue_declare(request)
        with bridge.broker() as broker:  # (att may write to amq.topic, not amq.default)
            broker.channel().queue_bind(request, "amq.topic", request)
        replies: list[bytes] = []
        ch.basic_consume("amq.rabbitmq.reply-to",
                         lambda c, m, p, body: replies.append(body), auto_ack=True)
        ch.basic_publish("amq.topic", request, b"question",
                         pika.BasicProperties(reply_to="amq.rabbitmq.reply-to"))
        responder = victim.channel()
        for _ in range(100):
            method, props, body = responder.basic_get(request, auto_ack=True)
            if method is not None:
                break
            victim.sleep(0.1)
        assert body == b"question" and props.reply_to != "amq.rabbitmq.reply-to"
        responder.basic_publish("", props.reply_to, b"answer")
        for _ in range(100):
            if replies:
                break
            att.process_data_events(0.1)
    assert replies == [b"answer"]


def test_091_declaring_direct_reply_to_is_answered_unchecked(bridge: Running) -> None:
    """``queue.declare`` of ``amq.rabbitmq.reply-to``, passive or not, by a user with no
    permission on that name: declare-ok, 0 messages, 1 consumer, as RabbitMQ answers
    every declare of it (FastStream declares it before ``broker.request``; the façade had
    refused the passive one 404 and the other 403)."""
    with bridge.client091("att") as att:
        ch = att.channel()
        for passive in (True, False):
            ok = ch.queue_declare("amq.rabbitmq.reply-to", passive=passive).method
            assert (ok.queue, ok.message_count, ok.consumer_count) == \
                ("amq.rabbitmq.reply-to", 0, 1)


def test_010_a_dead_letter_or_alternate_exchange_needs_write_on_it(
        bridge: Running, names: Names) -> None:
    """The same rule for 0-10 declares (qpid.messaging's x-declare): a queue's
    x-dead-letter-exchange argument, and the alternate-exchange of a queue (where qpidd
    puts what is rejected) or of an exchange."""
    attempts: list[Callable[[BlockingClient], object]] = [
        lambda c: c.declare_queue(names.att("dl"), arguments={
            "x-dead-letter-exchange": "", "x-dead-letter-routing-key": names.victim_queue,
            "x-message-ttl": 0}),
        lambda c: c.declare_queue(names.att("dl"), alternate_exchange=names.victim_exchange),
        lambda c: c.declare_exchange(names.att("ae"), "direct",
                                     alternate_exchange=names.victim_exchange),
        lambda c: c.declare_exchange(names.att("ae"), "direct", arguments={
            "alternate-exchange": names.victim_exchange}),
    ]
    for attempt, missing in zip(attempts, ["amq.default", *[names.victim_exchange] * 3],
                                strict=True):
        with bridge.client010("att") as client:
            error = refused010(lambda: attempt(client))  # noqa: B023 (called at once)
        assert error.error_code == ErrorCode.UNAUTHORIZED_ACCESS
        assert error.description.endswith(
            f"(amqp-bridge: no write permission on exchange '{missing}')"), error.description
    assert queue_depth_if_any(bridge.rabbitmq_url, names.att("dl")) is None
    with bridge.client010("att") as client:  # its own names are fine
        client.declare_exchange(names.att("x"), "direct")
        client.declare_queue(names.att("dl"), alternate_exchange=names.att("x"),
                             arguments={"x-dead-letter-exchange": names.att("x")})
        client.declare_exchange(names.att("ae"), "direct", alternate_exchange=names.att("x"))


def test_a_users_consumers_past_the_session_limit_do_not_wedge_the_connection(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """``att`` holds more consumers than the 1.0 connection has sessions (a pool of one:
    64), so the rest wait for one, the victim's too; once they have waited longer than
    ENDING_LIMIT, ``att`` leaves: its links' sessions end in a burst, and the waiting
    begins must not be made beside those ends before they are written — proton then
    finds no channel ("unable to find an open available channel"), its transport
    fails, and the connection stays open but dead: every declare of every user of the
    bridge unanswered for good (RESOURCE_ERROR 506). The victim's consumer gets its
    message once ``att`` is gone, and the bridge still declares."""
    tag = uuid.uuid4().hex[:8]
    mine, theirs = f"att.c.{tag}", f"victim.c.{tag}"
    with serving(rabbitmq_url, tmp_path, ", max_connections: 1") as running:
        try:
            starved_until_the_attacker_leaves(running, mine, theirs, tag)
        finally:
            with running.broker() as conn:
                for queue in (mine, theirs, f"victim.d.{tag}"):
                    conn.channel().queue_delete(queue)


def victim_consumes(victim: Any, queue: str) -> tuple[Any, list[bytes]]:
    """The victim's consumer on a queue of its own, with a message published to it: the
    channel, and the list its consumer appends what it gets to."""
    vch = victim.channel()
    vch.queue_declare(queue, auto_delete=True)
    got: list[bytes] = []
    vch.basic_consume(queue, lambda _c, _m, _p, body: got.append(body), auto_ack=True)
    vch.basic_publish("", queue, b"for the victim")
    return vch, got


def wait_for_message(victim: Any, got: list[bytes]) -> None:
    """Run the victim's connection until its consumer got something (30 s at most)."""
    deadline = time.monotonic() + 30
    while not got and time.monotonic() < deadline:
        victim.process_data_events(time_limit=0.2)


def starved_until_the_attacker_leaves(running: Running, mine: str, theirs: str, tag: str
                                      ) -> None:
    """What the wedge test does (the caller cleans up at RabbitMQ)."""
    attacker = running.client091("att")
    ch = attacker.channel()
    ch.queue_declare(mine, auto_delete=True)
    for _ in range(70):
        ch.basic_consume(mine, lambda *_: None)
    with running.client091("victim") as victim:
        vch, got = victim_consumes(victim, theirs)
        time.sleep(ENDING_LIMIT + 1)  # (the victim's begin waits longer than that)
        attacker.close()
        wait_for_message(victim, got)
        assert got == [b"for the victim"], running.proc.log()[-3000:]
        assert vch.queue_declare(f"victim.d.{tag}", auto_delete=True).method.queue \
            == f"victim.d.{tag}"
    assert "unable to find an open available channel" not in running.proc.log()


def test_a_user_holds_at_most_max_consumers_per_user(rabbitmq_url: str, tmp_path: Path
                                                     ) -> None:
    """One login's consumers over all its connections are bounded (``max_consumers_per_
    user``), refused past it as past the per-connection bound, so it cannot take every
    session of the 1.0 connection (64 on a pool of one) and leave the victim's consumers
    waiting: the victim's consumer, made while ``att`` holds its maximum, gets its
    message. Both façades."""
    tag = uuid.uuid4().hex[:8]
    mine, theirs = f"att.c.{tag}", f"victim.c.{tag}"
    with serving(rabbitmq_url, tmp_path, ", max_connections: 1",
                 "\n    max_consumers_per_user: 20") as running:
        first, second = running.client091("att"), running.client091("att")
        first.channel().queue_declare(mine, auto_delete=True)
        for _ in range(10):
            first.channel().basic_consume(mine, lambda *_: None)
        ch = second.channel()
        for _ in range(10):
            ch.basic_consume(mine, lambda *_: None)
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as closed:
            ch.basic_consume(mine, lambda *_: None)
        assert (closed.value.reply_code, closed.value.reply_text) == (
            530, "NOT_ALLOWED - reached maximum (20) of consumers for user 'att' (listener "
                 "rabbit: max_consumers_per_user)")
        with running.client010("att") as client:  # the 0-10 listener counts its own
            for n in range(20):
                client.subscribe(mine, f"d{n}")
            error = refused010(lambda: client.subscribe(mine, "d20"))
            assert error.error_code == ErrorCode.RESOURCE_LIMIT_EXCEEDED
            assert error.description == "reached maximum (20) of subscriptions for user " \
                                        "'att' (listener qpid: max_consumers_per_user)"
            with running.client091("victim") as victim:  # not held back meanwhile
                _, got = victim_consumes(victim, theirs)
                wait_for_message(victim, got)
                assert got == [b"for the victim"]
        first.close()


def test_another_listeners_exclusive_queue_is_locked(bridge: Running, names: Names) -> None:
    """Both listeners declare on one 1.0 connection, so RabbitMQ cannot lock one's
    clients out of an exclusive queue of the other's: the bridge does, as RabbitMQ
    locks another connection out (405 / resource-locked) — permissions are not the
    barrier here (``victim`` may do everything)."""
    with bridge.client091("victim") as owner:
        ch = owner.channel()
        ch.confirm_delivery()
        queue = ch.queue_declare("", exclusive=True).method.queue
        ch.basic_publish("", queue, b"the owner's reply")
        for attempt in (lambda c: c.purge_queue(queue), lambda c: c.delete_queue(queue),
                        lambda c: c.bind(queue, "amq.direct", "k")):
            with bridge.client010("victim") as client:
                error = refused010(lambda: attempt(client))  # noqa: B023 (called at once)
            assert error.error_code == ErrorCode.RESOURCE_LOCKED, error
        assert ch.queue_declare(queue, passive=True).method.message_count == 1
    with bridge.client010("victim") as client:  # and the other way round
        queue = f"victim.excl.{names.tag}"
        client.declare_queue(queue, exclusive=True, auto_delete=True)
        with bridge.client091("victim") as other:
            for call in (lambda c: c.queue_purge(queue), lambda c: c.queue_delete(queue),
                         lambda c: c.queue_bind(queue, "amq.direct", "k")):
                code, _text = refused091(lambda: call(other.channel()))  # noqa: B023
                assert code == 405


def test_091_a_name_the_facade_cannot_carry_is_refused_at_its_declare(
        bridge: Running, names: Names) -> None:
    """pamqp writes the façade's frames and takes only some characters in a name: an
    exchange named ``att.é…`` made through the bridge faulted every delivery from it
    (the consumer stuck on its first message, an ERROR per message), a queue so named
    left the client's declare unanswered. Both are refused at the declare (406), the
    broker not asked, the connection still served."""
    exchange, queue = f"att.é.{names.tag}", f"att.q?{names.tag}"
    try:
        refused_at_declare(bridge, names, exchange, queue)
    finally:
        with bridge.broker() as conn:  # (made there without the refusal)
            conn.channel().exchange_delete(exchange)
            conn.channel().queue_delete(queue)


def refused_at_declare(bridge: Running, names: Names, exchange: str, queue: str) -> None:
    with bridge.client091("att") as conn:
        code, text = refused091(lambda: conn.channel().exchange_declare(exchange, "direct"))
        assert code == 406
        assert text == (f"PRECONDITION_FAILED - exchange name {exchange!r} cannot be carried "
                        f"by the amqp-bridge façade (it takes letters, digits, space and "
                        f"-_.:@#,/+, at most 127 of them)")
        code, text = refused091(lambda: conn.channel().queue_declare(queue))
        assert (code, text.split(" cannot")[0]) == (
            406, f"PRECONDITION_FAILED - queue name {queue!r}")
        assert conn.channel().queue_declare(names.att("q"), auto_delete=True).method.queue \
            == names.att("q")
    assert queue_depth_if_any(bridge.rabbitmq_url, queue) is None
    with bridge.broker() as conn:  # (not made there: a passive declare finds none)
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            conn.channel().exchange_declare(exchange, "direct", passive=True)
        assert info.value.reply_code == 404


def test_per_vhost_permissions_that_restrict_nothing_are_warned_of(bridge: Running) -> None:
    """Listener ``prod`` gives ``victim`` read only in vhost ``/prod`` — but every vhost
    serves the same names, and ``victim`` may open ``/`` with its full permissions: the
    restriction is an illusion, and the bridge says so at start (the per-vhost grant is
    kept only when the listener's ``virtual_hosts`` lists nothing else)."""
    lines = [line for line in bridge.proc.log().splitlines()
             if "event=permissions_vhost_not_kept" in line]
    assert len(lines) == 1, bridge.proc.log()
    assert "level=warning" in lines[0] and "listener=prod user=victim" in lines[0], lines
    assert "msg=\"façade prod: user 'victim': its permissions per virtual host restrict " \
           "nothing" in lines[0], lines
