"""Claude Code: every sample translates to a valid document whose counts and token totals match
the native records; golden documents pin the translation of representative sessions.

Regenerate the golden files with `UPDATE_GOLDEN=1 make test` and read the diff before committing.
"""

import glob
import json
import os
import shutil

import pytest

from agents import claude
from agents.base import one_line
from discovery import catalog
from rendering import documents
from helpers import LIVE, SAMPLES, assert_golden, assert_valid, base_env, run_main, write_jsonl

CLAUDE_SAMPLES = sorted(
    p for p in glob.glob(os.path.join(SAMPLES, "claude", "**", "*.jsonl"), recursive=True)
    + glob.glob(os.path.join(LIVE, "claude-*", ".claude", "projects", "*", "*.jsonl"))
    if "/subagents/" not in p)
GOLDEN = {
    "live-scenario": "live/claude-2.1.332/.claude/projects/-tmp-agents-proj-claude/348a3463-5332-480a-8329-09f4fe2cc499.jsonl",
    "subagents": "claude/claude-code-log/minimal_showcase/55550000-0000-4000-8000-000000000001.jsonl",
    "compaction": "claude/claude-code-log/dag_compact_after_rewind.jsonl",
    "ids-missing": "claude/agent-sessions/stage0_large.jsonl",
}


ENV = {"HOME": "/nonexistent"}


@pytest.fixture(autouse=True, scope="module")
def private_cache(tmp_path_factory):
    """The documents translated here are cached in a folder of the tests' own: under $HOME, the
    cache would be every run's on the machine, and serve the document another version of the
    translator made (one that has the same VERSION)."""
    ENV["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))


def translate_file(path: str) -> dict:
    session = claude.scan(path, ENV)[0]
    session.short_id = "cl-00000000"
    return documents.translate(session, ENV)


def native_records(path: str) -> list[dict]:
    """Every readable record of a transcript and of its sub-agent transcripts, each record once
    (Claude Code replays records under the same uuid after a resume, and a sub-agent given the
    conversation, an aside question, repeats its parent's records)."""
    files = [path] + sorted(glob.glob(os.path.join(path[:-len(".jsonl")], "subagents", "**", "*.jsonl"),
                                      recursive=True))
    records, seen = [], set()
    for name in files:
        with open(name, "rb") as handle:
            for number, line in enumerate(handle):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                key = isinstance(record, dict) and (record.get("uuid") or (name, number))
                if key and key not in seen:
                    seen.add(key)
                    record["_line"] = (name, number)
                    records.append(record)
    return records


def all_steps(doc: dict) -> list[dict]:
    steps = list(doc["steps"])
    for sub in doc.get("subagent_trajectories", []):
        steps += all_steps(sub)
    return steps


def blocks(record: dict, kind: str) -> list[dict]:
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind] if isinstance(content, list) else []


@pytest.mark.parametrize("path", CLAUDE_SAMPLES, ids=lambda p: os.path.relpath(p, SAMPLES))
def test_every_sample_translates_to_a_valid_document(path):
    assert_valid(translate_file(path))


@pytest.mark.parametrize("path", CLAUDE_SAMPLES, ids=lambda p: os.path.relpath(p, SAMPLES))
def test_tool_calls_and_results_match_the_native_records(path):
    records = native_records(path)
    doc = translate_file(path)
    steps = all_steps(doc)
    native_calls = {b.get("id") or id(b) for r in records if r.get("type") == "assistant"
                    for b in blocks(r, "tool_use")}
    native_calls |= {r.get("uuid") for r in records if r.get("type") == "tool_use"}
    native_results = [b for r in records if r.get("type") == "user" for b in blocks(r, "tool_result")]
    native_results += [r for r in records if r.get("type") == "tool_result"]
    doc_calls = [c for s in steps for c in s.get("tool_calls", [])]
    doc_results = [r for s in steps for r in (s.get("observation") or {}).get("results", [])
                   if "source_call_id" in r or (s.get("extra") or {}).get("kind") == "orphan_tool_result"]
    assert len(doc_calls) == len(native_calls)
    assert len(doc_results) == len(native_results)


@pytest.mark.parametrize("path", CLAUDE_SAMPLES, ids=lambda p: os.path.relpath(p, SAMPLES))
def test_token_totals_are_the_deduplicated_native_sums(path):
    last_usage = {}
    for record in native_records(path):
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        usage = message.get("usage")
        if isinstance(usage, dict) and message.get("model") != "<synthetic>":
            key = (message.get("id") or record.get("uuid") or record["_line"], record.get("requestId"))
            last_usage[key] = usage
    prompt = sum(u.get("input_tokens", 0) + u.get("cache_read_input_tokens", 0)
                 + u.get("cache_creation_input_tokens", 0) for u in last_usage.values())
    completion = sum(u.get("output_tokens", 0) for u in last_usage.values())
    cached = sum(u.get("cache_read_input_tokens", 0) for u in last_usage.values())
    final = translate_file(path)["final_metrics"]
    assert final.get("total_prompt_tokens", 0) == prompt
    assert final.get("total_completion_tokens", 0) == completion
    assert final.get("total_cached_tokens", 0) == cached


def test_live_sessions_hold_the_scenario():
    """SCENARIO.md of the live store: each run is a prompt, a Bash call, a Read call and a final
    answer with its marker; the continued session holds two runs."""
    root = os.path.join(LIVE, "claude-2.1.332", ".claude", "projects")
    docs = {os.path.basename(p)[:8]: translate_file(p) for p in glob.glob(os.path.join(root, "*", "*.jsonl"))}
    runs = {"348a3463": ["claude-2"], "ab3fbeec": ["claude-1", "claude-1b"], "95b648aa": ["claude-3"]}
    for prefix, scenario_ids in runs.items():
        doc = docs[prefix]
        prompts = [s["message"] for s in doc["steps"] if s["source"] == "user"]
        assert [p.split()[1] for p in prompts] == scenario_ids
        calls = [c for s in doc["steps"] for c in s.get("tool_calls", [])]
        assert [c["function_name"] for c in calls] == ["Bash", "Read"] * len(scenario_ids)
        for sid, bash in zip(scenario_ids, calls[::2]):
            assert bash["arguments"]["command"] == f"echo hello-{sid} > note.txt && ls"
        outputs = [r["content"] for s in doc["steps"] for r in s.get("observation", {}).get("results", [])]
        assert outputs[0] == "README.md\nnote.txt" and f"hello-{scenario_ids[0]}" in outputs[1]
        finals = [s["message"] for s in doc["steps"] if s["source"] == "agent" and "SCENARIO-DONE" in s["message"]]
        assert [f.split()[1].rstrip(":") for f in finals] == scenario_ids
        assert all(s.get("reasoning_content") for s in doc["steps"] if s["source"] == "agent")
        assert doc["final_metrics"]["total_cost_usd"] > 0


def test_subagents_are_embedded_and_referenced_from_the_spawning_call():
    doc = translate_file(os.path.join(SAMPLES, GOLDEN["subagents"]))
    (sub,) = doc["subagent_trajectories"]
    assert sub["trajectory_id"] == "agent-showcol1"
    assert sub["steps"][0]["message"].startswith("Survey src/web")
    spawning = [r for s in doc["steps"] for r in s.get("observation", {}).get("results", [])
                if r.get("subagent_trajectory_ref")]
    assert spawning == [next(r for r in spawning)]
    assert spawning[0]["source_call_id"] == "toolu_sc_showcol1"
    assert spawning[0]["subagent_trajectory_ref"][0]["trajectory_id"] == "agent-showcol1"


VOLCANO = os.path.join(SAMPLES, "claude", "dotfile-volcano", "7ef4b236-d946-48a6-a856-e45b02af7be7.jsonl")


def test_an_aside_question_does_not_repeat_its_parents_records(tmp_path):
    """A real aside question (`agent-aside_question-*`, Claude Code 2.1.92) is given the whole
    conversation: 76 of its 78 records are its parent's, under the same uuids. Those are the
    parent's steps: every tool call is in the document once, and `stats` counts each once; the
    aside holds its own question (after the reminder Claude Code put before it) and answer."""
    doc = translate_file(VOLCANO)
    (aside,) = [s for s in doc["subagent_trajectories"] if s["trajectory_id"].startswith("agent-aside_question-")]
    parent = {json.loads(line)["uuid"] for line in open(VOLCANO, "rb") if b'"uuid"' in line}
    path = os.path.join(VOLCANO[:-len(".jsonl")], "subagents", aside["trajectory_id"] + ".jsonl")
    records = [json.loads(line) for line in open(path, "rb")]
    assert sum(r["uuid"] in parent for r in records) == aside["extra"]["parent_records_skipped"] == 76
    assert [(s["source"], (s.get("extra") or {}).get("kind")) for s in aside["steps"]] == [
        ("system", "reminder"), ("user", None), ("agent", None)]
    assert aside["steps"][1]["message"] == "firstavailable具体用法是什么"
    assert aside["final_metrics"]["total_steps"] == 3
    calls = [c["tool_call_id"] for s in all_steps(doc) for c in s.get("tool_calls", [])]
    assert len(calls) == len(set(calls)) == 86
    env = base_env(tmp_path)
    shutil.copytree(os.path.dirname(VOLCANO), os.path.join(env["HOME"], ".claude", "projects", "-volcano"))
    stats = json.loads(run_main(env, ["stats", "--all", "--json"]).stdout)
    assert stats["agents"]["claude"]["tool_calls"] == 86


@pytest.mark.parametrize("kept", [1, 2])
def test_a_session_holding_only_its_enqueued_prompt_opens_with_it(tmp_path, kept):
    """Claude Code enqueues the prompt (`queue-operation`), dequeues it, then writes it as a user
    record. A session cut before that record (here the first line, or two, of a live session of
    2.1.332) holds the prompt only in the enqueue: it is the first message and a user step. In
    the whole session, the prompt is one user step."""
    live = os.path.join(LIVE, "claude-2.1.332", ".claude", "projects", "-tmp-agents-proj-claude",
                        "348a3463-5332-480a-8329-09f4fe2cc499.jsonl")
    lines = open(live, "rb").read().splitlines(keepends=True)
    enqueue = json.loads(lines[0])
    assert (enqueue["type"], enqueue["operation"]) == ("queue-operation", "enqueue")
    cut = tmp_path / "projects" / "-p" / os.path.basename(live)
    cut.parent.mkdir(parents=True)
    cut.write_bytes(b"".join(lines[:kept]))
    session = claude.scan(str(cut), ENV)[0]
    assert session.title == one_line(enqueue["content"])
    doc = translate_file(str(cut))
    assert [(s["source"], s["message"]) for s in doc["steps"]] == [("user", enqueue["content"])]
    assert doc["steps"][0]["timestamp"] == enqueue["timestamp"]
    whole = translate_file(live)
    assert [s["message"] for s in whole["steps"] if s["source"] == "user"] == [enqueue["content"]]


def test_an_enqueued_prompt_after_the_first_record_is_the_first_message(tmp_path):
    """A queue operation after the first record is read only when no user record gives a title
    (the listing skips parsing it): a session cut before its user record, whose first record is
    another (a file-history snapshot), still opens with the enqueued prompt."""
    live = os.path.join(LIVE, "claude-2.1.332", ".claude", "projects", "-tmp-agents-proj-claude",
                        "348a3463-5332-480a-8329-09f4fe2cc499.jsonl")
    lines = open(live, "rb").read().splitlines(keepends=True)
    enqueue = json.loads(lines[0])
    first = json.dumps({"type": "file-history-snapshot", "timestamp": enqueue["timestamp"],
                        "cwd": "/tmp/agents/proj-claude"}).encode() + b"\n"
    cut = tmp_path / "projects" / "-p" / os.path.basename(live)
    cut.parent.mkdir(parents=True)
    cut.write_bytes(first + b"".join(lines[:2]))
    session = claude.scan(str(cut), ENV)[0]
    assert session.title == one_line(enqueue["content"]) and session.cwd == "/tmp/agents/proj-claude"


def test_compaction_follows_the_context_management_convention():
    doc = translate_file(os.path.join(SAMPLES, GOLDEN["compaction"]))
    compactions = [s for s in doc["steps"] if (s.get("extra") or {}).get("context_management")]
    assert compactions and compactions[0]["source"] == "system"
    assert compactions[0]["extra"]["context_management"] == {"type": "compaction", "boundary": "replace"}
    summary = compactions[0]["observation"]["results"][0]["content"]
    assert "continued from a previous conversation" in summary
    # the prompt that was rewound (edited) before the compaction stays, marked as abandoned
    abandoned = [s["message"] for s in doc["steps"] if (s.get("extra") or {}).get("abandoned_branch")]
    assert abandoned == ["First attempt", "First answer"]


def test_spilled_tool_output_is_read_back(tmp_path):
    """A result saved to tool-results/ (too large for the transcript) comes back in full."""
    project = tmp_path / "projects" / "-p"
    (project / "s1" / "tool-results").mkdir(parents=True)
    full = "line\n" * 50_000
    spilled = project / "s1" / "tool-results" / "toolu_1.txt"
    spilled.write_text(full)
    records = [
        {"type": "user", "uuid": "u1", "cwd": "/p", "timestamp": "2026-01-01T00:00:00Z",
         "message": {"role": "user", "content": "run it"}},
        {"type": "assistant", "uuid": "a1", "timestamp": "2026-01-01T00:00:01Z", "requestId": "r1",
         "message": {"id": "m1", "model": "claude-x", "content": [
             {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "yes"}}]}},
        {"type": "user", "uuid": "u2", "timestamp": "2026-01-01T00:00:02Z",
         "toolUseResult": {"persistedOutputPath": str(spilled)},
         "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                  "content": f"<persisted-output>\nFull output saved to: {spilled}\n</persisted-output>"}]}},
    ]
    doc = translate_file(write_jsonl(project / "s1.jsonl", records))
    result = doc["steps"][1]["observation"]["results"][0]
    assert result["content"] == full
    assert result["extra"]["persisted_output_path"] == str(spilled)


@pytest.mark.parametrize("cut", [0.2, 0.5, 0.77, 0.99])
def test_a_truncated_transcript_yields_a_valid_document_with_a_warning(tmp_path, cut):
    source = os.path.join(SAMPLES, GOLDEN["live-scenario"])
    data = open(source, "rb").read()
    offset = int(len(data) * cut)
    if data[offset - 1:offset] == b"\n":
        offset -= 5
    target = tmp_path / "cut.jsonl"
    target.write_bytes(data[:offset])
    doc = translate_file(str(target))
    assert_valid(doc)
    assert any("incomplete" in w for w in doc["extra"]["warnings"])


def test_garbage_lines_are_skipped_with_a_warning(tmp_path):
    source = os.path.join(SAMPLES, GOLDEN["live-scenario"])
    lines = open(source, "rb").read().split(b"\n")
    lines.insert(5, b'{"type": "user", "message": {"content": ')
    lines.insert(9, b"\xff\xfe not json at all")
    target = tmp_path / "garbage.jsonl"
    target.write_bytes(b"\n".join(lines))
    doc = translate_file(str(target))
    assert_valid(doc)
    assert doc["extra"]["warnings"][0].startswith("2 malformed line(s) skipped, first at line 6")
    assert [s["message"] for s in doc["steps"] if s["source"] == "user"] == \
        [s["message"] for s in translate_file(source)["steps"] if s["source"] == "user"]


def test_discovery_reads_only_the_head_and_finds_cwd_from_records(tmp_path):
    env = base_env(tmp_path)
    shutil.copytree(os.path.join(LIVE, "claude-2.1.332", ".claude"), os.path.join(env["HOME"], ".claude"))
    found = catalog.discover(env).sessions
    assert sorted(s.cwd for s in found) == ["/tmp/agents/proj-claude", "/tmp/agents/proj-claude",
                                           "/tmp/agents/proj-claude-other"]
    assert all(s.model == "claude-opus-5-5" and s.title.startswith("SCENARIO") for s in found)
    # the folder name is never decoded: a session moved to another folder keeps its cwd
    projects = os.path.join(env["HOME"], ".claude", "projects")
    shutil.move(os.path.join(projects, "-tmp-agents-proj-claude-other"), os.path.join(projects, "-elsewhere"))
    again = catalog.discover(env).sessions
    assert "/tmp/agents/proj-claude-other" in {s.cwd for s in again}


def test_claude_config_dir_relocates_the_store(tmp_path):
    env = base_env(tmp_path)
    env["CLAUDE_CONFIG_DIR"] = os.path.join(LIVE, "claude-2.1.332", ".claude")
    assert len(catalog.discover(env).sessions) == 3


def test_orphan_sidechain_files_are_sessions_and_owned_ones_are_not(tmp_path):
    project = tmp_path / ".claude" / "projects" / "-test-project"
    project.mkdir(parents=True)
    shutil.copy(os.path.join(SAMPLES, "claude", "cass", "projects", "-test-project", "agent-test123.jsonl"), project)
    env = base_env(tmp_path, home=str(tmp_path))
    assert [s.native_id for s in catalog.discover(env, use_cache=False).sessions] == ["agent-test123"]
    head = json.loads(open(project / "agent-test123.jsonl").readline())
    (project / f"{head['sessionId']}.jsonl").write_text(json.dumps(
        {"type": "user", "uuid": "p1", "sessionId": head["sessionId"], "cwd": "/test",
         "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": head["message"]["content"]}}) + "\n")
    sessions = catalog.discover(env, use_cache=False).sessions
    assert [s.native_id for s in sessions] == [head["sessionId"]]
    doc = documents.translate(sessions[0], env)
    assert len(doc["subagent_trajectories"]) == 1


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_documents(name):
    doc = translate_file(os.path.join(SAMPLES, GOLDEN[name]))
    doc["extra"]["source"] = "<source>"   # where the samples are checked out
    assert_golden(doc, "claude", name)


def test_dependencies_of_many_are_each_ones_dependencies(tmp_path):
    """Discovery lists each folder once for every transcript's sub-agents (dependencies_of);
    a sub-agent folder made afterwards is found by the next discovery."""
    transcripts = sorted(glob.glob(os.path.join(SAMPLES, "claude", "**", "*.jsonl"), recursive=True))
    transcripts = [p for p in transcripts if "/subagents/" not in p]
    env = base_env(tmp_path)
    with_subagents = [p for p in transcripts if len(claude.dependencies(p, env)) > 1]
    assert len(with_subagents) >= 3
    assert claude.dependencies_of(transcripts, env) == [claude.dependencies(p, env) for p in transcripts]
    folder = tmp_path / "home" / ".claude" / "projects" / "-work-x"
    folder.mkdir(parents=True)
    parent = folder / "11111111-1111-4111-8111-111111111111.jsonl"
    shutil.copy(os.path.join(SAMPLES, GOLDEN["subagents"]), parent)
    before = catalog.discover(env).sessions[0]
    agent = folder / parent.stem / "subagents" / "agent-x.jsonl"
    agent.parent.mkdir(parents=True)
    shutil.copy(next(p for p in glob.glob(os.path.join(SAMPLES, "claude", "**", "subagents", "*.jsonl"),
                                          recursive=True)), agent)
    after = catalog.discover(env)
    assert after.known(after.sessions[0])[0] == [str(parent), str(agent)]
    assert catalog.discover(env).known(before) is not None


def windows_session(tmp_path, spilled_name: str = "toolu_1.txt", sub_spill: str = "toolu_9.txt") -> tuple:
    """A session copied from a Windows machine (issue 32): its working directory and its
    spilled outputs named by Windows paths; a sub-agent's spilled output that is missing."""
    project = tmp_path / "home" / ".claude" / "projects" / "C--Users-Me-proj"
    spilled = project / "s1" / "tool-results" / spilled_name
    spilled.parent.mkdir(parents=True)
    full = "line\n" * 50_000
    spilled.write_text(full)
    windows = "C:\\Users\\Me\\.claude\\projects\\C--Users-Me-proj\\s1\\tool-results\\"

    def call_and_spill(call_id, name, uuid, parent, session_id="s1"):
        return [
            {"type": "assistant", "uuid": uuid + "a", "parentUuid": parent, "sessionId": session_id,
             "timestamp": "2026-01-01T00:00:01Z", "requestId": "r" + uuid,
             "message": {"id": "m" + uuid, "model": "claude-x", "content": [
                 {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "yes"}}]}},
            {"type": "user", "uuid": uuid + "r", "parentUuid": uuid + "a", "sessionId": session_id,
             "timestamp": "2026-01-01T00:00:02Z", "toolUseResult": {"persistedOutputPath": windows + name},
             "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content":
                         f"<persisted-output>\nFull output saved to: {windows + name}\n</persisted-output>"}]}}]

    write_jsonl(project / "s1" / "subagents" / "agent-a1.jsonl", [
        {"type": "user", "uuid": "su", "isSidechain": True, "agentId": "a1", "sessionId": "s1",
         "cwd": "C:\\Users\\Me\\proj", "timestamp": "2026-01-01T00:00:01Z",
         "message": {"role": "user", "content": "look"}}, *call_and_spill("toolu_9", sub_spill, "s", "su")])
    source = write_jsonl(project / "s1.jsonl", [
        {"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": "C:\\Users\\Me\\proj",
         "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "run it"}},
        *call_and_spill("toolu_1", spilled_name, "1", "u1")])
    return source, full


def test_a_windows_sessions_spilled_output_is_found_by_its_base_name(tmp_path):
    """Claude Code on Windows names a spilled output by its Windows path: the file is looked for
    by its base name in the session's tool-results folder, and only a sub-agent's output that is
    really missing is a warning (which `trajectoriz agents` counts: health.warnings_of)."""
    from commands import health

    source, full = windows_session(tmp_path)
    [session] = claude.scan(source, ENV)
    assert session.cwd == "C:\\Users\\Me\\proj"
    session.short_id = "cl-00000000"
    doc = documents.translate(session, ENV)
    assert_valid(doc)
    [result] = [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])
                 if r.get("source_call_id") == "toolu_1"]
    assert result["content"] == full
    assert not doc["extra"].get("warnings")
    [sub] = doc["subagent_trajectories"]
    [missing] = sub["extra"]["warnings"]
    assert missing.startswith("a spilled tool output could not be read back: C:\\Users\\Me")
    assert health.warnings_of(doc) == [f"sub-agent {sub['trajectory_id']}: {missing}"]
