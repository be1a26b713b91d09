"""The ``amqp-bridge`` command line."""

from __future__ import annotations

import sys

import click

from . import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="amqp-bridge")
def main() -> None:
    """Bridge AMQP 1.0 and legacy AMQP 0-10 / 0-9-1 messaging, with CloudEvents mapping."""


@main.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--assemble", is_flag=True,
              help="One line per assembly (a command with its header and body) instead of per frame.")
@click.option("--format", "fmt", type=click.Choice(["auto", "jsonl", "raw"]), default="auto",
              show_default=True, help="Capture JSON lines, or a raw one-direction byte stream.")
@click.option("--direction", type=click.Choice(["c2s", "s2c"]), default="c2s", show_default=True,
              help="Direction to label a raw stream with.")
def inspect(file: str, assemble: bool, fmt: str, direction: str) -> None:
    """Decode a recorded AMQP 0-10 conversation, printing one JSON line per frame.

    FILE is a capture in the JSON-lines format ({"dir", "t", "hex"} per read, as
    written by protocol tracing) or a raw byte stream of one direction.  Exits 1
    after printing what did decode if the input cannot be decoded.
    """
    from .inspector import dumps, inspect_file

    records, inspector = inspect_file(file, assemble=assemble, fmt=fmt, direction=direction)
    out = sys.stdout
    try:
        for rec in records:
            out.write(dumps(rec))
            out.write("\n")
    except ValueError as exc:  # malformed capture file
        raise click.ClickException(str(exc)) from None
    problems = inspector.finish()
    if problems:
        out.flush()
        for p in problems:
            click.echo(f"amqp-bridge inspect: {file}: {p}", err=True)
        sys.exit(1)


@main.command()
@click.option("-c", "--config", "config_path", required=True, type=click.Path(dir_okay=False),
              help="The bridge's YAML configuration.")
def check(config_path: str) -> None:
    """Validate a configuration file and print the resolved routes.

    Exits 2 with one line per problem (each naming the key path) if it is invalid.
    """
    from .config import ConfigError, config_identities, config_secrets, describe, load_config
    from .ops.logs import add_identities, add_secrets, redact

    try:
        cfg = load_config(config_path)
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"{config_path}: {problem}", err=True)
        sys.exit(2)
    add_secrets(config_secrets(cfg))
    add_identities(config_identities(cfg))
    for line in describe(cfg):
        click.echo(redact(line))
    click.echo(f"{config_path}: OK ({len(cfg.routes)} routes)")


@main.command()
@click.option("-c", "--config", "config_path", required=True, type=click.Path(dir_okay=False),
              help="The bridge's YAML configuration.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default=None, help="Overrides logging.level of the configuration (default info).")
@click.option("--log-format", type=click.Choice(["kv", "json"]), default=None,
              help="Overrides logging.format of the configuration (default kv).")
@click.option("--accelerated", is_flag=True,
              help="Run the modules compiled by scripts/accelerate build (as "
                   "AMQP_BRIDGE_ACCELERATED=1 does; refused if that build is missing or stale).")
def run(config_path: str, log_level: str | None, log_format: str | None,
        accelerated: bool) -> None:
    """Run the bridge until SIGTERM or SIGINT.

    Exits 2 for an invalid configuration, 3 after a permanent fault (a certificate or a
    login refused, see docs/operations.md), 1 on an unexpected error. A fatal signal (a
    crash in C code: SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL) first writes every thread's
    Python stack to stderr (:mod:`faulthandler`)."""
    import faulthandler
    import logging

    from . import accelerated as build
    if accelerated:
        try:
            build.install(build.requested() or build.DEFAULT_DIR)
        except build.AcceleratedBuildError as exc:
            raise click.ClickException(str(exc)) from None
    faulthandler.enable(file=sys.stderr, all_threads=True)

    from .app import run as run_bridge
    from .config import ConfigError, load_config
    from .ops import logs

    try:
        cfg = load_config(config_path)
        logs.configure(log_level or cfg.logging.level, log_format or cfg.logging.format)
        build.log_installed()
        status = run_bridge(cfg)
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"{config_path}: {problem}", err=True)
        sys.exit(2)
    except Exception:  # a bug: its traceback as one structured, redacted line too
        logging.getLogger("bridge").critical("stopped by an unexpected error", exc_info=True,
                                             extra={"event": "crashed"})
        sys.exit(1)
    sys.exit(status)


@main.command("hash-password")
@click.option("--iterations", type=click.IntRange(10_000), default=600_000, show_default=True,
              help="PBKDF2-SHA256 work factor.")
def hash_password_command(iterations: int) -> None:
    """Print a pbkdf2-sha256 hash for a façade user (listeners.*.users or users_file).

    The password is read from standard input (first line) or, on a terminal, prompted
    for twice without echo; it is never taken from the command line.
    """
    from .security.passwords import hash_password

    if sys.stdin.isatty():
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    else:
        password = sys.stdin.readline().removesuffix("\n").removesuffix("\r")
    if not password:
        raise click.ClickException("empty password")
    click.echo(hash_password(password, iterations=iterations))


@main.command()
@click.option("--amqp10-url", default="amqp://guest:guest@127.0.0.1:5672", show_default=True,
              help="The AMQP 1.0 broker to bridge to (RabbitMQ with its AMQP 1.0 plugin, ...).")
@click.option("-n", "--messages", default=5, show_default=True, type=click.IntRange(1, 100_000),
              help="Messages sent each way.")
@click.option("--keep-running", is_flag=True,
              help="Leave the bridge and the embedded 0-10 broker up afterwards (Ctrl-C stops).")
def demo(amqp10_url: str, messages: int, keep_running: bool) -> None:
    """Run the bridge end to end against an embedded AMQP 0-10 broker.

    Legacy 0-10 orders travel to the AMQP 1.0 broker as CloudEvents, 1.0 replies
    travel back to a 0-10 queue, and a legacy application publishes through the
    façade. Exits 1 unless every message arrived.
    """
    import logging

    from .demo import run_demo
    from .ops.logs import configure

    configure("warning")
    logging.getLogger("proton").setLevel(logging.ERROR)
    result = run_demo(amqp10_url, messages=messages, keep_running=keep_running, out=sys.stdout)
    sys.exit(0 if result.ok else 1)


def _register_pipeline() -> None:
    """Add ``amqp-bridge pipeline ...`` (its Spark imports happen only when a job runs)."""
    try:
        from pipeline.bridge_api import pipeline_group
    except ImportError:  # pragma: no cover - a build without the pipeline package
        return
    main.add_command(pipeline_group)


_register_pipeline()

if __name__ == "__main__":  # pragma: no cover
    main()
