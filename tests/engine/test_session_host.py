"""The narrow interface between a connection and its sessions.

A session runs on any :class:`~amqp010.session.SessionHost` (here a recording one,
no connection at all); ``session.py`` never imports ``connection.py`` (not even for
type checking); and neither module touches the other's private names.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from amqp010.base import Control
from amqp010.events import (
    CommandReceived,
    CommandsCompleted,
    Event,
    SessionAttached,
    SessionDetached,
)
from amqp010.framing import Assembly
from amqp010.session import Session, SessionRegistry, SessionState
from amqp010.spec import (
    DetachCode,
    MessageCancel,
    MessageSubscribe,
    QueueDeclare,
    SessionCommandPoint,
    SessionCompleted,
    SessionDetach,
    SessionRequestTimeout,
    SessionTimeout,
)
from amqp010.spec import SessionDetached as DetachedCtl
from amqp010.types import SequenceSet

ENGINE = Path(__file__).resolve().parents[2] / "amqp010"


class RecordingHost:
    """A SessionHost that records what a session asks of it."""

    def __init__(self, *, server: bool = False) -> None:
        self.server = server
        self.controls: list[tuple[int, Control]] = []
        self.commands: list[tuple[int, list[tuple[int, bytes]]]] = []
        self.events: list[Event] = []
        self.released: list[Session] = []
        self._registry = SessionRegistry()

    @property
    def is_server(self) -> bool:
        return self.server

    @property
    def max_session_timeout(self) -> int:
        return 30

    @property
    def registry(self) -> SessionRegistry:
        return self._registry

    def now(self) -> float | None:
        return 12.5

    def send_control(self, channel: int, control: Control) -> None:
        self.controls.append((channel, control))

    def send_command(self, channel: int, segments: list[tuple[int, bytes]]) -> None:
        self.commands.append((channel, segments))

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def withdraw_events(self, drop: Callable[[Event], bool]) -> None:
        self.events = [e for e in self.events if not drop(e)]

    def release(self, session: Session) -> bool:
        self.released.append(session)
        return True


def attached(host: RecordingHost, **options: object) -> Session:
    session = Session("s", **options)  # type: ignore[arg-type]
    session.bind(host, 3)
    session.transport_attached()
    return session


def command(op: object) -> Assembly:
    return Assembly(3, op)  # type: ignore[arg-type]


def test_a_session_runs_on_any_host() -> None:
    host = RecordingHost()
    s = attached(host, timeout=60)
    assert s.state is SessionState.ATTACHED and s.connection is host
    assert host.controls == [(3, SessionRequestTimeout(timeout=60)),
                             (3, SessionCommandPoint(command_id=0, command_offset=0))]
    assert host.events == [SessionAttached(s, False)]
    cid = s.queue_declare("q")
    assert [ch for ch, _ in host.commands] == [3]
    s.receive_control(SessionCompleted(commands=SequenceSet([(cid, cid)])))
    assert host.events[-1] == CommandsCompleted(s, [cid])


def test_received_commands_are_numbered_reported_and_completed_through_the_host() -> None:
    host = RecordingHost()
    s = attached(host)
    s.receive_control(SessionCommandPoint(command_id=7, command_offset=0))
    s.receive_command(command(QueueDeclare(queue="q")))
    assert host.events[-1] == CommandReceived(s, 7, QueueDeclare(queue="q"))
    assert s.incomplete_count == 1
    host.controls.clear()
    s.complete(7)
    s.announce_completed()
    assert host.controls == [(3, SessionCompleted(commands=SequenceSet([(7, 7)]),
                                                  timely_reply=False))]
    s.announce_completed()  # nothing new: nothing sent
    assert len(host.controls) == 1


def test_command_data_before_command_point_detaches_through_the_host() -> None:
    host = RecordingHost()
    s = attached(host, timeout=60)
    host.controls.clear()
    s.receive_command(command(QueueDeclare(queue="q")))
    assert host.controls == [(3, DetachedCtl(name=b"s", code=DetachCode.UNKNOWN_IDS))]
    assert host.released == [s] and s.state is SessionState.CLOSED
    assert host.events[-1] == SessionDetached(s, DetachCode.UNKNOWN_IDS, False)
    assert s.detached_at == 12.5


def test_the_role_picks_the_command_table() -> None:
    # server role: a cancel of an unknown destination is refused by the engine
    server = RecordingHost(server=True)
    s = attached(server)
    s.receive_control(SessionCommandPoint(command_id=0, command_offset=0))
    s.receive_command(command(MessageSubscribe(queue="q", destination="d")))
    assert "d" in s.outgoing_credit
    s.receive_command(command(MessageCancel(destination="nowhere")))
    assert s.state is SessionState.DETACHING and len(server.commands) == 1  # the exception
    # client role: subscribe and cancel are the application's business
    client = RecordingHost()
    c = attached(client)
    c.receive_control(SessionCommandPoint(command_id=0, command_offset=0))
    c.receive_command(command(MessageCancel(destination="nowhere")))
    assert c.attached and client.events[-1] == CommandReceived(
        c, 0, MessageCancel(destination="nowhere"))


def test_request_timeout_is_granted_up_to_the_hosts_limit() -> None:
    host = RecordingHost(server=True)
    s = attached(host)
    s.receive_control(SessionRequestTimeout(timeout=600))
    assert s.timeout == 30 and host.controls[-1] == (3, SessionTimeout(timeout=30))


def test_peer_detach_leaves_the_host_and_keeps_state_for_a_resume() -> None:
    host = RecordingHost()
    s = attached(host, timeout=60)
    s.receive_control(SessionDetach(name=b"s"))
    assert host.controls[-1] == (3, DetachedCtl(name=b"s", code=DetachCode.NORMAL))
    assert host.released == [s] and s.connection is None and s.channel is None
    assert s.state is SessionState.DETACHED and s.detached_at == 12.5


def _imports(tree: ast.Module) -> set[str]:
    out = set()
    for node in ast.walk(tree):  # every import, TYPE_CHECKING blocks included
        if isinstance(node, ast.ImportFrom):
            out.add("." * node.level + (node.module or ""))
            out.update("." * node.level + a.name for a in node.names if node.module is None)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_session_module_never_imports_the_connection_module() -> None:
    imports = _imports(ast.parse((ENGINE / "session.py").read_text()))
    assert not {i for i in imports if i.endswith("connection")}, imports
    assert ".session" in _imports(ast.parse((ENGINE / "connection.py").read_text()))


def _foreign_private_names(path: Path) -> list[str]:
    """``x._name`` where ``x`` is neither ``self`` nor a class defined in the module."""
    tree = ast.parse(path.read_text())
    own = {"self"} | {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    return [f"{path.name}:{n.lineno} {ast.unparse(n)}" for n in ast.walk(tree)
            if isinstance(n, ast.Attribute) and n.attr.startswith("_")
            and not n.attr.startswith("__")
            and not (isinstance(n.value, ast.Name) and n.value.id in own)]


def test_connection_and_session_use_no_private_names_of_each_other() -> None:
    assert _foreign_private_names(ENGINE / "connection.py") == []
    assert _foreign_private_names(ENGINE / "session.py") == []
