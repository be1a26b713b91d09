"""The server role driven by a scripted client (frames built with pamqp): the calls,
events and refusals the façade relies on."""

from __future__ import annotations

from typing import Any

import pytest
from pamqp import body as pbody
from pamqp import commands as C
from pamqp import header as pheader

from amqp091.connection import Connection, ConnectionState, ProtocolError
from amqp091.events import (
    ChannelClosed,
    ChannelOpened,
    ConnectionClosed,
    CredentialsReceived,
    DeliveriesSettled,
    MessageReceived,
    MethodReceived,
)
from amqp091.framing import PROTOCOL_HEADER
from amqp091.handshake import ConnectionConfig
from amqp091.methods import ReplyCode, Role
from amqp091.server_handshake import ServerConfig
from tests.engine091.peer import methods, sent, wire

CAPS = {"authentication_failure_close": True, "consumer_cancel_notify": True,
        "connection.blocked": True}


def start(caps: dict[str, Any] | None = None, mechanism: str = "PLAIN",
          response: str = "\0guest\0guest", **config: Any) -> Connection:
    """A server that has read the header and a start-ok (CredentialsReceived pending)."""
    conn = Connection(Role.SERVER, ServerConfig(**config))
    conn.receive_data(PROTOCOL_HEADER)
    (st,) = methods(conn)
    assert isinstance(st, C.Connection.Start)
    conn.receive_data(wire(0, C.Connection.StartOk(
        client_properties={"capabilities": CAPS if caps is None else caps},
        mechanism=mechanism, response=response, locale="en_US")))
    return conn


def opened(caps: dict[str, Any] | None = None, **config: Any) -> Connection:
    conn = start(caps, **config)
    (creds,) = conn.events()
    assert isinstance(creds, CredentialsReceived)
    conn.finish_authentication(creds.user)
    (tune,) = methods(conn)
    conn.receive_data(wire(0, C.Connection.TuneOk(tune.channel_max, tune.frame_max, 0),
                           C.Connection.Open(virtual_host="/")))
    assert isinstance(methods(conn)[-1], C.Connection.OpenOk)
    list(conn.events())
    return conn


def channel(conn: Connection, number: int = 1) -> int:
    conn.receive_data(wire(number, C.Channel.Open()))
    assert [m.name for m in methods(conn)] == ["Channel.OpenOk"]
    assert list(conn.events()) == [ChannelOpened(number)]
    return number


def test_start_offers_mechanisms_and_capabilities() -> None:
    conn = Connection(Role.SERVER, ServerConfig(external_identity=None))
    assert conn.data_to_send() == b""  # a server waits for the header
    conn.receive_data(PROTOCOL_HEADER[:3])
    assert conn.data_to_send() == b""
    conn.receive_data(PROTOCOL_HEADER[3:])
    (st,) = methods(conn)
    assert st.mechanisms == "PLAIN AMQPLAIN" and st.locales == "en_US"
    assert (st.version_major, st.version_minor) == (0, 9)
    caps = st.server_properties["capabilities"]
    for cap in ("publisher_confirms", "consumer_cancel_notify", "basic.nack",
                "connection.blocked", "per_consumer_qos", "exchange_exchange_bindings",
                "authentication_failure_close"):
        assert caps[cap] is True
    tls = Connection(Role.SERVER, ServerConfig(external_identity="CN=app"))
    tls.receive_data(PROTOCOL_HEADER)
    assert methods(tls)[0].mechanisms == "EXTERNAL PLAIN AMQPLAIN"


def test_external_login_names_the_certificate_identity() -> None:
    conn = start(mechanism="EXTERNAL", response="", external_identity="CN=app")
    assert list(conn.events()) == [CredentialsReceived("EXTERNAL", "CN=app", None)]


@pytest.mark.parametrize("mechanism, response", [
    ("EXTERNAL", ""),              # not offered without a TLS identity
    ("CRAM-MD5", "x"),             # never offered
    ("PLAIN", "guest-no-nuls"),    # malformed
])
def test_unusable_login_closes_the_transport_without_a_word(mechanism: str, response: str) -> None:
    conn = start(mechanism=mechanism, response=response)
    assert conn.data_to_send() == b""
    (end,) = conn.events()
    assert isinstance(end, ConnectionClosed) and end.code is None
    assert conn.closed and conn.auth_error


def test_refusal_without_authentication_failure_close_just_ends() -> None:
    conn = start(caps={})
    list(conn.events())
    conn.finish_authentication(None, "no such user")
    assert conn.data_to_send() == b""
    assert conn.closed and conn.auth_error == "no such user"


def test_refusal_with_the_capability_is_a_403_close() -> None:
    conn = start()
    list(conn.events())
    conn.finish_authentication(None, "bad password")
    (close,) = methods(conn)
    assert close.reply_code == ReplyCode.ACCESS_REFUSED
    assert close.reply_text == ("ACCESS_REFUSED - Login was refused using authentication "
                                "mechanism PLAIN. For details see the broker logfile.")
    assert conn.closed


def test_finish_authentication_outside_its_state_raises_and_after_the_end_is_ignored() -> None:
    conn = opened()
    with pytest.raises(ProtocolError):
        conn.finish_authentication("guest")
    gone = start()
    gone.receive_data(b"")  # the client left while its password was being checked
    gone.finish_authentication("guest")
    assert gone.closed


def test_handshake_timeout() -> None:
    conn = Connection(Role.SERVER, ServerConfig(handshake_timeout=5))
    conn.tick(100.0)
    assert conn.next_deadline() == 105.0
    conn.receive_data(PROTOCOL_HEADER)
    assert [type(m) for m in methods(conn)] == [C.Connection.Start]
    conn.tick(105.5)
    assert conn.closed
    assert conn.data_to_send() == b""  # as RabbitMQ: the socket is closed, nothing said
    assert isinstance(list(conn.events())[-1], ConnectionClosed)


@pytest.mark.parametrize("header", [False, True])
def test_expired_handshake_ends_without_a_word(header: bool) -> None:
    conn = Connection(Role.SERVER, ServerConfig())
    if header:
        conn.receive_data(PROTOCOL_HEADER)
        conn.data_to_send()
    conn.expire_handshake("too slow")
    assert conn.closed and conn.data_to_send() == b""
    assert list(conn.events())[-1] == ConnectionClosed(None, "too slow", False)


def test_abort_before_the_protocol_header_sends_nothing() -> None:
    conn = Connection(Role.SERVER, ServerConfig())
    conn.abort(ReplyCode.CONNECTION_FORCED, "refused")
    assert conn.closed and conn.data_to_send() == b""


def test_requests_are_owed_replies_in_order() -> None:
    conn = opened()
    ch = channel(conn)
    with pytest.raises(ProtocolError, match="answers nothing"):
        conn.send_method(ch, C.Queue.DeclareOk(queue="q", message_count=0, consumer_count=0))
    conn.receive_data(wire(ch, C.Queue.Declare(queue="q"), C.Basic.Qos(prefetch_count=5),
                           C.Queue.Declare(queue="nowait", nowait=True)))
    got = [e.method for e in conn.events() if isinstance(e, MethodReceived)]
    assert [m.name for m in got] == ["Queue.Declare", "Basic.Qos", "Queue.Declare"]
    with pytest.raises(ProtocolError, match=r"Queue\.Declare awaits Queue\.DeclareOk"):
        conn.send_method(ch, C.Basic.QosOk())
    conn.send_method(ch, C.Queue.DeclareOk(queue="q", message_count=0, consumer_count=0))
    conn.send_method(ch, C.Basic.QosOk())
    with pytest.raises(ProtocolError):
        conn.get_empty(ch)  # no basic.get asked
    with pytest.raises(ProtocolError, match="confirm_publish"):
        conn.send_method(ch, C.Basic.Ack(1))


def test_confirm_select_is_answered_and_publishes_are_numbered() -> None:
    conn = opened()
    ch = channel(conn)
    conn.receive_data(wire(ch, C.Confirm.Select()))
    assert [m.name for m in methods(conn)] == ["Confirm.SelectOk"]
    assert list(conn.events()) == []  # answered by the engine
    for i in range(3):
        conn.receive_data(wire(ch, C.Basic.Publish(exchange="", routing_key="q"),
                               pheader.ContentHeader(0, 2, C.Basic.Properties()),
                               pbody.ContentBody(b"m" + bytes([48 + i]))))
    tags = [e.publish_tag for e in conn.events() if isinstance(e, MessageReceived)]
    assert tags == [1, 2, 3] and conn.unconfirmed(ch) == (1, 2, 3)
    assert conn.confirm_publish(ch, 2, multiple=True) == [1, 2]
    with pytest.raises(ProtocolError):
        conn.confirm_publish(ch, 2)  # already confirmed
    assert conn.confirm_publish(ch, 3, ack=False) == [3]
    out = methods(conn)
    assert [(type(m).__name__, m.delivery_tag, m.multiple) for m in out] == [
        ("Ack", 2, True), ("Nack", 3, False)]
    conn.receive_data(wire(ch, C.Tx.Select()))
    (close,) = methods(conn)
    assert close.reply_code == ReplyCode.PRECONDITION_FAILED  # confirm → tx, as RabbitMQ


def test_deliveries_are_numbered_and_settled_strictly() -> None:
    conn = opened()
    ch = channel(conn)
    tags = [conn.deliver(ch, "c1", "", "q", b"x" * 10) for _ in range(4)]
    assert tags == [1, 2, 3, 4] and conn.unacked(ch) == (1, 2, 3, 4)
    conn.receive_data(wire(ch, C.Basic.Ack(2, multiple=True), C.Basic.Reject(3, requeue=True)))
    settled = [e for e in conn.events() if isinstance(e, DeliveriesSettled)]
    assert [(e.delivery_tags, e.ack, e.requeue) for e in settled] == [
        ([1, 2], True, False), ([3], False, True)]
    sent(conn)
    conn.receive_data(wire(ch, C.Basic.Ack(2)))  # settled already: RabbitMQ's 406
    (close,) = methods(conn)
    assert close.reply_code == ReplyCode.PRECONDITION_FAILED
    assert close.reply_text == "PRECONDITION_FAILED - unknown delivery tag 2"
    conn.receive_data(wire(ch, C.Channel.CloseOk()))
    (closed,) = [e for e in conn.events() if isinstance(e, ChannelClosed)]
    assert closed.unacked == (4,)  # the application requeues these


def test_content_is_cut_to_the_negotiated_frame_max() -> None:
    conn = opened(frame_max=4096)
    ch = channel(conn)
    body = bytes(10_000)
    conn.deliver(ch, "c", "ex", "rk", body, C.Basic.Properties(headers={"k": 1}))
    frames = sent(conn)
    bodies = [f.value for _, f in frames if isinstance(f, pbody.ContentBody)]
    assert [len(b) for b in bodies] == [4088, 4088, 1824] and b"".join(bodies) == body


def test_capability_dependent_notices() -> None:
    conn = opened()
    ch = channel(conn)
    assert conn.cancel_consumer(ch, "c1") is True
    assert conn.block("low on memory") is True and conn.unblock() is True
    out = methods(conn)
    assert out[0].name == "Basic.Cancel" and out[0].nowait
    assert [m.name for m in out[1:]] == ["Connection.Blocked", "Connection.Unblocked"]
    plain = opened(caps={})
    ch = channel(plain)
    assert plain.cancel_consumer(ch, "c1") is False
    assert plain.block() is False
    assert methods(plain) == []


def test_client_flow_stops_our_content() -> None:
    conn = opened()
    ch = channel(conn)
    conn.receive_data(wire(ch, C.Channel.Flow(active=False)))
    (flow_ok,) = methods(conn)
    assert flow_ok.name == "Channel.FlowOk" and flow_ok.active is False
    with pytest.raises(ProtocolError, match=r"channel\.flow"):
        conn.deliver(ch, "c", "", "q", b"x")


def test_server_closes_a_channel_and_the_connection() -> None:
    conn = opened()
    ch = channel(conn)
    conn.close_channel(ch, ReplyCode.NOT_FOUND, "no queue 'q'", class_id=50, method_id=10)
    (close,) = methods(conn)
    assert close.reply_text == "NOT_FOUND - no queue 'q'"
    conn.receive_data(wire(ch, C.Basic.Qos(prefetch_count=1)))  # discarded until close-ok
    conn.receive_data(wire(ch, C.Channel.CloseOk()))
    (closed,) = list(conn.events())
    assert closed == ChannelClosed(ch, ReplyCode.NOT_FOUND, "no queue 'q'", False)
    conn.close()
    assert conn.state is ConnectionState.CLOSING
    conn.receive_data(wire(0, C.Connection.CloseOk()))
    assert conn.closed
    with pytest.raises(ProtocolError):
        Connection(Role.SERVER).open_channel()


def test_awaiting_header_until_the_protocol_header_arrives() -> None:
    conn = Connection(Role.SERVER, ServerConfig())
    assert conn.awaiting_header
    conn.receive_data(PROTOCOL_HEADER)
    assert not conn.awaiting_header
    assert not Connection(Role.CLIENT, ConnectionConfig()).awaiting_header


def test_unfinished_bodies_of_all_channels_are_bounded_per_connection() -> None:
    """``max_buffered``: what the channels' unfinished messages hold together; past it
    the connection is closed with 506 resource-error (each message is within
    ``max_message_size``, so only the sum can tell)."""
    conn = opened(max_message_size=10_000, max_buffered=25_000)
    for ch in (1, 2, 3):
        channel(conn, ch)
    for ch in (1, 2):  # 9,000 of 10,000 octets each: 18,000 held
        conn.receive_data(wire(ch, C.Basic.Publish(exchange="", routing_key="q"),
                               pheader.ContentHeader(0, 10_000, C.Basic.Properties()),
                               pbody.ContentBody(b"x" * 9_000)))
    assert conn.buffered >= 18_000 and not conn.closed
    conn.receive_data(wire(1, pbody.ContentBody(b"x" * 1_000)))  # message 1 done: 9,000 held
    assert [type(e).__name__ for e in conn.events()] == ["MessageReceived"]
    conn.receive_data(wire(3, C.Basic.Publish(exchange="", routing_key="q"),
                           pheader.ContentHeader(0, 10_000, C.Basic.Properties()),
                           pbody.ContentBody(b"x" * 9_000)))
    assert not conn.closed  # 18,000 held again
    conn.receive_data(wire(1, C.Basic.Publish(exchange="", routing_key="q"),
                           pheader.ContentHeader(0, 10_000, C.Basic.Properties()),
                           pbody.ContentBody(b"x" * 7_001)))  # 25,001
    (close,) = methods(conn)
    assert close.reply_code == ReplyCode.RESOURCE_ERROR
    assert "25001 octets" in close.reply_text and close.reply_text.startswith("RESOURCE_ERROR")
    assert conn.closed and conn.buffered == 0
    closed = [e for e in conn.events() if isinstance(e, ConnectionClosed)]
    assert closed[0].code == ReplyCode.RESOURCE_ERROR


def test_without_max_buffered_only_the_message_size_bounds_input() -> None:
    conn = opened(max_message_size=10_000)
    for ch in (1, 2, 3, 4):
        channel(conn, ch)
        conn.receive_data(wire(ch, C.Basic.Publish(exchange="", routing_key="q"),
                               pheader.ContentHeader(0, 10_000, C.Basic.Properties()),
                               pbody.ContentBody(b"x" * 9_999)))
    assert not conn.closed and conn.buffered >= 39_996
