"""The permission model (bridge/security/permissions.py): RabbitMQ's configure / write /
read patterns, matched as a 3.10 node matches them (searched, "" as ^$, the default
exchange as amq.default), per user, per virtual host, with a default."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.cli import main
from bridge.config import ConfigError, parse_config
from bridge.facade.core.access import Access, Check
from bridge.security.permissions import (
    EVERYTHING,
    NOTHING,
    Grant,
    PatternError,
    Permissions,
    UserGrant,
)


def test_a_pattern_is_searched_in_the_name_as_rabbitmq_does() -> None:
    grant = Grant(configure="^app\\.", write="orders", read=".*")
    assert grant.allows("configure", "queue", "app.jobs")
    assert not grant.allows("configure", "queue", "my.app.jobs")  # anchored with ^
    assert grant.allows("write", "exchange", "orders")
    assert grant.allows("write", "exchange", "eu.orders.v2")  # not anchored: found inside
    assert not grant.allows("write", "exchange", "invoices")
    assert grant.allows("read", "queue", "anything at all")


def test_the_empty_pattern_allows_only_the_empty_name() -> None:
    assert not NOTHING.allows("read", "queue", "q")
    assert not NOTHING.allows("configure", "exchange", "x")
    assert NOTHING.allows("read", "queue", "")  # RabbitMQ's ^$


def test_the_default_exchange_is_checked_as_amq_default() -> None:
    assert Grant(write="^amq\\.default$").allows("write", "exchange", "")
    assert not Grant(write="^$").allows("write", "exchange", "")
    assert not Grant(write="^orders$").allows("write", "exchange", "")
    assert Grant(read="^$").allows("read", "queue", "")  # a queue named "" stays ""


def test_an_invalid_pattern_names_the_permission() -> None:
    with pytest.raises(PatternError, match=r"^read: '\(jobs' is not a valid regular"):
        Grant(read="(jobs")


def test_users_vhosts_and_the_default() -> None:
    alice = UserGrant(Grant(".*", ".*", ".*"), {"/prod": Grant(read="^pub\\.")})
    table = Permissions({"alice": alice}, UserGrant(Grant(read="^public$")))
    assert table.allows("alice", "/", "configure", "queue", "x")
    assert not table.allows("alice", "/prod", "configure", "queue", "x")
    assert table.allows("alice", "/prod", "read", "queue", "pub.x")
    assert table.allows("bob", "/", "read", "queue", "public")  # the default
    assert not table.allows("bob", "/", "write", "exchange", "public")
    assert not Permissions({"alice": alice}).allows("bob", "/", "read", "queue", "public")
    assert not table.unrestricted


def test_only_a_user_with_permissions_may_open_a_vhost() -> None:
    listed = {"alice": UserGrant(NOTHING)}  # listed, even with nothing granted: may open
    assert Permissions(listed).may_open("alice")
    assert not Permissions(listed).may_open("bob")
    assert not Permissions(listed).may_open(None)
    assert Permissions(listed, UserGrant(NOTHING)).may_open("bob")  # a default: anyone
    assert Permissions().may_open("bob")


def test_nothing_configured_is_everything_for_everyone() -> None:
    table = Permissions()
    assert table.unrestricted
    assert table.grant_for("anyone", "/x") is EVERYTHING
    assert table.allows(None, "", "configure", "exchange", "")
    assert table.describe() == ["every user may configure, write and read everything (no "
                                "permissions configured)"]


def test_describe_lists_each_user_and_the_others() -> None:
    table = Permissions({"bob": UserGrant(Grant(read="^jobs$")),
                         "alice": UserGrant(Grant(".*", ".*", ".*"), {"/p": Grant()})})
    assert table.describe() == [
        "user 'alice': configure '.*' write '.*' read '.*'; in vhost '/p': configure '' "
        "write '' read ''",
        "user 'bob': configure '' write '' read '^jobs$'",
        "any other user: nothing",
    ]


_CONFIG = """
connections:
  cloud: {protocol: amqp1.0, url: "amqp://127.0.0.1:5672"}
listeners:
  legacy:
    protocol: %s
    bind: "127.0.0.1:5999"
    users: {alice: a}
    %s
routes:
  - name: jobs
    from: {connection: cloud, address: /queues/jobs}
    to: {listener: legacy, queue: jobs}
"""


def test_configuration_compiles_the_permissions() -> None:
    cfg = parse_config(_CONFIG % ("amqp0-9-1", 'permissions: {alice: {read: "^jobs$", '
                                  'vhosts: {"/x": {read: ".*"}}}}'))
    table = cfg.listeners["legacy"].permission_table()
    assert table.allows("alice", "/", "read", "queue", "jobs")
    assert not table.allows("alice", "/", "read", "queue", "jobs2")
    assert table.allows("alice", "/x", "read", "queue", "jobs2")
    assert not table.allows("bob", "/", "read", "queue", "jobs")
    assert parse_config(_CONFIG % ("amqp0-10", "")).listeners["legacy"] \
        .permission_table().unrestricted


@pytest.mark.parametrize(("protocol", "keys", "problem"), [
    ("amqp0-9-1", 'permissions: {alice: {write: "[a-"}}',
     "listeners.legacy.permissions.alice: write: '[a-' is not a valid regular expression"),
    ("amqp0-9-1", 'default_permissions: {vhosts: {"/": {configure: "*"}}}',
     "listeners.legacy.default_permissions.vhosts./: configure: '*' is not a valid"),
    ("amqp0-10", 'permissions: {alice: {vhosts: {"/": {}}}}',
     "permissions.alice.vhosts: only for an amqp0-9-1 listener"),
    ("amqp0-9-1", 'permissions: {alice: {reed: ".*"}}', "reed"),
])
def test_bad_permissions_are_refused_at_load_naming_the_key(protocol: str, keys: str,
                                                            problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(_CONFIG % (protocol, keys))
    assert problem in str(err.value)


def test_check_prints_each_listeners_effective_permissions(tmp_path: Path) -> None:
    config = tmp_path / "bridge.yaml"
    config.write_text(_CONFIG % ("amqp0-9-1", 'permissions: {alice: {read: "^jobs$"}}\n'
                                 '    default_permissions: {read: ".*"}\n'
                                 '    trust_user_id: true'))
    result = CliRunner().invoke(main, ["check", "-c", str(config)])
    assert result.exit_code == 0, result.output
    assert "listener legacy permissions: user 'alice': configure '' write '' read '^jobs$'\n" \
           "listener legacy permissions: any other user: configure '' write '' read '.*'\n" \
           "listener legacy user-id: any (trust_user_id)\n" in result.output
    config.write_text(_CONFIG % ("amqp0-10", ""))
    result = CliRunner().invoke(main, ["check", "-c", str(config)])
    assert "listener legacy permissions: every user may configure, write and read " \
           "everything (no permissions configured)\nlistener legacy user-id: must be the " \
           "login's\n" in result.output


def test_access_counts_what_it_refuses_by_operation_and_permission() -> None:
    access = Access("l", Permissions({"u": UserGrant(Grant(write="^x$"))}))
    checks = [Check("write", "queue", "x"), Check("read", "exchange", "x")]
    assert access.denied("u", "/", checks, "queue.bind") == checks[1]  # the first failing
    assert access.denied("u", "/", checks[:1], "queue.bind") is None
    assert not access.user_id_refused("u", "u", "basic.publish")
    assert not access.user_id_refused("u", None, "basic.publish")  # none set: nothing to check
    assert access.user_id_refused("u", "v", "basic.publish")
    assert not access.may_open("v", "/")
    assert access.refused == {("queue.bind", "read"): 1, ("basic.publish", "user_id"): 1,
                              ("connection.open", "vhost"): 1}
    trusting = Access("l", Permissions(), trust_user_id=True)
    assert not trusting.user_id_refused("u", "v", "basic.publish")
    assert trusting.denied("anyone", "/", checks, "queue.bind") is None
    assert trusting.refused == {}


def test_per_vhost_grants_that_bind_nothing_are_named() -> None:
    """Every virtual host of a façade listener serves the same names: a user who may
    open one its ``vhosts`` do not list has its top-level grant on them there, so a
    narrower grant in ``/prod`` restricts nothing (the start WARNING names it) — unless
    the listener opens only listed vhosts, or the top-level grant is nothing."""
    everything = UserGrant(EVERYTHING, {"/prod": Grant(read=".*")})
    nothing = UserGrant(NOTHING, {"/prod": Grant(read=".*")})
    table = Permissions(users={"ops": everything, "reader": nothing,
                               "plain": UserGrant(EVERYTHING)},
                        default=UserGrant(Grant(read=".*"), {"/prod": Grant()}))
    assert table.vhost_grants_not_kept(None) == ["ops", "*"]
    assert table.vhost_grants_not_kept(frozenset({"/", "/prod"})) == ["ops", "*"]
    assert table.vhost_grants_not_kept(frozenset({"/prod"})) == []
