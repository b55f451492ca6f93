"""Cursor CLI translator (agents/cursor.py): agent transcripts (the samples, plus a `.txt` one
written here) and chat stores (`store.db` built here the way cursor-agent lays it out: hex JSON
meta row, content-addressed blobs, a protobuf root; the only sample store has no blobs).

Counts are computed here from the native lines and must equal the documents'. Golden files:
`UPDATE_GOLDEN=1` rewrites them; read them through.
"""

import hashlib
import json
import os
import shutil
import sqlite3

import pytest

from agents import cursor, sqlite_ro
from discovery import catalog
from helpers import (SAMPLES, assert_golden, base_env, doc_counts, read_jsonl, scan_all,
                     translate_all, translate_file, tree_digest, truncate_copy)

SAMPLE_DIR = os.path.join(SAMPLES, "cursor")
AS = os.path.join(SAMPLE_DIR, "agent-sessions")
# sample -> where it goes under ~/.cursor (the loose agent-sessions files get a project folder)
LAYOUT = {
    os.path.join(AS, "projects/-tmp-proj/agent-transcripts/test-session.jsonl"): "projects/-tmp-proj/agent-transcripts/test-session.jsonl",
    os.path.join(AS, "stage0_small.jsonl"): "projects/fx/agent-transcripts/stage0_small.jsonl",
    os.path.join(AS, "stage0_large.jsonl"): "projects/fx/agent-transcripts/stage0_large/stage0_large.jsonl",
    os.path.join(AS, "stage0_schema_drift.jsonl"): "projects/fx/agent-transcripts/stage0_schema_drift.jsonl",
    os.path.join(AS, "subagent-session.jsonl"): "projects/fx/agent-transcripts/subagent-session.jsonl",
    os.path.join(AS, "subagent/parent.jsonl"): "projects/fx/agent-transcripts/parent/parent.jsonl",
    os.path.join(AS, "subagent/subagents/child.jsonl"): "projects/fx/agent-transcripts/parent/subagents/child.jsonl",
    os.path.join(SAMPLE_DIR, "deja-vu/projects/registry-demo/agent-transcripts/registry-cursor.jsonl"): "projects/registry-demo/agent-transcripts/registry-cursor.jsonl",
    os.path.join(AS, "chats/test-store.db"): "chats/0123456789abcdef0123456789abcdef/a1b2c3d4-e5f6-7890-abcd-ef1234567890/store.db",
}
PROJECT = "/tmp/agents/proj-cursor"
OTHER = "/tmp/agents/proj-cursor-other"


# native counts, written independently of the translator -------------------------------------------
def native_counts(path: str) -> dict:
    user = calls = results = 0
    for record in read_jsonl(path):
        blocks = (record.get("message") or {}).get("content") or []
        kinds = [str(b.get("type", "")).replace("-", "_") for b in blocks]
        calls += sum(k in ("tool_use", "tool_call") for k in kinds)
        results += sum(k == "tool_result" for k in kinds)
        if record.get("role") == "user":
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            if "<user_query>" in text:
                text = text.split("<user_query>", 1)[1].split("</user_query>", 1)[0]
            user += bool(text.strip())
    return {"user": user, "calls": calls, "results": results}


# chat stores, built as cursor-agent writes them ---------------------------------------------------
def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def build_store(home: str, cwd: str, agent_id: str, messages: list, meta_json: dict | None = None,
                workspace: str | None = None, wrap: bool = False, keep_open: bool = False):
    """`~/.cursor/chats/<md5(cwd)>/<agent_id>/store.db` in WAL mode. `wrap` stores the messages
    as protobuf around their JSON; `keep_open` returns the writer with the WAL not checkpointed."""
    folder = os.path.join(home, ".cursor", "chats", hashlib.md5(cwd.encode()).hexdigest(), agent_id)
    os.makedirs(folder, exist_ok=True)
    writer = sqlite3.connect(os.path.join(folder, "store.db"))
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    writer.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    ids = []
    for message in messages:
        data = json.dumps(message).encode()
        if wrap:
            data = _field(1, data)
        ids.append(hashlib.sha256(data).hexdigest())
        writer.execute("INSERT INTO blobs VALUES (?, ?)", (ids[-1], data))
    root = b"".join(_field(1, bytes.fromhex(i)) for i in ids) + (_field(9, workspace.encode()) if workspace else b"")
    root_id = hashlib.sha256(root).hexdigest()
    writer.execute("INSERT INTO blobs VALUES (?, ?)", (root_id, root))
    meta = {"agentId": agent_id, "name": "chat " + agent_id, "mode": "agent", "createdAt": 1781256145540,
            "lastUsedModel": "gpt-5", "latestRootBlobId": root_id}
    writer.execute("INSERT INTO meta VALUES ('0', ?)", (json.dumps(meta).encode().hex(),))
    writer.commit()
    if meta_json is not None:
        with open(os.path.join(folder, "meta.json"), "w") as handle:
            json.dump(meta_json, handle)
    if keep_open:
        return writer
    writer.close()
    return os.path.join(folder, "store.db")


def conversation(query: str, workspace_hint: str | None = None) -> list:
    info = f"<user_info>\nOS Version: linux\nWorkspace Path: {workspace_hint}\n</user_info>\n" if workspace_hint else ""
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": [{"type": "text", "text": f"{info}<user_query>\n{query}\n</user_query>"}]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "list first"},
            {"type": "text", "text": "Listing the files."},
            {"type": "tool-call", "toolCallId": "call-1", "toolName": "Shell", "args": {"command": "ls"}},
            {"type": "tool-call", "toolCallId": "call-2", "toolName": "Read", "args": {"path": "a.txt"}}]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "call-2", "toolName": "Read", "result": "contents of a"},
            {"type": "tool-result", "toolCallId": "call-1", "toolName": "Shell", "result": "a.txt\nb.txt",
             "isError": False}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Two files; a.txt holds 'contents of a'."}]},
    ]


# homes --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_home(tmp_path_factory):
    home = str(tmp_path_factory.mktemp("cursor-samples"))
    for source, target in LAYOUT.items():
        os.makedirs(os.path.dirname(os.path.join(home, ".cursor", target)), exist_ok=True)
        shutil.copy2(source, os.path.join(home, ".cursor", target))
    return home


# transcripts ------------------------------------------------------------------------------------
def test_every_sample_is_a_valid_document_with_native_counts(sample_home, tmp_path):
    env = base_env(tmp_path, home=sample_home)
    before = tree_digest(sample_home)
    found = {s.source: (s, doc) for s, doc in translate_all(cursor, env)}
    child = os.path.join(sample_home, ".cursor", LAYOUT[os.path.join(AS, "subagent/subagents/child.jsonl")])
    assert child not in found and len(found) == len(LAYOUT) - 1   # a sub-agent is no session of its own
    for path, (session, doc) in found.items():
        if path.endswith(".jsonl"):
            assert doc_counts(doc) == native_counts(path), path
        assert session.cwd is None and "cwd_unknown" in doc["extra"]
    assert tree_digest(sample_home) == before


def test_results_without_ids_answer_the_oldest_waiting_call(sample_home, tmp_path):
    path = os.path.join(sample_home, ".cursor", LAYOUT[os.path.join(AS, "stage0_large.jsonl")])
    doc = translate_file(cursor, path, base_env(tmp_path, home=sample_home))
    pairs = [(c["function_name"], r["content"], r["extra"]) for s in doc["steps"] for c in s.get("tool_calls", [])
             for r in s["observation"]["results"] if r["source_call_id"] == c["tool_call_id"]]
    assert pairs == [("Bash", "file1.txt\nfile2.txt", {"joined_by": "order", "tool_use_id": "t1"}),
                     ("Read", "hello world", {"joined_by": "order", "tool_use_id": "t2"})]
    assert all(c["extra"] == {"synthetic_id": True} for s in doc["steps"] for c in s.get("tool_calls", []))


def test_subagent_is_embedded_and_referenced_from_the_spawning_call(sample_home, tmp_path):
    path = os.path.join(sample_home, ".cursor", LAYOUT[os.path.join(AS, "subagent/parent.jsonl")])
    doc = translate_file(cursor, path, base_env(tmp_path, home=sample_home))
    [sub] = doc["subagent_trajectories"]
    assert sub["trajectory_id"] == "child" and sub["steps"][0]["message"] == "List files"
    [call_step] = [s for s in doc["steps"] if s.get("tool_calls")]
    assert call_step["observation"]["results"][0]["subagent_trajectory_ref"][0]["trajectory_id"] == "child"


def test_txt_transcript(tmp_path):
    home = str(tmp_path / "home")
    path = os.path.join(home, ".cursor/projects/Users-me-app/agent-transcripts/t1.txt")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write("user:\n<user_info>\nWorkspace Path: /Users/me/app\n</user_info>\n<user_query>\nfix it\n</user_query>\n"
                     "assistant:\n[Thinking] look first\n  at the file\nI'll read it.\n[Tool call] Read\n  path = src/a.py\n"
                     "[Tool result] Read\n  print('a')\nFixed.\n")
    env = base_env(tmp_path, home=home)
    [session] = scan_all(cursor, env)
    assert session.cwd == "/Users/me/app" and session.title == "fix it"   # hint verified against the slug
    doc = translate_file(cursor, path, env)
    agent = doc["steps"][-1]
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent"]
    assert agent["reasoning_content"] == "look first\nat the file"
    assert agent["message"] == "I'll read it.\nFixed."
    assert agent["tool_calls"][0]["arguments"] == {"path": "src/a.py"}
    assert agent["observation"]["results"][0]["content"] == "print('a')"


def test_workspace_hint_that_does_not_match_the_folder_is_not_used(tmp_path):
    home = str(tmp_path / "home")
    path = os.path.join(home, ".cursor/projects/Users-me-app/agent-transcripts/t2.jsonl")
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as handle:
        handle.write(json.dumps({"role": "user", "message": {"content": [{"type": "text", "text":
                     "<user_info>Workspace Path: /elsewhere/app</user_info><user_query>hi</user_query>"}]}}) + "\n")
    [session] = scan_all(cursor, base_env(tmp_path, home=home))
    assert session.cwd is None and session.extra["cwd_candidates_unverified"] == ["/elsewhere/app"]


def test_truncated_transcript_yields_a_valid_document_with_a_warning(sample_home, tmp_path):
    source = os.path.join(sample_home, ".cursor", LAYOUT[os.path.join(AS, "projects/-tmp-proj/agent-transcripts/test-session.jsonl")])
    target = str(tmp_path / "home/.cursor/projects/p/agent-transcripts/cut.jsonl")
    truncate_copy(source, target)
    doc = translate_file(cursor, target, base_env(tmp_path))
    assert doc["extra"]["warnings"] and doc["steps"][0]["message"] == "run ls command"


# chat stores ------------------------------------------------------------------------------------
def test_chat_store_with_an_uncheckpointed_wal(tmp_path):
    home = str(tmp_path / "home")
    writer = build_store(home, PROJECT, "agent-wal", conversation("list the files", PROJECT), keep_open=True)
    try:
        env = base_env(tmp_path, home=home)
        folder = os.path.dirname(scan_all(cursor, env)[0].source)
        assert os.path.getsize(os.path.join(folder, "store.db-wal")) > 0
        before = tree_digest(home)
        [session] = scan_all(cursor, env)
        doc = translate_file(cursor, session.source, env)
        assert tree_digest(home) == before                           # nothing written, no -shm touched
    finally:
        writer.close()
    assert session.cwd == PROJECT and doc["extra"]["cwd_source"] == "md5 of the chat folder"
    assert session.title == "list the files" and session.model == "gpt-5"
    assert [s["source"] for s in doc["steps"]] == ["system", "system", "user", "agent", "agent"]
    agent = doc["steps"][3]
    assert agent["reasoning_content"] == "list first"
    assert {r["source_call_id"]: r["content"] for r in agent["observation"]["results"]} == {
        "call-1": "a.txt\nb.txt", "call-2": "contents of a"}
    assert doc_counts(doc) == {"user": 1, "calls": 2, "results": 2}


def test_chat_store_cwd_sources(tmp_path):
    home = str(tmp_path / "home")
    build_store(home, PROJECT, "with-meta", conversation("a"), meta_json={"cwd": PROJECT})
    build_store(home, PROJECT, "sibling", conversation("b"))                     # sibling meta.json
    build_store(home, OTHER, "from-root", conversation("c"), workspace="file://" + OTHER, wrap=True)
    build_store(home, "/nowhere", "hint-mismatch", conversation("d", workspace_hint=OTHER))
    found = {s.native_id: s for s in scan_all(cursor, base_env(tmp_path, home=home))}
    assert found["with-meta"].cwd == PROJECT and found["with-meta"].extra["cwd_source"] == "meta.json"
    assert found["sibling"].cwd == PROJECT and found["sibling"].extra["cwd_source"] == "md5 of the chat folder"
    assert found["from-root"].cwd == OTHER and found["from-root"].title == "c"   # protobuf-wrapped blobs read
    assert found["hint-mismatch"].cwd is None
    assert found["hint-mismatch"].extra["cwd_candidates_unverified"] == [OTHER]


def test_project_scoping(tmp_path):
    home = str(tmp_path / "home")
    build_store(home, PROJECT, "s-1", conversation("one"))
    build_store(home, PROJECT, "s-2", conversation("two"), meta_json={"cwd": PROJECT})
    build_store(home, OTHER, "s-3", conversation("three", workspace_hint=OTHER))
    shutil.copytree(os.path.join(AS, "projects"), os.path.join(home, ".cursor", "projects"))   # no cwd
    found = catalog.discover(base_env(tmp_path, home=home), ["cursor"], use_cache=False).sessions
    assert {s.native_id for s in catalog.Scope(PROJECT).filter(found)} == {"s-1", "s-2"}
    assert {s.native_id for s in catalog.Scope(OTHER).filter(found)} == {"s-3"}
    assert {s.native_id for s in found if s.cwd is None} == {"test-session"}


def test_transcript_wins_over_the_chat_store_of_the_same_id_and_takes_its_cwd(tmp_path):
    home = str(tmp_path / "home")
    build_store(home, PROJECT, "same-id", conversation("from the store"), meta_json={"cwd": PROJECT, "createdAt": 1781256145540})
    transcript = os.path.join(home, ".cursor/projects/tmp-agents-proj-cursor/agent-transcripts/same-id.jsonl")
    os.makedirs(os.path.dirname(transcript))
    with open(transcript, "w") as handle:
        handle.write(json.dumps({"role": "user", "message": {"content": [{"type": "text", "text": "from the transcript"}]}}) + "\n")
    [session] = catalog.discover(base_env(tmp_path, home=home), ["cursor"], use_cache=False).sessions
    assert session.source == transcript and session.cwd == PROJECT and session.started == 1781256145.54


def test_damaged_stores_yield_valid_documents_with_warnings(sample_home, tmp_path):
    env = base_env(tmp_path, home=sample_home)
    store = os.path.join(sample_home, ".cursor", LAYOUT[os.path.join(AS, "chats/test-store.db")])
    doc = translate_file(cursor, store, env)                                   # the sample: meta, no blobs
    assert any("root blob" in w for w in doc["extra"]["warnings"])
    home = str(tmp_path / "home")
    path = build_store(home, PROJECT, "holes", conversation("q"))
    with sqlite3.connect(path) as writer:                                # lose one message blob
        writer.execute("DELETE FROM blobs WHERE CAST(data AS TEXT) LIKE '%tool-result%'")
    doc = translate_file(cursor, path, base_env(tmp_path, home=home))
    assert any("missing" in w for w in doc["extra"]["warnings"])
    assert doc_counts(doc) == {"user": 1, "calls": 2, "results": 0}


# golden files -----------------------------------------------------------------------------------
def test_golden_transcript(sample_home, tmp_path):
    path = os.path.join(sample_home, ".cursor", LAYOUT[os.path.join(AS, "stage0_large.jsonl")])
    assert_golden(translate_file(cursor, path, base_env(tmp_path, home=sample_home)), "cursor", "transcript-joined-by-order")


def test_golden_chat_store(tmp_path):
    home = str(tmp_path / "home")
    path = build_store(home, PROJECT, "golden-store", conversation("list the files", PROJECT))
    assert_golden(translate_file(cursor, path, base_env(tmp_path, home=home)), "cursor", "chat-store")


def test_context_only_user_message_is_not_a_prompt(tmp_path):
    home = str(tmp_path / "home")
    messages = [{"role": "user", "content": "<user_info>\nWorkspace Path: /tmp/agents/proj-cursor\n</user_info>"},
                *conversation("the real question")[1:]]
    path = build_store(home, PROJECT, "ctx", messages)
    doc = translate_file(cursor, path, base_env(tmp_path, home=home))
    assert [s["message"] for s in doc["steps"] if s["source"] == "user"] == ["the real question"]
    assert doc["steps"][0]["extra"] == {"kind": "context"}


# bounds on what is read --------------------------------------------------------------------------
def chat_store(tmp_path, agent_id: str) -> tuple[dict, str]:
    home = str(tmp_path / "home")
    return base_env(tmp_path, home=home), build_store(home, PROJECT, agent_id, conversation("list the files"))


def test_a_message_blob_over_the_value_limit_is_left_out_with_a_warning(tmp_path):
    """The last message's blob over the 64 MB limit per value (written by SQLite: Python never
    holds it): left out with a warning, the messages before it read (before: the 64 MB were
    read and parsed)."""
    env, path = chat_store(tmp_path, "huge")
    with sqlite3.connect(path) as writer:
        writer.execute("""UPDATE blobs SET data = CAST('{"role": "assistant", "content": "' ||"""
                       """ printf('%.*c', ?, 'x') || '"}' AS BLOB) WHERE CAST(data AS TEXT) LIKE '%Two files%'""",
                       (sqlite_ro.MAX_VALUE_BYTES,))
    doc = translate_file(cursor, path, env)
    assert "1 value(s) of the message blobs held more than 64 MB each and were left out" in doc["extra"]["warnings"]
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent"]
    assert doc_counts(doc) == {"user": 1, "calls": 2, "results": 2}


def test_a_wrapper_blob_with_a_million_fields_is_not_looked_through(tmp_path):
    """A message blob of a million empty protobuf fields before its JSON: only the first
    WRAPPER_FIELDS are looked into, so the blob is undecodable, with a warning (before: a
    million fields parsed into a list, as a 64 MB blob would be thirty million)."""
    env, path = chat_store(tmp_path, "wrapper")
    with sqlite3.connect(path) as writer:
        writer.execute("UPDATE blobs SET data = CAST(replace(printf('%.*c', 1000000, 'x'), 'x', "
                       "char(8) || char(0)) AS BLOB) || CAST(data AS BLOB) "
                       "WHERE CAST(data AS TEXT) LIKE '%Two files%'")
    doc = translate_file(cursor, path, env)
    assert any("1 message blob(s) could not be decoded" in w for w in doc["extra"]["warnings"])
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent"]


def test_a_session_over_the_rows_limit_is_cut_with_a_warning(tmp_path, monkeypatch):
    """With the rows one document may read lowered to 4: the root blob's entries are read up to
    4, and the meta row, the root and 2 message blobs are read; the document says both
    (before: no limit)."""
    env, path = chat_store(tmp_path, "rows")
    monkeypatch.setattr(sqlite_ro, "MAX_SESSION_ROWS", 4, raising=False)
    doc = translate_file(cursor, path, env)
    warnings = " ".join(doc["extra"]["warnings"])
    assert "root blob names more than 4 entries" in warnings
    assert "the message blobs after the first 0 were not read" in warnings
    assert [s["source"] for s in doc["steps"]] == ["system", "user"]
