"""The route option ``tap`` end to end (the data pipeline issue's acceptance).

``amqp-bridge run`` as a subprocess between the in-memory 0-10 broker and the
real RabbitMQ, its routes tapped into one archive directory; then
``amqp-bridge pipeline reconcile`` as a subprocess (real Spark) on what the
bridge wrote:

- 1,000 messages each way (0-10 → 1.0 and 1.0 → 0-10): every message archived
  received and delivered, in rotated files, complete after SIGTERM;
  reconcile reports 0 missing and exits 0; with one message's delivered row
  removed from a copy, it exits 1 naming that message;
- the façade's two route kinds archive what legacy applications publish and
  what they accept;
- an unmappable (dead-lettered) message is archived as received, never as
  delivered;
- a stalled archive writer (its process stopped) makes the bridge withhold
  credit instead of blocking or losing rows (``overflow: block``; once it runs
  again every message goes through and is archived), or drop and count rows
  while messages keep flowing (``overflow: drop``);
- a tap that cannot work (pyarrow missing, a path that cannot be a directory)
  stops ``check`` / ``run`` with a message naming ``routes[i].tap``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from proton import Message

from amqp010.spec import MessageProperties
from amqp010.testing.broker import Broker
from amqp010.transport import BlockingClient
from tests.support.bridge import (
    ROOT,
    BridgeRun,
    bridge_config,
    free_port,
    legacy_backlog,
    legacy_client,
    legacy_message,
    preload,
    publish_legacy,
    wait_for,
    wait_listening,
)
from tests.support.logs import records
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    receive_messages,
    send_messages,
    unique_queue,
)

COUNT = 1000
SPARK_OPTIONS = ("--master", "local[1]", "--no-progress",
                 "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.shuffle.partitions=1")


def archive_rows(path: Path) -> list[dict[str, object]]:
    """Every row of the archive under ``path`` (context and ids only)."""
    return pq.read_table(path).select(["route", "side", "time", "message_id"]).to_pylist()


def assert_complete_files(path: Path) -> list[Path]:
    """The archive's files: only closed ones (no ``.inprogress`` leftovers), each readable."""
    assert not list(path.glob(".*")), f"unfinished files left: {list(path.glob('.*'))}"
    files = sorted(path.glob("part-*.parquet"))
    for file in files:
        pq.read_metadata(file)  # has a footer
    return files


def reconcile_cli(archive: Path, report: Path) -> subprocess.CompletedProcess[str]:
    """``amqp-bridge pipeline reconcile ARCHIVE`` in a subprocess (its own Spark)."""
    return subprocess.run(
        [sys.executable, "-m", "bridge.cli", "pipeline", *SPARK_OPTIONS, "reconcile",
         str(archive), "--report", str(report)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})


TAP_COUNTERS = ("recorded", "dropped", "lost", "unarchivable", "backpressure",
                "backpressure_seconds", "held_peak")


def tap_stats(log: str, route: str) -> dict[str, float]:
    """The tap counters the bridge logged for ``route`` when it stopped."""
    lines = [r for r in records(log) if r.get("event") == "tap_stats" and r["route"] == route]
    assert lines, f"no tap statistics for route {route} in the log:\n{log[-4000:]}"
    return {k: float(v) for k, v in lines[-1].items() if k in TAP_COUNTERS}


def test_1000_messages_each_way_archived_and_reconciled_with_none_missing(
        rabbitmq_url: str, tmp_path: Path) -> None:
    broker = Broker(users={"guest": "guest"})
    server = broker.serve()
    archive = tmp_path / "archive"
    target, source = unique_queue("tap-out"), unique_queue("tap-in")
    tap = f"{{path: '{archive}', side: both, rotate_rows: 300}}"
    routes = f"""
  - name: orders-out
    from: {{connection: legacy, queue: orders}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    cloudevents: {{mode: binary, type: com.example.order, source: /legacy/orders}}
    max_in_flight: {{messages: 200}}
    tap: {tap}
  - name: replies-in
    from: {{connection: cloud, address: {queue_address(source)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: replies}}
    max_in_flight: {{messages: 200}}
    tap: {tap}
"""
    replies = [Message(id=f"reply-{i}", body=f"reply {i}".encode(), inferred=True,
                       properties={"n": i})
               for i in range(COUNT)]
    assert {o.state for o in send_messages(rabbitmq_url, queue_address(source), replies,
                                           timeout=60)} == {"accepted"}
    try:
        with legacy_client(server) as client:
            client.declare_queue("replies-q")
            client.bind("replies-q", "amq.direct", "replies")
            bridge = BridgeRun(bridge_config(server.url, rabbitmq_url, routes), tmp_path)
            with bridge:
                publish_legacy(server, "orders", [legacy_message(i) for i in range(COUNT)])
                out = receive_messages(rabbitmq_url, queue_address(target), COUNT, timeout=120)
                client.subscribe("replies-q", messages=None)
                got = []
                while len(got) < COUNT:
                    got.append(client.receive("replies-q", timeout=60))
                client.accept(*got)
                wait_for(lambda: legacy_backlog(broker, "orders") == 0, 30,
                         "the 0-10 source to be settled", bridge)
                assert_no_message(rabbitmq_url, queue_address(source))  # all settled
            assert bridge.proc is not None and bridge.proc.returncode == 0, bridge.log()[-4000:]
    finally:
        server.stop()
    assert [r.message.id for r in out] == [uuid.UUID(int=i + 1) for i in range(COUNT)]
    assert [ev.body for ev in got] == [f"reply {i}".encode() for i in range(COUNT)]

    # SIGTERM'd: every file is closed and readable, rotated by rows
    files = assert_complete_files(archive)
    assert len(files) >= 4 * COUNT // 300
    rows = archive_rows(archive)
    counts = Counter((r["route"], r["side"]) for r in rows)
    assert counts == {("orders-out", "received"): COUNT, ("orders-out", "delivered"): COUNT,
                      ("replies-in", "received"): COUNT, ("replies-in", "delivered"): COUNT}
    times = {(r["route"], r["side"], r["message_id"]): r["time"] for r in rows}
    expected = {"orders-out": [str(uuid.UUID(int=i + 1)) for i in range(COUNT)],
                "replies-in": [f"reply-{i}" for i in range(COUNT)]}
    for route, ids in expected.items():
        for message_id in ids:  # both sides of every message, delivered after received
            assert times[route, "received", message_id] <= times[route, "delivered", message_id]
    log = bridge.log()
    for route in expected:
        stats = tap_stats(log, route)
        assert (stats["recorded"], stats["dropped"], stats["lost"]) == (2 * COUNT, 0, 0)

    # the pipeline: nothing missing
    report_path = tmp_path / "report.json"
    done = reconcile_cli(archive, report_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: nothing missing" in done.stdout
    report = json.loads(report_path.read_text())
    assert report["ok"] is True
    for route in report["routes"]:
        assert (route["sent"], route["delivered"], route["missing"], route["duplicates"],
                route["unexpected"]) == (COUNT, COUNT, 0, 0, 0), route
        assert 0 < route["latency_p50_ms"] <= route["latency_p99_ms"]
    assert {r["route"] for r in report["routes"]} == set(expected)

    # one message's delivered row gone: reconcile fails, naming it
    gone = str(uuid.UUID(int=501))
    broken = tmp_path / "broken"
    broken.mkdir()
    for file in files:
        table = pq.read_table(file)
        keep = [not (r == "orders-out" and s == "delivered" and m == gone) for r, s, m in zip(
            table["route"].to_pylist(), table["side"].to_pylist(),
            table["message_id"].to_pylist(), strict=True)]
        pq.write_table(table.filter(keep), broken / file.name)
    assert len(archive_rows(broken)) == len(rows) - 1
    done = reconcile_cli(broken, report_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"orders-out: missing message_ids: {gone}" in done.stdout
    assert "FAILED: messages are missing" in done.stdout
    report = json.loads(report_path.read_text())
    assert report["ok"] is False and report["totals"]["missing"] == 1


def test_facade_routes_archive_what_legacy_applications_publish_and_accept(
        rabbitmq_url: str, tmp_path: Path) -> None:
    count = 200
    archive = tmp_path / "archive"
    events, jobs = unique_queue("tap-facade-events"), unique_queue("tap-facade-jobs")
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  apps: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
routes:
  - name: events-out
    from: {{listener: apps, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(events)}}}
    tap: {{path: '{archive}', side: both}}
  - name: jobs-in
    from: {{connection: cloud, address: {queue_address(jobs)}}}
    to:   {{listener: apps, queue: jobs}}
    tap: {{path: '{archive}', side: delivered}}
"""
    send_messages(rabbitmq_url, queue_address(jobs),
                  [Message(id=f"job-{i}", body=f"job {i}".encode(), inferred=True)
                   for i in range(count)])
    bridge = BridgeRun(config, tmp_path)
    with bridge:
        wait_listening(port, bridge)
        with BlockingClient.connect(f"amqp://127.0.0.1:{port}") as client:
            for i in range(count):
                client.publish(f"event {i}".encode(), "k", "events", wait=False,
                               properties=MessageProperties(message_id=uuid.UUID(int=i + 1)))
            client.sync()  # completed: RabbitMQ accepted every one
            client.subscribe("jobs", messages=50, window=True)
            got = []
            while len(got) < count:
                batch = [client.receive("jobs", timeout=30) for _ in range(50)]
                client.accept(*batch)
                got += batch
        received = receive_messages(rabbitmq_url, queue_address(events), count, timeout=60)
        assert_no_message(rabbitmq_url, queue_address(jobs))
        # Parquet is the writer process's business: the bridge's own process never loads it
        assert "libarrow" not in Path(f"/proc/{bridge.pid}/maps").read_text()
        assert "libarrow" in Path(f"/proc/{_writer_pid(bridge)}/maps").read_text()
    assert bridge.proc is not None and bridge.proc.returncode == 0, bridge.log()[-4000:]
    assert len(received) == len(got) == count
    assert_complete_files(archive)
    counts = Counter((r["route"], r["side"], r["message_id"]) for r in archive_rows(archive))
    publish_ids = [str(uuid.UUID(int=i + 1)) for i in range(count)]
    assert counts == {
        **{("events-out", side, m): 1 for m in publish_ids for side in ("received", "delivered")},
        **{("jobs-in", "delivered", f"job-{i}"): 1 for i in range(count)},  # side: delivered
    }


def test_an_unmappable_message_is_archived_received_and_never_delivered(
        rabbitmq_url: str, tmp_path: Path) -> None:
    """It goes to the dead-letter address; the archive shows it taken and not delivered,
    so reconcile reports it missing from the target."""
    broker = Broker(users={"guest": "guest"})
    server = broker.serve()
    archive = tmp_path / "archive"
    target, dlq = unique_queue("tap-dl"), unique_queue("tap-dl-dlq")
    routes = f"""
  - name: dl
    from: {{connection: legacy, queue: dl}}
    to:   {{connection: cloud, address: {queue_address(target)}}}
    dead_letter: {{connection: cloud, address: {queue_address(dlq)}}}
    tap: {{path: '{archive}'}}
"""
    messages = [legacy_message(i) for i in range(3)]
    messages[1][0].delivery_mode = 3  # no AMQP 1.0 equivalent: unmappable
    try:
        with BridgeRun(bridge_config(server.url, rabbitmq_url, routes), tmp_path) as bridge:
            publish_legacy(server, "dl", messages)
            good = receive_messages(rabbitmq_url, queue_address(target), 2)
            [dead] = receive_messages(rabbitmq_url, queue_address(dlq), 1)
            wait_for(lambda: legacy_backlog(broker, "dl") == 0, 30, "the source settled", bridge)
    finally:
        server.stop()
    assert [r.message.id for r in good] == [uuid.UUID(int=1), uuid.UUID(int=3)]
    assert dead.message.id == uuid.UUID(int=2)
    rows = pq.read_table(archive).select(["side", "message_id", "bare"]).to_pylist()
    assert Counter((r["side"], r["message_id"]) for r in rows) == {
        ("received", str(uuid.UUID(int=1))): 1, ("delivered", str(uuid.UUID(int=1))): 1,
        ("received", str(uuid.UUID(int=2))): 1,
        ("received", str(uuid.UUID(int=3))): 1, ("delivered", str(uuid.UUID(int=3))): 1}
    [bad] = [r for r in rows if r["message_id"] == str(uuid.UUID(int=2))]
    assert bad["bare"].endswith(messages[1][2])  # its body, as the plain copy carries it
    assert tap_stats(bridge.log(), "dl")["recorded"] == 5


def _writer_pid(bridge: BridgeRun) -> int:
    """The archive writer's process: the bridge's child running ``pipeline.filewriter``."""
    writers = _writers(bridge)
    assert len(writers) == 1, writers
    return writers[0]


def _writers(bridge: BridgeRun) -> list[int]:
    """The bridge's children that run the archive writer (not a helper a library runs
    for a moment while the bridge starts, such as ``ldconfig``: stopping that one instead
    would stop the bridge)."""
    pids = [int(pid) for task in Path(f"/proc/{bridge.pid}/task").iterdir()
            for pid in (task / "children").read_text().split()]
    writers = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            continue  # (gone meanwhile)
        if b"pipeline.filewriter" in cmdline:
            writers.append(pid)
    return writers


@pytest.mark.parametrize(("direction", "overflow"), [
    ("0-10 -> 1.0", "block"), ("1.0 -> 0-10", "block"), ("0-10 -> 1.0", "drop")])
def test_a_stalled_writer_holds_the_route_back_or_drops_rows_as_configured(
        direction: str, overflow: str, rabbitmq_url: str, tmp_path: Path) -> None:
    """``block``: the route stops taking messages while the writer is stopped, and every
    row is archived once it runs again; ``drop``: messages keep flowing, rows are dropped
    and counted. Nothing is lost on the message path either way."""
    count = 3000
    broker = Broker(users={"guest": "guest"})
    server = broker.serve()
    archive = tmp_path / "archive"
    queue = unique_queue("tap-stall")
    tap = f"tap: {{path: '{archive}', queue_size: 100, overflow: {overflow}}}"
    if direction == "0-10 -> 1.0":
        ids = {str(i) for i in preload(broker, "stall", count)}
        routes = f"""
  - name: stall
    from: {{connection: legacy, queue: stall}}
    to:   {{connection: cloud, address: {queue_address(queue)}}}
    max_in_flight: {{messages: 100}}
    {tap}
"""

        def left() -> int:  # messages not yet through
            return legacy_backlog(broker, "stall")
    else:
        ids = {f"m-{i}" for i in range(count)}
        send_messages(rabbitmq_url, queue_address(queue), [
            Message(id=f"m-{i}", body=b"x" * 1024, inferred=True) for i in range(count)],
            timeout=60)
        with legacy_client(server) as client:
            client.declare_queue("stall-q")
            client.bind("stall-q", "amq.direct", "stall")
        routes = f"""
  - name: stall
    from: {{connection: cloud, address: {queue_address(queue)}}}
    to:   {{connection: legacy, exchange: amq.direct, routing_key: stall}}
    max_in_flight: {{messages: 100}}
    {tap}
"""

        def left() -> int:
            return count - len(broker.queues["stall-q"].messages)
    writer = None
    try:
        bridge = BridgeRun(bridge_config(server.url, rabbitmq_url, routes), tmp_path)
        with bridge:
            wait_for(lambda: bool(_writers(bridge)), 20, "the archive writer to start", bridge)
            writer = _writer_pid(bridge)
            os.kill(writer, signal.SIGSTOP)
            # the route has started (under load its links may take longer than the quiet
            # second below: no movement yet would look like a route held back)
            wait_for(lambda: left() < count, 60, "the route to start", bridge)
            # the writer takes nothing: its socket, then its queue fill up; then the route
            # holds rows and takes no more messages (block), or drops rows (drop)
            stuck = steady(left, quiet=1.0, timeout=60)
            log = bridge.log()
            if overflow == "block":
                assert stuck > 0, log[-4000:]  # without backpressure all would go through
                assert "holding rows and withholding credit" in log
            else:
                assert stuck == 0, log[-4000:]
                assert "queue is full (overflow: drop)" in log
            assert bridge.proc is not None and bridge.proc.poll() is None
            os.kill(writer, signal.SIGCONT)
            writer = None
            wait_for(lambda: left() == 0, 60, "every message to go through", bridge)
        assert bridge.proc is not None and bridge.proc.returncode == 0, bridge.log()[-4000:]
    finally:
        if writer is not None:
            os.kill(writer, signal.SIGCONT)
        server.stop()
    if direction == "0-10 -> 1.0":
        out = receive_messages(rabbitmq_url, queue_address(queue), count, timeout=60)
        assert {str(m.message.id) for m in out} == ids
    else:
        assert_no_message(rabbitmq_url, queue_address(queue))  # all taken and settled
    assert_complete_files(archive)
    counts = Counter((r["side"], r["message_id"]) for r in archive_rows(archive))
    stats = tap_stats(bridge.log(), "stall")
    assert stats["lost"] == 0
    if overflow == "block":
        assert counts == {(side, m): 1 for m in ids for side in ("received", "delivered")}
        assert stats["recorded"] == 2 * count and stats["dropped"] == 0
        assert stats["backpressure"] >= 1 and stats["held_peak"] >= 1
    else:
        assert stats["dropped"] > 0 and stats["backpressure"] == 0
        assert stats["recorded"] + stats["dropped"] == 2 * count
        assert sum(counts.values()) == stats["recorded"] and set(counts.values()) == {1}


def steady(value: Callable[[], int], *, quiet: float, timeout: float) -> int:
    """``value()`` once it has not changed for ``quiet`` seconds (within ``timeout``)."""
    deadline = time.monotonic() + timeout
    last, since = value(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = value()
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return last
    raise AssertionError(f"still changing after {timeout}s (last {last})")


@pytest.mark.parametrize("problem", ["pyarrow", "directory"])
def test_a_tap_that_cannot_work_stops_check_or_run_naming_it(
        problem: str, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    path = tmp_path / "archive" if problem == "pyarrow" else blocker / "archive"
    config = tmp_path / "bridge.yaml"
    config.write_text(f"""
connections:
  legacy: {{protocol: amqp0-10, url: "amqp://127.0.0.1:1"}}
  cloud:  {{protocol: amqp1.0, url: "amqp://127.0.0.1:1"}}
routes:
  - name: untapped
    from: {{connection: legacy, queue: a}}
    to:   {{connection: cloud, address: /queue/a}}
  - name: tapped
    from: {{connection: legacy, queue: b}}
    to:   {{connection: cloud, address: /queue/b}}
    tap: {{path: '{path}'}}
""")
    hide = "import sys; sys.modules['pyarrow'] = None; " if problem == "pyarrow" else ""
    for command in (["check"], ["run"]):
        if problem == "directory" and command == ["check"]:
            continue  # check does not touch the file system
        done = subprocess.run(
            [sys.executable, "-c", f"{hide}from bridge.cli import main; main()", *command,
             "-c", str(config)], cwd=ROOT, capture_output=True, text=True, timeout=60,
            check=False)
        assert done.returncode == 2, done.stdout + done.stderr
        if problem == "pyarrow":
            assert f"{config}: routes[1].tap: writing archives needs pyarrow, which is not " \
                   f"installed: pip install 'amqp-bridge[spark]'" in done.stderr
        else:
            assert f"{config}: routes[1].tap: " in done.stderr and "Not a directory" in done.stderr
