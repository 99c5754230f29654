"""Hostile input: bundles and cassettes from strangers are refused with one clear sentence, before
anything is copied or run; bodies of every kind are stored and replayed exactly, or refused.

Refusals already specified elsewhere are not repeated here: the python tag, the alias bomb, the
size limit of `load_cassette`, a hand-edited content entry and a stored fingerprint that disagrees
with its body in a cassette file are in test_cassette_errors.py; tool-level path checks are in
tests/engine/tools/.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import os
import shutil
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import replay.cassette._io as cassette_io
import replay.session.session_run as session_module
from replay.cassette import Cassette, CassetteError, dumps_cassette, load_cassette, loads_cassette
from replay.cassette._vcr import AtomicPersister
from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse
from replay.cassette.record import CassetteRecorder, RecordMode
from replay.fake.scenario import Scenario
from replay.session.bundle import BundleError, load_bundle
from replay.session.recording import record_bundle
from replay.session.runner import run_bundle
from replay.session.session_run import replay_bundle
from replay.session.verify import ERROR, verify_bundle

NOTES = "# Notes\nThe parser accepts trailing commas.\n"
# The model reads a file through a link that stays inside the workspace: such links are kept.
TURNS = [
    {"content": [{"text": "Reading."}, {"tool_use": {"name": "Read", "input": {"file_path": "docs/link.md"}}}]},
    {"content": [{"text": "Done."}]},
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One good bundle, recorded once; each test works on its own copy."""
    root = tmp_path_factory.mktemp("recorded")
    workspace = root / "source-workspace"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "notes.md").write_text(NOTES)
    (workspace / "docs" / "link.md").symlink_to("../notes.md")
    asyncio.run(
        record_bundle(
            root / "bundle", prompts=["read the notes"], scenario=Scenario.from_list(TURNS), workspace=workspace
        )
    )
    return root / "bundle"


@pytest.fixture
def bundle(recorded: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(recorded, copy, symlinks=True)
    return copy


@pytest.fixture
def nothing_is_copied_or_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test if a replay copies the workspace or starts the engine."""
    started: list[str] = []

    def copytree(*args: Any, **kwargs: Any) -> None:
        started.append("copy")
        raise AssertionError("the workspace was copied")

    async def run_session(*args: Any, **kwargs: Any) -> None:
        started.append("run")
        raise AssertionError("the session was run")

    monkeypatch.setattr(session_module.shutil, "copytree", copytree)
    monkeypatch.setattr(session_module, "run_session", run_session)
    return started


def refusal(bundle: Path) -> str:
    """The BundleError that loading ``bundle`` raises, checked to be one sentence naming a file in it."""
    with pytest.raises(BundleError) as caught:
        load_bundle(bundle)
    message = str(caught.value)
    assert message.startswith(str(bundle)), message
    assert message.endswith(".") and "\n" not in message, message
    return message


def edit_session(bundle: Path, **changes: Any) -> None:
    path = bundle / "session.json"
    document = json.loads(path.read_text())
    for key, value in changes.items():
        if key in document:
            document[key] = value
        else:
            document["settings"][key] = value
    path.write_text(json.dumps(document))


# ---------------------------------------------------------------------------------------------
# Links, special files and paths in a bundle


def test_a_bundle_with_a_link_that_stays_inside_its_workspace_loads_and_replays(bundle: Path) -> None:
    assert os.readlink(bundle / "workspace" / "docs" / "link.md") == "../notes.md"

    run = asyncio.run(replay_bundle(bundle))

    assert "The parser accepts trailing commas." in run.transcript
    assert run.transcript == (bundle / "transcript.jsonl").read_text()


def test_a_link_to_an_absolute_path_is_refused_before_anything_is_copied_or_run(
    bundle: Path, nothing_is_copied_or_run: list[str]
) -> None:
    link = bundle / "workspace" / "passwd"
    link.symlink_to("/etc/passwd")

    assert refusal(bundle) == (
        f"{link} is a symbolic link to the absolute path '/etc/passwd'; a bundle's workspace may hold only relative "
        "links that stay inside it, so the bundle is refused — replace the link by the file itself."
    )
    with pytest.raises(BundleError, match="is a symbolic link to the absolute path"):
        asyncio.run(replay_bundle(bundle))
    assert nothing_is_copied_or_run == []


def test_an_absolute_link_is_refused_even_when_it_points_inside_the_workspace(bundle: Path) -> None:
    # From the temp copy a replay runs in, it would still point at the bundle's own file.
    link = bundle / "workspace" / "notes-again.md"
    link.symlink_to(bundle / "workspace" / "notes.md")

    assert f"{link} is a symbolic link to the absolute path '{bundle}/workspace/notes.md';" in refusal(bundle)


@pytest.mark.parametrize("target", ["../../../outside.txt", "../../session.json", "../../../../../../etc/passwd"])
def test_a_relative_link_that_leads_out_of_the_workspace_is_refused(bundle: Path, target: str) -> None:
    (bundle / "workspace" / "deep").mkdir()
    link = bundle / "workspace" / "deep" / "escape"
    link.symlink_to(target)

    assert refusal(bundle) == (
        f"{link} is a symbolic link to {target!r}, which leads outside the workspace; a bundle's workspace may hold "
        "only links that stay inside it, so the bundle is refused — replace the link by the file itself."
    )


def test_a_link_that_reads_as_inside_but_leads_out_through_another_link_is_refused(bundle: Path) -> None:
    # here -> "." makes "here/../session.json" the bundle's session.json, although its text
    # normalizes to workspace/session.json.
    (bundle / "workspace" / "here").symlink_to(".")
    link = bundle / "workspace" / "sneaky"
    link.symlink_to("here/../session.json")

    assert "is a symbolic link to 'here/../session.json', which leads outside the workspace;" in refusal(bundle)


def test_a_replay_of_a_bundle_object_checks_its_workspace_again_before_copying(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_bundle(bundle)
    (bundle / "workspace" / "later").symlink_to("/")
    copies: list[Any] = []
    monkeypatch.setattr(session_module.shutil, "copytree", lambda *a, **k: copies.append(a))

    with pytest.raises(BundleError, match=r"workspace/later is a symbolic link to the absolute path '/'"):
        asyncio.run(replay_bundle(loaded))
    assert copies == []


def test_a_named_pipe_in_the_workspace_is_refused(bundle: Path) -> None:
    fifo = bundle / "workspace" / "pipe"
    os.mkfifo(fifo)

    assert refusal(bundle) == (
        f"{fifo} is a named pipe (FIFO), not a file or a folder; a bundle's workspace holds only files, folders and "
        "links that stay inside it, so the bundle is refused."
    )


def test_a_workspace_folder_that_is_itself_a_link_is_refused(bundle: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    (bundle / "workspace").rename(elsewhere)
    (bundle / "workspace").symlink_to(elsewhere)

    assert refusal(bundle) == (
        f"{bundle}/workspace is a symbolic link; a bundle's workspace/ must be a real folder inside the bundle, so "
        "the bundle is refused before anything is copied or run."
    )


def test_a_bundle_file_that_links_outside_the_bundle_is_refused(bundle: Path, tmp_path: Path) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (bundle / "cassette.yaml").unlink()
    (bundle / "cassette.yaml").symlink_to(secret)

    assert refusal(bundle) == (
        f"{bundle}/cassette.yaml is a symbolic link to '{secret}', outside the bundle; a bundle's files must be "
        "inside its folder, so the bundle is refused before anything is read or run."
    )


async def test_recording_from_a_workspace_with_a_link_out_refuses_and_writes_no_bundle(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "home").symlink_to("../..")

    with pytest.raises(BundleError, match=r"workspace/home is a symbolic link to '\.\./\.\.', which leads outside"):
        await record_bundle(tmp_path / "out", prompts=["hi"], scenario=Scenario.from_list(TURNS), workspace=workspace)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["workspace"]


@pytest.mark.parametrize("scenario", ["../../etc/passwd", "/etc/passwd", "other/scenario.yaml"])
def test_a_session_file_naming_a_scenario_elsewhere_is_refused(bundle: Path, scenario: str) -> None:
    edit_session(bundle, scenario=scenario)

    assert refusal(bundle) == (
        f"{bundle}/session.json names the scenario {scenario!r}; a bundle's scenario is always the scenario.yaml "
        "beside session.json (or null), never a path elsewhere, so the bundle is refused."
    )


@pytest.mark.parametrize("pattern", ["../secrets/*.md", "/etc/passwd", "docs/../../x.md"])
def test_a_session_file_whose_memory_paths_leave_the_workspace_is_refused(bundle: Path, pattern: str) -> None:
    edit_session(bundle, memory_paths=["CLAUDE.md", pattern])

    assert refusal(bundle) == (
        f"{bundle}/session.json has the memory path {pattern!r} in its settings, which leads outside the workspace; "
        "memory paths are patterns relative to workspace/ without '..', so the bundle is refused."
    )


async def test_a_cassette_scripting_a_tool_use_id_with_dotdot_cannot_write_outside_tool_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every temp folder of the recording and the replay lives here, so a write that escaped
    # tool-results/ would be left behind.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "big.txt").write_text("match this line\n" * 2_000)
    tool_id = "../../../escape"
    grep = {"name": "Grep", "id": tool_id, "input": {"pattern": "match", "output_mode": "content"}}
    turns = [{"content": [{"tool_use": grep}]}, {"content": [{"text": "Done."}]}]
    bundle = await record_bundle(
        tmp_path / "bundle", prompts=["grep"], scenario=Scenario.from_list(turns), workspace=workspace
    )

    run = await replay_bundle(bundle)

    refused = (
        "(the full output could not be saved: Cannot save the result of tool_use '../../../escape': the id is empty "
        "or contains a path separator or '..', so it cannot be used as a file name.)"
    )
    assert json.dumps(refused)[1:-1] in run.transcript
    assert run.transcript == bundle.transcript_path.read_text()
    assert list(scratch.iterdir()) == []
    assert [p for p in tmp_path.rglob("escape*")] == []


# ---------------------------------------------------------------------------------------------
# Cassettes: tags, aliases, nesting, size and a fingerprint index that disagrees


def cassette_message(text: str, name: str = "hostile.yaml") -> str:
    with pytest.raises(CassetteError) as caught:
        loads_cassette(text, source_name=name)
    message = str(caught.value)
    assert message.startswith(f"{name} ") and message.endswith(".") and "\n" not in message
    return message


@pytest.mark.parametrize(
    ("tag", "named"),
    [
        ("!!python/object:os.system {}", "tag:yaml.org,2002:python/object:os.system"),
        ("!!python/name:os.system ''", "tag:yaml.org,2002:python/name:os.system"),
        ("!!python/object/new:subprocess.Popen [[id]]", "tag:yaml.org,2002:python/object/new:subprocess.Popen"),
        ("!secret value", "!secret"),
        ("!!set {a, b}", "tag:yaml.org,2002:set"),
        ("!!timestamp 2001-12-14", "tag:yaml.org,2002:timestamp"),
    ],
)
def test_every_tag_beyond_plain_data_is_refused(tag: str, named: str) -> None:
    assert cassette_message(f"agent_replay_cassette: 1\ncontent: {tag}\n# end of cassette\n") == (
        f"hostile.yaml uses a YAML tag that safe loading refuses (could not determine a constructor for the tag "
        f"'{named}' at line 2, column 10); a cassette holds plain data only — re-record it."
    )


def test_binary_data_in_a_native_body_is_refused() -> None:
    text = (
        "agent_replay_cassette: 1\ncontent: {}\ninteractions:\n"
        "- request: {method: POST, uri: 'https://x/v1/messages', body: !!binary aGk=}\n"
        "  response: {status: 200, kind: empty}\n# end of cassette\n"
    )
    assert cassette_message(text) == (
        "hostile.yaml is invalid at interactions[0].request.body: recorded data holds only JSON values, not bytes; "
        "fix that entry, or re-record the cassette."
    )


@pytest.mark.parametrize(
    "text",
    ["base: &b {a: 1}\nagent_replay_cassette: 1\ncontent:\n  <<: *b\n# end of cassette\n", "loop: &a [*a]\n"],
    ids=["merge-key", "self-reference"],
)
def test_merge_keys_and_self_references_are_aliases_too(text: str) -> None:
    assert "uses a YAML alias (an alias to the node at line 1, column " in cassette_message(text)


def test_data_nested_without_bound_is_refused_in_yaml_and_in_json() -> None:
    deep_yaml = "x: " + "[" * 100_000 + "]" * 100_000 + "\n"
    deep_json = "[" * 100_000 + "]" * 100_000

    assert "is not valid YAML (exceeded maximum nesting depth at line 1" in cassette_message(deep_yaml)
    assert cassette_message(deep_json, "c.json") == (
        "c.json nests its data too deeply to be a cassette; restore it from version control or re-record it."
    )


def test_text_over_the_size_limit_is_refused_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cassette_io, "MAX_CASSETTE_BYTES", 1024)
    assert cassette_message("a: " + "b" * 2048) == (
        "hostile.yaml is over the 1024 bytes limit; check that it is a cassette."
    )


def test_vcrpys_own_loader_refuses_a_file_over_the_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("replay.cassette._vcr.MAX_CASSETTE_BYTES", 1024)
    path = tmp_path / "c.yaml"
    path.write_text("#" * 2048)

    with pytest.raises(CassetteError) as caught:
        AtomicPersister.load_cassette(path, serializer=None)
    assert str(caught.value) == f"{path} is over the cassette size limit; check that it is a cassette."


def test_a_bundle_whose_cassette_is_over_the_size_limit_is_refused_by_replay(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cassette_io, "MAX_CASSETTE_BYTES", 1024)
    size = (bundle / "cassette.yaml").stat().st_size

    with pytest.raises(CassetteError) as caught:
        asyncio.run(replay_bundle(bundle))
    assert str(caught.value) == (
        f"{bundle}/cassette.yaml is {size} bytes, over the 1024 bytes limit; check that it is a cassette."
    )


def test_a_stored_content_encoding_header_is_refused_as_the_body_is_kept_decoded() -> None:
    # The client would try to gunzip the replayed (plain) body and fail with a bare zlib error.
    text = dumps_cassette(Cassette(interactions=[json_interaction("/v1/models", {"data": []})]))
    edited = text.replace("headers: {content-type: application/json}", "headers: {Content-Encoding: gzip}", 1)

    assert cassette_message(edited) == (
        "hostile.yaml is invalid at interactions[0].response.headers: has content-encoding: gzip, but a cassette "
        "keeps every body decoded, so the replayed body could not be decompressed; remove that header (the body is "
        "already decoded), or re-record the cassette."
    )


def test_a_response_with_a_content_encoding_header_is_not_written() -> None:
    interaction = json_interaction("/v1/models", {"data": []}, headers={"content-encoding": "br"})
    with pytest.raises(CassetteError, match=r"cannot be written: interactions\[0\]\.response\.headers: has content-"):
        dumps_cassette(Cassette(interactions=[interaction]))


def test_an_unknown_content_encoding_in_a_vcrpy_cassette_is_named(tmp_path: Path) -> None:
    document = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "GET", "uri": "https://x/", "body": None, "headers": {}},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Content-Encoding": ["zstd"]},
                    "body": {"string": "(\u00b5/\u00fd"},
                },
            }
        ],
    }
    assert cassette_message(json.dumps(document), "c.json") == (
        "c.json is invalid at interactions[0].response: its body uses the content-encoding 'zstd', which cannot be "
        "decoded; record it again without that encoding."
    )


def test_a_replay_of_a_bundle_whose_cassette_body_was_edited_is_refused_naming_the_interaction(bundle: Path) -> None:
    cassette = bundle / "cassette.yaml"
    cassette.write_text(cassette.read_text().replace("max_tokens: 8000", "max_tokens: 9000", 1))

    with pytest.raises(CassetteError) as caught:
        asyncio.run(run_bundle(bundle))
    message = str(caught.value)
    assert message.startswith(
        f"{cassette} is invalid at interactions[0]: the fingerprint index disagrees with its bodies (stored "
    )
    assert message.endswith("delete that fingerprint line to accept the edit.")
    summary = verify_bundle(bundle)
    assert (summary.verdict, summary.error) == (ERROR, message)


def test_a_fingerprint_edited_without_its_body_is_detected_too(bundle: Path) -> None:
    cassette = bundle / "cassette.yaml"
    lines = cassette.read_text().split("\n")
    index = next(n for n, line in enumerate(lines) if line.strip().startswith("fingerprint:"))
    lines[index] = lines[index].split(":")[0] + ": " + "ab" * 32
    cassette.write_text("\n".join(lines))

    with pytest.raises(CassetteError, match=r"the fingerprint index disagrees with its bodies \(stored abababababab…"):
        load_cassette(cassette)


# ---------------------------------------------------------------------------------------------
# Bodies: huge, invalid UTF-8, binary, compressed — recorded for real over loopback, replayed


def json_interaction(path: str, body: Any, *, headers: dict[str, str] | None = None) -> Interaction:
    return Interaction(
        RecordedRequest(method="GET", uri=f"https://api.anthropic.com{path}"),
        RecordedResponse(
            status=200, headers=headers or {"content-type": "application/json"}, kind=BodyKind.JSON, body=body
        ),
    )


HUGE_TEXT = "All work and no play. " * 200_000  # 4.4 MB
HUGE_JSON = json.dumps({"type": "message", "content": [{"type": "text", "text": HUGE_TEXT}]}).encode()
ZIPPED = b'{"answer": "it was gzip-encoded"}'
DEFLATED = b"deflate-encoded plain text\n"
BINARY = bytes(range(256)) * 64
LATIN1 = "café, naïve, 10 € — not UTF-8\n".encode("latin-1", errors="replace") + b"\xff\xfe\x00"

JSON_HEADERS = {"content-type": "application/json"}
# path -> (content-type, content-encoding, raw bytes on the wire)
ROUTES: dict[str, tuple[str, str | None, bytes]] = {
    "/gzip": ("application/json", "gzip", gzip.compress(ZIPPED)),
    "/deflate": ("text/plain", "deflate", zlib.compress(DEFLATED)),
    "/binary": ("application/octet-stream", None, BINARY),
    "/not-utf8": ("text/plain; charset=utf-8", None, LATIN1),
    "/huge": ("application/json", None, HUGE_JSON),
}
try:
    import brotli

    ROUTES["/brotli"] = ("application/json", "br", brotli.compress(b'{"answer": "it was brotli-encoded"}'))
except ImportError:  # pragma: no cover - depends on the environment
    brotli = None


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        content_type, encoding, body = ROUTES[self.path]
        self._answer(content_type, encoding, body)

    def do_POST(self) -> None:
        received = self.rfile.read(int(self.headers["content-length"]))
        self._answer("application/json", None, json.dumps({"received_bytes": len(received)}).encode())

    def _answer(self, content_type: str, encoding: str | None, body: bytes) -> None:
        self.send_response(200)
        self.send_header("content-type", content_type)
        if encoding:
            self.send_header("content-encoding", encoding)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()


async def fetch_all(cassette: Path, mode: RecordMode, base: str, paths: list[str]) -> list[tuple[str, bytes]]:
    """Each path's content-type and decoded body, recorded into or replayed from ``cassette``."""
    answers = []
    with CassetteRecorder(cassette, mode=mode, strict=True) as recorder:
        async with recorder.async_client() as client:
            for path in paths:
                if path == "/echo":
                    response = await client.post(
                        base + path, content=HUGE_JSON, headers={"content-type": "application/json"}
                    )
                else:
                    response = await client.get(base + path)
                answers.append((response.headers["content-type"], response.content))
    return answers


async def test_huge_binary_invalid_utf8_and_compressed_bodies_replay_as_they_were_received(
    tmp_path: Path, server: str
) -> None:
    paths = ["/gzip", "/deflate", "/binary", "/not-utf8", "/huge", "/echo", *(["/brotli"] if brotli else [])]
    cassette = tmp_path / "bodies.yaml"

    live = await fetch_all(cassette, RecordMode.ALL, server, paths)
    replayed = await fetch_all(cassette, RecordMode.NONE, server, paths)

    stored = {i.request.path: i.response for i in load_cassette(cassette).interactions}
    for path, (live_type, live_body), (replayed_type, replayed_body) in zip(paths, live, replayed, strict=True):
        assert replayed_type == live_type, path
        if stored[path].kind is BodyKind.JSON:
            # JSON is kept as data: the same value, written compactly.
            assert json.loads(replayed_body) == json.loads(live_body), path
        else:
            assert replayed_body == live_body, path
        assert "content-encoding" not in stored[path].headers, path
    assert live[0][1] == ZIPPED and live[1][1] == DEFLATED
    assert stored["/binary"].kind is BodyKind.BINARY and base64.b64decode(stored["/binary"].body) == BINARY
    assert stored["/not-utf8"].kind is BodyKind.BINARY and stored["/not-utf8"].body_bytes() == LATIN1
    assert stored["/huge"].body["content"][0]["text"] == HUGE_TEXT
    assert json.loads(live[5][1]) == {"received_bytes": len(HUGE_JSON)}
    assert cassette.stat().st_size > 2 * len(HUGE_JSON)  # both huge bodies are in the file


@pytest.mark.skipif(brotli is None, reason="the brotli package is not installed")
async def test_a_brotli_body_is_stored_decoded(tmp_path: Path, server: str) -> None:
    cassette = tmp_path / "brotli.yaml"
    [(_, body)] = await fetch_all(cassette, RecordMode.ALL, server, ["/brotli"])

    assert body == b'{"answer": "it was brotli-encoded"}'
    assert load_cassette(cassette).interactions[0].response.body == {"answer": "it was brotli-encoded"}


async def test_a_binary_request_body_is_refused_and_nothing_is_written(tmp_path: Path, server: str) -> None:
    cassette = tmp_path / "binary-request.yaml"

    with pytest.raises(CassetteError) as caught:
        with CassetteRecorder(cassette, mode=RecordMode.ALL) as recorder:
            async with recorder.async_client() as client:
                await client.post(server + "/upload", content=b"\xff\xfe\x00 raw bytes")
    assert str(caught.value) == (
        "the recording cannot be stored: interactions[0].request.body: is binary (not UTF-8); cassettes hold JSON "
        "or text request bodies; send the request body as JSON or UTF-8 text, or leave that request out of the "
        "cassette."
    )
    assert not cassette.exists()
