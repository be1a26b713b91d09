"""SASL for connection.start-ok / secure / secure-ok: ANONYMOUS, PLAIN, EXTERNAL.

Client side: :class:`ClientCredentials` picks a mechanism from the server's list
and produces the initial response (and answers challenges).  Server side: an
:class:`Authenticator` offers mechanisms and runs one :class:`ServerMechanism`
per connection; a mechanism may issue challenges (``secure``) before it
succeeds or fails.  Nothing here does I/O.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol


class AuthenticationError(Exception):
    """Credentials were refused (the server closes the connection)."""


@dataclass(frozen=True, slots=True)
class Credentials:
    """A user name and password (SASL PLAIN) left for the application to check."""

    user: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Step:
    """One server-side SASL step: a challenge to send, a finished outcome, or credentials
    the application checks (``deferred``)."""

    challenge: bytes | None = None
    """Non-None: send connection.secure with this challenge and wait for secure-ok."""
    identity: str | None = None
    """The authenticated identity once done (None while challenging)."""
    deferred: Credentials | None = None
    """Non-None: the application checks these and answers with
    ``Connection.finish_authentication`` (the engine emits ``CredentialsReceived``)."""


class ServerMechanism(Protocol):
    """One SASL exchange on the server side."""

    def start(self, response: bytes) -> Step:
        """Handle the initial response from start-ok."""

    def step(self, response: bytes) -> Step:
        """Handle a secure-ok response."""


class Authenticator(Protocol):
    """Server-side pluggable authentication."""

    def mechanisms(self, external_identity: str | None) -> list[str]:
        """Mechanism names to offer, best first; ``external_identity`` is the TLS peer."""

    def mechanism(self, name: str, external_identity: str | None) -> ServerMechanism | None:
        """A fresh exchange for ``name``, or None if it is not offered."""


class _Anonymous:
    def start(self, response: bytes) -> Step:
        return Step(identity="anonymous")

    def step(self, response: bytes) -> Step:
        raise AuthenticationError("ANONYMOUS takes no challenge response")


class _Plain:
    def __init__(self, check: Callable[[str, str], bool] | None) -> None:
        self._check = check
        """None: hand the credentials to the application (Step.deferred)."""

    def start(self, response: bytes) -> Step:
        if not response:
            return Step(challenge=b"")  # RFC 4616: empty initial response → empty challenge
        return self.step(response)

    def step(self, response: bytes) -> Step:
        parts = response.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationError("malformed PLAIN response")
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if authzid and authzid != user:
            raise AuthenticationError("PLAIN authorization identity differs from the user")
        if self._check is None:
            return Step(deferred=Credentials(user, password))
        if not self._check(user, password):
            raise AuthenticationError(f"bad credentials for {user!r}")
        return Step(identity=user)


class _External:
    def __init__(self, identity: str) -> None:
        self._identity = identity

    def start(self, response: bytes) -> Step:
        wanted = response.decode("utf-8", "replace")
        if wanted and wanted != self._identity:
            raise AuthenticationError(f"EXTERNAL authzid {wanted!r} is not {self._identity!r}")
        return Step(identity=self._identity)

    def step(self, response: bytes) -> Step:
        raise AuthenticationError("EXTERNAL takes no challenge response")


class SimpleAuthenticator:
    """ANONYMOUS (if allowed), PLAIN against a user table or a check function,
    and EXTERNAL when the transport has authenticated a TLS client certificate.

    With ``defer``, PLAIN is offered when ``users`` is given but its credentials are
    handed to the application instead of checked here (for checks too slow for an
    event loop: the application runs them elsewhere and answers the connection).
    """

    def __init__(self, users: Mapping[str, str] | Callable[[str, str], bool] | None = None, *,
                 anonymous: bool = True, external: bool = True, defer: bool = False) -> None:
        self._anonymous = anonymous
        self._external = external
        self._defer = defer
        if users is None:
            self._check: Callable[[str, str], bool] | None = None
        elif callable(users):
            self._check = users
        else:
            table = dict(users)
            self._check = lambda u, p: u in table and hmac.compare_digest(
                table[u].encode(), p.encode())

    def mechanisms(self, external_identity: str | None) -> list[str]:
        out = []
        if self._external and external_identity:
            out.append("EXTERNAL")
        if self._check is not None:
            out.append("PLAIN")
        if self._anonymous:
            out.append("ANONYMOUS")
        return out

    def mechanism(self, name: str, external_identity: str | None) -> ServerMechanism | None:
        if name not in self.mechanisms(external_identity):
            return None
        if name == "ANONYMOUS":
            return _Anonymous()
        if name == "PLAIN":
            assert self._check is not None
            return _Plain(None if self._defer else self._check)
        assert external_identity is not None
        return _External(external_identity)


@dataclass(slots=True)
class ClientCredentials:
    """What the client role authenticates with (usually from the URL).

    The mechanism is the first of ``preference`` that the server offers and that
    the credentials allow: EXTERNAL needs ``external`` (a TLS client certificate),
    PLAIN needs ``username``.
    """

    username: str | None = None
    password: str | None = None
    external: bool = False
    preference: tuple[str, ...] = ("EXTERNAL", "PLAIN", "ANONYMOUS")

    def choose(self, offered: list[str]) -> str:
        """The mechanism to use from the server's list; raises AuthenticationError."""
        for mech in self.preference:
            if mech not in offered:
                continue
            if mech == "EXTERNAL" and not self.external:
                continue
            if mech == "PLAIN" and self.username is None:
                continue
            return mech
        raise AuthenticationError(f"no usable SASL mechanism among {offered}")

    def initial_response(self, mechanism: str) -> bytes:
        """The response carried by connection.start-ok."""
        if mechanism == "PLAIN":
            return b"\x00" + (self.username or "").encode() + b"\x00" + (self.password or "").encode()
        if mechanism == "ANONYMOUS":
            return b"anonymous"
        return b""

    def respond(self, mechanism: str, challenge: bytes) -> bytes:
        """Answer a connection.secure challenge."""
        if mechanism == "PLAIN":
            return self.initial_response("PLAIN")
        return b""
