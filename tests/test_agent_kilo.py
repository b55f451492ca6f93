"""Kilo CLI: opencode's store under `~/.local/share/kilo/kilo.db`, read by opencode's code. The
same native checks as opencode's (counts and tokens by SQL over the raw rows), on the live
Kilo 7.7.7 sample.

Regenerate the golden file with `UPDATE_GOLDEN=1 pytest tests/test_agent_kilo.py`.
"""

import json
import os

from agents import kilo
from discovery import catalog
from helpers import LIVE, assert_golden, assert_valid, base_env, cli, copy_into, tree_digest
from test_agent_opencode import check_store, translate

LIVE_HOME = os.path.join(LIVE, "kilo-7.7.7")
DATA = ".local/share/kilo"
LIVE_DB = os.path.join(LIVE_HOME, DATA, "kilo.db")


def test_live_sessions_match_the_rows():
    check_store(kilo, LIVE_DB)


def test_documents_name_kilo():
    doc = translate(kilo, LIVE_DB, "ses_dd6f37356ffeiQq7wjTu0seKIk")
    assert doc["agent"]["name"] == "kilo-cli" and doc["agent"]["version"] == "7.7.7"
    first = [s for s in doc["steps"] if s["source"] == "agent"][0]["tool_calls"][0]
    assert first["arguments"] == {"command": "echo hello-kilo-2 > note.txt && ls",
                                  "description": "Write hello-kilo-2 into note.txt and list files"}


def test_sources_and_scoping(tmp_path):
    env = base_env(tmp_path, LIVE_HOME)
    assert list(kilo.sources(env)) == [LIVE_DB]
    assert kilo.dependencies(LIVE_DB, env) == [LIVE_DB, LIVE_DB + "-wal"]
    sessions = catalog.discover(env, ["kilo"], use_cache=False).sessions
    assert {s.short_id[:3] for s in sessions} == {"kl-"}
    assert len(catalog.Scope("/tmp/agents/proj-kilo").filter(sessions)) == 2
    assert len(catalog.Scope("/tmp/agents/proj-kilo-other").filter(sessions)) == 1
    env["KILO_DB"] = LIVE_DB
    assert list(kilo.sources(env)) == [LIVE_DB]


def test_list_and_show_leave_the_store_untouched(tmp_path):
    home = str(tmp_path / "home")
    copy_into(home, os.path.join(LIVE_HOME, DATA), DATA)
    before = tree_digest(home)
    env = base_env(tmp_path, home)
    listing = cli("list", "--all", "--json", "--agent", "kilo", env=env)
    assert listing.returncode == 0, listing.stderr
    records = [json.loads(line) for line in listing.stdout.splitlines()]
    assert len(records) == 3
    shown = cli("show", records[0]["id"], env=env)
    assert shown.returncode == 0, shown.stderr
    assert_valid(json.loads(shown.stdout))
    assert tree_digest(home) == before


def test_golden_document():
    assert_golden(translate(kilo, LIVE_DB, "ses_dd6f37356ffeiQq7wjTu0seKIk"), "kilo", "live-second-session")
