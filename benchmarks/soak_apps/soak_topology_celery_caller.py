"""The topology soak's Celery caller: ``square.delay(n).get()`` at a pace through the
``rpc://`` backend (its reply queue is the broker's, declared through the façade). The
id of each call goes to RECORD, of each right answer to RECORD.answered; a call without
its answer within 30 s is printed ``unanswered: ID`` (lost)."""

from soak_common import Pace, arguments, call_records, disconnect
from soak_topology_celery import square

args = arguments(__doc__)
calls, answered = call_records(args.record)
for n, one in enumerate(Pace(args.tag, args.rate, args.seconds)):
    calls.add(one)
    try:
        if square.delay(n).get(timeout=30) == n * n:
            answered.add(one)
        else:
            print(f"wrong: {one}", flush=True)
    except Exception as exc:  # a timeout or a connection failure: the call is lost
        print(f"unanswered: {one}", flush=True)
        disconnect(exc)
print("done", flush=True)
