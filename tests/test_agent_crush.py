"""Crush: no real crush.db exists in the samples (Crush could not be installed, see FAILED.md), so
`build_database` creates one in tmp from Crush's own migrations, charmbracelet/crush
`internal/db/migrations/`: `20250424200609_initial.sql` (sessions, files, messages and their
triggers, verbatim), then the columns later migrations add (`messages.provider`,
`sessions.summary_message_id`, `messages.is_summary_message`, `sessions.todos`). The `parts`
JSON follows `internal/message/message.go` (`marshalParts`: `[{type, data}]`) and
`internal/message/content.go` (the data structs and their json tags). Timestamps are seconds,
as Crush's `strftime('%s', 'now')` writes them; one session uses milliseconds, which the schema
comments once promised.
Golden file: `tests/golden/crush/` (regenerate with `UPDATE_GOLDEN=1`).
"""

import json
import os
import shutil
import sqlite3

import pytest

from agents import crush, sqlite_ro
from discovery import catalog
from helpers import (assert_damaged_database_is_reported, assert_golden, assert_valid, base_env,
                     copy_database, doc_counts, tree_digest)


INITIAL_MIGRATION = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    parent_session_id TEXT,
    title TEXT NOT NULL,
    message_count INTEGER NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    prompt_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    completion_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens>= 0),
    cost REAL NOT NULL DEFAULT 0.0 CHECK (cost >= 0.0),
    updated_at INTEGER NOT NULL,  -- Unix timestamp in seconds
    created_at INTEGER NOT NULL   -- Unix timestamp in seconds
);
CREATE TRIGGER IF NOT EXISTS update_sessions_updated_at
AFTER UPDATE ON sessions
BEGIN
UPDATE sessions SET updated_at = strftime('%s', 'now')
WHERE id = new.id;
END;
CREATE TABLE IF NOT EXISTS files (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    path TEXT NOT NULL,
    content TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,  -- Unix timestamp in seconds
    updated_at INTEGER NOT NULL,  -- Unix timestamp in seconds
    FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE,
    UNIQUE(path, session_id, version)
);
CREATE INDEX IF NOT EXISTS idx_files_session_id ON files (session_id);
CREATE INDEX IF NOT EXISTS idx_files_path ON files (path);
CREATE TABLE IF NOT EXISTS messages (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    role TEXT NOT NULL,
    parts BLOB NOT NULL default '[]',
    model TEXT,
    created_at INTEGER NOT NULL,  -- Unix timestamp in seconds
    updated_at INTEGER NOT NULL,  -- Unix timestamp in seconds
    finished_at INTEGER,  -- Unix timestamp in seconds
    FOREIGN KEY (session_id) REFERENCES sessions (id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS idx_messages_session_id ON messages (session_id);
CREATE TRIGGER IF NOT EXISTS update_session_message_count_on_insert
AFTER INSERT ON messages
BEGIN
UPDATE sessions SET
    message_count = message_count + 1
WHERE id = new.session_id;
END;
"""
LATER_MIGRATIONS = """
ALTER TABLE messages ADD COLUMN provider TEXT;
ALTER TABLE sessions ADD COLUMN summary_message_id TEXT;
ALTER TABLE messages ADD COLUMN is_summary_message INTEGER DEFAULT 0 NOT NULL;
ALTER TABLE sessions ADD COLUMN todos TEXT;
"""

T0 = 1767261600  # 2026-01-01T10:00:00Z


def part(kind, **data):
    return {"type": kind, "data": data}


def call(call_id, name, arguments):
    return part("tool_call", id=call_id, name=name, input=json.dumps(arguments),
                provider_executed=False, finished=True)


def result(call_id, name, content, is_error=False):
    return part("tool_result", tool_call_id=call_id, name=name, content=content, data="",
                mime_type="", metadata="", is_error=is_error)


def finish(reason, when):
    return part("finish", reason=reason, time=when)


SESSIONS = [
    # id, parent, title, prompt_tokens, completion_tokens, cost, created_at
    ("s-main", None, "Fix the failing test", 5000, 200, 0.12, T0),
    ("call_2", "s-main", "New Agent Session", 900, 40, 0.02, T0 + 20),
    ("s-other", None, "Say hello", 300, 10, 0.001, (T0 + 3600) * 1000),
    ("m-b$$call_b", "s-other", "Fetch", 100, 5, 0.0005, (T0 + 3610) * 1000),
]
MESSAGES = [
    # id, session, role, parts, model, created_at
    ("m1", "s-main", "user", [part("text", text="run the tests and fix the failing one"), finish("stop", T0 + 1)], None, T0 + 1),
    ("m2", "s-main", "assistant", [part("reasoning", thinking="run the tests first", signature=""),
                                   part("text", text="Running the tests."),
                                   call("call_1", "bash", {"command": "go test ./..."}), finish("tool_use", T0 + 3)],
     "claude-sonnet-4", T0 + 2),
    ("m3", "s-main", "tool", [result("call_1", "bash", "--- FAIL: TestX"), finish("stop", T0 + 4)], None, T0 + 4),
    ("m4", "s-main", "assistant", [call("call_2", "agent", {"prompt": "find where TestX is"}), finish("tool_use", T0 + 5)],
     "claude-sonnet-4", T0 + 5),
    ("c1", "call_2", "user", [part("text", text="find where TestX is"), finish("stop", T0 + 21)], None, T0 + 21),
    ("c2", "call_2", "assistant", [call("call_c1", "grep", {"pattern": "TestX"}), finish("tool_use", T0 + 22)], "claude-haiku", T0 + 22),
    ("c3", "call_2", "tool", [result("call_c1", "grep", "x_test.go:12")], None, T0 + 23),
    ("c4", "call_2", "assistant", [part("text", text="TestX is in x_test.go"), finish("end_turn", T0 + 24)], "claude-haiku", T0 + 24),
    ("m5", "s-main", "tool", [result("call_2", "agent", "TestX is in x_test.go")], None, T0 + 30),
    ("m6", "s-main", "assistant", [call("call_3", "edit", {"file_path": "x_test.go", "old_string": "1", "new_string": "2"}),
                                   finish("tool_use", T0 + 31)], "claude-sonnet-4", T0 + 31),
    ("m7", "s-main", "tool", [result("call_3", "edit", "permission denied", is_error=True)], None, T0 + 32),
    ("m8", "s-main", "user", [part("text", text="allowed now, try again"),
                              part("image_url", url="https://example.com/screen.png", detail=""),
                              finish("stop", T0 + 40)], None, T0 + 40),
    ("m9", "s-main", "assistant", [part("text", text="Fixed: TestX passes."), finish("end_turn", T0 + 41)], "claude-sonnet-4", T0 + 41),
    ("b1", "s-other", "user", [part("text", text="say hello"), finish("stop", 0)], None, (T0 + 3601) * 1000),
    ("b2", "s-other", "assistant", [part("text", text="Fetching a greeting."), call("call_b", "agentic_fetch", {"url": "https://example.com"}),
                                    finish("tool_use", 0)], "gpt-5", (T0 + 3602) * 1000),
    ("d1", "m-b$$call_b", "user", [part("text", text="fetch https://example.com")], None, (T0 + 3611) * 1000),
    ("d2", "m-b$$call_b", "assistant", [part("text", text="It says hello."), finish("end_turn", 0)], "gpt-5-mini", (T0 + 3612) * 1000),
    ("b3", "s-other", "tool", [result("call_b", "agentic_fetch", "It says hello.")], None, (T0 + 3620) * 1000),
    ("b4", "s-other", "assistant", [part("text", text="Hello!"), finish("end_turn", 0)], "gpt-5", (T0 + 3621) * 1000),
]


def build_database(project: str, wal: bool = False, extra_sql: str = "") -> str:
    """`<project>/.crush/crush.db` built from Crush's migrations; with `wal`, left un-checkpointed."""
    path = os.path.join(project, ".crush", "crush.db")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    work = os.path.join(project, ".build", "crush.db")
    os.makedirs(os.path.dirname(work))
    connection = sqlite3.connect(work)
    connection.executescript(INITIAL_MIGRATION + LATER_MIGRATIONS + extra_sql)
    if wal:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA wal_autocheckpoint=0")
    for sid, parent, title, prompt, completion, cost, created in SESSIONS:
        connection.execute(
            "INSERT INTO sessions (id, parent_session_id, title, prompt_tokens, completion_tokens, cost,"
            " created_at, updated_at) VALUES (?,?,?,?,?,?,?,?)",
            (sid, parent, title, prompt, completion, cost, created, created))
    for mid, sid, role, parts, model, created in MESSAGES:
        connection.execute(
            "INSERT INTO messages (id, session_id, role, parts, model, provider, created_at, updated_at)"
            " VALUES (?,?,?,?,?,?,?,?)",
            (mid, sid, role, json.dumps(parts), model, "anthropic" if model else None, created, created))
        connection.commit()
    copy_database(work, path)
    connection.close()
    shutil.rmtree(os.path.dirname(work))
    return path


def documents(db, env):
    return {s.native_id: crush.translate(s, env) for s in crush.scan(db, env)}


def session_tree(root):
    ids = {root}
    for sid, parent, *_ in SESSIONS:
        if parent in ids:
            ids.add(sid)
    return ids


def native_counts(session_ids):
    rows = [m for m in MESSAGES if m[1] in session_ids]
    prompts = sum(1 for _, _, role, parts, *_ in rows
                  if role == "user" and any(p["type"] == "text" for p in parts))
    calls = sum(1 for *_, parts, _, _ in rows for p in parts if p["type"] == "tool_call")
    results = sum(1 for *_, parts, _, _ in rows for p in parts if p["type"] == "tool_result")
    return {"user": prompts, "calls": calls, "results": results}


@pytest.fixture
def store(tmp_path):
    project = str(tmp_path / "proj-crush")
    return base_env(tmp_path), project, build_database(project)


def test_every_session_translates_to_its_native_content(store):
    env, project, db = store
    docs = documents(db, env)
    assert sorted(docs) == ["s-main", "s-other"]  # sub-agent sessions are embedded
    for sid, doc in docs.items():
        assert_valid(doc)
        assert doc_counts(doc, with_subagents=True) == native_counts(session_tree(sid))
    main = docs["s-main"]
    results = {r["source_call_id"]: r for s in main["steps"] for r in (s.get("observation") or {}).get("results", [])}
    assert results["call_1"]["content"] == "--- FAIL: TestX"
    assert results["call_3"]["extra"] == {"is_error": True}
    assert results["call_2"]["subagent_trajectory_ref"][0]["session_id"] == "call_2"
    assert docs["s-other"]["steps"][1]["observation"]["results"][0]["subagent_trajectory_ref"][0][
        "session_id"] == "m-b$$call_b"
    assert main["steps"][1]["reasoning_content"] == "run the tests first"
    assert main["steps"][1]["tool_calls"][0]["arguments"] == {"command": "go test ./..."}
    assert main["agent"]["model_name"] == "claude-sonnet-4"


def test_seconds_and_milliseconds_give_the_same_clock(store):
    env, _, db = store
    sessions = {s.native_id: s for s in crush.scan(db, env)}
    assert sessions["s-main"].started == T0
    assert sessions["s-other"].started == T0 + 3600
    docs = documents(db, env)
    assert docs["s-other"]["steps"][0]["timestamp"] == "2026-01-01T11:00:01.000Z"
    assert docs["s-main"]["steps"][0]["timestamp"] == "2026-01-01T10:00:01.000Z"


def test_tokens_and_cost_are_the_session_figures(store):
    env, _, db = store
    docs = documents(db, env)
    for sid, parent, title, prompt, completion, cost, created in SESSIONS:
        if parent:
            continue
        final = docs[sid]["final_metrics"]
        assert final["total_cost_usd"] == pytest.approx(cost)  # a task's cost is already in its parent's
        assert final["extra"]["last_call_prompt_tokens"] == prompt
        assert final["extra"]["last_call_completion_tokens"] == completion
        assert "total_prompt_tokens" not in final
    child = docs["s-main"]["subagent_trajectories"][0]["final_metrics"]
    assert child["total_cost_usd"] == pytest.approx(SESSIONS[1][5])


def test_discovery_from_projects_json_and_the_current_directory(tmp_path):
    env = base_env(tmp_path)
    here = build_database(str(tmp_path / "proj-crush"))
    elsewhere = str(tmp_path / "elsewhere")
    os.makedirs(elsewhere)
    custom_data = str(tmp_path / "data" / "other")
    os.makedirs(custom_data)
    registered = shutil.copy(build_database(str(tmp_path / "scratch")), os.path.join(custom_data, "crush.db"))
    connection = sqlite3.connect(registered)  # session ids are UUIDs, unique across projects
    for table, column in (("sessions", "id"), ("sessions", "parent_session_id"), ("messages", "session_id")):
        connection.execute(f"UPDATE {table} SET {column} = 'other-' || {column} WHERE {column} IS NOT NULL")
    connection.commit()
    connection.close()
    projects_json = os.path.join(env["HOME"], ".local", "share", "crush", "projects.json")
    os.makedirs(os.path.dirname(projects_json))
    with open(projects_json, "w") as handle:
        json.dump({"projects": [{"path": str(tmp_path / "proj-crush-other"), "data_dir": custom_data,
                                 "last_accessed": "2026-01-01T10:00:00Z"}]}, handle)
    inner = str(tmp_path / "proj-crush" / "pkg" / "deep")
    os.makedirs(inner)
    assert sorted(crush.sources({**env, "PWD": inner})) == sorted([registered, here])
    assert list(crush.sources({**env, "PWD": elsewhere})) == [registered]
    assert {s.cwd for s in crush.scan(registered, env)} == {str(tmp_path / "proj-crush-other")}
    assert {s.cwd for s in crush.scan(here, env)} == {str(tmp_path / "proj-crush")}
    found = catalog.discover({**env, "PWD": inner}, ["crush"], use_cache=False)
    scoped = catalog.Scope(str(tmp_path / "proj-crush")).filter(found.sessions)
    assert len(found.sessions) == 4 and {s.source for s in scoped} == {here}


def test_workspace_cwd_column_wins_where_a_release_has_it(tmp_path):
    env = base_env(tmp_path)
    db = build_database(str(tmp_path / "proj"), extra_sql="ALTER TABLE sessions ADD COLUMN workspace_cwd TEXT;")
    connection = sqlite3.connect(db)
    connection.execute("UPDATE sessions SET workspace_cwd = '/work/sub' WHERE id = 's-main'")
    connection.commit()
    connection.close()
    cwds = {s.native_id: s.cwd for s in crush.scan(db, env)}
    assert cwds == {"s-main": "/work/sub", "s-other": str(tmp_path / "proj")}


def test_wal_is_read_and_no_file_is_touched(tmp_path):
    env = base_env(tmp_path)
    db = build_database(str(tmp_path / "proj"), wal=True)
    assert os.path.getsize(db + "-wal") > 0
    before = tree_digest(os.path.dirname(db))
    docs = documents(db, env)
    assert docs["s-other"]["steps"][-1]["message"] == "Hello!"
    assert tree_digest(os.path.dirname(db)) == before


def test_damaged_database_and_rows(store):
    env, project, db = store
    assert_damaged_database_is_reported(crush, db, os.path.join(project, "bad.db"), env)
    connection = sqlite3.connect(db)
    connection.execute("UPDATE messages SET parts = '[{\"type\": \"text\", \"da' WHERE id = 'm9'")
    connection.execute("UPDATE messages SET parts = ? WHERE id = 'm6'", (json.dumps(
        [part("tool_call", id="call_3", name="edit", input='{"file_path": "x_te', finished=False)]),))
    connection.commit()
    connection.close()
    doc = crush.translate(crush.scan(db, env)[0], env)
    assert_valid(doc)
    assert any("parts is not a JSON array" in w for w in doc["extra"]["warnings"])
    cut_call = next(c for s in doc["steps"] for c in s.get("tool_calls", []) if c["tool_call_id"] == "call_3")
    assert cut_call["arguments"] == {"input": '{"file_path": "x_te'}


def test_golden(store):
    env, _, db = store
    doc = documents(db, env)["s-main"]
    assert_golden(doc, "crush", "built-db-s-main")


# bounds on what is read --------------------------------------------------------------------------
def test_a_message_over_the_value_limit_is_left_out_with_a_warning(store):
    """The first prompt's parts over the 64 MB limit per value (written by SQLite: Python never
    holds it): the listing falls back to the session title, the document leaves the message
    out with a warning and keeps the rest (before: the 64 MB were read, parsed and listed)."""
    env, _, db = store
    connection = sqlite3.connect(db)
    connection.execute("""UPDATE messages SET parts = '[{"type": "text", "data": {"text": "' ||"""
                       """ printf('%.*c', ?, 'x') || '"}}]' WHERE id = 'm1'""", (sqlite_ro.MAX_VALUE_BYTES,))
    connection.commit()
    connection.close()
    [session] = [s for s in crush.scan(db, env) if s.native_id == "s-main"]
    assert session.title == "Fix the failing test"
    doc = crush.translate(session, env)
    assert_valid(doc)
    assert "1 value(s) of the messages held more than 64 MB each and were left out" in doc["extra"]["warnings"]
    assert [s["source"] for s in doc["steps"]][:2] == ["agent", "agent"]
    assert doc["steps"][-1]["message"] == "Fixed: TestX passes."


def test_a_session_over_the_rows_limit_is_cut_with_a_warning(store, monkeypatch):
    """With the rows one document may read lowered to 5, the sub-agent session read first takes
    them (its row, none of its own children, 2 messages) and the parent's messages are not
    read: each document says so (before: no limit)."""
    env, _, db = store
    monkeypatch.setattr(sqlite_ro, "MAX_SESSION_ROWS", 5, raising=False)
    [session] = [s for s in crush.scan(db, env) if s.native_id == "s-main"]
    doc = crush.translate(session, env)
    assert_valid(doc)
    assert "the messages after the first 0 were not read" in " ".join(doc["extra"]["warnings"])
    [child] = doc["subagent_trajectories"]
    assert "the messages after the first 2 were not read" in " ".join(child["extra"]["warnings"])
