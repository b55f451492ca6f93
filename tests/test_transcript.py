"""`trajectoriz show ID --markdown [--steps A-B] [--subagent K]`: every step of the document with
its source, message, reasoning, tool calls and results, long ones cut with their length stated;
slices that follow one another to the end; the JSON forms of the same selections."""

import json
import re

import pytest

from rendering import transcript
from helpers import run_main
from stores import build_home


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_home(tmp_path_factory.mktemp("transcript"))


def show(store, *args):
    return run_main(store[0], ["show", *args])


def session_id(store, query: str) -> str:
    result = run_main(store[0], ["search", "--json", query])
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    return record["id"]


def document(store, ident: str) -> dict:
    return json.loads(show(store, ident).stdout)


def headings(markdown: str) -> list[int]:
    return [int(n) for n in re.findall(r"^## Step (\d+) · ", markdown, re.M)]


def test_every_step_with_its_messages_reasoning_calls_and_results(store):
    ident = session_id(store, "scenario claude-1")
    doc = document(store, ident)
    result = show(store, ident, "--markdown")
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert text.startswith(f"# Session `{ident}` — claude\n")
    assert f"- Steps: {len(doc['steps'])}; step N is `.steps[N-1]` in the document\n" in text
    assert headings(text) == [s["step_id"] for s in doc["steps"]]
    for step in doc["steps"]:
        assert f"## Step {step['step_id']} · {step['source']}" in text
        assert step.get("message", "") in text
        for line in (step.get("reasoning_content") or "").splitlines():
            assert f"> {line}" in text
        for call in step.get("tool_calls", []):
            assert f"**Tool call** `{call['function_name']}` (`{call['tool_call_id']}`)" in text
            for value in call["arguments"].values():
                assert json.dumps(value) in text
        for observed in step.get("observation", {}).get("results", []):
            assert f"**Result** of `{observed['source_call_id']}`" in text
            assert f"```\n{observed['content']}\n```" in text
    assert "_Steps" not in text  # the whole session: no "next slice" line


def test_slices_follow_one_another_to_the_end(store):
    ident = session_id(store, "scenario claude-1")
    total = len(document(store, ident)["steps"])
    seen, command = [], ["--steps", "1-3"]
    while command:
        text = show(store, ident, "--markdown", *command).stdout.decode()
        part = headings(text)
        assert len(part) <= 3 and part == list(range(part[0], part[-1] + 1))
        assert f"- Steps: {total} (showing {part[0]}–{part[-1]}); step N is `.steps[N-1]`" in text
        seen += part
        following = re.search(r"Next: `trajectoriz show (\S+) --markdown --steps (\S+)`_$", text.rstrip())
        command = None
        if following:
            assert following[1] == ident
            command = ["--steps", following[2]]
    assert seen == list(range(1, total + 1)) and total > 3


def test_open_ended_and_single_step_ranges(store):
    ident = session_id(store, "scenario claude-1")
    total = len(document(store, ident)["steps"])
    assert headings(show(store, ident, "--markdown", "--steps", f"{total - 1}-").stdout.decode()) == [total - 1, total]
    assert headings(show(store, ident, "--markdown", "--steps", "2-999").stdout.decode()) == list(range(2, total + 1))
    assert headings(show(store, ident, "--markdown", "--steps", "3").stdout.decode()) == [3]
    assert headings(show(store, ident, "--markdown", "--step", "3").stdout.decode()) == [3]


def test_json_selections_are_the_documents_own_steps(store):
    ident = session_id(store, "repository")
    doc = document(store, ident)
    assert json.loads(show(store, ident, "--steps", "2-3").stdout) == doc["steps"][1:3]
    sub = doc["subagent_trajectories"][0]
    assert json.loads(show(store, ident, "--subagent", "1").stdout) == sub
    assert json.loads(show(store, ident, "--subagent", sub["trajectory_id"], "--steps", "2-").stdout) == sub["steps"][1:]


def test_long_results_are_cut_with_their_length(store):
    ident = session_id(store, "repository")
    doc = document(store, ident)
    text = show(store, ident, "--markdown", "--max-chars", "40").stdout.decode()
    longest = max((r["content"] for s in doc["steps"] for r in s.get("observation", {}).get("results", [])
                   if isinstance(r.get("content"), str)), key=len)
    assert len(longest) > 40
    assert f"```\n{longest[:40]}\n```\n_(cut: the first 40 of {len(longest):,} characters)_" in text
    assert longest not in text
    assert longest in show(store, ident, "--markdown", "--max-chars", "0").stdout.decode()


def test_sub_agents_are_pointed_to_and_rendered_on_request(store):
    ident = session_id(store, "repository")
    doc = document(store, ident)
    sub = doc["subagent_trajectories"][0]
    main = show(store, ident, "--markdown").stdout.decode()
    assert (f"→ sub-agent `{sub['trajectory_id']}`: `trajectoriz show {ident} --markdown "
            f"--subagent 1`") in main
    text = show(store, ident, "--markdown", "--subagent", "1").stdout.decode()
    assert text.startswith(f"# Sub-agent 1 (`{sub['trajectory_id']}`) of session `{ident}`")
    assert headings(text) == [s["step_id"] for s in sub["steps"]]
    assert sub["steps"][0]["message"] in text


def test_a_code_fence_is_never_closed_by_the_text_it_holds():
    lines = transcript.fenced("before\n```\ninside\n````\nafter", 0)
    assert lines[0] == "`````" and lines[2] == "`````"


@pytest.mark.parametrize("args,message", [
    (["--steps", "99"], "has steps 1.."),
    (["--steps", "3-2"], "the range ends before it starts"),
    (["--steps", "two"], "expected A-B, A- or A"),
    (["--subagent", "9"], "--subagent 9: no such sub-agent"),
    (["--step", "2", "--steps", "2-3"], "not allowed with argument"),
])
def test_mistakes_exit_2(store, args, message):
    ident = session_id(store, "scenario claude-1")
    result = show(store, ident, "--markdown", *args)
    assert result.returncode == 2 and message in result.stderr.decode()


def test_system_text_is_fenced_and_cut_like_outputs():
    step = {"step_id": 1, "source": "system", "message": "# not a heading\n" + "x" * 60,
            "extra": {"kind": "reminder"}}
    lines = transcript.render_step(step, "cl-00000000", {}, 20)
    assert lines[:5] == ["## Step 1 · system (reminder)", "", "```", "# not a heading\nxxxx", "```"]
    assert lines[5] == "_(cut: the first 20 of 76 characters)_"
