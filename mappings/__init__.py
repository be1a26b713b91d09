"""Pure message-mapping functions: AMQP 0-10 <-> AMQP 1.0 <-> CloudEvents (no I/O).

- :mod:`~mappings.message`: the AMQP 1.0 message model (:class:`AmqpMessage`), its
  section types (:mod:`~mappings.sections`), and its wire form: the fast codec
  (:mod:`~mappings.fast_codec`) with proton's codec (:mod:`~mappings.proton_codec`)
  as the reference and the fallback for rarer types;
- :mod:`~mappings.amqp010` (with :mod:`~mappings.amqp010_values`): AMQP 0-10 ⇄ 1.0;
- :mod:`~mappings.cloudevents`: CloudEvents over AMQP 1.0, both modes, and templates.

The package imports only itself and the AMQP 0-10 codec modules (``amqp010``'s
values, structs and frames), never the engine, the bridge or the pipeline
(``tests/test_layering.py``).
"""
