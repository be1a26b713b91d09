"""Test-only fault injection: make one named part of a running bridge raise, on demand.

The containment tests (``tests/bridge/test_containment.py``) need an unexpected
exception inside a handler of a *running* bridge process, in exactly the place a real
bug would raise. Nothing reachable from outside raises there (those would be bugs, and
get fixed), so the bridge offers this explicit hook instead:

* ``AMQP_BRIDGE_FAULT_INJECTION=KIND:NAME[,KIND:NAME...]`` in the environment of
  ``amqp-bridge run`` names the targets; it is read once, when the bridge starts
  (:func:`install_from_environment`, from :func:`bridge.app.run`). Without it nothing is
  patched and nothing is hooked: the bridge's code and cost are untouched.
* With it, the bridge logs a WARNING naming the targets, wraps the targets' methods
  (class attributes, replaced before the container starts), and installs a ``SIGUSR1``
  handler. Each ``SIGUSR1`` *arms* every target once; the next call of an armed target
  raises :class:`InjectedFault` (a ``RuntimeError``) and disarms it.

Targets (``NAME`` is the configured name, or the function's name for timers):

``legacy_connection:CONNECTION``   the next event of that legacy connection (0-10 or 0-9-1)
``facade_client:LISTENER``         the next event of a client of that façade listener
                                   (0-10 or 0-9-1)
``amqp10_link:LINK``               the next delivery or flow event of that 1.0 link
                                   (links are named ``ROUTE.target``, ``ROUTE.source``,
                                   ``ROUTE.dead-letter``)
``route:ROUTE``                    the route's next end-of-burst work (0-10 and 0-9-1
                                   client routes)
``timer:FUNCTION``                 the next timer calling a function of that name
                                   (e.g. ``_housekeeping``)
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Mapping
from typing import Any

from . import facade, routes, runtime
from .amqp10 import link as amqp10_link
from .config import ConfigError
from .legacy import amqp010, amqp091

log = logging.getLogger(__name__)

ENV = "AMQP_BRIDGE_FAULT_INJECTION"
KINDS = ("legacy_connection", "facade_client", "amqp10_link", "route", "timer")


class InjectedFault(RuntimeError):
    """The exception an armed target raises."""


class _Injector:
    def __init__(self, targets: list[tuple[str, str]]) -> None:
        self.targets = targets
        self.armed: dict[tuple[str, str], bool] = dict.fromkeys(targets, False)

    def arm(self, signum: int, frame: Any) -> None:
        for target in self.armed:
            self.armed[target] = True

    def patch(self, cls: type, method: str, kind: str,
              matches: Callable[..., bool]) -> None:
        original = getattr(cls, method)
        names = [name for k, name in self.targets if k == kind]
        armed = self.armed

        def injected(obj: Any, *args: Any) -> Any:
            for name in names:
                if armed[(kind, name)] and matches(name, obj, *args):
                    armed[(kind, name)] = False
                    raise InjectedFault(f"fault injected into {kind}:{name}")
            return original(obj, *args)

        injected.__name__ = original.__name__
        injected.__qualname__ = original.__qualname__
        setattr(cls, method, injected)


def parse(spec: str) -> list[tuple[str, str]]:
    """``KIND:NAME[,KIND:NAME...]`` as pairs; a ConfigError names a bad one."""
    targets = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        kind, sep, name = item.partition(":")
        if not sep or not name or kind not in KINDS:
            raise ConfigError([f"{ENV}: {item!r} is not KIND:NAME with KIND one of "
                             f"{', '.join(KINDS)}"])
        targets.append((kind, name))
    return targets


def install_from_environment(environ: Mapping[str, str] = os.environ) -> list[tuple[str, str]]:
    """Install the targets named in ``AMQP_BRIDGE_FAULT_INJECTION`` (none if unset)."""
    spec = environ.get(ENV, "")
    if not spec:
        return []
    targets = parse(spec)
    injector = _Injector(targets)
    kinds = {kind for kind, _ in targets}
    if "legacy_connection" in kinds:
        for connection in (amqp010.LegacyConnection, amqp091.Amqp091Connection):
            injector.patch(connection, "_on_event", "legacy_connection",
                           lambda name, conn, sock, ev: conn.name == name and sock is conn.socket)
    if "facade_client" in kinds:
        for listener in (facade.Facade, facade.Facade091):
            injector.patch(listener, "_on_event", "facade_client",
                           lambda name, fac, sock, ev: fac.name == name and sock in fac.clients)
    if "amqp10_link" in kinds:
        for method in ("on_delivery", "on_link_flow"):
            injector.patch(amqp10_link.Amqp10Link, method, "amqp10_link",
                           lambda name, link, ev: link.name == name and ev.link == link.link)
    if "route" in kinds:
        for cls in (routes.LegacyToAmqp10, routes.Amqp10ToLegacy):
            injector.patch(cls, "end_of_burst", "route",
                           lambda name, route: route.name == name)
    if "timer" in kinds:
        injector.patch(runtime.Timer, "on_timer_task", "timer",
                       lambda name, task, ev: getattr(task.fn, "__name__", "") == name)
    signal.signal(signal.SIGUSR1, injector.arm)
    log.warning("fault injection enabled (%s): SIGUSR1 arms %s", ENV,
                ", ".join(f"{k}:{n}" for k, n in targets),
                extra={"event": "fault_injection_enabled", "targets": spec})
    return targets


__all__ = ["ENV", "InjectedFault", "install_from_environment", "parse"]
