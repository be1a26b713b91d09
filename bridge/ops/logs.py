"""Structured logging: one line per event, JSON or key=value, secrets redacted.

Log calls pass context as ``extra`` fields (``log.info("connection open",
extra={"route": ..., "peer": ...})``); the formatter renders message and fields
as one JSON object or as ``key=value`` pairs.  Every rendered line goes through
:func:`redact`, which masks passwords in URLs and any configured secret value,
so a secret never reaches the log even if a caller formats it into a message;
user names are shown (:func:`add_identities`), even one equal to a password.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

import orjson

_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:/@\s]*):(?P<pw>[^@/\s]+)@",
                           re.IGNORECASE)
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
_secrets: list[str] = []
_identities: set[str] = set()
_shown: dict[str, re.Pattern[str]] = {}
"""Secret → the registered identities containing it, which are shown as they are."""


def add_secrets(values: Iterable[str]) -> None:
    """Register values (passwords, tokens) that must never appear in a log line."""
    for value in values:
        if value and len(value) >= 3 and value not in _secrets:
            _secrets.append(value)
    _secrets.sort(key=len, reverse=True)
    _index_identities()


def add_identities(values: Iterable[str]) -> None:
    """Register user names: they are shown even where a secret's value is (part of) one
    (RabbitMQ's ``guest:guest``).  Masking such a name would not keep the password
    secret, it would tell every reader of the log that this name is a password."""
    _identities.update(v for v in values if v)
    _index_identities()


def _index_identities() -> None:
    _shown.clear()
    for secret in _secrets:
        names = sorted((i for i in _identities if secret in i), key=len, reverse=True)
        if names:
            _shown[secret] = re.compile("|".join(map(re.escape, names)))


def redact(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with URL passwords and registered secrets (and ``extra`` ones) replaced by
    ``***``, registered identities excepted (:func:`add_identities`)."""
    text = _URL_PASSWORD.sub(r"\g<scheme>\g<user>:***@", text)
    more = sorted((s for s in extra if s and len(s) >= 3), key=len, reverse=True)
    for secret in [*_secrets, *more] if more else _secrets:
        if secret in text:
            names = _shown.get(secret)
            text = (text.replace(secret, "***") if names is None
                    else _mask_around(text, secret, names))
    return text


def _mask_around(text: str, secret: str, names: re.Pattern[str]) -> str:
    """``text`` with ``secret`` masked everywhere but inside the identities ``names``."""
    out, pos = [], 0
    for found in names.finditer(text):
        out += [text[pos:found.start()].replace(secret, "***"), found.group()]
        pos = found.end()
    out.append(text[pos:].replace(secret, "***"))
    return "".join(out)


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    """``{"ts": ..., "level": ..., "logger": ..., "msg": ..., <fields>}``."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        doc.update(_fields(record))
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return redact(orjson.dumps(doc, default=str).decode())


class KeyValueFormatter(logging.Formatter):
    """``ts=... level=... logger=... msg="..." key=value ...``."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [
            "ts=" + time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            f"level={record.levelname.lower()}",
            f"logger={record.name}",
            f"msg={_quote(record.getMessage())}",
        ]
        parts += [f"{k}={_quote(str(v))}" for k, v in _fields(record).items()]
        if record.exc_info:
            parts.append(f"exception={_quote(self.formatException(record.exc_info))}")
        return redact(" ".join(parts))


def _quote(value: str) -> str:
    if value and not any(c in value for c in ' "=\n\t'):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class ProtonSocketErrors(logging.Filter):
    """proton's "Couldn't send/recv" lines as WARNING, not ERROR.

    proton's I/O handler logs a failed socket read or write of an AMQP 1.0 connection
    (the broker restarted, the network dropped) as an error; the connection's end is what
    matters, and the bridge logs it and reconnects (``bridge.amqp10.connection``). An
    operator's ERROR lines stay for what needs a person."""

    _PREFIXES = ("Couldn't send:", "Couldn't recv:")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and str(record.msg).startswith(self._PREFIXES):
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def configure(level: str = "info", fmt: str = "kv") -> None:
    """Route all logging to stderr in ``fmt`` (``json`` or ``kv``) at ``level``."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.captureWarnings(True)  # warnings become log lines too (one format per stream)
    proton = logging.getLogger("proton")
    proton.setLevel(max(root.level, logging.WARNING))
    if not any(isinstance(f, ProtonSocketErrors) for f in proton.filters):
        proton.addFilter(ProtonSocketErrors())


_WARN_KEYS_MAX = 4096
"""Keys a :class:`WarnLimiter` remembers at most (quiet ones are forgotten first)."""


class WarnLimiter:
    """At most one line per key every ``interval`` seconds; counts what it held back."""

    def __init__(self, interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self._last: dict[Any, float] = {}
        self._held: dict[Any, int] = {}

    def allow(self, key: Any) -> int | None:
        """None: stay quiet (counted); else log now, and the number held back since the
        last line for ``key``."""
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.interval:
            self._held[key] = self._held.get(key, 0) + 1
            return None
        if len(self._last) >= _WARN_KEYS_MAX:
            self._forget(now)
        self._last[key] = now
        return self._held.pop(key, 0)

    def _forget(self, now: float) -> None:
        for key, last in list(self._last.items()):
            if now - last >= self.interval:
                del self._last[key]
                self._held.pop(key, None)


class LastSeen:
    """The last value logged per key, so that only what changed is logged again; a key
    missing from a round is forgotten — routes made and dropped on demand (a façade's
    temporary queues) would otherwise stay for the life of the process."""

    def __init__(self) -> None:
        self._last: dict[Any, Any] = {}

    def changed(self, items: Iterable[tuple[Any, Any]], *, all_of_them: bool = False
                ) -> list[tuple[Any, Any]]:
        """A round: ``items`` are every key's value now; returns those that changed since
        the last round (new keys included; every one with ``all_of_them``)."""
        last, now, changed = self._last, {}, []
        for key, value in items:
            now[key] = value
            if all_of_them or key not in last or last[key] != value:
                changed.append((key, value))
        self._last = now
        return changed

    def __len__(self) -> int:
        return len(self._last)


class RateLimited:
    """At most one log line per ``interval`` seconds for each kind of event.

    For what hostile or broken peers can trigger at will (a refused connection, a
    handshake that never completes, an ``accept()`` that fails): the first event logs
    at once, the ones within the next ``interval`` seconds are only counted, and the
    next line that gets through says how many were left out (``suppressed=N`` and in
    the text), so a flood of bad clients costs one line per interval, not one per
    client.  The events are still counted in full by the caller's metrics.  Used on
    one thread (the event loop); ``clock`` is for tests.
    """

    def __init__(self, logger: logging.Logger, interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.limiter = WarnLimiter(interval, clock)

    def log(self, level: int, key: str, msg: str, *args: Any,
            extra: dict[str, Any] | None = None) -> bool:
        """Log ``msg % args`` unless a line of kind ``key`` went out less than
        ``interval`` seconds ago (then only count it); True if it was logged."""
        suppressed = self.limiter.allow(key)
        if suppressed is None:
            return False
        if suppressed:
            msg += f" ({suppressed} more like it since the last such line not logged)"
        self.logger.log(level, msg, *args, extra={**(extra or {}), "suppressed": suppressed})
        return True

    def warning(self, key: str, msg: str, *args: Any,
                extra: dict[str, Any] | None = None) -> bool:
        """:meth:`log` at WARNING."""
        return self.log(logging.WARNING, key, msg, *args, extra=extra)
