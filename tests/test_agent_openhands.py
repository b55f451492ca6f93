"""OpenHands CLI: every conversation of the live store (1.16.0) holds every step of its scenario,
its counts and token totals are the native events' and base_state.json's, one model reply's
calls are one agent step, events are ordered by number, damaged conversations give documents
with warnings, the health report counts the store, and nothing is written.

Golden file: `UPDATE_GOLDEN=1 pytest tests/test_agent_openhands.py` rewrites tests/golden/openhands/."""

import glob
import json
import os
import shutil

import pytest

from agents import openhands
from helpers import (LIVE, assert_golden, assert_scripted_steps, assert_valid, base_env, cli, doc_counts,
                     live_copy, scan_all, scoped_ids, scripted_runs, totals, translate_all, tree_digest)

LIVE_HOME = os.path.join(LIVE, "openhands-1.16.0")
CONVERSATIONS = os.path.join(LIVE_HOME, ".openhands", "conversations")
CONTINUED = "8361bfce6159482eb2a0533824a33e31"


def live_env(tmp_path):
    return base_env(tmp_path, home=LIVE_HOME)


def events_of(folder):
    return [json.load(open(path)) for path in openhands.event_files(folder)]


def agent_usages(folder):
    state = json.load(open(os.path.join(folder, "base_state.json")))
    return state["stats"]["usage_to_metrics"]["agent"]


def native_counts(folder):
    events = events_of(folder)
    replies = {e["llm_response_id"] for e in events if e["kind"] == "ActionEvent"
               or (e["kind"] == "MessageEvent" and e["source"] == "agent")}
    return {"user": sum(1 for e in events if e["kind"] == "MessageEvent" and e["source"] == "user"),
            "calls": sum(1 for e in events if e["kind"] == "ActionEvent"),
            "results": sum(1 for e in events if e["kind"] == "ObservationEvent")}, len(replies)


def test_every_scenario_step_is_in_its_conversation(tmp_path):
    runs = scripted_runs(LIVE_HOME, "openhands")
    assert sorted(runs) == ["openhands-1", "openhands-1b", "openhands-2", "openhands-3"]
    held = {}
    for session, doc in translate_all(openhands, live_env(tmp_path)):
        assert_valid(doc)
        sids = [sid for sid, directory in runs.items()
                if any(s["source"] == "user" and s["message"].startswith(f"SCENARIO {sid} in ") for s in doc["steps"])]
        for sid in sids:
            assert_scripted_steps(doc, sid, runs[sid], reasoning=True)
            assert session.cwd == runs[sid]
        held[session.native_id] = sids
    assert held[CONTINUED] == ["openhands-1", "openhands-1b"]
    assert sorted(sid for sids in held.values() for sid in sids) == sorted(runs)


def test_counts_and_tokens_are_the_native_records(tmp_path):
    translated = translate_all(openhands, live_env(tmp_path))
    assert len(translated) == 3
    for session, doc in translated:
        counts, replies = native_counts(session.source)
        assert doc_counts(doc) == counts
        agent_steps = [s for s in doc["steps"] if s["source"] == "agent"]
        assert len(agent_steps) == replies and all(s["llm_call_count"] == 1 for s in agent_steps)
        usage = agent_usages(session.source)
        accumulated = usage["accumulated_token_usage"]
        assert totals(doc) == (accumulated["prompt_tokens"], accumulated["completion_tokens"],
                               accumulated["cache_read_tokens"])
        assert all(s["metrics"]["prompt_tokens"] == u["prompt_tokens"]
                   for s, u in zip(agent_steps, usage["token_usages"]))
        assert doc["steps"][0]["extra"] == {"kind": "system_prompt"}
        assert "Your current working directory is:" in doc["steps"][0]["message"]


def test_a_failed_command_carries_its_exit_code(tmp_path):
    (session, doc), *_ = translate_all(openhands, live_env(tmp_path))
    failing = [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])
               if "missing-" in r["content"]]
    assert [r["extra"] for r in failing] == [{"exit_code": 2}]  # OpenHands says is_error: false


def test_scan_reads_the_state_and_the_first_events(tmp_path):
    sessions = {s.native_id: s for s in scan_all(openhands, live_env(tmp_path))}
    session = sessions[CONTINUED]
    first_event = events_of(session.source)[0]
    assert session.started == openhands.epoch(first_event["timestamp"])
    assert session.title.startswith("SCENARIO openhands-1 in /tmp/agents/proj-openhands:")
    assert {s.model for s in sessions.values()} == {"openai/fake-model"}
    assert {s.extra["format"] for s in sessions.values()} == {"v1"}


def test_project_scoping(tmp_path):
    env = live_env(tmp_path)
    assert scoped_ids(env, "/tmp/agents/proj-openhands", "openhands") == {CONTINUED, "074fdedc0dc24f1d83111d662ea2c3cc"}
    assert scoped_ids(env, "/tmp/agents/proj-openhands-other", "openhands") == {"dd78abd22f8447d4991b1d24bc413f5a"}


def test_store_can_be_relocated(tmp_path):
    persistence = tmp_path / "persist"
    shutil.copytree(os.path.join(LIVE_HOME, ".openhands"), persistence)
    assert len(list(openhands.sources({**base_env(tmp_path), "OPENHANDS_PERSISTENCE_DIR": str(persistence)}))) == 3
    env = {**base_env(tmp_path), "OPENHANDS_CONVERSATIONS_DIR": str(persistence / "conversations"),
           "OPENHANDS_PERSISTENCE_DIR": str(tmp_path / "elsewhere")}
    assert len(list(openhands.sources(env))) == 3


def test_events_are_ordered_by_their_number(tmp_path):
    """Past 99,999 events the number outgrows its five digits: event-100000 sorts before
    event-99999 by name, not by number."""
    home = live_copy(tmp_path, LIVE_HOME)
    folder = os.path.join(home, ".openhands", "conversations", CONTINUED)
    before = openhands.translate(next(s for s in scan_all(openhands, base_env(tmp_path, home=home))
                                      if s.native_id == CONTINUED), {})
    for number, path in enumerate(openhands.event_files(folder)):
        name = os.path.basename(path)
        os.rename(path, os.path.join(os.path.dirname(path), f"event-{99990 + number}-{name.split('-', 2)[2]}"))
    assert sorted(n for n in os.listdir(os.path.join(folder, "events")) if n.startswith("event-"))[0] \
        .startswith("event-100000-")
    session = next(s for s in scan_all(openhands, base_env(tmp_path, home=home)) if s.native_id == CONTINUED)
    assert openhands.translate(session, {}) == before


def test_damaged_conversations_give_documents_with_warnings(tmp_path):
    home = live_copy(tmp_path, LIVE_HOME)
    folders = sorted(glob.glob(os.path.join(home, ".openhands", "conversations", "*")))
    cut, bad, stateless = folders
    cut_file = openhands.event_files(cut)[-1]
    data = open(cut_file, "rb").read()
    open(cut_file, "wb").write(data[: len(data) // 2])
    open(openhands.event_files(bad)[3], "wb").write(b"[1, 2]")
    os.remove(os.path.join(stateless, "base_state.json"))
    docs = {s.source: d for s, d in translate_all(openhands, base_env(tmp_path, home=home))}
    assert all(assert_valid(d) is None for d in docs.values())
    assert any("not readable JSON" in w for w in docs[cut]["extra"]["warnings"])
    assert doc_counts(docs[cut]) == {"user": 1, "calls": 6, "results": 6}  # the final answer was cut
    assert any("not a JSON object" in w for w in docs[bad]["extra"]["warnings"])
    assert docs[stateless]["extra"]["warnings"] == ["base_state.json is missing"]
    assert doc_counts(docs[stateless]) == native_counts(stateless)[0] and totals(docs[stateless]) == (None,) * 3


def test_a_condensation_is_the_condenser_model_call(tmp_path):
    """A Condensation event (the SDK's shape: summary, forgotten_event_ids, llm_response_id)
    names the condenser's call: an agent step with its usage; an unknown event kind is warned of."""
    home = live_copy(tmp_path, LIVE_HOME)
    folder = os.path.join(home, ".openhands", "conversations", CONTINUED)
    events = os.path.join(folder, "events")
    json.dump({"id": "c0", "timestamp": "2026-12-01T08:20:20.000000", "source": "environment", "kind": "Condensation",
               "summary": "The note was written.", "forgotten_event_ids": ["a", "b"], "llm_response_id": "cond-1"},
              open(os.path.join(events, "event-00029-c0.json"), "w"))
    json.dump({"id": "c1", "kind": "FromTheFuture"}, open(os.path.join(events, "event-00030-c1.json"), "w"))
    state_path = os.path.join(folder, "base_state.json")
    state = json.load(open(state_path))
    state["stats"]["usage_to_metrics"]["condenser"]["token_usages"] = [
        {"model": "openai/small", "prompt_tokens": 300, "completion_tokens": 40, "cache_read_tokens": 0,
         "response_id": "cond-1"}]
    json.dump(state, open(state_path, "w"))
    (_, doc), = [(s, d) for s, d in translate_all(openhands, base_env(tmp_path, home=home)) if s.native_id == CONTINUED]
    step = next(s for s in doc["steps"] if (s.get("extra") or {}).get("kind") == "condensation")
    assert (step["source"], step["message"], step["model_name"]) == ("agent", "The note was written.", "openai/small")
    assert step["metrics"] == {"prompt_tokens": 300, "completion_tokens": 40, "cached_tokens": 0}
    assert step["extra"]["forgotten_events"] == 2
    assert doc["final_metrics"]["total_prompt_tokens"] == 12000 + 300
    assert doc["extra"]["warnings"] == ["unknown event kind 'FromTheFuture' skipped"]


@pytest.mark.parametrize("record, expected", [
    ({"prompt_tokens": 1000, "completion_tokens": 20, "cache_read_tokens": 100, "cache_write_tokens": 5},
     {"prompt_tokens": 1000, "completion_tokens": 20, "cached_tokens": 100, "extra": {"cache_write_tokens": 5}}),
    ({"prompt_tokens": 10, "completion_tokens": 2, "cache_read_tokens": 500},   # ACP: reads beside the prompt
     {"prompt_tokens": 510, "completion_tokens": 2, "cached_tokens": 500}),
    ({"completion_tokens": 2}, None),
])
def test_usage_metrics(record, expected):
    assert openhands.usage_metrics(record) == expected


def test_golden_document(tmp_path):
    env = live_env(tmp_path)
    session = next(s for s in scan_all(openhands, env) if s.native_id == CONTINUED)
    doc = openhands.translate(session, env)
    assert_valid(doc)
    assert_golden(doc, "openhands", "live-continued-conversation")


def test_health_counts_the_store(tmp_path):
    result = cli("agents", "--json", env=live_env(tmp_path))
    row = next(r for r in map(json.loads, result.stdout.splitlines()) if r["agent"] == "openhands")
    files = [p for p in glob.glob(os.path.join(CONVERSATIONS, "*", "**", "*.json"), recursive=True)]
    assert (row["sessions"], row["sources"], row["formats"]) == (3, 3, {"v1": 3})
    assert row["native_bytes"] == sum(os.path.getsize(p) for p in files)
    assert row["sessions_with_warnings"] == row["sessions_failed"] == row["sessions_without_cwd"] == 0


def test_store_is_never_written(tmp_path):
    before = tree_digest(LIVE_HOME)
    env = live_env(tmp_path)
    translate_all(openhands, env)
    result = cli("list", "--all", "--json", env=env)
    assert result.returncode == 0, result.stderr
    assert len([line for line in result.stdout.splitlines() if b'"agent":"openhands"' in line]) == 3
    assert tree_digest(LIVE_HOME) == before


# OpenHands V0 (the GUI server) ---------------------------------------------------------------------
def v0_events() -> list[dict]:
    """A V0 conversation as `event_to_dict` writes it (openhands/events/serialization): the
    system prompt, a prompt with its recall, one model reply making two tool calls (a command
    that fails, a file read), their observations, a state change, and the final answer."""
    response = {"id": "chatcmpl-1", "model": "anthropic/claude-sonnet-4-20250514",
                "choices": [{"message": {"role": "assistant", "content": "Let me look.", "tool_calls": [
                    {"id": "toolu_1", "type": "function",
                     "function": {"name": "execute_bash", "arguments": '{"command": "make test"}'}},
                    {"id": "toolu_2", "type": "function",
                     "function": {"name": "str_replace_editor", "arguments": '{"command": "view", "path": "/workspace/a.py"}'}}]}}],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 80, "prompt_tokens_details": {"cached_tokens": 1000}}}

    def meta(call, name):
        return {"function_name": name, "tool_call_id": call, "model_response": response, "total_calls_in_response": 2}
    return [
        {"id": 0, "timestamp": "2025-06-01T10:00:00.000001", "source": "agent", "message": "You are OpenHands agent",
         "action": "system", "args": {"content": "You are OpenHands agent.", "tools": [], "openhands_version": "0.41.0"}},
        {"id": 1, "timestamp": "2025-06-01T10:00:01", "source": "user", "message": "fix the tests",
         "action": "message", "args": {"content": "fix the tests", "image_urls": [], "wait_for_response": False}},
        {"id": 2, "timestamp": "2025-06-01T10:00:01", "source": "user", "message": "Retrieving content for: fix the tests",
         "action": "recall", "args": {"recall_type": "workspace_context", "query": "fix the tests"}},
        {"id": 3, "timestamp": "2025-06-01T10:00:02", "source": "environment", "message": "Added workspace context",
         "cause": 2, "observation": "recall", "content": "Added workspace context",
         "extras": {"recall_type": "workspace_context", "repo_name": "me/app"}},
        {"id": 4, "timestamp": "2025-06-01T10:00:05", "source": "agent", "message": "Running command: make test",
         "action": "run", "tool_call_metadata": meta("toolu_1", "execute_bash"),
         "args": {"command": "make test", "is_input": False, "thought": "Let me look.", "blocking": False}},
        {"id": 5, "timestamp": "2025-06-01T10:00:05", "source": "agent", "message": "Reading file: /workspace/a.py",
         "action": "read", "tool_call_metadata": meta("toolu_2", "str_replace_editor"),
         "args": {"path": "/workspace/a.py", "thought": ""}},
        {"id": 6, "timestamp": "2025-06-01T10:00:09", "source": "agent", "message": "Command `make test` executed with exit code 2.",
         "cause": 4, "observation": "run", "content": "FAILED test_a.py::test_x", "tool_call_metadata": meta("toolu_1", "execute_bash"),
         "extras": {"command": "make test", "metadata": {"exit_code": 2, "pid": -1}, "hidden": False}, "success": False},
        {"id": 7, "timestamp": "2025-06-01T10:00:09", "source": "agent", "message": "I read the file /workspace/a.py.",
         "cause": 5, "observation": "read", "content": "def x(): pass", "tool_call_metadata": meta("toolu_2", "str_replace_editor"),
         "extras": {"path": "/workspace/a.py", "impl_source": "oh_aci"}},
        {"id": 8, "timestamp": "2025-06-01T10:00:10", "source": "environment", "message": "",
         "observation": "agent_state_changed", "content": "", "extras": {"agent_state": "awaiting_user_input"}},
        {"id": 9, "timestamp": "2025-06-01T10:00:12", "source": "agent", "message": "The test fails on x.",
         "action": "message", "args": {"content": "The test fails on x.", "image_urls": None, "wait_for_response": True}},
    ]


def test_a_v0_conversation_is_read_like_v1(tmp_path):
    """The GUI server's `~/.openhands/sessions/<id>/events/<n>.json` and `metadata.json` (it
    was "not found"): listed, and translated with one agent step per model reply, each call's
    result joined to it, the failed command marked."""
    home = tmp_path / "home"
    folder = home / ".openhands" / "sessions" / "5b1c9e0f2a7d4c3e8f6a1b2c3d4e5f60"
    (folder / "events").mkdir(parents=True)
    for event in reversed(v0_events()):
        (folder / "events" / f"{event['id']}.json").write_text(json.dumps(event))
    (folder / "event_cache").mkdir()
    (folder / "metadata.json").write_text(json.dumps({
        "conversation_id": folder.name, "title": "Fix the failing tests", "selected_repository": "me/app",
        "created_at": "2025-06-01T10:00:00Z", "last_updated_at": "2025-06-01T10:00:12Z",
        "llm_model": "anthropic/claude-sonnet-4-20250514", "prompt_tokens": 1200, "completion_tokens": 80}))
    env = base_env(tmp_path, home=str(home))
    [(session, doc)] = translate_all(openhands, env)
    assert (session.native_id, session.title, session.extra["format"]) == (folder.name, "fix the tests", "v0")
    assert session.model == "anthropic/claude-sonnet-4-20250514"
    assert session.started == openhands.epoch("2025-06-01T10:00:00Z")
    assert [(s["source"], s["message"]) for s in doc["steps"]] == [
        ("system", "You are OpenHands agent."), ("user", "fix the tests"), ("system", "Added workspace context"),
        ("agent", "Let me look."), ("agent", "The test fails on x.")]
    reply = doc["steps"][3]
    assert [c["arguments"] for c in reply["tool_calls"]] == [{"command": "make test"},
                                                            {"command": "view", "path": "/workspace/a.py"}]
    assert [(r["content"], r.get("extra")) for r in reply["observation"]["results"]] == [
        ("FAILED test_a.py::test_x", {"is_error": True, "exit_code": 2}), ("def x(): pass", None)]
    assert reply["metrics"] == {"prompt_tokens": 1200, "completion_tokens": 80, "cached_tokens": 1000}
    assert doc["extra"]["repository"] == "me/app" and "warnings" not in doc["extra"]
    assert openhands.dependencies(session.source, env)[0] == str(folder / "metadata.json")
