"""The runtime: one python-qpid-proton event loop that hosts everything, and its faults.

The bridge runs one thread: proton's :class:`~proton.reactor.Container` owns the
AMQP 1.0 connections, and every legacy-protocol socket (AMQP 0-10 or 0-9-1, each
driven by our sans-IO engine for it) is registered with the same container as a
*selectable* (the mechanism proton uses for its own acceptors). The container's
loop (on ``epoll``: :mod:`~bridge.runtime.selector`) then tells us when such a socket is readable,
writable or its deadline (heartbeat) expired, and we drive the engine:

    readable  -> sock.recv -> engine.receive_data -> events -> application
    writable  -> engine.data_to_send -> sock.send (partial sends kept)
    deadline  -> engine.tick(now) -> heartbeats / dead-peer detection

No threads, no locks: the engine, the proton links and the route logic are all
touched from the container's thread only.

Modules, by job:

- :mod:`~bridge.runtime.sockets`: :class:`EngineSocket`, one hosted connection (any
  :class:`~bridge.runtime.sockets.Engine`, non-blocking socket, TLS over memory buffers),
  and :func:`connect` for client ones;
- :mod:`~bridge.runtime.listener`: :class:`EngineListener`, the listening socket and the
  limits it puts on its clients (:class:`AcceptLimits`, :class:`ListenerStats`);
- :mod:`~bridge.runtime.loop`: work on the loop's thread — :class:`Timer` (the one timer
  of the bridge), :class:`LoopCalls` (calls from other threads) and :class:`EndOfBurst`
  (the one end-of-burst batch: work, then writes, once per round of events);
- :mod:`~bridge.runtime.reactor`: the container, tuned for throughput (large reads, no
  global dispatch of delivery events, batched garbage collection), and what starts the
  end-of-burst batch when the loop goes quiet;
- :mod:`~bridge.runtime.selector`: what the loop waits on (``epoll``: any descriptor
  number, a cost per event that does not grow with the connections held);
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
    EngineListener,
    ListenerStats,
)
from .loop import EndOfBurst, LoopCalls, Timer
from .sockets import (
    CONNECTION_FORCED,
    Engine,
    EngineSocket,
    EventHandler,
    SocketOwner,
    connect,
    host_port,
    register_selectable,
)

__all__ = ["ACCEPT_BACKOFF", "CONNECTION_FORCED", "FD_SETSIZE", "MAX_REFUSING", "REFUSAL_GRACE", "REFUSED_REASONS",
           "AcceptLimits", "Engine", "EngineListener", "EngineSocket", "EndOfBurst", "EventHandler",
           "ListenerStats", "LoopCalls", "SocketOwner", "Timer", "connect",
           "host_port", "register_selectable"]
