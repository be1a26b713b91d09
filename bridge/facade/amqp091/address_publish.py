"""A topology-mode listener's publishes on RabbitMQ 3.x: a 1.0 sender per address.

RabbitMQ 3.x's AMQP 1.0 plugin never answers an attach to the anonymous terminus, so a
topology-mode listener in front of it (``broker: rabbitmq3``) cannot publish as on 4.x
(one sender, each message's ``to`` its address). :class:`AddressPublishers` sends each
publish on a sender to the backend's ``publish_address(exchange, routing key)``
(``/exchange/X``, ``/queue`` for the default exchange: RabbitMQ 3.x routes them by the
message's subject, which the mapping makes the routing key). So there is one sender per
exchange, and a channel's publishes to one exchange keep their order, as over 0-9-1.
A message whose subject is not its key (a header ``x-amqp-1.0.subject``) goes to the
key's own address (``/exchange/X/K``, ``/amq/queue/K``).

Theory of operation
-------------------
:class:`AddressPublishers` is the listener's one publish route (``<listener>.topology``
in metrics, logs and the graceful stop, as the anonymous sender is on 4.x). It holds
an :class:`AddressPublish091` per address, made at the first publish to it and shared
by every client of the listener. Each is a
:class:`~bridge.facade.amqp091.topology.TopologyPublish091` (so the façade's in-flight
bound, confirms, throttling and stop rule) whose sender attaches to its address; they
count into the group's statistics, and a client publishing through the group is
throttled while any of them is (one bound per sender, as a configured route's).

Bounded: a sender with nothing in flight is closed ``publish_link_idle_timeout``
seconds after its last publish; at most ``max_publish_links`` exist — past it the
least recently used idle one is closed, and when none is idle the publish is
refused (basic.nack in confirm mode, else channel.close 406), counted and logged.

What RabbitMQ 3.x answers (tested against 3.10):

- a message routed to no queue is *accepted* and dropped: the publisher's confirm is
  basic.ack, and a mandatory publish gets no basic.return (the plugin publishes
  without ``mandatory``; nothing reports it);
- an attach to ``/exchange/X/…`` of an exchange that does not exist, or a message to
  one deleted since, ends the sender's session with ``amqp:not-found`` ("NOT_FOUND -
  no exchange 'X' in vhost '/'"): every publish waiting for that sender or in flight
  on it is answered as RabbitMQ answers a publish to a missing exchange — its channel
  closed with 404 — and the sender is dropped (the next publish attaches afresh);
  ``amqp:unauthorized-access`` likewise closes the channels with 403;
- an exchange name holding ``/`` cannot be written in a v1 address (RabbitMQ refuses
  the attach, ``amqp:invalid-field``), nor, in the key's own address, a key holding
  ``/`` or an empty one: such a publish is refused at once, like one past the cap; a
  publish to the default exchange with an empty key is unroutable.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from amqp091.events import MessageReceived
from amqp091.methods import ReplyCode
from mappings.amqp091 import H_SUBJECT

from ...amqp10.link import Amqp10Link
from ...config import Route
from ...routes.stats import RouteStats
from ...runtime import Timer
from ...runtime.containment import Part
from ...topology.rabbitmq091 import RabbitMQ091Topology
from ..core.publish import PublishEntry
from ..core.state import waiting_for
from .state import Channel091
from .topology import TopologyMode, TopologyPublish091

if TYPE_CHECKING:
    from proton.reactor import Container

    from .listener import Facade091

log = logging.getLogger("bridge.facade")

REFUSING_CONDITIONS = {
    "amqp:not-found": ReplyCode.NOT_FOUND,
    "amqp:unauthorized-access": ReplyCode.ACCESS_REFUSED,
}
"""A sender's session ended with one of these: its publishes are refused at once with
the 0-9-1 code (RabbitMQ's answer to a publish to that exchange), the sender dropped."""


class AddressPublish091(TopologyPublish091):
    """The publishes of a topology-mode listener to one 1.0 address (module docstring)."""

    def __init__(self, container: Container, route: Route, facade: Facade091, amqp10: Any,
                 mode: TopologyMode, group: AddressPublishers) -> None:
        super().__init__(container, route, facade, amqp10, mode, anonymous=False)
        self.group = group
        self.address = route.target.address or ""
        self.stats = group.stats  # one route, <listener>.topology, in metrics and logs
        self.last_used = time.monotonic()

    @property
    def idle(self) -> bool:
        """Nothing waits for the sender or is in flight on it."""
        return self.pending == 0

    def on_void(self, items: list[PublishEntry], culprit: PublishEntry | None,
                link: Amqp10Link) -> None:
        """The sender was lost: a missing exchange or permission (module docstring)
        refuses what it held, else it is sent again on a fresh link."""
        code = REFUSING_CONDITIONS.get(link.last_condition or "")
        if code is None:
            super().on_void(items, culprit, link)
            return
        entries = [*items, *([culprit] if culprit is not None else []), *self.waiting]
        self.waiting.clear()
        self.group.drop(self)
        for entry in entries:
            self._refuse(entry, code, link.last_error or "")
        self._recount()

    def _refuse(self, entry: PublishEntry, code: int, error: str) -> None:
        """Close the publisher's channel over ``entry`` as RabbitMQ closes it."""
        self.stats.rejected += 1
        self.bytes -= entry.size
        ch: Any = entry.st
        method: Any = entry.command
        vhost = ch.client.virtual_host or "/"
        if code == ReplyCode.NOT_FOUND:
            text = f"NOT_FOUND - no exchange '{method.exchange}' in vhost '{vhost}'"
        else:
            text = f"ACCESS_REFUSED - {error}"
        self.facade.publish_refused(ch.client.sock.peer, f"{text} ({error})", route=self.name)
        self.facade.refuse_publish(ch, code, text)

    def _recount(self, also_pending: int = 0) -> None:
        super()._recount(also_pending)
        self.group.recount()


class AddressPublishers:
    """A topology-mode listener's publishes on RabbitMQ 3.x, one 1.0 sender per address
    (module docstring); to the bridge, one publish route."""

    def __init__(self, container: Container, route: Route, facade: Facade091, amqp10: Any,
                 mode: TopologyMode) -> None:
        settings = mode.settings
        self.container = container
        self.route = route
        self.name = route.name
        self.facade = facade
        self.amqp10 = amqp10
        self.mode = mode
        backend = mode.backend
        assert isinstance(backend, RabbitMQ091Topology)
        self.backend = backend
        self.stats = RouteStats()
        self.limit_messages = route.max_in_flight.messages
        self.max_links = settings.max_publish_links
        self.idle_timeout = settings.publish_link_idle_timeout
        self.tap: Any = None
        self.senders: dict[str, AddressPublish091] = {}
        """The senders by address, least recently used first."""
        self._sweep_due = False

    # -- publishing (the listener's) --------------------------------------------------------

    def publish091(self, ch: Channel091, ev: MessageReceived, fence: str | None = None) -> None:
        """Send a client's publish on its address's sender (made now if there is none);
        ``fence`` is always None here (local delivery is RabbitMQ 4's only)."""
        method: Any = ev.method
        exchange, key = method.exchange or "", method.routing_key or ""
        if exchange == "" and key == "":
            self.facade.unroutable(ch, method, ev.publish_tag or 0,
                                   ev if method.mandatory else None)
            return
        address = self._address(exchange, key, ev)
        if address is None:
            self._refuse(ch, ev, f"exchange {exchange!r} routing key {key!r}: cannot be "
                                 f"addressed at RabbitMQ 3.x's AMQP 1.0 (an exchange name "
                                 f"holding '/', or an x-amqp-1.0.subject header other than "
                                 f"an addressable key)")
            return
        sender = self.senders.pop(address, None)
        if sender is None:
            sender = self._new_sender(address)
            if sender is None:
                self._refuse(ch, ev, f"the listener already publishes to {self.max_links} "
                                     f"AMQP 1.0 addresses with messages in flight "
                                     f"(topology.max_publish_links); not to {address!r}")
                return
        self.senders[address] = sender  # (now the most recently used)
        sender.last_used = time.monotonic()
        sender.publish091(ch, ev)

    def _address(self, exchange: str, key: str, ev: MessageReceived) -> str | None:
        """The address of a publish: the exchange's (its key travels as the subject), or
        the key's own when the message carries another subject (header
        ``x-amqp-1.0.subject``); None when RabbitMQ 3.x cannot be told."""
        if "/" in exchange:
            return None
        if H_SUBJECT not in (ev.properties.headers or {}):
            return self.backend.publish_address(exchange, key)
        return self.backend.keyed_publish_address(exchange, key)

    def _new_sender(self, address: str) -> AddressPublish091 | None:
        """A sender to ``address``; None past ``max_publish_links`` with none idle."""
        if len(self.senders) >= self.max_links:
            lru = next((s for s in self.senders.values() if s.idle), None)
            if lru is None:
                return None
            self._close(lru)
        settings = self.route.model_copy(update={
            "target": self.route.target.model_copy(update={"address": address})})
        sender = AddressPublish091(self.container, settings, self.facade, self.amqp10,
                                   self.mode, self)
        self._schedule_sweep()
        return sender

    def _refuse(self, ch: Channel091, ev: MessageReceived, reason: str) -> None:
        """A publish the group cannot send: basic.nack in confirm mode, else its channel
        closed (406), as a publish a route refuses; counted and logged."""
        self.stats.received += 1
        self.stats.rejected += 1
        self.facade.publish_refused(ch.client.sock.peer, reason, route=self.name)
        if ev.publish_tag:
            self.facade.confirm(ch, ev.publish_tag, ack=False)
        else:
            self.facade.refuse_publish(ch, ReplyCode.PRECONDITION_FAILED,
                                       f"PRECONDITION_FAILED - {reason}")

    # -- the senders ---------------------------------------------------------------------

    def drop(self, sender: AddressPublish091) -> None:
        """Forget ``sender`` and detach it for good."""
        if self.senders.get(sender.address) is sender:
            del self.senders[sender.address]
        sender.sender.forget()

    def _close(self, sender: AddressPublish091) -> None:
        log.info("route %s: closing the idle sender to %r", self.name, sender.address,
                 extra={"event": "publish_link_closed", "route": self.name,
                        "address": sender.address})
        self.drop(sender)

    def _schedule_sweep(self) -> None:
        if not self._sweep_due:
            self._sweep_due = True
            self.container.schedule(self.idle_timeout / 2, Timer(self._sweep))

    def _sweep(self) -> None:
        """Close the senders idle for ``publish_link_idle_timeout``."""
        self._sweep_due = False
        cutoff = time.monotonic() - self.idle_timeout
        for sender in [s for s in self.senders.values() if s.idle and s.last_used <= cutoff]:
            self._close(sender)
        if self.senders:
            self._schedule_sweep()

    def recount(self) -> None:
        """The group's in-flight gauges: the sum of its senders'."""
        stats, senders = self.stats, list(self.senders.values())
        stats.in_flight = sum(s.pending for s in senders)
        stats.in_flight_bytes = sum(s.bytes for s in senders)
        stats.credit = sum(s.target.credit for s in senders)
        stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)

    # -- a route to the bridge (metrics, readiness, the graceful stop) ---------------------

    @property
    def throttled(self) -> bool:
        """A sender is past its in-flight bound: the listener's publishers wait."""
        return any(s.throttled for s in list(self.senders.values()))

    @property
    def pending(self) -> int:
        return sum(s.pending for s in list(self.senders.values()))

    @property
    def ready(self) -> bool:
        return not self.waiting_for()

    def waiting_for(self) -> list[str]:
        """The façade listening, and the senders in use attached; safe from any thread."""
        return waiting_for(self.facade, [s.sender for s in list(self.senders.values())])

    def pause(self) -> None:
        """Graceful stop: as each sender's route (what was read is still forwarded)."""
        self.facade.pause()
        for sender in list(self.senders.values()):
            sender.pause()

    def dead_letter_unforwarded(self) -> int:
        return sum(s.dead_letter_unforwarded() for s in list(self.senders.values()))

    def abandon(self) -> int:
        return sum(s.abandon() for s in list(self.senders.values()))

    def fault_part(self, method: str, event: Any) -> Part:
        """A fault in the group's own work (the idle sweep) is logged."""
        if method == "_sweep":
            return Part("route", f"route {self.name}", {"route": self.name},
                        "idle sweep rescheduled", lambda reason: self._schedule_sweep())
        return Part("route", f"route {self.name}", {"route": self.name}, "logged")


__all__ = ["AddressPublish091", "AddressPublishers"]
