"""TLS and authentication settings turned into what the two protocol stacks take, and
the wording of the faults they report.

- :func:`client_context` / :func:`server_context`: :class:`ssl.SSLContext` for the
  AMQP 0-10 sockets (legacy client connections, façade listeners).  A file that cannot
  be used raises :class:`TlsFileError` naming the configuration key.
- :func:`proton_domain`: the same client settings as a proton ``SSLDomain``.
- :func:`describe_verify_failure`: why a broker's certificate was refused, asked of
  Python's ``ssl`` (proton only says "certificate verify failed").
- :class:`PermanentFault` and :func:`fault_message`: authentication and certificate
  failures, which retrying cannot cure (``docs/operations.md``, "Security").
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import ClientTls, ListenerTls

PERMANENT_EXIT_CODE = 3
"""Exit status of ``amqp-bridge run`` after a permanent fault."""

HINT_VERIFY = "check tls.ca_file / the broker's certificate"
HINT_HOSTNAME = "check the URL's host or tls.server_name / the broker's certificate"
HINT_CLIENT_CERT = "check tls.cert_file / tls.key_file"
HINT_AUTH = "check the user and password / sasl_mechanisms"


class TlsFileError(ValueError):
    """A TLS file that cannot be used; ``key`` is the configuration key (``ca_file``, ...)."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class PermanentFault:
    """A connection failure retrying cannot cure (a certificate or a login refused)."""

    summary: str
    """``TLS certificate verify failed``, ``TLS handshake refused by the peer`` or
    ``authentication failed``."""
    detail: str
    hint: str

    def message(self, protocol: str, name: str) -> str:
        """The one ERROR line: ``amqp1.0 cloud: TLS certificate verify failed: certificate
        has expired (check tls.ca_file / the broker's certificate)``."""
        return f"{protocol} {name}: {self.summary}: {self.detail} ({self.hint})"


def verify_failure(detail: str) -> PermanentFault:
    """The broker's certificate was refused (``detail``: OpenSSL's verify message)."""
    hint = HINT_HOSTNAME if "hostname" in detail.lower() else HINT_VERIFY
    return PermanentFault("TLS certificate verify failed", detail, hint)


def handshake_refused(detail: str) -> PermanentFault:
    """The peer ended the TLS handshake with an alert (it refused our certificate)."""
    return PermanentFault("TLS handshake refused by the peer", detail, HINT_CLIENT_CERT)


def auth_failure(detail: str) -> PermanentFault:
    """The broker refused the SASL login (``detail``: its words), or no mechanism fits."""
    if detail.lower().startswith("authentication failed: "):
        detail = detail[len("authentication failed: "):]
    return PermanentFault("authentication failed", detail, HINT_AUTH)


def classify_ssl_error(exc: ssl.SSLError) -> PermanentFault | None:
    """A permanent fault for a failed Python handshake, or None (e.g. the peer hung up)."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        return verify_failure(_clean(exc.verify_message or exc.reason or str(exc)))
    reason = (exc.reason or "").lower()
    if "alert" in reason:
        return handshake_refused(_clean(exc.reason.replace("_", " ").lower()))
    return None


def describe_ssl_error(exc: ssl.SSLError) -> str:
    """A short reason for a failed handshake (the verify message when there is one)."""
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return _clean(exc.verify_message)
    return _clean((exc.reason or str(exc)).replace("_", " ").lower())


def _clean(text: str) -> str:
    return text.rstrip(".").replace("sslv3 alert ", "").replace("tlsv1 alert ", "")


def classify_proton_error(name: str, description: str) -> PermanentFault | None:
    """A permanent fault for a proton transport error condition, or None."""
    if name == "amqp:unauthorized-access":
        return auth_failure(description or name)
    if not description.startswith("SSL Failure:"):
        return None
    text = description.removeprefix("SSL Failure:").strip()
    text = text.rsplit("::", 1)[-1] if "::" in text else text  # OpenSSL's "error:...::reason"
    if "certificate verify failed" in text:
        return verify_failure(text)
    if "alert" in text:
        return handshake_refused(_clean(text))
    return None


def describe_verify_failure(tls: ClientTls | None, host: str, port: int,
                            timeout: float = 5.0) -> str | None:
    """Why ``host:port``'s certificate fails verification with these settings, asked of
    Python's ``ssl`` over a fresh connection (None if it did not fail that way)."""
    try:
        ctx = client_context(tls)
        server_name = (tls.server_name if tls is not None else None) or host
        with socket.create_connection((host, port), timeout=timeout) as raw, \
                ctx.wrap_socket(raw, server_hostname=server_name):
            return None
    except ssl.SSLCertVerificationError as exc:
        return _clean(exc.verify_message or str(exc))
    except (OSError, TlsFileError):
        return None


# --- contexts ---------------------------------------------------------------------------


def _password(tls: Any) -> str | None:
    secret = tls.key_password
    return secret.get_secret_value() if secret is not None else None


def _load_chain(ctx: ssl.SSLContext, tls: Any) -> None:
    for key in ("cert_file", "key_file"):
        path = getattr(tls, key)
        if path is None:
            continue
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise TlsFileError(key, f"cannot read {path!r}: {exc.strerror or exc}") from None
    password = _password(tls)
    try:
        ctx.load_cert_chain(tls.cert_file, tls.key_file, password=password or "")
    except ssl.SSLError as exc:
        key_path = tls.key_file or tls.cert_file
        try:
            with open(key_path, "rb") as f:
                encrypted = b"ENCRYPTED" in f.read()
        except OSError:
            encrypted = False
        if "KEY_VALUES_MISMATCH" in str(exc):
            raise TlsFileError("key_file", f"{key_path!r} is not the key of cert_file "
                                           f"{tls.cert_file!r}") from None
        if encrypted and password is None:
            raise TlsFileError("key_password", f"{key_path!r} is encrypted: give key_password"
                               ) from None
        if encrypted:
            raise TlsFileError("key_password", f"does not decrypt {key_path!r}") from None
        raise TlsFileError("cert_file", f"cannot load the certificate and key from "
                                        f"{tls.cert_file!r} / {key_path!r}: "
                                        f"{exc.reason or exc}") from None


def _load_ca(ctx: ssl.SSLContext, path: str) -> None:
    try:
        ctx.load_verify_locations(cafile=path)
    except OSError as exc:
        raise TlsFileError("ca_file", f"cannot read {path!r}: {exc.strerror or exc}") from None
    except ssl.SSLError as exc:
        raise TlsFileError("ca_file", f"no PEM certificates in {path!r} "
                                      f"({exc.reason or exc})") from None


def client_context(tls: ClientTls | None) -> ssl.SSLContext:
    """A client context: the chain is always verified, the host name unless turned off."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls is None or tls.ca_file is None:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    else:
        _load_ca(ctx, tls.ca_file)
    if tls is not None:
        ctx.check_hostname = tls.verify_hostname
        if tls.cert_file:
            _load_chain(ctx, tls)
    return ctx


def server_context(tls: ListenerTls) -> ssl.SSLContext:
    """A listener's context; client certificates as ``client_certs`` says."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_chain(ctx, tls)
    if tls.ca_file:
        _load_ca(ctx, tls.ca_file)
    ctx.verify_mode = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL,
                       "required": ssl.CERT_REQUIRED}[tls.client_certs]
    return ctx


def proton_domain(tls: ClientTls | None) -> Any:
    """A proton client ``SSLDomain`` with the same settings as :func:`client_context`."""
    from proton import SSLDomain

    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    ca = tls.ca_file if tls is not None else None
    mode = SSLDomain.VERIFY_PEER_NAME if tls is None or tls.verify_hostname \
        else SSLDomain.VERIFY_PEER
    if ca is not None:
        domain.set_trusted_ca_db(ca)
        domain.set_peer_authentication(mode, ca)
    else:
        domain.set_peer_authentication(mode)  # the system's default trust store
    if tls is not None and tls.cert_file:
        domain.set_credentials(tls.cert_file, tls.key_file or tls.cert_file, _password(tls))
    return domain


def peer_common_name(cert: dict[str, Any] | None) -> str | None:
    """The subject CN of a verified peer certificate (``getpeercert()``), if any."""
    for rdn in (cert or {}).get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None
