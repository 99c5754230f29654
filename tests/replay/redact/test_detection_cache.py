"""The redactor's cache of what each decoded string holds (a history is re-sent on every request,
so its strings are scanned once): it answers as a fresh scan would. A caller that keeps its own
verdict (a replay's request keys, per piece) scans its long strings without the cache, which then
keeps no copy of them (a long replay's tool results would otherwise stay in memory), and looks its
short ones up (role names, keys, tool names: the same few in every message)."""

from __future__ import annotations

import tracemalloc

from replay.redact.redactor import Redactor
from tests.replay.redact.test_redact import GITHUB_TOKEN, PLANTED

PROSE = "The parser reads the configuration file and then the module that calls it. " * 8


def test_a_long_string_seen_again_holds_what_it_held_the_first_time() -> None:
    redactor = Redactor()
    for secret in PLANTED:
        text = f"{PROSE} {secret} {PROSE}"
        first = redactor.detect_in_string(text)
        assert first == Redactor().detect_in_string(text)  # a fresh scan
        assert redactor.detect_in_string(text) == first
        assert redactor.strings_clean([text]) is not bool(first)
        assert Redactor().strings_clean([text], remember_up_to=0) is not bool(first)
    assert not redactor.strings_clean([f"{PROSE} {GITHUB_TOKEN} {PROSE}"])
    assert redactor.strings_clean([f"{PROSE} {PROSE}"])


def test_a_short_and_a_long_string_are_told_apart() -> None:
    redactor = Redactor()
    assert redactor.detect_in_string(GITHUB_TOKEN)
    assert redactor.detect_in_string(f"token {GITHUB_TOKEN}")
    assert not redactor.detect_in_string(PROSE)


def test_strings_scanned_without_the_cache_are_not_kept() -> None:
    redactor = Redactor()
    strings = [f"Tool result {number}: {PROSE}" for number in range(200)]
    scanned = sum(map(len, strings))
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        assert redactor.strings_clean(strings, remember_up_to=0)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert kept < scanned / 10
    assert not redactor.strings_clean([f"{PROSE} {GITHUB_TOKEN}"], remember_up_to=0)


def test_short_strings_are_kept_and_long_ones_are_not_up_to_the_length_given() -> None:
    redactor = Redactor()
    assert redactor.strings_clean(["tool_result", "assistant", PROSE], remember_up_to=64)
    assert set(redactor._cache) == {"tool_result", "assistant"}
    assert not redactor.strings_clean([GITHUB_TOKEN, PROSE], remember_up_to=64)
    assert GITHUB_TOKEN in redactor._cache
    assert not redactor.strings_clean([f"{PROSE} {GITHUB_TOKEN}"], remember_up_to=64)
    assert PROSE not in redactor._cache
