"""AMQP 0-10 engines hosted on sockets inside one proton Container, beside AMQP 1.0 links."""

from __future__ import annotations

from typing import Any

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container

from amqp010.connection import Connection, ConnectionConfig, Role
from amqp010.events import (
    CommandReceived,
    CommandsCompleted,
    ConnectionClosed,
    ConnectionOpened,
    Event,
    SessionAttached,
)
from amqp010.spec import QueueDeclare
from bridge.runtime import EngineListener, EngineSocket, connect
from tests.support.rabbitmq import queue_address, receive_messages, unique_queue


class Scenario(MessagingHandler):
    """Client declares a queue on our 0-10 server; when it completes, send a 1.0 message."""

    def __init__(self, rabbitmq_url: str | None, address: str | None) -> None:
        super().__init__()
        self.rabbitmq_url = rabbitmq_url
        self.address = address
        self.log: list[str] = []
        self.declared: list[str] = []
        self.sender: Any = None
        self.client: EngineSocket | None = None

    def on_start(self, event: Any) -> None:
        container = event.container
        self.listener = EngineListener(container, "127.0.0.1", 0,
                                       lambda: Connection(Role.SERVER, ConnectionConfig()),
                                       self.server_event)
        host, port = self.listener.address
        if self.rabbitmq_url:
            conn = container.connect(self.rabbitmq_url)
            self.sender = container.create_sender(conn, self.address)
        self.client = connect(container, host, port, Connection(Role.CLIENT, ConnectionConfig()),
                              self.client_event)

    def server_event(self, sock: EngineSocket, ev: Event) -> None:
        self.log.append(f"server {type(ev).__name__}")
        if isinstance(ev, CommandReceived) and isinstance(ev.command, QueueDeclare):
            self.declared.append(ev.command.queue)
            ev.session.complete(ev.command_id)

    def client_event(self, sock: EngineSocket, ev: Event) -> None:
        self.log.append(f"client {type(ev).__name__}")
        if isinstance(ev, ConnectionOpened):
            sock.engine.attach("hosting-test")
        elif isinstance(ev, SessionAttached):
            self.declare_id = ev.session.queue_declare("jobs")
        elif isinstance(ev, CommandsCompleted) and self.declare_id in ev.commands:
            if self.sender is None:
                sock.engine.close()
            else:  # closed once the 1.0 broker accepted the message
                self.sender.send(Message(body="declared jobs"))
        elif isinstance(ev, ConnectionClosed):
            self.listener.close()

    def on_accepted(self, event: Any) -> None:
        self.log.append("amqp1.0 accepted")
        event.connection.close()
        assert self.client is not None
        self.client.engine.close()
        self.client.flush()


def test_client_and_server_engines_in_one_container() -> None:
    scenario = Scenario(None, None)
    Container(scenario).run()
    assert scenario.declared == ["jobs"]
    assert scenario.log[:2] == ["server ConnectionOpened", "client ConnectionOpened"] or \
        scenario.log[:2] == ["client ConnectionOpened", "server ConnectionOpened"]
    assert "client CommandsCompleted" in scenario.log
    assert scenario.log[-1] in ("client ConnectionClosed", "server ConnectionClosed")
    assert "client ConnectionClosed" in scenario.log and "server ConnectionClosed" in scenario.log


def test_0_10_sockets_and_proton_links_share_the_loop(rabbitmq_url: str) -> None:
    queue = unique_queue("hosting")
    scenario = Scenario(rabbitmq_url, queue_address(queue))
    Container(scenario).run()
    assert scenario.declared == ["jobs"]
    [received] = receive_messages(rabbitmq_url, queue_address(queue), 1)
    assert received.message.body == "declared jobs"
