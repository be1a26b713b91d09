"""The route option ``tap`` on AMQP 0-9-1 routes: the archive and ``pipeline reconcile``
are protocol-neutral (rows hold the AMQP 1.0 form of each message, whichever legacy
protocol it came from or went to).

``amqp-bridge run`` between RabbitMQ's 0-9-1 and its 1.0, both 0-9-1 route kinds and the
0-9-1 façade's publish route tapped into one archive; pika as the 0-9-1 application; then
``amqp-bridge pipeline reconcile`` (real Spark) on what the bridge wrote: every message
archived received and delivered, nothing missing.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pika
from proton import Message

from tests.bridge.test_tap import archive_rows, assert_complete_files, reconcile_cli, tap_stats
from tests.support.bridge import BridgeRun, config091, free_port, wait_for, wait_listening
from tests.support.rabbitmq import (
    assert_no_message,
    queue_address,
    receive_messages,
    send_messages,
    unique_queue,
)

COUNT = 300


def test_091_routes_and_facade_archived_and_reconciled_with_none_missing(
        rabbitmq_url: str, tmp_path: Path) -> None:
    archive = tmp_path / "archive"
    tap = f"{{path: '{archive}', side: both, rotate_rows: 250}}"
    out_source, out_target = unique_queue("tap091-out"), unique_queue("tap091-out-t")
    in_source, in_target = unique_queue("tap091-in"), unique_queue("tap091-in-t")
    pub_target = unique_queue("tap091-pub-t")
    port = free_port()
    routes = f"""
  - name: orders-out
    from: {{connection: rabbit, queue: {out_source}}}
    to:   {{connection: cloud, address: {queue_address(out_target)}}}
    cloudevents: {{mode: binary, type: com.example.order, source: /rabbit/orders}}
    max_in_flight: {{messages: 100}}
    tap: {tap}
  - name: replies-in
    from: {{connection: cloud, address: {queue_address(in_source)}}}
    to:   {{connection: rabbit, exchange: "", routing_key: {in_target}}}
    max_in_flight: {{messages: 100}}
    tap: {tap}
  - name: app-publish
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(pub_target)}}}
    max_in_flight: {{messages: 100}}
    tap: {tap}
"""
    listener = f"""listeners:
  app: {{protocol: amqp0-9-1, bind: "127.0.0.1:{port}", users: {{guest: guest}}}}
"""
    with pika.BlockingConnection(pika.URLParameters(rabbitmq_url)) as conn:
        channel = conn.channel()
        channel.queue_declare(out_source)
        channel.queue_declare(in_target)
        channel.confirm_delivery()
        for i in range(COUNT):
            channel.basic_publish("", out_source, f"order {i}".encode(),
                                  pika.BasicProperties(message_id=f"order-{i}", delivery_mode=2))
    replies = [Message(id=f"reply-{i}", body=f"reply {i}".encode(), inferred=True)
               for i in range(COUNT)]
    assert {o.state for o in send_messages(rabbitmq_url, queue_address(in_source), replies,
                                           timeout=60)} == {"accepted"}
    bridge = BridgeRun(config091(rabbitmq_url, routes, more=listener), tmp_path)
    with bridge:
        wait_listening(port, bridge)
        app = pika.BlockingConnection(
            pika.URLParameters(f"amqp://guest:guest@127.0.0.1:{port}/%2F"))
        app_channel = app.channel()
        app_channel.confirm_delivery()  # each publish acked once RabbitMQ took it over 1.0
        for i in range(COUNT):
            app_channel.basic_publish("events", "e", f"event {i}".encode(),
                                      pika.BasicProperties(message_id=f"event-{i}"))
        app.close()
        out = receive_messages(rabbitmq_url, queue_address(out_target), COUNT, timeout=60)
        published = receive_messages(rabbitmq_url, queue_address(pub_target), COUNT, timeout=60)
        with pika.BlockingConnection(pika.URLParameters(rabbitmq_url)) as conn:
            channel = conn.channel()
            wait_for(lambda: channel.queue_declare(in_target, passive=True).method.message_count
                     == COUNT, 60, "every reply in its 0-9-1 queue", bridge)
        assert_no_message(rabbitmq_url, queue_address(in_source))  # every source settled
    assert bridge.proc is not None and bridge.proc.returncode == 0, bridge.log()[-4000:]
    assert [str(r.message.id) for r in out] == [f"order-{i}" for i in range(COUNT)]
    assert [str(r.message.id) for r in published] == [f"event-{i}" for i in range(COUNT)]

    # every message archived received and delivered, in closed files
    assert_complete_files(archive)
    expected = {"orders-out": [f"order-{i}" for i in range(COUNT)],
                "replies-in": [f"reply-{i}" for i in range(COUNT)],
                "app-publish": [f"event-{i}" for i in range(COUNT)]}
    rows = archive_rows(archive)
    counts = Counter((r["route"], r["side"]) for r in rows)
    assert counts == {(route, side): COUNT for route in expected
                      for side in ("received", "delivered")}
    for route, ids in expected.items():
        assert {r["message_id"] for r in rows if r["route"] == route} == set(ids)
        stats = tap_stats(bridge.log(), route)
        assert (stats["recorded"], stats["dropped"], stats["lost"]) == (2 * COUNT, 0, 0)

    # the pipeline reconciles them as it does 0-10 routes: nothing missing
    report_path = tmp_path / "report.json"
    done = reconcile_cli(archive, report_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OK: nothing missing" in done.stdout
    report = json.loads(report_path.read_text())
    assert report["ok"] is True
    assert {r["route"] for r in report["routes"]} == set(expected)
    for route in report["routes"]:
        assert (route["sent"], route["delivered"], route["missing"], route["duplicates"]) == \
            (COUNT, COUNT, 0, 0), route
