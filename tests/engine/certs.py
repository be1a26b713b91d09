"""Throw-away TLS material for the engine's loopback tests (see :mod:`tests.support.certs`)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from tests.support.certs import CertificateAuthority


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def server_context(self, require_client_cert: bool = False) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.server_cert, self.server_key)
        ctx.load_verify_locations(self.ca)
        ctx.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
        return ctx

    def client_context(self, with_cert: bool = False) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(self.ca)
        if with_cert:
            ctx.load_cert_chain(self.client_cert, self.client_key)
        return ctx


def make_certs(directory: Path) -> Certs:
    """A CA, a server certificate for localhost/127.0.0.1 and a client one (CN bridge-client)."""
    ca = CertificateAuthority("test-ca")
    server = ca.issue(directory, "server", "localhost")
    client = ca.issue(directory, "client", "bridge-client")
    return Certs(ca.write(directory / "ca.pem"), server.cert, server.key, client.cert, client.key)


def peer_common_name(sock: object) -> str | None:
    """The CN of a TLS socket's verified client certificate, if any."""
    if not isinstance(sock, ssl.SSLSocket):
        return None
    cert = sock.getpeercert()
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None
