"""Aider: every sample transcript read against its own records.

The human's prompts are checked against `.aider.input.history` (what aider recorded as typed),
token totals against the `> Tokens:` lines, runs against the `# aider chat started at` headers.
Golden file: `tests/golden/aider/` (regenerate with `UPDATE_GOLDEN=1 pytest tests/test_agent_aider.py`).
"""

import glob
import os
import re
import shutil

import orjson
import pytest

from agents import aider
from atif.serialize import loads
from core import cache
from discovery import catalog
from helpers import LIVE, SAMPLES, assert_golden, assert_valid, base_env, cli, tree_digest

LIVE_AIDER = os.path.join(LIVE, "aider-0.86.2", "projects")
SAMPLE_FILES = sorted(glob.glob(os.path.join(SAMPLES, "aider", "**", aider.HISTORY_FILE), recursive=True)
                      + glob.glob(os.path.join(LIVE_AIDER, "*", aider.HISTORY_FILE)))


def project_copy(tmp_path, history_file: str, name: str | None = None) -> str:
    """A copy of a sample project's aider files in tmp; returns the copied transcript."""
    target = tmp_path / (name or os.path.basename(os.path.dirname(history_file)))
    target.mkdir(parents=True, exist_ok=True)
    for path in glob.glob(os.path.join(os.path.dirname(history_file), ".aider*")):
        shutil.copy2(path, target)
    return str(target / aider.HISTORY_FILE)


def documents(path: str, env) -> list[tuple]:
    return [(s, aider.translate(s, env)) for s in aider.scan(path, env)]


# native counts, straight from the files -------------------------------------------------------------
def native_run_count(text: str) -> int:
    """Sessions: the runs, but those that restored the chat history of the run before them."""
    runs = re.split(r"^# aider chat started at .*\n", text, flags=re.M)
    if not runs[0].strip():
        runs.pop(0)
    return sum(1 for number, run in enumerate(runs)
               if number == 0 or "> Restored previous conversation history." not in run)


def typed_prompts(input_history: str) -> list[str]:
    """Entries of the input history, minus one-letter answers to aider's y/n questions."""
    entries = re.split(r"^# .*\n", input_history, flags=re.M)
    texts = ["\n".join(line[1:] for line in entry.splitlines() if line.startswith("+"))
             for entry in entries]
    return [t for t in texts if len(t.strip()) > 1]


def token_lines(text: str) -> list[tuple]:
    def count(value):
        value = value.replace(",", "")
        return round(float(value[:-1]) * 1000) if value.endswith("k") else int(value)

    found = []
    for line in text.splitlines():
        match = re.match(r"> Tokens: (\S+) sent(?:, (\S+) cache write)?(?:, (\S+) cache hit)?, (\S+) received", line)
        if match:
            found.append((count(match[1]), count(match[4]), count(match[3]) if match[3] else 0))
    return found


def steps(docs, source):
    return [s for _, d in docs for s in d["steps"] if s["source"] == source]


@pytest.mark.parametrize("sample", SAMPLE_FILES, ids=lambda p: os.path.relpath(p, SAMPLES))
def test_every_sample_translates_to_its_native_content(tmp_path, sample):
    env = base_env(tmp_path)
    path = project_copy(tmp_path, sample)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    docs = documents(path, env)
    for _, doc in docs:
        assert_valid(doc)
    assert len(docs) == native_run_count(text)
    history = os.path.join(os.path.dirname(path), aider.INPUT_HISTORY_FILE)
    if os.path.exists(history):
        with open(history, encoding="utf-8") as handle:
            typed = typed_prompts(handle.read())
        assert [s["message"].strip() for s in steps(docs, "user")] == [t.strip() for t in typed]
        assert all("timestamp" in s for s in steps(docs, "user"))
    assert not any(s.get("tool_calls") or s.get("observation") for _, d in docs for s in d["steps"])
    sent, received, hit = (sum(v) for v in zip(*token_lines(text))) if token_lines(text) else (0, 0, 0)
    assert sum(d["final_metrics"].get("total_prompt_tokens", 0) for _, d in docs) == sent
    assert sum(d["final_metrics"].get("total_completion_tokens", 0) for _, d in docs) == received
    assert sum(d["final_metrics"].get("total_cached_tokens", 0) for _, d in docs) == hit


def test_live_sample_has_the_scenario_content(tmp_path):
    """aider-1b ran with --restore-chat-history: it continues aider-1's session (it was a
    session of its own holding the follow-up alone)."""
    env = base_env(tmp_path)
    [(session, doc)] = documents(project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE)), env)
    assert session.title.startswith("SCENARIO aider-1 in /tmp/agents/proj-aider:")
    assert [s["message"].split(":")[0] for s in steps([(None, doc)], "user")] == [
        "SCENARIO aider-1 in /tmp/agents/proj-aider", "SCENARIO aider-1b in /tmp/agents/proj-aider"]
    assert doc["agent"] == {"name": "aider", "version": "0.86.2", "model_name": "openai/fake-model"}
    assert [s["extra"] for s in steps([(None, doc)], "system") if s["extra"].get("applied_edits")] == [
        {"kind": "aider_output", "applied_edits": ["note.txt"]}]
    assert 'SCENARIO-DONE aider-1b' in steps([(None, doc)], "agent")[-1]["message"]
    assert doc["extra"]["restored_by_runs"] == [1] and "restored_chat_history" not in doc["extra"]
    [restored] = [s for s in doc["steps"] if s.get("extra", {}).get("kind") == "restored_run_header"]
    assert "Restored previous conversation history." in restored["message"] and restored["extra"]["run"] == 1


def test_a_run_that_restored_the_chat_history_holds_the_answer_of_its_session(tmp_path):
    """Issue 32's case: a run asked a question and ended without an answer; the next run,
    started with --restore-chat-history, answered it. The session that asked shows the answer,
    the follow-up prompt after the earlier turns; a later run without it is a session again."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / aider.HISTORY_FILE).write_text(
        "\n# aider chat started at 2026-03-01 10:00:00\n\n"
        "> Aider v0.86.1  \n> Main model: anthropic/claude-sonnet-4-20250514 with diff edit format  \n\n"
        "#### why does the build fail on arm64?  \n\n"
        "> litellm.APIConnectionError: connection reset  \n\n"
        "\n# aider chat started at 2026-03-01 10:05:00\n\n"
        "> Aider v0.86.1  \n> Main model: anthropic/claude-sonnet-4-20250514 with diff edit format  \n"
        "> Restored previous conversation history.  \n\n"
        "#### try again please  \n\n"
        "The build fails because the wheel for arm64 is missing.\n\n"
        "> Tokens: 2.1k sent, 45 received. Cost: $0.0070 message, $0.0070 session.  \n\n"
        "\n# aider chat started at 2026-03-02 09:00:00\n\n"
        "> Aider v0.86.1  \n\n#### something else  \n\nSure.\n")
    env = base_env(tmp_path)
    docs = documents(str(project / aider.HISTORY_FILE), env)
    assert [s.title for s, _ in docs] == ["why does the build fail on arm64?", "something else"]
    first = docs[0][1]
    assert_valid(first)
    assert [(s["source"], s["message"].split("\n")[-1]) for s in first["steps"]] == [
        ("system", "Main model: anthropic/claude-sonnet-4-20250514 with diff edit format"),
        ("user", "why does the build fail on arm64?"),
        ("system", "litellm.APIConnectionError: connection reset"),
        ("system", "Restored previous conversation history."),
        ("user", "try again please"),
        ("agent", "The build fails because the wheel for arm64 is missing.")]
    assert first["final_metrics"]["total_prompt_tokens"] == 2100
    assert docs[0][0].native_id == aider.native_id(str(project / aider.HISTORY_FILE), 0)
    assert docs[1][0].native_id == aider.native_id(str(project / aider.HISTORY_FILE), 2)


def test_slash_commands_and_architect_handoffs_are_not_user_prompts(tmp_path):
    env = base_env(tmp_path)
    docs = documents(project_copy(tmp_path, os.path.join(SAMPLES, "aider", "doc_processor", aider.HISTORY_FILE)), env)
    kinds = [s["extra"]["kind"] for s in steps(docs, "system")]
    assert "command_prompt" in kinds and "architect_handoff" in kinds
    users = [s["message"] for s in steps(docs, "user")]
    assert all(u.startswith("/") for u in users)  # in this sample every prompt was a command


def test_cwd_is_the_printed_working_dir_else_the_files_directory(tmp_path):
    env = base_env(tmp_path)
    note_app = project_copy(tmp_path, os.path.join(SAMPLES, "aider", "note_app", aider.HISTORY_FILE))
    assert [s.cwd for s in aider.scan(note_app, env)] == [r"D:\x\Coding\Website\note_app\backend"]
    live = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE))
    assert {s.cwd for s in aider.scan(live, env)} == {os.path.dirname(live)}


def test_discovery_looks_in_the_current_project_and_above(tmp_path):
    here = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE))
    project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider-other", aider.HISTORY_FILE))
    inner = os.path.join(os.path.dirname(here), "src", "deep")
    os.makedirs(inner)
    env = {**base_env(tmp_path), "PWD": inner}
    assert list(aider.sources(env)) == [here]


def test_discovery_looks_in_directories_known_from_other_agents(tmp_path):
    here = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE))
    other = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider-other", aider.HISTORY_FILE))
    env = {**base_env(tmp_path), "PWD": os.path.dirname(here)}
    known = aider.Session(agent="claude", native_id="x", source="/nowhere",
                          cwd=os.path.dirname(other))
    cache.save(env, cache.INDEX_FILE, {"claude": {"version": "1", "sources": {
        "/nowhere": [[None], [known.to_cache()]]}}})
    assert sorted(aider.sources(env)) == sorted([here, other])


def test_the_first_run_finds_projects_known_from_other_agents_in_the_same_run(tmp_path):
    """No index cache yet: the Claude session seen by this very discovery leads to the Aider
    store in its project (discovery lists project-kept stores after the others)."""
    other = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider-other", aider.HISTORY_FILE))
    project = os.path.dirname(other)
    env = base_env(tmp_path)
    transcript = os.path.join(env["HOME"], ".claude", "projects", "-elsewhere", "c1.jsonl")
    os.makedirs(os.path.dirname(transcript))
    with open(transcript, "w") as handle:
        handle.write(orjson.dumps({"type": "user", "sessionId": "c1", "uuid": "u1", "cwd": project,
                                   "timestamp": "2026-01-02T03:04:05Z",
                                   "message": {"role": "user", "content": "hello"}}).decode() + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env["PWD"] = str(elsewhere)
    assert not os.path.exists(os.path.join(cache.cache_dir(env), cache.INDEX_FILE))
    done = cli("list", "--all", "--json", env=env, cwd=str(elsewhere))
    assert done.returncode == 0, done.stderr
    listed = [loads(line) for line in done.stdout.splitlines()]
    expected = native_run_count(open(other, encoding="utf-8").read())
    assert [r["agent"] for r in listed].count("aider") == expected > 0
    assert [r["agent"] for r in listed].count("claude") == 1


def test_project_scoping_through_the_cli(tmp_path):
    here = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE))
    project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider-other", aider.HISTORY_FILE))
    project = os.path.dirname(here)
    env = {**base_env(tmp_path), "PWD": project}
    done = cli("list", "--json", "--agent", "aider", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    listed = [loads(line) for line in done.stdout.splitlines()]
    assert len(listed) == 1 and all(r["cwd"] == project for r in listed)  # aider-1b restored aider-1
    scope = catalog.Scope(os.path.join(str(tmp_path), "proj-aider-other"))
    assert scope.filter(aider.scan(here, env)) == []


def test_a_cut_or_damaged_file_still_translates_with_a_warning(tmp_path):
    env = base_env(tmp_path)
    path = project_copy(tmp_path, os.path.join(SAMPLES, "aider", "doc_processor", aider.HISTORY_FILE))
    with open(path, "rb") as handle:
        data = handle.read()
    with open(path, "wb") as handle:
        handle.write(data[: len(data) // 2] + b"\xff\xfe broken")
    docs = documents(path, env)
    assert docs
    for _, doc in docs:
        assert_valid(doc)
    warnings = docs[-1][1]["extra"]["warnings"]
    assert any("not valid UTF-8" in w for w in warnings)
    assert any("does not end with a newline" in w for w in warnings)


def test_reading_leaves_the_store_unchanged(tmp_path):
    env = base_env(tmp_path)
    path = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE))
    before = tree_digest(os.path.dirname(path))
    documents(path, env)
    assert tree_digest(os.path.dirname(path)) == before


def test_golden(tmp_path):
    env = base_env(tmp_path)
    path = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE))
    doc = documents(path, env)[0][1]
    doc["session_id"] = "<hash of the transcript path and run index>"
    assert_golden(doc, "aider", "live-proj-aider-run0")


def test_dir_finds_the_projects_own_store_from_anywhere(tmp_path):
    """`--dir P` is the project wherever the command runs: its Aider history is found though the
    command runs elsewhere and no other agent names P (before: 0 sessions)."""
    here = project_copy(tmp_path, os.path.join(LIVE_AIDER, "proj-aider", aider.HISTORY_FILE))
    project = os.path.dirname(here)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**base_env(tmp_path), "PWD": str(elsewhere)}
    expected = native_run_count(open(here, encoding="utf-8").read())
    listed = cli("list", "--json", "--dir", project, env=env, cwd=str(elsewhere))
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == expected > 0, listed.stderr
    exported = cli("export", "--dir", project, "--out", str(tmp_path / "out"), env=env, cwd=str(elsewhere))
    assert exported.returncode == 0, exported.stderr
    assert len(list((tmp_path / "out").glob("*_aider_*.atif.json"))) == expected
