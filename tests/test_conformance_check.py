"""The conformance checker (conformance/check.py): a faithful document passes, each kind of
damage a format change causes is flagged with a reason that names it; and end to end, the live
Claude Code store passes through the real CLI while a sabotaged translator fails."""

import copy
import json
import os
import re
import sys

import pytest

from atif.build import metrics, TrajectoryBuilder
from conformance import check, sabotage
from conformance.server import Message, Request, Script, prompt_text
from helpers import LIVE, ROOT, base_env, scenario_runs
from stores import copy_tree

DIR = "/tmp/proj"
SID = "t-1"
TOOLS = {"Bash": {"type": "object", "properties": {"command": {"type": "string"}}},
         "Read": {"type": "object", "properties": {"file_path": {"type": "string"}}}}
OUTPUTS = {"write": "README.md\nnote.txt", "read": f"hello-{SID}", "fail": f"ls: cannot access 'missing-{SID}'",
           "long": "\n".join(str(n) for n in range(1, 3001))}
SERVED = {"prompt": 10 ** 6, "completion": 10 ** 6}


def served_plan(tools: dict = TOOLS) -> dict:
    """The plan the server records for one scenario played to its end."""
    script = Script()
    messages = [Message("user", prompt_text(SID, DIR))]
    while True:
        reply = script.reply(Request("anthropic", "m", messages, tools, False, True))
        if not reply.calls:
            return dict(script.plan[SID], prompt=prompt_text(SID, DIR))
        messages += [Message("assistant", reply.text, len(reply.calls)), Message("tool")]


def faithful_document(plan: dict) -> dict:
    """What a correct translator makes of a session that followed `plan` (the agent's own call
    ids, its own extra argument fields)."""
    builder = TrajectoryBuilder("test-agent", session_id="s")
    builder.user(plan["prompt"])
    for index in sorted(plan["steps"]):
        served = plan["steps"][index]
        step = builder.agent(served["text"], reasoning=served["reasoning"], llm_call_count=1,
                             metrics=metrics(prompt=1000, completion=20, cached=100))
        for n, call in enumerate(served["calls"]):
            cid = builder.tool_call(step, f"own-{index}-{n}", call["name"], dict(call["arguments"], timeout=5))
            output = OUTPUTS.get(call["kind"], call["expect"])
            builder.tool_result(cid, output, extra={"exit_code": 2} if call["kind"] == "fail" else None)
    return builder.build()


@pytest.fixture(scope="module")
def plan():
    return served_plan()


def problems_of(doc, plan):
    verdict = check.check_document(doc, {SID: plan}, SERVED)
    return verdict.problems + [problem for problem, _content in verdict.thin_results]


def test_a_faithful_document_passes(plan):
    assert [s["kind"] for s in plan["steps"].values()] == ["write", "read", "fail", "long", "parallel", "final"]
    assert check.check_document(faithful_document(plan), {SID: plan}, SERVED) == check.Verdict()


def test_prefixed_tool_names_are_served_and_found_without_their_prefix():
    """oh-my-pi offers `_bash` and `_read` and stores `bash` and `read`; Continue's read tool
    takes `filepath`."""
    plan = served_plan({"_bash": TOOLS["Bash"], "_read": {"type": "object", "properties": {"filepath": {}}}})
    calls = [call for step in plan["steps"].values() for call in step["calls"]]
    assert {call["name"] for call in calls} == {"_bash", "_read"}
    assert [call["arguments"] for call in calls if call["kind"] == "read"] == [{"filepath": f"{DIR}/note.txt"}]
    doc = faithful_document(plan)
    stored = [call for step in doc["steps"] for call in step.get("tool_calls") or []]
    for call in stored:
        call["function_name"] = call["function_name"].lstrip("_")
    assert problems_of(doc, plan) == []
    stored[0]["function_name"] = "shell"
    assert problems_of(doc, plan) == [f"{SID}: write call _bash{json.dumps(calls[0]['arguments'])} is missing"]


def damaged(plan, damage):
    doc = faithful_document(plan)
    damage(doc)
    return problems_of(doc, plan)


def results(doc):
    return [r for s in doc["steps"] for r in (s.get("observation") or {}).get("results", [])]


def test_each_damage_is_flagged_with_its_reason(plan):
    def unmark_failure(doc):
        for result in results(doc):
            result.pop("extra", None)

    def drop_read_result(doc):
        for step in doc["steps"]:
            if any(c["function_name"] == "Read" for c in step.get("tool_calls", [])):
                del step["observation"]

    def change_argument(doc):
        doc["steps"][1]["tool_calls"][0]["arguments"]["command"] = "echo something else"

    def mark_success_failed(doc):
        results(doc)[0]["extra"] = {"is_error": True}

    def truncate_long(doc):
        for result in results(doc):
            if result["content"].startswith("1\n2\n"):
                result["content"] = "1\n2\n"

    def drop_prompt(doc):
        doc["steps"][0]["message"] = "something else"

    def lose_completions(doc):
        doc["final_metrics"]["total_completion_tokens"] = 20

    def warn(doc):
        doc["extra"] = {"warnings": ["unknown record type 'x'"]}

    cases = [(unmark_failure, "fail call Bash: the failing command's result is not marked failed"),
             (drop_read_result, "read call Read has no result"),
             (change_argument, 'write call Bash{"command": "echo hello-t-1 > note.txt && ls"} is missing'),
             (mark_success_failed, "write call Bash: a successful command's result is marked failed"),
             (truncate_long, "long call Bash: the long output kept only 4 characters"),
             (drop_prompt, "t-1: the prompt is not a user step"),
             (lose_completions, "completion tokens 20 < the 120 served"),
             (warn, "translator warning: unknown record type 'x'")]
    for damage, reason in cases:
        found = damaged(plan, damage)
        assert any(reason in problem for problem in found), (damage.__name__, found)


@pytest.mark.parametrize("kind, reason", [
    ("errors", "the failing command's result is not marked failed"),
    ("arguments", "write call Bash"),
    ("final", "the final answer (SCENARIO-DONE t-1) is not an agent message"),
    ("tokens", "exceed what the server served")])
def test_the_sabotage_kinds_are_each_caught(plan, kind, reason):
    served = {"prompt": 6000, "completion": 120}   # exactly what the six turns were served
    doc = faithful_document(plan)
    assert check.check_document(doc, {SID: plan}, served) == check.Verdict()
    sabotage.KINDS[kind](doc)
    found = check.check_document(doc, {SID: plan}, served).problems
    assert any(reason in problem for problem in found), found


def test_lost_reasoning_is_reported_apart(plan):
    doc = faithful_document(plan)
    for step in doc["steps"]:
        step.pop("reasoning_content", None)
    verdict = check.check_document(doc, {SID: plan}, SERVED)
    assert verdict.problems == [] and verdict.lost_reasoning == [s["reasoning"] for s in plan["steps"].values()]


def test_losses_are_the_translators_only_when_the_store_has_what_the_document_lacks(tmp_path):
    store = tmp_path / "home" / ".agent"
    store.mkdir(parents=True)
    (store / "session.jsonl").write_text('{"reasoning": "THINK-0", "output": "Output: (empty)\\nExit Code: 0"}\n')
    verdict = check.Verdict(problems=["x"], lost_reasoning=["THINK-0", "THINK-1"],
                            thin_results=[("long call: kept 30 characters", "Output: (empty)\nExit Code: 0"),
                                          ("read call: lacks 'hello'", "something the translator made up")])
    problems, notes = check.judge_losses(str(tmp_path / "home"), verdict, "agent")
    assert problems == ["x", "reasoning 'THINK-0' is in the store but not in the document",
                        "read call: lacks 'hello'"]
    assert notes == ["agent does not store reasoning", "agent itself stored it so: long call: kept 30 characters"]


def test_grouping_wants_each_prompt_once_and_continuations_together():
    runs = [check.RunSpec("a-1", DIR, "s1"), check.RunSpec("a-1b", DIR, "s1", resume=True),
            check.RunSpec("a-2", DIR, "s2")]
    plan = {sid: {} for sid in ("a-1", "a-1b", "a-2")}
    good = {"a-1": [{"id": "x"}], "a-1b": [{"id": "x"}], "a-2": [{"id": "y"}]}
    assert check.check_grouping(runs, good, plan) == []
    split = dict(good, **{"a-1b": [{"id": "z"}]})
    assert check.check_grouping(runs, split, plan) == [
        "a-1b: continued prompt is in session z, not in x with the prompt it continues"]
    assert check.check_grouping(runs, dict(good, **{"a-2": []}), plan) == ["a-2: the prompt is in 0 sessions, expected 1"]


# end to end on a recorded store ----------------------------------------------------------------------------
LIVE_CLAUDE = os.path.join(LIVE, "claude-2.1.332")


def live_scenario(work: str):
    """RunSpecs and the server plan of the recorded Claude Code store, its /tmp/agents paths
    moved under `work`."""
    runs, plan, group = [], {}, None
    for run in scenario_runs(LIVE_CLAUDE):
        sid = re.match(r"SCENARIO (\S+) in", run.prompt).group(1)
        directory = run.cwd.replace("/tmp/agents", work)
        group = group if "continue" in run.name else sid
        runs.append(check.RunSpec(sid, directory, group, "continue" in run.name,
                                  run.prompt.replace("/tmp/agents", work)))
        write = {"command": f"echo hello-{sid} > note.txt && ls", "description": f"Write hello-{sid} into note.txt and list files"}
        steps = [("write", "Bash", write, "note.txt"), ("read", "Read", {"file_path": f"{directory}/note.txt"}, f"hello-{sid}")]
        plan[sid] = {"dir": directory, "steps": {
            index: {"kind": kind, "reasoning": "", "completion": 1,
                    "calls": [{"name": name, "arguments": arguments, "kind": kind, "expect": expect}]}
            for index, (kind, name, arguments, expect) in enumerate(steps)}}
        plan[sid]["steps"][2] = {"kind": "final", "reasoning": "Both steps succeeded; summarise.",
                                 "completion": 1, "calls": []}
    return runs, plan


@pytest.fixture
def live_home(tmp_path):
    work = str(tmp_path / "work")
    env = base_env(tmp_path)
    copy_tree(LIVE_CLAUDE, env["HOME"], [("/tmp/agents/", f"{work}/")])
    for name in ("proj-claude", "proj-claude-other"):
        os.makedirs(os.path.join(work, name))
    return env, work


def test_the_live_claude_store_passes_through_the_cli(live_home):
    env, work = live_home
    runs, plan = live_scenario(work)
    served = [{"prompt": 10 ** 6, "completion": 10 ** 6}]
    result = check.check_agent("claude", env, runs, plan, served, [sys.executable, os.path.join(ROOT, "trajectoriz.py")])
    assert (result.sessions, result.passed, result.failures) == (3, 3, [])


def test_a_sabotaged_translator_fails_the_live_store(live_home):
    env, work = live_home
    runs, plan = live_scenario(work)
    served = [{"prompt": 10 ** 6, "completion": 10 ** 6}]
    command = [sys.executable, os.path.join(ROOT, "conformance", "sabotage.py"), "arguments"]
    result = check.check_agent("claude", env, runs, copy.deepcopy(plan), served, command)
    assert result.sessions == 3 and result.passed == 0
    assert sum("write call Bash" in f and "is missing" in f for f in result.failures) == 4
