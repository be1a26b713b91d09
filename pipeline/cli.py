"""``amqp-bridge pipeline convert|replay|reconcile``: the Spark jobs on the command line.

:data:`pipeline_group` is a click group for the ``amqp-bridge`` command. It
imports neither PySpark nor pyarrow: a command run without the ``spark``
extra says what to install, and ``--help`` is instant.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pipeline.inputs import TraceOptions
from pipeline.schema import MissingDependency

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SIDES = ("received", "delivered")


@dataclass
class _Settings:
    master: str | None
    conf: dict[str, str]
    progress: bool


def _spark(ctx: click.Context) -> SparkSession:
    """The job's Spark session; stopped when the command ends if this call started it."""
    from pipeline.session import require_pyspark

    settings: _Settings = ctx.find_object(_Settings)  # type: ignore[assignment]
    try:
        require_pyspark()
    except MissingDependency as exc:
        raise click.ClickException(str(exc)) from None
    from pyspark.sql import SparkSession

    from pipeline.session import spark_session

    existing = SparkSession.getActiveSession()
    spark = spark_session(settings.master, conf=settings.conf, progress=settings.progress)
    if existing is None:
        ctx.call_on_close(spark.stop)
    return spark


@click.group("pipeline", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--master", metavar="URL", help="Spark master (default local[*]; spark-submit sets it).")
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE", help="A Spark setting (repeatable).")
@click.option("--progress/--no-progress", default=None,
              help="Spark's progress bar on stderr (default: when stderr is a terminal).")
@click.pass_context
def pipeline_group(ctx: click.Context, master: str | None, confs: tuple[str, ...],
                   progress: bool | None) -> None:
    """Convert, replay and reconcile message archives with Apache Spark.

    Inputs are archive directories or files (Parquet, docs/archive.md) or AMQP
    0-10 traces in the capture JSON-lines format.
    """
    conf = {}
    for item in confs:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--conf")
        conf[key.strip()] = value
    if progress is None:
        progress = sys.stderr.isatty()
    ctx.obj = _Settings(master, conf, progress)


def _archive_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Options that select archive rows and read traces (shared by the commands)."""

    @click.option("--route", "routes", multiple=True, metavar="NAME", help="Only this route (repeatable).")
    @click.option("--trace-role", type=click.Choice(["client", "server"]), default="client",
                  show_default=True, help="The bridge's role on a traced 0-10 link.")
    @click.option("--trace-start", metavar="TIME",
                  help="ISO 8601 time a trace began (default: its file time minus its length).")
    @click.option("--trace-route", metavar="NAME", help="Route name of trace rows (default: the file name).")
    @functools.wraps(func)
    def wrapper(*args: Any, trace_role: str, trace_start: str | None, trace_route: str | None,
                **kwargs: Any) -> Any:
        start = None
        if trace_start is not None:
            try:
                start = datetime.fromisoformat(trace_start)
            except ValueError:
                raise click.BadParameter(f"{trace_start!r} is not an ISO 8601 time",
                                         param_hint="--trace-start") from None
            if start.tzinfo is None:
                start = start.replace(tzinfo=UTC)
        traces = TraceOptions(role=trace_role, start=start, route=trace_route)  # type: ignore[arg-type]
        return func(*args, traces=traces, **kwargs)

    return wrapper


def _load(spark: SparkSession, inputs: tuple[str, ...], routes: tuple[str, ...],
          side: str | None, traces: TraceOptions) -> DataFrame:
    from pipeline.inputs import load_archive

    try:
        return load_archive(spark, inputs, routes=routes, side=side, traces=traces)
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    except Exception as exc:  # Spark's AnalysisException (no such path, not Parquet, ...)
        raise click.ClickException(_first_line(exc)) from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# --- convert ----------------------------------------------------------------------------------


@pipeline_group.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--output", required=True, help="Output directory.")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "parquet"]), default="jsonl",
              show_default=True, help="Structured JSON lines, or Parquet with one column per attribute.")
@click.option("--side", type=click.Choice(SIDES), help="Only rows of this side (default: both).")
@click.option("--mode", type=click.Choice(["error", "overwrite", "append"]), default="error",
              show_default=True, help="When the output exists.")
@click.option("--source", "ce_source", metavar="TEMPLATE",
              help="Make events of plain messages: their source (with --type).")
@click.option("--type", "ce_type", metavar="TEMPLATE", help="Event type of plain messages (with --source).")
@click.option("--id", "ce_id", metavar="TEMPLATE", help="Event id (default: message-id, else derived from the row).")
@click.option("--subject", "ce_subject", metavar="TEMPLATE", help="Event subject.")
@click.option("--dataschema", metavar="TEMPLATE", help="Event dataschema.")
@click.option("--datacontenttype", metavar="TYPE", help="Event datacontenttype (default: the content-type).")
@click.option("--time", "ce_time", type=click.Choice(["creation_time", "now", "none"]),
              default="creation_time", show_default=True, help="Event time of plain messages.")
@click.option("--extension", "extensions", multiple=True, metavar="NAME=PROPERTY",
              help="Extension attribute from an application property (repeatable).")
@click.option("--engine", type=click.Choice(["auto", "python"]), default="auto", show_default=True,
              help="python: every row through the Python mapping (slow; for checks).")
@_archive_options
@click.pass_context
def convert(ctx: click.Context, inputs: tuple[str, ...], output: str, fmt: str, side: str | None,
            mode: str, ce_source: str | None, ce_type: str | None, ce_id: str | None,
            ce_subject: str | None, dataschema: str | None, datacontenttype: str | None,
            ce_time: str, extensions: tuple[str, ...], engine: str, routes: tuple[str, ...],
            traces: TraceOptions) -> None:
    """Turn archives into a CloudEvents dataset.

    Messages that carry a CloudEvent (binary or structured mode) give that
    event; plain messages give the event --source/--type make of them (the
    route option 'cloudevents' template syntax: {subject}, {property:KEY} ...)
    or are skipped. Invalid events are kept under OUTPUT/_invalid.
    """
    template = _template(ce_source, ce_type, ce_id, ce_subject, dataschema, datacontenttype,
                         ce_time, extensions)
    spark = _spark(ctx)
    archive = _load(spark, inputs, routes, side, traces)
    from pipeline.convert import convert as run_convert

    try:
        result = run_convert(spark, archive, output, fmt=fmt, template=template,  # type: ignore[arg-type]
                             engine=engine, mode=mode)  # type: ignore[arg-type]
    except Exception as exc:
        raise click.ClickException(f"convert failed: {_first_line(exc)}") from None
    click.echo(
        f"convert: {result.events:,} events written to {result.output} ({result.format}), "
        f"{result.skipped:,} plain messages skipped, {result.invalid:,} invalid; "
        f"{result.python_rows:,} rows through the Python mapping; {result.seconds:.1f}s"
    )
    if result.invalid_output:
        click.echo(f"convert: invalid rows and their errors: {result.invalid_output}", err=True)


def _template(source: str | None, type_: str | None, id_: str | None, subject: str | None,
              dataschema: str | None, datacontenttype: str | None, time: str,
              extensions: tuple[str, ...]) -> Any:
    if source is None and type_ is None:
        if any((id_, subject, dataschema, datacontenttype, extensions)):
            raise click.UsageError("template options need --source and --type")
        return None
    if source is None or type_ is None:
        raise click.UsageError("give both --source and --type to make events of plain messages")
    from pydantic import ValidationError

    from mappings.cloudevents import EventTemplate

    mapping = {}
    for item in extensions:
        name, sep, prop = item.partition("=")
        if not sep or not name or not prop:
            raise click.BadParameter(f"{item!r} is not NAME=PROPERTY", param_hint="--extension")
        mapping[name] = prop
    fields = {"source": source, "type": type_, "id": id_, "subject": subject,
              "dataschema": dataschema, "datacontenttype": datacontenttype, "time": time,
              "extensions": mapping}
    try:
        return EventTemplate(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise click.UsageError(f"invalid event template: {problems}") from None


# --- replay -----------------------------------------------------------------------------------


@pipeline_group.command()
@click.argument("inputs", nargs=-1, required=True)
@click.option("--url", required=True, envvar="AMQP_BRIDGE_REPLAY_URL", show_envvar=True,
              help="AMQP 1.0 peer: amqp[s]://[user:password@]host[:port].")
@click.option("--address", required=True, help="Target address, e.g. /queue/orders.")
@click.option("--side", type=click.Choice(SIDES), default="received", show_default=True,
              help="Which rows to send.")
@click.option("--partitions", type=click.IntRange(min=1), help="Connections (default: the input's partitions).")
@click.option("--rate", type=click.FloatRange(min=0, min_open=True), help="Messages per second, in total.")
@click.option("--window", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Unsettled messages per connection, at most.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Seconds the peer may go without settling anything.")
@click.option("--bare", is_flag=True, help="Send bare messages only (no archived header/annotations).")
@_archive_options
@click.pass_context
def replay(ctx: click.Context, inputs: tuple[str, ...], url: str, address: str, side: str,
           partitions: int | None, rate: float | None, window: int, timeout: float, bare: bool,
           routes: tuple[str, ...], traces: TraceOptions) -> None:
    """Send archived messages to an AMQP 1.0 address, one connection per partition.

    A message counts once the peer accepted it; exits 1 unless every one was.
    """
    spark = _spark(ctx)
    archive = _load(spark, inputs, routes, side, traces)
    from pipeline.replay import ReplayError
    from pipeline.replay import replay as run_replay

    try:
        result = run_replay(spark, archive, url, address, partitions=partitions, rate=rate,
                            window=window, timeout=timeout, head=not bare)
    except ReplayError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{'partition':>9}  {'sent':>9}  {'accepted':>9}  {'rejected':>9}  "
               f"{'released':>9}  {'modified':>9}  {'msg/s':>9}")
    for p in result.partitions:
        rate_text = f"{p.sent / p.seconds:,.0f}" if p.seconds else "-"
        click.echo(f"{p.partition:>9}  {p.sent:>9,}  {p.accepted:>9,}  {p.rejected:>9,}  "
                   f"{p.released:>9,}  {p.modified:>9,}  {rate_text:>9}")
        for condition in p.conditions:
            click.echo(f"partition {p.partition}: rejected: {condition}", err=True)
    sent = result.total("sent")
    click.echo(f"replay: {result.total('accepted'):,} of {sent:,} messages accepted by {address} "
               f"in {result.seconds:.1f}s")
    if not result.complete:
        raise click.ClickException(f"{sent - result.total('accepted'):,} messages were not accepted")


# --- reconcile --------------------------------------------------------------------------------


@pipeline_group.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--target", "targets", multiple=True, metavar="PATH",
              help="Target-side archive (repeatable; default: the source archives).")
@click.option("--key", default="message_id", show_default=True,
              help="Column that identifies a message (message_id, correlation_id, ce_id, ...) "
                   "or 'digest' (SHA-1 of the bare message).")
@click.option("--source-side", type=click.Choice([*SIDES, "all"]), default="received", show_default=True)
@click.option("--target-side", type=click.Choice([*SIDES, "all"]), default="delivered", show_default=True)
@click.option("--report", type=click.Path(dir_okay=False), default="reconcile-report.json",
              show_default=True, help="Where to write the JSON report.")
@click.option("--max-ids", type=click.IntRange(min=0), default=100, show_default=True,
              help="Ids listed per route and kind.")
@_archive_options
@click.pass_context
def reconcile(ctx: click.Context, sources: tuple[str, ...], targets: tuple[str, ...], key: str,
              source_side: str, target_side: str, report: str, max_ids: int,
              routes: tuple[str, ...], traces: TraceOptions) -> None:
    """Check that every message sent was delivered: per route, sent, delivered,
    missing, duplicate and unexpected ids, and end-to-end latency.

    Prints a table, writes the JSON report, and exits 1 when anything is missing.
    """
    spark = _spark(ctx)
    source = _load(spark, sources, routes, None, traces)
    target = _load(spark, targets, routes, None, traces) if targets else source
    from pipeline.reconcile import reconcile as run_reconcile

    try:
        result = run_reconcile(
            source, target, key=key, max_ids=max_ids,
            source_side=None if source_side == "all" else source_side,
            target_side=None if target_side == "all" else target_side,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--key") from None
    Path(report).write_text(result.to_json())
    click.echo(result.table())
    click.echo(f"reconcile: report written to {report}")
    if not result.ok:
        ctx.exit(1)
