"""A network guard: while installed, nothing in this process reaches past loopback — connections,
datagrams and name lookups to anything else are refused with a message that says how to record
instead. Used by the pytest plugin for replay tests, and by this project's own test suite for
every test.

It works on Python's audit events (``sys.addaudithook``), which the C socket module raises for
every ``connect``/``connect_ex``, ``sendto``, ``sendmsg`` and name lookup, however the socket
was reached: ``socket.socket``, its C base class ``_socket.socket`` (whose methods cannot be
patched), asyncio, any thread. Subprocesses are beyond it: they get proxy variables that point
nowhere instead (``engine.process.ToolEnvironment``).

A foundation module, like ``replay.loopback``: usable without pytest (``replay.NetworkGuard``).
"""

from __future__ import annotations

import ipaddress
import socket
import sys
import threading
from enum import StrEnum
from typing import Any

from replay.loopback import is_loopback

__all__ = ["NetworkAccess", "NetworkGuard"]


class NetworkAccess(StrEnum):
    """What the guard refused, as the refusal names it."""

    CONNECTION = "a network connection to"
    DATAGRAM = "a datagram to"
    LOOKUP = "a name lookup of"


# Audit event -> what it is. connect_ex raises "socket.connect" too.
_SENDING_EVENTS = {
    "socket.connect": NetworkAccess.CONNECTION,
    "socket.sendto": NetworkAccess.DATAGRAM,
    "socket.sendmsg": NetworkAccess.DATAGRAM,
}
# Lookups go to the resolver from C (glibc's own UDP), below any socket Python sees.
_LOOKUP_EVENTS = frozenset({"socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo"})
_WATCHED = frozenset(_SENDING_EVENTS) | _LOOKUP_EVENTS
_INTERNET = (socket.AF_INET, socket.AF_INET6)
# This machine's own name, which socket.getfqdn() looks up (http.server binding all interfaces,
# smtplib, logging): it names this machine, and it is answered from /etc/hosts on most.
_THIS_HOST = socket.gethostname()

# Installed guards, oldest first. An audit hook cannot be removed, so one hook is added for the
# process, the first time a guard is installed, and it consults this list.
_installed: list[NetworkGuard] = []
_lock = threading.Lock()
_hook_added = False


class NetworkGuard:
    """Refuses, while installed, connections, datagrams and name lookups that leave the machine
    (Unix sockets, loopback and IP literals pass). ``allow_remote`` lets a live recording
    through this guard; a guard installed earlier still has its say."""

    def __init__(self) -> None:
        self.allow_remote = False
        self.refused: list[str] = []

    def install(self) -> None:
        """Guard every socket of the process, in every thread, until ``uninstall``."""
        global _hook_added
        with _lock:
            if not _hook_added:
                sys.addaudithook(_audit)
                _hook_added = True
            _installed.append(self)

    def uninstall(self) -> None:
        """Stop guarding (guards installed by others stay)."""
        with _lock:
            if self in _installed:
                _installed.remove(self)

    def __enter__(self) -> NetworkGuard:
        self.install()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.uninstall()

    @staticmethod
    def refusal(target: Any, *, access: NetworkAccess = NetworkAccess.CONNECTION) -> str:
        """The error for a refused access: what was refused, why, and how to record instead."""
        where = f"{target[0]}:{target[1]}" if isinstance(target, tuple) and len(target) >= 2 else str(target)
        return (
            f"agent-replay refused {access.value} {where} because a replay runs offline, answered from its cassette, "
            "and may reach only loopback; to let it through, record live (pytest --record-mode=once, new_episodes or "
            "all, or replay record --live)."
        )


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """The process-wide audit hook. It runs for every audited action (each ``open``, ``exec``,
    ...), so it returns at once for anything that is not a watched socket event."""
    if event not in _WATCHED or not _installed:
        return
    refusal = _refusal(event, args)
    if refusal is None:
        return
    # The newest guard answers first; one that allows remote access defers to the one below.
    for guard in reversed(list(_installed)):
        if not guard.allow_remote:
            message = NetworkGuard.refusal(refusal[1], access=refusal[0])
            guard.refused.append(message)
            raise ConnectionRefusedError(message)


def _refusal(event: str, args: tuple[Any, ...]) -> tuple[NetworkAccess, Any] | None:
    """What ``event`` would reach off this machine, or None when it stays on it."""
    access = _SENDING_EVENTS.get(event)
    if access is not None:
        sock, address = args[0], args[1]
        if address is None or getattr(sock, "family", None) not in _INTERNET or is_loopback(address):
            return None  # sendmsg on a connected socket (its connect was checked), or not IP
        return access, address
    host = args[0]
    if event == "socket.getnameinfo":  # (sockaddr, ...): a reverse lookup of an address
        host = host[0] if isinstance(host, tuple) and host else host
    if isinstance(host, bytes):
        host = host.decode("ascii", errors="replace")
    if host is None or host in ("", _THIS_HOST) or is_loopback(host):
        return None
    if event in ("socket.getaddrinfo", "socket.gethostbyname") and _is_ip_literal(host):
        return None  # a literal is parsed, not looked up; connecting to it is checked later
    return NetworkAccess.LOOKUP, host


def _is_ip_literal(host: Any) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
