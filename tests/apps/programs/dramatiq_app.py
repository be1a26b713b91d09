"""A dramatiq application (RabbitMQ broker, pika): a worker of four threads runs plain
actors, a flaky actor retried with backoff (through dramatiq's delay queue ``<q>.DQ``), a
``send_with_options(delay=...)`` message, and an actor out of retries whose message
RabbitMQ dead-letters into ``<q>.XQ`` (x-dead-letter-* arguments of the queue), a
pipeline of three actors; before the worker starts, messages of several
``broker_priority`` sent to a queue with ``x-max-priority`` (the broker's
``max_priority``) and got back with basic.get: highest first.

Usage: dramatiq_app.py URL TAG; prints ``result {json}`` then ``done``."""
import json
import sys
import threading
import time

import dramatiq
import pika
from dramatiq.brokers.rabbitmq import RabbitmqBroker

url, tag = sys.argv[1], sys.argv[2]
broker = RabbitmqBroker(url=url, max_priority=10)
dramatiq.set_broker(broker)
lock = threading.Lock()
seen: dict = {}
attempts: dict = {}
Q = f"fw_dram_{tag}"

def note(k, v):
    with lock:
        seen.setdefault(k, []).append(v)

@dramatiq.actor(queue_name=Q, max_retries=3, min_backoff=100, max_backoff=300)
def flaky(n):
    with lock:
        attempts[n] = attempts.get(n, 0) + 1
        a = attempts[n]
    if a < 3:
        raise ValueError(f"fail {n} attempt {a}")
    note("flaky", [n, a])

@dramatiq.actor(queue_name=Q, max_retries=0)
def doomed(n):
    raise RuntimeError("doomed")

@dramatiq.actor(queue_name=Q)
def plain(n):
    note("plain", n)

@dramatiq.actor(queue_name=Q)
def later(n, sent):
    note("later", [n, time.time() - sent >= 0.5])

@dramatiq.actor(queue_name=Q)
def add(a, b=0):
    return a + b

@dramatiq.actor(queue_name=Q)
def record(total):
    note("pipeline", total)

@dramatiq.actor(queue_name=Q + "_prio")
def ranked(n):
    note("ranked", n)

broker.flush_all()
for p in (1, 5, 3, 9, 0):
    ranked.send_with_options(args=(p,), broker_priority=p)
c = pika.BlockingConnection(pika.URLParameters(url))
ch = c.channel()
by_priority = []
while True:
    m, p, b = ch.basic_get(Q + "_prio", auto_ack=True)
    if m is None:
        break
    by_priority.append([json.loads(b)["args"][0], p.priority])
c.close()
w = dramatiq.Worker(broker, worker_threads=4, worker_timeout=100)
w.start()
for i in range(20):
    plain.send(i)
for i in range(3):
    flaky.send(i)
doomed.send(7)
for i in range(3):
    later.send_with_options(args=(i, time.time()), delay=600)
dramatiq.pipeline([add.message(1, 2), add.message(10), record.message()]).run()
deadline = time.time() + 20
while time.time() < deadline:
    with lock:
        if len(seen.get("plain", [])) == 20 and len(seen.get("flaky", [])) == 3 and len(seen.get("later", [])) == 3 \
                and seen.get("pipeline"):
            break
    time.sleep(0.1)
time.sleep(1)
w.stop()
# the dead-lettered message
c = pika.BlockingConnection(pika.URLParameters(url))
ch = c.channel()
dead = []
for _ in range(10):
    m, p, b = ch.basic_get(f"{Q}.XQ", auto_ack=True)
    if m is None:
        break
    d = json.loads(b)
    dead.append([d["actor_name"], d["args"], d["options"].get("retries"), p.expiration is not None])
counts = {q: ch.queue_declare(q, passive=True).method.message_count for q in (Q, f"{Q}.DQ", f"{Q}.XQ")}
for q in (Q, Q + "_prio"):
    for suffix in ("", ".DQ", ".XQ"):
        ch.queue_delete(q + suffix)
c.close()
print("result", json.dumps({"plain": sorted(seen.get("plain", [])), "flaky": sorted(seen.get("flaky", [])),
    "later": sorted(seen.get("later", [])), "attempts": attempts, "dead": dead, "counts": counts,
    "pipeline": seen.get("pipeline"), "by_priority": by_priority}))
broker.close()
print("done")
