"""Whether an address is on this machine: the one test shared by the fake model's server (which
serves only loopback), ``replay serve`` and the network guard (which lets only loopback through).
Like ``replay.lazy_exports``, a foundation module: it imports nothing of ``replay``."""

from __future__ import annotations

import ipaddress
from typing import Any

__all__ = ["is_loopback"]


def is_loopback(address: Any) -> bool:
    """Whether a socket address is on this machine (a loopback IP or ``localhost``)."""
    host = address[0] if isinstance(address, tuple) and address else address
    if not isinstance(host, str):
        return False
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False  # a host name, or a scoped IPv6 address: not provably local
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)
