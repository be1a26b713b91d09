"""SASL for connection.start-ok: PLAIN, AMQPLAIN and EXTERNAL, both sides.

Client side: :class:`ClientCredentials` picks the first of its configured
mechanisms that the server offers and produces the start-ok response.  EXTERNAL
(the TLS client certificate is the identity) is used only when configured.
AMQPLAIN's response is a field table without its length prefix, encoded by pamqp.

Server side: :func:`offered_mechanisms` is what connection.start proposes
(EXTERNAL only when the transport authenticated a TLS client certificate) and
:func:`read_response` turns a start-ok response into :class:`LoginAttempt` — the
engine does not check passwords: it hands the attempt to the application
(``CredentialsReceived``), which answers ``Connection.finish_authentication``.
None of the three mechanisms needs a challenge (connection.secure).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pamqp import encode

from .tables import TableError, decode_table


class AuthenticationError(Exception):
    """No usable mechanism, or the server refused the login."""


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    """Who we log in as, and with which mechanisms (preference order)."""

    username: str = "guest"
    password: str = field(default="guest", repr=False)
    mechanisms: tuple[str, ...] = ("PLAIN", "AMQPLAIN")
    """Mechanisms we may use, best first; add ``"EXTERNAL"`` to log in with the TLS
    client certificate."""

    def choose(self, offered: list[str]) -> str:
        """The mechanism to use among those the server offered."""
        for mech in self.mechanisms:
            if mech in offered:
                return mech
        raise AuthenticationError(f"no usable SASL mechanism: the server offers "
                                  f"{' '.join(offered) or 'none'}, we allow "
                                  f"{' '.join(self.mechanisms)}")

    def response(self, mechanism: str) -> str:
        """The start-ok response for ``mechanism`` (pamqp carries it as a str)."""
        if mechanism == "PLAIN":
            return f"\0{self.username}\0{self.password}"
        if mechanism == "EXTERNAL":
            return ""
        if mechanism == "AMQPLAIN":
            table = encode.field_table({"LOGIN": self.username, "PASSWORD": self.password})[4:]
            try:
                return table.decode("utf-8")
            except UnicodeDecodeError:
                raise AuthenticationError("AMQPLAIN cannot carry these credentials "
                                          "(pamqp sends the response as UTF-8 text); "
                                          "use PLAIN") from None
        raise AuthenticationError(f"unsupported SASL mechanism {mechanism}")


SERVER_MECHANISMS = ("PLAIN", "AMQPLAIN", "EXTERNAL")
"""The mechanisms the server role understands."""


@dataclass(frozen=True, slots=True)
class LoginAttempt:
    """What a client presented in start-ok (server role)."""

    mechanism: str
    user: str
    """The user name (PLAIN / AMQPLAIN), or the TLS client identity (EXTERNAL)."""
    password: str | None = field(default=None, repr=False)
    """None for EXTERNAL."""


def offered_mechanisms(configured: tuple[str, ...], external_identity: str | None) -> list[str]:
    """The mechanisms connection.start proposes: ``configured`` in order, EXTERNAL
    only when the transport has a TLS client identity (and then first)."""
    unknown = [m for m in configured if m not in SERVER_MECHANISMS]
    if unknown:
        raise ValueError(f"unsupported SASL mechanisms {unknown} (known: {SERVER_MECHANISMS})")
    out = [m for m in configured if m != "EXTERNAL"]
    if external_identity and "EXTERNAL" in configured:
        out.insert(0, "EXTERNAL")
    return out


def _text(raw: bytes, what: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AuthenticationError(f"the {what} is not UTF-8") from None


def read_response(mechanism: str, response: bytes, external_identity: str | None) -> LoginAttempt:
    """The login a start-ok ``response`` carries (``AuthenticationError`` if malformed)."""
    if mechanism == "PLAIN":  # RFC 4616: [authzid] NUL authcid NUL passwd
        parts = response.split(b"\x00")
        if len(parts) != 3:
            raise AuthenticationError("malformed PLAIN response (want authzid NUL user NUL "
                                      "password)")
        authzid, user, password = (_text(p, "PLAIN response") for p in parts)
        if authzid and authzid != user:
            raise AuthenticationError("PLAIN authorization identity differs from the user")
        return LoginAttempt("PLAIN", user, password)
    if mechanism == "AMQPLAIN":  # a field table without its length prefix
        try:
            table = decode_table(response)
        except TableError as exc:
            raise AuthenticationError(f"malformed AMQPLAIN response: {exc}") from exc
        fields = []
        for key in ("LOGIN", "PASSWORD"):
            value = table.get(key)
            if isinstance(value, bytes):  # a long string whose octets are not UTF-8
                value = _text(value, f"AMQPLAIN {key}")
            if not isinstance(value, str):
                raise AuthenticationError(f"AMQPLAIN response lacks a {key} string")
            fields.append(value)
        return LoginAttempt("AMQPLAIN", fields[0], fields[1])
    if mechanism == "EXTERNAL":
        if not external_identity:
            raise AuthenticationError("EXTERNAL without a TLS client identity")
        wanted = _text(response, "EXTERNAL authorization identity")
        if wanted and wanted != external_identity:
            raise AuthenticationError(f"EXTERNAL authorization identity {wanted!r} is not "
                                      f"the certificate's {external_identity!r}")
        return LoginAttempt("EXTERNAL", external_identity)
    raise AuthenticationError(f"unsupported SASL mechanism {mechanism!r}")


__all__ = ["SERVER_MECHANISMS", "AuthenticationError", "ClientCredentials", "LoginAttempt",
           "offered_mechanisms", "read_response"]
