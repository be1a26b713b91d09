"""``amqp-bridge demo``: the whole bridge on one machine, end to end, in seconds.

The demo needs only an AMQP 1.0 broker (``scripts/run`` starts the project's
RabbitMQ). The legacy side is embedded: the in-memory AMQP 0-10 broker of
:mod:`amqp010.testing.broker`, served over loopback TCP by the engine's server role.
Between them the real bridge runs (the same :class:`~bridge.app.Bridge` as
``amqp-bridge run``) with two routes and the façade:

- ``orders-out``: 0-10 queue ``orders`` → 1.0 ``/queue/amqp-bridge-demo.orders``,
  rendered as CloudEvents (binary mode) from a template;
- ``replies-in``: 1.0 ``/queue/amqp-bridge-demo.replies`` → 0-10 exchange
  ``amq.direct``, routing key ``replies`` (bound to queue ``replies``);
- ``facade-publish``: what a legacy 0-10 application publishes to exchange
  ``events`` on the façade listener → 1.0 ``/queue/amqp-bridge-demo.events``,
  as structured CloudEvents.

A legacy 0-10 client publishes orders, an AMQP 1.0 consumer (proton) reads them
as CloudEvents and answers each with a reply, which the 0-10 client receives; a
legacy application publishes events through the façade. Every message is
checked; the exit status says whether all arrived. ``--keep-running`` leaves
the bridge and the embedded broker up afterwards, for your own clients.
"""

from __future__ import annotations

import contextlib
import json
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from proton import Message
from proton.utils import BlockingConnection

from amqp010.spec import DeliveryProperties, MessageProperties
from amqp010.testing.broker import Broker
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from mappings.cloudevents import from_message
from mappings.message import AmqpMessage

from .app import Bridge
from .config import parse_config, redact_url
from .runtime import reactor

PREFIX = "/queue/amqp-bridge-demo"
"""AMQP 1.0 addresses the demo uses (RabbitMQ declares ``/queue/NAME`` on first use)."""

FACADE_USER, FACADE_PASSWORD = "demo-app", "demo-secret"


@dataclass(frozen=True)
class DemoResult:
    """What arrived where; ``ok`` when every message made it."""

    orders: int
    events_read: int
    replies: int
    facade_events: int
    expected: int

    @property
    def ok(self) -> bool:
        return self.events_read == self.replies == self.facade_events == self.expected


def demo_config(legacy_url: str, amqp10_url: str, facade_bind: str) -> str:
    """The demo's bridge configuration (YAML), as a user would write it."""
    return f"""
connections:
  legacy: {{protocol: amqp0-10, url: "{legacy_url}", heartbeat: 10}}
  cloud:  {{protocol: amqp1.0, url: "{amqp10_url}"}}
listeners:
  facade:
    protocol: amqp0-10
    bind: "{facade_bind}"
    users: {{{FACADE_USER}: "{FACADE_PASSWORD}"}}
routes:
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {PREFIX}.orders}}
    cloudevents:
      mode: binary
      type: com.example.order.created
      source: /legacy/orders
      extensions: {{run: run}}      # extension attribute <- application header
  - name: replies-in
    from: {{connection: cloud, address: {PREFIX}.replies}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: replies}}
  - name: facade-publish
    from: {{listener: facade, exchange: events}}
    to:   {{connection: cloud, address: {PREFIX}.events}}
    cloudevents:
      mode: structured
      type: com.example.legacy.event
      source: /legacy/facade
      extensions: {{run: run}}
"""


def run_demo(amqp10_url: str, *, messages: int = 5, keep_running: bool = False,
             out: TextIO, timeout: float = 30.0) -> DemoResult:
    """Run the demo against the AMQP 1.0 broker at ``amqp10_url``; prints as it goes."""
    say = _printer(out)
    with _embedded_legacy_broker() as server, tempfile.TemporaryDirectory() as tmp:
        facade_bind = f"127.0.0.1:{_free_port()}"
        text = demo_config(server.url, amqp10_url, facade_bind)
        (Path(tmp) / "demo.yaml").write_text(text)
        say(f"embedded AMQP 0-10 broker on {server.url}; AMQP 1.0 broker {redact_url(amqp10_url)}; "
            f"façade on amqp://{FACADE_USER}:***@{facade_bind}")
        legacy = BlockingClient.connect(_with_login(server.url), timeout=timeout)
        legacy.declare_queue("orders")
        legacy.declare_queue("replies")
        legacy.bind("replies", "amq.direct", "replies")
        with _running_bridge(text) as bridge:
            say("bridge running: " + ", ".join(r.name for r in bridge.config.routes))
            result = _exchange(legacy, amqp10_url, facade_bind, messages, timeout, say)
            if keep_running:
                say("the bridge keeps running; Ctrl-C stops it")
                with contextlib.suppress(KeyboardInterrupt):
                    while True:
                        time.sleep(3600)
        legacy.close()
    verdict = "OK" if result.ok else "INCOMPLETE"
    say(f"{verdict}: {result.orders} orders 0-10 → 1.0 as CloudEvents ({result.events_read} "
        f"read), {result.replies} replies 1.0 → 0-10, {result.facade_events} façade events "
        f"→ 1.0 (of {result.expected} each)")
    return result


def _exchange(legacy: BlockingClient, amqp10_url: str, facade_bind: str, count: int,
              timeout: float, say: Callable[[str], None]) -> DemoResult:
    run = uuid.uuid4().hex[:8]
    order_ids = [uuid.uuid4() for _ in range(count)]
    for i, order_id in enumerate(order_ids):
        body = json.dumps({"order": i, "run": run, "item": "widget", "quantity": i + 1})
        legacy.publish(body.encode(), "orders",
                       delivery=DeliveryProperties(routing_key="orders", delivery_mode=2),
                       properties=MessageProperties(
                           message_id=order_id, content_type="application/json",
                           application_headers={"run": run, "order": i}))
    say(f"0-10 client published {count} orders to queue 'orders'")

    amqp10 = BlockingConnection(amqp10_url, timeout=timeout)
    try:
        events_read = 0
        receiver = amqp10.create_receiver(f"{PREFIX}.orders", credit=count)
        replier = amqp10.create_sender(f"{PREFIX}.replies")
        deadline = time.monotonic() + timeout
        while events_read < count and time.monotonic() < deadline:
            message = receiver.receive(timeout=max(0.1, deadline - time.monotonic()))
            receiver.accept()
            event = from_message(AmqpMessage.from_proton(message))
            if event is None or event.extensions.get("run") != run:
                continue  # left over from an earlier run
            events_read += 1
            say(f"1.0 consumer got CloudEvent id={event.id} type={event.type} "
                f"source={event.source} data={(event.data or b'').decode()}")
            replier.send(Message(id=str(uuid.uuid4()), correlation_id=event.id,
                                 subject="replies", properties={"run": run},
                                 body=f"order {event.id} confirmed"))
        say(f"1.0 producer sent {events_read} replies")
        replies = _receive_replies(legacy, run, events_read, deadline, say)
        facade_events = _facade_round(amqp10, facade_bind, run, count, deadline, say)
    finally:
        amqp10.close()
    return DemoResult(count, events_read, replies, facade_events, count)


def _receive_replies(legacy: BlockingClient, run: str, count: int, deadline: float,
                     say: Callable[[str], None]) -> int:
    legacy.subscribe("replies", "replies", messages=None)
    got = 0
    while got < count and time.monotonic() < deadline:
        try:
            reply = legacy.receive("replies", timeout=max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            break
        legacy.accept(reply)
        headers = (reply.message_properties.application_headers or {}) \
            if reply.message_properties else {}
        if headers.get("run") != run:
            continue
        got += 1
        say(f"0-10 client got reply: {reply.body.decode()}")
    return got


def _facade_round(amqp10: BlockingConnection, facade_bind: str, run: str, count: int,
                  deadline: float, say: Callable[[str], None]) -> int:
    host, port = facade_bind.rsplit(":", 1)
    app = BlockingClient.connect(f"amqp://{FACADE_USER}:{FACADE_PASSWORD}@{host}:{port}",
                                 timeout=max(1.0, deadline - time.monotonic()))
    try:
        for i in range(count):
            app.publish(json.dumps({"reading": i, "run": run}).encode(), "sensor", "events",
                        properties=MessageProperties(content_type="application/json",
                                                     application_headers={"run": run}),
                        wait=False)
        app.sync()
    finally:
        app.close()
    say(f"legacy application published {count} events to the façade (exchange 'events')")
    receiver = amqp10.create_receiver(f"{PREFIX}.events", credit=count)
    got = 0
    while got < count and time.monotonic() < deadline:
        message = receiver.receive(timeout=max(0.1, deadline - time.monotonic()))
        receiver.accept()
        event = from_message(AmqpMessage.from_proton(message))
        if event is None or event.extensions.get("run") != run:
            continue
        got += 1
        say(f"1.0 consumer got structured CloudEvent id={event.id} type={event.type}")
    return got


@contextlib.contextmanager
def _embedded_legacy_broker() -> Iterator[EngineServer]:
    broker = Broker(users={"guest": "guest"})
    server = broker.serve()
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def _running_bridge(config_text: str) -> Iterator[Bridge]:
    """The bridge on a thread of its own, stopped gracefully (drained) on exit."""
    bridge = Bridge(parse_config(config_text, source="demo config"))
    container = reactor.container(bridge)
    thread = threading.Thread(target=container.run, name="bridge", daemon=True)
    thread.start()
    try:
        yield bridge
    finally:
        bridge.request_stop()
        thread.join(30)


def _with_login(url: str) -> str:
    return url.replace("amqp://", "amqp://guest:guest@", 1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _printer(out: TextIO) -> Callable[[str], None]:
    start = time.monotonic()

    def say(text: str) -> None:
        out.write(f"[{time.monotonic() - start:6.2f}s] {text}\n")
        out.flush()

    return say
