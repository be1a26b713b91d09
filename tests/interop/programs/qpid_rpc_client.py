"""qpid's own request/response client: a receiver on ``'#'`` (a temporary queue of its
session), COUNT requests to ADDRESS with ``reply_to=receiver.source``, each answer
awaited before the next request; reports the answers that matched their request."""

import uuid

from qpid.messaging import Message
from qpid_common import arguments, connect, report

args = arguments(__doc__, ("--count", int, 50), ("--timeout", float, 30))
connection = connect(args.broker)
try:
    session = connection.session()
    replies = session.receiver("#")
    requests = session.sender(args.address)
    matched = 0
    run = uuid.uuid4().hex
    unmatched = []
    for i in range(args.count):
        request = Message(content=f"request {i}", correlation_id=f"{run}-{i}",
                          reply_to=replies.source)
        requests.send(request)
        reply = replies.fetch(timeout=args.timeout)
        session.acknowledge(reply)
        correlation = reply.correlation_id  # (qpid-python reads a vbin16 back as bytes)
        if isinstance(correlation, bytes):
            correlation = correlation.decode()
        if reply.content == f"REQUEST {i}" and correlation == request.correlation_id:
            matched += 1
        else:
            unmatched.append([repr(reply.content), repr(reply.correlation_id), request.correlation_id])
    report(matched=matched, source=str(replies.source), unmatched=unmatched[:3])
finally:
    connection.close()
