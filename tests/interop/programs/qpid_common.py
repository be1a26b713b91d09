"""What the qpid.messaging programs share: the command line and the connection.

Every program takes the broker as ``HOST:PORT``, the login from ``QPID_USER`` /
``QPID_PASSWORD``, never reconnects (a lost connection must show as an error), and
prints one JSON line with what it did on stdout.
"""

import argparse
import json
import os
import sys

from qpid.messaging import Connection


def arguments(doc, *extra):
    """Parse ``broker address`` plus ``extra`` ``(flag, type, default)`` options."""
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("broker")
    parser.add_argument("address")
    for flag, kind, default in extra:
        parser.add_argument(flag, type=kind, default=default)
    return parser.parse_args()


def connect(broker, **options):
    """An open qpid.messaging connection to ``broker`` that never reconnects."""
    connection = Connection(broker, username=os.environ["QPID_USER"],
                            password=os.environ["QPID_PASSWORD"], reconnect=False, **options)
    connection.open()
    return connection


def report(**what):
    json.dump(what, sys.stdout)
    sys.stdout.write("\n")
    sys.stdout.flush()
