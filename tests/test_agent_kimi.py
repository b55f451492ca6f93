"""Kimi CLI and Kimi Code: every sample translates to a valid document whose counts and token
totals match the native events; the CLI's work directory comes from kimi.json (checked against
the md5 folder name, never decoded); sub-agents are embedded where they were spawned; damaged
logs give documents with warnings; the store is never written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_kimi.py` rewrites tests/golden/kimi/."""

import json
import os
import shutil

from agents import kimi
from helpers import (LIVE, SAMPLES, assert_golden, assert_valid, base_env, cli, doc_counts,
                     read_jsonl, scan_all, scoped_ids, totals, translate_all, tree_digest,
                     write_jsonl)

LIVE_HOME = os.path.join(LIVE, "kimi-cli-1.52.0")
CONTINUED = "d4913984-99fd-4da9-bb43-02a1d269239d"
KIMI_SAMPLES = os.path.join(SAMPLES, "kimi")


def live_env(tmp_path):
    return base_env(tmp_path, home=LIVE_HOME)


# Kimi CLI ----------------------------------------------------------------------------------------
def wire_counts(path):
    events = [r["message"] for r in read_jsonl(path) if "message" in r]
    kinds = [e["type"] for e in events]
    usages = [e["payload"]["token_usage"] for e in events
              if e["type"] == "StatusUpdate" and e["payload"].get("token_usage")]
    counts = {"user": kinds.count("TurnBegin") + kinds.count("SteerInput"),
              "calls": kinds.count("ToolCall"), "results": kinds.count("ToolResult")}
    total = (sum(u["input_other"] + u["input_cache_read"] + u["input_cache_creation"] for u in usages),
             sum(u["output"] for u in usages), sum(u["input_cache_read"] for u in usages))
    return counts, total


def context_counts(path):
    messages = read_jsonl(path)
    return {"user": sum(1 for m in messages if m.get("role") == "user"),
            "calls": sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant"),
            "results": sum(1 for m in messages if m.get("role") == "tool")}


def test_live_cli_sessions_match_wire_and_context(tmp_path):
    translated = translate_all(kimi, live_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        counts, expected = wire_counts(session.source)
        assert doc_counts(doc) == counts
        assert counts == context_counts(os.path.join(os.path.dirname(session.source), "context.jsonl"))
        assert totals(doc) == expected
        assert doc["steps"][-1]["message"].startswith("SCENARIO-DONE")
        assert doc["steps"][1]["reasoning_content"]
        assert session.extra["format"] == "wire-1.10"


def test_cli_work_dir_comes_from_kimi_json(tmp_path):
    env = live_env(tmp_path)
    assert len(scoped_ids(env, "/tmp/agents/proj-kimi", "kimi")) == 2
    assert scoped_ids(env, "/tmp/agents/proj-kimi-other", "kimi") == {"6af17eca-d66e-42b6-8975-27e459b9f2ad"}
    # a hash folder no known work dir hashes to gets no directory (not a guess)
    home = tmp_path / "moved"
    shutil.copytree(os.path.join(LIVE_HOME, ".kimi"), home / ".kimi")
    sessions = home / ".kimi" / "sessions"
    os.rename(sessions / "864d39b0c6d74eb010dfb736f76ba741", sessions / "not-a-known-hash")
    env = base_env(tmp_path, home=str(home))
    cwds = {s.native_id: s.cwd for s in scan_all(kimi, env)}
    assert cwds["6af17eca-d66e-42b6-8975-27e459b9f2ad"] is None
    assert cwds[CONTINUED] == "/tmp/agents/proj-kimi"


def test_share_dir_and_code_home_relocate_the_stores(tmp_path):
    env = {**base_env(tmp_path), "KIMI_SHARE_DIR": os.path.join(LIVE_HOME, ".kimi"),
           "KIMI_CODE_HOME": str(code_home(tmp_path))}
    assert len(kimi.sources(env)) == 3 + 3


def test_oldest_layouts_are_read_from_the_context(tmp_path):
    """Before wire.jsonl existed: `<md5>/<id>.jsonl`, and a wire log that holds no turn."""
    home = tmp_path / "old"
    shutil.copytree(os.path.join(LIVE_HOME, ".kimi"), home / ".kimi")
    folder = home / ".kimi" / "sessions" / "921b21fd5d80b7fbe9659e5dd70ba940"
    os.rename(folder / CONTINUED / "context.jsonl", folder / f"{CONTINUED}.jsonl")
    shutil.rmtree(folder / CONTINUED)
    other = folder / "e25d2ebc-1ccb-42f7-8ee0-1b43f2015d36"
    (other / "wire.jsonl").write_text('{"type": "metadata", "protocol_version": "1.10"}\n')
    env = base_env(tmp_path, home=str(home))
    found = {s.native_id: (s, d) for s, d in translate_all(kimi, env)}
    session, doc = found[CONTINUED]
    assert session.extra["format"] == "context" and session.cwd == "/tmp/agents/proj-kimi"
    assert doc_counts(doc) == context_counts(session.source)
    assert doc["steps"][0]["extra"]["kind"] == "system_prompt"
    _, doc = found["e25d2ebc-1ccb-42f7-8ee0-1b43f2015d36"]
    assert doc_counts(doc) == context_counts(other / "context.jsonl")
    assert any("context.jsonl" in w for w in doc["extra"]["warnings"])


def test_cli_subagent_events_are_embedded(tmp_path):
    """A Task call whose sub-agent streamed its own events (SubagentEvent) before the result."""
    def event(kind, payload, t):
        return {"timestamp": 1795985000 + t, "message": {"type": kind, "payload": payload}}

    def sub(kind, payload, t):
        return event("SubagentEvent", {"parent_tool_call_id": "call_task", "agent_id": "a1",
                                       "subagent_type": "coder",
                                       "event": {"type": kind, "payload": payload}}, t)
    lines = [{"type": "metadata", "protocol_version": "1.10"},
             event("TurnBegin", {"user_input": "delegate"}, 0), event("StepBegin", {"n": 1}, 1),
             event("ToolCall", {"type": "function", "id": "call_task",
                                "function": {"name": "Task", "arguments": '{"prompt": "count"}'}}, 2),
             sub("TurnBegin", {"user_input": "count"}, 3), sub("StepBegin", {"n": 1}, 4),
             sub("ContentPart", {"type": "text", "text": "Coun"}, 5),
             sub("ContentPart", {"type": "text", "text": "ted: 3"}, 6),
             sub("StatusUpdate", {"token_usage": {"input_other": 5, "output": 2, "input_cache_read": 1,
                                                  "input_cache_creation": 0}}, 7),
             event("ToolResult", {"tool_call_id": "call_task",
                                  "return_value": {"is_error": False, "output": "3"}}, 8)]
    home = tmp_path / "home"
    write_jsonl(home / ".kimi" / "sessions" / "h" / "s-sub" / "wire.jsonl", lines)
    (_, doc), = translate_all(kimi, base_env(tmp_path, home=str(home)))
    (child,) = doc["subagent_trajectories"]
    assert child["steps"][1]["message"] == "Counted: 3"
    result = doc["steps"][1]["observation"]["results"][0]
    assert result["subagent_trajectory_ref"][0]["trajectory_id"] == child["trajectory_id"]
    assert totals(doc) == (6, 2, 1)


def test_wire_1_3_subagents_each_linked_from_its_task_call(tmp_path):
    """Wire protocol 1.3 keys a sub-agent's events by `task_tool_call_id` (no parent call id,
    no agent id): two Task calls running side by side are two trajectories, each referenced
    from its own call's result (they were one unlinked trajectory under a system step). A
    ToolResult whose `output` is "" holds what the model was shown in `message`."""
    def event(kind, payload, t):
        return {"timestamp": 1795985000 + t, "message": {"type": kind, "payload": payload}}

    def sub(call, kind, payload, t):
        return event("SubagentEvent", {"task_tool_call_id": call, "event": {"type": kind, "payload": payload}}, t)

    def task(call, t):
        return event("ToolCall", {"type": "function", "id": call,
                                  "function": {"name": "Task", "arguments": '{"prompt": "look"}'}}, t)
    edited = "File successfully edited. Applied 1 edit(s) with 3 total line(s) changed."
    lines = [{"type": "metadata", "protocol_version": "1.3"},
             event("TurnBegin", {"user_input": "delegate twice"}, 0), event("StepBegin", {"n": 1}, 1),
             task("call_a", 2), task("call_b", 3),
             sub("call_a", "TurnBegin", {"user_input": "look at a"}, 4),
             sub("call_b", "TurnBegin", {"user_input": "look at b"}, 5),
             sub("call_a", "StepBegin", {"n": 1}, 6), sub("call_b", "StepBegin", {"n": 1}, 7),
             sub("call_b", "ContentPart", {"type": "text", "text": "b is fine"}, 8),
             sub("call_a", "ContentPart", {"type": "text", "text": "a is fine"}, 9),
             event("ToolResult", {"tool_call_id": "call_b", "return_value": {"is_error": False, "output": "b ok"}}, 10),
             event("ToolResult", {"tool_call_id": "call_a", "return_value": {"is_error": False, "output": "a ok"}}, 11),
             event("StepBegin", {"n": 2}, 12),
             event("ToolCall", {"type": "function", "id": "call_edit",
                                "function": {"name": "StrReplaceFile", "arguments": '{"path": "x"}'}}, 13),
             event("ToolResult", {"tool_call_id": "call_edit", "return_value": {
                 "is_error": False, "output": "", "message": edited, "display": []}}, 14)]
    home = tmp_path / "home"
    write_jsonl(home / ".kimi" / "sessions" / "h" / "s-13" / "wire.jsonl", lines)
    (_, doc), = translate_all(kimi, base_env(tmp_path, home=str(home)))
    children = {c["trajectory_id"]: c for c in doc["subagent_trajectories"]}
    assert len(children) == 2
    results = {r["source_call_id"]: r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])}
    for call, text in (("call_a", "a is fine"), ("call_b", "b is fine")):
        [ref] = results[call]["subagent_trajectory_ref"]
        child = children[ref["trajectory_id"]]
        assert [s["message"] for s in child["steps"]] == [f"look at {call[-1]}", text]
    assert not [s for s in doc["steps"] if (s.get("extra") or {}).get("kind") == "subagent"]
    assert results["call_edit"]["content"] == edited and "extra" not in results["call_edit"]


# Kimi Code ---------------------------------------------------------------------------------------
CODE_SESSION = "1bcbe023-4f7e-4971-9dc9-43b8756045b0"


def code_home(tmp_path):
    """The catalog samples laid out as Kimi Code stores them (plus the deja-vu tree as is)."""
    root = tmp_path / "code"
    if root.exists():
        return root
    sessions = root / "sessions"
    shutil.copytree(os.path.join(KIMI_SAMPLES, "deja-vu", "sessions"), sessions)
    wd = sessions / "wd_project_ac3bb318f98e"
    layout = {f"session_{CODE_SESSION}": ("assistant_tools.jsonl", "assistant_tools.state.json"),
              "session_9eb1bf57-c1af-48a5-b658-0e8d9fe794f5": ("small.jsonl", "state.json")}
    for name, (wire, state) in layout.items():
        (wd / name / "agents" / "main").mkdir(parents=True)
        shutil.copy(os.path.join(KIMI_SAMPLES, "agent-sessions", wire), wd / name / "agents" / "main" / "wire.jsonl")
        shutil.copy(os.path.join(KIMI_SAMPLES, "agent-sessions", state), wd / name / "state.json")
    sub = wd / f"session_{CODE_SESSION}" / "agents" / "agent-0"
    sub.mkdir()
    shutil.copy(os.path.join(KIMI_SAMPLES, "agent-sessions", "subagent_agent-0.jsonl"), sub / "wire.jsonl")
    return root


def code_env(tmp_path):
    return {**base_env(tmp_path), "KIMI_CODE_HOME": str(code_home(tmp_path))}


def code_counts(path):
    found = read_jsonl(path)
    loop = [r["event"]["type"] for r in found if r["type"] == "context.append_loop_event"]
    users = [r for r in found if r["type"] == "context.append_message" and r["message"]["role"] == "user"
             and r["message"].get("origin", {}).get("kind", "user") == "user"]
    return {"user": len(users), "calls": loop.count("tool.call"), "results": loop.count("tool.result")}


def code_usage(*paths):
    usages = [r["usage"] for p in paths for r in read_jsonl(p) if r["type"] == "usage.record" and "usage" in r]
    if not usages:
        return None, None, None
    return (sum(u["inputOther"] + u["inputCacheRead"] + u["inputCacheCreation"] for u in usages),
            sum(u["output"] for u in usages), sum(u["inputCacheRead"] for u in usages))


def test_code_sessions_match_native_records(tmp_path):
    translated = translate_all(kimi, code_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        folder = os.path.dirname(os.path.dirname(session.source))
        subs = [os.path.join(folder, name, "wire.jsonl") for name in os.listdir(folder) if name != "main"]
        assert doc_counts(doc) == code_counts(session.source)
        assert totals(doc) == code_usage(session.source, *subs)
        assert session.cwd == json.load(open(os.path.join(os.path.dirname(folder), "state.json")))["workDir"]
        assert session.extra["format"] == "kimi-code-wire-1.4"


def test_code_subagent_is_embedded_at_its_spawning_call(tmp_path):
    env = code_env(tmp_path)
    doc = next(d for s, d in translate_all(kimi, env) if s.native_id == CODE_SESSION)
    (child,) = doc["subagent_trajectories"]
    spawning = next(s for s in doc["steps"] for c in s.get("tool_calls", []) if c["function_name"] == "Agent")
    ref = spawning["observation"]["results"][0]["subagent_trajectory_ref"][0]
    assert ref["trajectory_id"] == child["trajectory_id"] == f"{CODE_SESSION}/agent-0"
    sub_path = os.path.join(code_home(tmp_path), "sessions", "wd_project_ac3bb318f98e", f"session_{CODE_SESSION}",
                            "agents", "agent-0", "wire.jsonl")
    assert doc_counts(child) == code_counts(sub_path) == {"user": 0, "calls": 2, "results": 2}
    assert child["steps"][1]["extra"]["kind"] == "system_trigger:subagent"
    compaction = [s for s in doc["steps"] if (s.get("extra") or {}).get("kind") == "compaction"]
    assert len(compaction) == 1 and compaction[0]["message"].startswith("I am writing this handoff")
    assert doc["steps"][-2]["extra"]["kind"] == "model_call:compaction"


def test_code_streamed_parts_are_joined(tmp_path):
    env = code_env(tmp_path)
    doc = next(d for s, d in translate_all(kimi, env) if s.native_id == "fixture01")
    assert doc["steps"][2]["message"] == ("The cache keeps serving the old kid after rotateKey; reload the "
                                          "jwks cache on rotation and add a clock-skew test.")
    assert doc["steps"][2]["reasoning_content"] == "reasoning to be skipped"
    assert doc["steps"][-1]["message"] == "torn-tail mid-stream answer survives"


# damage, read-only, golden -------------------------------------------------------------------------
def test_damaged_logs_give_documents_with_warnings(tmp_path):
    home = tmp_path / "broken"
    shutil.copytree(os.path.join(LIVE_HOME, ".kimi"), home / ".kimi")
    folder = home / ".kimi" / "sessions" / "921b21fd5d80b7fbe9659e5dd70ba940"
    wire = folder / CONTINUED / "wire.jsonl"
    data = wire.read_bytes()
    wire.write_bytes(data[: len(data) // 2])
    other = folder / "e25d2ebc-1ccb-42f7-8ee0-1b43f2015d36" / "wire.jsonl"
    lines = other.read_bytes().split(b"\n")
    other.write_bytes(b"\n".join(lines[:3] + [b'{"timestamp": 1, "message": '] + lines[3:]))
    found = {s.native_id: d for s, d in translate_all(kimi, base_env(tmp_path, home=str(home)))}
    assert any("truncated" in w for w in found[CONTINUED]["extra"]["warnings"])
    assert any("malformed" in w for w in found["e25d2ebc-1ccb-42f7-8ee0-1b43f2015d36"]["extra"]["warnings"])
    assert doc_counts(found["e25d2ebc-1ccb-42f7-8ee0-1b43f2015d36"])["calls"] == 2


def test_golden_document(tmp_path):
    env = live_env(tmp_path)
    session = next(s for s in scan_all(kimi, env) if s.native_id == CONTINUED)
    doc = kimi.translate(session, env)
    assert_valid(doc)
    assert_golden(doc, "kimi", "live-continued-session")


def test_stores_are_never_written(tmp_path):
    env = {**live_env(tmp_path), "KIMI_CODE_HOME": str(code_home(tmp_path))}
    before = tree_digest(LIVE_HOME, str(code_home(tmp_path)))
    translate_all(kimi, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(b'"agent":"kimi"') == 6
    assert tree_digest(LIVE_HOME, str(code_home(tmp_path))) == before
