"""Transcripts (rendering/transcript.py): `<date>_<agent>_<id>.transcript.md` beside each
document and card in `export` (the bytes `memory_transcript(doc)` makes, which the mount serves
too), and `trajectoriz show ID --markdown [--steps A-B] [--subagent K]`, the same bytes or a part
of them.

Golden files: the transcript of every golden document (tests/golden/<agent>/<name>.atif.json,
each agent's samples, sub-agents included) is tests/golden/<agent>/<name>.transcript.md;
`UPDATE_GOLDEN=1` rewrites them (read the diff before committing)."""

import copy
import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from atif.serialize import loads
from rendering import toolkinds, transcript
from helpers import GOLDEN, SAMPLES, base_env, cli, needs, run_main
from stores import build_home

VOLCANO = os.path.join(SAMPLES, "claude", "dotfile-volcano")
TITLES = os.path.join(SAMPLES, "claude", "dotfile-titles")
HEADER = re.compile(r"^## (\d+(?:\.\d+)*:)?(\d+) · ", re.M)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_home(tmp_path_factory.mktemp("transcript"))


@pytest.fixture(scope="module")
def exported(store, tmp_path_factory):
    out = tmp_path_factory.mktemp("exported") / "memory"
    assert run_main(store[0], ["export", "--all", "--out", str(out)]).returncode == 0
    return out


def show(store, *args):
    return run_main(store[0], ["show", *args])


def session_id(store, query: str) -> str:
    result = run_main(store[0], ["search", "--json", query])
    (record,) = [json.loads(line) for line in result.stdout.splitlines()]
    return record["id"]


def document(store, ident: str) -> dict:
    return json.loads(show(store, ident).stdout)


def headings(markdown: str, path: str = "") -> list[int]:
    return [int(n) for sub, n in HEADER.findall(markdown) if (sub or "") == (f"{path}:" if path else "")]


# golden files: every agent's samples --------------------------------------------------------------
GOLDEN_DOCUMENTS = sorted(glob.glob(os.path.join(GOLDEN, "*", "*.atif.json")))


def served(path: str) -> dict:
    """A golden document as documents.py serves it: its tool calls annotated with their kind,
    command and paths (the golden file is the translator's own output)."""
    with open(path, "rb") as handle:
        doc = loads(handle.read())
    agent = os.path.basename(os.path.dirname(path))
    toolkinds.annotate(doc, agent, (doc.get("extra") or {}).get("cwd"))
    return doc


@pytest.mark.parametrize("path", GOLDEN_DOCUMENTS, ids=lambda p: os.path.relpath(p, GOLDEN)[: -len(".atif.json")])
def test_golden_transcripts(path):
    data = transcript.memory_transcript(served(path))
    golden = path[: -len(".atif.json")] + transcript.TRANSCRIPT_SUFFIX
    if os.environ.get("UPDATE_GOLDEN") == "1":
        with open(golden, "wb") as handle:
            handle.write(data)
    assert os.path.exists(golden), f"{golden} is missing: write it with UPDATE_GOLDEN=1, then read it through"
    with open(golden, "rb") as handle:
        assert data == handle.read(), f"{golden} differs (UPDATE_GOLDEN=1 rewrites it)"
    assert all(len(line) <= transcript.LINE_CAP for line in data.decode().split("\n"))


def test_the_goldens_cover_every_agent_and_sub_agents():
    agents = {os.path.basename(os.path.dirname(p)) for p in GOLDEN_DOCUMENTS}
    assert agents >= set(toolkinds.TABLES) - {"continue"} | {"continue"} and len(agents) >= 23
    with_subagents = [p for p in GOLDEN_DOCUMENTS if served(p).get("subagent_trajectories")]
    assert len(with_subagents) >= 2  # claude/subagents, roo/task-with-subtask
    for path in with_subagents:
        doc = served(path)
        text = transcript.memory_transcript(doc).decode()
        for n, sub in enumerate(doc["subagent_trajectories"], 1):
            assert f"\n# Sub-agent {n}: `{sub['trajectory_id']}`" in text
            assert headings(text, str(n)) == [s["step_id"] for s in sub["steps"]]


def test_every_step_has_one_header_with_its_number_source_and_time():
    doc = served(os.path.join(GOLDEN, "claude", "subagents.atif.json"))
    text, where = transcript.rendered(doc)
    lines = text.split("\n")
    assert headings(text) == [s["step_id"] for s in doc["steps"]]
    for step in doc["steps"]:
        line = lines[where[str(step["step_id"])] - 1]
        assert line.startswith(f"## {step['step_id']} · {step['source']}")
        assert line.endswith(transcript.when(step["timestamp"])) and re.search(r" · \d{4}-\d\d-\d\d \d\d:\d\d$", line)
    assert lines[where["1:1"] - 1].startswith("## 1:1 · sub-agent 1 · ")


# what the transcript says of a real session -------------------------------------------------------
def claude_export(tmp_path, files) -> tuple[dict, str]:
    env = base_env(tmp_path)
    folder = os.path.join(env["HOME"], ".claude", "projects", "-work")
    os.makedirs(folder)
    for path in files:
        (shutil.copytree if os.path.isdir(path) else shutil.copy)(path, os.path.join(folder, os.path.basename(path)))
    out = str(tmp_path / "memory")
    assert cli("export", "--all", "--out", out, env=env).returncode == 0
    return env, out


def transcripts(out: str) -> dict:
    return {name: open(os.path.join(out, name), encoding="utf-8").read()
            for name in sorted(os.listdir(out)) if name.endswith(transcript.TRANSCRIPT_SUFFIX)}


def test_a_real_session_messages_whole_calls_on_a_line_outputs_cut_with_their_jq_path(tmp_path):
    env, out = claude_export(tmp_path, [os.path.join(VOLCANO, "7ef4b236-d946-48a6-a856-e45b02af7be7.jsonl"),
                                        os.path.join(VOLCANO, "7ef4b236-d946-48a6-a856-e45b02af7be7")])
    (name, text), = transcripts(out).items()
    doc = json.loads(open(os.path.join(out, name.replace(".transcript.md", ".atif.json")), "rb").read())
    for step in doc["steps"]:
        message = transcript.content_text(step.get("message")).strip("\n")
        if step["source"] in ("user", "agent") and message.strip():  # whole, wrapped where a line is long
            assert "".join(message.split()) in "".join(text.split()), step["step_id"]
    # step 13's WebFetch: 247 lines out, 3 shown, the rest named with the jq path that reads it
    assert ("- WebFetch 'https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/'\n"
            "    # Dynamic Resource Allocation (DRA) - Technical Details\n") in text
    assert "    … 244 lines left out: .steps[12].observation.results[0].content\n" in text
    whole = doc["steps"][12]["observation"]["results"][0]["content"]
    assert len(whole.splitlines()) == 3 + 244 + 1
    assert "- task: Explore DRA-related code in repo (Explore)\n" in text
    assert "→ sub-agent `agent-a957850183dbc96f4`: `# Sub-agent 1` below, steps `1:N`" in text
    assert "\n# Sub-agent 1: `agent-a957850183dbc96f4`" in text and "\n## 1:1 · sub-agent 1 · user · " in text
    assert "\n- read pkg/scheduler/" in text.split("\n# Sub-agent 1:")[1]  # relative to the session's directory
    assert "- read /Users/xuwentao/Projects/github/volcano/" not in text
    assert len(text) < len(json.dumps(doc)) / 3


def test_refused_edits_and_failures_are_marked(tmp_path):
    """samples/claude/dotfile-titles: the user refused edits ("The user doesn't want to proceed
    with this tool use ... was NOT written"), and `uv sync` failed with exit 127."""
    env, out = claude_export(tmp_path, [os.path.join(TITLES, n) for n in os.listdir(TITLES)])
    found = transcripts(out)
    every = "\n".join(found.values())
    refused = [line for line in every.split("\n") if line.endswith("→ ✗ refused")]
    assert refused and all(line.startswith("- ") for line in refused)
    assert "    The user doesn't want to proceed with this tool use." in every
    assert "- $ uv sync --all-extras 2>&1 → ✗ exit 127\n    (eval):1: command not found: uv\n" in every


def test_the_users_answers_to_the_agents_questions_are_the_users_words():
    """Claude's AskUserQuestion result, as Claude Code words it; Codex's request_user_input
    result, its RequestUserInputResponse as JSON."""
    claude = {"step_id": 4, "source": "agent", "message": "Two ways to go.", "tool_calls": [
        {"tool_call_id": "toolu_1", "function_name": "AskUserQuestion", "extra": {"kind": "other"},
         "arguments": {"questions": [{"question": "Which store should back the cache?", "header": "Store",
                                      "options": [{"label": "SQLite"}, {"label": "Redis"}], "multiSelect": False}]}}],
        "observation": {"results": [{"source_call_id": "toolu_1", "content":
                                     'User has answered your questions: "Which store should back the cache?"="SQLite". '
                                     "You can now continue with the user's answers in mind."}]}}
    codex = {"step_id": 7, "source": "agent", "tool_calls": [
        {"tool_call_id": "call_9", "function_name": "request_user_input", "extra": {"kind": "other"},
         "arguments": {"questions": [{"id": "scope", "header": "Scope", "question": "Stop only the app, or the CLI too?",
                                      "options": [{"label": "App only", "description": "x"}]}]}}],
        "observation": {"results": [{"source_call_id": "call_9",
                                     "content": '{"answers":{"scope":{"answers":["App only","user_note: keep the CLI"]}}}'}]}}
    text = transcript.memory_transcript({"steps": [claude, codex]}).decode()
    assert ("- ask the user: Which store should back the cache?\n"
            '    user answered: "Which store should back the cache?"="SQLite".\n') in text
    assert ("- ask the user: Stop only the app, or the CLI too?\n"
            "    user answered: Stop only the app, or the CLI too? → App only / user_note: keep the CLI\n") in text


def test_lines_are_cut_or_wrapped_at_the_cap_and_controls_never_pass():
    long_output = "x" * 5000
    step = {"step_id": 1, "source": "user", "message": "word " * 300 + "\u001b]0;owned\u0007"}
    call = {"step_id": 2, "source": "agent", "tool_calls": [
        {"tool_call_id": "c", "function_name": "Bash", "extra": {"kind": "shell", "command": "cat big"},
         "arguments": {"command": "cat big"}}],
        "observation": {"results": [{"source_call_id": "c", "content": long_output}]}}
    text = transcript.memory_transcript({"steps": [step, call]}).decode()
    lines = text.split("\n")
    assert max(len(line) for line in lines) <= transcript.LINE_CAP
    assert "".join(("word " * 300).split()) in "".join(text.split())  # the message whole, wrapped
    cut = next(line for line in lines if line.startswith("    xxx"))
    assert cut.endswith(f"… [+{5000 - (len(cut) - len(f'… [+0,000 chars]') - 4):,} chars]")
    assert "\u001b" not in text and "\u0007" not in text


# the same bytes everywhere ------------------------------------------------------------------------
def test_export_writes_each_transcript_beside_its_document_and_card(exported):
    names = os.listdir(exported)
    documents = sorted(n for n in names if n.endswith(".atif.json"))
    assert len(documents) > 40
    for name in documents:
        stem = name[: -len(".atif.json")]
        assert {stem + ".card.md", stem + ".transcript.md"} <= set(names)
        assert os.readlink(exported / name) == os.path.join(".atif", name)
        with open(exported / name, "rb") as handle:
            doc = loads(handle.read())
        assert (exported / (stem + ".transcript.md")).read_bytes() == transcript.memory_transcript(doc)


def test_show_markdown_prints_the_exported_bytes(store, exported):
    for query in ("scenario claude-1", "repository"):
        ident = session_id(store, query)
        (name,) = [n for n in os.listdir(exported) if n.endswith(f"_{ident}.transcript.md")]
        result = show(store, ident, "--markdown")
        assert result.returncode == 0 and result.stdout == (exported / name).read_bytes()


@needs("rg")
def test_rg_and_grep_over_an_export_return_no_line_over_the_cap(tmp_path):
    """What an agent's first search of a real project returns: with the documents in `.atif/`
    behind their links, `rg -n` (hidden folders skipped, no symlink followed) returns lines of
    cards and transcripts, each at most the cap; `grep -rn` reads `.atif/` too (its lines are
    the documents', multi-KB), unless told `--exclude-dir=.atif`."""
    _, out = claude_export(tmp_path, [os.path.join(TITLES, n) for n in os.listdir(TITLES)]
                           + [os.path.join(VOLCANO, "7ef4b236-d946-48a6-a856-e45b02af7be7.jsonl"),
                              os.path.join(VOLCANO, "7ef4b236-d946-48a6-a856-e45b02af7be7")])
    for word in ("the", "error", "DRA", "uv"):
        found = subprocess.run(["rg", "-n", word, "."], cwd=out, capture_output=True, text=True).stdout
        grepped = subprocess.run(["grep", "-rn", "--exclude-dir=.atif", word, "."], cwd=out,
                                 capture_output=True, text=True).stdout
        for output in (found, grepped):
            hits = [line.split(":", 2) for line in output.splitlines()]
            assert hits and all(name.endswith(".md") for name, _, _ in hits), word
            assert max(len(text) for _, _, text in hits) <= transcript.LINE_CAP, word
        everything = subprocess.run(["grep", "-rn", word, "."], cwd=out, capture_output=True, text=True).stdout
        long_ones = [line for line in everything.splitlines() if len(line.split(":", 2)[2]) > transcript.LINE_CAP]
        assert all(line.startswith("./.atif/") for line in long_ones)


# show --markdown: parts ---------------------------------------------------------------------------
def test_slices_follow_one_another_to_the_end(store):
    ident = session_id(store, "scenario claude-1")
    total = len(document(store, ident)["steps"])
    whole = show(store, ident, "--markdown").stdout.decode()
    seen, command = [], ["--steps", "1-3"]
    while command:
        text = show(store, ident, "--markdown", *command).stdout.decode()
        part = headings(text)
        assert len(part) <= 3 and part == list(range(part[0], part[-1] + 1))
        body = text[text.index("\n## "):].split("\n_Steps")[0].rstrip("\n")
        assert body in whole  # the same lines as the transcript's
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


def test_max_chars_0_shows_outputs_whole(store):
    ident = session_id(store, "repository")
    doc = document(store, ident)
    longest = max((r["content"] for s in doc["steps"] for r in s.get("observation", {}).get("results", [])
                   if isinstance(r.get("content"), str)), key=lambda t: len(t.splitlines()))
    cut = show(store, ident, "--markdown").stdout.decode()
    assert re.search(r"… \d+ lines left out: \.steps\[\d+\]\.observation\.results\[0\]\.content", cut)
    whole = show(store, ident, "--markdown", "--max-chars", "0").stdout.decode()
    assert "\n".join("    " + line for line in longest.splitlines()) in whole and "lines left out" not in whole


def test_sub_agents_are_rendered_on_request(store):
    ident = session_id(store, "repository")
    doc = document(store, ident)
    sub = doc["subagent_trajectories"][0]
    text = show(store, ident, "--markdown", "--subagent", "1").stdout.decode()
    assert f"\n# Sub-agent 1: `{sub['trajectory_id']}`" in text
    assert headings(text, "1") == [s["step_id"] for s in sub["steps"]] and headings(text) == []
    assert sub["steps"][0]["message"] in text


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


def test_system_text_is_cut_like_outputs():
    step = {"step_id": 1, "source": "system", "message": "# not a heading\nsecond\n" + "x\n" * 60,
            "extra": {"kind": "reminder"}}
    text = transcript.memory_transcript({"steps": [step]}).decode()
    assert "\n## 1 · system (reminder)\n# not a heading\nsecond\n… 60 lines left out: .steps[0].message\n\n" in text
    assert copy.deepcopy(step) == step


def test_the_transcript_is_redacted_as_the_document_is(tmp_path):
    """A GitHub token in the first message: the export's transcript, like its document, holds
    its marker, never the token (the transcript is made of the redacted document only)."""
    from test_private import TOKEN, secret_store

    env, project = secret_store(tmp_path)
    out = tmp_path / "memory"
    assert cli("export", "--out", str(out), env=env, cwd=project).returncode == 0
    (name,) = [n for n in os.listdir(out) if n.endswith(".transcript.md")]
    text = (out / name).read_text()
    assert TOKEN not in text and "«REDACTED:" in text
    assert TOKEN not in run_main(env, ["show", name.split("_")[-1].split(".")[0], "--markdown", "--max-chars", "0"],
                                 cwd=project).stdout.decode()


@pytest.mark.parametrize("mounted", [True, False])
def test_the_guide_leads_with_the_cheapest_route(mounted):
    """memory/README.md: INDEX.md, then a card, then a search of the transcripts, then a step
    range of one, the document last; short, and naming the program as it is run here."""
    from core import invocation
    from mount import guide

    text = guide.readme("/src/proj", ["2026-06-10_claude_cl-eb1c6529.atif.json"], mounted=mounted).decode()
    route = text.split("## The cheapest route to an answer")[1].split("\n## ")[0]
    steps = [route.index(mark) for mark in ("`INDEX.md`", ".card.md`", ".transcript.md`", "sed -n", ".atif.json`")]
    assert steps == sorted(steps)
    assert ("grep -rn 'words' ." if mounted else "rg -n 'words'") in route
    assert f"`{invocation.shown_command()} show <id> --markdown --steps 10-20`" in route
    assert len(text.split("\n## Tool names and their kind")[0]) <= 4000


def test_any_field_of_another_type_never_breaks_a_transcript():
    """A pulled document is untrusted beyond its schema: every distinct field of every golden
    document (annotated), given values of other types, still renders, within the cap."""
    import random

    from mutations import alternatives, fields, set_at

    rng = random.Random(36)
    tried = 0
    for path in GOLDEN_DOCUMENTS:
        doc = served(path)
        seen = set()
        for where, name in fields(doc):
            if name in seen:
                continue
            seen.add(name)
            for other in alternatives(get(doc, where), rng, 2):
                text = transcript.memory_transcript(set_at(doc, where, other)).decode()
                assert max(len(line) for line in text.split("\n")) <= transcript.LINE_CAP, (path, name)
                tried += 1
    assert tried > 2000


def get(value, path):
    for key in path:
        value = value[key]
    return value


def test_an_export_never_writes_documents_through_a_planted_link(store, tmp_path):
    """The documents go into the export's `.atif/`: one that is a symlink to another folder
    would have them written there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "memory"
    out.mkdir()
    os.symlink(elsewhere, out / ".atif")
    result = run_main(store[0], ["export", "--all", "--out", str(out)])
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and b".atif" in result.stderr
    assert list(elsewhere.iterdir()) == []
