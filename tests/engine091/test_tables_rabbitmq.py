"""Typed message headers through the real RabbitMQ, and on through the 0-9-1 ⇄ 1.0 mapping."""

from __future__ import annotations

import datetime
import decimal
import uuid

from pamqp import commands as C
from proton import byte, float32, int32, short, ubyte, uint, ulong, ushort

from amqp091.events import MessageReceived
from amqp091.tables import FieldTypes
from mappings.amqp091 import Delivery091, from_amqp10, to_amqp10
from mappings.amqp091_values import LongString
from tests.support.rabbitmq import version_of

from .driver import EngineClient
from .test_rabbitmq import declare, delete, open_channel
from .test_tables import same

PROTON_TYPES = FieldTypes(byte=byte, ubyte=ubyte, short=short, ushort=ushort, int32=int32,
                          uint=uint, ulong=ulong, float32=float32, long_string=LongString)
"""What a bridge to AMQP 1.0 decodes headers into (the mapping's value types)."""

HEADERS = {
    "neg-long": -(2 ** 40) - 7, "short": short(-300), "ushort": ushort(65535),
    "byte": byte(-5), "ubyte": ubyte(250), "int": int32(-70000), "uint": uint(4000000000),
    "float32": float32(0.5), "double": 0.1, "decimal": decimal.Decimal("-12.345"),
    "when": datetime.datetime(2150, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
    "flag": True, "text": "héllo", "longstr": LongString(b"\xff\xfe"), "bin": b"\x00\x01",
    "none": None,
    "table": {"a": [short(1), float32(2.5), {"deep": [None, byte(-1), "x"]}],
              "d": decimal.Decimal("0.00")},
    "array": [1, 2.0, [], {}, b"", datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)],
}


def test_every_header_type_comes_back_from_rabbitmq_identical(rabbitmq_url: str) -> None:
    client = EngineClient(rabbitmq_url, field_types=PROTON_TYPES)
    ch = open_channel(client)
    queue = f"engine091-tables-{uuid.uuid4()}"
    declare(client, ch, queue)
    sent = C.Basic.Properties(content_type="text/plain", headers=HEADERS)
    client.conn.publish(ch, "", queue, b"typed", sent)
    client.conn.get(ch, queue, no_ack=True)
    got = client.wait_for(lambda e: isinstance(e, MessageReceived))
    assert isinstance(got, MessageReceived) and got.body == b"typed"
    headers = got.properties.headers
    if version_of(rabbitmq_url) == 4:  # RabbitMQ 4 sorts a table's keys; 3.10 keeps them
        assert list(headers) == sorted(HEADERS)
        headers = {key: headers[key] for key in HEADERS}
    assert same(headers, HEADERS), got.properties.headers
    delete(client, ch, queue)
    client.close()

    # and the mapping to AMQP 1.0 and back restores exactly what was sent
    got.properties.headers = headers
    message = to_amqp10(got.properties, Delivery091("", queue, False), got.body)
    back, _, body = from_amqp10(message)
    assert body == b"typed"
    assert same(back.headers, HEADERS), back.headers
