"""Pure message-mapping functions: AMQP 0-10 <-> AMQP 1.0 <-> CloudEvents (no I/O).

- :mod:`~mappings.message`: the AMQP 1.0 message model (:class:`AmqpMessage`), its
  section types (:mod:`~mappings.sections`), and its wire form: the fast codec
  (:mod:`~mappings.fast_codec`) with proton's codec (:mod:`~mappings.proton_codec`)
  as the reference and the fallback for rarer types;
- :mod:`~mappings.amqp010` (with :mod:`~mappings.amqp010_values`): AMQP 0-10 ⇄ 1.0;
- :mod:`~mappings.amqp091` (with :mod:`~mappings.amqp091_values`): AMQP 0-9-1 ⇄ 1.0, on
  pamqp's property and method types (not yet wired into the bridge: issue 14);
- :mod:`~mappings.rabbitmq_annotations`: what RabbitMQ 4 annotates a 1.0 delivery with
  (dead letters' deaths, stream offsets, quorum delivery counts) as its own 0-9-1
  consumers get it (headers ``x-death`` …, the dead-letter routing);
- :mod:`~mappings.user_id`: the route option ``user_id``, one rule for both legacy mappings;
- :mod:`~mappings.cloudevents`: CloudEvents over AMQP 1.0, both modes, and templates.

Of our code the package imports only itself and the AMQP 0-10 codec modules
(``amqp010``'s values, structs and frames; of other libraries proton's types and
pamqp's), never the engine, the bridge or the pipeline
(``tests/test_layering.py``).
"""
