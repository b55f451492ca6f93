"""The mount's warm-up (mount/warmup.py): a walk over the directory (`ls -l`, `grep -r`, `cat *`) is
rendered ahead of time by worker processes; a listing alone, or a file here and there, is not.

Without a mount: the file system object is driven directly, with real worker processes (copies
of trajectoriz). The server itself must translate nothing the workers rendered, sizes and bytes
must be exactly what `show` gives (also in the middle of a walk, before the workers are done,
and for a session that grows afterwards), and no worker may outlive the mount.
"""

import os
import sys
import time

import pytest

from mount import memoryfs, memoryindex, warmup
from rendering import documents
from helpers import ROOT, cli
from test_memory import (append_user_message, claude_sessions, expected_sessions, index_rows, listed, make_store,
                         mount, needs_fuse, read_all, sizes_seen_by_ls, take_down)

WORKER = [sys.executable, os.path.join(ROOT, "trajectoriz.py")]


@pytest.fixture
def store(tmp_path):
    return make_store(tmp_path)


def shown(env, name: str) -> bytes:
    return cli("show", name, env=env).stdout


def no_translation_here(monkeypatch):
    monkeypatch.setattr(documents, "_translated", lambda *a: pytest.fail("the server translated"))


def wait_idle(fs, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not fs._warmer.idle():
        assert time.monotonic() < deadline, "the warm-up did not finish"
        time.sleep(0.05)


def doc(name: str) -> str:
    """The path of a document (its name in memory/ is a symlink to it)."""
    return "/" + memoryfs.document_path(name)


def session_names(fs) -> list[str]:
    """The listing, in the directory's order (as `ls -l` and `grep -r` walk it)."""
    return [entry[0] for entry in fs.readdir("/", 0) if entry[0].endswith(".atif.json")]


def test_a_walk_is_rendered_by_the_workers_ahead_of_it(store, monkeypatch):
    env, proj, _ = store
    fs = memoryfs.MemoryFS(proj, env, worker_command=WORKER, workers=2)
    wanted = expected_sessions(env, proj)
    try:
        names = session_names(fs)
        assert set(wanted) <= set(names) and len(names) >= 3
        sizes = {names[0]: fs.getattr(doc(names[0]))["st_size"]}  # rendered here: no walk yet
        no_translation_here(monkeypatch)
        sizes.update((name, fs.getattr(doc(name))["st_size"]) for name in names[1:])  # before they are done
        for name in wanted:
            data, _ = read_all(fs, name)
            assert sizes[name] == len(data) and data == shown(env, name)
    finally:
        fs.destroy("/")


def test_a_listing_or_files_asked_about_out_of_order_start_no_worker(store):
    env, proj, _ = store
    fs = memoryfs.MemoryFS(proj, env, worker_command=WORKER, workers=2)
    try:
        names = session_names(fs)
        for name in (names[0], names[2]):  # not neighbours
            assert fs.getattr(doc(name))["st_size"] == len(shown(env, name))
        assert read_all(fs, names[-1])[0] == shown(env, names[-1])
        assert fs._warmer.idle() and fs._warmer._processes == []
    finally:
        fs.destroy("/")


def test_a_walk_backwards_is_rendered_ahead_of_it_too(store, monkeypatch):
    env, proj, _ = store
    fs = memoryfs.MemoryFS(proj, env, worker_command=WORKER, workers=2)
    try:
        names = session_names(fs)[::-1]  # `cat memory/*`: oldest first
        first = read_all(fs, names[0])[0]
        no_translation_here(monkeypatch)
        found = [first] + [read_all(fs, name)[0] for name in names[1:]]
        assert found == [shown(env, name) for name in names]
    finally:
        fs.destroy("/")


def test_the_first_read_of_the_index_has_the_workers_fill_it(store, monkeypatch):
    """INDEX.md's first read waits for the workers to render the sessions it knows nothing of
    (the server renders nothing): every row has its steps and outcome at once."""
    env, proj, _ = store
    fs = memoryfs.MemoryFS(proj, env, worker_command=WORKER, workers=2)
    try:
        no_translation_here(monkeypatch)
        first = index_rows(read_all(fs, memoryindex.INDEX)[0])
        assert first and all(row[2] and row[4] == "completed" for row in first.values())
        assert set(first) == set(expected_sessions(env, proj))
    finally:
        fs.destroy("/")


def walk_all(fs) -> dict:
    return {name: fs.getattr(doc(name))["st_size"] for name in session_names(fs)}


def test_a_session_that_grows_after_the_warm_up_shows_its_new_size(store):
    env, proj, _ = store
    fs = memoryfs.MemoryFS(proj, env, worker_command=WORKER, workers=2)
    try:
        walk_all(fs)
        wait_idle(fs)
        first = claude_sessions(env)[0]
        name = next(n for n, s in expected_sessions(env, proj).items() if s.source == first)
        before = fs.getattr(doc(name))["st_size"]
        append_user_message(first, "GROWN after the warm-up")
        after = shown(env, name)
        assert len(after) > before and fs.getattr(doc(name))["st_size"] == len(after)
        assert read_all(fs, name)[0] == after
    finally:
        fs.destroy("/")


def test_no_worker_outlives_the_mount(store):
    env, proj, _ = store
    fs = memoryfs.MemoryFS(proj, env, worker_command=WORKER, workers=2)
    names = session_names(fs)
    for name in names[:2]:
        fs.getattr(doc(name))
    workers = list(fs._warmer._processes)
    assert workers  # a walk over a cold cache: there is work
    fs.destroy("/")
    assert all(worker.poll() is not None for worker in workers)
    assert fs._warmer._processes == []


BROKEN_WORKERS = [[sys.executable, "-c", "pass"],  # exits before answering
                  ["/nonexistent/trajectoriz"]]     # cannot even start


@pytest.mark.parametrize("broken", BROKEN_WORKERS)
def test_dead_workers_leave_the_rendering_to_the_server(store, broken):
    env, proj, _ = store
    fs = memoryfs.MemoryFS(proj, env, worker_command=broken, workers=2)
    try:
        for name, size in walk_all(fs).items():
            assert size == len(shown(env, name))
    finally:
        fs.destroy("/")


@pytest.mark.parametrize("broken", BROKEN_WORKERS)
def test_without_workers_the_server_fills_the_index_s_first_read(store, broken):
    env, proj, _ = store
    fs = memoryfs.MemoryFS(proj, env, worker_command=broken, workers=2)
    try:
        rows = index_rows(read_all(fs, memoryindex.INDEX)[0])
        assert set(rows) == set(expected_sessions(env, proj))
        assert all(row[2] and row[4] == "completed" for row in rows.values())
    finally:
        fs.destroy("/")


def test_a_hung_worker_delays_a_request_only_until_the_deadline(store, monkeypatch):
    env, proj, _ = store
    monkeypatch.setattr(warmup, "WAIT_SECONDS", 0.5)
    hung = [sys.executable, "-c", "import sys, time; sys.stdin.readline(); time.sleep(120)"]
    fs = memoryfs.MemoryFS(proj, env, worker_command=hung, workers=1)
    try:
        started = time.monotonic()
        for name, size in walk_all(fs).items():
            assert size == len(shown(env, name))
        assert fs._warmer._running == 1  # the worker still hangs: the server answered alone
    finally:
        fs.destroy("/")
    assert time.monotonic() - started < 60  # not the worker's 120 s


def workers_of(home: str) -> list[int]:
    """Live `memory-worker` processes running for this test's $HOME."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            arguments = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            environment = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        if b"memory-worker" in arguments and f"HOME={home}".encode() in environment:
            found.append(int(pid))
    return found


@needs_fuse
def test_mounted_cold_listing_is_exact_and_unmount_leaves_no_worker(store):
    env, proj, _ = store
    point = os.path.join(proj, "memory")
    try:
        point, _ = mount(env, proj)
        seen = sizes_seen_by_ls(point)  # the first listing: every size is rendered by now
        assert {n: s for n, s in seen.items() if n.endswith(".atif.json")} == listed(env, proj)
        assert cli("memory", "--unmount", point, env=env, cwd=proj).returncode == 0
        assert workers_of(env["HOME"]) == []
    finally:
        take_down(point)


def test_released_snapshots_stay_readable_by_whoever_holds_one(tmp_path):
    """The server forgets the SQLite snapshots discovery kept (sqlite_ro.release_shared) while
    its serving thread may be reading one: that reader must not find it closed."""
    import sqlite3

    from agents import sqlite_ro

    path = str(tmp_path / "store.db")
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES (1)")
    db.close()
    held = sqlite_ro.shared(path)
    sqlite_ro.release_shared()
    assert held.execute("SELECT x FROM t").fetchall() == [(1,)]
    assert sqlite_ro.shared(path) is not held
