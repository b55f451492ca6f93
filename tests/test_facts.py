"""Facts that hold (issue 36 item 3, issue 41): what cards, INDEX.md, `list --json` and `blame`
say of a session, checked on real sessions (samples/claude/dotfile-titles, the live stores) and
on transcripts whose tool outputs are what git printed here."""

import json
import os
import shutil

from helpers import LIVE, SAMPLES, base_env, cli, needs
from test_cards import bash, claude_home, exported, git, record, result

from rendering import cards, toolkinds

TITLES = os.path.join(SAMPLES, "claude", "dotfile-titles")
REFUSED_WRITE = "617b8d63-f8d1-495e-9a83-5c0291579fe1"  # its Write of CLAUDE.md was refused
REFUSED_EDIT = "e827650c-0d38-4ecf-8575-2f75aaf959bc"  # an Edit of app/utils/jwt.py was refused


def one_card(files: dict) -> str:
    (card,) = [data.decode() for name, data in files.items() if name.endswith(".card.md")]
    return card


# refused writes wrote nothing ----------------------------------------------------------------------
def test_a_refused_write_is_no_file_written(tmp_path):
    """The Write's result: "The user doesn't want to proceed with this tool use. The tool use was
    rejected (eg. if it was a file edit, the new_string was NOT written to the file)"."""
    env = base_env(tmp_path)
    claude_home(env, [os.path.join(TITLES, f"{REFUSED_WRITE}.jsonl")])
    files = exported(env, tmp_path / "out")
    card = one_card(files)
    assert "## Files written or edited (0)" in card
    assert "- attempted, not written (refused or failed): CLAUDE.md (6)" in card
    index = files["INDEX.md"].decode()
    assert "CLAUDE.md" not in index
    doc = json.loads(next(data for name, data in files.items() if name.endswith(".atif.json")))
    (call,) = [c for s in doc["steps"] for c in s.get("tool_calls") or () if c["function_name"] == "Write"]
    assert call["extra"]["refused"] is True and "paths" not in call["extra"]
    assert call["extra"]["attempted_paths"] == ["/Users/xuwentao/Projects/tele/tap-front/CLAUDE.md"]


def test_blame_does_not_name_a_session_whose_edit_was_refused(tmp_path):
    env = base_env(tmp_path)
    claude_home(env, [os.path.join(TITLES, f"{REFUSED_EDIT}.jsonl")])
    doc = json.loads(cli("show", "cl-986ed558", env=env).stdout)
    refused = [(s["step_id"], c) for s in doc["steps"] for c in s.get("tool_calls") or ()
               if (c.get("extra") or {}).get("refused")]
    assert [(step, c["function_name"]) for step, c in refused] == [(30, "Edit")]
    blamed = cli("blame", "/Users/xuwentao/Projects/github/patent-platform/backend/app/utils/jwt.py", "--all",
                 "--json", env=env)
    steps = [json.loads(line)["step"] for line in blamed.stdout.splitlines()]
    assert steps == [29]  # the edit that was made, not the refused one at step 30


def test_a_failed_edit_wrote_nothing():
    """Claude Code's result of an Edit that did not apply (flagged as an error)."""
    call = {"tool_call_id": "e1", "function_name": "Edit",
            "arguments": {"file_path": "/w/a.py", "old_string": "x", "new_string": "y"}}
    doc = {"steps": [{"step_id": 1, "source": "agent", "message": "", "tool_calls": [call],
                      "observation": {"results": [{"source_call_id": "e1", "extra": {"is_error": True},
                                                   "content": "<tool_use_error>String to replace not found in "
                                                              "file.\nString: x</tool_use_error>"}]}}]}
    toolkinds.annotate(doc, "claude", "/w")
    assert call["extra"]["failed"] is True and toolkinds.writes(doc) == []


# shell writes are paths ----------------------------------------------------------------------------
def test_shell_variables_globs_and_folders_are_not_files():
    """A test run as the sessions of issue 41 ran it: `f=$(mktemp)` then `printf … > "$f"`."""
    assert toolkinds.shell_writes('f=$(mktemp) && printf "a\\n" > "$f" && ./run.sh "$f"') == []
    assert toolkinds.shell_writes('f1=$(mktemp); f2=$(mktemp); printf x > "$f1"; cat a > ${OUT}') == []
    assert toolkinds.shell_writes("echo x > `mktemp` ; echo y > out/*.txt ; cp a.txt build/") == []
    assert toolkinds.shell_writes("mkdir -p dist && cp a.txt dist && echo ok > dist/log.txt") == ["dist/log.txt"]
    assert toolkinds.shell_writes("cp a b c/ ; mv x y dest") == []
    assert toolkinds.shell_writes("echo hi > note.txt") == ["note.txt"]


# commits -------------------------------------------------------------------------------------------
def commit_session(tmp_path, steps) -> str:
    env = base_env(tmp_path)
    folder = claude_home(env, [])
    with open(os.path.join(folder, "c0ffee00-0000-4000-8000-000000000001.jsonl"), "w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in steps)
    return exported(env, tmp_path / "out")


def changed_repo(tmp_path, tracked: int, new: int):
    """A repository with `tracked` committed files, each then changed, and `new` files created."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "feature")
    names = [f"pkg/f{i}.go" for i in range(tracked)]
    (repo / "pkg").mkdir()
    for name in names:
        (repo / name).write_text("package pkg\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    for name in names:
        (repo / name).write_text("package pkg\n\nvar X = 1\n")
    added = [f"pkg/n{i}.go" for i in range(new)]
    for name in added:
        (repo / name).write_text("package pkg\n")
    return repo, names + added


@needs("git")
def test_a_four_file_commit_names_its_four_files_with_gits_count(tmp_path):
    """git names only the new file (`create mode`) and prints "4 files changed": the `git add`
    of all four just before names the others; `2>&1` is a redirection, not a file."""
    repo, names = changed_repo(tmp_path, 3, 1)
    add = git(repo, "add", *names)
    out = git(repo, "commit", "-m", "Add the queue")
    assert "4 files changed" in out and out.count("create mode") == 1
    cwd = str(repo)
    files = commit_session(tmp_path, [
        record("user", 0, "commit the queue", cwd=cwd),
        bash(1, "t1", f"git add {' '.join(names)} 2>&1", cwd), result(2, "t1", add, False, cwd),
        bash(3, "t2", "git commit -m 'Add the queue' 2>&1", cwd), result(4, "t2", out, False, cwd),
        record("assistant", 5, [{"type": "text", "text": "Committed."}], cwd=cwd)])
    card = one_card(files)
    line = next(line for line in card.splitlines() if line.startswith("- `"))
    assert "on feature: Add the queue (3) — 4 files changed, +7 -0; " in line
    assert line.endswith("pkg/n0.go, " + ", ".join(names[:3])) and "2>&1" not in line


@needs("git")
def test_a_fourteen_file_commit_names_fourteen(tmp_path):
    repo, names = changed_repo(tmp_path, 12, 2)
    git(repo, "add", *names[:7])
    git(repo, "add", *names[7:])
    out = git(repo, "commit", "-m", "Wire the scheduler")
    assert " 14 files changed" in out
    cwd = str(repo)
    files = commit_session(tmp_path, [
        record("user", 0, "commit", cwd=cwd),
        bash(1, "t1", f"git add {' '.join(names[:7])}", cwd), result(2, "t1", "", False, cwd),
        bash(3, "t2", f"git add {' '.join(names[7:])} && git commit -m 'Wire the scheduler'", cwd),
        result(4, "t2", out, False, cwd),
        record("assistant", 5, [{"type": "text", "text": "Done."}], cwd=cwd)])
    commit = next(line for line in one_card(files).splitlines() if line.startswith("- `"))
    assert "— 14 files changed, +26 -0; " in commit and "(+6 more)" in commit and " of 14 named" not in commit


@needs("git")
def test_a_commit_of_every_change_names_the_files_the_session_wrote(tmp_path):
    """`git commit -am`: git names no file (no new one), yet the session edited two before it;
    a commit of which fewer files are known than git counted says so."""
    repo, names = changed_repo(tmp_path, 3, 0)
    out = git(repo, "commit", "-am", "Tune")
    assert "3 files changed" in out and "create mode" not in out
    cwd = str(repo)
    edits = [record("assistant", 1 + i, [{"type": "tool_use", "id": f"e{i}", "name": "Write",
                                          "input": {"file_path": f"{cwd}/{names[i]}", "content": "var X = 1\n"}}],
                    cwd=cwd) for i in range(2)]
    done = [record("user", 3 + i, [{"type": "tool_result", "tool_use_id": f"e{i}",
                                     "content": f"File created successfully at: {cwd}/{names[i]}"}], cwd=cwd)
            for i in range(2)]
    files = commit_session(tmp_path, [
        record("user", 0, "tune it", cwd=cwd), edits[0], done[0], edits[1], done[1],
        bash(5, "t2", "git commit -am 'Tune'", cwd), result(6, "t2", out, False, cwd),
        record("assistant", 7, [{"type": "text", "text": "Done."}], cwd=cwd)])
    commit = next(line for line in one_card(files).splitlines() if line.startswith("- `"))
    assert commit.endswith(f"— 3 files changed, +6 -0; 2 of 3 named; {names[0]}, {names[1]}")


# branches, modes, outcome, requests ----------------------------------------------------------------
def test_the_branch_of_every_agent_that_records_one(tmp_path):
    """Claude Code's `gitBranch` (every line), Codex's `git.branch` (its meta), Copilot's and
    Qwen's and Cline's (its manifest's `metadata.git`): on the card, in INDEX.md and in `list --json`."""
    for store in ("claude-2.1.332", "codex-0.171.0", "copilot-1.0.102", "qwen-0.24.4", "cline-3.0.65"):
        home = tmp_path / store
        shutil.copytree(os.path.join(LIVE, store), home, symlinks=True)
        env = base_env(tmp_path / (store + "-x"), home=str(home))
        files = exported(env, tmp_path / (store + "-out"))
        for name, data in files.items():
            if name.endswith(".card.md"):
                assert " · branch: master" in data.decode(), (store, name)
                assert store != "cline-3.0.65" or " · mode: act · " in data.decode()  # its manifest's mode
        header, _, *rows = [[c.strip() for c in line.split("|")[1:-1]]
                            for line in files["INDEX.md"].decode().splitlines() if line.startswith("|")]
        assert rows and all(row[header.index("Branch")] == "master" for row in rows), store
        listed = [json.loads(line) for line in cli("list", "--all", "--json", env=env).stdout.splitlines()]
        assert listed and all(r["branch"] == "master" and r["branches"] == ["master"] for r in listed), store


def test_the_branch_and_modes_of_a_real_claude_session(tmp_path):
    env = base_env(tmp_path)
    claude_home(env, [os.path.join(TITLES, f"{REFUSED_WRITE}.jsonl")])
    card = one_card(exported(env, tmp_path / "out"))
    assert " · branch: xwt-dev · mode: default, acceptEdits · " in card


def test_an_answer_then_an_unanswered_request_is_not_no_answer():
    steps = [{"step_id": 1, "source": "user", "message": "do it"}, {"step_id": 2, "source": "agent", "message": "done"},
             {"step_id": 3, "source": "user", "message": "and the docs?"}]
    assert cards.outcome({"steps": steps}) == "answered, then a request left unanswered (step 3)"
    assert cards.outcome({"steps": steps[:1]}) == "no answer"


def test_a_request_typed_twice_is_listed_twice():
    steps = [{"step_id": 1, "source": "user", "message": "run the tests"}, {"step_id": 2, "source": "agent", "message": "ok"},
             {"step_id": 3, "source": "user", "message": "run the tests"}, {"step_id": 4, "source": "agent", "message": "ok"}]
    assert cards.facts({"steps": steps, "extra": {}})["requests"] == [(1, "run the tests"), (3, "run the tests")]


# the user's decisions and the session's mode (issue 41) -------------------------------------------
REAL_CODEX = os.path.join(SAMPLES, "codex", "agent-history-real", "session-01_v0.135.0.jsonl")
QUESTIONS = {"questions": [{"id": "output_kind", "header": "出力", "question": "何を生成しますか？",
                            "options": [{"label": "テンプレート生成", "description": "雛形を出力する"},
                                        {"label": "直接編集", "description": "ファイルを書き換える"}]}]}


def codex_plan_rollout(home) -> None:
    """A Codex rollout in Plan mode, in the real 0.135.0 sample's shapes (its meta and turn
    lines, kept), with a `request_user_input` call and its output as Codex writes them
    (`{"answers": {id: {"answers": [label]}}}`, codex-rs's RequestUserInputResponse: no real
    sample holds one) and a test run with `f=$(mktemp)` as issue 41's sessions ran it."""
    with open(REAL_CODEX, encoding="utf-8") as handle:
        real = [json.loads(line) for line in handle]
    meta, started, turn = real[0], real[1], real[4]
    started["payload"]["collaboration_mode_kind"] = "plan"
    turn["payload"]["collaboration_mode"] = {"mode": "plan", "settings": {"model": "gpt-5.5"}}
    at = "2026-06-05T04:58:2"

    def item(n, payload):
        return {"timestamp": f"{at}{n}.000Z", "type": "response_item", "payload": payload}

    lines = [meta, started, turn,
             item(3, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "雛形を作って"}]}),
             item(4, {"type": "function_call", "name": "request_user_input", "call_id": "call_q1",
                      "arguments": json.dumps(QUESTIONS, ensure_ascii=False)}),
             item(5, {"type": "function_call_output", "call_id": "call_q1",
                      "output": json.dumps({"answers": {"output_kind": {"answers": ["テンプレート生成"]}}},
                                           ensure_ascii=False)}),
             item(6, {"type": "function_call", "name": "exec_command", "call_id": "call_t1",
                      "arguments": json.dumps({"cmd": "f=$(mktemp) && printf 'a\\nb\\n' > \"$f\" && ./gen.sh \"$f\""})}),
             item(7, {"type": "function_call_output", "call_id": "call_t1", "output": "ok"}),
             item(8, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "雛形です。"}]})]
    folder = os.path.join(home, ".codex", "sessions", "2026", "06", "05")
    os.makedirs(folder)
    with open(os.path.join(folder, "rollout-2026-06-05T04-58-20-019e9625-802f-7e91-840a-cfe88d14117a.jsonl"),
              "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


def test_codex_answers_and_plan_mode_are_on_the_card(tmp_path):
    env = base_env(tmp_path)
    codex_plan_rollout(env["HOME"])
    card = one_card(exported(env, tmp_path / "out"))
    assert " · mode: plan · " in card
    assert "\n- 2: (the title)\n- 3: [answer] 何を生成しますか？ → テンプレート生成\n" in card
    assert "$f" not in card.split("## Commands")[0]  # no file written


def claude_decisions(folder) -> None:
    """A Claude Code transcript, in its records' shapes, with an AskUserQuestion answered and a
    plan approved (ExitPlanMode): the results' text is Claude Code's own (`User has answered
    your questions: "Q"="A". You can now continue with the user's answers in mind.`, `User has
    approved your plan. You can now start coding. ...`); no real sample holds one, those in
    samples/claude only list the tools."""
    cwd = "/work/app"
    ask = {"questions": [{"question": "Which store?", "header": "Store", "multiSelect": False,
                          "options": [{"label": "SQLite", "description": "one file"},
                                      {"label": "Postgres", "description": "a server"}]}]}
    plan = "# Plan\n1. Add the store\n"
    records = [record("user", 0, "add a store", cwd=cwd, permissionMode="plan", gitBranch="feat-store"),
               record("assistant", 1, [{"type": "tool_use", "id": "q1", "name": "AskUserQuestion", "input": ask}],
                      cwd=cwd, gitBranch="feat-store"),
               record("user", 2, [{"type": "tool_result", "tool_use_id": "q1",
                                   "content": 'User has answered your questions: "Which store?"="SQLite". You can '
                                              "now continue with the user's answers in mind."}],
                      cwd=cwd, gitBranch="feat-store", toolUseResult={**ask, "answers": {"Which store?": "SQLite"}}),
               record("assistant", 3, [{"type": "tool_use", "id": "p1", "name": "Write",
                                        "input": {"file_path": "/root/.claude/plans/quiet-store.md", "content": plan}}],
                      cwd=cwd, gitBranch="feat-store"),
               record("user", 4, [{"type": "tool_result", "tool_use_id": "p1",
                                   "content": "File created successfully at: /root/.claude/plans/quiet-store.md"}],
                      cwd=cwd, gitBranch="feat-store"),
               record("assistant", 5, [{"type": "tool_use", "id": "x1", "name": "ExitPlanMode", "input": {"plan": plan}}],
                      cwd=cwd, gitBranch="feat-store"),
               record("user", 6, [{"type": "tool_result", "tool_use_id": "x1",
                                   "content": "User has approved your plan. You can now start coding. Start with "
                                              "updating your todo list if applicable\n\nYour plan has been saved to: "
                                              "/root/.claude/plans/quiet-store.md"}],
                      cwd=cwd, gitBranch="feat-store", permissionMode="acceptEdits"),
               record("assistant", 7, [{"type": "tool_use", "id": "w1", "name": "Write",
                                        "input": {"file_path": "/work/app/store.py", "content": "import sqlite3\n"}}],
                      cwd=cwd, gitBranch="feat-store"),
               record("user", 8, [{"type": "tool_result", "tool_use_id": "w1",
                                   "content": "File created successfully at: /work/app/store.py"}],
                      cwd=cwd, gitBranch="feat-store"),
               record("assistant", 9, [{"type": "text", "text": "Added store.py."}], cwd=cwd, gitBranch="feat-store")]
    with open(os.path.join(folder, "c0ffee00-0000-4000-8000-000000000002.jsonl"), "w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)


def test_claude_answers_plan_approval_mode_and_the_plan_file_apart(tmp_path):
    env = base_env(tmp_path)
    claude_decisions(claude_home(env, []))
    files = exported(env, tmp_path / "out")
    card = one_card(files)
    assert " · branch: feat-store · mode: plan, acceptEdits" in card
    assert "- 1: (the title)\n- 2: [answer] Which store? → SQLite\n- 4: [plan approved]\n" in card
    assert "## Files written or edited (1)\n- store.py (5)\n- outside the directory: /root/.claude/plans/quiet-store.md (3)\n" in card
    index = files["INDEX.md"].decode()
    assert "| store.py; 1 outside the project |" in index and "quiet-store" not in index


# sessions that belong together (issue 36 item 4) --------------------------------------------------
def two_agents_one_file(env, project: str) -> None:
    """A Claude Code session that writes store.py, then, an hour later, a Codex session (in the
    real 0.135.0 rollout's shapes) on the same branch that rewrites it: each card names the other."""
    folder = claude_home(env, [])
    steps = [record("user", 0, "design the store", cwd=project, gitBranch="feat-store"),
             record("assistant", 1, [{"type": "tool_use", "id": "w1", "name": "Write",
                                      "input": {"file_path": f"{project}/store.py", "content": "x = 1\n"}}],
                    cwd=project, gitBranch="feat-store"),
             record("user", 2, [{"type": "tool_result", "tool_use_id": "w1",
                                 "content": f"File created successfully at: {project}/store.py"}],
                    cwd=project, gitBranch="feat-store"),
             record("assistant", 3, [{"type": "text", "text": "Designed."}], cwd=project, gitBranch="feat-store")]
    with open(os.path.join(folder, "c0ffee00-0000-4000-8000-000000000003.jsonl"), "w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in steps)
    with open(REAL_CODEX, encoding="utf-8") as handle:
        meta, started, *_ = [json.loads(line) for line in handle]
    meta["payload"].update(cwd=project, git={"commit_hash": "27a6d0f", "branch": "feat-store"})
    for line in (meta, started):
        line["timestamp"] = line["payload"]["timestamp"] = "2026-11-30T11:00:00.000Z"

    def item(n, payload):
        return {"timestamp": f"2026-11-30T11:00:0{n}.000Z", "type": "response_item", "payload": payload}

    lines = [meta, started,
             item(1, {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "build the store"}]}),
             item(2, {"type": "function_call", "name": "exec_command", "call_id": "c1",
                      "arguments": json.dumps({"cmd": "printf 'x = 2\\n' > store.py"})}),
             item(3, {"type": "function_call_output", "call_id": "c1", "output": ""}),
             item(4, {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Built."}]})]
    rollouts = os.path.join(env["HOME"], ".codex", "sessions", "2026", "11", "30")
    os.makedirs(rollouts)
    with open(os.path.join(rollouts, "rollout-2026-11-30T11-00-00-019e9625-802f-7e91-840a-cfe88d14117b.jsonl"),
              "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)


def test_a_card_names_the_other_agents_session_on_the_same_file_and_branch(tmp_path):
    from mount import memoryfs
    from test_memory import read_all

    env = base_env(tmp_path)
    two_agents_one_file(env, "/work/proj")
    files = exported(env, tmp_path / "out")
    cards_of = {name.split("_")[1]: data.decode() for name, data in files.items() if name.endswith(".card.md")}
    codex_file = next(n for n in files if "_codex_" in n and n.endswith(".atif.json"))
    claude_file = next(n for n in files if "_claude_" in n and n.endswith(".atif.json"))
    assert cards_of["claude"].endswith(f"\n## Related sessions (1)\n- {codex_file[:-10].rsplit('_', 1)[1]}: same "
                                       "files: store.py; same branch: feat-store; 1 h later\n")
    assert cards_of["codex"].endswith(f"\n## Related sessions (1)\n- {claude_file[:-10].rsplit('_', 1)[1]}: same "
                                      "files: store.py; same branch: feat-store; 1 h earlier\n")
    fs = memoryfs.MemoryFS("/work/proj", env)  # the mount serves the same bytes, sized alike
    for name, data in files.items():
        if name.endswith(".card.md"):
            assert fs.getattr("/" + name)["st_size"] == len(data) and read_all(fs, name)[0] == data


def test_a_command_whose_output_quotes_a_refusal_still_wrote():
    """Only a result that says the refusal first is one: grep's lines may quote those words."""
    call = {"tool_call_id": "b1", "function_name": "Bash",
            "arguments": {"command": "grep -rn 'was NOT written' src > hits.txt; cat hits.txt"}}
    doc = {"steps": [{"step_id": 1, "source": "agent", "message": "", "tool_calls": [call],
                      "observation": {"results": [{"source_call_id": "b1", "content":
                                                   "src/guard.py:3: # the new_string was NOT written to the file"}]}}]}
    toolkinds.annotate(doc, "claude", "/w")
    assert call["extra"]["paths"] == ["/w/hits.txt"] and "refused" not in call["extra"]


def test_a_plan_rejected_with_the_users_words():
    """Claude Code's result when the user rejects a plan and says why (its own wording)."""
    said = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
            "edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
            "keep SQLite, drop the migration step")
    doc = {"steps": [{"step_id": 1, "source": "user", "message": "plan the store"},
                     {"step_id": 2, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": "x1", "function_name": "ExitPlanMode", "arguments": {"plan": "# P"}}],
                      "observation": {"results": [{"source_call_id": "x1", "content": said}]}}], "extra": {}}
    assert cards.facts(doc)["requests"] == [(1, "plan the store"),
                                            (2, "[plan rejected] keep SQLite, drop the migration step")]


def test_a_question_tool_that_was_not_answered_is_no_decision():
    """Codex outside Plan mode answers its own call: `request_user_input is unavailable in Default mode`."""
    doc = {"steps": [{"step_id": 1, "source": "agent", "message": "",
                      "tool_calls": [{"tool_call_id": "q", "function_name": "request_user_input",
                                      "arguments": QUESTIONS}],
                      "observation": {"results": [{"source_call_id": "q",
                                                   "content": "request_user_input is unavailable in Default mode"}]}}]}
    assert cards.decisions(doc) == []


def test_windows_null_device_is_no_file():
    """samples/cline/mra04242026 (a real Cline task on Windows) ran commands ending in `2>nul`
    dozens of times: `nul` was listed as the one file it wrote."""
    with open(os.path.join(SAMPLES, "cline", "mra04242026", "api_conversation_history.json"), encoding="utf-8") as handle:
        assert "dir terraform.tfvars 2>nul || echo" in handle.read()
    assert toolkinds.shell_writes('cd c:\\Apps\\MRA04242026\\terraform && dir terraform.tfvars 2>nul || '
                                  'echo "File not found"') == []
    assert toolkinds.shell_writes("dir > NUL & echo x > out.txt") == ["out.txt"]


def test_a_real_aider_session_its_requests_typed_twice_its_outcome_and_its_commits(tmp_path):
    """samples/aider/doc_processor: every prompt is a command with its words (`/ask ...`,
    `/architect ...`), the first typed twice (steps 2 and 7); it ends on `/commit`, which Aider
    ran and answered (`Commit f85ada7 ...`); Aider made four commits of the files it edited."""
    from agents import aider
    from rendering import documents
    from test_agent_aider import project_copy

    env = base_env(tmp_path)
    path = project_copy(tmp_path, os.path.join(SAMPLES, "aider", "doc_processor", aider.HISTORY_FILE))
    (session,) = aider.scan(path, env)
    found = cards.facts(documents.translate(session, env))
    first = [step for step, text in found["requests"] if text.startswith("/ask can you tell me the steps")]
    assert first == [2, 7] and len(found["requests"]) == 11  # `/commit`, `/res`, `/com` carry no words
    assert found["outcome"] == "completed"
    assert [(c["hash"], c["files"]) for c in found["commits"]] == [
        ("0d8ad7d", ["task.md", "doc_processor.py", "requirements.txt"]), ("a774d48", ["doc_processor.py"]),
        ("e91257b", ["doc_processor.py"]), ("f85ada7", ["doc_processor.py"])]


def test_droid_modes_from_its_settings(tmp_path):
    """Factory Droid keeps the session's `interactionMode` and `autonomyMode` in `<id>.settings.json`."""
    home = tmp_path / "home"
    shutil.copytree(os.path.join(LIVE, "droid-0.215.0"), home, symlinks=True)
    env = base_env(tmp_path, home=str(home))
    files = exported(env, tmp_path / "out")
    cards_made = [data.decode() for name, data in files.items() if name.endswith(".card.md")]
    assert cards_made and all(" · mode: auto, auto-high · " in card for card in cards_made)
