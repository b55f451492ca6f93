"""Cline: the VS Code extension's tasks and the CLI's sessions, read against their own records.

Samples: the live Cline CLI 3.0.65 home (`samples/live/cline-3.0.65`), a real API history
(`samples/cline/mra04242026`), two real UI-only tasks (`samples/cline/cline-xray`, and
`samples/cline/fineye-ui-only`, whose first prompt is a `say: text`), and the deja-vu / cass
fixtures. One more task, `both_files_task`, holds an API history with its UI messages (no
sample has both): its shapes are those of the real samples above (API messages with `tool_use` /
`tool_result` blocks, UI `api_req_started` with `conversationHistoryIndex`).
Golden file: `tests/golden/cline/` (regenerate with `UPDATE_GOLDEN=1`).
"""

import json
import os
import re
import shutil

import pytest

from agents import cline, cline_tasks
from atif.serialize import loads
from discovery import catalog
from helpers import (LIVE, SAMPLES, assert_golden, assert_valid, base_env, copy_into, scan_all,
                     tree_digest)

LIVE_HOME = os.path.join(LIVE, "cline-3.0.65")
STORAGE = os.path.join(".config", "Code", "User", "globalStorage", "saoudrizwan.claude-dev")
HUMAN = re.compile(r"<(task|feedback|answer|user_message|user_input)(?: [^>]*)?>")


def both_files_task() -> tuple[list, list]:
    history = [
        {"role": "user", "ts": 1767261600000, "content": [
            {"type": "text", "text": "<task>\nrename foo to bar\n</task>"},
            {"type": "text", "text": "<environment_details>\n# Current Working Directory (/work/proj-cline-vscode) Files\nfoo.py\n</environment_details>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Reading the file."},
                                          {"type": "tool_use", "id": "tu1", "name": "read_file", "input": {"path": "foo.py"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1",
                                      "content": [{"type": "text", "text": "def foo(): pass"}]},
                                     {"type": "text", "text": "<environment_details>\n# Current Time\nnow\n</environment_details>"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "rename it in place", "signature": "s"},
                                          {"type": "tool_use", "id": "tu2", "name": "replace_in_file",
                                           "input": {"path": "foo.py", "diff": "foo -> bar"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu2", "is_error": True,
                                      "content": "The user denied this operation."},
                                     {"type": "text", "text": "<feedback>\nname it bar_v2\n</feedback>"},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0K"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Renamed."},
                                          {"type": "tool_use", "id": "tu3", "name": "attempt_completion",
                                           "input": {"result": "foo is now bar_v2"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu3", "content": "Done"}]},
    ]

    def request(index, ts, tokens_in, tokens_out, writes, reads, cost):
        text = json.dumps({"request": "...", "tokensIn": tokens_in, "tokensOut": tokens_out,
                           "cacheWrites": writes, "cacheReads": reads, "cost": cost})
        return {"ts": ts, "type": "say", "say": "api_req_started", "text": text,
                "modelInfo": {"providerId": "anthropic", "modelId": "claude-sonnet-4-5", "mode": "act"},
                "conversationHistoryIndex": index}

    ui = [{"ts": 1767261600000, "type": "say", "say": "task", "text": "rename foo to bar", "conversationHistoryIndex": -1},
          request(-1, 1767261601000, 12, 40, 3000, 0, 0.012),
          request(1, 1767261605000, 8, 60, 200, 3000, 0.004),
          request(3, 1767261610000, 9, 30, 150, 3200, 0.003)]
    return history, ui


def install(home: str) -> dict:
    """The samples laid out as a user's home; returns the task directories by id."""
    storage = os.path.join(home, STORAGE)
    tasks = {}

    def task(task_id, files):
        folder = os.path.join(storage, "tasks", task_id)
        os.makedirs(folder, exist_ok=True)
        for name, source in files.items():
            if isinstance(source, str):
                shutil.copy(source, os.path.join(folder, name))
            else:
                with open(os.path.join(folder, name), "w") as handle:
                    json.dump(source, handle)
        tasks[task_id] = folder

    task("1777073100000", {cline_tasks.API_HISTORY: os.path.join(SAMPLES, "cline", "mra04242026", cline_tasks.API_HISTORY)})
    xray = os.path.join(SAMPLES, "cline", "cline-xray", "tasks", "1770482470358")
    task("1770482470358", {cline_tasks.UI_MESSAGES: os.path.join(xray, cline_tasks.UI_MESSAGES)})
    fineye = os.path.join(SAMPLES, "cline", "fineye-ui-only", "tasks", "1767644899093")
    task("1767644899093", {cline_tasks.UI_MESSAGES: os.path.join(fineye, cline_tasks.UI_MESSAGES)})
    legacy = os.path.join(SAMPLES, "cline", "deja-vu", "legacy")
    task("1767225600000", {cline_tasks.API_HISTORY: os.path.join(legacy, "tasks", "1767225600000", cline_tasks.API_HISTORY)})
    copy_into(home, os.path.join(legacy, "state"), os.path.join(STORAGE, "state"))
    cass = os.path.join(SAMPLES, "cline", "cass", "tasks", "task1")
    task("task1", {n: os.path.join(cass, n) for n in os.listdir(cass)})
    history, ui = both_files_task()
    task("1767261600000", {cline_tasks.API_HISTORY: history, cline_tasks.UI_MESSAGES: ui})
    copy_into(home, os.path.join(LIVE_HOME, ".cline"), ".cline")
    modern = os.path.join(SAMPLES, "cline", "deja-vu", "modern", "sessions", "session_synthetic_01")
    copy_into(home, modern, os.path.join(".cline", "data", "sessions", "session_synthetic_01"))
    return tasks


@pytest.fixture
def store(tmp_path):
    env = base_env(tmp_path)
    tasks = install(env["HOME"])
    sessions = {s.native_id: s for s in scan_all(cline, env)}
    return env, tasks, sessions


def load(path):
    with open(path, "rb") as handle:
        return loads(handle.read())


def results(doc):
    return [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])]


def user_steps(doc):
    return [s for s in doc["steps"] if s["source"] == "user"]


# native counts ------------------------------------------------------------------------------------
def history_counts(messages):
    texts = [b["text"] for m in messages if isinstance(m, dict) and m.get("role") == "user"
             for b in (m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}])
             if b.get("type") == "text"]
    blocks = [b for m in messages if isinstance(m, dict) and isinstance(m.get("content"), list) for b in m["content"]]
    return {"human": sum(len(HUMAN.findall(t)) for t in texts),
            "calls": sum(1 for b in blocks if b.get("type") == "tool_use"),
            "results": sum(1 for b in blocks if b.get("type") == "tool_result")
            + sum(1 for t in texts if re.match(r"\[[\w\-:.]+(?: for .*?)?\] Result:", t))}


def check_history_document(doc, messages):
    native = history_counts(messages)
    tagged = [s for s in user_steps(doc) if (s.get("extra") or {}).get("tag")]
    assert len(tagged) == native["human"]
    assert sum(len(s.get("tool_calls", [])) for s in doc["steps"]) == native["calls"]
    assert len(results(doc)) == native["results"]


def test_every_task_and_session_is_valid(store):
    env, _, sessions = store
    assert set(sessions) == {"1777073100000", "1770482470358", "1767644899093", "1767225600000", "task1",
                             "1767261600000",
                             "1795985126635_8nhuf", "1795985141127_mhw0t", "1795985143701_tgnia",
                             "session_synthetic_01"}
    for session in sessions.values():
        assert_valid(cline.translate(session, env))


def test_real_api_history(store):
    env, tasks, sessions = store
    doc = cline.translate(sessions["1777073100000"], env)
    messages = load(os.path.join(tasks["1777073100000"], cline_tasks.API_HISTORY))
    check_history_document(doc, messages)
    assert [s for s in user_steps(doc) if not (s.get("extra") or {}).get("tag")] == []
    tokens = [m["metrics"]["tokens"] for m in messages if m.get("metrics")]
    assert doc["final_metrics"]["total_prompt_tokens"] == sum(t["prompt"] for t in tokens)
    assert doc["final_metrics"]["total_completion_tokens"] == sum(t["completion"] for t in tokens)
    assert doc["agent"]["model_name"] == "claude_4_5_opus"
    assert sessions["1777073100000"].cwd == "c:/Apps/MRA022626 - Copy/Marine-Response-Repo"
    failed = [r for r in results(doc) if (r.get("extra") or {}).get("exit_code") == 1]
    assert failed and all(r["extra"]["is_error"] for r in failed)
    kinds = {s["extra"]["kind"] for s in doc["steps"] if s["source"] == "system"}
    assert {"environment_details", "task_resumption", "harness_error"} <= kinds


def test_task_with_api_history_and_ui_messages(store):
    env, tasks, sessions = store
    history, ui = both_files_task()
    doc = cline.translate(sessions["1767261600000"], env)
    check_history_document(doc, history)
    agents = [s for s in doc["steps"] if s["source"] == "agent"]
    requests = [json.loads(m["text"]) for m in ui if m.get("say") == "api_req_started"]
    assert [a["metrics"]["prompt_tokens"] for a in agents] == [
        r["tokensIn"] + r["cacheWrites"] + r["cacheReads"] for r in requests]
    assert doc["final_metrics"]["total_cached_tokens"] == sum(r["cacheReads"] for r in requests)
    assert doc["final_metrics"]["total_cost_usd"] == pytest.approx(sum(r["cost"] for r in requests))
    assert agents[0]["timestamp"] == "2026-01-01T10:00:01.000Z"
    assert agents[1]["reasoning_content"] == "rename it in place"
    denied = next(r for r in results(doc) if r["source_call_id"] == "tu2")
    assert denied["extra"] == {"is_error": True}
    feedback = user_steps(doc)[1]
    assert feedback["message"][0] == {"type": "text", "text": "name it bar_v2"}
    assert feedback["message"][1]["type"] == "image"
    assert sessions["1767261600000"].cwd == "/work/proj-cline-vscode"


def test_ui_only_task(store):
    env, tasks, sessions = store
    ui = load(os.path.join(tasks["1770482470358"], cline_tasks.UI_MESSAGES))
    doc = cline.translate(sessions["1770482470358"], env)
    kinds = [cline_tasks.ui_kind(m) for m in ui]
    assert len(user_steps(doc)) == sum(k in ("task", "user_feedback") for k in kinds)
    assert sum(len(s.get("tool_calls", [])) for s in doc["steps"]) == sum(k in ("tool", "command") for k in kinds)
    outputs = sum(1 for i, k in enumerate(kinds) if k == "command" and "command_output" in kinds[i + 1:i + 3])
    assert len(results(doc)) == outputs
    requests = [json.loads(m["text"]) for m in ui if cline_tasks.ui_kind(m) == "api_req_started"]
    assert len([s for s in doc["steps"] if s["source"] == "agent"]) == len(requests)
    assert doc["final_metrics"]["total_prompt_tokens"] == sum(
        r["tokensIn"] + r["cacheWrites"] + r["cacheReads"] for r in requests)
    assert doc["final_metrics"]["total_completion_tokens"] == sum(r["tokensOut"] for r in requests)
    assert user_steps(doc)[0]["message"][1]["type"] == "image"


def test_ui_only_task_opens_with_its_prompt_and_names_its_directory_and_model(store):
    """A real task with UI messages only, as Cline writes it: the first prompt is the first
    message, a `say: text`. It is the first message listed and the first step, a user step; the
    working directory is the one the first request's environment details name (without it the
    task belongs to no project), the model the messages' `modelInfo`."""
    env, tasks, sessions = store
    ui = load(os.path.join(tasks["1767644899093"], cline_tasks.UI_MESSAGES))
    session = sessions["1767644899093"]
    request = json.loads(next(m for m in ui if m.get("say") == "api_req_started")["text"])["request"]
    assert (ui[0]["say"], session.title) == ("text", ui[0]["text"])
    assert session.cwd == "c:/Users/Haram/Desktop/flutter_application_1"
    assert f"# Current Working Directory ({session.cwd})" in request
    assert session.model == ui[0]["modelInfo"]["modelId"] == "x-ai/grok-code-fast-1"
    doc = cline.translate(session, env)
    assert (doc["steps"][0]["source"], doc["steps"][0]["message"]) == ("user", "yo wassup")
    assert len(user_steps(doc)) == 1 + sum(m.get("say") == "user_feedback" for m in ui)
    assert doc["agent"]["model_name"] == session.model
    xray = sessions["1770482470358"]  # the older `say: task` opening: the same facts
    assert (xray.cwd, xray.model) == ("d:/Users/obuzunov/myg/jira-dashboard", "claude-opus-4-5-20251101")


def test_history_index_gives_cwd_title_and_model(store):
    env, _, sessions = store
    session = sessions["1767225600000"]
    item = load(os.path.join(SAMPLES, "cline", "deja-vu", "legacy", "state", "taskHistory.json"))[0]
    assert (session.cwd, session.title, session.model) == (
        item["cwdOnTaskInitialization"], item["task"], item["modelId"])
    doc = cline.translate(session, env)
    assert [s["message"] for s in user_steps(doc)] == ["Say hello"]
    final = doc["final_metrics"]  # no request recorded usage: the index entry's totals
    assert (final["total_prompt_tokens"], final["total_completion_tokens"], final["total_cost_usd"]) == (
        item["tokensIn"], item["tokensOut"], item["totalCost"])


def test_cli_sessions(store):
    env, _, sessions = store
    root = os.path.join(env["HOME"], ".cline", "data", "sessions")
    for sid in ("1795985126635_8nhuf", "1795985141127_mhw0t", "1795985143701_tgnia", "session_synthetic_01"):
        manifest = load(os.path.join(root, sid, f"{sid}.json"))
        messages = load(os.path.join(root, sid, f"{sid}.messages.json"))["messages"]
        doc = cline.translate(sessions[sid], env)
        assert sessions[sid].cwd == manifest["cwd"]
        assert sessions[sid].title == " ".join(user_steps(cline.translate(sessions[sid], env))[0]["message"].split())
        native = history_counts(messages)
        assert sum(len(s.get("tool_calls", [])) for s in doc["steps"]) == native["calls"]
        assert len(results(doc)) == native["results"]
        plain = sum(1 for m in messages if m["role"] == "user" for b in m["content"]
                    if b["type"] == "text" and not HUMAN.search(b["text"]))
        assert len(user_steps(doc)) == native["human"] + plain
        usage = manifest.get("metadata", {}).get("usage")
        if usage:  # the session's own total equals the sum of its messages'
            assert doc["final_metrics"]["total_prompt_tokens"] == usage["inputTokens"]
            assert doc["final_metrics"]["total_completion_tokens"] == usage["outputTokens"]
            assert doc["final_metrics"]["total_cached_tokens"] == usage["cacheReadTokens"]
    live = cline.translate(sessions["1795985126635_8nhuf"], env)
    assert [s["message"][:27] for s in user_steps(live)] == ["SCENARIO cline-1 in /tmp/ag", "SCENARIO cline-1b in /tmp/a"]
    assert live["agent"]["version"] == "3.0.65"
    assert live["steps"][0]["extra"] == {"kind": "system_prompt"}


def test_scoping(store):
    env, _, _ = store
    found = catalog.discover(env, ["cline"], use_cache=False)
    scoped = catalog.Scope("/tmp/agents/proj-cline").filter(found.sessions)
    assert sorted(s.native_id for s in scoped) == ["1795985126635_8nhuf", "1795985141127_mhw0t"]
    other = catalog.Scope("/tmp/agents/proj-cline-other").filter(found.sessions)
    assert [s.native_id for s in other] == ["1795985143701_tgnia"]


def test_truncated_files_keep_what_could_be_read(store):
    env, tasks, sessions = store
    path = os.path.join(tasks["1777073100000"], cline_tasks.API_HISTORY)
    with open(path, "rb") as handle:
        data = handle.read()
    with open(path, "wb") as handle:
        handle.write(data[: len(data) // 2])
    doc = cline.translate(sessions["1777073100000"], env)
    assert_valid(doc)
    assert any("truncated" in w and "complete entries were read" in w for w in doc["extra"]["warnings"])
    assert len(doc["steps"]) > 100
    root = os.path.join(env["HOME"], ".cline", "data", "sessions", "1795985141127_mhw0t")
    with open(os.path.join(root, "1795985141127_mhw0t.messages.json"), "r+b") as handle:
        handle.truncate(3000)
    doc = cline.translate(sessions["1795985141127_mhw0t"], env)
    assert_valid(doc)
    assert doc["extra"]["warnings"]
    with open(os.path.join(root, "1795985141127_mhw0t.json"), "wb") as handle:
        handle.write(b"{broken")
    with pytest.raises(ValueError):
        cline.scan(os.path.join(root, "1795985141127_mhw0t.json"), env)
    assert_valid(cline.translate(sessions["1795985141127_mhw0t"], env))


def test_reading_leaves_the_store_unchanged(store):
    env, _, sessions = store
    before = tree_digest(env["HOME"])
    for session in sessions.values():
        cline.translate(session, env)
    assert tree_digest(env["HOME"]) == before


def test_golden(store):
    env, _, sessions = store
    doc = cline.translate(sessions["1767261600000"], env)
    assert_golden(doc, "cline", "both-files-task")
