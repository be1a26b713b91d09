"""Hosting sans-IO AMQP 0-10 connections inside python-qpid-proton's event loop.

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

- :mod:`~bridge.hosting.sockets`: :class:`Amqp010Socket`, one hosted connection (engine,
  non-blocking socket, TLS over memory buffers), and :func:`connect` for client ones;
- :mod:`~bridge.hosting.listener`: :class:`Amqp010Listener`, the listening socket and the
  limits it puts on its clients (:class:`AcceptLimits`, :class:`ListenerStats`);
- :mod:`~bridge.hosting.loop`: work on the loop's thread — :class:`Timer` (the one timer
  of the bridge), :class:`LoopCalls` (calls from other threads) and :class:`EndOfBurst`
  (the one end-of-burst batch: work, then writes, once per round of events).

Its users import from ``bridge.hosting``.
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
