"""pi: every sample translates to a valid document whose counts and token totals match the
native records; the active branch of a session tree is the one translated; damaged files still
give a document with a warning; the store is never written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_pi.py` rewrites tests/golden/pi/."""

import json
import os
import shutil

import pytest

from agents import pi
from helpers import LIVE, SAMPLES, assert_valid, base_env, cli
from store_checks import check_golden, doc_counts, scoped_ids, totals, translate_all, tree_state

LIVE_HOME = os.path.join(LIVE, "pi-0.73.1")
SESSIONS = os.path.join(LIVE_HOME, ".pi", "agent", "sessions")
CATALOG_SAMPLE = os.path.join(SAMPLES, "pi", "agent-sessions", "small.jsonl")


def live_env(tmp_path):
    return base_env(tmp_path, home=LIVE_HOME)


def native_records(path):
    with open(path, "rb") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def native_counts(records):
    messages = [r["message"] for r in records if r.get("type") == "message"]
    calls = [b for m in messages if m["role"] == "assistant" for b in m["content"]
             if b["type"] == "toolCall"]
    return {"user": sum(1 for m in messages if m["role"] == "user"), "calls": len(calls),
            "results": sum(1 for m in messages if m["role"] == "toolResult")}


def native_totals(records):
    usages = [r["message"]["usage"] for r in records if r.get("type") == "message"
              and r["message"]["role"] == "assistant" and "usage" in r["message"]]
    prompt = sum(u["input"] + u["cacheRead"] + u["cacheWrite"] for u in usages)
    return prompt, sum(u["output"] for u in usages), sum(u["cacheRead"] for u in usages)


def catalog_home(tmp_path):
    """A $HOME holding the catalog sample the way pi lays it out."""
    home = tmp_path / "home"
    target = home / ".pi" / "agent" / "sessions" / "--tmp-as-agent-fixture-project--"
    target.mkdir(parents=True)
    shutil.copy(CATALOG_SAMPLE, target / "2026-05-12T01-02-27-657Z_019e19b4-eb48-746a-aa6b-8dfcfa37954b.jsonl")
    return base_env(tmp_path, home=str(home))


def test_live_sessions_match_native_records(tmp_path):
    translated = translate_all(pi, live_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        records = native_records(session.source)
        assert doc_counts(doc) == native_counts(records)
        assert totals(doc) == native_totals(records)
        assert doc["session_id"] == records[0]["id"] and session.cwd == records[0]["cwd"]
        assert doc["steps"][-1]["message"].startswith("SCENARIO-DONE")
        assert doc["steps"][1]["reasoning_effort"] == "low"


def test_catalog_sample_keeps_compactions_and_usage(tmp_path):
    (session, doc), = translate_all(pi, catalog_home(tmp_path))
    records = native_records(session.source)
    assert doc_counts(doc) == native_counts(records)
    assert totals(doc) == native_totals(records)
    compactions = [s for s in doc["steps"] if (s.get("extra") or {}).get("kind") == "compaction"]
    assert len(compactions) == sum(1 for r in records if r["type"] == "compaction")
    last = doc["steps"][-1]
    assert last["metrics"]["extra"] == {"reasoning_tokens": 2}
    assert last["reasoning_content"] == "[trimmed for fixture]"
    assert "reasoning_effort" not in last  # thinking level "off"


def test_scan_reads_the_header(tmp_path):
    env = live_env(tmp_path)
    sessions = [s for src in pi.sources(env) for s in pi.scan(src, env)]
    assert {s.cwd for s in sessions} == {"/tmp/agents/proj-pi", "/tmp/agents/proj-pi-other"}
    assert all(s.title.startswith("SCENARIO pi-") and s.model == "claude-fake-model" for s in sessions)
    assert {s.extra["format"] for s in sessions} == {"v3"}


def test_project_scoping(tmp_path):
    env = live_env(tmp_path)
    assert len(scoped_ids(env, "/tmp/agents/proj-pi", "pi")) == 2
    assert scoped_ids(env, "/tmp/agents/proj-pi-other", "pi") == {"01a2290b-f30a-7366-b718-354bab06639c"}


def test_store_can_be_relocated(tmp_path):
    agent_dir = tmp_path / "elsewhere"
    shutil.copytree(os.path.join(LIVE_HOME, ".pi", "agent"), agent_dir)
    env = {**base_env(tmp_path), "PI_CODING_AGENT_DIR": str(agent_dir)}
    assert len(pi.sources(env)) == 3
    env = {**base_env(tmp_path), "PI_CODING_AGENT_SESSION_DIR": str(agent_dir / "sessions")}
    assert len(pi.sources(env)) == 3


def write_jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_only_the_active_branch_is_translated(tmp_path):
    """A session where the user went back to the first answer and asked something else: the
    abandoned question is not in the document, and is counted."""
    def msg(id_, parent, role, text):
        content = [{"type": "text", "text": text}]
        return {"type": "message", "id": id_, "parentId": parent,
                "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": role, "content": content}}
    records = [{"type": "session", "version": 3, "id": "s-branch", "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/p"},
               msg("u1", None, "user", "first"), msg("a1", "u1", "assistant", "answer 1"),
               msg("u2", "a1", "user", "abandoned"), msg("a2", "u2", "assistant", "answer 2"),
               {"type": "branch_summary", "id": "b1", "parentId": "a1", "timestamp": "2026-01-01T00:00:01.000Z",
                "fromId": "a2", "summary": "tried something"},
               msg("u3", "b1", "user", "second try"), msg("a3", "u3", "assistant", "answer 3")]
    home = tmp_path / "home"
    write_jsonl(home / ".pi" / "agent" / "sessions" / "--p--" / "x_s-branch.jsonl", records)
    (_, doc), = translate_all(pi, base_env(tmp_path, home=str(home)))
    assert [s["message"] for s in doc["steps"]] == ["first", "answer 1", "tried something",
                                                    "second try", "answer 3"]
    assert doc["extra"]["entries_off_path"] == 2


def test_damaged_files_give_documents_with_warnings(tmp_path):
    env = live_env(tmp_path)
    source = pi.sources(env)[0]
    data = open(source, "rb").read()
    lines = data.split(b"\n")
    home = tmp_path / "broken"
    folder = home / ".pi" / "agent" / "sessions" / "--tmp-agents-proj-pi--"
    folder.mkdir(parents=True)
    (folder / "a_truncated.jsonl").write_bytes(data[: len(data) // 2])
    (folder / "b_malformed.jsonl").write_bytes(b"\n".join(lines[:4] + [b"{not json"] + lines[4:]))
    (folder / "c_empty.jsonl").write_bytes(b"")
    translated = {os.path.basename(s.source): d for s, d in translate_all(pi, base_env(tmp_path, home=str(home)))}
    assert any("truncated" in w for w in translated["a_truncated.jsonl"]["extra"]["warnings"])
    assert any("malformed" in w for w in translated["b_malformed.jsonl"]["extra"]["warnings"])
    assert doc_counts(translated["b_malformed.jsonl"])["calls"] == 4
    assert translated["c_empty.jsonl"]["extra"]["warnings"]


STRAY = {"type": "message", "id": "zz", "parentId": "lost", "message": {"role": "user", "content": [{"type": "text", "text": "x"}]}}


@pytest.mark.parametrize("stray, where", [({"type": "from-the-future", "payload": {}}, None),
                                          ({**STRAY, "parentId": 42}, None),
                                          (STRAY, None),                     # last, its parent lost
                                          (STRAY, 1),                        # first, its parent lost
                                          ({**STRAY, "parentId": None}, 1)])  # first, a root of its own
def test_an_entry_outside_the_tree_does_not_abandon_the_conversation(tmp_path, stray, where):
    env = live_env(tmp_path)
    source = pi.sources(env)[0]
    home = tmp_path / "damaged"
    records = native_records(source)
    records.insert(len(records) if where is None else where, stray)
    write_jsonl(home / ".pi" / "agent" / "sessions" / "--p--" / os.path.basename(source), records)
    (_, doc), = translate_all(pi, base_env(tmp_path, home=str(home)))
    assert doc_counts(doc) == native_counts(native_records(source))
    assert doc["extra"]["entries_off_path"] == 1


def test_golden_document(tmp_path):
    env = live_env(tmp_path)
    session = next(s for src in pi.sources(env) for s in pi.scan(src, env)
                   if s.native_id == "01a2290b-e864-76d6-b47a-20eb8f7add32")
    doc = pi.translate(session, env)
    assert_valid(doc)
    check_golden("pi", "live-continued-session", doc)


def test_store_is_never_written(tmp_path):
    before = tree_state(LIVE_HOME)
    env = live_env(tmp_path)
    translate_all(pi, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert len([line for line in result.stdout.splitlines() if b'"agent":"pi"' in line]) == 3
    assert tree_state(LIVE_HOME) == before


@pytest.mark.parametrize("usage, expected", [
    ({"input": 10, "output": 2, "cacheRead": 5, "cacheWrite": 3, "cost": {"total": 0.5}},
     {"prompt_tokens": 18, "completion_tokens": 2, "cached_tokens": 5, "cost_usd": 0.5,
      "extra": {"cache_write_tokens": 3}}),
    ({}, None),
    ("not a dict", None),
])
def test_usage_metrics(usage, expected):
    assert pi.usage_metrics(usage) == expected
