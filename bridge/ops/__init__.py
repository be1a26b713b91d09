"""Operations: what the bridge tells its operators, off the message path.

- :mod:`.metrics`: a small HTTP server on its own thread serving Prometheus
  ``/metrics``, ``/healthz`` and ``/readyz`` from plain counters the loop keeps (it only
  reads them); :class:`.metrics.ObservedRoute` is what it needs of a route.
- :mod:`.logs`: every log line as ``key=value`` pairs or JSON with secrets redacted,
  and the rate limits that keep a misbehaving peer from flooding the log.

Imports nothing else of the bridge but the configuration.
"""
