"""Decoded values of the recorded qpid-python <-> qpidd conversations.

Every capture direction must decode without error, and what it decodes to must
equal what the scenario's ``.json`` says was sent and received: every
delivery/message property, every application header value *and wire type*,
bodies, and the session-level bookkeeping (command ids, completions, results).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from amqp010 import spec
from amqp010 import types as T
from amqp010.base import Command
from amqp010.framing import Assembly

from .captures import (
    DIRECTIONS,
    PROTOCOL_HEADER_0_10,
    SCENARIOS,
    decoded,
    default_type_code,
    from_json,
    scan_entries,
    scenario_json,
    struct_as_dict,
)

LARGE_BODY = bytes(range(256)) * 1200


def test_all_four_scenarios_are_present() -> None:
    assert set(SCENARIOS) == {"session_basic", "large_message", "reject_release",
                              "translate_1_0_to_0_10"}


# --- helpers -------------------------------------------------------------------------


def transfers(scenario: str, direction: str) -> list[Assembly]:
    return [a for a in decoded(scenario, direction).assemblies
            if isinstance(a.op, spec.MessageTransfer)]


def ops(scenario: str, direction: str, cls: type) -> list[Any]:
    return [a.op for a in decoded(scenario, direction).assemblies if type(a.op) is cls]


def command_ids(scenario: str, direction: str) -> list[tuple[int, Command]]:
    """``(command id, command)`` for every command the direction sends.

    Ids start at the session.command-point the sender announced and count up by one
    per command (spec: session.command-point, execution model).
    """
    points = ops(scenario, direction, spec.SessionCommandPoint)
    assert len(points) == 1, "expected exactly one session.command-point"
    next_id = points[0].command_id
    out = []
    for a in decoded(scenario, direction).assemblies:
        if isinstance(a.op, Command):
            out.append((next_id, a.op))
            next_id += 1
    return out


def assert_values_equal(actual: Any, expected: Any, path: str) -> None:
    """``actual == expected`` with Python types checked too (``True == 1`` does not pass)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: decoded {actual!r}, expected a map"
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            assert_values_equal(actual[k], expected[k], f"{path}[{k!r}]")
        return
    if isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: decoded {actual!r}, expected a list"
        assert len(actual) == len(expected), f"{path}: {actual!r} != {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_values_equal(a, e, f"{path}[{i}]")
        return
    assert type(actual) is type(expected), (
        f"{path}: decoded {actual!r} ({type(actual).__name__}), "
        f"expected {expected!r} ({type(expected).__name__})")
    assert actual == expected, f"{path}: decoded {actual!r}, expected {expected!r}"


def assert_struct_matches(actual: Any, expected_json: dict[str, Any], what: str) -> None:
    """Every field the scenario lists has its value, and no other field is present."""
    expected = from_json(expected_json)
    present = struct_as_dict(actual) if actual is not None else {}
    for name, want in expected.items():
        got = getattr(actual, name) if actual is not None else None
        if hasattr(got, "FIELDS"):
            got = struct_as_dict(got)
        if name == "application_headers":
            assert_values_equal(got, want, f"{what}.{name}")
        else:
            assert got == want, f"{what}.{name}: decoded {got!r}, scenario says {want!r}"
    extra = sorted(set(present) - set(expected))
    assert not extra, f"{what}: decoded fields the scenario does not list: {extra}"


def assert_delivery_matches(a: Assembly, expected: dict[str, Any], what: str) -> None:
    assert_struct_matches(a.header_struct(spec.DeliveryProperties),
                          expected["delivery-properties"], f"{what}.delivery-properties")
    assert_struct_matches(a.header_struct(spec.MessageProperties),
                          expected["message-properties"], f"{what}.message-properties")
    if "body_hex" in expected:
        assert a.body == bytes.fromhex(expected["body_hex"]), f"{what}: body differs"
    if "body_len" in expected:
        assert len(a.body) == expected["body_len"], f"{what}: body length"
        prefix = bytes.fromhex(expected["body_prefix_hex"])
        assert a.body[:len(prefix)] == prefix, f"{what}: body prefix differs"


def raw_segment(a_frames: list[Any], segment_type: int) -> bytes:
    return b"".join(f.payload for f in a_frames if f.segment_type == segment_type)


# --- every capture decodes ----------------------------------------------------------------


@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_capture_decodes_completely(scenario: str, direction: str) -> None:
    d = decoded(scenario, direction)
    assert d.protocol_header.raw == PROTOCOL_HEADER_0_10
    assert d.protocol_header.supported
    assert d.protocol_header.version == "AMQP 1.1 0-10"
    assert len(d.assemblies) >= 10, "a capture holds a whole connection"
    first, last = d.assemblies[0].op, d.assemblies[-1].op
    if direction == "c2s":
        assert type(first) is spec.ConnectionStartOk
        assert type(last) is spec.ConnectionClose
    else:
        assert type(first) is spec.ConnectionStart
        assert type(last) is spec.ConnectionCloseOk
    for a in d.assemblies:
        expected_track = 0 if isinstance(a.op, spec.Control) else 1
        assert a.track == expected_track


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_frames_respect_negotiated_max_frame_size(scenario: str) -> None:
    (tune,) = ops(scenario, "s2c", spec.ConnectionTune)
    for direction in DIRECTIONS:
        for f in decoded(scenario, direction).frames:
            assert 12 + len(f.payload) <= tune.max_frame_size


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_connection_handshake(scenario: str) -> None:
    (start,) = ops(scenario, "s2c", spec.ConnectionStart)
    (start_ok,) = ops(scenario, "c2s", spec.ConnectionStartOk)
    # README: SASL with ANONYMOUS offered and PLAIN used; mechanisms are a str16-array
    assert start.mechanisms == T.Array(0x95, ["ANONYMOUS", "PLAIN"])
    assert start.server_properties["product"] == "qpid-cpp"
    assert start.server_properties["version"] == "1.40.0"
    assert start_ok.mechanism == "PLAIN"
    _authzid, user, password = start_ok.response.split(b"\x00")
    assert user == b"guest" and password == b"guest"
    assert start_ok.client_properties["product"] == "qpid python client"
    assert type(start_ok.client_properties["qpid.client_pid"]) is int
    (close,) = ops(scenario, "c2s", spec.ConnectionClose)
    assert close.reply_code == spec.CloseCode.NORMAL


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_session_attach_and_detach_name_one_session(scenario: str) -> None:
    (attach,) = ops(scenario, "c2s", spec.SessionAttach)
    (attached,) = ops(scenario, "s2c", spec.SessionAttached)
    (detach,) = ops(scenario, "c2s", spec.SessionDetach)
    (detached,) = ops(scenario, "s2c", spec.SessionDetached)
    assert attach.name.startswith(b"capture-")
    assert attach.name == attached.name == detach.name == detached.name
    assert detached.code == spec.DetachCode.NORMAL


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_broker_session_completed_covers_every_client_command(scenario: str) -> None:
    client_ids = [i for i, _ in command_ids(scenario, "c2s")]
    completed = ops(scenario, "s2c", spec.SessionCompleted)
    assert completed, "the broker sent no session.completed"
    uppers = []
    for c in completed:
        assert len(c.commands.ranges) == 1 and c.commands.ranges[0][0] == 0, (
            f"qpidd completes cumulatively from 0, got {c.commands!r}")
        uppers.append(c.commands.ranges[0][1])
    assert uppers == sorted(uppers), "completion never goes backwards"
    assert uppers[-1] == client_ids[-1], "the last completion covers the last client command"
    assert list(completed[-1].commands) == client_ids


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_client_settles_exactly_the_transfers_it_received(scenario: str) -> None:
    delivered = {i for i, c in command_ids(scenario, "s2c") if type(c) is spec.MessageTransfer}
    settled: list[int] = []
    for cls in (spec.MessageAccept, spec.MessageRelease, spec.MessageReject):
        for op in ops(scenario, "c2s", cls):
            settled.extend(op.transfers)
    assert sorted(settled) == sorted(delivered)


# --- session_basic --------------------------------------------------------------------------


def test_session_basic_sent_transfers_match_scenario() -> None:
    sent = scenario_json("session_basic")["sent"]
    got = transfers("session_basic", "c2s")
    assert len(got) == len(sent) == 3
    for i, (a, want) in enumerate(zip(got, sent, strict=True)):
        assert a.op.destination == want["destination"], f"sent[{i}].destination"
        assert a.op.sync, "qpid-python sends every command with the sync flag"
        assert a.segments == 3
        assert_delivery_matches(a, want, f"sent[{i}]")


def test_session_basic_received_transfers_match_scenario() -> None:
    received = scenario_json("session_basic")["received"]
    got = transfers("session_basic", "s2c")
    assert len(got) == len(received) == 3
    (subscribe,) = ops("session_basic", "c2s", spec.MessageSubscribe)
    for i, (a, want) in enumerate(zip(got, received, strict=True)):
        assert a.op.destination == subscribe.destination
        assert a.op.accept_mode == subscribe.accept_mode == spec.AcceptMode.EXPLICIT
        assert a.op.acquire_mode == spec.AcquireMode.PRE_ACQUIRED
        assert not a.op.sync
        assert_delivery_matches(a, want, f"received[{i}]")


def test_session_basic_ttl_counts_down_in_the_broker() -> None:
    sent = transfers("session_basic", "c2s")[1].header_struct(spec.DeliveryProperties)
    got = transfers("session_basic", "s2c")[1].header_struct(spec.DeliveryProperties)
    assert sent.ttl == 60000
    assert 0 < got.ttl <= sent.ttl


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_session_basic_application_header_wire_types(direction: str) -> None:
    """Each header was sent with qpid-python's default wire type, and decodes to a value
    whose own (default) wire type is the same, so re-encoding keeps it."""
    index = 0
    expected_json = scenario_json("session_basic")["sent"][index]["message-properties"][
        "application_headers"]
    d = decoded("session_basic", direction)
    msg_idx = [i for i, a in enumerate(d.assemblies) if isinstance(a.op, spec.MessageTransfer)]
    a, frames = d.assemblies[msg_idx[index]], d.frames_of[msg_idx[index]]
    headers = a.header_struct(spec.MessageProperties).application_headers
    assert_values_equal(headers, from_json(expected_json), "application_headers")

    raw = raw_segment(frames, 2)
    encoded = bytearray()
    T.encode_map(encoded, headers)
    at = raw.find(bytes(encoded))
    assert at >= 0, "the decoded headers re-encode to the captured bytes"
    scanned = scan_entries(raw, at, is_map=True)

    def check(entries: list[Any], want: Any, got: Any, path: str) -> None:
        keys = list(want) if isinstance(want, dict) else range(len(want))
        assert len(entries) == len(keys)
        for entry, k in zip(entries, keys, strict=True):
            if isinstance(want, dict):
                assert entry.key == k
            code = default_type_code(want[k])
            assert entry.code == code, (
                f"{path}[{k!r}] went on the wire as {entry.code:#04x}, "
                f"qpid-python's default is {code:#04x}")
            assert T.type_code_of(got[k]) == entry.code, (
                f"{path}[{k!r}] decoded to {got[k]!r}, which would re-encode as "
                f"{T.type_code_of(got[k]):#04x}, not {entry.code:#04x}")
            if entry.children is not None:
                check(entry.children, want[k], got[k], f"{path}[{k!r}]")

    check(scanned, expected_json, headers, "application_headers")
    assert {e.key: e.code for e in scanned} == {
        "int": 0x31, "neg": 0x31, "big": 0x31, "flag": 0x08, "ratio": 0x33, "text": 0x95,
        "bin": 0x90, "nested": 0xA8, "list": 0xA9, "uid": 0x48, "none": 0xF0}


def test_session_basic_queue_declare_bind_and_query_result() -> None:
    sent = scenario_json("session_basic")["sent"]
    queue = sent[0]["delivery-properties"]["routing_key"]
    (declare,) = ops("session_basic", "c2s", spec.QueueDeclare)
    assert declare.queue == queue
    assert declare.arguments == {"qpid.max_count": 1000}
    (bind,) = ops("session_basic", "c2s", spec.ExchangeBind)
    assert (bind.queue, bind.exchange, bind.binding_key) == (
        queue, sent[1]["destination"], sent[1]["delivery-properties"]["routing_key"])

    ids = dict((type(c), i) for i, c in command_ids("session_basic", "c2s"))
    (query,) = ops("session_basic", "c2s", spec.QueueQuery)
    assert query.queue == queue and query.sync
    (result,) = ops("session_basic", "s2c", spec.ExecutionResult)
    assert result.command_id == ids[spec.QueueQuery]
    value = result.value
    assert type(value) is spec.QueueQueryResult is spec.QueueQuery.RESULT
    assert value.queue == queue
    assert value.message_count == scenario_json("session_basic")["queue_depth_after_send"]
    assert value.subscriber_count == 0
    assert value.arguments == declare.arguments
    assert value.alternate_exchange == ""


def test_session_basic_subscription_and_credit() -> None:
    (subscribe,) = ops("session_basic", "c2s", spec.MessageSubscribe)
    (mode,) = ops("session_basic", "c2s", spec.MessageSetFlowMode)
    flows = ops("session_basic", "c2s", spec.MessageFlow)
    (cancel,) = ops("session_basic", "c2s", spec.MessageCancel)
    assert subscribe.queue == "cap.basic"
    assert mode.destination == subscribe.destination == cancel.destination
    assert mode.flow_mode == spec.FlowMode.CREDIT
    assert [(f.unit, f.value) for f in flows] == [
        (spec.CreditUnit.MESSAGE, len(scenario_json("session_basic")["received"])),
        (spec.CreditUnit.BYTE, 0xFFFFFFFF)]


# --- large_message ------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_large_message_body_is_intact(direction: str) -> None:
    info = scenario_json("large_message")
    d = decoded("large_message", direction)
    idx = [i for i, a in enumerate(d.assemblies) if isinstance(a.op, spec.MessageTransfer)]
    assert len(idx) == 1
    a, frames = d.assemblies[idx[0]], d.frames_of[idx[0]]
    assert len(a.body) == info["sent"][0]["body_len"] == 307_200
    assert a.body == LARGE_BODY
    body_frames = [f for f in frames if f.segment_type == 3]
    assert len(body_frames) > 1, "the body arrived split across several frames"
    assert all(12 + len(f.payload) == 0xFFFF for f in body_frames[:-1])
    assert [f.first_frame for f in body_frames] == [True] + [False] * (len(body_frames) - 1)
    assert [f.last_frame for f in body_frames] == [False] * (len(body_frames) - 1) + [True]
    assert all(f.last_segment for f in body_frames)
    if direction == "s2c":
        assert info["body_matches"] is True
        assert_delivery_matches(a, info["received"][0], "received[0]")


# --- reject_release -------------------------------------------------------------------------------


def test_reject_release_deliveries_and_redelivery() -> None:
    info = scenario_json("reject_release")
    got = transfers("reject_release", "s2c")
    want = info["first"] + info["redelivered"]
    assert len(got) == len(want) == 4
    for i, (a, w) in enumerate(zip(got, want, strict=True)):
        assert_delivery_matches(a, w, f"delivery[{i}]")
    assert [a.header_struct(spec.DeliveryProperties).redelivered for a in got] == [
        False, False, False, True]
    assert got[3].op.destination == "sub2"


def test_reject_release_settlement_commands() -> None:
    deliveries = transfers("reject_release", "s2c")
    tag = {}  # application header "i" -> command id of its first delivery
    transfer_ids = [i for i, c in command_ids("reject_release", "s2c")
                    if type(c) is spec.MessageTransfer]
    for cid, a in zip(transfer_ids, deliveries, strict=True):
        tag.setdefault(a.header_struct(spec.MessageProperties).application_headers["i"], cid)

    (release,) = ops("reject_release", "c2s", spec.MessageRelease)
    assert list(release.transfers) == [tag[0]]
    assert release.set_redelivered is True
    (reject,) = ops("reject_release", "c2s", spec.MessageReject)
    assert list(reject.transfers) == [tag[1]]
    assert reject.code == spec.RejectCode.UNSPECIFIED
    assert reject.text == "bad message"
    accepts = ops("reject_release", "c2s", spec.MessageAccept)
    assert list(accepts[0].transfers) == [tag[2]]
    assert list(accepts[1].transfers) == [transfer_ids[3]], "the redelivery of #0 is accepted"

    (result,) = ops("reject_release", "s2c", spec.ExecutionResult)
    assert result.value.message_count == scenario_json("reject_release")["depth_after"]
    assert result.value.queue == "cap.rr"


# --- translate_1_0_to_0_10 --------------------------------------------------------------------------


def test_translated_messages_match_scenario() -> None:
    info = scenario_json("translate_1_0_to_0_10")
    got = transfers("translate_1_0_to_0_10", "s2c")
    assert len(got) == len(info["received_010"]) == len(info["sent_amqp10"]) == 4
    for i, (a, want) in enumerate(zip(got, info["received_010"], strict=True)):
        assert_delivery_matches(a, want, f"received_010[{i}]")
    assert transfers("translate_1_0_to_0_10", "c2s") == []


def test_translated_cloudevents_headers() -> None:
    info = scenario_json("translate_1_0_to_0_10")
    a = transfers("translate_1_0_to_0_10", "s2c")[0]
    headers = a.header_struct(spec.MessageProperties).application_headers
    sent = info["sent_amqp10"][0]
    for k, v in sent["properties"].items():
        assert_values_equal(headers[k], v, f"application_headers[{k!r}]")
    assert headers["cloudEvents_time"] == info["cloudEvents_time_ms"]
    assert headers["qpid.subject"] == sent["subject"]
    assert {T.type_code_of(v) for v in headers.values()} == {0x31, 0x95}


def test_translated_bodies() -> None:
    info = scenario_json("translate_1_0_to_0_10")
    got = transfers("translate_1_0_to_0_10", "s2c")
    sent = info["sent_amqp10"]
    assert got[0].body == bytes.fromhex(sent[0]["body"]["bytes_hex"])
    assert got[1].body == bytes.fromhex(sent[1]["body"]["bytes_hex"])
    # an amqp-value map body arrives as an AMQP 0-10 map ("amqp/map")
    assert got[2].header_struct(spec.MessageProperties).content_type == "amqp/map"
    body_map, end = T.decode_map(got[2].body)
    assert end == len(got[2].body)
    assert_values_equal(body_map, sent[2]["body"], "amqp/map body")
    assert got[3].body == sent[3]["body"].encode()
    props = got[3].header_struct(spec.MessageProperties)
    assert uuid.UUID(props.correlation_id.decode())  # the 1.0 correlation-id, as text
    assert props.reply_to == spec.ReplyTo()
    assert props.user_id == b"guest"
