"""The pack a push writes (sharing/packfile.py, handed to `git index-pack --stdin`): what git
makes of it passes `git fsck --full`, and holds the very objects `git fast-import` (which wrote
them before) makes of the same blobs and commit: same trees, same commit id. A first push whose
blobs the repository holds already, a grown session, an empty project, every size of object
header; a pack that does not hold what its header says, or whose objects are not what their
headers say, is refused by git (one line, no ref written); a push failing mid-pack leaves no git
running."""

from __future__ import annotations

import io
import os
import re

import pytest

from helpers import run_main
from test_blame import claude_session
from test_sharing import git, pushed_ref, team  # noqa: F401  (team: the fixture)

from sharing import git as plumbing, packfile, push


def fsck(env, where: str) -> None:
    checked = plumbing.git_output(["fsck", "--full", "--strict", "--no-dangling"], where, env)
    assert checked == b""


def fast_imported(env, where: str, commit: str) -> str:
    """The commit `git fast-import` makes of `commit`'s tree entries, committer and message."""
    shown = git(env, where, "cat-file", "commit", commit).decode()
    when = re.search(r"^committer (.*) (\d+) \+0000$", shown, re.M)
    message = shown.split("\n\n", 1)[1].encode()
    listed = git(env, where, "ls-tree", "-r", "-z", commit).split(b"\0")
    script = b"commit refs/test/imported\ncommitter %s %s +0000\ndata %d\n%s\n" % (
        when[1].encode(), when[2].encode(), len(message), message)
    for record in filter(None, listed):
        head, _, path = record.partition(b"\t")
        mode, _, oid = head.split()
        script += b"M %s %s %s\n" % (mode, oid, path)
    git(env, where, "fast-import", "--quiet", stdin=script + b"done\n")
    return git(env, where, "rev-parse", "refs/test/imported").decode().strip()


def test_a_first_push_is_what_fast_import_makes_and_passes_fsck(team):
    remote_dir, (alice, a), _ = team
    pushed = run_main(alice, ["push", "--remote", "origin"], cwd=a)
    assert pushed.returncode == 0, pushed.stderr
    ref = pushed_ref(alice, a)
    commit = git(alice, a, "rev-parse", ref).decode().strip()
    assert fast_imported(alice, a, commit) == commit  # the same tree, author, committer, message
    assert git(alice, a, "ls-tree", "--name-only", ref).split() == [b"manifest.json", b"sessions"]
    assert b"(2 rendered, 3 new object(s))" in pushed.stderr, pushed.stderr
    fsck(alice, a)
    fsck(alice, remote_dir)


def test_a_first_push_of_blobs_the_repository_holds_already(team):
    """The ref and the push state gone, the objects kept: the pack holds blobs git has; the
    result is the same tree."""
    _, (alice, a), _ = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    ref = pushed_ref(alice, a)
    tree = git(alice, a, "rev-parse", f"{ref}^{{tree}}")
    for name in (ref, ref.replace("refs/trajectoriz/", "refs/trajectoriz/remote/")):
        git(alice, a, "update-ref", "-d", name)
    os.remove(os.path.join(alice["XDG_CACHE_HOME"], "trajectoriz", push.STATE_FILE))
    again = run_main(alice, ["push"], cwd=a)
    assert again.returncode == 0, again.stderr
    assert git(alice, a, "rev-parse", f"{ref}^{{tree}}") == tree
    fsck(alice, a)


def test_a_grown_session_is_written_to_a_pack_of_its_own(team):
    """The ref there already: its new blob, manifest, trees and commit in a pack made at the
    end; the old objects kept."""
    _, (alice, a), _ = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    claude_session(alice["HOME"], f"{a}/src", "c2", 2, "make f return 2", [
        ("Edit", {"file_path": f"{a}/src/app.py", "old_string": "    return 1\n", "new_string": "    return 2\n"}),
        ("Read", {"file_path": f"{a}/src/app.py"})])
    grown = run_main(alice, ["push"], cwd=a)
    assert grown.returncode == 0, grown.stderr
    assert b"1 rendered, 2 new object(s)" in grown.stderr
    ref = pushed_ref(alice, a)
    commit = git(alice, a, "rev-parse", ref).decode().strip()
    assert fast_imported(alice, a, commit) == commit
    fsck(alice, a)


def test_an_empty_project_pushes_a_manifest_that_passes_fsck(team):
    remote_dir, _, (bob, b) = team  # Bob has no session
    pushed = run_main(bob, ["push", "--remote", "origin"], cwd=b)
    assert pushed.returncode == 0 and b"Pushed 0 session(s)" in pushed.stderr, pushed.stderr
    ref = pushed_ref(bob, b)
    assert git(bob, b, "ls-tree", "--name-only", ref).split() == [b"manifest.json"]
    commit = git(bob, b, "rev-parse", ref).decode().strip()
    assert fast_imported(bob, b, commit) == commit
    fsck(bob, b)
    fsck(bob, remote_dir)


@pytest.mark.parametrize("size", [0, 1, 15, 16, 127, 2047, 2048, 70000, 1 << 20])
def test_every_size_of_header_is_read_back_by_git(tmp_path, size):
    where = str(tmp_path / "repo")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    plumbing.git_output(["init", "-q", where], str(tmp_path), env)
    body = os.urandom(size)
    stream = io.BytesIO()
    packfile.Writer(stream, 1).add("blob", body, 0)
    plumbing.git_output(["index-pack", "--stdin"], where, env, stream.getvalue())
    assert plumbing.git_output(["cat-file", "blob", packfile.blob_id(body)], where, env) == body


def test_a_pack_that_is_not_what_its_header_says_is_refused(tmp_path):
    where = str(tmp_path / "repo")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "GIT_CONFIG_NOSYSTEM": "1"}
    plumbing.git_output(["init", "-q", where], str(tmp_path), env)
    writer = packfile.Writer(io.BytesIO(), 1)
    writer.add("blob", b"one", 0)
    with pytest.raises(ValueError):
        writer.add("blob", b"two", 0)
    short = io.BytesIO()
    packfile.Writer(short, 2).add("blob", b"one", 0)
    with pytest.raises(plumbing.GitFailed):
        plumbing.git_output(["index-pack", "--stdin"], where, env, short.getvalue())
    packs = os.path.join(where, ".git", "objects", "pack")
    assert not [name for name in os.listdir(packs) if name.endswith((".pack", ".idx"))]


def test_a_push_that_fails_while_its_pack_is_written_leaves_no_git_running_and_no_ref(team, monkeypatch):
    _, (alice, a), _ = team
    started = []
    real = packfile.Indexed.__init__

    def watched(self, *args):
        real(self, *args)
        started.append(self.process)

    def failing(*args):
        raise OSError("the disk went away")

    monkeypatch.setattr(packfile.Indexed, "__init__", watched)
    monkeypatch.setattr(push, "manifest_entry", failing)
    failed = run_main(alice, ["push", "--remote", "origin"], cwd=a)
    assert failed.returncode != 0
    assert started and all(process.returncode is not None for process in started)
    assert git(alice, a, "for-each-ref", "refs/trajectoriz/") == b""
    monkeypatch.undo()
    assert run_main(alice, ["push"], cwd=a).returncode == 0
    fsck(alice, a)


@pytest.mark.parametrize("first", [True, False], ids=["first push", "grown"])
def test_a_pack_git_refuses_is_a_one_line_error_and_writes_no_ref(team, monkeypatch, first):
    """A writer bug (here: each object said one byte longer than it is) is refused by git: the
    push fails in one line, the ref stays where it was, the repository passes fsck."""
    _, (alice, a), _ = team
    if not first:
        assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
        claude_session(alice["HOME"], f"{a}/src", "c2", 2, "make f return 2", [("Read", {"file_path": f"{a}/src/app.py"})])
    before = git(alice, a, "for-each-ref", "refs/trajectoriz/")
    real = packfile.object_header
    monkeypatch.setattr(packfile, "object_header", lambda kind, size: real(kind, size + 1))
    refused = run_main(alice, ["push", "--remote", "origin"], cwd=a)
    assert refused.returncode != 0 and refused.stderr.startswith(b"trajectoriz: ") and \
        refused.stderr.count(b"\n") == 1 and b"git could not write" in refused.stderr, refused.stderr
    assert git(alice, a, "for-each-ref", "refs/trajectoriz/") == before
    fsck(alice, a)
