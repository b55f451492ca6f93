"""trajectoriz never writes to an agent's store: every file of every live store (SQLite side
files included) keeps its bytes and mtime through list, show and export, and no file appears;
`archive` and `forget` write only trajectoriz's own folder.

The stores are read in place, from tests/fixtures, so a write would also show up in git (the
archive commands, which write under $HOME by default, run on a copy)."""

import glob
import json
import os

import pytest

from helpers import LIVE, cli, live_copy, tree_digest

LIVE_HOMES = sorted(p for p in glob.glob(os.path.join(LIVE, "*")) if os.path.isdir(p))


@pytest.mark.parametrize("home", LIVE_HOMES, ids=os.path.basename)
def test_commands_leave_the_store_untouched(home, tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": home, "TZ": "UTC",
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    before = tree_digest(home)
    listed = cli("list", "--all", "--json", env=env, cwd=str(tmp_path))
    assert listed.returncode == 0, listed.stderr
    for line in listed.stdout.splitlines():
        assert cli("show", json.loads(line)["id"], env=env, cwd=str(tmp_path)).returncode == 0
    assert cli("export", "--all", "--out", str(tmp_path / "out"), env=env, cwd=str(tmp_path)).returncode == 0
    assert tree_digest(home) == before


@pytest.mark.parametrize("home", LIVE_HOMES, ids=os.path.basename)
def test_archive_and_forget_leave_the_store_untouched(home, tmp_path):
    """`archive` (a first run, a second, --verify) and `forget` read the store and write only
    their own folder, $XDG_DATA_HOME/trajectoriz (here inside the copied $HOME, as by default)."""
    copy = live_copy(tmp_path, home)
    ours = os.path.join(copy, ".local", "share", "trajectoriz")
    env = {"PATH": os.environ["PATH"], "HOME": copy, "TZ": "UTC", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    before = tree_digest(copy)
    for args in (["archive"], ["archive"], ["archive", "--verify"]):
        assert cli(*args, env=env, cwd=str(tmp_path)).returncode == 0
    assert cli("forget", "--before", "2100-01-01", env=env, cwd=str(tmp_path)).returncode == 0
    assert tree_digest(copy, skip=ours) == before
    assert os.path.isfile(os.path.join(ours, "archive", "index.bin"))
