"""One session found in all three origins (discovery/origin.py): live in Alice's store, the same
from her archive once its file is deleted, and the same pushed by her and pulled by Bob. Each
origin answers the same questions alike: the same id, the same document bytes (the archive's
the store's, the pull's the push's, with the same steps), stamps of one shape (the archived
one's facts those of the store's rendering), the same origin again once its record went
through a cache, and a failure document, never an exception, when its bytes cannot be read. A real bare repository is the remote (tests/test_sharing.py's teammates)."""

from __future__ import annotations

import os

import zstandard

from atif.serialize import loads
from atif.validate import validate
from agents.base import Session
from core.version import VERSION
from discovery import archive, catalog, pulled
from helpers import run_main
from rendering import documents
from test_sharing import team  # noqa: F401 (the fixture)


def found(env, root: str, native_id: str) -> Session:
    sessions = [s for s in catalog.discover(env, within=root).sessions if s.native_id == native_id]
    assert len(sessions) == 1, sessions
    return sessions[0]


def three_origins(team):
    """Session c2 live in Alice's store, then the same pulled by Bob, then the same from Alice's
    archive after its file is deleted; with the environment each is read in, and what the live
    one gave before its file went: its bytes and its stamps."""
    _, (alice, a), (bob, b) = team
    assert run_main(alice, ["archive"], cwd=a).returncode == 0
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    assert run_main(bob, ["pull", "--remote", "origin"], cwd=b).returncode == 0
    live = found(alice, a, "c2")
    stored = documents.render(live, alice), documents.stamps(live, alice)  # before its file goes
    shared = found(bob, b, "c2")
    os.remove(live.source)
    archived = found(alice, a, "c2")
    return [(live, alice, stored), (archived, alice, None), (shared, bob, None)]


def test_one_session_in_three_origins_answers_alike(team):
    sessions = three_origins(team)
    (live, alice, (stored, (live_stamp, live_valid))), (archived, _, _), (shared, bob, _) = sessions
    origins = [catalog.origin(s) for s, _, _ in sessions]
    assert [(o.kind, o.in_store, o.finished) for o in origins] == [
        ("store", True, False), ("archive", False, False), ("shared", False, True)]
    contributor = origins[2].contributor
    assert [o.contributor for o in origins] == [None, None, contributor] and contributor.startswith("alice-")
    assert live.short_id == archived.short_id == shared.short_id
    assert catalog.file_name(live) == catalog.file_name(archived) == catalog.file_name(shared)

    # the same bytes, whoever holds them: the archive's are the store's; the pull's are the push's,
    # the same steps (a push may make its paths shareable)
    assert documents.render(archived, alice) == stored
    pushed = zstandard.ZstdDecompressor().decompressobj().decompress(
        pulled.read_blob(shared.extra["shared"]["git"], shared.extra["shared"]["oid"], bob))
    assert documents.render(shared, bob) == pushed
    assert [step["step_id"] for step in loads(pushed)["steps"]] == [step["step_id"] for step in loads(stored)["steps"]]
    assert loads(pushed)["session_id"] == loads(stored)["session_id"] == "c2"
    for session, env, _ in sessions:
        assert validate(catalog.origin(session).document(env))[0] == []

    # stamps of one shape; what decides each
    stamps = [live_stamp] + [catalog.origin(s).stamp(env) for s, env, _ in sessions[1:]]
    assert live_valid[:4] == live_stamp and len(live_valid[4]) == 1 and isinstance(live_valid[4][0], int)
    assert all(len(st) == 4 and st[2] == VERSION and st[3] is True for st in stamps)
    assert stamps[0][1] != stamps[1][1] and stamps[1][1].startswith(stamps[0][1] + "+archived:")
    assert stamps[1][0] == stamps[0][0]  # the native files' fingerprint, as archived
    assert origins[1].same_facts(stamps[1]) == stamps[0] and origins[0].same_facts(stamps[0]) is None
    assert stamps[2][1].startswith("shared:") and stamps[2][0] == [[len(pushed), stamps[2][0][0][1]]]
    for session, env, _ in sessions[1:]:
        stamp, valid = documents.stamps(session, env)
        assert stamp == documents.cache_stamp(session, env) == catalog.origin(session).stamp(env)
        assert valid[:4] == stamp
    assert documents.stamps(archived, alice)[1][4] == documents.stamps(shared, bob)[1][4] == []

    # read now: a live one whose file went since it was listed is its archived copy
    now = catalog.origin(live).now(alice)
    assert catalog.origin(now).kind == "archive" and now.short_id == live.short_id
    assert documents.render(now, alice) == stored
    assert catalog.origin(archived).now(alice) is archived and catalog.origin(shared).now(bob) is shared

    # a record kept in a cache comes back with the same origin
    for session, env, _ in sessions:
        again = Session.from_cache(session.to_cache())
        assert catalog.origin(again).kind == catalog.origin(session).kind
        assert catalog.origin(again).stamp(env) == catalog.origin(session).stamp(env)


def test_each_origin_that_cannot_read_its_bytes_gives_the_failure_document(team):
    """The store's file gone, the archive's data gone, the pulled blob missing from git: a
    valid document that says why, from each, and no exception."""
    sessions = three_origins(team)
    (live, alice, _), (archived, _, _), (shared, bob, _) = sessions
    entry = archive.load(alice)["sessions"][archived.extra["archived"]["key"]]
    for _, _, fid, _ in entry["files"]:
        os.remove(archive.blob_path(alice, fid))
    shared.extra = {**shared.extra, "shared": {**shared.extra["shared"], "oid": "0" * 40}}
    errors = []
    for session, env, _ in sessions:
        doc = catalog.origin(session).document(env)
        assert validate(doc)[0] == [] and doc["session_id"] == "c2"
        errors.append(doc["extra"]["error"])
    assert errors[0].startswith("FileNotFoundError: ") and live.source in errors[0]
    assert errors[1].startswith("Damaged: ") and "cannot be read" in errors[1]
    by = catalog.origin(shared).contributor
    assert errors[2] == f"the document {by} shared is skipped: missing from the repository"
