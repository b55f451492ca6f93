"""Qwen Code translator (agents/qwen.py) against the sample stores and the live 0.24.4 home.

Counts and token sums are computed here from the native records of the active branch (the
`parentUuid` chain from the last record back to the root, fragments of one uuid together) and
must equal the documents'; the live store's own usage ledger (`usage_record.jsonl`) must agree
with the token totals. Golden files: `UPDATE_GOLDEN=1` rewrites them; read them through.
"""

import json
import os
import shutil

import pytest

from agents import qwen
from helpers import (LIVE, SAMPLES, assert_golden, assert_holds_runs,
                     assert_scoped_as_the_scenario, assert_valid, base_env, doc_counts, live_copy,
                     read_jsonl, scan_all, scenario_sessions, totals, translate_all,
                     translate_file, tree_digest, truncate_copy, write_jsonl)

SAMPLE_DIR = os.path.join(SAMPLES, "qwen")
LIVE_HOME = os.path.join(LIVE, "qwen-0.24.4")
REWIND_SAMPLE = os.path.join(SAMPLE_DIR, "agent-sessions", "019f0000-0000-7000-8000-000000000004.jsonl")
SAMPLE_FILES = sorted(os.path.join(folder, name) for folder, _, names in os.walk(SAMPLE_DIR)
                      for name in names if name.endswith(".jsonl"))
LIVE_FILES = sorted(os.path.join(folder, name) for folder, _, names in os.walk(os.path.join(LIVE_HOME, ".qwen", "projects"))
                    for name in names if name.endswith(".jsonl"))


# native view, written independently of the translator ---------------------------------------------
def native_branch(path: str) -> list[list[dict]]:
    """The active branch as groups of fragments, root first."""
    records = read_jsonl(path)
    groups: dict = {}
    for index, record in enumerate(records):
        groups.setdefault(record.get("uuid") or index, []).append(record)
    if not any("parentUuid" in r for r in records):
        return list(groups.values())
    leaf = [r for r in records if r.get("subtype") not in ("session_artifact_event", "session_artifact_snapshot")][-1]
    chain, uuid = [], leaf["uuid"]
    while uuid in groups and uuid not in chain:
        chain.append(uuid)
        uuid = groups[uuid][0].get("parentUuid")
    return [groups[u] for u in reversed(chain)]


def native_counts(branch: list[list[dict]]) -> tuple[dict, tuple]:
    user = calls = results = 0
    totals: dict = {}
    called = set()
    for group in branch:
        first = group[0]
        parts = [p for record in group for p in (record.get("message") or {}).get("parts") or []]
        if first.get("type") == "user" and first.get("subtype") not in ("notification", "cron", "goal_runtime"):
            user += any(p.get("text") and not p.get("thought") and not p["text"].startswith("<qwen:") for p in parts)
        if first.get("type") == "system" and first.get("subtype") == "slash_command":
            payload = first.get("systemPayload") or {}
            user += payload.get("phase") == "invocation" and not payload.get("sentToModel") and bool(payload.get("rawCommand"))
        for part in parts:
            if "functionCall" in part:
                calls += 1
                called.add(part["functionCall"].get("id"))
            if "functionResponse" in part and part["functionResponse"].get("id") in called:
                results += 1
        usage = next((r["usageMetadata"] for r in reversed(group) if r.get("usageMetadata")), None)
        if usage:
            p, c, t = usage.get("promptTokenCount"), usage.get("candidatesTokenCount"), usage.get("thoughtsTokenCount") or 0
            inside = usage.get("totalTokenCount") == (p or 0) + (c or 0) + usage.get("toolUsePromptTokenCount", 0)
            for key, value in (("prompt", p), ("completion", None if c is None else c + (0 if inside else t)),
                               ("cached", usage.get("cachedContentTokenCount"))):
                if value is not None:
                    totals[key] = totals.get(key, 0) + value
    return {"user": user, "calls": calls, "results": results}, (totals.get("prompt"), totals.get("completion"), totals.get("cached"))


# homes --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sample_home(tmp_path_factory):
    """Every sample and live file in one fake ~/.qwen (the live project folders kept)."""
    home = str(tmp_path_factory.mktemp("qwen-samples"))
    shutil.copytree(os.path.join(LIVE_HOME, ".qwen"), os.path.join(home, ".qwen"))
    chats = os.path.join(home, ".qwen", "projects", "samples", "chats")
    os.makedirs(chats)
    for path in SAMPLE_FILES:
        shutil.copy2(path, os.path.join(chats, os.path.basename(path)))
    return home


# every sample -------------------------------------------------------------------------------------
def test_every_sample_is_a_valid_document_with_native_counts(sample_home, tmp_path):
    env = base_env(tmp_path, home=sample_home)
    before = tree_digest(sample_home)
    found = translate_all(qwen, env)
    assert len(found) == len(SAMPLE_FILES) + len(LIVE_FILES)
    for session, doc in found:
        counts, tokens = native_counts(native_branch(session.source))
        assert doc_counts(doc) == counts, session.source
        assert totals(doc) == tokens, session.source
    assert tree_digest(sample_home) == before


def usage_ledger(home: str) -> dict:
    """Qwen Code's own cumulative usage per session (the last line of a session wins)."""
    ledger = {}
    for record in read_jsonl(os.path.join(home, ".qwen", "usage_record.jsonl")):
        models = record["models"].values()
        ledger[record["sessionId"]] = (sum(m["inputTokens"] for m in models),
                                       sum(m["outputTokens"] for m in models),
                                       sum(m["cachedTokens"] for m in models))
    return ledger


def test_live_sessions_follow_the_scenario(tmp_path):
    env = base_env(tmp_path, home=live_copy(tmp_path, LIVE_HOME))
    ledger = usage_ledger(env["HOME"])
    for session, runs in scenario_sessions(qwen, env, LIVE_HOME):
        doc = qwen.translate(session, env)
        assert_valid(doc)
        assert_holds_runs(doc, session, runs)
        assert totals(doc) == ledger[session.native_id]
        assert doc["agent"]["version"] == "0.24.4"


def test_project_scoping_with_the_live_projects(tmp_path):
    assert_scoped_as_the_scenario("qwen", base_env(tmp_path, home=live_copy(tmp_path, LIVE_HOME)), LIVE_HOME)


def test_qwen_home_and_archive(tmp_path):
    root = tmp_path / "elsewhere"
    archive = root / "projects" / "p" / "chats" / "archive"
    archive.mkdir(parents=True)
    shutil.copy2(LIVE_FILES[0], archive / os.path.basename(LIVE_FILES[0]))
    env = {**base_env(tmp_path), "QWEN_HOME": str(root)}
    [session] = scan_all(qwen, env)
    assert session.extra["archived"] and session.source.startswith(str(archive))


# the tree ---------------------------------------------------------------------------------------
def test_rewind_keeps_only_the_active_branch_and_merges_fragments(tmp_path):
    doc = translate_file(qwen, REWIND_SAMPLE, base_env(tmp_path))
    text = json.dumps(doc)
    assert "Discarded branch" not in text and "synthetic-dead-model" not in text
    assert doc["extra"]["records_on_abandoned_branches"] == 2
    assert doc["extra"]["title"] == "Active branch title"
    [answer] = [s for s in doc["steps"] if s["source"] == "agent"]
    assert answer["reasoning_content"] == "Reason over the active branch."   # first fragment
    assert answer["tool_calls"][0]["tool_call_id"] == "synthetic-active-call"  # second fragment
    assert answer["metrics"] == {"prompt_tokens": 12, "completion_tokens": 4}


def test_missing_parent_is_reported(tmp_path):
    records = read_jsonl(LIVE_FILES[1])
    broken = [r for r in records if r["uuid"] != records[3]["uuid"]]   # drop one link of the chain
    path = write_jsonl(tmp_path / "home/.qwen/projects/p/chats/broken.jsonl", broken)
    doc = translate_file(qwen, path, base_env(tmp_path))
    assert any("missing" in w for w in doc["extra"]["warnings"])
    counts, tokens = native_counts(native_branch(path))
    assert (doc_counts(doc), totals(doc)) == (counts, tokens)


@pytest.mark.parametrize("last", [{"uuid": "zz", "type": "from-the-future"},
                                  {"uuid": "zz", "parentUuid": 42, "type": "user",
                                   "message": {"role": "user", "parts": [{"text": "x"}]}}])
def test_a_last_record_outside_the_tree_does_not_abandon_the_conversation(tmp_path, last):
    """A damaged or unknown last record whose parent link is missing starts no new conversation."""
    records = read_jsonl(LIVE_FILES[1])
    path = write_jsonl(tmp_path / "home/.qwen/projects/p/chats/damaged.jsonl", records + [last])
    doc = translate_file(qwen, path, base_env(tmp_path))
    counts, tokens = native_counts(native_branch(LIVE_FILES[1]))
    assert (doc_counts(doc), totals(doc)) == (counts, tokens)
    assert doc["extra"]["records_on_abandoned_branches"] == 1


def test_truncated_copy_yields_a_valid_document_with_a_warning(tmp_path):
    target = str(tmp_path / "home/.qwen/projects/p/chats/cut.jsonl")
    truncate_copy(LIVE_FILES[1], target)
    doc = translate_file(qwen, target, base_env(tmp_path))
    assert doc["extra"]["warnings"]
    assert doc["steps"][0]["source"] == "user"


# golden files -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, path", [
    ("live-continued", os.path.join(LIVE_HOME, ".qwen/projects/-tmp-agents-proj-qwen/chats/63d0ec99-43fa-41d8-a214-c8dc79c9dd8a.jsonl")),
    ("rewind-branch", REWIND_SAMPLE),
])
def test_golden(name, path, tmp_path):
    assert_golden(translate_file(qwen, path, base_env(tmp_path)), "qwen", name)


def test_a_windows_working_directory_is_kept(tmp_path):
    """A chat copied from Windows records `cwd` as `C:\\Users\\…`: that is its directory (it was
    no directory at all), in its listing and in its document; it belongs to no project here."""
    from discovery import catalog

    records = [{**r, "cwd": "C:\\Users\\Me\\proj"} if "cwd" in r else r for r in read_jsonl(LIVE_FILES[0])]
    path = write_jsonl(tmp_path / "home/.qwen/projects/C--Users-Me-proj/chats/win.jsonl", records)
    [session] = qwen.scan(path, base_env(tmp_path))
    assert session.cwd == "C:\\Users\\Me\\proj"
    project = tmp_path / "proj"
    project.mkdir()
    assert qwen.outside(path, catalog.Scope(str(project), base_env(tmp_path)), {})
