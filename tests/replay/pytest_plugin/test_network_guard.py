"""The network guard: while installed, nothing in this process reaches past loopback.

Every way out is tried — TCP connect and connect_ex, UDP sendto, sendmsg, the C base class
``_socket.socket`` that Python-level patches never see, another thread, asyncio, and a name
lookup — against 192.0.2.1 (TEST-NET-1, never routed), so no test here can reach anything
even if the guard failed. Loopback, Unix sockets and IP literals stay usable. (This project's
suite-wide guard, tests/conftest.py, is installed underneath the ones made here.)
"""

from __future__ import annotations

import _socket
import asyncio
import contextlib
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from replay.network_guard import NetworkAccess, NetworkGuard

REMOTE = ("192.0.2.1", 80)
UDP_REMOTE = ("192.0.2.1", 9)
HOW_TO_ALLOW = (
    "because a replay runs offline, answered from its cassette, and may reach only loopback; to let it through, "
    "record live (pytest --record-mode=once, new_episodes or all, or replay record --live)."
)


@pytest.fixture
def guard() -> Iterator[NetworkGuard]:
    with NetworkGuard() as guard:
        yield guard


def refused(guard: NetworkGuard, attempt: Callable[[], Any], message: str) -> None:
    """``attempt`` raises ConnectionRefusedError with exactly ``message``, which the guard keeps."""
    with pytest.raises(ConnectionRefusedError) as caught:
        attempt()
    assert str(caught.value) == message
    assert guard.refused[-1] == message


def test_the_refusal_is_one_sentence_naming_what_why_and_how_to_allow_it() -> None:
    assert NetworkGuard.refusal(REMOTE) == f"agent-replay refused a network connection to 192.0.2.1:80 {HOW_TO_ALLOW}"
    assert NetworkGuard.refusal(UDP_REMOTE, access=NetworkAccess.DATAGRAM) == (
        f"agent-replay refused a datagram to 192.0.2.1:9 {HOW_TO_ALLOW}"
    )
    assert NetworkGuard.refusal("example.com", access=NetworkAccess.LOOKUP) == (
        f"agent-replay refused a name lookup of example.com {HOW_TO_ALLOW}"
    )


def test_tcp_connect_and_connect_ex_to_a_remote_address_are_refused(guard: NetworkGuard) -> None:
    message = NetworkGuard.refusal(REMOTE)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        refused(guard, lambda: sock.connect(REMOTE), message)
        refused(guard, lambda: sock.connect_ex(REMOTE), message)
    refused(guard, lambda: socket.create_connection(REMOTE, timeout=2), message)


def test_udp_sendto_to_a_remote_address_is_refused(guard: NetworkGuard) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        refused(
            guard,
            lambda: sock.sendto(b"ping", UDP_REMOTE),
            NetworkGuard.refusal(UDP_REMOTE, access=NetworkAccess.DATAGRAM),
        )


def test_sendmsg_to_a_remote_address_is_refused(guard: NetworkGuard) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        refused(
            guard,
            lambda: sock.sendmsg([b"ping"], [], 0, UDP_REMOTE),
            NetworkGuard.refusal(UDP_REMOTE, access=NetworkAccess.DATAGRAM),
        )


def test_the_c_base_class_is_guarded_too(guard: NetworkGuard) -> None:
    # socket.socket subclasses _socket.socket: code using the base class directly never meets a
    # patched Python method, so the guard works below them (audit events raised in C).
    tcp = _socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    udp = _socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        refused(guard, lambda: tcp.connect(REMOTE), NetworkGuard.refusal(REMOTE))
        refused(guard, lambda: tcp.connect_ex(REMOTE), NetworkGuard.refusal(REMOTE))
        datagram = NetworkGuard.refusal(UDP_REMOTE, access=NetworkAccess.DATAGRAM)
        refused(guard, lambda: udp.sendto(b"ping", UDP_REMOTE), datagram)
        refused(guard, lambda: udp.sendmsg([b"ping"], [], 0, UDP_REMOTE), datagram)
    finally:
        tcp.close()
        udp.close()


def test_another_thread_is_guarded(guard: NetworkGuard) -> None:
    errors: list[BaseException] = []

    def attempt() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            try:
                sock.sendto(b"ping", UDP_REMOTE)
            except ConnectionRefusedError as exc:
                errors.append(exc)

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    assert [str(e) for e in errors] == [NetworkGuard.refusal(UDP_REMOTE, access=NetworkAccess.DATAGRAM)]


async def test_asyncio_connections_and_datagram_endpoints_are_refused(guard: NetworkGuard) -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(ConnectionRefusedError, match=r"refused a network connection to 192\.0\.2\.1:80"):
        await asyncio.open_connection(*REMOTE)
    # A "connected" UDP endpoint connects its socket: refused there, before any datagram.
    with pytest.raises(ConnectionRefusedError, match=r"refused a network connection to 192\.0\.2\.1:9"):
        await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=UDP_REMOTE)


def test_looking_up_a_remote_name_is_refused_but_loopback_names_and_literals_resolve(guard: NetworkGuard) -> None:
    # A lookup goes out to the resolver from C, below any socket Python sees: it is refused by name.
    lookup = NetworkGuard.refusal("example.com", access=NetworkAccess.LOOKUP)
    refused(guard, lambda: socket.getaddrinfo("example.com", 443), lookup)
    refused(guard, lambda: socket.gethostbyname("example.com"), lookup)
    refused(
        guard, lambda: socket.gethostbyaddr("192.0.2.1"), NetworkGuard.refusal("192.0.2.1", access=NetworkAccess.LOOKUP)
    )
    assert socket.getaddrinfo("localhost", 80, type=socket.SOCK_STREAM)
    assert socket.getaddrinfo("192.0.2.1", 80, type=socket.SOCK_STREAM)[0][4] == REMOTE  # no lookup for a literal
    assert socket.gethostbyname("127.0.0.1") == "127.0.0.1"


def test_this_machines_own_name_is_not_a_remote_lookup(guard: NetworkGuard) -> None:
    # http.server, smtplib and logging ask for it (socket.getfqdn) when bound to all interfaces.
    socket.getfqdn("")
    with contextlib.suppress(OSError):  # whether it resolves depends on the machine, not the guard
        socket.getaddrinfo(socket.gethostname(), 80)
    assert guard.refused == []


def test_loopback_tcp_and_udp_and_unix_sockets_stay_usable(guard: NetworkGuard, tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname(), timeout=2) as client:
            peer, _ = server.accept()
            with peer:
                client.sendall(b"tcp")
                assert peer.recv(3) == b"tcp"
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender,
    ):
        receiver.bind(("127.0.0.1", 0))
        sender.sendto(b"udp", receiver.getsockname())
        sender.sendmsg([b"msg"], [], 0, receiver.getsockname())
        assert receiver.recv(3) == b"udp" and receiver.recv(3) == b"msg"
    path = str(tmp_path / "s")
    with (
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver,
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sender,
    ):
        receiver.bind(path)
        sender.sendto(b"unix", path)
        assert receiver.recv(4) == b"unix"
    assert guard.refused == []


def test_a_guard_that_allows_remote_defers_to_the_guard_installed_under_it() -> None:
    # This suite's own guard (tests/conftest.py) is installed underneath: letting one guard
    # through (a live recording) does not lift the other.
    guard = NetworkGuard()
    guard.allow_remote = True
    guard.install()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            with pytest.raises(ConnectionRefusedError, match=r"refused a datagram to 192\.0\.2\.1:9"):
                sock.sendto(b"ping", UDP_REMOTE)
    finally:
        guard.uninstall()
    assert guard.refused == []


def test_uninstall_stops_the_guard_and_leaves_the_socket_class_alone() -> None:
    connect, connect_ex, sendto = socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto
    guard = NetworkGuard()
    guard.install()
    guard.uninstall()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, pytest.raises(ConnectionRefusedError):
        sock.sendto(b"ping", UDP_REMOTE)  # refused by the suite's guard, not by the uninstalled one
    assert guard.refused == []
    assert (socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto) == (connect, connect_ex, sendto)
    assert _socket.socket is socket.socket.__bases__[0]


def test_in_a_fresh_interpreter_uninstall_lets_connections_through_again() -> None:
    # Outside this suite's guard. A UDP connect sends nothing (it only sets the destination),
    # so the "let through" half touches no network; without a route it fails with its own OSError.
    program = f"""
import socket
from replay.network_guard import NetworkGuard

guard = NetworkGuard()
guard.install()
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    sock.connect({UDP_REMOTE!r})
except ConnectionRefusedError as exc:
    print("installed:", exc)
guard.uninstall()
try:
    sock.connect({UDP_REMOTE!r})
    print("uninstalled: let through")
except OSError as exc:
    print("uninstalled:", "refused by the guard" if "agent-replay" in str(exc) else "let through")
"""
    output = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True).stdout
    assert output.splitlines() == [
        f"installed: {NetworkGuard.refusal(UDP_REMOTE)}",
        "uninstalled: let through",
    ]
