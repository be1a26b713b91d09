"""Client churn through a topology-mode 0-9-1 façade on RabbitMQ 4: what a façade serving
many short-lived clients keeps, and whether it survives them.

Run: ``.venv/bin/python benchmarks/churn.py [--clients N] [--phases P] [--workers W]``
(needs the project's RabbitMQ 4.0 node, started as the tests start it).

Each client is a pika connection that does what an RPC client and a Celery producer do
on start: declares a server-named exclusive queue and a named auto-delete queue with an
``x-expires`` lease (twice, as Celery redeclares), consumes both with no-ack, publishes
one message to each through the default exchange, waits for both and closes. W worker
threads run clients one after another, N per phase; after each phase and a pause past the
bridge's timers (ATTACH_TIMEOUT, the redeclare cache's MAX_AGE) the bridge's RSS and its
1.0 links gauge are printed. The run fails (exit 1) if a client does not get its two
messages or the bridge process ends: the figure that matters is that neither happens,
and that RSS and links level off instead of growing phase after phase.

Found with it: the attach timer held a proton link past its session's freeing, and
releasing it crashed the bridge in proton's C code (double free; about one run in three
of 3,300 clients); route names of every temporary queue, and the redeclare cache's
answers, were kept for the life of the process (docs/testing.md, "Client churn").
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pika
from _timing import ROOT

from tests.support.bridge import BridgeRun, free_port, wait_listening
from tests.support.rabbitmq import ensure_rabbitmq4

PASSWORD = "churn-s3cret"
PAUSE = 20.0
"""Seconds after a phase before measuring: past ATTACH_TIMEOUT (15 s) and MAX_AGE (5 s)."""


def one_client(port: int) -> None:
    """A client's life (module docstring); raises if a message does not come."""
    conn = pika.BlockingConnection(pika.ConnectionParameters(
        "127.0.0.1", port, "/", pika.PlainCredentials("app", PASSWORD), heartbeat=0,
        connection_attempts=1))
    try:
        ch = conn.channel()
        reply = ch.queue_declare("", exclusive=True).method.queue
        named = f"test.churn.{uuid.uuid4().hex[:10]}"
        for _ in range(2):
            ch.queue_declare(named, durable=True, auto_delete=True,
                             arguments={"x-expires": 60000})
        got: list[bytes] = []
        for queue in (reply, named):
            ch.basic_consume(queue, lambda c, m, p, body: got.append(body), auto_ack=True)
        ch.basic_publish("", reply, b"reply")
        ch.basic_publish("", named, b"result")
        deadline = time.monotonic() + 30
        while len(got) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError(f"got {got} of the two messages")
            conn.process_data_events(0.01)
    finally:
        conn.close()


def rss_mib(bridge: BridgeRun) -> int | None:
    """The bridge's resident size in MiB; None once it is gone (the report says so)."""
    try:
        return bridge.status("VmRSS") // 1024
    except OSError:
        return None


def links(metrics: int) -> float:
    """The bridge's attached-or-attaching 1.0 links (all connections)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics}/metrics", timeout=10).read()
    return sum(float(m.group(1)) for m in re.finditer(
        rb"^amqp_bridge_amqp10_links\{[^}]*\} ([\d.e+]+)$", text, re.M))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=1500, help="clients per phase")
    parser.add_argument("--phases", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1, help="client threads")
    args = parser.parse_args()

    url = ensure_rabbitmq4()
    workdir = Path(tempfile.mkdtemp(prefix="bench-churn-"))
    port, metrics = free_port(), free_port()
    config = (ROOT / "examples" / "topology.yaml").read_text() \
        + f'metrics: {{bind: "127.0.0.1:{metrics}"}}\n'
    bridge = BridgeRun(config, workdir, log_level="warning",
                       env={"CLOUD_URL": url, "RABBIT_URL": url,
                            "APP_BIND": f"127.0.0.1:{port}", "APP_PASSWORD": PASSWORD}).start()
    proc = bridge.proc
    assert proc is not None
    failures: list[str] = []
    try:
        wait_listening(port, bridge)
        print(f"start: RSS {rss_mib(bridge)} MiB, links {links(metrics):.0f}",
              flush=True)
        for phase in range(1, args.phases + 1):
            started = time.monotonic()
            left = [args.clients]
            lock = threading.Lock()

            def work(left: list[int] = left, lock: threading.Lock = lock) -> None:
                while True:
                    with lock:
                        if left[0] <= 0 or failures:
                            return
                        left[0] -= 1
                    try:
                        one_client(port)
                    except Exception as exc:  # (reported below: the run fails)
                        failures.append(repr(exc))
                        return

            threads = [threading.Thread(target=work) for _ in range(args.workers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            took = time.monotonic() - started
            if failures or proc.poll() is not None:
                break
            time.sleep(PAUSE)
            print(f"phase {phase}: {args.clients} clients in {took:.0f} s "
                  f"({args.clients / took:.0f}/s); after {PAUSE:.0f} s: RSS "
                  f"{rss_mib(bridge)} MiB, links {links(metrics):.0f}", flush=True)
    finally:
        alive = proc.poll() is None
        rc = bridge.stop() if alive else proc.returncode
    if not alive:
        print(f"FAILED: the bridge ended (exit {rc}); its log: {bridge.log_path}")
        return 1
    if failures:
        print(f"FAILED: {len(failures)} client(s): {failures[0]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
