"""Session bundles, the folders that hold a recorded session: their layout and loading
(`bundle`), the one rule that sets a session up (`session_setup`), recording one
(`recording`), running its session again (`session_run`), comparing two (`bundle_diff`),
re-executing one against its recording (`runner`, judged by `judge`), accepting its new
behaviour from the first divergence (`bundle_update`), re-recording (`rerecord`), checking a
whole library (`verify`), the library's coverage of the loop (`library_coverage`), scrubbing
bundles (`scrub_files`), swapping a rewritten bundle into place (`bundle_swap`), and the demo
(`demo`).

May import: `replay.trace`, `replay.cassette`, `replay.fake`, `replay.schema`, `replay.redact`,
`replay.storage`, `engine`.
"""

from __future__ import annotations

from replay.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Bundle": "bundle",
        "BundleError": "bundle",
        "SessionRun": "session_run",
        "SessionSpec": "bundle",
        "load_bundle": "bundle",
        "record_bundle": "recording",
        "replay_bundle": "session_run",
        "diff_bundles": "bundle_diff",
        "coverage": "library_coverage",
        "CoverageReport": "library_coverage",
        "run_bundle": "runner",
        "RunReport": "runner",
        "Verdict": "runner",
    },
)
