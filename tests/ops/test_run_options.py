"""``amqp-bridge run``: logging settings from the configuration, overridden by
``--log-level`` / ``--log-format``; a metrics address that cannot be bound is a
configuration error (exit 2) before anything connects; a fatal signal leaves every
thread's Python stack in the output."""

from __future__ import annotations

import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.support.bridge import catches_signal, free_port, wait_for
from tests.support.logs import parse_line
from tests.support.metrics import metrics_port

ROOT = Path(__file__).resolve().parents[2]




def config(tmp_path: Path, extra: str) -> Path:
    port = free_port()
    path = tmp_path / "bridge.yaml"
    path.write_text(f"""
connections:
  legacy: {{protocol: amqp0-10, url: "amqp://127.0.0.1:{port}", heartbeat: 0,
            reconnect: {{initial_delay: 0.1, max_delay: 0.2}}}}
  cloud:  {{protocol: amqp1.0, url: "amqp://127.0.0.1:{port}",
            reconnect: {{initial_delay: 0.1, max_delay: 0.2}}}}
routes:
  - name: out
    from: {{connection: legacy, queue: q}}
    to:   {{connection: cloud, address: a}}
{extra}
""")
    return path


def run_briefly(path: Path, *args: str, seconds: float = 1.5) -> tuple[int, list[str]]:
    """Run the bridge (against brokers that refuse connections) for ``seconds`` once it
    handles SIGTERM, then SIGTERM; returns its exit code and its output lines."""
    proc = subprocess.Popen([sys.executable, "-m", "bridge.cli", "run", "-c", str(path), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT)
    # not a fixed time from the start: on a loaded machine the interpreter may still be
    # importing after 1.5 s, and the SIGTERM would kill it before it logged anything
    wait_for(lambda: proc.poll() is not None or catches_signal(proc.pid, signal.SIGTERM), 60,
             "the bridge to handle SIGTERM")
    time.sleep(seconds)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    return proc.returncode, [line for line in out.decode().splitlines() if line.strip()]


def test_log_settings_come_from_the_config_and_the_flags_override_them(tmp_path: Path) -> None:
    path = config(tmp_path, "logging: {format: json, level: warning}")
    rc, lines = run_briefly(path)
    assert rc == 0, lines
    docs = [orjson.loads(line) for line in lines]
    assert docs and {d["level"] for d in docs} <= {"warning", "error"}, lines
    rc, lines = run_briefly(path, "--log-level", "info")
    assert rc == 0, lines
    docs = [orjson.loads(line) for line in lines]
    connecting = [d for d in docs if d.get("event") == "connecting"]
    assert {d["connection"] for d in connecting} == {"legacy", "cloud"}, lines
    assert any(d.get("event") == "reconnect_scheduled" for d in docs)
    rc, lines = run_briefly(path, "--log-level", "info", "--log-format", "kv")
    assert rc == 0, lines
    assert not any(line.startswith("{") for line in lines)
    kv = [parse_line(line) for line in lines]
    assert all(kv), lines
    assert any(d is not None and d.get("event") == "connecting" and d.get("level") == "info"
               for d in kv)


def test_a_metrics_address_in_use_is_a_configuration_error(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        path = config(tmp_path, f'metrics: {{bind: "127.0.0.1:{port}"}}')
        proc = subprocess.run([sys.executable, "-m", "bridge.cli", "run", "-c", str(path)],
                              capture_output=True, text=True, cwd=ROOT, timeout=30, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"metrics.bind: cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "connecting" not in proc.stderr  # nothing was started


def test_a_fatal_signal_leaves_the_python_stacks_in_the_output(tmp_path: Path) -> None:
    """A crash in C code (proton's segfault) is diagnosable from the log: faulthandler
    writes every thread's Python stack before the process dies of the signal."""
    output = tmp_path / "out.log"
    with output.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bridge.cli", "run", "-c",
             str(config(tmp_path, 'metrics: {bind: "127.0.0.1:0"}'))],
            stdout=sink, stderr=subprocess.STDOUT, cwd=ROOT,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
    # up: the metrics server's thread runs (its line comes after the thread started) and the
    # main thread handles SIGTERM (it is in the event loop)
    metrics_port(lambda: output.read_text(errors="replace"), 60)
    wait_for(lambda: proc.poll() is not None or catches_signal(proc.pid, signal.SIGTERM), 60,
             "the bridge to handle SIGTERM")
    proc.send_signal(signal.SIGSEGV)
    proc.wait(timeout=20)
    text = output.read_text(errors="replace")
    assert proc.returncode == -signal.SIGSEGV, text
    assert "Fatal Python error: Segmentation fault" in text, text
    # the main thread's stack, down to the event loop, and the metrics server's thread too
    assert "Current thread 0x" in text and "bridge/app.py" in text, text
    assert "\nThread 0x" in text and "socketserver.py" in text, text
