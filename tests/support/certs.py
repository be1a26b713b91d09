"""Throw-away TLS material for tests, made with ``cryptography`` (no openssl command).

>>> ca = CertificateAuthority("test-ca")
>>> server = ca.issue(tmp_path, "server", "localhost")            # DNS:localhost, IP:127.0.0.1
>>> client = ca.issue(tmp_path, "client", "bridge-client", client=True)
>>> expired = ca.issue(tmp_path, "old", "localhost", expired=True)
>>> ca.write(tmp_path / "ca.pem")

Keys are EC P-256 (fast to make); certificates are valid from an hour ago for two
days unless ``expired`` (valid for an hour, ending a day ago).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LOOPBACK = ("localhost", "127.0.0.1")


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key as PEM files."""

    cert: Path
    key: Path
    common_name: str


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class CertificateAuthority:
    """A self-signed CA that issues server and client certificates."""

    def __init__(self, common_name: str = "amqp-bridge-test-ca") -> None:
        self.common_name = common_name
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(_name(common_name))
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()),
                           critical=False)
            .sign(self.key, hashes.SHA256()))

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def write(self, path: Path) -> Path:
        """Write the CA certificate (the trust anchor) as PEM."""
        path.write_bytes(self.pem)
        return path

    def issue(self, directory: Path, name: str, common_name: str, *,
              hosts: Sequence[str] = LOOPBACK, client: bool = False, expired: bool = False,
              key_password: str | None = None) -> Issued:
        """Write ``NAME.pem`` and ``NAME.key`` in ``directory``: a leaf certificate for
        ``common_name`` with ``hosts`` as subjectAltNames (server and/or client use)."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = _now()
        start, end = ((now - dt.timedelta(days=1, hours=1), now - dt.timedelta(days=1))
                      if expired else (now - dt.timedelta(hours=1), now + dt.timedelta(days=2)))
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] if client else \
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                self.key.public_key()), critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(key_password.encode()) if key_password
            else serialization.NoEncryption())
        cert_path, key_path = directory / f"{name}.pem", directory / f"{name}.key"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                               serialization.PrivateFormat.PKCS8, encryption))
        key_path.chmod(0o600)
        return Issued(cert_path, key_path, common_name)


@dataclass(frozen=True)
class Pki:
    """Everything the TLS tests need, in one directory.

    ``authority`` signs ``server`` (CN localhost), ``client`` (CN ``bridge-client``),
    ``expired_server``, ``expired_client`` and ``wrong_host_server`` (SAN
    ``elsewhere.invalid`` only);
    ``other_ca`` (not trusted by anyone) signs ``rogue_server`` and ``rogue_client``.
    """

    directory: Path
    authority: CertificateAuthority
    ca_file: Path
    other_ca_file: Path
    server: Issued
    client: Issued
    expired_server: Issued
    expired_client: Issued
    wrong_host_server: Issued
    rogue_server: Issued
    rogue_client: Issued

    def server_context(self, issued: Issued | None = None, *,
                       client_certs: ssl.VerifyMode = ssl.CERT_OPTIONAL) -> ssl.SSLContext:
        """A server-side context presenting ``issued`` (default: ``server``)."""
        issued = issued or self.server
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(issued.cert, issued.key)
        ctx.load_verify_locations(self.ca_file)
        ctx.verify_mode = client_certs
        return ctx

    def client_context(self, issued: Issued | None = None, *,
                       ca_file: Path | None = None) -> ssl.SSLContext:
        """A client-side context trusting ``ca_file`` (default: the CA), presenting ``issued``."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(ca_file or self.ca_file)
        if issued is not None:
            ctx.load_cert_chain(issued.cert, issued.key)
        return ctx


def make_pki(directory: Path, *, client_cn: str = "bridge-client") -> Pki:
    """A CA, a second untrusted CA and the certificates the TLS tests use."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, other = CertificateAuthority("amqp-bridge-test-ca"), CertificateAuthority("rogue-ca")
    return Pki(
        directory=directory,
        authority=ca,
        ca_file=ca.write(directory / "ca.pem"),
        other_ca_file=other.write(directory / "other-ca.pem"),
        server=ca.issue(directory, "server", "localhost"),
        client=ca.issue(directory, "client", client_cn, hosts=(), client=True),
        expired_server=ca.issue(directory, "expired-server", "localhost", expired=True),
        expired_client=ca.issue(directory, "expired-client", client_cn, hosts=(), client=True,
                                expired=True),
        wrong_host_server=ca.issue(directory, "wrong-host-server", "elsewhere.invalid",
                                   hosts=("elsewhere.invalid",)),
        rogue_server=other.issue(directory, "rogue-server", "localhost"),
        rogue_client=other.issue(directory, "rogue-client", client_cn, hosts=(), client=True),
    )
