"""Accepting new behaviour (``replay run --update``): a drifted bundle is re-recorded from its
first divergence, and converges — the next ``replay run`` is a MATCH.

Under the bundle's writer lock, the bundle is replayed; if it drifted, a staging copy runs the
session again in record mode ``rewrite`` (`replay.cassette.rewrite`): every interaction before
the first request that differs is kept, the session continues against the bundle's source (the
fake model serving its ``scenario.yaml``, positioned after the kept requests; or, for a live
bundle, the real API, which needs ``ANTHROPIC_API_KEY`` only if a request actually differs),
the rest is recorded and what was not requested is pruned. The cassette, transcript and traces
are rewritten through the one redaction pass; ``session.json``, ``scenario.yaml`` and the
workspace stay as they are. The staged bundle must replay to a MATCH before it is swapped in
whole; otherwise nothing is written.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from replay.cassette import TEMP_KEYS, load_cassette
from replay.cassette.fingerprints import temp_folders
from replay.cassette.record_mode import RecordMode
from replay.cassette.rewrite import DivergenceHook, KeptRequest, RewriteCounts
from replay.fake.model import FakeModel
from replay.fake.scenario import load_scenario
from replay.fake.server import FakeModelServer
from replay.redact.files import redact_tree, write_redacted
from replay.session.bundle import (
    CASSETTE_FILE,
    FAKE_SERVER_BASE_URL,
    PLACEHOLDER_KEY,
    SCENARIO_FILE,
    SESSION_FILE,
    TRACE_JSON_FILE,
    TRANSCRIPT_FILE,
    WORKSPACE_DIR,
    Bundle,
    BundleError,
    load_bundle,
)
from replay.session.bundle_layout import TRACE_TEXT_FILE
from replay.session.bundle_swap import new_staging, swap_into_place, sweep_stale
from replay.session.judge import RunReport, judge_bundle
from replay.session.recording import exhausted_message
from replay.session.session_run import SessionRun, run_session
from replay.storage.bundle_lock import bundle_write_lock
from replay.trace.behaviour import render_text

__all__ = ["update_bundle"]


async def update_bundle(
    path: Path,
    *,
    wait: float = 0.0,
    on_wait: Callable[[int | None], None] | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
) -> RunReport:
    """Replay the bundle at ``path`` and, if it drifted, re-record it from its first divergence
    and swap it in (``report.updated``, ``report.rewrite`` the counts). A live bundle records
    with ``api_key`` and ``base_url`` (default: ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``).
    A bundle that matches keeps its recording; only trace files in an older form of the trace
    are rewritten. Bad input, or a live bundle that needs the API without a key, raises
    ``BundleError`` and leaves the bundle as it was."""
    started = time.perf_counter()
    folder = Path(path)
    with bundle_write_lock(folder, wait=wait, on_wait=on_wait):
        bundle = load_bundle(folder)
        report = await judge_bundle(bundle)
        if report.matched:
            _refresh_traces(bundle, report)
            report.seconds = time.perf_counter() - started
            return report
        _check_same_temp_folder(bundle)
        sweep_stale(folder)
        staging = new_staging(folder)
        try:
            shutil.copytree(bundle.path, staging, symlinks=True, dirs_exist_ok=True)
            # The update writes the whole bundle anew, so what it keeps goes through the one
            # redaction pass too, before the session runs in it: a secret planted in the workspace
            # or in session.json since the recording never reaches the new bundle (the cassette,
            # transcript and traces are rewritten, scrubbed, below).
            redact_tree(staging / WORKSPACE_DIR)
            for name in (SESSION_FILE, SCENARIO_FILE):
                if (staging / name).is_file():
                    write_redacted(staging / name, (staging / name).read_text(encoding="utf-8"))
            session = report.recorded_trace.session if report.recorded_trace is not None else folder.name
            counts = await _rerecord_from_divergence(
                load_bundle(staging), session=session, source=_source(bundle, api_key=api_key, base_url=base_url)
            )
            check = await judge_bundle(load_bundle(staging))
            if not check.matched:
                shutil.rmtree(staging, ignore_errors=True)
                first = check.differences[0] if check.differences else "it drifted"
                report.differences.append(
                    f"Not updated: the re-recorded bundle does not replay to a MATCH ({first}); the session is not "
                    "deterministic, so nothing was written."
                )
                report.seconds = time.perf_counter() - started
                return report
            swap_into_place(staging, folder)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    report.updated, report.rewrite = True, counts
    report.seconds = time.perf_counter() - started
    return report


def _check_same_temp_folder(bundle: Bundle) -> None:
    """An update keeps the cassette's recorded temp folder (its kept requests name its entries)
    and records new requests that name this process's: one cassette cannot say both, so a bundle
    recorded under another TMPDIR is updated under that one."""
    recorded = load_cassette(bundle.path / CASSETTE_FILE).recorded_paths
    temp = [recorded[key] for key in TEMP_KEYS if recorded.get(key)]
    own = {folder.rstrip("/") for folder in temp_folders()}
    if temp and not own & {folder.rstrip("/") for folder in temp}:
        raise BundleError(
            f"{bundle.path}: its cassette was recorded under TMPDIR={temp[0]}, and this process's is "
            f"{temp_folders()[0]}; run the update with TMPDIR={temp[0]} (nothing was changed)."
        )


def _refresh_traces(bundle: Bundle, report: RunReport) -> None:
    """A bundle that matches keeps its recording; but its trace files may be in an older form
    of the trace (one recorded before the cache audit, whose absence the comparison forgives).
    Rewrite them as this replay renders them, whole: a staging copy swapped in."""
    trace = report.trace
    if trace is None:
        return
    fresh = {TRACE_JSON_FILE: trace.dumps(), TRACE_TEXT_FILE: render_text(trace)}
    if all(_reads(bundle.path / name) == text for name, text in fresh.items()):
        return
    sweep_stale(bundle.path)
    staging = new_staging(bundle.path)
    try:
        shutil.copytree(bundle.path, staging, symlinks=True, dirs_exist_ok=True)
        for name, text in fresh.items():
            write_redacted(staging / name, text)
        swap_into_place(staging, bundle.path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report.updated = True
    report.differences.append(
        f"{TRACE_JSON_FILE} and {TRACE_TEXT_FILE} rewritten in this replay's form of the trace "
        "(the cassette and the transcript already matched)."
    )


def _reads(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class _Source:
    """Where requests go from the divergence on."""

    bundle: Bundle
    api_key: str | None
    base_url: str | None


def _source(bundle: Bundle, *, api_key: str | None, base_url: str | None) -> _Source:
    if not bundle.spec.live:
        return _Source(bundle, None, None)
    return _Source(
        bundle,
        api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY") or None,
        base_url if base_url is not None else os.environ.get("ANTHROPIC_BASE_URL") or None,
    )


async def _rerecord_from_divergence(staged: Bundle, *, session: str, source: _Source) -> RewriteCounts:
    """Run the staged bundle's session in record mode rewrite, in place, and write its
    transcript and traces."""
    if source.bundle.spec.live:
        run = await _run_live(staged, source)
    else:
        run = await _run_scenario(staged, source)
    assert run.rewrite is not None, "a session in record mode rewrite reports its counts"
    behaviour = run.behaviour(session, staged.spec.prompts)
    # Every file through the one redaction pass (replay.redact.redactor) before it reaches disk.
    write_redacted(staged.path / TRANSCRIPT_FILE, run.transcript)
    write_redacted(staged.path / TRACE_JSON_FILE, behaviour.dumps())
    write_redacted(staged.path / TRACE_TEXT_FILE, render_text(behaviour))
    return run.rewrite


async def _run_scenario(staged: Bundle, source: _Source) -> SessionRun:
    scenario_path = staged.path / SCENARIO_FILE
    if not scenario_path.is_file():  # enough to prune; not to record
        refusal = _Refusal(
            f"and recording from there needs its {SCENARIO_FILE}, which is missing; restore it, or re-record "
            "the bundle.",
            bundle=source.bundle,
        )
        return refusal.check(await _run_rewrite(staged, on_divergence=refusal))
    fake_model = FakeModel(load_scenario(scenario_path))

    server = FakeModelServer(fake_model)
    base_url = server.start()
    try:
        run = await _run_rewrite(
            staged,
            base_url=base_url,
            stored_base_url=(base_url, FAKE_SERVER_BASE_URL),
            on_divergence=fake_model.fast_forward,
            fake_model=fake_model,
        )
    finally:
        server.stop()
    if fake_model.exhausted is not None:
        # As for a recording: the loop ends `completed` after the server's 500, which would look
        # like a finished session.
        folder = source.bundle.path
        raise BundleError(exhausted_message(fake_model.exhausted, folder / SCENARIO_FILE, folder))
    return run


async def _run_live(staged: Bundle, source: _Source) -> SessionRun:
    if source.api_key is not None:
        return await _run_rewrite(staged, api_key=source.api_key, base_url=source.base_url)
    refusal = _Refusal(
        "and recording from there needs the real API; set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another "
        "endpoint).",
        bundle=source.bundle,
    )
    return refusal.check(await _run_rewrite(staged, base_url=source.base_url, on_divergence=refusal))


async def _run_rewrite(
    staged: Bundle,
    *,
    api_key: str = PLACEHOLDER_KEY,
    base_url: str | None = None,
    stored_base_url: tuple[str, str] | None = None,
    on_divergence: DivergenceHook | None = None,
    fake_model: FakeModel | None = None,
) -> SessionRun:
    return await run_session(
        staged.spec,
        staged.path / WORKSPACE_DIR,
        cassette=staged.path / CASSETTE_FILE,
        mode=RecordMode.REWRITE,
        api_key=api_key,
        base_url=base_url,
        stored_base_url=stored_base_url,
        on_divergence=on_divergence,
        fake_model=fake_model,
    )


class _Refusal:
    """A divergence hook for a bundle whose source cannot be reached: a session that only keeps
    and prunes needs none; at the first request that differs it refuses (the engine ends that
    turn with the error, and every later request fails the same way), and `check` raises it."""

    def __init__(self, why: str, *, bundle: Bundle) -> None:
        self._why, self._bundle = why, bundle
        self.message: str | None = None

    def __call__(self, kept: Sequence[KeptRequest]) -> None:
        kind = "live bundle" if self._bundle.spec.live else "bundle"
        self.message = (
            f"Cannot update the {kind} {self._bundle.path}: request {len(kept) + 1} differs from its cassette, "
            f"{self._why} Nothing was written."
        )
        raise BundleError(self.message)

    def check(self, run: SessionRun) -> SessionRun:
        if self.message is not None:
            raise BundleError(self.message)
        return run
