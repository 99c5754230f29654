"""Cassettes: recorded HTTP interactions in a versioned YAML file that reads well in review.

The native format, version 1 (docs/cassettes.md has an annotated example)::

    # agent-replay cassette, format version 1 (see docs/cassettes.md)
    agent_replay_cassette: 1            # format marker and version
    recorded_paths:                     # optional: where the session ran (fingerprints normalize these)
      home: /home/ana                   #   written only when a request body mentions it
      session: /home/ana/sessions/s1
      workspace: /home/ana/sessions/s1/workspace
    content:                            # every message, tools and system value, stored once
      m-1f0c...: {content: Read app.py, role: user}
      t-9a2b...: [...]
    interactions:
    - request:
        method: POST
        uri: https://api.anthropic.com/v1/messages
        fingerprint: 5be1...            # SHA-256 of method, path and normalized body
        headers: {anthropic-version: '2026-10-21', content-type: application/json}
        body:                           # the JSON body, keys sorted, with references:
          messages: {$refs: [m-1f0c...]}          #   or {$extends: <earlier index>, $then: [...]}
          model: claude-sonnet-4-6
          tools: {$ref: t-9a2b...}
      response:
        status: 200
        headers: {content-type: text/event-stream, request-id: req_01}
        kind: sse                       # sse | json | text | binary (base64) | empty
        events:                         # sse: a list of events; otherwise body:
        - {event: message_start, data: {...}}
        fault: {kind: dropped_connection, after_events: 3}   # optional

Rules: message content goes into ``content`` under ``m-`` + 16 hex digits of the SHA-256 of its
canonical JSON (``t-``/``s-`` for tools and system longer than 64 characters); a request lists
keys, and when its messages continue an earlier request's list it says so with ``$extends``, so
the file grows linearly with the session while vcrpy's grows quadratically. Expanding gives
back exactly the original body. The same interactions always give the same bytes.

Reading checks everything: the version, every content key against the hash of its value, every
reference, and every stored fingerprint against its expanded body; safe YAML only (no tags, no
aliases), at most `MAX_CASSETTE_BYTES`. Any problem is a `CassetteError` naming the file, the
problem and what to do. Plain vcrpy cassettes (YAML or JSON) are read too. Writing scrubs every
secret first (`replay.scrub`) and is atomic. `AgentReplaySerializer` and `AtomicPersister` plug
the format into vcrpy (`register_with_vcr`).

Versioning: a reader reads exactly its version and refuses any other with a clear error; any
change that a version-1 reader would misread or refuse bumps the version.
"""

from replay.cassette._io import atomic_write_text, dumps_cassette, load_cassette, loads_cassette, save_cassette
from replay.cassette._model import (
    CASSETTE_FORMAT_VERSION,
    MAX_CASSETTE_BYTES,
    RECORDED_PATH_KEYS,
    Cassette,
    CassetteError,
    CassetteSource,
)
from replay.cassette._vcr import (
    SERIALIZER_NAME,
    AgentReplaySerializer,
    AtomicPersister,
    interactions_from_vcr,
    register_with_vcr,
)
from replay.cassette._vcrpy import FAULT_KEY

__all__ = [
    "CASSETTE_FORMAT_VERSION",
    "FAULT_KEY",
    "MAX_CASSETTE_BYTES",
    "RECORDED_PATH_KEYS",
    "SERIALIZER_NAME",
    "AgentReplaySerializer",
    "AtomicPersister",
    "Cassette",
    "CassetteError",
    "CassetteSource",
    "atomic_write_text",
    "dumps_cassette",
    "interactions_from_vcr",
    "load_cassette",
    "loads_cassette",
    "register_with_vcr",
    "save_cassette",
]
