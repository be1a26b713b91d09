"""``reconcile``: did everything that went in come out? Source-side vs target-side archives.

Rows are matched per route by a key column (``message_id`` by default). For
each route: ``sent`` (source rows), ``delivered`` (target rows), ``missing``
(keys sent but never delivered), ``duplicates`` (keys delivered more than
once), ``unexpected`` (keys delivered but never sent), rows without a key on
either side, and the end-to-end latency of matched keys (first delivery time
minus first source time) at p50 and p99.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

KEY_DIGEST = "digest"
"""The ``key`` that matches rows by a SHA-1 of their bare message instead of a column."""


@dataclass
class RouteReport:
    """Reconciliation of one route."""

    route: str
    sent: int = 0
    delivered: int = 0
    missing: int = 0
    duplicates: int = 0
    unexpected: int = 0
    unkeyed_sent: int = 0
    unkeyed_delivered: int = 0
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    missing_ids: list[str] = field(default_factory=list)
    duplicate_ids: list[str] = field(default_factory=list)
    unexpected_ids: list[str] = field(default_factory=list)


@dataclass
class ReconcileReport:
    """The whole reconciliation; ``ok`` when no route misses anything."""

    key: str
    source_side: str
    target_side: str
    max_ids: int
    routes: list[RouteReport]
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(route.missing == 0 for route in self.routes)

    def to_json(self) -> str:
        """The report as JSON (``routes``, ``totals``, ``ok``)."""
        doc: dict[str, Any] = asdict(self)
        totals = {
            name: sum(getattr(route, name) for route in self.routes)
            for name in ("sent", "delivered", "missing", "duplicates", "unexpected",
                         "unkeyed_sent", "unkeyed_delivered")
        }
        doc.update(totals=totals, ok=self.ok)
        return json.dumps(doc, indent=2)

    def table(self) -> str:
        """A fixed-width table, one line per route, then the ids (up to ``max_ids`` each)."""
        headers = ("route", "sent", "delivered", "missing", "duplicates", "unexpected",
                   "unkeyed", "p50 ms", "p99 ms")
        lines = [
            (
                route.route,
                f"{route.sent:,}",
                f"{route.delivered:,}",
                f"{route.missing:,}",
                f"{route.duplicates:,}",
                f"{route.unexpected:,}",
                f"{route.unkeyed_sent + route.unkeyed_delivered:,}",
                _ms(route.latency_p50_ms),
                _ms(route.latency_p99_ms),
            )
            for route in self.routes
        ]
        widths = [max(len(row[i]) for row in [headers, *lines]) for i in range(len(headers))]
        out = []
        for row in [headers, *lines]:
            cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
            out.append("  ".join(cells))
        for route in self.routes:
            for label, ids, total in (
                ("missing", route.missing_ids, route.missing),
                ("duplicate", route.duplicate_ids, route.duplicates),
                ("unexpected", route.unexpected_ids, route.unexpected),
            ):
                if ids:
                    more = f" (first {len(ids)} of {total:,})" if total > len(ids) else ""
                    out.append(f"{route.route}: {label} {self.key}s{more}: {', '.join(ids)}")
        out.append("OK: nothing missing" if self.ok else "FAILED: messages are missing")
        return "\n".join(out)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def reconcile(
    source: DataFrame,
    target: DataFrame,
    *,
    key: str = "message_id",
    source_side: str | None = "received",
    target_side: str | None = "delivered",
    max_ids: int = 100,
) -> ReconcileReport:
    """Reconcile ``source`` archive rows against ``target`` archive rows, per route.

    ``key`` is an archive column (``message_id``, ``correlation_id``,
    ``ce_id``, ...) or :data:`KEY_DIGEST`. ``source_side`` / ``target_side``
    select the rows of each archive (``None``: all rows), so one tap archive
    with both sides reconciles against itself. At most ``max_ids`` ids of each
    kind are listed per route.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    started = time.monotonic()
    key_column = _key(key, source)
    src = _side(source, source_side).select("route", key_column.alias("key"), "time")
    dst = _side(target, target_side).select("route", key_column.alias("key"), "time")

    def per_key(rows: DataFrame, prefix: str) -> DataFrame:
        return rows.where(F.col("key").isNotNull()).groupBy("route", "key").agg(
            F.count(F.lit(1)).alias(f"{prefix}_n"), F.min("time").alias(f"{prefix}_time")
        )

    keys = per_key(src, "src").join(per_key(dst, "dst"), ["route", "key"], "full_outer")
    keys = keys.withColumn(
        "latency_ms",
        (F.unix_micros("dst_time") - F.unix_micros("src_time")) / F.lit(1000.0),
    ).cache()
    try:
        summary = _summary(src, dst, keys)
        kind = (
            F.when(F.col("dst_n").isNull(), "missing")
            .when(F.col("src_n").isNull(), "unexpected")
            .when(F.col("dst_n") > 1, "duplicate")
        )
        listed = (
            keys.select("route", "key", kind.alias("kind"))
            .where(F.col("kind").isNotNull())
            .withColumn("n", F.row_number().over(Window.partitionBy("route", "kind").orderBy("key")))
            .where(F.col("n") <= max_ids)
            .select("route", "kind", "key")
            .collect()
        )
    finally:
        keys.unpersist()
    for row in listed:
        report = summary[row.route]
        getattr(report, f"{row.kind}_ids").append(row.key)
    for report in summary.values():
        for name in ("missing_ids", "duplicate_ids", "unexpected_ids"):
            getattr(report, name).sort()
    return ReconcileReport(
        key=key,
        source_side=source_side or "all",
        target_side=target_side or "all",
        max_ids=max_ids,
        routes=[summary[name] for name in sorted(summary)],
        seconds=time.monotonic() - started,
    )


def _key(key: str, archive: DataFrame) -> Column:
    from pyspark.sql import functions as F

    if key == KEY_DIGEST:
        return F.sha1("bare")
    if key not in archive.columns or key in ("bare", "head", "application_properties"):
        raise ValueError(f"cannot match rows by {key!r}: give an archive column such as "
                         f"message_id, correlation_id or ce_id, or {KEY_DIGEST!r}")
    return F.col(key).cast("string")


def _side(archive: DataFrame, side: str | None) -> DataFrame:
    return archive if side is None else archive.where(archive.side == side)


def _summary(src: DataFrame, dst: DataFrame, keys: DataFrame) -> dict[str, RouteReport]:
    from pyspark.sql import functions as F

    def counts(rows: DataFrame, prefix: str) -> DataFrame:
        return rows.groupBy("route").agg(
            F.count(F.lit(1)).alias(prefix),
            F.count_if(F.col("key").isNull()).alias(f"unkeyed_{prefix}"),
        )

    per_key = keys.groupBy("route").agg(
        F.count_if(F.col("dst_n").isNull()).alias("missing"),
        F.count_if(F.col("dst_n") > 1).alias("duplicates"),
        F.count_if(F.col("src_n").isNull()).alias("unexpected"),
        F.percentile("latency_ms", [0.5, 0.99]).alias("latency"),
    )
    rows = (
        counts(src, "sent")
        .join(counts(dst, "delivered"), "route", "full_outer")
        .join(per_key, "route", "full_outer")
        .collect()
    )
    summary = {}
    for row in rows:
        latency = row.latency or [None, None]
        summary[row.route] = RouteReport(
            route=row.route,
            sent=row.sent or 0,
            delivered=row.delivered or 0,
            missing=row.missing or 0,
            duplicates=row.duplicates or 0,
            unexpected=row.unexpected or 0,
            unkeyed_sent=row.unkeyed_sent or 0,
            unkeyed_delivered=row.unkeyed_delivered or 0,
            latency_p50_ms=latency[0],
            latency_p99_ms=latency[1],
        )
    return summary
