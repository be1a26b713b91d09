"""qpid's own request/response server: a receiver on ADDRESS (the request queue, e.g.
``requests; {create: always}``) answering COUNT requests, each with
``session.sender(request.reply_to)`` (the reply's content the request's upper-cased,
its correlation-id the request's), then exits."""

from qpid.messaging import Message
from qpid_common import arguments, connect, report

args = arguments(__doc__, ("--count", int, 50), ("--timeout", float, 60))
connection = connect(args.broker)
try:
    session = connection.session()
    receiver = session.receiver(args.address)
    print("listening", flush=True)  # (the client may start now: the queue exists)
    senders = {}
    answered = 0
    for _ in range(args.count):
        request = receiver.fetch(timeout=args.timeout)
        sender = senders.get(request.reply_to)
        if sender is None:
            sender = senders[request.reply_to] = session.sender(request.reply_to)
        sender.send(Message(content=request.content.upper(), correlation_id=request.correlation_id))
        session.acknowledge(request)
        answered += 1
    report(answered=answered, reply_to=sorted(senders))
finally:
    connection.close()
