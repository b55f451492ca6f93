"""`trajectoriz push` and `pull` through a real bare repository as the remote, with two or three
HOMEs as teammates and CI, each with a clone of the project at another path: the pushed
sessions listed, shown (the bytes pushed: the pusher's, paths made shareable), searched and
blamed in the other clones with their contributor; incremental pushes; forget; hostile refs; a
remote that refuses; no secret in any pushed object."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from helpers import base_env, needs, run_main
from test_blame import claude_session

pytestmark = needs("git")

SECRET = "ghp_Xy7Qm2Tw9Rp4Lz8Vc3Nb6Kd1Hs5Jf0Ga2UeR"


def git(env, cwd, *args, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, env=env, input=stdin, check=True, capture_output=True).stdout


def teammate(tmp_path, name: str) -> dict:
    """A HOME of its own, with a git identity."""
    env = base_env(tmp_path / name, home=str(tmp_path / name / "home"))
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    git(env, env["HOME"], "config", "--global", "user.name", name.title())
    git(env, env["HOME"], "config", "--global", "user.email", f"{name}@example.org")
    git(env, env["HOME"], "config", "--global", "init.defaultBranch", "main")
    return env


def clone(env, remote: str, where: str) -> str:
    os.makedirs(os.path.dirname(where), exist_ok=True)
    git(env, os.path.dirname(where), "clone", "-q", remote, where)
    env["PWD"] = where
    return where


def seeded_remote(tmp_path, env: dict, files: dict) -> str:
    """A bare remote at tmp_path/remote.git whose main branch holds one commit of `files`
    (path -> text), made and pushed by `env`."""
    remote = str(tmp_path / "remote.git")
    subprocess.run(["git", "init", "-q", "--bare", "--initial-branch=main", remote], check=True)
    seed = str(tmp_path / "seed")
    git(env, tmp_path, "init", "-q", "--initial-branch=main", seed)
    for name, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(seed, name)), exist_ok=True)
        with open(os.path.join(seed, name), "w") as handle:
            handle.write(text)
    git(env, seed, "add", ".")
    git(env, seed, "commit", "-qm", "first")
    git(env, seed, "push", "-q", remote, "main")
    return remote


@pytest.fixture
def team(tmp_path):
    """A bare remote; Alice's project (a clone at ~/src/proj) with two Claude sessions that wrote
    src/app.py; Bob's clone at another path, with no session."""
    alice = teammate(tmp_path, "alice")
    remote = seeded_remote(tmp_path, alice, {"src/app.py": "def f():\n    return 2\n"})
    a = clone(alice, remote, os.path.join(alice["HOME"], "src", "proj"))
    claude_session(alice["HOME"], a, "c1", 1, f"create the app {SECRET}", [
        ("Write", {"file_path": f"{a}/src/app.py", "content": "def f():\n    return 1\n"})])
    claude_session(alice["HOME"], f"{a}/src", "c2", 2, "make f return 2", [
        ("Edit", {"file_path": f"{a}/src/app.py", "old_string": "    return 1\n", "new_string": "    return 2\n"})])
    bob = teammate(tmp_path, "bob")
    b = clone(bob, remote, str(tmp_path / "bob" / "work" / "elsewhere" / "proj"))
    return remote, (alice, a), (bob, b)


def records(env, cwd, *args) -> list:
    result = run_main(env, ["list", "--json", *args], cwd=cwd)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_pushed_sessions_are_listed_shown_searched_and_blamed_in_another_clone(team):
    remote, (alice, a), (bob, b) = team
    nothing = run_main(bob, ["pull", "--remote", "origin"], cwd=b)  # no one pushed yet
    assert nothing.returncode == 0 and b"Pulled 0 shared session(s)" in nothing.stderr, nothing.stderr
    pushed = run_main(alice, ["push", "--remote", "origin"], cwd=a)
    assert pushed.returncode == 0, pushed.stderr
    assert b"whoever can fetch from it can read them" in pushed.stderr
    theirs = {r["id"]: r for r in records(alice, a)}
    assert len(theirs) == 2 and all(r["shared_by"] is None for r in theirs.values())

    assert records(bob, b) == []
    pulled = run_main(bob, ["pull", "--remote", "origin"], cwd=b)
    assert pulled.returncode == 0, pulled.stderr
    mine = {r["id"]: r for r in records(bob, b)}
    assert mine.keys() == theirs.keys()
    contributor = git(alice, a, "config", "trajectoriz.contributor").decode().strip()
    assert {r["shared_by"] for r in mine.values()} == {contributor} and contributor.startswith("alice-")
    assert {r["cwd"] for r in mine.values()} == {b, f"{b}/src"}
    for short_id in theirs:
        assert run_main(bob, ["show", short_id], cwd=b).stdout == shown_as_shared(alice, a, short_id)
    assert contributor in run_main(bob, ["list"], cwd=b).stdout.decode()

    found = run_main(bob, ["search", "--content", "make f return", "--local", "--json"], cwd=b)
    assert found.returncode == 0, found.stderr
    assert {json.loads(line)["id"] for line in found.stdout.splitlines()} <= theirs.keys()
    blamed = run_main(bob, ["blame", "src/app.py", "--json"], cwd=b)
    assert blamed.returncode == 0, blamed.stderr
    assert [json.loads(line)["id"] for line in blamed.stdout.splitlines()] == \
        sorted(theirs, key=lambda i: theirs[i]["started"])
    line = run_main(bob, ["blame", "src/app.py:2"], cwd=b).stdout.decode()  # "    return 2": the Edit wrote it
    assert f"`{[i for i in theirs if theirs[i]['native_id'] == 'c2'][0]}` step 2 (Edit, shared by {contributor})" in line


def shown_as_shared(env, cwd, short_id: str) -> bytes:
    """`show` of a session as its pusher sees it, then as a push shares it: paths inside the work
    tree relative to its top (the top itself `.`), the home directory `~`, the native file by its
    name."""
    shown = run_main(env, ["show", short_id], cwd=cwd).stdout.decode()
    source = json.loads(shown)["extra"]["source"]
    shown = shown.replace(f'"source": "{source}"', f'"source": "{os.path.basename(source)}"')
    return shown.replace(cwd + "/", "").replace(cwd, ".").replace(env["HOME"], "~").encode()


def pushed_ref(env, cwd) -> str:
    return "refs/trajectoriz/" + git(env, cwd, "config", "trajectoriz.contributor").decode().strip()


def tree_of(remote: str, ref: str) -> dict:
    """path -> blob id of the ref's tree in the remote."""
    listed = git(None, remote, "ls-tree", "-r", ref).decode().splitlines()
    return {line.split("\t")[1]: line.split()[2] for line in listed}


def test_a_push_with_nothing_new_writes_and_sends_nothing_and_a_grown_session_sends_its_own_blob(team):
    remote, (alice, a), _ = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    ref = pushed_ref(alice, a)
    first = git(None, remote, "rev-parse", ref)
    before = tree_of(remote, ref)
    again = run_main(alice, ["push"], cwd=a)
    assert again.returncode == 0 and b"Nothing new to push" in again.stderr, again.stderr
    assert b"whoever can fetch" not in again.stderr  # said at the first push only
    assert git(None, remote, "rev-parse", ref) == first

    claude_session(alice["HOME"], f"{a}/src", "c2", 2, "make f return 2", [
        ("Edit", {"file_path": f"{a}/src/app.py", "old_string": "    return 1\n", "new_string": "    return 2\n"}),
        ("Read", {"file_path": f"{a}/src/app.py"})])
    grown = run_main(alice, ["push"], cwd=a)
    assert grown.returncode == 0 and b"(1 rendered, 2 new object(s))" in grown.stderr, grown.stderr
    after = tree_of(remote, ref)
    assert after.keys() == before.keys()
    assert sorted(path for path in after if after[path] != before[path])[0] == "manifest.json"
    assert sum(after[path] != before[path] for path in after) == 2
    assert git(None, remote, "rev-list", "--count", ref).strip() == b"1"  # rewritten, never appended


def test_a_push_without_its_state_reuses_the_compressed_documents_an_earlier_push_kept(team, monkeypatch):
    """As a first push to another remote, or from another project holding the same sessions: no
    document is compressed again, the blobs are the same."""
    from sharing import push as sharing

    remote, (alice, a), _ = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    before = tree_of(remote, pushed_ref(alice, a))
    os.remove(os.path.join(alice["XDG_CACHE_HOME"], "trajectoriz", sharing.STATE_FILE))
    other = str(os.path.join(os.path.dirname(remote), "other.git"))
    subprocess.run(["git", "init", "-q", "--bare", other], check=True)
    git(alice, a, "remote", "add", "other", other)

    def no_compressing():
        raise AssertionError("a document was compressed again")
    monkeypatch.setattr(sharing, "_compressor", no_compressing)
    pushed = run_main(alice, ["push", "--remote", "other"], cwd=a)
    assert pushed.returncode == 0 and b"(2 rendered," in pushed.stderr, pushed.stderr
    assert tree_of(other, pushed_ref(alice, a)) == before


def test_dry_run_lists_sessions_sizes_and_redactions_and_writes_nothing(team):
    remote, (alice, a), _ = team
    result = run_main(alice, ["push", "--dry-run"], cwd=a)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert "Would push 2 session(s)" in text and "dry run: nothing written" in text
    redactions = {line.split("|")[6].strip()[:14]: line.split("|")[4].strip() for line in text.splitlines()[4:]}
    assert redactions == {"make f return ": "0", "create the app": "1 (github 1)"}  # the planted token
    assert git(alice, a, "for-each-ref", "refs/trajectoriz/") == b""
    assert git(None, remote, "for-each-ref").count(b"refs/trajectoriz/") == 0
    no_remote = run_main(alice, ["push"], cwd=a)
    assert no_remote.returncode == 2 and b"--remote NAME" in no_remote.stderr


def test_forget_takes_a_pushed_session_out_of_the_ref_and_out_of_every_pull(team, tmp_path):
    remote, (alice, a), (bob, b) = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    assert run_main(bob, ["pull", "--remote", "origin"], cwd=b).returncode == 0
    ids = sorted(r["id"] for r in records(alice, a))
    forgotten = run_main(alice, ["forget", ids[0]], cwd=a)
    assert forgotten.returncode == 0, forgotten.stderr
    assert run_main(alice, ["push"], cwd=a).returncode == 0
    ref = pushed_ref(alice, a)
    assert f"sessions/{ids[0]}.atif.json.zst" not in tree_of(remote, ref)
    assert ids[0] not in git(None, remote, "cat-file", "-p", f"{ref}:manifest.json").decode()
    assert run_main(bob, ["pull"], cwd=b).returncode == 0
    assert [r["id"] for r in records(bob, b)] == ids[1:]
    ci = teammate(tmp_path, "ci")
    c = clone(ci, remote, str(tmp_path / "ci" / "build"))
    assert run_main(ci, ["pull", "--remote", "origin"], cwd=c).returncode == 0
    assert [r["id"] for r in records(ci, c)] == ids[1:]
    claude_session(alice["HOME"], a, "c3", 3, "one more", [])  # a later push keeps it out too
    assert run_main(alice, ["push"], cwd=a).returncode == 0
    assert ids[0] not in git(None, remote, "cat-file", "-p", f"{ref}:manifest.json").decode()
    assert run_main(bob, ["forget", ids[1]], cwd=b).returncode == 0  # a teammate's: hidden here
    assert run_main(bob, ["pull"], cwd=b).returncode == 0
    assert ids[1] not in [r["id"] for r in records(bob, b)] and len(records(bob, b)) == 1


def test_ci_pulls_before_the_agent_runs_and_pushes_after_with_a_bare_home(team, tmp_path):
    """A container-like HOME: PATH and HOME only, no git identity, no trajectoriz state."""
    remote, (alice, a), (bob, b) = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    home = str(tmp_path / "container" / "root")
    os.makedirs(home)
    ci = {"PATH": os.environ["PATH"], "HOME": home, "GIT_CONFIG_NOSYSTEM": "1"}
    c = str(tmp_path / "container" / "builds" / "proj")
    git(ci, tmp_path, "clone", "-q", remote, c)
    ci["PWD"] = c
    pulled = run_main(ci, ["pull", "--remote", "origin"], cwd=c)
    assert pulled.returncode == 0, pulled.stderr
    assert len(records(ci, c)) == 2
    exported = run_main(ci, ["export", "--out", f"{c}/memory"], cwd=c)
    assert exported.returncode == 0, exported.stderr
    index = open(f"{c}/memory/INDEX.md").read()
    assert "Shared by" in index and git(alice, a, "config", "trajectoriz.contributor").decode().strip() in index
    claude_session(home, c, "ci1", 9, "the nightly run", [])
    ci["TRAJECTORIZ_CONTRIBUTOR"] = "ci"
    pushed = run_main(ci, ["push"], cwd=c)
    assert pushed.returncode == 0, pushed.stderr
    assert tree_of(remote, "refs/trajectoriz/ci").keys() == {"manifest.json", f"sessions/{records(ci, c)[0]['id']}.atif.json.zst"}
    assert run_main(bob, ["pull", "--remote", "origin"], cwd=b).returncode == 0
    assert {r["shared_by"] for r in records(bob, b)} == {"ci", git(alice, a, "config", "trajectoriz.contributor").decode().strip()}

    home = str(tmp_path / "next-container" / "root")  # the next run: a fresh container again
    os.makedirs(home)
    nightly = {**ci, "HOME": home, "PWD": str(tmp_path / "next-container" / "proj")}
    git(nightly, tmp_path, "clone", "-q", remote, nightly["PWD"])
    assert run_main(nightly, ["pull", "--remote", "origin"], cwd=nightly["PWD"]).returncode == 0
    claude_session(home, nightly["PWD"], "ci2", 10, "the next nightly run", [])
    assert run_main(nightly, ["push", "--remote", "origin"], cwd=nightly["PWD"]).returncode == 0
    carried = json.loads(git(None, remote, "cat-file", "-p", "refs/trajectoriz/ci:manifest.json"))["sessions"]
    assert sorted(s["title"] for s in carried) == ["the next nightly run", "the nightly run"]


def test_no_planted_secret_is_in_any_pushed_object(team):
    from test_redteam import PAYLOAD, leaks

    remote, (alice, a), _ = team
    claude_session(alice["HOME"], a, "c9", 9, f"deploy it\n{PAYLOAD}", [
        ("Write", {"file_path": f"{a}/.env", "content": PAYLOAD}), ("Bash", {"command": f"echo '{PAYLOAD}'"})])
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    import zstandard

    listed = git(None, remote, "cat-file", "--batch-all-objects", "--batch-check").decode().split("\n")
    blobs = [line.split()[0] for line in listed if line.endswith(tuple("0123456789")) and " blob " in line]
    found, documents = [], 0
    for oid in blobs:
        data = git(None, remote, "cat-file", "blob", oid)
        if data.startswith(b"\x28\xb5\x2f\xfd"):
            data = zstandard.ZstdDecompressor().decompress(data, max_output_size=1 << 28)
            documents += b"PLANTED-BY-THE-RED-TEAM" in data
        found += leaks(data)
    assert documents == 1 and found == []


def test_errors_are_one_line(team, tmp_path):
    remote, (alice, a), _ = team
    nowhere = str(tmp_path / "not-a-repository")
    os.makedirs(nowhere)
    for args, cwd, said in [(["push", "--remote", "origin"], nowhere, b"not in a git work tree"),
                            (["push"], a, b"no remote named yet"),
                            (["pull", "--remote", "upstream"], a, b"no remote 'upstream'")]:
        result = run_main(alice, args, cwd=cwd)
        assert result.returncode == 2 and said in result.stderr and result.stderr.count(b"\n") == 1, result.stderr
    no_git = {**alice, "PATH": str(tmp_path / "empty")}
    result = run_main(no_git, ["pull", "--remote", "origin"], cwd=a)
    assert result.returncode == 2 and b"git is not installed" in result.stderr


def test_a_remote_that_refuses_says_so_in_one_line(team):
    remote, (alice, a), _ = team
    hook = os.path.join(remote, "hooks", "pre-receive")
    with open(hook, "w") as handle:
        handle.write("#!/bin/sh\necho 'pushes are closed' >&2\nexit 1\n")
    os.chmod(hook, 0o755)
    result = run_main(alice, ["push", "--remote", "origin"], cwd=a)
    warning, error = result.stderr.decode().splitlines()  # the first push's warning, then the error
    assert "whoever can fetch" in warning and "Traceback" not in error
    assert result.returncode == 2 and "refused" in error and "pushes are closed" in error, error
    assert git(None, remote, "for-each-ref").count(b"refs/trajectoriz/") == 0


def hostile_commit(env, cwd, manifest, blobs: dict) -> str:
    """A commit in the repository at `cwd` whose tree holds `manifest` (JSON, or bytes as they are)
    and sessions/NAME -> bytes."""
    def blob(data: bytes) -> str:
        return git(env, cwd, "hash-object", "-w", "--stdin", stdin=data).decode().strip()
    data = manifest if isinstance(manifest, bytes) else json.dumps(manifest).encode()
    sessions = "".join(f"100644 blob {blob(content)}\t{name}\n" for name, content in blobs.items())
    inner = git(env, cwd, "mktree", stdin=sessions.encode()).decode().strip()
    top = git(env, cwd, "mktree", stdin=f"100644 blob {blob(data)}\tmanifest.json\n040000 tree {inner}\tsessions\n"
              .encode()).decode().strip()
    return git(env, cwd, "commit-tree", top, "-m", "not trajectoriz").decode().strip()


def test_hostile_refs_are_skipped_with_a_warning_and_take_no_command_down(team, monkeypatch):
    import zstandard

    from discovery import pulled

    monkeypatch.setattr(pulled, "MAX_DOCUMENT", 1 << 20)
    remote, (alice, a), (bob, b) = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    good = json.loads(git(None, remote, "cat-file", "-p", f"{pushed_ref(alice, a)}:manifest.json"))["sessions"][0]
    document = git(None, remote, "cat-file", "-p", f"{pushed_ref(alice, a)}:sessions/{good['id']}.atif.json.zst")
    pack = zstandard.ZstdCompressor().compress

    def entry(short_id, **changed):
        return {**good, "id": short_id, "native_id": short_id, **changed}
    hostile = {
        "cl-00000001": document,                                            # another's valid document: kept
        "cl-00000002": pack(b"\0" * (3 << 20)),                             # a bomb: 3 MB of zeros
        "cl-00000003": b"not zstd at all",
        "cl-00000004": pack(b"[" * 100000 + b"]" * 100000),                 # nested past any parser
        "cl-00000005": pack(b'{"schema_version": 1}'),                       # JSON, no document
        "cl-00000006": document, "cl-00000007": document, "xx-00000008": document, good["id"]: document}
    entries = [entry("cl-00000001", title="\x1b[31mred\x1b[0m kept"),
               *(entry(f"cl-0000000{n}") for n in range(2, 6)),
               entry("cl-00000006", cwd="../../etc"), entry("cl-00000007", agent="codex"),
               entry("xx-00000008", agent="nobody"), entry("cl-00000009"),  # no blob for it
               "not an entry", entry(good["id"], title="a second copy of alice's"),
               entry("cl-0000000a", native_id=["a", "list"]), entry("cl-0000000b", agent={"a": "dict"})]
    mallory = hostile_commit(alice, a, {"format": "trajectoriz-shared-1", "sessions": entries},
                             {f"{name}.atif.json.zst": data for name, data in hostile.items()})
    junk = hostile_commit(alice, a, b"\xff\xfe not json", {})
    blob = git(alice, a, "hash-object", "-w", "--stdin", stdin=b"a blob, not a commit").decode().strip()
    git(alice, a, "push", "-q", "origin", f"{mallory}:refs/trajectoriz/mallory", f"{junk}:refs/trajectoriz/junk",
        f"{blob}:refs/trajectoriz/blobby", f"{mallory}:refs/trajectoriz/Upper", f"{mallory}:refs/trajectoriz/a/b")

    pulled = run_main(bob, ["pull", "--remote", "origin"], cwd=b)
    assert pulled.returncode == 0, pulled.stderr
    said = pulled.stderr.decode()
    assert "Traceback" not in said
    for warned in ["refs/trajectoriz/remote/blobby: a blob, not a commit", "refs/trajectoriz/remote/Upper",
                   "refs/trajectoriz/remote/a/b", "refs/trajectoriz/remote/junk: its manifest.json",
                   "mallory: 7 of its 13 entries"]:
        assert warned in said, (warned, said)
    listed = {r["id"]: r for r in records(bob, b)}  # entries of a good manifest: documents checked when read
    assert sorted(listed) == sorted([r["id"] for r in records(alice, a)] + [f"cl-0000000{n}" for n in range(1, 6)])
    for short_id, why in [("cl-00000002", "more than 1048576 bytes once decompressed"), ("cl-00000003", "not zstd"),
                          ("cl-00000004", "JSON nested too deeply"), ("cl-00000005", "not an ATIF document")]:
        shown = run_main(bob, ["show", short_id], cwd=b)
        [warning] = shown.stderr.decode().splitlines()
        assert shown.returncode == 0 and warning.startswith(f"trajectoriz: warning: {short_id}: the document "
                                                            f"mallory shared is skipped: {why}"), warning
        document = json.loads(shown.stdout)
        assert document["steps"][0]["message"].startswith("trajectoriz could not translate") and \
            len(document["steps"]) == 1 and f"skipped: {why}" in document["extra"]["error"], document
    assert listed["cl-00000001"]["shared_by"] == "mallory"
    assert b"red" in run_main(bob, ["list"], cwd=b).stdout and b"\x1b" not in run_main(bob, ["list"], cwd=b).stdout
    assert listed[good["id"]]["shared_by"] != "mallory"  # the first ref (by name) that has an id keeps it
    for command in (["show", "cl-00000001"], ["list"], ["search", "--content", "return", "--local"],
                    ["blame", "src/app.py"], ["stats", "--local"]):
        result = run_main(bob, command, cwd=b)
        assert result.returncode in (0, 1) and b"Traceback" not in result.stderr, (command, result.stderr)
    stored = os.path.join(bob["XDG_CACHE_HOME"], "trajectoriz", "shared")
    for folder, _, files in os.walk(stored):
        assert os.stat(folder).st_mode & 0o077 == 0
        assert all(os.stat(os.path.join(folder, f)).st_mode & 0o077 == 0 for f in files)
    assert not os.path.exists(os.path.join(bob["HOME"], "etc"))

    git(alice, a, "push", "-q", "-f", "origin", f"{mallory}:{pushed_ref(alice, a)}")  # Alice's own ref, overwritten
    assert run_main(alice, ["pull"], cwd=a).returncode == 0
    again = run_main(alice, ["push"], cwd=a)
    assert again.returncode == 0 and b"Traceback" not in again.stderr, again.stderr
    carried = json.loads(git(None, remote, "cat-file", "-p", f"{pushed_ref(alice, a)}:manifest.json"))["sessions"]
    assert sorted(s["id"] for s in carried) == sorted([r["id"] for r in records(alice, a) if not r["shared_by"]]
                                                      + ["cl-00000001"])


def test_a_teammates_sessions_are_in_the_mount_of_another_clone(team):
    from test_memory import FUSE_PROBLEM, client, mount, take_down

    if FUSE_PROBLEM:
        pytest.skip(f"FUSE unavailable: {FUSE_PROBLEM}")
    remote, (alice, a), (bob, b) = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    assert run_main(bob, ["pull", "--remote", "origin"], cwd=b).returncode == 0
    point, _ = mount(bob, b)
    try:
        names = sorted(os.listdir(point))
        theirs = records(bob, b)
        from rendering import views

        assert names == sorted(["README.md", "INDEX.md", *(r["file"] for r in theirs),
                                *(views.name_of(r["file"], kind) for r in theirs for kind in views.KINDS)])
        for r in theirs:
            assert client("cat", os.path.join(point, r["file"])).stdout.encode() == \
                run_main(bob, ["show", r["id"]], cwd=b).stdout == shown_as_shared(alice, a, r["id"])
            assert "## Requests (" in client("cat", os.path.join(point, views.name_of(r["file"], "card"))).stdout
        assert "Shared by" in client("cat", os.path.join(point, "INDEX.md")).stdout
    finally:
        take_down(point)


def test_a_project_without_sessions_pushes_an_empty_ref_once(team):
    remote, _, (bob, b) = team
    first = run_main(bob, ["push", "--remote", "origin"], cwd=b)
    assert first.returncode == 0 and b"Pushed 0 session(s)" in first.stderr, first.stderr
    assert tree_of(remote, pushed_ref(bob, b)).keys() == {"manifest.json"}
    again = run_main(bob, ["push"], cwd=b)
    assert again.returncode == 0 and b"Nothing new to push" in again.stderr, again.stderr


def test_a_ref_the_remote_lost_is_pushed_again_after_a_pull(team):
    remote, (alice, a), _ = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    ref = pushed_ref(alice, a)
    git(None, remote, "update-ref", "-d", ref)  # someone deleted it there
    assert run_main(alice, ["pull"], cwd=a).returncode == 0
    again = run_main(alice, ["push"], cwd=a)
    assert again.returncode == 0 and b"Pushed 2 session(s)" in again.stderr, again.stderr
    assert len(tree_of(remote, ref)) == 3


def test_a_pull_keeps_documents_in_git_and_a_document_that_is_not_one_is_refused_when_read(team, tmp_path):
    """The pull checks manifests only (a ref whose manifest is not ours lists nothing) and copies no
    document out of git; a listed entry whose blob is not a document is refused where it is read,
    in one line, and the others are served as pushed."""
    remote, (alice, a), (bob, b) = team
    assert run_main(alice, ["push", "--remote", "origin"], cwd=a).returncode == 0
    good = json.loads(git(None, remote, "cat-file", "-p", f"{pushed_ref(alice, a)}:manifest.json"))["sessions"][0]
    document = git(None, remote, "cat-file", "-p", f"{pushed_ref(alice, a)}:sessions/{good['id']}.atif.json.zst")
    entries = [{**good, "id": "cl-00000001", "native_id": "one"}, {**good, "id": "cl-00000002", "native_id": "two"}]
    mallory = hostile_commit(alice, a, {"format": "trajectoriz-shared-1", "sessions": entries},
                             {"cl-00000001.atif.json.zst": document, "cl-00000002.atif.json.zst": b"\x28\xb5\x2f\xfd junk"})
    impostor = hostile_commit(alice, a, {"format": "something-else", "sessions": entries},
                              {"cl-00000001.atif.json.zst": document})
    git(alice, a, "push", "-q", "origin", f"{mallory}:refs/trajectoriz/mallory", f"{impostor}:refs/trajectoriz/eve")

    pulled = run_main(bob, ["pull", "--remote", "origin"], cwd=b)
    assert pulled.returncode == 0 and b"refs/trajectoriz/remote/eve: its manifest.json is not one" in pulled.stderr
    assert b"cl-0000000" not in pulled.stderr, pulled.stderr  # no document was read
    stored = os.path.join(bob["XDG_CACHE_HOME"], "trajectoriz", "shared")
    [(folder, files)] = [(folder, files) for folder, _, files in os.walk(stored) if files]
    assert files == ["listing.bin"] and os.stat(folder).st_mode & 0o777 == 0o700
    assert os.stat(os.path.join(folder, "listing.bin")).st_mode & 0o777 == 0o600
    listed = {r["id"]: r["shared_by"] for r in records(bob, b)}
    assert listed["cl-00000001"] == listed["cl-00000002"] == "mallory" and "eve" not in listed.values()

    shown = run_main(bob, ["show", "cl-00000002"], cwd=b)
    assert shown.returncode == 0 and shown.stderr.decode().count("\n") == 1, shown.stderr
    assert shown.stderr.startswith(b"trajectoriz: warning: cl-00000002: the document mallory shared is skipped: not zstd")
    assert b"junk" not in shown.stdout and json.loads(shown.stdout)["extra"]["error"]
    health = run_main(bob, ["agents", "--json"], cwd=b)
    [claude] = [row for row in map(json.loads, health.stdout.splitlines()) if row["agent"] == "claude"]
    assert (claude["sessions"], claude["shared"], claude["sessions_failed"]) == (2 + 2, 4, 1), claude
    assert claude["failures"][0]["first"].startswith("the document mallory shared is skipped: not zstd")
    out = str(tmp_path / "out")
    exported = run_main(bob, ["export", "--out", out], cwd=b)
    assert exported.returncode == 0 and b"Traceback" not in exported.stderr, exported.stderr
    written = {n.rsplit("_", 1)[-1]: os.path.join(out, n) for n in os.listdir(out) if n.endswith(".atif.json")}
    with open(written["cl-00000002.atif.json"], "rb") as handle:  # (said on stderr by the pool's worker)
        assert "not zstd" in json.loads(handle.read())["extra"]["error"]
    with open(written["cl-00000001.atif.json"], "rb") as handle:
        assert json.loads(handle.read())["steps"] == json.loads(shown_as_shared(alice, a, good["id"]))["steps"]
