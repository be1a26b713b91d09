"""What a façade client says of itself at login, as its log line gives it
(:func:`bridge.facade.core.identity.client_identity`): the names pika and qpid.messaging
send, and what a hostile client might send instead."""

from __future__ import annotations

from bridge.facade.core.identity import IDENTITY_LIMIT, client_identity, described


def test_pikas_and_qpid_messagings_properties() -> None:
    assert client_identity({"product": "Pika Python Client Library", "version": "1.4.4",
                            "connection_name": "orders-worker", "platform": "Python 3.11",
                            "capabilities": {"publisher_confirms": True}}) \
        == {"connection_name": "orders-worker", "client": "Pika Python Client Library 1.4.4"}
    qpid = client_identity({"product": b"qpid python client", "qpid.client_version": b"1.40",
                            "platform": b"posix", "qpid.client_process": b"spout",
                            "qpid.client_pid": 4242, "qpid.client_ppid": 1})
    assert qpid == {"client": "qpid python client 1.40", "client_process": "spout (pid 4242)"}
    assert described(qpid) == " (client qpid python client 1.40, client_process spout (pid 4242))"
    assert described({}) == ""


def test_what_a_client_sends_is_cut_to_printable_text() -> None:
    named = client_identity({"connection_name": "a\x1b[31mred\nline" + "x" * 500,
                             "product": 12, "version": ["1"], "qpid.client_pid": True,
                             "qpid.client_process": b"\xff\xfe"})
    assert named["connection_name"].startswith("a[31mredline")
    assert len(named["connection_name"]) == IDENTITY_LIMIT  # (the unprintables dropped first)
    assert named["client_process"] == "\ufffd\ufffd"  # (undecodable bytes, replaced)
    assert "client" not in named  # (not text)
