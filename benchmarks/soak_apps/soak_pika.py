"""RabbitMQ tutorial 7's publisher in the soak: publisher confirms, persistent messages,
each ``basic_publish`` waiting for its confirm, to the façade exchange NAME (key "soak");
an id is recorded once confirmed."""

import pika
from soak_common import Pace, Record, arguments, disconnect

args = arguments(__doc__)
record = Record(args.record)
pace = iter(Pace(args.tag, args.rate, args.seconds))
pending = next(pace, None)
while pending is not None:
    try:
        connection = pika.BlockingConnection(pika.URLParameters(args.url))
        try:
            channel = connection.channel()
            channel.confirm_delivery()
            while pending is not None:
                channel.basic_publish(args.name, "soak", pending.encode(),
                                      properties=pika.BasicProperties(delivery_mode=2,
                                                                      message_id=pending))
                record.add(pending)
                pending = next(pace, None)
        finally:
            if connection.is_open:
                connection.close()
    except Exception as exc:  # unconfirmed: published again on a new connection
        disconnect(exc)
print("done", flush=True)
