"""Connection handshake, SASL, tune, open/redirect, close and heartbeats (both roles)."""

from __future__ import annotations

import itertools

import pytest

from amqp010.connection import (
    Connection,
    ConnectionConfig,
    ConnectionState,
    ProtocolError,
    Redirect,
    Role,
)
from amqp010.events import (
    ConnectionClosed,
    ConnectionOpened,
    ConnectionRedirected,
    CredentialsReceived,
    HeartbeatTimeout,
)
from amqp010.framing import (
    PROTOCOL_HEADER,
    Assembler,
    FrameDecoder,
    ProtocolHeader,
    encode_assembly,
)
from amqp010.sasl import ClientCredentials, SimpleAuthenticator, Step
from amqp010.spec import (
    CloseCode,
    ConnectionClose,
    ConnectionHeartbeat,
    ConnectionRedirect,
    ConnectionStart,
    ConnectionStartOk,
    ConnectionTune,
    ConnectionTuneOk,
)

from .pump import Pair, client_conn, open_pair, server_conn


def decode_all(data: bytes, header: bool = True) -> list:
    dec = FrameDecoder(expect_protocol_header=header)
    asm = Assembler()
    dec.feed(data)
    out = []
    for f in dec.frames():
        if isinstance(f, ProtocolHeader):
            out.append(f)
            continue
        a = asm.add(f)
        if a is not None:
            out.append(a.op)
    return out


def test_plain_handshake_opens_both_sides_and_reports_identity() -> None:
    pair = open_pair()
    c_open = pair.of(ConnectionOpened)[0]
    s_open = pair.of(ConnectionOpened, "server")[0]
    assert s_open.user == "guest" and c_open.user == "guest"
    assert c_open.peer_properties["product"] == "amqp-bridge"
    ops = decode_all(bytes(pair.c2s))
    start_ok = next(o for o in ops if isinstance(o, ConnectionStartOk))
    assert start_ok.mechanism == "PLAIN" and start_ok.response == b"\x00guest\x00guest"
    assert start_ok.locale == "en_US"


def test_anonymous_when_no_credentials() -> None:
    pair = open_pair(client=client_conn(credentials=ClientCredentials()))
    assert pair.of(ConnectionOpened, "server")[0].user == "anonymous"
    start_ok = next(o for o in decode_all(bytes(pair.c2s)) if isinstance(o, ConnectionStartOk))
    assert start_ok.mechanism == "ANONYMOUS"


def test_bad_password_is_refused_with_connection_forced() -> None:
    pair = Pair(client=client_conn(credentials=ClientCredentials("guest", "wrong")))
    pair.pump()
    closed = pair.of(ConnectionClosed)
    assert closed and closed[0].code == CloseCode.CONNECTION_FORCED and closed[0].by_peer
    assert "authentication failed" in closed[0].text
    assert pair.client.closed and pair.server.closed


def test_anonymous_not_offered_client_has_no_usable_mechanism() -> None:
    server = server_conn(authenticator=SimpleAuthenticator({"u": "p"}, anonymous=False))
    pair = Pair(client=client_conn(credentials=ClientCredentials()), server=server)
    pair.pump()
    assert pair.client.closed
    assert "no usable SASL mechanism" in pair.of(ConnectionClosed)[0].text
    assert pair.of(ConnectionClosed, "server")[0].code == CloseCode.CONNECTION_FORCED


class _ChallengeTwice:
    """A custom mechanism: two secure/secure-ok rounds before success."""

    def __init__(self) -> None:
        self.rounds = 0

    def start(self, response: bytes) -> Step:
        assert response == b"\x00guest\x00guest"
        return Step(challenge=b"round-1")

    def step(self, response: bytes) -> Step:
        self.rounds += 1
        return Step(challenge=b"round-2") if self.rounds == 1 else Step(identity="challenged")


class _ChallengeAuth:
    def mechanisms(self, external_identity: str | None) -> list[str]:
        return ["PLAIN"]

    def mechanism(self, name: str, external_identity: str | None) -> _ChallengeTwice:
        return _ChallengeTwice()


def test_secure_challenge_loop() -> None:
    pair = open_pair(server=server_conn(authenticator=_ChallengeAuth()))
    assert pair.of(ConnectionOpened, "server")[0].user == "challenged"
    from amqp010.spec import ConnectionSecure, ConnectionSecureOk

    s_ops = decode_all(bytes(pair.s2c))
    c_ops = decode_all(bytes(pair.c2s))
    assert [o.challenge for o in s_ops if isinstance(o, ConnectionSecure)] == [b"round-1", b"round-2"]
    assert len([o for o in c_ops if isinstance(o, ConnectionSecureOk)]) == 2


def test_external_with_tls_client_certificate() -> None:
    server = server_conn(external_identity="CN=bridge")
    client = client_conn(credentials=ClientCredentials(external=True))
    pair = open_pair(client=client, server=server)
    assert pair.of(ConnectionOpened, "server")[0].user == "CN=bridge"
    start = next(o for o in decode_all(bytes(pair.s2c)) if isinstance(o, ConnectionStart))
    assert next(iter(start.mechanisms)) == "EXTERNAL"


def test_tune_negotiates_minimum_of_both_sides() -> None:
    client = client_conn(channel_max=10, max_frame_size=8192, heartbeat=30)
    server = server_conn(channel_max=100, max_frame_size=16384, heartbeat_min=5, heartbeat_max=20)
    pair = open_pair(client=client, server=server)
    for conn in (pair.client, pair.server):
        assert (conn.channel_max, conn.max_frame_size, conn.heartbeat) == (10, 8192, 20)
    tune_ok = next(o for o in decode_all(bytes(pair.c2s)) if isinstance(o, ConnectionTuneOk))
    assert (tune_ok.channel_max, tune_ok.max_frame_size, tune_ok.heartbeat) == (10, 8192, 20)


def test_no_heartbeat_when_server_offers_none() -> None:
    pair = open_pair(client=client_conn(heartbeat=10),
                     server=server_conn(heartbeat_min=None, heartbeat_max=None))
    assert pair.client.heartbeat is None and pair.server.heartbeat is None


def test_virtual_host_is_sent_and_reported() -> None:
    seen = []

    def handler(vhost: str, conn: Connection) -> None:
        seen.append(vhost)

    pair = open_pair(client=client_conn(virtual_host="/prod"), server=server_conn(open_handler=handler))
    assert seen == ["/prod"]
    assert pair.of(ConnectionOpened, "server")[0].virtual_host == "/prod"


def test_unknown_virtual_host_closes_with_invalid_path() -> None:
    pair = Pair(client=client_conn(virtual_host="nope"),
                server=server_conn(open_handler=lambda v, c: f"no vhost {v!r}"))
    pair.pump()
    closed = pair.of(ConnectionClosed)[0]
    assert closed.code == CloseCode.INVALID_PATH and closed.text == "no vhost 'nope'"


def test_redirect_surfaces_host_and_known_hosts() -> None:
    server = server_conn(open_handler=lambda v, c: Redirect("amqp:tcp:10.0.0.2:5672",
                                                            ["amqp:tcp:10.0.0.3:5672"]))
    pair = Pair(server=server)
    pair.pump()
    red = pair.of(ConnectionRedirected)[0]
    assert red.host == "amqp:tcp:10.0.0.2:5672" and red.known_hosts == ["amqp:tcp:10.0.0.3:5672"]
    assert pair.client.closed and pair.server.closed
    assert any(isinstance(o, ConnectionRedirect) for o in decode_all(bytes(pair.s2c)))


def test_known_hosts_on_open_ok() -> None:
    pair = open_pair(server=server_conn(known_hosts=["amqp:tcp:h1:5672"]))
    assert pair.of(ConnectionOpened)[0].known_hosts == ["amqp:tcp:h1:5672"]


@pytest.mark.parametrize("closer", ["client", "server"])
def test_close_in_both_directions(closer: str) -> None:
    pair = open_pair()
    side = pair.client if closer == "client" else pair.server
    side.close(CloseCode.CONNECTION_FORCED, "going away")
    assert side.state is ConnectionState.CLOSING
    pair.pump()
    mine = pair.of(ConnectionClosed, closer)[0]
    theirs = pair.of(ConnectionClosed, "server" if closer == "client" else "client")[0]
    assert (mine.code, mine.text, mine.by_peer) == (CloseCode.CONNECTION_FORCED, "going away", False)
    assert (theirs.code, theirs.text, theirs.by_peer) == (CloseCode.CONNECTION_FORCED, "going away", True)
    assert pair.client.closed and pair.server.closed


def test_transport_eof_closes_without_code() -> None:
    pair = open_pair()
    pair.server.receive_data(b"")
    ev = list(pair.server.events())
    assert ev == [ConnectionClosed(None, "transport closed by peer", True)]


def test_byte_at_a_time_handshake() -> None:
    pair = open_pair(chunk=1)
    assert pair.client.is_open


def test_unsupported_protocol_header_gets_ours_back_and_the_socket_closes() -> None:
    server = server_conn()
    server.receive_data(b"AMQP\x00\x01\x00\x00")
    assert server.data_to_send() == PROTOCOL_HEADER
    assert server.closed
    ev = list(server.events())
    assert len(ev) == 1 and isinstance(ev[0], ConnectionClosed) and ev[0].code is None
    assert "AMQP 0.1 0-0" in ev[0].text


def test_client_refuses_server_with_other_version() -> None:
    client = client_conn()
    assert client.data_to_send() == PROTOCOL_HEADER
    client.receive_data(b"AMQP\x00\x01\x00\x00")
    assert client.closed and client.data_to_send() == b""


def test_not_amqp_at_all_is_a_framing_failure() -> None:
    server = server_conn()
    server.receive_data(b"GET / HTTP/1.1\r\n")
    assert server.closed
    assert server.data_to_send() == b""


def test_client_drives_a_raw_server_script() -> None:
    """The client role against hand-written server bytes (no server engine)."""
    from amqp010.framing import encode_assembly
    from amqp010.spec import ConnectionOpenOk
    from amqp010.types import Array

    client = client_conn(heartbeat=60)
    client.data_to_send()
    client.receive_data(PROTOCOL_HEADER + encode_assembly(0, ConnectionStart(
        server_properties={"product": "raw"}, mechanisms=Array(0x95, ["PLAIN"]),
        locales=Array(0x95, ["en_US"]))))
    assert client.state is ConnectionState.AWAIT_TUNE
    client.receive_data(encode_assembly(0, ConnectionTune(channel_max=7, max_frame_size=4096,
                                                          heartbeat_min=1, heartbeat_max=30)))
    ops = decode_all(client.data_to_send(), header=False)
    assert isinstance(ops[0], ConnectionStartOk)
    assert (ops[1].channel_max, ops[1].max_frame_size, ops[1].heartbeat) == (7, 4096, 30)
    assert ops[2].virtual_host == ""
    client.receive_data(encode_assembly(0, ConnectionOpenOk(known_hosts=Array(0x95, []))))
    assert client.is_open and isinstance(client.next_event(), ConnectionOpened)


def test_heartbeats_are_sent_when_idle_and_silence_is_detected() -> None:
    pair = open_pair(client=client_conn(heartbeat=5), server=server_conn(heartbeat_min=1))
    c, s = pair.client, pair.server
    assert c.heartbeat == s.heartbeat == 5
    c.tick(100.0)
    s.tick(100.0)
    assert c.data_to_send() == b"" and s.data_to_send() == b""
    c.tick(105.0)
    hb = c.data_to_send()
    assert decode_all(hb, header=False) == [ConnectionHeartbeat()]
    s.receive_data(hb)
    s.tick(109.0)
    s.data_to_send()  # the server's own heartbeat at 105+; never delivered to the client
    c.tick(110.0)  # idle exactly 2x heartbeat: still alive
    assert not c.closed
    c.data_to_send()
    c.tick(110.5)
    events = list(c.events())
    assert isinstance(events[0], HeartbeatTimeout) and events[0].idle == pytest.approx(10.5)
    assert events[-1] == ConnectionClosed(None, events[-1].text, True) and c.closed
    assert not s.closed


def test_heartbeat_traffic_keeps_the_connection_alive() -> None:
    pair = open_pair(client=client_conn(heartbeat=2), server=server_conn(heartbeat_min=1))
    for t in range(0, 40):
        pair.client.tick(float(t))
        pair.server.tick(float(t))
        pair.pump()
    assert pair.client.is_open and pair.server.is_open
    assert not pair.of(HeartbeatTimeout) and not pair.of(HeartbeatTimeout, "server")
    assert pair.client.next_deadline() is not None


def test_heartbeat_is_due_one_interval_after_the_last_output_made_while_collecting() -> None:
    """A server driven as the bridge drives a façade client (tick, then collect the
    output, at each wake-up: a client's command read, or the engine's next deadline)
    is never silent for more than one heartbeat interval — also when its last output
    was a session.completed, which is made while the output is collected.

    Regression for the 0-10 façade subscribers that timed out the bridge ("SessionDetached
    by_peer=True, code=None", ~21/h in a 60-minute soak): that output was counted as sent
    at the next tick, up to one interval later, so the heartbeat came up to two intervals
    after it — 2.0 s apart in the soak's traces with a 1 s heartbeat, the very silence
    after which the client gives up."""
    pair = open_pair(client=client_conn(heartbeat=1), server=server_conn(heartbeat_min=1))
    client, server = pair.client, pair.server
    session = client.attach("s", auto_complete=True)
    pair.pump()
    sent: list[float] = []

    def wake(now: float) -> None:  # the bridge's EngineSocket: tick, then write
        server.tick(now)
        for ev in server.events():
            command_id = getattr(ev, "command_id", None)
            if command_id is not None:
                ev.session.complete(command_id)  # type: ignore[attr-defined]
        if server.data_to_send():
            sent.append(now)

    wake(100.0)
    wake(100.0 + 1)  # a heartbeat at 101
    assert sent[-1] == 101.0
    session.execution_sync()  # the client asks; the server completes it at once
    server.receive_data(client.data_to_send())
    wake(101.01)  # the session.completed goes out while collecting
    assert sent[-1] == 101.01
    for _ in range(10):  # the client stays silent: until just before it times out
        deadline = server.next_deadline()
        assert deadline is not None
        if deadline > 103.005:
            break
        wake(deadline)
    assert len(sent) >= 3 and not server.closed, sent
    gaps = [b - a for a, b in itertools.pairwise(sent)]
    assert max(gaps) <= 1.0 + 1e-9, sent


def test_close_sent_during_handshake_is_answered() -> None:
    server = server_conn()
    server.receive_data(PROTOCOL_HEADER)
    server.data_to_send()
    from amqp010.framing import encode_assembly

    server.receive_data(encode_assembly(0, ConnectionClose(reply_code=200, reply_text="bye")))
    assert server.closed
    assert any(type(o).__name__ == "ConnectionCloseOk"
               for o in decode_all(server.data_to_send(), header=False))


def test_role_and_config_defaults() -> None:
    conn = Connection(Role.SERVER)
    assert conn.is_server and conn.state is ConnectionState.AWAIT_HEADER
    assert isinstance(conn.config, ConnectionConfig)
    assert conn.data_to_send() == b""


# --- credentials checked by the application (deferred PLAIN) --------------------------------


def _deferring_pair(password: str = "secret") -> Pair:
    server = server_conn(authenticator=SimpleAuthenticator(
        {"app": "unused: the application checks"}, anonymous=False, defer=True))
    pair = Pair(client=client_conn(credentials=ClientCredentials("app", password)), server=server)
    pair.pump()
    return pair


def test_deferred_credentials_wait_for_the_application_then_open() -> None:
    pair = _deferring_pair()
    [credentials] = pair.of(CredentialsReceived, "server")
    assert (credentials.user, credentials.password) == ("app", "secret")
    assert "secret" not in repr(credentials)
    assert pair.server.state is ConnectionState.AWAIT_AUTHENTICATION
    assert not any(isinstance(o, ConnectionTune) for o in decode_all(bytes(pair.s2c)))
    assert not pair.client.is_open  # nothing was sent: the client still waits

    pair.server.finish_authentication("app")
    pair.pump()
    assert pair.client.is_open and pair.server.is_open
    assert pair.of(ConnectionOpened, "server")[0].user == "app"


def test_deferred_credentials_refused_close_with_the_reason() -> None:
    pair = _deferring_pair("wrong")
    pair.server.finish_authentication(None, "bad credentials for 'app'")
    pair.pump()
    [closed] = pair.of(ConnectionClosed)
    assert closed.code == CloseCode.CONNECTION_FORCED and closed.by_peer
    assert closed.text == "authentication failed: bad credentials for 'app'"
    assert pair.server.auth_error == "bad credentials for 'app'"


def test_a_client_that_does_not_wait_for_the_check_is_closed() -> None:
    pair = _deferring_pair()
    pair.server.receive_data(encode_assembly(0, ConnectionTuneOk(channel_max=1,
                                                                  max_frame_size=4096)))
    assert pair.server.closed
    assert "unexpected connection.tune-ok in state await-authentication" in (
        pair.server.close_text or "")


def test_an_answer_after_the_client_left_is_ignored() -> None:
    pair = _deferring_pair()
    pair.client.close()
    pair.pump()
    assert pair.server.closed
    pair.server.finish_authentication("app")  # the check finished too late: nothing happens
    assert pair.server.data_to_send() == b""


def test_finish_authentication_without_credentials_waiting_is_an_error() -> None:
    pair = open_pair()
    with pytest.raises(ProtocolError):
        pair.server.finish_authentication("guest")
