"""Property-based loop testing (issue 7, item 1): random fake-model scripts, random faults and
random aborts, and the invariants every run must keep.

A generated run is a script of model turns (text, thinking, valid, invalid, unknown and
parallel read-only tool calls, a Write; stop reasons end_turn, tool_use and max_tokens) mixed
with every fault kind the fake model injects (HTTP 429 with retry-after, 500, 529, 400 prompt
too long, 413, a mid-stream error event, a dropped connection, a malformed event), one or two
prompts, small engine settings so that scripts end, and an abort on the n-th item
``submit_message`` yields. Every run must keep:

1. every request sent pairs each tool_use with its tool_result (``assert_pairing``);
2. each prompt ends in one of the ten terminals, with no exception escaping ``submit_message``
   (and an aborted terminal only when the user did abort);
3. every message yielded is in the transcript, in order, each ``parent_uuid`` naming a record
   before it (a tombstone names its target instead);
4. no retry sleeps for real: each retry's delay is slept on the session's manual clock and
   nothing awaits a real ``asyncio.sleep`` (checked as facts, never by timing the run: how long
   a run takes is measured by ``bench/property_runs.py``);
5. a run recorded through the loopback fake server replays from its cassette to the same
   transcript and the same behaviour trace (its own test: recording is slower).

Profiles: ``HYPOTHESIS_PROFILE=ci`` (the default) or ``long``. They are applied to this module's
tests only (never loaded globally), so the rest of the suite keeps its own settings.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine import EngineSettings, HookDecision, HookResult, Hooks, ManualClock, QueryResult, Terminal, TraceKind
from engine.hooks import HookInput, StopHookInput, StopHookResult
from engine.messages import Message, ProgressMessage
from engine.transcript import read_transcript
from replay.cassette import load_cassette
from replay.fake.blocks import count_message_events
from replay.fake.scenario import Scenario
from replay.schema.options import InterruptAt, SessionOptions
from replay.session.bundle import Bundle
from replay.session.recording import record_bundle
from replay.session.session_run import SessionRun, replay_bundle
from tests.engine.conftest import Session, assert_pairing, make_session

JsonDict = dict[str, Any]

# ---------------------------------------------------------------------------------------------
# Profiles

# ci: the same examples on every run (derandomize=True, no example database), sized to keep this
# file near 30 s on a 2-core machine. long: fresh random examples each run, with hypothesis's
# example database, so a failure found locally is tried first the next time.
_COMMON: dict[str, Any] = {"deadline": None, "print_blob": True, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", max_examples=600, derandomize=True, database=None, **_COMMON)
settings.register_profile("long", max_examples=2_000, **_COMMON)
PROFILE_NAME = os.environ.get("HYPOTHESIS_PROFILE", "ci")
PROFILE = settings.get_profile(PROFILE_NAME)
# Recording goes through a loopback server and vcrpy (~0.1-0.5 s a run): fewer of those.
RECORDED_RUNS = {"ci": 100, "long": 500}.get(PROFILE_NAME, max(1, PROFILE.max_examples // 6))

# ---------------------------------------------------------------------------------------------
# What a generated script is made of

FILES = {"a.txt": "alpha\nbeta\n", "notes/b.md": "# Notes\nalpha again\n"}

READ_ONLY_CALLS: list[JsonDict] = [
    {"name": "Read", "input": {"file_path": "a.txt"}},
    {"name": "Read", "input": {"file_path": "notes/b.md", "offset": 2, "limit": 1}},
    {"name": "Glob", "input": {"pattern": "**/*"}},
    {"name": "Grep", "input": {"pattern": "alpha", "output_mode": "content"}},
]
INVALID_CALLS: list[JsonDict] = [
    {"name": "Read", "input": {}},
    {"name": "Read", "input": {"file_path": 7}},
    {"name": "Glob", "input": {"pattern": ["*"]}},
    {"name": "Write", "input": {"file_path": "x.txt"}},
    {"name": "Read", "input": {"file_path": "../outside.txt"}},
    {"name": "Grep", "input": {"pattern": "("}},
]
UNKNOWN_CALLS: list[JsonDict] = [
    {"name": "Teleport", "input": {"to": "mars"}},
    {"name": "read", "input": {"file_path": "a.txt"}},
]
WRITE_CALLS: list[JsonDict] = [
    {"name": "Write", "input": {"file_path": "out/new.txt", "content": "new\n"}},
    {"name": "Write", "input": {"file_path": "a.txt", "content": "overwritten\n"}},
]

TEXTS = ["Done.", "Let me look.", "", " \n", "ünïcode ✓ — 日本"]
THINKING: list[JsonDict] = [{"thinking": "Hmm, which file?", "signature": "sig-1"}, {"redacted_thinking": "b3BhcXVl"}]
USAGES: list[JsonDict | None] = [
    None,
    {"input_tokens": 120, "output_tokens": 10},
    {"input_tokens": 175_000, "output_tokens": 10},  # over the autocompact threshold
    {"input_tokens": 190_000, "output_tokens": 10},  # over the blocking limit
]
STOP_REASONS = [None, "end_turn", "tool_use", "max_tokens"]  # None: derived from the content

HTTP_FAULTS: list[JsonDict] = [
    {"fault": "http_error", "status": 500, "error_type": "api_error", "message": "Internal server error"},
    {"fault": "http_error", "status": 529, "error_type": "overloaded_error", "message": "Overloaded"},
    {
        "fault": "http_error",
        "status": 400,
        "error_type": "invalid_request_error",
        "message": "prompt is too long: 210000 tokens > 200000 maximum",
    },
    {"fault": "http_error", "status": 413, "error_type": "request_too_large", "message": "Request exceeds the size"},
    {
        "fault": "http_error",
        "status": 400,
        "error_type": "invalid_request_error",
        "message": "messages.0.content.1.image.source.base64: image exceeds 5 MB maximum",
    },
]
PROMPTS = ["list the files", "fix the notes", "keep going +20k"]
# A prompt with an image, for the media-too-large path (in process only: a bundle's prompts are text).
IMAGE_PROMPT: list[JsonDict] = [
    {"type": "text", "text": "what is in this picture?"},
    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
]


def _tool_use(call: JsonDict) -> JsonDict:
    return {"tool_use": {"name": call["name"], "input": dict(call["input"])}}


texts = st.sampled_from(TEXTS).map(lambda text: {"text": text})
tool_calls = st.one_of(
    st.sampled_from(READ_ONLY_CALLS),
    st.sampled_from(INVALID_CALLS),
    st.sampled_from(UNKNOWN_CALLS),
    st.sampled_from(WRITE_CALLS),
).map(_tool_use)
blocks = st.one_of(texts, st.sampled_from(THINKING), tool_calls)
parallel_read_only = st.tuples(
    st.lists(texts | st.sampled_from(THINKING), max_size=1),
    st.lists(st.sampled_from(READ_ONLY_CALLS).map(_tool_use), min_size=2, max_size=4),
).map(lambda parts: parts[0] + parts[1])
contents = st.one_of(st.lists(blocks, max_size=4), parallel_read_only)


@st.composite
def turns(draw: st.DrawFn) -> JsonDict:
    """A model answer in the scenario's YAML shape."""
    turn: JsonDict = {"content": draw(contents)}
    stop_reason = draw(st.sampled_from(STOP_REASONS))
    if stop_reason is not None:
        turn["stop_reason"] = stop_reason
    usage = draw(st.sampled_from(USAGES))
    if usage is not None:
        turn["usage"] = usage
    return turn


def _event_count(content: list[JsonDict]) -> int:
    (turn,) = Scenario.from_list([{"content": content}]).turns
    return count_message_events(turn.content)  # type: ignore[union-attr]


@st.composite
def stream_faults(draw: st.DrawFn) -> JsonDict:
    """A 200 stream cut after some of its events: an error event, a drop, or data that is not JSON."""
    content = draw(contents)
    fault: JsonDict = {
        "fault": draw(st.sampled_from(["stream_error", "drop_connection", "malformed_event"])),
        "after_events": draw(st.integers(0, _event_count(content))),
        "content": content,
    }
    if fault["fault"] == "stream_error":
        fault["error_type"], fault["message"] = draw(
            st.sampled_from([("overloaded_error", "Overloaded"), ("api_error", "Internal server error")])
        )
    return fault


rate_limited = st.integers(0, 60).map(
    lambda seconds: {
        "fault": "http_error",
        "status": 429,
        "error_type": "rate_limit_error",
        "message": "Rate limited",
        "headers": {"retry-after": str(seconds)},
    }
)
faults = st.one_of(rate_limited, st.sampled_from(HTTP_FAULTS), stream_faults())
# Turns twice as likely as faults, so that runs often get past their first request.
scripts = st.lists(st.one_of(turns(), turns(), faults), max_size=8)

engine_settings = st.fixed_dictionaries(
    {"max_turns": st.sampled_from([None, 1, 2, 3, 6]), "max_retries": st.sampled_from([0, 1, 2, 3])},
    optional={
        "fallback_model": st.just("claude-haiku-4-5"),
        "overloaded_before_fallback": st.sampled_from([1, 2]),
        "thinking": st.just({"type": "enabled", "budget_tokens": 1024}),
        "streaming_tool_execution": st.booleans(),
        "max_tool_concurrency": st.sampled_from([1, 2]),
        "reactive_compact": st.booleans(),
        "context_collapse": st.booleans(),
        "mid_stream_recovery": st.sampled_from(["retry", "resume"]),
    },
)
prompt_lists = st.lists(st.sampled_from(PROMPTS), min_size=1, max_size=2)
prompts_with_images = st.lists(st.sampled_from([*PROMPTS, IMAGE_PROMPT]), min_size=1, max_size=2)
abort_points = st.none() | st.integers(1, 30)  # the n-th item submit_message yields, over all prompts
interrupts = st.none() | st.tuples(st.sampled_from(list(InterruptAt)), st.integers(1, 3))


def _stop_hook_blocks_once(hook_input: StopHookInput) -> StopHookResult:
    return StopHookResult() if hook_input.stop_hook_active else StopHookResult(block=True, reason="Run the tests.")


def _stop_hook_prevents(hook_input: StopHookInput) -> StopHookResult:
    return StopHookResult(prevent_continuation=True, stop_reason="Budget spent for today.")


def _pre_tool_hook_stops(hook_input: HookInput) -> HookResult:
    return HookResult(prevent_continuation=True, stop_reason="One tool call per session.")


def _pre_tool_hook_denies_writes(hook_input: HookInput) -> HookResult:
    if hook_input.tool_name == "Write":
        return HookResult(decision=HookDecision.DENY, reason="No writes today.")
    return HookResult()


# In process only: a recorded bundle takes hooks as shell commands, too slow to generate by the hundred.
HOOKS: dict[str, Hooks] = {
    "no hooks": Hooks(),
    "a stop hook blocks once": Hooks(stop=[_stop_hook_blocks_once]),
    "a stop hook prevents continuation": Hooks(stop=[_stop_hook_prevents]),
    "a pre-tool hook stops the loop": Hooks(pre_tool_use=[_pre_tool_hook_stops]),
    "a pre-tool hook denies writes": Hooks(pre_tool_use=[_pre_tool_hook_denies_writes]),
}
hook_names = st.sampled_from(list(HOOKS))

# ---------------------------------------------------------------------------------------------
# Running a script in process


@dataclass
class Played:
    """What one generated run produced: the items of each prompt, when the abort came."""

    session: Session
    per_prompt: list[list[Any]] = field(default_factory=list)
    aborted_prompt: int | None = None  # 1-based; the abort came before this prompt's result
    real_sleeps: list[float] = field(default_factory=list)


@contextmanager
def real_sleeps_recorded(into: list[float]) -> Iterator[None]:
    """Record every real ``asyncio.sleep`` with a positive delay (a retry must never make one)."""
    original = asyncio.sleep

    async def watched(delay: float, *args: Any, **kwargs: Any) -> Any:
        if delay > 0:
            into.append(delay)
        return await original(delay, *args, **kwargs)

    asyncio.sleep = watched  # type: ignore[assignment]
    try:
        yield
    finally:
        asyncio.sleep = original


async def play(
    root: Path, script: list[JsonDict], *, prompts: list[Any], options: JsonDict, hooks: str, abort_at: int | None
) -> Played:
    """Submit ``prompts`` against ``script``, aborting on the ``abort_at``-th output item overall."""
    session = make_session(root, script, settings=EngineSettings(**options), hooks=HOOKS[hooks], files=FILES)
    played = Played(session)
    seen = 0
    with real_sleeps_recorded(played.real_sleeps):
        for number, prompt in enumerate(prompts, start=1):
            items: list[Any] = []
            played.per_prompt.append(items)
            try:
                async for item in session.engine.submit_message(prompt):
                    items.append(item)
                    seen += 1
                    if seen == abort_at and not isinstance(item, QueryResult):
                        played.aborted_prompt = number
                        session.engine.abort()
            except Exception as exc:  # invariant 2 is that nothing escapes: say so, with the cause
                raise AssertionError(f"submit_message({prompt!r}) raised {exc!r}") from exc
    session.engine.close()
    return played


# ---------------------------------------------------------------------------------------------
# The invariants


def check_pairing(bodies: list[JsonDict]) -> None:
    """Invariant 1: every request sent pairs each tool_use with its tool_result."""
    for number, body in enumerate(bodies, start=1):
        try:
            assert_pairing(body["messages"])
        except AssertionError as exc:
            raise AssertionError(f"request {number} broke the pairing rule: {exc}") from None


def check_terminals(played: Played) -> None:
    """Invariant 2: each prompt yields one result, last, with one of the ten terminals; an
    aborted terminal only after an abort."""
    trace = [e.data["reason"] for e in played.session.engine.trace if e.kind is TraceKind.TERMINAL]
    assert len(trace) == len(played.per_prompt)
    for number, items in enumerate(played.per_prompt, start=1):
        results = [item for item in items if isinstance(item, QueryResult)]
        assert len(results) == 1 and items[-1] is results[0], f"prompt {number} did not end with one QueryResult"
        terminal = results[0].terminal_reason
        assert terminal in set(Terminal) and trace[number - 1] == terminal.value
        if terminal in (Terminal.ABORTED_STREAMING, Terminal.ABORTED_TOOLS):
            assert played.aborted_prompt == number, f"prompt {number} ended {terminal} but nobody aborted it"
        event(f"terminal: {terminal.value}")


def check_transcript(records: list[JsonDict], yielded: list[Message] | None = None) -> None:
    """Invariant 3: the transcript is the yielded messages in order (progress is never recorded;
    a message kept across a compaction is yielded again but recorded once), on a chain of
    ``parent_uuid`` links to earlier records."""
    uuids = [r["uuid"] for r in records]
    assert len(uuids) == len(set(uuids)), "a message was recorded twice"
    if yielded is not None:
        order = list(dict.fromkeys(m.uuid for m in yielded if not isinstance(m, ProgressMessage)))
        missing = sorted(set(order) - set(uuids))
        assert not missing, f"yielded messages {missing} are not in the transcript"
        assert order == uuids, "the transcript is not the yielded messages in the order they were yielded"
    seen: set[str] = set()
    for number, record in enumerate(records, start=1):
        if record["type"] == "tombstone":
            assert record["target_uuid"] in seen, f"line {number}: a tombstone of a message never recorded"
        elif record.get("parent_uuid") is None:
            is_root = not seen or record.get("subtype") == "compact_boundary"
            assert is_root, f"line {number} ({record['type']}) has no parent but is neither first nor a boundary"
        else:
            assert record["parent_uuid"] in seen, f"line {number} ({record['type']}) names a parent not before it"
        seen.add(record["uuid"])


def check_no_real_sleep(played: Played) -> None:
    """Invariant 4: retries wait on the session clock only."""
    retries = [e.data["delay_ms"] for e in played.session.engine.trace if e.kind is TraceKind.RETRY]
    clock = played.session.engine.deps.clock
    assert isinstance(clock, ManualClock)
    assert [round(s * 1000) for s in clock.slept] == retries, "a retry's delay was not slept on the session clock"
    assert played.real_sleeps == [], f"the run slept for real: {played.real_sleeps} s"
    if retries:
        event("retried on the session clock")


def read_records(path: Path) -> list[JsonDict]:
    """The transcript's records; a torn line in a finished transcript is a lost message."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_transcript(path)


def fault_label(fault: JsonDict) -> str:
    """``http_error 429``, ``http_error 400 image``, ``drop_connection``, ..."""
    if fault["fault"] != "http_error":
        return str(fault["fault"])
    return f"http_error {fault['status']}" + (" image" if "image" in fault["message"] else "")


def note_what_was_played(script: list[JsonDict], played: Played) -> None:
    """Statistics (``--hypothesis-show-statistics``): which faults and calls the run reached."""
    for item in script[: played.session.fake.turns_played]:
        if "fault" in item:
            event(f"fault: {fault_label(item)}")
        elif sum("tool_use" in b for b in item["content"]) >= 2:
            event("several tool calls in one turn")
    if played.aborted_prompt is not None:
        event("aborted mid-prompt")


# ---------------------------------------------------------------------------------------------
# The properties


@settings(PROFILE)
@given(script=scripts, prompts=prompts_with_images, options=engine_settings, hooks=hook_names, abort_at=abort_points)
def test_every_generated_run_keeps_the_loop_invariants(
    script: list[JsonDict], prompts: list[Any], options: JsonDict, hooks: str, abort_at: int | None
) -> None:
    with tempfile.TemporaryDirectory(prefix="loop-property-") as temp:
        played = asyncio.run(play(Path(temp), script, prompts=prompts, options=options, hooks=hooks, abort_at=abort_at))
        check_pairing(played.session.requests)
        check_terminals(played)
        yielded = [item for items in played.per_prompt for item in items if isinstance(item, Message)]
        check_transcript(read_records(played.session.session_dir / "transcript.jsonl"), yielded)
        check_no_real_sleep(played)
        note_what_was_played(script, played)


async def record_and_replay(
    root: Path,
    script: list[JsonDict],
    *,
    prompts: list[str],
    options: JsonDict,
    interrupt: tuple[InterruptAt, int] | None,
) -> tuple[Bundle, SessionRun]:
    """Record ``script`` as a bundle through the loopback fake server, then replay it offline."""
    workspace = root / "workspace"
    for name, text in FILES.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    # A recording refuses a script that runs out of turns, so closing answers follow the generated
    # turns: each ends its prompt, or, under a token budget, is one of the few continuations
    # before the loop sees diminishing returns.
    closing = [{"content": [{"text": "Done."}]}] * (8 * len(prompts))
    bundle = await record_bundle(
        root / "bundle",
        prompts=prompts,
        scenario=Scenario.from_list([*script, *closing]),
        workspace=workspace,
        settings=EngineSettings(**options),
        options=SessionOptions(interrupt=interrupt),
    )
    return bundle, await replay_bundle(bundle)


@settings(PROFILE, max_examples=RECORDED_RUNS)
@given(script=scripts, prompts=prompt_lists, options=engine_settings, interrupt=interrupts)
def test_a_recorded_run_replays_from_its_cassette_exactly(
    script: list[JsonDict], prompts: list[str], options: JsonDict, interrupt: tuple[InterruptAt, int] | None
) -> None:
    with tempfile.TemporaryDirectory(prefix="loop-property-recorded-") as temp:
        bundle, run = asyncio.run(
            record_and_replay(Path(temp), script, prompts=prompts, options=options, interrupt=interrupt)
        )
        recorded = bundle.transcript_path.read_text(encoding="utf-8")
        assert run.transcript == recorded, "the replay wrote another transcript"
        replayed = run.behaviour(bundle.path.name, bundle.spec.prompts).dumps()
        assert replayed == (bundle.path / "trace.json").read_text(encoding="utf-8"), "the replay behaved differently"
        assert run.unplayed == [], f"interactions {run.unplayed} were recorded but never replayed"
        assert len(run.results) == len(prompts) and all(r.terminal_reason in set(Terminal) for r in run.results)
        interactions = load_cassette(bundle.cassette_path).interactions
        check_pairing([i.request.body for i in interactions if i.request.path == "/v1/messages"])
        check_transcript(read_records(bundle.transcript_path))
        for result in run.results:
            event(f"terminal: {result.terminal_reason.value}")
