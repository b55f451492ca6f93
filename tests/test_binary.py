"""The shipped single file, dist/trajectoriz (`make build`), smoke-tested as a user runs it:
copied out of the source tree, started from a project folder elsewhere, with no virtualenv on
PATH, against the example store. Its output must be byte-identical to `python trajectoriz.py`,
on this host and in a root file system holding nothing but a static busybox (no C library: the
binary carries its own). What its launcher refuses, it says in one line (exit 2), leaving nothing
unpacked behind.

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
import signal
import subprocess
import sys
import tarfile
import time

import pytest

from helpers import NOT_INSTALLED, ROOT, cli

sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "build"))
import demo  # noqa: E402  (stages the example store the way `make demo` does)
import glibc_floor  # noqa: E402
import pack  # noqa: E402
import rootfs  # noqa: E402

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
    ["--version"], ["--help"], ["--man"], ["list"], ["list", "--all", "--json"], ["search", "note"],
    ["search", "--content", "SCENARIO-DONE", "--json"], ["stats", "--json"], ["agents", "--json"],
    ["--completion", "zsh"], ["complete-ids"],
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
    from commands import health
    from core import parallel

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
    from core import invocation

    env, project = store
    out_frozen, out_source = tmp_path / "frozen", tmp_path / "source"
    assert run(binary, "export", "--all", "--out", str(out_frozen), env=env, cwd=project).returncode == 0
    assert cli("export", "--all", "--out", str(out_source), env=env, cwd=project).returncode == 0
    names = sorted(os.listdir(out_frozen))
    assert names == sorted(os.listdir(out_source)) and "README.md" in names
    for name in [n for n in names if (out_frozen / n).is_file()]:
        frozen, source = (out_frozen / name).read_bytes(), (out_source / name).read_bytes()
        if name == "README.md":  # each names the program as the user runs it (core/invocation.py)
            source = source.replace(invocation.shown_command().encode(), binary.encode())
        assert frozen == source, name
    files = sorted(str(p) for p in out_frozen.glob("*.atif.json"))
    checked = run(binary, "validate", *files, env=env, cwd=project)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.decode().count(": valid ATIF-v1.7") == len(files) > 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "ATIF-v1.7", "steps": []}')
    assert run(binary, "validate", "-q", str(bad), env=env, cwd=project).returncode == 1


def test_memory_readme_names_the_release_file_as_the_user_runs_it(binary, store, tmp_path):
    """Not the copy unpacked in the cache (an upgrade removes it, and an exported README.md then
    names nothing): `trajectoriz` where that name on PATH is this release (the file, or a link to
    it), else the file's own path."""
    env, project = store
    folder = os.path.dirname(binary)
    linked = tmp_path / "bin"
    linked.mkdir()
    os.symlink(binary, linked / "trajectoriz")
    for path, shown in ((f"{folder}:/usr/bin:/bin", "trajectoriz"), (f"{linked}:/usr/bin:/bin", "trajectoriz"),
                        ("/usr/bin:/bin", binary)):
        out = tmp_path / f"out{len(os.listdir(tmp_path))}"
        assert run(binary, "export", "--out", str(out), env={**env, "PATH": path}, cwd=project).returncode == 0
        readme = (out / "README.md").read_text()
        assert f"trajectoriz is run here as `{shown}`" in readme and f"\n    {shown} search --local " in readme
        assert env["XDG_CACHE_HOME"] not in readme and "host-libc" not in readme
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    os.chdir(moved)
    try:  # run by a relative path: named by its absolute one
        relative = os.path.relpath(binary)
        out = tmp_path / "relative"
        assert run(relative, "export", "--out", str(out), env=env, cwd=project).returncode == 0
    finally:
        os.chdir(ROOT)
    assert f"trajectoriz is run here as `{binary}`" in (out / "README.md").read_text()


def test_invoked_as_trajectoriz_cli_it_behaves_the_same(binary, store):
    env, project = store
    link = os.path.join(os.path.dirname(binary), "trajectoriz-cli")
    for args in (["--version"], ["list", "--all", "--json"], ["frobnicate"]):
        via_link, direct = run(link, *args, env=env, cwd=project), run(binary, *args, env=env, cwd=project)
        assert (via_link.returncode, via_link.stdout, via_link.stderr) == \
            (direct.returncode, direct.stdout, direct.stderr)
    assert via_link.returncode == 2 and b"unknown command 'frobnicate'" in via_link.stderr


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


def nothing_unpacked(env: dict) -> bool:
    """No program, and no unpack folder, in the cache or the launcher's fallback folder."""
    fallback = os.path.join(env["TMPDIR"], f"trajectoriz-{os.getuid()}", "app")
    return app_dirs(env["XDG_CACHE_HOME"]) == [] and not (os.path.isdir(fallback) and os.listdir(fallback))


def one_line(result) -> str:
    """The launcher's refusal: exit 2 and one line on stderr, nothing on stdout."""
    assert result.returncode == 2 and result.stdout == b"", result
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trajectoriz: "), lines
    return lines[0]


def test_a_truncated_download_is_refused_before_unpacking(binary, tmp_path):
    copy = str(tmp_path / "trajectoriz")
    shutil.copy2(binary, copy)
    size = os.path.getsize(copy)
    os.truncate(copy, size - 4096)
    env = fresh_env(tmp_path)
    said = one_line(run(copy, "--version", env=env, cwd=str(tmp_path)))
    assert said == f"trajectoriz: {copy} is truncated ({size - 4096} of {size} bytes): download it again"
    assert nothing_unpacked(env)


def test_a_cache_moved_elsewhere_is_unpacked_again(binary, tmp_path):
    """The unpacked program names its loader by absolute path: a cache folder moved or restored
    under another path (a CI cache under another home) must not run a program whose loader is
    gone; it is unpacked there again."""
    first = fresh_env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "before"))
    assert run(binary, "--version", env=first, cwd=str(tmp_path)).returncode == 0
    shutil.move(str(tmp_path / "before"), str(tmp_path / "after"))
    moved = fresh_env(tmp_path, XDG_CACHE_HOME=str(tmp_path / "after"))
    again = run(binary, "--version", env=moved, cwd=str(tmp_path))
    assert (again.returncode, again.stdout, again.stderr) == (0, f"trajectoriz {pack.VERSION}\n".encode(), b"")
    [app_id] = app_dirs(moved["XDG_CACHE_HOME"])
    app = os.path.join(moved["XDG_CACHE_HOME"], "trajectoriz", "app")
    assert os.readlink(os.path.join(app, app_id, ".interpreter")).startswith(os.path.realpath(app) + os.sep)
    assert [n for n in os.listdir(app) if n.startswith(".unpack-")] == []


def test_a_damaged_file_is_refused_before_unpacking(binary, tmp_path):
    copy = str(tmp_path / "trajectoriz")
    shutil.copy2(binary, copy)
    with open(copy, "r+b") as handle:  # one byte of the payload changed, the size the same
        handle.seek(-5000, os.SEEK_END)
        byte = handle.read(1)
        handle.seek(-5000, os.SEEK_END)
        handle.write(bytes([byte[0] ^ 0xFF]))
    env = fresh_env(tmp_path)
    said = one_line(run(copy, "--version", env=env, cwd=str(tmp_path)))
    assert said == f"trajectoriz: {copy} is damaged (its SHA-256 does not match): download it again"
    assert nothing_unpacked(env)


def tools_without(tmp_path, left_out: str):
    """A folder of links to every program of /usr/bin and /bin but `left_out`, for PATH."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for folder in ("/usr/bin", "/bin"):
        for name in os.listdir(folder):
            if name != left_out and not (tools / name).exists():
                os.symlink(os.path.join(folder, name), tools / name)
    return tools


def test_a_missing_program_the_launcher_needs_is_named(binary, tmp_path):
    """A PATH with everything but gzip (as in a slim container without it)."""
    env = fresh_env(tmp_path, PATH=str(tools_without(tmp_path, "gzip")))
    said = one_line(run(binary, "--version", env=env, cwd=str(tmp_path)))
    assert said == "trajectoriz: cannot unpack the program: this system lacks gzip"
    assert nothing_unpacked(env)


def test_an_interrupted_first_run_leaves_nothing_behind(binary, tmp_path):
    """Ctrl-C during the first run's unpack (SIGINT to the launcher's process group, as a terminal
    sends it): exit 130, and neither the half-unpacked folder nor the program is left. The `tar`
    on PATH unpacks, then waits to be interrupted, so that the signal comes mid-unpack."""
    tools = tools_without(tmp_path, "tar")
    mark = tmp_path / "unpacked"
    real_tar = shutil.which("tar", path="/usr/bin:/bin")
    (tools / "tar").write_text(f'#!/bin/sh\n"{real_tar}" "$@" || exit\n: > "{mark}"\nexec sleep 600\n')
    (tools / "tar").chmod(0o755)
    env = fresh_env(tmp_path, PATH=str(tools))
    launcher = subprocess.Popen([binary, "--version"], env=env, cwd=str(tmp_path), start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        while not mark.exists():
            assert launcher.poll() is None, launcher.communicate()
            time.sleep(0.05)
        app = os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app")
        assert [n for n in os.listdir(app) if n.startswith(".unpack-")]  # mid-unpack indeed
        os.killpg(launcher.pid, signal.SIGINT)
        out, _ = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
    assert (launcher.returncode, out) == (130, b"")
    assert nothing_unpacked(env)


def test_no_folder_to_unpack_into_is_said_in_one_line(binary, tmp_path):
    env = fresh_env(tmp_path, XDG_CACHE_HOME="/proc/trajectoriz-cannot-write-here",
                    TMPDIR="/proc/trajectoriz-nor-here")
    said = one_line(run(binary, "--version", env=env, cwd=str(tmp_path)))
    assert said == ("trajectoriz: cannot unpack the program: /proc/trajectoriz-cannot-write-here/trajectoriz/app "
                    f"cannot be written; /proc/trajectoriz-nor-here/trajectoriz-{os.getuid()} cannot be "
                    "written (set XDG_CACHE_HOME to a folder you can write and run programs from)")


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
        mapped = _mapped_files(pid)
        fuse_libraries = [f for f in mapped if os.path.basename(f).startswith("libfuse")]
        assert fuse_libraries and not any(f.startswith(app) for f in fuse_libraries), fuse_libraries
        # The host's glibc is new enough here: the server runs on it (invocation.use_host_libc),
        # since the host's libfuse may ask for a newer glibc than the one the program carries.
        assert os.path.basename(os.path.realpath(f"/proc/{pid}/exe")) == "trajectoriz-host-libc"
        libc = [f for f in mapped if os.path.basename(f).startswith("libc.so")]
        assert libc and not any(f.startswith(app) for f in libc), libc
        grep = subprocess.run(["timeout", "-s", "KILL", "60", "grep", "-R", "-l", "SCENARIO", point],  # -R: through the symlinks
                              capture_output=True, timeout=90)
        found = sorted(os.path.basename(p) for p in grep.stdout.decode().split())
        exported = tmp_path / "export"
        run(binary, "export", "--out", str(exported), env=env, cwd=project)
        sessions = sorted(p.name for p in exported.glob("*.atif.json"))
        assert grep.returncode == 0 and sessions and set(sessions) <= set(found)
        # The server (the unpacked copy, on the host's C library) names the file the user ran.
        with open(os.path.join(point, "README.md"), encoding="utf-8") as handle:
            assert f"trajectoriz is run here as `{binary}`" in handle.read()
    finally:
        stopped = run(binary, "memory", "--unmount", point, env=env, cwd=project, timeout=60)
        if stopped.returncode != 0:
            subprocess.run(["fusermount3", "-uz", point], capture_output=True)
    assert stopped.returncode == 0, stopped.stderr
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        assert f" {point} " not in handle.read()


def test_the_mounts_renderer_runs_from_the_binary(binary, store):
    """The mount's warm-up starts `trajectoriz memory-worker` (mount/warmup.py) from the binary: it
    answers a session with the totals of exactly the document `show` prints."""
    from discovery import catalog

    env, project = store
    session = catalog.discover(env).sessions[0]
    line = json.dumps([session.to_cache(), session.short_id]) + "\n"
    answered = subprocess.run([binary, "memory-worker"], input=line.encode(), env=env, cwd=project,
                              capture_output=True, timeout=60)
    assert answered.returncode == 0, answered.stderr
    facts = json.loads(answered.stdout)
    assert facts["size"] == len(run(binary, "show", session.short_id, env=env, cwd=project).stdout)


# Every Linux: its own loader and C library --------------------------------------------------------
def _version(text: str) -> tuple:
    return tuple(int(part) for part in text.split("."))


@pytest.fixture(scope="module")
def floor(binary, tmp_path_factory):
    """What `objdump -p` says every ELF of the binary's bundle needs (build/glibc_floor.py)."""
    return glibc_floor.measure(glibc_floor.unpacked(binary, str(tmp_path_factory.mktemp("floor"))))


def test_every_elf_inside_is_served_by_the_c_library_it_carries(floor, binary, tmp_path):
    carried = floor["carried"]
    assert carried is not None and carried["lacking"] == []
    assert {"ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6"} <= set(carried["files"])
    assert not [f for f in carried["files"] if "fuse" in f]  # libfuse stays the host's
    assert _version(floor["host_glibc_floor"]) <= _version(carried["glibc"])
    bundle = glibc_floor.unpacked(binary, str(tmp_path))
    kept = {}
    for rel in glibc_floor.ownlibc.elf_files(bundle):  # no ELF looks in the build host's folders
        dynamic = subprocess.run(["readelf", "-d", os.path.join(bundle, rel)], capture_output=True, text=True).stdout
        kept.update({rel: line for line in dynamic.splitlines() if "RPATH" in line or "RUNPATH" in line})
    assert list(kept) == ["trajectoriz"] and "[$ORIGIN/_internal:$ORIGIN/_internal/libc]" in kept["trajectoriz"]


def test_objdump_T_over_every_elf_gives_the_floor_stated(floor, binary, tmp_path):
    """The floor as the issue asks for it: the newest GLIBC_ version beside an undefined symbol
    in `objdump -T` of any ELF outside the carried C library, which is what glibc_floor.py says
    (it reads the version references of `objdump -p`)."""
    bundle = glibc_floor.unpacked(binary, str(tmp_path))
    newest = {}
    for rel in glibc_floor.ownlibc.elf_files(bundle):
        if rel.startswith(glibc_floor.ownlibc.LIBC_DIR + os.sep):
            continue
        table = subprocess.run(["objdump", "-T", os.path.join(bundle, rel)], capture_output=True, text=True,
                               check=True).stdout
        versions = re.findall(r"\*UND\*\s+[0-9a-f]+\s+\(?(GLIBC_[0-9.]+)\)?", table)
        if versions:
            newest[rel] = max(versions, key=glibc_floor.version_key)
    top = max(newest.values(), key=glibc_floor.version_key)
    assert glibc_floor.dotted(glibc_floor.version_key(top)) == floor["host_glibc_floor"]
    assert sorted(rel for rel, version in newest.items() if version == top) == floor["asking_most"]


def test_build_readme_and_readme_state_the_floor_measured(floor):
    """build/README.md gives the floor the objdump check measures, and README.md's Install section
    the one a user needs to know: no C library, the kernel."""
    carried = floor["carried"]
    build_readme = " ".join(open(os.path.join(ROOT, "build", "README.md"), encoding="utf-8").read().split())
    stated = re.search(r"glibc floor: none\b.*?carries glibc (\S+?)[,)].*?Linux (\S+) or later.*?"
                       r"host's C library.*?glibc (\S+) or later", build_readme)
    assert stated and stated.groups() == (carried["glibc"], carried["kernel"], floor["host_glibc_floor"])
    install = " ".join(install_section().split())
    stated = re.search(r"Linux x86_64 with a kernel (\S+) or later.*?carries its own.*?\(glibc (\S+)\)", install)
    assert stated and stated.groups() == (carried["kernel"], carried["glibc"])


@pytest.fixture(scope="module")
def busybox_root(tmp_path_factory):
    """A root file system holding nothing but a static busybox: no loader, no C library."""
    reason = rootfs.missing() or (None if rootfs.static_busybox() else f"busybox-static {NOT_INSTALLED} busybox-static)")
    if reason:
        pytest.skip(reason)
    return rootfs.busybox(str(tmp_path_factory.mktemp("busybox")))


def test_runs_where_there_is_no_c_library(binary, store, busybox_root, tmp_path):
    """In a busybox-only root (the store, the binary and a fresh cache bound at the same paths),
    the first run unpacks with busybox's tools, and every command prints exactly what
    `python trajectoriz.py` prints outside (with the same caches: a listing shows the steps of
    the sessions rendered before)."""
    env, project = store
    env = inside = dict(env, XDG_CACHE_HOME=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    binds = (os.path.dirname(binary), os.path.commonpath([env["HOME"], project, env["TMPDIR"]]), str(tmp_path))
    listed = [json.loads(line) for line in cli("list", "--all", "--json", env=env, cwd=project).stdout.splitlines()]
    commands = [["--version"], ["list"], ["list", "--all", "--json"], ["show", listed[0]["id"]],
                ["show", listed[-1]["id"], "--markdown"], ["search", "note"],
                ["search", "--content", "SCENARIO-DONE", "--json"]]
    for args in commands:
        frozen = rootfs.run(busybox_root, [binary, *args], inside, binds=binds, cwd=project)
        source = cli(*args, env=env, cwd=project)
        assert (frozen.returncode, frozen.stdout, frozen.stderr) == (0, source.stdout, source.stderr), args
    out = tmp_path / "exported"
    exported = rootfs.run(busybox_root, [binary, "export", "--all", "--out", str(out)], inside, binds=binds, cwd=project)
    assert exported.returncode == 0, exported.stderr
    assert cli("export", "--all", "--out", str(tmp_path / "source"), env=env, cwd=project).returncode == 0
    assert sorted(os.listdir(out)) == sorted(os.listdir(tmp_path / "source"))
    for name in os.listdir(out):
        if name != "README.md" and (out / name).is_file():
            assert (out / name).read_bytes() == (tmp_path / "source" / name).read_bytes(), name
    # The mount needs a libfuse of the host's, and this one has none: one line, which says so.
    mounted = rootfs.run(busybox_root, [binary, "memory", str(tmp_path / "memory")], inside, binds=binds, cwd=project)
    assert mounted.returncode == 2 and len(mounted.stderr.splitlines()) == 1, mounted.stderr
    assert b"no usable FUSE library" in mounted.stderr and b"trajectoriz export --out DIR" in mounted.stderr


@pytest.fixture(scope="module")
def host_libc_binary(binary, tmp_path_factory):
    """dist/trajectoriz-app packed as before issue 15 (pack.py --host-libc): the host's glibc."""
    folder = tmp_path_factory.mktemp("host-libc")
    subprocess.run([sys.executable, os.path.join(ROOT, "build", "pack.py"), "--host-libc", "--bundle",
                    os.path.join(ROOT, "dist", "trajectoriz-app"), "--output", str(folder / "trajectoriz")],
                   check=True, capture_output=True)
    return str(folder / "trajectoriz")


def _fake_getconf(folder, says: str) -> str:
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "getconf")
    with open(path, "w") as handle:
        handle.write(f"#!/bin/sh\necho '{says}'\n")
    os.chmod(path, 0o755)
    return folder


def test_a_build_on_the_hosts_glibc_refuses_an_older_one_before_unpacking(host_libc_binary, floor, tmp_path):
    fake = _fake_getconf(str(tmp_path / "fake"), "glibc 2.31")
    env = fresh_env(tmp_path, PATH=f"{fake}:/usr/bin:/bin")
    said = one_line(run(host_libc_binary, "--version", env=env, cwd=str(tmp_path)))
    assert said == f"trajectoriz: needs glibc {floor['host_glibc_floor']} or later; this system has glibc 2.31"
    assert nothing_unpacked(env)


def test_a_build_on_the_hosts_glibc_refuses_a_system_without_one(host_libc_binary, floor, busybox_root, tmp_path):
    env = fresh_env(tmp_path)
    binds = (os.path.dirname(host_libc_binary), str(tmp_path))
    said = one_line(rootfs.run(busybox_root, [host_libc_binary, "--version"], env, binds=binds, cwd=str(tmp_path)))
    assert said == (f"trajectoriz: needs the GNU C library (glibc) {floor['host_glibc_floor']} or later; "
                    "this system has none (musl?)")
    assert nothing_unpacked(env)


def test_a_program_that_does_not_start_is_removed_and_said_in_one_line(host_libc_binary, busybox_root, tmp_path):
    """A host that claims a new glibc it lacks: the unpacked program cannot start; the launcher
    says so and leaves no unpacked copy behind (where the loader error used to leave 16 MB)."""
    fake = _fake_getconf(os.path.join(busybox_root, "fake"), "glibc 9.99")
    env = fresh_env(tmp_path, PATH="/fake:/bin")
    binds = (os.path.dirname(host_libc_binary), str(tmp_path))
    try:
        said = one_line(rootfs.run(busybox_root, [host_libc_binary, "--version"], env, binds=binds, cwd=str(tmp_path)))
    finally:
        shutil.rmtree(fake)
    assert said.startswith("trajectoriz: the program does not start on this system: ")
    assert nothing_unpacked(env)


# README's Install section, done as it says ----------------------------------------------------------
def install_section() -> str:
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return text[text.index("\n## Install\n"):].split("\n## ", 2)[1]


def test_the_install_section_works_as_shown(binary, tmp_path):
    """The release file and its .sha256 (as `make release` writes them), then the section's first
    block run as shown, by one shell in the download folder (`uname -m` picks the file)."""
    section = install_section()
    for machine in ("x86_64", "aarch64"):
        name = pack.release_name(machine)
        assert f"`{name}`" in section and f"`{name}.sha256`" in section
    name = pack.release_name()
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    pack.release(binary, into=str(downloads))
    block = re.search(r"\n\n((?:    .*\n)+)", section).group(1)
    commands = [line[4:] for line in block.splitlines() if line.strip()]
    assert commands[0] == f"file={pack.release_name('$(uname -m)')}"
    assert commands[-1] == "~/.local/bin/trajectoriz --version"
    home = tmp_path / "home"
    home.mkdir()  # no ~/.local/bin on PATH: it is there only from the next login (tests/test_install.py)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)}
    done = subprocess.run(["sh", "-e", "-c", "\n".join(commands)], cwd=downloads, env=env, capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == f"{name}: OK\ntrajectoriz {pack.VERSION}\n"
    assert os.listdir(downloads) == [f"{name}.sha256"]  # the program moved onto PATH
    page = home / ".local" / "share" / "man" / "man1" / "trajectoriz.1"
    assert page.read_text().startswith(".TH TRAJECTORIZ")
    for package in ("fuse3",):  # what .ci/run installs on Debian for the mount tests
        assert f"apt install {package}" in section


def test_the_bundle_carries_the_redaction_rules_compiled(binary, store):
    """The patterns are compiled at build time (core/compiledre.py): the unpacked bundle holds every
    rule's code, which it reads as the source tree reads its own."""
    import glob
    import re

    from core import compiledre
    from redaction import redact

    env, project = store
    assert run(binary, "list", env=env, cwd=project).returncode == 0
    kept = glob.glob(os.path.join(env["XDG_CACHE_HOME"], "trajectoriz", "app", "*", "_internal", "core", "__pycache__",
                                  os.path.basename(compiledre._path())))
    assert len(kept) == 1
    found = compiledre._load(kept[0])
    for _, _, pattern, _ in redact.ALL_PASSES:
        parts = found[(pattern.pattern, 0)]
        assert compiledre._engine(pattern.pattern, parts) == re.compile(pattern.pattern)
