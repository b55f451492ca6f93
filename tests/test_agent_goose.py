"""Goose: the sample SQL dump and legacy JSONL, plus a database built here with Goose's own schema.

The sample (`samples/goose/deja-vu`) holds a plain-text conversation only. To cover tool calls,
errors, thinking, sub-agents and token columns, `build_database` creates `sessions.db` with the
CREATE TABLE statements of block/goose `crates/goose/src/session/session_manager.rs`
(`SessionStorage::create`, schema version 5) plus the columns later releases added that
kenn-io/agentsview's `internal/parser/goose.go` reads (`provider_name`, `model_config_json`,
`parent_session_id`, `accumulated_cache_*`, `accumulated_cost`). Content blocks follow the shapes
of stores.md §8 (goose 1.48 rows quoted in vshulcz/deja-vu's tests).
Golden file: `tests/golden/goose/` (regenerate with `UPDATE_GOLDEN=1`).
"""

import json
import os
import shutil
import sqlite3

import pytest

from agents import goose, sqlite_ro
from atif.serialize import loads
from discovery import catalog
from helpers import (SAMPLES, assert_damaged_database_is_reported, assert_golden, assert_valid,
                     base_env, copy_database, doc_counts, read_jsonl, tree_digest)

SAMPLE_DIR = os.path.join(SAMPLES, "goose", "deja-vu", "sessions")

SCHEMA_V5 = """
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
INSERT INTO schema_version (version) VALUES (5);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '',
    user_set_name BOOLEAN DEFAULT FALSE, session_type TEXT NOT NULL DEFAULT 'user',
    working_dir TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, extension_data TEXT DEFAULT '{}',
    total_tokens INTEGER, input_tokens INTEGER, output_tokens INTEGER,
    accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
    accumulated_output_tokens INTEGER, schedule_id TEXT, recipe_json TEXT, user_recipe_values_json TEXT);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL, content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
    timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
ALTER TABLE messages ADD COLUMN message_id TEXT;
ALTER TABLE sessions ADD COLUMN provider_name TEXT;
ALTER TABLE sessions ADD COLUMN model_config_json TEXT;
ALTER TABLE sessions ADD COLUMN parent_session_id TEXT;
ALTER TABLE sessions ADD COLUMN accumulated_cache_read_tokens INTEGER;
ALTER TABLE sessions ADD COLUMN accumulated_cache_write_tokens INTEGER;
ALTER TABLE sessions ADD COLUMN accumulated_cost REAL;
"""


def text(value):
    return {"type": "text", "text": value}


def request(call_id, name, arguments):
    return {"type": "toolRequest", "id": call_id,
            "toolCall": {"status": "success", "value": {"name": name, "arguments": arguments}}}


def response(call_id, value=None, error=None):
    result = {"status": "error", "error": error} if error else {"status": "success", "value": value}
    return {"type": "toolResponse", "id": call_id, "toolResult": result}


SESSIONS = [
    # id, name, type, working_dir, created_at, parent, (input, output, cache read, cost)
    ("20260101_1", "fix the build", "user", "/work/proj-goose", "2026-01-01 10:00:00", None, (1200, 300, 400, 0.05)),
    ("20260101_2", "subagent", "sub_agent", "/work/proj-goose", "2026-01-01 10:00:30", "20260101_1", (100, 20, None, 0.001)),
    ("20260101_3", "say hi", "user", "/work/proj-goose-other", "2026-01-01 11:00:00", None, (None, None, None, None)),
]
MESSAGES = [
    # session, role, content, created, metadata, message id
    ("20260101_1", "user", [text("list the files, then check the build")], 1767261601, {"userVisible": True}, "u1"),
    ("20260101_1", "assistant", [text("Listing."), request("t1", "developer__shell", {"command": "ls"})], 1767261602, None, "a1"),
    ("20260101_1", "user", [response("t1", [text("a.txt")])], 1767261603, None, "u2"),
    ("20260101_1", "assistant", [{"type": "thinking", "thinking": "the build may fail", "signature": ""},
                                 request("t2", "developer__shell", {"command": "false"})], 1767261604, None, "a2"),
    ("20260101_1", "user", [response("t2", error="command failed: exit status 1")], 1767261605, None, "u3"),
    ("20260101_1", "assistant", [request("t3", "subagent__execute_task", {"instructions": "look at a.txt"})], 1767261606, None, "a3"),
    ("20260101_1", "user", [response("t3", {"content": [text("sub-agent 20260101_2 finished: a.txt is empty")],
                                            "isError": False})], 1767261640, None, "u4"),
    ("20260101_1", "user", [text("Summary of the conversation so far: ...")], 1767261641,
     {"userVisible": False, "agentVisible": True}, "u5"),
    ("20260101_1", "assistant", [text("Done: a.txt is empty and the build fails.")], 1767261642, None, "a4"),
    ("20260101_2", "user", [text("look at a.txt")], 1767261631, None, "s1"),
    ("20260101_2", "assistant", [text("a.txt is empty")], 1767261632, None, "s2"),
    ("20260101_3", "user", [text("hi")], 1767265201, None, "h1"),
    ("20260101_3", "assistant", [text("Hello!")], 1767265202,
     {"usage": {"inputTokens": 1000, "outputTokens": 50, "cacheReadTokens": 800, "cost": 0.01},
      "inference": {"resolvedModel": "claude-sonnet-4-5"}}, "h2"),
]


def build_database(directory: str, wal: bool = False) -> str:
    """`sessions.db` in `directory`; with `wal`, the last session's rows are left in the -wal."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "sessions.db")
    work = os.path.join(directory, "build", "sessions.db")
    os.makedirs(os.path.dirname(work))
    connection = sqlite3.connect(work)
    connection.executescript(SCHEMA_V5)
    if wal:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA wal_autocheckpoint=0")
    for sid, name, kind, cwd, created, parent, (tin, tout, cached, cost) in SESSIONS:
        connection.execute(
            "INSERT INTO sessions (id, name, session_type, working_dir, created_at, parent_session_id,"
            " accumulated_input_tokens, accumulated_output_tokens, accumulated_cache_read_tokens,"
            " accumulated_cost, model_config_json, provider_name) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (sid, name, kind, cwd, created, parent, tin, tout, cached, cost,
             json.dumps({"model_name": "claude-sonnet-4-5"}), "anthropic"))
        connection.commit()
    for sid, role, content, created, metadata, message_id in MESSAGES:
        connection.execute(
            "INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json, message_id)"
            " VALUES (?,?,?,?,?,?)",
            (sid, role, json.dumps(content), created, json.dumps(metadata) if metadata else None, message_id))
        connection.commit()
    copy_database(work, path)  # while open: the WAL is not checkpointed
    connection.close()
    shutil.rmtree(os.path.dirname(work))
    return path


def dump_database(directory: str) -> str:
    """The sample's SQL dump loaded into a database."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "sessions.db")
    with open(os.path.join(SAMPLE_DIR, "goose_sessions_db_dump.sql")) as handle:
        script = handle.read()
    connection = sqlite3.connect(path)
    connection.executescript(script)
    connection.close()
    return path


def goose_home(tmp_path, wal=False):
    env = base_env(tmp_path)
    sessions = os.path.join(env["HOME"], ".local", "share", "goose", "sessions")
    db = build_database(sessions, wal=wal)
    return env, db


def all_documents(source, env):
    return {s.native_id: goose.translate(s, env) for s in goose.scan(source, env)}


# native counts ------------------------------------------------------------------------------------
def native_counts(session_ids):
    rows = [m for m in MESSAGES if m[0] in session_ids]
    blocks = [(role, meta, b) for _, role, content, _, meta, _ in rows for b in content]
    prompts = sum(1 for _, role, content, _, meta, _ in rows
                  if role == "user" and any(b["type"] == "text" for b in content)
                  and (meta or {}).get("userVisible") is not False)
    calls = sum(1 for _, _, b in blocks if b["type"] == "toolRequest")
    results = sum(1 for _, _, b in blocks if b["type"] == "toolResponse")
    return {"user": prompts, "calls": calls, "results": results}


def test_built_database_translates_to_its_native_content(tmp_path):
    env, db = goose_home(tmp_path)
    docs = all_documents(db, env)
    assert sorted(docs) == ["20260101_1", "20260101_3"]  # the sub-agent is embedded, not listed
    for doc in docs.values():
        assert_valid(doc)
    main = docs["20260101_1"]
    assert doc_counts(main, with_subagents=True) == native_counts({"20260101_1", "20260101_2"})
    assert doc_counts(docs["20260101_3"], with_subagents=True) == native_counts({"20260101_3"})
    results = {r["source_call_id"]: r for s in main["steps"] for r in (s.get("observation") or {}).get("results", [])}
    assert results["t1"]["content"] == "a.txt"
    assert results["t2"]["extra"] == {"is_error": True}
    assert results["t3"]["subagent_trajectory_ref"] == [{"trajectory_id": "goose-20260101_2", "session_id": "20260101_2"}]
    assert [s["extra"]["kind"] for s in main["steps"] if s["source"] == "system"] == ["agent_only_context"]
    assert any(s.get("reasoning_content") == "the build may fail" for s in main["steps"])


def test_token_totals_are_the_session_columns_or_the_message_usage(tmp_path):
    env, db = goose_home(tmp_path)
    docs = all_documents(db, env)
    columns = {sid: totals for sid, *_, totals in SESSIONS}
    main = docs["20260101_1"]["final_metrics"]
    parent, child = columns["20260101_1"], columns["20260101_2"]
    assert main["total_prompt_tokens"] == parent[0] + child[0]
    assert main["total_completion_tokens"] == parent[1] + child[1]
    assert main["total_cached_tokens"] == parent[2]
    assert main["total_cost_usd"] == pytest.approx(parent[3] + child[3])
    usage = [m[4]["usage"] for m in MESSAGES if m[0] == "20260101_3" and m[4] and "usage" in m[4]]
    other = docs["20260101_3"]["final_metrics"]
    assert other["total_prompt_tokens"] == sum(u["inputTokens"] for u in usage)
    assert other["total_cached_tokens"] == sum(u["cacheReadTokens"] for u in usage)
    assert other["total_completion_tokens"] == sum(u["outputTokens"] for u in usage)


def test_sample_dump_and_legacy_jsonl(tmp_path):
    env = base_env(tmp_path)
    db = dump_database(str(tmp_path / "dump"))
    with open(os.path.join(SAMPLE_DIR, "goose_sessions_db_dump.sql")) as handle:
        dump = handle.read()
    dumped = [loads(line.split("', '", 3)[3].split("', ", 1)[0]) for line in dump.splitlines()
              if line.startswith("insert into messages")]
    docs = all_documents(db, env)
    assert len(docs) == dump.count("insert into sessions")
    steps = [s for d in docs.values() for s in d["steps"]]
    assert [s["message"] for s in steps] == [b["text"] for blocks in dumped for b in blocks]
    legacy = os.path.join(SAMPLE_DIR, "20250724_1.jsonl")
    (session,) = goose.scan(legacy, env)
    lines = read_jsonl(legacy)
    assert session.cwd == lines[0]["working_dir"]
    doc = goose.translate(session, env)
    assert_valid(doc)
    assert [s["message"] for s in doc["steps"]] == [b["text"] for r in lines[1:] for b in r["content"]]
    for d in docs.values():
        assert_valid(d)


def test_sources_database_first_then_legacy_files_and_scoping(tmp_path):
    env, db = goose_home(tmp_path)
    legacy_dir = os.path.join(env["HOME"], ".goose", "sessions")
    os.makedirs(legacy_dir)
    shutil.copy(os.path.join(SAMPLE_DIR, "20250724_1.jsonl"), legacy_dir)
    shutil.copy(os.path.join(SAMPLE_DIR, "20250724_1.jsonl"),
                os.path.join(os.path.dirname(db), "20260101_3.jsonl"))  # imported: also in the db
    assert list(goose.sources(env))[0] == db
    found = catalog.discover(env, ["goose"], use_cache=False)
    assert sorted(s.native_id for s in found.sessions) == ["20250724_1", "20260101_1", "20260101_3"]
    assert next(s for s in found.sessions if s.native_id == "20260101_3").source == db
    scoped = catalog.Scope("/work/proj-goose").filter(found.sessions)
    assert [s.native_id for s in scoped] == ["20260101_1"]
    root_env = {**env, "GOOSE_PATH_ROOT": str(tmp_path / "root")}
    moved = build_database(str(tmp_path / "root" / "data" / "sessions"))
    assert list(goose.sources(root_env))[0] == moved


def test_wal_only_rows_are_read_and_no_file_is_touched(tmp_path):
    env, db = goose_home(tmp_path, wal=True)
    assert os.path.getsize(db + "-wal") > 0
    before = tree_digest(os.path.dirname(db))
    docs = all_documents(db, env)
    assert sorted(docs) == ["20260101_1", "20260101_3"]
    assert docs["20260101_3"]["steps"][-1]["message"] == "Hello!"
    assert tree_digest(os.path.dirname(db)) == before


def test_damaged_database_and_rows(tmp_path):
    env, db = goose_home(tmp_path)
    os.makedirs(tmp_path / "bad")
    assert_damaged_database_is_reported(goose, db, str(tmp_path / "bad" / "sessions.db"), env)
    connection = sqlite3.connect(db)
    connection.execute("UPDATE messages SET content_json = '[{\"type\": \"text\", \"te' WHERE message_id = 'a4'")
    connection.commit()
    connection.close()
    doc = goose.translate(goose.scan(db, env)[0], env)
    assert_valid(doc)
    assert any("content_json is not a JSON array" in w for w in doc["extra"]["warnings"])


def test_truncated_legacy_file(tmp_path):
    env = base_env(tmp_path)
    path = str(tmp_path / "20250724_1.jsonl")
    with open(os.path.join(SAMPLE_DIR, "20250724_1.jsonl"), "rb") as handle:
        data = handle.read()
    with open(path, "wb") as handle:
        handle.write(data[:-20])
    doc = goose.translate(goose.scan(path, env)[0], env)
    assert_valid(doc)
    assert any("incomplete" in w for w in doc["extra"]["warnings"])


def test_golden(tmp_path):
    env, db = goose_home(tmp_path)
    doc = all_documents(db, env)["20260101_1"]
    assert_golden(doc, "goose", "built-db-20260101_1")


# bounds on what is read --------------------------------------------------------------------------
def test_a_message_over_the_value_limit_is_left_out_with_a_warning(tmp_path):
    """The first prompt's content over the 64 MB limit per value (written by SQLite: Python
    never holds it): the listing falls back to the session name, the document leaves the
    message out with a warning and keeps the rest (before: the 64 MB were read, parsed and
    listed)."""
    env, db = goose_home(tmp_path)
    connection = sqlite3.connect(db)
    connection.execute("""UPDATE messages SET content_json = '[{"type": "text", "text": "' ||"""
                       """ printf('%.*c', ?, 'x') || '"}]' WHERE message_id = 'u1'""",
                       (sqlite_ro.MAX_VALUE_BYTES,))
    connection.commit()
    connection.close()
    [session] = [s for s in goose.scan(db, env) if s.native_id == "20260101_1"]
    assert session.title == "fix the build"
    doc = goose.translate(session, env)
    assert_valid(doc)
    assert "1 value(s) of the messages held more than 64 MB each and were left out" in doc["extra"]["warnings"]
    assert doc["steps"][0]["source"] == "agent"
    assert doc["steps"][-1]["message"] == "Done: a.txt is empty and the build fails."


def test_a_session_over_the_rows_limit_is_cut_with_a_warning(tmp_path, monkeypatch):
    """With the rows one document may read lowered to 4, the sub-agent session read first takes
    them (its row, 2 messages) and the parent's messages are not read: it says so (before:
    no limit)."""
    env, db = goose_home(tmp_path)
    monkeypatch.setattr(sqlite_ro, "MAX_SESSION_ROWS", 4, raising=False)
    [session] = [s for s in goose.scan(db, env) if s.native_id == "20260101_1"]
    doc = goose.translate(session, env)
    assert_valid(doc)
    assert "the messages after the first 0 were not read" in " ".join(doc["extra"]["warnings"])
