"""qpid's own request/response pattern in the topology soak, through a topology-mode 0-10
façade. ``--mode server``: a receiver on ``NAME; {create: always}`` answering each request
(its content upper-cased, to ``session.sender(request.reply_to)``) until stopped.
``--mode client``: calls at a pace on a NEW connection every ``--per-connection`` calls,
its replies to a receiver on ``'#'`` (a temporary queue of that session). The id of each
call goes to RECORD, of each right answer to RECORD.answered; a call without its answer
within 10 s is printed ``unanswered: ID`` (its answer, if it comes later, ``late:``).
Broker ``HOST:PORT``, login QPID_USER / QPID_PASSWORD."""

import time

from qpid.messaging import Empty, Message
from soak_common import Pace, Stop, arguments, call_records, disconnect, qpid_connect

args = arguments(__doc__, ("--mode", str, "client"), ("--per-connection", int, 10))


def serve():
    stop = Stop()
    while not stop.requested:
        try:
            connection = qpid_connect(args.url)
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


def answer(session, replies, expected, timeout=10.0):
    """Whether the answer ``expected`` comes within ``timeout`` s; a late answer to an
    earlier call is acknowledged and passed over (as a client matching correlation ids)."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            reply = replies.fetch(timeout=left)
        except Empty:
            return False
        session.acknowledge(reply)
        if reply.content == expected:
            return True
        print(f"late: {reply.content!r}", flush=True)
    return False


def call():
    calls, answered = call_records(args.record)
    pace = iter(Pace(args.tag, args.rate, args.seconds))
    more = True
    while more:
        try:
            connection = qpid_connect(args.url)
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
                    if answer(session, replies, f"CALL {one}".upper()):
                        answered.add(one)
                    else:
                        print(f"unanswered: {one}", flush=True)
            finally:
                connection.close()
        except Exception as exc:
            disconnect(exc)


if args.mode == "server":
    serve()
else:
    call()
print("done", flush=True)
