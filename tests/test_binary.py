"""The shipped single file, dist/trajectoriz (`make build`), smoke-tested as a user runs it:
copied out of the source tree, started from a project folder elsewhere, with no virtualenv on
PATH, against the example store. Its output must be byte-identical to `python trajectoriz.py`.

Without dist/trajectoriz (or with one older than the sources) these tests are skipped, and
pytest's summary says so in one line (conftest.py); CI builds it first and sets
TRAJECTORIZ_TEST_BINARY=1, which turns the skip into a failure. Every run of the binary gets a
$HOME, cache and TMPDIR of its test's own: the launcher runs whatever program it finds in its
fallback folder, ${TMPDIR:-/tmp}/trajectoriz-<uid>, so a copy left there by any earlier run
would be tested instead of this build.
"""

from __future__ import annotations

import fcntl
import glob
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

import pytest

from helpers import ROOT, cli

sys.path.insert(0, os.path.join(ROOT, "examples"))
import demo  # noqa: E402  (stages the example store the way `make demo` does)

BINARY = os.path.join(ROOT, "dist", "trajectoriz")
SOURCES = ["*.py", "agents/*.py", "atif/*.py", "build/*"]
MARKER = ".trajectoriz-app"


def _missing_reason() -> str | None:
    if not os.path.exists(BINARY):
        return "dist/trajectoriz is not built (run `make build` first)"
    built = os.path.getmtime(BINARY)
    newer = [p for pattern in SOURCES for p in glob.glob(os.path.join(ROOT, pattern))
             if os.path.getmtime(p) > built]
    if newer:
        return f"dist/trajectoriz is older than {os.path.relpath(newer[0], ROOT)} (run `make build` again)"
    return None


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    """A copy of dist/trajectoriz outside the source tree, and a trajectoriz-cli link to it."""
    reason = _missing_reason()
    if reason:
        if os.environ.get("TRAJECTORIZ_TEST_BINARY"):
            pytest.fail(reason)
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("bin")
    copy = str(folder / "trajectoriz")
    shutil.copy2(BINARY, copy)
    os.symlink("trajectoriz", folder / "trajectoriz-cli")
    return copy


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The example store, re-homed into a project; an environment with no virtualenv in it, and
    a TMPDIR of its own."""
    workdir = str(tmp_path_factory.mktemp("store"))
    env, project = demo.stage(workdir)
    env = {"PATH": "/usr/bin:/bin", "HOME": env["HOME"], "XDG_CACHE_HOME": env["XDG_CACHE_HOME"],
           "TMPDIR": os.path.join(workdir, "tmp"), "TZ": "UTC", "LANG": "C.UTF-8"}
    os.mkdir(env["TMPDIR"], 0o700)
    return env, project


def run(program: str, *args: str, env: dict, cwd: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([program, *args], env=env, cwd=cwd, capture_output=True, timeout=timeout)


def both(binary, store, *args):
    """The binary's and the source tree's result of the same command."""
    env, project = store
    return run(binary, *args, env=env, cwd=project), cli(*args, env=env, cwd=project)


# The commands of the published usage ---------------------------------------------------------------
SAME_AS_SOURCE = [
    ["--version"], ["--help"], ["list"], ["list", "--all", "--json"], ["search", "note"],
    ["search", "--content", "SCENARIO-DONE", "--json"], ["stats", "--json"], ["agents", "--json"],
]


@pytest.mark.parametrize("args", SAME_AS_SOURCE, ids=" ".join)
def test_output_matches_the_source_tree(binary, store, args):
    """search --content, stats and agents run their process pools (forked) in the binary."""
    frozen, source = both(binary, store, *args)
    assert frozen.returncode == 0, frozen.stderr
    assert (frozen.stdout, frozen.stderr) == (source.stdout, source.stderr)
    assert frozen.stdout.strip()


def test_the_example_store_takes_every_pool(binary, store):
    """The comparisons above go through the process pools only with enough sessions and cores."""
    import health
    import parallel

    env, project = store
    sessions = run(binary, "list", "--all", "--json", env=env, cwd=project).stdout.splitlines()
    assert len(sessions) >= health.POOL_THRESHOLD and parallel.cores() >= 2


def test_show_matches_the_source_tree(binary, store):
    env, project = store
    listed = run(binary, "list", "--all", "--json", env=env, cwd=project)
    for record in [json.loads(line) for line in listed.stdout.splitlines()][:3]:
        shown, source = both(binary, store, "show", record["id"])
        assert shown.returncode == 0 and shown.stdout == source.stdout
        assert json.loads(shown.stdout)["extra"]["short_id"] == record["id"]
        readable, source = both(binary, store, "show", record["id"], "--markdown")
        assert readable.returncode == 0 and readable.stdout == source.stdout


def test_export_and_validate(binary, store, tmp_path):
    import invocation

    env, project = store
    out_frozen, out_source = tmp_path / "frozen", tmp_path / "source"
    assert run(binary, "export", "--all", "--out", str(out_frozen), env=env, cwd=project).returncode == 0
    assert cli("export", "--all", "--out", str(out_source), env=env, cwd=project).returncode == 0
    names = sorted(os.listdir(out_frozen))
    assert names == sorted(os.listdir(out_source)) and "README.md" in names
    for name in names:
        frozen, source = (out_frozen / name).read_bytes(), (out_source / name).read_bytes()
        if name == "README.md":  # each names the command that runs it again (invocation.py)
            [app_id] = app_dirs(env["XDG_CACHE_HOME"])
            program = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app", app_id, "trajectoriz")
            source = source.replace(invocation.shown_command().encode(), program.encode())
        assert frozen == source, name
    files = sorted(str(p) for p in out_frozen.glob("*.atif.json"))
    checked = run(binary, "validate", *files, env=env, cwd=project)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.decode().count(": valid ATIF-v1.7") == len(files) > 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "ATIF-v1.7", "steps": []}')
    assert run(binary, "validate", "-q", str(bad), env=env, cwd=project).returncode == 1


def test_invoked_as_trajectoriz_cli_it_behaves_the_same(binary, store):
    env, project = store
    link = os.path.join(os.path.dirname(binary), "trajectoriz-cli")
    for args in (["--version"], ["list", "--all", "--json"], ["frobnicate"]):
        via_link, direct = run(link, *args, env=env, cwd=project), run(binary, *args, env=env, cwd=project)
        assert (via_link.returncode, via_link.stdout, via_link.stderr) == \
            (direct.returncode, direct.stdout, direct.stderr)
    assert via_link.returncode == 2 and b"invalid choice" in via_link.stderr


def test_the_binary_knows_every_agent_module_of_the_source_tree(binary, store):
    """agents/ modules are found with pkgutil at run time: a module PyInstaller failed to
    collect would silently be missing. The error for an unknown agent lists the known ones."""
    import agents

    env, project = store
    result = run(binary, "list", "--agent", "no-such-agent", env=env, cwd=project)
    assert result.returncode == 2
    known = re.search(r"\(known: (.*)\)", result.stderr.decode()).group(1).split(", ")
    assert known == agents.names() and "claude" in known


# What the file holds --------------------------------------------------------------------------------
def _payload(path: str) -> tarfile.TarFile:
    """The program inside the single file: the gzip'd tar after the launcher's header."""
    with open(path, "rb") as handle:
        data = handle.read()
    skip = int(re.search(rb"\nskip=(\d+)\n", data[:8192]).group(1))
    return tarfile.open(fileobj=io.BytesIO(data[skip - 1:]), mode="r:gz")


def test_no_libfuse_and_no_build_or_test_tools_inside(binary, tmp_path):
    """libfuse must come from the host (fuse.md §4.1): neither the bundle's files nor the
    executable's own archive (PyInstaller's TOC, with the PYZ of modules) may hold a copy."""
    from PyInstaller.archive.readers import pkg_archive_contents

    with _payload(binary) as tar:
        names = tar.getnames()
        executable = next(n for n in names if n.count("/") == 1 and n.endswith("/trajectoriz"))
        tar.extract(executable, tmp_path, filter="data")
    files = [os.path.basename(n) for n in names]
    toc = pkg_archive_contents(str(tmp_path / executable))
    assert any(f.startswith("libpython3") for f in files) and "agents.claude" in toc  # it is the bundle
    assert [f for f in files + toc if "libfuse" in f or "osxfuse" in f] == []
    top_level = {n.split("/")[2].split(".")[0] for n in names if n.count("/") >= 2}
    top_level |= {name.split(".")[0] for name in toc}
    unwanted = {"PyInstaller", "harbor", "pytest", "_pytest", "hypothesis", "pydantic", "jsonschema",
                "tkinter", "unittest", "pydoc", "pydoc_data", "lib2to3", "setuptools", "pip"}
    assert top_level & unwanted == set()


# Unpacking once, safely ------------------------------------------------------------------------------
def app_dirs(cache: str) -> list[str]:
    root = os.path.join(cache, "trajectoriz", "app")
    return sorted(os.listdir(root)) if os.path.isdir(root) else []


def fresh_env(tmp_path, **extra) -> dict:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "TMPDIR": str(tmp_path)}
    env.update(extra)
    return env


def test_every_run_of_the_binary_keeps_its_state_in_its_tests_folders(store, tmp_path, tmp_path_factory):
    """$HOME, the cache and the launcher's fallback folder (under TMPDIR, else the shared /tmp)
    of every environment the binary runs in are the tests' own: a program another run left in
    /tmp/trajectoriz-<uid> is never started in place of this build. Needs no build."""
    base = str(tmp_path_factory.getbasetemp()) + os.sep
    for env in (store[0], fresh_env(tmp_path)):
        folders = [env.get(v, "") for v in ("HOME", "XDG_CACHE_HOME", "TMPDIR")]
        assert [folder for folder in folders if not folder.startswith(base)] == []
        assert not {"XDG_RUNTIME_DIR", "XDG_DATA_HOME"} & env.keys()  # trajectoriz's other folders


def test_first_run_unpacks_once_and_later_runs_never_read_the_payload(binary, tmp_path):
    copy = str(tmp_path / "trajectoriz")
    shutil.copy2(binary, copy)
    env = fresh_env(tmp_path)
    assert run(copy, "--version", env=env, cwd=str(tmp_path)).returncode == 0
    [app_id] = app_dirs(env["XDG_CACHE_HOME"])
    assert re.fullmatch(r"\d+\.\d+\.\d+-[0-9a-f]{16}", app_id)
    assert not os.path.exists(tmp_path / f"trajectoriz-{os.getuid()}")  # the fallback stays unused
    app = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app", app_id)
    inode = os.stat(app).st_ino
    os.truncate(copy, os.path.getsize(copy) - 4096)  # damage the payload: only a new unpack reads it
    again = run(copy, "--version", env=env, cwd=str(tmp_path))
    assert again.returncode == 0 and again.stdout.startswith(b"trajectoriz ")
    assert app_dirs(env["XDG_CACHE_HOME"]) == [app_id] and os.stat(app).st_ino == inode


def test_a_damaged_file_is_refused_before_unpacking(binary, tmp_path):
    copy = str(tmp_path / "trajectoriz")
    shutil.copy2(binary, copy)
    os.truncate(copy, os.path.getsize(copy) - 4096)
    env = fresh_env(tmp_path)
    result = run(copy, "--version", env=env, cwd=str(tmp_path))
    assert result.returncode == 2 and b"is damaged" in result.stderr and b"download it again" in result.stderr
    assert app_dirs(env["XDG_CACHE_HOME"]) == []


def test_concurrent_first_runs(binary, tmp_path):
    env = fresh_env(tmp_path)
    runs = [subprocess.Popen([binary, "list", "--all", "--json"], env=env, cwd=str(tmp_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(6)]
    results = [(p.wait(timeout=60), p.stderr.read()) for p in runs]
    for p in runs:
        p.stdout.close()
        p.stderr.close()
    assert results == [(0, b"")] * 6
    root = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app")
    assert len(os.listdir(root)) == 1  # one published copy, no unpack folders left over


def test_old_versions_are_removed_once_unused(binary, tmp_path):
    env = fresh_env(tmp_path)
    root = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app")
    for name in ("0.0.1-unused", "0.0.2-running", "unrelated", ".unpack-old", ".unpack-recent"):
        os.makedirs(os.path.join(root, name))
    for name in ("0.0.1-unused", "0.0.2-running"):
        open(os.path.join(root, name, MARKER), "w").close()
    old = time.time() - 2 * 3600
    os.utime(os.path.join(root, ".unpack-old"), (old, old))
    running = os.open(os.path.join(root, "0.0.2-running", MARKER), os.O_RDONLY)
    fcntl.flock(running, fcntl.LOCK_SH)  # as a process of that version holds it
    try:
        assert run(binary, "--version", env=env, cwd=str(tmp_path)).returncode == 0
    finally:
        os.close(running)
    left = [d for d in app_dirs(env["XDG_CACHE_HOME"]) if not re.fullmatch(r"\d+\.\d+\.\d+-[0-9a-f]{16}", d)]
    assert left == sorted([".unpack-recent", "0.0.2-running", "unrelated"])


def test_unwritable_cache_falls_back_to_a_private_tmp_folder(binary, tmp_path):
    env = fresh_env(tmp_path, XDG_CACHE_HOME="/proc/trajectoriz-cannot-write-here")
    result = run(binary, "--version", env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    private = tmp_path / f"trajectoriz-{os.getuid()}"
    assert (private.stat().st_mode & 0o777) == 0o700 and len(os.listdir(private / "app")) == 1
    assert run(binary, "--version", env=env, cwd=str(tmp_path)).returncode == 0


# The mount, from the binary --------------------------------------------------------------------------
def _fuse_missing() -> str | None:
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    if not (shutil.which("fusermount3") or shutil.which("fusermount")):
        return "no fusermount3 (apt-get install fuse3)"
    return None


def _mapped_files(pid: int) -> set[str]:
    with open(f"/proc/{pid}/maps", encoding="utf-8", errors="replace") as handle:
        return {line.split(None, 5)[5].strip() for line in handle if len(line.split(None, 5)) == 6}


def test_background_mount_outlives_the_launcher_and_uses_the_hosts_libfuse(binary, store, tmp_path):
    """`trajectoriz memory` re-executes the binary as its server and returns: the server runs
    from the unpacked copy in the cache (not a temporary folder that vanishes with the command)
    and loads the host's libfuse; grep -r reads every session through it; --unmount ends it."""
    env, project = store
    if run(binary, "memory", "--help", env=env, cwd=project).returncode != 0:
        pytest.skip("this build has no memory command yet")
    reason = _fuse_missing()
    if reason:
        pytest.skip(reason)
    point = os.path.join(project, "memory")
    started = run(binary, "memory", point, env=env, cwd=project, timeout=90)
    try:
        assert started.returncode == 0, started.stderr
        status = run(binary, "memory", "--status", point, env=env, cwd=project)
        assert status.returncode == 0, status.stdout
        pid = int(re.search(rb"server pid (\d+)", status.stdout).group(1))
        app = os.path.realpath(os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app"))
        assert os.path.realpath(f"/proc/{pid}/exe").startswith(app + os.sep)
        fuse_libraries = [f for f in _mapped_files(pid) if os.path.basename(f).startswith("libfuse")]
        assert fuse_libraries and not any(f.startswith(app) for f in fuse_libraries), fuse_libraries
        grep = subprocess.run(["timeout", "-s", "KILL", "60", "grep", "-r", "-l", "SCENARIO", point],
                              capture_output=True, timeout=90)
        found = sorted(os.path.basename(p) for p in grep.stdout.decode().split())
        exported = tmp_path / "export"
        run(binary, "export", "--out", str(exported), env=env, cwd=project)
        sessions = sorted(p.name for p in exported.glob("*.atif.json"))
        assert grep.returncode == 0 and sessions and set(sessions) <= set(found)
    finally:
        stopped = run(binary, "memory", "--unmount", point, env=env, cwd=project, timeout=60)
        if stopped.returncode != 0:
            subprocess.run(["fusermount3", "-uz", point], capture_output=True)
    assert stopped.returncode == 0, stopped.stderr
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        assert f" {point} " not in handle.read()


def test_the_mounts_renderer_runs_from_the_binary(binary, store):
    """The mount's warm-up starts `trajectoriz memory-worker` (warmup.py) from the binary: it
    answers a session with the totals of exactly the document `show` prints."""
    import catalog

    env, project = store
    session = catalog.discover(env).sessions[0]
    line = json.dumps([session.to_cache(), session.short_id]) + "\n"
    answered = subprocess.run([binary, "memory-worker"], input=line.encode(), env=env, cwd=project,
                              capture_output=True, timeout=60)
    assert answered.returncode == 0, answered.stderr
    facts = json.loads(answered.stdout)
    assert facts["size"] == len(run(binary, "show", session.short_id, env=env, cwd=project).stdout)
