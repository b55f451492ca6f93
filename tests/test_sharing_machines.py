"""Issue 42's sharing findings, through a real bare repository as the remote: two machines of one
person (one git identity, two HOMEs, two clones) never overwrite each other's sessions, whatever
the order of their pushes and pulls, nor when the ref moves between a push's read and its update
(the lease); "nothing new" is decided against the remote's tip; a user without a git identity is
refused, not made a contributor everyone shares; `pull` reads the one remote there is; what is
shared names no pusher's home; `show` and the mount serve the same bytes for a session found
both here and in a pulled ref."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from helpers import base_env, needs, run_main
from test_blame import claude_session
from test_sharing import clone, git, pushed_ref, records, seeded_remote, teammate

from sharing import push as sharing_push

pytestmark = needs("git")


def machine(tmp_path, name: str) -> dict:
    """A HOME of its own for one of Dana's machines: the same git identity on each."""
    env = base_env(tmp_path / name, home=str(tmp_path / name / "home"))
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    git(env, env["HOME"], "config", "--global", "user.name", "Dana")
    git(env, env["HOME"], "config", "--global", "user.email", "dana@example.org")
    return env


@pytest.fixture
def dana(tmp_path):
    """A bare remote holding a project; Dana's laptop and desktop, each with a clone at its own
    path and one session of its own."""
    laptop, desktop = machine(tmp_path, "laptop"), machine(tmp_path, "desktop")
    remote = seeded_remote(tmp_path, laptop, {"README": "a project\n"})
    one = clone(laptop, remote, os.path.join(laptop["HOME"], "src", "proj"))
    two = clone(desktop, remote, os.path.join(desktop["HOME"], "work", "proj"))
    claude_session(laptop["HOME"], one, "l1", 1, "on the laptop", [])
    claude_session(desktop["HOME"], two, "d1", 2, "on the desktop", [])
    return remote, (laptop, one), (desktop, two)


def titles_on(remote: str, ref: str) -> list:
    manifest = json.loads(git(None, remote, "cat-file", "-p", f"{ref}:manifest.json"))
    return sorted(entry["title"] for entry in manifest["sessions"])


def pushed(env, cwd, *args) -> bytes:
    result = run_main(env, ["push", *args], cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_two_machines_of_one_person_never_overwrite_each_other(dana, tmp_path):
    """The issue's interleaving: the desktop pulled before the laptop's push, then pushes; the
    laptop pushes again. After each push the remote's ref holds every session pushed so far."""
    remote, (laptop, one), (desktop, two) = dana
    assert run_main(desktop, ["pull", "--remote", "origin"], cwd=two).returncode == 0
    pushed(laptop, one, "--remote", "origin")
    ref = pushed_ref(laptop, one)
    assert titles_on(remote, ref) == ["on the laptop"]
    pushed(desktop, two)
    assert pushed_ref(desktop, two) == ref  # one person, one contributor
    assert titles_on(remote, ref) == ["on the desktop", "on the laptop"]
    again = pushed(laptop, one)
    assert titles_on(remote, ref) == ["on the desktop", "on the laptop"]
    assert b"Nothing new to push: 2 session(s)" in again, again  # (the remote's tip holds both)

    bob = teammate(tmp_path, "bob")
    b = clone(bob, remote, os.path.join(bob["HOME"], "proj"))
    assert run_main(bob, ["pull", "--remote", "origin"], cwd=b).returncode == 0
    assert sorted(r["title"] for r in records(bob, b)) == ["on the desktop", "on the laptop"]


def test_nothing_new_is_decided_against_the_remote(dana):
    """The laptop's push is on the remote; the ref is then rewritten there without it (an older
    version on another machine): the next push sends it again instead of trusting its notes."""
    remote, (laptop, one), _ = dana
    pushed(laptop, one, "--remote", "origin")
    ref = pushed_ref(laptop, one)
    manifest = git(None, remote, "hash-object", "-w", "--stdin",
                   stdin=b'{"format":"trajectoriz-shared-1","contributor":"x","sessions":[]}').decode().strip()
    tree = git(None, remote, "mktree", stdin=f"100644 blob {manifest}\tmanifest.json\n".encode()).decode().strip()
    commit = git(None, remote, "commit-tree", "-m", "elsewhere", tree).decode().strip()
    git(None, remote, "update-ref", ref, commit)
    again = pushed(laptop, one)
    assert b"Nothing new" not in again and titles_on(remote, ref) == ["on the laptop"], again


def test_a_push_whose_ref_moved_after_it_was_read_retries_and_loses_nothing(dana, monkeypatch):
    """While the laptop writes its push (after it read the remote's tip), the desktop pushes a
    new session: the laptop's update no longer holds its lease, so it reads the tip again and
    pushes what both have."""
    remote, (laptop, one), (desktop, two) = dana
    pushed(laptop, one, "--remote", "origin")
    pushed(desktop, two, "--remote", "origin")
    claude_session(laptop["HOME"], one, "l2", 3, "later on the laptop", [])
    claude_session(desktop["HOME"], two, "d2", 4, "meanwhile on the desktop", [])
    write, raced, writes = sharing_push._write, [], []

    def racing(*args, **kwargs):
        writes.append(args[0].root)
        if not raced:  # (the desktop's push comes here too: it writes unhindered)
            raced.append("desktop")
            raced.append(pushed(desktop, two))
        return write(*args, **kwargs)

    monkeypatch.setattr(sharing_push, "_write", racing)
    said = pushed(laptop, one)
    assert b"Pushed 3 session(s)" in raced[1] and b"Pushed 4 session(s)" in said, said
    assert writes == [one, two, one]  # the laptop wrote, lost its lease, read the tip again, wrote again
    assert titles_on(remote, pushed_ref(laptop, one)) == \
        ["later on the laptop", "meanwhile on the desktop", "on the desktop", "on the laptop"]


def nobody(tmp_path, name: str) -> dict:
    """A container's environment: a HOME with nothing in it, no XDG config, no system config:
    no git identity at all."""
    home = str(tmp_path / name / "root")
    os.makedirs(home)
    return {"PATH": os.environ["PATH"], "HOME": home, "XDG_CONFIG_HOME": "", "GIT_CONFIG_NOSYSTEM": "1",
            "XDG_CACHE_HOME": str(tmp_path / name / "cache")}


def test_no_git_identity_is_refused_in_one_line_and_ci_keeps_one_ref(dana, tmp_path):
    """Two users without a git identity would both be `someone-e3b0c4` (the hash of the empty
    string) and overwrite each other: the push is refused, saying what to set, and nothing is
    written on the remote; a CI job named by TRAJECTORIZ_CONTRIBUTOR keeps one ref over runs."""
    remote = dana[0]
    for run in ("first", "second"):
        refs_before = git(None, remote, "for-each-ref", "refs/trajectoriz/")
        env = nobody(tmp_path, run)
        where = clone(env, remote, str(tmp_path / run / "builds" / "proj"))
        assert subprocess.run(["git", "config", "--get-regexp", "^user[.]"], cwd=where, env=env,
                              capture_output=True).stdout == b""
        claude_session(env["HOME"], where, f"ci-{run}", 5, f"the {run} run", [])
        for args in (["push", "--remote", "origin"], ["push", "--dry-run"]):
            refused = run_main(env, args, cwd=where)
            assert refused.returncode == 2 and refused.stderr.count(b"\n") == 1, refused.stderr
            assert refused.stderr.startswith(b"trajectoriz: no git identity") and b"user.email" in refused.stderr \
                and b"TRAJECTORIZ_CONTRIBUTOR=" in refused.stderr, refused.stderr
        assert git(None, remote, "for-each-ref", "refs/trajectoriz/") == refs_before
        git(env, where, "config", "trajectoriz.contributor", "someone-e3b0c4")  # what an older version kept
        assert run_main(env, ["push", "--remote", "origin"], cwd=where).returncode == 2
        assert git(None, remote, "for-each-ref", "refs/trajectoriz/") == refs_before
        pushed({**env, "TRAJECTORIZ_CONTRIBUTOR": "ci"}, where, "--remote", "origin")
    assert git(None, remote, "for-each-ref", "--format=%(refname)", "refs/trajectoriz/") == b"refs/trajectoriz/ci\n"
    assert titles_on(remote, "refs/trajectoriz/ci") == ["the first run", "the second run"]


def test_pull_in_a_fresh_clone_reads_its_only_remote_and_says_what_was_removed(dana, tmp_path):
    """`pull` with no remote named reads the one remote a fresh clone has (`origin`), without
    keeping it for a push (which still asks once); with two remotes it asks which. A session its
    contributor forgot is said to be removed."""
    remote, (laptop, one), _ = dana
    claude_session(laptop["HOME"], one, "l2", 3, "a second one", [])
    pushed(laptop, one, "--remote", "origin")
    bob = teammate(tmp_path, "bob")
    b = clone(bob, remote, os.path.join(bob["HOME"], "proj"))
    first = run_main(bob, ["pull"], cwd=b)
    assert first.returncode == 0 and b"Pulled 2 shared session(s) of 1 contributor(s) from origin" in first.stderr, \
        first.stderr
    claude_session(bob["HOME"], b, "b1", 6, "bob's", [])
    asked = run_main(bob, ["push"], cwd=b)
    assert asked.returncode == 2 and b"no remote named yet" in asked.stderr, asked.stderr

    [gone] = [r["id"] for r in records(laptop, one) if r["title"] == "a second one"]
    assert run_main(laptop, ["forget", gone], cwd=one).returncode == 0
    pushed(laptop, one)
    again = run_main(bob, ["pull"], cwd=b)
    assert again.returncode == 0 and b"(0 new or changed, 1 removed: no longer on the remote)" in again.stderr, \
        again.stderr
    assert gone not in [r["id"] for r in records(bob, b)]

    git(bob, b, "remote", "add", "memory", remote)
    which = run_main(bob, ["pull"], cwd=b)
    assert which.returncode == 2 and b"no remote named yet" in which.stderr, which.stderr


def test_show_and_the_mount_serve_the_same_bytes_for_a_session_both_here_and_pulled(dana):
    """The laptop's session is also in the desktop's store (a synced ~/.claude), which pushes it.
    The laptop pulls into its clone, and into a second clone of the project: the session is in
    its stores (recorded in the first clone) and in the pulled ref (placed in each clone). In
    each clone `show` serves what the mount serves, byte for byte: in the first, the store's
    (the pulled copy is listed once, from the store); in the second, where the store's copy is
    not of this project, the pulled one, which `list` shows."""
    from test_memory import FUSE_PROBLEM, client, mount, take_down

    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    remote, (laptop, one), (desktop, two) = dana
    claude_session(desktop["HOME"], two, "l1", 1, "on the laptop", [])
    pushed(desktop, two, "--remote", "origin")
    other = clone(dict(laptop), remote, os.path.join(laptop["HOME"], "other", "proj"))
    for where, sharer in ((one, None), (other, pushed_ref(desktop, two).rsplit("/", 1)[1])):
        laptop["PWD"] = where
        assert run_main(laptop, ["pull", "--remote", "origin"], cwd=where).returncode == 0
        [session] = [r for r in records(laptop, where) if r["native_id"] == "l1"]
        assert session["shared_by"] == sharer and session["cwd"] == where
        shown = run_main(laptop, ["show", session["id"]], cwd=where).stdout
        point, _ = mount(laptop, where)
        try:
            served = client("cat", os.path.join(point, session["file"])).stdout.encode()
        finally:
            take_down(point)
        if sharer is None:
            assert json.loads(shown)["extra"]["source"] == session["source"]
        assert json.loads(served)["extra"]["source"] == json.loads(shown)["extra"]["source"], where
        assert served == shown, where


def test_what_is_shared_names_work_tree_paths_relatively_and_no_home(tmp_path):
    """The issue's case: Alice's session in her clone `.../work/alpha-claude` wrote `result.txt`.
    Her INDEX.md shows `result.txt`; so does Bob's after a pull (not her absolute path); no object
    pushed holds her home directory; the document Bob reads names the file relative to the work
    tree, her home as `~`, and `blame` in Bob's clone still finds the session."""
    import zstandard

    alice, bob = teammate(tmp_path, "alice"), teammate(tmp_path, "bob")
    remote = seeded_remote(tmp_path, alice, {"result.txt": "42\n"})
    a = clone(alice, remote, os.path.join(alice["HOME"], "agents", "work", "alpha-claude"))
    b = clone(bob, remote, str(tmp_path / "bob" / "checkouts" / "alpha"))
    home = alice["HOME"]
    claude_session(home, a, "w1", 1, f"write the result into {a}/result.txt", [
        ("Write", {"file_path": f"{a}/result.txt", "content": "42\n"}),
        ("Bash", {"command": f"ls {home}/.cargo/bin {home}2/x && cat {a}/result.txt && cd {a}"})])
    pushed(alice, a, "--remote", "origin")
    assert run_main(bob, ["pull", "--remote", "origin"], cwd=b).returncode == 0

    def files_changed(env, cwd) -> str:
        out = str(tmp_path / "exports" / os.path.basename(env["HOME"]))
        assert run_main(env, ["export", "--out", out], cwd=cwd).returncode == 0
        [row] = [line for line in open(f"{out}/INDEX.md").read().splitlines() if line.startswith("| `")]
        return [cell.strip() for cell in row.split("|")][8]

    assert files_changed(alice, a) == files_changed(bob, b) == "result.txt"
    listed = git(None, remote, "cat-file", "--batch-all-objects", "--batch-check").decode().split("\n")
    blobs = [line.split()[0] for line in listed if line.split()[1:2] == ["blob"]]
    for oid in blobs:
        data = git(None, remote, "cat-file", "blob", oid)
        if data.startswith(b"\x28\xb5\x2f\xfd"):
            data = zstandard.ZstdDecompressor().stream_reader(data).read()
        assert not re.search(re.escape(home).encode() + rb"(?![\w.-])", data), data[:200]  # (home + "2" is not it)
        assert home.replace("/", "-").encode() not in data  # (a Claude folder's name spells it so)
    [record] = records(bob, b)
    doc = json.loads(run_main(bob, ["show", record["id"]], cwd=b).stdout)
    write, shell = (step["tool_calls"][0] for step in doc["steps"] if step.get("tool_calls"))
    assert write["arguments"]["file_path"] == "result.txt" and write["extra"]["paths"] == ["result.txt"]
    assert shell["arguments"]["command"] == f"ls ~/.cargo/bin {home}2/x && cat result.txt && cd ."
    assert (doc["extra"]["cwd"], doc["extra"]["source"], record["title"]) == (".", "w1.jsonl", "write the result into result.txt")
    blamed = run_main(bob, ["blame", "result.txt", "--json"], cwd=b)
    assert [json.loads(line)["id"] for line in blamed.stdout.splitlines()] == [record["id"]], blamed.stderr


def test_a_path_is_rewritten_only_where_it_stands_as_one():
    """The work tree's paths go relative and the home directory `~` only where the text names
    them, not a sibling folder sharing a prefix, nor the same letters inside another path."""
    from sharing.paths import Shareable

    made = Shareable("/home/alice/src/proj", {"HOME": "/home/alice/"})
    doc = json.dumps({"cwd": "/home/alice/src/proj", "file": "/home/alice/src/proj/src/app.py",
                      "sibling": "/home/alice/src/proj-2/x", "end": "/home/alice/src/proj/",
                      "shell": "cd /home/alice/src/proj && ls /home/alice/.cargo /home/alice2/x /mnt/home/alice/y ~/z",
                      "quoted": "'/home/alice/src/proj/a b.txt'", "home": "/home/alice", "source": "/home/alice/.claude/p/c1.jsonl"},
                     indent=2, separators=(",", ": ")).encode()
    shared = json.loads(made.document(doc, "/home/alice/.claude/p/c1.jsonl"))
    assert shared == {"cwd": ".", "file": "src/app.py", "sibling": "~/src/proj-2/x", "end": "./",
                      "shell": "cd . && ls ~/.cargo /home/alice2/x /mnt/home/alice/y ~/z",
                      "quoted": "'a b.txt'", "home": "~", "source": "c1.jsonl"}
    assert made.text("fix /home/alice/src/proj/a.py") == "fix a.py"
    odd = Shareable("/home/alice/src/pr\udcffoj", {"HOME": "/home/alice"})  # not UTF-8: no JSON names it
    assert json.loads(odd.document(doc, None))["file"] == "~/src/proj/src/app.py"
