"""amqp-bridge: a bridge between AMQP 1.0 and legacy AMQP 0-10 messaging.

Theory of operation
-------------------
The application layer, on top of the 0-10 library (:mod:`amqp010`) and the message
mappings (:mod:`mappings`). Everything runs on one python-qpid-proton event loop
(:mod:`.runtime`): AMQP 1.0 connections and links are proton's (:mod:`.amqp10`), every
AMQP 0-10 socket — to legacy brokers (:mod:`.legacy`) or from legacy applications to the
façade (:mod:`.facade`) — is a selectable on the same loop. A route (:mod:`.routes`)
takes a message from its source only when its target has room, sends it unsettled and
settles the source with the target's outcome (at-least-once). :mod:`.app` builds all of
it from the validated configuration (:mod:`.config`) and runs it; :mod:`.ops` and
:mod:`.security` serve operators and guard the edges; :mod:`.cli` is the ``amqp-bridge``
command; :mod:`.accelerated` loads the optional mypyc-compiled build when asked for
(docs/operations.md). Sub-packages import downwards only: runtime ← amqp10, legacy ← routes ← façade
← app. docs/architecture.md is the ten-minute tour.
"""

__version__ = "0.1.0"

# Before anything imports a hot module: the compiled ones if AMQP_BRIDGE_ACCELERATED asks for
# them (bridge/accelerated.py; nothing happens without it).
from .accelerated import install_from_environment

install_from_environment()
