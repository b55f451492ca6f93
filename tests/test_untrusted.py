"""Every path, name and field from a store is untrusted: one bad entry yields one warning, never
an exit, and no recorded path can make a command hang.

Each test builds a Claude Code store from the live recording (tests/fixtures/samples/live) and
breaks one thing in it the way a hostile or unlucky store would: a file name that is not UTF-8,
a working directory holding a NUL, one session id in two projects, a stray `.git` file above
the project, a working directory that leads into a FUSE mount whose server is stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import LIVE, base_env, cli, run_main

CLAUDE = os.path.join(LIVE, "claude-2.1.332", ".claude", "projects", "-tmp-agents-proj-claude")
SESSION = "348a3463-5332-480a-8329-09f4fe2cc499"
RECORDED_CWD = "/tmp/agents/proj-claude"

# Every command that reads the catalog, as a user would run it (the id is filled in).
EVERY_COMMAND = [["list"], ["list", "--all"], ["list", "--all", "--json"], ["search", "SCENARIO"],
                 ["search", "--json", "SCENARIO"], ["search", "--content", "note.txt"],
                 ["search", "--content", "--json", "note.txt"], ["stats"], ["stats", "--json"],
                 ["agents"], ["agents", "--json"], ["show", "{id}"], ["show", "--markdown", "{id}"]]


def claude_session(home: str, folder: str, name: str, cwd: str, session_id: str = SESSION) -> str:
    """The recorded Claude session, written to `folder/name` with its working directory `cwd`
    (JSON-escaped as the agent writes it) and its session id."""
    with open(os.path.join(CLAUDE, SESSION + ".jsonl"), encoding="utf-8") as handle:
        text = handle.read()
    text = text.replace(json.dumps(RECORDED_CWD), json.dumps(cwd)).replace(SESSION, session_id)
    directory = os.path.join(home, ".claude", "projects", folder)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(os.fsencode(directory), name if isinstance(name, bytes) else os.fsencode(name))
    with open(path, "wb") as handle:
        handle.write(text.encode("utf-8"))
    return os.fsdecode(path)


def listing(env, *args, cwd=None) -> list[dict]:
    result = run_main(env, ["list", "--json", *args], cwd=cwd)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def store(tmp_path) -> tuple[dict, str]:
    env = base_env(tmp_path)
    project = str(tmp_path / "proj")
    os.makedirs(project)
    claude_session(env["HOME"], "-proj", SESSION + ".jsonl", project)
    return env, project


# names and fields ---------------------------------------------------------------------------------
def test_a_file_name_that_is_not_utf8_breaks_no_command(tmp_path):
    env, project = store(tmp_path)
    claude_session(env["HOME"], "-proj", b"bad-\xff\xfe-name.jsonl", project, "0bad0000-0000-4000-8000-000000000000")
    rows = listing(env, "--all")
    assert len(rows) == 2
    odd = next(r for r in rows if "\ufffd" in r["source"])
    assert odd["native_id"] == "bad-\ufffd\ufffd-name"
    for command in EVERY_COMMAND:
        args = [part.format(id=odd["id"]) for part in command]
        result = run_main(env, args, cwd=project)
        assert result.returncode == 0, (args, result.stderr)
        result.stdout.decode("utf-8")  # what is printed is valid UTF-8
    shown = json.loads(run_main(env, ["show", odd["id"]], cwd=project).stdout)
    assert shown["session_id"] == "bad-\ufffd\ufffd-name"
    out = tmp_path / "out"
    assert run_main(env, ["export", "--all", "--out", str(out)], cwd=project).returncode == 0
    assert len(list(out.glob("*.atif.json"))) == 2


def test_a_working_directory_holding_a_nul_puts_its_session_in_no_project(tmp_path):
    from mount import memoryfs

    env, project = store(tmp_path)
    claude_session(env["HOME"], "-nul", "1a2b0000-0000-4000-8000-000000000000.jsonl", project + "\0/x",
                   "1a2b0000-0000-4000-8000-000000000000")
    assert [r["cwd"] for r in listing(env, cwd=project)] == [project]
    assert len(listing(env, "--all")) == 2
    local = run_main(env, ["search", "--local", "--json", "SCENARIO"], cwd=project)
    assert local.returncode == 0 and len(local.stdout.splitlines()) == 1, local.stderr
    fs = memoryfs.MemoryFS(project, env)
    assert len([n for n, _, _ in fs.readdir("/", None) if n.endswith(".atif.json")]) == 1
    report = json.loads(next(line for line in run_main(env, ["agents", "--json"]).stdout.splitlines()
                             if json.loads(line)["agent"] == "claude"))
    assert report["sessions_with_warnings"] == 1
    assert "not a usable path" in report["warnings"][0]["first"]


def test_one_session_id_in_two_projects_is_kept_in_each(tmp_path):
    env = base_env(tmp_path)
    first, second = str(tmp_path / "one"), str(tmp_path / "two")
    for project in (first, second):
        os.makedirs(project)
        claude_session(env["HOME"], "-" + os.path.basename(project), SESSION + ".jsonl", project)
    ones, twos = listing(env, "--dir", first), listing(env, "--dir", second)
    assert [r["cwd"] for r in ones] == [first] and [r["cwd"] for r in twos] == [second]
    assert ones[0]["id"] != twos[0]["id"]
    for row, project in ((ones[0], first), (twos[0], second)):
        shown = json.loads(run_main(env, ["show", row["id"]]).stdout)
        assert shown["extra"]["cwd"] == project
    assert {r["id"] for r in listing(env, "--all")} == {ones[0]["id"], twos[0]["id"]}
    ambiguous = run_main(env, ["show", SESSION])
    assert ambiguous.returncode == 2 and b"ambiguous" in ambiguous.stderr


def test_the_ids_of_twins_are_stable_across_runs(tmp_path):
    env = base_env(tmp_path)
    for project in ("one", "two"):
        os.makedirs(tmp_path / project)
        claude_session(env["HOME"], "-" + project, SESSION + ".jsonl", str(tmp_path / project))
    first = {r["id"]: r["cwd"] for r in listing(env, "--all")}
    shutil.rmtree(tmp_path / "cache")
    assert {r["id"]: r["cwd"] for r in listing(env, "--all")} == first


@pytest.mark.parametrize("stray", [b"", b"not a git pointer\n"])
def test_a_stray_git_file_above_the_project_does_not_widen_it(tmp_path, stray):
    env = base_env(tmp_path)
    parent = tmp_path / "work"
    project, sibling = parent / "proj", parent / "other"
    for n, folder in enumerate((project, sibling)):
        os.makedirs(folder)
        session_id = f"{n}a000000-0000-4000-8000-000000000000"
        claude_session(env["HOME"], "-" + folder.name, session_id + ".jsonl", str(folder), session_id)
    (parent / ".git").write_bytes(stray)
    assert [r["cwd"] for r in listing(env, cwd=str(project))] == [str(project)]


def test_a_linked_worktree_git_file_still_makes_a_project(tmp_path):
    env = base_env(tmp_path)
    top = tmp_path / "tree"
    inner = top / "src"
    os.makedirs(inner)
    (top / ".git").write_text("gitdir: /elsewhere/.git/worktrees/tree\n")
    claude_session(env["HOME"], "-tree", SESSION + ".jsonl", str(top))
    assert [r["cwd"] for r in listing(env, cwd=str(inner))] == [str(top)]


# a working directory that leads into a stopped FUSE mount ---------------------------------------------
STILL_FS = textwrap.dedent("""
    import errno, os, stat, sys
    os.environ.setdefault("FUSE_LIBRARY_NAME", "fuse3")
    import mfusepy

    class Still(mfusepy.Operations):
        use_ns = True
        def getattr(self, path, fh=None):
            if path in ("/", "/sub"):
                return {"st_mode": stat.S_IFDIR | 0o755, "st_nlink": 2}
            raise OSError(errno.ENOENT, "")
        def readdir(self, path, fh):
            return [".", "..", "sub"]

    mfusepy.FUSE(Still(), sys.argv[1], foreground=True, nothreads=True, ro=True, fsname="stillfs",
                 attr_timeout=0, entry_timeout=0)
""")


def fuse_problem():
    from mount import memory

    return memory.fuse_problem()


@pytest.fixture
def stopped_fuse(tmp_path):
    """A FUSE mount (not trajectoriz's) whose server is stopped: every stat inside it blocks."""
    from core import mounts

    problem = fuse_problem()
    if problem:
        pytest.skip(f"FUSE unavailable: {problem}")
    point = tmp_path / "mnt"
    point.mkdir()
    script = tmp_path / "still.py"
    script.write_text(STILL_FS)
    server = subprocess.Popen([sys.executable, str(script), str(point)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while mounts.find(str(point)) is None:
        assert time.monotonic() < deadline and server.poll() is None, "the FUSE server did not mount"
        time.sleep(0.05)
    os.kill(server.pid, signal.SIGSTOP)
    try:
        yield point
    finally:
        os.kill(server.pid, signal.SIGCONT)
        subprocess.run(["fusermount3", "-uz", str(point)], capture_output=True, timeout=20)
        server.kill()
        server.wait(timeout=20)


@pytest.mark.parametrize("how", ["through a symlink", "directly"])
def test_a_cwd_in_a_stopped_fuse_mount_hangs_no_command(tmp_path, stopped_fuse, how):
    """Before the fix, `list --all` blocked for good in the stat of the recorded directory."""
    env, project = store(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(stopped_fuse / "sub")
    cwd = str(link / "proj") if how == "through a symlink" else str(stopped_fuse / "sub" / "proj")
    claude_session(env["HOME"], "-fuse", "2c3d0000-0000-4000-8000-000000000000.jsonl", cwd,
                   "2c3d0000-0000-4000-8000-000000000000")
    for args in (["list", "--all"], ["list"], ["search", "--local", "SCENARIO"], ["stats", "--local"],
                 ["export", "--out", str(tmp_path / "out")]):
        try:
            result = cli(*args, env=env, cwd=project, timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{' '.join(args)} hung on a working directory inside a stopped FUSE mount")
        assert result.returncode == 0, (args, result.stderr)
    assert len(listing(env, "--all", cwd=project)) == 2
    assert [r["cwd"] for r in listing(env, cwd=project)] == [project]


# /dev/shm ------------------------------------------------------------------------------------------
def can_unshare() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not can_unshare(), reason="needs root and unshare -m to make /dev/shm read-only")
def test_commands_that_use_every_core_work_without_a_writable_dev_shm(tmp_path):
    """The process pool's locks live in /dev/shm: read-only there, the work is done in one
    process (before the fix: "internal error: OSError" from list, stats, agents, search)."""
    env, project = store(tmp_path)
    for n in range(3):
        claude_session(env["HOME"], "-proj", f"{n}0000000-0000-4000-8000-000000000000.jsonl", project,
                       f"{n}0000000-0000-4000-8000-000000000000")
    script = "; ".join(
        f"{sys.executable} {os.path.join(os.path.dirname(os.path.dirname(__file__)), 'trajectoriz.py')} "
        f"{' '.join(args)} >/dev/null || echo FAILED {args[0]}"
        for args in (["list"], ["stats"], ["agents"], ["search", "--content", "note.txt"], ["export", "--all", "--out", str(tmp_path / "o")]))
    result = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o ro tmpfs /dev/shm && {script}"],
                            env=env, cwd=project, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "FAILED" not in result.stdout, result.stdout + result.stderr
    assert "internal error" not in result.stderr, result.stderr


def test_a_crush_project_listed_inside_a_stopped_fuse_mount_hangs_nothing(tmp_path, stopped_fuse):
    """Crush's projects.json names data folders; one that leads into a stopped FUSE mount (or
    holds a NUL) must not be looked at."""
    env, project = store(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(stopped_fuse / "sub")
    listed = {"projects": [{"path": str(link / "p"), "data_dir": str(link / "p" / ".crush")},
                           {"path": "/x\u0000y", "data_dir": ".crush"}]}
    data = os.path.join(env["HOME"], ".local", "share", "crush")
    os.makedirs(data)
    with open(os.path.join(data, "projects.json"), "w") as handle:
        json.dump(listed, handle)
    try:
        result = cli("list", "--all", env=env, cwd=project, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("list --all hung on a Crush project listed inside a stopped FUSE mount")
    assert result.returncode == 0, result.stderr
