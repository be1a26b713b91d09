"""What ``amqp-bridge check`` prints: every connection, listener and route resolved,
with its security and limits, secrets redacted."""

from __future__ import annotations

from ..security.passwords import read_users_file
from .models import BridgeConfig, Connection, DeadLetter, Endpoint, Listener, Route, redact_url


def describe(cfg: BridgeConfig) -> list[str]:
    """Human-readable lines for the resolved routes (secrets redacted)."""
    lines = []
    for name, conn in cfg.connections.items():
        urls = ", ".join(redact_url(u) for u in [conn.url, *conn.failover])
        pool = (f"; up to {conn.max_connections} connections (extra ones when its links "
                f"need more sessions than one has)" if conn.protocol == "amqp1.0"
                and conn.max_connections > 1 else "")
        lines.append(f"connection {name}: {conn.protocol} {urls}{_client_security(conn)}{pool}")
    for name, lst in cfg.listeners.items():
        anon = ", anonymous allowed" if lst.allow_anonymous else ""
        lines.append(f"listener {name}: {lst.protocol} on {lst.bind}{anon}{_listener_security(lst)}"
                     f"; {lst.limits_text()}")
        if lst.topology is not None:
            lines.append(f"listener {name} topology: names no route configures are the "
                         f"{lst.topology.broker} broker's of connection "
                         f"{lst.topology.connection}"
                         + (f", declared over connection {lst.topology.declare_via}"
                            if lst.topology.declare_via else "")
                         + f" (requests time out after {lst.topology.request_timeout:g}s)")
    for route in cfg.routes:
        text = f"route {route.name}: {_endpoint(cfg, route.source)} -> {_endpoint(cfg, route.target)}"
        if route.cloudevents is not None:
            ce = route.cloudevents
            text += f"; cloudevents {ce.mode}" + (f" ({ce.prefix})" if ce.mode == "binary" else "")
            if ce.source is not None:
                text += f" type={ce.type} source={ce.source}"
        if route.dead_letter is not None:
            text += f"; dead-letter {_endpoint(cfg, route.dead_letter)}"
        mif = route.max_in_flight
        text += f"; max in flight {mif.messages} messages / {mif.bytes} bytes"
        if route.target.connection is not None and \
                cfg.connections[route.target.connection].protocol == "amqp1.0":
            size = (f"{route.max_message_size} bytes" if route.max_message_size is not None
                    else "the target's max-message-size")
            text += f"; messages up to {size}; poison after {route.poison_attempts} link ends"
        if route.dedupe is not None:
            text += f"; dedupe window {route.dedupe.window}"
        text += f"; user-id {_user_id_rule(route)}"
        if route.tap is not None:
            text += f"; tap {route.tap.side} -> {route.tap.path} (overflow {route.tap.overflow})"
        lines.append(text)
    lines += _who_may_do_what(cfg)
    if cfg.metrics is not None:
        lines.append(f"metrics: http://{cfg.metrics.bind}/metrics, /healthz, /readyz")
    lines.append(f"logging: {cfg.logging.format} lines at {cfg.logging.level}")
    return lines


def _who_may_do_what(cfg: BridgeConfig) -> list[str]:
    """Each listener's effective permissions and user-id rule."""
    lines = []
    for name, lst in cfg.listeners.items():
        lines += [f"listener {name} permissions: {line}"
                  for line in lst.permission_table().describe()]
        lines.append(f"listener {name} user-id: " + (
            "any (trust_user_id)" if lst.trust_user_id else "must be the login's"))
    return lines


def _user_id_rule(route: Route) -> str:
    rule = route.effective_user_id
    if rule != route.user_id:
        return f"{rule} (listener target: {route.user_id} is {rule})"
    if rule == "authenticated":
        login = route.target_login_user
        return (f"authenticated (only {login!r}, others carried)" if login is not None
                else "authenticated (login user not known: carried)")
    if rule == "drop":
        return "drop (user-ids are lost)"
    return rule


def _client_security(conn: Connection) -> str:
    text = f"; sasl {'/'.join(conn.mechanisms)}"
    if conn.tls is None:
        return text + ("; tls (system CAs)" if conn.url.startswith("amqps:") else "")
    tls = conn.tls
    text += f"; tls ca {tls.ca_file or 'system'}"
    if tls.cert_file:
        text += f", client cert {tls.cert_file}"
    if tls.server_name:
        text += f", server name {tls.server_name}"
    return text + ("" if tls.verify_hostname else ", hostname NOT verified")


def _listener_security(lst: Listener) -> str:
    users = len(lst.users) + (len(read_users_file(lst.users_file)) if lst.users_file else 0)
    text = f"; {users} users"
    if lst.tls is not None:
        text += f"; tls cert {lst.tls.cert_file}, client certs {lst.tls.client_certs}"
    return text


def _endpoint(cfg: BridgeConfig, ep: Endpoint | DeadLetter) -> str:
    owner = getattr(ep, "listener", None) or ep.connection
    node = [f"{k} {v!r}" for k in ("queue", "address", "exchange", "routing_key")
            if (v := getattr(ep, k, None)) is not None]
    return f"{owner}({cfg.protocol_of(ep)}) {' '.join(node)}"
