"""Reading the bridge's structured log lines (``key=value`` or JSON) in tests."""

from __future__ import annotations

import shlex
from typing import Any

import orjson


def parse_line(line: str) -> dict[str, Any] | None:
    """One log line as a dict (JSON or ``key=value`` pairs); None if it is neither."""
    line = line.strip()
    if not line:
        return None
    if line.startswith("{"):
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        return doc if isinstance(doc, dict) else None
    try:
        tokens = shlex.split(line)
    except ValueError:
        return None
    if not tokens or not all("=" in t for t in tokens):
        return None
    return dict(t.split("=", 1) for t in tokens)


def records(text: str) -> list[dict[str, Any]]:
    """Every structured line of a log."""
    return [doc for line in text.splitlines() if (doc := parse_line(line)) is not None]


def route_stats(text: str, route: str) -> dict[str, int]:
    """The route's counters from the last statistics line the bridge logged (at exit)."""
    lines = [r for r in records(text) if r.get("event") == "stats" and r.get("route") == route]
    assert lines, f"no statistics for route {route} in the log"
    return {k: int(v) for k, v in lines[-1].items()
            if isinstance(v, int) or (isinstance(v, str) and v.isdigit())}
