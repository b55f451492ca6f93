"""Continue CLI: every session of the live store (1.5.47) holds every step of its scenario, its
counts and token totals are the native history's, the start comes from sessions.json, usage
through the Anthropic adapter counts the cache, reasoning and compaction summaries are read,
damaged sessions give documents with warnings, the health report counts the store, and nothing
is written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_continue.py` rewrites tests/golden/continue/."""

import glob
import json
import os
import shutil

import pytest

from agents import continue_cli
from helpers import (LIVE, assert_golden, assert_scripted_steps, assert_valid, base_env, cli, doc_counts,
                     live_copy, scan_all, scoped_ids, scripted_runs, totals, translate_all, tree_digest)

LIVE_HOME = os.path.join(LIVE, "continue-1.5.47")
SESSIONS = os.path.join(LIVE_HOME, ".continue", "sessions")
CONTINUED = "d35fec6a-36ec-4fef-be66-077500627a9a"


def live_env(tmp_path):
    return base_env(tmp_path, home=LIVE_HOME)


def native(path):
    return json.load(open(path))


def native_counts(session):
    messages = [item["message"] for item in session["history"]]
    states = [s for item in session["history"] for s in item.get("toolCallStates", [])]
    return {"user": sum(1 for m in messages if m["role"] == "user"),
            "calls": sum(len(m.get("toolCalls", [])) for m in messages),
            "results": sum(1 for s in states if s.get("output"))}


def native_totals(session):
    usages = [item["message"]["usage"] for item in session["history"] if "usage" in item["message"]]
    return (sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages),
            sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages))


def test_every_scenario_step_is_in_its_session(tmp_path):
    runs = scripted_runs(LIVE_HOME, "continue")
    assert sorted(runs) == ["continue-1", "continue-1b", "continue-2", "continue-3"]
    held = {}
    for session, doc in translate_all(continue_cli, live_env(tmp_path)):
        assert_valid(doc)
        sids = [sid for sid in runs if any(s["source"] == "user" and s["message"].startswith(f"SCENARIO {sid} in ")
                                           for s in doc["steps"])]
        for sid in sids:
            assert_scripted_steps(doc, sid, runs[sid], reasoning=False)
            assert session.cwd == runs[sid]
        held[session.native_id] = sids
    assert held[CONTINUED] == ["continue-1", "continue-1b"]
    assert sorted(sid for sids in held.values() for sid in sids) == sorted(runs)


def test_counts_and_tokens_are_the_native_records(tmp_path):
    translated = translate_all(continue_cli, live_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        stored = native(session.source)
        assert doc_counts(doc) == native_counts(stored)
        assert totals(doc) == native_totals(stored)
        assert totals(doc)[:2] == (stored["usage"]["promptTokens"], stored["usage"]["completionTokens"])
        replies = [i for i in stored["history"] if i["message"]["role"] == "assistant"]
        assert sum(1 for s in doc["steps"] if s["source"] == "agent") == len(replies)
        assert doc["session_id"] == stored["sessionId"]


def test_an_errored_tool_call_is_marked_failed(tmp_path):
    (session, doc), *_ = translate_all(continue_cli, live_env(tmp_path))
    failing = [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])
               if r.get("extra")]
    assert [r["extra"] for r in failing] == [{"is_error": True, "status": "errored"}]
    assert "exit code 2" in failing[0]["content"]


def test_scan_takes_the_start_from_the_session_list(tmp_path):
    listed = {e["sessionId"]: e for e in json.load(open(os.path.join(SESSIONS, "sessions.json")))}
    sessions = scan_all(continue_cli, live_env(tmp_path))
    assert len(sessions) == 3   # sessions.json is no session
    for session in sessions:
        assert session.started == int(listed[session.native_id]["dateCreated"]) / 1000
        assert session.cwd == listed[session.native_id]["workspaceDirectory"]
        assert session.title.startswith("SCENARIO continue-") and session.model == "fake-model"
        assert session.extra["format"] == "json"
    home = live_copy(tmp_path, LIVE_HOME)
    os.remove(os.path.join(home, ".continue", "sessions", "sessions.json"))
    path = os.path.join(home, ".continue", "sessions", f"{CONTINUED}.json")
    (session,) = continue_cli.scan(path, base_env(tmp_path, home=home))
    assert session.started == os.stat(path).st_mtime   # no list: when the file was last written


def test_project_scoping(tmp_path):
    env = live_env(tmp_path)
    assert scoped_ids(env, "/tmp/agents/proj-continue", "continue") == {CONTINUED, "c75433c5-fa96-4c67-882a-41d795607edc"}
    assert scoped_ids(env, "/tmp/agents/proj-continue-other", "continue") == {"0b18e5bd-3626-4652-a01a-c221411d88c6"}


def test_store_can_be_relocated(tmp_path):
    shutil.copytree(os.path.join(LIVE_HOME, ".continue"), tmp_path / "global")
    assert len(continue_cli.sources({**base_env(tmp_path), "CONTINUE_GLOBAL_DIR": str(tmp_path / "global")})) == 3


def rewrite(home: str, session_id: str, change) -> str:
    path = os.path.join(home, ".continue", "sessions", f"{session_id}.json")
    session = native(path)
    change(session)
    json.dump(session, open(path, "w"))
    return path


def test_reasoning_and_compaction_are_read(tmp_path):
    """Shapes from Continue's own types (core/index.d.ts): a `thinking` message before the reply
    it belongs to, an item's `reasoning.text`, and `/compact`'s assistant message holding the
    `conversationSummary`, a system step: it is no model reply of the conversation."""
    home = live_copy(tmp_path, LIVE_HOME)

    def change(session):
        history = session["history"]
        history.insert(1, {"message": {"role": "thinking", "content": "Plan the note."}, "contextItems": []})
        history[3]["reasoning"] = {"active": False, "text": "Now read it.", "startAt": 1}
        history.append({"message": {"role": "assistant", "content": "Summary so far"}, "contextItems": [],
                        "conversationSummary": "Summary so far"})
    rewrite(home, CONTINUED, change)
    (_, doc), = [(s, d) for s, d in translate_all(continue_cli, base_env(tmp_path, home=home)) if s.native_id == CONTINUED]
    agents = [s for s in doc["steps"] if s["source"] == "agent"]
    assert [a.get("reasoning_content") for a in agents[:3]] == ["Plan the note.", "Now read it.", None]
    assert doc["steps"][-1]["source"] == "system" and doc["steps"][-1]["extra"] == {"kind": "compaction"}
    assert doc_counts(doc)["calls"] == 12 and "warnings" not in doc["extra"]


def test_damaged_sessions_give_documents_with_warnings(tmp_path):
    home = live_copy(tmp_path, LIVE_HOME)
    folder = os.path.join(home, ".continue", "sessions")
    path = os.path.join(folder, f"{CONTINUED}.json")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    rewrite(home, "c75433c5-fa96-4c67-882a-41d795607edc", lambda s: s["history"].insert(1, "not an item"))
    open(os.path.join(folder, "empty.json"), "wb").close()
    docs = {s.native_id: d for s, d in translate_all(continue_cli, base_env(tmp_path, home=home))}
    assert all(assert_valid(d) is None for d in docs.values())
    cut = docs[CONTINUED]
    assert any("not complete JSON" in w for w in cut["extra"]["warnings"])
    assert cut["steps"][0]["message"].startswith("SCENARIO continue-1 in") and doc_counts(cut)["calls"] > 0
    assert docs["c75433c5-fa96-4c67-882a-41d795607edc"]["extra"]["warnings"] == ["history item 1 holds no message; skipped"]
    assert "the file is empty" in docs["empty"]["extra"]["warnings"]


@pytest.mark.parametrize("usage, expected", [
    ({"prompt_tokens": 1000, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 100}},
     {"prompt_tokens": 1000, "completion_tokens": 20, "cached_tokens": 100}),
    # Continue's Anthropic adapter: prompt_tokens is input_tokens, the cache beside it
    ({"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {
        "cached_tokens": 300, "cache_read_tokens": 300, "cache_write_tokens": 40}},
     {"prompt_tokens": 350, "completion_tokens": 5, "cached_tokens": 300, "extra": {"cache_write_tokens": 40}}),
    ({"promptTokens": 7, "completionTokens": 1}, {"prompt_tokens": 7, "completion_tokens": 1, "cached_tokens": 0}),
    ({}, None),
])
def test_usage_metrics(usage, expected):
    assert continue_cli.usage_metrics(usage) == expected


def test_golden_document(tmp_path):
    env = live_env(tmp_path)
    session = next(s for s in scan_all(continue_cli, env) if s.native_id == CONTINUED)
    doc = continue_cli.translate(session, env)
    assert_valid(doc)
    assert_golden(doc, "continue", "live-continued-session")


def test_health_counts_the_store(tmp_path):
    result = cli("agents", "--json", env=live_env(tmp_path))
    row = next(r for r in map(json.loads, result.stdout.splitlines()) if r["agent"] == "continue")
    files = [p for p in glob.glob(os.path.join(SESSIONS, "*.json")) if not p.endswith("sessions.json")]
    assert (row["sessions"], row["sources"], row["formats"]) == (3, 3, {"json": 3})
    assert row["native_bytes"] == sum(os.path.getsize(p) for p in files)
    assert row["sessions_with_warnings"] == row["sessions_failed"] == row["sessions_without_cwd"] == 0


def test_store_is_never_written(tmp_path):
    before = tree_digest(LIVE_HOME)
    env = live_env(tmp_path)
    translate_all(continue_cli, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert len([line for line in result.stdout.splitlines() if b'"agent":"continue"' in line]) == 3
    assert tree_digest(LIVE_HOME) == before


def test_the_model_recorded_in_prompt_logs(tmp_path):
    """Most real sessions (12 of 14 in issue 32's survey, the IDE extensions') name the model
    only in each reply's `promptLogs[].completionOptions.model`, not in `usage` nor in
    `chatModelTitle`: the listing and the steps take it from there."""
    home = live_copy(tmp_path, LIVE_HOME)

    def change(session):
        session.pop("chatModelTitle", None)
        for number, item in enumerate(session["history"]):
            usage = item["message"].get("usage")
            if usage is not None:
                usage.pop("model", None)
            if item["message"]["role"] == "assistant":
                model = "claude-3-5-sonnet-latest" if number < 4 else "gpt-4o"
                item["promptLogs"] = [{"modelTitle": "Claude 3.5 Sonnet", "modelProvider": "anthropic",
                                       "prompt": "...", "completion": "...",
                                       "completionOptions": {"model": model, "maxTokens": 4096}}]
    rewrite(home, CONTINUED, change)
    [(session, doc)] = [(s, d) for s, d in translate_all(continue_cli, base_env(tmp_path, home=home))
                        if s.native_id == CONTINUED]
    assert session.model == "claude-3-5-sonnet-latest" == doc["agent"]["model_name"]
    models = [s.get("model_name") for s in doc["steps"] if s["source"] == "agent"]
    assert set(models) == {"claude-3-5-sonnet-latest", "gpt-4o"} and None not in models
