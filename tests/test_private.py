"""Everything trajectoriz writes is private: folders 0700, files 0600, whatever the umask; a
cache left wider by an older release is tightened; one another user owns is never used; what
older releases left in the cache with unredacted text is removed.

Commands run under umask 022, the usual default, with which Python's own defaults would give
0755 folders and 0644 files that every local user can read.
"""

from __future__ import annotations

import json
import os
import stat

import pytest

from helpers import LIVE, base_env, cli
from test_untrusted import SESSION, claude_session

TOKEN = "ghp_" + "Q7xWm2Tz9Rp4Lk8Vc3Nb6Kd1Hs5Jf0Ga2UeRy"


@pytest.fixture(autouse=True)
def usual_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def modes_under(top: str) -> dict:
    """path -> permission bits of everything under `top` (top included)."""
    found = {top: stat.S_IMODE(os.lstat(top).st_mode)}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(folder, name)
            found[path] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


def assert_private(top: str) -> None:
    """Every folder 0700 and file 0600 (a symlink has no permissions of its own: its target's
    are checked, where it is under `top`)."""
    for path, mode in modes_under(top).items():
        if os.path.islink(path):
            continue
        wanted = 0o700 if os.path.isdir(path) else 0o600
        assert mode == wanted, f"{path}: {mode:o}, not {wanted:o}"


def secret_store(tmp_path, cache_home: bool = False) -> tuple[dict, str]:
    """A Claude store whose first message holds a GitHub token."""
    env = base_env(tmp_path)
    if cache_home:  # trajectoriz creates ~/.cache itself
        del env["XDG_CACHE_HOME"]
    project = str(tmp_path / "proj")
    os.makedirs(project)
    path = claude_session(env["HOME"], "-proj", SESSION + ".jsonl", project)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text.replace("SCENARIO claude-2", f"SCENARIO claude-2 with {TOKEN}"))
    return env, project


def run_everything(env, project, out) -> None:
    for args in (["list"], ["list", "--json"], ["search", "SCENARIO"], ["search", "--content", "note.txt"],
                 ["stats"], ["agents"], ["export", "--out", out]):
        result = cli(*args, env=env, cwd=project)
        assert result.returncode == 0, (args, result.stderr)
    shown = json.loads(cli("list", "--json", env=env, cwd=project).stdout.splitlines()[0])
    assert cli("show", shown["id"], env=env, cwd=project).returncode == 0


def test_every_folder_and_file_trajectoriz_creates_is_owner_only(tmp_path):
    env, project = secret_store(tmp_path, cache_home=True)
    out = str(tmp_path / "exported" / "memory")
    run_everything(env, project, out)
    cache_home = os.path.join(env["HOME"], ".cache")
    assert_private(cache_home)  # ~/.cache included: trajectoriz created it
    assert_private(os.path.join(tmp_path, "exported"))
    assert len(modes_under(os.path.join(cache_home, "trajectoriz"))) > 4  # index, facts, documents


def test_a_cache_left_readable_by_others_is_tightened(tmp_path):
    env, project = secret_store(tmp_path)
    run_everything(env, project, str(tmp_path / "out"))
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    for path in modes_under(cache):
        os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)
    assert cli("list", env=env, cwd=project).returncode == 0
    assert_private(cache)


def test_no_cache_file_holds_a_secret_of_the_store(tmp_path):
    env, project = secret_store(tmp_path)
    run_everything(env, project, str(tmp_path / "out"))
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    for path in modes_under(cache):
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                assert TOKEN.encode() not in handle.read(), path
    listed = cli("list", "--json", env=env, cwd=project).stdout
    assert TOKEN.encode() not in listed and b"REDACTED:github" in listed


def test_what_older_releases_left_unredacted_is_removed(tmp_path):
    env, project = secret_store(tmp_path)
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    for folder in ("documents-v1", "documents-v2"):
        os.makedirs(os.path.join(cache, folder))
    old = {"index-v2-py311.bin": TOKEN.encode(), "facts-v2.json": b"{}", "index-v3-py311.bin": b"marker",
           "facts-v3-py311.bin": b"marker", os.path.join("documents-v1", "0" * 40 + ".json"): TOKEN.encode(),
           os.path.join("documents-v2", "0" * 40 + ".json"): b"unkeyed marker"}
    for name, data in old.items():
        with open(os.path.join(cache, name), "wb") as handle:
            handle.write(data)
    assert cli("list", env=env, cwd=project).returncode == 0
    assert not any(os.path.exists(os.path.join(cache, name)) for name in old)
    assert not os.path.exists(os.path.join(cache, "documents-v1"))
    assert not os.path.exists(os.path.join(cache, "documents-v2"))


def test_caches_made_under_other_redaction_rules_are_removed_on_first_use(tmp_path):
    """A leak that weaker rules let into a cache must not survive an upgrade: every cache that
    holds redacted text is named after the rules' version (the previous release's names had
    none), and one made under other rules is removed the first time a process looks."""
    from core import cache as cache_module
    from core.version import RULES
    from discovery import snapshot
    from rendering import doccache, documents

    env, project = secret_store(tmp_path)
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    older = [name.replace(f"-r{RULES}", f"-r{RULES - 1}") for name in (cache_module.INDEX_FILE, documents.FACTS_FILE)]
    older += ["index-v4-py311.bin", "facts-v4-py311.bin"]
    older_folders = [doccache.FOLDER.replace(f"-r{RULES}", f"-r{RULES - 1}"), "documents-v3", "catalog-v1",
                     snapshot.FOLDER.replace(f"-r{RULES}", f"-r{RULES - 1}")]
    for folder in older_folders:
        os.makedirs(os.path.join(cache, folder))
        older.append(os.path.join(folder, "0" * 40 + ".json"))
    for name in older:
        with open(os.path.join(cache, name), "wb") as handle:
            handle.write(TOKEN.encode())
    assert cli("list", env=env, cwd=project).returncode == 0
    assert cli("export", "--out", str(tmp_path / "out"), env=env, cwd=project).returncode == 0
    assert [name for name in older + older_folders if os.path.exists(os.path.join(cache, name))] == []
    kept = set(os.listdir(cache))
    assert {cache_module.INDEX_FILE, doccache.FOLDER, documents.FACTS_FILE, snapshot.FOLDER} <= kept, kept


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the cache folder to another user")
def test_a_cache_folder_another_user_owns_is_never_used(tmp_path):
    """XDG_CACHE_HOME in a shared folder, where another user made `trajectoriz` first: what
    trajectoriz would write there (documents, first messages) would be theirs to read."""
    env, project = secret_store(tmp_path)
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    os.makedirs(cache, mode=0o777)
    os.chmod(cache, 0o777)
    os.chown(cache, 65534, 65534)
    os.chown(env["XDG_CACHE_HOME"], 65534, 65534)
    run_everything(env, project, str(tmp_path / "out"))
    assert os.listdir(cache) == []
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o777  # not ours to change


def test_the_mountpoint_memory_creates_is_owner_only(tmp_path):
    from test_memory import FUSE_PROBLEM, mount, take_down

    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    env, project = secret_store(tmp_path)
    point = os.path.join(project, "memory")
    try:
        mount(env, project)
    finally:
        take_down(point)
    assert stat.S_IMODE(os.stat(point).st_mode) == 0o700


def test_relative_xdg_folders_are_ignored(tmp_path):
    """XDG_CACHE_HOME=cache (a relative value, which the XDG specification says to ignore)
    put the rendered documents, the index and the marker key in `./cache/trajectoriz` of the
    directory a command ran in: inside a project, where `git add -A` commits them."""
    env, project = secret_store(tmp_path)
    env.update(XDG_CACHE_HOME="cache", XDG_DATA_HOME="data", XDG_CONFIG_HOME="config")
    for args in (["list"], ["show", SESSION], ["archive"]):
        result = cli(*args, env=env, cwd=project)
        assert result.returncode == 0, (args, result.stderr)
    assert os.listdir(project) == []
    assert os.path.isdir(os.path.join(env["HOME"], ".cache", "trajectoriz"))
    assert os.path.isfile(os.path.join(env["HOME"], ".local", "share", "trajectoriz", "marker.key"))
