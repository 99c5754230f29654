"""The ``interrupt`` session option: where the user interrupts, and which occurrence.

``tool_use`` and ``tool_result`` are numbered by ``count``, ``tools_running`` by ``batch``,
``request`` by ``n``; each form round-trips through session.json, the old ``{at, count}`` forms
write exactly the bytes they always did, and a bad interrupt is one sentence naming the option.
"""

from __future__ import annotations

from typing import Any

import pytest

from replay.schema.documents import SchemaError, session_options_from
from replay.schema.options import InterruptAt, SessionOptions, SessionOptionsError


@pytest.mark.parametrize(
    ("written", "interrupt"),
    [
        ({"at": "tool_use", "count": 1}, (InterruptAt.TOOL_USE, 1)),
        ({"at": "tool_result", "count": 2}, (InterruptAt.TOOL_RESULT, 2)),
        ({"at": "tools_running", "batch": 3}, (InterruptAt.TOOLS_RUNNING, 3)),
        ({"at": "request", "n": 2}, (InterruptAt.REQUEST, 2)),
    ],
)
def test_each_form_reads_and_writes_back_the_same_mapping(written: dict[str, Any], interrupt: Any) -> None:
    options = SessionOptions.from_mapping({"interrupt": written})

    assert options.interrupt == interrupt
    assert options.to_mapping() == {"interrupt": written}
    assert list(options.to_mapping()["interrupt"]) == list(written)  # key order too: the same bytes
    assert session_options_from(options.to_mapping(), source="session.json", prefix="session_options.") == options


@pytest.mark.parametrize(("at", "key"), [("tool_use", "count"), ("tools_running", "batch"), ("request", "n")])
def test_without_its_number_an_interrupt_means_the_first_occurrence(at: str, key: str) -> None:
    options = SessionOptions.from_mapping({"interrupt": {"at": at}})

    assert options.interrupt == (InterruptAt(at), 1)
    assert options.to_mapping() == {"interrupt": {"at": at, key: 1}}


@pytest.mark.parametrize(
    ("interrupt", "message"),
    [
        ({"at": "later"}, "interrupt.at 'later' is not one of tool_use, tool_result, tools_running, request"),
        ({"count": 1}, "'interrupt' must be a mapping with 'at'"),
        ("tool_use", "'interrupt' must be a mapping with 'at'"),
        ({"at": "tools_running", "count": 1}, "'interrupt' at tools_running is numbered by 'batch', not 'count'"),
        ({"at": "request", "batch": 1}, "'interrupt' at request is numbered by 'n', not 'batch'"),
        ({"at": "tool_use", "n": 1}, "'interrupt' at tool_use is numbered by 'count', not 'n'"),
        ({"at": "tools_running", "batch": 0}, r"interrupt.batch must be a whole number of at least 1 \(got 0\)"),
        ({"at": "request", "n": -2}, r"interrupt.n must be a whole number of at least 1 \(got -2\)"),
        ({"at": "request", "n": True}, r"interrupt.n must be a whole number of at least 1 \(got True\)"),
    ],
)
def test_a_bad_interrupt_is_refused_naming_the_option(interrupt: object, message: str) -> None:
    with pytest.raises(SessionOptionsError, match=message):
        SessionOptions.from_mapping({"interrupt": interrupt})


@pytest.mark.parametrize(
    ("interrupt", "sentence"),
    [
        (
            {"at": "tools_running", "count": 1},
            "scenario.yaml: session: 'interrupt' at tools_running is numbered by 'batch', not 'count': "
            "write {at: tools_running, batch: N}.",
        ),
        ({"at": "request", "n": 0}, "scenario.yaml: session.interrupt.n must be at least 1 (got 0)."),
        (
            {"at": "soon"},
            "scenario.yaml: session.interrupt.at must be one of 'tool_use', 'tool_result', 'tools_running' or "
            "'request' (got 'soon').",
        ),
    ],
)
def test_in_a_file_a_bad_interrupt_is_one_sentence_naming_the_file_and_the_option(
    interrupt: object, sentence: str
) -> None:
    with pytest.raises(SchemaError) as raised:
        session_options_from({"interrupt": interrupt}, source="scenario.yaml", prefix="session.")

    assert str(raised.value) == sentence
