"""A qpid.messaging application that idles: connection heartbeat HEARTBEAT, a sender
and a receiver on ADDRESS, IDLE seconds of silence, then one message round trip on the
same connection (which must still be there)."""

import time

from qpid.messaging import Message
from qpid_common import arguments, connect, report

args = arguments(__doc__, ("--heartbeat", int, 1), ("--idle", float, 4.0))
connection = connect(args.broker, heartbeat=args.heartbeat)
try:
    session = connection.session()
    sender = session.sender(args.address)
    receiver = session.receiver(args.address)
    time.sleep(args.idle)
    sender.send(Message(content="after the idle period", properties={"n": 0}))
    message = receiver.fetch(timeout=20)
    session.acknowledge()
    report(content=message.content, idle=args.idle)
finally:
    connection.close()
