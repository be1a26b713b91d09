"""The soak's real applications: unchanged Celery, kombu, pika and qpid.messaging programs
(``benchmarks/soak_apps/``) as subprocesses through the bridge's façades, beside the
soak's own clients (``benchmarks/soak.py --apps``).

- ``celery``: a worker (``celery -A soak_celery worker``) and a producer calling
  ``.delay()`` at ``--app-rate``, through the 0-9-1 façade with the routes of
  ``examples/celery.yaml`` (the task queue named for the run; remote control and events
  flow through the recipe's exchanges);
- ``kombu``: a ``SimpleQueue`` producer and consumer (0-9-1 façade, both ways);
- ``pika``: a publisher with confirms (0-9-1 façade → RabbitMQ, read back over 1.0);
- ``qpid``: a qpid.messaging sender and receiver (0-10 façade, both ways:
  ``../shared/peers/qpid-python``).

Each program records the ids its broker took (producers) or it acknowledged (consumers);
:meth:`Apps.report` compares them per application — lost, duplicated — and counts the
disconnects each program (and the Celery worker) reported.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from _timing import ROOT  # first: the project root on sys.path

PROGRAMS = Path(__file__).resolve().parent / "soak_apps"
QPID_PYTHON = ROOT.parent / "shared" / "peers" / "qpid-python"
APPS = ("celery", "kombu", "pika", "qpid")
CELERY_EXCHANGES = (("celery.pidbox", "fanout", False), ("reply.celery.pidbox", "direct", False),
                    ("celeryev", "topic", True))
"""Celery's exchanges (name, type, durable), declared once on RabbitMQ as the recipe says."""
CELERY_LOST = re.compile(r"Connection to broker lost|Cannot connect to")
"""What a Celery worker logs when its broker connection fails."""


def queue_names(tag: str) -> dict[str, str]:
    """The RabbitMQ queue of each application (the façade queue/exchange has its name)."""
    return {app: f"bench.soak-{app}.{tag}" for app in APPS}


def routes(names: dict[str, str], listener091: str, listener010: str,
           route: object) -> str:
    """The applications' routes, made with ``route(name, source, target)``."""
    def amqp10(app: str) -> str:
        return f"{{connection: cloud, address: /amq/queue/{names[app]}}}"

    celery, kombu, pika, qpid = (names[a] for a in APPS)
    parts = [
        ("celery-tasks-out", f"{{listener: {listener091}, exchange: {celery}}}", amqp10("celery")),
        ("celery-tasks-in", amqp10("celery"), f"{{listener: {listener091}, queue: {celery}}}"),
        ("kombu-out", f"{{listener: {listener091}, exchange: {kombu}}}", amqp10("kombu")),
        ("kombu-in", amqp10("kombu"), f"{{listener: {listener091}, queue: {kombu}}}"),
        ("pika-out", f"{{listener: {listener091}, exchange: {pika}}}", amqp10("pika")),
        ("qpid-in", amqp10("qpid"), f"{{listener: {listener010}, queue: {qpid}}}")]
    for exchange, _, _ in CELERY_EXCHANGES:  # remote control and events, as the recipe
        parts.append((f"{exchange}-out", f"{{listener: {listener091}, exchange: {exchange}}}",
                       f"{{connection: cloud, address: /exchange/{exchange}}}"))
        parts.append((f"{exchange}-in",
                      f'{{connection: cloud, address: "/exchange/{exchange}/{{binding_key}}"}}',
                      f"{{listener: {listener091}, exchange: {exchange}}}"))
    return "".join(route(*part) for part in parts)  # type: ignore[operator]


class Program:
    """One application process, its output in ``log`` and its ids in ``record``."""

    def __init__(self, argv: list[str], log: Path, record: Path, env: dict[str, str]) -> None:
        self.log, self.record = log, record
        record.touch()
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=PROGRAMS, env={**os.environ, **env, "PYTHONUNBUFFERED": "1"})

    def ids(self) -> list[str]:
        return self.record.read_text().split()

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def disconnects(self) -> int:
        """Connection failures the program reported (a Celery worker: in its own words)."""
        text = self.output()
        return text.count("disconnect: ") + len(CELERY_LOST.findall(text))

    def running(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM (a Celery worker: warm shutdown) and the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)


@dataclass
class App:
    """One application: its producer, its consumer (None: the soak reads RabbitMQ)."""

    name: str
    producer: Program
    consumer: Program | None
    drained: list[str] = field(default_factory=list)
    """What the soak read from RabbitMQ for an application without a consumer."""

    def got(self) -> list[str]:
        return self.consumer.ids() if self.consumer is not None else self.drained

    def missing(self) -> int:
        return len(set(self.producer.ids()) - set(self.got()))


class Apps:
    """The applications of one soak run."""

    def __init__(self, which: list[str], names: dict[str, str], workdir: Path, rate: float,
                 seconds: float, port091: int, port010: int, user: str, password: str) -> None:
        self.which, self.names, self.rate, self.seconds = which, names, rate, seconds
        self.dir = workdir / "apps"
        self.dir.mkdir(exist_ok=True)
        self.url091 = f"amqp://{user}:{password}@127.0.0.1:{port091}/%2F"
        self.broker010 = f"127.0.0.1:{port010}"
        self.env = {"QPID_USER": user, "QPID_PASSWORD": password,
                    "BROKER_URL": f"amqp://{user}:{password}@127.0.0.1:{port091}//",
                    "SOAK_CELERY_QUEUE": names.get("celery", ""),
                    "RECORD_FILE": str(self.dir / "celery-worker.ids"),
                    "PYTHONPATH": os.pathsep.join(p for p in (
                        str(PROGRAMS), str(QPID_PYTHON), os.environ.get("PYTHONPATH")) if p)}
        self.apps: dict[str, App] = {}
        self.statuses: dict[str, int] = {}

    def program(self, label: str, argv: list[str], record: Path | None = None) -> Program:
        return Program(argv, self.dir / f"{label}.log", record or self.dir / f"{label}.ids",
                       self.env)

    def script(self, label: str, script: str, url: str, name: str, *extra: str) -> Program:
        record = self.dir / f"{label}.ids"
        return self.program(label, [sys.executable, str(PROGRAMS / script), url, name,
                                    str(record), "--tag", label, "--rate", str(self.rate),
                                    "--seconds", str(self.seconds), *extra])

    def start(self) -> None:
        """Consumers first (the Celery worker until it says it is ready), then producers."""
        names = self.names
        consumers: dict[str, Program | None] = {"pika": None}
        if "celery" in self.which:
            worker = self.program("celery-worker", [
                str(Path(sys.executable).parent / "celery"), "-A", "soak_celery", "worker",
                "-n", f"soak@{names['celery']}", "--loglevel=INFO", "--concurrency=1"],
                Path(self.env["RECORD_FILE"]))
            self.wait_ready(worker, " ready.")
            consumers["celery"] = worker
        if "kombu" in self.which:
            consumers["kombu"] = self.script("kombu-consumer", "soak_kombu.py", self.url091,
                                             names["kombu"], "--mode", "consume")
        if "qpid" in self.which:
            consumers["qpid"] = self.script("qpid-receiver", "soak_qpid.py", self.broker010,
                                            names["qpid"], "--mode", "receive")
        producers = {
            "celery": lambda: self.script("celery-producer", "soak_celery_producer.py",
                                          self.url091, names["celery"]),
            "kombu": lambda: self.script("kombu-producer", "soak_kombu.py", self.url091,
                                         names["kombu"], "--mode", "produce"),
            "pika": lambda: self.script("pika-publisher", "soak_pika.py", self.url091,
                                        names["pika"]),
            "qpid": lambda: self.script("qpid-sender", "soak_qpid.py", self.broker010,
                                        names["qpid"], "--mode", "send")}
        for app in self.which:
            self.apps[app] = App(app, producers[app](), consumers[app])

    @staticmethod
    def wait_ready(program: Program, word: str, timeout: float = 120) -> None:
        """Return once ``program`` printed ``word``; RuntimeError if it ended or ``timeout``
        passed first."""
        deadline = time.monotonic() + timeout
        while word not in program.output():
            if not program.running() or time.monotonic() > deadline:
                raise RuntimeError(f"{program.log.name} did not start:\n{program.output()}")
            time.sleep(0.2)

    def broken(self) -> list[str]:
        """Consumers that ended before they were stopped (with their last output)."""
        return [f"{app.name} consumer exited {app.consumer.proc.returncode}:\n"
                f"{app.consumer.output()[-2000:]}"
                for app in self.apps.values()
                if app.consumer is not None and not app.consumer.running()]

    def programs(self) -> list[tuple[str, Program]]:
        out = []
        for app in self.apps.values():
            out.append((f"{app.name} producer", app.producer))
            if app.consumer is not None:
                out.append((f"{app.name} consumer", app.consumer))
        return out

    def producers_done(self) -> bool:
        return all(not app.producer.running() for app in self.apps.values())

    def missing(self) -> dict[str, int]:
        return {name: app.missing() for name, app in self.apps.items()}

    def stop(self) -> None:
        """Every program stopped (SIGTERM), its exit status kept."""
        for label, program in self.programs():
            self.statuses[label] = program.stop()

    def report(self) -> tuple[int, int]:
        """Print a line per application; (lost, duplicates) over all of them."""
        lost = duplicates = 0
        for app in self.apps.values():
            sent, got = app.producer.ids(), app.got()
            dup = sum(n - 1 for n in Counter(got).values() if n > 1)
            gone = len(set(sent) - set(got))
            lost += gone
            duplicates += dup + len(sent) - len(set(sent))
            disconnects = app.producer.disconnects() + (
                app.consumer.disconnects() if app.consumer is not None else 0)
            print(f"{app.name:>7}: sent {len(sent):7}, received {len(set(got)):7}, "
                  f"lost {gone}, duplicates {dup}, disconnects {disconnects}"
                  + (f", exit {self.statuses}" if any(
                      self.statuses.get(label) not in (0, None) for label, _ in self.programs()
                      if label.startswith(app.name)) else ""))
        return lost, duplicates


def declare_celery_exchanges(channel: object) -> None:
    """Celery's exchanges on RabbitMQ (a pika channel), as the recipe has the operator do."""
    for exchange, kind, durable in CELERY_EXCHANGES:
        channel.exchange_declare(exchange, kind, durable=durable)  # type: ignore[attr-defined]
