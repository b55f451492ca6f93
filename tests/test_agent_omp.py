"""oh-my-pi: every session of the live store (18.2.3) holds every step of its scenario, with its
reasoning; counts and token totals are the native records'; the fork's own records (the title
record first, `custom` records, `model_change.model`, `details.exitCode`) are read and leave the
conversation whole; the health report counts the store; nothing is written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_omp.py` rewrites tests/golden/omp/."""

import glob
import json
import os
import shutil

from agents import omp
from helpers import (LIVE, assert_golden, assert_scripted_steps, assert_valid, base_env, cli, doc_counts,
                     live_copy, read_jsonl, scan_all, scoped_ids, scripted_runs, totals, translate_all, tree_digest,
                     write_jsonl)
from test_agent_pi import native_counts, native_totals

LIVE_HOME = os.path.join(LIVE, "oh-my-pi-18.2.3")
SESSIONS = os.path.join(LIVE_HOME, ".omp", "agent", "sessions")
CONTINUED = "01a230b4-9086-71da-a341-635e226a2811"


def live_env(tmp_path):
    return base_env(tmp_path, home=LIVE_HOME)


def test_every_scenario_step_is_in_its_session(tmp_path):
    runs = scripted_runs(LIVE_HOME, "omp")
    assert sorted(runs) == ["omp-1", "omp-1b", "omp-2", "omp-3"]
    held = {}
    for session, doc in translate_all(omp, live_env(tmp_path)):
        assert_valid(doc)
        sids = [sid for sid in runs if any(s["source"] == "user" and s["message"].startswith(f"SCENARIO {sid} in ")
                                           for s in doc["steps"])]
        for sid in sids:
            assert_scripted_steps(doc, sid, runs[sid], reasoning=True)
            assert session.cwd == runs[sid]
        held[session.native_id] = sids
    assert held[CONTINUED] == ["omp-1", "omp-1b"]
    assert sorted(sid for sids in held.values() for sid in sids) == sorted(runs)


def test_counts_and_tokens_are_the_native_records(tmp_path):
    translated = translate_all(omp, live_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        records = read_jsonl(session.source)
        assert records[0]["type"] == "title" and records[1]["type"] == "session"
        assert doc_counts(doc) == native_counts(records)
        assert totals(doc) == native_totals(records)
        assert doc["session_id"] == records[1]["id"] and doc["agent"]["name"] == "oh-my-pi"
        assert "entries_off_path" not in doc["extra"]   # the title record and custom records are no branch
        assert "warnings" not in doc["extra"]


def test_a_failed_command_carries_its_exit_code(tmp_path):
    doc = next(d for s, d in translate_all(omp, live_env(tmp_path)) if s.native_id == CONTINUED)
    failing = [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", []) if r.get("extra")]
    assert [r["extra"] for r in failing] == [{"is_error": True, "exit_code": 2}] * 2   # omp-1, omp-1b


def test_scan_reads_the_header_after_the_title(tmp_path):
    sessions = scan_all(omp, live_env(tmp_path))
    assert {s.cwd for s in sessions} == {"/tmp/agents/proj-omp", "/tmp/agents/proj-omp-other"}
    assert {s.model for s in sessions} == {"fakellm/claude-fake-model"}   # model_change.model
    assert all(s.title.startswith("SCENARIO omp-") for s in sessions)
    assert {s.extra["format"] for s in sessions} == {"v3"}


def test_a_title_is_kept(tmp_path):
    home = live_copy(tmp_path, LIVE_HOME)
    path = glob.glob(os.path.join(home, ".omp", "agent", "sessions", "*", f"*{CONTINUED}.jsonl"))[0]
    records = read_jsonl(path)
    records[0]["title"] = "Write the note"
    write_jsonl(path, records)
    doc = next(d for s, d in translate_all(omp, base_env(tmp_path, home=home)) if s.native_id == CONTINUED)
    assert doc["extra"]["title"] == "Write the note"


def test_project_scoping(tmp_path):
    env = live_env(tmp_path)
    assert scoped_ids(env, "/tmp/agents/proj-omp", "omp") == {CONTINUED, "01a230b4-a45c-73fe-a02f-66eb3a49733e"}
    assert scoped_ids(env, "/tmp/agents/proj-omp-other", "omp") == {"01a230b4-ae1d-73e8-b3d9-169eee6aa78e"}


def test_store_can_be_relocated_and_is_not_pi(tmp_path):
    shutil.copytree(os.path.join(LIVE_HOME, ".omp", "agent"), tmp_path / "agent")
    assert len(omp.sources({**base_env(tmp_path), "OMP_CODING_AGENT_DIR": str(tmp_path / "agent")})) == 3
    env = live_env(tmp_path)
    assert [s.agent for s in scan_all(omp, env)] == ["omp"] * 3
    from agents import pi
    assert pi.sources(env) == []


def test_golden_document(tmp_path):
    env = live_env(tmp_path)
    session = next(s for s in scan_all(omp, env) if s.native_id == CONTINUED)
    doc = omp.translate(session, env)
    assert_valid(doc)
    assert_golden(doc, "omp", "live-continued-session")


def test_health_counts_the_store(tmp_path):
    result = cli("agents", "--json", env=live_env(tmp_path))
    row = next(r for r in map(json.loads, result.stdout.splitlines()) if r["agent"] == "omp")
    files = glob.glob(os.path.join(SESSIONS, "*", "*.jsonl"))
    assert (row["sessions"], row["sources"], row["formats"]) == (3, 3, {"v3": 3})
    assert row["native_bytes"] == sum(os.path.getsize(p) for p in files)
    assert row["sessions_with_warnings"] == row["sessions_failed"] == 0


def test_store_is_never_written(tmp_path):
    before = tree_digest(LIVE_HOME)
    env = live_env(tmp_path)
    translate_all(omp, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert len([line for line in result.stdout.splitlines() if b'"agent":"omp"' in line]) == 3
    assert tree_digest(LIVE_HOME) == before
