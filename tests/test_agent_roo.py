"""Roo Code: the deja-vu sample task, and a parent task with a sub-task built here.

Roo writes `history_item.json` in each task directory (`workspace`, `parentTaskId`, `childIds`:
kenn-io/agentsview `internal/parser/roocode.go` `rooCodeHistoryItem`); a sub-task is created by
the parent's `new_task` tool call. The built tasks use those fields and the API-history shapes
of the Cline samples. Golden file: `tests/golden/roo/` (regenerate with `UPDATE_GOLDEN=1`).
"""

import json
import os
import shutil

from agents import cline_tasks, roo
from atif.serialize import loads
from helpers import SAMPLES, assert_golden, assert_valid, base_env, scan_all

STORAGE = os.path.join(".config", "Code", "User", "globalStorage", "rooveterinaryinc.roo-cline")
SAMPLE_TASK = os.path.join(SAMPLES, "cline", "deja-vu", "roo", "tasks", "1767225700000")

PARENT, CHILD = "1767300000000", "1767300050000"
TASKS = {
    PARENT: ({"id": PARENT, "ts": 1767300000000, "task": "split the module", "workspace": "/work/proj-roo",
              "childIds": [CHILD], "tokensIn": 30, "tokensOut": 20, "totalCost": 0.01},
             [{"role": "user", "content": [{"type": "text", "text": "<task>\nsplit the module\n</task>"}]},
              {"role": "assistant", "content": [
                  {"type": "text", "text": "I'll hand the tests to a sub-task."},
                  {"type": "tool_use", "id": "call_nt", "name": "new_task",
                   "input": {"mode": "code", "message": "move the tests"}}]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_nt",
                                            "content": "Subtask completed: tests moved"}]},
              {"role": "assistant", "content": [{"type": "text", "text": "Module split."}]}]),
    CHILD: ({"id": CHILD, "ts": 1767300050000, "task": "move the tests", "workspace": "/work/proj-roo",
             "parentTaskId": PARENT, "rootTaskId": PARENT},
            [{"role": "user", "content": [{"type": "text", "text": "<task>\nmove the tests\n</task>"}]},
             {"role": "assistant", "content": [{"type": "text", "text": "Tests moved."}]}]),
}


def install(home):
    tasks = os.path.join(home, STORAGE, "tasks")
    shutil.copytree(SAMPLE_TASK, os.path.join(tasks, os.path.basename(SAMPLE_TASK)))
    for task_id, (item, history) in TASKS.items():
        os.makedirs(os.path.join(tasks, task_id))
        for name, value in ((cline_tasks.HISTORY_ITEM, item), (cline_tasks.API_HISTORY, history)):
            with open(os.path.join(tasks, task_id, name), "w") as handle:
                json.dump(value, handle)
    return tasks


def sessions_of(env):
    return {s.native_id: s for s in scan_all(roo, env)}


def test_tasks_and_subtasks(tmp_path):
    env = base_env(tmp_path)
    tasks = install(env["HOME"])
    sessions = sessions_of(env)
    assert sorted(sessions) == ["1767225700000", PARENT]  # the sub-task is embedded, not listed
    for session in sessions.values():
        item = TASKS.get(session.native_id, (None,))[0] or loads(
            open(os.path.join(SAMPLE_TASK, cline_tasks.HISTORY_ITEM), "rb").read())
        assert (session.cwd, session.title) == (item["workspace"], item["task"])
        assert_valid(roo.translate(session, env))
    doc = roo.translate(sessions[PARENT], env)
    (sub,) = doc["subagent_trajectories"]
    assert sub["session_id"] == CHILD
    assert [s["message"] for s in sub["steps"]] == ["move the tests", "Tests moved."]
    result = doc["steps"][1]["observation"]["results"][0]
    assert result["subagent_trajectory_ref"] == [{"trajectory_id": f"task-{CHILD}", "session_id": CHILD}]
    assert doc["agent"]["name"] == "roo-code"
    parent_item = TASKS[PARENT][0]
    assert doc["final_metrics"]["total_prompt_tokens"] == parent_item["tokensIn"]
    assert doc["final_metrics"]["total_cost_usd"] == parent_item["totalCost"]
    assert os.path.join(tasks, CHILD, cline_tasks.API_HISTORY) in roo.dependencies(os.path.join(tasks, PARENT), env)


def test_an_orphaned_subtask_is_listed(tmp_path):
    env = base_env(tmp_path)
    tasks = install(env["HOME"])
    shutil.rmtree(os.path.join(tasks, PARENT))
    assert CHILD in sessions_of(env)


def test_sample_counts(tmp_path):
    env = base_env(tmp_path)
    install(env["HOME"])
    doc = roo.translate(sessions_of(env)["1767225700000"], env)
    history = loads(open(os.path.join(SAMPLE_TASK, cline_tasks.API_HISTORY), "rb").read())
    assert [s["source"] for s in doc["steps"]] == [m["role"].replace("assistant", "agent") for m in history]


def test_golden(tmp_path):
    env = base_env(tmp_path)
    install(env["HOME"])
    doc = roo.translate(sessions_of(env)[PARENT], env)
    assert_golden(doc, "roo", "task-with-subtask")
