"""A warm discovery served from the catalog's snapshot (discovery/snapshot.py) lists what a cold one would:
a new session, a session whose head was still being written, a session gone, and, after a
project's listing, every project's sessions. The store's files are dated an hour back, so that
the folders' mtimes are trusted (a change within two seconds of a look is looked at again
anyway): the snapshot, not that rule, must see each change."""

import json
import os
import shutil
import time

import pytest

from discovery import snapshot
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
    from discovery import catalog

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


# written beside the command ------------------------------------------------------------------------
def kept_files(env) -> dict:
    """The index and every snapshot of the cache: path -> bytes."""
    from core import cache

    folder = cache.cache_dir(env)
    found = {}
    for where, _, names in os.walk(folder):
        for name in names:
            if name.startswith("index-") or where.endswith(snapshot.FOLDER):
                with open(os.path.join(where, name), "rb") as handle:
                    found[os.path.relpath(os.path.join(where, name), folder)] = handle.read()
    return found


KEEPER = """
import json, os, shutil, sys
sys.path.insert(0, {root!r})
from core import cache, parallel
from discovery import catalog, snapshot
env = dict(os.environ)
folder = cache.cache_dir(env)


def kept():
    found = {{}}
    for where, _, names in os.walk(folder):
        for name in names:
            if name.startswith("index-") or where.endswith(snapshot.FOLDER):
                found[os.path.join(where, name)] = open(os.path.join(where, name), "rb").read().hex()
    return found


catalog.discover(env)
inline = kept()
shutil.rmtree(folder)
catalog.ASIDE_SOURCES = 1
first = [s.short_id for s in catalog.discover(env).sessions]
pending = list(parallel._aside)
stores_read = []
real = catalog._from_stores
catalog._from_stores = lambda *a, **k: stores_read.append(1) or real(*a, **k)
second = [s.short_id for s in catalog.discover(env).sessions]
same = kept() == inline != {{}}
catalog._from_stores = real
shutil.rmtree(folder)
catalog.discover(env)
snapshot.remove_all(env)
left = [name for name in kept() if snapshot.FOLDER in name]
print(json.dumps({{"pending": pending, "same_ids": first == second, "stores_read": stores_read,
                  "same_files": same, "left": left}}))
"""


def test_a_big_discovery_is_kept_by_a_child_that_everything_after_it_waits_for(store):
    """From ASIDE_SOURCES sources (lowered to 1 here) the index and the snapshot are written by a
    forked child while the command goes on (parallel.aside): the same bytes as written in the
    process; a second discovery of the process waits for them and is served by the snapshot;
    removing the snapshots (`forget`) waits too, so none is left behind. (In a process of its
    own: this one has other tests' threads.)"""
    import subprocess
    import sys

    from helpers import ROOT

    env, projects = store
    done = subprocess.run([sys.executable, "-c", KEEPER.format(root=ROOT)], env=env, capture_output=True,
                          text=True, timeout=120, cwd=env["HOME"])
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"pending": found["pending"], "same_ids": True, "stores_read": [], "same_files": True,
                     "left": []}
    assert len(found["pending"]) == 1  # a child was writing


ORPHAN = """
import os, sys, time
sys.path.insert(0, {root!r})
from core import cache
from discovery import catalog
catalog.ASIDE_SOURCES = 1
real = cache.save
cache.save = lambda *args: (time.sleep(1), real(*args))  # the index first, then the snapshot
catalog.discover(dict(os.environ))
os.kill(os.getpid(), 9)  # killed before its child has written: no exit handler runs
"""


def test_a_child_whose_command_was_killed_keeps_nothing(store):
    """A command killed (SIGKILL, or SIGTERM: no exit handler runs) while its child writes the
    snapshot: the child puts no file in place once its parent is gone, so a `forget` run since
    is not undone (before, it wrote the index and the snapshot anyway)."""
    import subprocess
    import sys

    from helpers import ROOT

    env, projects = store
    done = subprocess.run([sys.executable, "-c", ORPHAN.format(root=ROOT)], env=env, capture_output=True,
                          text=True, timeout=120, cwd=env["HOME"])  # returns once the child, holding
    assert done.returncode == -9                                     # its output, has ended
    assert kept_files(env) == {}  # neither the index nor the snapshot


SLOW_KEEPER = """
import sys, time
sys.path.insert(0, {root!r})
from discovery import catalog, snapshot
import trajectoriz
catalog.ASIDE_SOURCES = 1
real = snapshot.save
snapshot.save = lambda *args: (time.sleep(1), real(*args))
sys.exit(trajectoriz.main(["list", "--all", "--json"]))
"""


def test_a_command_ends_only_once_what_it_keeps_is_written(store):
    """The child that writes the snapshot takes a second more here: the command still ends with
    it written (nothing it keeps is written after it ended: a `forget` then could not remove
    it), and prints its listing once."""
    import subprocess
    import sys

    from helpers import ROOT

    env, projects = store
    done = subprocess.run([sys.executable, "-c", SLOW_KEEPER.format(root=ROOT)], env=env,
                          capture_output=True, text=True, timeout=120, cwd=env["HOME"])
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert rows and len({row["id"] for row in rows}) == len(rows)
    assert [name for name in kept_files(env) if name.startswith(snapshot.FOLDER)]


def test_a_warm_listing_sees_a_second_config_folder_once_it_leads_elsewhere(store):
    """CLAUDE_CONFIG_DIR names two folders; the second's projects/ leads, through a link to a
    link (links/via, in a folder no store lists), to the first's, so it is listed once. The
    inner link retargeted to another store: the warm listing lists that store too."""
    env, projects = store
    home = env["HOME"]
    other = os.path.join(home, "other", "projects")
    shutil.copytree(os.path.join(home, ".claude", "projects"), other)
    folder = os.path.join(other, os.path.basename(folder_of(env, "proj-claude-other")))
    (old,) = os.listdir(folder)
    new_id = "11111111-2222-4333-8444-666666666666"
    os.rename(os.path.join(folder, old), os.path.join(folder, new_id + ".jsonl"))
    via = os.path.join(home, "links", "via")
    os.makedirs(os.path.dirname(via))
    os.symlink(os.path.join(home, ".claude", "projects"), via)
    os.makedirs(os.path.join(home, "second"))
    os.symlink(via, os.path.join(home, "second", "projects"))
    env["CLAUDE_CONFIG_DIR"] = f"{home}/.claude,{home}/second"
    backdate(home)
    before = listed(env, "--all")
    assert len(before) == 3
    os.symlink(other, via + ".new")
    os.replace(via + ".new", via)
    assert new_id in listed(env, "--all")


def test_a_warm_listing_sees_a_linked_project_folder_appear(store):
    """A project folder in the store that is a link to a folder not there yet (a disk not
    mounted): once the folder is there, the warm listing lists its transcript, though the
    store's folders are as they were."""
    env, projects = store
    home = env["HOME"]
    source = folder_of(env, "proj-claude-other")
    target = os.path.join(home, "disk", "linked-project")
    os.makedirs(os.path.dirname(target))
    backdate(home)
    os.symlink(target, os.path.join(os.path.dirname(source), "-linked-project"))
    os.utime(os.path.dirname(source), (HOUR_AGO, HOUR_AGO))
    before = listed(env, "--all")
    assert len(before) == 3
    (old,) = os.listdir(source)
    new_id = "11111111-2222-4333-8444-777777777777"
    os.makedirs(target)
    text = open(os.path.join(source, old), encoding="utf-8").read().replace(old[:-6], new_id)
    open(os.path.join(target, new_id + ".jsonl"), "w", encoding="utf-8").write(text)
    assert set(listed(env, "--all")) == set(before) | {new_id}
