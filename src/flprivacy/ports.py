"""Free TCP ports on the loopback interface for the processes a deployment starts."""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port"]

_ISSUED: set[int] = set()  # ports free_port has handed out in this process


def _ephemeral_low() -> int:
    """The lowest port the OS gives outgoing connections (Linux: ip_local_port_range; else 32768)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, below the OS's ephemeral range, not handed out before.

    Between this call and the process that binds the port, nothing holds it. A port the OS picks
    (bind to 0) comes from the ephemeral range, where every outgoing connection of the machine
    (the deployment's own HTTP clients, a deployment running beside it) takes its local port: one
    did take a SuperNode's port in a test run ("address already in use"). Ports below that range
    are only ever bound on purpose, and a random draw (the OS's randomness: a seeded ``random``
    would give two processes the same sequence) makes two deployments unlikely to meet.
    """
    high = min(_ephemeral_low(), 32768)
    low, pick = max(1024, high - 12000), random.SystemRandom()
    for _ in range(200):
        port = pick.randrange(low, high)
        if port in _ISSUED:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _ISSUED.add(port)
        return port
    raise OSError(f"free_port: no free TCP port found in [{low}, {high}) after 200 "
                          "tries; free some ports or raise the ephemeral range's lower bound.")
