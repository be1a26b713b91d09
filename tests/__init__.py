"""The test suite. Importing :mod:`bridge` first installs the accelerated build when
``AMQP_BRIDGE_ACCELERATED`` asks for it (bridge/accelerated.py), before any test module
imports a module it compiles."""

import bridge  # noqa: F401
