"""The names of a bundle's files, in a module of their own: finding bundles (``replay verify``)
and scanning them for secrets (``replay scrub --check``) need the names but not the SDK that
loading a bundle imports."""

from __future__ import annotations

__all__ = [
    "BUNDLE_FILES",
    "CASSETTE_FILE",
    "SCENARIO_FILE",
    "SESSION_FILE",
    "TRACE_JSON_FILE",
    "TRACE_TEXT_FILE",
    "TRANSCRIPT_FILE",
    "WORKSPACE_DIR",
]

CASSETTE_FILE = "cassette.yaml"
TRANSCRIPT_FILE = "transcript.jsonl"
SESSION_FILE = "session.json"
SCENARIO_FILE = "scenario.yaml"
TRACE_JSON_FILE = "trace.json"
TRACE_TEXT_FILE = "trace.txt"
WORKSPACE_DIR = "workspace"
# The files a recording writes beside workspace/ (and replaces on a re-recording).
BUNDLE_FILES = (CASSETTE_FILE, TRANSCRIPT_FILE, SESSION_FILE, SCENARIO_FILE, TRACE_JSON_FILE, TRACE_TEXT_FILE)
