"""Client-side SASL for connection.start-ok: PLAIN, AMQPLAIN and EXTERNAL.

:class:`ClientCredentials` picks the first of its configured mechanisms that the
server offers and produces the start-ok response.  EXTERNAL (the TLS client
certificate is the identity) is used only when configured.  AMQPLAIN's response
is a field table without its length prefix, encoded by pamqp.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pamqp import encode


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


__all__ = ["AuthenticationError", "ClientCredentials"]
