"""The CLI as a user meets it: project scoping, ids that compose across commands, export, and
one clear line (never a traceback) for every mistake."""

import json
import os
import re
import shutil

import pytest

from helpers import base_env, cli, live_claude_in, run_main


@pytest.fixture
def store(tmp_path):
    """A $HOME with the live Claude store, its sessions recorded in two real project folders
    whose names share a prefix (proj-claude, proj-claude-other); proj-claude is a git repo."""
    env = base_env(tmp_path)
    projects = tmp_path / "work"
    for name in ("proj-claude", "proj-claude-other"):
        (projects / name / "src").mkdir(parents=True)
    (projects / "proj-claude" / ".git").mkdir()
    live_claude_in(env, projects)
    return env, projects


def listing(env, *args, cwd=None):
    result = cli("list", "--json", *args, env=env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_list_scopes_to_the_git_project_of_the_current_directory(store):
    env, projects = store
    inside = listing(env, cwd=str(projects / "proj-claude" / "src"))
    assert sorted(r["first_message"].split()[1] for r in inside) == ["claude-1", "claude-2"]
    other = listing(env, "--dir", str(projects / "proj-claude-other"))
    assert [r["first_message"].split()[1] for r in other] == ["claude-3"]
    assert len(listing(env, "--all")) == 3
    # --dir is taken as given: sessions recorded in its parent are not inside it
    assert listing(env, "--dir", str(projects / "proj-claude" / "src")) == []
    assert len(listing(env, cwd=str(projects))) == 3  # no git here: the directory is the project


def test_list_table_shape(store):
    env, projects = store
    result = cli("list", "--all", "--steps", env=env)
    lines = result.stdout.decode().splitlines()
    assert lines[0] == "## Sessions of every project — 3 session(s)"
    assert lines[2] == "| ID | Agent | Date | Steps | Project | Title |"
    row = re.compile(r"^\| `cl-[0-9a-f]{8}` \| claude \| 2026-11-29 \| \d+ \| \S*proj-claude(-other)? \| SCENARIO claude-\d\w? in .*\|$")
    assert all(row.match(line) for line in lines[4:]), lines[4:]


def test_show_export_and_ids_compose(store, tmp_path):
    env, _ = store
    records = listing(env, "--all", "--steps")
    out = tmp_path / "out"
    exported = cli("export", "--all", "--out", str(out), env=env)
    assert exported.returncode == 0, exported.stderr
    names = sorted(os.listdir(out))
    documents = [r["file"] for r in records]  # and each one's card and transcript beside it, in `.atif/`
    assert names == sorted(["README.md", "INDEX.md", ".atif"] + documents + [d.replace(".atif.json", ".card.md") for d in documents]
                           + [d.replace(".atif.json", ".transcript.md") for d in documents])
    assert sorted(os.listdir(out / ".atif")) == sorted(documents)
    assert all(os.readlink(out / d) == os.path.join(".atif", d) for d in documents)
    for record in records:
        assert re.fullmatch(r"2026-11-29_claude_cl-[0-9a-f]{8}\.atif\.json", record["file"])
        shown = cli("show", record["id"], env=env)
        assert shown.returncode == 0
        assert shown.stdout == (out / record["file"]).read_bytes()
        assert json.loads(shown.stdout)["extra"]["short_id"] == record["id"]
        by_native = cli("show", record["native_id"][:8], env=env)
        assert by_native.stdout == shown.stdout
        by_file = cli("show", record["file"], env=env)
        assert by_file.stdout == shown.stdout
        assert len(json.loads(shown.stdout)["steps"]) == record["steps"]
        assert len(shown.stdout) == record["bytes"]
    step = cli("show", records[0]["id"], "--step", "2", env=env)
    assert json.loads(step.stdout)["step_id"] == 2


def test_export_adds_and_updates_and_removes_only_with_delete(store, tmp_path):
    """Before: every `*_*_*.atif.json` this run did not write was removed, so a session its agent
    had deleted vanished from the folder, and so did a second project's files."""
    env, projects = store
    out = tmp_path / "out"
    cli("export", "--all", "--out", str(out), env=env)
    sessions = sorted(n for n in os.listdir(out) if n.endswith(".atif.json"))
    assert len(sessions) == 3
    shutil.rmtree(os.path.join(env["HOME"], ".claude", "projects", "-tmp-agents-proj-claude-other"))
    (out / "notes.txt").write_text("mine")
    (out / "2026-01-01_claude_cl-00000000.atif.json").write_text("mine too")  # named like ours, not ours
    assert cli("export", "--all", "--out", str(out), env=env).returncode == 0
    assert set(sessions) <= set(os.listdir(out)), "export removed a file without --delete"
    assert "3 session(s)" in (out / "README.md").read_text()
    done = cli("export", "--all", "--delete", "--out", str(out), env=env)
    assert done.returncode == 0 and b"removed 3" in done.stderr  # the deleted session's document, card, transcript
    left = sorted(n for n in os.listdir(out) if n.endswith(".atif.json"))
    assert len(left) == 3 and "2026-01-01_claude_cl-00000000.atif.json" in left
    assert sorted(os.listdir(out / ".atif")) == [n for n in left if n != "2026-01-01_claude_cl-00000000.atif.json"]
    assert (out / "notes.txt").read_text() == "mine"
    readme = (out / "README.md").read_text()
    assert "2 session(s)" in readme and "jq" in readme


def test_a_second_projects_export_keeps_the_firsts(store, tmp_path):
    env, projects = store
    out = tmp_path / "out"
    cli("export", "--dir", str(projects / "proj-claude"), "--out", str(out), env=env)
    cli("export", "--dir", str(projects / "proj-claude-other"), "--out", str(out), env=env)
    assert len([n for n in os.listdir(out) if n.endswith(".atif.json")]) == 3


def test_export_on_every_core_writes_what_one_process_writes(store, tmp_path, monkeypatch):
    """Each worker renders and writes its sessions' files and hands back their facts: the
    files, the README and the facts `list` then shows are those of a serial export."""
    from core import parallel

    env, _ = store
    done = {}
    for cores in (1, 2):
        monkeypatch.setattr(parallel, "cores", lambda: cores)
        here = {**env, "XDG_CACHE_HOME": str(tmp_path / f"cache-{cores}")}  # each renders all
        out = tmp_path / f"out-{cores}"
        assert run_main(here, ["export", "--all", "--out", str(out)]).returncode == 0
        rows = [json.loads(line) for line in run_main(here, ["list", "--all", "--json"]).stdout.splitlines()]
        done[cores] = {n: (out / n).read_bytes() for n in os.listdir(out) if (out / n).is_file()}, rows
    assert len(done[1][0]) == 11 and all(r["steps"] for r in done[1][1])  # 3 sessions, cards, transcripts, README, INDEX
    assert done[2] == done[1]


def test_a_listing_translates_nothing(store, monkeypatch):
    """The Steps column comes from documents rendered before, never from rendering: before,
    `list` translated every session of the listing to count its steps."""
    from rendering import doccache, documents

    env, _ = store
    cache = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", doccache.FOLDER)
    monkeypatch.setattr(documents, "_translated", lambda *a: pytest.fail("list translated a session"))
    rows = [json.loads(line) for line in run_main(env, ["list", "--all", "--json"]).stdout.splitlines()]
    assert len(rows) == 3 and all(r["steps"] is None and r["bytes"] is None for r in rows)
    assert not os.path.exists(cache) or os.listdir(cache) == []
    monkeypatch.undo()
    shown = run_main(env, ["show", rows[0]["id"]]).stdout
    again = {r["id"]: r for r in map(json.loads, run_main(env, ["list", "--all", "--json"]).stdout.splitlines())}
    assert again[rows[0]["id"]]["steps"] == len(json.loads(shown)["steps"]) and again[rows[0]["id"]]["bytes"] == len(shown)
    assert [r["steps"] for i, r in again.items() if i != rows[0]["id"]] == [None, None]
    table = run_main(env, ["list", "--all"]).stdout.decode()
    assert table.count("| claude | 2026-11-29 |  |") == 2


@pytest.mark.parametrize("args,message", [
    (["show", "cl-ffffffff"], "no session with id 'cl-ffffffff'"),
    (["list", "--dir", "/no/such/dir"], "--dir /no/such/dir: no such directory"),
    (["list", "--agent", "nope"], "unknown agent 'nope'"),
    (["show", "x", "--step", "notanumber"], "invalid int value"),
    (["frobnicate"], "unknown command 'frobnicate' (commands: list,"),
])
def test_mistakes_give_one_clear_line_and_exit_2(store, args, message):
    env, _ = store
    result = cli(*args, env=env)
    assert result.returncode == 2
    assert message in result.stderr.decode()
    assert b"Traceback" not in result.stderr


def test_step_out_of_range(store):
    env, _ = store
    first = listing(env, "--all")[0]
    result = cli("show", first["id"], "--step", "99", env=env)
    assert result.returncode == 2 and b"has steps 1.." in result.stderr


def test_version_and_help():
    env = {"PATH": os.environ["PATH"], "HOME": "/nonexistent"}
    assert re.fullmatch(rb"trajectoriz \d+\.\d+\.\d+\n", cli("--version", env=env, cwd="/").stdout)
    help_text = cli("--help", env=env, cwd="/").stdout.decode()
    for command in ("list", "show", "export", "validate"):
        assert command in help_text


def test_empty_home_lists_nothing(tmp_path):
    env = base_env(tmp_path)
    result = cli("list", "--all", env=env)
    assert result.returncode == 0 and "0 session(s)" in result.stdout.decode()


def test_the_readme_beside_the_files_fits_the_directory(store, tmp_path):
    """Before: its searches lacked --local, it assumed trajectoriz on PATH, listed agents that had
    no session there, and an export of every project said "this project" in its body."""
    from core import invocation

    env, projects = store
    project = str(projects / "proj-claude")
    cli("export", "--dir", project, "--out", str(tmp_path / "one"), env=env)
    readme = (tmp_path / "one" / "README.md").read_text()
    assert f"# Trajectory memory of {project}" in readme and "sessions of this project (2 session(s))" in readme
    assert "written by claude (2)," in readme and "codex" not in readme and "opencode" not in readme
    assert f"{invocation.shown_command()} search --local \"words" in readme
    cli("export", "--all", "--out", str(tmp_path / "all"), env=env)
    everything = (tmp_path / "all" / "README.md").read_text()
    assert "# Trajectory memory of every project" in everything and "this project" not in everything
    assert "--local" in everything.split("## jq")[0] and "search \"words" in everything


def test_an_unknown_option_of_a_command_gets_that_commands_usage(store):
    """Before: `list --bogus` printed the whole program's usage."""
    env, _ = store
    result = cli("list", "--bogus", env=env)
    assert result.returncode == 2
    assert b"usage: trajectoriz list" in result.stderr and b"unrecognized arguments: --bogus" in result.stderr
    assert b"usage: trajectoriz list" not in cli("--bogus", "list", env=env).stderr


def test_empty_listings_say_where_the_sessions_are(store, tmp_path):
    env, projects = store
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    here = cli("list", env=env, cwd=str(elsewhere)).stdout.decode()
    assert f"## Sessions of {elsewhere} (no git work tree here: the current directory is the project) — 0" in here
    assert "None of the 3 session(s) found ran in" in here and "list --all" in here
    nothing = base_env(tmp_path / "empty")
    empty = cli("list", env=nothing, cwd=str(elsewhere)).stdout.decode()
    assert "No agent's sessions were found under" in empty and "trajectoriz agents" in empty
    inside = cli("list", env=env, cwd=str(projects / "proj-claude" / "src")).stdout.decode()
    assert "no git work tree" not in inside


def test_agents_says_which_sessions_are_in_no_project(store):
    env, _ = store
    folder = os.path.join(env["HOME"], ".claude", "projects", "-tmp-agents-proj-claude-other")
    path = os.path.join(folder, os.listdir(folder)[0])
    with open(path, encoding="utf-8") as handle:
        text = re.sub(r'"cwd":"[^"]*",?', "", handle.read())
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    report = cli("agents", env=env).stdout.decode()
    assert "1 session(s) recorded no working directory, so they are in no project" in report


def test_a_misspelled_command_or_option_gets_a_did_you_mean(store):
    """Issue 42: `trajectoriz lsit` says which command was meant, on its one error line."""
    env, _ = store
    result = cli("lsit", env=env)
    assert result.returncode == 2
    assert result.stderr.decode().splitlines()[-1].startswith(
        "trajectoriz: error: unknown command 'lsit'; did you mean 'list'? (commands: list, show,")
    option = cli("list", "--stpes", env=env)
    assert option.returncode == 2
    assert option.stderr.decode().splitlines()[-1] == (
        "trajectoriz list: error: unrecognized arguments: --stpes; did you mean '--steps'?")
    assert b"did you mean" not in cli("xyzzy", env=env).stderr


def test_show_takes_a_short_id_without_its_agents_prefix(store):
    """Issue 42: `show cf7afd41` (an id of `list` without its `cl-`) shows that session when no
    other session's id or native id starts so."""
    env, _ = store
    for record in listing(env, "--all"):
        bare = record["id"].split("-", 1)[1]
        shown = cli("show", bare, env=env)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout == cli("show", record["id"], env=env).stdout
    missing = cli("show", "0000ffff", env=env)
    assert missing.returncode == 2 and b"no session with id '0000ffff'" in missing.stderr


def test_an_archived_session_keeps_its_step_count_once_its_file_is_deleted(store):
    """Issue 42: a session archived, then deleted by its agent, is listed from the archive with
    the same steps and size as before (its facts, recorded by `archive`, still hold: the same
    bytes)."""
    env, projects = store
    proj = str(projects / "proj-claude")
    assert cli("archive", env=env, cwd=proj).returncode == 0
    before = {r["id"]: r for r in listing(env, cwd=proj)}
    assert all(r["steps"] for r in before.values())
    gone = next(iter(before.values()))
    os.remove(gone["source"])
    after = {r["id"]: r for r in listing(env, cwd=proj)}
    assert after[gone["id"]]["archived"] is True
    assert [(r["steps"], r["bytes"]) for r in after.values()] == [(r["steps"], r["bytes"]) for r in before.values()]
    assert after[gone["id"]]["bytes"] == len(cli("show", gone["id"], env=env).stdout)
    table = cli("list", env=env, cwd=proj).stdout.decode()
    assert f"| `{gone['id']}` | claude | 2026-11-29 | {gone['steps']} |" in table
