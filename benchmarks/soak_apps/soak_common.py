"""What the soak's application programs share: the command line, the pace, the record.

Every program is an unchanged-library application (Celery, kombu, pika, qpid.messaging)
that the soak (``benchmarks/soak.py --apps``) runs as a subprocess of its own. It writes
one line per message to its RECORD file — a producer the id of each message its broker
took (confirmed, completed or returned from ``delay()``), a consumer the id of each
message it acknowledged — and one ``disconnect: REASON`` line on stdout each time its
connection failed (it then connects again, as an application with a retry loop does).
Producers stop after SECONDS; consumers at SIGTERM (or SIGINT), after acknowledging what
they hold.
"""

import argparse
import signal
import time


def arguments(doc, *extra):
    """The common options plus ``extra`` ``(flag, type, default)`` ones."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("url")
    parser.add_argument("name", help="the exchange, queue or address the program uses")
    parser.add_argument("record", help="the file of message ids (one a line)")
    parser.add_argument("--tag", default="m", help="the prefix of the message ids")
    parser.add_argument("--rate", type=float, default=5.0, help="messages/s (producers)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long (producers)")
    for flag, kind, default in extra:
        parser.add_argument(flag, type=kind, default=default)
    return parser.parse_args()


class Record:
    """The record file: one id a line, flushed at once (the soak reads it at the end)."""

    def __init__(self, path):
        self.file = open(path, "a", buffering=1)  # noqa: SIM115  (line-buffered)

    def add(self, *ids):
        for one in ids:
            self.file.write(f"{one}\n")


def call_records(path):
    """The records of a program that makes calls: ``path`` (each call) and
    ``path.answered`` (each right answer)."""
    return Record(path), Record(path + ".answered")


def qpid_connect(url):
    """An open qpid.messaging connection to ``HOST:PORT`` (login QPID_USER /
    QPID_PASSWORD), no reconnect (the program's loop connects again), heartbeat 5 s."""
    import os

    from qpid.messaging import Connection

    connection = Connection(url, username=os.environ.get("QPID_USER", "guest"),
                            password=os.environ.get("QPID_PASSWORD", "guest"),
                            reconnect=False, heartbeat=5)
    connection.open()
    return connection


class Pace:
    """Ids ``TAG-0``, ``TAG-1``, ... at ``rate`` per second for ``seconds``."""

    def __init__(self, tag, rate, seconds):
        self.tag, self.rate = tag, rate
        self.start = time.monotonic()
        self.end = self.start + seconds
        self.n = 0

    def __iter__(self):
        while time.monotonic() < self.end:
            due = self.start + self.n / self.rate
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            yield f"{self.tag}-{self.n}"
            self.n += 1


class Stop:
    """Set by SIGTERM/SIGINT: a consumer's loop ends at its next turn."""

    def __init__(self):
        self.requested = False
        signal.signal(signal.SIGTERM, self._set)
        signal.signal(signal.SIGINT, self._set)

    def _set(self, *_):
        self.requested = True


def disconnect(error):
    """Say that the connection failed (the soak counts these lines), pause a second."""
    print(f"disconnect: {error!r:.300}", flush=True)
    time.sleep(1)
