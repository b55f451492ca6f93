"""opencode: the SQLite store (read through `sqlite_ro`, the live sample keeps most rows in its
-wal) and the older JSON tree become valid documents whose prompts, tool calls, results and
token totals are the native ones, computed here with SQL or from the JSON files.

Token convention checked here: opencode's `tokens.input` excludes the cache, so a step's
`prompt_tokens` = input + cache.read + cache.write, `cached_tokens` = cache.read and
`completion_tokens` = output + reasoning; the per-session sums equal the `session.tokens_*`
and `session.cost` columns opencode keeps itself.

Regenerate the golden file with `UPDATE_GOLDEN=1 pytest tests/test_agent_opencode.py`.
"""

import json
import os
import shutil
import sqlite3

import pytest

from agents import opencode, sqlite_ro
from discovery import catalog
from rendering import documents
from helpers import (LIVE, SAMPLES, assert_golden, assert_valid, base_env, cli, copy_into,
                     tree_digest)

LIVE_HOME = os.path.join(LIVE, "opencode-1.18.33")
DATA = ".local/share/opencode"
LIVE_DB = os.path.join(LIVE_HOME, DATA, "opencode.db")
OLD = os.path.join(SAMPLES, "opencode")
JSON_TREES = ["agent-sessions/storage_v2", "agent-sessions/storage_legacy", "cass/storage"]


# native facts, straight from the store -----------------------------------------------------------
def native_counts(db_path: str, session_id: str) -> dict:
    """What the session holds, by SQL over the raw rows (JSON decoded by SQLite itself)."""
    db = sqlite_ro.connect(db_path)
    parts = ("SELECT json_extract(p.data, '$.type'), json_extract(p.data, '$.state.status'), "
             "json_extract(p.data, '$.synthetic'), json_extract(m.data, '$.role') "
             "FROM part p JOIN message m ON m.id = p.message_id WHERE m.session_id = ?")
    rows = db.execute(parts, (session_id,)).fetchall()
    prompts = db.execute(
        "SELECT count(DISTINCT m.id) FROM message m JOIN part p ON p.message_id = m.id "
        "WHERE m.session_id = ? AND json_extract(m.data, '$.role') = 'user' AND "
        "(json_extract(p.data, '$.type') = 'file' OR (json_extract(p.data, '$.type') = 'text' "
        "AND coalesce(json_extract(p.data, '$.synthetic'), 0) = 0))", (session_id,)).fetchone()[0]
    return {"prompts": prompts,
            "calls": sum(1 for r in rows if r[0] == "tool"),
            "results": sum(1 for r in rows if r[0] == "tool" and r[1] in ("completed", "error")),
            "model_calls": sum(1 for r in rows if r[0] == "step-finish")}


def native_tokens(db_path: str, session_id: str) -> dict:
    """Sums over the session's step-finish parts, and opencode's own session totals."""
    db = sqlite_ro.connect(db_path)
    steps = db.execute(
        "SELECT sum(json_extract(data, '$.tokens.input') + json_extract(data, '$.tokens.cache.read') "
        "+ json_extract(data, '$.tokens.cache.write')), sum(json_extract(data, '$.tokens.output') "
        "+ json_extract(data, '$.tokens.reasoning')), sum(json_extract(data, '$.tokens.cache.read')), "
        "sum(json_extract(data, '$.cost')) FROM part WHERE session_id = ? "
        "AND json_extract(data, '$.type') = 'step-finish'", (session_id,)).fetchone()
    own = db.execute("SELECT tokens_input + tokens_cache_read + tokens_cache_write, "
                     "tokens_output + tokens_reasoning, tokens_cache_read, cost FROM session "
                     "WHERE id = ?", (session_id,)).fetchone()
    return {"steps": tuple(steps), "session": tuple(own)}


def document_counts(doc: dict) -> dict:
    steps = doc["steps"]
    return {"prompts": sum(1 for s in steps if s["source"] == "user"),
            "calls": sum(len(s.get("tool_calls", [])) for s in steps),
            "results": sum(1 for s in steps for r in (s.get("observation") or {}).get("results", [])
                           if "source_call_id" in r),
            "model_calls": sum(1 for s in steps if s["source"] == "agent")}


def document_tokens(doc: dict) -> tuple:
    final = doc["final_metrics"]
    return (final["total_prompt_tokens"], final["total_completion_tokens"],
            final["total_cached_tokens"], final["total_cost_usd"])


def session_ids(db_path: str) -> list[str]:
    return [r[0] for r in sqlite_ro.connect(db_path).execute("SELECT id FROM session ORDER BY id")]


def translate(module, db_path: str, session_id: str) -> dict:
    [session] = [s for s in module.scan(db_path, {}) if s.native_id == session_id]
    return module.translate(session, {})


def check_store(module, db_path: str) -> None:
    """Every session of a database: valid, and equal to the native counts and tokens."""
    for session_id in session_ids(db_path):
        doc = translate(module, db_path, session_id)
        assert_valid(doc)
        assert document_counts(doc) == native_counts(db_path, session_id)
        tokens = native_tokens(db_path, session_id)
        assert document_tokens(doc) == tokens["steps"] == tokens["session"]


# the live SQLite store ---------------------------------------------------------------------------
def test_live_sessions_match_the_rows():
    check_store(opencode, LIVE_DB)
    assert len(session_ids(LIVE_DB)) == 3


def test_live_session_reads_the_scenario_from_the_wal():
    doc = translate(opencode, LIVE_DB, "ses_dd6f4592cffeEi2zVz5av3tUd1")   # only in the -wal
    agent = [s for s in doc["steps"] if s["source"] == "agent"]
    assert [c["function_name"] for s in agent for c in s.get("tool_calls", [])] == ["bash", "read"]
    assert agent[0]["tool_calls"][0]["arguments"] == {"command": "echo hello-opencode-3 > note.txt && ls"}
    assert agent[0]["observation"]["results"][0]["content"] == "README.md\nnote.txt\n"
    assert agent[0]["observation"]["results"][0]["extra"]["exit_code"] == 0
    assert agent[-1]["message"] == ('SCENARIO-DONE opencode-3: note.txt in /tmp/agents/proj-opencode-other '
                                    'contains "hello-opencode-3".')
    assert agent[0]["model_name"] == "fakellm/fake-model"
    assert doc["agent"]["version"] == "1.18.33"


def test_sessions_are_scoped_by_their_directory(tmp_path):
    sessions = catalog.discover(base_env(tmp_path, LIVE_HOME), ["opencode"], use_cache=False).sessions
    mine = catalog.Scope("/tmp/agents/proj-opencode").filter(sessions)
    other = catalog.Scope("/tmp/agents/proj-opencode-other").filter(sessions)
    assert len(mine) == 2 and len(other) == 1
    assert catalog.first_message(other[0]).startswith('"SCENARIO opencode-3 in /tmp/agents/proj-opencode-other')
    assert other[0].title == "Scenario session"  # the title opencode gave it
    assert all(s.locator == s.native_id and s.model == "fakellm/fake-model" for s in sessions)


def listed_and_translated_models(env) -> list[tuple]:
    sessions = catalog.discover(env, ["opencode"], use_cache=False).sessions
    assert sessions
    return [(s.model, documents.translate(s, env)["agent"].get("model_name")) for s in sessions]


@pytest.mark.parametrize("tree", [None, *JSON_TREES])
def test_the_listing_names_the_model_as_the_document_does(tmp_path, tree):
    """`list` showed `fake-model` where the document said `fakellm/fake-model`."""
    home = str(tmp_path / "home")
    if tree:
        copy_into(home, os.path.join(OLD, tree), f"{DATA}/storage")
    else:
        shutil.copytree(LIVE_HOME, home)
    pairs = listed_and_translated_models(base_env(tmp_path, home))
    assert all(listed == translated and translated for listed, translated in pairs), pairs


def test_a_model_named_first_by_a_user_message_is_the_sessions_in_both(tmp_path):
    """Newer opencode records the chosen model in the user message (`model.providerID`,
    `model.modelID`); the listing took the first assistant's `modelID` alone."""
    home = str(tmp_path / "home")
    shutil.copytree(LIVE_HOME, home)
    db_path = os.path.join(home, DATA, "opencode.db")
    with sqlite3.connect(db_path) as connection:
        rows = connection.execute("SELECT id, data FROM message").fetchall()
        for message_id, data in rows:
            message = json.loads(data)
            if message["role"] == "user":
                message["model"] = {"providerID": "chosen", "modelID": "model-7"}
            connection.execute("UPDATE message SET data = ? WHERE id = ?", (json.dumps(message), message_id))
    pairs = listed_and_translated_models(base_env(tmp_path, home))
    assert pairs == [("chosen/model-7", "chosen/model-7")] * len(pairs)


# sub-agent sessions ------------------------------------------------------------------------------
def writable_copy(tmp_path, source_home: str = LIVE_HOME, data: str = DATA) -> str:
    home = str(tmp_path / "home")
    copy_into(home, os.path.join(source_home, data), data)
    return home


def add_child_session(db_path: str, parent: str, child: str, referenced: bool = True) -> None:
    """A `task` call in `parent` that ran sub-agent session `child` (one model call with one
    failing tool), shaped like opencode writes them."""
    db = sqlite3.connect(db_path)   # our own temporary copy
    row = db.execute("SELECT project_id, directory, time_created FROM session WHERE id = ?", (parent,)).fetchone()
    project, directory, created = row if row else ("p", "/tmp/agents/proj-opencode", 1795984956401)
    db.execute("INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, "
               "time_created, time_updated) VALUES (?, ?, ?, 's', ?, 'Child session', '1.18.33', ?, ?)",
               (child, project, parent, directory, created + 10, created + 20))
    tokens = {"input": 100, "output": 10, "reasoning": 5, "cache": {"read": 50, "write": 7}}
    rows = [
        ("msg_c1", {"role": "user", "time": {"created": created + 11}}, [
            ("prt_c1", {"type": "text", "text": "look for the bug"})]),
        ("msg_c2", {"role": "assistant", "modelID": "m", "providerID": "p", "time": {"created": created + 12},
                    "tokens": tokens, "cost": 0.25}, [
            ("prt_c2", {"type": "step-start"}),
            ("prt_c3", {"type": "reasoning", "text": "grep first"}),
            ("prt_c4", {"type": "tool", "tool": "bash", "callID": "call_c1",
                        "state": {"status": "error", "input": {"command": "grep -r bug"}, "error": "exit 2"}}),
            ("prt_c5", {"type": "step-finish", "tokens": tokens, "cost": 0.25})])]
    if referenced:
        task = {"type": "tool", "tool": "task", "callID": "call_task",
                "state": {"status": "completed", "input": {"prompt": "look for the bug"},
                          "output": f"task_id: {child}\n\n<task_result>none</task_result>",
                          "metadata": {"sessionId": child}}}
        message = db.execute("SELECT id FROM message WHERE session_id = ? AND "
                             "json_extract(data, '$.role') = 'assistant' ORDER BY id LIMIT 1", (parent,)).fetchone()
        db.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
                   "VALUES (?, ?, ?, 0, 0, ?)", (message[0] + "_task", message[0], parent, json.dumps(task)))
    for message_id, data, parts in rows:
        message_id = f"msg_{child}_{message_id}"
        db.execute("INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
                   (message_id, child, data["time"]["created"], data["time"]["created"], json.dumps(data)))
        for part_id, part in parts:
            db.execute("INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) "
                       "VALUES (?, ?, ?, 0, 0, ?)", (f"{message_id}_{part_id}", message_id, child, json.dumps(part)))
    db.commit()
    db.close()


def test_child_session_is_embedded_in_its_parent_and_not_listed(tmp_path):
    home = writable_copy(tmp_path)
    db_path = os.path.join(home, DATA, "opencode.db")
    parent, child = "ses_dd6f4640effe9UN4UznvrLnfy8", "ses_child000000000000000001"
    add_child_session(db_path, parent, child)
    env = base_env(tmp_path, home)
    sessions = catalog.discover(env, ["opencode"], use_cache=False).sessions
    assert child not in {s.native_id for s in sessions} and len(sessions) == 3
    [session] = [s for s in sessions if s.native_id == parent]
    doc = documents.translate(session, env)
    assert_valid(doc)
    [sub] = doc["subagent_trajectories"]
    assert sub["trajectory_id"] == sub["session_id"] == child
    task = [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])
            if r.get("subagent_trajectory_ref")]
    assert task[0]["subagent_trajectory_ref"] == [{"trajectory_id": child, "session_id": child}]
    assert document_counts(sub) == native_counts(db_path, child) == \
        {"prompts": 1, "calls": 1, "results": 1, "model_calls": 1}
    failed = sub["steps"][1]["observation"]["results"][0]
    assert failed == {"source_call_id": "call_c1", "content": "exit 2", "extra": {"is_error": True}}
    assert sub["steps"][1]["metrics"] == {"prompt_tokens": 157, "completion_tokens": 15, "cached_tokens": 50,
                                          "cost_usd": 0.25,
                                          "extra": {"cache_write_tokens": 7, "reasoning_tokens": 5}}
    # the parent's totals include its sub-agent's
    own = native_tokens(db_path, parent)["steps"]
    assert document_tokens(doc) == (own[0] + 157, own[1] + 15, own[2] + 50, own[3] + 0.25)


def test_unreferenced_and_orphaned_children(tmp_path):
    home = writable_copy(tmp_path)
    db_path = os.path.join(home, DATA, "opencode.db")
    parent = "ses_dd6f47b25ffez9I3YDFtVeqj7r"
    add_child_session(db_path, parent, "ses_child_unreferenced", referenced=False)
    add_child_session(db_path, "ses_gone", "ses_child_orphan", referenced=False)
    sessions = {s.native_id: s for s in opencode.scan(db_path, {})}
    assert "ses_child_orphan" in sessions and "ses_child_unreferenced" not in sessions
    doc = opencode.translate(sessions[parent], {})
    assert_valid(doc)
    assert doc["steps"][-1]["extra"]["kind"] == "subagent"
    assert_valid(opencode.translate(sessions["ses_child_orphan"], {}))


def test_only_sessions_no_ancestor_embeds_are_listed():
    parents = {"root": None, "child": "root", "grandchild": "child", "orphan": "gone",
               "loop-a": "loop-b", "loop-b": "loop-a", "self": "self"}
    listed = {s for s in parents if opencode.is_top_level(s, parents)}
    assert listed == {"root", "orphan", "loop-a", "loop-b", "self"}


# the JSON tree and the older dumps ---------------------------------------------------------------


def json_native_counts(storage: str, session_id: str) -> tuple[int, int, int]:
    """Prompts, tool calls and results from the message and part files."""
    messages = {}
    for directory, _, names in os.walk(os.path.join(storage, "message", session_id)):
        for name in names:
            data = json.load(open(os.path.join(directory, name)))
            messages[data["id"]] = data["role"]
    parts = []
    for directory, _, names in os.walk(os.path.join(storage, "part")):
        for name in names:
            data = json.load(open(os.path.join(directory, name)))
            owner = data.get("messageID") or os.path.basename(directory)
            if owner in messages:
                parts.append((messages[owner], owner, data))
    prompts = {owner for role, owner, p in parts if role == "user"
               and (p["type"] == "file" or (p["type"] == "text" and not p.get("synthetic")))}
    tools = [p for _, _, p in parts if p["type"] == "tool"]
    results = [p for p in tools if p["state"]["status"] in ("completed", "success", "error")]
    return len(prompts), len(tools), len(results)


@pytest.mark.parametrize("tree", JSON_TREES)
def test_json_tree_sessions(tmp_path, tree):
    home = str(tmp_path / "home")
    storage = copy_into(home, os.path.join(OLD, tree), f"{DATA}/storage")
    env = base_env(tmp_path, home)
    found = catalog.discover(env, ["opencode"], use_cache=False)
    assert not found.problems and found.sessions
    for session in found.sessions:
        assert session.extra["format"] == "json" and session.cwd
        doc = documents.translate(session, env)
        assert_valid(doc)
        counts = document_counts(doc)
        assert (counts["prompts"], counts["calls"], counts["results"]) == \
            json_native_counts(storage, session.native_id)


def write_json(storage, relative: str, data: dict) -> None:
    path = storage / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_json_tree_child_session_is_embedded(tmp_path):
    storage = tmp_path / "home" / DATA / "storage"
    for sid, parent in (("ses_p", None), ("ses_c", "ses_p")):
        write_json(storage, f"session/proj/{sid}.json",
                   {"id": sid, "parentID": parent, "directory": "/w", "title": sid, "version": "1.1.0",
                    "projectID": "proj", "time": {"created": 1730000000000 + len(sid)}})
        write_json(storage, f"message/{sid}/msg_{sid}_1.json",
                   {"id": f"msg_{sid}_1", "sessionID": sid, "role": "user", "time": {"created": 1730000001000}})
        write_json(storage, f"part/msg_{sid}_1/prt_1.json", {"id": "prt_1", "type": "text", "text": f"go {sid}"})
        write_json(storage, f"message/{sid}/msg_{sid}_2.json",
                   {"id": f"msg_{sid}_2", "sessionID": sid, "role": "assistant", "modelID": "m",
                    "time": {"created": 1730000002000}, "tokens": {"input": 3, "output": 2, "cache": {"read": 1}}})
    write_json(storage, "part/msg_ses_p_2/prt_2.json",
               {"id": "prt_2", "type": "tool", "tool": "task", "callID": "t1",
                "state": {"status": "completed", "input": {"prompt": "go"}, "output": "done",
                          "metadata": {"sessionId": "ses_c"}}})
    env = base_env(tmp_path, str(tmp_path / "home"))
    [session] = catalog.discover(env, ["opencode"], use_cache=False).sessions
    assert session.native_id == "ses_p" and catalog.first_message(session) == "go ses_p"
    assert session.title == "ses_p"  # the store's own title
    doc = documents.translate(session, env)
    assert_valid(doc)
    assert doc["steps"][1]["observation"]["results"][0]["subagent_trajectory_ref"][0]["trajectory_id"] == "ses_c"
    assert doc["subagent_trajectories"][0]["steps"][0]["message"] == "go ses_c"
    assert doc["final_metrics"]["total_prompt_tokens"] == 8   # 4 of each session's model call
    deps = opencode.dependencies(session.source, env)
    assert str(storage / "part" / "msg_ses_c_1" / "prt_1.json") in deps


def test_simplified_sql_dump(tmp_path):
    home = str(tmp_path / "home")
    os.makedirs(os.path.join(home, DATA))
    db = sqlite3.connect(os.path.join(home, DATA, "opencode.db"))
    db.executescript(open(os.path.join(OLD, "deja-vu", "opencode_db_dump_simplified.sql")).read())
    db.close()
    env = base_env(tmp_path, home)
    [session] = catalog.discover(env, ["opencode"], use_cache=False).sessions
    assert (session.cwd, session.title) == ("/workspace/registry-demo", "inspect the sqlite fixture")
    doc = documents.translate(session, env)
    assert_valid(doc)
    assert [s["source"] for s in doc["steps"]] == ["user", "agent"]


def test_database_override_and_channel_databases(tmp_path):
    home = writable_copy(tmp_path)
    directory = os.path.join(home, DATA)
    shutil.copy(os.path.join(directory, "opencode.db"), os.path.join(directory, "opencode-beta.db"))
    elsewhere = str(tmp_path / "elsewhere.db")
    env = base_env(tmp_path, home)
    assert [os.path.basename(p) for p in opencode.databases(env, opencode.OPENCODE)] == \
        ["opencode-beta.db", "opencode.db"]
    shutil.copy(os.path.join(directory, "opencode.db"), elsewhere)
    env["OPENCODE_DB"] = elsewhere
    assert opencode.databases(env, opencode.OPENCODE)[0] == elsewhere
    env["OPENCODE_DB"] = ":memory:"
    assert len(opencode.databases(env, opencode.OPENCODE)) == 2


# bad stores, read-only ---------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["garbage", "torn"])
def test_corrupt_database_is_a_clear_problem(tmp_path, damage):
    home = str(tmp_path / "home")
    os.makedirs(os.path.join(home, DATA))
    db_path = os.path.join(home, DATA, "opencode.db")
    with open(LIVE_DB, "rb") as handle:
        image = bytearray(handle.read())
    if damage == "garbage":
        image = bytearray(b"this is not a database at all" * 10)
    else:
        image[100:] = b"\xff" * (len(image) - 100)   # the header survives, every page is torn
    with open(db_path, "wb") as handle:
        handle.write(image)
    env = base_env(tmp_path, home)
    found = catalog.discover(env, ["opencode"], use_cache=False)
    [problem] = found.problems
    assert problem.source == db_path and "opencode.db" in problem.reason
    [placeholder] = found.sessions
    doc = documents.translate(placeholder, env)
    assert_valid(doc)
    assert doc["extra"]["error"]
    listing = cli("list", "--all", env=env)
    assert listing.returncode == 0, listing.stderr


def checkpointed_copy(tmp_path) -> str:
    """A copy of the live store with its WAL folded into the database: no -wal, no -shm."""
    home = writable_copy(tmp_path)
    db_path = os.path.join(home, DATA, "opencode.db")
    db = sqlite3.connect(db_path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("PRAGMA journal_mode=DELETE")
    db.close()
    assert not os.path.exists(db_path + "-wal") and not os.path.exists(db_path + "-shm")
    return home


@pytest.mark.parametrize("layout", ["with-wal", "checkpointed"])
def test_list_and_show_leave_the_store_untouched(tmp_path, layout):
    home = writable_copy(tmp_path) if layout == "with-wal" else checkpointed_copy(tmp_path)
    before = tree_digest(home)
    env = base_env(tmp_path, home)
    listing = cli("list", "--all", "--json", env=env)
    assert listing.returncode == 0, listing.stderr
    records = [json.loads(line) for line in listing.stdout.splitlines()]
    assert len(records) == 3
    for record in records:
        shown = cli("show", record["id"], env=env)
        assert shown.returncode == 0, shown.stderr
        assert_valid(json.loads(shown.stdout))
    assert tree_digest(home) == before   # same files (no new -wal/-shm), bytes and mtimes


# bounds on what is read --------------------------------------------------------------------------
SCENARIO = "ses_dd6f4592cffeEi2zVz5av3tUd1"
TEXT_PARTS = ("prt_2290bab980010sB8BBfXmjdESw", "prt_2290bac7b001ZmViBaYGkb8T51")  # its 1st, 2nd replies


def agent_calls(doc: dict) -> list[str]:
    return [c["function_name"] for s in doc["steps"] for c in s.get("tool_calls", [])]


def test_a_huge_or_deeply_nested_part_is_left_out_with_a_warning(tmp_path):
    """One part's data over the 64 MB limit per value (written by SQLite: Python never holds
    it), another nested 100,000 levels deep: both are left out, each with a warning, and the
    rest of the session is read (before: the huge part was read and parsed, the deep one
    dropped without a word)."""
    home = writable_copy(tmp_path)
    db = os.path.join(home, DATA, "opencode.db")
    connection = sqlite3.connect(db)
    connection.execute("""UPDATE part SET data = '{"type": "text", "text": "' || printf('%.*c', ?, 'x')"""
                       """ || '"}' WHERE id = ?""", (sqlite_ro.MAX_VALUE_BYTES, TEXT_PARTS[0]))
    connection.execute("UPDATE part SET data = printf('%.*c', 100000, '[') || printf('%.*c', 100000, ']')"
                       " WHERE id = ?", (TEXT_PARTS[1],))
    connection.commit()
    connection.close()
    doc = translate(opencode, db, SCENARIO)
    assert_valid(doc)
    assert {"1 value(s) of the parts held more than 64 MB each and were left out",
            "2 part(s) whose data is not a readable JSON object were skipped"} <= set(doc["extra"]["warnings"])
    assert agent_calls(doc) == ["bash", "read"]
    assert doc["steps"][-1]["message"].startswith("SCENARIO-DONE opencode-3")


def test_a_session_over_the_rows_limit_is_cut_with_a_warning(monkeypatch):
    """With the rows one document may read lowered to 6 (the session row, 4 messages, 1 part),
    the session is read up to there and says where it was cut (before: no limit)."""
    monkeypatch.setattr(sqlite_ro, "MAX_SESSION_ROWS", 6, raising=False)
    doc = translate(opencode, LIVE_DB, SCENARIO)
    assert_valid(doc)
    assert "the parts after the first 1 were not read" in " ".join(doc["extra"]["warnings"])
    assert agent_calls(doc) == []


def test_dependencies_include_the_wal(tmp_path):
    assert opencode.dependencies(LIVE_DB, {}) == [LIVE_DB, LIVE_DB + "-wal"]


def test_golden_document():
    assert_golden(translate(opencode, LIVE_DB, "ses_dd6f4640effe9UN4UznvrLnfy8"), "opencode", "live-second-session")
