"""The runtime: one python-qpid-proton event loop that hosts everything, and its faults.

The bridge runs one thread: proton's :class:`~proton.reactor.Container` owns the
AMQP 1.0 connections, and every AMQP 0-10 socket is registered with the same
container as a *selectable* (the mechanism proton uses for its own acceptors).
The container's ``select`` loop then tells us when a 0-10 socket is readable,
writable or its deadline (heartbeat) expired, and we drive the engine:

    readable  -> sock.recv -> engine.receive_data -> events -> application
    writable  -> engine.data_to_send -> sock.send (partial sends kept)
    deadline  -> engine.tick(now) -> heartbeats / dead-peer detection

No threads, no locks: the engine, the proton links and the route logic are all
touched from the container's thread only.

Modules, by job:

- :mod:`~bridge.runtime.sockets`: :class:`Amqp010Socket`, one hosted connection (engine,
  non-blocking socket, TLS over memory buffers), and :func:`connect` for client ones;
- :mod:`~bridge.runtime.listener`: :class:`Amqp010Listener`, the listening socket and the
  limits it puts on its clients (:class:`AcceptLimits`, :class:`ListenerStats`);
- :mod:`~bridge.runtime.loop`: work on the loop's thread — :class:`Timer` (the one timer
  of the bridge), :class:`LoopCalls` (calls from other threads) and :class:`EndOfBurst`
  (the one end-of-burst batch: work, then writes, once per round of events);
- :mod:`~bridge.runtime.reactor`: the container, tuned for throughput (large reads, no
  global dispatch of delivery events, batched garbage collection), and what starts the
  end-of-burst batch when the loop goes quiet;
- :mod:`~bridge.runtime.containment`: an exception in one part (connection, link,
  route, timer) is logged, counted and recovered locally; every part says how through
  :class:`~bridge.runtime.containment.FaultDomain`.

This package imports nothing of the bridge above it but its logging helpers
(:mod:`bridge.ops.logs`); everything else builds on it.
"""

from .listener import (
    ACCEPT_BACKOFF,
    FD_SETSIZE,
    MAX_REFUSING,
    REFUSAL_GRACE,
    REFUSED_REASONS,
    AcceptLimits,
    Amqp010Listener,
    ListenerStats,
)
from .loop import EndOfBurst, LoopCalls, Timer
from .sockets import Amqp010Socket, EventHandler, SocketOwner, connect, register_selectable

__all__ = ["ACCEPT_BACKOFF", "FD_SETSIZE", "MAX_REFUSING", "REFUSAL_GRACE", "REFUSED_REASONS",
           "AcceptLimits", "Amqp010Listener", "Amqp010Socket", "EndOfBurst", "EventHandler",
           "ListenerStats", "LoopCalls", "SocketOwner", "Timer", "connect",
           "register_selectable"]
