"""A TCP relay between a client under test and a broker, which a test can throttle or cut."""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class Relay:
    """A TCP relay to ``target`` on a loopback port of its own (:attr:`port`).

    ``rate`` (octets/s, None: unlimited) throttles the client-to-target direction.
    :meth:`cut` makes the broker "go away": every relayed connection is dropped and
    new ones are closed as soon as they are accepted, until :meth:`restore`. One
    thread per direction and connection.
    """

    def __init__(self, target: tuple[str, int], rate: int | None = None) -> None:
        self.target = target
        self.rate = rate
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.refused = 0
        """Connections closed at once because the relay was cut."""
        self._cut = False
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, url: str) -> str:
        """``url`` (``scheme://[user@]host:port...``) pointing at the relay instead."""
        port = f":{self.target[1]}"
        assert port in url, f"{url} does not name port {self.target[1]}"
        return url.replace(port, f":{self.port}", 1)

    def cut(self) -> None:
        """Drop every relayed connection and refuse new ones until :meth:`restore`."""
        with self._lock:
            self._cut = True
            sockets, self.sockets = self.sockets, []
        for s in sockets:
            _drop(s)

    def restore(self) -> None:
        """Relay new connections again."""
        with self._lock:
            self._cut = False

    def close(self) -> None:
        self.listener.close()
        self.cut()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                if self._cut:
                    self.refused += 1
                    _drop(client)
                    continue
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                _drop(client)
                continue
            upstream.settimeout(None)
            with self._lock:
                self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, throttled: bool) -> None:
        try:
            while data := src.recv(16384):
                dst.sendall(data)
                rate = self.rate if throttled else None
                if rate:
                    time.sleep(len(data) / rate)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)


def _drop(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
