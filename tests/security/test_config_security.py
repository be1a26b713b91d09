"""Security settings in the configuration: TLS blocks, SASL mechanisms, ``${file:}``
secrets, hashed façade users, ``users_file`` and ``amqp-bridge hash-password``.
Every problem names its key path and never echoes a secret."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from bridge.cli import main
from bridge.config import ConfigError, describe, parse_config
from bridge.security.passwords import PasswordTable, hash_password, parse_hash, verify_password
from tests.support.certs import Pki

ROUTE = """
routes:
  - name: r
    from: {connection: legacy, queue: q}
    to:   {connection: cloud, address: /queue/q}
"""


def config(legacy: str, cloud: str = "{protocol: amqp1.0, url: 'amqp://h'}", extra: str = "") -> str:
    return f"connections:\n  legacy: {legacy}\n  cloud: {cloud}\n{extra}{ROUTE}"


def problems(text: str, env: dict[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        parse_config(text, env=env or {})
    return exc.value.problems


def test_tls_block_settings_and_derived_mechanisms(pki: Pki) -> None:
    cfg = parse_config(config(
        f"{{protocol: amqp0-10, url: 'amqps://localhost:5671', tls: {{ca_file: {pki.ca_file}, "
        f"cert_file: {pki.client.cert}, key_file: {pki.client.key}, server_name: broker}}}}",
        "{protocol: amqp1.0, url: 'amqps://u:p4ss@h'}"), env={})
    legacy, cloud = cfg.connections["legacy"], cfg.connections["cloud"]
    assert legacy.tls is not None and legacy.tls.verify_hostname is True
    assert legacy.mechanisms == ["EXTERNAL"] and cloud.mechanisms == ["PLAIN"]
    lines = "\n".join(describe(cfg))
    assert "sasl EXTERNAL; tls ca " in lines and "server name broker" in lines
    assert "sasl PLAIN; tls (system CAs)" in lines and "p4ss" not in lines


@pytest.mark.parametrize(("legacy", "expected"), [
    ("{protocol: amqp0-10, url: 'amqp://h', tls: {}}",
     "connections.legacy: a 'tls' block needs amqps:// URLs, not amqp://h"),
    ("{protocol: amqp0-10, url: 'amqps://h', sasl_mechanisms: [EXTERNAL]}",
     "connections.legacy: sasl_mechanisms: EXTERNAL needs tls.cert_file (a client certificate)"),
    ("{protocol: amqp0-10, url: 'amqps://h', sasl_mechanisms: [KERBEROS]}",
     "connections.legacy.sasl_mechanisms[0]: Input should be 'PLAIN', 'AMQPLAIN', 'ANONYMOUS' or 'EXTERNAL'"),
    ("{protocol: amqp0-10, url: 'amqps://h', tls: {key_file: k.pem}}",
     "connections.legacy.tls: key_file needs cert_file"),
    ("{protocol: amqp0-10, url: 'amqps://h', tls: {ca_file: /nonexistent/ca.pem}}",
     "connections.legacy.tls.ca_file: cannot read '/nonexistent/ca.pem': No such file or "
     "directory"),
    ("{protocol: amqp0-10, url: 'amqps://h', tls: {verify: false}}",
     "connections.legacy.tls.verify: unknown key"),
])
def test_bad_client_tls_names_the_key(legacy: str, expected: str) -> None:
    assert problems(config(legacy)) == [expected]


def test_unusable_key_material_names_the_key(pki: Pki, tmp_path: Path) -> None:
    enc = pki.authority.issue(tmp_path, "enc", "c", client=True, key_password="right-one")
    base = "{{protocol: amqp0-10, url: 'amqps://h', tls: {{cert_file: {c}, key_file: {k}{pw}}}}}"
    assert problems(config(base.format(c=enc.cert, k=enc.key, pw=""))) == [
        f"connections.legacy.tls.key_password: '{enc.key}' is encrypted: give key_password"]
    wrong = problems(config(base.format(c=enc.cert, k=enc.key, pw=", key_password: n0t-it")))
    assert wrong == [f"connections.legacy.tls.key_password: does not decrypt '{enc.key}'"]
    assert problems(config(base.format(c=pki.client.cert, k=pki.server.key, pw=""))) == [
        f"connections.legacy.tls.key_file: '{pki.server.key}' is not the key of cert_file "
        f"'{pki.client.cert}'"]
    assert parse_config(config(base.format(c=enc.cert, k=enc.key, pw=", key_password: right-one")),
                        env={})


def test_listener_tls_and_users(pki: Pki, tmp_path: Path) -> None:
    hashed = hash_password("pw-of-app", iterations=10_000)
    users = tmp_path / "users"
    users.write_text(f"ops:{hash_password('pw-of-ops', iterations=10_000)}\n")
    listener = (f"listeners:\n  f: {{protocol: amqp0-10, bind: '127.0.0.1:0', "
                f"users: {{app: '{hashed}', plain: 'pw-of-plain'}}, users_file: {users}, "
                f"tls: {{cert_file: {pki.server.cert}, key_file: {pki.server.key}, "
                f"ca_file: {pki.ca_file}, client_certs: required}}}}\n")
    cfg = parse_config(config("{protocol: amqp0-10, url: 'amqp://h'}", extra=listener), env={})
    table = PasswordTable(cfg.listeners["f"].user_table())
    assert table.check("app", "pw-of-app") and table.check("app", "pw-of-app")  # cached
    assert table.check("ops", "pw-of-ops") and table.check("plain", "pw-of-plain")
    assert not table.check("app", "pw-of-ops") and not table.check("nobody", "pw-of-app")
    assert "listener f: amqp0-10 on 127.0.0.1:0; 3 users; tls cert" in "\n".join(describe(cfg))

    bad = listener.replace(f"ca_file: {pki.ca_file}, ", "")
    assert problems(config("{protocol: amqp0-10, url: 'amqp://h'}", extra=bad)) == [
        "listeners.f.tls: client_certs: required needs ca_file"]
    users.write_text("ops:plain-text-password\n")
    assert problems(config("{protocol: amqp0-10, url: 'amqp://h'}", extra=listener)) == [
        "listeners.f.users_file: line 1 (user 'ops'): only pbkdf2-sha256 hashes are allowed "
        "in a users file (make one with 'amqp-bridge hash-password')"]


def test_malformed_hash_is_an_error_without_the_value() -> None:
    broken = "pbkdf2-sha256$600000$not base64!$abc"
    listener = f"listeners:\n  f: {{protocol: amqp0-10, bind: '127.0.0.1:0', users: {{app: '{broken}'}}}}\n"
    found = problems(config("{protocol: amqp0-10, url: 'amqp://h'}", extra=listener))
    assert found == ["listeners.f.users: user 'app': malformed pbkdf2-sha256 hash "
                     "(iterations, or base64 salt/hash)"]
    assert "not base64" not in str(found)


def test_file_secrets_and_errors_that_never_echo_them(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("fi1e-s3cret-value\n")
    cfg = parse_config(config(f"{{protocol: amqp0-10, url: 'amqp://u:${{file:{secret}}}@h'}}"),
                       env={})
    assert cfg.connections["legacy"].url == "amqp://u:fi1e-s3cret-value@h"
    assert problems(config("{protocol: amqp0-10, url: 'amqp://u:${file:/nonexistent/pw}@h'}")) == [
        "connections.legacy.url: cannot read secret file '/nonexistent/pw': No such file or "
        "directory"]
    # an invalid URL carrying secrets from a file and from the environment
    text = config(f"{{protocol: amqp0-10, url: 'amqp://u:${{file:{secret}}}@h:port', "
                  f"failover: ['amqp://u:${{PW}}@h:99999']}}")
    with pytest.raises(ConfigError) as exc:
        parse_config(text, env={"PW": "env-s3cret-value"})
    rendered = str(exc.value) + repr(exc.value) + "\n".join(exc.value.problems)
    assert "connections.legacy.url" in rendered and "connections.legacy.failover" in rendered
    assert "fi1e-s3cret-value" not in rendered and "env-s3cret-value" not in rendered


def test_hash_password_reads_stdin_never_argv() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["hash-password", "--iterations", "10000"],
                           input="correct horse\n")
    assert result.exit_code == 0, result.output
    stored = result.output.strip()
    assert parse_hash(stored)[0] == 10_000 and verify_password("correct horse", stored)
    assert not verify_password("correct horse ", stored)
    extra = runner.invoke(main, ["hash-password", "correct horse"])
    assert extra.exit_code == 2  # no password argument exists
    empty = runner.invoke(main, ["hash-password"], input="\n")
    assert empty.exit_code == 1 and "empty password" in empty.output
