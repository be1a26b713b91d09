"""Configuration of AMQP 0-9-1 connections and route endpoints: what is valid, and the
key path every problem names."""

from __future__ import annotations

import pytest

from bridge.config import ConfigError, parse_config

CLOUD = 'cloud: {protocol: amqp1.0, url: "amqp://127.0.0.1:5672"}'


def config(connection: str, routes: str) -> str:
    return f"""
connections:
  rabbit: {connection}
  {CLOUD}
routes:
{routes}
"""


OUT = """
  - name: out
    from: {connection: rabbit, queue: orders}
    to:   {connection: cloud, address: /queue/orders}
"""
IN = """
  - name: in
    from: {connection: cloud, address: /queue/replies}
    to:   {connection: rabbit, exchange: "", routing_key: replies}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, env={})
    return info.value.problems


def test_a_091_connection_with_both_route_directions_validates() -> None:
    cfg = parse_config(config(
        '{protocol: amqp0-9-1, url: "amqp://app:pw@127.0.0.1:5672/%2F", '
        'failover: ["amqp://app:pw@127.0.0.1:5673/"], heartbeat: 10, '
        'sasl_mechanisms: [AMQPLAIN, PLAIN]}', OUT + IN), env={})
    rabbit = cfg.connections["rabbit"]
    assert rabbit.protocol == "amqp0-9-1" and rabbit.mechanisms == ["AMQPLAIN", "PLAIN"]
    assert rabbit.login_user == "app"
    assert cfg.routes[1].target.exchange == "" and cfg.routes[1].target_login_user == "app"
    assert cfg.protocol_of(cfg.routes[0].source) == "amqp0-9-1"


def test_a_091_source_needs_a_queue() -> None:
    routes = """
  - name: out
    from: {connection: rabbit, exchange: orders}
    to:   {connection: cloud, address: /queue/orders}
"""
    found = problems(config('{protocol: amqp0-9-1, url: "amqp://u:p@h"}', routes))
    assert any(p.startswith("routes[0].from.queue: required to consume from an amqp0-9-1")
               for p in found), found


def test_a_091_target_needs_an_exchange_or_a_queue() -> None:
    routes = """
  - name: in
    from: {connection: cloud, address: /queue/replies}
    to:   {connection: rabbit, routing_key: replies}
"""
    found = problems(config('{protocol: amqp0-9-1, url: "amqp://u:p@h"}', routes))
    assert any(p.startswith("routes[0].to.exchange: required to publish to an amqp0-9-1")
               for p in found), found
    # the default exchange and a queue name: valid
    parse_config(config('{protocol: amqp0-9-1, url: "amqp://u:p@h"}', """
  - name: in
    from: {connection: cloud, address: /queue/replies}
    to:   {connection: rabbit, queue: replies}
"""), env={})


def test_anonymous_is_not_a_091_mechanism() -> None:
    for connection in ('{protocol: amqp0-9-1, url: "amqp://h"}',
                       '{protocol: amqp0-9-1, url: "amqp://u:p@h", sasl_mechanisms: [ANONYMOUS]}'):
        found = problems(config(connection, OUT))
        assert any(p.startswith("connections.rabbit: ") and "ANONYMOUS is not an AMQP 0-9-1"
                   in p for p in found), found


def test_amqplain_is_091_only_and_session_timeout_is_010_only() -> None:
    found = problems(config('{protocol: amqp0-10, url: "amqp://u:p@h", '
                            'sasl_mechanisms: [AMQPLAIN]}', OUT))
    assert any(p.startswith("connections.rabbit: ") and "AMQPLAIN is an AMQP 0-9-1 mechanism"
               in p for p in found), found
    found = problems(config('{protocol: amqp0-9-1, url: "amqp://u:p@h", session_timeout: 5}',
                            OUT))
    assert any(p.startswith("connections.rabbit: ") and "session_timeout: AMQP 0-10 only" in p
               for p in found), found


def test_connect_timeout_is_for_the_legacy_protocols_only() -> None:
    for protocol in ("amqp0-9-1", "amqp0-10"):
        text = config(f'{{protocol: {protocol}, url: "amqp://u:p@h", connect_timeout: 2.5}}', OUT)
        assert parse_config(text, env={}).connections["rabbit"].connect_timeout == 2.5
    found = problems(config('{protocol: amqp0-9-1, url: "amqp://u:p@h"}', OUT).replace(
        'url: "amqp://127.0.0.1:5672"}', 'url: "amqp://127.0.0.1:5672", connect_timeout: 5}'))
    assert any(p.startswith("connections.cloud: ") and "connect_timeout: AMQP 0-10 and 0-9-1 "
               "only" in p for p in found), found


def test_external_needs_a_client_certificate_on_091_too() -> None:
    found = problems(config('{protocol: amqp0-9-1, url: "amqps://h", '
                            'sasl_mechanisms: [EXTERNAL]}', OUT))
    assert any(p.startswith("connections.rabbit: ") and "EXTERNAL needs tls.cert_file" in p
               for p in found), found


def test_prefetch_is_for_091_sources_only() -> None:
    rabbit = '{protocol: amqp0-9-1, url: "amqp://u:p@h"}'
    cfg = parse_config(config(rabbit, OUT.replace("queue: orders}", "queue: orders, "
                                                  "prefetch: window}")), env={})
    assert cfg.routes[0].source.prefetch == "window"
    assert parse_config(config(rabbit, OUT), env={}).routes[0].source.prefetch is None
    found = problems(config(rabbit, IN.replace("routing_key: replies}",
                                               "routing_key: replies, prefetch: window}")))
    assert "routes[0].to.prefetch: only for a route's source on an amqp0-9-1 connection" \
        in found, found
    found = problems(config('{protocol: amqp0-10, url: "amqp://u:p@h"}',
                            OUT.replace("queue: orders}", "queue: orders, prefetch: credit}")))
    assert "routes[0].from.prefetch: only for a route's source on an amqp0-9-1 connection" \
        in found, found
    found = problems(config(rabbit, OUT.replace("queue: orders}", "queue: orders, "
                                                "prefetch: eager}")))
    assert any(p.startswith("routes[0].from.prefetch") for p in found), found
