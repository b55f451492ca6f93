"""Tool calls with a common meaning (`extra.kind`, `extra.command`, `extra.paths`, rendering/toolkinds.py),
checked against the native calls of every live store: the calls SCENARIO.md says the fake model
made (Droid's, whose SCENARIO.md lists none, read from its records), every shell command found,
every written file named."""

from __future__ import annotations

import glob
import json
import os
import pathlib
import re

import pytest

from discovery import catalog
from rendering import documents, toolkinds
from helpers import all_steps, assert_valid, scenario_runs
from homes import by_agent, live_stores

def lists_calls(store: str) -> bool:
    """Whether the store's SCENARIO.md quotes each call the fake model made."""
    with open(os.path.join(store, "SCENARIO.md"), encoding="utf-8") as handle:
        return "tool call `" in handle.read()


TOOL_AGENTS = [agent for agent, store in live_stores() if agent not in ("aider", "droid") and lists_calls(store)]
# recorded by the conformance harness with a SCENARIO.md that states the scenario once
SHAPE_AGENTS = [agent for agent, store in live_stores() if agent not in ("aider", "droid") and not lists_calls(store)]


def meanings(env, agent: str) -> list[tuple]:
    """(kind, command, paths) of every tool call of every document of the agent's sessions."""
    found = []
    for session in catalog.discover(env, [agent], use_cache=False).sessions:
        doc = documents.translate(session, env)
        assert_valid(doc)
        for step in all_steps(doc):
            for call in step.get("tool_calls") or ():
                extra = call.get("extra") or {}
                found.append((extra.get("kind"), extra.get("command"), tuple(extra.get("paths") or ())))
    return sorted(found, key=repr)


def expected_meaning(cwd: str, arguments: dict) -> tuple:
    """What a scenario call means, from its arguments as SCENARIO.md quotes them: a command
    (one string, or a list of them) is a shell call, writing note.txt when it redirects there;
    else the call reads the file its arguments name."""
    command = arguments.get("command", arguments.get("cmd", arguments.get("commands")))
    if command is not None:
        command = "\n".join(command) if isinstance(command, list) else command
        return "shell", command, ((os.path.join(cwd, "note.txt"),) if "> note.txt" in command else ())
    path = (arguments.get("path") or arguments.get("file_path") or arguments.get("filePath")
            or arguments.get("filepath"))
    return "read", None, (path or arguments["files"][0]["path"],)


@pytest.mark.parametrize("agent", TOOL_AGENTS)
def test_live_calls_have_their_meaning(agent, tmp_path):
    env = by_agent(agent).build(tmp_path)
    runs = scenario_runs(os.path.join(env["HOME"]))
    # mini-swe-agent records no working directory: its relative paths stay relative
    recorded = any(s.cwd for s in catalog.discover(env, [agent], use_cache=False).sessions)
    expected = sorted((expected_meaning(r.cwd if recorded else "", a) for r in runs for _, a in r.calls), key=repr)
    assert expected and meanings(env, agent) == expected
    commands = {m[1] for m in meanings(env, agent) if m[0] == "shell"}
    assert {f"echo hello-{r.prompt.split()[1]} > note.txt && ls" for r in runs} <= commands


@pytest.mark.parametrize("agent", SHAPE_AGENTS)
def test_scenario_calls_have_their_meaning(agent, tmp_path):
    """Every session of these stores ran the scenario of its first prompt, `SCENARIO <id> in
    <dir>`: a shell call `echo hello-<id> > note.txt && ls` (which writes <dir>/note.txt), then
    note.txt read back (a read call naming it, or `cat note.txt` in a shell)."""
    env = by_agent(agent).build(tmp_path)
    sessions = catalog.discover(env, [agent], use_cache=False).sessions
    assert len(sessions) >= 3
    for session in sessions:
        doc = documents.translate(session, env)
        assert_valid(doc)
        prompts = [s["message"] for s in all_steps(doc) if s["source"] == "user" and isinstance(s["message"], str)]
        scenarios = {m.group(1): m.group(2) for p in prompts for m in [re.search(r"SCENARIO (\S+) in (\S+?):", p)] if m}
        assert scenarios, prompts[:1]
        calls = [c["extra"] for s in all_steps(doc) for c in s.get("tool_calls") or ()]
        for run, folder in scenarios.items():
            note = os.path.join(folder, "note.txt")
            write = {"kind": "shell", "command": f"echo hello-{run} > note.txt && ls", "paths": [note]}
            assert write in calls, (run, calls)
            assert any(c["kind"] == "read" and c.get("paths") == [note] or
                       c["kind"] == "shell" and "cat note.txt" in c.get("command", "") for c in calls), calls


def test_droid_calls_have_their_meaning(tmp_path):
    env = by_agent("droid").build(tmp_path)
    expected = []
    for path in glob.glob(os.path.join(env["HOME"], ".factory", "sessions", "*", "*.jsonl")):
        cwd = "/tmp/agents/" + os.path.basename(os.path.dirname(path))[len("-tmp-agents-"):]
        for line in pathlib.Path(path).read_text().splitlines():
            content = (json.loads(line).get("message") or {}).get("content")
            for part in content if isinstance(content, list) else ():
                if part.get("type") == "tool_use":
                    expected.append(expected_meaning(cwd, part["input"]))
    assert len(expected) > 3 and meanings(env, "droid") == sorted(expected, key=repr)


def test_aider_whole_file_edits_are_writes(tmp_path):
    env = by_agent("aider").build(tmp_path)
    written = []
    for session in catalog.discover(env, ["aider"], use_cache=False).sessions:
        for step in documents.translate(session, env)["steps"]:
            if "applied_edits" in (step.get("extra") or {}):
                written.append((session.cwd, step["extra"]["paths"]))
    assert written and all(paths == [os.path.join(cwd, "note.txt")] for cwd, paths in written)


def test_patches_name_every_file_they_touch():
    patch = ("*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: /abs/b.py\n+z\n"
             "*** Delete File: c.py\n*** Update File: d.py\n*** Move to: e.py\n*** End Patch\n")
    found = toolkinds.meaning("codex", {"function_name": "apply_patch", "arguments": {"input": patch}}, "/w")
    assert found == {"kind": "edit", "paths": ["/w/src/a.py", "/abs/b.py", "/w/c.py", "/w/d.py", "/w/e.py"]}
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/new.txt\n"
    found = toolkinds.meaning("opencode", {"function_name": "patch", "arguments": {"patchText": diff}}, "/w")
    assert found["paths"] == ["/w/x.py", "/w/new.txt"]


def test_shell_argv_and_workdir():
    call = {"function_name": "shell", "arguments": {"command": ["bash", "-lc", "cat a | tee -a b > c"],
                                                     "workdir": "sub"}}
    assert toolkinds.meaning("codex", call, "/w") == {"kind": "shell", "command": "cat a | tee -a b > c",
                                                      "paths": ["/w/sub/c", "/w/sub/b"]}
    call = {"function_name": "Bash", "arguments": {"command": "git mv a.py b.py && cp -r x y 2> err"}}
    assert toolkinds.meaning("claude", call, "/w")["paths"] == ["/w/b.py", "/w/err"]  # `cp -r`: y is a folder
    call = {"function_name": "shell", "arguments": {"command": ["ls", "-l", "a b"]}}
    assert toolkinds.meaning("codex", call, "/w") == {"kind": "shell", "command": "ls -l 'a b'"}


@pytest.mark.parametrize("arguments", [{}, {"command": 3}, {"command": ["x", 1]}, {"file_path": ["a", {"p": 1}]},
                                       {"path": "a\0b"}, {"file_path": "x" * 10_000}, {"command": "echo 'open"},
                                       {"input": 5}, {"files": [None, {"path": 2}]}, {"command": "> " * 5000},
                                       {"command": "echo x > a; " * 20_000}, {"command": ["ls"] * 100_000}])
def test_odd_arguments_never_fail(arguments):
    for agent, table in toolkinds.TABLES.items():
        for name in [*table, None, 7]:
            found = toolkinds.meaning(agent, {"function_name": name, "arguments": arguments}, "/w")
            assert found["kind"] in toolkinds.KINDS
            assert len(found.get("paths", ())) <= toolkinds.MAX_PATHS
            assert len(found.get("command", "")) <= toolkinds.MAX_COMMAND
            assert all(os.path.isabs(p) and len(p) <= toolkinds.MAX_PATH for p in found.get("paths", ()))


def test_every_agent_has_a_table():
    import agents

    assert sorted(toolkinds.TABLES) == sorted(agents.names())
    assert {k for t in toolkinds.TABLES.values() for k in t.values()} <= set(toolkinds.KINDS)


def test_the_mapping_is_documented(tmp_path):
    from mount import guide
    from helpers import ROOT

    table = toolkinds.markdown_table()
    assert "| claude | shell: Bash · read: NotebookRead, Read · write: Write" in table
    assert table in pathlib.Path(ROOT, "README.md").read_text()
    beside = guide.readme("/p", ["2026-01-01_claude_cl-0d400f03.atif.json"], mounted=True).decode()
    assert toolkinds.markdown_table({"claude"}) in beside and "| claude |" in beside and "| codex |" not in beside


def test_a_name_in_another_case_has_its_kind():
    call = {"function_name": "bash", "arguments": {"command": "echo x > y"}}
    assert toolkinds.meaning("claude", call, "/w") == {"kind": "shell", "command": "echo x > y", "paths": ["/w/y"]}
    assert toolkinds.meaning("claude", {"function_name": "mcp__x__bash", "arguments": {}}, "/w") == {"kind": "other"}


@pytest.mark.parametrize("command, written", [
    ("echo hi > a.txt", ["a.txt"]), ('t"ee" b.txt', ["b.txt"]), ("c\\p a b", ["b"]),
    ("m'v' x y", ["y"]), ("git mv x y", ["y"]), ("ls -la; cat notes", []), ("cp", []),
    ("grep -r tee src", []), ("sed -i 's/a/b/' x.py y.py", ["x.py", "y.py"]), ("sed -n 1,5p x.py", []),
    ("sed -i.bak -e 's/a/b/' -e 's/c/d/' x.py", ["x.py"]), ("sed 's/a/b/' x.py > y.py", ["y.py"]),
    ("cat > notes.md <<'EOF'\nhello\nEOF", ["notes.md"])])
def test_shell_writes_sees_writers_through_their_quotes(command, written):
    """The quick test that spares parsing most commands must not miss a quoted writer."""
    assert toolkinds.shell_writes(command) == written


# The two shapes Codex CLI (September 2025) recorded its patch tool run as a command in, as the
# rollout `rollout-2025-09-19T14-29-01-f1b47c12-…` of the public soichiro-nitta/dotfiles
# (bench/qa: project aburi-all) has them: `apply_patch` as the command's first word, and as a
# heredoc of `bash -lc`. Both edited a file: neither was counted as a write.
APPLY_PATCH_CALLS = [
    {"command": ["apply_patch", "*** Begin Patch\n*** Update File: modules/backend/src/config/hono.ts\n@@\n"
                 "-export class ConfiguredHono<T = {}> extends Hono<\n"
                 "+export class ConfiguredHono<T = Record<string, never>> extends Hono<\n   {\n"
                 "     Bindings: typeof env\n   } & T\n > {}\n*** End Patch"]},
    {"command": ["bash", "-lc", "apply_patch << 'PATCH'\n*** Begin Patch\n*** Update File: "
                 "modules/backend/src/middleware/auth.ts\n@@\n-import {\n+import {\n*** End Patch\nPATCH"]},
]


@pytest.mark.parametrize("arguments, written", list(zip(APPLY_PATCH_CALLS, [
    "modules/backend/src/config/hono.ts", "modules/backend/src/middleware/auth.ts"])))
def test_an_apply_patch_run_as_a_command_writes_its_files(arguments, written):
    found = toolkinds.meaning("codex", {"function_name": "shell", "arguments": arguments}, "/w/aburi-all")
    assert found["kind"] == "shell" and found["paths"] == [f"/w/aburi-all/{written}"]
    doc = {"steps": [{"step_id": 1, "source": "agent", "tool_calls": [
        {"tool_call_id": "c", "function_name": "shell", "arguments": arguments, "extra": found}]}]}
    assert [w["paths"] for w in toolkinds.writes(doc)] == [[f"/w/aburi-all/{written}"]]
