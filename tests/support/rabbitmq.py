"""A real RabbitMQ (AMQP 1.0) for the tests, and small blocking proton helpers.

The broker is the project's own node started by ``scripts/rabbitmq start``
(Debian's rabbitmq-server 3.10 with the ``rabbitmq_amqp1_0`` plugin, listening
on 127.0.0.1 only). Tests never skip when it is missing: :func:`ensure_rabbitmq`
installs and starts it, or raises with the script's output.

Two nodes, two versions: :func:`ensure_rabbitmq` is the 3.10 node (the
``rabbitmq_amqp1_0`` plugin, port 5672), :func:`ensure_rabbitmq4` the RabbitMQ 4.0
node of ``scripts/rabbitmq4`` (AMQP 1.0 native, port 5681). The session fixture
``rabbitmq_url`` is the node of :func:`default_version` (``AMQP_BRIDGE_RABBITMQ_VERSION``)
unless a test is marked ``rabbitmq(3, 4)`` (run against each) — see tests/conftest.py.
The address helpers give the form of the node the running test uses
(:func:`version_in_use`):

=====================  ========================  ==========================
helper                 RabbitMQ 3.10             RabbitMQ 4.0 (v2 addresses)
=====================  ========================  ==========================
:func:`queue_address`  ``/queue/NAME`` (the       ``/queues/NAME`` (the queue
                       attach declares it)       declared over 0-9-1 first)
existing queue         ``/amq/queue/NAME``       ``/queues/NAME``
exchange               ``/exchange/X/KEY``       ``/exchanges/X/KEY``
=====================  ========================  ==========================

The v1 forms are deprecated in 4.x (4.0 still permits them); tests about them
write them out. Give each test its own queue with :func:`unique_queue`; such
queues are deleted by the broker after ten idle minutes (a policy set by the
script), so nothing needs purging.

Every helper opens its own connection, does its work and closes it, so a helper
call is self-contained and a broken connection never leaks into the next test.
"""

from __future__ import annotations

import atexit
import os
import random
import socket
import subprocess
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, unquote, urlsplit

import pika
from proton import Array, Condition, Data, Delivery, Described, Message, ulong
from proton.handlers import MessagingHandler
from proton.reactor import Container

REPO_ROOT = Path(__file__).resolve().parents[2]
RABBITMQ_SCRIPT = REPO_ROOT / "scripts" / "rabbitmq"
RABBITMQ4_SCRIPT = REPO_ROOT / "scripts" / "rabbitmq4"

#: Prefix of the queues made by :func:`unique_queue`; the broker expires idle
#: queues whose name starts with it (see ``scripts/rabbitmq``).
TEST_QUEUE_PREFIX = "test."

#: Names of the AMQP 1.0 message sections, by descriptor code.
SECTION_NAMES = {
    0x70: "header",
    0x71: "delivery-annotations",
    0x72: "message-annotations",
    0x73: "properties",
    0x74: "application-properties",
    0x75: "data",
    0x76: "amqp-sequence",
    0x77: "amqp-value",
    0x78: "footer",
}

# Installing (~11 s) plus starting (~10 s) on a cold machine, with headroom (4.0: ~8 + ~5 s).
_START_TIMEOUT = 300.0


class AmqpError(RuntimeError):
    """The broker refused a link, ended the session or closed the connection.

    ``where`` is the endpoint that failed: ``"link"``, ``"session"`` or
    ``"connection"``. ``condition`` is the AMQP error condition: the one the
    broker sent, or the one proton reports for a dropped socket
    (``amqp:connection:framing-error``, "connection aborted"); ``None`` if
    there was none.
    """

    def __init__(self, where: str, condition: Condition | None, context: str) -> None:
        self.where = where
        self.condition = condition
        if condition is None:
            text = f"{context}: {where} closed without an error condition"
        else:
            text = f"{context}: {where} error {condition.name}: {condition.description}"
        super().__init__(text)


@dataclass(frozen=True)
class Outcome:
    """How the broker settled one sent message.

    ``state`` is ``"accepted"``, ``"rejected"``, ``"released"`` or
    ``"modified"``; ``condition`` is set for a rejection that carried one.
    """

    state: str
    condition: Condition | None = None


@dataclass(frozen=True)
class Received:
    """One received (and accepted) message.

    ``message`` is proton's decoding; ``raw`` the bytes exactly as the broker
    sent them, for assertions proton's :class:`~proton.Message` cannot express
    (absent versus default header fields, section order, body section kind).
    """

    message: Message
    raw: bytes

    @property
    def sections(self) -> list[tuple[str, Any]]:
        """The message's sections in wire order, as ``(name, value)``."""
        return decode_sections(self.raw)

    def section(self, name: str) -> Any:
        """The value of the section called ``name`` (``KeyError`` if absent)."""
        for section_name, value in self.sections:
            if section_name == name:
                return value
        raise KeyError(name)


# --- the broker -------------------------------------------------------------


def ensure_rabbitmq() -> str:
    """Install and start the project's RabbitMQ if needed; return its AMQP URL.

    With ``AMQP_BRIDGE_RABBITMQ=testcontainers`` the broker is a Docker container
    started through testcontainers instead (:func:`rabbitmq_container`).

    Idempotent and cheap when the broker is already up (about a second: it
    runs ``scripts/rabbitmq start``, which checks the running node). Returns
    a URL such as ``amqp://guest:guest@127.0.0.1:5672``; the port comes from
    ``AMQP_BRIDGE_RABBITMQ_PORT``.

    Raises :class:`RuntimeError` with the script's output if the broker cannot
    be installed or started: tests that need it must fail, never skip.
    """
    if os.environ.get("AMQP_BRIDGE_RABBITMQ") == "testcontainers":
        return rabbitmq_container()
    return _start_node(RABBITMQ_SCRIPT, 3)


def ensure_rabbitmq4() -> str:
    """Install and start the project's RabbitMQ 4.0 node if needed; return its AMQP URL.

    Runs ``scripts/rabbitmq4 start`` (on Debian 12 the first run unpacks Debian 13's
    packages into a private prefix, see the script). The node runs beside the 3.10
    one on its own ports; the URL is ``amqp://guest:guest@127.0.0.1:5681`` unless
    ``AMQP_BRIDGE_RABBITMQ4_PORT`` says otherwise. Raises :class:`RuntimeError` with
    the script's output if the node cannot be had: never a skip.
    """
    return _start_node(RABBITMQ4_SCRIPT, 4)


#: Picks the RabbitMQ the broker-facing tests use: 3 (the 3.10 node) or 4 (the 4.0
#: node). ``scripts/rabbitmq`` reads the same variable to pick the node it manages.
VERSION_VARIABLE = "AMQP_BRIDGE_RABBITMQ_VERSION"
DEFAULT_VERSION = 4
VERSIONS = (3, 4)

_node_versions: dict[int, int] = {}  # AMQP port -> version, of the nodes started here
_version_in_use: int | None = None
_declared: set[tuple[int, str]] = set()  # (port, queue) declared by queue_address
_node_urls: dict[int, str] = {}  # version -> URL of the shared node, once started here


def default_version() -> int:
    """The RabbitMQ major version the suite uses unless a test asks for another:
    ``AMQP_BRIDGE_RABBITMQ_VERSION`` (3 or 4), else :data:`DEFAULT_VERSION`."""
    raw = os.environ.get(VERSION_VARIABLE, "").strip() or str(DEFAULT_VERSION)
    if raw not in {str(v) for v in VERSIONS}:
        raise RuntimeError(f"{VERSION_VARIABLE} must be 3 or 4, got {raw!r}")
    return int(raw)


def ensure_node(version: int) -> str:
    """The AMQP URL of the project's RabbitMQ ``version`` node (started if needed), once
    per process: ``scripts/rabbitmq start`` boots Erlang's CLI to check a running node
    (1.5 s quiet, several under load), and :func:`queue_address` asks for every queue."""
    url = _node_urls.get(version)
    if url is None:
        url = _node_urls[version] = ensure_rabbitmq4() if version == 4 else ensure_rabbitmq()
    return url


def version_of(url: str) -> int:
    """The RabbitMQ version of the node serving ``url``: 4 for the 4.0 node started
    here, else 3 (the 3.10 node, and the private 3.10 nodes some modules start)."""
    return _node_versions.get(_port(url), 3)


def use_version(version: int) -> None:
    """Make the address helpers give ``version``'s forms (for the running test)."""
    global _version_in_use
    _version_in_use = version


def version_in_use() -> int:
    """The RabbitMQ version the running test uses (see tests/conftest.py)."""
    return _version_in_use if _version_in_use is not None else default_version()


def _port(url: str) -> int:
    return urlsplit(url).port or 5672


def _start_node(script: Path, version: int) -> str:
    """``SCRIPT start``'s URL, or :class:`RuntimeError` with all it said."""
    name = f"scripts/{script.name}"
    try:
        proc = subprocess.run(
            [str(script), "start"],
            cwd=REPO_ROOT,
            env={**os.environ, VERSION_VARIABLE: str(version)},
            capture_output=True,
            text=True,
            timeout=_START_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(
            f"`{name} start` did not finish within {_START_TIMEOUT:.0f}s:\n"
            f"{_text(exc.stdout)}{_text(exc.stderr)}"
        ) from exc
    url = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
    if proc.returncode != 0 or not url.startswith("amqp://"):
        raise RuntimeError(
            f"`{name} start` failed (exit {proc.returncode}); the tests "
            f"need a RabbitMQ broker:\n{proc.stdout}{proc.stderr}"
        )
    _node_versions[_port(url)] = version
    return url



RABBITMQCTL = "/usr/lib/rabbitmq/bin/rabbitmqctl"


def rabbitmqctl(url: str, *args: str) -> str:
    """Run ``rabbitmqctl`` against the test node serving ``url`` (named as
    ``scripts/rabbitmq`` names it; the 4.0 node through ``scripts/rabbitmq4 ctl``, which
    knows its private Erlang, cookie and port mapper); returns its output, RuntimeError
    if it fails."""
    if version_of(url) == 4:
        proc = subprocess.run([str(RABBITMQ4_SCRIPT), "ctl", "-q", *args], cwd=REPO_ROOT,
                              env={**os.environ, VERSION_VARIABLE: "4",
                                   "AMQP_BRIDGE_RABBITMQ4_PORT": str(_port(url))},
                              capture_output=True, text=True, timeout=60, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {proc.stdout}{proc.stderr}")
        return proc.stdout
    port = _port(url)
    node = os.environ.get("AMQP_BRIDGE_RABBITMQ_NODENAME", f"amqp_bridge_{port}@localhost")
    return rabbitmqctl_on(node, *args)


def rabbitmqctl_on(node: str, *args: str) -> str:
    """Run ``rabbitmqctl`` against the node called ``node`` (loopback distribution)."""
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "ERL_EPMD_ADDRESS": "127.0.0.1",
           "RABBITMQ_CTL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}"}
    proc = subprocess.run([RABBITMQCTL, "-n", node, "-q", *args], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {proc.stdout}{proc.stderr}")
    return proc.stdout


RABBITMQ_IMAGE = "rabbitmq:3.10"
_container_url: str | None = None


def rabbitmq_container(image: str = RABBITMQ_IMAGE) -> str:
    """RabbitMQ with its AMQP 1.0 plugin in Docker (testcontainers); its AMQP URL.

    For machines with a Docker engine and no Debian package manager. One
    container serves the whole test session and is removed when it ends. The
    tests that drive the broker with ``rabbitmqctl`` (restart, queue deletion)
    need the local node of ``scripts/rabbitmq``. Raises :class:`RuntimeError`
    naming the cause when Docker cannot be reached: tests fail, never skip.
    """
    global _container_url
    if _container_url is not None:
        return _container_url
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    try:
        container = (DockerContainer(image)
                     .with_exposed_ports(5672)
                     .with_command(["bash", "-c", "rabbitmq-plugins enable --offline "
                                    "rabbitmq_amqp1_0 && exec docker-entrypoint.sh "
                                    "rabbitmq-server"]))
        container.start()
        wait_for_logs(container, "Server startup complete", timeout=_START_TIMEOUT)
    except Exception as exc:
        raise RuntimeError(f"AMQP_BRIDGE_RABBITMQ=testcontainers: cannot start {image} in "
                           f"Docker: {exc}") from exc
    atexit.register(container.stop)
    host, port = container.get_container_host_ip(), container.get_exposed_port(5672)
    _container_url = f"amqp://guest:guest@{host}:{port}"
    return _container_url

@dataclass(frozen=True)
class PrivateNode:
    """A RabbitMQ node of one module or session alone (``scripts/rabbitmq`` with ``env``).

    For tests that restart or reconfigure the broker: the shared node other tests (and
    other pytest-xdist workers) use at the same moment is never touched. Its ports are
    free ones, its state directory is the caller's, so two workers (or two checkouts)
    never share a node. ``rabbitmqctl(node.url, ...)`` reaches it (its name is the one
    ``scripts/rabbitmq`` derives from the port)."""

    port: int
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"amqp://guest:guest@127.0.0.1:{self.port}"

    @property
    def version(self) -> int:
        return int(self.env[VERSION_VARIABLE])

    @property
    def name(self) -> str:
        """The Erlang node name, for :func:`rabbitmqctl_on` (3.10 nodes)."""
        return self.env[f"{_env_prefix(self.version)}_NODENAME"]

    def script(self, command: str) -> str:
        """``scripts/rabbitmq COMMAND`` for this node; its last line of output."""
        done = subprocess.run([str(RABBITMQ_SCRIPT), command], cwd=REPO_ROOT, env=self.env,
                              capture_output=True, text=True, timeout=_START_TIMEOUT,
                              check=False)
        if done.returncode != 0:
            raise RuntimeError(f"scripts/rabbitmq {command} (port {self.port}) failed:\n"
                               f"{done.stdout}{done.stderr}")
        return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""

    def start(self) -> None:
        self.script("start")

    def stop(self) -> None:
        self.script("stop")


def _env_prefix(version: int) -> str:
    """The prefix of ``scripts/rabbitmq``'s settings for a ``version`` node."""
    return "AMQP_BRIDGE_RABBITMQ" if version == 3 else "AMQP_BRIDGE_RABBITMQ4"


@contextmanager
def private_rabbitmq(state_dir: Path, *, version: int = 3, **env: str) -> Iterator[PrivateNode]:
    """Start a :class:`PrivateNode` of RabbitMQ ``version`` (3.10 unless 4) on free ports
    with its state in ``state_dir``; stop it when the block ends. ``env`` adds
    ``scripts/rabbitmq`` settings (a TLS listener: ``AMQP_BRIDGE_RABBITMQ_TLS_DIR``; its
    port is the AMQP port + 1, checked free). :func:`rabbitmqctl` reaches either."""
    port = _free_node_port() if version == 3 else _free_node4_port()
    prefix = _env_prefix(version)
    node = PrivateNode(port, {**os.environ,
                              f"{prefix}_PORT": str(port),
                              f"{prefix}_NODENAME": f"amqp_bridge_{port}@localhost",
                              f"{prefix}_DIR": str(state_dir),
                              VERSION_VARIABLE: str(version),
                              **env})
    try:
        _node_versions[port] = version
        node.start()
        yield node
    finally:
        node.stop()
        _node_versions.pop(port, None)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ephemeral_high() -> int:
    """The highest port the kernel hands out to outgoing connections."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 60999  # Linux's default


def _free_node4_port() -> int:
    """A port P for a private 4.0 node: P+20000 (the Erlang distribution) and
    P+30100..P+30109 (its CLI tools, ``scripts/rabbitmq``) free too, P at most 5326 so
    that they stay below 35436."""
    pick = random.SystemRandom()
    for _ in range(200):
        port = pick.randint(2000, 5326)
        ports = [port, port + 1, port + 20000, *range(port + 30100, port + 30110)]
        if all(_port_free(p) for p in ports):
            return port
    raise RuntimeError("no free ports for a private RabbitMQ 4.0 node")


def _free_node_port() -> int:
    """A port P with P+1 (TLS) and P+20000 (the Erlang distribution) free too.

    P+20000 is kept above the kernel's ephemeral range where it can: the node binds it
    seconds after this check, and an outgoing connection of another test that got it
    meanwhile made the node fail to start (``dist_port_already_used``)."""
    low = max(1024, min(_ephemeral_high() + 1 - 20000, 45534))
    pick = random.SystemRandom()  # not the tests' seeded generator: workers must differ
    for _ in range(200):
        port = pick.randint(low, 45534)
        if all(_port_free(p) for p in (port, port + 1, port + 20000)):
            return port
    raise RuntimeError("no free ports for a private RabbitMQ node")


def _text(data: str | bytes | None) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""


def unique_queue(prefix: str = "q") -> str:
    """A fresh queue name, ``test.PREFIX.<random>``, for one test's own use.

    Use it as :func:`queue_address` (declared on first use) or declare it with
    :func:`declare_queue` and use :func:`existing_queue_address`.
    """
    return f"{TEST_QUEUE_PREFIX}{prefix}.{uuid.uuid4().hex[:12]}"


def queue_depth(url: str, queue: str) -> int:
    """Messages ready in RabbitMQ queue ``queue`` (a passive declare over AMQP 0-9-1)."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        return int(connection.channel().queue_declare(queue, passive=True)
                   .method.message_count)
    finally:
        connection.close()


def queue_address(name: str) -> str:
    """The AMQP 1.0 address of queue ``name`` on the node in use, the queue declared
    if needed: 3.10's ``/queue/NAME`` (the attach declares it); on 4.0 the queue is
    declared (durable, over 0-9-1) here and the address is ``/queues/NAME``."""
    if version_in_use() == 3:
        return f"/queue/{name}"
    url = ensure_node(4)
    if (_port(url), name) not in _declared:
        _declare_091(url, name)
    return existing_queue_address(name)


def existing_queue_address(name: str) -> str:
    """The AMQP 1.0 address of the existing queue ``name`` on the node in use:
    ``/amq/queue/NAME`` on 3.10, ``/queues/NAME`` on 4.0 (nothing is declared)."""
    if version_in_use() == 3:
        return f"/amq/queue/{name}"
    return f"/queues/{quote(name, safe='')}"


def exchange_address(exchange: str, key: str | None = None) -> str:
    """The AMQP 1.0 target address of ``exchange`` with routing key ``key`` on the node in
    use: ``/exchange/X[/KEY]`` on 3.10, ``/exchanges/X[/KEY]`` on 4.0. Without a key 3.10
    routes by the message's subject, 4.0's v2 form by the key ``''``."""
    if version_in_use() == 3:
        return f"/exchange/{exchange}" + (f"/{key}" if key is not None else "")
    return f"/exchanges/{quote(exchange, safe='')}" + (
        f"/{quote(key, safe='')}" if key is not None else "")


def rabbitmq_routing(url: str, sent_to: str, written: tuple[Any, Any] = (None, None)
                     ) -> tuple[Any, Any]:
    """The annotations ``(x-exchange, x-routing-key)`` (None: absent) of a message sent to
    the 1.0 address ``sent_to`` with ``written`` in them, as the node at ``url`` delivers
    it: RabbitMQ 3.10 keeps what was written; RabbitMQ 4 writes the routing it did itself
    (``/queues/Q``, ``/queue/Q``, ``/amq/queue/Q``: ``''`` and Q; ``/exchanges/X/K``,
    ``/exchange/X/K``: X and K)."""
    if version_of(url) == 3:
        return written
    parts = [unquote(part) for part in sent_to.split("/")[1:]]
    if parts[0] in ("queues", "queue") or parts[:2] == ["amq", "queue"]:
        return "", parts[-1]
    if parts[0] in ("exchanges", "exchange") and len(parts) == 3:
        return parts[1], parts[2]
    raise ValueError(f"no routing known for the address {sent_to!r}")


def _declare_091(url: str, name: str) -> None:
    """Make sure queue ``name`` exists at ``url`` (over 0-9-1): one that exists is kept
    as it is (a test may have declared it with arguments), else it is declared as
    3.10's ``/queue/NAME`` declares it (transient; RabbitMQ 4.0 still permits that)."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        connection.channel().queue_declare(name)
    except pika.exceptions.ChannelClosedByBroker as exc:
        if exc.reply_code != 406:  # 406: it exists, declared otherwise (durable, arguments)
            raise
    finally:
        if connection.is_open:
            connection.close()
    _declared.add((_port(url), name))


# --- proton helpers ---------------------------------------------------------


class _Client(MessagingHandler):
    """One connection, one link, bounded in time; errors become AmqpError."""

    def __init__(self, url: str, address: str, timeout: float) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=True)
        self.url = url
        self.address = address
        self.timeout = timeout
        self.error: Exception | None = None
        self.connection: Any = None
        self._timer: Any = None

    def on_start(self, event: Any) -> None:
        self.connection = event.container.connect(self.url, reconnect=False)
        self._timer = event.container.schedule(self.timeout, self)
        self.open_link(event.container)

    def open_link(self, container: Container) -> None:
        raise NotImplementedError

    def on_timer_task(self, event: Any) -> None:
        self._timer = None
        self.fail(TimeoutError(self.timeout_message()))

    def timeout_message(self) -> str:
        return f"no answer from {self.url} within {self.timeout}s"

    def fail(self, error: Exception) -> None:
        if self.error is None:
            self.error = error
        self.finish()

    def finish(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.connection is not None:
            self.connection.close()

    def _error(self, where: str, condition: Condition | None) -> AmqpError:
        return AmqpError(where, condition, f"{self.url} {self.address!r}")

    def on_link_error(self, event: Any) -> None:
        self.fail(self._error("link", event.link.remote_condition))

    def on_session_error(self, event: Any) -> None:
        self.fail(self._error("session", event.session.remote_condition))

    def on_connection_error(self, event: Any) -> None:
        self.fail(self._error("connection", event.connection.remote_condition))

    def on_transport_error(self, event: Any) -> None:
        self.fail(self._error("connection", event.transport.condition))

    def on_disconnected(self, event: Any) -> None:
        if self.error is None and not self.done():
            self.fail(self._error("connection", event.transport.condition))

    def done(self) -> bool:
        raise NotImplementedError

    def run(self) -> None:
        Container(self).run()
        if self.error is not None:
            raise self.error


class _Sender(_Client):
    def __init__(
        self, url: str, address: str, messages: Sequence[Message | bytes], timeout: float
    ) -> None:
        super().__init__(url, address, timeout)
        self.messages = list(messages)
        self.next = 0
        self.deliveries: list[Delivery] = []
        self.outcomes: dict[Delivery, Outcome] = {}

    def open_link(self, container: Container) -> None:
        container.create_sender(self.connection, self.address)

    def timeout_message(self) -> str:
        return (
            f"sending to {self.address!r}: {len(self.outcomes)} of {len(self.messages)} "
            f"messages settled within {self.timeout}s"
        )

    def on_sendable(self, event: Any) -> None:
        sender = event.sender
        while sender.credit and self.next < len(self.messages):
            item = self.messages[self.next]
            if isinstance(item, Message):
                delivery = sender.send(item)
            else:  # an already encoded message
                delivery = sender.delivery(sender.delivery_tag())
                sender.stream(bytes(item))
                sender.advance()
            self.deliveries.append(delivery)
            self.next += 1

    def _settled(self, event: Any, state: str) -> None:
        condition = event.delivery.remote.condition if state == "rejected" else None
        self.outcomes[event.delivery] = Outcome(state, condition)
        if self.done():
            self.finish()

    def on_accepted(self, event: Any) -> None:
        self._settled(event, "accepted")

    def on_rejected(self, event: Any) -> None:
        self._settled(event, "rejected")

    def on_released(self, event: Any) -> None:
        state = "modified" if event.delivery.remote_state == Delivery.MODIFIED else "released"
        self._settled(event, state)

    def on_link_opened(self, event: Any) -> None:
        if not self.messages:
            self.finish()

    def done(self) -> bool:
        return len(self.outcomes) == len(self.messages)


class _Receiver(_Client):
    def __init__(self, url: str, address: str, count: int, timeout: float):
        super().__init__(url, address, timeout)
        self.count = count
        self.received: list[Received] = []

    def open_link(self, container: Container) -> None:
        container.create_receiver(self.connection, self.address)

    def on_link_opened(self, event: Any) -> None:
        # Credit only once the broker has attached: proton's flow before that attach
        # carries delivery-count 0 (it should be absent), and RabbitMQ 4, whose sending
        # links start at initial-delivery-count 2**32 - 5, reads link-credit N as N + 5.
        if event.receiver is not None:
            event.receiver.flow(self.count)

    def timeout_message(self) -> str:
        return (
            f"receiving from {self.address!r}: got {len(self.received)} of "
            f"{self.count} messages within {self.timeout}s"
        )

    def on_delivery(self, event: Any) -> None:
        # Replaces MessagingHandler's own decoding so the raw bytes are kept.
        delivery = event.delivery
        if not delivery.readable or delivery.partial:
            return
        link = delivery.link
        raw = link.recv(delivery.pending)
        link.advance()
        message = Message()
        message.decode(raw)
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        self.received.append(Received(message, raw))
        if self.done():
            self.finish()

    def done(self) -> bool:
        return len(self.received) >= self.count


def send_messages(
    url: str, address: str, messages: Iterable[Message | bytes], *, timeout: float = 10.0
) -> list[Outcome]:
    """Send ``messages`` unsettled on one link and wait for every outcome.

    A ``bytes`` item is sent as it is, as an already encoded message: build it
    with ``Message.encode()`` plus :func:`encode_section` for what proton's
    :class:`~proton.Message` cannot express (a footer, repeated body sections).

    Returns the broker's :class:`Outcome` for each message, in order. Raises
    :class:`AmqpError` if the broker refuses the link or closes the connection,
    :class:`TimeoutError` if not every message is settled within ``timeout``.
    """
    sender = _Sender(url, address, list(messages), timeout)
    sender.run()
    return [sender.outcomes[d] for d in sender.deliveries]


def receive_messages(
    url: str, address: str, count: int, *, timeout: float = 10.0
) -> list[Received]:
    """Receive exactly ``count`` messages from ``address``, accepting each one.

    Grants the broker exactly ``count`` credits, so no further message is taken
    from the queue. Raises :class:`TimeoutError` (saying how many arrived) if
    fewer than ``count`` arrive within ``timeout``, :class:`AmqpError` if the
    broker refuses the link or closes the connection.
    """
    if count < 1:
        raise ValueError("count must be at least 1")
    receiver = _Receiver(url, address, count, timeout)
    receiver.run()
    return receiver.received


def assert_no_message(url: str, address: str, *, wait: float = 0.5) -> None:
    """Assert that ``address`` delivers no message within ``wait`` seconds."""
    try:
        got = receive_messages(url, address, 1, timeout=wait)
    except TimeoutError:
        return
    raise AssertionError(f"expected no message on {address!r}, got {got[0].message}")


def declare_queue(url: str, name: str, *, timeout: float = 10.0) -> None:
    """Make sure queue ``name`` exists at ``url``: on 3.10 by attaching to
    ``/queue/NAME`` (which declares it), on 4.0 over 0-9-1 (durable)."""
    if version_of(url) == 4:
        _declare_091(url, name)
    else:
        send_messages(url, f"/queue/{name}", [], timeout=timeout)


def delete_queue(url: str, name: str) -> None:
    """Delete queue ``name`` at ``url`` over 0-9-1 (a test's own, left on the shared node
    otherwise); one that is not there is fine."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        connection.channel().queue_delete(name)
    finally:
        if connection.is_open:
            connection.close()
    _declared.discard((_port(url), name))


def queue_depth_if_any(url: str, name: str) -> int | None:
    """:func:`queue_depth`, None if there is no such queue."""
    ok = _declare_ok_if_any(url, name)
    return None if ok is None else int(ok.message_count)


def queue_consumers_if_any(url: str, name: str) -> int | None:
    """The queue's consumers at ``url`` (over 0-9-1), None if there is no such queue."""
    ok = _declare_ok_if_any(url, name)
    return None if ok is None else int(ok.consumer_count)


def _declare_ok_if_any(url: str, name: str) -> Any:
    """The declare-ok of a passive declare of queue ``name``, None if there is none."""
    connection = pika.BlockingConnection(pika.URLParameters(url))
    try:
        return connection.channel().queue_declare(name, passive=True).method
    except pika.exceptions.ChannelClosedByBroker as exc:
        assert exc.reply_code == 404, exc
        return None
    finally:
        if connection.is_open:
            connection.close()


def encode_section(name: str, value: Any) -> bytes:
    """Encode one message section, e.g. ``encode_section("footer", {...})``.

    ``name`` is a key of :data:`SECTION_NAMES`' values; ``value`` is put with
    proton's codec (a dict becomes a map; use proton's types to pick others).
    """
    codes = {section: code for code, section in SECTION_NAMES.items()}
    data = Data()
    data.put_object(Described(ulong(codes[name]), value))
    return data.encode()


def decode_sections(raw: bytes) -> list[tuple[str, Any]]:
    """Split an encoded AMQP 1.0 message into ``(section name, value)`` pairs.

    Composite sections (header, properties) come back as lists of fields in
    spec order, with trailing absent fields dropped as they are on the wire;
    map sections as dicts; binaries, at any depth, as bytes. Unknown
    descriptors are named ``"0xNN"``.
    """
    sections: list[tuple[str, Any]] = []
    offset = 0
    while offset < len(raw):
        data = Data()
        used = data.decode(raw[offset:])
        if used <= 0:
            raise ValueError(f"undecodable bytes at offset {offset}")
        offset += used
        data.rewind()
        data.next()
        value = data.get_object()
        if not isinstance(value, Described):
            raise ValueError(f"section at offset {offset - used} is not described: {value!r}")
        code = int(cast(int, value.descriptor))
        sections.append((SECTION_NAMES.get(code, f"0x{code:02x}"), _plain(value.value)))
    return sections


def _plain(value: Any) -> Any:
    """``value`` with proton's memoryviews turned into bytes, at any depth."""
    if isinstance(value, memoryview):
        return bytes(value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, Described):
        return Described(value.descriptor, _plain(value.value))
    if isinstance(value, Array):
        return Array(value.descriptor, value.type, *(_plain(item) for item in value.elements))
    return value
