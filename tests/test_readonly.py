"""trajectoriz never writes to an agent's store: every file of every live store (SQLite side
files included) keeps its bytes and mtime through list, show and export, and no file appears.

The stores are read in place, from tests/fixtures, so a write would also show up in git."""

import glob
import json
import os

import pytest

from helpers import LIVE, cli, tree_digest

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
