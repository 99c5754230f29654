"""A socket guard: while installed, connections to anything but loopback are refused with a
message that says how to record instead. Used by the pytest plugin for replay tests, and by this
project's own test suite for every test."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

__all__ = ["NetworkGuard", "is_loopback"]


class NetworkGuard:
    """Refuses socket connections to anything but loopback while installed (Unix sockets and
    other families pass). ``allow_remote`` lets a live recording through."""

    def __init__(self) -> None:
        self.allow_remote = False
        self.refused: list[str] = []
        self._saved: tuple[Any, Any] | None = None

    def install(self) -> None:
        """Patch ``socket.socket.connect`` and ``connect_ex`` (for every thread) until ``uninstall``."""
        # Installed on top of whatever is there (another guard, e.g. a conftest's), which then
        # also sees every connection this one lets through.
        real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
        self._saved = (real_connect, real_connect_ex)
        socket.socket.connect = self._guarded(real_connect)  # type: ignore[method-assign]
        socket.socket.connect_ex = self._guarded(real_connect_ex)  # type: ignore[method-assign]

    def uninstall(self) -> None:
        """Put back the ``connect`` and ``connect_ex`` that were there before ``install``."""
        if self._saved is not None:
            socket.socket.connect, socket.socket.connect_ex = self._saved  # type: ignore[method-assign]
            self._saved = None

    def _guarded(self, real: Callable[..., Any]) -> Callable[..., Any]:
        guard = self

        def connect(sock: socket.socket, address: Any) -> Any:
            if not guard.allow_remote and sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address):
                message = guard.refusal(address)
                guard.refused.append(message)
                raise ConnectionRefusedError(message)
            return real(sock, address)

        return connect

    @staticmethod
    def refusal(address: Any) -> str:
        """The error for a refused connection: the address, and how to record instead."""
        where = f"{address[0]}:{address[1]}" if isinstance(address, tuple) and len(address) >= 2 else repr(address)
        return (
            f"agent-replay refused a network connection to {where}: a replay test runs offline, from its cassette "
            "(only loopback is allowed). To record against the network, run pytest with --record-mode=once "
            "(cassettes that do not exist yet), new_episodes or all."
        )


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
