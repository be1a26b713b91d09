"""What the 0-10 and 0-9-1 route endpoints share: :class:`LegacyEndpointBase`.

Theory of operation
-------------------
Every legacy endpoint (:mod:`bridge.routes.amqp010_endpoint`,
:mod:`bridge.routes.amqp091_endpoint`) is one route's place on one legacy client
connection (:class:`~bridge.legacy.client.LegacyClient`): it names the route, translates
with the route's :class:`~bridge.routes.translate.Translator`, and borrows the
connection's back-pressure and end-of-burst batching. What is left to each protocol is
what its session (0-10) or channel (0-9-1) is: :attr:`LegacyEndpointBase.attached`, and
the word for it in :meth:`LegacyEndpointBase.waiting_for` (:attr:`~LegacyEndpointBase.unit`).
"""

from __future__ import annotations

from collections.abc import Callable

from ..config import Route
from ..legacy.client import LegacyClient
from .translate import Translator


class LegacyEndpointBase:
    """One route's session or channel on a legacy connection (module docstring)."""

    unit = "session"
    """What the protocol gives a route on the connection (``waiting_for`` names it)."""

    def __init__(self, connection: LegacyClient, route: Route) -> None:
        self.name = route.name
        """The route's name (the connection's logs name the route's session by it)."""
        self.route = route
        self.connection_name = connection.name
        self.translator = Translator(route)
        self.progress = False
        """The current session or channel has moved a message."""
        self._client = connection

    @property
    def attached(self) -> bool:
        """The session or channel is usable now (the protocol says how)."""
        raise NotImplementedError

    @property
    def backpressured(self) -> bool:
        return self._client.backpressured

    def defer(self, fn: Callable[[], None]) -> None:
        self._client.defer(fn)

    def waiting_for(self) -> list[str]:
        """What is missing on this side (empty: nothing); safe from any thread."""
        if self.attached:
            return []
        return [f"{self._client.short} {self.unit} on {self.connection_name}"]


__all__ = ["LegacyEndpointBase"]
