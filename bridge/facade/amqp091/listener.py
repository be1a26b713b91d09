"""The 0-9-1 façade's listener: accepting 0-9-1 applications, their logins and events.

A :class:`Facade091` is one configured ``amqp0-9-1`` listener: a
:class:`~bridge.facade.core.base.ListenerCore` (accepting within the listener's limits,
PBKDF2 logins off the loop, throttling, graceful stop — shared with the 0-10
façade) hosting our 0-9-1 engine in its server role (:mod:`amqp091.connection`).
The engine does the handshake (SASL PLAIN / AMQPLAIN, and EXTERNAL with a verified
client certificate; tune; virtual hosts), opens and closes channels, checks
frames, frame-max, message sizes and delivery tags, and closes a misbehaving
client with the reply code RabbitMQ would; this module dispatches what is left:

- ``MessageReceived`` (basic.publish): to the publish route of its exchange and
  routing key (:meth:`Facade091.route_for`), to a consume route's address for the
  default exchange naming a façade queue, ``basic.return`` 312 for a mandatory
  publish no route takes, channel.close 404 for an unknown exchange;
- ``MethodReceived``: the method model (:class:`~bridge.facade.amqp091.commands.Commands091`);
- ``DeliveriesSettled`` (ack / nack / reject / recover): the consumers' outcomes;
- ``ChannelClosed`` / ``ConnectionClosed``: the channel's consumers end, giving
  back at once what the client left unacknowledged.

Closes the façade or the engine makes for a client's error are counted by reply
code (:attr:`ListenerCore.client_errors`, ``amqp_bridge_facade_client_errors_total``)
and logged, rate-limited per client address.
"""

from __future__ import annotations

import logging
from typing import Any

from pamqp.base import Frame
from proton.reactor import Container

from amqp091.connection import Connection, ProtocolError, Role, ServerConfig
from amqp091.events import (
    ChannelClosed,
    ChannelFlow,
    ChannelOpened,
    ConnectionClosed,
    ConnectionOpened,
    CredentialsReceived,
    DeliveriesSettled,
    HeartbeatTimeout,
    MessageReceived,
    MethodReceived,
)
from amqp091.methods import ReplyCode

from ...config import Listener
from ...legacy.amqp091 import FIELD_TYPES
from ...runtime import EngineSocket
from ...topology import Topology
from ..core.access import Check
from ..core.base import ListenerCore
from ..core.identity import client_identity, described
from .address_publish import AddressPublishers
from .commands import Commands091
from .consume import Consume091
from .method_access import refusal, user_id_refusal
from .publish import Publish091
from .state import AccessRefused, Channel091, Client091
from .topology import TopologyMode

log = logging.getLogger("bridge.facade")

_ORDINARY_CLOSES = frozenset({None, ReplyCode.REPLY_SUCCESS, ReplyCode.CONNECTION_FORCED})
"""Close codes that are no client error (a transport end, a normal close, ours at stop)."""



class Facade091(ListenerCore):
    """One configured amqp0-9-1 listener: accepts 0-9-1 applications, serves its routes."""

    shutdown_text = "CONNECTION_FORCED - broker forced connection closure with reason 'shutdown'"
    """RabbitMQ's words when it stops (clients and libraries may look for them)."""

    def __init__(self, container: Container, name: str, settings: Listener) -> None:
        super().__init__(container, name, settings)
        self.publish_routes: dict[tuple[str, str | None], Publish091] = {}
        """Publish routes by (exchange, routing key; None: every other key)."""
        self.exchanges: set[str] = set()
        """The façade's exchanges (those of its publish routes)."""
        self.consume_routes: dict[str, Consume091] = {}
        self.queue_publishers: dict[str, Publish091] = {}
        """Publishes to the default exchange naming a façade queue, by queue (made on
        first use): they go to the address the queue's consumers consume from."""
        self.clients: dict[EngineSocket, Client091] = {}
        self.commands = Commands091(self)
        self.topology: TopologyMode | None = None
        """The topology mode (``listeners.<name>.topology``), or None: routes' names only."""

    # -- setup (what the routes call) -----------------------------------------------------

    def add_publish(self, route: Any, exchange: str) -> None:
        """``route`` takes what clients publish to ``exchange`` (with its routing key)."""
        key = route.route.source.routing_key
        what = f"exchange {exchange!r}" + (f" routing key {key!r}" if key is not None else "")
        self._register(self.publish_routes, (exchange, key), route, what, "source")
        self.exchanges.add(exchange)

    def add_consume(self, route: Any, queue: str) -> None:
        """``route`` feeds the consumers of ``queue``."""
        self._register(self.consume_routes, queue, route, f"queue {queue!r}", "target")

    def enable_topology(self, backend: Topology, amqp10: Any, login_user: str | None,
                        held: dict[str, str] | None = None) -> None:
        """Serve every name no route configures from the 1.0 broker of ``amqp10`` through
        ``backend`` (:mod:`~bridge.facade.amqp091.topology`); ``held``: the exclusive
        queues' owners, shared by the listeners on the same broker connection."""
        settings = self.settings.topology
        assert settings is not None
        # (RabbitMQ 3.x never answers an attach to the anonymous terminus)
        publisher = AddressPublishers if settings.broker == "rabbitmq3" else None
        self.topology = TopologyMode(self, self.container, backend, amqp10, settings,
                                     login_user, publisher, held)

    def bound(self, client: Client091) -> None:
        """A temporary queue's binding exists now (or failed): publishes held for it go on."""
        client.binds_pending -= 1
        self.release_held(client)

    def release_held(self, client: Client091) -> None:
        """What was held while a bind or a topology-mode method was pending goes on, in
        order, until another one is pending (publishes of channels closed meanwhile too:
        what was read is forwarded); the client is read again once nothing is held."""
        held = client.held_publishes
        released = False
        while held and not (client.binds_pending or client.topology_pending):
            ch, ev = held.popleft()
            released = True
            if isinstance(ev, MessageReceived):
                self._on_publish(ch, ev)
            else:
                self.commands.on_method(ch, ev.method)
        if released:
            self.flush_later(client.sock)
            if not held:
                self.update_reading()

    # -- ListenerCore's hooks -------------------------------------------------------------

    def _new_engine(self) -> Connection:
        settings = self.settings
        mechanisms = ("PLAIN", "AMQPLAIN") + (("EXTERNAL",) if self.client_certs else ())
        return Connection(Role.SERVER, ServerConfig(
            properties={"product": "amqp-bridge", "platform": "Python",
                        "listener": self.name},
            mechanisms=mechanisms,
            virtual_hosts=frozenset(settings.virtual_hosts) if settings.virtual_hosts else None,
            vhost_access=None if self.access.permissions.unrestricted else self.access.may_open,
            max_message_size=settings.max_message_size,
            max_buffered=settings.max_buffered_per_connection,
            handshake_timeout=settings.handshake_timeout,
            field_types=FIELD_TYPES))

    def _make_client(self, sock: EngineSocket) -> Client091:
        return Client091(sock)

    def _routes(self) -> list[Any]:
        return [*self.publish_routes.values(), *self.queue_publishers.values(),
                *self.consume_routes.values(), *self.made_routes()]

    def _can_log_in(self) -> bool:
        return bool(self.passwords) or self.client_certs

    def _set_external_identity(self, engine: Any, identity: str | None) -> None:
        engine.server_config.external_identity = identity

    def update_reading(self) -> None:
        """Pause reading on every client publishing to a throttled route, resume the others
        (:class:`~bridge.facade.core.base.ListenerCore`); a client that announced the
        ``connection.blocked`` capability is told (connection.blocked / unblocked, as
        RabbitMQ tells its publishers at a resource alarm)."""
        super().update_reading()
        for client in list(self.clients.values()):
            blocked = any(r.throttled for r in client.publishes_to)
            if blocked == client.blocked or not client.engine.is_open:
                continue
            client.blocked = blocked
            try:
                told = client.engine.block("amqp-bridge: a route this connection publishes "
                                           "to has max_in_flight messages unconfirmed by "
                                           "its AMQP 1.0 broker") if blocked \
                    else client.engine.unblock()
            except ProtocolError:
                continue
            if told:
                self.flush_later(client.sock)

    @property
    def sessions(self) -> list[Channel091]:
        """Open channels of every client (the façade-sessions gauge)."""
        return [ch for c in list(self.clients.values()) for ch in list(c.channels.values())]

    # -- engine events --------------------------------------------------------------------

    def _on_event(self, sock: EngineSocket, ev: Any) -> None:
        client = self.clients.get(sock)
        if client is None:
            return
        if isinstance(ev, MessageReceived):
            ch = client.channels.get(ev.channel)
            if ch is not None and (client.binds_pending or client.topology_pending
                                   or client.held_publishes):
                self._hold(client, ch, ev)
            elif ch is not None:
                self._on_publish(ch, ev)
        elif isinstance(ev, MethodReceived):
            ch = client.channels.get(ev.channel)
            if ch is not None and (client.topology_pending or (
                    client.held_publishes and self.topology is not None)):
                self._hold(client, ch, ev)
            elif ch is not None:
                self.commands.on_method(ch, ev.method)
                self.flush_later(sock)
        elif isinstance(ev, DeliveriesSettled):
            ch = client.channels.get(ev.channel)
            if ch is not None:
                self.commands.on_settled(ch, ev)
        elif isinstance(ev, ChannelOpened):
            client.channels[ev.channel] = Channel091(ev.channel, client)
        elif isinstance(ev, ChannelClosed):
            ch = client.channels.pop(ev.channel, None)
            if ch is not None:
                self._end_channel(ch)
            ours = ev.channel in client.facade_closes
            client.facade_closes.discard(ev.channel)
            if not ev.by_peer and ev.code not in _ORDINARY_CLOSES and not ours:
                self._count_error(client, ev.code, ev.text)
        elif isinstance(ev, ChannelFlow):
            ch = client.channels.get(ev.channel)
            if ch is not None and ev.active:
                for consumer in [*ch.consumers.values(), *ch.getters.values()]:
                    consumer.pump()
        elif isinstance(ev, CredentialsReceived):
            if ev.mechanism == "EXTERNAL":  # offered only with a verified certificate
                sock.engine.finish_authentication(ev.user)
            else:
                self.check_login(sock, ev.user, ev.password or "")
        elif isinstance(ev, ConnectionOpened):
            client.user, client.virtual_host = ev.user, ev.virtual_host
            if self.topology is not None:
                self.topology.client_opened(client)
            named = client_identity(ev.peer_properties)
            log.info("façade %s: %s logged in as %r (vhost %r)%s", self.name, sock.peer,
                     ev.user, ev.virtual_host, described(named),
                     extra=self.log_fields("client_open", peer=sock.peer, user=ev.user,
                                           **named))
        elif isinstance(ev, ConnectionClosed):
            for ch in list(client.channels.values()):
                self._end_channel(ch)
            client.channels.clear()
            for temporary in client.temporary_queues.values():  # exclusive: they end too
                if temporary.sub is not None:
                    temporary.sub.end()
            client.temporary_queues.clear()
            if self.topology is not None:
                self.topology.client_gone(client)
            client.binds_pending = client.topology_pending = 0
            self.release_held(client)
            if not ev.by_peer and ev.code not in _ORDINARY_CLOSES \
                    and 0 not in client.facade_closes:
                self._count_error(client, ev.code, ev.text)
            self.client_closed(sock, ev.code, ev.text)
        elif isinstance(ev, HeartbeatTimeout):
            log.info("façade %s: %s silent for %.1fs", self.name, sock.peer, ev.idle,
                     extra=self.log_fields("client_silent", peer=sock.peer))

    def _hold(self, client: Client091, ch: Channel091, ev: Any) -> None:
        """Keep a publish or method until what is pending before it is answered (the
        client is not read meanwhile)."""
        client.held_publishes.append((ch, ev))
        if len(client.held_publishes) == 1:
            self.update_reading()

    def _end_channel(self, ch: Channel091) -> None:
        """The channel is gone: its consumers end (what it left unacknowledged goes back
        to the 1.0 broker at once); what it published is still forwarded (as RabbitMQ
        routes what it has read), its confirms go nowhere."""
        ch.ended = True
        for consumer in [*ch.consumers.values(), *ch.cancelled, *ch.getters.values()]:
            consumer.end()
        ch.consumers.clear()
        ch.cancelled.clear()
        ch.getters.clear()

    # -- errors ---------------------------------------------------------------------------

    def client_error(self, client: Client091, code: int, text: str, method: Frame,
                     event: str = "client_error") -> None:
        """The façade answers a client's method with a close (``code``): count it, log it."""
        self._count_error(client, code, f"{method.name}: {text}", event)

    def _count_error(self, client: Client091, code: int | None, text: str,
                     event: str = "client_error") -> None:
        key = int(code or 0)
        self.count_client_error(event, client.sock.peer, key, f"closed with {key}", text,
                                user=client.user)

    # -- who may do what ------------------------------------------------------------------

    def authorize(self, ch: Channel091, checks: list[Check], method: Frame) -> None:
        """Raise :class:`AccessRefused` (channel.close 403, RabbitMQ's text) if ``ch``'s
        user lacks one of the permissions ``checks`` (counted under ``method``'s name)."""
        if not checks:
            return
        client = ch.client
        vhost = client.virtual_host or "/"
        denied = self.access.denied(client.user, vhost, checks, method.name.lower())
        if denied is not None:
            raise AccessRefused(ReplyCode.ACCESS_REFUSED, refusal(denied, vhost, client.user))

    def _publish_refusal(self, ch: Channel091, ev: MessageReceived) -> tuple[int, str] | None:
        """Why ``ch``'s user may not publish ``ev`` (reply code and text), or None: write
        permission on its exchange, and its user-id (RabbitMQ checks in that order)."""
        method: Any = ev.method
        client = ch.client
        vhost = client.virtual_host or "/"
        denied = self.access.publish_denied(client.user, vhost, method.exchange or "",
                                            "basic.publish")
        if denied is not None:
            return ReplyCode.ACCESS_REFUSED, refusal(denied, vhost, client.user)
        user_id = ev.properties.user_id
        if self.access.user_id_refused(client.user, user_id, "basic.publish"):
            return ReplyCode.PRECONDITION_FAILED, user_id_refusal(user_id or "", client.user)
        return None

    # -- publishing -----------------------------------------------------------------------

    def route_for(self, exchange: str, routing_key: str) -> Publish091 | None:
        """The publish route of a façade exchange for ``routing_key`` (None: unroutable)."""
        return self.publish_routes.get((exchange, routing_key)) \
            or self.publish_routes.get((exchange, None))

    def _on_publish(self, ch: Channel091, ev: MessageReceived) -> None:
        method: Any = ev.method
        exchange, key = method.exchange or "", method.routing_key or ""
        client = ch.client
        topology = self.topology
        refused = self._publish_refusal(ch, ev)
        if refused is not None:
            code, text = refused
            self.refuse_publish(ch, code, text, "access_refused")
            return
        if exchange and exchange not in self.exchanges \
                and exchange not in self.exchange_subscriptions and topology is None:
            reason = f"no exchange '{exchange}' in vhost '{client.virtual_host or '/'}'"
            self.publish_refused(client.sock.peer, reason)
            self.refuse_publish(ch, ReplyCode.NOT_FOUND, reason)
            return
        if topology is not None and not topology.reply_to_of(ch, ev):
            return
        route = self._queue_publisher(key) if exchange == "" else self.route_for(exchange, key)
        fence = None
        if route is None and topology is not None:
            route = topology.publisher
            local = topology.local
            if exchange == "":
                topology.declares.published(key, client.owner)
                if local is not None:
                    if local.take(ch, ev, route):
                        return  # delivered to the queue's one consumer, here (no broker trip)
                    fence = local.fence(key)
        if route is None:
            method = ev.method
            self.unroutable(ch, method, ev.publish_tag or 0, ev if method.mandatory else None)
            return
        client.publishes_to.add(route)  # (also while stopping: a publish read is forwarded)
        route.publish091(ch, ev, fence)

    def refuse_publish(self, ch: Channel091, code: int, text: str,
                       event: str = "client_error") -> None:
        """Close ``ch`` over a client's publish (counted and logged as its error)."""
        self._count_error(ch.client, code, f"basic.publish: {text}", event)
        self.close_channel(ch, code, text)

    def close_channel(self, ch: Channel091, code: int, text: str) -> None:
        """Close ``ch`` over a publish (basic.publish named in the close), if still open."""
        if ch.live:
            ch.client.facade_closes.add(ch.number)
            ch.client.engine.close_channel(ch.number, code, text, class_id=60, method_id=40)
            self.flush_later(ch.client.sock)

    def _queue_publisher(self, queue: str) -> Publish091 | None:
        """The route for a publish to the default exchange: the façade queue its routing
        key names (as a broker puts it in that queue), or None (unroutable)."""
        publisher = self.queue_publishers.get(queue)
        if publisher is None:
            consume = self.consume_routes.get(queue)
            if consume is None:
                return None
            publisher = Publish091.into_queue(consume)
            assert isinstance(publisher, Publish091)
            self.queue_publishers[queue] = publisher
        return publisher

    @property
    def local_deliveries(self) -> int:
        local = self.topology.local if self.topology is not None else None
        return local.delivered if local is not None else 0

    def unroutable(self, ch: Channel091, method: Any, publish_tag: int,
                   returned: MessageReceived | None) -> None:
        """No route (in topology mode: no queue at the broker) takes the publish:
        basic.return 312 of ``returned`` (a mandatory publish), else dropped, as a broker
        drops it — counted and logged either way — then confirmed (``publish_tag``; as
        RabbitMQ confirms an unroutable message)."""
        exchange, key = method.exchange or "", method.routing_key or ""
        self.publish_unroutable(ch.client.sock.peer, exchange, key,
                                "returned" if returned is not None else "dropped")
        if not ch.live:
            return
        engine = ch.client.engine
        if returned is not None:
            engine.return_message(ch.number, ReplyCode.NO_ROUTE, "NO_ROUTE", exchange, key,
                                  returned.body, returned.properties)
        if publish_tag:
            self.confirm(ch, publish_tag, ack=True)
        self.flush_later(ch.client.sock)

    def confirm(self, ch: Channel091, publish_tag: int, *, ack: bool) -> None:
        """basic.ack (or nack) a publish of a channel in confirm mode."""
        if not ch.live:
            return
        try:
            ch.client.engine.confirm_publish(ch.number, publish_tag, ack=ack)
        except ProtocolError:
            return  # the channel is closing: the client counts it as not confirmed
        self.flush_later(ch.client.sock)


__all__ = ["Facade091"]
