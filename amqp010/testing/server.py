"""A threaded test server for the sans-IO engine: one selector loop, many connections.

:class:`EngineServer` accepts connections on a listening socket in one background
thread, so a shared model such as :class:`~amqp010.testing.broker.Broker` is only ever
touched from that thread. For tests, demos and benchmarks; the bridge hosts
connections in its own event loop.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..connection import Role
from ..trace import Tracer
from ..transport import READ_SIZE, Endpoint, SocketTransport


class EngineServer:
    """Accepts connections and runs each through ``factory(sock)`` in one thread.

    ``trace_dir``: write one trace file per connection there (``conn-N.jsonl``).
    """

    def __init__(self, factory: Callable[[socket.socket], Endpoint], *, host: str = "127.0.0.1",
                 port: int = 0, ssl_context: ssl.SSLContext | None = None,
                 trace_dir: str | Path | None = None, tick_interval: float = 0.05,
                 on_tick: Callable[[float], None] | None = None) -> None:
        self.factory = factory
        self.ssl_context = ssl_context
        self.trace_dir = Path(trace_dir) if trace_dir else None
        self.tick_interval = tick_interval
        self.on_tick = on_tick
        self.listener = socket.create_server((host, port))
        self.listener.setblocking(False)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.transports: list[SocketTransport] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="amqp010-server", daemon=True)
        self._count = 0
        self.errors: list[BaseException] = []

    @property
    def url(self) -> str:
        scheme = "amqps" if self.ssl_context else "amqp"
        return f"{scheme}://{self.address[0]}:{self.address[1]}"

    def start(self) -> EngineServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for t in self.transports:
            t.close()
        self.listener.close()

    def __enter__(self) -> EngineServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def drop_all(self) -> None:
        """Abort every connection's socket (simulates a network failure)."""
        for t in self.transports:
            with contextlib.suppress(OSError):
                t.sock.shutdown(socket.SHUT_RDWR)

    def _accept(self, sel: selectors.BaseSelector) -> None:
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            return
        sock.setblocking(True)
        sock.settimeout(10)
        if self.ssl_context is not None:
            try:
                sock = self.ssl_context.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                sock.close()
                return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._count += 1
        tracer = None
        if self.trace_dir is not None:
            tracer = Tracer(self.trace_dir / f"conn-{self._count}.jsonl", Role.SERVER)
        transport = SocketTransport(sock, self.factory(sock), tracer=tracer)
        self.transports.append(transport)
        sel.register(sock, selectors.EVENT_READ, transport)

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.listener, selectors.EVENT_READ, None)
        try:
            while not self._stop.is_set():
                for key, _ in sel.select(self.tick_interval):
                    if key.data is None:
                        self._accept(sel)
                        continue
                    transport: SocketTransport = key.data
                    try:
                        data = transport.sock.recv(READ_SIZE)
                    except (ssl.SSLWantReadError, BlockingIOError):
                        continue
                    except OSError:
                        data = b""
                    transport.receive(data)
                    if isinstance(transport.sock, ssl.SSLSocket):
                        while transport.sock.pending():
                            transport.receive(transport.sock.recv(READ_SIZE))
                now = time.monotonic()
                if self.on_tick is not None:
                    self.on_tick(now)
                for t in list(self.transports):
                    if not t.eof:
                        t.endpoint.tick(now)
                        t.flush()
                    if t.endpoint.closed or t.eof:
                        with contextlib.suppress(KeyError, ValueError):
                            sel.unregister(t.sock)
                        t.close()
                        self.transports.remove(t)
        except BaseException as exc:  # surfaced to tests through .errors
            self.errors.append(exc)
            raise
        finally:
            sel.close()
