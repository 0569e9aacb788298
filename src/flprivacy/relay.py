"""A TCP relay that records what it forwards: the eavesdropper's position on a real network.

:class:`Relay` sits between a client and its server on the loopback interface (the client
connects to the relay, the relay to the server; a process with no other access, as a router or a
compromised switch would be), forwards every byte both ways and appends it to a
:class:`Capture`. :mod:`flprivacy.wire` reads Flower's messages out of a capture, and
:func:`flprivacy.flower_deploy.deploy` puts a relay in front of one SuperNode
(``relay_client=c``).
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field

from .ports import free_port
from .validation import check_int

__all__ = ["Relay", "Capture", "UP", "DOWN"]

UP, DOWN = "up", "down"  # SuperNode -> SuperLink, SuperLink -> SuperNode


@dataclass
class Capture:
    """The bytes a :class:`Relay` forwarded: for each TCP connection, in the order it was opened,
    the bytes sent up (SuperNode to SuperLink) and down."""

    connections: list[dict[str, bytearray]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.connections, list):
            raise TypeError(f"Capture: connections must be a list of {{'up': bytes, 'down': bytes}} dicts; got "
                            f"{type(self.connections).__name__}.")
        for i, c in enumerate(self.connections):
            if not (isinstance(c, dict) and all(isinstance(c.get(d), (bytes, bytearray)) for d in (UP, DOWN))):
                raise TypeError(f"Capture: connections[{i}] must be a dict with the bytes sent 'up' and 'down' "
                                f"(bytes or bytearray each); got {c!r:.80}.")

    @property
    def nbytes(self) -> int:
        return sum(len(c[UP]) + len(c[DOWN]) for c in self.connections)

    def __contains__(self, needle: bytes) -> bool:
        """Whether ``needle`` occurs in one direction of one connection."""
        return any(needle in bytes(c[d]) for c in self.connections for d in (UP, DOWN))


class Relay:
    """A TCP relay on 127.0.0.1 in front of ``target_port``: every connection made to
    ``port`` is forwarded to the target and every byte, both ways, is appended to
    ``capture`` (a :class:`Capture`). ``start()`` returns the relay; ``stop()`` closes every socket and joins its
    threads (also as a context manager)."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1"):
        target_port = check_int("target_port", target_port, "Relay", minimum=1)
        if target_port > 65535:
            raise ValueError(f"Relay: target_port must be a TCP port in 1..65535; got {target_port}.")
        if not isinstance(target_host, str) or not target_host:
            raise TypeError(f"Relay: target_host must be a host name or address (a str, e.g. '127.0.0.1'); got "
                            f"{target_host!r}.")
        self.target = (target_host, target_port)
        self.capture = Capture()
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._server: socket.socket | None = None
        self.port: int | None = None

    def start(self) -> Relay:
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.port = free_port()
        self._server.bind(("127.0.0.1", self.port))
        self._server.listen(16)
        self._spawn(self._accept)
        return self

    def _spawn(self, fn, *args) -> None:  # noqa: ANN001
        t = threading.Thread(target=fn, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:  # closed by stop()
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                conn = {UP: bytearray(), DOWN: bytearray()}
                self.capture.connections.append(conn)
                self._socks += [client, upstream]
            self._spawn(self._pump, client, upstream, conn[UP])
            self._spawn(self._pump, upstream, client, conn[DOWN])

    def _pump(self, src: socket.socket, dst: socket.socket, record: bytearray) -> None:
        try:
            while data := src.recv(65536):
                with self._lock:
                    record += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):  # one side closed: close both (the other pump ends too)
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.close()
        with self._lock:
            socks = list(self._socks)
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> Relay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
