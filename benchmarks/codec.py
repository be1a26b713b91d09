"""AMQP 0-10 codec throughput next to python-qpid-proton's AMQP 1.0 Message codec.

Run: ``.venv/bin/python benchmarks/codec.py``.  Encodes and decodes a typical
message.transfer (delivery-properties with routing-key/priority/durable/ttl,
message-properties with message-id, correlation-id, reply-to, content-type and
5 application headers, 1 KiB body) and, in the same process, proton's
``Message.encode()``/``decode()`` of the equivalent AMQP 1.0 message.

Two levels are measured:

- *message*: the transfer's content (command, header structs, body) to and
  from segment payloads - the like-for-like counterpart of ``Message.encode()``
  and ``Message.decode()``, which do not frame;
- *wire*: the same plus framing, i.e. the exact bytes on the socket (frame
  headers, segment flags, a persistent ``FrameDecoder`` + ``Assembler``).
"""

from __future__ import annotations

import uuid

from _timing import compare, report  # benchmarks/ is on sys.path when run as a script
from proton import Message, symbol

from amqp010.codec import decode_command, decode_header, encode_command, encode_header
from amqp010.framing import Assembler, FrameDecoder, encode_assembly
from amqp010.spec import (
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

    def encode_message() -> tuple[bytes, bytes, bytes]:
        return encode_command(transfer), encode_header(header), body

    command_seg, header_seg, _ = encode_message()

    def decode_message() -> tuple[object, tuple, bytes]:
        return decode_command(command_seg), decode_header(header_seg), body

    def encode_wire() -> bytes:
        return encode_assembly(1, transfer, header, body)

    decoder = FrameDecoder(expect_protocol_header=False)
    assembler = Assembler()

    def decode_wire() -> object:
        decoder.feed(wire)
        for assembly in decoder.assemblies(assembler):
            return assembly
        raise AssertionError("no assembly")

    assembly = decode_wire()
    assert assembly.body == body and assembly.header == header  # type: ignore[attr-defined]
    assert decode_message()[1] == header

    msg = amqp10_message()
    wire10 = msg.encode()

    def decode10() -> Message:
        m = Message()
        m.decode(wire10)
        return m

    assert decode10().properties == HEADERS
    print(f"AMQP 0-10 transfer: {len(wire)} octets on the wire; "
          f"AMQP 1.0 message: {len(wire10)} octets")
    report([
        ("encode message (0-10 ours vs 1.0 proton)", *compare(encode_message, msg.encode)),
        ("decode message (0-10 ours vs 1.0 proton)", *compare(decode_message, decode10)),
        ("encode wire incl. framing (ours vs proton)", *compare(encode_wire, msg.encode)),
        ("decode wire incl. framing (ours vs proton)", *compare(decode_wire, decode10)),
    ])


if __name__ == "__main__":
    main()
