"""gptme: every conversation of the live store (0.35.1) holds every step of its scenario, its
counts and token totals are the native messages', the workspace and tool format come from the
conversation's config.toml, gptme's own nudges are system steps, damaged conversations give
documents with warnings, the health report counts the store, and nothing is written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_gptme.py` rewrites tests/golden/gptme/."""

import glob
import json
import os
import re
import shutil

import pytest

from agents import gptme
from helpers import (LIVE, assert_golden, assert_scripted_steps, assert_valid, base_env, cli, doc_counts,
                     live_copy, scan_all, scoped_ids, scripted_runs, totals, translate_all, tree_digest)

LIVE_HOME = os.path.join(LIVE, "gptme-0.35.1")
LOGS = os.path.join(LIVE_HOME, ".local", "share", "gptme", "logs")
CONTINUED = "2026-12-01-climbing-angry-seal"
SECOND, OTHER = "2026-12-01-walking-happy-jellyfish", "2026-12-01-skipping-pink-dragon"


def live_env(tmp_path):
    return base_env(tmp_path, home=LIVE_HOME)


def native(path):
    return [json.loads(line) for line in open(path)]


def native_counts(messages):
    """Counted from the records: prompts (not gptme's `<system>` nudges), `@tool(id):` call lines
    of the replies, results naming a call."""
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    return {"user": sum(1 for m in messages if m["role"] == "user" and not m["content"].startswith("<system>")),
            "calls": sum(len(re.findall(r"^@\w+\(call_\w+\): \{", r, re.M)) for r in replies),
            "results": sum(1 for m in messages if m.get("call_id"))}


def native_totals(messages):
    usages = [m["metadata"]["usage"] for m in messages if m["role"] == "assistant"]
    return (sum(u["input_tokens"] + u["cache_read_tokens"] for u in usages), sum(u["output_tokens"] for u in usages),
            sum(u["cache_read_tokens"] for u in usages))


def test_every_scenario_step_is_in_its_session(tmp_path):
    runs = scripted_runs(LIVE_HOME, "gptme")
    assert sorted(runs) == ["gptme-1", "gptme-1b", "gptme-2", "gptme-3"]
    held = {}
    for session, doc in translate_all(gptme, live_env(tmp_path)):
        assert_valid(doc)
        sids = [sid for sid in runs if any(s["source"] == "user" and s["message"].startswith(f"SCENARIO {sid} in ")
                                           for s in doc["steps"])]
        for sid in sids:
            assert_scripted_steps(doc, sid, runs[sid], reasoning=False, parallel=False)
            assert session.cwd == runs[sid]
        held[session.native_id] = sids
    assert held == {CONTINUED: ["gptme-1", "gptme-1b"], SECOND: ["gptme-2"], OTHER: ["gptme-3"]}


def test_counts_and_tokens_are_the_native_records(tmp_path):
    translated = translate_all(gptme, live_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        messages = native(session.source)
        assert doc_counts(doc) == native_counts(messages)
        assert totals(doc) == native_totals(messages)
        agents = [s for s in doc["steps"] if s["source"] == "agent"]
        assert len(agents) == sum(1 for m in messages if m["role"] == "assistant")
        assert all(not re.search(r"^@\w+\(", a["message"], re.M) for a in agents)   # the call lines are calls
        kinds = [s["extra"]["kind"] for s in doc["steps"] if s["source"] == "system"]
        assert len(kinds) == sum(1 for m in messages if m["role"] == "system" and not m.get("call_id")) + \
            sum(1 for m in messages if m["role"] == "user" and (m["content"].startswith("<system>") or "\n\n````" in m["content"]))
        assert doc["session_id"] == session.native_id and "warnings" not in doc["extra"]


def test_files_gptme_attached_to_a_prompt_are_a_system_step(tmp_path):
    """Run gptme-2's prompt names note.txt, which gptme-1b left in the project: gptme appended it."""
    env = live_env(tmp_path)
    session = next(s for s in scan_all(gptme, env) if s.native_id == SECOND)
    prompt = next(m["content"] for m in native(session.source) if m["role"] == "user")
    steps = gptme.translate(session, env)["steps"]
    at = next(i for i, s in enumerate(steps) if s["source"] == "user")
    assert prompt == steps[at]["message"] + "\n\n" + steps[at + 1]["message"]
    assert steps[at + 1]["message"] == "````note.txt\nhello-gptme-1b\n\n````"
    assert steps[at + 1]["source"] == "system" and steps[at + 1]["extra"] == {"kind": "included_files"}


def test_failures_nudges_and_system_prompts(tmp_path):
    env = live_env(tmp_path)
    session = next(s for s in scan_all(gptme, env) if s.native_id == OTHER)
    doc = gptme.translate(session, env)
    results = [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])]
    assert [r["extra"] for r in results if r.get("extra")] == [{"exit_code": 2, "is_error": True}]
    kinds = [s["extra"]["kind"] for s in doc["steps"] if s["source"] == "system"]
    pinned = sum(1 for m in native(session.source) if m["role"] == "system" and m.get("pinned"))
    assert kinds.count("system_prompt") == pinned and kinds.count("auto_reply") == 2
    assert doc["extra"]["tool_format"] == "tool" and doc["extra"]["title"] == "Conformance scenario"
    prompt = next(m["content"] for m in native(session.source) if m.get("pinned"))
    assert prompt.startswith(f"You are gptme v{doc['agent']['version']}, ") and doc["agent"]["version"] == "0.35.1"


def test_scan_reads_the_config_and_the_head(tmp_path):
    for session in scan_all(gptme, live_env(tmp_path)):
        config = open(os.path.join(os.path.dirname(session.source), "config.toml")).read()
        assert f'workspace = "{session.cwd}"' in config
        prompt = next(m for m in native(session.source) if m["role"] == "user")
        assert session.title.startswith("SCENARIO gptme-") and session.model == "local/fake-model"
        assert session.started == pytest.approx(gptme.epoch(prompt["timestamp"]))   # before the system prompt's
        assert session.started < gptme.epoch(native(session.source)[0]["timestamp"])
        assert session.extra["format"] == "jsonl-tool"


def test_a_conversation_without_config_has_no_cwd_and_a_bad_one_is_a_warning(tmp_path):
    home = live_copy(tmp_path, LIVE_HOME)
    env = base_env(tmp_path, home=home)
    folder = os.path.join(home, ".local", "share", "gptme", "logs")
    os.remove(os.path.join(folder, SECOND, "config.toml"))
    open(os.path.join(folder, OTHER, "config.toml"), "w").write('[chat\nworkspace = "')
    docs = {s.native_id: (s, d) for s, d in translate_all(gptme, env)}
    assert docs[SECOND][0].cwd is None and "warnings" not in docs[SECOND][1]["extra"]
    assert docs[OTHER][0].cwd is None
    assert [w for w in docs[OTHER][1]["extra"]["warnings"] if w.startswith("config.toml not read")]


def test_project_scoping(tmp_path):
    env = live_env(tmp_path)
    assert scoped_ids(env, "/tmp/agents/proj-gptme", "gptme") == {CONTINUED, SECOND}
    assert scoped_ids(env, "/tmp/agents/proj-gptme-other", "gptme") == {OTHER}


def test_store_can_be_relocated(tmp_path):
    shutil.copytree(LOGS, tmp_path / "logs")
    assert len(gptme.sources({**base_env(tmp_path), "GPTME_LOGS_HOME": str(tmp_path / "logs")})) == 3
    shutil.copytree(os.path.join(LIVE_HOME, ".local", "share"), tmp_path / "data")
    assert len(gptme.sources({**base_env(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")})) == 3


def test_damaged_conversations_give_documents_with_warnings(tmp_path):
    home = live_copy(tmp_path, LIVE_HOME)
    folder = os.path.join(home, ".local", "share", "gptme", "logs")
    path = os.path.join(folder, CONTINUED, "conversation.jsonl")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) * 2 // 3])
    path = os.path.join(folder, SECOND, "conversation.jsonl")
    lines = open(path).read().splitlines()
    reply = next(i for i, line in enumerate(lines) if '"role": "assistant"' in line)
    lines[reply] = lines[reply].replace('): {\\"command', '): {\\"command\\" oops')
    lines.insert(reply, '{"role": "oracle", "content": "?"}')
    open(path, "w").write("\n".join(lines) + "\n")
    docs = {s.native_id: d for s, d in translate_all(gptme, base_env(tmp_path, home=home))}
    assert all(assert_valid(d) is None for d in docs.values())
    cut = docs[CONTINUED]
    assert any("truncated" in w or "not valid JSON" in w for w in cut["extra"]["warnings"]), cut["extra"]["warnings"]
    assert doc_counts(cut)["calls"] > 0
    warnings = docs[SECOND]["extra"]["warnings"]
    assert "message with unknown role 'oracle' skipped" in warnings
    assert any(w.endswith("are not JSON; kept as text") for w in warnings)
    assert doc_counts(docs[SECOND])["calls"] == native_counts(native(path))["calls"]   # the broken one kept


@pytest.mark.parametrize("meta, expected", [
    ({"usage": {"input_tokens": 900, "output_tokens": 20, "cache_read_tokens": 100, "reasoning_tokens": 0}},
     {"prompt_tokens": 1000, "completion_tokens": 20, "cached_tokens": 100}),
    ({"usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 300, "cache_creation_tokens": 40,
                "reasoning_tokens": 3}, "cost": 0.01},
     {"prompt_tokens": 350, "completion_tokens": 5, "cached_tokens": 300, "cost_usd": 0.01,
      "extra": {"cache_creation_tokens": 40, "reasoning_tokens": 3}}),
    ({"model": "m", "input_tokens": 7, "output_tokens": 1}, {"prompt_tokens": 7, "completion_tokens": 1, "cached_tokens": 0}),
    ({"model": "m"}, None),
])
def test_usage_metrics(meta, expected):
    """gptme's MessageMetadata: counts nested under `usage`, `input_tokens` without the cache;
    older logs keep them flat."""
    assert gptme.usage_metrics(meta) == expected


def test_golden_document(tmp_path):
    env = live_env(tmp_path)
    session = next(s for s in scan_all(gptme, env) if s.native_id == CONTINUED)
    doc = gptme.translate(session, env)
    assert_valid(doc)
    assert_golden(doc, "gptme", "live-continued-conversation")


def test_health_counts_the_store(tmp_path):
    result = cli("agents", "--json", env=live_env(tmp_path))
    row = next(r for r in map(json.loads, result.stdout.splitlines()) if r["agent"] == "gptme")
    files = glob.glob(os.path.join(LOGS, "*", "conversation.jsonl")) + glob.glob(os.path.join(LOGS, "*", "config.toml"))
    assert (row["sessions"], row["sources"], row["formats"]) == (3, 3, {"jsonl-tool": 3})
    assert row["native_bytes"] == sum(os.path.getsize(p) for p in files)
    assert row["sessions_with_warnings"] == row["sessions_failed"] == row["sessions_without_cwd"] == 0


def test_store_is_never_written(tmp_path):
    before = tree_digest(LIVE_HOME)
    env = live_env(tmp_path)
    translate_all(gptme, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert len([line for line in result.stdout.splitlines() if b'"agent":"gptme"' in line]) == 3
    assert tree_digest(LIVE_HOME) == before
