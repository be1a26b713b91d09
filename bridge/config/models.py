"""What a valid configuration is: the pydantic models of every key, and the checks
across keys (a route's endpoints name existing connections or listeners of a fitting
protocol; TLS files are readable and their keys match). Each problem names its key path.
"""

from __future__ import annotations

import importlib.util
import os
import random
from typing import Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    field_validator,
    model_validator,
)

from mappings.cloudevents.template import EventTemplate
from pipeline.bridge_api import TapConfig  # imports neither pyarrow nor Spark

from ..ops.logs import redact
from ..security.passwords import HashFormatError, is_hash, parse_hash, read_users_file
from ..security.permissions import Grant, PatternError, Permissions, UserGrant
from ..security.tls import TlsFileError, client_context, server_context

Protocol = Literal["amqp0-10", "amqp0-9-1", "amqp1.0"]
SaslMechanism = Literal["PLAIN", "AMQPLAIN", "ANONYMOUS", "EXTERNAL"]
LEGACY_PROTOCOLS = ("amqp0-10", "amqp0-9-1")
"""Protocols spoken by the bridge's own client engines (the legacy side of a route)."""
UserIdRule = Literal["authenticated", "keep", "carry", "drop"]


class ConfigError(ValueError):
    """Invalid configuration; ``problems`` holds one ``"key.path: reason"`` per issue."""

    def __init__(self, problems: list[str], source: str = "config",
                 secrets: list[str] | None = None) -> None:
        self.problems = [redact(p, secrets or ()) for p in problems]
        super().__init__(f"{source}: " + "; ".join(self.problems))


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Reconnect(_Model):
    """Exponential backoff with jitter between connection attempts."""

    initial_delay: float = Field(0.5, gt=0, description="First retry delay, seconds.")
    max_delay: float = Field(30.0, gt=0, description="Upper bound of the delay, seconds.")
    multiplier: float = Field(2.0, ge=1.0, description="Delay growth per failed attempt.")
    jitter: float = Field(0.2, ge=0, le=1, description="Random +/- fraction applied to each delay.")

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (exponential, with jitter)."""
        delay = min(self.max_delay, self.initial_delay * self.multiplier ** min(failures, 32))
        return max(0.0, delay * (1 + random.uniform(-self.jitter, self.jitter)))


class ClientTls(_Model):
    """TLS for an outgoing connection (its URLs must be ``amqps://``)."""

    ca_file: str | None = Field(
        None, description="PEM file of the CAs that sign the broker's certificate "
                          "(default: the system's trusted CAs).")
    cert_file: str | None = Field(
        None, description="PEM client certificate (chain) to present; needed for SASL EXTERNAL.")
    key_file: str | None = Field(
        None, description="PEM private key of cert_file (default: read from cert_file).")
    key_password: SecretStr | None = Field(
        None, description="Password of an encrypted key_file (a secret: use ${ENV} or "
                          "${file:/path}).")
    verify_hostname: bool = Field(
        True, description="Check that the broker's certificate names the host connected to "
                          "(or server_name). The certificate chain is always verified.")
    server_name: str | None = Field(
        None, description="Host name to send (SNI) and to expect in the broker's certificate, "
                          "instead of the URL's host.")

    @model_validator(mode="after")
    def _key_needs_cert(self) -> ClientTls:
        if self.key_file and not self.cert_file:
            raise ValueError("key_file needs cert_file")
        return self


class Connection(_Model):
    """An outgoing connection to a broker."""

    protocol: Protocol = Field(description="amqp0-10 (qpidd, Qpid Broker-J), amqp0-9-1 "
                               "(RabbitMQ's native protocol) or amqp1.0.")
    url: str = Field(description="amqp://[user:password@]host[:port][/vhost] or amqps://... "
                     "(amqp0-9-1: the vhost is the URL's path, percent-encoded as RabbitMQ's "
                     "URI spec says: amqp://user:pass@host:5672/%2F is the vhost '/', which "
                     "is also the default; the port defaults to 5672, amqps to 5671).")
    failover: list[str] = Field(default_factory=list, description="Further URLs tried in order.")
    heartbeat: float = Field(30.0, ge=0, description="Heartbeat interval, seconds (0: off). "
                             "AMQP 0-9-1: whole seconds (rounded, at least 1), the lower of "
                             "this and the broker's proposal. AMQP 1.0: the idle timeout, at least 2 (proton announces half "
                             "of it, and brokers such as RabbitMQ send heartbeats only "
                             "every second).")
    reconnect: Reconnect = Field(default_factory=Reconnect,
                                 description="Backoff between connection attempts.")
    connect_timeout: float = Field(
        30.0, gt=0,
        description="AMQP 0-10 and 0-9-1: seconds a connection attempt has from its TCP "
                    "connect to the end of the opening handshake (TLS and login included); "
                    "an attempt still not open then is abandoned (logged at WARNING, "
                    "event connect_timeout) and retried with the reconnect backoff, so a "
                    "broker or network that accepts the connection but never answers cannot "
                    "hold it for good.")
    session_timeout: int = Field(
        30, ge=0, le=86400,
        description="AMQP 0-10 only: seconds the broker is asked to keep each route's session "
                    "after a transport loss, so the bridge resumes it without redelivery "
                    "(0: no resume; in-flight messages are redelivered instead).")
    tls: ClientTls | None = Field(
        None, description="TLS settings; amqps:// URLs without this block use TLS with the "
                          "system's CAs and hostname verification.")
    max_connections: int = Field(
        16, ge=1, le=1024,
        description="AMQP 1.0 only: connections the bridge may open to the broker for this "
                    "connection's links. Every link has a session of its own and brokers "
                    "bound the sessions of a connection (RabbitMQ 4: 64); a link for which "
                    "the open connections have no session left goes on an extra connection "
                    "with the same settings (named NAME#2, NAME#3… in logs and metrics), "
                    "closed again once no link has used it for 10 s. At the bound, links "
                    "wait for a session (WARNING session_limit). 1: one connection, as "
                    "before.")
    sasl_mechanisms: list[SaslMechanism] | None = Field(
        None, min_length=1,
        description="SASL mechanisms the bridge may use, in order of preference (default: "
                    "PLAIN if the URL has a user, else EXTERNAL if tls.cert_file is set, "
                    "else ANONYMOUS). amqp0-9-1 allows PLAIN, AMQPLAIN and EXTERNAL "
                    "(ANONYMOUS is not a 0-9-1 mechanism, so such a connection needs a user "
                    "in its URLs or tls.cert_file); AMQPLAIN is amqp0-9-1 only.")

    @model_validator(mode="after")
    def _protocol_options(self) -> Connection:
        if self.protocol == "amqp0-9-1":
            if "ANONYMOUS" in self.mechanisms:
                raise ValueError("sasl_mechanisms: ANONYMOUS is not an AMQP 0-9-1 mechanism "
                                 "(RabbitMQ offers PLAIN, AMQPLAIN and EXTERNAL): put a user "
                                 "in the URL, or set tls.cert_file for EXTERNAL")
        elif "AMQPLAIN" in self.mechanisms:
            raise ValueError(f"sasl_mechanisms: AMQPLAIN is an AMQP 0-9-1 mechanism, not "
                             f"one of {self.protocol}")
        if self.protocol == "amqp1.0" and "connect_timeout" in self.model_fields_set:
            raise ValueError("connect_timeout: AMQP 0-10 and 0-9-1 only (an amqp1.0 "
                             "connection's attempts are proton's)")
        if self.protocol != "amqp1.0" and "max_connections" in self.model_fields_set:
            raise ValueError(f"max_connections: AMQP 1.0 only (an {self.protocol} "
                             f"connection's sessions are not bounded this way)")
        if self.protocol != "amqp0-10" and "session_timeout" in self.model_fields_set:
            raise ValueError(f"session_timeout: AMQP 0-10 only (an {self.protocol} "
                             f"connection has no sessions to resume)")
        return self

    @model_validator(mode="after")
    def _idle_timeout(self) -> Connection:
        if self.protocol == "amqp1.0" and 0 < self.heartbeat < 2:
            raise ValueError(f"heartbeat: {self.heartbeat:g}s is too short for AMQP 1.0: proton "
                             f"announces half of it as its idle timeout, and the broker's "
                             f"heartbeats (RabbitMQ: about one a second) would not keep the "
                             f"connection alive; use 2 or more (or 0: off)")
        return self

    @model_validator(mode="after")
    def _tls_consistency(self) -> Connection:
        plain = [redact_url(u) for u in [self.url, *self.failover] if u.startswith("amqp://")]
        if self.tls is not None and plain:
            raise ValueError(f"a 'tls' block needs amqps:// URLs, not {', '.join(plain)}")
        if "EXTERNAL" in self.mechanisms and (self.tls is None or not self.tls.cert_file):
            raise ValueError("sasl_mechanisms: EXTERNAL needs tls.cert_file (a client certificate)")
        return self

    @property
    def mechanisms(self) -> list[str]:
        """The SASL mechanisms to allow, best first (configured or derived)."""
        if self.sasl_mechanisms:
            return list(self.sasl_mechanisms)
        if urlsplit(self.url).username:
            return ["PLAIN"]
        if self.tls is not None and self.tls.cert_file:
            return ["EXTERNAL"]
        return ["ANONYMOUS"]

    @property
    def login_user(self) -> str | None:
        """The user the bridge logs in as: the URLs' user name when every URL has the same
        one and only PLAIN (or AMQPLAIN) may be used; else None (not known: anonymous, EXTERNAL, a
        choice of mechanisms, or failover URLs with other users)."""
        if not self.mechanisms or any(m not in ("PLAIN", "AMQPLAIN") for m in self.mechanisms):
            return None
        names = {urlsplit(u).username for u in [self.url, *self.failover]}
        if len(names) != 1:
            return None
        name = names.pop()
        return unquote(name) if name else None

    @field_validator("url", "failover")
    @classmethod
    def _check_urls(cls, value: str | list[str]) -> str | list[str]:
        for url in [value] if isinstance(value, str) else value:
            parts = urlsplit(url)
            if parts.scheme not in ("amqp", "amqps") or not parts.hostname:
                raise ValueError(f"{redact_url(url)!r} is not an amqp:// or amqps:// URL with a host")
            try:
                parts.port  # noqa: B018 - validates the port
            except ValueError as exc:
                raise ValueError(f"{redact_url(url)!r}: {exc}") from None
        return value


class ListenerTls(_Model):
    """TLS for a façade listener: every accepted connection must start with a TLS handshake."""

    cert_file: str = Field(description="PEM server certificate (chain) the listener presents.")
    key_file: str | None = Field(
        None, description="PEM private key of cert_file (default: read from cert_file).")
    key_password: SecretStr | None = Field(
        None, description="Password of an encrypted key_file (a secret: use ${ENV} or "
                          "${file:/path}).")
    ca_file: str | None = Field(
        None, description="PEM file of the CAs whose client certificates are accepted "
                          "(needed unless client_certs is none).")
    client_certs: Literal["none", "optional", "required"] = Field(
        "none", description="Whether clients present a certificate: none (not asked), optional "
                            "(verified if presented) or required. A verified certificate "
                            "allows SASL EXTERNAL as the certificate's common name (CN).")

    @model_validator(mode="after")
    def _ca_for_clients(self) -> ListenerTls:
        if self.client_certs != "none" and not self.ca_file:
            raise ValueError(f"client_certs: {self.client_certs} needs ca_file")
        return self


class PermissionPatterns(_Model):
    """What a user may do (RabbitMQ's model: docs/operations.md, "Who may do what")."""

    configure: str = Field(
        "", description="Regular expression over the exchange and queue names the user may "
                        "declare and delete (searched in the name as RabbitMQ does: anchor "
                        "it with ^...$; '' allows nothing, '.*' everything).")
    write: str = Field(
        "", description="Regular expression over the exchanges the user may publish to (the "
                        "default exchange is named amq.default) and the queues it may bind.")
    read: str = Field(
        "", description="Regular expression over the queues the user may consume from, get "
                        "from and purge, and the exchanges it may bind queues to.")

    @model_validator(mode="after")
    def _valid_patterns(self) -> PermissionPatterns:
        self.grant()
        return self

    def grant(self) -> Grant:
        """The compiled patterns."""
        try:
            return Grant(self.configure, self.write, self.read)
        except PatternError as exc:
            raise ValueError(str(exc)) from None


class UserPermissions(PermissionPatterns):
    """A user's permissions, optionally different per virtual host (AMQP 0-9-1)."""

    vhosts: dict[str, PermissionPatterns] = Field(
        default_factory=dict,
        description="AMQP 0-9-1 only: virtual host -> the user's configure, write and read "
                    "there (the patterns above apply in any other virtual host).")

    def user_grant(self) -> UserGrant:
        """The user's grant, per virtual host."""
        return UserGrant(self.grant(), {v: p.grant() for v, p in self.vhosts.items()})


ListenerProtocol = Literal["amqp0-10", "amqp0-9-1"]
TopologyBroker = Literal["rabbitmq4", "rabbitmq3", "qpidd"]


class ListenerTopology(_Model):
    """The topology mode of a listener (docs/topology.md): names no route configures are
    the AMQP 1.0 broker's, declared, bound, published to and consumed from there."""

    connection: str = Field(description="The AMQP 1.0 connection (one of ``connections``) "
                                        "whose broker holds the exchanges, queues and "
                                        "bindings the listener's clients declare, and "
                                        "takes their publishes and feeds their consumers.")
    broker: TopologyBroker = Field(description="What that broker is, so how declares reach "
                                               "it: rabbitmq4 (RabbitMQ 4.x: its management "
                                               "over AMQP 1.0, its v2 addresses and "
                                               "anonymous-terminus publishing); rabbitmq3 "
                                               "(RabbitMQ 3.x: declares over declare_via, "
                                               "its v1 addresses, a sender per address; an "
                                               "amqp0-9-1 listener's only, so far); qpidd "
                                               "(qpidd's AMQP 1.0 side: QMF2 over AMQP 1.0, "
                                               "plain addresses, the routing key as the "
                                               "subject; an amqp0-10 listener's only, so "
                                               "far).")
    declare_via: str | None = Field(
        None, description="An amqp0-9-1 connection (one of ``connections``) to the same "
                          "RabbitMQ node, over whose channel the declares, bindings, deletes "
                          "and purges go (RabbitMQ 3.x's AMQP 1.0 cannot make them). Required "
                          "for rabbitmq3; with rabbitmq4 it replaces the management over "
                          "AMQP 1.0.")
    max_publish_links: int = Field(
        100, ge=1, le=10_000,
        description="rabbitmq3: AMQP 1.0 senders the listener's publishes may use at once "
                    "(one per exchange, made on first use, shared by the "
                    "clients; idle ones are closed). Past it, when none is idle, a publish "
                    "to another address is refused (basic.nack in confirm mode, else "
                    "channel.close 406).")
    publish_link_idle_timeout: float = Field(
        60.0, gt=0, le=86_400,
        description="rabbitmq3: seconds a sender with nothing in flight stays attached "
                    "after its last publish.")
    local_delivery: bool = Field(
        True, description="amqp0-9-1: a publish to the default exchange whose queue's only "
                          "consumer is a no-ack client of this listener that owns it (an "
                          "exclusive queue, or an exclusive consumer: RPC reply queues, "
                          "direct reply-to) is delivered to it here, without the trip "
                          "through the broker (docs/topology.md, \"Local delivery\"). "
                          "RabbitMQ 4 only.")
    request_timeout: float = Field(
        10.0, gt=0, le=300,
        description="Seconds a declare, bind, delete or purge waits for the broker's "
                    "answer; past it (or while the connection is down) the client's method "
                    "is refused (AMQP 0-9-1: connection.close 506 resource-error).")


class Listener(_Model):
    """A listening socket for legacy AMQP 0-10 or 0-9-1 applications (the façade)."""

    protocol: ListenerProtocol = Field(
        description="What the façade speaks: amqp0-10 (qpid applications) or amqp0-9-1 "
                    "(RabbitMQ applications: pika, kombu, aio-pika, ...).")
    bind: str = Field(description="host:port to listen on.")
    allow_anonymous: bool = Field(False, description="Accept SASL ANONYMOUS logins (AMQP "
                                  "0-10 only: 0-9-1 clients log in with PLAIN, AMQPLAIN or "
                                  "EXTERNAL).")
    virtual_hosts: list[str] | None = Field(
        None, min_length=1,
        description="AMQP 0-9-1 only: the virtual hosts clients may open (another is refused "
                    "with connection.close 530 not-allowed, as RabbitMQ refuses an unknown "
                    "vhost). Default: any virtual host, all serving the same exchanges and "
                    "queues (the listener's routes).")
    users: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="SASL PLAIN logins: user name -> password, or a pbkdf2-sha256$... hash from "
                    "'amqp-bridge hash-password' (passwords from ${ENV} or ${file:/path}).")
    users_file: str | None = Field(
        None, description="File of NAME:pbkdf2-sha256$... lines (hashes only), read at start; "
                          "adds to users.")
    tls: ListenerTls | None = Field(None, description="Accept TLS connections only.")
    topology: ListenerTopology | None = Field(
        None, description="Serve every exchange and queue, not just the routes' names: "
                          "declares, bindings, deletes and purges are the AMQP 1.0 broker's "
                          "(docs/topology.md), a publish to any exchange reaches the "
                          "broker's routing, consumes (0-9-1 basic.consume and basic.get, "
                          "0-10 message.subscribe) work on any queue; routes of the listener "
                          "keep their names. Absent: the listener serves its routes' names "
                          "only.")
    max_pending_logins: int = Field(
        64, ge=1, description="PLAIN logins that may wait for (or be in) a PBKDF2 password "
                              "check on this listener; past it a login is refused at once "
                              "(connection.close 320, 'too many logins waiting on this "
                              "listener; try again later').")
    max_pending_logins_per_peer: int = Field(
        4, ge=1, description="The share of max_pending_logins one client address (an IPv6 "
                             "/64) may use; past it its logins are refused at once ('too "
                             "many logins waiting from this address; try again later'). "
                             "Addresses take turns for the password checks.")
    max_consumers_per_connection: int = Field(
        1000, ge=1, description="Consumers one client connection may hold, each a 1.0 "
                                "link on the route's connection. AMQP 0-9-1: basic.consume, "
                                "a channel's basic.get receiver per queue, a bound temporary "
                                "queue, a cancelled consumer with deliveries unsettled; past "
                                "it the connection is closed with 530 not-allowed ('reached "
                                "maximum (N) of consumers per connection'). AMQP 0-10: "
                                "message.subscribe, a bound temporary queue, a cancelled "
                                "subscription with transfers unsettled, over all the "
                                "connection's sessions; past it the subscribe or bind gets "
                                "execution.exception resource-limit-exceeded ('reached "
                                "maximum (N) of subscriptions per connection').")
    max_consumers_per_user: int | None = Field(
        None, ge=1, description="Consumers (as max_consumers_per_connection counts them) "
                                "all the connections of one login may hold together; past "
                                "it the consume is refused as past "
                                "max_consumers_per_connection ('reached maximum (N) of "
                                "consumers for user U'). Each is a 1.0 link, and the 1.0 "
                                "connection's pool has a session for about 62 per "
                                "connection (RabbitMQ 4; max_connections): without this "
                                "bound one user can hold them all, and every other user's "
                                "new consumers wait until it lets go. Default: no bound "
                                "but the per-connection one.")
    handshake_timeout: float = Field(
        10.0, gt=0, description="Seconds a client has from connecting to a completed login "
                                "(connection.open-ok sent); then its connection is closed "
                                "(docs/operations.md#limits).")
    max_connections: int = Field(
        500, ge=1, description="Client connections the listener holds at once; more are "
                               "refused with connection.close (connection-forced). Keep the "
                               "sum over all listeners well below the process's descriptor "
                               "limit (the bridge raises its soft limit to the hard one at "
                               "start; docs/operations.md#limits).")
    max_connections_per_peer: int = Field(
        100, ge=1, description="Client connections from one IP address at once; more are "
                               "refused like max_connections.")
    max_message_size: int = Field(
        64 << 20, ge=4096, description="Largest message (header and body octets) a client "
                                       "may publish; a larger one closes its connection "
                                       "(AMQP 0-10: framing-error) or, AMQP 0-9-1, its "
                                       "channel (406 precondition-failed, as RabbitMQ) "
                                       "before its body is buffered.")
    max_unread_per_connection: int = Field(
        64 << 20, ge=4096, description="Octets of replies one client connection may leave "
                                       "unread (it keeps sending requests and does not read "
                                       "the answers): past it (or past twice "
                                       "max_message_size, if larger) the connection is "
                                       "closed. Deliveries never get there: the façade "
                                       "stops sending them to a client that does not read.")
    max_buffered_per_connection: int = Field(
        128 << 20, ge=4096, description="Octets of unfinished messages one connection may "
                                        "make the bridge hold (at least max_message_size); "
                                        "past it the connection is closed (AMQP 0-10: "
                                        "framing-error; AMQP 0-9-1: 506 resource-error).")
    max_buffered: int = Field(
        512 << 20, ge=4096, description="Octets of unfinished messages all connections of the "
                                        "listener may make the bridge hold together (at least "
                                        "max_buffered_per_connection); past it the connection "
                                        "holding the most is closed.")
    permissions: dict[str, UserPermissions] | None = Field(
        None, description="Who may do what (docs/operations.md, 'Who may do what'): login "
                          "name -> configure, write and read regular expressions, applied "
                          "to every declare, delete, bind, publish, consume and get, "
                          "configured routes included; a refusal is 0-9-1 channel.close 403 "
                          "ACCESS_REFUSED, 0-10 execution.exception unauthorized-access. A "
                          "user not listed gets default_permissions. Without both keys "
                          "every user may do everything (logged at start).")
    default_permissions: UserPermissions | None = Field(
        None, description="The permissions of a user permissions does not list (default: "
                          "none, if permissions is given).")
    trust_user_id: bool = Field(
        False, description="Accept a message whose user-id is not the publisher's login. "
                           "By default it is refused, as RabbitMQ and qpidd refuse it: "
                           "0-9-1 channel.close 406 PRECONDITION_FAILED, 0-10 "
                           "execution.exception unauthorized-access.")

    @field_validator("bind")
    @classmethod
    def _check_bind(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"{value!r} is not host:port")
        return value

    @field_validator("users")
    @classmethod
    def _check_users(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, password in value.items():
            secret = password.get_secret_value()
            if not name or "\0" in name or "\0" in secret:
                raise ValueError(f"user {name!r}: names must be non-empty, and neither a name "
                                 f"nor a password may contain NUL (the PLAIN separator)")
            if is_hash(secret):
                try:
                    parse_hash(secret)
                except HashFormatError as exc:
                    raise ValueError(f"user {name!r}: {exc}") from None
        return value

    @model_validator(mode="after")
    def _protocol_keys(self) -> Listener:
        if self.protocol == "amqp0-9-1" and self.allow_anonymous:
            raise ValueError("allow_anonymous: AMQP 0-9-1 has no ANONYMOUS login; give users "
                             "(any PLAIN or AMQPLAIN client then needs one of them)")
        if self.protocol == "amqp0-10" and self.virtual_hosts is not None:
            raise ValueError("virtual_hosts: only for an amqp0-9-1 listener")
        if self.protocol == "amqp0-9-1" and self.topology is not None \
                and self.topology.broker == "qpidd":
            raise ValueError("topology.broker: qpidd serves an amqp0-10 listener only so far "
                             "(a 0-9-1 listener's topology: rabbitmq4 or rabbitmq3)")
        if self.protocol == "amqp0-10" and self.topology is not None \
                and self.topology.broker == "rabbitmq3":
            raise ValueError("topology.broker: rabbitmq3 serves an amqp0-9-1 listener only so "
                             "far (the 0-10 façade publishes on the anonymous terminus, which "
                             "RabbitMQ 3.x never answers; a 0-10 listener's topology: "
                             "rabbitmq4 or qpidd)")
        return self

    @model_validator(mode="after")
    def _someone_can_log_in(self) -> Listener:
        certificates = self.tls is not None and self.tls.client_certs != "none"
        if not (self.allow_anonymous or self.users or self.users_file or certificates):
            raise ValueError("nobody can log in: give users (or users_file), allow_anonymous: "
                             "true, or tls.client_certs for SASL EXTERNAL")
        return self

    @model_validator(mode="after")
    def _buffer_bounds_nest(self) -> Listener:
        if self.max_buffered_per_connection < self.max_message_size:
            raise ValueError("max_buffered_per_connection must be at least max_message_size")
        if self.max_buffered < self.max_buffered_per_connection:
            raise ValueError("max_buffered must be at least max_buffered_per_connection")
        if self.max_connections_per_peer > self.max_connections:
            raise ValueError("max_connections_per_peer cannot exceed max_connections")
        return self

    @model_validator(mode="after")
    def _vhosts_for_091(self) -> Listener:
        if self.protocol != "amqp0-9-1":
            entries = [*(self.permissions or {}).items(), ("", self.default_permissions)]
            for user, entry in entries:
                if entry is not None and entry.vhosts:
                    key = f"permissions.{user}" if user else "default_permissions"
                    raise ValueError(f"{key}.vhosts: only for an amqp0-9-1 listener")
        return self

    def permission_table(self) -> Permissions:
        """The listener's permissions (unrestricted when none are configured)."""
        users = None if self.permissions is None else \
            {user: entry.user_grant() for user, entry in self.permissions.items()}
        default = None if self.default_permissions is None else \
            self.default_permissions.user_grant()
        return Permissions(users, default)

    def limits_text(self) -> str:
        """The listener's limits, as ``amqp-bridge check`` prints them."""
        return (f"limits: handshake {self.handshake_timeout:g}s, {self.max_connections} "
                f"connections ({self.max_connections_per_peer} per peer address), messages up "
                f"to {self.max_message_size} bytes, {self.max_buffered_per_connection} bytes "
                f"buffered per connection / {self.max_buffered} per listener")

    def user_table(self) -> dict[str, str]:
        """Every PLAIN login: ``users`` plus ``users_file`` (name -> password or hash)."""
        table = {u: p.get_secret_value() for u, p in self.users.items()}
        if self.users_file:
            table.update(read_users_file(self.users_file))
        return table


class Endpoint(_Model):
    """One side of a route: a connection or listener plus the node on it."""

    connection: str | None = Field(None, description="Name of a connection (one of "
                                   "connection or listener).")
    listener: str | None = Field(None, description="Name of a façade listener (one of "
                                 "connection or listener).")
    queue: str | None = Field(None, description="0-10 or 0-9-1 queue: consumed from on a "
                              "connection (required for a 0-10 or 0-9-1 source); the queue "
                              "façade clients subscribe to on a listener; as a target, "
                              "published to through the default exchange (0-9-1: the "
                              "exchange '' with this queue as routing key).")
    address: str | None = Field(None, description="AMQP 1.0 node address (RabbitMQ: "
                                "/queue/NAME, /exchange/NAME/KEY, /amq/queue/NAME).")
    exchange: str | None = Field(None, description="0-10 or 0-9-1 exchange published to "
                                 "(as a target; '' is the default exchange; a 0-9-1 target "
                                 "needs exchange or queue), or the exchange façade clients publish to; as "
                                 "the target on a listener (without queue): the exchange "
                                 "façade clients bind their own temporary queues to, each "
                                 "subscription consuming from the route's address with "
                                 "{binding_key} filled in.")
    routing_key: str | None = Field(None, description="Routing key for messages published "
                                    "to a 0-10 or 0-9-1 exchange (default: the target "
                                    "queue; else 0-10: the message's subject; 0-9-1: the "
                                    "message's x-amqp-0-9-1.routing-key annotation, else its "
                                    "subject, else RabbitMQ's x-routing-key, else ''). On an "
                                    "amqp0-9-1 listener's exchange (from): "
                                    "the route takes only publishes with this routing key "
                                    "(without it: every key the exchange's keyed routes do "
                                    "not take); a publish no route takes is unroutable "
                                    "(basic.return 312 when mandatory).")
    prefetch: Literal["credit", "window"] | None = Field(
        None, description="How an amqp0-9-1 source (from, on a connection) bounds what "
                          "RabbitMQ delivers. credit (the default): a channel-wide "
                          "basic.qos kept at exactly the 1.0 target's credit (classic "
                          "queues). window: a per-consumer basic.qos of "
                          "max_in_flight.messages, messages beyond the 1.0 credit held in "
                          "the bridge (quorum queues and streams, which refuse a "
                          "channel-wide prefetch; a credit source on such a queue switches "
                          "to window by itself after RabbitMQ's refusal, at the cost of "
                          "one reconnect of its connection).")

    @model_validator(mode="after")
    def _one_owner(self) -> Endpoint:
        if (self.connection is None) == (self.listener is None):
            raise ValueError("give exactly one of 'connection' or 'listener'")
        return self


class CloudEvents(_Model):
    """How a route renders messages as CloudEvents."""

    mode: Literal["binary", "structured"] = Field(
        description="binary: attributes in application-properties; structured: the whole "
                    "event as application/cloudevents+json.")
    prefix: Literal["cloudEvents_", "cloudEvents:"] = Field(
        "cloudEvents_", description="Application-property prefix in binary mode.")
    source: str | None = Field(None, description="Template: creates events from plain messages.")
    type: str | None = Field(None, description="Template of the event type (with source), "
                             "e.g. com.example.order or com.example.{routing_key}.")
    id: str | None = Field(None, description="Template of the event id (default: the "
                           "message-id, else a new UUID).")
    time: Literal["creation_time", "now", "none"] = Field(
        "creation_time", description="Event time: the message's creation time (else now), "
                                     "now, or none.")
    subject: str | None = Field(None, description="Template of the subject attribute.")
    dataschema: str | None = Field(None, description="Template of the dataschema attribute.")
    datacontenttype: str | None = Field(None, description="Data content type (default: the "
                                        "message's content-type).")
    extensions: dict[str, str] = Field(default_factory=dict, description="Extension "
                                       "attribute name -> application property holding "
                                       "its value.")

    @model_validator(mode="after")
    def _template(self) -> CloudEvents:
        if (self.source is None) != (self.type is None):
            raise ValueError("'source' and 'type' go together: give both to create events "
                             "from plain messages, or neither to pass CloudEvents through")
        if self.source is not None:
            self.template()  # validates the patterns and extension names
        return self

    def template(self) -> EventTemplate | None:
        """The event template, or None when only existing CloudEvents are accepted."""
        if self.source is None:
            return None
        fields = self.model_dump(exclude={"mode", "prefix"}, exclude_none=True)
        return EventTemplate(**fields)


class MaxInFlight(_Model):
    """Bound on unsettled messages per route (memory and duplicate bound)."""

    messages: int = Field(1000, ge=1, le=65536,
                          description="Unsettled messages (at most the 0-10 replay buffer, 65536).")
    bytes: int = Field(64 * 1024 * 1024, ge=1, description="Octets of unsettled message bodies.")


class Dedupe(_Model):
    """Duplicate suppression by message-id (optional, per route)."""

    window: int = Field(ge=1, le=1_000_000, description="How many recently delivered "
                        "message-ids are remembered; a message whose id is among them is "
                        "settled at the source without being forwarded again.")


class DeadLetter(_Model):
    """Where rejected or unmappable messages go instead of being rejected at the source."""

    connection: str = Field(description="Name of an AMQP 1.0 connection.")
    address: str | None = Field(None, description="AMQP 1.0 address of the dead-letter node.")
    exchange: str | None = Field(None, description="Not supported yet: dead-letter targets "
                                 "are AMQP 1.0 addresses.")
    routing_key: str | None = Field(None, description="Not supported yet (see exchange).")


class Route(_Model):
    """Messages flow from ``from`` to ``to``."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$", description="Unique route name (logs, "
                      "metrics, archives).")
    source: Endpoint = Field(alias="from", description="Where messages are taken from.")
    target: Endpoint = Field(alias="to", description="Where they are delivered.")
    cloudevents: CloudEvents | None = Field(None, description="Render messages as "
                                            "CloudEvents (optional).")
    dead_letter: DeadLetter | None = Field(None, description="Where rejected or unmappable "
                                           "messages go (default: rejected at the source).")
    max_in_flight: MaxInFlight = Field(default_factory=MaxInFlight, description="Bound on "
                                       "unsettled messages.")
    dedupe: Dedupe | None = Field(None, description="Duplicate suppression by message-id "
                                  "(optional).")
    max_message_size: int | None = Field(
        None, ge=1,
        description="Largest message (its encoded AMQP 1.0 octets) the route forwards to an "
                    "AMQP 1.0 target; a larger one is refused at once — to a façade "
                    "publisher as execution.exception resource-limit-exceeded, else "
                    "rejected at the source with the reason — never retried. Default: the "
                    "max-message-size the 1.0 target announces when the link attaches (none: "
                    "no limit beyond the 0-10 engine's 256 MiB per message).")
    poison_attempts: int = Field(
        3, ge=1, le=100,
        description="Times a message may make the AMQP 1.0 target end the link or session "
                    "(sent alone, after such an end) before it is settled as rejected with "
                    "the target's error: dead-lettered, or rejected at the source "
                    "(docs/semantics.md, 'Poison messages').")
    tap: TapConfig | None = Field(
        None, description="Archive the route's messages as Parquet files (docs/archive.md): "
                          "as received from the source and/or as accepted by the target. "
                          "Needs pyarrow (the 'spark' extra).")
    user_id: UserIdRule = Field(
        "authenticated",
        description="What the target's user-id field may hold (brokers refuse a message whose "
                    "user-id is not the publishing user): authenticated - only the user the "
                    "bridge logs into the target connection as (the user of its URLs; unknown "
                    "for ANONYMOUS or EXTERNAL: never), which a listener target does not check "
                    "(there it is keep); keep - the user-id as it is; carry - never set it; "
                    "drop - never set it and lose it. A user-id the field may not hold (not "
                    "with drop) travels in the annotation x-amqp-0-10.user-id (to AMQP 1.0) or "
                    "the header x-amqp-1.0.user-id (to AMQP 0-10) and is restored on the way "
                    "back where that route's rule allows (docs/mapping.md). An empty user-id is "
                    "no user-id.")
    attach_timeout: float = Field(
        15.0, gt=0, le=3600,
        description="Façade publish routes (from a listener): seconds publishes may wait "
                    "for the route's AMQP 1.0 link while it is not attached (never yet, or "
                    "lost) and the 1.0 connection is up, counted afresh when the connection "
                    "opens again (a broker that is away is waited for, its publishers "
                    "throttled). Past that they are refused: dead-lettered if the route has a "
                    "dead-letter address, else basic.nack (0-9-1 confirm mode), channel.close "
                    "(0-9-1 without confirms: the publish is counted as abandoned and logged "
                    "at ERROR) or execution.exception (0-10); new publishes are refused the "
                    "same way at once until the link attaches (docs/semantics.md, 'A façade "
                    "route whose link is down').")
    _target_login_user: str | None = PrivateAttr(None)
    _dead_letter_login_user: str | None = PrivateAttr(None)

    @property
    def target_login_user(self) -> str | None:
        """The user the bridge logs into the target connection as (None: not known, or a
        listener target); set when the whole configuration is validated."""
        return self._target_login_user

    @property
    def dead_letter_login_user(self) -> str | None:
        """The user the bridge logs into the dead-letter connection as (None: not known, or
        no dead-letter); for the user-id rule of dead-lettered 0-10 messages."""
        return self._dead_letter_login_user

    @property
    def effective_user_id(self) -> str:
        """The user-id rule applied: ``authenticated`` is ``keep`` for a listener target
        (the façade checks no user-id)."""
        if self.user_id == "authenticated" and self.target.listener is not None:
            return "keep"
        return self.user_id


class Metrics(_Model):
    """The operations HTTP server: Prometheus ``/metrics``, ``/healthz`` and ``/readyz``."""

    bind: str = Field("127.0.0.1:9464", description="host:port the HTTP server listens on "
                      "(port 0: any free port, logged at start).")

    @field_validator("bind")
    @classmethod
    def _check_bind(cls, value: str) -> str:
        return _host_port(value)


class Logging(_Model):
    """The bridge's log output (stderr); ``--log-format`` / ``--log-level`` override it."""

    format: Literal["kv", "json"] = Field(
        "kv", description="kv: one line of key=value pairs per event; json: one JSON object "
                          "per line.")
    level: Literal["debug", "info", "warning", "error"] = Field(
        "info", description="Least severe level logged; per-message events are logged at "
                            "debug only.")


class Shutdown(_Model):
    """How the bridge stops on SIGTERM or SIGINT (docs/semantics.md, "Graceful shutdown")."""

    drain_timeout: float = Field(
        30.0, ge=0, le=3600,
        description="Seconds a graceful stop waits for what the routes have taken to be "
                    "forwarded (façade clients stay connected meanwhile, so their confirms "
                    "and completions flow). Past it, façade publishes still unforwarded are "
                    "abandoned (counted in amqp_bridge_publishes_abandoned_total and logged "
                    "at ERROR); messages of a broker source are left to that broker, which "
                    "redelivers them. A second signal stops at once.")


class BridgeConfig(_Model):
    """The whole configuration file."""

    connections: dict[str, Connection] = Field(default_factory=dict, description=
                                               "Outgoing connections to brokers, by name.")
    listeners: dict[str, Listener] = Field(default_factory=dict, description="Façade "
                                           "listeners for legacy 0-10 and 0-9-1 applications, "
                                           "by name.")
    routes: list[Route] = Field(default_factory=list, description="What flows from where to "
                                "where (at least one, unless a listener has a topology).")
    metrics: Metrics | None = Field(
        None, description="Serve metrics and health endpoints over HTTP (absent: no server).")
    logging: Logging = Field(default_factory=Logging, description="Log format and level.")
    shutdown: Shutdown = Field(default_factory=Shutdown, description="Graceful stop.")

    @model_validator(mode="after")
    def _references(self) -> BridgeConfig:
        problems = list(_check_references(self)) + list(_check_topologies(self))
        if not problems:
            problems = _check_files(self)
        if problems:
            raise ValueError("\n".join([REFERENCE_PROBLEMS, *problems]))
        return self

    @model_validator(mode="after")
    def _login_users(self) -> BridgeConfig:
        for route in self.routes:  # references are checked: the connection exists
            target = route.target
            if target.connection is not None:
                route._target_login_user = self.connections[target.connection].login_user
            if route.dead_letter is not None:
                dead_letter = self.connections[route.dead_letter.connection]
                route._dead_letter_login_user = dead_letter.login_user
        return self

    @model_validator(mode="after")
    def _taps(self) -> BridgeConfig:
        problems = list(_check_taps(self))
        if problems:
            raise ValueError("\n".join([REFERENCE_PROBLEMS, *problems]))
        return self

    def protocol_of(self, endpoint: Endpoint | DeadLetter) -> str:
        """The protocol spoken at an endpoint."""
        listener = getattr(endpoint, "listener", None)
        if listener:
            return self.listeners[listener].protocol
        return self.connections[str(endpoint.connection)].protocol


def _host_port(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{value!r} is not host:port")
    return value


def _check_references(cfg: BridgeConfig) -> list[str]:
    out = []
    names: set[str] = set()
    published: dict[tuple[str, str, str | None], int] = {}
    for i, route in enumerate(cfg.routes):
        where = f"routes[{i}]"
        if route.name in names:
            out.append(f"{where}.name: duplicate route name {route.name!r}")
        names.add(route.name)
        out += _check_amqp091_listener(cfg, where, route, published, i)
        for side, ep in (("from", route.source), ("to", route.target)):
            out += _check_endpoint(cfg, f"{where}.{side}", side, ep)
        if route.dead_letter is not None:
            out += _check_endpoint(cfg, f"{where}.dead_letter", "to", route.dead_letter)
        target = route.target
        if target.listener is not None and target.exchange and not target.queue \
                and "{binding_key}" not in (route.source.address or ""):
            out.append(f"{where}.from.address: a route to the exchange of a listener serves "
                       f"the temporary queues clients bind to it; its address needs "
                       f"{{binding_key}} (e.g. /exchange/amq.topic/{{binding_key}})")
    return out


def _check_topologies(cfg: BridgeConfig) -> list[str]:
    """A listener's topology names an AMQP 1.0 connection; with no route at all, some
    listener must have a topology (else the bridge would do nothing)."""
    out = []
    for name, listener in cfg.listeners.items():
        topology = listener.topology
        if topology is None:
            continue
        conn = cfg.connections.get(topology.connection)
        where = f"listeners.{name}.topology.connection"
        if conn is None:
            out.append(f"{where}: no connection named {topology.connection!r} "
                       f"(defined: {', '.join(sorted(cfg.connections)) or 'none'})")
        elif conn.protocol != "amqp1.0":
            out.append(f"{where}: {topology.connection!r} is an {conn.protocol} connection; "
                       f"the topology mode needs an amqp1.0 one")
        via = topology.declare_via
        where = f"listeners.{name}.topology.declare_via"
        if via is None:
            if topology.broker == "rabbitmq3":
                out.append(f"{where}: required for broker rabbitmq3 (RabbitMQ 3.x's AMQP 1.0 "
                           f"cannot declare): an amqp0-9-1 connection to the same node")
        elif via not in cfg.connections:
            out.append(f"{where}: no connection named {via!r} "
                       f"(defined: {', '.join(sorted(cfg.connections)) or 'none'})")
        elif cfg.connections[via].protocol != "amqp0-9-1":
            out.append(f"{where}: {via!r} is an {cfg.connections[via].protocol} connection; "
                       f"declares go over an amqp0-9-1 one")
    if not cfg.routes and not any(lst.topology for lst in cfg.listeners.values()):
        out.append("routes: at least one route is required (or a listener with a topology)")
    return out


def _check_amqp091_listener(cfg: BridgeConfig, where: str, route: Route,
                            published: dict[tuple[str, str, str | None], int],
                            index: int) -> list[str]:
    """What an amqp0-9-1 listener's routes must be: publish routes take an exchange (and
    maybe one routing key: one route per exchange and key), consume routes serve a queue
    (or an exchange temporary queues bind to);
    a 0-10 listener's publish routes take no routing key."""
    source, target = route.source, route.target
    out = []
    for side, ep in (("from", source), ("to", target)):
        listener = cfg.listeners.get(ep.listener or "")
        if listener is None:
            continue
        if listener.protocol != "amqp0-9-1":
            if side == "from" and ep.routing_key is not None:
                out.append(f"{where}.from.routing_key: only for an amqp0-9-1 listener (an "
                           f"amqp0-10 listener's route takes every publish to its exchange)")
            continue
        if side == "to" and not ep.queue and not ep.exchange:
            out.append(f"{where}.to.queue: required for an amqp0-9-1 listener (its clients "
                       f"consume from the queues the routes configure), or to.exchange for "
                       f"the temporary queues its clients bind to that exchange")
        if side == "from" and ep.exchange is not None:
            key = (str(ep.listener), ep.exchange, ep.routing_key)
            first = published.setdefault(key, index)
            if first != index:
                which = f"routing key {ep.routing_key!r}" if ep.routing_key is not None \
                    else "every routing key"
                out.append(f"{where}.from: exchange {ep.exchange!r} of listener "
                           f"{ep.listener!r} with {which} is taken by routes[{first}] "
                           f"({cfg.routes[first].name}) already")
    return out


def _check_taps(cfg: BridgeConfig) -> list[str]:
    """Taps need pyarrow; routes tapping one directory share its writer, so its settings."""
    out = []
    shared: dict[str, tuple[int, TapConfig]] = {}
    for i, route in enumerate(cfg.routes):
        tap = route.tap
        if tap is None:
            continue
        if importlib.util.find_spec("pyarrow") is None:  # looks, does not import
            out.append(f"routes[{i}].tap: writing archives needs pyarrow, which is not "
                       f"installed: pip install 'amqp-bridge[spark]' (or just pyarrow)")
        path = os.path.normpath(os.path.abspath(tap.path))
        first = shared.setdefault(path, (i, tap))
        if first[0] != i and first[1].writer_settings() != tap.writer_settings():
            out.append(f"routes[{i}].tap: archives to {tap.path!r} like routes[{first[0]}] "
                       f"({cfg.routes[first[0]].name}), so its rotate_rows, rotate_seconds, "
                       f"queue_size and overflow must be the same")
    return out


def _check_endpoint(cfg: BridgeConfig, where: str, side: str, ep: Endpoint | DeadLetter) -> list[str]:
    listener = getattr(ep, "listener", None)
    if getattr(ep, "prefetch", None) is not None and (
            side != "from" or listener is not None
            or getattr(cfg.connections.get(ep.connection or ""), "protocol", "") != "amqp0-9-1"):
        return [f"{where}.prefetch: only for a route's source on an amqp0-9-1 connection"]
    if listener is not None:
        if listener not in cfg.listeners:
            return [f"{where}.listener: no listener named {listener!r} "
                    f"(defined: {', '.join(sorted(cfg.listeners)) or 'none'})"]
        # legacy apps publish to an exchange on the façade, and consume from a queue (or
        # from temporary queues they bind to an exchange)
        if side == "to" and getattr(ep, "exchange", None) and not getattr(ep, "queue", None):
            return []
        key = "exchange" if side == "from" else "queue"
        return [] if getattr(ep, key) else [f"{where}.{key}: required for a listener endpoint"]
    if ep.connection not in cfg.connections:
        return [f"{where}.connection: no connection named {ep.connection!r} "
                f"(defined: {', '.join(sorted(cfg.connections)) or 'none'})"]
    protocol = cfg.connections[ep.connection].protocol  # type: ignore[index]
    if protocol == "amqp1.0":
        return [] if ep.address else [f"{where}.address: required for an amqp1.0 connection"]
    if side == "from":
        return [] if getattr(ep, "queue", None) else [f"{where}.queue: required to consume "
                                                      f"from an {protocol} connection"]
    if ep.exchange is None and getattr(ep, "queue", None) is None:
        return [f"{where}.exchange: required to publish to an {protocol} connection "
                f"(or give 'queue' for the default exchange)"]
    return []


def _check_files(cfg: BridgeConfig) -> list[str]:
    """TLS material and users files that cannot be read or do not fit, by key path."""
    out = []
    for name, conn in cfg.connections.items():
        if conn.tls is not None:
            try:
                client_context(conn.tls)
            except TlsFileError as exc:
                out.append(f"connections.{name}.tls.{exc.key}: {exc.reason}")
    for name, lst in cfg.listeners.items():
        if lst.tls is not None:
            try:
                server_context(lst.tls)
            except TlsFileError as exc:
                out.append(f"listeners.{name}.tls.{exc.key}: {exc.reason}")
        if lst.users_file:
            try:
                read_users_file(lst.users_file)
            except OSError as exc:
                out.append(f"listeners.{name}.users_file: cannot read {lst.users_file!r}: "
                           f"{exc.strerror or exc}")
            except ValueError as exc:
                out.append(f"listeners.{name}.users_file: {exc}")
            else:
                if not (lst.user_table() or lst.allow_anonymous
                        or (lst.tls is not None and lst.tls.client_certs != "none")):
                    out.append(f"listeners.{name}.users_file: {lst.users_file!r} has no users "
                               f"and nothing else lets a client log in")
    return out


def config_secrets(cfg: BridgeConfig) -> list[str]:
    """Every secret value of the configuration: URL passwords, façade passwords and hashes,
    TLS key passwords.  The processes that load a configuration (``amqp-bridge run`` and
    ``check``) register them with :func:`bridge.ops.logs.add_secrets`."""
    out = _url_userinfo(cfg, "password")
    for conn in cfg.connections.values():
        if conn.tls is not None and conn.tls.key_password is not None:
            out.append(conn.tls.key_password.get_secret_value())
    for lst in cfg.listeners.values():
        out += [p.get_secret_value() for p in lst.users.values()]
        if lst.tls is not None and lst.tls.key_password is not None:
            out.append(lst.tls.key_password.get_secret_value())
    return [s for s in out if s]


def config_identities(cfg: BridgeConfig) -> list[str]:
    """Every user name of the configuration (connection URLs, façade users): shown in
    logs and ``check`` output even when one equals a password
    (:func:`bridge.ops.logs.add_identities`)."""
    out = _url_userinfo(cfg, "username")
    for lst in cfg.listeners.values():
        out += list(lst.users)
    return out


def _url_userinfo(cfg: BridgeConfig, part: str) -> list[str]:
    """The ``username`` or ``password`` of every connection URL, as written and decoded."""
    out: list[str] = []
    for conn in cfg.connections.values():
        for url in [conn.url, *conn.failover]:
            value = getattr(urlsplit(url), part)
            if value:
                out += [value, unquote(value)]
    return out


REFERENCE_PROBLEMS = "reference problems:"
"""First line of a validation message that carries its own key paths."""


def redact_url(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
