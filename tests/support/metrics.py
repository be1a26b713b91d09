"""Reading a running bridge's ``/metrics``, ``/healthz`` and ``/readyz`` over HTTP in tests."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import orjson
from prometheus_client.parser import text_string_to_metric_families

from tests.support.logs import records


class Scrape:
    """One scrape of ``/metrics``: sample values by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = (sample.name, tuple(sorted(sample.labels.items())))
                self.samples[key] = sample.value

    def value(self, name: str, **labels: str) -> float:
        """The sample ``name`` with exactly ``labels``; KeyError naming what exists if absent."""
        key = (name, tuple(sorted(labels.items())))
        if key not in self.samples:
            known = sorted(str(dict(k[1])) for k in self.samples if k[0] == name)
            raise KeyError(f"no sample {name}{labels}; {name} has {known}")
        return self.samples[key]

    def route(self, name: str, route: str) -> float:
        return self.value(name, route=route)


def http_get(port: int, path: str) -> tuple[int, Any]:
    """``GET http://127.0.0.1:PORT/PATH``: the status and the decoded JSON body (or text)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    if path == "/metrics":
        return status, body.decode()
    return status, orjson.loads(body)


def scrape(port: int) -> Scrape:
    status, text = http_get(port, "/metrics")
    assert status == 200, text
    return Scrape(text)


def counted(port: int, name: str, **labels: str) -> float:
    """The sample ``name`` with ``labels`` in a fresh scrape; 0 while it is not exported
    (a labelled counter appears with its first count)."""
    try:
        return scrape(port).value(name, **labels)
    except KeyError:
        return 0.0


def metrics_port(log: Callable[[], str], timeout: float = 20.0) -> int:
    """The port the bridge's metrics server listens on, from its start-up log line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for rec in records(log()):
            if rec.get("event") == "metrics_listening":
                return int(str(rec["address"]).rsplit(":", 1)[1])
        time.sleep(0.05)
    raise AssertionError(f"no metrics_listening line in the log:\n{log()[-3000:]}")


def poll(fn: Callable[[], Any], check: Callable[[Any], bool], timeout: float, what: str) -> Any:
    """Call ``fn`` until ``check(result)`` holds; returns that result (AssertionError with the
    last one after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if check(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last: {result!r}"[:4000])
        time.sleep(0.05)
