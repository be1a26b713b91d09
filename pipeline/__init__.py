"""The amqp-bridge data pipeline: message archives, and Spark jobs over them.

Two layers, kept apart so that the bridge never imports Spark:

- the archive, needs pyarrow only: the Parquet format of docs/archive.md
  (:mod:`~pipeline.rows`, :mod:`~pipeline.sections`, :mod:`~pipeline.schema`),
  the bridge's ``tap`` (:mod:`~pipeline.tap`) and its writer
  (:mod:`~pipeline.archive`, :mod:`~pipeline.handoff`, :mod:`~pipeline.filewriter`),
  and AMQP 0-10 traces read as archives (:mod:`~pipeline.trace`);
- the Spark jobs, with the ``spark`` extra (``pip install amqp-bridge[spark]``):
  :mod:`~pipeline.session`, :mod:`~pipeline.inputs`, :mod:`~pipeline.convert`
  (with :mod:`~pipeline.events`), :mod:`~pipeline.replay` (with
  :mod:`~pipeline.sink` and :mod:`~pipeline.sender`), :mod:`~pipeline.reconcile`,
  and the command line, :mod:`~pipeline.cli`.

This package's ``__init__`` imports nothing, so importing any archive module
never pulls in Spark. The pipeline imports ``mappings`` and the 0-10 library,
never the bridge; the bridge reaches the pipeline only through
:mod:`~pipeline.bridge_api` (the tap's configuration and writers, and the
``pipeline`` commands).
"""
