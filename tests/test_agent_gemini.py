"""Gemini CLI translator (agents/gemini.py) against the sample stores and the live 0.61.0 home.

Counts and token sums are computed here straight from the native records (after the last copy
of a message id wins, `$rewindTo` drops messages and `$set.messages` snapshots add theirs) and
must equal what the documents hold. Golden files: `UPDATE_GOLDEN=1` rewrites them; read the
diff through before committing.
"""

import json
import os
import shutil

import pytest

from agents import gemini
from discovery import catalog
from helpers import (LIVE, SAMPLES, assert_golden, assert_holds_runs,
                     assert_scoped_as_the_scenario, assert_valid, base_env, doc_counts, live_copy,
                     read_jsonl, scan_all, scenario_sessions, totals, translate_all, translate_file,
                     tree_digest, truncate_copy, write_jsonl)

SAMPLE_DIR = os.path.join(SAMPLES, "gemini")
LIVE_HOME = os.path.join(LIVE, "gemini-0.61.0")
CHAT_SAMPLES = sorted(os.path.join(folder, name) for folder, _, names in os.walk(SAMPLE_DIR)
                      for name in names if name.endswith((".json", ".jsonl")) and name != "logs.json")
PROMPT_LOG = os.path.join(SAMPLE_DIR, "agent-history", "logs.json")
INJECTED = ("<session_context>", "<state_snapshot>")


# native view, written independently of the translator ---------------------------------------------
def native_messages(path: str) -> list[dict]:
    if path.endswith(".json"):
        with open(path, "rb") as handle:
            doc = json.loads(handle.read())
        return [m for m in doc.get("messages", doc.get("history", [])) if isinstance(m, dict)]
    order, records = [], {}
    for record in read_jsonl(path):
        if "$rewindTo" in record:
            target = record["$rewindTo"]
            order = order[:order.index(target)] if target in order else []
        elif isinstance(record.get("id"), str):
            records[record["id"]] = record
            if record["id"] not in order:
                order.append(record["id"])
        elif isinstance(record.get("$set"), dict):
            for message in record["$set"].get("messages") or []:
                records.setdefault(message["id"], message)
                if message["id"] not in order:
                    order.append(message["id"])
    return [records[i] for i in order]


def as_parts(value) -> list:
    if isinstance(value, str):
        return [{"text": value}]
    if isinstance(value, dict):
        return [value]
    return [p if isinstance(p, dict) else {"text": p} for p in value or []]


def native_counts(messages: list[dict]) -> tuple[dict, tuple]:
    user = calls = results = 0
    prompt = completion = cached = 0
    has_tokens = False
    called, answered = set(), set()
    for message in messages:
        kind = message.get("type") or message.get("role")
        parts = as_parts(message["content"] if "content" in message else message.get("parts"))
        if kind == "user":
            shown = as_parts(message.get("displayContent")) or parts
            text = "".join(p.get("text", "") for p in shown if not p.get("thought"))
            user += bool(text) and not text.startswith(INJECTED)
            for part in parts:
                response_id = (part.get("functionResponse") or {}).get("id")
                if response_id in called and response_id not in answered:
                    results += 1
                    answered.add(response_id)
        elif kind in ("gemini", "model"):
            for call in message.get("toolCalls") or []:
                calls += 1
                called.add(call.get("id"))
                if call.get("result") or call.get("status") not in (None, "success"):
                    results += 1
                    answered.add(call.get("id"))
            for part in parts:
                call = part.get("functionCall")
                if call and call.get("id") not in called:
                    calls += 1
                    called.add(call.get("id"))
            tokens = message.get("tokens") or {}
            if tokens:
                has_tokens = True
                prompt += tokens.get("input", 0)
                completion += tokens.get("output", 0) + tokens.get("thoughts", 0)
                cached += tokens.get("cached", 0)
    totals = (prompt, completion, cached) if has_tokens else (None, None, None)
    return {"user": user, "calls": calls, "results": results}, totals


# homes --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_home(tmp_path_factory):
    """Every sample chat file in one project folder, with the sample prompt log."""
    home = str(tmp_path_factory.mktemp("gemini-samples"))
    chats = os.path.join(home, ".gemini", "tmp", "samples", "chats")
    os.makedirs(chats)
    for path in CHAT_SAMPLES:
        shutil.copy2(path, os.path.join(chats, os.path.relpath(path, SAMPLE_DIR).replace(os.sep, "__")))
    shutil.copy2(PROMPT_LOG, os.path.join(home, ".gemini", "tmp", "samples", "logs.json"))
    return home


def chat_files(home: str) -> list[str]:
    return [s for s in gemini.sources({"HOME": home}) if not s.endswith("logs.json")]


# every sample -------------------------------------------------------------------------------------
def test_every_sample_is_a_valid_document_with_native_counts(sample_home, tmp_path):
    env = base_env(tmp_path, home=sample_home)
    before = tree_digest(sample_home)
    by_source = {s.source: (s, doc) for s, doc in translate_all(gemini, env)}
    assert len([s for s, _ in by_source.values() if s.extra["format"] != "prompt-log"]) == len(CHAT_SAMPLES)
    for path in chat_files(sample_home):
        _, doc = by_source[path]
        counts, tokens = native_counts(native_messages(path))
        assert doc_counts(doc) == counts, path
        assert totals(doc) == tokens, path
    assert tree_digest(sample_home) == before


def test_live_sessions_follow_the_scenario(tmp_path):
    """Prompts, tool outputs, final answers and cwd of the real 0.61.0 store, resumed session
    included (its history snapshot must not duplicate the first turn)."""
    env = base_env(tmp_path, home=live_copy(tmp_path, LIVE_HOME))
    for session, runs in scenario_sessions(gemini, env, LIVE_HOME):
        doc = gemini.translate(session, env)
        assert_valid(doc)
        assert_holds_runs(doc, session, runs)
        counts, tokens = native_counts(native_messages(session.source))
        assert (doc_counts(doc), totals(doc)) == (counts, tokens)


def test_project_scoping_with_the_live_projects(tmp_path):
    assert_scoped_as_the_scenario("gemini", base_env(tmp_path, home=live_copy(tmp_path, LIVE_HOME)), LIVE_HOME)


def test_project_root_from_each_source_never_the_folder_name(tmp_path):
    gemini_dir = os.path.join(live_copy(tmp_path, LIVE_HOME), ".gemini")
    project = os.path.join(gemini_dir, "tmp", "proj-gemini")
    digest = "d874b1361cb09c25a6ef149675b929a56615235ad5bcd1195f10b3fe7f3f6eb9"
    assert gemini.project_root(project, digest) == "/tmp/agents/proj-gemini"
    os.remove(os.path.join(project, ".project_root"))           # projects.json
    assert gemini.project_root(project, digest) == "/tmp/agents/proj-gemini"
    os.remove(os.path.join(gemini_dir, "projects.json"))       # hash of a root history/ knows
    assert gemini.project_root(project, digest) == "/tmp/agents/proj-gemini"
    assert gemini.project_root(project, "0" * 64) is None       # no known root has that hash
    shutil.rmtree(os.path.join(gemini_dir, "history"))
    os.remove(os.path.join(gemini_dir, "tmp", "proj-gemini-other", ".project_root"))
    assert gemini.project_root(project, digest) is None         # the name alone proves nothing


# JSONL semantics --------------------------------------------------------------------------------
def user(mid, text, at):
    return {"id": mid, "timestamp": at, "type": "user", "content": [{"text": text}]}


def reply(mid, text, at, tokens=None, calls=None):
    record = {"id": mid, "timestamp": at, "type": "gemini", "content": text, "model": "gemini-x"}
    if tokens:
        record["tokens"] = {"input": tokens, "output": 5, "cached": 1, "thoughts": 2, "tool": 0,
                            "total": tokens + 7}
    if calls:
        record["toolCalls"] = [{"id": c, "name": "run_shell_command", "args": {"command": c},
                                "status": "success", "timestamp": at,
                                "result": [{"functionResponse": {"id": c, "name": "run_shell_command",
                                                                 "response": {"output": f"out {c}"}}}]}
                               for c in calls]
    return record


META = {"sessionId": "rw-1", "projectHash": "0" * 64, "startTime": "2026-01-01T00:00:00.000Z",
        "lastUpdated": "2026-01-01T00:00:00.000Z", "kind": "main"}


def shell_call(cid, output, name="run_shell_command"):
    return {"id": cid, "name": name, "args": {"command": cid}, "status": "success",
            "result": [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]}


def test_failed_shell_command_is_marked_from_its_exit_code(tmp_path):
    """Gemini CLI 0.61 records a command that exits 2 as status "success" and writes the exit
    code only into the output (found by `make conformance`): the result must still be failed."""
    failing = ("<untrusted_context>\nOutput: ls: cannot access 'x': No such file or directory\n"
               "Exit Code: 2\nProcess Group PGID: 5491\n</untrusted_context>")
    quoting = "Output: Exit Code: 7\nProcess Group PGID: 1"   # a command printing such a line
    record = reply("m2", "", "2026-01-01T00:00:02.000Z")
    record["toolCalls"] = [shell_call("fails", failing), shell_call("ok", "Output: a\nProcess Group PGID: 1"),
                           shell_call("zero", "Output: \nExit Code: 0"), shell_call("quotes", quoting),
                           shell_call("read", "Exit Code: 3", name="read_file")]
    path = write_jsonl(tmp_path / "home/.gemini/tmp/p/chats/session-2026-01-01T00-00-ex000001.jsonl", [
        {**META, "sessionId": "ex-1"}, user("m1", "go", "2026-01-01T00:00:01.000Z"), record])
    doc = translate_file(gemini, path, base_env(tmp_path))
    extras = {r["source_call_id"]: r.get("extra") or {} for s in doc["steps"]
              for r in (s.get("observation") or {}).get("results", [])}
    assert extras["fails"] == {"is_error": True, "exit_code": 2}
    assert extras["ok"] == extras["zero"] == extras["read"] == {}
    assert extras["quotes"] == {}   # "Exit Code:" not at a line start is the command's output


def test_rewind_drops_the_message_and_everything_after_it(tmp_path):
    path = write_jsonl(tmp_path / "home/.gemini/tmp/p/chats/session-2026-01-01T00-00-rw000001.jsonl", [
        META,
        user("u1", "first", "2026-01-01T00:00:01Z"),
        reply("g1", "", "2026-01-01T00:00:02Z"),
        reply("g1", "", "2026-01-01T00:00:02Z", tokens=100, calls=["c1"]),   # the copy that wins
        user("u2", "abandoned", "2026-01-01T00:00:03Z"),
        reply("g2", "abandoned answer", "2026-01-01T00:00:04Z", tokens=1000, calls=["c2"]),
        {"$rewindTo": "u2"},
        user("u3", "second", "2026-01-01T00:00:05Z"),
        reply("g3", "done", "2026-01-01T00:00:06Z", tokens=200),
    ])
    doc = translate_file(gemini, path, base_env(tmp_path))
    assert [s["message"] for s in doc["steps"] if s["source"] == "user"] == ["first", "second"]
    assert [c["tool_call_id"] for s in doc["steps"] for c in s.get("tool_calls", [])] == ["c1"]
    assert totals(doc) == (300, 14, 2)
    counts, tokens = native_counts(native_messages(path))
    assert (doc_counts(doc), totals(doc)) == (counts, tokens)
    assert doc["extra"]["rewinds"] == 1


def test_rewind_to_an_unknown_message_drops_everything_before_it(tmp_path):
    path = write_jsonl(tmp_path / "home/.gemini/tmp/p/chats/session-x-rw000002.jsonl", [
        META, user("u1", "gone", "2026-01-01T00:00:01Z"), {"$rewindTo": "nope"},
        user("u2", "kept", "2026-01-01T00:00:02Z")])
    doc = translate_file(gemini, path, base_env(tmp_path))
    assert [s["message"] for s in doc["steps"]] == ["kept"]
    assert any("nope" in w for w in doc["extra"]["warnings"])


def test_history_snapshot_inserts_only_what_it_alone_holds(tmp_path):
    """A compression snapshot: its summary lands before the kept tail, compressed messages stay,
    and the known messages keep their full records (tokens, tool calls)."""
    snapshot = [{"id": "s1", "type": "user", "timestamp": "2026-01-01T00:00:09Z",
                 "content": [{"text": "<state_snapshot>the summary</state_snapshot>"}]},
                {"id": "g2", "type": "gemini", "timestamp": "2026-01-01T00:00:04Z", "content": [{"text": "poorer copy"}]}]
    path = write_jsonl(tmp_path / "home/.gemini/tmp/p/chats/session-x-sn000001.jsonl", [
        META, user("u1", "old", "2026-01-01T00:00:01Z"), reply("g1", "old answer", "2026-01-01T00:00:02Z", tokens=10),
        user("u2", "recent", "2026-01-01T00:00:03Z"), reply("g2", "recent answer", "2026-01-01T00:00:04Z", tokens=20),
        {"$set": {"messages": snapshot}}, user("u3", "after", "2026-01-01T00:00:10Z")])
    doc = translate_file(gemini, path, base_env(tmp_path))
    kinds = [(s["source"], s["message"]) for s in doc["steps"]]
    assert kinds == [("user", "old"), ("agent", "old answer"), ("user", "recent"),
                     ("system", "The chat history was compressed into this summary."),
                     ("agent", "recent answer"), ("user", "after")]
    summary = doc["steps"][3]
    assert summary["observation"]["results"][0]["content"].startswith("<state_snapshot>")
    assert summary["extra"]["context_management"]["type"] == "compaction"
    assert totals(doc)[0] == 30


def test_subagent_is_embedded_and_referenced_from_the_spawning_call(tmp_path):
    chats = tmp_path / "home/.gemini/tmp/p/chats"
    parent = write_jsonl(chats / "session-2026-01-01T00-00-parent00.jsonl", [
        {**META, "sessionId": "parent00-0000"},
        user("u1", "investigate", "2026-01-01T00:00:01Z"),
        {**reply("g1", "delegating", "2026-01-01T00:00:02Z", tokens=50), "toolCalls": [
            {"id": "inv-1", "name": "codebase_investigator", "args": {"objective": "look"},
             "status": "success", "timestamp": "2026-01-01T00:00:30Z",
             "result": [{"functionResponse": {"id": "inv-1", "name": "codebase_investigator",
                                              "response": {"output": "found it"}}}]}]},
    ])
    write_jsonl(chats / "parent00-0000" / "abc123.jsonl", [
        {"sessionId": "abc123", "projectHash": "0" * 64, "startTime": "2026-01-01T00:00:05Z",
         "lastUpdated": "2026-01-01T00:00:20Z", "kind": "subagent"},
        user("s1", "look", "2026-01-01T00:00:05Z"),
        reply("s2", "looked", "2026-01-01T00:00:06Z", tokens=7, calls=["sub-c1"]),
    ])
    env = base_env(tmp_path)
    assert gemini.sources(env) == [parent]                # the sub-agent is no session of its own
    assert os.path.join(str(chats), "parent00-0000", "abc123.jsonl") in gemini.dependencies(parent, env)
    doc = translate_file(gemini, parent, env)
    [sub] = doc["subagent_trajectories"]
    assert sub["trajectory_id"] == "abc123" and sub["extra"]["kind"] == "subagent"
    [result] = doc["steps"][1]["observation"]["results"]
    assert result["subagent_trajectory_ref"] == [{"trajectory_id": "abc123", "session_id": "abc123"}]
    assert result["content"] == "found it"
    assert totals(doc) == (57, 14, 2)                        # the sub-agent's tokens count too


# robustness -------------------------------------------------------------------------------------
@pytest.mark.parametrize("sample", ["live", "legacy"])
def test_truncated_copy_yields_a_valid_document_with_a_warning(sample, tmp_path):
    source = (os.path.join(LIVE_HOME, ".gemini/tmp/proj-gemini/chats/session-2026-11-29T20-42-511f56fd.jsonl")
              if sample == "live" else os.path.join(SAMPLE_DIR, "agent-history", "gemini_golden.json"))
    target = str(tmp_path / "home/.gemini/tmp/p/chats" / os.path.basename(source))
    truncate_copy(source, target)
    doc = translate_file(gemini, target, base_env(tmp_path))
    assert doc["extra"]["warnings"]
    assert any(s["source"] == "user" for s in doc["steps"])


def test_prompt_log_serves_only_sessions_without_a_chat(sample_home, tmp_path):
    home = str(tmp_path / "home")
    shutil.copytree(os.path.join(sample_home, ".gemini"), os.path.join(home, ".gemini"))
    write_jsonl(os.path.join(home, ".gemini/tmp/samples/chats/session-2025-11-07T11-30-telemetr.jsonl"), [
        {**META, "sessionId": "telemetry-gemini-001"}, user("u1", "Help me understand this codebase", "2025-11-07T11:30:00Z")])
    found = {s.native_id: s for s in catalog.discover(base_env(tmp_path, home=home), ["gemini"], use_cache=False).sessions}
    with open(PROMPT_LOG) as handle:
        logged = {e["sessionId"] for e in json.load(handle)}
    assert found["telemetry-gemini-001"].extra["format"] == "jsonl"
    for sid in logged - {"telemetry-gemini-001"}:
        assert found[sid].extra["format"] == "prompt-log"
        doc = gemini.translate(found[sid], base_env(tmp_path, home=home))
        with open(PROMPT_LOG) as handle:
            prompts = [e["message"] for e in json.load(handle) if e["sessionId"] == sid and e["type"] == "user"]
        assert [s["message"] for s in doc["steps"] if s["source"] == "user"] == prompts


# golden files -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, path", [
    ("live-resumed", os.path.join(LIVE_HOME, ".gemini/tmp/proj-gemini/chats/session-2026-11-29T20-42-511f56fd.jsonl")),
    ("tool-error", os.path.join(SAMPLE_DIR, "agent-history", "gemini_with_tool_error.jsonl")),
])
def test_golden(name, path, tmp_path):
    target = str(tmp_path / "home/.gemini/tmp/p/chats" / os.path.basename(path))
    os.makedirs(os.path.dirname(target))
    shutil.copy2(path, target)
    assert_golden(translate_file(gemini, target, base_env(tmp_path)), "gemini", name)


def test_a_windows_project_root_is_the_sessions_working_directory(tmp_path):
    """Gemini CLI on Windows writes `.project_root` and projects.json with drive paths (lower
    case, as a real copied home holds them): they are absolute, the session's directory."""
    project = tmp_path / "home/.gemini/tmp/myproj"
    path = write_jsonl(project / "chats/session-2026-01-01T00-00-win00001.jsonl", [
        {**META, "sessionId": "win-1"}, user("m1", "go", "2026-01-01T00:00:01.000Z")])
    (project / ".project_root").write_text("c:\\users\\me\\myproj\n")
    [session] = gemini.scan(path, base_env(tmp_path))
    assert session.cwd == "c:\\users\\me\\myproj"
    os.remove(project / ".project_root")
    (tmp_path / "home/.gemini/projects.json").write_text(json.dumps({"projects": {"c:\\users\\me\\myproj": "myproj"}}))
    assert gemini.project_root(str(project), None) == "c:\\users\\me\\myproj"


def test_a_tool_call_whose_output_is_empty_keeps_its_observation(tmp_path):
    """A command that printed nothing is recorded with `output: ""` and status success: the
    call was answered, with an empty result (its observation was dropped)."""
    record = reply("m2", "", "2026-01-01T00:00:02.000Z")
    record["toolCalls"] = [shell_call("quiet", ""), shell_call("loud", "Output: a")]
    path = write_jsonl(tmp_path / "home/.gemini/tmp/p/chats/session-2026-01-01T00-00-em000001.jsonl", [
        {**META, "sessionId": "em-1"}, user("m1", "go", "2026-01-01T00:00:01.000Z"), record])
    doc = translate_file(gemini, path, base_env(tmp_path))
    results = {r["source_call_id"]: r.get("content") for s in doc["steps"]
               for r in (s.get("observation") or {}).get("results", [])}
    assert results == {"quiet": "", "loud": "Output: a"}


def test_a_subagent_folder_named_after_no_chat_is_listed_with_a_warning(tmp_path):
    """Gemini CLI's skill extraction writes `chats/skill-extraction-<hex>/<id>.json` (`kind:
    subagent`), a folder named after no session: its transcript was neither embedded nor
    listed. It is a session of its own, in its project, saying why."""
    project = tmp_path / "home/.gemini/tmp/myproj"
    (project / ".project_root").parent.mkdir(parents=True)
    (project / ".project_root").write_text("/work/myproj")
    chat = write_jsonl(project / "chats/session-2026-01-01T00-00-main0001.jsonl", [
        {**META, "sessionId": "main0001-aaaa"}, user("m1", "go", "2026-01-01T00:00:01.000Z")])
    folder = project / "chats/skill-extraction-9f2c41d0"
    folder.mkdir()
    transcript = folder / "b7e1c2d4.json"
    transcript.write_text(json.dumps({
        "sessionId": "b7e1c2d4", "projectHash": "0" * 64, "startTime": "2026-01-01T00:05:00.000Z",
        "lastUpdated": "2026-01-01T00:06:00.000Z", "kind": "subagent",
        "messages": [user("s1", "extract the skills", "2026-01-01T00:05:01.000Z"),
                     reply("s2", "extracted", "2026-01-01T00:05:02.000Z", tokens=9)]}))
    env = base_env(tmp_path)
    assert gemini.sources(env) == [chat, str(transcript)]
    [session] = gemini.scan(str(transcript), env)
    assert (session.native_id, session.cwd, session.title) == ("b7e1c2d4", "/work/myproj", "extract the skills")
    assert str(transcript) not in gemini.dependencies(chat, env)
    doc = gemini.translate(session, env)
    assert_valid(doc)
    assert doc["extra"]["kind"] == "subagent"
    assert [s["message"] for s in doc["steps"]] == ["extract the skills", "extracted"]
    assert doc["extra"]["warnings"] == [
        "a sub-agent transcript in chats/skill-extraction-9f2c41d0/, a folder named after no chat of this "
        "project: it is listed as a session of its own"]


def chat(chats, name: str, session_id: str, started: str, task: str, **meta):
    """A chat file of one user message, `task`, sent a second after `started` (an ISO time)."""
    from datetime import datetime, timedelta

    sent = (datetime.fromisoformat(started.replace("Z", "+00:00")) + timedelta(seconds=1)) \
        .isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return write_jsonl(chats / name, [{**META, "sessionId": session_id, "startTime": started, **meta},
                                      user("m1", task, sent)])


def test_two_chats_of_one_session_id_started_apart_are_two_sessions(tmp_path):
    """Cloud Shell's a2a-server records each conversation of its process in a chat file of its
    own under the process's one `sessionId`: both are listed, with ids that stay apart and
    stay the same when a third file appears."""
    chats = tmp_path / "home/.gemini/tmp/p/chats"
    first = chat(chats, "session-2026-01-01T00-00-a2a00001.jsonl", "a2a00001-cafe", "2026-01-01T00:00:00.000Z",
                 "first task")
    second = chat(chats, "session-2026-01-01T09-30-a2a00001.jsonl", "a2a00001-cafe", "2026-01-01T09:30:05.000Z",
                  "second task")
    env = base_env(tmp_path)
    ids = {s.title: s.native_id for s in scan_all(gemini, env)}
    assert ids == {"first task": "a2a00001-cafe", "second task": "a2a00001-cafe-20260101T093005"}
    chat(chats, "session-2026-01-02T10-00-a2a00001.jsonl", "a2a00001-cafe", "2026-01-02T10:00:00.000Z", "third task")
    later = {s.title: s.native_id for s in scan_all(gemini, env)}
    assert later == {**ids, "third task": "a2a00001-cafe-20260102T100000"}
    listed = catalog.discover(env).sessions
    assert sorted(s.title for s in listed) == ["first task", "second task", "third task"]
    doc = translate_file(gemini, second, env)
    assert doc["session_id"] == "a2a00001-cafe-20260101T093005"
    assert [s["message"] for s in doc["steps"]] == ["second task"]
    assert translate_file(gemini, first, env)["session_id"] == "a2a00001-cafe"


def test_the_a2a_servers_real_chat_names_are_two_sessions(tmp_path):
    """Issue 37: the chat files Cloud Shell's a2a-server writes, by their real names: the
    8 characters after the time are the start of the sessionId `a2a-server`, a hyphen
    included; each file is its own session, and a sub-agent folder of that sessionId is
    claimed by them."""
    chats = tmp_path / "home/.gemini/tmp/p/chats"
    first = chat(chats, "session-2026-08-13T04-43-a2a-serv.jsonl", "a2a-server", "2026-08-13T04:43:10.000Z",
                 "fix the login page")
    second = chat(chats, "session-2026-08-16T07-02-a2a-serv.jsonl", "a2a-server", "2026-08-16T07:02:40.000Z",
                  "add a test for the parser")
    chat(chats, "a2a-server/helper-1.jsonl", "helper-1", "2026-08-16T07:03:00.000Z", "look up the parser",
         kind="subagent")
    env = base_env(tmp_path)
    ids = {s.title: s.native_id for s in scan_all(gemini, env)}
    assert ids == {"fix the login page": "a2a-server",
                   "add a test for the parser": "a2a-server-20260816T070240"}
    listed = catalog.discover(env).sessions
    assert sorted(s.title for s in listed) == ["add a test for the parser", "fix the login page"]
    assert len({s.short_id for s in listed}) == 2
    assert translate_file(gemini, second, env)["session_id"] == "a2a-server-20260816T070240"
    assert translate_file(gemini, first, env)["session_id"] == "a2a-server"
