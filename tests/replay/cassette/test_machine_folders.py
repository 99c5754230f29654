"""The recording machine's temp folder: recorded with the cassette when a body mentions it, and
normalized from the record, not from the TMPDIR of the machine that reads the cassette.

Saving runs in this process, whose temp folder is `temp_folders()` (this suite's, /dev/shm or
/tmp): that is the recording's. Another machine's TMPDIR is a normalizer's ``temp``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.cassette import Cassette, CassetteError, dumps_cassette, fingerprints, loads_cassette
from replay.cassette._model import normalizer_for
from replay.cassette.fingerprints import Normalizer, fingerprint, replaying, temp_folders, temp_folders_apart
from replay.cassette.interaction import BodyKind, Interaction, RecordedRequest, RecordedResponse
from replay.proxy.server import CassetteProxy

URI = "https://api.anthropic.com/v1/messages"
HERE = tempfile.gettempdir()


def asking(text: str) -> Interaction:
    body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": text}]}
    request = RecordedRequest(method="POST", uri=URI, headers={"content-type": "application/json"}, body=body)
    response = RecordedResponse(status=200, headers={"content-type": "application/json"}, kind=BodyKind.JSON, body={})
    return Interaction(request, response)


def saved_and_loaded(*interactions: Interaction, **recorded_paths: str) -> Cassette:
    cassette = Cassette(interactions=list(interactions), recorded_paths=dict(recorded_paths))
    return loads_cassette(dumps_cassette(cassette), source_name="c.yaml")


def key_of(interaction: Interaction, normalizer: Normalizer) -> str:
    request = interaction.request
    return fingerprint(request.method, request.path, request.body, normalizer=normalizer)


def test_a_body_that_mentions_an_entry_of_the_temp_folder_records_it() -> None:
    loaded = saved_and_loaded(asking(f"ls {HERE}/agent-run-1/other"))

    assert loaded.recorded_paths["temp"] == HERE
    assert set(loaded.recorded_paths) <= {"temp", "temp_resolved"}
    assert loaded.normalizer().temp == temp_folders()


def test_the_stored_fingerprint_is_the_one_the_same_session_has_under_another_tmpdir() -> None:
    here = saved_and_loaded(asking(f"ls {HERE}/agent-run-1/other"))
    elsewhere = asking("ls /srv/other-tmp/agent-run-2/other")

    # Another machine: its TMPDIR is /srv/other-tmp, and it records there.
    assert here.fingerprints() == [key_of(elsewhere, Normalizer(temp=("/srv/other-tmp",)))]
    assert here.fingerprints() == saved_and_loaded(elsewhere, temp="/srv/other-tmp").fingerprints()


@pytest.mark.parametrize(
    ("text", "recorded_paths"),
    [
        ("no folder at all", {}),
        (f"the temp folder itself: {HERE}", {}),
        (f"cat {HERE}/agent-run-1/workspace/notes.md", {"workspace": f"{HERE}/agent-run-1/workspace"}),
    ],
)
def test_a_cassette_that_names_no_entry_of_the_temp_folder_is_written_as_before(
    text: str, recorded_paths: dict[str, str]
) -> None:
    cassette = Cassette(interactions=[asking(text)], recorded_paths=recorded_paths)
    assert loads_cassette(dumps_cassette(cassette), source_name="c.yaml").recorded_paths == recorded_paths
    assert ("recorded_paths:" in dumps_cassette(cassette)) == bool(recorded_paths)


def test_a_recorded_temp_folder_is_kept_when_the_cassette_is_written_again() -> None:
    # A rewrite keeps the interactions fingerprinted under it.
    loaded = saved_and_loaded(asking("ls /srv/rec-tmp/run-1/x"), temp="/srv/rec-tmp")
    assert saved_and_loaded(*loaded.interactions, **loaded.recorded_paths).recorded_paths == {"temp": "/srv/rec-tmp"}


def test_the_recorded_temp_folder_is_normalized_and_not_this_processes() -> None:
    normalizer = normalizer_for({"temp": "/srv/rec-tmp"})

    assert normalizer.text("/srv/rec-tmp/run-1/x.txt") == "<tmp>/x.txt"
    assert normalizer.text("/srv/live-tmp/run-2/x.txt") == "/srv/live-tmp/run-2/x.txt"
    assert normalizer.text("/tmp/run-3/x.txt") == "<tmp>/x.txt"  # the usual roots, always
    assert Normalizer(temp=("/srv/live-tmp",)).text("/srv/live-tmp/run-2/x.txt") == "<tmp>/x.txt"


def test_longest_first_between_the_temp_folder_and_the_other_folders() -> None:
    # TMPDIR inside home: its entries are <tmp>, as under any other TMPDIR.
    inside_home = normalizer_for({"home": "/home/ana", "temp": "/home/ana/tmp"})
    assert inside_home.text("/home/ana/tmp/run-1/x and /home/ana/notes") == "<tmp>/x and <home>/notes"
    assert Normalizer(home="/home/ana", temp=("/home/ana/tmp",)).text("/home/ana/tmp/run-1/x") == "<tmp>/x"
    # The workspace inside TMPDIR (TMPDIR its parent's parent, or its parent): the workspace wins.
    for workspace in ("/srv/t/run-1/workspace", "/srv/t/workspace"):
        inside_temp = normalizer_for({"workspace": workspace, "temp": "/srv/t"})
        assert inside_temp.text(f"{workspace}/a.py, /srv/t/run-1/session") == "<workspace>/a.py, <tmp>/session"


def test_a_trailing_slash_or_a_link_names_the_same_folder() -> None:
    assert normalizer_for({"temp": "/srv/t/"}).text("/srv/t/run-1/x") == "<tmp>/x"
    linked = normalizer_for({"temp": "/srv/link", "temp_resolved": "/data/real"})
    assert linked.text("/srv/link/run-1/x /data/real/run-1/x") == "<tmp>/x <tmp>/x"


def test_a_replay_also_reads_the_recordings_temp_folder_and_the_rest_is_told_apart() -> None:
    recorded = normalizer_for({"temp": "/srv/rec-tmp"})
    live = replaying(Normalizer(), recorded)

    assert live.text("/srv/rec-tmp/run-1/x") == "<tmp>/x"
    assert set(live.temp_roots()) == set(Normalizer().temp_roots()) | {"/srv/rec-tmp"}
    # A cassette that records no temp folder is replayed as it was before there was one.
    assert replaying(Normalizer(), normalizer_for({})) == Normalizer(legacy=True)
    # What not every normalizer reads, a body holding it is keyed, never told sent again.
    apart = set(temp_folders_apart(recorded, live))
    assert "/srv/rec-tmp" in apart and not apart & {"/tmp", "/var/tmp"}  # the usual roots: all read them
    assert apart == set(live.temp_roots()) - set(normalizer_for({"temp": "/"}).temp_roots())  # all but the usual
    assert temp_folders_apart(normalizer_for({}), Normalizer()) == ()


@pytest.mark.parametrize(
    ("recorded_paths", "fragment"),
    [
        ("{temp: relative/tmp}", "recorded_paths.temp: expected"),
        ("{temp_resolved: [/tmp]}", "recorded_paths.temp_resolved: expected"),
        ("{tmp: /tmp}", "recorded_paths.tmp: expected workspace, session, home, temp, temp_resolved"),
    ],
)
def test_a_broken_temp_key_is_one_sentence(recorded_paths: str, fragment: str) -> None:
    text = f"agent_replay_cassette: 1\nrecorded_paths: {recorded_paths}\ninteractions: []\n# end of cassette\n"
    with pytest.raises(CassetteError) as caught:
        loads_cassette(text, source_name="c.yaml")
    message = str(caught.value)
    assert message.startswith("c.yaml ") and fragment in message and "\n" not in message


def test_an_older_cassette_without_the_key_reads_this_processes_temp_folder() -> None:
    older: dict[str, Any] = {}
    assert normalizer_for(older).temp is None
    assert normalizer_for(older).text(f"{HERE}/run-1/x") == "<tmp>/x"
    assert os.path.isabs(HERE)


def _folders_as_before(text: str, roots: tuple[tuple[str, str], ...], home: str, tmpdir: str) -> str:
    """The folders `Normalizer.text` replaced before temp folders were recorded: the roots in
    order, then the home folder, then the entries of the usual temp roots and of TMPDIR as given."""
    for path, placeholder in roots:
        if path and path in text:
            text = text.replace(path, placeholder)
    if home not in ("", "/") and home in text:
        text = text.replace(home, "<home>")
    if "/" in text:
        found = {"/tmp", "/var/tmp", "/private/tmp", "/private/var/folders", "/var/folders", tmpdir.rstrip("/")}
        alternatives = "|".join(re.escape(root) for root in sorted(found, key=len, reverse=True) if root)
        text = re.sub(rf"(?:{alternatives})/[^\s\"'/\\]+", "<tmp>", text)
    return text


# Paths only (no uuid, timestamp or duration): what follows the folders is the same code either way.
_PATHS = st.lists(
    st.sampled_from(
        ["/home/ana", "/home/ana/tmp", "/home/ana/tmp/run-a", "/real/tmp/run-b", "/link/tmp/run-c", "/tmp/run-d",
         "/work/ws", "/work/ws/tmp/e", "/", "x", " ", '"', "/file.py"]
    ),
    max_size=8,
).map("".join)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(text=_PATHS, tmpdir=st.sampled_from(["/home/ana/tmp", "/link/tmp", "/tmp", "/work/ws/tmp", "/home/ana/tmp/"]))
def test_a_cassette_that_records_no_temp_folder_is_read_as_before(text: str, tmpdir: str) -> None:
    """A temp folder inside home or the workspace, a linked one: a cassette written before temp
    folders were recorded recomputes the fingerprints it stored, and replays, as it did then."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", "/home/ana")
        patch.setattr(tempfile, "tempdir", tmpdir)
        patch.setattr(fingerprints, "_LEGACY_TEMP", None)
        recorded = normalizer_for({"workspace": "/work/ws"})
        live = replaying(Normalizer.for_paths(workspace=Path("/work/ws")), recorded)
        read = (recorded.text(text), live.text(text))
        patch.setattr(fingerprints, "_LEGACY_TEMP", None)
    expected = _folders_as_before(text, (("/work/ws", "<workspace>"),), "/home/ana", tmpdir)
    assert read == (expected, expected)


def _this_machine(patch: pytest.MonkeyPatch, home: str, tmpdir: str) -> None:
    patch.setenv("HOME", home)
    patch.setattr(tempfile, "tempdir", tmpdir)
    patch.setattr(fingerprints, "_LEGACY_TEMP", None)
    patch.setattr(fingerprints, "_TEMP_FOLDERS", None)


def test_a_linked_temp_folder_inside_home_is_recorded_when_home_is_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HOME=H, TMPDIR a link to H/real, a tool printing the resolved entry, in a cassette that
    records the home folder: the temp folder and its resolved form are recorded too (looked for
    the way they are read, inside the home folder)."""
    home = tmp_path / "home"
    (home / "real").mkdir(parents=True)
    (tmp_path / "link").symlink_to(home / "real")
    _this_machine(monkeypatch, str(home), str(tmp_path / "link"))
    loaded = saved_and_loaded(asking(f"ls {home}/real/agent-run-1 and {home}/notes"), home=str(home))
    assert loaded.recorded_paths == {
        "home": str(home),
        "temp": str(tmp_path / "link"),
        "temp_resolved": str(home / "real"),
    }


def test_a_cassette_continued_from_one_that_records_no_temp_folder_records_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """New episodes or a rewrite of an older cassette: its kept requests were keyed as before, so
    the new ones are too, and the cassette stays one that records no temp folder."""
    continued = Cassette(interactions=[asking(f"ls {HERE}/agent-run-1/other")], temp_as_before=True)
    loaded = loads_cassette(dumps_cassette(continued), source_name="c.yaml")
    assert "temp" not in loaded.recorded_paths and loaded.normalizer().legacy


def test_the_replay_proxy_reads_a_cassette_that_records_no_temp_folder_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TMPDIR inside HOME, a request naming an entry of it, in a cassette written before temp
    folders were recorded: the proxy's player matches it, as the code of then did."""
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    _this_machine(monkeypatch, str(home), str(home / "tmp"))
    interaction = asking(f"read {home}/tmp/fixed/file.txt")
    path = tmp_path / "c.yaml"
    path.write_text(dumps_cassette(Cassette(interactions=[interaction], temp_as_before=True)))
    assert "temp:" not in path.read_text()
    proxy = CassetteProxy(path, mode="none")
    assert proxy.player is not None
    proxy.player.match("POST", "/v1/messages", interaction.request.body_bytes())
