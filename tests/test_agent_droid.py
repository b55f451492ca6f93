"""Factory Droid: every sample translates to a valid document whose counts match the native
records and whose token totals are the settings file's; system reminders are split from what the
human typed; stream-json logs are read too; damaged files give documents with warnings; nothing
is written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_droid.py` rewrites tests/golden/droid/."""

import json
import os
import re
import shutil

from agents import droid
from agents.base import one_line
from helpers import (LIVE, SAMPLES, assert_golden, assert_valid, base_env, cli, doc_counts, read_jsonl,
                     scan_all, scoped_ids, totals, translate_all, tree_digest, write_jsonl)

SAMPLE_DIR = os.path.join(SAMPLES, "droid", "agent-sessions")
LIVE_HOME = os.path.join(LIVE, "droid-0.215.0")

# A session in the shape Droid writes (field names from the session_start type and the settings
# files quoted by Droid readers): thinking, a failed tool call, a reminder before the prompt.
RICH_ID = "4b0c1c2e-0000-4000-8000-00000000d001"
RICH = [
    {"type": "session_start", "id": RICH_ID, "title": "Fix the parser", "sessionTitle": "Fix the parser",
     "owner": "dev", "version": 2, "cwd": "/tmp/agents/proj-droid", "isSessionTitleManuallySet": False},
    {"type": "message", "id": "m1", "timestamp": "2026-11-01T10:00:00.000Z", "message": {
        "role": "user", "content": [{"type": "text", "text": "<system-reminder>\nUse the Execute tool.\n"
                                     "</system-reminder>\n\nRun the tests"}]}},
    {"type": "message", "id": "m2", "parentId": "m1", "timestamp": "2026-11-01T10:00:02.000Z", "message": {
        "role": "assistant", "content": [
            {"type": "thinking", "thinking": "Run pytest first."},
            {"type": "text", "text": "Running the tests."},
            {"type": "tool_use", "id": "toolu_1", "name": "Execute", "input": {"command": "pytest -q"}}]}},
    {"type": "message", "id": "m3", "parentId": "m2", "timestamp": "2026-11-01T10:00:05.000Z", "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                                     "content": "1 failed"}]}},
    {"type": "message", "id": "m4", "parentId": "m3", "timestamp": "2026-11-01T10:00:07.000Z", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "One test fails."}]}},
]
RICH_SETTINGS = {"model": "claude-sonnet-4-5", "reasoningEffort": "none",
                 "tokenUsage": {"inputTokens": 1200, "outputTokens": 340, "cacheCreationTokens": 100,
                                "cacheReadTokens": 5000, "thinkingTokens": 20}}


def store_home(tmp_path):
    home = tmp_path / "home"
    sessions = home / ".factory" / "sessions"
    large, drift, proj = sessions / "-tmp-large", sessions / "-tmp", sessions / "-tmp-agents-proj-droid"
    for folder in (large, drift, proj):
        folder.mkdir(parents=True)
    shutil.copy(os.path.join(SAMPLE_DIR, "session_store_large.jsonl"), large / "droid_large.jsonl")
    shutil.copy(os.path.join(SAMPLE_DIR, "stream_json_large.jsonl"), large / "exec-stream.jsonl")
    shutil.copy(os.path.join(SAMPLE_DIR, "session_store_schema_drift.jsonl"), drift / "droid_drift.jsonl")
    write_jsonl(proj / f"{RICH_ID}.jsonl", RICH)
    (proj / f"{RICH_ID}.settings.json").write_text(json.dumps(RICH_SETTINGS))
    return home


REMINDERS = re.compile(r"^(\s*<system-reminder>.*?</system-reminder>)+", re.S)  # what opens a user text


def native_counts(path):
    records = read_jsonl(path)
    if droid.dialect(records) == "stream-json":
        return {"user": sum(1 for r in records if r["type"] == "message" and r["role"] == "user"),
                "calls": sum(1 for r in records if r["type"] == "tool_call"),
                "results": sum(1 for r in records if r["type"] == "tool_result")}
    blocks = [(r["message"]["role"], b) for r in records if r["type"] == "message" for b in r["message"]["content"]]
    prompts = [b for role, b in blocks if role == "user" and b["type"] == "text" and REMINDERS.sub("", b["text"]).strip()]
    return {"user": len(prompts), "calls": sum(1 for _, b in blocks if b["type"] == "tool_use"),
            "results": sum(1 for _, b in blocks if b["type"] == "tool_result")}


def test_every_sample_matches_its_records(tmp_path):
    translated = translate_all(droid, base_env(tmp_path, home=str(store_home(tmp_path))))
    assert len(translated) == 4
    for session, doc in translated:
        assert doc_counts(doc) == native_counts(session.source), session.source


def test_rich_session(tmp_path):
    env = base_env(tmp_path, home=str(store_home(tmp_path)))
    doc = next(d for s, d in translate_all(droid, env) if s.native_id == RICH_ID)
    usage = RICH_SETTINGS["tokenUsage"]
    assert totals(doc) == (usage["inputTokens"] + usage["cacheCreationTokens"] + usage["cacheReadTokens"],
                           usage["outputTokens"], usage["cacheReadTokens"])
    assert doc["final_metrics"]["extra"]["thinking_tokens"] == 20
    steps = doc["steps"]
    assert [s["source"] for s in steps] == ["system", "user", "agent", "agent"]
    assert steps[0]["extra"]["kind"] == "reminder" and steps[1]["message"] == "Run the tests"
    assert steps[2]["reasoning_content"] == "Run pytest first."
    assert steps[2]["observation"]["results"][0]["extra"] == {"is_error": True}
    assert doc["agent"]["model_name"] == "claude-sonnet-4-5"
    assert scoped_ids(env, "/tmp/agents/proj-droid", "droid") == {RICH_ID}
    assert_golden(doc, "droid", "rich-session")


def merged_first_messages(records: list) -> list:
    """A session with its typed prompt moved into the message of reminders before it (the other
    way the reminders come: opening the prompt's own message), under a session id of its own."""
    assert records[0]["type"] == "session_start"
    first, second = [i for i, r in enumerate(records) if r.get("type") == "message"][:2]
    merged = json.loads(json.dumps(records[first]))
    merged["message"]["content"] += records[second]["message"]["content"]
    start = {**records[0], "id": records[0]["id"] + "-merged"}
    return [start] + records[1:first] + [merged] + records[second + 1:]


def test_live_sessions_open_with_the_typed_prompt(tmp_path):
    """Droid 0.215.0 opens every session with a user message of six `<system-reminder>` blocks,
    then the typed prompt. The first message listed is the prompt; the reminders are one system
    step (`extra.kind` "reminder") before the prompt's user step. So too when the reminders open
    the prompt's own message."""
    home = shutil.copytree(LIVE_HOME, tmp_path / "home")
    sessions = sorted((home / ".factory" / "sessions").glob("*/*.jsonl"))
    records = read_jsonl(sessions[0])
    write_jsonl(sessions[0].parent / "merged.jsonl", merged_first_messages(records))
    env = base_env(tmp_path, home=str(home))
    translated = translate_all(droid, env)
    assert len(translated) == 4
    for session, doc in translated:
        prompt = next(b["text"] for r in read_jsonl(session.source) if r.get("type") == "message"
                      for b in r["message"]["content"] if b["text"].startswith("SCENARIO "))
        assert session.title == one_line(prompt)
        steps = [(s["source"], (s.get("extra") or {}).get("kind"), s["message"]) for s in doc["steps"][:2]]
        assert steps[0][:2] == ("system", "reminder") and steps[0][2].count("<system-reminder>") == 6
        assert steps[1] == ("user", None, prompt)
        assert [s["message"] for s in doc["steps"] if s["source"] == "user"] == [prompt]
    listed = [json.loads(line) for line in cli("list", "--all", "--json", env=env).stdout.splitlines()]
    assert all(row["first_message"].startswith("SCENARIO droid-") for row in listed)


def test_scan_reads_the_head(tmp_path):
    env = base_env(tmp_path, home=str(store_home(tmp_path)))
    sessions = {s.native_id: s for s in scan_all(droid, env)}
    assert sessions["droid_drift"].title == "Do the thing"
    assert sessions["droid_drift"].extra["format"] == "store-v2"
    assert sessions["sid_stage0_large"].extra["format"] == "stream-json"
    assert sessions["droid_large"].cwd == "/tmp/large"


def test_damaged_files_give_documents_with_warnings(tmp_path):
    home = store_home(tmp_path)
    path = home / ".factory" / "sessions" / "-tmp-agents-proj-droid" / f"{RICH_ID}.jsonl"
    data = path.read_bytes()
    lines = data.split(b"\n")
    path.write_bytes(b"\n".join(lines[:2] + [b"{oops"] + lines[2:])[:-40])
    (home / ".factory" / "sessions" / "-tmp-agents-proj-droid" / f"{RICH_ID}.settings.json").write_text("{not json")
    doc = next(d for s, d in translate_all(droid, base_env(tmp_path, home=str(home))) if s.native_id == RICH_ID)
    warnings = " ".join(doc["extra"]["warnings"])
    assert "malformed" in warnings and "truncated" in warnings
    assert doc_counts(doc)["calls"] == 1
    assert "total_prompt_tokens" not in doc["final_metrics"]  # unreadable settings: no totals


def test_store_is_never_written(tmp_path):
    home = store_home(tmp_path)
    before = tree_digest(str(home))
    env = base_env(tmp_path, home=str(home))
    translate_all(droid, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0 and result.stdout.count(b'"agent":"droid"') == 4
    assert tree_digest(str(home)) == before
    assert_valid(json.loads(cli("show", RICH_ID, env=env).stdout))
