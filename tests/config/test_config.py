"""Configuration loading: validation errors name the key path; secrets never printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.cli import main
from bridge.config import ConfigError, describe, load_config, parse_config, redact_url

ROOT = Path(__file__).resolve().parents[2]
GOOD = """
connections:
  legacy: {protocol: amqp0-10, url: "amqp://guest:${LEGACY_PASSWORD}@127.0.0.1:5680", failover: ["amqp://127.0.0.1:5681"]}
  cloud:  {protocol: amqp1.0,  url: "amqp://127.0.0.1:5672"}
listeners:
  facade: {protocol: amqp0-10, allow_anonymous: true, bind: "127.0.0.1:5682"}
routes:
  - name: orders-out
    from: {connection: legacy, queue: orders}
    to:   {connection: cloud, address: /queue/orders}
    cloudevents: {mode: binary, type: com.example.order, source: /legacy/orders}
    dead_letter: {connection: cloud, address: /queue/orders.dlq}
  - name: replies-in
    from: {connection: cloud, address: /queue/replies}
    to:   {connection: legacy, exchange: amq.direct, routing_key: replies}
  - name: facade-publish
    from: {listener: facade, exchange: events}
    to:   {connection: cloud, address: /queue/events}
    cloudevents: {mode: structured}
  - name: facade-consume
    from: {connection: cloud, address: /queue/jobs}
    to:   {listener: facade, queue: jobs}
"""


def problems(text: str, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, env=env or {})
    return info.value.problems


def test_the_issue_example_validates_and_resolves() -> None:
    cfg = parse_config(GOOD, env={"LEGACY_PASSWORD": "pw"})
    assert [r.name for r in cfg.routes] == ["orders-out", "replies-in", "facade-publish", "facade-consume"]
    assert cfg.connections["legacy"].url == "amqp://guest:pw@127.0.0.1:5680"
    orders = cfg.routes[0]
    assert orders.source.queue == "orders" and orders.target.address == "/queue/orders"
    template = orders.cloudevents.template()
    assert template is not None and template.type == "com.example.order"
    assert cfg.routes[2].cloudevents.template() is None
    assert cfg.protocol_of(cfg.routes[3].target) == "amqp0-10"


def test_shipped_example_config_is_valid() -> None:
    cfg = load_config(ROOT / "config.example.yaml",
                      env={"LEGACY_PASSWORD": "pw", "RABBIT_PASSWORD": "pw"})
    assert {cfg.protocol_of(r.source) for r in cfg.routes} == {"amqp0-10", "amqp0-9-1",
                                                              "amqp1.0"}
    assert {listener.protocol for listener in cfg.listeners.values()} == {"amqp0-10",
                                                                          "amqp0-9-1"}


@pytest.mark.parametrize("recipe", sorted(p.name for p in (ROOT / "examples").glob("*.yaml")))
def test_shipped_recipes_are_valid(recipe: str) -> None:
    cfg = load_config(ROOT / "examples" / recipe,
                      env={"CELERY_PASSWORD": "pw", "APP_PASSWORD": "pw"})
    assert cfg.routes or any(lst.topology for lst in cfg.listeners.values())


def test_secrets_are_redacted_in_the_description() -> None:
    cfg = parse_config(GOOD, env={"LEGACY_PASSWORD": "hunter2-secret"})
    text = "\n".join(describe(cfg))
    assert "hunter2-secret" not in text
    assert "amqp://guest:***@127.0.0.1:5680" in text
    assert redact_url("amqps://u:p@h:1/v") == "amqps://u:***@h:1/v"


def test_missing_environment_variable_names_the_key() -> None:
    assert problems(GOOD) == ["connections.legacy.url: environment variable LEGACY_PASSWORD is not set"]
    cfg = parse_config(GOOD.replace("${LEGACY_PASSWORD}", "${LEGACY_PASSWORD:-dflt}"), env={})
    assert cfg.connections["legacy"].url.startswith("amqp://guest:dflt@")


@pytest.mark.parametrize(("edit", "expected"), [
    (("queue: orders}", "queue: orders, colour: red}"), "routes[0].from.colour: unknown key"),
    (("protocol: amqp1.0,", "protocol: amqp9,"), "connections.cloud.protocol: Input should be 'amqp0-10', 'amqp0-9-1' or 'amqp1.0'"),
    (('url: "amqp://127.0.0.1:5672"', 'url: "http://127.0.0.1:5672"'),
     "connections.cloud.url: 'http://127.0.0.1:5672' is not an amqp:// or amqps:// URL with a host"),
    (('bind: "127.0.0.1:5682"', 'bind: "5682"'), "listeners.facade.bind: '5682' is not host:port"),
    (("name: replies-in", "name: orders-out"), "routes[1].name: duplicate route name 'orders-out'"),
    (("{connection: legacy, queue: orders}", "{connection: legacy}"),
     "routes[0].from.queue: required to consume from an amqp0-10 connection"),
    (("to:   {connection: cloud, address: /queue/orders}", "to:   {connection: clod, address: x}"),
     "routes[0].to.connection: no connection named 'clod' (defined: cloud, legacy)"),
    (("{listener: facade, exchange: events}", "{listener: facade}"),
     "routes[2].from.exchange: required for a listener endpoint"),
    (("{connection: cloud, address: /queue/replies}", "{connection: cloud}"),
     "routes[1].from.address: required for an amqp1.0 connection"),
    (("type: com.example.order, source: /legacy/orders", "type: com.example.order"),
     "routes[0].cloudevents: 'source' and 'type' go together: give both to create events from "
     "plain messages, or neither to pass CloudEvents through"),
    (("{mode: structured}", "{mode: fancy}"), "routes[2].cloudevents.mode: Input should be 'binary' or 'structured'"),
    (("{connection: cloud, address: /queue/jobs}", "{connection: cloud, listener: facade, address: /queue/jobs}"),
     "routes[3].from: give exactly one of 'connection' or 'listener'"),
])
def test_each_error_names_the_key_path(edit: tuple[str, str], expected: str) -> None:
    old, new = edit
    assert old in GOOD
    assert expected in problems(GOOD.replace(old, new, 1), {"LEGACY_PASSWORD": "x"})


def test_not_yaml_and_not_a_mapping() -> None:
    assert problems("routes: [")[0].startswith("not valid YAML")
    assert problems("- 1\n- 2\n") == ["the top level must be a mapping with 'routes'"]
    assert problems("connections: {}\nroutes: []\n") == [
        "routes: at least one route is required (or a listener with a topology)"]


def test_cli_check_ok_and_error(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    runner = CliRunner()
    result = runner.invoke(main, ["check", "-c", str(good)], env={"LEGACY_PASSWORD": "topsecret"})
    assert result.exit_code == 0, result.output
    assert "route orders-out: legacy(amqp0-10) queue 'orders' -> cloud(amqp1.0) address '/queue/orders'" in result.stdout
    assert "OK (4 routes)" in result.stdout
    assert "topsecret" not in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("{connection: legacy, queue: orders}", "{connection: legacy}"))
    result = runner.invoke(main, ["check", "-c", str(bad)], env={"LEGACY_PASSWORD": "topsecret"})
    assert result.exit_code == 2
    assert f"{bad}: routes[0].from.queue: required to consume from an amqp0-10 connection" in result.stderr
    result = runner.invoke(main, ["check", "-c", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 2 and "cannot read" in result.stderr


def test_cli_check_masks_passwords_not_user_names(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """RabbitMQ's guest:guest: the password (from the environment) is masked, the user
    name it equals is not — in the URL and where the route names its user-id."""
    from bridge.ops import logs

    for name, fresh in (("_secrets", []), ("_identities", set()), ("_shown", {})):
        monkeypatch.setattr(logs, name, fresh)  # the redactor's registry: this test's own
    config = tmp_path / "guest.yaml"
    config.write_text(GOOD.replace('failover: ["amqp://127.0.0.1:5681"]',
                                   'failover: ["amqp://guest-ops:topsecret@127.0.0.1:5681"]')
                      .replace('url: "amqp://127.0.0.1:5672"', 'url: "amqp://guest:guest@h:5672"'))
    result = CliRunner().invoke(main, ["check", "-c", str(config)],
                                env={"LEGACY_PASSWORD": "guest"})
    assert result.exit_code == 0, result.output
    assert "amqp://guest:***@127.0.0.1:5680, amqp://guest-ops:***@127.0.0.1:5681" \
        in result.stdout
    assert "user-id authenticated (only 'guest', others carried)" in result.stdout
    assert "topsecret" not in result.output and "guest:guest" not in result.output


def test_metrics_and_logging_sections() -> None:
    cfg = parse_config(GOOD, env={"LEGACY_PASSWORD": "x"})
    assert cfg.metrics is None  # absent: no HTTP server
    assert (cfg.logging.format, cfg.logging.level) == ("kv", "info")
    assert describe(cfg)[-1] == "logging: kv lines at info"
    cfg = parse_config(GOOD + 'metrics: {bind: "0.0.0.0:9100"}\nlogging: {format: json, level: debug}\n',
                       env={"LEGACY_PASSWORD": "x"})
    assert cfg.metrics is not None and cfg.metrics.bind == "0.0.0.0:9100"
    assert (cfg.logging.format, cfg.logging.level) == ("json", "debug")
    assert describe(cfg)[-2:] == ["metrics: http://0.0.0.0:9100/metrics, /healthz, /readyz",
                                  "logging: json lines at debug"]
    assert parse_config(GOOD + "metrics: {}\n", env={"LEGACY_PASSWORD": "x"}).metrics.bind \
        == "127.0.0.1:9464"


@pytest.mark.parametrize(("extra", "expected"), [
    ('metrics: {bind: "9464"}', "metrics.bind: '9464' is not host:port"),
    ('metrics: {bind: "h:99999"}', "metrics.bind: 'h:99999' is not host:port"),
    ("metrics: {port: 9464}", "metrics.port: unknown key"),
    ("logging: {format: xml}", "logging.format: Input should be 'kv' or 'json'"),
    ("logging: {level: verbose}", "logging.level: Input should be 'debug', 'info', 'warning' or 'error'"),
])
def test_metrics_and_logging_errors_name_the_key(extra: str, expected: str) -> None:
    assert expected in problems(GOOD + extra + "\n", {"LEGACY_PASSWORD": "x"})


def test_the_operations_settings_are_described_for_the_reference() -> None:
    from bridge.config import BridgeConfig, Logging, Metrics

    for model in (Metrics, Logging):
        assert model.__doc__
        for name, info in model.model_fields.items():
            assert info.description, f"{model.__name__}.{name}"
    for name in ("metrics", "logging"):
        assert BridgeConfig.model_fields[name].description


def test_config_secrets_lists_every_configured_password() -> None:
    from bridge.config import config_secrets

    cfg = parse_config(GOOD.replace('failover: ["amqp://127.0.0.1:5681"]',
                                    'failover: ["amqp://u:p%40ss@127.0.0.1:5681"]')
                       .replace('bind: "127.0.0.1:5682"}',
                                'bind: "127.0.0.1:5682", users: {app: app-pw}}'),
                       env={"LEGACY_PASSWORD": "pw1"})
    assert sorted(set(config_secrets(cfg))) == ["app-pw", "p%40ss", "p@ss", "pw1"]
# --- the route option tap ---------------------------------------------------------------------

TAPPED = GOOD.replace("""    dead_letter: {connection: cloud, address: /queue/orders.dlq}
""", """    dead_letter: {connection: cloud, address: /queue/orders.dlq}
    tap: {path: /var/lib/amqp-bridge/archive}
""").replace("""    to:   {connection: legacy, exchange: amq.direct, routing_key: replies}
""", """    to:   {connection: legacy, exchange: amq.direct, routing_key: replies}
    tap: {path: /var/lib/amqp-bridge/archive/, side: received, overflow: block}
""")


def test_tap_defaults_and_description() -> None:
    cfg = parse_config(TAPPED, env={"LEGACY_PASSWORD": "x"})
    orders, replies, publish, _ = cfg.routes
    assert orders.tap is not None and replies.tap is not None and publish.tap is None
    assert (orders.tap.path, orders.tap.side, orders.tap.rotate_rows, orders.tap.rotate_seconds,
            orders.tap.queue_size, orders.tap.overflow) == (
        "/var/lib/amqp-bridge/archive", "both", 1_000_000, 60.0, 10_000, "block")
    assert replies.tap.side == "received"
    lines = describe(cfg)
    assert lines[3].endswith("; tap both -> /var/lib/amqp-bridge/archive (overflow block)")
    assert "tap" not in lines[5]


@pytest.mark.parametrize(("edit", "expected"), [
    ("{path: /a, side: sent}", "routes[0].tap.side: Input should be 'received', 'delivered' or 'both'"),
    ("{path: /a, rotate: daily}", "routes[0].tap.rotate: unknown key"),
    ("{side: both}", "routes[0].tap.path: required key is missing"),
    ("{path: /a, queue_size: 0}", "routes[0].tap.queue_size: Input should be greater than or equal to 1"),
    ("{path: /a, overflow: wait}", "routes[0].tap.overflow: Input should be 'block' or 'drop'"),
])
def test_tap_errors_name_the_key_path(edit: str, expected: str) -> None:
    text = TAPPED.replace("tap: {path: /var/lib/amqp-bridge/archive}", f"tap: {edit}", 1)
    assert problems(text, {"LEGACY_PASSWORD": "x"}) == [expected]


def test_routes_sharing_an_archive_directory_share_its_settings() -> None:
    text = TAPPED.replace("side: received, overflow: block}", "side: received, overflow: drop}")
    assert problems(text, {"LEGACY_PASSWORD": "x"}) == [
        "routes[1].tap: archives to '/var/lib/amqp-bridge/archive/' like routes[0] (orders-out), "
        "so its rotate_rows, rotate_seconds, queue_size and overflow must be the same"]


def test_every_tap_setting_is_described() -> None:
    from bridge.config import Route
    from pipeline.tap import TapConfig

    assert Route.model_fields["tap"].description
    for name, field in TapConfig.model_fields.items():
        assert field.description, name


def test_importing_the_configuration_imports_neither_pyarrow_nor_spark() -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", "import sys, bridge.config, bridge.app\n"
         "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyarrow', 'pyspark', 'pandas'}))"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


@pytest.mark.parametrize("logins", ["", ", users: {}"])
def test_a_listener_nobody_can_log_into_is_refused(logins: str) -> None:
    text = GOOD.replace('allow_anonymous: true, bind: "127.0.0.1:5682"}',
                        f'bind: "127.0.0.1:5682"{logins}}}')
    assert problems(text, {"LEGACY_PASSWORD": "pw"}) == [
        "listeners.facade: nobody can log in: give users (or users_file), allow_anonymous: "
        "true, or tls.client_certs for SASL EXTERNAL"]


def test_a_users_file_without_users_leaves_nobody_to_log_in(tmp_path: Path) -> None:
    empty = tmp_path / "users"
    empty.write_text("# nobody yet\n")
    text = GOOD.replace('allow_anonymous: true, bind: "127.0.0.1:5682"}',
                        f'bind: "127.0.0.1:5682", users_file: "{empty}"}}')
    config = tmp_path / "bridge.yaml"
    config.write_text(text)
    result = CliRunner().invoke(main, ["check", "-c", str(config)], env={"LEGACY_PASSWORD": "pw"})
    assert result.exit_code == 2, result.output
    assert f"listeners.facade.users_file: '{empty}' has no users" in result.output


# --- the route option user_id -------------------------------------------------------------------


def test_user_id_defaults_to_authenticated_with_the_target_login_user() -> None:
    cfg = parse_config(GOOD.replace('url: "amqp://127.0.0.1:5672"',
                                    'url: "amqp://bridge%40corp:pw@127.0.0.1:5672"'),
                       env={"LEGACY_PASSWORD": "x"})
    orders, replies, publish, consume = cfg.routes
    assert [r.user_id for r in cfg.routes] == ["authenticated"] * 4
    assert orders.target_login_user == publish.target_login_user == "bridge@corp"
    assert orders.dead_letter_login_user == "bridge@corp"  # cloud too
    assert replies.dead_letter_login_user is None  # none
    # legacy's failover URL has no user: which user the bridge is is not known
    assert replies.target_login_user is None
    # a listener target checks no user-id: authenticated is keep there
    assert consume.target_login_user is None
    assert [r.effective_user_id for r in cfg.routes] == ["authenticated"] * 3 + ["keep"]
    lines = describe(cfg)
    assert lines[3].endswith("; user-id authenticated (only 'bridge@corp', others carried)")
    assert lines[4].endswith("; user-id authenticated (login user not known: carried)")
    assert lines[6].endswith("; user-id keep (listener target: authenticated is keep)")


@pytest.mark.parametrize(("url", "extra", "login"), [
    ("amqp://alice:pw@h", "", "alice"),
    ("amqp://h", "", None),  # ANONYMOUS
    ("amqp://alice:pw@h", ", sasl_mechanisms: [PLAIN, ANONYMOUS]", None),  # either may be used
    ("amqp://alice:pw@h", ", failover: ['amqp://alice:other@h2']", "alice"),
    ("amqp://alice:pw@h", ", failover: ['amqp://bob:pw@h2']", None),
])
def test_the_login_user_of_a_connection(url: str, extra: str, login: str | None) -> None:
    cfg = parse_config(GOOD.replace('{protocol: amqp1.0,  url: "amqp://127.0.0.1:5672"}',
                                    f'{{protocol: amqp1.0, url: "{url}"{extra}}}'),
                       env={"LEGACY_PASSWORD": "x"})
    assert cfg.connections["cloud"].login_user == login
    assert cfg.routes[0].target_login_user == login


@pytest.mark.parametrize("rule", ["keep", "carry", "drop"])
def test_user_id_rules(rule: str) -> None:
    cfg = parse_config(GOOD.replace("    to:   {listener: facade, queue: jobs}\n",
                                    f"    to:   {{listener: facade, queue: jobs}}\n"
                                    f"    user_id: {rule}\n"),
                       env={"LEGACY_PASSWORD": "x"})
    assert (cfg.routes[3].user_id, cfg.routes[3].effective_user_id) == (rule, rule)
    expected = "drop (user-ids are lost)" if rule == "drop" else rule
    assert describe(cfg)[6].endswith(f"; user-id {expected}")


def test_an_unknown_user_id_rule_names_the_key() -> None:
    text = GOOD.replace("    to:   {connection: cloud, address: /queue/orders}\n",
                        "    to:   {connection: cloud, address: /queue/orders}\n"
                        "    user_id: trust\n")
    assert problems(text, {"LEGACY_PASSWORD": "x"}) == [
        "routes[0].user_id: Input should be 'authenticated', 'keep', 'carry' or 'drop'"]


def test_an_amqp10_heartbeat_under_two_seconds_is_refused() -> None:
    text = GOOD.replace('cloud:  {protocol: amqp1.0,  url: "amqp://127.0.0.1:5672"}',
                        'cloud:  {protocol: amqp1.0,  url: "amqp://127.0.0.1:5672", heartbeat: 1}')
    [problem] = problems(text, {"LEGACY_PASSWORD": "pw"})
    assert problem.startswith("connections.cloud: heartbeat: 1s is too short for AMQP 1.0")
    assert parse_config(text.replace("heartbeat: 1}", "heartbeat: 2}"), env={"LEGACY_PASSWORD": "pw"})


AMQP091_LISTENER = """
connections:
  cloud: {protocol: amqp1.0, url: "amqp://localhost:5672"}
listeners:
  rabbit: {protocol: amqp0-9-1, bind: "127.0.0.1:5673", users: {app: pw}}
routes:
  - name: replies
    from: {connection: cloud, address: "ADDRESS"}
    to:   {listener: rabbit, exchange: replies}
"""


def test_an_amqp091_listener_serves_temporary_queues_bound_to_an_exchange() -> None:
    cfg = parse_config(AMQP091_LISTENER.replace("ADDRESS", "/exchange/amq.topic/{binding_key}"))
    assert cfg.routes[0].target.exchange == "replies"
    assert any("needs {binding_key}" in p for p in
               problems(AMQP091_LISTENER.replace("ADDRESS", "/exchange/amq.topic")))
    no_exchange = AMQP091_LISTENER.replace("ADDRESS", "/queue/q").replace(
        "exchange: replies", "routing_key: k")
    assert any("to.queue: required for an amqp0-9-1 listener" in p
               for p in problems(no_exchange))


def test_a_topology_listener_validates_and_is_described() -> None:
    text = """
connections:
  cloud: {protocol: amqp1.0, url: "amqp://127.0.0.1:5672"}
  rabbit: {protocol: amqp0-9-1, url: "amqp://u:p@127.0.0.1:5672"}
listeners:
  app: {protocol: amqp0-9-1, bind: "127.0.0.1:5673", users: {a: b},
        topology: {connection: cloud, broker: rabbitmq4}}
"""
    cfg = parse_config(text, env={})
    assert not cfg.routes
    assert ("listener app topology: names no route configures are the rabbitmq4 broker's "
            "of connection cloud (requests time out after 10s)") in describe(cfg)
    assert problems(text.replace("connection: cloud, broker", "connection: rabbit, broker")) \
        == ["listeners.app.topology.connection: 'rabbit' is an amqp0-9-1 connection; the "
            "topology mode needs an amqp1.0 one"]
    assert problems(text.replace("connection: cloud, broker", "connection: nope, broker")) \
        == ["listeners.app.topology.connection: no connection named 'nope' (defined: cloud, "
            "rabbit)"]
    qpid = parse_config(  # both façades have the mode, on both broker kinds
        text.replace("protocol: amqp0-9-1, bind", "protocol: amqp0-10, bind").replace(
            "users: {a: b}", "allow_anonymous: true").replace("rabbitmq4", "qpidd"), env={})
    assert qpid.listeners["app"].topology is not None
    assert qpid.listeners["app"].topology.broker == "qpidd"
    assert "qpidd serves an amqp0-10 listener only" in problems(
        text.replace("rabbitmq4", "qpidd"))[0]


def test_a_rabbitmq3_topology_declares_via_an_amqp091_connection() -> None:
    text = """
connections:
  cloud: {protocol: amqp1.0, url: "amqp://127.0.0.1:5672"}
  rabbit: {protocol: amqp0-9-1, url: "amqp://u:p@127.0.0.1:5672"}
listeners:
  app: {protocol: amqp0-9-1, bind: "127.0.0.1:5673", users: {a: b},
        topology: {connection: cloud, broker: rabbitmq3, declare_via: rabbit}}
"""
    cfg = parse_config(text, env={})
    topology = cfg.listeners["app"].topology
    assert topology is not None and topology.declare_via == "rabbit"
    assert (topology.max_publish_links, topology.publish_link_idle_timeout) == (100, 60.0)
    assert ("listener app topology: names no route configures are the rabbitmq3 broker's "
            "of connection cloud, declared over connection rabbit (requests time out after "
            "10s)") in describe(cfg)
    assert problems(text.replace(", declare_via: rabbit", "")) \
        == ["listeners.app.topology.declare_via: required for broker rabbitmq3 (RabbitMQ "
            "3.x's AMQP 1.0 cannot declare): an amqp0-9-1 connection to the same node"]
    assert problems(text.replace("declare_via: rabbit", "declare_via: cloud")) \
        == ["listeners.app.topology.declare_via: 'cloud' is an amqp1.0 connection; declares "
            "go over an amqp0-9-1 one"]
    assert problems(text.replace("declare_via: rabbit", "declare_via: nope")) \
        == ["listeners.app.topology.declare_via: no connection named 'nope' (defined: cloud, "
            "rabbit)"]
    # RabbitMQ 4 may declare over 0-9-1 too (instead of its management over AMQP 1.0)
    assert parse_config(text.replace("rabbitmq3", "rabbitmq4"), env={}).listeners["app"].topology
    assert "rabbitmq3 serves an amqp0-9-1 listener only" in problems(
        text.replace("protocol: amqp0-9-1, bind", "protocol: amqp0-10, bind").replace(
            "users: {a: b}", "allow_anonymous: true"))[0]


def test_max_connections_bounds_a_1_0_connection_s_pool_and_is_described() -> None:
    cfg = parse_config(GOOD, env={"LEGACY_PASSWORD": "pw"})
    assert cfg.connections["cloud"].max_connections == 16
    cloud = next(line for line in describe(cfg) if line.startswith("connection cloud:"))
    assert "; up to 16 connections" in cloud
    one = GOOD.replace('url: "amqp://127.0.0.1:5672"}', 'url: "amqp://127.0.0.1:5672", '
                                                      'max_connections: 1}')
    single = parse_config(one, env={"LEGACY_PASSWORD": "pw"})
    assert single.connections["cloud"].max_connections == 1
    assert not any("connections (extra ones" in line for line in describe(single))
    assert problems(GOOD.replace('url: "amqp://127.0.0.1:5672"}', 'url: "amqp://127.0.0.1:5672"'
                                 ', max_connections: 0}'), {"LEGACY_PASSWORD": "pw"})
    legacy = GOOD.replace('failover: ["amqp://127.0.0.1:5681"]}',
                          'failover: ["amqp://127.0.0.1:5681"], max_connections: 2}')
    assert any("max_connections: AMQP 1.0 only" in p
               for p in problems(legacy, {"LEGACY_PASSWORD": "pw"}))
