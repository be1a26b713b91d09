"""``convert``: an archive → a CloudEvents dataset (JSON lines or Parquet).

Which rows become events: a message carrying a CloudEvent (either content
mode) gives that event; a plain message gives the event an
:class:`~mappings.cloudevents.EventTemplate` derives from it, or is skipped
when there is no template; a message that claims to be a CloudEvent but is not
a valid one is invalid (kept under ``<output>/_invalid``).

The hot path is native Spark SQL over the archive's extracted columns: binary
mode events, and templated events whose template only reads columns the
archive has. Every other row goes through the shared Python mapping
(:class:`pipeline.events.EventMapper`, via ``mapInArrow``); both paths produce
the same event rows, and one SQL tail renders them.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from mappings.cloudevents import EventTemplate
from mappings.cloudevents.content import is_json
from mappings.cloudevents.template import TEXT_CONTENT_TYPE, compile_pattern
from mappings.cloudevents.typesystem import format_time
from pipeline.events import EVENT_DDL, MAPPER_INPUT, EventMapper
from pipeline.session import apply_job_conf

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

Format = Literal["jsonl", "parquet"]
Engine = Literal["auto", "python"]
INVALID_DIR = "_invalid"
"""Sub-directory of the output holding invalid rows (Spark readers skip ``_`` names)."""

# template placeholders the archive has a column for (same text form as the template's)
_PLACEHOLDER_COLUMNS = {
    "subject": "subject",
    "message_id": "message_id",
    "correlation_id": "correlation_id",
    "content_type": "content_type",
}
_PRINTABLE = r"^[ -~]+$"  # what CloudEvent accepts without further checks: printable ASCII
_URI = r"^[A-Za-z][A-Za-z0-9+.\-]*:"
_MAX_DATETIME_MS = 253402300799999  # 9999-12-31T23:59:59.999Z
_VALUE_BODIES = ("null", "string", "symbol", "binary")


@dataclass(frozen=True)
class ConvertResult:
    """What a convert job did."""

    output: str
    format: str
    events: int
    skipped: int
    invalid: int
    python_rows: int
    """Rows that went through the Python mapping rather than native SQL."""
    invalid_output: str | None
    seconds: float


def convert(
    spark: SparkSession,
    archive: DataFrame,
    output: str,
    *,
    fmt: Format = "jsonl",
    template: EventTemplate | None = None,
    now: datetime | None = None,
    engine: Engine = "auto",
    mode: str = "errorifexists",
) -> ConvertResult:
    """Write the CloudEvents of ``archive`` rows to ``output``.

    ``fmt="jsonl"``: one JSON event format document per line (inline JSON data
    keeps its bytes, except that line breaks between tokens become spaces);
    ``fmt="parquet"``: one column per core attribute, ``extensions`` (a map of
    their canonical strings), ``time`` as a timestamp and ``data`` as binary.
    ``now`` (default: the job's start) is the time templates use for ``now``.
    ``engine="python"`` sends every row through the Python mapping (for
    parity checks). ``mode`` is Spark's save mode.
    """
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    if fmt not in ("jsonl", "parquet"):
        raise ValueError(f"format must be 'jsonl' or 'parquet', not {fmt!r}")
    if engine not in ("auto", "python"):
        raise ValueError(f"engine must be 'auto' or 'python', not {engine!r}")
    started = time.monotonic()
    apply_job_conf(spark)
    now = (now or datetime.now(UTC)).astimezone(UTC)
    now = now.replace(microsecond=now.microsecond // 1000 * 1000)
    plan = _Plan(template, now)
    python_rows: int | None = None  # all of them
    if engine == "python":
        events = plan.python(archive)
    else:
        python_rows = archive.where(plan.needs_python).count()
        events = plan.native(archive.where(~plan.needs_python))
        if python_rows:
            events = events.unionByName(plan.python(archive.where(plan.needs_python)))
    observation = Observation("convert")
    observed = events.observe(
        observation,
        F.count(F.lit(1)).alias("rows"),
        F.count_if(events.status == "event").alias("events"),
        F.count_if(events.status == "skipped").alias("skipped"),
        F.count_if(events.status == "invalid").alias("invalid"),
    )
    ok = observed.where(observed.status == "event")
    if fmt == "jsonl":
        _json_lines(ok).write.mode(mode).text(output)
    else:
        _parquet_columns(ok).write.mode(mode).parquet(output)
    counts = observation.get
    invalid_output = None
    if counts["invalid"]:
        invalid_output = f"{output.rstrip('/')}/{INVALID_DIR}"
        invalid = events.where(events.status == "invalid")
        invalid.select("route", "side", "archived", "message_id", "error").write.mode(
            "overwrite"
        ).parquet(invalid_output)
    return ConvertResult(
        output=output,
        format=fmt,
        events=counts["events"],
        skipped=counts["skipped"],
        invalid=counts["invalid"],
        python_rows=counts["rows"] if python_rows is None else python_rows,
        invalid_output=invalid_output,
        seconds=time.monotonic() - started,
    )


class _Plan:
    """The native expressions of one convert job, and which rows need Python instead."""

    def __init__(self, template: EventTemplate | None, now: datetime) -> None:
        from pyspark.sql import functions as F

        self.template = template
        self.now = now
        self.now_text = format_time(now)
        self.native_template = template is not None and _native_template(template)
        binary = F.col("ce_mode") == "binary"
        binary_native = (
            binary
            & F.col("body_size").isNotNull()
            & F.col("content_type").eqNullSafe(F.col("ce_datacontenttype"))
        )
        python = F.col("ce_error").isNull() & (
            (binary & ~binary_native) | (F.col("ce_mode") == "structured")
        )
        if template is not None:
            plain = F.col("ce_mode").isNull() & F.col("ce_error").isNull()
            if self.native_template:
                python = python | (plain & ~self._template_row_is_native())
            else:
                python = python | plain
        # SQL's three-valued logic: a null here (no term true) means "no"
        self.needs_python: Column = F.coalesce(python, F.lit(False))

    # --- the Python path --------------------------------------------------------------------

    def python(self, rows: DataFrame) -> DataFrame:
        template = None if self.template is None else self.template.model_dump(exclude_none=True)
        return rows.select(*MAPPER_INPUT).mapInArrow(EventMapper(template, self.now), EVENT_DDL)

    # --- the native path --------------------------------------------------------------------

    def native(self, rows: DataFrame) -> DataFrame:
        """Event rows for rows that do not need Python (:attr:`needs_python` is false)."""
        from pyspark.sql import functions as F

        col = F.col
        status = (
            F.when(col("ce_error").isNotNull(), "invalid")
            .when(col("ce_mode").isNotNull(), "event")
            .when(F.lit(self.template is not None), "event")
            .otherwise("skipped")
        )
        binary = {
            "specversion": col("ce_specversion"),
            "id": col("ce_id"),
            "source": col("ce_source"),
            "type": col("ce_type"),
            "datacontenttype": col("ce_datacontenttype"),
            "dataschema": col("ce_dataschema"),
            "subject": col("ce_subject"),
            "time": col("ce_time"),
            "extensions": col("ce_extensions"),
            "data_inline": F.coalesce(col("body_json"), F.lit(False)),
        }
        templated = self._template_columns() if self.native_template else {}
        is_event = col("ce_mode").isNotNull()
        columns = []
        for name in ("specversion", "id", "source", "type", "datacontenttype", "dataschema",
                     "subject", "time", "extensions", "data_inline"):
            value = binary[name]
            if name in templated:
                value = F.when(is_event, value).otherwise(templated[name])
            columns.append(F.when(status == "event", value).alias(name))
        payload = F.when(
            (status == "event") & (col("body_size") > 0),
            F.substring(col("bare"), -col("body_size"), col("body_size")),
        )
        return rows.select(
            col("route"),
            col("side"),
            col("time").alias("archived"),
            col("message_id"),
            status.alias("status"),
            F.when(status == "invalid", col("ce_error")).alias("error"),
            *columns[:9],
            payload.alias("data"),
            columns[9],
        )

    def _template_columns(self) -> dict[str, Column]:
        from pyspark.sql import functions as F

        template = self.template
        assert template is not None
        col = F.col
        out = {
            "specversion": F.lit("1.0"),
            "source": _pattern(template.source),
            "type": _pattern(template.type),
            "extensions": F.lit(None).cast("string"),
        }
        if template.id is not None:
            out["id"] = _pattern(template.id)
        else:
            derived = F.md5(
                F.concat(
                    F.encode(col("route"), "UTF-8"),
                    F.lit(b"\0"),
                    F.encode(F.unix_micros(col("time")).cast("string"), "UTF-8"),
                    F.lit(b"\0"),
                    col("bare"),
                )
            )
            out["id"] = F.coalesce(col("message_id"), derived)
        for name in ("subject", "dataschema"):
            pattern = getattr(template, name)
            out[name] = F.lit(None).cast("string") if pattern is None else _pattern(pattern)
        text_body = col("body_type").isin("string", "symbol")
        if template.datacontenttype is not None:
            out["datacontenttype"] = F.lit(template.datacontenttype)
            inline = F.lit(is_json(template.datacontenttype)) & F.coalesce(col("body_json"), F.lit(False))
        else:
            out["datacontenttype"] = F.coalesce(
                col("content_type"), F.when(text_body, F.lit(TEXT_CONTENT_TYPE))
            )
            inline = F.coalesce(col("body_json"), F.lit(False)) & ~(
                col("content_type").isNull() & text_body
            )
        out["data_inline"] = inline
        if template.time == "none":
            out["time"] = F.lit(None).cast("string")
        elif template.time == "now":
            out["time"] = F.lit(self.now_text)
        else:
            out["time"] = F.coalesce(_millis_text(col("creation_time_ms")), F.lit(self.now_text))
        return out

    def _template_row_is_native(self) -> Column:
        """Whether a plain row's templated event can be built natively, exactly as Python would."""
        from pyspark.sql import functions as F

        template = self.template
        assert template is not None
        col = F.col
        ok = col("body_size").isNotNull() & (
            col("body_type").isNull() | col("body_type").isin(*_VALUE_BODIES)
        )
        ok &= col("creation_time_ms").isNull() | col("creation_time_ms").between(0, _MAX_DATETIME_MS)
        for pattern in (template.source, template.type, template.id, template.subject):
            if pattern is not None:
                ok &= F.coalesce(_pattern(pattern).rlike(_PRINTABLE), F.lit(False))
        if template.dataschema is not None:
            schema = _pattern(template.dataschema)
            ok &= F.coalesce(schema.rlike(_PRINTABLE) & schema.rlike(_URI), F.lit(False))
        if template.id is None:
            ok &= col("message_id").isNull() | col("message_id").rlike(_PRINTABLE)
        if template.datacontenttype is None:
            ok &= col("content_type").isNull() | col("content_type").rlike(_PRINTABLE)
        elif is_json(template.datacontenttype):
            # inline or not depends on JSON validity, checked by the archive only for JSON content types
            ok &= col("body_json").isNotNull() | (col("body_size") == 0)
        return ok


def _native_template(template: EventTemplate) -> bool:
    """Whether every template field is literal text or a placeholder the archive has a column for."""
    if template.extensions:
        return False
    content_type = template.datacontenttype
    if content_type is not None and not re.fullmatch(_PRINTABLE, content_type):
        return False
    for pattern in (template.source, template.type, template.id, template.subject, template.dataschema):
        if pattern is None:
            continue
        for part in compile_pattern(pattern):
            if not isinstance(part, str) and part[0] not in _PLACEHOLDER_COLUMNS:
                return False
    return True


def _pattern(pattern: str) -> Column:
    """A template string as a column: literal text and placeholder columns (null if one is null)."""
    from pyspark.sql import functions as F

    parts = [
        F.lit(part) if isinstance(part, str) else F.col(_PLACEHOLDER_COLUMNS[part[0]])
        for part in compile_pattern(pattern)
    ]
    return parts[0] if len(parts) == 1 else F.concat(*parts)


def _millis_text(millis: Column) -> Column:
    """An AMQP timestamp (ms) as RFC 3339 text, as the mapping formats it (UTC session time)."""
    from pyspark.sql import functions as F

    seconds = F.date_format(F.timestamp_millis(millis), "yyyy-MM-dd'T'HH:mm:ss")
    fraction = millis % 1000
    return F.concat(
        seconds,
        F.when(fraction == 0, F.lit("")).otherwise(
            F.concat(F.lit("."), F.lpad(fraction.cast("string"), 3, "0"))
        ),
        F.lit("Z"),
    )


def _json_lines(events: DataFrame) -> DataFrame:
    """One JSON event format document per row, in the member order of the mapping's ``to_json``."""
    from pyspark.sql import functions as F

    col = F.col
    core = F.to_json(
        F.struct(
            *(col(name) for name in ("specversion", "id", "source", "type", "datacontenttype",
                                     "dataschema", "subject", "time"))
        )
    )
    extensions = F.concat(F.lit(","), F.expr("substring(extensions, 2, length(extensions) - 2)"))
    data = (
        F.when(col("data").isNull(), F.lit(""))
        .when(
            col("data_inline"),
            F.concat(F.lit(',"data":'), F.translate(col("data").cast("string"), "\r\n", "  ")),
        )
        .otherwise(F.concat(F.lit(',"data_base64":"'), F.base64(col("data")), F.lit('"')))
    )
    line = F.concat(
        F.expr("substring(core, 1, length(core) - 1)"),
        F.coalesce(extensions, F.lit("")),
        data,
        F.lit("}"),
    )
    return events.select(core.alias("core"), "extensions", "data", "data_inline").select(
        line.alias("value")
    )


def _parquet_columns(events: DataFrame) -> DataFrame:
    """The Parquet output columns."""
    from pyspark.sql import functions as F

    return events.select(
        "specversion",
        "id",
        "source",
        "type",
        "datacontenttype",
        "dataschema",
        "subject",
        F.col("time").cast("timestamp").alias("time"),
        F.from_json("extensions", "map<string,string>").alias("extensions"),
        "data",
    )
