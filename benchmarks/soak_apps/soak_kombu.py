"""kombu's SimpleQueue in the soak: ``produce`` puts messages at a pace, ``consume``
gets and acknowledges them until stopped (through the 0-9-1 façade, queue NAME)."""

from kombu import Connection
from soak_common import Pace, Record, Stop, arguments, disconnect

args = arguments(__doc__, ("--mode", str, "produce"))
record = Record(args.record)
if args.mode == "produce":
    pace = iter(Pace(args.tag, args.rate, args.seconds))
    pending = next(pace, None)
    while pending is not None:
        try:
            with Connection(args.url, connect_timeout=10) as connection:
                queue = connection.SimpleQueue(args.name)
                while pending is not None:
                    queue.put({"id": pending}, serializer="json", retry=False)
                    record.add(pending)
                    pending = next(pace, None)
                queue.close()
        except Exception as exc:  # the connection failed: again (the same message)
            disconnect(exc)
else:
    stop = Stop()
    while not stop.requested:
        try:
            with Connection(args.url, connect_timeout=10) as connection:
                queue = connection.SimpleQueue(args.name)
                while not stop.requested:
                    try:
                        message = queue.get(block=True, timeout=0.5)
                    except queue.Empty:
                        continue
                    message.ack()
                    record.add(message.payload["id"])
                queue.close()
        except Exception as exc:
            disconnect(exc)
print("done", flush=True)
