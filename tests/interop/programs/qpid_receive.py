"""A qpid.messaging receiver: fetches COUNT messages from ADDRESS with a prefetch of
CAPACITY, acknowledges after every ACK_EVERY of them (0: never) up to the first
ACK_UNTIL, then closes its receiver, session and connection (messages it did not
acknowledge go back).

Prints ``{"n": [...], "redelivered": [...], "acknowledged": k}``; if a fetch times out
it prints what it had with ``"empty": true`` and exits with status 3."""

import sys

from qpid.messaging import Empty
from qpid_common import arguments, connect, report

args = arguments(__doc__, ("--count", int, 1), ("--capacity", int, 10), ("--ack-every", int, 1),
                 ("--ack-until", int, 1 << 62),
                 ("--timeout", float, 20.0))
connection = connect(args.broker)
numbers, redelivered, acknowledged, empty = [], [], 0, False
try:
    session = connection.session()
    receiver = session.receiver(args.address)
    receiver.capacity = args.capacity
    for _ in range(args.count):
        try:
            message = receiver.fetch(timeout=args.timeout)
        except Empty:
            empty = True
            break
        numbers.append(message.properties.get("n"))
        redelivered.append(bool(message.redelivered))
        if args.ack_every and len(numbers) % args.ack_every == 0 \
                and len(numbers) <= args.ack_until:
            session.acknowledge()
            acknowledged = len(numbers)
    receiver.close()
    session.close()
finally:
    connection.close()
report(n=numbers, redelivered=redelivered, acknowledged=acknowledged, empty=empty)
sys.exit(3 if empty else 0)
