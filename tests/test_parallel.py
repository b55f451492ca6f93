"""The process pool behind `search --content`, `stats` and `list`: results in the items' order
whatever order the workers finish in, the same as one process, and no worker left behind when
the reader stops early (Ctrl-C, a closed pipe)."""

import multiprocessing
import os
import time

import pytest

from core import parallel


def slow_square(item, scale):
    time.sleep(0.002 * (item % 4))  # later items often finish first
    return item * item * scale, os.getpid()


def square_once_both_work(item, folder):
    """Item 0 waits until another process has taken an item: both workers must take part."""
    open(os.path.join(folder, str(os.getpid())), "w").close()
    deadline = time.monotonic() + 30
    while item == 0 and len(os.listdir(folder)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    return item * item, os.getpid()


def test_results_come_in_order_from_several_workers(tmp_path):
    items = list(range(40))
    results = list(parallel.ordered(slow_square, items, (3,), workers=2))
    assert [value for value, _ in results] == [i * i * 3 for i in items]
    both = list(parallel.ordered(square_once_both_work, items, (str(tmp_path),), workers=2))
    assert [value for value, _ in both] == [i * i for i in items]
    assert len({pid for _, pid in both}) == 2 and os.getpid() not in {pid for _, pid in both}


def test_one_worker_runs_in_this_process():
    results = list(parallel.ordered(slow_square, [1, 2, 3], (1,), workers=1))
    assert results == [(1, os.getpid()), (4, os.getpid()), (9, os.getpid())]


@pytest.mark.parametrize("stop", [KeyboardInterrupt, GeneratorExit])
def test_stopping_early_leaves_no_worker(stop):
    work = parallel.ordered(slow_square, list(range(400)), (1,), workers=2)
    next(work)
    assert len(multiprocessing.active_children()) == 2
    if stop is GeneratorExit:
        work.close()
    else:
        with pytest.raises(KeyboardInterrupt):
            work.throw(KeyboardInterrupt)
    assert multiprocessing.active_children() == []


def test_chunks_keep_every_core_busy():
    assert parallel.chunk_size(3, 2) == 1
    assert parallel.chunk_size(5000, 2) == 32
    assert 1 <= parallel.chunk_size(100, 2) <= 100 // 2


# forked: discovery's scans of a first run, on every core, with no pool's round trips --------------
def square_when_all_started(item, folder, ways):
    """Each process's first item waits until `ways` processes have taken one: all take part."""
    open(os.path.join(folder, str(os.getpid())), "w").close()
    deadline = time.monotonic() + 30
    while len(os.listdir(folder)) < ways and time.monotonic() < deadline:
        time.sleep(0.005)
    return item * item * 2, os.getpid()


def test_forked_gives_every_result_in_order_from_every_process(monkeypatch, tmp_path):
    monkeypatch.setattr(parallel, "alone", lambda: True)  # as in a command: other tests leave threads
    results = parallel.forked(square_when_all_started, list(range(41)), (str(tmp_path), 3), ways=3)
    assert [value for value, _ in results] == [i * i * 2 for i in range(41)]
    assert len({pid for _, pid in results}) == 3 and os.getpid() in {pid for _, pid in results}
    assert parallel.forked(slow_square, [], (1,)) == []
    assert parallel.forked(slow_square, [5], (1,), ways=4) == [(25, os.getpid())]


def slower_in_a_child(item, parent):
    if os.getpid() != parent:
        time.sleep(0.05)
    return item, os.getpid()


def test_forked_gives_a_slower_process_fewer_items(monkeypatch):
    """The processes take runs of items from one queue: a child slowed down (another job on its
    core) leaves most of them to this one, instead of the half a fixed share would give it."""
    monkeypatch.setattr(parallel, "alone", lambda: True)
    results = parallel.forked(slower_in_a_child, list(range(80)), (os.getpid(),), ways=2)
    assert [item for item, _ in results] == list(range(80))
    assert sum(pid == os.getpid() for _, pid in results) >= 60


PARENT = os.getpid()


def fails_in_a_child(item):
    if os.getpid() != PARENT:
        raise RuntimeError("a child cannot do it")
    return item + 1


def an_object(item):
    return object() if os.getpid() != PARENT else item


def test_forked_does_a_childs_items_itself_when_the_child_fails(monkeypatch):
    monkeypatch.setattr(parallel, "alone", lambda: True)
    global PARENT
    PARENT = os.getpid()
    assert parallel.forked(fails_in_a_child, list(range(10)), ways=3) == list(range(1, 11))
    assert parallel.forked(an_object, list(range(6)), ways=2) == list(range(6))  # not marshallable


DONE_HERE = []


def interrupted_here(item, parent):
    """Ctrl-C in this process, at its third item (whichever the queue gave it)."""
    if os.getpid() == parent:
        DONE_HERE.append(item)
        if len(DONE_HERE) == 3:
            raise KeyboardInterrupt
    time.sleep(0.01)
    return item


def children() -> set[int]:
    """This process's children, running or not reaped yet (zombies count), from /proc; other
    tests may have left long-lived ones (a `git cat-file --batch`), which are not this test's."""
    found = set()
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                fields = handle.read().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            found.add(int(name))
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_forked_leaves_no_child_when_interrupted(monkeypatch):
    monkeypatch.setattr(parallel, "alone", lambda: True)
    DONE_HERE.clear()
    before = children()
    with pytest.raises(KeyboardInterrupt):
        parallel.forked(interrupted_here, list(range(3000)), (os.getpid(),), ways=3)
    assert children() <= before  # every child it forked was reaped


def test_forked_gives_every_result_when_sigchld_is_ignored(tmp_path):
    """A parent that ignores SIGCHLD (a supervisor may start the program so) gets no status for
    its children: their complete results are still taken."""
    import signal

    folder = tmp_path
    before = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(parallel, "alone", lambda: True)
            results = parallel.forked(square_when_all_started, list(range(30)), (str(folder), 3), ways=3)
    finally:
        signal.signal(signal.SIGCHLD, before)
    assert [value for value, _ in results] == [i * i * 2 for i in range(30)]
    assert len({pid for _, pid in results}) == 3


def query_in_a_store(item, db, folder=None, ways=0):
    """A statement on a store's snapshot (sqlite_ro starts its deadline watcher in this process),
    once `ways` processes have taken an item (`square_when_all_started`), when given."""
    from agents import sqlite_ro

    if folder is not None:
        square_when_all_started(item, folder, ways)
    connection = sqlite_ro.connect(db)
    try:
        return connection.execute("SELECT ? * n FROM t", (item,)).fetchone()[0], os.getpid()
    finally:
        connection.close()


def test_forked_forks_beside_the_sqlite_deadline_watcher(monkeypatch, tmp_path):
    """The only other thread is sqlite_ro's deadline watcher (a store's snapshot was read first,
    as a first run's database stores are): the scans still fork, and every child reads stores
    too (the watcher's lock, held across the fork, is free in each child). Before, any other
    thread kept every scan after the first database store in one process."""
    import sqlite3
    import threading

    db = str(tmp_path / "store.db")
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE t(n)")
        connection.execute("INSERT INTO t VALUES (3)")
    assert query_in_a_store(1, db)[0] == 3
    [watcher] = [t for t in threading.enumerate() if t.name == "sqlite-deadline"]
    assert watcher.ident in parallel._fork_safe
    monkeypatch.setattr(threading, "enumerate", lambda: [threading.current_thread(), watcher])
    folder = tmp_path / "started"
    folder.mkdir()
    results = parallel.forked(query_in_a_store, list(range(40)), (db, str(folder), 3), ways=3)
    assert [value for value, _ in results] == [3 * i for i in range(40)]
    assert len({pid for _, pid in results}) == 3


def test_only_threads_said_fork_safe_are_forked_beside(monkeypatch):
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        monkeypatch.setattr(threading, "enumerate", lambda: [threading.current_thread(), thread])
        assert not parallel.alone()
        parallel.fork_safe(thread)
        assert parallel.alone()
    finally:
        parallel._fork_safe.discard(thread.ident)
        stop.set()
        thread.join()


def test_forked_works_alone_in_a_process_with_threads_or_without_fork(monkeypatch):
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        results = parallel.forked(slow_square, list(range(9)), (1,), ways=3)
    finally:
        stop.set()
        thread.join()
    assert {pid for _, pid in results} == {os.getpid()}  # no fork beside another thread

    def no_fork():
        raise OSError("no more processes")

    open_before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", no_fork)
    assert [v for v, _ in parallel.forked(slow_square, list(range(9)), (2,), ways=3)] == [i * i * 2 for i in range(9)]
    assert len(os.listdir("/proc/self/fd")) == open_before  # the pipes made for the children closed


def test_no_thread_is_fork_safe_in_a_child(monkeypatch):
    """A child runs none of its parent's threads, and its new threads may be given their idents:
    none is taken for fork-safe there."""
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        parallel.fork_safe(thread)
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(writer, b"empty" if not parallel._fork_safe else b"kept")
            os._exit(0)
        os.close(writer)
        os.waitpid(pid, 0)
        assert os.read(reader, 16) == b"empty"
        os.close(reader)
        assert thread.ident in parallel._fork_safe
    finally:
        parallel._fork_safe.discard(thread.ident)
        stop.set()
        thread.join()
