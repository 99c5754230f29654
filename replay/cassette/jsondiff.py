"""Where two JSON values differ, as paths a reader can find in the request
(``messages[3].content[0].text``): shared by the cassette miss message and ``replay diff``."""

from __future__ import annotations

from typing import Any

__all__ = ["differing_paths"]


def differing_paths(recorded: Any, live: Any, *, limit: int = 6, prefix: str = "") -> list[str]:
    """JSON paths where two bodies differ, shallowest first (at most ``limit``)."""
    found: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if len(found) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                sub = f"{where}.{key}" if where else str(key)
                if key not in a or key not in b:
                    found.append(sub)
                else:
                    walk(a[key], b[key], sub)
                if len(found) >= limit:
                    return
        elif isinstance(a, list) and isinstance(b, list):
            for index in range(max(len(a), len(b))):
                if index >= len(a) or index >= len(b):
                    found.append(f"{where}[{index}]")
                    return
                walk(a[index], b[index], f"{where}[{index}]")
                if len(found) >= limit:
                    return
        elif a != b:
            found.append(where or "(body)")

    walk(recorded, live, prefix)
    return found
