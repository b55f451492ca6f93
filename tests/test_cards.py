"""Session cards (cards.py): a page per session, the same bytes in `export` and the mount, built
from real sessions (samples/claude/dotfile-titles) and from a Claude transcript whose tool
outputs are real git and Python runs made by the test."""

import json
import os
import shutil
import statistics
import subprocess

import pytest

from rendering import cards
from helpers import SAMPLES, base_env, cli, needs, run_main

TITLES = os.path.join(SAMPLES, "claude", "dotfile-titles")
DOT = "e827650c-0d38-4ecf-8575-2f75aaf959bc"


def claude_home(env, files) -> str:
    folder = os.path.join(env["HOME"], ".claude", "projects", "-work")
    os.makedirs(folder, exist_ok=True)
    for path in files:
        shutil.copy(path, folder)
    return folder


def exported(env, out) -> dict:
    result = cli("export", "--all", "--out", str(out), env=env)
    assert result.returncode == 0, result.stderr
    return {name: (out / name).read_bytes() for name in os.listdir(out) if (out / name).is_file()}


def test_the_card_of_a_real_session_names_its_requests_outcome_files_and_failures(tmp_path):
    env = base_env(tmp_path)
    claude_home(env, [os.path.join(TITLES, f"{DOT}.jsonl")])
    files = exported(env, tmp_path / "out")
    (name,) = [n for n in files if n.endswith(".card.md")]
    assert name.replace(".card.md", ".atif.json") in files  # beside its document, named alike
    card = files[name].decode()
    assert card.startswith("# 优化后段服务使用uv管理\n")
    assert " · outcome: interrupted · " in card  # ended on "[Request interrupted by user for tool use]"
    assert "\n- 2: (the title)\n" in card and "\n- 24: make里的命令如何使用 .venv 环境\n" in card
    assert "\n- 1:" not in card  # "." carries no task
    assert "- ✗ 8 exit 127: `uv sync --all-extras 2>&1` — (eval):1: command not found: uv" in card
    assert "pyproject.toml (6, 15)" in card and "Makefile (7)" in card  # a folder's files on one line
    assert "claude-sonnet-4-6" not in card  # the model answers no question a card is read for (INDEX.md, the document have it)
    doc = json.loads(files[name.replace(".card.md", ".atif.json")])
    assert doc["steps"][7]["step_id"] == 8 and "uv sync" in json.dumps(doc["steps"][7]["tool_calls"])


def test_cards_of_real_sessions_are_short(tmp_path):
    env = base_env(tmp_path)
    volcano = os.path.join(SAMPLES, "claude", "dotfile-volcano", "7ef4b236-d946-48a6-a856-e45b02af7be7.jsonl")
    claude_home(env, [os.path.join(TITLES, n) for n in os.listdir(TITLES)] + [volcano])
    sizes = [len(data) for name, data in exported(env, tmp_path / "out").items() if name.endswith(".card.md")]
    assert len(sizes) == 4 and statistics.median(sizes) <= 2048 + 1024 and max(sizes) <= cards.CARD_LIMIT


def git(repo, *args) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})
    return done.stdout


def record(kind: str, n: int, content, **more) -> dict:
    role = "assistant" if kind == "assistant" else "user"
    message = {"role": role, "content": content}
    if role == "assistant":
        message.update(model="claude-opus-4-1", id=f"msg_{n}", type="message")
    return {"type": kind, "uuid": f"u{n}", "parentUuid": f"u{n - 1}" if n else None, "isSidechain": False,
            "sessionId": "c0ffee00-0000-4000-8000-000000000001", "cwd": more.pop("cwd"), "version": "2.1.0",
            "timestamp": f"2026-11-30T10:00:{n:02d}.000Z", "message": message, **more}


def bash(n: int, call: str, command: str, cwd: str) -> dict:
    return record("assistant", n, [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": command}}],
                  cwd=cwd)


def result(n: int, call: str, output: str, error: bool, cwd: str) -> dict:
    return record("user", n, [{"type": "tool_result", "tool_use_id": call, "content": output, "is_error": error}],
                  cwd=cwd)


@needs("git")
def test_a_card_names_every_commit_from_gits_own_output_and_every_failure(tmp_path):
    """The transcript's tool outputs are what git and Python printed here: `git commit` of two
    files (a root commit), a second commit of a rename and a new file, and a failing import."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("print(1)\n")
    (repo / "util.py").write_text("x = 1\n")
    first = git(repo, "add", "app.py", "util.py") + git(repo, "commit", "-m", "Add the app")
    git(repo, "mv", "util.py", "helpers.py")
    (repo / "new.py").write_text("y = 2\n")
    second = git(repo, "add", "new.py") + git(repo, "commit", "-m", "Move the helpers", "--stat")
    hashes = git(repo, "log", "--format=%h", "-2").split()
    failed = subprocess.run(["python3", "-c", "import nope_not_here"], capture_output=True, text=True, cwd=repo)
    assert failed.returncode == 1
    cwd = str(repo)
    records = [record("user", 0, "add the app and its helpers, then commit", cwd=cwd),
               bash(1, "t1", "git add app.py util.py && git commit -m 'Add the app'", cwd),
               result(2, "t1", first, False, cwd),
               bash(3, "t2", "git mv util.py helpers.py && git add new.py && git commit -m 'Move the helpers' --stat",
                    cwd),
               result(4, "t2", second, False, cwd),
               bash(5, "t3", "python3 -c 'import nope_not_here'", cwd),
               result(6, "t3", f"Exit code 1\n{failed.stderr}", True, cwd),
               record("assistant", 7, [{"type": "text", "text": "Committed both.\nThe import fails."}], cwd=cwd)]
    env = base_env(tmp_path)
    folder = claude_home(env, [])
    with open(os.path.join(folder, "c0ffee00-0000-4000-8000-000000000001.jsonl"), "w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    files = exported(env, tmp_path / "out")
    (card,) = [data.decode() for name, data in files.items() if name.endswith(".card.md")]
    assert f"- `{hashes[1]}" in card and f"- `{hashes[0]}" in card
    lines = {line.split("`")[1][:7]: line for line in card.splitlines() if line.startswith("- `")}
    assert "on main: Add the app (2) — 2 files changed, +2 -0; app.py, util.py" in lines[hashes[1][:7]]
    assert "on main: Move the helpers (3) — 2 files changed, +1 -0; helpers.py, new.py" in lines[hashes[0][:7]]
    assert "- ✗ 4 exit 1: `python3 -c 'import nope_not_here'` — ModuleNotFoundError: No module named " \
           "'nope_not_here'" in card
    assert " · outcome: completed" in card and "> Committed both.\n> The import fails." in card
    index = files["INDEX.md"].decode()
    assert f"{hashes[0][:7]}, {hashes[1][:7]}" in index or f"{hashes[1][:7]}, {hashes[0][:7]}" in index


def test_a_card_is_cut_with_a_note_and_stays_valid_utf8(monkeypatch):
    monkeypatch.setattr(cards, "CARD_LIMIT", 2048)  # each section is bounded well under 8 KB now
    steps = [{"step_id": i + 1, "source": "user", "message": f"请求 {i} " + "词" * 300} for i in range(40)]
    steps.append({"step_id": 41, "source": "agent", "message": "",
                  "tool_calls": [{"tool_call_id": str(i), "function_name": "Write",
                                  "extra": {"kind": "write", "paths": [f"/w/{'目录' * 40}/{i}.txt"]}} for i in range(30)]})
    data = cards.render({"steps": steps, "extra": {"cwd": "/w"}})
    assert len(data) <= cards.CARD_LIMIT and data.endswith(b"(card cut at 2 KB: the document has the rest)\n")
    many = [{"step_id": 1, "source": "agent", "message": "",
             "tool_calls": [{"tool_call_id": str(i), "function_name": "Bash",
                             "extra": {"kind": "shell", "command": f"false {i} " + "x" * 200}}
                            for i in range(400)],
             "observation": {"results": [{"source_call_id": str(i), "content": "Exit code 1\nerror: " + "é" * 300,
                                          "extra": {"is_error": True}} for i in range(400)]}}]
    data = cards.render({"steps": many, "extra": {}})
    assert len(data) <= cards.CARD_LIMIT
    data.decode()  # whole characters only


@pytest.mark.parametrize("steps, outcome", [
    ([{"step_id": 1, "source": "user", "message": "do it"}], "no answer"),
    ([{"step_id": 1, "source": "user", "message": "do it"}, {"step_id": 2, "source": "agent", "message": "done"}],
     "completed"),
    ([{"step_id": 1, "source": "user", "message": "do it"},
      {"step_id": 2, "source": "system", "message": "API Error: 401 {\"type\":\"authentication_error\"}",
       "extra": {"kind": "api_error"}}], "API or auth error: API Error: 401 {\"type\":\"authentication_error\"}"),
    ([{"step_id": 1, "source": "user", "message": "do it"},
      {"step_id": 2, "source": "system", "message": "[Request interrupted by user]"}], "interrupted"),
])
def test_outcomes(steps, outcome):
    assert cards.outcome({"steps": steps}) == outcome


def test_show_and_the_card_agree_on_step_numbers(tmp_path):
    env = base_env(tmp_path)
    claude_home(env, [os.path.join(TITLES, f"{DOT}.jsonl")])
    listed = json.loads(cli("list", "--all", "--json", env=env).stdout.splitlines()[0])
    step = json.loads(run_main(env, ["show", listed["id"], "--step", "24"]).stdout)
    assert step["step_id"] == 24 and step["message"].startswith("make里的命令如何使用")


def test_index_names_the_directory_of_a_session_run_outside_the_projects_root(tmp_path):
    """A session run in a worktree of the project (`.claude/worktrees/x`) is the project's, and
    INDEX.md says where it ran; one run at the root leaves the cell empty."""
    project = tmp_path / "proj"
    worktree = project / ".claude" / "worktrees" / "x"
    worktree.mkdir(parents=True)
    (project / ".git").mkdir()
    env = base_env(tmp_path)
    folder = claude_home(env, [])
    for n, cwd in enumerate((str(project), str(worktree))):
        records = [record("user", 0, f"task {n}: fix the parser", cwd=cwd),
                   record("assistant", 1, [{"type": "text", "text": "Fixed."}], cwd=cwd)]
        with open(os.path.join(folder, f"c0ffee00-0000-4000-8000-00000000000{n}.jsonl"), "w") as handle:
            handle.writelines(json.dumps({**r, "sessionId": f"c0ffee00-0000-4000-8000-00000000000{n}"}) + "\n"
                              for r in records)
    out = tmp_path / "out"
    assert cli("export", "--dir", str(project), "--out", str(out), env=env).returncode == 0
    lines = (out / "INDEX.md").read_text().splitlines()
    assert lines[4].endswith("| Directory |")
    rows = {line.split(" | ")[4]: line for line in lines if line.startswith("| `")}
    assert rows["task 1: fix the parser"].endswith("| .claude/worktrees/x |")
    assert rows["task 0: fix the parser"].endswith("|  |")
    assert all(" | completed | " in row for row in rows.values())
