"""AMQP 0-10 codec throughput next to python-qpid-proton's AMQP 1.0 Message codec.

Run: ``.venv/bin/python benchmarks/codec.py``.  Encodes and decodes a typical
message.transfer (delivery-properties with routing-key/priority/durable/ttl,
message-properties with message-id, correlation-id, reply-to, content-type and
5 application headers, 1 KiB body) and, in the same process, proton's
``Message.encode()``/``decode()`` of the equivalent AMQP 1.0 message.
"""

from __future__ import annotations

import uuid

from _timing import rate, report  # benchmarks/ is on sys.path when run as a script
from proton import Message, symbol

from bridge.amqp010.framing import Assembler, FrameDecoder, encode_assembly
from bridge.amqp010.spec import (
    DeliveryProperties,
    MessageProperties,
    MessageTransfer,
    ReplyTo,
)

BODY = bytes(range(256)) * 4
MESSAGE_ID = uuid.UUID("a3eea816-3595-45cf-8be1-b9a11fec943f")
HEADERS = {"order": 42, "region": "emea", "priority-class": "gold", "retries": 0, "express": True}


def amqp010_transfer() -> tuple[MessageTransfer, tuple, bytes]:
    transfer = MessageTransfer(destination="amq.direct", accept_mode=0, acquire_mode=0)
    dp = DeliveryProperties(priority=6, delivery_mode=2, ttl=60000, routing_key="orders.eu")
    mp = MessageProperties(message_id=MESSAGE_ID, correlation_id=b"corr-12345",
                           reply_to=ReplyTo(exchange="amq.direct", routing_key="replies"),
                           content_type="application/json", application_headers=HEADERS)
    return transfer, (dp, mp), BODY


def amqp10_message() -> Message:
    return Message(body=BODY, id=MESSAGE_ID, correlation_id="corr-12345",
                   reply_to="amq.direct/replies", content_type=symbol("application/json"),
                   subject="orders.eu", priority=6, durable=True, ttl=60.0,
                   properties=dict(HEADERS), inferred=True)


def main() -> None:
    transfer, header, body = amqp010_transfer()
    wire = encode_assembly(1, transfer, header, body)

    def encode010() -> bytes:
        return encode_assembly(1, transfer, header, body)

    def decode010() -> object:
        dec = FrameDecoder(expect_protocol_header=False)
        dec.feed(wire)
        asm = Assembler()
        for frame in dec.frames():
            result = asm.add(frame)  # type: ignore[arg-type]
        return result

    assembly = decode010()
    assert assembly is not None and assembly.body == body and assembly.header == header

    msg = amqp10_message()
    wire10 = msg.encode()

    def encode10() -> bytes:
        return msg.encode()

    def decode10() -> Message:
        m = Message()
        m.decode(wire10)
        return m

    assert decode10().properties == HEADERS
    print(f"AMQP 0-10 transfer: {len(wire)} octets on the wire; AMQP 1.0 message: {len(wire10)} octets")
    rows = [
        ("encode (0-10 ours vs 1.0 proton)", rate(encode010), rate(encode10)),
        ("decode (0-10 ours vs 1.0 proton)", rate(decode010), rate(decode10)),
    ]
    report(rows)


if __name__ == "__main__":
    main()
