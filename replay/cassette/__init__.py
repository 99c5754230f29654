"""Cassettes: recorded HTTP interactions in a versioned YAML file that reads well in review.

The native format, version 1 (docs/cassettes.md has an annotated example)::

    # agent-replay cassette, format version 1 (see docs/cassettes.md)
    agent_replay_cassette: 1            # format marker and version
    recorded_paths:                     # optional: where the session ran (fingerprints normalize these)
      home: /home/ana                   #   written only when a request body mentions it
      session: /home/ana/sessions/s1
      temp: /home/ana/tmp               #   TMPDIR, written only when a body names an entry of it
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
secret first (`scrub`) and is atomic. `AgentReplaySerializer` and `AtomicPersister` plug
the format into vcrpy (`register_with_vcr`).

Versioning: a reader reads exactly its version and refuses any other with a clear error; any
change that a version-1 reader would misread or refuse bumps the version.

The package also holds what reads and writes cassettes around a session: interactions
(`interaction`), request fingerprints (`fingerprints`), path placeholders (`placeholders`),
scrubbing (`scrub`), decoding compressed bodies (`content_encoding`), scanning a file for
secrets left (`secret_scan`), recording through vcrpy (`record`; record mode rewrite's splice in
`rewrite`), replaying through an
``httpx2`` transport (`transport`) and the respx adapter (`respx_adapter`).

May import: `replay.redact`, `replay.storage`. Never `replay.fake` or `replay.session`.
"""

from __future__ import annotations

from replay.lazy_exports import lazy_exports

__all__, __getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CASSETTE_FORMAT_VERSION": "_model",
        "MAX_CASSETTE_BYTES": "_model",
        "RECORDED_PATH_KEYS": "_model",
        "TEMP_KEYS": "_model",
        "Cassette": "_model",
        "CassetteError": "_model",
        "CassetteSource": "_model",
        "FAULT_KEY": "_vcrpy",
        "SERIALIZER_NAME": "_vcr",
        "AgentReplaySerializer": "_vcr",
        "AtomicPersister": "_vcr",
        "interactions_from_vcr": "_vcr",
        "register_with_vcr": "_vcr",
        "dumps_cassette": "_io",
        "load_cassette": "_io",
        "loads_cassette": "_io",
        "save_cassette": "_io",
        "Normalizer": "fingerprints",
        "fingerprint": "fingerprints",
        "Interaction": "interaction",
        "RecordedFault": "interaction",
        "RecordedFaultKind": "interaction:FaultKind",
        "RecordedRequest": "interaction",
        "RecordedResponse": "interaction",
        "CassetteNotFoundError": "record",
        "CassetteRecorder": "record",
        "RecordMode": "record_mode",
        "RecordModeError": "record_mode",
        "parse_record_mode": "record_mode",
        "RewriteCounts": "rewrite",
        "CassetteMismatchError": "transport",
        "CassettePlayer": "transport",
        "CassetteTransport": "transport",
        "SyncCassetteTransport": "transport",
        "UnplayedInteractionsError": "transport",
    },
)
