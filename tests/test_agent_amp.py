"""Amp: every thread translates to a valid document whose counts match its content blocks and
whose token totals are the sums of its per-inference usage; Amp's own tool-result shape is
joined to its call; the workspace URI scopes threads to projects; a thread cut short keeps its
complete messages; nothing is written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_amp.py` rewrites tests/golden/amp/."""

import json
import os
import shutil

from agents import amp
from helpers import (SAMPLES, assert_golden, assert_valid, base_env, cli, doc_counts, scoped_ids,
                    totals, translate_all, tree_digest)

SAMPLE = os.path.join(SAMPLES, "amp", "cass", "threads", "thread-001.json")
RICH_ID = "T-019ca26f-aaaa-bbbb-cccc-dddddddddddd"


def usage(model, fresh, write, read, output, stamp):
    return {"model": model, "inputTokens": fresh, "cacheCreationInputTokens": write,
            "cacheReadInputTokens": read, "totalInputTokens": fresh + write + read,
            "outputTokens": output, "timestamp": stamp}


# A thread in the shape Amp writes (fields as Amp readers document them): thinking, a Bash run
# result object, a failed run, Anthropic-style results, per-inference usage.
RICH = {
    "v": 1, "id": RICH_ID, "created": 1797936000000, "title": "Migrate database schema",
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Migrate the DB schema."}],
         "meta": {"sentAt": 1797936000500}},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Look at the migrations first."},
            {"type": "text", "text": "Listing migrations."},
            {"type": "tool_use", "complete": True, "id": "toolu_1", "name": "Bash",
             "input": {"cmd": "ls migrations"}}],
         "state": {"type": "complete", "stopReason": "tool_use"},
         "usage": usage("claude-sonnet-4-5", 10, 3000, 0, 40, "2026-12-22T10:40:01.000Z")},
        {"role": "user", "content": [{"type": "tool_result", "toolUseID": "toolu_1",
                                      "run": {"status": "done", "result": {"output": "001_init.sql\n", "exitCode": 0}}}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_2", "name": "edit_file", "input": {"path": "002.sql"}},
            {"type": "tool_use", "id": "toolu_3", "name": "Read", "input": {"path": "001_init.sql"}}],
         "usage": usage("claude-sonnet-4-5", 5, 200, 3000, 25, "2026-12-22T10:40:05.000Z")},
        {"role": "user", "content": [
            {"type": "tool_result", "toolUseID": "toolu_2", "run": {"status": "error", "error": {"message": "denied"}}},
            {"type": "tool_result", "tool_use_id": "toolu_3", "content": "CREATE TABLE t (id int);"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done: 002.sql could not be written."}],
         "usage": usage("claude-sonnet-4-5", 2, 100, 3200, 12, "2026-12-22T10:40:09.000Z")},
    ],
    "env": {"initial": {"trees": [{"displayName": "proj-amp", "uri": "file:///tmp/agents/proj%20amp"}]}},
}


def threads_home(tmp_path):
    home = tmp_path / "home"
    threads = home / ".local" / "share" / "amp" / "threads"
    threads.mkdir(parents=True)
    shutil.copy(SAMPLE, threads / "thread-001.json")
    (threads / f"{RICH_ID}.json").write_text(json.dumps(RICH, indent=2))
    return home


def native(path):
    thread = json.load(open(path))
    blocks = [(m["role"], b) for m in thread["messages"] for b in m.get("content", [])]
    users = [m for m in thread["messages"] if m["role"] == "user"
             and (m.get("text") or any(b["type"] == "text" for b in m.get("content", [])))]
    usages = [m["usage"] for m in thread["messages"] if "usage" in m]
    counts = {"user": len(users), "calls": sum(1 for _, b in blocks if b["type"] == "tool_use"),
              "results": sum(1 for _, b in blocks if b["type"] == "tool_result")}
    if not usages:
        return counts, (None, None, None)
    return counts, (sum(u["totalInputTokens"] for u in usages), sum(u["outputTokens"] for u in usages),
                    sum(u["cacheReadInputTokens"] for u in usages))


def test_every_thread_matches_its_messages(tmp_path):
    translated = translate_all(amp, base_env(tmp_path, home=str(threads_home(tmp_path))))
    assert len(translated) == 2
    for session, doc in translated:
        counts, expected = native(session.source)
        assert doc_counts(doc) == counts
        assert totals(doc) == expected


def test_rich_thread(tmp_path):
    env = base_env(tmp_path, home=str(threads_home(tmp_path)))
    session, doc = next((s, d) for s, d in translate_all(amp, env) if s.native_id == RICH_ID)
    assert session.cwd == "/tmp/agents/proj amp" and session.title == "Migrate the DB schema."
    steps = doc["steps"]
    assert steps[1]["reasoning_content"] == "Look at the migrations first."
    assert steps[1]["observation"]["results"][0]["content"] == "001_init.sql\n"
    failed, read = steps[2]["observation"]["results"]
    assert failed["content"] == "denied" and failed["extra"] == {"status": "error", "is_error": True}
    assert read["content"] == "CREATE TABLE t (id int);"
    assert steps[1]["metrics"]["extra"] == {"cache_write_tokens": 3000}
    assert scoped_ids(env, "/tmp/agents/proj amp", "amp") == {RICH_ID}
    assert_golden(doc, "amp", "rich-thread")


def test_openai_threads_do_not_count_cache_writes(tmp_path):
    assert amp.usage_metrics(usage("gpt-5", 0, 900, 100, 10, None)) == {
        "prompt_tokens": 1000, "completion_tokens": 10, "cached_tokens": 100}


def test_xdg_data_home_relocates_the_threads(tmp_path):
    home = threads_home(tmp_path)
    env = {**base_env(tmp_path), "XDG_DATA_HOME": str(home / ".local" / "share")}
    assert len(amp.sources(env)) == 2


def test_a_thread_cut_short_keeps_its_complete_messages(tmp_path):
    home = threads_home(tmp_path)
    path = home / ".local" / "share" / "amp" / "threads" / f"{RICH_ID}.json"
    data = path.read_bytes()
    path.write_bytes(data[: data.index(b"toolu_3") + 20])  # inside the second assistant message
    (path.parent / "T-empty.json").write_bytes(b"")
    found = {s.native_id: d for s, d in translate_all(amp, base_env(tmp_path, home=str(home)))}
    doc = found[RICH_ID]
    assert any("not complete JSON" in w for w in doc["extra"]["warnings"])
    assert doc_counts(doc) == {"user": 1, "calls": 1, "results": 1}
    assert found["T-empty"]["extra"]["warnings"]


def test_store_is_never_written(tmp_path):
    home = threads_home(tmp_path)
    before = tree_digest(str(home))
    env = base_env(tmp_path, home=str(home))
    translate_all(amp, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0 and result.stdout.count(b'"agent":"amp"') == 2
    assert_valid(json.loads(cli("show", RICH_ID, env=env).stdout))
    assert tree_digest(str(home)) == before
