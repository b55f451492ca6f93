"""Hermes: the sessions of state.db (WAL included) translate to valid documents whose counts match
the message rows and whose token totals are the session totals; rewound rows are skipped; a
damaged database is a clear problem, never a crash; the database and its side files are never
written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_hermes.py` rewrites tests/golden/hermes/."""

import json
import os
import shutil
import sqlite3

from agents import hermes, sqlite_ro
from discovery import catalog
from rendering import documents
from helpers import (LIVE, assert_golden, assert_valid, base_env, cli, doc_counts, scoped_ids,
                    totals, translate_all, tree_digest)

LIVE_HOME = os.path.join(LIVE, "hermes-agent-0.19.0")
LIVE_DB = os.path.join(LIVE_HOME, ".hermes", "state.db")
CONTINUED = "20261129_204404_32ac0d"


def live_env(tmp_path):
    return base_env(tmp_path, home=LIVE_HOME)


def native(db_path, session_id):
    """Counts and totals straight from the rows (through the same read-only snapshot)."""
    connection = sqlite_ro.connect(db_path)
    rows = connection.execute("SELECT role, tool_calls FROM messages WHERE session_id = ?"
                              " AND (active = 1 OR compacted = 1)", (session_id,)).fetchall()
    fresh, output, read, write = connection.execute(
        "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens FROM sessions"
        " WHERE id = ?", (session_id,)).fetchone()
    per_model = connection.execute("SELECT sum(input_tokens), sum(output_tokens) FROM session_model_usage"
                                   " WHERE session_id = ?", (session_id,)).fetchone()
    connection.close()
    counts = {"user": sum(1 for role, _ in rows if role == "user"),
              "calls": sum(len(json.loads(calls)) for role, calls in rows if calls),
              "results": sum(1 for role, _ in rows if role == "tool")}
    assert per_model == (fresh, output)  # the two native totals agree
    return counts, (fresh + read + write, output, read)


def test_live_sessions_match_native_rows(tmp_path):
    translated = translate_all(hermes, live_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        counts, expected_totals = native(LIVE_DB, session.native_id)
        assert doc_counts(doc) == counts
        assert totals(doc) == expected_totals
        assert "total_cost_usd" not in doc["final_metrics"]  # Hermes marks the cost unknown
        assert doc["steps"][0]["extra"]["kind"] == "system_prompt"
        assert doc["steps"][-1]["message"].startswith("SCENARIO-DONE")
        assert session.extra["format"] == "schema-22"


def test_project_scoping(tmp_path):
    env = live_env(tmp_path)
    assert len(scoped_ids(env, "/tmp/agents/proj-hermes", "hermes")) == 2
    assert scoped_ids(env, "/tmp/agents/proj-hermes-other", "hermes") == {"20261129_204414_9afc01"}


def test_hermes_home_relocates_the_store(tmp_path):
    target = tmp_path / "hh"
    target.mkdir()
    shutil.copy(LIVE_DB, target / "state.db")
    (target / "profiles" / "work").mkdir(parents=True)
    shutil.copy(LIVE_DB, target / "profiles" / "work" / "state.db")
    env = {**base_env(tmp_path), "HERMES_HOME": str(target)}
    assert hermes.sources(env) == [str(target / "state.db"), str(target / "profiles" / "work" / "state.db")]


def writable_copy(tmp_path):
    folder = tmp_path / "home" / ".hermes"
    folder.mkdir(parents=True)
    shutil.copy(LIVE_DB, folder / "state.db")
    return str(folder / "state.db")


def test_sessions_only_in_the_wal_are_read(tmp_path):
    """A session committed to the WAL but not yet checkpointed, as a running Hermes leaves it."""
    db = writable_copy(tmp_path)
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("INSERT INTO sessions (id, source, started_at, cwd, input_tokens, output_tokens)"
                   " VALUES ('wal_session', 'cli', 1795990000, '/tmp/agents/proj-hermes', 7, 3)")
    writer.execute("INSERT INTO messages (session_id, role, content, timestamp)"
                   " VALUES ('wal_session', 'user', 'only in the WAL', 1795990001)")
    writer.commit()
    snapshot = tmp_path / "snap" / ".hermes"
    snapshot.mkdir(parents=True)
    for suffix in ("", "-wal"):
        shutil.copy(db + suffix, snapshot / ("state.db" + suffix))
    writer.close()
    env = base_env(tmp_path, home=str(tmp_path / "snap"))
    before = tree_digest(str(snapshot))
    found = {s.native_id: d for s, d in translate_all(hermes, env)}
    assert found["wal_session"]["steps"][0]["message"] == "only in the WAL"
    assert totals(found["wal_session"])[:2] == (7, 3)
    assert tree_digest(str(snapshot)) == before  # no -shm created, nothing written


def test_rewound_rows_are_skipped_and_compacted_rows_kept(tmp_path):
    db = writable_copy(tmp_path)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE messages SET active = 0 WHERE id BETWEEN 7 AND 12")  # /undo of 1b
        connection.execute("UPDATE messages SET active = 0, compacted = 1 WHERE id = 1")
        connection.execute("DELETE FROM messages WHERE id = 2")  # leaves result 3 without its call
    env = base_env(tmp_path, home=str(tmp_path / "home"))
    doc = next(d for s, d in translate_all(hermes, env) if s.native_id == CONTINUED)
    counts, _ = native(db, CONTINUED)
    assert counts == {"user": 1, "calls": 1, "results": 2}
    assert doc_counts(doc) == {**counts, "results": 1}
    assert doc["extra"]["rewound_messages_skipped"] == 6
    assert doc["steps"][1]["extra"] == {"compacted": True}
    orphans = [s for s in doc["steps"] if (s.get("extra") or {}).get("kind") == "orphan_tool_result"]
    assert len(orphans) == 1 and "README.md" in orphans[0]["observation"]["results"][0]["content"]
    assert any("unknown call" in w for w in doc["extra"]["warnings"])


def test_damaged_databases_are_reported_not_crashed(tmp_path):
    db = writable_copy(tmp_path)
    data = open(LIVE_DB, "rb").read()
    with open(db, "wb") as handle:
        handle.write(data[: len(data) // 3])
    env = base_env(tmp_path, home=str(tmp_path / "home"))
    found = catalog.discover(env, names=["hermes"], use_cache=False)
    assert found.problems and "state.db" in found.problems[0].reason
    (session,) = found.sessions
    doc = documents.translate(session, env)
    assert_valid(doc)
    assert "state.db" in doc["extra"]["error"]
    with open(db, "wb") as handle:
        handle.write(b"this is not a database at all" * 10)
    found = catalog.discover(env, names=["hermes"], use_cache=False)
    assert "is not a SQLite database" in found.problems[0].reason


def test_golden_document(tmp_path):
    env = live_env(tmp_path)
    session = next(s for s in hermes.scan(LIVE_DB, env) if s.native_id == CONTINUED)
    doc = hermes.translate(session, env)
    assert_valid(doc)
    assert_golden(doc, "hermes", "live-continued-session")


def test_store_is_never_written(tmp_path):
    before = tree_digest(LIVE_HOME)
    env = live_env(tmp_path)
    translate_all(hermes, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(b'"agent":"hermes"') == 3
    assert tree_digest(LIVE_HOME) == before


def test_tool_result_failures():
    assert hermes.tool_result_extra('{"output": "", "exit_code": 2, "error": null}') == {
        "exit_code": 2, "is_error": True}
    assert hermes.tool_result_extra('{"error": "no such file"}') == {"is_error": True}
    assert hermes.tool_result_extra("plain text") is None
    assert hermes.decode_content('\x01json:[{"type": "text", "text": "hi"}]') == (
        [{"type": "text", "text": "hi"}], True)
    assert hermes.decode_content('\x00json:{"broken') == ('\x00json:{"broken', False)


# bounds on what is read --------------------------------------------------------------------------
def writable_live_home(tmp_path) -> tuple[dict, str]:
    env = base_env(tmp_path)
    shutil.copytree(os.path.join(LIVE_HOME, ".hermes"), os.path.join(env["HOME"], ".hermes"))
    return env, os.path.join(env["HOME"], ".hermes", "state.db")


def test_huge_and_deeply_nested_values_are_left_out_with_a_warning(tmp_path):
    """In the first session: the second prompt over the 64 MB limit per value (written by
    SQLite: Python never holds it), a tool result's structured content and a call list nested
    100,000 levels deep. Each is left out (the deep content kept as its text) with a warning,
    and the rest is read (before: the deep JSON raised RecursionError and the whole session
    was a failure)."""
    env, db = writable_live_home(tmp_path)
    deep = "printf('%.*c', 100000, '[') || printf('%.*c', 100000, ']')"
    connection = sqlite3.connect(db)
    connection.execute("UPDATE messages SET content = printf('%.*c', ?, 'x') WHERE id = 7",
                       (sqlite_ro.MAX_VALUE_BYTES + 1,))
    connection.execute(f"UPDATE messages SET content = char(1) || 'json:' || {deep} WHERE id = 3")
    connection.execute(f"UPDATE messages SET tool_calls = {deep} WHERE id = 8")
    connection.commit()
    connection.close()
    [session] = [s for s in hermes.scan(db, env) if s.native_id == CONTINUED]
    doc = hermes.translate(session, env)
    assert_valid(doc)
    assert {"1 value(s) of the messages held more than 64 MB each and were left out",
            "some messages' structured content is not readable JSON: kept as the text it is",
            "unreadable tool_calls JSON on an assistant message"} <= set(doc["extra"]["warnings"])
    assert doc["steps"][-1]["message"].startswith("SCENARIO-DONE hermes-1b")
    assert sum(len(s.get("tool_calls", [])) for s in doc["steps"]) == 3


def test_a_session_over_the_rows_limit_is_cut_with_a_warning(tmp_path, monkeypatch):
    """With the rows one document may read lowered to 3 (the session row, 2 messages), the
    session is read up to there and says where it was cut (before: no limit)."""
    monkeypatch.setattr(sqlite_ro, "MAX_SESSION_ROWS", 3, raising=False)
    [session] = [s for s in hermes.scan(LIVE_DB, {}) if s.native_id == CONTINUED]
    doc = hermes.translate(session, {})
    assert_valid(doc)
    assert "the messages after the first 2 were not read" in " ".join(doc["extra"]["warnings"])
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent"]
