"""Façade passwords: PBKDF2-SHA256 hashes and a constant-time login check.

A hash reads ``pbkdf2-sha256$ITERATIONS$SALT$HASH`` (salt and hash in base64),
the form ``amqp-bridge hash-password`` prints.  :class:`PasswordTable` checks a
PLAIN login against plain or hashed entries so that the answer time does not
tell whether a user exists; it remembers successful logins (as an HMAC under a
per-process key, never the password) so that a client that reconnects does not
cost another key derivation.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
from collections.abc import Mapping

SCHEME = "pbkdf2-sha256"
ITERATIONS = 600_000
"""Default work factor (OWASP's 2023 figure for PBKDF2-HMAC-SHA256; ~0.1 s per check)."""
MIN_ITERATIONS = 10_000
_SALT_BYTES = 16


class HashFormatError(ValueError):
    """A string that starts like a hash but is not a valid one."""


def hash_password(password: str, *, iterations: int = ITERATIONS, salt: bytes | None = None) -> str:
    """The ``pbkdf2-sha256$...`` hash of ``password`` (random salt)."""
    if iterations < MIN_ITERATIONS:
        raise ValueError(f"iterations must be at least {MIN_ITERATIONS}")
    salt = os.urandom(_SALT_BYTES) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"{SCHEME}${iterations}${_b64(salt)}${_b64(digest)}"


def is_hash(value: str) -> bool:
    """True if ``value`` is meant as a hash (starts with ``pbkdf2-sha256$``)."""
    return value.startswith(SCHEME + "$")


def parse_hash(value: str) -> tuple[int, bytes, bytes]:
    """(iterations, salt, digest) of a hash; :class:`HashFormatError` if malformed.

    The error text never contains the value itself."""
    parts = value.split("$")
    if len(parts) != 4 or parts[0] != SCHEME:
        raise HashFormatError(f"not a {SCHEME}$ITERATIONS$SALT$HASH string")
    try:
        iterations = int(parts[1])
        salt = base64.b64decode(parts[2], validate=True)
        digest = base64.b64decode(parts[3], validate=True)
    except ValueError:
        raise HashFormatError(f"malformed {SCHEME} hash (iterations, or base64 salt/hash)") from None
    if iterations < MIN_ITERATIONS or not salt or len(digest) != 32:
        raise HashFormatError(f"{SCHEME} hash needs >= {MIN_ITERATIONS} iterations, a salt and a "
                              f"32-byte hash")
    return iterations, salt, digest


def verify_password(password: str, stored: str) -> bool:
    """Check ``password`` against a hash (constant-time comparison)."""
    iterations, salt, digest = parse_hash(stored)
    candidate = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return hmac.compare_digest(candidate, digest)


class PasswordTable:
    """User name -> plain password or hash; ``check(user, password)`` for SASL PLAIN.

    The answer time never tells whether a user exists:

    - a table of plain passwords only answers every login at once
      (:meth:`quick_check`), known user or not;
    - once any user has a hash, every login costs the same PBKDF2 work: that of the
      most expensive configured hash (:attr:`cost`).  An unknown user's password is
      checked against a dummy hash of that cost, a plain password or a cheaper hash is
      padded up to it.  Only the repeat of a login that succeeded before is answered
      at once (that needs the right password, so it tells nothing new).
    """

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = dict(users)
        costs = [parse_hash(stored)[0] for stored in self._users.values() if is_hash(stored)]
        self.hashed = bool(costs)
        """True if any user has a hash: then every login (bar a repeat) costs :attr:`cost`."""
        self.cost = max(costs, default=ITERATIONS)
        """PBKDF2 iterations every (non-repeated) login check costs when :attr:`hashed`."""
        self._key = os.urandom(32)
        self._verified: dict[str, bytes] = {}
        self._dummy_salt = os.urandom(_SALT_BYTES)
        self._nobody = os.urandom(32).hex()  # what a plain-only table compares unknown users to

    def __bool__(self) -> bool:
        return bool(self._users)

    def check(self, user: str, password: str) -> bool:
        """True if ``password`` is ``user``'s; unknown users cost as much as known ones.

        A PBKDF2 computation (about 0.1 s at the default iterations) unless
        :meth:`quick_check` has the answer: run it off the event loop."""
        quick = self.quick_check(user, password)
        return quick if quick is not None else self.verify(user, password)

    def verify(self, user: str, password: str) -> bool:
        """The PBKDF2 part of :meth:`check`, for when :meth:`quick_check` had no answer
        (remembers a success).  Always :attr:`cost` iterations, whoever ``user`` is."""
        stored = self._users.get(user)
        if stored is not None and is_hash(stored):
            iterations, salt, digest = parse_hash(stored)
            candidate = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
            ok = hmac.compare_digest(candidate, digest)
            self._pad(password, self.cost - iterations)
        else:  # unknown, or a plain password among hashes: the same work as a hash
            self._pad(password, self.cost)
            ok = stored is not None and hmac.compare_digest(stored.encode(), password.encode())
        if ok:
            self._verified[user] = self._tag(password)
        return ok

    def quick_check(self, user: str, password: str) -> bool | None:
        """:meth:`check`'s answer when it costs microseconds, else None (it needs PBKDF2).

        Plain passwords only: every login, known user or not.  With hashes: only the
        repeat of a login verified before (True); never a refusal, so an unknown user is
        never answered faster than a known one."""
        if not self.hashed:
            stored = self._users.get(user)
            ok = hmac.compare_digest((self._nobody if stored is None else stored).encode(),
                                     password.encode())
            return ok and stored is not None
        known = self._verified.get(user)
        if known is not None and hmac.compare_digest(known, self._tag(password)):
            return True
        return None

    def _pad(self, password: str, iterations: int) -> None:
        """PBKDF2 work that only makes a check cost what the others cost."""
        if iterations > 0:
            hashlib.pbkdf2_hmac("sha256", password.encode(), self._dummy_salt, iterations)

    def _tag(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode(), hashlib.sha256).digest()


def read_users_file(path: str) -> dict[str, str]:
    """``name:hash`` lines (``#`` comments and blank lines ignored); raises ValueError
    naming the line for a malformed one, OSError if the file cannot be read."""
    users: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, sep, stored = text.partition(":")
            if not sep or not name:
                raise ValueError(f"line {n}: expected NAME:{SCHEME}$...")
            if not is_hash(stored):
                raise ValueError(f"line {n} (user {name!r}): only {SCHEME} hashes are allowed "
                                 f"in a users file (make one with 'amqp-bridge hash-password')")
            try:
                parse_hash(stored)
            except HashFormatError as exc:
                raise ValueError(f"line {n} (user {name!r}): {exc}") from None
            if name in users:
                raise ValueError(f"line {n}: user {name!r} appears twice")
            users[name] = stored
    return users


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
