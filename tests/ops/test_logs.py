"""Structured log lines: JSON and key=value, with secrets redacted."""

from __future__ import annotations

import logging

import orjson
import pytest

from bridge.ops import logs


@pytest.fixture
def capture() -> tuple[logging.Logger, list[logging.LogRecord]]:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("test.logs")
    logger.handlers[:] = [Keep()]
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger, records


def test_json_lines_carry_message_and_fields(capture) -> None:
    logger, records = capture
    logger.info("connection open", extra={"route": "orders-out", "peer": "127.0.0.1:5672"})
    doc = orjson.loads(logs.JsonFormatter().format(records[0]))
    assert doc["msg"] == "connection open" and doc["level"] == "info"
    assert doc["route"] == "orders-out" and doc["peer"] == "127.0.0.1:5672"
    assert doc["ts"].endswith("Z")


def test_key_value_lines_quote_what_needs_quoting(capture) -> None:
    logger, records = capture
    logger.warning("link closed: %s", "amqp:not-found", extra={"route": "a b"})
    line = logs.KeyValueFormatter().format(records[0])
    assert 'msg="link closed: amqp:not-found"' in line
    assert 'route="a b"' in line and "level=warning" in line


def test_secrets_never_reach_a_line(capture) -> None:
    logger, records = capture
    logs.add_secrets(["s3cr3t-token"])
    logger.error("cannot connect to amqp://guest:hunter2@host:5672/vh with s3cr3t-token",
                 extra={"url": "amqps://admin:pa55word@h"})
    for formatter in (logs.JsonFormatter(), logs.KeyValueFormatter()):
        line = formatter.format(records[0])
        for secret in ("hunter2", "pa55word", "s3cr3t-token"):
            assert secret not in line
        assert "amqp://guest:***@host:5672/vh" in line


def test_user_names_are_shown_even_when_a_password_equals_them(
        capture, monkeypatch: pytest.MonkeyPatch) -> None:
    """guest:guest: masking "guest" everywhere would hide the user and tell the reader
    it is a password; URL passwords and every other secret stay masked."""
    for name, fresh in (("_secrets", []), ("_identities", set()), ("_shown", {})):
        monkeypatch.setattr(logs, name, fresh)
    logs.add_secrets(["guest", "app-Pa55", "guest2026"])
    logs.add_identities(["guest", "guest-admin", "app"])
    logger, records = capture
    logger.warning("login refused: bad credentials for 'guest' (amqp://guest:guest@h, "
                   "guest-admin, guest2026, app-Pa55)", extra={"user": "guest"})
    for formatter in (logs.JsonFormatter(), logs.KeyValueFormatter()):
        line = formatter.format(records[0])
        assert "for 'guest' (amqp://guest:***@h, guest-admin, ***, ***)" in line, line
        assert "guest2026" not in line and "app-Pa55" not in line
        assert "user=guest" in line or '"user":"guest"' in line
    assert logs.redact("guest2026 guestguest") == "*** guestguest"  # names are whole words


def test_proton_socket_errors_are_warnings_and_its_other_errors_stay_errors() -> None:
    root, proton = logging.getLogger(), logging.getLogger("proton")
    saved = (root.handlers[:], root.level, proton.level, proton.filters[:])
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    try:
        logs.configure("info", "json")
        root.handlers[:] = [Keep()]
        # as proton logs them: the text formatted before the call
        proton.error(f"Couldn't send: {BrokenPipeError(32, 'Broken pipe')!r}")
        proton.error(f"Couldn't recv: {ConnectionResetError(104, 'reset')!r}")
        proton.error("something else went wrong")
    finally:
        root.handlers[:], level, proton.level, proton.filters[:] = saved
        root.setLevel(level)
    assert [r.levelname for r in records] == ["WARNING", "WARNING", "ERROR"]


def test_last_seen_reports_what_changed_and_forgets_keys_gone() -> None:
    """What the bridge logs route readiness and statistics with: a route made and dropped
    on demand (a façade's temporary queue) must not stay in it for the life of the process."""
    seen = logs.LastSeen()
    assert seen.changed([("a", 1), ("b", 2)]) == [("a", 1), ("b", 2)]
    assert seen.changed([("a", 1), ("b", 3)]) == [("b", 3)]
    assert seen.changed([("a", 1), ("b", 3)], all_of_them=True) == [("a", 1), ("b", 3)]
    for n in range(1000):  # routes that come and go
        seen.changed([("a", 1), (f"temp-{n}", True)])
    assert len(seen) == 2
    assert seen.changed([("a", 1)]) == [] and len(seen) == 1
    assert seen.changed([("a", 1), ("temp-999", True)]) == [("temp-999", True)]  # new again
