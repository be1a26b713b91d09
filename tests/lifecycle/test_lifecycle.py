"""The bridge's life over minutes: one real ``amqp-bridge run`` process through timers
and peers that vanish.

One bridge process for the whole module (the ``life`` fixture): three 0-10
connections (the main in-memory broker behind a cuttable relay, and two brokers that
stamp a user-id on every delivery as qpidd does), two RabbitMQ connections (AMQP 1.0
``cloud`` and AMQP 0-9-1 ``rabbit091``), a 0-10 façade listener (``app``) and a 0-9-1
one (``app091``, pika clients); every connection and façade client heartbeats every
second (``cloud`` every two); metrics on. Routes of every kind with a small
``max_in_flight``: 0-10 queue → 1.0 (``out``), 1.0 → 0-10 exchange (``in``), façade
publish (``pub``), façade consume (``sub``), the two stamped queues → 1.0, and the same
four for 0-9-1: RabbitMQ classic queue → 1.0 (``out091``), 1.0 → RabbitMQ's default
exchange (``in091``), 0-9-1 façade publish (``pub091``) and consume (``sub091``).

The tests below are the phases, in file order, on that one process:

1. everything idle for more than three heartbeat intervals (pika façade clients
   included, and the 0-9-1 connection to RabbitMQ), then a message on every route;
2. bursts in every direction, 0-9-1 ones included;
3. façade subscribers that take messages and vanish (cancel then close, close
   without accepting, TCP reset, SIGKILLed process); then pika consumers of the 0-9-1
   façade that vanish holding unacknowledged messages (basic.cancel then close,
   connection close, channel close, TCP reset, socket shutdown, SIGKILLed pika
   process, SIGSTOPped pika process that the façade's heartbeat takes for dead): the
   next consumer gets them, redelivered;
4. façade publishers that vanish mid-transfer; then 0-9-1 ones (cut mid-body with a
   shutdown or a reset, reset after an unconfirmed burst, a pika process SIGKILLed in
   confirm mode): what was confirmed arrives, nothing partial goes out, nothing held;
5. the 0-10 broker's TCP connection reset mid-stream, then gone silent (the other
   connections, the 0-9-1 one included, do not notice);
6. RabbitMQ restarted (``rabbitmqctl stop_app`` / ``start_app``) mid-stream, under
   every route that touches it, the 0-9-1 ones and the 0-9-1 façade included (durable
   queues, persistent messages);
7. the end state;
8. the user-id stamping brokers.

Each phase asserts its behaviour first (every message sent arrives at least once,
duplicates within ``max_in_flight``, nothing waits more than a few seconds once a
consumer is back: bounded waits, never timed assertions), then the checkpoint that
holds between all phases: the process is alive, ``/healthz`` answers, RSS is under
:data:`RSS_BOUND_KIB`, and the resource gauges (``amqp_bridge_amqp10_links``,
``_legacy_sessions``, ``_facade_sessions``, ``_facade_subscriptions``) are back to
their resting values. A phase that fails leaves the process to the next ones, so one
run shows every phase's fate.

Every phase runs twice, against RabbitMQ 3.10 and then 4.0. Phase 6 restarts the
RabbitMQ app (the OS process stays) of a node of the module's own (``own_rabbitmq``:
``private_rabbitmq`` of that version on free ports, its state in the module's temporary
directory), so the shared node that other tests use at the same moment (other
pytest-xdist workers, other test runs) is never disturbed, and what phase 1 counts on
the node (every connection's heartbeat timeout) is the bridge's alone.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pika
import pytest

from amqp010.spec import DeliveryProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from tests.support.bridge import (
    BridgeRun,
    collect,
    free_port,
    legacy_backlog,
    legacy_client,
    wait_for,
)
from tests.support.logs import records
from tests.support.metrics import Scrape, http_get, metrics_port, poll, scrape
from tests.support.rabbitmq import VERSIONS, private_rabbitmq, rabbitmqctl
from tests.support.relay import Relay

from .peers import (
    AMQP10_HEARTBEAT,
    HEARTBEAT,
    Amqp10Feeder,
    FacadeConsumer,
    FacadePublisher,
    LegacyFeeder,
    abort,
    amqp10_send,
    amqp10_take,
    bodies,
    check_arrived,
    facade_client,
    idle_facade_client,
    killed_subscriber,
    legacy_drain,
    legacy_publish,
    take_unsettled,
)
from .peers091 import (
    PASSWORD,
    USER,
    FacadeConsumer091,
    FacadePublisher091,
    RabbitFeeder,
    close_quietly,
    cut_mid_body,
    facade091,
    heartbeats_received,
    holding_consumer,
    idle_facade091,
    kill,
    killed_consumer,
    killed_publisher,
    pika_socket,
    rabbit_depth,
    rabbit_drain,
    rabbit_publish,
    take_unacked,
)

pytestmark = pytest.mark.serial
"""Alone, after the parallel part of scripts/test: every connection heartbeats every second
and is taken for dead after two silent ones, so the phases need the bridge and this
process to get a core within a second; beside four busy workers on two cores they did not
(a façade client was dropped while idle in phase 1)."""

MAX_IN_FLIGHT = 20
"""Every route's ``max_in_flight.messages``: the bound on duplicates after a fault."""
IDLE = 3.5 * max(HEARTBEAT, AMQP10_HEARTBEAT)
"""More than three heartbeat intervals of every connection."""
BACK_WITHIN = 20.0
"""Seconds a consumer that is back may wait for messages given back (generous: a loaded
two-core machine; a message stuck for good never comes)."""
RSS_BOUND_KIB = 128 * 1024
"""The bridge's resident memory must stay under 128 MiB all along. It runs at about
60 MiB here (Python, proton, pamqp, ten routes) from start to end; a leak per vanished client,
message or reconnect would show as growth across the phases."""


RESTING = {"links{cloud}": 8, "legacy_sessions{legacy}": 2,
           "legacy_sessions{stamp-empty}": 1, "legacy_sessions{stamp-alice}": 1,
           "legacy_sessions{rabbit091}": 2,
           "facade_sessions{app}": 0, "facade_subscriptions{app}": 0,
           "facade_sessions{app091}": 0, "facade_subscriptions{app091}": 0}
"""The resource gauges at rest: a 1.0 link per route side on RabbitMQ that is no façade
consumer (the targets of out, out091, pub, pub091 and the two stamped routes, the sources
of in and in091), a 0-10 session per route on its 0-10 connection, a channel per route on
the 0-9-1 connection, no façade client (0-9-1: channels and consumers)."""


def rabbit_queue(prefix: str) -> str:
    return f"test.life-{prefix}.{uuid.uuid4().hex[:10]}"


@dataclass
class Life:
    """The running bridge and the peers around it, shared by the phases."""

    url: str
    broker: Broker
    server: EngineServer
    relay: Relay
    stampers: dict[str, tuple[Broker, EngineServer]]
    queues: dict[str, str]
    """Route name → RabbitMQ queue name (durable, declared up front)."""
    facade_port: int
    facade091_port: int
    bridge: BridgeRun
    metrics: int = 0
    resting: dict[str, float] = field(default_factory=lambda: dict(RESTING))
    rss_kib: list[int] = field(default_factory=list)

    def address(self, route: str) -> str:
        return f"/amq/queue/{self.queues[route]}"

    def scrape(self) -> Scrape:
        return scrape(self.metrics)

    def gauges(self) -> dict[str, float]:
        """The resource gauges, by ``metric{label}``."""
        s = self.scrape()
        out = {"links{cloud}": s.value("amqp_bridge_amqp10_links", connection="cloud")}
        for conn in ("legacy", "stamp-empty", "stamp-alice", "rabbit091"):
            out[f"legacy_sessions{{{conn}}}"] = s.value("amqp_bridge_legacy_sessions",
                                                        connection=conn)
        for listener in ("app", "app091"):
            out[f"facade_sessions{{{listener}}}"] = s.value("amqp_bridge_facade_sessions",
                                                            listener=listener)
            out[f"facade_subscriptions{{{listener}}}"] = s.value(
                "amqp_bridge_facade_subscriptions", listener=listener)
        return out

    def reconnects(self) -> dict[str, float]:
        """``amqp_bridge_reconnects_total`` by connection."""
        s = self.scrape()
        return {key[1][0][1]: value for key, value in s.samples.items()
                if key[0] == "amqp_bridge_reconnects_total"}

    def client_errors(self, listener: str) -> float:
        """Clients of ``listener`` closed for an error of theirs, every reply code."""
        return sum(value for (name, labels), value in self.scrape().samples.items()
                   if name == "amqp_bridge_facade_client_errors_total"
                   and ("listener", listener) in labels)

    def counter(self, name: str, route: str) -> float:
        return self.scrape().route(f"amqp_bridge_{name}_total", route)

    def alive(self) -> None:
        proc = self.bridge.proc
        assert proc is not None and proc.poll() is None, \
            f"the bridge exited ({proc and proc.returncode}):\n{self.bridge.log()[-6000:]}"

    def checkpoint(self, what: str) -> None:
        """What holds between all phases: alive, healthy, bounded memory, nothing held
        for clients that are gone."""
        self.alive()
        assert http_get(self.metrics, "/healthz") == (200, {"alive": True})
        rss = self.bridge.status("VmRSS")
        self.rss_kib.append(rss)
        assert rss < RSS_BOUND_KIB, f"{what}: RSS {rss} KiB (bound {RSS_BOUND_KIB})"
        self.wait_resting(what)
        self.alive()

    def wait_resting(self, what: str) -> None:
        """Until the resource gauges are back to their resting values (bounded wait)."""
        poll(self.gauges, lambda g: g == self.resting, 15,
             f"{what}: the resource gauges back to {self.resting}")

    def log_events(self, event: str, **fields: Any) -> list[dict[str, Any]]:
        return [r for r in records(self.bridge.log()) if r.get("event") == event
                and all(r.get(k) == v for k, v in fields.items())]


def config(life_queues: dict[str, str], legacy_url: str, stamp_urls: dict[str, str],
           rabbitmq_url: str, facade_port: int, facade091_port: int) -> str:
    def legacy(name: str, url: str) -> str:
        return f"""
  {name}:
    protocol: amqp0-10
    url: "{url}"
    heartbeat: {HEARTBEAT}
    session_timeout: 30
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}"""

    def to_rabbit(route: str) -> str:
        return f"{{connection: cloud, address: /amq/queue/{life_queues[route]}}}"

    return f"""
connections:{legacy("legacy", legacy_url)}{legacy("stamp-empty", stamp_urls["stamp-empty"])}\
{legacy("stamp-alice", stamp_urls["stamp-alice"])}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_url}"
    heartbeat: {AMQP10_HEARTBEAT}
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
  rabbit091:
    protocol: amqp0-9-1
    url: "{rabbitmq_url}"
    heartbeat: {HEARTBEAT}
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{facade_port}", allow_anonymous: true}}
  app091: {{protocol: amqp0-9-1, bind: "127.0.0.1:{facade091_port}",
           users: {{{USER}: "{PASSWORD}"}}}}
metrics: {{bind: "127.0.0.1:0"}}
logging: {{format: json}}
routes:
  - name: out
    from: {{connection: legacy, queue: out}}
    to:   {to_rabbit("out")}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: in
    from: {to_rabbit("in")}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: in}}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: pub
    from: {{listener: app, exchange: events}}
    to:   {to_rabbit("pub")}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: sub
    from: {to_rabbit("sub")}
    to:   {{listener: app, queue: jobs}}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: out091
    from: {{connection: rabbit091, queue: {life_queues["out091-src"]}}}
    to:   {to_rabbit("out091")}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: in091
    from: {to_rabbit("in091")}
    to:   {{connection: rabbit091, exchange: "", routing_key: {life_queues["in091-dst"]}}}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: pub091
    from: {{listener: app091, exchange: events091}}
    to:   {to_rabbit("pub091")}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: sub091
    from: {to_rabbit("sub091")}
    to:   {{listener: app091, queue: jobs091}}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: stamp-empty
    from: {{connection: stamp-empty, queue: stamped}}
    to:   {to_rabbit("stamp-empty")}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
  - name: stamp-alice
    from: {{connection: stamp-alice, queue: stamped}}
    to:   {to_rabbit("stamp-alice")}
    max_in_flight: {{messages: {MAX_IN_FLIGHT}}}
"""


def declare_durable(url: str, names: list[str]) -> None:
    """Durable RabbitMQ queues (they and their persistent messages outlive a restart), in
    one ``rabbitmqctl eval``."""
    binaries = ", ".join(f'<<"{n}">>' for n in names)
    rabbitmqctl(url, "eval", f'[rabbit_amqqueue:declare(rabbit_misc:r(<<"/">>, queue, Q), '
                             f'true, false, [], none, <<"guest">>) || Q <- [{binaries}]].')


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"rabbitmq{v}" for v in VERSIONS])
def own_rabbitmq(request: pytest.FixtureRequest,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a RabbitMQ node for this module alone, 3.10 then 4.0 (every phase runs
    against each): phase 6 restarts it."""
    with private_rabbitmq(tmp_path_factory.mktemp(f"rabbitmq{request.param}-life"),
                          version=request.param) as node:
        yield node.url


@pytest.fixture(scope="module")
def life(own_rabbitmq: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Life]:
    rabbitmq_url = own_rabbitmq
    broker = Broker(users={"guest": "guest"})
    server = broker.serve()
    relay = Relay(server.address)
    stampers = {name: (b, b.serve()) for name, b in (
        ("stamp-empty", Broker(users={"guest": "guest"}, stamp_user_id=b"")),
        ("stamp-alice", Broker(users={"guest": "guest"}, stamp_user_id=b"alice")))}
    queues = {route: rabbit_queue(route)
              for route in ("out", "in", "pub", "sub", "stamp-empty", "stamp-alice",
                            "out091-src", "out091", "in091", "in091-dst", "pub091",
                            "sub091")}
    declare_durable(rabbitmq_url, list(queues.values()))
    with legacy_client(server) as admin:
        admin.declare_queue("out")
        admin.declare_queue("in-q")
        admin.bind("in-q", "amq.direct", "in")
    for _, stamp_server in stampers.values():
        with legacy_client(stamp_server) as admin:
            admin.declare_queue("stamped")
    port, port091 = free_port(), free_port()
    while port091 == port:
        port091 = free_port()
    text = config(queues, relay.url(server.url),
                  {name: s.url for name, (_, s) in stampers.items()}, rabbitmq_url, port,
                  port091)
    bridge = BridgeRun(text, tmp_path_factory.mktemp("life"))
    life = Life(rabbitmq_url, broker, server, relay, stampers, queues, port, port091, bridge)
    try:
        bridge.start()
        life.metrics = metrics_port(bridge.log)
        # both façades listen (a phase run alone with -k connects at once)
        poll(lambda: {r.get("listener") for r in records(bridge.log())
                      if r.get("event") == "listening"}, lambda got: got >= {"app", "app091"},
             20, "both façade listeners listening")
        yield life
    finally:
        bridge.stop()
        relay.close()
        server.stop()
        for _, stamp_server in stampers.values():
            stamp_server.stop()


# --- 0. start --------------------------------------------------------------------------------


def test_starts_with_the_resting_resources(life: Life) -> None:
    poll(lambda: http_get(life.metrics, "/readyz"), lambda r: r[0] == 200, 30, "/readyz 200")
    life.checkpoint("at start")


# --- 1. idle past three heartbeat intervals ---------------------------------------------------


def test_idle_past_three_heartbeats_on_every_connection(life: Life) -> None:
    """Every connection idles for more than three heartbeat intervals, then every route
    moves a message. Each façade client answers heartbeats on a thread of its own (and
    is used only through it): pumped in turn by this thread, they were all silent while
    ``rabbitmqctl`` ran (5 to 13 s on a loaded machine) and the façades dropped them,
    as they should."""
    with contextlib.ExitStack() as clients:
        publisher = clients.enter_context(
            idle_facade_client(life.facade_port, "the 0-10 publisher"))
        subscriber = clients.enter_context(
            idle_facade_client(life.facade_port, "the 0-10 subscriber"))
        publisher091 = clients.enter_context(
            idle_facade091(life.facade091_port, "the pika publisher"))
        consumer091 = clients.enter_context(
            idle_facade091(life.facade091_port, "the pika consumer"))
        subscriber.call(lambda client: client.subscribe("jobs", messages=10))
        pub091 = publisher091.call(lambda conn: conn.channel())
        publisher091.call(lambda conn: pub091.confirm_delivery())
        sub091: list[bytes] = []

        def on_message(ch: Any, method: Any, _props: Any, body: bytes) -> None:
            sub091.append(body)
            ch.basic_ack(method.delivery_tag)

        consumer091.call(lambda conn: conn.channel().basic_consume("jobs091", on_message))
        # the heartbeat is on: RabbitMQ holds the bridge's 0-9-1 connection to HEARTBEAT,
        # and the façade agreed HEARTBEAT with the pika clients
        timeouts = [line.split()[1] for line in rabbitmqctl(
            life.url, "list_connections", "protocol", "timeout").splitlines()
            if line.startswith("{0,9,1}")]
        assert timeouts and set(timeouts) == {str(HEARTBEAT)}, timeouts
        pikas = (publisher091, consumer091)
        assert {c.call(lambda conn: conn._impl.params.heartbeat) for c in pikas} == {HEARTBEAT}
        reconnects = life.reconnects()
        beats = [c.call(heartbeats_received) for c in pikas]
        time.sleep(IDLE)  # every client silent, answering heartbeats on its thread
        for client in (publisher, subscriber, *pikas):
            client.check()
        life.alive()
        # heartbeats kept every connection up: none was taken for dead and re-opened
        assert life.reconnects() == reconnects, life.log_events("transport_error")[-3:]
        # the 0-9-1 façade sent its own heartbeats to the idle pika clients
        after = [c.call(heartbeats_received) for c in pikas]
        assert all(a > b for a, b in zip(after, beats, strict=True)), (beats, after)
        assert all(c.call(lambda conn: conn.is_open) for c in pikas)
        # every connection is still up and every route still moves messages
        publisher.call(lambda client: client.publish(
            b"idle-pub", exchange="events", routing_key="e",
            delivery=DeliveryProperties(delivery_mode=2)))
        publisher091.call(lambda conn: pub091.basic_publish(
            "events091", "e", b"idle-pub091", pika.BasicProperties(delivery_mode=2)))
        legacy_publish(life.server, "out", [b"idle-out"])
        rabbit_publish(life.url, life.queues["out091-src"], [b"idle-out091"])
        amqp10_send(life.url, life.address("in"), [b"idle-in"])
        amqp10_send(life.url, life.address("in091"), [b"idle-in091"])
        amqp10_send(life.url, life.address("sub"), [b"idle-sub"])
        amqp10_send(life.url, life.address("sub091"), [b"idle-sub091"])
        got = subscriber.call(lambda client: client.receive("jobs", timeout=BACK_WITHIN))
        assert bytes(got.body) == b"idle-sub"
        subscriber.call(lambda client: client.accept(got))

        def delivered() -> bool:
            consumer091.check()
            return bool(sub091)

        wait_for(delivered, BACK_WITHIN, "the idle pika consumer's message", life.bridge)
        assert sub091 == [b"idle-sub091"]
    for route, body in (("pub", b"idle-pub"), ("out", b"idle-out"),
                        ("pub091", b"idle-pub091"), ("out091", b"idle-out091")):
        assert amqp10_take(life.url, life.address(route), [body], timeout=BACK_WITHIN,
                           linger=0.2) == [body], route
    assert legacy_drain(life.server, "in-q", [b"idle-in"], timeout=BACK_WITHIN,
                        linger=0.2) == [b"idle-in"]
    assert rabbit_drain(life.url, life.queues["in091-dst"], [b"idle-in091"],
                        timeout=BACK_WITHIN, linger=0.2) == [b"idle-in091"]
    assert not life.log_events("client_silent"), "a façade client was taken for dead"
    assert not life.log_events("heartbeat_timeout"), "a connection was taken for dead"
    life.checkpoint("after idling")


# --- 2. bursts in every direction -------------------------------------------------------------

BURST = 300


def test_bursts_in_every_direction(life: Life) -> None:
    routes = ("out", "in", "pub", "sub", "out091", "in091", "pub091", "sub091")
    sent = {r: bodies(f"burst-{r}", BURST) for r in routes}
    consumer = FacadeConsumer(life.facade_port, "jobs")
    consumer091 = FacadeConsumer091(life.facade091_port, "jobs091")
    consumer.start()
    consumer091.start()
    try:
        consumer.subscribed.wait(30)
        consumer091.subscribed.wait(30)
        feeders: list[LegacyFeeder | RabbitFeeder | Amqp10Feeder] = [
            LegacyFeeder(life.server, "out", sent["out"], 1.0),
            RabbitFeeder(life.url, life.queues["out091-src"], sent["out091"], 1.0),
            *(Amqp10Feeder(life.url, life.address(r), sent[r], 1.0)
              for r in ("in", "sub", "in091", "sub091"))]
        for feeder in feeders:
            feeder.start()
        publishers: list[FacadePublisher | FacadePublisher091] = [
            FacadePublisher(life.facade_port, "events", sent["pub"], 1.0),
            FacadePublisher091(life.facade091_port, "events091", sent["pub091"], 1.0)]
        for publisher in publishers:
            publisher.start()
        for feeder in feeders:
            feeder.finish()
        for route in ("out", "out091"):
            check_arrived(amqp10_take(life.url, life.address(route), sent[route], timeout=60),
                          sent[route], MAX_IN_FLIGHT, route)
        check_arrived(legacy_drain(life.server, "in-q", sent["in"], timeout=60), sent["in"],
                      MAX_IN_FLIGHT, "in")
        check_arrived(rabbit_drain(life.url, life.queues["in091-dst"], sent["in091"],
                                   timeout=60), sent["in091"], MAX_IN_FLIGHT, "in091")
        for c, route in ((consumer, "sub"), (consumer091, "sub091")):
            c.wait_for(sent[route], 60, route)
            check_arrived(c.finish(), sent[route], MAX_IN_FLIGHT, route)
        for publisher in publishers:
            publisher.finish()
        for route in ("pub", "pub091"):
            check_arrived(amqp10_take(life.url, life.address(route), sent[route], timeout=60),
                          sent[route], MAX_IN_FLIGHT, route)
    finally:
        consumer.stop()
        consumer091.stop()
    life.checkpoint("after the bursts")


# --- 3. façade subscribers that vanish --------------------------------------------------------

TAKEN = 5
"""Messages each vanishing subscriber takes and never settles."""


def test_subscribers_that_vanish_leave_nothing_stuck_and_nothing_held(life: Life) -> None:
    kinds = ("cancel-close", "close", "reset", "kill")
    sent = bodies("vanish-sub", TAKEN * len(kinds))
    amqp10_send(life.url, life.address("sub"), sent)
    taken: dict[str, list[bytes]] = {}
    # qpid.messaging's receiver close: cancel the subscription, then end the session
    client = facade_client(life.facade_port)
    taken["cancel-close"] = take_unsettled(client, "jobs", TAKEN)
    client.cancel("jobs")
    client.close()
    life.wait_resting("after a subscriber that cancelled and closed")
    # close without accepting (session detach, connection close)
    client = facade_client(life.facade_port)
    taken["close"] = take_unsettled(client, "jobs", TAKEN)
    client.close()
    life.wait_resting("after a subscriber that closed")
    # TCP reset
    client = facade_client(life.facade_port)
    taken["reset"] = take_unsettled(client, "jobs", TAKEN)
    abort(client.transport.sock)
    life.wait_resting("after a subscriber that reset its connection")
    # a client process killed with SIGKILL
    assert killed_subscriber(life.facade_port, "jobs", TAKEN) == -9
    life.wait_resting("after a subscriber process that was killed")
    for kind in kinds[:-1]:
        assert len(set(taken[kind])) == TAKEN, (kind, taken[kind])
    # a subscriber that comes back gets every message, those the others took included
    consumer = FacadeConsumer(life.facade_port, "jobs")
    consumer.start()
    try:
        consumer.wait_for(sent, BACK_WITHIN, "messages the vanished subscribers held")
        check_arrived(consumer.finish(), sent, MAX_IN_FLIGHT, "sub after vanished subscribers")
    finally:
        consumer.stop()
    life.checkpoint("after the vanished subscribers")
    # RabbitMQ agrees: no consumer left on the route's queue
    poll(lambda: rabbitmqctl(life.url, "list_queues", "name", "consumers"),
         lambda out: any(line.split() == [life.queues["sub"], "0"]
                         for line in out.splitlines()),
         15, "RabbitMQ to count no consumer on the façade route's queue")


def test_091_consumers_that_vanish_give_their_messages_to_the_next_one(life: Life) -> None:
    """pika consumers of the 0-9-1 façade that hold unacknowledged messages and vanish,
    or go silent (the façade's heartbeat takes them for dead): what they held goes back
    at once (the façade releases it on its 1.0 link, RabbitMQ marks it redelivered) and
    reaches the next consumer, redelivered."""
    kinds = ("cancel-close", "close", "channel-close", "reset", "shutdown", "kill", "silent")
    sent = bodies("vanish-sub091", TAKEN * len(kinds))
    amqp10_send(life.url, life.address("sub091"), sent)
    taken: dict[str, list[bytes]] = {}
    for kind in kinds:
        if kind == "kill":  # a pika process SIGKILLed while it holds its messages
            killed_consumer(life.facade091_port, "jobs091", TAKEN)
            life.wait_resting("after a 0-9-1 consumer process that was killed")
            continue
        if kind == "silent":  # SIGSTOPped: its TCP connection open, no more heartbeats
            silent = len(life.log_events("client_silent", listener="app091"))
            proc = holding_consumer(life.facade091_port, "jobs091", TAKEN)
            try:
                proc.send_signal(signal.SIGSTOP)
                wait_for(lambda n=silent: len(life.log_events("client_silent",
                                                              listener="app091")) > n,
                         10 * HEARTBEAT + BACK_WITHIN,
                         "the façade to take the silent pika consumer for dead", life.bridge)
                life.wait_resting("after a 0-9-1 consumer that went silent")
            finally:
                kill(proc)
            continue
        conn = facade091(life.facade091_port)
        try:
            channel, taken[kind] = take_unacked(conn, "jobs091", TAKEN)
            if kind == "cancel-close":  # basic.cancel, then connection.close
                channel.basic_cancel(channel.consumer_tags[0])
                conn.close()
            elif kind == "close":  # connection.close, nothing acked
                conn.close()
            elif kind == "channel-close":  # channel.close; the connection stays
                channel.close()
                life.wait_resting("after a 0-9-1 consumer that closed its channel")
                assert conn.is_open
                conn.close()
            elif kind == "reset":  # TCP reset
                abort(pika_socket(conn))
            else:  # both directions shut down (FIN), then closed
                sock = pika_socket(conn)
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        finally:
            close_quietly(conn)
        life.wait_resting(f"after a 0-9-1 consumer that vanished ({kind})")
    for kind, got in taken.items():
        assert len(set(got)) == TAKEN, (kind, got)
    # the next consumer gets every message, those the others held included, redelivered
    consumer = FacadeConsumer091(life.facade091_port, "jobs091")
    consumer.start()
    try:
        consumer.wait_for(sent, BACK_WITHIN, "messages the vanished 0-9-1 consumers held")
        received = list(consumer.received)
        check_arrived(consumer.finish(), sent, MAX_IN_FLIGHT,
                      "sub091 after vanished consumers")
    finally:
        consumer.stop()
    redelivered = {body for body, again in received if again}
    held = {body for got in taken.values() for body in got}
    assert held <= redelivered, f"not marked redelivered: {sorted(held - redelivered)[:5]}"
    life.checkpoint("after the vanished 0-9-1 consumers")
    poll(lambda: rabbitmqctl(life.url, "list_queues", "name", "consumers"),
         lambda out: any(line.split() == [life.queues["sub091"], "0"]
                         for line in out.splitlines()),
         15, "RabbitMQ to count no consumer on the 0-9-1 façade route's queue")


# --- 4. façade publishers that vanish mid-transfer --------------------------------------------


def test_publishers_that_vanish_mid_transfer(life: Life) -> None:
    # a transfer of several frames, cut in the middle: the connection closes (FIN) or is
    # reset (RST) with the message incomplete
    for ending, partial in (("close", b"P" * 200_000), ("reset", b"R" * 200_000)):
        client = facade_client(life.facade_port)
        assert client.session is not None
        client.session.message_transfer(
            "events", [DeliveryProperties(routing_key="e", delivery_mode=2)], partial)
        wire = client.conn.data_to_send()
        client.transport.sock.sendall(wire[:len(wire) // 2])
        if ending == "close":
            client.transport.sock.close()
        else:
            abort(client.transport.sock)
    # a publisher that sends a burst without waiting and is reset right away: what the
    # bridge took may arrive, and nothing of it may stay in flight
    client = facade_client(life.facade_port)
    gone = bodies("vanish-pub", 50)
    for body in gone:
        client.publish(body, exchange="events", routing_key="e", wait=False,
                       delivery=DeliveryProperties(delivery_mode=2))
    abort(client.transport.sock)
    poll(lambda: life.scrape().route("amqp_bridge_in_flight", "pub"), lambda n: n == 0, 15,
         "nothing in flight on the publish route")
    # the route still works, and only whole messages went through
    after = bodies("after-vanish-pub", 20)
    publisher = FacadePublisher(life.facade_port, "events", after, 0)
    publisher.run()
    assert publisher.error is None, repr(publisher.error)
    got = amqp10_take(life.url, life.address("pub"), after, timeout=BACK_WITHIN)
    check_arrived(got, after, MAX_IN_FLIGHT, "pub after vanished publishers")
    assert set(got) <= set(after) | set(gone), \
        f"unexpected bodies: {sorted(set(got) - set(after) - set(gone))[:3]!r}"[:500]
    life.checkpoint("after the vanished publishers")


def test_091_publishers_that_vanish_mid_publish(life: Life) -> None:
    """pika publishers of the 0-9-1 façade that vanish mid-publish: a message cut in its
    body never goes out, what the bridge confirmed arrived, nothing stays held."""
    client_errors = life.client_errors("app091")
    # a basic.publish cut in its body: the connection shut down (FIN) or reset (RST)
    for ending in ("shutdown", "reset"):
        conn = facade091(life.facade091_port)
        cut_mid_body(conn, "events091", 300_000)
        sock = pika_socket(conn)
        if ending == "shutdown":
            sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        else:
            abort(sock)
        close_quietly(conn)
    # a burst without confirms, reset right away: what the bridge took may arrive
    conn = facade091(life.facade091_port)
    channel = conn.channel()
    gone = bodies("vanish-pub091", 50)
    for body in gone:
        channel.basic_publish("events091", "e", body, pika.BasicProperties(delivery_mode=2))
    abort(pika_socket(conn))
    close_quietly(conn)
    # a pika process in confirm mode SIGKILLed mid-stream: what it saw confirmed arrives
    confirmed = killed_publisher(life.facade091_port, "events091", "killed-pub091", 30)
    poll(lambda: life.scrape().route("amqp_bridge_in_flight", "pub091"), lambda n: n == 0, 15,
         "nothing in flight on the 0-9-1 publish route")
    life.wait_resting("after the vanished 0-9-1 publishers")
    # a publisher gone is no client error (the cut frames were well-formed so far)
    assert life.client_errors("app091") == client_errors
    # the route still works, and only whole messages went through
    after = bodies("after-vanish-pub091", 20)
    publisher = FacadePublisher091(life.facade091_port, "events091", after, 0)
    publisher.run()
    assert publisher.error is None, repr(publisher.error)
    got = amqp10_take(life.url, life.address("pub091"), after + confirmed, timeout=BACK_WITHIN)
    check_arrived(got, after + confirmed, MAX_IN_FLIGHT, "pub091 after vanished publishers")
    unexpected = {b for b in got if b not in set(after) | set(gone)
                  and not b.startswith(b"killed-pub091-")}
    assert not unexpected, f"unexpected bodies: {sorted(unexpected)[:3]!r}"[:500]
    life.checkpoint("after the vanished 0-9-1 publishers")


# --- 5. the 0-10 broker's connection reset, then silent ----------------------------------------


def test_legacy_connection_reset_mid_stream_then_silent(life: Life) -> None:
    out, into = bodies("reset-out", 400), bodies("reset-in", 400)
    reconnects = life.scrape().value("amqp_bridge_reconnects_total", connection="legacy",
                                     protocol="amqp0-10")
    others = {name: n for name, n in life.reconnects().items() if name != "legacy"}
    delivered = life.counter("delivered", "out"), life.counter("delivered", "in")
    feeders = [LegacyFeeder(life.server, "out", out, 3.0),
               Amqp10Feeder(life.url, life.address("in"), into, 3.0)]
    for feeder in feeders:
        feeder.start()
    poll(lambda: (life.counter("delivered", "out") - delivered[0],
                  life.counter("delivered", "in") - delivered[1]),
         lambda d: min(d) >= 50, 30, "both routes mid-stream")
    assert life.relay.reset() > 0  # the bridge's 0-10 connection, reset mid-stream
    for feeder in feeders:
        feeder.finish()
    check_arrived(amqp10_take(life.url, life.address("out"), out, timeout=60), out,
                  MAX_IN_FLIGHT, "out across a reset")
    check_arrived(legacy_drain(life.server, "in-q", into, timeout=60), into, MAX_IN_FLIGHT,
                  "in across a reset")
    assert life.scrape().value("amqp_bridge_reconnects_total", connection="legacy",
                               protocol="amqp0-10") > reconnects
    # the other connections (the 0-9-1 one too) did not notice
    assert {name: n for name, n in life.reconnects().items() if name != "legacy"} == others
    life.checkpoint("after the 0-10 connection reset")

    # the network goes silent: the heartbeat tells the bridge the broker is gone
    lost = len(life.log_events("lost", connection="legacy"))
    life.relay.pause()
    try:
        wait_for(lambda: len(life.log_events("lost", connection="legacy")) > lost,
                 6 * HEARTBEAT + 10, "the bridge to give up the silent 0-10 connection",
                 life.bridge)
    finally:
        life.relay.resume()
    after = bodies("silent-out", 20)
    legacy_publish(life.server, "out", after)
    check_arrived(amqp10_take(life.url, life.address("out"), after, timeout=BACK_WITHIN),
                  after, MAX_IN_FLIGHT, "out after the silence")
    life.checkpoint("after the silent 0-10 connection")


# --- 6. RabbitMQ restarted --------------------------------------------------------------------


def test_rabbitmq_restart_mid_stream(life: Life) -> None:
    out, into, pub, sub = (bodies(f"restart-{r}", 300) for r in ("out", "in", "pub", "sub"))
    out091, in091, pub091, sub091 = (bodies(f"restart-{r}", 300)
                                     for r in ("out091", "in091", "pub091", "sub091"))
    consumer = FacadeConsumer(life.facade_port, "jobs")
    consumer.start()
    consumer091 = FacadeConsumer091(life.facade091_port, "jobs091")
    consumer091.start()
    try:
        consumer.subscribed.wait(30)
        consumer091.subscribed.wait(30)
        amqp10_send(life.url, life.address("sub"), sub)
        amqp10_send(life.url, life.address("in"), into)
        amqp10_send(life.url, life.address("sub091"), sub091)
        amqp10_send(life.url, life.address("in091"), in091[:150])
        feeder = LegacyFeeder(life.server, "out", out, 4.0)
        feeder.start()
        # publishes to RabbitMQ's 0-9-1 side across the restart (reconnecting)
        feeder091 = RabbitFeeder(life.url, life.queues["out091-src"], out091, 4.0)
        feeder091.start()
        publisher = FacadePublisher(life.facade_port, "events", pub, 4.0)
        publisher.start()
        publisher091 = FacadePublisher091(life.facade091_port, "events091", pub091, 4.0)
        publisher091.start()
        poll(lambda: (life.counter("delivered", "out"), life.counter("delivered", "out091")),
             lambda n: min(n) > 0, 30, "out and out091 moving")
        opened = len(life.log_events("open", connection="cloud"))
        opened091 = len(life.log_events("open", connection="rabbit091"))
        reconnects091 = life.reconnects()["rabbit091"]
        rabbitmqctl(life.url, "stop_app")
        try:
            time.sleep(2 * AMQP10_HEARTBEAT)  # down for a while
        finally:
            rabbitmqctl(life.url, "start_app")
        rabbitmqctl(life.url, "await_startup")
        amqp10_send(life.url, life.address("in091"), in091[150:])  # half before, half after
        feeder.finish()
        check_arrived(amqp10_take(life.url, life.address("out"), out, timeout=90), out,
                      MAX_IN_FLIGHT, "out across the restart")
        check_arrived(legacy_drain(life.server, "in-q", into, timeout=60), into,
                      MAX_IN_FLIGHT, "in across the restart")
        consumer.wait_for(sub, 60, "sub across the restart")
        check_arrived(consumer.finish(), sub, MAX_IN_FLIGHT, "sub across the restart")
        # a publisher the bridge throttles while RabbitMQ is away is still a live client
        publisher.finish()
        check_arrived(amqp10_take(life.url, life.address("pub"), pub, timeout=60), pub,
                      MAX_IN_FLIGHT, "pub across the restart")
        # the 0-9-1 routes: every message at least once, duplicates within max_in_flight
        # (plus the at most one message per lost connection the feeder sent again)
        feeder091.finish()
        check_arrived(amqp10_take(life.url, life.address("out091"), out091, timeout=90),
                      out091, MAX_IN_FLIGHT + feeder091.in_doubt, "out091 across the restart")
        check_arrived(rabbit_drain(life.url, life.queues["in091-dst"], in091, timeout=60),
                      in091, MAX_IN_FLIGHT, "in091 across the restart")
        consumer091.wait_for(sub091, 60, "sub091 across the restart")
        check_arrived(consumer091.finish(), sub091, MAX_IN_FLIGHT,
                      "sub091 across the restart")
        publisher091.finish()
        check_arrived(amqp10_take(life.url, life.address("pub091"), pub091, timeout=60),
                      pub091, MAX_IN_FLIGHT, "pub091 across the restart")
    finally:
        consumer.stop()
        consumer091.stop()
    assert len(life.log_events("open", connection="cloud")) > opened
    # the 0-9-1 connection was lost with the node and opened again
    assert len(life.log_events("open", connection="rabbit091")) > opened091
    assert life.reconnects()["rabbit091"] > reconnects091
    life.checkpoint("after the RabbitMQ restart")


# --- 7. the end state -------------------------------------------------------------------------


def test_end_state(life: Life) -> None:
    life.checkpoint("at the end")
    final = life.scrape()
    for route in ("out", "in", "pub", "sub", "out091", "in091", "pub091", "sub091"):
        assert final.route("amqp_bridge_in_flight", route) == 0, route
        assert final.route("amqp_bridge_route_ready", route) == 1, route
    assert legacy_backlog(life.broker, "out") == 0
    assert rabbit_depth(life.url, life.queues["out091-src"]) == 0
    assert max(life.rss_kib) < RSS_BOUND_KIB


# --- 8. brokers that stamp a user-id ----------------------------------------------------------


def test_user_ids_stamped_by_the_legacy_broker_reach_the_1_0_side(life: Life) -> None:
    """qpidd stamps ``user-id`` on what came in over 1.0: empty, or the sender's login,
    which RabbitMQ refuses from the bridge's login (it ends the session). Both kinds of
    message must arrive, and nothing stays stuck at the 0-10 source."""
    for route in ("stamp-empty", "stamp-alice"):
        broker, server = life.stampers[route]
        sent = bodies(route, 5)
        legacy_publish(server, "stamped", sent)
        got = amqp10_take(life.url, life.address(route), sent, timeout=BACK_WITHIN)
        check_arrived(got, sent, MAX_IN_FLIGHT, route)
        wait_for(lambda b=broker: legacy_backlog(b, "stamped") == 0, BACK_WITHIN,
                 f"{route}: the 0-10 source settled", life.bridge)
    life.alive()


def test_a_stamped_user_id_refused_by_rabbitmq_is_kept_in_an_annotation(life: Life) -> None:
    _, server = life.stampers["stamp-alice"]
    legacy_publish(server, "stamped", [b"alice-annotated"])
    [message] = [m for m in _collect_raw(life, "stamp-alice", b"alice-annotated")]
    assert message.user_id in (None, b"", b"guest")
    assert any(value in (b"alice", "alice") for value in (message.annotations or {}).values()), \
        message.annotations


def _collect_raw(life: Life, route: str, body: bytes) -> list[Any]:
    return [m for m in collect(life.url, life.address(route),
                               lambda ms: any(bytes(m.body) == body for m in ms),
                               linger=0.2, timeout=BACK_WITHIN) if bytes(m.body) == body]

