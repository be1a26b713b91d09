"""aio-pika's RPC pattern (``aio_pika.patterns.RPC``): ``URL METHOD ROLE [COUNT]``.
ROLE ``server`` registers METHOD (``double(n) = 2n``), prints ``ready`` and serves until
killed; ROLE ``client`` calls it COUNT times one after another (each within 10 s) and
prints ``right R/COUNT`` and ``rate X calls/s``."""

import asyncio
import sys
import time

import aio_pika
from aio_pika.patterns import RPC


async def double(*, n: int) -> int:
    return n * 2


async def main(url: str, method: str, role: str, count: int) -> None:
    connection = await aio_pika.connect_robust(url)
    async with connection:
        channel = await connection.channel()
        rpc = await RPC.create(channel)
        if role == "server":
            await rpc.register(method, double, auto_delete=True)
            print("ready", flush=True)
            await asyncio.Future()
        right = 0
        started = time.monotonic()
        for n in range(count):
            if await asyncio.wait_for(rpc.call(method, kwargs={"n": n}), 10) == n * 2:
                right += 1
        elapsed = time.monotonic() - started
        print(f"right {right}/{count}", flush=True)
        print(f"rate {count / elapsed:.1f} calls/s", flush=True)


asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3],
                 int(sys.argv[4]) if len(sys.argv) > 4 else 0))
