"""A qpid.messaging sender: COUNT messages to ADDRESS, then a sync; each is a map
``{"n": i, "text": ...}`` with the property ``n`` and the subject ``order-<i>``."""

from qpid.messaging import Message
from qpid_common import arguments, connect, report

args = arguments(__doc__, ("--count", int, 100), ("--capacity", int, 50))
connection = connect(args.broker)
try:
    session = connection.session()
    sender = session.sender(args.address)
    sender.capacity = args.capacity
    for i in range(args.count):
        sender.send(Message(content={"n": i, "text": f"order {i}"}, subject=f"order-{i}",
                            properties={"n": i}), sync=False)
    sender.sync()
    report(sent=args.count, unsettled=sender.unsettled())
finally:
    connection.close()
