"""qpid's own request/response pattern in the topology soak, through a topology-mode 0-10
façade. ``--mode server``: a receiver on ``NAME; {create: always}`` answering each request
(its content upper-cased, to ``session.sender(request.reply_to)``) until stopped.
``--mode client``: calls at a pace on a NEW connection every ``--per-connection`` calls,
its replies to a receiver on ``'#'`` (a temporary queue of that session). The id of each
call goes to RECORD, of each right answer to RECORD.answered; a call without its answer
within 10 s is printed ``unanswered: ID``. Broker ``HOST:PORT``, login QPID_USER /
QPID_PASSWORD."""

import os

from qpid.messaging import Connection, Empty, Message
from soak_common import Pace, Record, Stop, arguments, disconnect

args = arguments(__doc__, ("--mode", str, "client"), ("--per-connection", int, 10))


def connect():
    connection = Connection(args.url, username=os.environ.get("QPID_USER", "guest"),
                            password=os.environ.get("QPID_PASSWORD", "guest"),
                            reconnect=False, heartbeat=5)
    connection.open()
    return connection


def serve():
    stop = Stop()
    while not stop.requested:
        try:
            connection = connect()
            try:
                session = connection.session()
                receiver = session.receiver(args.name + "; {create: always}")
                print("ready", flush=True)
                senders = {}
                while not stop.requested:
                    try:
                        request = receiver.fetch(timeout=0.5)
                    except Empty:
                        continue
                    sender = senders.get(request.reply_to)
                    if sender is None:
                        sender = senders[request.reply_to] = session.sender(request.reply_to)
                    sender.send(Message(content=request.content.upper(),
                                        correlation_id=request.correlation_id))
                    session.acknowledge(request)
                    if len(senders) > 20:  # the clients' temporary queues come and go
                        for old in list(senders.values())[:10]:
                            old.close()
                        senders = dict(list(senders.items())[10:])
            finally:
                connection.close()
        except Exception as exc:
            disconnect(exc)


def call():
    calls, answered = Record(args.record), Record(args.record + ".answered")
    pace = iter(Pace(args.tag, args.rate, args.seconds))
    more = True
    while more:
        try:
            connection = connect()
            try:
                session = connection.session()
                replies = session.receiver("#")
                requests = session.sender(args.name)
                for _ in range(args.per_connection):
                    one = next(pace, None)
                    if one is None:
                        more = False
                        break
                    calls.add(one)
                    requests.send(Message(content=f"call {one}", correlation_id=one,
                                          reply_to=replies.source))
                    try:
                        reply = replies.fetch(timeout=10)
                    except Empty:
                        print(f"unanswered: {one}", flush=True)
                        continue
                    session.acknowledge(reply)
                    if reply.content == f"CALL {one}".upper():
                        answered.add(one)
                    else:
                        print(f"wrong: {one} {reply.content!r}", flush=True)
            finally:
                connection.close()
        except Exception as exc:
            disconnect(exc)


if args.mode == "server":
    serve()
else:
    call()
print("done", flush=True)
