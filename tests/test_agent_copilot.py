"""GitHub Copilot CLI: every sample becomes a valid document whose prompts, tool calls, tool
results and token totals are those of the native events.

Tokens (what the translator promises and these tests check):
- 1.0.9x logs have one `session.usage_record` per model call: each agent step carries its
  call's usage, and `final_metrics` is their sum, which equals the last `session.shutdown`
  totals (cumulative over resumes since the shutdowns carry an `accountingSnapshot`).
- older logs have only `assistant.message.outputTokens`: the steps carry those, and
  `final_metrics` carries the `session.shutdown` totals instead of a prompt-less step sum, with
  `final_metrics.extra.token_source == "session.shutdown"`.

Regenerate the golden file with `UPDATE_GOLDEN=1 pytest tests/test_agent_copilot.py`.
"""

import json
import os
import shutil

import pytest

from agents import copilot
from discovery import catalog
from rendering import documents
from helpers import (LIVE, SAMPLES, assert_golden, assert_valid, base_env, cli, copy_into,
                     read_jsonl, tree_digest, write_jsonl)

LIVE_HOME = os.path.join(LIVE, "copilot-1.0.102")
STATE = os.path.join(LIVE_HOME, ".copilot", "session-state")
OLD = os.path.join(SAMPLES, "copilot")


def data(record: dict) -> dict:
    return record["data"] if isinstance(record.get("data"), dict) else record


def all_samples_home(tmp_path) -> str:
    """A $HOME holding every Copilot sample: the live sessions, the older event logs (directory
    and flat layouts) and a legacy history document."""
    home = str(tmp_path / "home")
    copy_into(home, os.path.join(LIVE_HOME, ".copilot"), ".copilot")
    state = os.path.join(home, ".copilot", "session-state")
    for source in ("agent-sessions", "deja-vu"):
        copy_into(home, os.path.join(OLD, source, "session-state"), ".copilot/session-state")
    for name in ("stage0_large.jsonl", "stage0_schema_drift.jsonl", "stage0_small_record_catalog.jsonl"):
        shutil.copy(os.path.join(OLD, "agent-sessions", name), state)
    for name in ("cli_prompt_output_unicode.events.jsonl", "cli_truncated_resume.events.jsonl"):
        shutil.copy(os.path.join(OLD, "cass", name), state)
    copy_into(home, os.path.join(OLD, "cass", "legacy_history_human.json"),
              ".copilot/history-session-state/legacy_history_human.json")
    return home


def sessions_of(env) -> list:
    return catalog.discover(env, ["copilot"], use_cache=False).sessions


def steps_of(doc: dict, source: str) -> list[dict]:
    return [s for s in doc["steps"] if s["source"] == source]


# every sample ------------------------------------------------------------------------------------
def test_every_sample_is_a_valid_document(tmp_path):
    env = base_env(tmp_path, all_samples_home(tmp_path))
    sessions = sessions_of(env)
    assert {s.extra["format"] for s in sessions} == {"events-dir", "events-flat", "legacy-json"}
    assert len(sessions) == 11
    for session in sessions:
        doc = documents.translate(session, env)
        assert_valid(doc)
        assert "error" not in doc["extra"], (session.source, doc["extra"])


def native_counts(events: list[dict]) -> tuple[int, int, int]:
    """Prompts the human typed, tool calls the main agent requested, and results of those."""
    main = [e for e in events if not data(e).get("parentToolCallId")]
    prompts = [e for e in main if e.get("type") == "user.message"
               and not str(data(e).get("source", "")).startswith("skill-")
               and not str(data(e).get("content", "")).startswith("<skill-context")]
    calls = {r["toolCallId"] for e in main if e.get("type") == "assistant.message"
             for r in data(e).get("toolRequests") or [] if isinstance(r, dict)}
    results = [e for e in main if e.get("type") == "tool.execution_complete"
               and data(e).get("toolCallId") in calls]
    return len(prompts), len(calls), len(results)


def document_counts(doc: dict) -> tuple[int, int, int]:
    calls = sum(len(s.get("tool_calls", [])) for s in doc["steps"])
    results = sum(1 for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])
                  if "source_call_id" in r)
    return len(steps_of(doc, "user")), calls, results


@pytest.mark.parametrize("session_dir", sorted(d for d in os.listdir(STATE) if not d.startswith(".")))
def test_live_counts_and_tokens_match_the_events(tmp_path, session_dir):
    log = os.path.join(STATE, session_dir, "events.jsonl")
    events = read_jsonl(log)
    session = copilot.scan(log, {"HOME": LIVE_HOME})[0]
    doc = copilot.translate(session, {"HOME": LIVE_HOME})
    assert_valid(doc)
    assert document_counts(doc) == native_counts(events)
    assert document_counts(doc)[1] >= 2   # the scenario: one shell call, one read

    usage = [data(e)["usage"] for e in events if e["type"] == "session.usage_record"]
    final = doc["final_metrics"]
    assert final["total_prompt_tokens"] == sum(u["inputTokens"] for u in usage)
    assert final["total_completion_tokens"] == sum(u["outputTokens"] for u in usage)
    assert final["total_cached_tokens"] == sum(u["cacheReadTokens"] for u in usage)
    last_shutdown = [data(e) for e in events if e["type"] == "session.shutdown"][-1]
    totals = last_shutdown["modelMetrics"]["gpt-4o"]["usage"]
    assert (final["total_prompt_tokens"], final["total_completion_tokens"]) == \
        (totals["inputTokens"], totals["outputTokens"])
    agent_steps = steps_of(doc, "agent")
    assert len(agent_steps) == len(usage)
    assert all(s["metrics"]["prompt_tokens"] >= s["metrics"]["cached_tokens"] for s in agent_steps)


def test_resumed_session_keeps_both_prompts_and_the_scenario_text():
    log = os.path.join(STATE, "8f7036d2-6424-4778-ad6e-f49e7212fcef", "events.jsonl")
    session = copilot.scan(log, {"HOME": LIVE_HOME})[0]
    doc = copilot.translate(session, {"HOME": LIVE_HOME})
    prompts = [s["message"] for s in steps_of(doc, "user")]
    assert [p.split(" in ")[0] for p in prompts] == ["SCENARIO copilot-1", "SCENARIO copilot-1b"]
    finals = [s["message"] for s in steps_of(doc, "agent") if s["message"].startswith("SCENARIO-DONE")]
    assert finals == ['SCENARIO-DONE copilot-1: note.txt in /tmp/agents/proj-copilot contains "hello-copilot-1".',
                      'SCENARIO-DONE copilot-1b: note.txt in /tmp/agents/proj-copilot contains "hello-copilot-1b".']
    first_call = steps_of(doc, "agent")[0]["tool_calls"][0]
    assert first_call["function_name"] == "bash"
    assert first_call["arguments"]["command"] == "echo hello-copilot-1 > note.txt && ls"
    assert steps_of(doc, "agent")[0]["reasoning_content"].startswith("The user wants note.txt")
    assert doc["extra"]["resumes"] == 1


def test_old_logs_take_session_totals_from_the_shutdown(tmp_path):
    source = os.path.join(OLD, "agent-sessions", "stage0_schema_drift.jsonl")
    events = read_jsonl(source)
    doc = copilot.translate(copilot.scan(source, {})[0], {})
    assert_valid(doc)
    usage = [data(e) for e in events if e["type"] == "session.shutdown"][-1]["modelMetrics"]["gpt-4.1"]["usage"]
    final = doc["final_metrics"]
    assert final["extra"]["token_source"] == "session.shutdown"
    assert (final["total_prompt_tokens"], final["total_completion_tokens"], final["total_cached_tokens"]) == \
        (usage["inputTokens"], usage["outputTokens"], usage["cacheReadTokens"])
    # the call whose request is missing keeps its (failed) result on a system step
    orphan = [s for s in doc["steps"] if (s.get("extra") or {}).get("kind") == "orphan_tool_result"]
    assert orphan[0]["observation"]["results"][0]["extra"]["is_error"] is True


def test_message_output_tokens_are_the_step_metrics_of_old_logs():
    source = os.path.join(OLD, "agent-sessions", "session-state",
                          "aaaabbbb-1111-2222-3333-ccccddddeeee", "events.jsonl")
    events = read_jsonl(source)
    doc = copilot.translate(copilot.scan(source, {})[0], {})
    outputs = [data(e)["outputTokens"] for e in events if e["type"] == "assistant.message"]
    assert [s["metrics"]["completion_tokens"] for s in steps_of(doc, "agent")] == outputs
    assert doc["final_metrics"]["total_completion_tokens"] == sum(outputs)
    assert "total_prompt_tokens" not in doc["final_metrics"]   # no shutdown: nothing to claim


# sub-agents, skills, failures --------------------------------------------------------------------
def event(kind: str, stamp: int, **fields) -> dict:
    return {"type": kind, "data": fields, "id": f"e{stamp}",
            "timestamp": f"2026-05-01T10:00:{stamp:02d}.000Z", "parentId": None}


SUBAGENT_LOG = [
    event("session.start", 0, sessionId="sub-1", copilotVersion="1.0.80", selectedModel="claude-sonnet-4.6",
          startTime="2026-05-01T10:00:00.000Z", context={"cwd": "/work/p"}),
    event("user.message", 1, content="<skill-context name=\"x\">use x</skill-context>", source="skill-x"),
    event("user.message", 2, content="find the bug"),
    event("assistant.message", 3, messageId="m1", content="Delegating.", outputTokens=9,
          toolRequests=[{"toolCallId": "task-1", "name": "task", "arguments": "{\"prompt\": \"look\"}"}]),
    event("tool.execution_start", 4, toolCallId="task-1", toolName="task", arguments={"prompt": "look"}),
    event("subagent.started", 5, toolCallId="task-1", agentName="explore", agentDisplayName="Explore"),
    event("assistant.reasoning", 6, reasoningId="r1", content="Check the logs.", parentToolCallId="task-1"),
    event("assistant.message", 7, messageId="m2", content="", outputTokens=5, parentToolCallId="task-1",
          toolRequests=[{"toolCallId": "c1", "name": "bash", "arguments": {"command": "false"}},
                        {"toolCallId": "c2", "name": "view", "arguments": {"path": "/work/p/a"}}]),
    event("tool.execution_complete", 8, toolCallId="c1", success=False, parentToolCallId="task-1",
          result={"content": "exit 1"}, shellExecution={"exitCode": 1}),
    event("tool.execution_complete", 9, toolCallId="c2", success=True, parentToolCallId="task-1",
          result={"content": "a"}),
    event("assistant.message", 10, messageId="m3", content="The bug is in a.", outputTokens=6,
          parentToolCallId="task-1", toolRequests=[]),
    event("subagent.completed", 11, toolCallId="task-1", agentName="explore", totalToolCalls=2),
    event("tool.execution_complete", 12, toolCallId="task-1", success=True, result={"content": "The bug is in a."}),
    event("assistant.message", 13, messageId="m4", content="Fixed.", outputTokens=3, toolRequests=[]),
]


def write_log(tmp_path, records: list[dict], name: str = "sub-1") -> str:
    return write_jsonl(tmp_path / "home" / ".copilot" / "session-state" / name / "events.jsonl", records)


def test_subagent_is_embedded_and_referenced_from_its_task_call(tmp_path):
    log = write_log(tmp_path, SUBAGENT_LOG)
    doc = copilot.translate(copilot.scan(log, {})[0], {})
    assert_valid(doc)
    assert document_counts(doc) == native_counts(SUBAGENT_LOG) == (1, 1, 1)
    [sub] = doc["subagent_trajectories"]
    task_result = steps_of(doc, "agent")[0]["observation"]["results"][0]
    assert task_result["subagent_trajectory_ref"][0]["trajectory_id"] == sub["trajectory_id"]
    child = [e for e in SUBAGENT_LOG if e["data"].get("parentToolCallId") == "task-1"]
    child_calls = sum(len(e["data"].get("toolRequests", [])) for e in child if e["type"] == "assistant.message")
    assert sum(len(s.get("tool_calls", [])) for s in sub["steps"]) == child_calls == 2
    failed = sub["steps"][0]["observation"]["results"][0]
    assert failed["extra"] == {"is_error": True, "exit_code": 1}
    assert sub["steps"][0]["reasoning_content"] == "Check the logs."
    assert sub["agent"]["extra"]["agentName"] == "explore"
    # the skill instructions are a system step, not a prompt
    assert doc["steps"][0]["source"] == "system" and doc["steps"][0]["extra"]["kind"] == "skill"
    # output tokens of every message, sub-agent included, reach the root total
    outputs = sum(e["data"].get("outputTokens", 0) for e in SUBAGENT_LOG)
    assert doc["final_metrics"]["total_completion_tokens"] == outputs


def test_subagent_without_a_result_is_still_referenced(tmp_path):
    log = write_log(tmp_path, SUBAGENT_LOG[:11])
    doc = copilot.translate(copilot.scan(log, {})[0], {})
    assert_valid(doc)
    refs = [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])
            if "subagent_trajectory_ref" in r]
    assert len(refs) == 1 and doc["steps"][-1]["extra"]["kind"] == "subagent"


def test_truncated_log_yields_what_was_read_and_a_warning(tmp_path):
    home = str(tmp_path / "home")
    source = os.path.join(STATE, "7d6ca7bd-d8e7-4e4f-94f6-eea561436d31")
    copy = copy_into(home, source, ".copilot/session-state/7d6ca7bd-d8e7-4e4f-94f6-eea561436d31")
    log = os.path.join(copy, "events.jsonl")
    with open(log, "rb") as handle:
        content = handle.read()
    cut = content.index(b'"type":"tool.execution_complete"') + 40  # mid-line
    with open(log, "wb") as handle:
        handle.write(content[:cut])
    env = base_env(tmp_path, home)
    [session] = sessions_of(env)
    doc = documents.translate(session, env)
    assert_valid(doc)
    assert any("incomplete" in w for w in doc["extra"]["warnings"])
    assert steps_of(doc, "user") and steps_of(doc, "agent")[0]["tool_calls"]


def test_directory_layout_wins_over_a_flat_file_of_the_same_id(tmp_path):
    home = str(tmp_path / "home")
    log = os.path.join(STATE, "7d6ca7bd-d8e7-4e4f-94f6-eea561436d31", "events.jsonl")
    copy_into(home, os.path.dirname(log), ".copilot/session-state/7d6ca7bd-d8e7-4e4f-94f6-eea561436d31")
    copy_into(home, os.path.join(OLD, "agent-sessions", "stage0_large.jsonl"),
              ".copilot/session-state/7d6ca7bd-d8e7-4e4f-94f6-eea561436d31.jsonl")
    found = list(copilot.sources(base_env(tmp_path, home)))
    assert [os.path.basename(p) for p in found] == ["events.jsonl"]


def test_legacy_chat_messages_join_calls_and_results(tmp_path):
    document = {"sessionId": "old-1", "startTime": "2025-10-08T21:10:16.398Z", "chatMessages": [
        {"role": "user", "content": "please add mcp servers"},
        {"role": "assistant", "content": "sure", "tool_calls": [
            {"id": "t1", "type": "function",
             "function": {"name": "str_replace_editor", "arguments": "{\"command\":\"view\",\"path\":\"/x\"}"}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "file contents here"},
        {"role": "user", "content": "thanks"}]}
    path = tmp_path / "home" / ".copilot" / "history-session-state" / "session_old-1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(document))
    env = base_env(tmp_path)
    [session] = sessions_of(env)
    assert (session.native_id, session.title) == ("old-1", "please add mcp servers")
    doc = documents.translate(session, env)
    assert_valid(doc)
    assert document_counts(doc) == (2, 1, 1)
    assert doc["steps"][1]["tool_calls"][0]["arguments"] == {"command": "view", "path": "/x"}


# discovery, scoping, read-only -------------------------------------------------------------------
def test_sessions_are_scoped_by_the_recorded_cwd(tmp_path):
    env = base_env(tmp_path, LIVE_HOME)
    sessions = sessions_of(env)
    mine = catalog.Scope("/tmp/agents/proj-copilot").filter(sessions)
    other = catalog.Scope("/tmp/agents/proj-copilot-other").filter(sessions)
    assert sorted(s.native_id[:8] for s in mine) == ["7d6ca7bd", "8f7036d2"]
    assert [s.native_id[:8] for s in other] == ["2f0dd46b"]
    assert all(s.title.startswith("SCENARIO copilot-") for s in sessions)
    assert {s.model for s in sessions} == {"gpt-4o"}


def test_cwd_falls_back_to_workspace_yaml(tmp_path):
    home = str(tmp_path / "home")
    source = os.path.join(STATE, "2f0dd46b-a521-440e-a0cf-5c2236c642a8")
    copy = copy_into(home, source, ".copilot/session-state/2f0dd46b-a521-440e-a0cf-5c2236c642a8")
    log = os.path.join(copy, "events.jsonl")
    lines = open(log, "rb").read().splitlines(keepends=True)
    with open(log, "wb") as handle:   # drop session.start, which carries the cwd
        handle.writelines(line for line in lines if b'"session.start"' not in line)
    [session] = copilot.scan(log, {})
    assert session.cwd == "/tmp/agents/proj-copilot-other"
    assert session.native_id == "2f0dd46b-a521-440e-a0cf-5c2236c642a8"


def test_list_and_show_leave_the_store_untouched(tmp_path):
    home = str(tmp_path / "home")
    copy_into(home, os.path.join(LIVE_HOME, ".copilot"), ".copilot")
    before = tree_digest(home)
    env = base_env(tmp_path, home)
    listing = cli("list", "--all", "--json", env=env)
    assert listing.returncode == 0, listing.stderr
    ids = [json.loads(line)["id"] for line in listing.stdout.splitlines()]
    assert len(ids) == 3
    for ident in ids:
        shown = cli("show", ident, env=env)
        assert shown.returncode == 0, shown.stderr
        assert_valid(json.loads(shown.stdout))
    assert tree_digest(home) == before


def test_golden_document():
    log = os.path.join(STATE, "7d6ca7bd-d8e7-4e4f-94f6-eea561436d31", "events.jsonl")
    doc = copilot.translate(copilot.scan(log, {})[0], {})
    assert_golden(doc, "copilot", "live-7d6ca7bd")


def test_shutdown_totals_are_cumulative_only_when_they_carry_a_snapshot(tmp_path):
    """Without per-call records, the resumed live session's total is its last shutdown (which
    carries an `accountingSnapshot`); shutdowns without one (older CLIs reset on resume) add."""
    log = os.path.join(STATE, "8f7036d2-6424-4778-ad6e-f49e7212fcef", "events.jsonl")
    events = [e for e in read_jsonl(log) if e["type"] != "session.usage_record"]
    shutdowns = [data(e)["modelMetrics"]["gpt-4o"]["usage"] for e in events if e["type"] == "session.shutdown"]
    assert len(shutdowns) == 2
    path = write_log(tmp_path, events, "cumulative")
    final = copilot.translate(copilot.scan(path, {})[0], {})["final_metrics"]
    assert final["total_prompt_tokens"] == shutdowns[-1]["inputTokens"]
    for record in events:
        if record["type"] == "session.shutdown":
            del record["data"]["accountingSnapshot"]
    path = write_log(tmp_path, events, "reset")
    final = copilot.translate(copilot.scan(path, {})[0], {})["final_metrics"]
    assert final["total_prompt_tokens"] == sum(s["inputTokens"] for s in shutdowns)
    assert final["extra"]["token_source"] == "session.shutdown"


# the model, wherever it is recorded ----------------------------------------------------------------
def test_a_model_recorded_only_at_shutdown_is_the_sessions(tmp_path):
    """A real log (agent-sessions' schema catalog) names its model only in `session.shutdown`
    (`currentModel`): the listing and every step carry it (they carried none)."""
    source = os.path.join(OLD, "agent-sessions", "stage0_schema_drift.jsonl")
    [shutdown] = [data(e) for e in read_jsonl(source) if e["type"] == "session.shutdown"]
    assert not any("selectedModel" in data(e) or "model" in data(e) for e in read_jsonl(source))
    [session] = copilot.scan(source, {})
    assert session.model == shutdown["currentModel"] == "gpt-4.1"
    doc = copilot.translate(session, {})
    assert doc["agent"]["model_name"] == "gpt-4.1"
    assert {s.get("model_name") for s in steps_of(doc, "agent")} == {"gpt-4.1"}


def test_each_tool_executions_model_names_the_step_that_called_it(tmp_path):
    """Copilot CLI records on `tool.execution_complete` the model that requested the call; a
    session that switched models holds several, each on its own steps."""
    def message(mid, call, at):
        return {"type": "assistant.message", "id": mid, "timestamp": at,
                "data": {"content": "", "toolRequests": [{"toolCallId": call, "name": "bash",
                                                          "arguments": {"command": "ls"}}]}}

    def complete(call, model, at):
        return {"type": "tool.execution_complete", "timestamp": at,
                "data": {"toolCallId": call, "success": True, "model": model, "result": {"content": "ok"}}}

    source = write_jsonl(tmp_path / "home/.copilot/session-state/s-models/events.jsonl", [
        {"type": "session.start", "timestamp": "2026-01-01T00:00:00Z", "data": {"sessionId": "s-models"}},
        {"type": "user.message", "timestamp": "2026-01-01T00:00:01Z", "data": {"content": "list it"}},
        message("m1", "c1", "2026-01-01T00:00:02Z"), complete("c1", "claude-sonnet-4.5", "2026-01-01T00:00:03Z"),
        message("m2", "c2", "2026-01-01T00:00:04Z"), complete("c2", "gpt-5", "2026-01-01T00:00:05Z")])
    [session] = copilot.scan(source, {})
    assert session.model == "claude-sonnet-4.5"
    doc = copilot.translate(session, {})
    assert_valid(doc)
    assert doc["agent"]["model_name"] == "claude-sonnet-4.5"
    assert [s.get("model_name") for s in steps_of(doc, "agent")] == ["claude-sonnet-4.5", "gpt-5"]


def test_a_legacy_documents_selected_model(tmp_path):
    """`history-session-state/*.json` records the model as `selectedModel`."""
    path = tmp_path / "home" / ".copilot" / "history-session-state" / "session_old-2.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"sessionId": "old-2", "startTime": "2025-10-08T21:10:16.398Z",
                                "selectedModel": "claude-sonnet-4", "chatMessages": [
                                    {"role": "user", "content": "hi there"},
                                    {"role": "assistant", "content": "hello"}]}))
    env = base_env(tmp_path)
    [session] = sessions_of(env)
    assert session.model == "claude-sonnet-4"
    doc = documents.translate(session, env)
    assert doc["agent"]["model_name"] == "claude-sonnet-4"
    assert steps_of(doc, "agent")[0]["model_name"] == "claude-sonnet-4"
