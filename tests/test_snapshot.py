"""A warm discovery served from the catalog's snapshot (snapshot.py) lists what a cold one would:
a new session, a session whose head was still being written, a session gone, and, after a
project's listing, every project's sessions. The store's files are dated an hour back, so that
the folders' mtimes are trusted (a change within two seconds of a look is looked at again
anyway): the snapshot, not that rule, must see each change."""

import json
import os
import time

import pytest

import snapshot
from helpers import base_env, live_claude_in, run_main

HOUR_AGO = time.time() - 3600


@pytest.fixture
def store(tmp_path):
    """The live Claude store, its sessions in two project folders, every file an hour old."""
    env = base_env(tmp_path)
    projects = tmp_path / "work"
    for name in ("proj-claude", "proj-claude-other"):
        (projects / name / ".git").mkdir(parents=True)
    live_claude_in(env, projects)
    backdate(env["HOME"])
    return env, projects


def backdate(root: str, when: float = HOUR_AGO) -> None:
    for folder, _, files in os.walk(root, topdown=False):
        for name in files:
            os.utime(os.path.join(folder, name), (when, when))
        os.utime(folder, (when, when))


def listed(env, *args, cwd=None) -> dict:
    result = run_main(env, ["list", "--json", *args], cwd=cwd)
    assert result.returncode == 0, result.stderr
    return {r["native_id"]: r for r in map(json.loads, result.stdout.splitlines())}


def folder_of(env, project: str) -> str:
    base = os.path.join(env["HOME"], ".claude", "projects")
    return os.path.join(base, next(n for n in os.listdir(base) if n.endswith(project)))


def snapshots(env) -> list:
    folder = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", snapshot.FOLDER)
    return os.listdir(folder) if os.path.isdir(folder) else []


def test_a_warm_listing_comes_from_the_snapshot_and_sees_a_new_session(store):
    env, projects = store
    before = listed(env, "--all")
    assert len(before) == 3 and snapshots(env)
    folder = folder_of(env, "proj-claude-other")
    (old,) = os.listdir(folder)
    new_id = "11111111-2222-4333-8444-555555555555"
    text = open(os.path.join(folder, old), encoding="utf-8").read().replace(old[:-6], new_id)
    open(os.path.join(folder, new_id + ".jsonl"), "w", encoding="utf-8").write(text)
    backdate(folder, HOUR_AGO + 60)  # a new mtime, as old as the rest
    after = listed(env, "--all")
    assert set(after) == set(before) | {new_id}
    os.unlink(os.path.join(folder, old))
    backdate(folder, HOUR_AGO + 120)
    assert set(listed(env, "--all")) == set(before) - {old[:-6]} | {new_id}


def test_a_session_whose_head_is_still_being_written_gets_its_first_message(store):
    """Its first lines said neither prompt nor model when first listed: it is looked at again
    on every discovery, though its folder did not change."""
    env, projects = store
    folder = folder_of(env, "proj-claude-other")
    (name,) = os.listdir(folder)
    path = os.path.join(folder, name)
    lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
    dequeued = next(line for line in lines if '"operation":"dequeue"' in line)
    open(path, "w", encoding="utf-8").write(dequeued)  # a time, no prompt yet
    backdate(path)
    os.utime(folder, (HOUR_AGO, HOUR_AGO))
    assert "SCENARIO" not in listed(env, "--all")[name[:-6]]["first_message"]
    listed(env, "--all")  # warm, from the snapshot
    open(path, "w", encoding="utf-8").writelines(lines)
    os.utime(path, (HOUR_AGO + 60, HOUR_AGO + 60))
    os.utime(folder, (HOUR_AGO, HOUR_AGO))  # the folder as it was: appending never changes it
    assert "SCENARIO" in listed(env, "--all")[name[:-6]]["first_message"]


def test_after_a_projects_listing_every_project_is_listed(store):
    env, projects = store
    assert len(listed(env, cwd=str(projects / "proj-claude"))) == 2
    assert len(listed(env, cwd=str(projects / "proj-claude"))) == 2  # warm: its own groups
    assert len(listed(env, "--all")) == 3
    (projects / "elsewhere").mkdir()
    empty = run_main(env, ["list"], cwd=str(projects / "elsewhere")).stdout.decode()
    assert "None of the 3 session(s) found" in empty


def test_a_search_of_listings_stats_no_settled_transcript(store, monkeypatch):
    """Appending cannot change what a settled transcript lists: a metadata search reads the
    snapshot without a stat of each one (and knows nothing of their files), a listing with
    step counts checks them."""
    import catalog

    env, projects = store
    listed(env, "--all")  # the snapshot
    transcripts = {os.path.join(f, n) for f, _, names in os.walk(os.path.join(env["HOME"], ".claude", "projects"))
                   for n in names if n.endswith(".jsonl")}
    asked: list = []
    real_stat = os.stat

    def noting(path, *args, **kwargs):
        asked.append(os.fspath(path))
        return real_stat(path, *args, **kwargs)
    monkeypatch.chdir(env["HOME"])  # where `listed` ran: the snapshot of that directory
    monkeypatch.setattr(os, "stat", noting)
    found = catalog.discover(env, check_settled=False)
    assert found.snapshot is not None and len(found.sessions) == 3
    assert not transcripts & set(asked) and all(found.known(s) is None for s in found.sessions)
    found = catalog.discover(env)
    assert transcripts <= set(asked) and all(found.known(s) is not None for s in found.sessions)
