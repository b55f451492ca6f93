"""What `search` matches and shows, on the shapes real agents write (issues 41 and 42):
- `--content` leaves out the steps an agent wrote for itself (a Codex rollout's base
  instructions, skills list and environment context, as Codex 0.171.0 records them) unless
  `--system`, and says how many hits it left out;
- a quoted QUERY, or `--phrase`, is a string matched as written (case-insensitive) inside one
  field, in `--content` and in the default search; unquoted words keep their meaning;
- a snippet shows where the words stand (`No such file`, not the `no` inside `Now`).

The Codex session is the live 0.171.0 rollout of tests/fixtures/samples/live, its first command
changed into one that fails as bash fails (`return` outside a function), its second step's
message and command into the ones issue 42 quotes."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from helpers import LIVE, base_env, run_main

ROLLOUT = os.path.join(".codex", "sessions", "2026", "11", "29",
                       "rollout-2026-11-29T20-42-19-01a2290b-5981-76d0-89cc-00876b1ca8fa.jsonl")
BASH_ERROR = "bash: line 1: return: can only `return' from a function or sourced script"
ISSUE_42_MESSAGE = "That failed as expected. Now a command with long output."
MISSING = "cat: missing.txt: No such file or directory"

# (what the real rollout holds, JSON-escaped as written there) -> what the test's copy holds
CHANGES = [
    ("echo hello-codex-1 > note.txt && ls", "return 1"),
    ('"aggregated_output":"README.md\\nnote.txt\\n","exit_code":0',
     f'"aggregated_output":"{BASH_ERROR}\\n","exit_code":1'),
    ("Process exited with code 0\\nOriginal token count: 5\\nOutput:\\nREADME.md\\nnote.txt\\n",
     f"Process exited with code 1\\nOriginal token count: 19\\nOutput:\\n{BASH_ERROR}\\n"),
    ("Now I'll read note.txt back to verify its content.", ISSUE_42_MESSAGE),
    ('"cat note.txt"', '"cat missing.txt; seq 1 500"'),
    ("Output:\\nhello-codex-1\\n", f"Output:\\n{MISSING}\\n1\\n2\\n3\\n"),
]


@pytest.fixture(scope="module")
def codex(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("codex-query")
    env = base_env(root)
    shutil.copytree(os.path.join(LIVE, "codex-0.171.0", ".codex"), os.path.join(env["HOME"], ".codex"))
    path = os.path.join(env["HOME"], ROLLOUT)
    text = open(path, encoding="utf-8").read()
    second = text.index('"type":"task_started"', text.index('"type":"task_started"') + 1)
    first_turn = text[:second]  # the second turn repeats some of it
    for before, after in CHANGES:
        assert before in first_turn, before
        first_turn = first_turn.replace(before, after)
    open(path, "w", encoding="utf-8").write(first_turn + text[second:])
    return env


def hits(env, *args) -> tuple[list[dict], str]:
    result = run_main(env, ["search", "--content", "--json", "--limit", "0", *args])
    assert result.returncode in (0, 1), result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr.decode()


def step(env, hit: dict) -> dict:
    return json.loads(run_main(env, ["show", hit["id"], "--step", str(hit["step"])]).stdout)


# the agent's own steps --------------------------------------------------------------------------------
def test_can_only_finds_the_error_not_the_instructions(codex):
    """Every rollout opens with Codex's base instructions, its skills list and the environment
    context, as steps of source system: `can only` is in the instructions of all three
    sessions, and in one tool output."""
    found, stderr = hits(codex, "can only")
    assert [h["field"] for h in found] == ["output"] and found[0]["snippet"].endswith(f"Output: {BASH_ERROR}")
    assert step(codex, found[0])["source"] == "agent"
    every, _ = hits(codex, "--system", "can only")
    left = [h for h in every if h not in found]
    assert len(left) >= 3 and {step(codex, h)["extra"]["kind"] for h in left} >= {"base_instructions"}
    assert all(step(codex, h)["source"] == "system" for h in left)
    assert stderr.splitlines()[-1] == (f"{len(left)} result(s) in steps the agents wrote for themselves "
                                       "(instructions, injected context) left out: --system searches them too.")
    markdown = run_main(codex, ["search", "--content", "can only"]).stdout.decode().splitlines()
    assert markdown[-1] == (f"1 result(s) in 1 session(s); {len(left)} more in steps the agents wrote for "
                            "themselves (instructions, injected context), left out: --system searches them too.")


def test_a_search_held_only_by_instructions_finds_nothing_and_says_where(codex):
    found, stderr = hits(codex, "AGENTS.md")  # in the base instructions only
    assert found == [] and "left out: --system searches them too" in stderr
    assert run_main(codex, ["search", "--content", "AGENTS.md"]).returncode == 1
    assert {step(codex, h)["extra"]["kind"] for h in hits(codex, "--system", "AGENTS.md")[0]} == {"base_instructions"}


# phrases ----------------------------------------------------------------------------------------------
def test_a_quoted_query_is_a_phrase(codex):
    """What the shell passes for '"from a function or sourced script"': the phrase, quotes
    included, found as written in one field, whatever its case."""
    def steps(*args):
        return [(h["id"], h["step"], h["field"]) for h in hits(codex, *args)[0]]

    (hit,) = hits(codex, '"from a function or sourced script"')[0]
    assert hit["field"] == "output" and "from a function or sourced script" in hit["snippet"]
    where = [(hit["id"], hit["step"], "output")]
    assert steps('"FROM A Function or sourced script"') == where
    assert steps("--phrase", "from a function or sourced script") == where
    assert steps('"sourced script from a function"') == []       # not as written
    assert steps("sourced script from a function") == where      # words: any order
    assert steps('"can only" return') == where                   # a phrase and a word
    either = steps('"or sourced script" \\| "hello-codex-2 into"')
    assert where[0] in either and {id_ for id_, _, _ in either} == {hit["id"], *(id_ for id_, _, _ in steps("hello-codex-2"))}


def test_a_phrase_stays_inside_one_field(codex):
    """The step's call holds `return 1` and its output the error: both words are in the
    step, the phrase `1 bash` (the call's end and the output's start, joined) in neither field."""
    (hit,) = hits(codex, "return 1 bash: line")[0]
    assert hits(codex, '"1 bash: line"')[0] == [] and hits(codex, '"return 1"')[0][0]["step"] == hit["step"]


def test_the_default_search_takes_phrases_too(codex):
    def ids(*args):
        result = run_main(codex, ["search", "--json", *args])
        return [json.loads(line)["id"] for line in result.stdout.splitlines()]

    every = ids("scenario")
    assert len(every) == 3
    assert ids('"run a shell command that writes"') == every
    assert ids('"shell command a run"') == [] and ids("shell command a run") == every
    assert ids("--phrase", "Run A Shell Command") == every
    assert len(ids('"writes hello-codex-2 into"')) == 1


def test_regex_and_phrase_together_are_refused(codex):
    result = run_main(codex, ["search", "--regex", "--phrase", "x"])
    assert result.returncode == 2 and b"--regex and --phrase" in result.stderr


# where a snippet shows ----------------------------------------------------------------------------------
def test_the_snippet_shows_where_the_words_are(codex):
    """Issue 42: for `No such file`, the snippet showed the step's message, where `no` is
    inside `Now`; the words stand whole in its tool output."""
    (hit,) = [h for h in hits(codex, "No such file")[0] if ISSUE_42_MESSAGE in (step(codex, h).get("message") or "")]
    assert hit["field"] == "output" and "No such file" in hit["snippet"], hit["snippet"]
    assert [h["snippet"] for h in hits(codex, "Now command")[0] if (h["id"], h["step"]) == (hit["id"], hit["step"])] == [
        f"message: {ISSUE_42_MESSAGE}"]


# every agent that records its own steps -----------------------------------------------------------------
def own_steps(doc: dict, path: str = ""):
    """(step, sub-agent path) of the steps of source system that a translator gave a kind
    other than an event's: the agent's prompt, instructions and injected context."""
    events = ("error", "abort", "interrupt", "command_output", "shell_command", "rollback", "undo")
    for item in doc["steps"]:
        kind = (item.get("extra") or {}).get("kind")
        if (item["source"] == "system" and isinstance(kind, str) and kind and not any(e in kind for e in events)
                and not item.get("tool_calls") and not (item.get("observation") or {}).get("results")):
            yield item["step_id"], path or None, item
    for i, sub in enumerate(doc.get("subagent_trajectories") or (), 1):
        yield from own_steps(sub, f"{path}.{i}" if path else str(i))


def own_steps_left_out(env, agent: str | None = None) -> dict:
    """A word of the steps each agent wrote for itself (its most frequent word of 7 letters or
    more there) is found in them with --system only, and counted as left out without it: the
    kinds of own steps each agent's word was found in."""
    import re

    listed = [json.loads(line) for line in run_main(env, ["list", "--all", "--json"]).stdout.splitlines()]
    covered = {}
    for name in sorted({r["agent"] for r in listed if agent in (None, r["agent"])}):
        documents = {r["id"]: json.loads(run_main(env, ["show", r["id"]]).stdout) for r in listed if r["agent"] == name}
        own = [(id_, step_id, path, item) for id_, doc in documents.items() for step_id, path, item in own_steps(doc)]
        words = [w for *_, item in own if isinstance(item.get("message"), str)
                 for w in re.findall(r"[A-Za-z]{7,}", item["message"])]
        if not words:
            continue
        word = max(sorted(set(words)), key=words.count)
        with_own, _ = hits(env, "--system", "--agent", name, word)
        without, stderr = hits(env, "--agent", name, word)
        mine = {(id_, step_id, path): item for id_, step_id, path, item in own}
        found = [mine[key] for key in ((h["id"], h["step"], h["subagent"]) for h in with_own) if key in mine]
        assert found, (name, word)
        assert without == [h for h in with_own if (h["id"], h["step"], h["subagent"]) not in mine], (name, word)
        assert stderr.splitlines()[-1].startswith(
            f"{len(found)} result(s) in steps the agents wrote for themselves"), (name, word, stderr)
        covered[name] = {item["extra"]["kind"] for item in found}
    return covered


@pytest.mark.parametrize("home", __import__("homes").agent_homes(), ids=lambda h: h.agent)
def test_every_agents_own_steps_are_left_out_unless_asked(tmp_path, home):
    """Each agent's live store: those that record steps of their own (Codex's instructions,
    Gemini's session context, Cline's, Copilot's, Hermes', OpenHands' system prompts, Droid's
    reminders …) have them left out; the others have none to leave out."""
    covered = own_steps_left_out(home.build(tmp_path), home.agent)
    if home.agent in ("codex", "gemini", "cline", "copilot", "droid", "hermes", "openhands", "mswea", "gptme", "aider"):
        assert list(covered) == [home.agent]


def test_the_samples_own_steps_are_left_out_unless_asked(tmp_path):
    """The public samples of tests/fixtures: those tests/stores.py builds a $HOME from, and
    Claude Code transcripts with a meta record (what `/init` expands to: `Please analyze this
    codebase and create a CLAUDE.md file…`) and sub-agents."""
    from helpers import SAMPLES
    from stores import build_home

    covered = own_steps_left_out(build_home(tmp_path / "stores")[0])
    assert {"codex", "copilot", "gemini"} <= set(covered), covered
    env = base_env(tmp_path / "claude")
    project = os.path.join(env["HOME"], ".claude", "projects", "-work-sample")
    shutil.copytree(os.path.join(SAMPLES, "claude", "agent-sessions", "subagent"), project)
    shutil.copy(os.path.join(SAMPLES, "claude", "dotfile-titles", "617b8d63-f8d1-495e-9a83-5c0291579fe1.jsonl"), project)
    assert "meta" in own_steps_left_out(env)["claude"]
