"""A TCP relay between a client under test and a broker, which a test can throttle or cut."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable

CHUNK_PAUSE = 0.2
"""Seconds between the chunks a ``rewrite_back`` function cut the target's bytes into."""
COALESCE_MAX = 1 << 20
"""Octets a ``coalesce`` relay gathers at most before it writes (a target that never goes
silent is still relayed)."""


class Relay:
    """A TCP relay to ``target`` on a loopback port of its own (:attr:`port`).

    ``rate`` (octets/s, None: unlimited) throttles the client-to-target direction.
    :meth:`cut` makes the broker "go away": every relayed connection is dropped and
    new ones are closed as soon as they are accepted, until :meth:`restore`.
    :meth:`reset` aborts every relayed connection with a TCP reset (the peer sees
    ``ECONNRESET`` mid-stream) and keeps relaying new ones. :meth:`pause` makes the
    network go silent (nothing is forwarded, connections stay open, heartbeats stop
    arriving) until :meth:`resume`. One thread per direction and connection.
    """

    def __init__(self, target: tuple[str, int], rate: int | None = None, *,
                 rewrite: Callable[[], Callable[[bytes], bytes]] | None = None,
                 flush_after: float | None = None,
                 rewrite_back: Callable[[], Callable[[bytes], list[bytes]]] | None = None,
                 coalesce: float | None = None, nodelay: bool = False) -> None:
        self.target = target
        self.rate = rate
        self.rewrite = rewrite
        """Makes, for each relayed connection, a function that rewrites what the client
        sends (it may buffer: it returns what is ready to forward)."""
        self.rewrite_back = rewrite_back
        """Makes, for each relayed connection, a function that cuts what the target sends
        into chunks written one by one, :data:`CHUNK_PAUSE` apart (so that the client reads
        them apart; an empty chunk is a pause only)."""
        self.flush_after = flush_after
        """Seconds of silence from the client after which the rewrite function is called
        with ``b""`` (to forward what it held back); None: never."""
        self.coalesce = coalesce
        """Seconds the target may stay silent and what it sent still be forwarded with what
        follows, in one write (so that the client reads frames the target sent apart in one
        read); None: each read is forwarded as it comes."""
        self.nodelay = nodelay
        """Set TCP_NODELAY on both sockets of each relayed connection (a latency
        benchmark's hop: without it Nagle and delayed ACKs add tens of ms per turn)."""
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        self.refused = 0
        """Connections closed at once because the relay was cut."""
        self._cut = False
        self._flowing = threading.Event()
        self._flowing.set()
        self.resets = 0
        """Sockets aborted by :meth:`reset`."""
        self._aborted: set[socket.socket] = set()
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

    def reset(self) -> int:
        """Abort every relayed connection now with a TCP reset (RST, no FIN); new
        connections are relayed as before. Returns how many sockets were reset."""
        with self._lock:
            sockets, self.sockets = self.sockets, []
        for s in sockets:
            # linger 0: closing sends a reset; shutting the read side down wakes the pump
            # thread blocked on it, which then closes the pair (_pump)
            with contextlib.suppress(OSError):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self._aborted.add(s)
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RD)
        self.resets += len(sockets)
        return len(sockets)

    def pause(self) -> None:
        """Stop forwarding in both directions (bytes wait in the relay) until :meth:`resume`."""
        self._flowing.clear()

    def resume(self) -> None:
        """Forward again, starting with what waited."""
        self._flowing.set()

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
            if self.nodelay:
                for s in (client, upstream):
                    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.sockets += [client, upstream]
            rewrite = self.rewrite() if self.rewrite is not None else None
            threading.Thread(target=self._pump, args=(client, upstream, True, rewrite),
                             daemon=True).start()
            back = self.rewrite_back() if self.rewrite_back is not None else None
            threading.Thread(target=self._pump, args=(upstream, client, False, None, back),
                             daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, throttled: bool,
              rewrite: Callable[[bytes], bytes] | None = None,
              chunks: Callable[[bytes], list[bytes]] | None = None) -> None:
        flush_after = self.flush_after if rewrite is not None else None
        try:
            while True:
                try:
                    src.settimeout(flush_after)
                    data = src.recv(16384)
                except TimeoutError:
                    assert rewrite is not None
                    dst.sendall(rewrite(b""))
                    continue
                if not data:
                    break
                if not throttled and self.coalesce is not None:
                    data += _more(src, self.coalesce)
                self._flowing.wait()
                if chunks is not None:
                    for n, chunk in enumerate(chunks(data)):
                        if n:
                            time.sleep(CHUNK_PAUSE)  # (read apart by the client)
                        if chunk:
                            dst.sendall(chunk)
                    continue
                dst.sendall(data if rewrite is None else rewrite(data))
                rate = self.rate if throttled else None
                if rate:
                    time.sleep(len(data) / rate)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    if s in self._aborted:
                        s.close()  # a reset
                    else:
                        s.shutdown(socket.SHUT_RDWR)


def _more(src: socket.socket, silence: float) -> bytes:
    """What ``src`` sends until it stays silent for ``silence`` seconds (or closes)."""
    more = b""
    src.settimeout(silence)
    try:
        while len(more) < COALESCE_MAX and (data := src.recv(16384)):
            more += data
    except TimeoutError:
        pass
    finally:
        src.settimeout(None)
    return more


def _drop(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
