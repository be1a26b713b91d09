"""The façade's listener: accepting legacy 0-10 applications, their logins and events.

A :class:`Facade` is one configured listener: a
:class:`~bridge.facade.core.base.ListenerCore` (accepting within the listener's limits,
logins checked on worker threads, throttling, graceful stop — what every façade
listener shares) plus the 0-10 engine.  Each client's engine events are
dispatched here: publishes to the publish routes, model commands to the command
model (:class:`~bridge.facade.amqp010.commands.ServerCommands`), credit and completions to
the subscriptions.  Output the routes queue on a client's session is written once
per burst of loop events (:meth:`Facade.flush_later`, the runtime's
:class:`~bridge.runtime.EndOfBurst`).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from proton.reactor import Container

from amqp010.connection import Connection, ConnectionConfig, Role
from amqp010.events import (
    CommandReceived,
    CommandsCompleted,
    ConnectionClosed,
    ConnectionOpened,
    CredentialsReceived,
    CreditChanged,
    Event,
    ExecutionExceptionReceived,
    HeartbeatTimeout,
    MessageReceived,
    SessionAttached,
    SessionDetached,
)
from amqp010.sasl import SimpleAuthenticator
from amqp010.serial import serial_lt
from amqp010.session import Session
from amqp010.spec import CloseCode, DetachCode, ErrorCode

from ...config import Listener
from ...runtime import EngineSocket
from ...topology import Topology
from ..core.base import BROKER_LOST_TEXT, ListenerCore
from ..core.identity import client_identity, described
from .command_access import transfer_refusal, user_id_refusal
from .commands import ServerCommands
from .consume import Consume010
from .publish import Publish010
from .state import Client, SessionState
from .topology import TopologyMode

log = logging.getLogger("bridge.facade")  # the façade's one logger


class Facade(ListenerCore):
    """One configured listener: accepts legacy 0-10 applications and serves its routes."""

    def __init__(self, container: Container, name: str, settings: Listener) -> None:
        super().__init__(container, name, settings)
        # PLAIN credentials come to us (CredentialsReceived): a PBKDF2 check runs on a
        # worker thread, so that a login (or a password-guessing client) never stalls the loop
        self.authenticator = SimpleAuthenticator(
            self.passwords.check if self.passwords else None,
            anonymous=settings.allow_anonymous, external=self.client_certs, defer=True)
        self.publish_routes: dict[str, Publish010] = {}
        self.consume_routes: dict[str, Consume010] = {}
        self.commands = ServerCommands(name, self.publish_routes, self.consume_routes,
                                       self.exchange_subscriptions, lambda: self.stopping,
                                       max_links=settings.max_consumers_per_connection,
                                       links_of=self._links_of,
                                       max_user_links=settings.max_consumers_per_user,
                                       user_links_of=self._links_of_user,
                                       refused=self._refused,
                                       access=self.access)
        """The model commands, answered from the route tables."""
        self.queue_publishers: dict[str, Publish010] = {}
        """Publishes to the default exchange naming a façade queue, by queue (made on
        first use): they go to the address the queue's subscribers consume from."""
        self.clients: dict[EngineSocket, Client] = {}
        self.sessions: dict[Session, SessionState] = {}
        self.topology: TopologyMode | None = None
        """The topology mode (``listeners.<name>.topology``), or None: routes' names only."""

    def enable_topology(self, backend: Topology, amqp10: Any, login_user: str | None,
                        held: dict[str, str] | None = None) -> None:
        """Serve every name no route configures from the 1.0 broker of ``amqp10`` through
        ``backend`` (:mod:`~bridge.facade.amqp010.topology`); ``held``: the exclusive
        queues' owners, shared by the listeners on the same broker connection."""
        assert self.settings.topology is not None
        self.topology = self.commands.topology = TopologyMode(
            self, self.container, backend, amqp10, self.settings.topology, login_user, held)

    # -- setup ----------------------------------------------------------------------------

    def add_publish(self, route: Any, exchange: str) -> None:
        """``route`` takes what clients publish to ``exchange``."""
        self._register(self.publish_routes, exchange, route, f"exchange {exchange!r}", "source")

    def add_consume(self, route: Any, queue: str) -> None:
        """``route`` feeds the subscribers of ``queue``."""
        self._register(self.consume_routes, queue, route, f"queue {queue!r}", "target")

    def _refused(self, st: SessionState, code: int, text: str,
                 event: str = "command_refused") -> None:
        """A client's command answered with execution.exception: counted by code
        (``amqp_bridge_facade_client_errors_total``) and logged (rate-limited)."""
        self.count_client_error(event, st.client.sock.peer, code,
                                f"command refused with {code}", text, user=st.client.user)

    def _links_of(self, st: SessionState) -> int:
        """The 1.0 receivers held by ``st``'s connection, over all its sessions."""
        return sum(other.links for other in self.sessions.values() if other.client is st.client)

    def _links_of_user(self, user: str | None) -> int:
        """The 1.0 receivers held by the sessions of all of ``user``'s connections."""
        return sum(st.links for st in self.sessions.values() if st.client.user == user)

    def _can_log_in(self) -> bool:
        return bool(self.authenticator.mechanisms("client-certificate"))

    def _routes(self) -> list[Any]:
        return [*self.publish_routes.values(), *self.consume_routes.values(),
                *self.made_routes()]

    def _make_client(self, sock: EngineSocket) -> Client:
        return Client(sock)

    def _set_external_identity(self, engine: Any, identity: str | None) -> None:
        engine.config.external_identity = identity

    def _new_engine(self) -> Connection:
        """The server-role 0-10 engine of an accepted client."""
        return Connection(Role.SERVER, ConnectionConfig(
            authenticator=self.authenticator,
            properties={"product": "amqp-bridge", "listener": self.name},
            max_message_size=self.settings.max_message_size,
            max_buffered=self.settings.max_buffered_per_connection,
            max_session_timeout=0))  # sessions are not resumable on the façade

    # -- engine events --------------------------------------------------------------------

    def _on_event(self, sock: EngineSocket, ev: Event) -> None:
        client = self.clients.get(sock)  # type: ignore[call-overload]
        if client is None:
            return
        if isinstance(ev, MessageReceived | CommandReceived):
            st = self.sessions.get(ev.session)
            if st is not None and (st.topology_pending or st.held_events):
                st.held_events.append(ev)  # (after a topology-mode command, in order)
                st.client.holding += 1
                if st.client.holding == 1:
                    self.update_reading()
            elif st is not None:
                self._dispatch(st, ev)
        elif isinstance(ev, CreditChanged):
            st = self.sessions.get(ev.session)
            sub = st.subscriptions.get(ev.destination) if st is not None else None
            if sub is not None:
                sub.on_subscriber_credit()
        elif isinstance(ev, CommandsCompleted):
            st = self.sessions.get(ev.session)
            if st is not None:
                self.commands.on_completed(st, ev.commands)
        elif isinstance(ev, SessionAttached):
            st = self.sessions[ev.session] = SessionState(ev.session, client)
            if self.topology is not None:
                self.topology.session_opened(st)
        elif isinstance(ev, SessionDetached):
            st = self.sessions.pop(ev.session, None)
            if st is not None:
                self._end_session(st)
            if not ev.by_peer and ev.code is not None and ev.code != DetachCode.NORMAL:
                self._session_error(sock, ev.session, ev.code)
        elif isinstance(ev, CredentialsReceived):
            self.check_login(sock, ev.user, ev.password)
        elif isinstance(ev, ConnectionOpened):
            client.user = ev.user
            named = client_identity(ev.peer_properties)
            log.info("façade %s: %s logged in as %r%s", self.name, sock.peer, ev.user,
                     described(named),
                     extra=self.log_fields("client_open", peer=sock.peer, user=ev.user,
                                           **named))
        elif isinstance(ev, ConnectionClosed):
            if (not ev.by_peer and ev.code not in (None, CloseCode.NORMAL) and not self.stopping
                    and ev.text != BROKER_LOST_TEXT):  # counted by broker_lost
                self.count_ended("client_connection_closed", sock.peer, f"connection_{ev.code}",
                                 "connection closed", f"{ev.code}: {ev.text}")
            self.client_closed(sock, ev.code, ev.text)
        elif isinstance(ev, ExecutionExceptionReceived):
            log.warning("façade %s: %s raised %s: %s", self.name, sock.peer, ev.error_code,
                        ev.description, extra=self.log_fields(
                            "client_exception", peer=sock.peer, error=ev.description))
        elif isinstance(ev, HeartbeatTimeout):
            hb = sock.engine.heartbeat
            self.count_ended("client_silent", sock.peer, "heartbeat_timeout", "connection closed",
                             f"nothing received for {ev.idle:.1f}s, more than twice the "
                             f"heartbeat of {hb}s")

    def _session_error(self, sock: EngineSocket, session: Session, value: int) -> None:
        """The engine detached ``session`` for a session-layer error of the client's
        (session.detached with the detach-code ``value``)."""
        code = DetachCode(value)
        self.count_ended("client_session_detached", sock.peer, f"session_{code.name.lower()}",
                         "session detached",
                         f"session {session.name!r}: {code.name.lower()} ({code.value})")

    def _end_session(self, st: SessionState) -> None:
        st.ended = True
        unsubscribed = [t.sub for t in st.temporary_queues.values()
                        if t.sub is not None and not t.consuming]
        for sub in [*st.subscriptions.values(), *st.cancelled, *unsubscribed]:
            sub.end()
        st.temporary_queues.clear()
        st.subscriptions.clear()
        st.cancelled.clear()
        self._release_held(st)
        if self.topology is not None:
            self.topology.session_gone(st)

    def _dispatch(self, st: SessionState, ev: MessageReceived | CommandReceived) -> None:
        if isinstance(ev, MessageReceived):
            self._on_publish(st, ev)
        else:
            self.commands.on_command(st, ev)

    def release_held(self, st: SessionState) -> None:
        """What the session sent while a topology-mode command was pending goes on, in
        order, until another one is pending (transfers of a session ended meanwhile
        too: what was read is forwarded; but nothing after a command the session's
        execution.exception named, as a broker executes nothing after it); the client is
        read again once nothing is held."""
        held = st.held_events
        released = 0
        while held and not st.topology_pending:
            released += 1
            ev = held.popleft()
            if st.failed_at is None or not serial_lt(st.failed_at, ev.command_id):
                self._dispatch(st, ev)  # (after a refused command: never executed)
        st.client.holding -= released
        if released:
            self.update_reading()

    # -- publishing -----------------------------------------------------------------------

    def _on_publish(self, st: SessionState, ev: MessageReceived, *, held: bool = True) -> None:
        if st.binds_pending and held:
            st.held_publishes.append(ev)
            st.client.holding += 1
            if st.client.holding == 1:  # not read again until the bind is answered
                self.update_reading()
            return
        session = st.session
        refused = self._publish_refusal(st, ev)
        if refused is not None:
            self._refused(st, ErrorCode.UNAUTHORIZED_ACCESS, f"message.transfer: {refused}",
                          "access_refused")
            if st.live:
                session.exception(ErrorCode.UNAUTHORIZED_ACCESS, ev.command_id, refused,
                                  command=ev.transfer)
            return
        route = self.publish_routes.get(ev.destination)
        topology = self.topology
        if route is None and ev.destination == "" and (
                topology is None or self._routing_key(ev) in self.consume_routes):
            route = self._queue_publisher(ev)
            if route is None:
                return
        if route is None and topology is not None:
            route = topology.publisher
        if route is None:
            known = ", ".join(repr(x) for x in sorted(self.publish_routes)) or "none"
            reason = (f"exchange {ev.destination!r} not found (this façade's exchanges: "
                      f"{known})")
            self.publish_refused(st.client.sock.peer, reason)
            if st.live:  # (not if the connection already ended in this read: no one to tell)
                session.exception(ErrorCode.NOT_FOUND, ev.command_id, reason,
                                  command=ev.transfer, field_index=0)
            return
        st.client.publishes_to.add(route)  # (also while stopping: a publish read is forwarded)
        route.publish(st, ev)

    def _publish_refusal(self, st: SessionState, ev: MessageReceived) -> str | None:
        """Why ``st``'s user may not publish ``ev`` (qpidd's text), or None: write
        permission on its exchange, and its user-id (qpidd's order)."""
        user = st.client.user
        denied = self.access.publish_denied(user, "", ev.destination or "", "message.transfer")
        if denied is not None:
            return transfer_refusal(denied, user, self._routing_key(ev))
        mp = ev.message_properties
        user_id = mp.user_id.decode("utf-8", "replace") if mp is not None and mp.user_id \
            else None
        if self.access.user_id_refused(user, user_id, "message.transfer"):
            return user_id_refusal(user_id or "", user)
        return None

    @staticmethod
    def _routing_key(ev: MessageReceived) -> str:
        """The routing key of a transfer ("" if it has none; to the default exchange: the
        queue it names)."""
        dp = ev.delivery_properties
        return dp.routing_key if dp is not None and dp.routing_key else ""

    def _queue_publisher(self, ev: MessageReceived) -> Publish010 | None:
        """The route for a publish to the default exchange: the façade queue its routing
        key names (as a broker puts it in that queue), or an exception (None)."""
        key = self._routing_key(ev)
        publisher = self.queue_publishers.get(key)
        if publisher is not None:
            return publisher
        consume = self.consume_routes.get(key)
        if consume is None:
            known = ", ".join(repr(q) for q in sorted(self.consume_routes)) or "none"
            reason = (f"no queue {key!r} for the default exchange to route to (this "
                      f"façade's queues: {known})")
            st = self.sessions.get(ev.session)
            self.publish_refused(st.client.sock.peer if st is not None else "?", reason)
            if ev.session.attached:
                ev.session.exception(ErrorCode.NOT_FOUND, ev.command_id, reason,
                                     command=ev.transfer)
            return None
        publisher = self.queue_publishers[key] = Publish010.into_queue(consume)
        return publisher

    # -- model commands -------------------------------------------------------------------


    def bound(self, st: SessionState) -> None:
        """A temporary queue's binding exists now: publishes held for it go on."""
        st.binds_pending -= 1
        if not st.binds_pending:
            self._release_held(st)

    def _release_held(self, st: SessionState) -> None:
        """Publishes held while a bind was pending go on (also when the session ended
        meanwhile: what was read is forwarded); the client is read again."""
        held, st.held_publishes = st.held_publishes, deque()
        st.client.holding -= len(held)
        for ev in held:
            self._on_publish(st, ev, held=False)
        if held:
            self.update_reading()


__all__ = ["Facade"]
