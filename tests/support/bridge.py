"""The bridge under test: ``amqp-bridge run`` as a subprocess, the in-memory 0-10 broker
around it, and the helpers the bridge, fault, memory, tap, security and ops tests share."""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from amqp010.spec import DeliveryProperties, MessageProperties, ReplyTo
from amqp010.testing.broker import Broker
from amqp010.testing.broker import Message as StoredMessage
from amqp010.testing.broker import Queue as BrokerQueue
from amqp010.testing.server import EngineServer
from amqp010.transport import BlockingClient
from tests.support.rabbitmq import queue_address

ROOT = Path(__file__).resolve().parents[2]


def process_status(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` figure of process ``pid`` in KiB (``VmRSS``, ``VmHWM``);
    ``OSError`` once the process is gone."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


class BridgeRun:
    """``amqp-bridge run -c FILE`` as a subprocess; its log is kept for assertions."""

    def __init__(self, config: str, tmp_path: Path, name: str = "bridge", *,
                 log_level: str = "info", args: tuple[str, ...] = (),
                 nofile: int | None = None, env: dict[str, str] | None = None) -> None:
        self.log_level = log_level
        self.env = env or {}
        """Added to the process's environment (e.g. the variables of ``${...}`` secrets)."""
        self.args = args
        self.nofile = nofile
        """RLIMIT_NOFILE (soft and hard) of the bridge process, if given."""
        self.config_path = tmp_path / f"{name}.yaml"
        self.config_path.write_text(config)
        self.log_path = tmp_path / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> BridgeRun:
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bridge.cli", "run", "-c", str(self.config_path),
             "--log-level", self.log_level, *self.args],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
            env={**os.environ, **self.env, "PYTHONUNBUFFERED": "1"}, preexec_fn=self._limits)
        log.close()
        return self

    def _limits(self) -> None:  # in the child, before exec
        if self.nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> int | None:
        """SIGTERM (graceful drain, up to the default ``shutdown.drain_timeout`` of 30 s),
        then SIGKILL if it does not exit in time."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def kill(self) -> None:
        """kill -9: no drain, no goodbye."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(5)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def status(self, field: str) -> int:
        """A ``/proc/PID/status`` figure in KiB (``VmRSS``, ``VmHWM``)."""
        return process_status(self.pid, field)

    def __enter__(self) -> BridgeRun:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class FacadeRun:
    """A running bridge serving a façade listener on ``port``, and the RabbitMQ queue
    behind each name its tests use."""

    rabbitmq_url: str
    port: int
    queues: dict[str, str]
    proc: BridgeRun

    def address(self, name: str) -> str:
        """The AMQP 1.0 address of the RabbitMQ queue behind ``name``."""
        return queue_address(self.queues[name])


@contextlib.contextmanager
def serving(config: str, tmp_path: Path, port: int, *,
            env: dict[str, str] | None = None) -> Iterator[BridgeRun]:
    """``amqp-bridge run`` with ``config`` (``env`` added to its environment), once it
    listens on ``port``; stopped gracefully at the end, its exit status 0 asserted."""
    proc = BridgeRun(config, tmp_path, env=env).start()
    try:
        wait_listening(port, proc)
        yield proc
    finally:
        rc = proc.stop()
    assert rc == 0, proc.log()


def connections_yaml(legacy_url: str, rabbitmq_url: str) -> str:
    """The ``connections:`` section most bridge-run tests share: the 0-10 connection
    ``legacy`` (no heartbeat, quick reconnects) and the 1.0 connection ``cloud``."""
    return f"""connections:
  legacy:
    protocol: amqp0-10
    url: "{legacy_url}"
    heartbeat: 0
    reconnect: {{initial_delay: 0.2, max_delay: 1.0}}
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}"""


def bridge_config(legacy_url: str, rabbitmq_url: str, routes: str, *,
                  session_timeout: int = 30, protocol: str = "amqp0-10",
                  legacy: str = "legacy", more: str = "") -> str:
    """A configuration with the legacy connection ``legacy`` (``protocol``: 0-10, no
    heartbeat; 0-9-1, heartbeat 10 s) and the 1.0 connection ``cloud``; ``more``: further
    connections (YAML lines indented by two)."""
    if protocol == "amqp0-10":
        options = f"heartbeat: 0\n    session_timeout: {session_timeout}"
        backoff = 2.0
    else:
        options, backoff = "heartbeat: 10", 1.0
    return f"""
connections:
  {legacy}:
    protocol: {protocol}
    url: "{legacy_url}"
    {options}
    reconnect: {{initial_delay: 0.2, max_delay: {backoff}}}
  cloud:
    protocol: amqp1.0
    url: "{rabbitmq_url}"
    reconnect: {{initial_delay: 0.2, max_delay: 2.0}}
{more}routes:
{routes}
"""


def config091(rabbitmq_url: str, routes: str, *, legacy: str = "rabbit", more: str = "") -> str:
    """A configuration with the 0-9-1 connection ``rabbit`` (or ``legacy``) and the 1.0
    connection ``cloud``, both to the test RabbitMQ node."""
    return bridge_config(f"{rabbitmq_url}/%2F", rabbitmq_url, routes, protocol="amqp0-9-1",
                         legacy=legacy, more=more)


@contextlib.contextmanager
def legacy_broker() -> Iterator[tuple[Broker, EngineServer]]:
    """The in-memory 0-10 broker served over TCP (the engine's server role)."""
    broker = Broker(users={"guest": "guest"})
    server = broker.serve()
    try:
        yield broker, server
    finally:
        server.stop()


def legacy_client(server: EngineServer) -> BlockingClient:
    return BlockingClient.connect(f"amqp://guest:guest@{server.address[0]}:{server.address[1]}",
                                  timeout=30)


def publish_legacy(server: EngineServer, queue: str, messages: list[tuple[Any, Any, bytes]],
                   *, exchange: str = "") -> None:
    """Publish ``(delivery-properties, message-properties, body)`` to ``queue`` (through the
    default exchange, so the routing key is set to the queue's name) and wait for completion."""
    with legacy_client(server) as client:
        client.declare_queue(queue)
        for dp, mp, body in messages:
            if not exchange:
                dp.routing_key = queue
            client.publish(body, routing_key=queue, exchange=exchange, delivery=dp,
                           properties=mp, wait=False)
        client.sync()


def preload(broker: Broker, queue: str, count: int, body: bytes = b"x" * 1024,
            first: int = 0) -> list[uuid.UUID]:
    """Put ``count`` messages straight into the broker's queue (a backlog); returns their ids."""
    q = broker.queues.setdefault(queue, BrokerQueue(queue))
    ids = []
    for i in range(first, first + count):
        message_id = uuid.UUID(int=i + 1)
        ids.append(message_id)
        q.messages.append(StoredMessage(
            DeliveryProperties(routing_key=queue, delivery_mode=2),
            MessageProperties(message_id=message_id, content_type="application/octet-stream",
                              application_headers={"seq": i}),
            (), body, ""))
    return ids


def legacy_backlog(broker: Broker, queue: str) -> int:
    """Messages still queued or delivered-but-unaccepted at the 0-10 broker."""
    while True:
        try:
            unacked = sum(len(m.unacked) for m in list(broker.sessions.values()))
            return len(broker.queues[queue].messages) + unacked
        except RuntimeError:  # changed size during iteration (the server thread): retry
            continue


def catches_signal(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has installed a handler for ``signum`` (``SigCgt`` in
    ``/proc/PID/status``): until then the signal's default action applies (SIGTERM kills
    it at once), however long ago the process was started on a loaded machine."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def wait_for(condition: Callable[[], bool], timeout: float, what: str,
             bridge: BridgeRun | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}"
                                 + (f"\n--- bridge log ---\n{bridge.log()[-6000:]}" if bridge else ""))
        time.sleep(0.05)


class Collector(MessagingHandler):  # type: ignore[misc]
    """Receives from one 1.0 address until told to stop, accepting each message."""

    def __init__(self, url: str, address: str, done: Callable[[list[Message]], bool], *,
                 linger: float, timeout: float, window: int = 500) -> None:
        super().__init__(prefetch=window, auto_accept=False)
        self.url, self.address = url, address
        self.done, self.linger, self.timeout = done, linger, timeout
        self.messages: list[Message] = []
        self.last = time.monotonic()
        self.finished_at: float | None = None
        self.conn: Any = None

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url, reconnect=False)
        event.container.create_receiver(self.conn, self.address)
        self.deadline = time.monotonic() + self.timeout
        event.container.schedule(0.1, self)

    def on_message(self, event: Any) -> None:
        self.messages.append(event.message)
        self.accept(event.delivery)
        self.last = time.monotonic()

    def on_timer_task(self, event: Any) -> None:
        now = time.monotonic()
        if self.finished_at is None and self.done(self.messages):
            self.finished_at = now
        if now > self.deadline or (self.finished_at is not None
                                   and now - max(self.finished_at, self.last) >= self.linger):
            self.conn.close()
            return
        event.container.schedule(0.1, self)


def collect(url: str, address: str, done: Callable[[list[Message]], bool], *,
            linger: float = 1.0, timeout: float = 60.0) -> list[Message]:
    """Messages from ``address`` until ``done(messages)``, plus whatever comes within
    ``linger`` seconds of quiet after that (duplicates); gives up after ``timeout``."""
    collector = Collector(url, address, done, linger=linger, timeout=timeout)
    Container(collector).run()
    return collector.messages


def legacy_ids(messages: list[Message]) -> list[uuid.UUID]:
    """The message-ids (0-10 UUIDs) of received 1.0 messages, in arrival order."""
    return [cast(uuid.UUID, m.id) for m in messages]


def wait_listening(port: int, bridge: BridgeRun, timeout: float = 20.0,
                   host: str = "127.0.0.1") -> None:
    """Until something accepts connections on loopback ``port`` (the bridge's façade)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert bridge.proc is not None and bridge.proc.poll() is None, bridge.log()
        try:
            socket.create_connection((host, port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"the façade did not listen on {port}:\n{bridge.log()}")


@contextlib.contextmanager
def recipe_bridge(recipe: str, tmp: Path, env: dict[str, str]) -> Iterator[BridgeRun]:
    """``amqp-bridge run`` with ``examples/RECIPE`` (its variables from ``env``), once its
    façade listens on ``env["PORT"]``'s port; stopped gracefully at the end: exit status
    0, no poison message, no ERROR line."""
    bridge = BridgeRun((ROOT / "examples" / recipe).read_text(), tmp, env=env).start()
    try:
        wait_listening(int(env["PORT"]), bridge)
        yield bridge
    finally:
        rc = bridge.stop()
    assert rc == 0, bridge.log()
    log = bridge.log()
    assert "event=poison_message" not in log, log
    assert "level=error" not in log, log


# Ports handed out come from below the kernel's ephemeral range (32768-60999 on
# Linux): a port the kernel picked with ``bind(0)`` can be taken again as the local
# port of any outgoing connection before the bridge binds it (seen in CI: "Address
# already in use" on a port free_port had just returned). Each xdist worker draws
# from its own slice so two workers never hand out the same port.
_PORT_BASE, _PORT_SLICE = 10_000, 2_500
_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port nobody listens on right now, outside the ephemeral range and
    not handed out before by this process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    first = _PORT_BASE + (int(worker) % 8 if worker.isdigit() else 0) * _PORT_SLICE
    candidates = [p for p in range(first, first + _PORT_SLICE) if p not in _handed_out]
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port
    raise RuntimeError(f"no free loopback port left in {first}-{first + _PORT_SLICE - 1}")


CREATED = 1_700_000_000  # seconds


def legacy_message(i: int) -> tuple[DeliveryProperties, MessageProperties, bytes]:
    """Message ``i`` as a legacy application publishes it, every field set."""
    dp = DeliveryProperties(priority=i % 10, delivery_mode=2 if i % 2 == 0 else 1,
                            ttl=3_600_000, timestamp=CREATED + i, routing_key="orders")
    mp = MessageProperties(
        message_id=uuid.UUID(int=i + 1), correlation_id=f"corr-{i}".encode(),
        reply_to=ReplyTo(exchange="amq.direct", routing_key=f"reply-{i % 7}"),
        content_type="application/json", content_encoding="identity", user_id=b"guest",
        app_id=b"legacy-app",
        application_headers={"seq": i, "region": "emea" if i % 3 else "apac",
                             "urgent": i % 5 == 0, "ratio": i / 4})
    return dp, mp, json.dumps({"n": i, "pad": "x" * (i % 50)}).encode()
