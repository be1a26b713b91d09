"""qpid.messaging in the soak, through the 0-10 façade: ``send`` sends to ADDRESS at a
pace (an id recorded once a session sync says the broker completed it), ``receive``
fetches with a prefetch and acknowledges in batches until stopped.
Broker ``HOST:PORT``, login QPID_USER / QPID_PASSWORD."""

from qpid.messaging import Empty, Message
from soak_common import Pace, Record, Stop, arguments, disconnect, qpid_connect

args = arguments(__doc__, ("--mode", str, "send"), ("--capacity", int, 50),
                 ("--batch", int, 10))


record = Record(args.record)
if args.mode == "send":
    pace = iter(Pace(args.tag, args.rate, args.seconds))
    unsynced = []
    more = True
    while more or unsynced:
        try:
            connection = qpid_connect(args.url)
            try:
                session = connection.session()
                sender = session.sender(args.name)
                for one in unsynced:  # not known to be completed: sent again
                    sender.send(Message(content=one, properties={"id": one}), sync=False)
                for one in pace:
                    sender.send(Message(content=one, properties={"id": one}), sync=False)
                    unsynced.append(one)
                    if len(unsynced) >= args.batch:
                        session.sync()
                        record.add(*unsynced)
                        unsynced = []
                more = False
                session.sync()
                record.add(*unsynced)
                unsynced = []
            finally:
                connection.close()
        except Exception as exc:
            disconnect(exc)
else:
    stop = Stop()
    while not stop.requested:
        try:
            connection = qpid_connect(args.url)
            try:
                session = connection.session()
                receiver = session.receiver(args.name)
                receiver.capacity = args.capacity
                taken = []
                while not stop.requested:
                    try:
                        message = receiver.fetch(timeout=0.5)
                    except Empty:
                        message = None
                    if message is not None:
                        taken.append(message.properties["id"])
                    if taken and (message is None or len(taken) >= args.batch):
                        session.acknowledge(sync=True)
                        record.add(*taken)
                        taken = []
                if taken:
                    session.acknowledge(sync=True)
                    record.add(*taken)
            finally:
                connection.close()
        except Exception as exc:
            disconnect(exc)
print("done", flush=True)
