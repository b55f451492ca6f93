"""`trajectoriz blame FILE [--line N]` over fixture stores of three agents (Claude Code's Write and
Edit, Codex's apply_patch and shell, Aider's whole-file edits): the sessions that wrote a file,
oldest first; a line attributed to the session that wrote its current text, across agents; a
line no session wrote answered as such; a renamed and a deleted file; project scoping; and the
second call answered from the cached lists of written files."""

from __future__ import annotations

import json
import os
import stat

import pytest

from rendering import documents
from helpers import base_env, run_main

SECRET = "ghp_Xy7Qm2Tw9Rp4Lz8Vc3Nb6Kd1Hs5Jf0Ga2UeR"
PATCH = ("*** Begin Patch\n*** Update File: src/app.py\n@@\n def f():\n-    return 1\n+    return 2\n"
         "*** End Patch\n")


def jsonl(path: str, records: list) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def claude_session(home: str, cwd: str, sid: str, minute: int, prompt: str, calls: list) -> None:
    """A Claude Code session: the prompt, then one assistant record per (tool, input) call."""
    def record(n, kind, message):
        return {"type": kind, "uuid": f"{sid}-{n}", "parentUuid": f"{sid}-{n - 1}" if n else None,
                "sessionId": sid, "cwd": cwd, "version": "2.1.0", "isSidechain": False,
                "timestamp": f"2026-01-01T10:{minute:02d}:{n:02d}Z", "message": message}
    records = [record(0, "user", {"role": "user", "content": prompt})]
    for name, arguments in calls:
        n = len(records)
        records.append(record(n, "assistant", {"id": f"m{n}", "role": "assistant", "model": "claude-x", "content": [
            {"type": "tool_use", "id": f"t{sid}{n}", "name": name, "input": arguments}]}))
        records.append(record(n + 1, "user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{sid}{n}", "content": "ok"}]}))
    slug = cwd.replace("/", "-")
    jsonl(os.path.join(home, ".claude", "projects", slug, f"{sid}.jsonl"), records)


def codex_session(home: str, cwd: str, sid: str, minute: int, prompt: str, calls: list) -> None:
    """A Codex rollout: the prompt, then each (name, arguments) call; apply_patch as Codex writes it."""
    when = f"2026-01-01T10:{minute:02d}:00Z"

    def item(kind, payload):
        return {"timestamp": when, "type": kind, "payload": payload}
    records = [item("session_meta", {"id": sid, "timestamp": when, "cwd": cwd, "originator": "codex_cli_rs",
                                     "cli_version": "0.171.0"}),
               item("turn_context", {"cwd": cwd, "model": "gpt-x"}),
               item("response_item", {"type": "message", "role": "user",
                                      "content": [{"type": "input_text", "text": prompt}]})]
    for n, (name, arguments) in enumerate(calls):
        if name == "apply_patch":
            records.append(item("response_item", {"type": "custom_tool_call", "name": name, "input": arguments,
                                                  "call_id": f"c{n}"}))
        else:
            records.append(item("response_item", {"type": "function_call", "name": name,
                                                  "arguments": json.dumps(arguments), "call_id": f"c{n}"}))
        records.append(item("response_item", {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"}))
    jsonl(os.path.join(home, ".codex", "sessions", "2026", "01", "01",
                       f"rollout-2026-01-01T10-{minute:02d}-00-{sid}.jsonl"), records)


def aider_history(project: str, file: str, content: str) -> None:
    with open(os.path.join(project, ".aider.chat.history.md"), "w") as handle:
        handle.write(f"\n# aider chat started at 2026-01-01 10:50:00\n\n#### write the notes  \n\n"
                     f"Here it is.\n\n{file}\n```\n{content}```\n\n> Tokens: 10 sent, 5 received.  \n"
                     f"> Applied edit to {file}  \n")


@pytest.fixture
def project(tmp_path):
    """Project P and its sibling P-other (a string prefix of nothing in P), with sessions of
    Claude Code, Codex and Aider, and P's files as they are now."""
    env = base_env(tmp_path)
    home, p = env["HOME"], str(tmp_path / "P")
    other = p + "-other"
    for folder in (p + "/src", p + "/.git", other):  # P is a git work tree
        os.makedirs(folder)
    claude_session(home, p, "c1", 1, f"create the app {SECRET}", [
        ("Write", {"file_path": f"{p}/src/app.py", "content": "def f():\n    return 1\n"})])
    codex_session(home, p, "0b5e5510-0000-4000-8000-000000000002", 2, "make f return 2", [("apply_patch", PATCH)])
    claude_session(home, p, "c3", 3, "just look", [("Read", {"file_path": f"{p}/src/app.py"})])
    claude_session(home, p, "c4", 4, "add g", [("Edit", {"file_path": "src/app.py", "old_string": "    return 2\n",
                                                          "new_string": "    return 2\n\n\ndef g():\n    pass\n"})])
    codex_session(home, p, "0b5e5510-0000-4000-8000-000000000005", 5, "rename it and drop the old notes", [
        ("exec_command", {"cmd": "echo draft > old.txt"}),
        ("exec_command", {"cmd": "git mv src/app.py src/main.py && rm -f old.txt"})])
    claude_session(home, other, "c6", 6, "touch P from elsewhere", [
        ("Write", {"file_path": f"{p}/src/app.py", "content": "def f():\n    return 1\n"})])
    aider_history(p, "NOTES.md", "# Notes\nwritten by aider\n")
    with open(f"{p}/src/main.py", "w") as handle:
        handle.write("def f():\n    return 2\n\n\ndef g():\n    pass\n# by hand\n")
    with open(f"{p}/NOTES.md", "w") as handle:
        handle.write("# Notes\nwritten by aider\n")
    env["PWD"] = p
    return env, p


def blame(env, cwd, *args):
    return run_main(env, ["blame", *args], cwd=cwd)


def changes(result) -> list[tuple]:
    return [(r["agent"], r["step"], r["request"]) for r in map(json.loads, result.stdout.splitlines())]


def test_the_sessions_that_wrote_a_file_oldest_first(project):
    env, p = project
    result = blame(env, p, "src/app.py", "--json")
    assert result.returncode == 0, result.stderr
    found = changes(result)
    assert [(a, r.split()[0]) for a, _, r in found] == [("claude", "create"), ("codex", "make"), ("claude", "add")]
    text = blame(env, p + "/src", "app.py").stdout.decode()
    assert text.index("create the app") < text.index("make f return 2") < text.index("add g")
    assert "+    return 2" in text and "*** Update File: src/app.py" in text and "just look" not in text


def test_a_line_goes_to_the_session_that_wrote_its_text_across_agents(project):
    env, p = project
    assert changes(blame(env, p, "src/main.py:2", "--json")) == []  # renamed: its text was written as app.py
    with open(f"{p}/src/app.py", "w") as handle:  # as it was before the rename
        handle.write("def f():\n    return 2\n\n\ndef g():\n    pass\n")
    assert [(a, r) for a, _, r in changes(blame(env, p, "src/app.py:2", "--json"))] == [
        ("claude", "add g"), ("codex", "make f return 2")]  # most recent first
    assert [r for _, _, r in changes(blame(env, p, "src/app.py", "--line", "5", "--json"))] == ["add g"]
    assert [r.split()[0] for _, _, r in changes(blame(env, p, "src/app.py:1", "--json"))] == ["create"]
    assert [a for a, _, _ in changes(blame(env, p, "NOTES.md:2", "--json"))] == ["aider"]


def test_a_line_no_session_wrote_is_said_to_be_so(project):
    env, p = project
    result = blame(env, p, "src/main.py", "--line", "7")
    assert result.returncode == 1
    assert result.stdout.decode().startswith("No session found wrote line 7 of src/main.py ('# by hand')")
    assert blame(env, p, "src/main.py:7", "--json").stdout == b""


def test_a_renamed_and_a_deleted_file(project):
    env, p = project
    assert [r for _, _, r in changes(blame(env, p, "src/main.py", "--json"))] == ["rename it and drop the old notes"]
    assert not os.path.exists(f"{p}/old.txt")
    found = [json.loads(line) for line in blame(env, p, "old.txt", "--json").stdout.splitlines()]
    assert [(w["agent"], w["diff"]) for w in found] == [("codex", "$ echo draft > old.txt")]
    gone = blame(env, p, "old.txt:1")
    assert gone.returncode == 2 and b"old.txt" in gone.stderr and gone.stdout == b""


def test_scoped_to_the_project_like_list(project):
    env, p = project
    requests = [r for _, _, r in changes(blame(env, p, "src/app.py", "--json"))]
    assert "touch P from elsewhere" not in requests
    everywhere = [r for _, _, r in changes(blame(env, p, "src/app.py", "--all", "--json"))]
    assert "touch P from elsewhere" in everywhere and len(everywhere) == len(requests) + 1
    elsewhere = [r for _, _, r in changes(blame(env, p, f"{p}/src/app.py", "--dir", p + "-other", "--json"))]
    assert elsewhere == ["touch P from elsewhere"]
    assert blame(env, p, "src/app.py", "--dir", p + "/src").returncode == 1  # no session ran there


def test_nothing_secret_and_the_cache_private(project):
    env, p = project
    result = blame(env, p, "src/app.py")
    assert SECRET.encode() not in result.stdout and b"REDACTED" in result.stdout
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz")
    facts = os.path.join(cache, documents.FACTS_FILE)
    assert stat.S_IMODE(os.stat(facts).st_mode) == 0o600 and stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    with open(facts, "rb") as handle:
        assert SECRET.encode() not in handle.read()


def test_a_second_call_renders_nothing(project, monkeypatch):
    env, p = project
    first = blame(env, p, "src/app.py", "--json")
    monkeypatch.setattr(documents, "_rendered", lambda *a: pytest.fail("rendered a session again"))
    assert blame(env, p, "src/app.py", "--json").stdout == first.stdout
    assert blame(env, p, "src/main.py:7", "--json").returncode == 1


def test_errors_are_one_line_and_exit_2(project):
    env, p = project
    for args in (["src/main.py:99"], ["src/main.py", "--line", "0"], ["src/main.py:4"], ["--dir", p + "/missing", "x"]):
        result = blame(env, p, *args)
        assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, (args, result.stderr)


def test_a_file_no_session_wrote_and_one_that_does_not_exist(project):
    """Issue 42: `No session found wrote or edited README.md.` also says when there is no such
    file (a path mistyped, or relative to another folder)."""
    env, p = project
    with open(f"{p}/README.md", "w") as handle:
        handle.write("# P\n")
    here = blame(env, p, "README.md")
    assert here.returncode == 1 and here.stdout.decode() == "No session found wrote or edited README.md.\n"
    missing = blame(env, p + "/src", "README.md")
    assert missing.returncode == 1
    assert missing.stdout.decode() == (f"No session found wrote or edited README.md (there is no file "
                                       f"{p}/src/README.md: check its path).\n")


def test_a_long_request_is_cut_at_a_word_with_an_ellipsis(project):
    """Issue 42: the request beside a change is cut after a whole word, and says it was cut."""
    env, p = project
    words = " ".join(["refactor"] + ["parser%d" % n for n in range(60)])
    claude_session(env["HOME"], p, "c7", 7, words, [
        ("Write", {"file_path": f"{p}/LONG.md", "content": "long\n"})])
    [request] = [r for _, _, r in changes(blame(env, p, "LONG.md", "--json"))]
    assert request.endswith("…") and len(request) <= 200
    assert words.startswith(request[:-1]) and words[len(request) - 1] == " "
    assert "Request: " + request in blame(env, p, "LONG.md").stdout.decode()
