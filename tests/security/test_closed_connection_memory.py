"""Memory a client made the bridge hold goes when its connection ends (issue "Hostile
input and overload", item 2): two big unfinished messages, one after the other, do not
add up in the bridge's RSS — the second reuses what the first left."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from amqp010.connection import Connection, ConnectionConfig, Role
from amqp010.framing import frame_header
from amqp010.sasl import ClientCredentials
from amqp010.transport import SocketTransport
from tests.support.bridge import BridgeRun, free_port, wait_for, wait_listening
from tests.support.rabbitmq import queue_address, unique_queue

ATTACK = 60 << 20
"""Octets of unfinished messages one attack leaves in the bridge (under the listener's
per-connection bound of 128 MiB)."""
MIB = 1 << 10  # /proc reports KiB


def _logged_in(port: int) -> tuple[socket.socket, SocketTransport]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    engine = Connection(Role.CLIENT, ConnectionConfig(credentials=ClientCredentials()))
    transport = SocketTransport(sock, engine)
    deadline = time.monotonic() + 10
    while not engine.is_open:
        assert time.monotonic() < deadline, "no login"
        transport.read_once(0.2)
    engine.attach("big-1")
    engine.attach("big-2")
    transport.flush()
    return sock, transport


def _unfinished(channel: int, size: int) -> bytes:
    """A command segment on ``channel`` whose last frame never comes."""
    chunk = 65000
    frames = []
    for i in range(size // chunk):
        flags = 0x0A if i == 0 else 0x08  # FIRST_SEGMENT (| FIRST_FRAME), never LAST_*
        frames.append(frame_header(flags, 1, 1, channel, chunk) + bytes(chunk))
    return b"".join(frames)


def test_two_big_unfinished_messages_in_a_row_do_not_add_up(rabbitmq_url: str,
                                                              tmp_path: Path) -> None:
    port = free_port()
    config = f"""
connections:
  cloud: {{protocol: amqp1.0, url: "{rabbitmq_url}"}}
listeners:
  app: {{protocol: amqp0-10, bind: "127.0.0.1:{port}", allow_anonymous: true}}
routes:
  - name: events
    from: {{listener: app, exchange: events}}
    to:   {{connection: cloud, address: {queue_address(unique_queue("memory"))}}}
"""
    with BridgeRun(config, tmp_path) as bridge:
        wait_listening(port, bridge)
        baseline = bridge.status("VmRSS")
        peaks = []
        for _ in range(2):
            sock, _transport = _logged_in(port)
            sock.sendall(_unfinished(1, ATTACK // 2) + _unfinished(2, ATTACK // 2))
            wait_for(lambda: bridge.status("VmRSS") - baseline > ATTACK // 2 // 1024, 30,
                     "the bridge to hold the unfinished messages", bridge)
            time.sleep(0.5)  # the rest of what was sent is read
            peaks.append(bridge.status("VmRSS"))
            sock.close()
            wait_for(lambda: "closed" in bridge.log().rsplit("client_connected", 1)[-1], 20,
                     "the bridge to see the connection go", bridge)
        assert bridge.proc is not None and bridge.proc.poll() is None
        # the second attack found the first one's memory free and reused it
        assert peaks[1] - peaks[0] < 30 * MIB, (baseline, peaks)
        assert bridge.stop() == 0, bridge.log()
