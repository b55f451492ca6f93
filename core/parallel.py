"""Work over many sessions on every core: `search --content`, `stats`, `list --steps`, `agents`
and `export` translate sessions in a process pool and get their results back in the sessions'
order (and discovery scans sources in forked processes, `forked`, and writes what it keeps for
the next command beside the rest of this one, `aside`).

Workers return small results (hits, totals), never documents, so memory stays bounded however
many sessions there are. The items themselves reach the workers once, when they start
(inherited through fork), and each task names items by their positions: thousands of sessions
are not pickled on the way. Ctrl-C belongs to the parent: workers ignore SIGINT, and the pool
is torn down when the parent stops reading, however it stops (end, error, interrupt, broken
pipe).
"""

from __future__ import annotations

import marshal
import os
import signal
import sys
import time

_work: tuple = ()  # a worker's (function, items, context)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def ordered(function, items: list, context: tuple = (), workers: int | None = None):
    """`function(item, *context)` for every item, yielded in the items' order as soon as each
    result (and every one before it) is ready. `function` must be a module-level function."""
    workers = min(workers or cores(), len(items))
    pool = _pool(workers, function, items, context) if workers > 1 else None
    if pool is None:
        for item in items:
            yield function(item, *context)
        return
    try:
        yield from pool.imap(_call, range(len(items)), chunksize=chunk_size(len(items), workers))
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def _pool(workers: int, function, items: list, context: tuple):
    """A pool of `workers` processes; None where none can be made (the pool's locks live in
    /dev/shm, which a sandbox may leave out or read-only): the work is then done here."""
    import multiprocessing  # here: `forked` needs none of it

    methods = multiprocessing.get_all_start_methods()
    start = multiprocessing.get_context("fork" if "fork" in methods else None)
    try:
        return start.Pool(workers, _start_worker, (function, items, context))
    except (OSError, ImportError):
        return None


def chunk_size(count: int, workers: int) -> int:
    """Items per task: enough to amortize the round trip to a worker (a session can take less
    than a millisecond), few enough that results keep streaming and the cores stay balanced."""
    return max(1, min(32, count // (workers * 8)))


def _start_worker(function, items: list, context: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends the pool
    global _work
    _work = function, items, context


def _call(position: int):
    function, items, context = _work
    return function(items[position], *context)


class Shared:
    """A number >= 0 the parent sets and the pool's workers read, e.g. how far the parent got:
    a hint, as a worker may read it late or, rarely, torn. Shared memory inherited through
    fork; in a worker started otherwise it reads 0."""

    def __init__(self):
        import mmap

        self._memory = mmap.mmap(-1, 8)

    def __reduce__(self):
        return Shared, ()

    @property
    def value(self) -> int:
        return int.from_bytes(self._memory[:8], "little")

    @value.setter
    def value(self, number: int) -> None:
        self._memory[:8] = number.to_bytes(8, "little")


class Progress:
    """`label: done/total` on stderr, redrawn at most ten times a second, only when stderr is
    a terminal (a script reading stderr gets no carriage returns)."""

    def __init__(self, total: int, label: str):
        self.total = total
        self.label = label
        self.done = 0
        self.shown = 0.0
        self.active = sys.stderr.isatty() and total > 0

    def step(self, note: str = "") -> None:
        self.done += 1
        now = time.monotonic()
        if self.active and (now - self.shown >= 0.1 or self.done == self.total):
            self.shown = now
            sys.stderr.write(f"\r\x1b[K{self.label}: {self.done}/{self.total} session(s){note}")
            sys.stderr.flush()

    def clear(self) -> None:
        if self.active:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


CHUNKS_PER_WAY = 64  # parts of the work per process: the last one a process takes is small
MAX_CHUNKS = 1024  # their numbers fit a pipe of one page (4 bytes each), the least Linux gives


def forked(function, items: list, context: tuple = (), ways: int | None = None) -> list:
    """`function(item, *context)` of every item, in order, on `ways` processes (every core):
    this one and its forked children take the items a run at a time from one queue, so that a
    process that runs slower (another job on its core, the pages a child copies as it writes,
    costlier items) takes fewer; the children's results come back marshalled (plain values:
    lists, dicts, strings, numbers) once they are done. For work of milliseconds to seconds,
    where a pool's round trips per task cost more than its balancing gains (discovery's scans).
    The runs a child took are done here when it cannot be made or fails (a result marshal
    cannot write included), and all of them in a process with other threads (none survive a
    fork) but those `fork_safe`."""
    ways = max(1, min(ways or cores(), len(items)))
    if not alone():
        ways = 1
    runs = _runs(len(items), ways)
    queue = _queue(len(runs)) if ways > 1 else None
    children: list = []  # [pid, reader, reaped]
    done: dict = {}  # run number -> its results
    try:
        for _ in range(1, ways if queue is not None else 1):
            child = _fork_child(function, items, context, runs, queue)
            if child is None:
                break
            children.append([*child, False])
        if queue is not None:
            _take_runs(queue, function, items, context, runs, done)
        for child in children:
            done.update(_collected(child) or {})
    except BaseException:
        for child in children:
            _end(child)
        raise
    finally:
        for child in children:
            _close(child[1])
        if queue is not None:
            _close(queue)
    found = []
    for number, (start, stop) in enumerate(runs):
        part = done.get(number)
        if not isinstance(part, list) or len(part) != stop - start:  # a failed child's, or none taken
            part = [function(item, *context) for item in items[start:stop]]
        found += part
    return found


_fork_safe: set = set()  # idents of the threads a fork cannot copy in the middle of anything (`fork_safe`)
os.register_at_fork(after_in_child=_fork_safe.clear)  # none of them runs in a child, whose new
                                                      # threads may be given their idents


def fork_safe(thread) -> None:
    """Says that a thread of this process never holds a lock or state a forked child would
    inherit half-changed: it does its work under a lock that every fork takes first
    (`os.register_at_fork`), as sqlite_ro's deadline watcher does. `forked` then forks beside it."""
    _fork_safe.add(thread.ident)


def alone() -> bool:
    """Whether this process runs no thread but this one and those `fork_safe`: a fork copies
    none of the others, and whatever lock one held stays held in the child."""
    import threading

    current = threading.current_thread()
    return all(t is current or t.ident in _fork_safe for t in threading.enumerate())


_aside: list = []  # pids of the children `aside` started, not waited for yet
os.register_at_fork(after_in_child=_aside.clear)  # a child's own children are none of these
_settles_at_exit = False
_writing_for: int | None = None  # in a child of `aside`: its parent's pid


def aside(function, *args) -> None:
    """`function(*args)` in a forked child, for work whose only result is what it writes for
    later processes (discovery's index and snapshot: a first `list --all` of 40,000 sessions
    spends half a second writing them), while this process goes on, on another core. Done here
    instead in a process with other threads (`alone`), or when no child can be made. This
    process waits for the child before it reads or removes anything it writes (`settle`, which
    discovery and the removals call first) and before it ends (at exit); a child whose parent
    is gone (killed) puts no file in place (`orphaned`, which cache.write_private asks): what
    it writes never outlives the command. The child shares this process's output streams but
    never writes to them (it ends with os._exit: buffered output is not written twice)."""
    if not alone():
        function(*args)
        return
    settle()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # (a command started with its stdout closed)
                stream.flush()
        except (OSError, ValueError):
            pass
    global _settles_at_exit, _writing_for
    parent = os.getpid()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        try:
            pid = os.fork()
        except OSError:
            pid = None
        if pid == 0:
            code = 1
            try:
                _writing_for = parent
                function(*args)
                code = 0
            finally:
                os._exit(code)
        if pid is not None:  # known before Ctrl-C can interrupt this process again
            _aside.append(pid)
            if not _settles_at_exit:
                import atexit

                atexit.register(_settle_at_exit)
                _settles_at_exit = True
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    if pid is None:
        function(*args)


def orphaned() -> bool:
    """Whether this is a child of `aside` whose parent has ended (killed: a `forget` may have
    run since, which what it is writing must not undo)."""
    return _writing_for is not None and os.getppid() != _writing_for


def settle() -> None:
    """Wait for the children `aside` started (their writing done, or failed). A child is
    forgotten only once it is reaped: an interrupted wait is taken up again at exit."""
    while _aside:
        try:
            os.waitpid(_aside[-1], 0)
        except ChildProcessError:  # reaped already (SIGCHLD ignored), or not ours
            pass
        _aside.pop()


def _settle_at_exit() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # the command ends: a second
    settle()                                                   # Ctrl-C need not break the wait


def _runs(count: int, ways: int) -> list:
    """(start, stop) of each run of items the processes take."""
    number = min(count, ways * CHUNKS_PER_WAY, MAX_CHUNKS) if ways > 1 else 1
    size, extra = divmod(count, number) if number else (0, 0)
    runs, start = [], 0
    for index in range(number):
        stop = start + size + (index < extra)
        runs.append((start, stop))
        start = stop
    return runs


def _queue(count: int) -> int | None:
    """The read end of a pipe holding every run's number (4 bytes each, written at once and the
    write end closed: a read of 4 bytes takes one run, atomically, and an empty pipe reads as
    its end); None when no pipe can be had."""
    try:
        reader, writer = os.pipe()
    except OSError:
        return None
    try:
        os.set_blocking(reader, False)  # everything is in it before any process reads: empty is done
        os.set_blocking(writer, False)  # a pipe smaller than asked fails here, never blocks
        data = b"".join(number.to_bytes(4, "little") for number in range(count))
        if os.write(writer, data) == len(data):
            return reader
    except OSError:
        pass
    finally:
        os.close(writer)
    os.close(reader)
    return None


def _take_runs(queue: int, function, items: list, context: tuple, runs: list, done: dict,
               parent: int | None = None) -> None:
    """Runs taken from `queue` until it is empty; in a child (`parent` given), until its parent
    is gone too (its results would have no reader)."""
    while parent is None or os.getppid() == parent:
        try:
            taken = os.read(queue, 4)
        except BlockingIOError:
            return
        number = int.from_bytes(taken, "little")
        if len(taken) != 4 or number >= len(runs):
            return
        start, stop = runs[number]
        done[number] = [function(item, *context) for item in items[start:stop]]


def _fork_child(function, items: list, context: tuple, runs: list, queue: int) -> tuple | None:
    """(pid, reader) of a child taking runs of `items` from `queue` (`_child`), or None when
    none can be made. SIGINT is blocked across the fork, so that Ctrl-C never reaches a child
    before it ignores it (it would run this process's code on)."""
    try:
        reader, writer = os.pipe()
    except OSError:
        return None
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        pid = None
    if pid == 0:
        _child(reader, writer, function, items, context, runs, queue, blocked, parent)
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    os.close(writer)
    if pid is None:
        os.close(reader)
        return None
    return pid, reader


def _collected(child: list) -> dict | None:
    """A child's results, by run number; None when it failed. A process that ignores SIGCHLD
    (as its parent left it) gets no status: what the child wrote is then taken when it is
    complete (it writes only once everything is done, and marshal refuses a cut stream)."""
    pid, reader, _ = child
    chunks = []
    while chunk := os.read(reader, 1 << 20):
        chunks.append(chunk)
    try:
        status = os.waitpid(pid, 0)[1]
    except ChildProcessError:
        status = None
    child[2] = True
    if status not in (0, None):
        return None
    try:
        found = marshal.loads(b"".join(chunks))
    except (ValueError, EOFError, TypeError):
        return None
    return found if isinstance(found, dict) else None


def _end(child: list) -> None:
    """A child not reaped yet, stopped and reaped (a reaped one's pid may be another's now)."""
    if child[2]:
        return
    child[2] = True
    try:
        os.kill(child[0], signal.SIGKILL)
        os.waitpid(child[0], 0)
    except OSError:
        pass


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def _child(reader: int, writer: int, function, items: list, context: tuple, runs: list, queue: int,
           blocked, parent: int) -> None:
    """A child of `forked`: the runs it took, {number: results} marshalled, on `writer`; it
    never returns."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        os.close(reader)
        done: dict = {}
        _take_runs(queue, function, items, context, runs, done, parent)
        data = marshal.dumps(done)
        view = memoryview(data)
        while view:
            view = view[os.write(writer, view):]
        code = 0
    finally:
        os._exit(code)
