"""Codex rollouts: every sample becomes a valid document whose prompts, tool calls, results and
token totals match what the native records hold; legacy formats, `.zst`, forks and sub-agents,
damaged files; the live 0.171.0 store through discovery, project scoping and the CLI.

Golden files: tests/golden/codex/*.atif.json. After a deliberate change, regenerate them with
`UPDATE_GOLDEN=1 python -m pytest tests/test_agent_codex.py`, and read the diff.
"""

from __future__ import annotations

import glob
import json
import os
import shutil

import pytest
import zstandard

from agents import codex
from agents.base import epoch
from discovery import catalog
from helpers import (LIVE, SAMPLES, assert_golden, assert_valid, base_env, cli, read_jsonl,
                     translate_file, tree_digest)

LIVE_HOME = os.path.join(LIVE, "codex-0.171.0")
LIVE_DIR = os.path.join(LIVE_HOME, ".codex", "sessions", "2026", "11", "29")
LIVE_S1 = os.path.join(LIVE_DIR, "rollout-2026-11-29T20-42-19-01a2290b-5981-76d0-89cc-00876b1ca8fa.jsonl")
LIVE_ROLLOUTS = sorted(glob.glob(os.path.join(LIVE_DIR, "rollout-*.jsonl")))
SAMPLE_ROLLOUTS = sorted(p for p in glob.glob(os.path.join(SAMPLES, "codex", "**", "*.jsonl"), recursive=True)
                         if os.path.basename(p) != "history.jsonl")  # history.jsonl is the prompt history
ALL_ROLLOUTS = SAMPLE_ROLLOUTS + LIVE_ROLLOUTS
GOLDEN = {"live-0.171.0-resumed": LIVE_S1,
          "compaction": os.path.join(SAMPLES, "codex", "agent-history", "session_with_compaction.jsonl"),
          "real-0.135.0": os.path.join(SAMPLES, "codex", "agent-history-real", "session-01_v0.135.0.jsonl")}
NO_HOME = {"HOME": "/nonexistent-home"}

CALL_ITEMS = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call", "web_search_call",
              "image_generation_call"}
OUTPUT_ITEMS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}


def translate(path: str, env=NO_HOME) -> dict:
    return translate_file(codex, path, env)


def ident(path: str) -> str:
    return os.path.relpath(path, SAMPLES)


# native records, read without the translator -------------------------------------------------------
def native(path: str) -> list[tuple[str, dict]]:
    """(type, payload) of every readable line: `{timestamp, type, payload}` envelopes, and the
    bare items of older writers (`{type, ...}` or a chat message `{role, content|message}`)."""
    found = []
    for record in read_jsonl(path):
        if isinstance(record.get("payload"), dict):
            found.append((record.get("type"), record["payload"]))
        elif "type" in record or "role" in record:
            found.append(("response_item", {"content": record.get("message"), **record}))
    return found


def first_text(payload: dict) -> str:
    content = payload.get("content")
    if isinstance(content, str):
        return content
    texts = [c.get("text") for c in content or [] if isinstance(c, dict) and isinstance(c.get("text"), str)]
    return texts[0] if texts else ""


def native_prompts(records) -> int:
    """What the human typed, turn by turn (a turn starts at `task_started`; a resumed session
    may mix Codex versions): the `user_message` events (kind plain), else the UserMessage items,
    else the user messages that are not harness text (which starts with a tag or AGENTS.md)."""
    turns = [[]]
    for kind, payload in records:
        if kind == "event_msg" and payload.get("type") in ("task_started", "turn_started"):
            turns.append([])
        turns[-1].append((kind, payload))
    return sum(prompts_of_turn(turn) for turn in turns)


def prompts_of_turn(records) -> int:
    events = [p for t, p in records if t == "event_msg" and p.get("type") == "user_message"
              and p.get("kind") in (None, "plain")]
    items = [p for t, p in records if t == "event_msg" and p.get("type") == "item_completed"
             and (p.get("item") or {}).get("type") == "UserMessage"]
    messages = [p for t, p in records if t == "response_item" and p.get("role") == "user"
                and p.get("type", "message") == "message"
                and not first_text(p).lstrip().startswith(("<", "# AGENTS.md"))]
    return len(events or items or messages)


def native_calls(records) -> int:
    return sum(1 for t, p in records if t == "response_item" and p.get("type") in CALL_ITEMS)


def native_results(records) -> int:
    """Outputs, plus the image a generation call carries and each web search's end event."""
    return sum(1 for t, p in records
               if (t == "response_item" and p.get("type") in OUTPUT_ITEMS | {"image_generation_call"})
               or (t == "event_msg" and p.get("type") == "web_search_end"))


def native_usage(records) -> tuple[int, int, int]:
    """(input incl. cached, output, cached) summed over the model calls: each `token_count`'s
    `last_token_usage`, skipping events without info and repeats of the previous cumulative
    total; older shapes (0.50 `info.prompt`, flat `input_tokens`, `turn.completed.usage`) too."""
    sums, previous = [0, 0, 0], object()
    for kind, payload in records:
        usage = None
        if kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if isinstance(info, dict):
                total = info.get("total_token_usage")
                if total is not None and total == previous:
                    continue
                previous = total if total is not None else previous
                usage = info.get("last_token_usage") or info
            elif "input_tokens" in payload:
                usage = payload
        elif kind == "event_msg" and payload.get("type") == "turn.completed":
            usage = payload.get("usage")
        if usage:
            sums[0] += usage.get("input_tokens", usage.get("prompt", 0))
            sums[1] += usage.get("output_tokens", usage.get("completion", 0))
            sums[2] += usage.get("cached_input_tokens", 0)
    return tuple(sums)


def doc_counts(doc: dict) -> tuple[int, int, int]:
    """(user steps, tool calls, tool results) of a document; compaction context is no result."""
    steps = doc["steps"]
    results = [r for s in steps for r in (s.get("observation") or {}).get("results", [])
               if "source_call_id" in r or (r.get("extra") or {}).get("orphan")]
    return (sum(1 for s in steps if s["source"] == "user"),
            sum(len(s.get("tool_calls", [])) for s in steps), len(results))


def doc_usage(doc: dict) -> tuple[int, int, int]:
    fm = doc["final_metrics"]
    return (fm.get("total_prompt_tokens", 0), fm.get("total_completion_tokens", 0), fm.get("total_cached_tokens", 0))


# every sample ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ALL_ROLLOUTS, ids=ident)
def test_sample_is_valid_and_counts_match_the_native_records(path):
    doc = translate(path)
    records = native(path)
    assert doc_counts(doc) == (native_prompts(records), native_calls(records), native_results(records))
    assert doc_usage(doc) == native_usage(records)
    assert doc["agent"]["name"] == "codex"


def test_the_samples_are_the_ones_expected():
    """The parametrized tests above must not pass by finding nothing."""
    assert len(SAMPLE_ROLLOUTS) == 21 and len(LIVE_ROLLOUTS) == 3


@pytest.mark.parametrize("path", LIVE_ROLLOUTS, ids=ident)
def test_live_totals_equal_the_last_cumulative_total(path):
    """In a real rollout the calls' `last_token_usage` add up to the last `total_token_usage`:
    the document's final_metrics equal that total."""
    counts = [p["info"] for t, p in native(path) if p.get("type") == "token_count" and p.get("info")]
    total = counts[-1]["total_token_usage"]
    expected = (total["input_tokens"], total["output_tokens"], total["cached_input_tokens"])
    assert native_usage(native(path)) == expected
    assert doc_usage(translate(path)) == expected


@pytest.mark.parametrize("path", LIVE_ROLLOUTS, ids=ident)
def test_live_one_agent_step_per_model_call(path):
    """SCENARIO.md: per prompt, three model calls (shell, read, final text), each closed by one
    token_count: one agent step each, with its reasoning, text, usage and at most one call."""
    doc = translate(path)
    agents = [s for s in doc["steps"] if s["source"] == "agent"]
    calls = [p for t, p in native(path) if p.get("type") == "token_count" and p.get("info")]
    assert len(agents) == len(calls) == 3 * doc_counts(doc)[0]
    for step in agents:
        assert step["llm_call_count"] == 1 and step["metrics"]["prompt_tokens"] > 0
        assert step["reasoning_content"] and step["message"] and step["model_name"] == "gpt-5-codex"
    finals = [s["message"] for s in agents if "tool_calls" not in s]
    assert all(text.startswith("SCENARIO-DONE codex-") for text in finals)
    for step in agents:
        for call, result in zip(step.get("tool_calls", []), (step.get("observation") or {}).get("results", [])):
            assert call["function_name"] == "exec_command" and "cmd" in call["arguments"]
            assert result["source_call_id"] == call["tool_call_id"] and result["extra"] == {"exit_code": 0}


def test_live_resumed_session_holds_both_prompts_and_its_context():
    doc = translate(LIVE_S1)
    users = [s["message"] for s in doc["steps"] if s["source"] == "user"]
    assert [u.split(":")[0] for u in users] == ["SCENARIO codex-1 in /tmp/agents/proj-codex",
                                                "SCENARIO codex-1b in /tmp/agents/proj-codex"]
    kinds = [s["extra"]["kind"] for s in doc["steps"] if s["source"] == "system"]
    assert kinds == ["base_instructions", "developer_message", "environment_context"]
    assert doc["agent"]["version"] == "0.171.0" and doc["agent"]["model_name"] == "gpt-5-codex"


# golden files -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden(name):
    assert_golden(translate(GOLDEN[name]), "codex", name)


# discovery, legacy formats, compression --------------------------------------------------------------
def codex_env(tmp_path) -> dict:
    env = base_env(tmp_path)
    env["CODEX_HOME"] = str(tmp_path / "codex-home")
    return env


def place(env, relative: str, data: bytes) -> str:
    path = os.path.join(env["CODEX_HOME"], relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def test_zst_reads_the_same_as_its_plain_source_and_a_plain_sibling_wins(tmp_path):
    env = codex_env(tmp_path)
    name = os.path.basename(LIVE_S1)
    packed = place(env, f"archived_sessions/{name}.zst", zstandard.ZstdCompressor(level=3).compress(read(LIVE_S1)))
    assert codex.sources(env) == [packed]
    assert translate(packed, env) == translate(LIVE_S1)
    plain = place(env, f"archived_sessions/{name}", read(LIVE_S1))
    assert codex.sources(env) == [plain]


def test_discovery_finds_dated_archived_and_legacy_files_and_nothing_else(tmp_path):
    env = codex_env(tmp_path)
    expected = [place(env, "sessions/2026/11/29/rollout-a.jsonl", b""),
                place(env, "archived_sessions/rollout-b.jsonl", b""),
                place(env, "sessions/rollout-c.jsonl", b""),
                place(env, "sessions/rollout-d.json", b"{}")]
    place(env, "history.jsonl", b"{}\n")
    place(env, "sessions/2026/11/29/notes.jsonl", b"")
    place(env, "state_5.sqlite", b"")
    assert codex.sources(env) == expected
    assert codex.sources({"HOME": str(tmp_path)}) == []  # no CODEX_HOME and no ~/.codex: nothing


LEGACY_ID = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"


def lines(*records) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def test_bare_jsonl_of_the_early_rust_cli(tmp_path):
    """Before the envelope: a SessionMeta line, bare ResponseItems, `record_type: state` lines,
    and shell results as JSON strings carrying `metadata.exit_code`."""
    env = codex_env(tmp_path)
    path = place(env, f"sessions/2025/05/07/rollout-2025-05-07T17-24-21-{LEGACY_ID}.jsonl", lines(
        {"id": LEGACY_ID, "timestamp": "2025-05-07T17:24:21.123Z", "instructions": None},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
            "<environment_context>\n<cwd>/src/legacy</cwd>\n</environment_context>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run the tests"}]},
        {"record_type": "state"},
        {"type": "local_shell_call", "call_id": "call_1", "status": "completed",
         "action": {"type": "exec", "command": ["pytest"]}},
        {"type": "function_call_output", "call_id": "call_1",
         "output": json.dumps({"output": "1 failed", "metadata": {"exit_code": 1, "duration_seconds": 0.5}})},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One test fails."}]},
        {"record_type": "state", "previous_response_id": "resp_1"}))
    session, = codex.scan(path, env)
    assert (session.native_id, session.cwd, session.title) == (LEGACY_ID, "/src/legacy", "run the tests")
    assert session.started == epoch("2025-05-07T17:24:21.123Z") and session.extra["format"] == "legacy-jsonl"
    doc = codex.translate(session, env)
    assert_valid(doc)
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent", "agent"]
    call, = doc["steps"][2]["tool_calls"]
    assert call["function_name"] == "local_shell" and call["arguments"]["command"] == ["pytest"]
    result, = doc["steps"][2]["observation"]["results"]
    assert result["content"] == "1 failed" and result["extra"] == {"exit_code": 1, "is_error": True}
    assert doc["steps"][3]["message"] == "One test fails." and "warnings" not in doc.get("extra", {})


def test_single_json_document_of_the_typescript_cli(tmp_path):
    env = codex_env(tmp_path)
    doc_data = {"session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": LEGACY_ID, "instructions": "be brief"},
                "items": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
                          {"type": "function_call", "name": "shell", "call_id": "c1",
                           "arguments": json.dumps({"command": ["ls"]})},
                          {"type": "function_call_output", "call_id": "c1",
                           "output": json.dumps({"output": "a.txt\n", "metadata": {"exit_code": 0}})},
                          {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "a.txt"}]}]}
    path = place(env, f"sessions/rollout-2025-04-20-{LEGACY_ID}.json", json.dumps(doc_data, indent=2).encode())
    assert codex.sources(env) == [path]
    session, = codex.scan(path, env)
    assert (session.native_id, session.title, session.extra["format"]) == (LEGACY_ID, "list files", "legacy-json")
    doc = codex.translate(session, env)
    assert_valid(doc)
    assert [s["source"] for s in doc["steps"]] == ["system", "user", "agent", "agent"]
    assert doc["steps"][0]["message"] == "be brief" and doc["steps"][2]["observation"]["results"][0]["content"] == "a.txt\n"


# events joined to the model's items ---------------------------------------------------------------------
def envelope(kind: str, payload: dict, second: int = 0) -> dict:
    return {"timestamp": f"2026-08-01T10:00:{second:02d}.000Z", "type": kind, "payload": payload}


def usage(prompt: int, completion: int, cached: int = 0) -> dict:
    return {"input_tokens": prompt, "cached_input_tokens": cached, "output_tokens": completion,
            "reasoning_output_tokens": 0, "total_tokens": prompt + completion}


def token_count(last: dict, total: dict) -> dict:
    return envelope("event_msg", {"type": "token_count", "info": {"last_token_usage": last, "total_token_usage": total}})


def test_end_events_web_search_repeated_usage_and_compaction(tmp_path):
    env = codex_env(tmp_path)
    call = lambda kind, call_id, **f: envelope("response_item", {"type": kind, "call_id": call_id, **f})  # noqa: E731
    path = place(env, "sessions/2026/08/01/rollout-x.jsonl", lines(
        envelope("session_meta", {"id": "t-1", "cwd": "/w", "cli_version": "0.150.0"}),
        envelope("event_msg", {"type": "user_message", "message": "go", "kind": "plain"}),
        call("function_call", "c1", name="exec_command", arguments='{"cmd": "false"}'),
        call("custom_tool_call", "c2", name="apply_patch", input="*** Begin Patch"),
        call("function_call", "c3", name="docs__search", arguments="not json"),
        envelope("response_item", {"type": "web_search_call", "status": "completed",
                                   "action": {"type": "search", "query": "atif"}}),
        envelope("event_msg", {"type": "web_search_end", "call_id": "ws", "query": "atif",
                               "results": [{"title": "ATIF", "url": "https://x.invalid"}]}),
        envelope("event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 2}),
        call("function_call_output", "c1", output="Process exited with code 2"),
        envelope("event_msg", {"type": "patch_apply_end", "call_id": "c2", "success": False}),
        call("custom_tool_call_output", "c2", output=[{"type": "input_text", "text": "rejected"}]),
        envelope("event_msg", {"type": "mcp_tool_call_end", "call_id": "c3", "result": {"Err": "down"}}),
        call("function_call_output", "c3", output="down"),
        token_count(usage(100, 10, 40), usage(100, 10, 40)),
        token_count(usage(100, 10, 40), usage(100, 10, 40)),  # a repeat: the same call again
        envelope("event_msg", {"type": "token_count", "info": None}),
        envelope("compacted", {"message": "summary so far"}),
        envelope("event_msg", {"type": "context_compacted"}),
        token_count(usage(30, 3), usage(130, 13, 40))))  # the compaction's own call
    doc = translate(path, env)
    assert [s["source"] for s in doc["steps"]] == ["user", "agent", "system", "agent"]
    results = {r["source_call_id"]: r for r in doc["steps"][1]["observation"]["results"]}
    assert results["c1"]["extra"] == {"exit_code": 2, "is_error": True}
    assert results["c2"]["extra"] == {"is_error": True} and results["c2"]["content"] == "rejected"
    assert results["c3"]["extra"] == {"is_error": True}
    web = [c for c in doc["steps"][1]["tool_calls"] if c["function_name"] == "web_search"][0]
    assert web["arguments"] == {"type": "search", "query": "atif"} and "ATIF" in results[web["tool_call_id"]]["content"]
    assert doc["steps"][1]["tool_calls"][2]["arguments"] == {"input": "not json"}
    compaction = doc["steps"][2]
    assert compaction["extra"]["context_management"] == {"type": "compaction", "boundary": "replace"}
    assert compaction["observation"]["results"][0]["content"] == "summary so far"
    assert doc["steps"][3]["extra"] == {"usage_without_output": True}
    assert doc_usage(doc) == (130, 13, 40) == native_usage(native(path))


# forks and sub-agents ------------------------------------------------------------------------------------
PARENT_ID = "01a2290b-5cf5-7fe0-b23f-cc22478818e1"
PARENT = os.path.join(LIVE_DIR, f"rollout-2026-11-29T20-42-20-{PARENT_ID}.jsonl")
CHILD_ID = "01a2290c-0000-7000-8000-000000000001"


def child_rollout(meta: dict, copy_parent_meta_first: bool = False) -> bytes:
    """A child as Codex writes it: its own session_meta, the parent's lines (envelopes
    re-stamped), then its own turn."""
    parent_lines = read(PARENT).splitlines(keepends=True)
    own = lines(envelope("event_msg", {"type": "task_started", "turn_id": "child-turn-1"}, 30),
                envelope("turn_context", {"turn_id": "child-turn-1", "cwd": "/tmp/agents/proj-codex", "model": "gpt-5-codex"}, 30),
                envelope("response_item", {"type": "message", "role": "user",
                                           "content": [{"type": "input_text", "text": "child prompt"}]}, 31),
                envelope("event_msg", {"type": "user_message", "message": "child prompt", "kind": "plain"}, 31),
                envelope("response_item", {"type": "message", "role": "assistant",
                                           "content": [{"type": "output_text", "text": "child answer"}]}, 32),
                token_count(usage(500, 5, 100), usage(32379, 84, 24008)))
    return lines(envelope("session_meta", {"id": CHILD_ID, "cwd": "/tmp/agents/proj-codex", **meta})) \
        + b"".join(parent_lines) + own


@pytest.mark.parametrize("meta", [
    {"forked_from_id": PARENT_ID},
    {"source": {"subagent": {"thread_spawn": {"parent_thread_id": PARENT_ID, "depth": 1}}}, "thread_source": "subagent"},
], ids=["fork", "subagent"])
def test_a_child_drops_the_parent_history_it_copied(tmp_path, meta):
    env = codex_env(tmp_path)
    place(env, f"sessions/2026/11/29/{os.path.basename(PARENT)}", read(PARENT))
    child = place(env, f"sessions/2026/11/29/rollout-2026-11-29T20-43-00-{CHILD_ID}.jsonl", child_rollout(meta))
    session, = codex.scan(child, env)
    assert session.title == "child prompt"
    doc = codex.translate(session, env)
    assert_valid(doc)
    assert [s["message"] for s in doc["steps"] if s["source"] == "user"] == ["child prompt"]
    assert doc_counts(doc) == (1, 0, 0) and doc_usage(doc) == (500, 5, 100)
    relationship = "fork" if "forked_from_id" in meta else "subagent"
    assert doc["extra"]["parent_session_id"] == PARENT_ID and doc["extra"]["relationship"] == relationship
    assert doc["extra"]["copied_parent_lines_skipped"] == len(read(PARENT).splitlines())
    assert "warnings" not in doc["extra"]


def test_a_fork_whose_parent_is_missing_keeps_everything_and_says_so(tmp_path):
    env = codex_env(tmp_path)
    child = place(env, f"sessions/2026/11/29/rollout-x-{CHILD_ID}.jsonl", child_rollout({"forked_from_id": PARENT_ID}))
    doc = translate(child, env)
    assert doc_counts(doc)[0] == 2
    assert any("was not found" in w for w in doc["extra"]["warnings"])


def test_a_subagent_without_a_copied_prefix_keeps_all_its_lines():
    path = os.path.join(SAMPLES, "codex", "agentsview", "traex_codex_fork_rollout_subagent.jsonl")
    doc = translate(path)
    assert doc["extra"]["relationship"] == "subagent" and "copied_parent_lines_skipped" not in doc["extra"]
    spawn = doc["steps"][2]["observation"]["results"][0]
    assert spawn["extra"]["subagent_session_id"] == "019fbcd0-1111-7000-8000-000000000001"


# damaged input ----------------------------------------------------------------------------------------
def damaged_copies() -> dict:
    data = read(LIVE_S1)
    middle = data.index(b"\n", len(data) // 2) + 1
    return {"truncated mid-line": data[: middle + 40],
            "malformed line": data[:middle] + b"{not json\n" + data[middle:],
            "not an object": data[:middle] + b"[1, 2]\n" + data[middle:],
            "only a partial line": data[:30],
            "empty": b""}


@pytest.mark.parametrize("damage", ["truncated mid-line", "malformed line", "not an object", "only a partial line",
                                    "empty"])
def test_damaged_rollout_gives_a_valid_document_with_a_warning(tmp_path, damage):
    env = codex_env(tmp_path)
    path = place(env, "sessions/2026/11/29/rollout-damaged.jsonl", damaged_copies()[damage])
    doc = translate(path, env)
    assert doc["extra"]["warnings"]


def test_corrupt_zst_and_broken_json_document_give_valid_documents_with_a_warning(tmp_path):
    env = codex_env(tmp_path)
    packed = zstandard.ZstdCompressor().compress(read(LIVE_S1))
    for name, data in {"archived_sessions/rollout-garbage.jsonl.zst": b"not zstd at all",
                       "archived_sessions/rollout-cut.jsonl.zst": packed[: len(packed) // 2],
                       "sessions/rollout-broken.json": b'{"session": {"id": "x"}, "items": [{'}.items():
        doc = translate(place(env, name, data), env)
        assert doc["extra"]["warnings"], name


def interrupted_rollout(live_path: str) -> list[dict]:
    """The live 0.171.0 rollout cut after its first prompt, then that turn interrupted while the
    model reasoned, as Codex records it: the reasoning item it streamed (encrypted, no summary),
    the `<turn_aborted>` message it puts in the history for the model, the `turn_aborted`
    event. (No public rollout of an interrupted turn was found; these three records have the
    shape of those quoted from real rollouts by other Codex readers.)"""
    records = read_jsonl(live_path)
    prompt = next(i for i, r in enumerate(records) if r["payload"].get("item", {}).get("type") == "UserMessage")
    turn = next(r["payload"]["turn_id"] for r in records if r["type"] == "turn_context")
    at = records[prompt]["timestamp"][:-5]
    marker = ("<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running unified exec "
              "processes may still be running in the background. If any tools/commands were aborted, they "
              "may have partially executed.\n</turn_aborted>")
    return records[:prompt + 1] + [
        {"timestamp": at + "500Z", "type": "response_item", "payload": {
            "type": "reasoning", "id": "rs_interrupted", "summary": [], "content": None,
            "encrypted_content": "gAAAAABpInterruptedReasoning=="}},
        {"timestamp": at + "900Z", "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": marker}]}},
        {"timestamp": at + "903Z", "type": "event_msg", "payload": {
            "type": "turn_aborted", "turn_id": turn, "reason": "interrupted"}}]


def test_an_interrupted_turn_is_one_abort_and_no_empty_agent_step(tmp_path):
    """A turn interrupted while the model reasoned holds nothing the model said: no agent step
    comes of it (an empty one would pass for a model call that answered nothing). Codex records
    the abort twice, as the message for the model and as the event: one system step."""
    env = codex_env(tmp_path)
    path = place(env, "sessions/2026/11/29/" + os.path.basename(LIVE_S1), lines(*interrupted_rollout(LIVE_S1)))
    doc = translate(path, env)
    steps = [(s["source"], (s.get("extra") or {}).get("kind")) for s in doc["steps"]]
    assert steps[-2:] == [("user", None), ("system", "turn_aborted")]
    assert ("agent", None) not in steps
    abort = doc["steps"][-1]
    assert abort["message"].startswith("<turn_aborted>") and abort["extra"]["reason"] == "interrupted"


def test_injected_context_is_told_from_prompts():
    assert codex.injected_kind("<environment_context>\n<cwd>/x</cwd>\n</environment_context>") == "environment_context"
    assert codex.injected_kind("# AGENTS.md instructions for /x\n\n<INSTRUCTIONS>\nbe nice\n</INSTRUCTIONS>") == "agents_md"
    assert codex.injected_kind("<permissions instructions>\nno\n</permissions instructions>") == "permissions_instructions"
    assert codex.injected_kind("<div> renders twice, why?") is None
    assert codex.injected_kind("fix the <b>bold</b> text") is None


# the live store: projects, the CLI, and nothing written ----------------------------------------------------
def test_live_sessions_land_in_their_projects(tmp_path):
    env = base_env(tmp_path, home=LIVE_HOME)
    found = catalog.discover(env, names=["codex"], use_cache=False)
    assert len(found.sessions) == 3 and all(s.short_id.startswith("cx-") for s in found.sessions)
    assert len({s.short_id for s in found.sessions}) == 3
    main = catalog.Scope("/tmp/agents/proj-codex").filter(found.sessions)
    other = catalog.Scope("/tmp/agents/proj-codex-other").filter(found.sessions)
    assert sorted(s.title.split(" in ")[0] for s in main) == ["SCENARIO codex-1", "SCENARIO codex-2"]
    assert [s.title.split(" in ")[0] for s in other] == ["SCENARIO codex-3"]


def test_cli_lists_and_shows_the_live_store_without_touching_it(tmp_path):
    before = tree_digest(LIVE_HOME)
    env = base_env(tmp_path, home=LIVE_HOME)
    listed = cli("list", "--all", "--json", "--steps", env=env)
    assert listed.returncode == 0, listed.stderr.decode()
    records = [json.loads(line) for line in listed.stdout.splitlines()]
    codex_records = [r for r in records if r["agent"] == "codex"]
    assert sorted(r["cwd"] for r in codex_records) == ["/tmp/agents/proj-codex"] * 2 + ["/tmp/agents/proj-codex-other"]
    assert all(r["model"] == "gpt-5-codex" and r["steps"] > 0 for r in codex_records)
    newest = max(codex_records, key=lambda r: r["started"])
    shown = cli("show", newest["id"], env=env)
    assert shown.returncode == 0, shown.stderr.decode()
    doc = json.loads(shown.stdout)
    assert_valid(doc)
    assert doc["session_id"] == newest["native_id"] and doc["extra"]["short_id"] == newest["id"]
    assert len(doc["steps"]) == newest["steps"]
    assert tree_digest(LIVE_HOME) == before


def test_translation_reads_the_store_without_writing(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(LIVE_HOME, home)
    before = tree_digest(str(home))
    env = base_env(tmp_path, home=str(home))
    for source in codex.sources(env):
        for session in codex.scan(source, env):
            codex.translate(session, env)
    assert tree_digest(str(home)) == before


@pytest.mark.parametrize("path", ALL_ROLLOUTS + [PARENT], ids=os.path.basename)
def test_a_listing_parses_only_the_lines_it_needs_and_lists_the_same(path, monkeypatch, tmp_path):
    """listing_lines spares a scan parsing tool calls and usage; what it lists (id, time,
    directory, model, title, lineage) is what parsing every line of the head lists."""
    env = base_env(tmp_path)
    filtered = [s.to_cache() for s in codex.scan(path, env)]
    monkeypatch.setattr(codex, "listing_lines", lambda: None)
    assert [s.to_cache() for s in codex.scan(path, env)] == filtered


@pytest.mark.parametrize("path", LIVE_ROLLOUTS, ids=ident)
def test_a_listing_leaves_tool_calls_and_usage_unparsed(path):
    wanted = codex.listing_lines()
    with open(path, "rb") as handle:
        kept = {json.loads(line)["payload"].get("type") for line in handle if wanted(line)}
    assert "token_count" not in kept and "function_call_output" not in kept
